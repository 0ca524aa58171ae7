"""Workers: results in task order, the same inline and on processes, shared data inherited."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from alter_publish.interrupts import deferred_interrupts
from alter_publish.parallel import (
    PARALLEL_MIN_ITEMS,
    TERMINATE_GRACE_SECONDS,
    Workers,
    ranges,
    shared,
)


def _square_span(span: tuple[int, int]) -> list[tuple[int, int]]:
    values: list[int] = shared()
    return [(value * value, os.getpid()) for value in values[span[0] : span[1]]]


def _double(task: list[int]) -> list[int]:
    return [2 * value for value in task]


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_results_come_back_in_task_order_whatever_the_jobs(jobs: int) -> None:
    values = list(range(PARALLEL_MIN_ITEMS + 17))
    with Workers(jobs, values, size=len(values)) as pool:
        got = [
            item
            for part in pool.map_chunks(_square_span, ranges(len(values), 100))
            for item in part
        ]
    assert [square for square, _ in got] == [value * value for value in values]
    processes = {pid for _, pid in got}
    assert (os.getpid() in processes) == (jobs == 1)


def test_small_work_runs_inline() -> None:
    values = list(range(10))
    with Workers(2, values, size=len(values)) as pool:
        got = [
            item for part in pool.map_chunks(_square_span, ranges(len(values), 3)) for item in part
        ]
    assert {pid for _, pid in got} == {os.getpid()}


def _pid_after(task: float) -> list[int]:
    time.sleep(task)
    return [os.getpid()]


def _ends_the_worker(task: int) -> list[int]:
    if task == 1:
        os._exit(9)  # a worker killed (the OOM killer, say) while on its task
    return [task]


@pytest.mark.parametrize("jobs", [1, 2])
def test_work_started_soon_runs_beside_and_comes_back_in_order(jobs: int) -> None:
    with Workers(jobs) as pool:
        started = time.monotonic()
        wait = pool.map_soon(_pid_after, [0.3, 0.1])
        if jobs > 1:
            assert time.monotonic() - started < 0.2  # started, not waited for
        got = wait()
    assert got is not None
    pids = [pid for (pid,) in got]
    assert (pids == [os.getpid()] * 2) == (jobs == 1)


def test_work_started_soon_whose_worker_ended_gives_nothing() -> None:
    with Workers(2) as pool:
        wait = pool.map_soon(_ends_the_worker, [0, 1, 2])
        started = time.monotonic()
        assert wait() is None  # not a wait for good
        assert time.monotonic() - started < 10


def test_fresh_interpreters_take_tasks_by_value() -> None:
    tasks = [[1, 2], [3], [4, 5, 6]]
    with Workers(2, fresh=True) as pool:
        assert list(pool.map_chunks(_double, tasks)) == [[2, 4], [6], [8, 10, 12]]


def test_ranges_cover_every_item_once() -> None:
    assert ranges(5, 2) == [(0, 2), (2, 4), (4, 5)]
    assert ranges(0, 2) == []


def _sigterm_disposition(task: list[int]) -> list[bool]:
    return [signal.getsignal(signal.SIGTERM) is signal.SIG_DFL]


def _nothing(span: tuple[int, int]) -> list[int]:
    return [span[0]]


@pytest.mark.parametrize("fresh", [False, True], ids=["forked", "fresh"])
def test_workers_take_sigterm_as_the_kernel_does(fresh: bool) -> None:
    # A Python handler runs between bytecodes: a SIGTERM that came just before a worker
    # blocked on the pool's queue lock waited with it, and the pool's end took the 5 s
    # grace (2 to 3 pool ends in 100). The default action has no such window.
    with Workers(2, fresh=fresh) as pool:
        assert list(pool.map_chunks(_sigterm_disposition, [[0], [1]])) == [[True], [True]]


def test_pools_end_at_once() -> None:
    # Before the fix, 2 to 3 of 100 such ends waited 5 s for a worker's SIGTERM.
    slowest = 0.0
    for _ in range(60):
        pool = Workers(4, size=PARALLEL_MIN_ITEMS)
        list(pool.map_chunks(_nothing, ranges(PARALLEL_MIN_ITEMS, 50)))
        started = time.perf_counter()
        pool.close()
        slowest = max(slowest, time.perf_counter() - started)
    assert slowest < TERMINATE_GRACE_SECONDS / 2, f"a pool took {slowest:.1f} s to end"


def _write_two(task: tuple[Path, int]) -> list[int]:
    folder, number = task
    with deferred_interrupts():  # as a key epoch's files are written
        (folder / f"{number}.first").write_text("first")
        time.sleep(0.5)
        (folder / f"{number}.second").write_text("second")
    time.sleep(30)  # then ended at once by the pool's SIGTERM
    return [number]


def test_a_pool_ended_mid_write_lets_each_worker_finish_its_deferred_block(
    tmp_path: Path,
) -> None:
    # SIGTERM's default action in a worker (no Python handler) still waits for the end
    # of a block of writes that belong together.
    pool = Workers(2)
    results = pool.map_chunks(_write_two, [(tmp_path, 0), (tmp_path, 1)])
    threading.Thread(target=lambda: list(results), daemon=True).start()
    deadline = time.monotonic() + 10
    while len(list(tmp_path.glob("*.first"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.perf_counter()
    pool.close()
    assert time.perf_counter() - started < TERMINATE_GRACE_SECONDS
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "0.first",
        "0.second",
        "1.first",
        "1.second",
    ]


def _shared_after_an_inner_pool(task: int) -> list[Any]:
    with Workers(1, "inner"):
        pass
    return [shared()]


def test_a_pool_inside_a_worker_gives_the_workers_value_back() -> None:
    # A worker's task that signs through an inline pool still has its own value after.
    with Workers(2, "outer") as pool:
        assert list(pool.map_chunks(_shared_after_an_inner_pool, [1, 2, 3])) == [["outer"]] * 3
    assert shared() is None
