"""A patch's daily renewal: the RRSIGs whose owner's slot started since the last run
made again in place (see :mod:`alter_publish.dns.renewdue`), and the DNSSEC header's
zone window moved, as a full signing writes them (see :mod:`.patch`)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass

from alter_publish.definition.state import SignatureWindow
from alter_publish.definition.values import format_utc
from alter_publish.dns.chainpatch import Block, SignedSection
from alter_publish.dns.records import Labels, RRs, ZoneRecords, from_zone
from alter_publish.dns.renewdue import due_owners, due_rrsets, old_windows, sigtime, txt_rrsets
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.pipeline.incremental import Edit
from alter_publish.pipeline.patchbase import PatchBase

_TXT_TYPE = 16
_NEWEST = b"the newest valid "

#: The comment line the DNSSEC records start with (the count of signatures changes).
DNSSEC_HEADER = re.compile(
    rb"\n; DNSSEC \(alter-publish\): [^\n]*?, (\d+) signatures "
    rb"(?:valid |in daily renewal slots)[^\n]*\n"
)


@dataclass(frozen=True, slots=True)
class Renewal:
    """The rrsets whose RRSIGs fall due, the blocks of those the proof does not need
    (renewed only: not the apex, nor an owner signed anyway), the owner names as written."""

    resign: list[tuple[Labels, RRs]]
    blocks: dict[Labels, Block]
    names: dict[Labels, str]


def renewal(
    base: PatchBase,
    section: SignedSection,
    head: str,
    records: ZoneRecords,
    skip: Sequence[tuple[Labels, RRs]],
) -> Renewal:
    """The rrsets of every owner whose slot started since the last run (the zone window
    ``base.state.signatures`` moved to ``base.window``), but those in ``skip`` (signed
    anyway) and the removed handles': from the section, the rendered ``head`` (its
    ``records``) and, for the handles not signed anew, their rendered lines.

    Raises:
        ValueError: that cannot be done exactly as a full signing does it.
    """
    signed = {(labels, rrs.rdtype) for labels, rrs in skip}
    found = due_found(base, section, head, records.owners, signed)
    return renewal_of(found, {labels for labels, _ in skip} | {section.origin})


def renewal_of(found: Sequence[tuple[Labels, RRs, Block]], proven: Set[Labels]) -> Renewal:
    """The :class:`Renewal` of the rrsets ``found`` due (:func:`due_found`), the blocks of
    the owners ``proven`` left out."""
    return Renewal(
        [(labels, rrs) for labels, rrs, _ in found],
        {labels: block for labels, _, block in found if labels not in proven},
        {labels: block.owner.decode("ascii") for labels, _, block in found},
    )


def due_found(
    base: PatchBase,
    section: SignedSection,
    head: str,
    head_rrsets: Mapping[Labels, Sequence[RRs]],
    skip: Set[tuple[Labels, int]],
    span: tuple[int, int] | None = None,
) -> list[tuple[Labels, RRs, Block]]:
    """:func:`renewal`'s rrsets due, but those of ``skip`` (owner, type), each with its
    block, in file order per slot (``head_rrsets``: those of ``head``, the zone file's
    text before its handles, rendered now or, in a worker, the last run's; ``span``:
    just the owners whose block starts there, see :func:`.renewdue.due_owners`).

    Raises:
        ValueError: that cannot be done exactly as a full signing does it.
    """
    previous, window = base.state.signatures, base.window
    if previous is None or window is None or previous == window:
        return []
    memo = base.memo
    handles = dict(zip(memo.blocks[::2], itertools.count()))  # block start: memo index
    changed = {base.olds[index] for index in base.changed}
    removed = set(base.removed)
    signed_anyway = changed | removed  # once: a day's renewals are thousands of handles
    owners = list(due_owners(section, previous, window, base.spec.dnssec, span))
    wanted = [
        handles[due.block.start]
        for due in owners
        if _TXT_TYPE in due.covered
        and due.block.start in handles
        and handles[due.block.start] not in signed_anyway
    ]
    data = section.data
    segments = "".join(data[memo.segments[old] : memo.segments[old + 1]].decode() for old in wanted)
    rrsets_of = head_rrsets
    if segments:  # the TXT rrsets of the handles due, read fast when they can be
        fast = txt_rrsets(segments)
        if fast is None:
            zone = parse_zone_text(head + segments, base.spec.origin, where="renewal")
            rrsets_of = from_zone(zone).owners
        else:
            rrsets_of = {**head_rrsets, **{labels: (rrs,) for labels, rrs in fast.items()}}

    def by_type(block: Block) -> Mapping[int, RRs] | None:
        old = handles.get(block.start)
        if old is not None and old in removed:
            return None
        if old is not None and old in changed:
            return {}
        rrsets = rrsets_of.get(block.labels)
        if rrsets is None:
            raise ValueError("an owner due is not in the zone")
        return {rrs.rdtype: rrs for rrs in rrsets}

    return due_rrsets(section, iter(owners), by_type, dict.fromkeys(skip))


def renewed(edits: Iterable[Edit], base: PatchBase) -> int:
    """How many RRSIGs ``edits`` make in a window started since the last run (every
    RRSIG of the owners whose slot started since: a full run counts them)."""
    previous, window = base.state.signatures, base.window
    if previous is None or window is None or previous == window:
        return 0
    times = [
        f" {sigtime(new.expiration)} {sigtime(new.inception)} ".encode()
        for new in old_windows(previous, window, base.spec.dnssec).values()
    ]
    return sum(text.count(mark) for _, _, text in edits for mark in times)


def header_window(header: bytes, at: int, window: SignatureWindow) -> Edit:
    """The edit of the DNSSEC header line (``header``, from ``at`` in the file) that
    names the zone window.

    Raises:
        ValueError: the line does not name one.
    """
    start = header.find(_NEWEST)
    if start < 0:
        raise ValueError("a DNSSEC header without the zone window")
    start += len(_NEWEST)
    end = header.index(b"\n", start)
    text = f"{format_utc(window.inception)} to {format_utc(window.expiration)}"
    return (at + start, at + end, text.encode())
