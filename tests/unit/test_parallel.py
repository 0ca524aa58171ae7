"""Workers: results in task order, the same inline and on processes, shared data inherited."""

from __future__ import annotations

import os

import pytest

from alter_publish.parallel import PARALLEL_MIN_ITEMS, Workers, ranges, shared


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


def test_fresh_interpreters_take_tasks_by_value() -> None:
    tasks = [[1, 2], [3], [4, 5, 6]]
    with Workers(2, fresh=True) as pool:
        assert list(pool.map_chunks(_double, tasks)) == [[2, 4], [6], [8, 10, 12]]


def test_ranges_cover_every_item_once() -> None:
    assert ranges(5, 2) == [(0, 2), (2, 4), (4, 5)]
    assert ranges(0, 2) == []
