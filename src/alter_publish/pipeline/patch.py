"""The second strategy: patch the few changed handles into the last proven run's outputs
(see :mod:`alter_publish.pipeline.incremental`), the same bytes as a full run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from alter_publish.definition.loader import read_definition
from alter_publish.definition.model import (
    ZoneSpec,
    load_handle_entries,
    load_zone_text,
)
from alter_publish.definition.state import (
    SerialState,
    SignatureWindow,
    key_states,
    state_path_for,
    zone_sha256,
)
from alter_publish.dns.dnssec import (
    choose_window,
    rrsig_lines,
)
from alter_publish.dns.records import (
    HandleRecord,
    Labels,
    RRs,
    from_zone,
    labels_of,
)
from alter_publish.dns.validation import TrustAnchor, read_trust_anchors
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.errors import (
    AlterError,
    DefinitionError,
    RenderError,
)
from alter_publish.fileio import (
    Chunk,
)
from alter_publish.format.ed25519 import SigningKey
from alter_publish.format.identitylog import (
    LogEntry,
    MerkleTree,
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
from alter_publish.keys.store import KeyStore, ZoneKey
from alter_publish.pipeline.build import _dnssec_fingerprint
from alter_publish.pipeline.chain import _current_material, _expectations, _Key, _sign_handle
from alter_publish.pipeline.fingerprint import (
    Fingerprint,
    handle_key_lines,
)
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
from alter_publish.pipeline.memory import _base_digest, _shipped_templates
from alter_publish.pipeline.paths import ds_path, output_paths
from alter_publish.pipeline.render import (
    SignedHandle,
    envelope_line,
    handle_rrsets,
    handle_segments,
    template_context,
)
from alter_publish.pipeline.reports import Change, ZoneResult, _explained, _Stopwatch
from alter_publish.verify.proof import (
    ProofReport,
    prove_zone,
)
from alter_publish.version import __version__

_SOA_TYPE = 6


_TXT_TYPE = 16


@dataclass(frozen=True, slots=True)
class _Patch:
    """An incremental run of one zone: a few handles' lines patched into the last
    proven run's outputs (see :mod:`incremental`), in memory until committed."""

    spec: ZoneSpec  # the zone (``spec.path`` its definition) with just the changed handles
    log_path: Path
    raw_log: bytes
    new_entries: tuple[LogEntry, ...]
    signed: tuple[SignedHandle, ...]
    state: SerialState
    zone: tuple[Chunk, ...] | None  # None: unchanged
    envelopes: tuple[Chunk, ...] | None
    memo: Memo  # after the patch (``base`` is taken once the outputs are written)
    entries: Entries
    record: Fingerprint
    handle_keys: tuple[tuple[str, int], ...]
    handle_lines: tuple[str, ...]
    proof: ProofReport
    watch: _Stopwatch
    changes: tuple[Change, ...] = ()


def _try_patch(
    definition: Path,
    out: Path,
    keys: KeyStore,
    templates: Path,
    options: str,
    now: int,
    record: Fingerprint,
    handle_lines: Sequence[str],
    *,
    create_keys: bool,
    started: float,
) -> _Patch | None:
    """Patch the handles whose entry or key changed into the last proven run's outputs
    and prove them; None when that cannot be done exactly as a full run would do it
    (then: a full run, which also names any problem in the definition).

    Raises:
        KeyStoreError: a changed handle's key is missing, unusable or behind the log.
        SigningError: the zone keys cannot sign.
    """
    memo = Memo.read(memo_path(out, definition))
    if memo is None or memo.zone != record.zone or not _shipped_templates(templates):
        return None
    if not record.valid_from <= now < record.valid_until:
        return None  # something falls due: a full run renews it
    try:
        entries = split_entries(read_definition(definition))
    except DefinitionError:
        return None  # the full run says what is wrong
    count = len(memo.refs)
    if entries is None or len(entries.texts) != count or len(handle_lines) != count:
        return None
    if _base_digest(definition, memo.zone, out, keys, templates, options, entries) != memo.base:
        return None
    changed = tuple(
        index
        for index, (entry, key, old_entry, old_key) in enumerate(
            zip(entries.texts, handle_lines, memo.entries, memo.keys, strict=True)
        )
        if entry != old_entry or key != old_key
    )
    if not changed or len(changed) > max(1, int(count * PATCH_MAX_SHARE)):
        return None
    try:
        zone = load_zone_text(entries.header, definition)
        handle_specs = load_handle_entries(entries.document(changed), definition, zone)
    except AlterError:
        return None
    if [(h.handle.ref, h.ttl) for h in handle_specs] != [
        (memo.refs[index], memo.ttls[index]) for index in changed
    ]:
        return None  # a handle renamed, or a TTL that may move the zone's largest
    spec = dataclasses.replace(zone, handles=handle_specs)
    previous_state = SerialState.read(state_path_for(definition))
    if spec.origin != memo.zone or spec.dnssec.enabled != bool(memo.blocks):
        return None
    if previous_state is None or previous_state.serial != memo.serial:
        return None
    zone_keys: tuple[ZoneKey, ...] = ()
    window = None
    if spec.dnssec.enabled:
        zone_keys = keys.current_zone_keys(spec.origin, create=False, now=now)
        window = choose_window(previous_state.signatures, now, spec.dnssec)
        if window != previous_state.signatures or key_states(zone_keys) != previous_state.keys:
            return None
    watch = _Stopwatch([("load", time.perf_counter() - started)])

    with watch.stage("keys+envelopes"):
        log_path = log_path_for(definition)
        if len(handle_specs) <= PATCH_OWNER_SCANS:
            raw_log, log = read_owner_entries(log_path, (h.owner for h in handle_specs))
        else:
            log = read_log(log_path)
            raw_log = log_path.read_bytes() if log.entries else b""
        index = LogIndex(log)
        revocations = zone_revocations(
            spec, index, read_revocations(revocations_path_for(definition))
        )
        if any(item.new for item in revocations.values()):
            return None
        try:
            tree = MerkleTree.resume(memo.log)
        except ValueError:
            return None
        if tree.size != raw_log.count(b"\n") or b"\r" in raw_log:
            return None  # a log not as this tool writes it: the full run reads it line by line
        signed: list[SignedHandle] = []
        new_entries: list[LogEntry] = []
        changes: list[Change] = []
        for handle_spec in handle_specs:
            epoch, seed, commitment = _current_material(
                spec, handle_spec, keys, index, create=create_keys
            )
            public = SigningKey.from_seed(seed).public
            key = _Key(handle_spec.handle, epoch, public, commitment, seed)
            _sign_handle(
                spec,
                handle_spec,
                key,
                keys,
                now,
                index,
                revocations,
                tree,
                signed,
                new_entries,
                changes,
            )
        expectations = _expectations(signed, index)

    zone_file, envelopes_file = output_paths(out, spec.origin)
    # The memo and the old outputs are hints checked as they are used: anything that
    # does not fit declines (a full run rewrites the outputs whole).
    try:
        with watch.stage("render"):
            try:
                old_zone = zone_file.read_bytes()
                old_envelopes = envelopes_file.read_bytes()
            except OSError:
                return None
            if not memo.fits(old_zone, old_envelopes, changed):
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
            segments = [text.encode() for text in handle_segments(templates, context)]
            segment_edits: list[Edit] = [
                (memo.segments[index], memo.segments[index + 1], segment)
                for index, segment in zip(changed, segments, strict=True)
            ]
            draft = hashlib.sha256()
            rendered = memoryview(old_zone)[: memo.rendered_end]
            for chunk in apply_edits(
                rendered, [(memo.serial_at, serial_end, b"0"), *segment_edits]
            ):
                draft.update(chunk)
            draft.update(_dnssec_fingerprint(spec, zone_keys, window).encode())
            serial = previous_state.next_for(draft.hexdigest(), now)
            new_serial = str(serial).encode()
            zone_edits: list[Edit] = [(memo.serial_at, serial_end, new_serial), *segment_edits]
            head = b"".join(apply_edits(old_zone[: memo.segments[0]], zone_edits[:1])).decode()
            proof_text = [head, *(segment.decode() for segment in segments)]

        if window is not None:
            with watch.stage("dnssec"):
                blocks = _patched_blocks(
                    old_zone, memo, changed, head, rrsets, spec, zone_keys, window, zone_file.name
                )
                if blocks is None:
                    return None
                zone_edits.extend(blocks)
                proof_text.extend(new.decode() for _, _, new in blocks)
        # Edits that change nothing (an entry's comment edited, say) are no edits: a full run
        # would leave such a file alone.
        zone_edits = sorted(
            (edit for edit in zone_edits if old_zone[edit[0] : edit[1]] != edit[2]),
            key=lambda edit: edit[0],
        )

        mini = parse_zone_text("".join(proof_text), spec.origin, where=zone_file.name)
    except (ValueError, UnicodeDecodeError, RenderError):
        return None

    with watch.stage("proof"):
        anchors: tuple[TrustAnchor, ...] = ()
        if window is not None:
            anchors = read_trust_anchors(ds_path(out, spec.origin))
        proof = prove_zone(mini, spec, expectations, now=now, anchors=anchors, probe=False)

    envelope_edits: list[Edit] = [
        (
            memo.envelopes[index],
            memo.envelopes[index + 1],
            (("\n" if index == 0 else ",\n") + envelope_line(item)).encode(),
        )
        for index, item in zip(changed, signed, strict=True)
    ]
    envelope_edits.append((memo.envelopes_serial_at, env_serial_end, new_serial))
    envelope_edits = [
        edit for edit in envelope_edits if old_envelopes[edit[0] : edit[1]] != edit[2]
    ]
    handle_keys = list(record.handle_keys)
    lines = list(handle_lines)
    for position, item in zip(changed, signed, strict=True):
        directory = handle_keys[position][0]
        handle_keys[position] = (directory, item.envelope.epoch)
        lines[position] = handle_key_lines([handle_keys[position]])[0]
    zone_offsets = shift([*memo.segments, *memo.blocks, *memo.apex, memo.rendered_end], zone_edits)
    segments_count = len(memo.segments)
    blocks_end = segments_count + len(memo.blocks)
    envelope_offsets = shift((*memo.envelopes, memo.envelopes_serial_at), envelope_edits)
    after = dataclasses.replace(
        memo,
        entries=entries.texts,
        keys=tuple(lines),
        log=tuple(tree.frontier()),
        serial=serial,
        segments=zone_offsets[:segments_count],
        blocks=zone_offsets[segments_count:blocks_end],
        apex=(zone_offsets[blocks_end], zone_offsets[blocks_end + 1]),
        rendered_end=zone_offsets[-1],
        envelopes=envelope_offsets[:-1],
        envelopes_serial_at=envelope_offsets[-1],
    )
    new_zone = tuple(apply_edits(memoryview(old_zone), zone_edits)) if zone_edits else None
    state = dataclasses.replace(
        previous_state,
        serial=serial,
        digest=draft.hexdigest(),
        zone_sha256=zone_sha256((old_zone,) if new_zone is None else new_zone),
    )
    return _Patch(
        spec=spec,
        log_path=log_path,
        raw_log=raw_log,
        new_entries=tuple(new_entries),
        signed=tuple(signed),
        state=state,
        zone=new_zone,
        envelopes=(
            tuple(apply_edits(memoryview(old_envelopes), envelope_edits))
            if envelope_edits
            else None
        ),
        memo=after,
        entries=entries,
        record=record,
        handle_keys=tuple(handle_keys),
        handle_lines=tuple(lines),
        proof=proof,
        watch=watch,
        changes=tuple(changes),
    )


def _patched_blocks(
    old_zone: bytes,
    memo: Memo,
    changed: Sequence[int],
    head: str,
    rrsets: Sequence[HandleRecord],
    spec: ZoneSpec,
    zone_keys: Sequence[ZoneKey],
    window: SignatureWindow,
    where: str,
) -> list[Edit] | None:
    """The apex's and each changed handle's DNSSEC lines with new RRSIGs over the SOA
    and their TXT rrsets (every other line stays: the owners and their types are the
    same, so the denial chain is too)."""
    records = from_zone(parse_zone_text(head, spec.origin, where=where))
    origin = records.origin
    soa = next((rrs for rrs in records.owners[origin] if rrs.rdtype == _SOA_TYPE), None)
    if soa is None:
        return None
    names = dict(records.names)
    todo: list[tuple[Labels, RRs]] = [(origin, soa)]
    for record in rrsets:
        labels = labels_of(record.owner)
        names[labels] = record.owner
        todo.append((labels, RRs(_TXT_TYPE, record.ttl, record.wires)))
    signatures = rrsig_lines(todo, keys=zone_keys, window=window, origin=origin, names=names)
    spans = [memo.apex, *((memo.blocks[2 * i], memo.blocks[2 * i + 1]) for i in changed)]
    covered = ["SOA", *("TXT" for _ in changed)]
    owners = [names[origin], *(record.owner for record in rrsets)]
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


def _patch_result(patch: _Patch, out: Path, written: Sequence[str]) -> ZoneResult:
    spec, summary = patch.spec, patch.record.summary
    zone_file, envelopes_file = output_paths(out, spec.origin)
    ds = tuple(str(line) for line in summary.get("ds", ()))
    return ZoneResult(
        zone=spec.origin,
        zone_file=zone_file,
        envelopes_file=envelopes_file,
        serial=patch.state.serial,
        handles=len(patch.memo.refs),
        signed=len(patch.new_entries),
        reused=len(patch.memo.refs) - len(patch.new_entries),
        written=tuple(written),
        proof=patch.proof,
        timings=tuple(patch.watch.stages),
        ds_file=ds_path(out, spec.origin) if ds else None,
        ds=ds,
        dnssec=summary.get("dnssec"),
        patched=tuple(item.spec.handle.ref for item in patch.signed),
        changes=_explained(patch.changes, written),
    )
