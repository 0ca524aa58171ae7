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


def test_every_hint_finds_what_the_search_finds() -> None:
    # Every offset from before the section to past its end, for every owner: a hint
    # inside a line (a name in an NSEC line's rdata), on an owner's later line or on
    # another owner never changes what is found.
    section = _section(_LINES)
    for labels in (_ORIGIN, _A, _B, (b"c", b"example", b"")):
        expected = section.find(labels)
        for hint in range(section.start - 3, section.end + 4):
            assert section.find(labels, hint) == expected, (labels, hint)


def test_a_hint_on_a_line_the_signer_does_not_write_falls_back() -> None:
    lines = [*_LINES, b"; a comment\n"]
    section, starts = _section(lines), _starts(lines)
    found = section.find(_A, starts[-1])
    assert found is not None
    assert (found.start, found.end) == (starts[2], starts[5])


def test_a_right_hint_is_taken_without_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    section, starts = _section(_LINES), _starts(_LINES)
    searched: list[tuple[bytes, ...]] = []
    seek = SignedSection.seek

    def counted(self: SignedSection, labels: tuple[bytes, ...]) -> int:
        searched.append(labels)
        return seek(self, labels)

    monkeypatch.setattr(SignedSection, "seek", counted)
    found = section.find(_A, starts[2])
    assert found is not None
    assert found.start == starts[2]
    assert searched == []
    assert section.find(_A, starts[3]) == found  # a wrong one: searched
    assert searched == [_A]
