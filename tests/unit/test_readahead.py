"""Reading key directories ahead of a bulk load (keys/readahead.py): when it reads ahead,
what it asks the kernel for, that it never changes what the loader finds, and that
nothing it meets stops it."""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from alter_publish.errors import KeyStoreError
from alter_publish.format.handles import parse_handle
from alter_publish.keys.readahead import (
    BLOCK_HANDLES,
    COLD_PROBE_BYTES,
    PROBE_LOADS,
    ReadAhead,
    thread_read_bytes,
    warm_handle_dir,
)
from alter_publish.keys.store import KeyStore

ZONE = "example.com"


class Storage:
    """A thread's storage read counter: each reading adds ``step`` bytes (None: not
    kept on this system)."""

    def __init__(self, step: int | None) -> None:
        self.step, self.total = step, 0

    def __call__(self) -> int | None:
        if self.step is None:
            return None
        self.total += self.step
        return self.total


def _walk(ahead: ReadAhead, count: int) -> None:
    with ahead:
        for index in range(count):
            ahead.before(index)


@pytest.fixture
def zone_dir(tmp_path: Path) -> Iterator[int]:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    yield fd
    os.close(fd)


@pytest.fixture
def advised(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the read ahead asks the kernel for (the real call still made)."""
    seen: list[str] = []
    real = os.posix_fadvise

    def record(fd: int, offset: int, length: int, advice: int) -> None:
        seen.append(str(Path(f"/proc/self/fd/{fd}").readlink()))
        real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", record)
    return seen


def test_a_loader_whose_files_come_from_storage_has_each_block_read_ahead(zone_dir: int) -> None:
    count = 2 * BLOCK_HANDLES + PROBE_LOADS + 1  # two whole blocks and a third's probe
    ahead = ReadAhead(zone_dir, ["missing"] * count, read_bytes=Storage(COLD_PROBE_BYTES))
    _walk(ahead, count)
    assert ahead.blocks_read_ahead == 3


@pytest.mark.parametrize("step", [0, COLD_PROBE_BYTES - 1, None])
def test_a_cached_loader_is_never_read_ahead(zone_dir: int, step: int | None) -> None:
    # Nothing read from storage, a byte short of the bound, or no counters: no threads.
    before = threading.active_count()
    ahead = ReadAhead(zone_dir, ["missing"] * (3 * BLOCK_HANDLES), read_bytes=Storage(step))
    with ahead:
        for index in range(3 * BLOCK_HANDLES):
            ahead.before(index)
            assert threading.active_count() == before
    assert ahead.blocks_read_ahead == 0


def test_no_zone_directory_reads_nothing() -> None:
    ahead = ReadAhead(None, ["a"] * BLOCK_HANDLES, read_bytes=Storage(1 << 20))
    _walk(ahead, BLOCK_HANDLES)
    assert ahead.blocks_read_ahead == 0


def test_the_threads_end_with_the_read_ahead(zone_dir: int) -> None:
    before = threading.active_count()
    ahead = ReadAhead(zone_dir, ["missing"] * BLOCK_HANDLES, read_bytes=Storage(1 << 20))
    _walk(ahead, BLOCK_HANDLES)
    assert ahead.blocks_read_ahead == 1
    assert threading.active_count() == before  # workers fork after: no thread left


def test_no_thread_to_spare_leaves_the_loader_alone(
    zone_dir: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    tries: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        tries.append(args)
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(concurrent.futures.ThreadPoolExecutor, "submit", refuse)
    ahead = ReadAhead(zone_dir, ["missing"] * (2 * BLOCK_HANDLES), read_bytes=Storage(1 << 20))
    _walk(ahead, 2 * BLOCK_HANDLES)  # no error
    assert ahead.blocks_read_ahead == 0
    assert len(tries) == 1  # and no second try


def test_reading_ahead_leaves_every_load_as_it_was(tmp_path: Path, advised: list[str]) -> None:
    """Real keys, one directory refused, two missing: the loads through a read ahead
    that always reads give what loads without one give, errors and all; the refused
    directory is not read ahead, the others' current key files are."""
    store = KeyStore(tmp_path)
    handles = [parse_handle(f"~user{number}") for number in range(40)]
    for handle in handles[:38]:
        store.generate(ZONE, handle, 1)
    store.generate(ZONE, handles[30], 2)
    refused = tmp_path / ZONE / "user20"  # past the probe: read ahead, if anything
    refused.chmod(0o777)

    def load_all(ahead: ReadAhead | None, zone_fd: int) -> list[object]:
        results: list[object] = []
        for index, handle in enumerate(handles):
            if ahead is not None:
                ahead.before(index)
            try:
                results.append(store.current_material(ZONE, handle, zone_fd=zone_fd))
            except KeyStoreError as exc:
                results.append(str(exc))
        return results

    zone_fd = store.open_zone_dir(ZONE)
    assert zone_fd is not None
    try:
        plain = load_all(None, zone_fd)
        names = [handle.name for handle in handles]
        with ReadAhead(zone_fd, names, read_bytes=Storage(1 << 20)) as ahead:
            read_ahead = load_all(ahead, zone_fd)
    finally:
        os.close(zone_fd)
    assert ahead.blocks_read_ahead == 1
    assert read_ahead == plain
    assert sum(isinstance(result, str) for result in plain) == 3  # user20, user38, user39
    expected = {
        str(tmp_path / ZONE / f"user{number}" / f"{epoch}{suffix}")
        for number in range(PROBE_LOADS, 38)
        if number != 20
        for epoch in [2 if number == 30 else 1]
        for suffix in (".pem", ".secret")
    }
    assert sorted(advised) == sorted(expected)  # epoch 1 of user30 is not read


def test_warming_opens_only_regular_key_files(
    tmp_path: Path, zone_dir: int, advised: list[str]
) -> None:
    """A FIFO named like a key does not block it and a symlink is not followed; only
    the current epoch's regular files are asked for."""
    handle = tmp_path / "odd"
    handle.mkdir(mode=0o700)
    os.mkfifo(handle / "3.pem")
    (handle / "3.secret").symlink_to("/dev/zero")
    (handle / "3.rc").write_text("x")
    (handle / "notes.txt").write_text("x")
    (handle / "2.pem").write_text("x")
    done = threading.Event()

    def warm() -> None:
        for name in ("odd", "missing"):
            warm_handle_dir(zone_dir, name)
        done.set()

    threading.Thread(target=warm, daemon=True).start()
    assert done.wait(10), "warming blocked"
    assert advised == [str(handle / "3.rc")]


def test_the_thread_counter_sees_a_read_from_storage(tmp_path: Path) -> None:
    """The real counter: a file dropped from the cache (fsync, then POSIX_FADV_DONTNEED)
    is read from storage again; read once more, from the cache."""
    if thread_read_bytes() is None:
        pytest.skip("no task I/O accounting here (not Linux, or not configured)")
    path = tmp_path / "cold"
    data = os.urandom(1 << 20)
    with path.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
        os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    before = thread_read_bytes()
    assert path.read_bytes() == data
    after = thread_read_bytes()
    assert before is not None
    assert after is not None
    if after == before:
        pytest.skip("this file system keeps files in memory (tmpfs): nothing to count")
    assert after - before >= 4096
    path.read_bytes()  # cached now
    assert thread_read_bytes() == after
