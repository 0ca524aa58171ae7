"""Where a run reads and writes: templates shipped, outputs, DS file, zone definitions."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from alter_publish.definition import workspace


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


def find_zone_files(paths: Sequence[Path], zones_dir: Path | None = None) -> tuple[Path, ...]:
    """The zone definitions named, or every ``zones/*.yaml`` of the nearest directory
    upwards that has any (see :mod:`alter_publish.definition.workspace`).

    Raises:
        UsageError: nothing to work on.
    """
    return workspace.find_zone_files(paths, zones_dir)
