"""Incremental re-signing: where the last proven run's outputs stand for each handle.

When a few handles of a large zone change (an entry edited, a key rotated), a full
run would re-sign, re-render, re-prove and re-write 100,000 handles to change a few
lines. Instead, after every proven run with the shipped templates, ``sign`` leaves
a memo beside the outputs (``<out>/.<definition>.memo.json``, a JSON line and then
binary sections: :meth:`Memo.to_bytes`) that says, for each
handle, what its entry in the definition and its key files were, and where its
lines stand in the zone file (its rendered records and its owner's DNSSEC records)
and in the envelopes document. The next run, if everything else is as that run
left it (see ``Inputs.base_digest``), finds the handles whose entry or key changed
and patches just their lines, the SOA serial and the SOA's RRSIG into the previous
outputs. Ed25519 and the shared signature window make every byte the same as a
full run would write; the tests compare the two.

This module only reads definitions and memos; ``pipeline`` decides and patches.
"""

from __future__ import annotations

import array
import bisect
import functools
import itertools
import json
import operator
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast, overload

from alter_publish.errors import RenderError
from alter_publish.fileio import Chunk, atomic_write_bytes
from alter_publish.keys.journal import NO_JOURNAL, Mark
from alter_publish.mapped import Bytes, MappedFile

MEMO_FORMAT = "alter-publish/memo/4"

T = TypeVar("T")

#: Above this share of changed handles a full run is as quick and simpler.
PATCH_MAX_SHARE = 0.05


def memo_path(out: Path, definition: Path) -> Path:
    """Where the memo of the last proven run of ``definition`` into ``out`` lives."""
    return out / f".{definition.name}.memo.json"


# --- the memo --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Memo:
    """Where the last proven run left each handle (byte offsets into its outputs).

    Attributes:
        zone: the zone's origin.
        base: ``Inputs.base_digest`` after that run wrote its outputs.
        refs: each handle's ref, in definition order.
        entries: each handle's entry text in the definition.
        keys: each handle's key ``stat`` line (``fingerprint.handle_key_lines``).
        keys_mark: where the key store's journal stood before ``keys`` were taken.
        ttls: each handle's TTL.
        dues: when each handle's envelope falls due for renewal (``memory.envelope_due``).
        log: the IdentityLog's Merkle tree frontier after that run (``MerkleTree.resume``).
        serial: the SOA serial; ``serial_at`` where its digits start in the zone file.
        rendered_end: where the rendered text ends in the zone file (the DNSSEC records,
            if any, follow).
        segments: where each handle's rendered lines start in the zone file, then where
            the last one's end.
        blocks: per handle, where its owner's DNSSEC lines start and end (empty when
            the zone is not signed); ``apex`` the same for the zone's apex.
        envelopes: where each handle's line (with the separator before it) starts in
            the envelopes document, then where the last one ends;
            ``envelopes_serial_at`` where the serial's digits start there.
    """

    zone: str
    base: str
    refs: tuple[str, ...]
    entries: tuple[str, ...]
    keys: tuple[str, ...]
    ttls: tuple[int, ...]
    dues: Sequence[int]
    log: tuple[tuple[int, str], ...]
    serial: int
    serial_at: int
    rendered_end: int
    segments: Sequence[int]
    blocks: Sequence[int]
    apex: tuple[int, int]
    envelopes: Sequence[int]
    envelopes_serial_at: int
    keys_mark: Mark = NO_JOURNAL

    def to_bytes(self) -> bytes:
        """The memo's bytes: a JSON line of the small fields and each section's length,
        then the sections (texts joined, integers as little-endian 64-bit), so that
        100,000 handles' texts and offsets are neither escaped nor parsed one by one."""
        head: dict[str, Any] = {"format": MEMO_FORMAT}
        for name in self.__slots__:
            if name not in _TEXTS and name not in _INTEGERS:
                value = getattr(self, name)
                head[name] = value.to_text() if isinstance(value, Mark) else value
        made = self._sections()
        head["sections"] = [len(section) for section in made]
        return b"".join([json.dumps(head, separators=(",", ":")).encode(), b"\n", *made])

    def _sections(self) -> list[bytes]:
        """The sections' bytes, in :data:`_SECTIONS` order: the bulk of :meth:`to_bytes`."""
        return [
            _TEXTS[name].join(getattr(self, name)).encode()
            if name in _TEXTS
            else _packed(getattr(self, name))
            for name in _SECTIONS
        ]

    @classmethod
    def read(cls, path: Path) -> Memo | None:
        """The memo at ``path``; None when missing or not a memo (then: a full run)."""
        try:
            raw = path.read_bytes()
            line_end = raw.index(b"\n")
            head = json.loads(raw[:line_end])
            if head.pop("format") != MEMO_FORMAT:
                return None
            lengths, at = head.pop("sections"), line_end + 1
            if len(lengths) != len(_TEXTS) + len(_INTEGERS) or at + sum(lengths) != len(raw):
                return None
            sections: dict[str, Any] = {}
            for name, length in zip(_SECTIONS, lengths, strict=True):
                data, at = raw[at : at + length], at + length
                if name in _TEXTS:
                    sections[name] = tuple(data.decode().split(_TEXTS[name])) if data else ()
                else:
                    sections[name] = _unpacked(data)
            memo = cls(
                zone=str(head["zone"]),
                base=str(head["base"]),
                refs=sections["refs"],
                entries=sections["entries"],
                keys=sections["keys"],
                ttls=tuple(sections["ttls"]),
                dues=sections["dues"],
                log=tuple((int(size), str(digest)) for size, digest in head["log"]),
                serial=int(head["serial"]),
                serial_at=int(head["serial_at"]),
                rendered_end=int(head["rendered_end"]),
                segments=sections["segments"],
                blocks=sections["blocks"],
                apex=(int(head["apex"][0]), int(head["apex"][1])),
                envelopes=sections["envelopes"],
                envelopes_serial_at=int(head["envelopes_serial_at"]),
                keys_mark=Mark.from_text(head["keys_mark"]),
            )
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None
        count = len(memo.refs)
        sizes = (len(memo.entries), len(memo.keys), len(memo.ttls), len(memo.dues))
        if sizes != (count,) * 4 or len(memo.segments) != count + 1:
            return None
        if len(memo.envelopes) != count + 1 or len(memo.blocks) not in (0, 2 * count):
            return None
        return memo

    def fits(self, zone: Bytes, envelopes: Bytes, changed: Sequence[int]) -> bool:
        """Whether the offsets can be those of ``zone`` and ``envelopes`` (the files as
        read now) for the ``changed`` handles: in order, inside the files, on the lines
        the shipped templates write for each handle. A memo is only ever a hint: what
        it says is checked where it is used."""
        segments, envelope_starts, blocks = self.segments, self.envelopes, self.blocks
        if not (
            0 <= self.serial_at < segments[0]
            and segments[-1] == self.rendered_end <= len(zone)
            and envelope_starts[-1] < self.envelopes_serial_at < len(envelopes)
            and _ascending(segments)
            and _ascending(envelope_starts)
        ):
            return False
        # Each block's start before its end, and all of them inside the DNSSEC records.
        if blocks and not (
            self.rendered_end <= self.apex[0] < self.apex[1] <= len(zone)
            and len(blocks) % 2 == 0
            and all(map(operator.lt, blocks[0::2], blocks[1::2]))
            and self.rendered_end <= min(blocks)
            and max(blocks) <= len(zone)
        ):
            return False
        count = len(self.refs)
        for index in changed:
            first = f"; {self.refs[index]} ".encode()
            line = envelopes[envelope_starts[index] : envelope_starts[index + 1]]
            if (
                not zone.startswith(first, segments[index])
                or zone.startswith(first + b"revocation ", segments[index])
                or zone[segments[index + 1] - 1 : segments[index + 1]] != b"\n"
                or f'"handle": "{self.refs[index]}"'.encode() not in line
                or not line.startswith(b"\n    {" if index == 0 else b",\n    {")
            ):
                return False
            if index + 1 < count:
                after = f"; {self.refs[index + 1]} ".encode()
                at = segments[index + 1]
                if not zone.startswith(after, at) or zone.startswith(after + b"revocation ", at):
                    return False
        return True

    def write(self, path: Path) -> None:
        """Write the memo atomically.

        Raises:
            RenderError: it cannot be written.
        """
        atomic_write_bytes(path, self.to_bytes(), error=RenderError)


def _ascending(values: Sequence[int]) -> bool:
    """Whether ``values`` strictly ascend (compared pairwise in a C loop)."""
    return all(map(operator.lt, values, itertools.islice(values, 1, None)))


#: The sections, in field order: texts with the separator none of them holds (a ref is
#: a name, a key line digits; an entry is YAML, which has no NUL: a memo that held one
#: would read back with more texts than handles, and be refused), and integers.
_TEXTS = {"refs": "\n", "entries": "\0", "keys": "\n"}
_INTEGERS = frozenset({"ttls", "dues", "segments", "blocks", "envelopes"})
_SECTIONS = [name for name in Memo.__slots__ if name in _TEXTS or name in _INTEGERS]


def _packed(values: Sequence[int]) -> bytes:
    packed = array.array("q", values)
    if sys.byteorder != "little":
        packed.byteswap()
    return packed.tobytes()


def _unpacked(data: bytes) -> array.array[int]:
    packed = array.array("q")
    packed.frombytes(data)
    if sys.byteorder != "little":
        packed.byteswap()
    return packed


# --- what changed -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Alignment:
    """The definition's entries against the memo's, before any is parsed.

    Attributes:
        olds: per entry now, the memo's entry it continues (its text as was), or None.
        signed: entries now whose text is new or whose key changed, ascending.
    """

    olds: tuple[int | None, ...]
    signed: tuple[int, ...]


def align_entries(
    old_texts: Sequence[str],
    old_keys: Sequence[str],
    texts: Sequence[str],
    key_lines: Sequence[str],
) -> Alignment | None:
    """Match each entry to the memo's entry of the same text (the header is the same, so
    the same text is the same handle); ``key_lines`` are the old handles' key ``stat``
    lines now. The entries before the first that differs and after the last stand
    where they stood; those between are matched to the memo's between, by text. None
    when a text repeats there or entries moved (then: a full run). An entry that
    repeats one kept outside that stretch is taken as new: the check of its handle's
    ref declines it (``patchbase._matched``), and the full run names it.

    Every pass over the entries is a C loop (``map``, ``compress``, ``dict(zip())``): at
    100,000 entries the Python loops this replaced took 0.1 s of each patch, and a
    dictionary of every entry 0.02 s more."""
    keys_changed = itertools.compress(itertools.count(), map(operator.ne, old_keys, key_lines))
    old_count, count = len(old_texts), len(texts)
    head = _same_count(old_texts, texts, min(old_count, count))
    if head == old_count == count:
        return Alignment(tuple(range(count)), tuple(keys_changed))
    tail = _same_count(reversed(old_texts), reversed(texts), min(old_count, count) - head)
    where = dict(zip(itertools.islice(old_texts, head, old_count - tail), itertools.count(head)))
    if len(where) != old_count - tail - head:
        return None  # a text repeats
    middle = tuple(map(where.get, itertools.islice(texts, head, count - tail)))
    if not in_order(middle):
        return None
    olds = (*range(head), *middle, *range(old_count - tail, old_count))
    position = dict(zip(middle, itertools.count(head)))  # the middle's kept: where now
    new = itertools.compress(
        itertools.count(head), map(operator.is_, middle, itertools.repeat(None))
    )
    signed = set(new)
    for old in keys_changed:
        if old < head:
            signed.add(old)
        elif old >= old_count - tail:
            signed.add(old + count - old_count)
        elif (now := position.get(old)) is not None:
            signed.add(now)
    return Alignment(olds, tuple(sorted(signed)))


def _same_count(old: Iterable[str], new: Iterable[str], most: int) -> int:
    """How many of the first texts of ``old`` and ``new`` are the same, at most ``most``
    (a C loop)."""
    differing = itertools.compress(itertools.count(), map(operator.ne, old, new))
    return min(next(differing, most), most)


def in_order(olds: Sequence[int | None]) -> bool:
    """Whether the memo's entries that ``olds`` continue stand in the memo's order (a C
    loop: filtered, then compared pairwise)."""
    kept = filter(functools.partial(operator.is_not, None), olds)
    return _ascending(cast("list[int]", list(kept)))


def next_olds(olds: Sequence[int | None], count: int, indexes: Iterable[int]) -> dict[int, int]:
    """For each of ``indexes`` (entries now, which take in every entry without an old
    one), the memo's index of the first entry at or after it that continues one of the
    memo's (``count`` past the last): where an added entry's lines go."""
    found: dict[int, int] = {}
    for index in sorted(indexes, reverse=True):
        at = index
        while at < len(olds) and olds[at] is None and at not in found:
            at += 1  # only past entries not asked for: none, when asked for every added one
        old = olds[at] if at < len(olds) else count
        found[index] = found[at] if old is None else old
    return found


# --- patching --------------------------------------------------------------------------

#: A replacement in a file: (start, end, new bytes), ``start <= end``.
Edit = tuple[int, int, bytes]


@overload
def apply_edits(
    data: bytes | memoryview, edits: Sequence[Edit]
) -> Sequence[bytes | memoryview]: ...
@overload
def apply_edits(
    data: bytes | memoryview | MappedFile, edits: Sequence[Edit]
) -> Sequence[Chunk]: ...
def apply_edits(data: bytes | memoryview | MappedFile, edits: Sequence[Edit]) -> Sequence[Chunk]:
    """``data`` with ``edits`` (ascending, not overlapping) made, as consecutive chunks
    (of a mapped file: spans of it, which the writers have the kernel copy)."""
    piece = data.span if isinstance(data, MappedFile) else lambda a, b: data[a:b]
    chunks: list[Chunk] = []
    at = 0
    for start, end, new in edits:
        if start < at or end < start:
            raise ValueError("edits overlap or run backwards")
        chunks.append(piece(at, start))
        chunks.append(new)
        at = end
    chunks.append(piece(at, len(data)))
    return chunks


def placed(edits: Sequence[Edit]) -> list[int]:
    """Where each edit's new bytes start once ``edits`` (ascending) are made."""
    starts: list[int] = []
    delta = 0
    for start, end, new in edits:
        starts.append(start + delta)
        delta += len(new) - (end - start)
    return starts


def shift(offsets: Sequence[int], edits: Sequence[Edit]) -> list[int]:
    """Where ``offsets`` stand after ``edits``: each moves by the size change of every
    edit that ends at or before it (an edit's own start stays put). The offsets may
    come in any order, the edits sorted by their end; the work per offset is done by C
    loops (``map``): 100,000 offsets in 15-20 ms, or 5 ms when every edit that changes
    a size ends before them all (a patch's zone edits before its DNSSEC records)."""
    amount = one_amount(edits, min(offsets, default=0))
    if amount is not None:
        return list(map(amount.__add__, offsets)) if amount else list(offsets)
    changes = [(end, len(new) - (end - start)) for start, end, new in edits]
    changes = [change for change in changes if change[1]]
    ends = [end for end, _ in changes]
    totals = [0, *itertools.accumulate(size for _, size in changes)]
    moved = map(totals.__getitem__, map(bisect.bisect_right, itertools.repeat(ends), offsets))
    return list(map(operator.add, offsets, moved))


def one_amount(edits: Sequence[Edit], low: int) -> int | None:
    """How far every offset at or past ``low`` moves by ``edits`` when every edit that
    changes a size ends at or before ``low`` (the sum of those changes); None when one
    ends past it (then offsets past ``low`` move by different amounts)."""
    total = 0
    for start, end, new in edits:
        size = len(new) - (end - start)
        if size:
            if end > low:
                return None
            total += size
    return total


def shift_ascending(offsets: Sequence[int], edits: Sequence[Edit]) -> list[int]:
    """:func:`shift` of ascending ``offsets``: the offsets between two edits' ends all
    move by one amount, so each such run is copied, or moved in one C loop (100,000
    offsets in about 3 ms, where :func:`shift` takes 15-25 ms)."""
    moved: list[int] = []
    at = delta = 0
    for start, end, new in edits:
        cut = bisect.bisect_left(offsets, end, lo=at)
        part = offsets[at:cut]
        moved += map(delta.__add__, part) if delta else part
        at, delta = cut, delta + len(new) - (end - start)
    part = offsets[at:]
    moved += map(delta.__add__, part) if delta else part
    return moved


def respliced(values: Sequence[T], removed: Sequence[int], added: Mapping[int, T]) -> list[T]:
    """Per-handle ``values`` of the memo's handles as they stand now: the ``removed``
    (ascending) taken out, each of ``added`` (index now: value) put in. A patch keeps
    every other handle in order (see ``PatchBase``), so this is
    ``[values[old] if old is not None else added[index] for index, old in enumerate(olds)]``
    made of slices: no work per unchanged handle in Python."""
    kept: list[T] = []
    at = 0
    for old in removed:
        kept += values[at:old]
        at = old + 1
    kept += values[at:]
    if not added:
        return kept
    out: list[T] = []
    taken = 0
    for index in sorted(added):
        count = index - len(out)
        out += kept[taken : taken + count]
        taken += count
        out.append(added[index])
    out += kept[taken:]
    return out
