"""The DNSSEC section's owner blocks found by search and by a memo's hint."""

from __future__ import annotations

import pytest

from alter_publish.dns.chainpatch import SignedSection

_HEAD = b"; DNSSEC header\n"
_LINES = [
    b"example. 3600 IN NSEC a.example. NS SOA RRSIG NSEC\n",
    b"example. 3600 IN RRSIG NSEC 15 1 3600 20270101000000 20261201000000 1 example. AA==\n",
    b"a.example. 3600 IN NSEC b.example. TXT RRSIG NSEC\n",
    b"a.example. 3600 IN RRSIG TXT 15 2 3600 20270101000000 20261201000000 1 example. AA==\n",
    b"a.example. 3600 IN RRSIG NSEC 15 2 3600 20270101000000 20261201000000 1 example. AA==\n",
    b"b.example. 3600 IN NSEC example. TXT RRSIG NSEC\n",
    b"b.example. 3600 IN RRSIG TXT 15 2 3600 20270101000000 20261201000000 1 example. AA==\n",
]
_ORIGIN = (b"example", b"")
_A = (b"a", b"example", b"")
_B = (b"b", b"example", b"")


def _section(lines: list[bytes]) -> SignedSection:
    data = _HEAD + b"".join(lines)
    return SignedSection(data, len(_HEAD), len(data), _ORIGIN)


def _starts(lines: list[bytes]) -> list[int]:
    starts, at = [], len(_HEAD)
    for line in lines:
        starts.append(at)
        at += len(line)
    return starts


def test_a_right_hint_finds_the_block_search_finds() -> None:
    section, starts = _section(_LINES), _starts(_LINES)
    for labels, first in ((_ORIGIN, 0), (_A, 2), (_B, 5)):
        found = section.find(labels, starts[first])
        assert found is not None
        assert found == section.find(labels)
        assert found.start == starts[first]


@pytest.mark.parametrize(
    "hint",
    [
        pytest.param(4, id="the owner's last line, not its first"),
        pytest.param(3, id="the owner's second line"),
        pytest.param(5, id="another owner's block"),
        pytest.param(0, id="the apex's block"),
    ],
)
def test_a_wrong_hint_falls_back_to_the_search(hint: int) -> None:
    section, starts = _section(_LINES), _starts(_LINES)
    found = section.find(_A, starts[hint])
    assert found is not None
    assert (found.start, found.end) == (starts[2], starts[5])


@pytest.mark.parametrize("offset", [-1, 1, 15, 10**9, -(10**9)])
def test_a_hint_off_a_line_or_outside_falls_back(offset: int) -> None:
    # 15: inside the line, where the word read as an owner ("IN") is not a name.
    section, starts = _section(_LINES), _starts(_LINES)
    found = section.find(_A, starts[2] + offset)
    assert found is not None
    assert (found.start, found.end) == (starts[2], starts[5])


def test_the_hint_is_taken_without_the_search() -> None:
    # Owners out of canonical order: the search misses a.example., a right hint does not.
    lines = [_LINES[5], _LINES[6], _LINES[2], _LINES[3], _LINES[4]]
    section, starts = _section(lines), _starts(lines)
    assert section.find(_A) is None
    found = section.find(_A, starts[2])
    assert found is not None
    assert (found.start, found.end) == (starts[2], section.end)
