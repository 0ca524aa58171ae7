"""Fixtures shared by integration tests: the loopback DNS hierarchy of issue 15, and Go's
transparency log code as an oracle (issue 17)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.golog import build_tlogcheck
from tests.integration.hierarchy import Hierarchy, HierarchyLab, Scenario, running_lab


@pytest.fixture(scope="session")
def hierarchy_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HierarchyLab]:
    """The hierarchy, started once per session (skips unless root with every daemon).

    A test that changes it with :meth:`HierarchyLab.apply` need not restore it:
    the ``hierarchy`` fixture does before each test.
    """
    with running_lab(tmp_path_factory.mktemp("hierarchy")) as lab:
        yield lab


@pytest.fixture
def hierarchy(hierarchy_lab: HierarchyLab) -> Hierarchy:
    """The running hierarchy, all good (only what the last test changed is restored)."""
    return hierarchy_lab.apply(Scenario.ALL_GOOD)


@pytest.fixture(scope="session")
def tlogcheck(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Go's sumdb note and tlog code as a checker (built once; skips without Go)."""
    return build_tlogcheck(tmp_path_factory.mktemp("tlogcheck"))
