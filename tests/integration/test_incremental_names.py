"""Handles added, removed and renamed are patched in too: the names come and go in the
NSEC or NSEC3 chain, and every output byte is what a full run writes.

Each scenario edits a workspace, gives any new handle its key (the same key in both
workspaces: keys are random), copies it, signs the original (a patch) and the copy in
full, and compares every output file byte for byte.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from alter_publish.format.handles import parse_handle
from alter_publish.keys.store import KeyStore
from tests.conftest import NOW
from tests.integration.test_incremental import (
    ZONE,
    _edit,
    _same_as_full,
    _sign,
    _workspace,
)

DENIALS = ["nsec", "nsec3"]


def _key(root: Path, *refs: str) -> None:
    for ref in refs:
        KeyStore(root / "keys").current_material(ZONE, parse_handle(ref), create=True)


def _nsec3_label(name: str) -> str:
    wire = b"".join(bytes((len(label),)) + label for label in name.lower().encode().split(b"."))
    digest = hashlib.sha1(wire, usedforsecurity=False).digest()
    return base64.b32hexencode(digest).decode().lower()


def _chain_ends(root: Path) -> tuple[tuple[str, str], tuple[str, str]]:
    """The handles (ref, entry) whose names (the owner or the empty non-terminal above
    it) hash first and last in the NSEC3 chain."""
    text = (root / f"build/{ZONE}.zone").read_text()
    chain = sorted(re.findall(rf"^([0-9a-v]{{32}})\.{re.escape(ZONE)}\. ", text, re.MULTILINE))
    found: dict[str, tuple[str, str]] = {}
    for n in range(1, 60):
        if n % 7 == 0:
            ref, entry = f"~user{n}", f"  - {{handle: ~user{n}, resolver: 'https://{ZONE}/{n}'}}\n"
        elif n % 5 == 0:
            ref, entry = (
                f"~svc{n}.bot",
                f"  - handle: ~svc{n}.bot  # a bot\n    tags:\n      team: t{n}\n",
            )
        else:
            ref, entry = f"~user{n}", f"  - ~user{n}\n"
        name = ref[1:]
        for owner in (f"_alter.{name}.{ZONE}.", f"{name}.{ZONE}."):
            found[_nsec3_label(owner)] = (ref, entry)
    assert chain[0] in found, "the first NSEC3 is not a handle's name"
    assert chain[-1] in found, "the last NSEC3 is not a handle's name"
    return found[chain[0]], found[chain[-1]]


def _patched(root: Path, tmp: Path, now: int, expected: set[str]) -> None:
    report = _same_as_full(root, tmp, now)
    (zone,) = report.zones
    assert zone.patched is not None, "the run went in full"
    assert set(zone.patched) == expected
    assert zone.proof is not None
    assert zone.proof.ok


@pytest.mark.parametrize("denial", DENIALS)
def test_one_handle_added_is_patched_in(denial: str, tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", dnssec=f"{{enabled: true, denial: {denial}}}")
    _edit(root, "  - ~user1\n", "  - ~user1\n  - ~newcomer\n")
    _key(root, "~newcomer")
    _patched(root, tmp_path, NOW + 60, {"~newcomer"})
    # The memo the patch left places every handle: a later edit patches in exactly too.
    _edit(root, "  - ~user2\n", "  - {handle: ~user2, resolver: 'https://patch.example/2'}\n")
    _patched(root, tmp_path, NOW + 120, {"~user2"})


@pytest.mark.parametrize("denial", DENIALS)
def test_several_handles_added_first_and_last_are_patched_in(denial: str, tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", 120, dnssec=f"{{enabled: true, denial: {denial}}}")
    _edit(root, "handles:\n", "handles:\n  - ~aardvark\n")
    _edit(root, "  - ~user3\n", "  - ~user3\n  - ~zebra.bot\n  - ~mid\n")
    _edit(root, "  - ~user118\n", "  - ~user118\n  - ~zz\n  - ~yy.bot\n")
    _key(root, "~aardvark", "~zebra.bot", "~mid", "~zz", "~yy.bot")
    _patched(root, tmp_path, NOW + 60, {"~aardvark", "~zebra.bot", "~mid", "~zz", "~yy.bot"})
    _edit(root, "  - ~user118\n", "  - {handle: ~user118, lifetime: 20d}\n")
    _patched(root, tmp_path, NOW + 120, {"~user118"})


@pytest.mark.parametrize("denial", DENIALS)
@pytest.mark.parametrize("ref", ["~user4", "~svc5.bot", "~patch.example", "~user59"], ids=str.strip)
def test_one_handle_removed_is_patched_out(denial: str, ref: str, tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", dnssec=f"{{enabled: true, denial: {denial}}}")
    entries = {
        "~user4": "  - ~user4\n",
        "~svc5.bot": "  - handle: ~svc5.bot  # a bot\n    tags:\n      team: t5\n",
        "~patch.example": "  - handle: ~patch.example\n    resolver: https://patch.example/apex\n",
        "~user59": "  - ~user59\n",
    }
    _edit(root, entries[ref], "")
    _patched(root, tmp_path, NOW + 60, {ref})
    _edit(root, "  - ~user2\n", "  - {handle: ~user2, resolver: 'https://patch.example/2'}\n")
    _patched(root, tmp_path, NOW + 120, {"~user2"})


@pytest.mark.parametrize("end", [0, 1], ids=["first", "last"])
def test_the_first_or_last_name_of_the_nsec3_chain_removed(end: int, tmp_path: Path) -> None:
    """The chain wraps around: the last NSEC3 names the first as next."""
    root = _workspace(tmp_path / "ws", dnssec="{enabled: true, denial: nsec3}")
    ref, entry = _chain_ends(root)[end]
    _edit(root, entry, "")
    _patched(root, tmp_path, NOW + 60, {ref})
    # ... and back again: its name hashes first (or last) once more.
    _edit(root, "  - ~user2\n", f"  - ~user2\n{entry}")
    _patched(root, tmp_path, NOW + 120, {ref})


@pytest.mark.parametrize("denial", [*DENIALS, "unsigned"])
def test_a_renamed_handle_is_patched(denial: str, tmp_path: Path) -> None:
    dnssec = "{enabled: false}" if denial == "unsigned" else f"{{enabled: true, denial: {denial}}}"
    root = _workspace(tmp_path / "ws", dnssec=dnssec)
    _edit(root, "  - ~user1\n", "  - ~renamed1\n")
    _key(root, "~renamed1")
    _patched(root, tmp_path, NOW + 60, {"~user1", "~renamed1"})


@pytest.mark.parametrize("denial", DENIALS)
def test_added_removed_renamed_and_edited_at_once(denial: str, tmp_path: Path) -> None:
    # 120 handles: up to 6 changes (5%) are patched, more run in full.
    root = _workspace(tmp_path / "ws", 120, dnssec=f"{{enabled: true, denial: {denial}}}")
    _edit(root, "  - ~user1\n", "  - ~user1\n  - ~newcomer\n")
    _edit(root, "  - ~user4\n", "")
    _edit(root, "  - ~user8\n", "  - ~eight\n")
    _edit(root, "  - ~user9\n", "  - {handle: ~user9, resolver: 'https://patch.example/9'}\n")
    _key(root, "~newcomer", "~eight")
    _patched(root, tmp_path, NOW + 60, {"~newcomer", "~user4", "~user8", "~eight", "~user9"})
    again = _sign(root, NOW + 90)
    assert again.zones[0].unchanged


Change = Callable[[Path], None]


def test_a_removed_handle_is_proven_denied(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", dnssec="{enabled: true, denial: nsec3}")
    _edit(root, "  - ~user4\n", "")
    report = _sign(root, NOW + 60)
    (zone,) = report.zones
    assert zone.proof is not None
    assert [(r.handle, r.ok, r.dnssec) for r in zone.proof.removed] == [("~user4", True, "secure")]
    assert [change.to_text() for change in zone.changes] == ["~user4: removed"]
