"""``sign`` killed with SIGKILL at every moment of its write stage that the workspace
shows (each temporary file, generation being written and link as it appears): after each
kill ``build/`` is one run's complete output set and ``verify`` passes; after the next
clean run nothing an interrupted write left remains.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.killing import (
    leftovers,
    make_workspace,
    one_set,
    sign_killed_at,
    verify,
)

HANDLES = 300

pytestmark = pytest.mark.slow


def test_a_kill_anywhere_in_the_write_stage_leaves_one_complete_set(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    make_workspace(root, HANDLES)
    watched = sign_killed_at(root, 0, 31)  # a whole run, watched: its write events
    assert not watched.killed
    moments = len(watched.events)
    assert moments >= 4, watched.events  # state, a generation, its files, the switch
    kills = 0
    for moment in range(1, moments + 1):
        kill = sign_killed_at(root, moment, 32 + moment)
        kills += kill.killed
        problem = one_set(root)
        assert problem is None, f"killed at {kill.events[-1:]}: {problem}"
        checked = verify(root)
        assert checked.returncode == 0, f"killed at {kill.events[-1:]}: {checked.stderr}"
    assert kills >= moments // 2, f"only {kills} of {moments} runs were killed mid-write"
    finished = sign_killed_at(root, 0, 30)
    assert not finished.killed
    assert verify(root).returncode == 0
    assert leftovers(root) == []


def test_leftovers_of_earlier_runs_are_swept(tmp_path: Path) -> None:
    """Temporary files of the names sign owns go; anyone else's stay."""
    root = tmp_path / "ws"
    make_workspace(root, 3)
    build, zones = root / "build", root / "zones"
    ours = [
        build / ".kill.example.zone.abcd1234.tmp",
        build / ".kill.example.envelopes.json.abcd1234.tmp",
        build / ".kill.example.yaml.memo.json.abcd1234.tmp",
        zones / ".kill.example.state.json.abcd1234.tmp",
        zones / ".kill.example.log.abcd1234.tmp",
        build / ".kill.example.outputs" / "g9.staging",
    ]
    theirs = [build / ".notes.txt.abcd1234.tmp", zones / ".other.yaml.abcd1234.tmp"]
    for path in ours[:-1] + theirs:
        path.write_bytes(b"leftover")
    ours[-1].mkdir()
    finished = sign_killed_at(root, 0, 31)
    assert not finished.killed
    assert [path for path in ours if path.exists()] == []
    assert all(path.exists() for path in theirs)
