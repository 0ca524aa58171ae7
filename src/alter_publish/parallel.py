"""Worker processes for the work that parallelizes: Ed25519 signing and verifying.

:class:`Workers` forks ``jobs`` processes at the start of a stage, after the stage's
input is put in :func:`shared`: the workers inherit it (nothing is pickled but the
small tasks, such as index ranges, and their results). ``map_chunks`` maps a
function over tasks and yields results in task order whatever finished first;
with ``jobs`` 1 it runs inline. Ed25519 is deterministic, so a parallel run's
output is byte-identical to a single-process run's.

Fork before starting threads (the loopback server's) or with them idle, or busy only
in system calls with Ctrl-C and SIGTERM blocked (``sign`` removing retired output
generations), or those of a pool whose work goes on beside (:meth:`Workers.map_soon`:
a renewal day's RRSIGs while the envelopes' key loaders start), idle in their waits
then; the workers never touch what other threads hold. Progress is reported
per finished task through a callback, so long stages can drive a progress bar.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import multiprocessing.connection
import multiprocessing.pool
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Sized
from types import TracebackType
from typing import Any, Protocol, TypeVar

from alter_publish.interrupts import quiet_worker, starting_workers

T = TypeVar("T")
R = TypeVar("R")
#: A task's result: its length is the items of work it stands for.
S = TypeVar("S", bound=Sized)

#: Less work than this runs inline: a worker process costs ~50 ms (fork) to ~500 ms (fresh).
PARALLEL_MIN_ITEMS = 4000

#: Items per task sent to a worker: big enough that pickling and pipe overhead vanish
#: next to the work (a signature is ~40 µs), small enough for smooth progress.
CHUNK_ITEMS = 2000


def default_jobs() -> int:
    """The CPUs this process may run on (at least 1)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover (not Linux)
        return max(os.cpu_count() or 1, 1)


class Progress(Protocol):
    """Where long stages report progress: ``start`` a stage, ``advance`` it, ``done``."""

    def start(self, stage: str, total: int) -> None:
        """A stage of ``total`` items begins."""

    def advance(self, count: int) -> None:
        """``count`` more items of the current stage are done."""

    def done(self) -> None:
        """The current stage is finished."""


class NoProgress:
    """Reports nothing (library calls, ``--json``, output that is not a terminal)."""

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Nothing to close."""

    def start(self, stage: str, total: int) -> None:
        """Ignored."""

    def advance(self, count: int) -> None:
        """Ignored."""

    def done(self) -> None:
        """Ignored."""


def ranges(count: int, size: int = CHUNK_ITEMS) -> list[tuple[int, int]]:
    """``(start, stop)`` of consecutive slices of at most ``size`` over ``count`` items."""
    return [(start, min(start + size, count)) for start in range(0, count, size)]


#: How often :meth:`Workers.map_soon`'s wait looks whether a worker ended.
WATCH_SECONDS = 0.5

#: How long ending a pool may wait for a worker before it is killed.
TERMINATE_GRACE_SECONDS = 5.0

_SHARED: list[Any] = [None]


def _kill_after_grace(
    processes: tuple[multiprocessing.process.BaseProcess, ...], ended: threading.Event
) -> None:
    """Watchdog of :meth:`Workers.close`: SIGKILL the workers left after the grace time
    (the pool holds its queue locks by then: killing cannot leave one taken)."""
    if ended.wait(TERMINATE_GRACE_SECONDS):
        return
    with contextlib.suppress(OSError, ValueError):  # a sentinel closed: it ended meanwhile
        # A sentinel is ready once its process ended (reaped or not): those pids may be
        # another process's by now, and are left alone.
        done = set(multiprocessing.connection.wait([p.sentinel for p in processes], 0))
        for process in processes:
            if process.sentinel not in done and process.pid is not None:
                os.kill(process.pid, signal.SIGKILL)


def _share(value: Any) -> None:
    """Worker initializer of a fresh interpreter: publish ``value`` as :func:`shared`."""
    quiet_worker()
    _SHARED[0] = value


def _forked(nice: int) -> None:
    """Forked worker initializer: no garbage collection (see ``Workers``), ``nice``."""
    quiet_worker()
    gc.disable()
    if nice:
        os.nice(nice)


def shared() -> Any:
    """The ``shared`` value of the :class:`Workers` this process belongs to (or runs)."""
    return _SHARED[0]


class Workers:
    """A pool of ``jobs`` forked processes (none when ``jobs`` is 1) sharing ``shared``.

    Use as a context manager; the processes end with it.
    """

    def __init__(
        self,
        jobs: int,
        shared: Any = None,
        *,
        size: int | None = None,
        fresh: bool = False,
        nice: int = 0,
    ) -> None:
        """Publish ``shared`` and start the workers now.

        Args:
            jobs: CPUs to use; 1 runs everything inline.
            shared: what worker functions read through :func:`shared`.
            size: items of work; below :data:`PARALLEL_MIN_ITEMS` it runs inline (starting
                processes would cost more than they save).
            fresh: start new interpreters instead of forking this process: for a big
                parent whose memory the workers do not need (forked workers that touch
                inherited objects copy their pages). ``shared`` is then pickled.
            nice: lower the (forked) workers' scheduling priority by this much: for
                helpers that must not take the CPU from this process's own work.
        """
        # A pool made inside another's worker (its task signs inline) gives that worker's
        # value back when it closes.
        self._outer = _SHARED[0]
        self._ended = False
        _SHARED[0] = shared
        if size is not None and size < PARALLEL_MIN_ITEMS:
            jobs = 1
        self._pool: multiprocessing.pool.Pool | None = None
        self._processes: tuple[multiprocessing.process.BaseProcess, ...] = ()
        # Workers start deaf to Ctrl-C (a terminal sends it to them too): the parent
        # alone decides what it means, and ends them.
        try:
            with starting_workers(fresh=fresh and jobs > 1):
                self._start(jobs, shared, fresh=fresh, nice=nice)
        except BaseException:
            self.close()  # a signal held while starting is delivered here: no pool left over
            raise

    def _start(self, jobs: int, shared: Any, *, fresh: bool, nice: int) -> None:
        before = set(multiprocessing.active_children())
        self._create(jobs, shared, fresh=fresh, nice=nice)
        self._processes = tuple(set(multiprocessing.active_children()) - before)

    def _create(self, jobs: int, shared: Any, *, fresh: bool, nice: int) -> None:
        if jobs > 1 and fresh:
            self._pool = multiprocessing.get_context("spawn").Pool(
                jobs, initializer=_share, initargs=(shared,)
            )
        elif jobs > 1:
            # Frozen objects are skipped by the garbage collector: without this, each
            # worker's first collection walks (and so copies) the whole inherited heap.
            gc.freeze()
            try:
                self._pool = multiprocessing.get_context("fork").Pool(
                    jobs, initializer=_forked, initargs=(nice,)
                )
            finally:
                gc.unfreeze()

    def __enter__(self) -> Workers:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """End the worker processes and give back the shared value this pool replaced.

        A worker still there :data:`TERMINATE_GRACE_SECONDS` after the pool sent it
        SIGTERM is killed (seen after Ctrl-C: a worker that never acted on its SIGTERM
        kept the pool, and the interrupted run, waiting for good).
        """
        if self._pool is not None:
            ended = threading.Event()
            watchdog = threading.Thread(
                target=_kill_after_grace, args=(self._processes, ended), daemon=True
            )
            watchdog.start()
            try:
                self._pool.terminate()
                self._pool.join()
            finally:
                ended.set()
            self._pool = None
        if not self._ended:  # once: a second close must not undo a later pool's value
            self._ended = True
            _SHARED[0] = self._outer

    def map_soon(
        self, function: Callable[[Any], R], tasks: Iterable[Any]
    ) -> Callable[[], list[R] | None]:
        """Start ``function(task)`` for every task now (done now when inline), for work
        the workers do while this process does its own. The function returned waits for
        the results, in task order; None when a worker ended meanwhile (killed: its task
        is lost, and the pool's new worker would wait for good). ``function`` and the
        tasks as for :meth:`map_chunks`."""
        work = list(tasks)
        if self._pool is None:
            done = list(map(function, work))
            return lambda: done
        results = self._pool.imap(function, work)

        def wait() -> list[R] | None:
            got: list[R] = []
            while len(got) < len(work):
                try:
                    got.append(results.next(timeout=WATCH_SECONDS))
                except multiprocessing.TimeoutError:
                    if any(process.exitcode is not None for process in self._processes):
                        return None
            return got

        return wait

    def map_chunks(
        self,
        function: Callable[[Any], S],
        tasks: Iterable[Any],
        *,
        progress: Progress | None = None,
    ) -> Iterator[S]:
        """``function(task)`` for every task, results in task order.

        ``function`` must be a module-level function (workers import it by name), each
        task picklable; ``progress`` advances by each result's length (a list's: its items).
        """
        results = map(function, tasks) if self._pool is None else self._pool.imap(function, tasks)
        for result in results:
            if progress is not None:
                progress.advance(len(result))
            yield result
