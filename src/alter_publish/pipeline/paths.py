"""Where a run reads and writes: templates shipped, outputs, DS file, zone definitions."""

from __future__ import annotations

from pathlib import Path


def default_templates_dir() -> Path:
    """The templates shipped with alter-publish (packaged, or the source tree's)."""
    package = Path(__file__).resolve().parents[1]  # src/alter_publish
    packaged = package / "templates"
    return packaged if packaged.is_dir() else package.parents[1] / "templates"


def output_paths(out: Path, zone: str) -> tuple[Path, Path]:
    """(``<out>/<zone>.zone``, ``<out>/<zone>.envelopes.json``)."""
    return out / f"{zone}.zone", out / f"{zone}.envelopes.json"


def ds_path(out: Path, zone: str) -> Path:
    """``<out>/<zone>.ds``: the DS records to hand to the parent zone (the trust anchor)."""
    return out / f"{zone}.ds"
