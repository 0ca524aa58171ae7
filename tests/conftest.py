"""Shared fixtures: a fixed clock and a fresh workspace with the shipped example zone."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from alter_publish.keys.store import KeyStore

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_ZONE = REPO / "zones" / "example.com.yaml"
NOW = 1_767_225_600  # 2026-01-01T00:00:00Z


@dataclass(frozen=True)
class Workspace:
    """A zone owner's workspace in tmp_path: zones/, keys/, build/."""

    root: Path

    @property
    def zone_file(self) -> Path:
        return self.root / "zones" / "example.com.yaml"

    @property
    def out(self) -> Path:
        return self.root / "build"

    @property
    def keys(self) -> KeyStore:
        return KeyStore(self.root / "keys")

    @property
    def rendered(self) -> Path:
        return self.out / "example.com.zone"

    @property
    def envelopes(self) -> Path:
        return self.out / "example.com.envelopes.json"

    @property
    def log(self) -> Path:
        return self.root / "zones" / "example.com.log"


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    (tmp_path / "zones").mkdir()
    shutil.copy(EXAMPLE_ZONE, tmp_path / "zones" / "example.com.yaml")
    return Workspace(tmp_path)
