"""Work in a thread while the caller goes on (``alter_publish.threads``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from alter_publish.threads import soon, wait_all


def test_results_come_in_the_order_asked_whatever_finished_first() -> None:
    def slow_work() -> str:
        time.sleep(0.05)
        return "slow"

    slow = soon(slow_work, "slow")
    fast = soon(lambda: "fast", "fast")
    assert wait_all([slow, fast]) == ["slow", "fast"]


def test_every_thread_ends_before_the_first_error_is_raised() -> None:
    ended = threading.Event()

    def late() -> str:
        time.sleep(0.1)
        ended.set()
        return "late"

    def broken() -> str:
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        wait_all([soon(broken, "broken"), soon(late, "late")])
    assert ended.is_set()  # not raised while "late" still ran


def test_with_no_thread_to_spare_the_work_is_done_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(self: object) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr("threading.Thread.start", refused)
    done: list[str] = []

    def work() -> str:
        done.append("now")
        return "result"

    result = soon(work, "refused")
    assert done == ["now"]
    assert result() == "result"


def test_work_done_at_once_that_fails_raises_only_when_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started = threading.Event()

    def first() -> str:
        started.wait(timeout=10)
        return "first"

    waiting = soon(first, "first")  # started before threads ran out
    original = threading.Thread.start

    def refused(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr("threading.Thread.start", refused)

    def broken() -> str:
        raise ValueError("broken")

    failing = soon(broken, "broken")  # done at once: its error waits for the caller
    monkeypatch.setattr("threading.Thread.start", original)
    started.set()
    with pytest.raises(ValueError, match="broken"):
        wait_all([waiting, failing])
    assert not [t for t in threading.enumerate() if t.name == "first"]


def test_the_errors_after_the_first_are_kept_as_its_notes() -> None:
    def broken(what: str) -> Callable[[], str]:
        def work() -> str:
            raise ValueError(what)

        return work

    with pytest.raises(ValueError, match="one") as raised:
        wait_all([soon(broken("one"), "one"), soon(broken("two"), "two")])
    assert raised.value.__notes__ == ["also: ValueError: two"]
