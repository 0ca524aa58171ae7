"""Work done in a thread while the caller goes on: for work that lets go of the
interpreter's lock (hashing large buffers, the kernel copying a file's spans, fsync), so
that it runs beside the caller's instead of after it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def soon(work: Callable[[], T], name: str) -> Callable[[], T]:
    """Start ``work`` in a (daemon) thread called ``name``; no thread to spare (a task
    limit): it is done now.

    Returns:
        A function that waits for the work and gives its result, or raises what it
        raised. Call it on every path, errors included, so that no thread outlives the
        run that started it (:func:`wait_all`).
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
        worker.start()
    except RuntimeError:  # no thread can start
        result = work()
        return lambda: result

    def result_of() -> T:
        worker.join()
        if failed:
            raise failed[0]
        return done[0]

    return result_of


def wait_all(pending: Sequence[Callable[[], T]]) -> list[T]:
    """Wait for every one of ``pending`` (made by :func:`soon`), then give their results
    in order, or raise the first error (after all have ended)."""
    results: list[T] = []
    first: BaseException | None = None
    for wait in pending:
        try:
            results.append(wait())
        except BaseException as exc:  # every thread is waited for first
            first = first or exc
    if first is not None:
        raise first
    return results
