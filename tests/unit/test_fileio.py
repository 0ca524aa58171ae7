"""Atomic writes: directories made with explicit modes whatever the umask, temporary
files private from the first byte, and leftovers of interrupted writes swept."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from alter_publish.errors import RenderError
from alter_publish.fileio import (
    PRIVATE_MODE,
    atomic_write_bytes,
    make_dirs,
    put_in_place,
    sweep_temp_files,
    write_compared,
    write_temporary,
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


def test_a_temporary_file_put_in_place_with_what_came_last(tmp_path: Path) -> None:
    # A record written before its digest is known: the digest's place held, then
    # written over, synced and renamed in.
    path = tmp_path / "record.json"
    path.write_bytes(b"the old record")
    temporary = write_temporary(path, (b'{"digest":"', b"0" * 8, b'"}'), error=RenderError)
    assert temporary.parent == tmp_path
    assert temporary.name.startswith(".record.json.")
    assert path.read_bytes() == b"the old record"  # nobody sees it before it is put in
    put_in_place(temporary, path, error=RenderError, at=11, patch=b"ab12cd34")
    assert path.read_bytes() == b'{"digest":"ab12cd34"}'
    assert not temporary.exists()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_temporary_file_is_synced_before_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A patch's copies are written in threads while it makes its record: synced there,
    # their write-back is done before the commit syncs the log and state (ext4's
    # ordered data makes those fsyncs wait for every file in the journal transaction).
    path = tmp_path / "big.zone"
    synced: list[bytes] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.pread(fd, 100, 0))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    temporary = write_temporary(path, (b"zone ", b"text"), error=RenderError)
    assert synced == [b"zone text"]
    assert temporary.read_bytes() == b"zone text"


def test_a_temporary_file_that_cannot_be_put_in_place_is_gone(tmp_path: Path) -> None:
    path = tmp_path / "record.json"
    temporary = write_temporary(path, (b"x",), error=RenderError)
    (tmp_path / "record.json").mkdir()  # a directory where the file goes
    (tmp_path / "record.json" / "in the way").touch()
    with pytest.raises(RenderError, match="cannot write"):
        put_in_place(temporary, path, error=RenderError)
    assert not temporary.exists()


_THREAD_IO = Path("/proc/thread-self/io")


def _write_calls() -> int:
    """This thread's write system calls so far (Linux's ``/proc/thread-self/io``)."""
    for line in _THREAD_IO.read_text().splitlines():
        if line.startswith("syscw:"):
            return int(line.split()[1])
    pytest.skip("no syscw in /proc/thread-self/io")


def _temporary(path: Path, pieces: list[bytes]) -> Path:
    return write_temporary(path, pieces, error=RenderError)


def _compared(path: Path, pieces: list[bytes]) -> Path:
    write_compared(path, pieces, path.with_name("none"), compare=False)
    return path


@pytest.mark.skipif(not _THREAD_IO.exists(), reason="Linux's /proc/thread-self/io")
@pytest.mark.parametrize("writer", [_temporary, _compared], ids=["temporary", "compared"])
def test_a_file_written_in_many_short_pieces_takes_few_write_calls(
    tmp_path: Path, writer: Callable[[Path, list[bytes]], Path]
) -> None:
    # A renewal day patches a zone in tens of thousands of short pieces: each system
    # call lets the other threads take the interpreter, so they are buffered together.
    pieces = [bytes([65 + n % 26]) * 1000 for n in range(4_000)]  # 4 MB
    before = _write_calls()
    written = writer(tmp_path / "zone", pieces)
    assert _write_calls() - before < 20  # 8 KB at a time: 500 and more
    assert written.read_bytes() == b"".join(pieces)
