"""Fixtures for CLI tests: one signed workspace, copied fresh for every test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli.workspace import ZONE, Workspace, simulated

SOURCE_DEFINITION = Path(__file__).resolve().parents[2] / "zones" / f"{ZONE}.yaml"


@pytest.fixture(scope="session")
def signed_workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """A workspace signed once per session with ``sign --create-keys``; do not modify."""
    workspace = Workspace(tmp_path_factory.mktemp("signed") / "ws")
    (workspace.root / "zones").mkdir(parents=True)
    shutil.copyfile(SOURCE_DEFINITION, workspace.definition)
    result = workspace.run("sign", "--create-keys", *simulated())
    assert result.returncode == 0, result.describe()
    assert workspace.zone_file.is_file()
    assert workspace.envelopes_file.is_file()
    return workspace


@pytest.fixture
def workspace(signed_workspace: Workspace, tmp_path: Path) -> Workspace:
    """A private copy of the signed workspace (file modes preserved)."""
    root = tmp_path / "ws"
    shutil.copytree(signed_workspace.root, root, symlinks=True)
    return Workspace(root)
