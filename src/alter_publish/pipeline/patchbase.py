"""Where a patch starts: the entries of the definition against the memo's (edited,
added, removed), every check a patch rests on passed (see :mod:`.patch`)."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import dns.zone

from alter_publish.definition.entries import Entries, split_entries
from alter_publish.definition.loader import read_definition
from alter_publish.definition.model import (
    DNSSECSpec,
    HandleSpec,
    ZoneSpec,
    load_handle_entries,
    load_zone_text,
)
from alter_publish.definition.state import (
    SerialState,
    SignatureWindow,
    key_states,
    renewal_slots,
    state_path_for,
)
from alter_publish.dns.anchors import TrustAnchor, read_trust_anchors
from alter_publish.dns.answerers import Answerer, answerer_for
from alter_publish.dns.dnssec import choose_window
from alter_publish.dns.wirezone import WireZone
from alter_publish.dns.zonekeys import ZoneKey
from alter_publish.dns.zonelines import read_zone_records
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.errors import AlterError, DefinitionError, UnsupportedZoneError
from alter_publish.format.handles import parse_handle
from alter_publish.pipeline.context import RunContext, ZoneStart
from alter_publish.pipeline.fingerprint import (
    Fingerprint,
    KeyLines,
    handle_key_lines,
    key_lines,
    recorded_key_lines,
)
from alter_publish.pipeline.incremental import (
    PATCH_MAX_SHARE,
    Alignment,
    Memo,
    align_entries,
    in_order,
    memo_path,
    respliced,
)
from alter_publish.pipeline.memory import base_digest, shipped_templates
from alter_publish.pipeline.render import SignedHandle
from alter_publish.verify.proof import Expectation, ProofReport, prove_zone

#: Up to this share of a zone's envelopes falling due at once, a patch renews them.
RENEW_MAX_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class PatchBase:
    """What a patch starts from, every check passed: the memo of the last proven run,
    the definition cut into entries, how they stand against the memo's (``olds``), the
    entries to sign (``changed``: edited or added, their handles in ``spec``) and the
    memo's handles removed, the serial state and (DNSSEC) the zone keys and window."""

    record: Fingerprint
    memo: Memo
    #: The memo's handles' key ``stat`` lines now (``fingerprint.key_lines``).
    keys: KeyLines
    entries: Entries
    olds: tuple[int | None, ...]
    changed: tuple[int, ...]  # indexes into ``olds``
    removed: tuple[int, ...]  # indexes into the memo's handles
    spec: ZoneSpec  # the zone (``spec.path`` its definition) with just the changed handles
    state: SerialState
    zone_keys: tuple[ZoneKey, ...]
    window: SignatureWindow | None

    def edited(self, index: int) -> bool:
        """Entry ``index`` (now) continues one of the memo's handles."""
        return self.olds[index] is not None

    @property
    def added(self) -> tuple[int, ...]:
        """The entries (now) that continue none of the memo's handles, ascending. Every
        other entry continues one, in the memo's order, and the memo's handles not
        continued are ``removed`` (:func:`~.incremental.respliced` rests on this)."""
        return tuple(index for index in self.changed if self.olds[index] is None)


def renewable(previous: SignatureWindow | None, window: SignatureWindow, spec: DNSSECSpec) -> bool:
    """The zone window moved from ``previous`` to ``window`` within one renewal cycle
    (same validity): the RRSIGs of the owners whose slot started since are made again,
    the rest stay, as a full signing keeps them."""
    if previous is None:
        return False
    if window == previous:
        return True
    slots, length = renewal_slots(spec.signature_validity - spec.refresh)
    moved = window.inception - previous.inception
    same = window.expiration - window.inception == previous.expiration - previous.inception
    return same and slots > 1 and 0 < moved < slots * length and moved % length == 0


def _changed_entries(
    ctx: RunContext, start: ZoneStart, record: Fingerprint, memo: Memo
) -> tuple[Entries, Alignment, int, KeyLines] | None:
    """The definition's entries, how they stand against the memo's (the handles whose
    envelope falls due among those to sign), how many are signed only for that and the
    key lines now (:func:`memo_key_lines`, taken once the cheaper checks passed); None
    when the definition or anything else the memo rests on is not as it was."""
    if ctx.now < record.valid_from:
        return None  # the clock went back: a full run says what that means
    try:
        entries = split_entries(read_definition(start.definition))
    except DefinitionError:
        return None  # the full run says what is wrong
    count = len(memo.refs)
    if entries is None or not entries.texts or len(record.handle_keys) != count:
        return None
    if base_digest(ctx, start.definition, memo.zone, entries) != memo.base:
        return None
    keys = memo_key_lines(ctx, record, memo)
    alignment = align_entries(memo.entries, memo.keys, entries.texts, keys.lines)
    if alignment is None:
        return None
    # Handles whose envelope falls due are signed again like edits (the chain renews them).
    due_olds = list(itertools.compress(itertools.count(), map(ctx.now.__ge__, memo.dues)))
    if due_olds:
        position = dict(zip(alignment.olds, itertools.count()))  # a C loop, not a Python one
        due = [position[old] for old in due_olds if old in position]
    else:
        due = []
    if len(due) > len(memo.refs) * RENEW_MAX_SHARE:
        return None  # most of the zone falls due: a full run is as quick
    signed = tuple(sorted(set(alignment.signed) | set(due)))
    return entries, Alignment(alignment.olds, signed), len(signed) - len(alignment.signed), keys


def _matched(
    memo: Memo, alignment: Alignment, specs: Sequence[HandleSpec], dnssec: bool, zone_ttl: int
) -> tuple[tuple[int | None, ...], tuple[int, ...]] | None:
    """Each parsed entry (``specs``, for ``alignment.signed``) told apart: an edit of the
    memo's handle of its ref, or a handle added; and the memo's handles removed. None when
    that cannot be patched exactly (handles moved, a TTL that may move the zone's largest,
    a ref or owner twice)."""
    olds = list(alignment.olds)
    count = len(memo.refs)
    unmatched: dict[str, int] = {}
    # The memo's handles continued stand in ``olds`` once each (ascending: align_entries),
    # so as many as the memo has means all of them.
    if len(olds) - olds.count(None) != count:
        gone = set(range(count)).difference(olds)
        unmatched = {memo.refs[old]: old for old in gone}
    added_refs: set[str] = set()
    renamed = False  # an entry of new text matched to a removed handle of its ref
    for index, handle_spec in zip(alignment.signed, specs, strict=True):
        ref = handle_spec.handle.ref
        same = olds[index]
        if same is not None:
            if memo.refs[same] != ref or memo.ttls[same] != handle_spec.ttl:
                return None  # a TTL that may move the zone's largest
            continue
        old = unmatched.pop(ref, None)
        if old is not None and memo.ttls[old] == handle_spec.ttl:
            olds[index], renamed = old, True
        elif old is not None or ref in added_refs or (dnssec and handle_spec.ttl > zone_ttl):
            return None
        else:
            added_refs.add(ref)
    if renamed and not in_order(olds):  # (the alignment's own are: ``align_entries``)
        return None  # handles moved
    removed = tuple(sorted(unmatched.values()))
    if added_refs and added_refs & set(memo.refs) - {memo.refs[old] for old in removed}:
        return None  # a ref twice: the full run names it
    if dnssec and any(memo.ttls[old] > zone_ttl for old in removed):
        return None
    return tuple(olds), removed


def patch_base(ctx: RunContext, start: ZoneStart) -> PatchBase | None:
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
    entries, alignment, renewals, keys = found
    try:
        zone = load_zone_text(entries.header, start.definition)
        handle_specs: tuple[HandleSpec, ...] = ()
        if alignment.signed:
            document = entries.document(alignment.signed)
            handle_specs = load_handle_entries(document, start.definition, zone)
    except AlterError:
        return None
    if len(handle_specs) != len(alignment.signed):
        return None
    matched = _matched(memo, alignment, handle_specs, zone.dnssec.enabled, zone.ttl)
    if matched is None:
        return None
    olds, removed = matched
    changes = len(alignment.signed) - renewals + len(removed)
    if changes > max(1, int(len(memo.refs) * PATCH_MAX_SHARE)):
        return None
    owners = [h.owner for h in handle_specs]
    if len(set(owners)) != len(owners):
        return None
    spec = dataclasses.replace(zone, handles=handle_specs)
    if record.summary.get("tls_files") or spec.tlsa_sets():
        return None  # TLSA records (DANE): a full run renders and signs them
    state = SerialState.read(state_path_for(start.definition))
    if spec.origin != memo.zone or spec.dnssec.enabled != bool(memo.blocks):
        return None
    if state is None or state.serial != memo.serial:
        return None
    zone_keys: tuple[ZoneKey, ...] = ()
    window = None
    if spec.dnssec.enabled:
        zone_keys = ctx.keys.zones.current(spec.origin, create=False, now=ctx.now)
        window = choose_window(ctx.now, spec.dnssec)
        if not renewable(state.signatures, window, spec.dnssec):
            return None
        if key_states(zone_keys) != state.keys:
            return None
    if not changes and not renewals and window == state.signatures:
        return None  # nothing to do that the unchanged path did not see: a full run
    return PatchBase(
        record,
        memo,
        keys,
        entries,
        olds,
        alignment.signed,
        removed,
        spec,
        state,
        zone_keys,
        window,
    )


def memo_key_lines(ctx: RunContext, record: Fingerprint, memo: Memo) -> KeyLines:
    """The key ``stat`` lines of the record's handles now: the memo's, with those of the
    handles the key store's journal names since taken anew (``fingerprint.key_lines``)."""
    recorded = KeyLines(memo.keys, memo.keys_mark)
    return key_lines(ctx.keys.root, record.zone, record.handle_keys, recorded, jobs=ctx.jobs)


def prove_patch(
    ctx: RunContext,
    base: PatchBase,
    expectations: Mapping[str, Expectation],
    checkpoint: str | None,
    mini: Answerer,
    ds_file: Path,
) -> ProofReport:
    """Prove a patch's names on loopback (``mini``: the engine answering the changed
    lines, :func:`proof_answerer`): the
    changed handles, the removed ones denied, the ``checkpoint`` record if it changed;
    to the zone's DS (``ds_file``) when it is signed.

    Raises:
        ServeError: the loopback server could not start.
    """
    anchors: tuple[TrustAnchor, ...] = ()
    if base.window is not None:
        anchors = read_trust_anchors(ds_file)
    return prove_zone(
        mini,
        base.spec,
        expectations,
        now=ctx.now,
        anchors=anchors,
        jobs=ctx.jobs,
        fresh=False,
        probe=False,
        absent=tuple(parse_handle(base.memo.refs[old]) for old in base.removed),
        checkpoint=checkpoint,
    )


def proof_answerer(text: str, origin: str, where: str) -> Answerer:
    """The engine that answers a patch's changed lines (``text``: the zone's head, the
    changed handles' lines and their DNSSEC blocks) in the loopback proof, read as
    ``serve`` reads a zone file: the handle TXT, RRSIG, NSEC and NSEC3 lines turned
    into wire form directly (:mod:`alter_publish.dns.zonelines`), the rest by dnspython,
    into the wire engine; whatever that reader or engine declines is parsed whole by
    dnspython (:func:`~alter_publish.dns.answerers.answerer_for`). At 4,500 handles
    renewed a day, dnspython's parse of those lines took 1.5 s.

    Raises:
        RenderError: the text does not parse.
    """

    def parse(head: str, line_of: Callable[[int], int]) -> dns.zone.Zone:
        return parse_zone_text(head, origin, where=where, line_of=line_of)

    records = read_zone_records(text, origin, parse)
    if records is not None:
        try:
            return WireZone.from_records(records.origin, records.plain, records.sigs)
        except UnsupportedZoneError:
            pass  # the dnspython engine serves it, as answerer_for decides
    return answerer_for([parse_zone_text(text, origin, where=where)])


def handle_keys_now(
    ctx: RunContext, base: PatchBase, signed: Sequence[SignedHandle]
) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...]]:
    """The record's handle keys and their ``stat`` lines, in the definition's order now:
    the changed and added handles' (``signed``) taken anew, the others' as ``base`` has
    them."""
    old_keys, origin = base.record.handle_keys, base.spec.origin
    added = base.added
    handle_keys = respliced(old_keys, base.removed, dict.fromkeys(added, ("", 0)))
    lines = respliced(base.keys.lines, base.removed, dict.fromkeys(added, ""))
    for position, item in zip(base.changed, signed, strict=True):
        old = base.olds[position]
        handle = item.spec.handle
        directory = (
            old_keys[old][0] if old is not None else ctx.keys.handle_dir_text(origin, handle)
        )
        handle_keys[position] = (directory, item.envelope.epoch)
    # Taken in one call, not one each (a renewal day: thousands): one pass of the store.
    taken = handle_key_lines([handle_keys[position] for position in base.changed])
    for position, line in zip(base.changed, taken, strict=True):
        lines[position] = line
    return tuple(handle_keys), tuple(lines)


def recorded_keys(
    ctx: RunContext,
    base: PatchBase,
    handle_keys: tuple[tuple[str, int], ...],
    lines: tuple[str, ...],
) -> KeyLines:
    """The key lines a patch's record keeps (``lines``: the handles' now,
    :func:`handle_keys_now`); taking many forks workers."""
    # The signed handles' key lines before this run loaded their keys ("": added).
    before = {i: "" if (o := base.olds[i]) is None else base.keys.lines[o] for i in base.changed}
    taken = KeyLines(lines, base.keys.mark)
    root, origin = ctx.keys.root, base.spec.origin
    return recorded_key_lines(root, origin, handle_keys, taken, before, jobs=ctx.jobs)
