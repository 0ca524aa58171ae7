"""The second strategy: patch the few changed handles into the last proven run's outputs
(see :mod:`alter_publish.pipeline.incremental`), the same bytes as a full run.

Every step checks what it relies on (the memo and the old outputs are hints, checked as
they are used); anything that does not fit declines, and a full run does the job.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import dns.zone

from alter_publish.definition.loader import read_definition
from alter_publish.definition.model import ZoneSpec, load_handle_entries, load_zone_text
from alter_publish.definition.state import (
    SerialState,
    SignatureWindow,
    key_states,
    state_path_for,
    zone_sha256,
)
from alter_publish.dns.anchors import TrustAnchor, read_trust_anchors
from alter_publish.dns.dnssec import choose_window, rrsig_lines
from alter_publish.dns.records import HandleRecord, Labels, RRs, from_zone, labels_of
from alter_publish.dns.zonekeys import ZoneKey
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.errors import AlterError, DefinitionError, RenderError
from alter_publish.fileio import Chunk
from alter_publish.format.ed25519 import SigningKey
from alter_publish.format.identitylog import (
    MerkleTree,
    append_lines,
    log_path_for,
    read_log,
    read_owner_entries,
)
from alter_publish.keys.lifecycle import (
    LogIndex,
    read_revocations,
    revocations_path_for,
    zone_revocations,
)
from alter_publish.pipeline.build import dnssec_fingerprint
from alter_publish.pipeline.chain import (
    EnvelopeChain,
    LoadedKey,
    current_material,
    handle_expectations,
)
from alter_publish.pipeline.commit import Chunks, Writes, commit
from alter_publish.pipeline.context import ProvenRun, RunContext, ZoneStart
from alter_publish.pipeline.fingerprint import Fingerprint, handle_key_lines
from alter_publish.pipeline.incremental import (
    PATCH_MAX_SHARE,
    PATCH_OWNER_SCANS,
    Edit,
    Entries,
    Memo,
    apply_edits,
    memo_path,
    shift,
    split_entries,
)
from alter_publish.pipeline.memory import (
    base_digest,
    shipped_templates,
    valid_span,
    write_fingerprint,
)
from alter_publish.pipeline.paths import current_outputs
from alter_publish.pipeline.render import (
    SignedHandle,
    envelope_line,
    handle_rrsets,
    handle_segments,
    log_rrset,
    template_context,
)
from alter_publish.pipeline.reports import Stopwatch, ZoneResult, zone_result
from alter_publish.pipeline.transparency import (
    Publication,
    checkpoints_path_for,
    log_dir,
    plan_publication,
    read_history,
    resumed_tree,
    with_proofs,
)
from alter_publish.verify.proof import Expectation, ProofReport, prove_zone
from alter_publish.version import __version__

_SOA_TYPE = 6
_TXT_TYPE = 16


@dataclass(frozen=True, slots=True)
class _Base:
    """What a patch starts from, every check passed: the memo of the last proven run,
    the definition cut into entries, the entries changed since and their handles (in
    ``spec``), the serial state and (DNSSEC) the zone keys and signature window."""

    record: Fingerprint
    memo: Memo
    entries: Entries
    changed: tuple[int, ...]
    spec: ZoneSpec  # the zone (``spec.path`` its definition) with just the changed handles
    state: SerialState
    zone_keys: tuple[ZoneKey, ...]
    window: SignatureWindow | None


def _changed_entries(
    ctx: RunContext, start: ZoneStart, record: Fingerprint, memo: Memo
) -> tuple[Entries, tuple[int, ...]] | None:
    """The definition's entries and which of them (or of their keys) changed; None when
    the definition or anything else the memo rests on is not as it was, or too much did."""
    if not record.valid_from <= ctx.now < record.valid_until:
        return None  # something falls due: a full run renews it
    try:
        entries = split_entries(read_definition(start.definition))
    except DefinitionError:
        return None  # the full run says what is wrong
    count = len(memo.refs)
    if entries is None or len(entries.texts) != count or len(start.handle_lines) != count:
        return None
    if base_digest(ctx, start.definition, memo.zone, entries) != memo.base:
        return None
    changed = tuple(
        index
        for index, (entry, key, old_entry, old_key) in enumerate(
            zip(entries.texts, start.handle_lines, memo.entries, memo.keys, strict=True)
        )
        if entry != old_entry or key != old_key
    )
    if not changed or len(changed) > max(1, int(count * PATCH_MAX_SHARE)):
        return None
    return entries, changed


def _base(ctx: RunContext, start: ZoneStart) -> _Base | None:
    """Where a patch of ``start`` starts, or None when it cannot be done as a full run would.

    Raises:
        KeyStoreError: the zone keys cannot be read.
    """
    record = start.record
    memo = Memo.read(memo_path(ctx.out, start.definition)) if record else None
    if record is None or memo is None or memo.zone != record.zone:
        return None
    if not shipped_templates(ctx.templates):
        return None
    found = _changed_entries(ctx, start, record, memo)
    if found is None:
        return None
    entries, changed = found
    try:
        zone = load_zone_text(entries.header, start.definition)
        handle_specs = load_handle_entries(entries.document(changed), start.definition, zone)
    except AlterError:
        return None
    if [(h.handle.ref, h.ttl) for h in handle_specs] != [
        (memo.refs[index], memo.ttls[index]) for index in changed
    ]:
        return None  # a handle renamed, or a TTL that may move the zone's largest
    spec = dataclasses.replace(zone, handles=handle_specs)
    state = SerialState.read(state_path_for(start.definition))
    if spec.origin != memo.zone or spec.dnssec.enabled != bool(memo.blocks):
        return None
    if state is None or state.serial != memo.serial:
        return None
    zone_keys: tuple[ZoneKey, ...] = ()
    window = None
    if spec.dnssec.enabled:
        zone_keys = ctx.keys.zones.current(spec.origin, create=False, now=ctx.now)
        window = choose_window(state.signatures, ctx.now, spec.dnssec)
        if window != state.signatures or key_states(zone_keys) != state.keys:
            return None
    return _Base(record, memo, entries, changed, spec, state, zone_keys, window)


@dataclass(frozen=True, slots=True)
class _Chained:
    """The changed handles through the envelope chain, resumed from the memo's log."""

    log_path: Path
    raw_log: bytes
    chain: EnvelopeChain
    expectations: dict[str, Expectation]


def _chain(ctx: RunContext, base: _Base) -> _Chained | None:
    """Run the changed handles through the envelope chain; None when a revocation is
    queued or the log is not as the memo says.

    Raises:
        KeyStoreError: a changed handle's key is missing, unusable or behind the log.
    """
    spec = base.spec
    log_path = log_path_for(spec.path)
    if len(spec.handles) <= PATCH_OWNER_SCANS:
        raw_log, log = read_owner_entries(log_path, (h.owner for h in spec.handles))
    else:
        log = read_log(log_path)
        raw_log = log_path.read_bytes() if log.entries else b""
    index = LogIndex(log)
    revocations = zone_revocations(spec, index, read_revocations(revocations_path_for(spec.path)))
    if any(item.new for item in revocations.values()):
        return None
    try:
        tree = MerkleTree.resume(base.memo.log)
    except ValueError:
        return None
    if tree.size != raw_log.count(b"\n") or b"\r" in raw_log:
        return None  # a log not as this tool writes it: the full run reads it line by line
    chain = EnvelopeChain(spec, ctx.keys, ctx.now, index, revocations, tree)
    for handle_spec in spec.handles:
        epoch, seed, commitment = current_material(
            spec, handle_spec, ctx.keys, index, create=ctx.create_keys
        )
        public = SigningKey.from_seed(seed).public
        chain.add(handle_spec, LoadedKey(handle_spec.handle, epoch, public, commitment, seed))
    return _Chained(log_path, raw_log, chain, handle_expectations(chain.signed, index))


def _publication(ctx: RunContext, base: _Base, chain: EnvelopeChain) -> Publication | None:
    """The log's checkpoint and tiles after the chain, resumed from the stored tiles; None
    when the history or tiles are behind the log (a full run brings them up to it).

    Raises:
        KeyStoreError: the zone has checkpoints but its log key is gone.
        RenderError: the checkpoint history is unreadable.
    """
    spec = base.spec
    new = [entry.to_bytes() for entry in chain.new_entries]
    base_size = chain.tree.size - len(new)
    history = read_history(checkpoints_path_for(spec.path))
    if (history.sizes[-1] if history.sizes else 0) != base_size:
        return None
    tree = resumed_tree(log_dir(ctx.out, spec.origin), base_size, new, chain.tree.root())
    if tree is None:
        return None
    return plan_publication(ctx.keys, spec.origin, spec.path, ctx.out, tree, create=ctx.create_keys)


@dataclass(frozen=True, slots=True)
class _Rendered:
    """The changed handles rendered into edits of the last run's zone file."""

    old_zone: bytes
    old_envelopes: bytes
    serial: int
    digest: str  # of the zone text with serial 0 (the serial state's digest)
    envelopes_serial_end: int
    zone_edits: list[Edit]  # the serial, then each changed handle's lines
    head: str  # the zone text before the first handle, with the new serial
    proof_text: list[str]  # the head and the changed handles' lines
    rrsets: list[HandleRecord]
    log: HandleRecord | None  # the checkpoint record when it changes


def _render(
    ctx: RunContext,
    base: _Base,
    signed: Sequence[SignedHandle],
    outputs: tuple[Path, Path],
    log: HandleRecord | None,
) -> _Rendered | None:
    """Render the changed handles, the checkpoint record ``log`` and the serial their
    digest gives; None when the old outputs are not where the memo says."""
    memo, spec = base.memo, base.spec
    try:
        old_zone = outputs[0].read_bytes()
        old_envelopes = outputs[1].read_bytes()
    except OSError:
        return None
    if not memo.fits(old_zone, old_envelopes, base.changed):
        return None
    old_serial = str(memo.serial).encode()
    serial_end = memo.serial_at + len(old_serial)
    env_serial_end = memo.envelopes_serial_at + len(old_serial)
    if (
        old_zone[memo.serial_at : serial_end] != old_serial
        or old_envelopes[memo.envelopes_serial_at : env_serial_end] != old_serial
    ):
        return None
    rrsets = handle_rrsets(signed)
    context = template_context(spec, signed, 0, __version__, rrsets)
    segments = [text.encode() for text in handle_segments(ctx.templates, context)]
    segment_edits: list[Edit] = [
        (memo.segments[index], memo.segments[index + 1], segment)
        for index, segment in zip(base.changed, segments, strict=True)
    ]
    log_edits = _log_line_edit(old_zone, memo.segments[0], serial_end, log)
    if log_edits is None:
        return None
    draft = hashlib.sha256()
    rendered = memoryview(old_zone)[: memo.rendered_end]
    zero: list[Edit] = [(memo.serial_at, serial_end, b"0"), *log_edits, *segment_edits]
    for chunk in apply_edits(rendered, zero):
        draft.update(chunk)
    draft.update(dnssec_fingerprint(spec, base.zone_keys, base.window).encode())
    serial = base.state.next_for(draft.hexdigest(), ctx.now)
    head_edits: list[Edit] = [(memo.serial_at, serial_end, str(serial).encode()), *log_edits]
    zone_edits = [*head_edits, *segment_edits]
    head = b"".join(apply_edits(old_zone[: memo.segments[0]], head_edits)).decode()
    proof_text = [head, *(segment.decode() for segment in segments)]
    return _Rendered(
        old_zone,
        old_envelopes,
        serial,
        draft.hexdigest(),
        env_serial_end,
        zone_edits,
        head,
        proof_text,
        rrsets,
        log
        if log_edits and old_zone[log_edits[0][0] : log_edits[0][1]] != log_edits[0][2]
        else None,
    )


def _log_line_edit(
    old_zone: bytes, head_end: int, after: int, log: HandleRecord | None
) -> list[Edit] | None:
    """The edit of the checkpoint record's line in the zone file's head (none without a
    record); None when the old head does not have the record the full run would (a new
    name: the denial chain changes) or has one too many."""
    head = old_zone[:head_end]
    if log is None:
        return None if b"\n_alter-log." in head else []
    prefix = f"\n{log.owner} {log.ttl} IN TXT ".encode()
    start = head.find(prefix, after)
    if start < 0 or head.find(prefix, start + 1) >= 0:
        return None
    end = head.find(b"\n", start + 1)
    if end < 0:
        return None
    return [(start + 1, end, log.lines()[0].encode())]


def _patched_zone(
    ctx: RunContext,
    base: _Base,
    signed: Sequence[SignedHandle],
    watch: Stopwatch,
    outputs: tuple[Path, Path, Path],
    log: HandleRecord | None,
) -> tuple[_Rendered, list[Edit], dns.zone.Zone] | None:
    """The zone file's edits (sorted, none that changes nothing) and the zone of the
    changed lines to prove, from the last ``outputs`` (one set); None when anything does
    not fit."""
    zone_file, envelopes_file, _ = outputs
    try:
        with watch.stage("render"):
            rendered = _render(ctx, base, signed, (zone_file, envelopes_file), log)
        if rendered is None:
            return None
        zone_edits, proof_text = list(rendered.zone_edits), list(rendered.proof_text)
        if base.window is not None:
            with watch.stage("dnssec"):
                blocks = _patched_blocks(rendered, base, zone_file.name)
                if blocks is None:
                    return None
                zone_edits.extend(blocks)
                proof_text.extend(new.decode() for _, _, new in blocks)
        # Edits that change nothing (an entry's comment edited, say) are no edits: a full run
        # would leave such a file alone.
        old_zone = rendered.old_zone
        zone_edits = sorted(
            (edit for edit in zone_edits if old_zone[edit[0] : edit[1]] != edit[2]),
            key=lambda edit: edit[0],
        )
        mini = parse_zone_text("".join(proof_text), base.spec.origin, where=zone_file.name)
    except (ValueError, UnicodeDecodeError, RenderError):
        return None
    return rendered, zone_edits, mini


def _patched_blocks(rendered: _Rendered, base: _Base, where: str) -> list[Edit] | None:
    """The apex's and each changed handle's DNSSEC lines with new RRSIGs over the SOA
    and their TXT rrsets (every other line stays: the owners and their types are the
    same, so the denial chain is too)."""
    assert base.window is not None  # noqa: S101 (narrowing: only a signed zone has blocks)
    old_zone, memo = rendered.old_zone, base.memo
    records = from_zone(parse_zone_text(rendered.head, base.spec.origin, where=where))
    origin = records.origin
    soa = next((rrs for rrs in records.owners[origin] if rrs.rdtype == _SOA_TYPE), None)
    if soa is None:
        return None
    names = dict(records.names)
    todo: list[tuple[Labels, RRs]] = [(origin, soa)]
    for record in rendered.rrsets:
        labels = labels_of(record.owner)
        names[labels] = record.owner
        todo.append((labels, RRs(_TXT_TYPE, record.ttl, record.wires)))
    spans = [memo.apex, *((memo.blocks[2 * i], memo.blocks[2 * i + 1]) for i in base.changed)]
    covered = ["SOA", *("TXT" for _ in base.changed)]
    owners = [names[origin], *(record.owner for record in rendered.rrsets)]
    if rendered.log is not None:
        log = rendered.log
        span = _owner_block(old_zone, memo.rendered_end, log.owner)
        if span is None:
            return None
        labels = labels_of(log.owner)
        names[labels] = log.owner
        todo.append((labels, RRs(_TXT_TYPE, log.ttl, log.wires)))
        spans.append(span)
        covered.append("TXT")
        owners.append(log.owner)
    signatures = rrsig_lines(
        todo, keys=base.zone_keys, window=base.window, origin=origin, names=names
    )
    edits: list[Edit] = []
    for (start, end), kind, owner, lines in zip(spans, covered, owners, signatures, strict=True):
        prefix = f"{owner} ".encode()
        if old_zone[start - 1 : start] != b"\n" or old_zone.startswith(prefix, end):
            return None  # not where the owner's lines start, or not all of them
        block = _with_rrsigs(old_zone[start:end].decode("ascii"), owner, kind, lines)
        if block is None:
            return None
        edits.append((start, end, block.encode("ascii")))
    return edits


def _owner_block(zone: bytes, start: int, owner: str) -> tuple[int, int] | None:
    """Where ``owner``'s DNSSEC lines are in ``zone`` after ``start`` (the checkpoint
    record's: the memo does not keep them; they sort near the apex's)."""
    prefix = f"\n{owner} ".encode()
    at = zone.find(prefix, start - 1)
    if at < 0:
        return None
    end = at + 1
    while zone.startswith(prefix[1:], end):
        end = zone.find(b"\n", end) + 1
        if end == 0:
            return None
    return at + 1, end


def _with_rrsigs(block: str, owner: str, covered: str, lines: str) -> str | None:
    """``block`` (one owner's DNSSEC lines) with its RRSIGs over ``covered`` replaced;
    None when it is not that owner's block."""
    rows = block.splitlines(keepends=True)
    if not all(row.startswith(f"{owner} ") and row.endswith("\n") for row in rows):
        return None
    marker = f" IN RRSIG {covered} "
    found = [number for number, row in enumerate(rows) if marker in row]
    if not found or found != list(range(found[0], found[-1] + 1)):
        return None
    return "".join(rows[: found[0]]) + lines + "".join(rows[found[-1] + 1 :])


def _envelope_edits(base: _Base, signed: Sequence[SignedHandle], rendered: _Rendered) -> list[Edit]:
    """The envelopes document's edits: each changed handle's line, then the serial."""
    memo = base.memo
    edits: list[Edit] = [
        (
            memo.envelopes[index],
            memo.envelopes[index + 1],
            (("\n" if index == 0 else ",\n") + envelope_line(item)).encode(),
        )
        for index, item in zip(base.changed, signed, strict=True)
    ]
    serial = (memo.envelopes_serial_at, rendered.envelopes_serial_end, str(rendered.serial))
    edits.append((serial[0], serial[1], serial[2].encode()))
    return [edit for edit in edits if rendered.old_envelopes[edit[0] : edit[1]] != edit[2]]


def _handle_keys(
    base: _Base, signed: Sequence[SignedHandle], handle_lines: Sequence[str]
) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...]]:
    """The record's handle keys and their ``stat`` lines, the changed handles' taken anew."""
    handle_keys = list(base.record.handle_keys)
    lines = list(handle_lines)
    for position, item in zip(base.changed, signed, strict=True):
        directory = handle_keys[position][0]
        handle_keys[position] = (directory, item.envelope.epoch)
        lines[position] = handle_key_lines([handle_keys[position]])[0]
    return tuple(handle_keys), tuple(lines)


def _memo_after(
    base: _Base,
    tree: MerkleTree,
    rendered: _Rendered,
    edits: tuple[Sequence[Edit], Sequence[Edit]],
    lines: tuple[str, ...],
) -> Memo:
    """The memo once the zone file and envelopes document ``edits`` are made."""
    memo = base.memo
    zone_edits, envelope_edits = edits
    zone_offsets = shift([*memo.segments, *memo.blocks, *memo.apex, memo.rendered_end], zone_edits)
    segments_count = len(memo.segments)
    blocks_end = segments_count + len(memo.blocks)
    envelope_offsets = shift((*memo.envelopes, memo.envelopes_serial_at), envelope_edits)
    return dataclasses.replace(
        memo,
        entries=base.entries.texts,
        keys=lines,
        log=tuple(tree.frontier()),
        serial=rendered.serial,
        segments=zone_offsets[:segments_count],
        blocks=zone_offsets[segments_count:blocks_end],
        apex=(zone_offsets[blocks_end], zone_offsets[blocks_end + 1]),
        rendered_end=zone_offsets[-1],
        envelopes=envelope_offsets[:-1],
        envelopes_serial_at=envelope_offsets[-1],
    )


@dataclass(frozen=True, slots=True)
class Patched:
    """An incremental run of one zone: a few handles' lines patched into the last
    proven run's outputs (see :mod:`incremental`), in memory until committed."""

    base: _Base
    chained: _Chained
    state: SerialState
    zone: tuple[Chunk, ...] | None  # None: unchanged
    envelopes: tuple[Chunk, ...] | None
    memo: Memo  # after the patch (``base`` is taken once the outputs are written)
    handle_keys: tuple[tuple[str, int], ...]
    handle_lines: tuple[str, ...]
    proof: ProofReport
    watch: Stopwatch
    publication: Publication
    rank = 1

    @property
    def spec(self) -> ZoneSpec:
        """The zone (``spec.path`` its definition) with just the changed handles."""
        return self.base.spec

    @property
    def origin(self) -> str:
        """The zone."""
        return self.base.spec.origin

    @property
    def warnings(self) -> tuple[str, ...]:
        """The definition's warnings."""
        return self.base.spec.warnings()

    @property
    def proven(self) -> bool:
        """True when the changed handles' proof passed."""
        return self.proof.ok

    def prove(self, ctx: RunContext) -> ProvenRun:
        """Proven already."""
        return self

    def commit(self, ctx: RunContext, committed: bool) -> ZoneResult:
        """Write the patch when every zone was proven, then (unless ``ctx.check``) the
        fingerprint and memo of the run it makes; report.

        Raises:
            RenderError: a file cannot be written.
        """
        written: list[str] = []
        if committed:
            with self.watch.stage("write"):
                written = commit(ctx, self._writes())
                if not ctx.check:
                    self._remember(ctx)
        chain, summary = self.chained.chain, self.base.record.summary
        return zone_result(
            ctx.out,
            self.origin,
            serial=self.state.serial,
            handles=len(self.memo.refs),
            signed=len(chain.new_entries),
            written=written,
            proof=self.proof,
            timings=self.watch.stages,
            ds=tuple(str(line) for line in summary.get("ds", ())),
            dnssec=summary.get("dnssec"),
            patched=tuple(item.spec.handle.ref for item in chain.signed),
            changes=tuple(chain.changes),
        )

    def _writes(self) -> Writes:
        chained = self.chained
        entries = chained.chain.new_entries
        return Writes(
            definition=self.spec.path,
            zone=self.origin,
            log_path=chained.log_path,
            append_log=(
                (lambda: append_lines(chained.log_path, chained.raw_log, entries))
                if entries
                else None
            ),
            state=self.state,
            zone_file=None if self.zone is None else Chunks(self.zone),
            envelopes_file=None if self.envelopes is None else Chunks(self.envelopes),
            publication=self.publication,
        )

    def _remember(self, ctx: RunContext) -> None:
        """The fingerprint and memo of the run the patch makes."""
        spec, record = self.spec, self.base.record
        # The span of the envelopes patched in, within the last run's (a little short,
        # never long: a later run at worst goes in full).
        valid_from, valid_until = valid_span(self.chained.chain.signed, self.state.signatures, spec)
        span = (max(record.valid_from, valid_from), min(record.valid_until, valid_until))
        summary = {**record.summary, "serial": self.state.serial}
        entries = self.base.entries
        write_fingerprint(
            ctx, spec, entries.text, self.handle_keys, self.handle_lines, span, summary
        )
        base = base_digest(ctx, spec.path, spec.origin, entries)
        dataclasses.replace(self.memo, base=base).write(memo_path(ctx.out, spec.path))


def patched(ctx: RunContext, start: ZoneStart) -> Patched | None:
    """Patch the handles whose entry or key changed into the last proven run's outputs
    and prove them; None when that cannot be done exactly as a full run would do it
    (then: a full run, which also names any problem in the definition).

    Raises:
        KeyStoreError: a changed handle's key is missing, unusable or behind the log.
        SigningError: the zone keys cannot sign.
    """
    base = _base(ctx, start) if ctx.verify else None
    if base is None:
        return None
    watch = Stopwatch([("load", time.perf_counter() - start.started)])
    with watch.stage("keys+envelopes"):
        chained = _chain(ctx, base)
    if chained is None:
        return None
    with watch.stage("log"):
        publication = _publication(ctx, base, chained.chain)
    if publication is None:
        return None
    chained.chain.signed = with_proofs(chained.chain.signed, publication)
    signed = chained.chain.signed
    outputs = current_outputs(ctx.out, base.spec.origin)  # resolved once: one set
    notes = publication.notes
    log = log_rrset(base.spec, notes[-1] if notes else None)
    made = _patched_zone(ctx, base, signed, watch, outputs, log)
    if made is None:
        return None
    rendered, zone_edits, mini = made
    with watch.stage("proof"):
        anchors: tuple[TrustAnchor, ...] = ()
        if base.window is not None:
            anchors = read_trust_anchors(outputs[2])
        proof = prove_zone(
            mini,
            base.spec,
            chained.expectations,
            now=ctx.now,
            anchors=anchors,
            probe=False,
            checkpoint=None if rendered.log is None else rendered.log.texts[0],
        )
    envelope_edits = _envelope_edits(base, signed, rendered)
    handle_keys, lines = _handle_keys(base, signed, start.handle_lines)
    old_zone, old_envelopes = rendered.old_zone, rendered.old_envelopes
    new_zone = tuple(apply_edits(memoryview(old_zone), zone_edits)) if zone_edits else None
    state = dataclasses.replace(
        base.state,
        serial=rendered.serial,
        digest=rendered.digest,
        zone_sha256=zone_sha256((old_zone,) if new_zone is None else new_zone),
    )
    return Patched(
        base=base,
        chained=chained,
        state=state,
        zone=new_zone,
        envelopes=(
            tuple(apply_edits(memoryview(old_envelopes), envelope_edits))
            if envelope_edits
            else None
        ),
        memo=_memo_after(base, chained.chain.tree, rendered, (zone_edits, envelope_edits), lines),
        handle_keys=handle_keys,
        handle_lines=lines,
        proof=proof,
        watch=watch,
        publication=publication,
    )
