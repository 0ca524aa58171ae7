"""``sign`` killed with SIGKILL at every moment of its write stage that the workspace
shows (each temporary file, generation being written and link as it appears): after each
kill ``build/`` is one run's complete output set and ``verify`` passes; after the next
clean run nothing an interrupted write left remains.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from alter_publish.errors import EXIT_OUTPUT, EXIT_VERIFICATION
from tests.integration.killing import (
    NOW,
    SIMULATED,
    ZONE,
    definition,
    leftovers,
    make_workspace,
    one_set,
    retired,
    run,
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
    events: set[str] = set()
    for moment in range(1, moments + 1):
        kill = sign_killed_at(root, moment, 32 + moment)
        kills += kill.killed
        events.update(kill.events)
        problem = one_set(root)
        assert problem is None, f"killed at {kill.events[-1:]}: {problem}"
        checked = verify(root)
        assert checked.returncode == 0, f"killed at {kill.events[-1:]}: {checked.stderr}"
    assert kills >= moments // 2, f"only {kills} of {moments} runs were killed mid-write"
    assert any(event.endswith(".retired") for event in events), events  # switches retired
    before = retired(root)
    finished = sign_killed_at(root, 0, 30)
    assert not finished.killed
    assert verify(root).returncode == 0
    assert leftovers(root) == []
    # What the runs before retired (a killed run's switch may leave two to retire, or a
    # removal begun) the next run removes: two runs on, no generations pile up.
    assert not sign_killed_at(root, 0, 31).killed
    assert len(retired(root)) <= 1, retired(root)
    assert not set(before) & set(retired(root)), (before, retired(root))


def test_a_kill_anywhere_in_a_patched_run_leaves_one_complete_set(tmp_path: Path) -> None:
    """Handles taken out and put back (each run a patch: the denial chain relinked), killed
    at every write moment: one complete set each time, and the run after is a full run's
    bytes."""
    root = tmp_path / "ws"
    make_workspace(root, HANDLES)
    full_text = definition(HANDLES, 30)
    texts = (full_text.replace("  - ~user5\n", ""), full_text)
    watched = sign_killed_at(root, 0, 30, texts[0])
    moments = len(watched.events)
    assert moments >= 4, watched.events
    for moment in range(1, moments + 1):
        kill = sign_killed_at(root, moment, 30, texts[moment % 2])
        problem = one_set(root)
        assert problem is None, f"killed at {kill.events[-1:]}: {problem}"
        # The set is the killed run's or the one before: it verifies against its definition.
        checked = verify(root)
        if checked.returncode != 0:
            (root / "zones" / f"{ZONE}.yaml").write_text(texts[(moment + 1) % 2])
            checked = verify(root)
        assert checked.returncode == 0, f"killed at {kill.events[-1:]}: {checked.stderr}"
    before = retired(root)  # a killed run's switch may leave two to retire
    assert not sign_killed_at(root, 0, 30, texts[0]).killed
    (root / "zones" / f"{ZONE}.yaml").write_text(texts[1])
    twin = tmp_path / "twin"
    shutil.copytree(root, twin, symlinks=True)
    patched = run(root, "sign", "--json", *SIMULATED)
    assert patched.returncode == 0, patched.stderr
    assert json.loads(patched.stdout)["zones"][0]["patched"] == ["~user5"]
    # Two runs on, what the killed runs retired is gone, and no generations pile up.
    assert len(retired(root)) <= 1, retired(root)
    assert not set(before) & set(retired(root)), (before, retired(root))
    full = run(twin, "sign", "--full", *SIMULATED)
    assert full.returncode == 0, full.stderr
    for name in (f"build/{ZONE}.zone", f"build/{ZONE}.envelopes.json", f"zones/{ZONE}.log"):
        assert (root / name).read_bytes() == (twin / name).read_bytes(), name
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
    ours[-1].mkdir(parents=True)
    link = build / ".kill.example.zone.4242.link"  # a switch of links cut short
    link.symlink_to(".kill.example.outputs/current/kill.example.zone")
    ours.append(link)
    finished = sign_killed_at(root, 0, 31)
    assert not finished.killed
    assert [path for path in ours if path.is_symlink() or path.exists()] == []
    assert all(path.exists() for path in theirs)


def _mount_tmpfs(where: Path, size: str) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    return mounted.returncode == 0


def test_a_full_disk_leaves_the_previous_set_and_says_so(tmp_path: Path) -> None:
    """Outputs on a file system with no room for the next set: one error line, the
    previous set intact (verify passes), nothing left behind once there is room."""
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "2m"):
        pytest.skip("needs root and tmpfs to make a small file system")
    try:
        root = tmp_path / "ws"
        out = ("--out", str(disk / "build"))
        (root / "zones").mkdir(parents=True)
        (root / "zones" / f"{ZONE}.yaml").write_text(definition(40, 30))
        first = run(root, "sign", "--create-keys", *out, *SIMULATED)
        assert first.returncode == 0, first.stderr
        free = os.statvfs(disk)
        filler = disk / "filler"
        filler.write_bytes(b"\0" * (free.f_bavail * free.f_frsize - 8192))
        (root / "zones" / f"{ZONE}.yaml").write_text(definition(40, 31))
        full = run(root, "sign", *out, *SIMULATED)
        assert full.returncode == EXIT_OUTPUT, full.stderr
        lines = [line for line in full.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, full.stderr
        assert "No space left on device" in lines[0], lines[0]
        checked = run(root, "verify", *out, f"zones/{ZONE}.yaml", "--now", str(NOW))
        assert checked.returncode == 0, checked.stderr
        filler.unlink()
        again = run(root, "sign", *out, *SIMULATED)
        assert again.returncode == 0, again.stderr
        assert leftovers(disk) == []
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_verify_refuses_the_previous_set_once_a_run_switched(tmp_path: Path) -> None:
    """The state accepts the set it replaces only until the switch: an old build/ put
    back after a clean run is not what sign wrote."""
    root = tmp_path / "ws"
    make_workspace(root, 3)
    shutil.copytree(root / "build", tmp_path / "old-build", symlinks=True)
    assert not sign_killed_at(root, 0, 31).killed
    shutil.rmtree(root / "build")
    shutil.copytree(tmp_path / "old-build", root / "build", symlinks=True)
    checked = verify(root)
    assert checked.returncode == EXIT_VERIFICATION, checked.stderr
    assert "not the zone file sign wrote" in checked.stderr


def test_a_second_sign_into_the_same_output_waits_its_turn(tmp_path: Path) -> None:
    """One writer at a time: a sign that finds another holding the output directory
    stops with one line and writes nothing."""
    root = tmp_path / "ws"
    make_workspace(root, 3)
    (root / "zones" / f"{ZONE}.yaml").write_text(definition(3, 31))
    fd = os.open(root / "build", os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a running sign holds it
        blocked = run(root, "sign", *SIMULATED)
    finally:
        os.close(fd)
    lines = [line for line in blocked.stderr.splitlines() if line.strip()]
    assert blocked.returncode == EXIT_OUTPUT, blocked.stderr
    assert len(lines) == 1, blocked.stderr
    assert "another alter-publish process is signing into it" in lines[0]
    assert run(root, "sign", *SIMULATED).returncode == 0
