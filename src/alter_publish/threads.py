"""Work done in a thread while the caller goes on: for work that lets go of the
interpreter's lock (hashing large buffers, the kernel copying a file's spans, fsync), so
that it runs beside the caller's instead of after it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def soon(work: Callable[[], T], name: str, *, thread: bool = True) -> Callable[[], T]:
    """Start ``work`` in a (daemon) thread called ``name``; without ``thread`` (work that
    holds the interpreter's lock: a thread would only take turns with the caller's), or
    with no thread to spare (a task limit), it is done now. This never raises what
    ``work`` raises: the function it gives does, so that a caller starting several can
    wait for each (:func:`wait_all`).

    Returns:
        A function that waits for the work and gives its result, or raises what it
        raised. Call it on every path, errors included, so that no thread outlives the
        run that started it.
    """
    done: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(work())
        except BaseException as exc:  # given to the caller, who decides
            failed.append(exc)

    worker = threading.Thread(target=run, name=name, daemon=True)
    try:
        if thread:
            worker.start()
        started = thread
    except RuntimeError:  # no thread can start
        started = False
    if not started:
        run()

    def result_of() -> T:
        if started:
            worker.join()
        if failed:
            raise failed[0]
        return done[0]

    return result_of


def wait_all(pending: Sequence[Callable[[], T]]) -> list[T]:
    """Wait for every one of ``pending`` (made by :func:`soon`), then give their results
    in order.

    Raises:
        BaseException: the first error any of them raised, once all have ended (the
            others' are added to it as notes).
    """
    results: list[T] = []
    errors: list[BaseException] = []
    for wait in pending:
        try:
            results.append(wait())
        except BaseException as exc:  # every thread is waited for first
            errors.append(exc)
    if errors:
        for other in errors[1:]:
            errors[0].add_note(f"also: {type(other).__name__}: {other}")
        raise errors[0]
    return results
