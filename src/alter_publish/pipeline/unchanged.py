"""The first strategy: nothing changed since the last proven run, so nothing is done."""

from __future__ import annotations

import time
from dataclasses import dataclass

from alter_publish.definition.logspec import LogSpec
from alter_publish.pipeline.context import ProvenRun, RunContext, ZoneStart
from alter_publish.pipeline.fingerprint import fingerprint_inputs
from alter_publish.pipeline.reports import ZoneResult, zone_result


@dataclass(frozen=True, slots=True)
class Unchanged:
    """A zone nothing changed for: its result (from the record) and its warnings."""

    result: ZoneResult
    warnings: tuple[str, ...]
    rank = 0
    origin = None
    proven = True

    def prove(self, ctx: RunContext) -> ProvenRun:
        """Nothing to prove."""
        return self

    def commit(self, ctx: RunContext, committed: bool) -> ZoneResult:
        """Nothing to write."""
        return self.result


def unchanged(ctx: RunContext, start: ZoneStart) -> Unchanged | None:
    """The run of a zone whose inputs and outputs are as its last proven run left them,
    inside the span of ``now`` its record holds for (see :mod:`fingerprint`); None when
    anything differs (or there is no record)."""
    record = start.record
    if record is None or not record.valid_from <= ctx.now < record.valid_until:
        return None  # the time alone decides: no file is hashed (a renewal run's case)
    inputs = fingerprint_inputs(
        ctx,
        start.definition,
        record.zone,
        record.zone_keys_dir,
        record.handle_keys,
        tls_files=[str(name) for name in record.summary.get("tls_files", ())],
    )
    keys_digest = record.keys_digest_now(ctx.keys.root, jobs=ctx.jobs)
    if keys_digest is None or not record.holds(inputs.digest(keys_digest), ctx.now):
        return None
    summary = record.summary
    result = zone_result(
        ctx.out,
        record.zone,
        serial=int(summary["serial"]),
        handles=len(record.handle_keys),
        signed=0,
        timings=(("unchanged", time.perf_counter() - start.started),),
        ds=tuple(str(line) for line in summary.get("ds", ())),
        dnssec=summary.get("dnssec"),
        unchanged=True,
        log=LogSpec.from_mapping(summary),
    )
    return Unchanged(result, tuple(str(warning) for warning in summary.get("warnings", ())))
