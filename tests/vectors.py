"""Loading the alter1 test vectors (the unchanged copy in tests/data/vectors)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VECTORS_DIR = Path(__file__).parent / "data" / "vectors"
SHARED_VECTORS_DIR = Path(__file__).resolve().parents[2] / "shared" / "vectors"


def load(name: str) -> list[dict[str, Any]]:
    """The cases of one vector file."""
    data: list[dict[str, Any]] = json.loads((VECTORS_DIR / name).read_text(encoding="utf-8"))
    return data


def case_id(case: dict[str, Any]) -> str:
    """A readable pytest id for a vector case."""
    return str(case.get("name") or case.get("input") or len(case.get("entries_utf8", [])))
