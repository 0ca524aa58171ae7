"""Work in a thread while the caller goes on (``alter_publish.threads``)."""

from __future__ import annotations

import threading
import time

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
