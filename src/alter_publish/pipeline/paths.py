"""Where a run reads and writes: templates shipped, outputs, DS file, zone definitions."""

from __future__ import annotations

from pathlib import Path

from alter_publish.outputset import OutputSet


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


def zone_outputs(out: Path, zone: str) -> OutputSet:
    """The zone's output set: its zone file, envelopes document and DS file, switched as
    one (see :mod:`alter_publish.outputset`)."""
    zone_file, envelopes_file = output_paths(out, zone)
    return OutputSet(out, zone, (zone_file.name, envelopes_file.name, ds_path(out, zone).name))


def current_outputs(out: Path, zone: str) -> tuple[Path, Path, Path]:
    """(zone file, envelopes document, DS file) of the set readers see now, resolved once:
    read together, they are one run's outputs even while a ``sign`` switches the set."""
    zone_file, envelopes_file, ds_file = zone_outputs(out, zone).readable()
    return zone_file, envelopes_file, ds_file


#: Where a zone's transparency log is published under the output directory, and its
#: checkpoint's name there.
LOG_DIR = "log"
CHECKPOINT_FILE = "checkpoint"


def checkpoints_path_for(definition: Path) -> Path:
    """The checkpoint history beside a definition: ``zones/<zone>.checkpoints``."""
    return definition.with_suffix(".checkpoints")


def log_dir(out: Path, zone: str) -> Path:
    """Where the zone's tiles are written: ``<out>/<zone>/log``."""
    return out / zone / LOG_DIR
