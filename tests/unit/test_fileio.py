"""Atomic writes: directories made with explicit modes whatever the umask, temporary
files private from the first byte, and leftovers of interrupted writes swept."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from alter_publish.fileio import (
    PRIVATE_MODE,
    atomic_write_bytes,
    make_dirs,
    sweep_temp_files,
)


@pytest.fixture
def careless_umask() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("careless_umask")
def test_private_file_directories_are_0700_under_umask_000(tmp_path: Path) -> None:
    key = tmp_path / "keys" / "example.com" / "~blake" / "1.pem"
    atomic_write_bytes(key, b"secret", mode=PRIVATE_MODE)
    for directory in (key.parent, key.parent.parent, key.parent.parent.parent):
        assert _mode(directory) == 0o700, directory
    assert _mode(key) == 0o600


@pytest.mark.usefixtures("careless_umask")
def test_public_file_directories_are_not_writable_by_others_under_umask_000(
    tmp_path: Path,
) -> None:
    out = tmp_path / "build" / "example.com.zone"
    atomic_write_bytes(out, b"zone")
    assert _mode(out.parent) == 0o755
    assert _mode(out) == 0o644


def test_make_dirs_leaves_existing_directories_alone(tmp_path: Path) -> None:
    existing = tmp_path / "shared"
    existing.mkdir()
    existing.chmod(0o750)
    make_dirs(existing / "a" / "b", 0o700)
    assert _mode(existing) == 0o750
    assert _mode(existing / "a") == 0o700
    assert _mode(existing / "a" / "b") == 0o700


def test_sweep_removes_only_owned_leftovers(tmp_path: Path) -> None:
    owned = tmp_path / ".example.com.zone.abc_1234.tmp"
    foreign = tmp_path / ".notes.txt.abcd1234.tmp"
    not_a_temp = tmp_path / ".example.com.zone.tmp"
    user_file = tmp_path / "example.com.zone"
    for path in (owned, foreign, not_a_temp, user_file):
        path.write_bytes(b"x")
    removed = sweep_temp_files(tmp_path, lambda name: name.startswith("example.com."))
    assert removed == [owned]
    assert not owned.exists()
    assert all(path.exists() for path in (foreign, not_a_temp, user_file))


def test_sweep_of_a_missing_directory_is_nothing(tmp_path: Path) -> None:
    assert sweep_temp_files(tmp_path / "absent", lambda _name: True) == []
