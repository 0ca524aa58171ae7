"""The first strategy: nothing changed since the last proven run, so nothing is done."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from alter_publish.keys.store import KeyStore
from alter_publish.pipeline.fingerprint import (
    Fingerprint,
)
from alter_publish.pipeline.memory import _fingerprint_inputs
from alter_publish.pipeline.paths import ds_path, output_paths
from alter_publish.pipeline.reports import ZoneResult


def _unchanged(
    definition: Path,
    out: Path,
    keys: KeyStore,
    templates: Path,
    options: str,
    now: int,
    started: float,
    record: Fingerprint,
    handle_lines: Sequence[str],
) -> tuple[ZoneResult, tuple[str, ...]] | None:
    """The result (and the definition's warnings) of a run that would change nothing
    (see :mod:`fingerprint`), or None."""
    inputs = _fingerprint_inputs(
        definition,
        record.zone,
        out,
        templates,
        options,
        record.zone_keys_dir,
        record.handle_keys,
    )
    if not record.holds(inputs.digest(handle_lines), now):
        return None
    summary = record.summary
    zone_file, envelopes_file = output_paths(out, record.zone)
    ds = tuple(str(line) for line in summary.get("ds", ()))
    warnings = tuple(str(warning) for warning in summary.get("warnings", ()))
    return ZoneResult(
        zone=record.zone,
        zone_file=zone_file,
        envelopes_file=envelopes_file,
        serial=int(summary["serial"]),
        handles=len(record.handle_keys),
        signed=0,
        reused=len(record.handle_keys),
        written=(),
        proof=None,
        timings=(("unchanged", time.perf_counter() - started),),
        ds_file=ds_path(out, record.zone) if ds else None,
        ds=ds,
        dnssec=summary.get("dnssec"),
        unchanged=True,
    ), warnings
