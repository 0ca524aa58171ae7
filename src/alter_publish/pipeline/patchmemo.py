"""Where a patch leaves each handle in its outputs: the memo of the run it makes, from
the last run's and the patch's edits (:mod:`alter_publish.pipeline.patch`)."""

from __future__ import annotations

import dataclasses
import itertools
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from alter_publish.dns.records import Labels, labels_of
from alter_publish.format.identitylog import MerkleTree
from alter_publish.pipeline.incremental import (
    Edit,
    Memo,
    one_amount,
    placed,
    respliced,
    shift,
    shift_ascending,
)
from alter_publish.pipeline.patchbase import PatchBase

__all__ = ["PatchEdits", "memo_after"]


@dataclass(frozen=True, slots=True)
class PatchEdits:
    """A patch's edits of the last run's files: the zone file's (sorted) and the
    envelopes document's, and per added entry the edit that puts its lines in each; the
    edit that puts each added owner's DNSSEC block in (None: the zone is not signed)."""

    zone: Sequence[Edit]
    envelopes: Sequence[Edit]
    added_zone: Mapping[int, Edit]
    added_envelopes: Mapping[int, Edit]
    inserted: Mapping[Labels, Edit] | None


def _blocks_after(
    base: PatchBase, zone_edits: Sequence[Edit], inserted: Mapping[Labels, Edit] | None
) -> tuple[list[int], tuple[int, int]]:
    """Where each handle's and the apex's DNSSEC lines stand once ``zone_edits`` are made
    (``inserted``: the edit that puts each added owner's block in; None: not signed)."""
    memo = base.memo
    if inserted is None:
        return [], memo.apex
    # No block put in or taken out, and every size changed before the first block (an
    # edit or a rotation: a TXT line longer or shorter, its RRSIG the same size): every
    # block moves by one amount, found in one C loop (the general way takes 50 ms).
    first = min(memo.apex[0], min(memo.blocks, default=memo.apex[0]))
    amount = None if base.added or base.removed else one_amount(zone_edits, first)
    if amount is not None:
        blocks = list(map(amount.__add__, memo.blocks))
        return blocks, (memo.apex[0] + amount, memo.apex[1] + amount)
    starts = [*memo.blocks[0::2], memo.apex[0]]
    sizes = list(map(operator.sub, [*memo.blocks[1::2], memo.apex[1]], starts))
    # A block an edit replaces whole: the new one's size (the few edits looked up, not
    # every block: a dictionary of 100,000 starts took 10 ms).
    replacing = {start: (end, len(new)) for start, end, new in zone_edits}
    for index in itertools.compress(itertools.count(), map(replacing.__contains__, starts)):
        end, size = replacing[starts[index]]
        if starts[index] + sizes[index] == end:
            sizes[index] = size
    moved = shift(starts, zone_edits)
    ends = list(map(operator.add, moved, sizes))
    positions = {id(edit): at for edit, at in zip(zone_edits, placed(zone_edits), strict=True)}
    owners = {
        index: labels_of(item.owner)
        for index, item in zip(base.changed, base.spec.handles, strict=True)
    }
    new_starts: dict[int, int] = {}
    new_ends: dict[int, int] = {}
    for index in base.added:
        edit = inserted[owners[index]]
        new_starts[index] = positions[id(edit)]
        new_ends[index] = new_starts[index] + len(edit[2])
    count = len(memo.refs)
    blocks = [0] * (2 * len(base.olds))
    blocks[0::2] = respliced(moved[:count], base.removed, new_starts)
    blocks[1::2] = respliced(ends[:count], base.removed, new_ends)
    return blocks, (moved[-1], ends[-1])


def memo_after(
    base: PatchBase,
    tree: MerkleTree,
    serial: int,
    edits: PatchEdits,
    lines: tuple[str, ...],
    ttls: tuple[tuple[int, ...], tuple[int, ...]],
) -> Memo:
    """The memo once a patch's ``edits`` are made, with the new ``serial`` and log
    ``tree`` (``lines``: each handle's key line; ``ttls``: each handle's TTL, and when
    its envelope falls due)."""
    memo = base.memo
    zone_edits, envelope_edits = edits.zone, edits.envelopes
    count = len(memo.refs)
    # Both ascend (``Memo.fits`` checked): each run between two edits moves as one.
    zone_moved = shift_ascending([*memo.segments, memo.rendered_end], zone_edits)
    zone_at = {id(e): at for e, at in zip(zone_edits, placed(zone_edits), strict=True)}
    env_moved = shift_ascending([*memo.envelopes, memo.envelopes_serial_at], envelope_edits)
    env_at = {id(e): at for e, at in zip(envelope_edits, placed(envelope_edits), strict=True)}
    segments = respliced(
        zone_moved[:count],
        base.removed,
        {index: zone_at[id(edits.added_zone[index])] for index in base.added},
    )
    envelopes = respliced(
        env_moved[:count],
        base.removed,
        {index: env_at[id(edits.added_envelopes[index])] for index in base.added},
    )
    blocks, apex = _blocks_after(base, zone_edits, edits.inserted)
    refs = respliced(memo.refs, base.removed, dict.fromkeys(base.added, ""))
    for index, handle_spec in zip(base.changed, base.spec.handles, strict=True):
        refs[index] = handle_spec.handle.ref
    return dataclasses.replace(
        memo,
        refs=tuple(refs),
        entries=base.entries.texts,
        keys=lines,
        ttls=ttls[0],
        dues=ttls[1],
        log=tuple(tree.frontier()),
        serial=serial,
        segments=[*segments, zone_moved[count]],
        blocks=blocks,
        apex=apex,
        rendered_end=zone_moved[-1],
        envelopes=[*envelopes, env_moved[count]],
        envelopes_serial_at=env_moved[-1],
    )
