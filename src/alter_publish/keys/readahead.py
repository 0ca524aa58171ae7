"""Reading ahead of a bulk key load whose files are not in the page cache.

A full sign reads every handle's key directory (a listing and two small files); a
daily renewal reads the directories of the handles due. Those files were last read a
lifetime ago, so on a machine that reclaims cold pages (any busy one, and every VM
whose host pages out what a guest has not touched) they come from the disk: one
synchronous read after another, about 0.3 ms a directory here against 20 us from the
cache, 34 s instead of 2 s for 100,000 handles.

:class:`ReadAhead` watches the loader: over the first few loads of each block of
handles it counts what the kernel had to read from storage for it, and when that was
more than a few pages it has a few threads open the rest of the block's current key
files first, with ``POSIX_FADV_WILLNEED``, so that the disk works on many reads at
once. The loader then reads them from the cache, with all its checks, exactly as
before: the threads only ask the kernel to read; they never read a key's bytes
themselves and never decide anything. They pass over a directory the loader would
refuse and anything that is not a regular file. A warm store is never read ahead (its
cost is two readings of the thread's I/O counters a block), and read-ahead is only
ever a help: when its threads cannot start, the loader goes on without them.
"""

from __future__ import annotations

import concurrent.futures
import os
import stat
from collections.abc import Callable, Sequence
from types import TracebackType

from alter_publish.keys.permissions import dir_problem
from alter_publish.keys.store import current_key_files

#: Handles per block, and how many loads at each block's start are the probe.
BLOCK_HANDLES = 256
PROBE_LOADS = 16
#: A probe that had this many bytes read from storage found a quarter of its handles'
#: files (a page each, at least) not cached: the rest of the block is read ahead.
COLD_PROBE_BYTES = PROBE_LOADS // 4 * 4096
#: Threads reading ahead: enough outstanding reads to keep a disk's queue busy.
READ_AHEAD_THREADS = 8

_AS_FILE = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK


def thread_read_bytes() -> int | None:
    """Bytes this thread has had read from storage; None where that is not counted.

    Linux's task I/O accounting: a read served from the page cache adds nothing.
    """
    try:
        with open("/proc/thread-self/io", "rb") as counters:  # noqa: PTH123 (hot, tiny)
            for line in counters:
                if line.startswith(b"read_bytes:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def warm_handle_dir(zone_fd: int, directory: str) -> None:
    """Have the kernel read a handle's current key files into its cache.

    ``directory`` is the handle's directory name under the open ``zone_fd``. A
    directory the loader would refuse (others may write it, another user owns it) is
    passed over, and so is anything in it that is not a regular file. Every failure is
    ignored: the loader reads again and names any problem itself.
    """
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=zone_fd)
    except OSError:
        return
    try:
        if dir_problem(directory, os.fstat(fd)) is not None:
            return
        for name in current_key_files(os.listdir(fd)):  # noqa: PTH208 (an open directory)
            _advise(fd, name)
    except OSError:
        return
    finally:
        os.close(fd)


def _advise(dir_fd: int, name: str) -> None:
    """Ask for ``name``'s bytes, if it is a regular file (looked at before it is opened,
    and again once open: nothing else is ever opened)."""
    try:
        if not stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            return
        fd = os.open(name, _AS_FILE, dir_fd=dir_fd)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
    except OSError:
        return
    finally:
        os.close(fd)


class ReadAhead:
    """Key directories read ahead of a loader that takes them in order.

    ``directories`` are names under the open ``zone_fd`` (None: there is no zone
    directory, nothing is read). Call :meth:`before` with each index before loading
    it; use as a context manager (the threads end with it). The probe counts what the
    loader had read from storage, not its time: on a busy machine a cached load is
    slow too, and threads would only slow it more.
    """

    def __init__(
        self,
        zone_fd: int | None,
        directories: Sequence[str],
        *,
        read_bytes: Callable[[], int | None] = thread_read_bytes,
    ) -> None:
        self._zone_fd = zone_fd
        self._directories = directories
        self._read_bytes = read_bytes
        #: How many blocks were read ahead (the tests' and benchmarks' view).
        self.blocks_read_ahead = 0
        self._started: int | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._own_fd: int | None = None  # the threads' own: the caller closes zone_fd
        self._off = zone_fd is None

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._pool is not None:
            # Interrupted here, the threads may still run: their descriptor stays open.
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._own_fd is not None:
            os.close(self._own_fd)
            self._own_fd = None

    def before(self, index: int) -> None:
        """Note that ``index`` is loaded next; read its block ahead once due.

        Due: the block's probe (its first loads) had files read from storage.
        """
        if self._off:
            return
        offset = index % BLOCK_HANDLES
        if offset == 0:
            self._started = self._read_bytes()
        elif offset == PROBE_LOADS and self._started is not None:
            started, self._started = self._started, None
            now = self._read_bytes()
            if now is not None and now - started >= COLD_PROBE_BYTES:
                end = min(index - offset + BLOCK_HANDLES, len(self._directories))
                try:
                    self._read(index, end)
                except (RuntimeError, OSError):  # no thread or descriptor to spare
                    self._off = True

    def _read(self, start: int, end: int) -> None:
        """Warm ``directories[start:end]`` with the threads, and wait for them.

        Raises:
            RuntimeError: a thread cannot be started.
            OSError: the zone directory cannot be duplicated for the threads.
        """
        if self._own_fd is None:
            assert self._zone_fd is not None  # noqa: S101 (narrowing: _off otherwise)
            self._own_fd = os.dup(self._zone_fd)
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(READ_AHEAD_THREADS)
        step = -(-(end - start) // READ_AHEAD_THREADS)
        spans = [(at, min(at + step, end)) for at in range(start, end, step)]
        futures = [self._pool.submit(self._warm, self._own_fd, span) for span in spans]
        for future in futures:
            future.result()
        self.blocks_read_ahead += 1

    def _warm(self, zone_fd: int, span: tuple[int, int]) -> None:
        for directory in self._directories[span[0] : span[1]]:
            warm_handle_dir(zone_fd, directory)
