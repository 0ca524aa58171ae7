"""Ctrl-C and SIGTERM at a safe moment: deferred across writes that belong together.

A run may be interrupted at any moment while it computes (nothing is written then),
but not half-way through writing a set of files that only make sense together (a key
epoch's files, the log + state + outputs of a signed zone). :func:`deferred_interrupts`
holds SIGINT and SIGTERM for the length of such a block and delivers them right after
it, to whatever handlers were in place. Worker processes leave the terminal's process
group (:func:`quiet_worker`): Ctrl-C reaches only the parent, which ends them in order
and alone reports it.

``kill -9`` and power loss are out of reach of any handler; files are still written
atomically (temp file and rename), and a key epoch cut short is finished or
discarded by the next run (see :mod:`alter_publish.keys.store`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from multiprocessing import resource_tracker
from types import FrameType

#: The signals that mean "stop": a terminal's Ctrl-C, and a service manager's stop.
INTERRUPT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Hold SIGINT and SIGTERM while the block runs; deliver them after it.

    Outside the main thread (where Python runs signal handlers) this does nothing.
    Nested blocks deliver to the enclosing block, which holds it in turn.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    previous = {signum: signal.signal(signum, hold) for signum in INTERRUPT_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        # The handlers in place again act on each signal now: KeyboardInterrupt from
        # here, or a worker's end (a Ctrl-C it ignores may come before its SIGTERM).
        for held in dict.fromkeys(received):
            signal.raise_signal(held)


def quiet_worker() -> None:
    """In a worker process: leave the terminal's process group, ignore SIGINT, end
    quietly (no traceback) on SIGTERM, then take signals again.

    A terminal's Ctrl-C (or a SIGTERM sent to the process group) then reaches only the
    parent, which ends its pool in order: it takes the pool's queue lock, then sends
    each worker SIGTERM. A worker killed at any other moment could die holding that
    lock, and the parent would wait on it forever. SIGTERM ends the worker at
    once, but a key being written is finished first (:func:`deferred_interrupts`).
    The parent starts its workers with both signals blocked and SIGINT ignored
    (:func:`starting_workers`), so none arrives before this has run.
    """
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # SIGTERM's default action, taken by the kernel: no handler of Python's. A Python
    # handler runs between bytecodes, so a SIGTERM that came just before the worker
    # blocked on the pool's queue lock waited there with it, and the pool's end waited
    # for the 5 s grace (2 to 3 pool ends in 100). No SystemExit either, which would
    # run the finalizers the worker inherited from its parent (fork).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, INTERRUPT_SIGNALS)


@contextlib.contextmanager
def starting_workers(*, fresh: bool = False) -> Iterator[None]:
    """Start worker processes in this block: they begin with SIGINT and SIGTERM blocked
    (and fresh ones with SIGINT ignored), until :func:`quiet_worker` runs in them.

    A ``fresh`` interpreter keeps an ignored SIGINT across ``exec`` (Python installs no
    handler of its own then), so a Ctrl-C while it imports is no traceback either. Here,
    a signal that arrives meanwhile stays pending and is delivered when the block ends.
    """
    if fresh:
        # Started on the first fresh pool, the resource tracker unblocks both signals on
        # its way (its own start): start it before they are blocked, or one is lost.
        resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, INTERRUPT_SIGNALS)
    # Forked workers inherit the blocked mask, which is enough. Ignoring SIGINT (needed
    # across exec only) is process-wide: a Ctrl-C taken meanwhile by another thread that
    # does not block it would be discarded, and the run would go on as if never told.
    in_main = fresh and threading.current_thread() is threading.main_thread()
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN) if in_main else None
    try:
        yield
    finally:
        if in_main:
            signal.signal(signal.SIGINT, signal.SIG_DFL if handler is None else handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
