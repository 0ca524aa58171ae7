"""The second strategy: patch the few changed handles into the last proven run's outputs
(see :mod:`alter_publish.pipeline.incremental`), the same bytes as a full run.

Every step checks what it relies on (the memo and the old outputs are hints, checked as
they are used); anything that does not fit declines, and a full run does the job.
"""

from __future__ import annotations

import contextlib
import dataclasses
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alter_publish.definition.model import ZoneSpec
from alter_publish.definition.state import SerialState, zone_sha256_soon
from alter_publish.dns.answerers import Answerer
from alter_publish.dns.chainpatch import ChainPatch, SignedSection, patch_chain
from alter_publish.dns.records import HandleRecord, Labels, RRs, from_zone, labels_of
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.errors import RenderError
from alter_publish.format.handles import parse_handle
from alter_publish.format.identitylog import (
    MerkleTree,
    append_lines,
    log_path_for,
    read_owner_entries,
)
from alter_publish.keys.lifecycle import (
    LogIndex,
    read_revocations,
    revocations_path_for,
    zone_revocations,
)
from alter_publish.mapped import Bytes, MappedFile, read_mapped
from alter_publish.parallel import PARALLEL_MIN_ITEMS
from alter_publish.pipeline.build import dnssec_fingerprint, zone_changes
from alter_publish.pipeline.chain import (
    EnvelopeChain,
    handle_expectations,
    run_chain,
)
from alter_publish.pipeline.commit import Writes, commit
from alter_publish.pipeline.context import ProvenRun, RunContext, ZoneStart
from alter_publish.pipeline.fingerprint import (
    KeyLines,
    hashed_as_is,
)
from alter_publish.pipeline.incremental import (
    Edit,
    Memo,
    apply_edits,
    respliced,
)
from alter_publish.pipeline.memory import (
    Drafted,
    envelope_due,
    patch_record_later,
    valid_span,
)
from alter_publish.pipeline.patchbase import (
    PatchBase,
    handle_keys_now,
    patch_base,
    proof_answerer,
    prove_patch,
    recorded_keys,
)
from alter_publish.pipeline.patchfiles import PatchFiles, chunks_of
from alter_publish.pipeline.patchmemo import PatchEdits, memo_after
from alter_publish.pipeline.patchrenew import DNSSEC_HEADER, header_window, renewal, renewed
from alter_publish.pipeline.patchtext import (
    handle_line_edits,
    log_line_edit,
    touched_olds,
)
from alter_publish.pipeline.paths import current_outputs
from alter_publish.pipeline.render import (
    SignedHandle,
    handle_rrsets,
    handle_segments,
    log_rrset,
    template_context,
)
from alter_publish.pipeline.renewsoon import RenewalSoon
from alter_publish.pipeline.reports import Change, Stopwatch, ZoneResult, zone_result
from alter_publish.pipeline.transparency import Publication, resumed_publication, with_proofs
from alter_publish.verify.proof import Expectation, ProofReport
from alter_publish.version import __version__

_SOA_TYPE = 6
_TXT_TYPE = 16

#: RRsets a patch signs per handle at most, per zone key: an added handle's TXT, the
#: NSEC3 records of its owner and of the empty name above it, and the two neighbours'
#: NSEC3 records re-signed (an edited handle: its TXT; a removed one: two neighbours).
SIGNED_PER_HANDLE = 5


def _forks_nothing(base: PatchBase) -> bool:
    """Whether the patch's signatures, proof and key lines all run inline (fewer items
    than :data:`~alter_publish.parallel.PARALLEL_MIN_ITEMS` each), so that a thread may
    hash meanwhile: workers are forked with no thread running."""
    handles = SIGNED_PER_HANDLE * len(base.changed) + 2 * len(base.removed) + 2  # SOA, log
    return handles * max(1, len(base.zone_keys)) < PARALLEL_MIN_ITEMS


@dataclass(frozen=True, slots=True)
class _Chained:
    """The changed handles through the envelope chain, resumed from the memo's log."""

    log_path: Path
    raw_log: Bytes
    chain: EnvelopeChain
    expectations: dict[str, Expectation]


def _chain(ctx: RunContext, base: PatchBase) -> _Chained | None:
    """Run the changed handles through the envelope chain; None when a revocation is
    queued or the log is not as the memo says.

    Raises:
        KeyStoreError: a changed handle's key is missing, unusable or behind the log.
    """
    spec = base.spec
    log_path = log_path_for(spec.path)
    raw_log, log = read_owner_entries(log_path, (h.owner for h in spec.handles))
    index = LogIndex(log)
    revocations = zone_revocations(spec, index, read_revocations(revocations_path_for(spec.path)))
    if any(item.new for item in revocations.values()):
        return None
    try:
        tree = MerkleTree.resume(base.memo.log)
    except ValueError:
        return None
    if b"\r" in raw_log or (
        not _hashed(ctx, log_path, raw_log) and tree.size != raw_log.count(b"\n")
    ):
        return None  # a log not as this tool writes it: the full run reads it line by line
    chain = EnvelopeChain(spec, ctx.keys, ctx.now, index, revocations, tree)
    run_chain(ctx, chain, log)  # keys loaded by workers when there are many (renewals)
    return _Chained(log_path, raw_log, chain, handle_expectations(chain.signed, index))


def _hashed(ctx: RunContext, log_path: Path, raw_log: Bytes) -> bool:
    """Whether the mapped log is the file the base digest hashed (``Memo.base`` held): then
    its lines are those the memo's tree counted, as the run that left the memo wrote
    both, and counting them again (35 MB at 100,000 handles, 40 ms) is not needed."""
    return isinstance(raw_log, MappedFile) and hashed_as_is(ctx.digests, log_path, raw_log.fd)


@dataclass(frozen=True, slots=True)
class _Rendered:
    """The changed handles rendered into edits of the last run's zone file."""

    old_zone: Bytes  # mapped: see :mod:`alter_publish.mapped`
    old_envelopes: Bytes
    serial: int
    #: The serial state's digest (of the zone text with serial 0): waits for its thread.
    digest: Callable[[], str]
    envelopes_serial_end: int
    zone_edits: list[Edit]  # the serial, then each changed, added or removed handle's lines
    added: dict[int, Edit]  # per added entry, the edit that inserts its lines
    head: str  # the zone text before the first handle, with the new serial
    proof_text: list[str]  # the head and the changed handles' lines
    rrsets: list[HandleRecord]
    log: HandleRecord | None  # the checkpoint record when it changes


def _render(
    ctx: RunContext,
    base: PatchBase,
    signed: Sequence[SignedHandle],
    outputs: tuple[Path, Path],
    log: HandleRecord | None,
) -> _Rendered | None:
    """Render the changed handles, the checkpoint record ``log`` and the serial their
    digest gives; None when the old outputs are not where the memo says."""
    memo, spec = base.memo, base.spec
    try:
        old_zone = read_mapped(outputs[0])
        old_envelopes = read_mapped(outputs[1])
    except OSError:
        return None
    if not memo.fits(old_zone, old_envelopes, touched_olds(base)):
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
    made = handle_line_edits(base, segments, rrsets, old_zone)
    if made is None:
        return None
    segment_edits, added = made
    log_edits = log_line_edit(old_zone, memo.segments[0], serial_end, log)
    if log_edits is None:
        return None
    rendered = memoryview(old_zone)[: memo.rendered_end]
    zero: list[Edit] = [(memo.serial_at, serial_end, b"0"), *log_edits, *segment_edits]
    parts = [*apply_edits(rendered, zero), dnssec_fingerprint(spec, base.zone_keys, base.window)]
    # The digest (of 50 MB at 100,000 handles) is made in a thread beside the DNSSEC work
    # and the proof when they fork no workers (a small patch; no RRSIG renewed).
    thread = _forks_nothing(base) and base.window == base.state.signatures
    digest = zone_sha256_soon(parts, "zone-draft-sha256", thread=thread)
    try:
        # The text changed, so its digest is not the state's: the serial moves on (and
        # ``_proven`` checks it).
        moved = any(old_zone[start:end] != new for start, end, new in zero[1:])
        serial = base.state.moved_on(ctx.now) if moved else base.state.next_for(digest(), ctx.now)
        head_edits: list[Edit] = [(memo.serial_at, serial_end, str(serial).encode()), *log_edits]
        zone_edits = [*head_edits, *segment_edits]
        head = b"".join(apply_edits(old_zone[: memo.segments[0]], head_edits)).decode()
        proof_text = [head, *(segment.decode() for segment in segments)]
    except BaseException:
        with contextlib.suppress(Exception):  # no thread outlives the patch
            digest()
        raise
    return _Rendered(
        old_zone,
        old_envelopes,
        serial,
        digest,
        env_serial_end,
        zone_edits,
        added,
        head,
        proof_text,
        rrsets,
        log
        if log_edits and old_zone[log_edits[0][0] : log_edits[0][1]] != log_edits[0][2]
        else None,
    )


@dataclass(frozen=True, slots=True)
class _Signed:
    """The DNSSEC edits of a patch: the header's count, then every changed block."""

    edits: list[Edit]
    chain: ChainPatch
    signatures: tuple[int, int]  # the zone's RRSIGs, those made in a window started since


def _patched_zone(
    ctx: RunContext,
    base: PatchBase,
    signed: Sequence[SignedHandle],
    watch: Stopwatch,
    outputs: tuple[Path, Path, Path],
    log: HandleRecord | None,
    soon: RenewalSoon | None = None,
) -> tuple[_Rendered, list[Edit], _Signed | None, Answerer] | None:
    """The zone file's edits (sorted, none that changes nothing) and the zone of the
    changed lines to prove, from the last ``outputs`` (one set; ``soon``: the renewal
    being made by workers); None when anything does not fit."""
    zone_file, envelopes_file, _ = outputs
    rendered = None
    try:
        with watch.stage("render"):
            rendered = _render(ctx, base, signed, (zone_file, envelopes_file), log)
        if rendered is None:
            return None
        zone_edits, proof_text = list(rendered.zone_edits), list(rendered.proof_text)
        dnssec = None
        if base.window is not None:
            with watch.stage("dnssec"):
                dnssec = _patched_blocks(rendered, base, zone_file.name, ctx.jobs, soon)
            zone_edits.extend(dnssec.edits)
            proof_text.append(dnssec.chain.blocks)
        # Edits that change nothing (an entry's comment edited, say) are no edits: a full run
        # would leave such a file alone.
        old_zone = rendered.old_zone
        zone_edits = sorted(
            (edit for edit in zone_edits if old_zone[edit[0] : edit[1]] != edit[2]),
            key=lambda edit: edit[:2],
        )
        mini = proof_answerer("".join(proof_text), base.spec.origin, zone_file.name)
    except (ValueError, IndexError, UnicodeDecodeError, RenderError):  # a full run instead
        _joined(rendered)
        return None
    except BaseException:
        _joined(rendered)
        raise
    return rendered, zone_edits, dnssec, mini


def _joined(rendered: _Rendered | None) -> None:
    """Wait for the rendered text's digest (no thread outlives the patch)."""
    if rendered is not None:
        with contextlib.suppress(Exception):
            rendered.digest()


def _patched_blocks(
    rendered: _Rendered, base: PatchBase, where: str, jobs: int, soon: RenewalSoon | None
) -> _Signed:
    """The DNSSEC edits: the RRSIGs of the SOA, the edited handles and the owners whose
    slot started made again, the added and removed handles' owners put in and taken out
    of the denial chain (:mod:`alter_publish.dns.chainpatch`), the header's count and window.

    Raises:
        ValueError: that cannot be done exactly as a full signing does it.
    """
    assert base.window is not None  # noqa: S101 (narrowing: only a signed zone has blocks)
    old_zone, memo = rendered.old_zone, base.memo
    records = from_zone(parse_zone_text(rendered.head, base.spec.origin, where=where))
    origin = records.origin
    soa = next((rrs for rrs in records.owners[origin] if rrs.rdtype == _SOA_TYPE), None)
    header = DNSSEC_HEADER.match(old_zone, memo.rendered_end)
    if soa is None or header is None:
        raise ValueError("no SOA, or not the DNSSEC records the signer writes")
    names = dict(records.names)
    resign: list[tuple[Labels, RRs]] = [(origin, soa)]
    added: list[tuple[Labels, RRs]] = []
    hints: dict[Labels, int] = {}  # where the memo says an edited handle's block starts
    for index, record in zip(base.changed, rendered.rrsets, strict=True):
        labels = labels_of(record.owner)
        names[labels] = record.owner
        rrs = RRs(_TXT_TYPE, record.ttl, record.wires)
        old = base.olds[index]
        if old is None:
            added.append((labels, rrs))
            continue
        resign.append((labels, rrs))
        hints[labels] = memo.blocks[2 * old]
    if rendered.log is not None:  # the checkpoint record: its line edited, its RRSIG made
        labels = labels_of(rendered.log.owner)
        names[labels] = rendered.log.owner
        resign.append((labels, RRs(_TXT_TYPE, rendered.log.ttl, rendered.log.wires)))
    removed = []
    for old in base.removed:
        owner = parse_handle(memo.refs[old]).owner(base.spec.origin)
        removed.append(labels_of(owner))
        names[removed[-1]] = owner
    (minimum,) = struct.unpack("!I", soa.wires[0][-4:])
    section = SignedSection(old_zone, header.end(), len(old_zone), origin)
    taken = None
    if soon is not None:
        taken = soon.renewal(section, records, resign)
        soon.close()  # before the signing and the proof fork theirs
    due, presigned = taken or (renewal(base, section, rendered.head, records, resign), {})
    chain = patch_chain(
        section,
        spec=base.spec.dnssec,
        keys=base.zone_keys,
        window=base.window,
        denial_ttl=min(int(minimum), soa.ttl),
        names={**names, **due.names},
        resign=[*resign, *due.resign],
        added=added,
        removed=removed,
        blocks=due.blocks,
        hints=hints,
        jobs=jobs,
        presigned={len(resign) + index: lines for index, lines in presigned.items()},
    )
    count = int(header.group(1)) + chain.signatures
    window = header_window(header.group(0), header.start(), base.window)
    edits = [(header.start(1), header.end(1), str(count).encode()), window, *chain.edits]
    return _Signed(edits, chain, (count, renewed(chain.edits, base)))


@dataclass(frozen=True, slots=True)
class Patched:
    """An incremental run of one zone: a few handles' lines patched into the last
    proven run's outputs (see :mod:`incremental`): nothing any reader sees is written
    until it is committed (its files are copied into a generation not switched to yet)."""

    base: PatchBase
    chained: _Chained
    state: SerialState
    files: PatchFiles  # the new zone file and envelopes, being copied
    memo: Memo  # after the patch (``base`` is taken once the outputs are written)
    handle_keys: tuple[tuple[str, int], ...]
    handle_lines: tuple[str, ...]
    signatures: tuple[int, int] | None  # the zone's RRSIGs, those renewed (None: unsigned)
    proof: ProofReport
    watch: Stopwatch
    publication: Publication
    recorded: KeyLines | None  # the key lines its record keeps (None: ``ctx.check``)
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
                written = commit(ctx, self._writes()) if ctx.check else self._commit(ctx)
        else:
            self.discard()
        chain, summary = self.chained.chain, self._summary()
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
            patched=(*(item.spec.handle.ref for item in chain.signed), *self._removed()),
            changes=tuple(self._changes()),
            log=self.spec.log,
        )

    def _commit(self, ctx: RunContext) -> list[str]:
        """Commit the patch and leave its record: made while the outputs are copied,
        written while they are synced, put in place once they are switched to (failing
        before, it is made again then, and fails there).

        Raises:
            RenderError: a file cannot be written.
        """
        keys = self.recorded
        assert keys is not None  # noqa: S101 (narrowing: None only for a check)
        drafted: list[Drafted] = []
        puts: list[Callable[[], None]] = []  # each puts the record in place

        def prepare() -> None:  # once the log is written
            with contextlib.suppress(Exception):
                puts.append(drafted[0].hashed())

        try:
            with contextlib.suppress(Exception):  # while the outputs are copied
                drafted.append(self._remember_later(ctx, keys))
            done = commit(ctx, self._writes(), prepare)
        except BaseException:  # the files being copied go (a no-op once switched)
            for draft in drafted:
                draft.drop()
            self.discard()
            raise
        if not puts:  # not made ready: made again, failing here if it must
            for draft in drafted:
                draft.drop()
            puts.append(self._remember_later(ctx, keys).hashed())
        puts[0]()
        return done

    def discard(self) -> None:
        """Drop the files being written (the run does not commit them)."""
        self.files.discard()

    def _removed(self) -> list[str]:
        return [self.base.memo.refs[old] for old in self.base.removed]

    def _changes(self) -> list[Change]:
        """Why, as a full run says it (handles published again, then removed ones)."""
        chain, base = self.chained.chain, self.base
        changes = list(chain.changes)
        named = {change.handle for change in changes if change.reason == "new"}
        changes += (
            Change(item.spec.handle.ref, "new", "published again")
            for index, item in zip(base.changed, chain.signed, strict=True)
            if not base.edited(index) and item.spec.handle.ref not in named
        )
        changes += (Change(ref, "removed", "") for ref in sorted(self._removed()))
        return changes + zone_changes(base.state, "", base.window, base.zone_keys, True)

    def _summary(self) -> dict[str, Any]:
        """The record's summary of the run the patch makes."""
        summary = {**self.base.record.summary, "serial": self.state.serial}
        summary.pop("log", None)
        summary |= self.spec.log.to_mapping()
        window = self.state.signatures
        if self.signatures is not None and window and isinstance(summary.get("dnssec"), dict):
            times = {"inception": window.inception, "expiration": window.expiration}
            counts = {"signatures": self.signatures[0], "renewed": self.signatures[1]}
            summary["dnssec"] = {**summary["dnssec"], **counts, **times}
        return summary

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
            state=dataclasses.replace(self.state, zone_sha256=self.files.zone_sha256()),
            zone_file=chunks_of(self.files.zone),
            envelopes_file=chunks_of(self.files.envelopes),
            publication=self.publication,
            started=self.files.started,
        )

    def _remember_later(self, ctx: RunContext, keys: KeyLines) -> Drafted:
        """The fingerprint and memo of the run the patch makes, made ready
        (:func:`patch_record_later`)."""
        spec, record = self.spec, self.base.record
        # From when the envelopes patched in are reused, within the last run's (a little
        # late, never early: a run before at worst goes in full); until one falls due.
        valid_from, valid_until = valid_span(self.chained.chain.signed, self.state.signatures, spec)
        until = min(valid_until, min(self.memo.dues, default=valid_until))
        span = (max(record.valid_from, valid_from), until)
        entries, summary = self.base.entries, self._summary()
        return patch_record_later(
            ctx, spec, entries, self.handle_keys, keys, span, summary, self.memo
        )


def patched(ctx: RunContext, start: ZoneStart) -> Patched | None:
    """Patch the handles whose entry or key changed into the last proven run's outputs
    and prove them; None when that cannot be done exactly as a full run would do it
    (then: a full run, which also names any problem in the definition).

    Raises:
        KeyStoreError: a changed handle's key is missing, unusable or behind the log.
        SigningError: the zone keys cannot sign.
        RenderError: the output set cannot be prepared for the new files.
    """
    base = patch_base(ctx, start) if ctx.verify else None
    if base is None:
        return None
    watch = Stopwatch([("load", time.perf_counter() - start.started)])
    outputs = current_outputs(ctx.out, base.spec.origin)  # resolved once: one set
    # A renewal day's RRSIGs are made by workers beside the envelopes and the render.
    soon = RenewalSoon.start(base, outputs[0], ctx.jobs) if not ctx.check else None
    try:
        with watch.stage("keys+envelopes"):
            chained = _chain(ctx, base)
        if chained is None:
            return None
        with watch.stage("log"):
            publication = resumed_publication(ctx, base.spec, chained.chain)
        if publication is None:
            return None
        chained.chain.signed = with_proofs(chained.chain.signed, publication)
        notes = publication.notes
        log = log_rrset(base.spec, notes[-1] if notes else None)
        made = _patched_zone(ctx, base, chained.chain.signed, watch, outputs, log, soon)
    finally:
        if soon is not None:
            soon.close()
    if made is None:
        return None
    try:
        return _proven(ctx, base, chained, publication, made, outputs[2], watch)
    except BaseException:
        _joined(made[0])
        raise


def _proven(
    ctx: RunContext,
    base: PatchBase,
    chained: _Chained,
    publication: Publication,
    made: tuple[_Rendered, list[Edit], _Signed | None, Answerer],
    ds_file: Path,
    watch: Stopwatch,
) -> Patched | None:
    """The patch proven, its files being copied and its memo and state made; None when
    its text came back as the last run's after all (then: a full run)."""
    rendered, zone_edits, dnssec, mini = made
    signed = chained.chain.signed
    with watch.stage("proof"):
        log_text = None if rendered.log is None else rendered.log.texts[0]
        proof = prove_patch(ctx, base, chained.expectations, log_text, mini, ds_file)
    handle_keys, lines = handle_keys_now(ctx, base, signed)
    # Taken before the copies' threads start: taking many forks workers.
    recorded = None if ctx.check else recorded_keys(ctx, base, handle_keys, lines)
    olds = (rendered.old_zone, rendered.old_envelopes)
    serial = (rendered.serial, rendered.envelopes_serial_end)
    files = PatchFiles.start(ctx, base, signed, olds, serial, zone_edits)
    try:
        ttls = respliced(base.memo.ttls, base.removed, dict.fromkeys(base.added, 0))
        dues = respliced(base.memo.dues, base.removed, dict.fromkeys(base.added, 0))
        for index, item in zip(base.changed, signed, strict=True):
            ttls[index], dues[index] = item.spec.ttl, envelope_due(item, base.spec)
        inserted = None
        if dnssec is not None:
            blocks, at = dnssec.edits, dnssec.chain.inserted.items()
            inserted = {name: blocks[2 + index] for name, index in at}
        edits = PatchEdits(
            zone_edits, files.envelope_edits, rendered.added, files.added_lines, inserted
        )
        ttls_dues = (tuple(ttls), tuple(dues))
        memo = memo_after(base, chained.chain.tree, rendered.serial, edits, lines, ttls_dues)
        digest = rendered.digest()
        state = dataclasses.replace(
            base.state,
            serial=rendered.serial,
            digest=digest,
            signatures=base.window or base.state.signatures,
            zone_sha256=None,  # the new zone's, once its thread is done (``_writes``)
        )
    except BaseException:
        files.discard()
        raise
    if base.state.next_for(digest, ctx.now) != rendered.serial:  # the text came back
        files.discard()
        return None
    return Patched(
        base=base,
        chained=chained,
        state=state,
        files=files,
        recorded=recorded,
        memo=memo,
        handle_keys=handle_keys,
        handle_lines=lines,
        signatures=None if dnssec is None else dnssec.signatures,
        proof=proof,
        watch=watch,
        publication=publication,
    )
