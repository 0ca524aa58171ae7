"""The first strategy: nothing changed since the last proven run, so nothing is done."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from alter_publish.definition.logspec import LogSpec
from alter_publish.errors import AlterError
from alter_publish.keys.store import KeyStore
from alter_publish.pipeline.context import ProvenRun, RunContext, ZoneStart
from alter_publish.pipeline.fingerprint import Fingerprint, content_digest, fingerprint_inputs
from alter_publish.pipeline.paths import default_templates_dir
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

    def discard(self) -> None:
        """Nothing held."""


def unchanged(ctx: RunContext, start: ZoneStart) -> Unchanged | None:
    """The run of a zone whose inputs and outputs are as its last proven run left them,
    inside the span of ``now`` its record holds for (see :mod:`fingerprint`); None when
    anything differs (or there is no record)."""
    record = start.record
    if record is None or not record.valid_from <= ctx.now < record.valid_until:
        return None  # the time alone decides: no file is hashed (a renewal run's case)
    if not _holds(ctx, start.definition, record):
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


def _holds(ctx: RunContext, definition: Path, record: Fingerprint) -> bool:
    """Whether the inputs and outputs of ``definition`` are as ``record`` says (the
    time aside). An edited definition says no at once: the keys and the other files
    are not looked at (their digests cost 0.05 s at 100,000 handles)."""
    sha256 = record.source_sha256
    if sha256 and content_digest(definition, ctx.digests) != sha256:
        return False
    inputs = fingerprint_inputs(
        ctx,
        definition,
        record.zone,
        record.zone_keys_dir,
        record.handle_keys,
        tls_files=[str(name) for name in record.summary.get("tls_files", ())],
    )
    keys_digest = record.keys_digest_now(ctx.keys.root, jobs=ctx.jobs)
    return keys_digest is not None and inputs.digest(keys_digest) == record.digest


def outputs_as_proven(definition: Path, *, out: Path, keys: KeyStore) -> bool:
    """True when the outputs of ``definition`` in ``out`` are as its last proven ``sign``
    (with the shipped templates) left them and nothing it read has changed since: its
    record holds, the time aside. Reading them then fails on nothing but the disk
    (``plan`` transfers the zone meanwhile). Anything in doubt is False."""
    ctx = RunContext(out=out, keys=keys, templates=default_templates_dir(), now=0, check=True)
    try:
        record = ZoneStart.read(ctx, definition).record  # none after sign --no-verify
        return record is not None and _holds(ctx, definition, record)
    except (AlterError, OSError):
        return False
