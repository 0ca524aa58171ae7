"""The text edits of a patch run (:mod:`alter_publish.pipeline.patch`) in the last
run's zone file: the handles' lines replaced, inserted and taken out, and the line of
the IdentityLog's checkpoint record (``_alter-log``), where the memo says they are."""

from __future__ import annotations

from collections.abc import Sequence

from alter_publish.dns.records import HandleRecord
from alter_publish.mapped import Bytes
from alter_publish.pipeline.incremental import Edit, next_olds
from alter_publish.pipeline.patchbase import PatchBase

__all__ = ["handle_line_edits", "log_line_edit", "touched_olds"]


def touched_olds(base: PatchBase) -> list[int]:
    """The memo's handles whose lines a patch replaces, removes or adds lines beside."""
    count = len(base.memo.refs)
    following = next_olds(base.olds, count, base.changed)
    found = {*base.removed}
    for index in base.changed:
        old = base.olds[index]
        found.add(min(following[index], count - 1) if old is None else old)
    return sorted(found)


def handle_line_edits(
    base: PatchBase, segments: Sequence[bytes], rrsets: Sequence[HandleRecord], old_zone: Bytes
) -> tuple[list[Edit], dict[int, Edit]] | None:
    """Each changed handle's lines replaced or inserted, each removed handle's taken out."""
    memo = base.memo
    starts = memo.segments
    following = next_olds(base.olds, len(memo.refs), base.changed)
    rows: list[tuple[int, int, int, bytes]] = []
    added: dict[int, tuple[int, int, int, bytes]] = {}
    for index, segment, record in zip(base.changed, segments, rrsets, strict=True):
        old = base.olds[index]
        if old is not None:
            rows.append((starts[old], starts[old + 1], index, segment))
            continue
        name = f"\n{record.owner} ".encode()
        if base.window is None and old_zone.find(name, 0, memo.rendered_end) >= 0:
            return None  # a name of the zone already (the DNSSEC patch finds it there)
        at = starts[following[index]]
        added[index] = (at, at, index, segment)
        rows.append(added[index])
    rows += ((starts[old], starts[old + 1], -1, b"") for old in base.removed)
    rows.sort(key=lambda row: row[:3])
    edits = {id(row): (row[0], row[1], row[3]) for row in rows}
    return [edits[id(row)] for row in rows], {i: edits[id(row)] for i, row in added.items()}


def log_line_edit(
    old_zone: Bytes, head_end: int, after: int, log: HandleRecord | None
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
