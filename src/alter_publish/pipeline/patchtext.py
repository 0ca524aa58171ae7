"""The text edits of a patch run (:mod:`alter_publish.pipeline.patch`) in the last
run's zone file: the handles' lines replaced, inserted and taken out, and the line of
the IdentityLog's checkpoint record (``_alter-log``), where the memo says they are; and
the same handles' lines in the envelopes document."""

from __future__ import annotations

from collections.abc import Sequence

from alter_publish.dns.records import HandleRecord
from alter_publish.mapped import Bytes
from alter_publish.pipeline.incremental import Edit, next_olds
from alter_publish.pipeline.patchbase import PatchBase
from alter_publish.pipeline.render import SignedHandle, envelope_line

__all__ = ["envelope_edits_of", "handle_line_edits", "log_line_edit", "touched_olds"]


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


def envelope_edits_of(
    base: PatchBase,
    signed: Sequence[SignedHandle],
    serial: tuple[int, int],
    old_envelopes: Bytes,
) -> tuple[list[Edit], dict[int, Edit]]:
    """The envelopes document's edits: each changed handle's line replaced or inserted,
    each removed one's taken out, the first line's separator, then the serial (``serial``:
    the new one, and where the old one's digits end); and per added entry the edit that
    inserts its line."""
    memo = base.memo
    starts, count = memo.envelopes, len(memo.refs)
    following = next_olds(base.olds, count, base.changed)
    rows: list[tuple[int, int, int, bytes]] = []
    added: dict[int, tuple[int, int, int, bytes]] = {}
    for index, item in zip(base.changed, signed, strict=True):
        line = (("\n" if index == 0 else ",\n") + envelope_line(item)).encode()
        old = base.olds[index]
        if old is not None:
            rows.append((starts[old], starts[old + 1], index, line))
            continue
        at = starts[following[index]]
        added[index] = (at, at, index, line)
        rows.append(added[index])
    rows += ((starts[old], starts[old + 1], -1, b"") for old in base.removed)
    # The separator before a line kept as it was: "\n" before the first, ",\n" elsewhere.
    first = base.olds[0]
    if first is not None and first != 0 and 0 not in base.changed:
        rows.append((starts[first], starts[first] + 2, 0, b"\n"))
    if 0 not in base.removed and base.olds[0] != 0 and 0 in base.olds:
        index = base.olds.index(0)
        if index not in base.changed:
            rows.append((starts[0], starts[0] + 1, index, b",\n"))
    new_serial, serial_end = serial
    rows.append((memo.envelopes_serial_at, serial_end, len(base.olds), str(new_serial).encode()))
    rows.sort(key=lambda row: row[:3])
    edits = {id(row): (row[0], row[1], row[3]) for row in rows}
    return (
        [edits[id(row)] for row in rows if old_envelopes[row[0] : row[1]] != row[3]],
        {index: edits[id(row)] for index, row in added.items()},
    )
