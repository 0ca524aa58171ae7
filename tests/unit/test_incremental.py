"""The pieces of incremental re-signing: cutting a definition around its handle
entries, the memo, and edits to byte strings."""

from __future__ import annotations

import array
import bisect
import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from alter_publish.definition.entries import split_entries
from alter_publish.definition.loader import load_yaml_text
from alter_publish.errors import RenderError
from alter_publish.format.identitylog import (
    LogEntry,
    MerkleTree,
    append_lines,
    read_log,
    read_owner_entries,
)
from alter_publish.pipeline.incremental import (
    Alignment,
    Edit,
    Memo,
    align_entries,
    apply_edits,
    next_olds,
    one_amount,
    respliced,
    shift,
    shift_ascending,
)

LAYOUTS = {
    "plain": "zone: a.example\nhandles:\n  - ~a\n  - ~b\n  - ~c\n",
    "last key missing newline": "zone: a.example\nhandles:\n  - ~a\n  - ~b",
    "keys after": "zone: a.example\nhandles:\n  - ~a\n  - ~b\nns: [x.]\nttl: 1h\n",
    "indent 0": "handles:\n- ~a\n- handle: ~b\n  resolver: https://x/\n- ~c\nzone: a.example\n",
    "comments and blanks": (
        "zone: a.example\nhandles:   # every handle\n\n  # first\n  - ~a   # apex\n\n"
        "# out-dented comment\n  - handle: ~b\n    tags:\n      team: x\n\n  - ~c\n\nns: [x.]\n"
    ),
    "block scalar": (
        "handles:\n  - handle: ~a\n    note: |\n      - not an entry\n      # not a comment\n"
        "  - ~b\nzone: a.example\n"
    ),
    "nested list": "handles:\n  - handle: ~a\n    more:\n    - x\n    - y\n  - ~b\n",
    "flow entries": "handles:\n  - {handle: ~a, resolver: 'https://x/?a=1&b=2'}\n  - ~b\n",
    "key named in a comment": "zone: a.example  # handles: below\nhandles:\n  - ~a\n  - ~b\n",
}


def _entries_of(text: str) -> list[tuple[object, int]]:
    node = load_yaml_text(text, "d.yaml")
    return [(entry.plain(), entry.mark.line) for entry in node.value["handles"].value]


@pytest.mark.parametrize("text", LAYOUTS.values(), ids=LAYOUTS.keys())
def test_each_entry_alone_parses_as_in_the_whole_definition(text: str) -> None:
    entries = split_entries(text)
    assert entries is not None
    whole = _entries_of(text)
    assert len(entries.texts) == len(whole)
    for index in range(len(whole)):
        assert _entries_of(entries.document([index])) == [whole[index]]
    assert _entries_of(entries.document(range(len(whole)))) == whole
    header = load_yaml_text(entries.header, "d.yaml").plain()
    full = load_yaml_text(text, "d.yaml").plain()
    assert header == {**full, "handles": []}


DECLINED = {
    "flow list": "handles: [~a, ~b]\n",
    "no entries": "handles:\nzone: a.example\n",
    "anchor": "handles:\n  - &a ~a\n  - *a\n",
    "merge key": "handles:\n  - &x {handle: ~a}\n  - <<: *x\n",
    "tab": "handles:\n\t- ~a\n",
    "crlf": "handles:\r\n  - ~a\r\n",
    "two keys": "handles:\n  - ~a\nhandles:\n  - ~b\n",
    "mapping": "handles:\n  a: ~a\n",
    "no handles key": "zone: a.example\nhandle:\n  - ~a\n",
    "vertical tab": "handles:\n  - ~a\x0b\n",
    "line separator": "handles:\n  - ~\u00e9\u2028\n",
}


@pytest.mark.parametrize("text", DECLINED.values(), ids=DECLINED.keys())
def test_layouts_it_cannot_cut_safely_are_declined(text: str) -> None:
    assert split_entries(text) is None


def test_edits_and_shifted_offsets() -> None:
    data = b"0123456789"
    edits = [(1, 3, b"abcd"), (5, 5, b"+"), (8, 10, b"")]
    assert b"".join(apply_edits(data, edits)) == b"0abcd34+567"
    # 0 stays; 1 (an edit's start) stays; 3 (its end) moves by +2; 5 by +3; 10 by +1.
    assert shift([0, 1, 3, 5, 9, 10], edits) == [0, 1, 5, 8, 12, 11]
    assert shift([12, 10, 11], edits) == [13, 11, 12]  # all past the edits: one amount
    assert b"".join(apply_edits(memoryview(data), [])) == data
    with pytest.raises(ValueError, match="overlap"):
        apply_edits(data, [(3, 5, b""), (4, 6, b"")])


def _shift_one_by_one(offsets: list[int], edits: list[Edit]) -> list[int]:
    """The reference :func:`shift` mirrors: each offset looked up in Python."""
    ends = [end for _, end, _ in edits]
    totals = [0]
    for start, end, new in edits:
        totals.append(totals[-1] + len(new) - (end - start))
    return [offset + totals[bisect.bisect_right(ends, offset)] for offset in offsets]


@st.composite
def _edits(draw: st.DrawFn) -> list[Edit]:
    """Ascending, non-overlapping edits of a 200-byte file."""
    cuts = sorted(draw(st.lists(st.integers(0, 200), max_size=12)))
    pairs = list(zip(cuts[::2], cuts[1::2], strict=False))
    return [(start, end, b"x" * draw(st.integers(0, 9))) for start, end in pairs]


@given(offsets=st.lists(st.integers(0, 200)), edits=_edits())
def test_offsets_shift_as_one_by_one(offsets: list[int], edits: list[Edit]) -> None:
    assert shift(offsets, edits) == _shift_one_by_one(offsets, edits)


@given(low=st.integers(0, 220), edits=_edits())
def test_one_amount_is_how_far_every_offset_past_the_edits_moves(
    low: int, edits: list[Edit]
) -> None:
    amount = one_amount(edits, low)
    offsets = list(range(low, 230))
    shifted = _shift_one_by_one(offsets, edits)
    moved = [after - before for before, after in zip(offsets, shifted, strict=True)]
    if amount is None:  # an edit that changes a size ends past low
        assert any(len(new) != end - start and end > low for start, end, new in edits)
    else:
        assert set(moved) == {amount}


@given(offsets=st.lists(st.integers(200, 300)), edits=_edits())
def test_offsets_past_every_edit_shift_as_one_by_one(offsets: list[int], edits: list[Edit]) -> None:
    # Every edit ends before every offset: they all move by one amount (the quick way).
    assert shift(offsets, edits) == _shift_one_by_one(offsets, edits)


@given(offsets=st.lists(st.integers(0, 200)), edits=_edits())
def test_ascending_offsets_shift_as_one_by_one(offsets: list[int], edits: list[Edit]) -> None:
    offsets.sort()
    expected = _shift_one_by_one(offsets, edits)
    assert shift_ascending(offsets, edits) == expected
    assert shift_ascending(array.array("q", offsets), edits) == expected  # as a memo has them


@st.composite
def _alignments(draw: st.DrawFn) -> tuple[list[int | None], list[int]]:
    """Entries now against a memo's: each kept handle in order, some removed, some added."""
    count = draw(st.integers(0, 30))
    kept = [old for old in range(count) if draw(st.booleans())]
    olds: list[int | None] = []
    for old in kept:
        olds += [None] * draw(st.integers(0, 2))
        olds.append(old)
    olds += [None] * draw(st.integers(0, 3))
    return olds, sorted(set(range(count)) - set(kept))


@given(alignment=_alignments())
def test_values_respliced_as_entry_by_entry(alignment: tuple[list[int | None], list[int]]) -> None:
    olds, removed = alignment
    count = len([old for old in olds if old is not None]) + len(removed)
    values = [f"v{old}" for old in range(count)]
    added = {index: f"new{index}" for index, old in enumerate(olds) if old is None}
    expected = [values[old] if old is not None else added[i] for i, old in enumerate(olds)]
    assert respliced(values, removed, added) == expected
    following, reference = count, {}
    for index in range(len(olds) - 1, -1, -1):
        old = olds[index]
        following = following if old is None else old
        reference[index] = following
    asked = [index for index in range(len(olds)) if olds[index] is None or index % 3 == 0]
    assert next_olds(olds, count, asked) == {index: reference[index] for index in asked}


def _aligned_one_by_one(
    old_texts: list[str], old_keys: list[str], texts: list[str], key_lines: list[str]
) -> Alignment | None:
    """The reference :func:`align_entries` mirrors: Python loops over the entries."""
    if old_texts == texts:  # unchanged entries: as the last proven run had them
        pairs = enumerate(zip(old_keys, key_lines, strict=True))
        return Alignment(tuple(range(len(texts))), tuple(i for i, (a, b) in pairs if a != b))
    head = 0  # the entries before the first that differs, and after the last, stay
    while head < min(len(old_texts), len(texts)) and old_texts[head] == texts[head]:
        head += 1
    tail = 0
    while (
        head + tail < min(len(old_texts), len(texts)) and old_texts[-1 - tail] == texts[-1 - tail]
    ):
        tail += 1
    where: dict[str, int] = {}
    for index in range(head, len(old_texts) - tail):
        if where.setdefault(old_texts[index], index) != index:
            return None
    middle = [where.get(text) for text in texts[head : len(texts) - tail]]
    olds = (*range(head), *middle, *range(len(old_texts) - tail, len(old_texts)))
    kept = [old for old in olds if old is not None]
    if any(a >= b for a, b in itertools.pairwise(kept)):
        return None
    signed = tuple(
        index for index, old in enumerate(olds) if old is None or old_keys[old] != key_lines[old]
    )
    return Alignment(olds, signed)


@given(
    old_texts=st.lists(st.sampled_from("abcdefgh"), max_size=8),
    texts=st.lists(st.sampled_from("abcdefghij"), max_size=9),
    rotated=st.sets(st.integers(0, 7)),
)
@example(old_texts=["a", "a"], texts=["a", "a"], rotated={1})  # unchanged, though repeated
def test_entries_align_as_one_by_one(
    old_texts: list[str], texts: list[str], rotated: set[int]
) -> None:
    old_keys = [f"k{index}" for index in range(len(old_texts))]
    key_lines = [f"k{index}" + ("'" if index in rotated else "") for index in range(len(old_keys))]
    expected = _aligned_one_by_one(old_texts, old_keys, texts, key_lines)
    assert align_entries(old_texts, old_keys, texts, key_lines) == expected


def _memo(**changes: object) -> Memo:
    values: dict[str, object] = {
        "zone": "a.example",
        "base": "b",
        "refs": ("~a", "~b"),
        "entries": ("  - ~a", "  - ~b"),
        "keys": ("1 2 3 4 5 6", "- -"),
        "ttls": (60, 60),
        "dues": (5000, 2**40),
        "log": ((2, "00" * 32),),
        "serial": 7,
        "serial_at": 100,
        "rendered_end": 900,
        "segments": (200, 300, 400),
        "blocks": (1000, 1100, 1100, 1200),
        "apex": (900, 1000),
        "envelopes": (50, 80, 110),
        "envelopes_serial_at": 130,
    }
    values.update(changes)
    return Memo(**values)  # type: ignore[arg-type]


def test_a_memo_reads_back_as_written(tmp_path: Path) -> None:
    path = tmp_path / "memo.json"
    memo = _memo(segments=(200, 2**40, 2**40 + 1))
    memo.write(path)
    again = Memo.read(path)
    assert again is not None
    assert list(again.segments) == [200, 2**40, 2**40 + 1]
    assert list(again.dues) == [5000, 2**40]
    assert (again.refs, again.entries, again.log, again.apex) == (
        memo.refs,
        memo.entries,
        memo.log,
        memo.apex,
    )


def _recount(data: bytes) -> bytes:
    """The refs section given one ref more, its length in the head too: counts differ."""
    line_end = data.index(b"\n")
    head = json.loads(data[:line_end])
    refs_at = line_end + 1
    head["sections"][0] += len(b"\n~c")
    start = refs_at + head["sections"][0] - len(b"\n~c")
    body = data[refs_at:start] + b"\n~c" + data[start:]
    return json.dumps(head).encode() + b"\n" + body


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],
        lambda data: data[:-1],
        lambda data: data.replace(b"alter-publish/memo/4", b"alter-publish/memo/3"),
        _recount,
        lambda data: b"[]\n",
        lambda data: b"",
        lambda data: b"{}",
    ],
    ids=["truncated", "a byte short", "format", "counts", "not an object", "empty", "no line"],
)
def test_a_damaged_memo_reads_as_none(tmp_path: Path, damage: Callable[[bytes], bytes]) -> None:
    path = tmp_path / "memo.json"
    _memo().write(path)
    assert Memo.read(path) is not None
    path.write_bytes(damage(path.read_bytes()))
    assert Memo.read(path) is None
    assert Memo.read(tmp_path / "missing.json") is None


def test_an_entry_holding_the_separator_is_refused_on_reading(tmp_path: Path) -> None:
    path = tmp_path / "memo.json"
    _memo(entries=("  - ~a\0", "  - ~b")).write(path)
    assert Memo.read(path) is None  # three entries for two handles: a full run


FITTING = {
    "segments": (200, 300, 900),
    "rendered_end": 900,
    "blocks": (1000, 1100, 1100, 1200),
    "apex": (900, 1000),
}


@pytest.mark.parametrize(
    ("changes", "fits"),
    [
        ({}, True),
        ({"blocks": ()}, True),
        ({"segments": (200, 200, 900)}, False),
        ({"envelopes": (50, 110, 80)}, False),
        ({"blocks": (1000, 1000, 1100, 1200)}, False),
        ({"blocks": (1000, 1100, 1200, 1100)}, False),
        ({"blocks": (800, 1100, 1100, 1200)}, False),
        ({"blocks": (1000, 1100, 1100, 1201)}, False),
        ({"apex": (900, 900)}, False),
        ({"apex": (899, 1000)}, False),
    ],
    ids=[
        "fits",
        "unsigned",
        "segments not ascending",
        "envelopes not ascending",
        "empty block",
        "block backwards",
        "block in the rendered text",
        "block past the end",
        "empty apex",
        "apex in the rendered text",
    ],
)
def test_a_memo_fits_files_its_offsets_are_inside(changes: dict[str, object], fits: bool) -> None:
    memo = _memo(**{**FITTING, **changes})
    assert memo.fits(b"z" * 1200, b"e" * 200, ()) is fits


def test_a_merkle_tree_resumes_from_its_frontier() -> None:
    for size in (0, 1, 2, 3, 7, 8, 13):
        tree = MerkleTree()
        for number in range(size):
            tree.append(b"entry %d" % number)
        resumed = MerkleTree.resume(tree.frontier())
        assert (resumed.size, resumed.root()) == (tree.size, tree.root())
        tree.append(b"next")
        resumed.append(b"next")
        assert resumed.root() == tree.root()
    with pytest.raises(ValueError, match="frontier"):
        MerkleTree.resume([(3, "00" * 32)])
    with pytest.raises(ValueError, match="frontier"):
        MerkleTree.resume([(1, "00" * 32), (2, "00" * 32)])


def test_owner_entries_are_found_in_the_log_bytes(tmp_path: Path) -> None:
    path = tmp_path / "z.log"
    entries = [
        LogEntry("_alter.a.z.", "v=alter1; one"),
        LogEntry("_alter.b.z.", "v=alter1; two"),
        LogEntry("_alter.a.z.", "v=alter1; three"),
        LogEntry("x_alter.a.z.", "v=alter1; not a"),
        LogEntry("_alter.c.z.", "v=alter1; four"),
    ]
    path.write_text("".join(entry.to_line() for entry in entries))
    raw, log = read_owner_entries(path, ["_alter.a.z.", "_alter.c.z.", "_alter.none.z."])
    assert bytes(raw) == path.read_bytes()
    assert log.entries == (entries[0], entries[2], entries[4])
    append_lines(path, raw, [LogEntry("_alter.d.z.", "v=alter1; five")])
    assert read_log(path).entries[-1] == LogEntry("_alter.d.z.", "v=alter1; five")
    assert read_log(path).entries[:5] == tuple(entries)
    empty_raw, empty = read_owner_entries(tmp_path / "none.log", ["_alter.a.z."])
    assert (empty_raw, empty.entries) == (b"", ())


@pytest.mark.parametrize("count", [3, 200], ids=["searched", "lines"])
def test_owner_entries_are_those_of_the_whole_log_at_those_owners(
    tmp_path: Path, count: int
) -> None:
    path = tmp_path / "z.log"
    entries = [
        LogEntry(f"{prefix}_alter.u{number % 97}.z.", f"v=alter1; {number}")
        for number in range(300)
        for prefix in ("", "x")
    ]
    path.write_text("".join(entry.to_line() for entry in entries))
    owners = {f"_alter.u{number}.z." for number in range(count)}
    raw, log = read_owner_entries(path, owners)
    assert bytes(raw) == path.read_bytes()
    assert log.entries == tuple(e for e in read_log(path).entries if e.owner in owners)


def _document_reference(
    text: str, offsets: tuple[int, ...], texts: tuple[str, ...], indexes: list[int]
) -> str:
    """``Entries.document`` as first written: each entry's line counted from the top."""
    key_line = text.count("\n", 0, offsets[0]) - 1
    parts, line = ["\n" * key_line, "handles:\n"], key_line + 1
    for index in indexes:
        at = text.count("\n", 0, offsets[index])
        parts += ["\n" * (at - line), texts[index] + "\n"]
        line = at + texts[index].count("\n") + 1
    return "".join(parts)


@pytest.mark.parametrize(
    "indexes",
    [[0], [5], [0, 1, 2], [1, 4, 7], [0, 8], list(range(9))],
    ids=lambda indexes: ",".join(map(str, indexes)),
)
def test_a_document_of_some_entries_keeps_each_on_its_line(indexes: list[int]) -> None:
    lines = ["zone: example.com", "# comment", "handles:"]
    for n in range(9):
        lines += (
            [f"  - handle: ~user{n}", "    resolver: https://example.com/"]
            if n % 3
            else [
                f"  - ~user{n}",
                "  # a comment after it",
                "",
            ]
        )
    text = "\n".join([*lines, "ttl: 1h"]) + "\n"
    entries = split_entries(text)
    assert entries is not None
    document = entries.document(indexes)
    reference = _document_reference(text, entries.offsets, entries.texts, indexes)
    assert document == reference
    parsed = load_yaml_text(document, "zone.yaml").value["handles"].value
    assert [item.mark.line for item in parsed] == [
        text.count("\n", 0, entries.offsets[index]) + 1 for index in indexes
    ]


def test_a_patch_appends_to_the_log_by_the_kernels_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log's bytes are copied by ``copy_file_range`` into the new file, not written
    from this process nor read back to compare (35 MB and 0.13 s a patch at 100,000
    handles, and growing with the log)."""
    path = tmp_path / "z.log"
    entries = [LogEntry(f"_alter.u{n}.z.", f"v=alter1; {n:0200}") for n in range(2000)]
    path.write_text("".join(entry.to_line() for entry in entries))
    before = path.read_bytes()
    copied: list[int] = []
    real = os.copy_file_range

    def counted(src: int, dst: int, count: int, *args: Any) -> int:
        done = real(src, dst, count, *args)
        copied.append(done)
        return done

    monkeypatch.setattr(os, "copy_file_range", counted)
    raw, _ = read_owner_entries(path, ["_alter.u7.z."])
    append_lines(path, raw, [LogEntry("_alter.new.z.", "v=alter1; new")])
    assert sum(copied) == len(before)
    assert (
        path.read_bytes() == before + LogEntry("_alter.new.z.", "v=alter1; new").to_line().encode()
    )


def test_a_log_rewritten_in_place_while_a_patch_reads_it_is_not_copied(tmp_path: Path) -> None:
    """The kernel copies the file as it is when the run writes: a log changed in place
    since the run read and checked it stops the run (one line), the file as it was."""
    path = tmp_path / "z.log"
    entries = [LogEntry(f"_alter.u{n}.z.", f"v=alter1; {n:0200}") for n in range(2000)]
    path.write_text("".join(entry.to_line() for entry in entries))
    raw, _ = read_owner_entries(path, ["_alter.u7.z."])
    edited = path.read_bytes().replace(b"_alter.u7.z.", b"_alter.u8.z.")
    with path.open("r+b") as handle:  # in place, as an editor that does not rename
        handle.write(edited)
    os.utime(path, ns=(1, 1))
    with pytest.raises(RenderError, match="log changed while this run read it"):
        append_lines(path, raw, [LogEntry("_alter.new.z.", "v=alter1; new")])
    assert path.read_bytes() == edited


@pytest.mark.parametrize("count", [1, 100], ids=["searched", "lines"])
def test_a_log_that_is_not_ascii_is_refused_by_the_patch_reader(tmp_path: Path, count: int) -> None:
    path = tmp_path / "z.log"
    entries = [LogEntry(f"_alter.u{n}.z.", f"v=alter1; {n:0200}") for n in range(2000)]
    path.write_bytes("".join(entry.to_line() for entry in entries).encode() + "é\n".encode())
    with pytest.raises(RenderError, match="log is not ASCII"):
        read_owner_entries(path, [f"_alter.u{n}.z." for n in range(count)])
