"""Key directories under a careless umask, StrictModes and leftover temp files (issue 20).

Every run is the real CLI in a subprocess on real files: ``sign --create-keys`` under
``umask 000``, key directories made writable by others or given to another user, and
temporary files an interrupted write left in ``keys/``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from alter_publish.errors import EXIT_KEY, EXIT_OK
from tests.cli.conftest import SOURCE_DEFINITION
from tests.cli.workspace import (
    NOW,
    ZONE,
    Result,
    Workspace,
    assert_one_error_line,
    simulated,
)

#: A user id nobody on the test machine has.
STRANGER_UID = 12345
#: Key directories, relative to the workspace: keys/, the zone's, a handle's, the DNSSEC keys'.
KEY_DIRS = ("keys", f"keys/{ZONE}", f"keys/{ZONE}/blake", f"keys/{ZONE}/_dnssec")
LATER = NOW + 3600
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    """Run the block (and the CLI processes it starts, which inherit it) under ``mask``."""
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _ok(result: Result) -> Result:
    assert result.returncode == EXIT_OK, result.describe()
    return result


@pytest.fixture
def fresh(tmp_path: Path) -> Workspace:
    """A workspace with the example.com definition and no keys yet."""
    workspace = Workspace(tmp_path / "fresh")
    (workspace.root / "zones").mkdir(parents=True)
    shutil.copyfile(SOURCE_DEFINITION, workspace.definition)
    return workspace


def _tree(top: Path) -> Iterator[tuple[Path, int]]:
    """(path, mode bits) of ``top`` and everything under it."""
    yield top, stat.S_IMODE(top.stat().st_mode)
    for path in sorted(top.rglob("*")):
        yield path, stat.S_IMODE(path.lstat().st_mode)


def test_sign_create_keys_under_umask_000_makes_private_key_dirs(fresh: Workspace) -> None:
    with umask(0):
        _ok(fresh.run("sign", "--create-keys", *simulated()))
    key_dirs = [(path, mode) for path, mode in _tree(fresh.root / "keys") if path.is_dir()]
    assert len(key_dirs) > 3, key_dirs  # keys/, the zone's, _dnssec/ and the handles'
    loose = [f"{path} {mode:04o}" for path, mode in key_dirs if mode != 0o700]
    assert not loose, f"key directories not 0700 under umask 000: {loose}"
    writable = [
        f"{path} {mode:04o}"
        for top in ("keys", "build")
        for path, mode in _tree(fresh.root / top)
        if not path.is_symlink() and mode & 0o022
    ]
    assert not writable, f"writable by group or others under umask 000: {writable}"
    with umask(0):
        _ok(fresh.run("sign", *simulated()))  # and the store is accepted as made


def _refused(result: Result, workspace: Workspace, relative: str, fix: str) -> None:
    line = assert_one_error_line(result, EXIT_KEY)
    assert relative in line, result.describe()
    assert fix in line, result.describe()
    assert line.rstrip().endswith(relative), result.describe()  # "... fix with: chmod 700 P"


@pytest.mark.parametrize("relative", KEY_DIRS)
@pytest.mark.parametrize("after_a_run", [False, True], ids=["full-run", "nothing-changed"])
def test_sign_refuses_a_key_directory_others_can_write(
    workspace: Workspace, relative: str, after_a_run: bool
) -> None:
    """Refused whether the run reads every key or finds nothing changed since the last;
    but a run that reads no handle key looks at no handle's directory (issue 16: no
    ``stat`` of every key file), so one handle's is refused by the next run that reads
    that handle's key: here ``--full``."""
    if after_a_run:
        _ok(workspace.run("sign", *simulated()))
    (workspace.root / relative).chmod(0o777)
    result = workspace.run("sign", *simulated())
    if after_a_run and relative == f"keys/{ZONE}/blake":
        assert result.returncode == 0, result.describe()
        assert "nothing changed" in result.stdout, result.describe()
        result = workspace.run("sign", "--full", *simulated())
    _refused(result, workspace, relative, "chmod 700")
    (workspace.root / relative).chmod(0o700)
    _ok(workspace.run("sign", *simulated()))


@pytest.mark.parametrize("mode", [0o720, 0o702], ids=["group", "other"])
def test_rotate_refuses_a_handle_key_directory_others_can_write(
    workspace: Workspace, mode: int
) -> None:
    key_dir = workspace.key_dir("blake")
    key_dir.chmod(mode)
    before = sorted(path.name for path in key_dir.iterdir())
    result = workspace.run("rotate", "~blake", "--zone", ZONE, *simulated(LATER))
    _refused(result, workspace, f"keys/{ZONE}/blake", "chmod 700")
    assert sorted(path.name for path in key_dir.iterdir()) == before  # no epoch 2


def test_key_directories_others_can_only_read_are_accepted(workspace: Workspace) -> None:
    """As OpenSSH: readable (0755) key directories pass; their private files are 0600."""
    for relative in KEY_DIRS:
        (workspace.root / relative).chmod(0o755)
    _ok(workspace.run("sign", *simulated()))
    _ok(workspace.run("rotate", "~blake", "--zone", ZONE, *simulated(LATER)))


def test_sign_sweeps_temp_files_left_in_the_key_store(workspace: Workspace) -> None:
    """What interrupted writes left (maybe private key bytes) goes; others' files stay."""
    _ok(workspace.run("sign", *simulated()))  # so the next run finds nothing else changed
    keys = workspace.root / "keys"
    handle_dir, dnssec_dir = workspace.key_dir("blake"), keys / ZONE / "_dnssec"
    ours = [
        handle_dir / ".1.pem.abcd1234.tmp",
        handle_dir / ".1.secret.k3q9xw_2.tmp",
        dnssec_dir / ".keys.json.abcd1234.tmp",
        dnssec_dir / ".ksk-01234.pem.abcd1234.tmp",
        keys / "..gitignore.abcd1234.tmp",  # mkstemp(prefix=".<name>.") of .gitignore
    ]
    theirs = [
        handle_dir / ".notes.txt.abcd1234.tmp",
        handle_dir / "notes.txt",
        dnssec_dir / ".backup.json.abcd1234.tmp",
        keys / ".README.md.abcd1234.tmp",
        keys / ".gitignore.abcd1234.tmp",  # would replace "gitignore", not ours
    ]
    for path in (*ours, *theirs):
        path.write_bytes(b"half-written private key bytes\n")  # as a killed write leaves
        path.chmod(0o600)
    _ok(workspace.run("sign", *simulated()))
    assert [path for path in ours if path.exists()] == []
    assert [path for path in theirs if not path.exists()] == []


@as_root
@pytest.mark.parametrize("relative", [*KEY_DIRS, f"keys/{ZONE}/blake/1.pem"])
def test_sign_refuses_key_files_and_directories_of_another_user(
    workspace: Workspace, relative: str
) -> None:
    os.chown(workspace.root / relative, STRANGER_UID, -1)
    result = workspace.run("sign", *simulated())
    _refused(result, workspace, relative, "chown root")
    assert f"uid {STRANGER_UID}" in result.stderr, result.describe()
