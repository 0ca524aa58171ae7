"""The witness's state files (publish/witness.py): one safe, distinct file per origin."""

from __future__ import annotations

from pathlib import Path

import pytest

from alter_publish.format.note import Note, Signer
from alter_publish.format.tlog import Checkpoint
from alter_publish.publish.witness import STATE_NAME_OCTETS_MAX, WitnessState, state_file_name

LONG = "log.example/" + "a" * 300
ORIGINS = [".", "..", "%2E", "a/..", "example.com/alter-log", LONG, LONG + "b", "é" * 120]


def _note(origin: str, size: int) -> str:
    checkpoint = Checkpoint(origin, size, bytes(32))
    return Note(checkpoint.to_text()).signed_by(Signer("log", bytes(32))).to_text()


def test_every_origin_gets_its_own_file_even_dots_and_long_names(tmp_path: Path) -> None:
    """``.``, ``..`` and names past NAME_MAX were the state directory itself, its parent,
    or a file the system refuses to create."""
    state = WitnessState(tmp_path / "state")
    state.directory.mkdir()
    for size, origin in enumerate(ORIGINS, start=1):
        state.store(origin, _note(origin, size))
    for size, origin in enumerate(ORIGINS, start=1):
        latest = state.latest(origin)
        assert latest is not None
        assert (latest.origin, latest.size) == (origin, size)
    names = sorted(path.name for path in state.directory.iterdir())
    assert names == sorted({state_file_name(origin) for origin in ORIGINS})
    assert all(len(name.encode()) <= STATE_NAME_OCTETS_MAX for name in names)
    assert not list(tmp_path.glob("*.tmp"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]


@pytest.mark.parametrize(
    ("origin", "name"),
    [
        # The documented names stay: state written before is read again.
        ("example.com/alter-log", "example.com%2Falter-log"),
        ("%2E", "%252E"),
        (".", "%2E"),
        ("..", "%2E%2E"),
    ],
)
def test_documented_names_are_kept(origin: str, name: str) -> None:
    assert state_file_name(origin) == name


def test_a_long_origin_is_hashed() -> None:
    name = state_file_name(LONG)
    assert name.startswith("%2Esha256-")
    assert len(name) == len("%2Esha256-") + 64
