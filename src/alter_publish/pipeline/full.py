"""The last strategy: the whole job for a zone (read, plan, prove, write, remember)."""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass

from alter_publish.definition.loader import read_definition
from alter_publish.definition.model import ZoneSpec, load_zone_text
from alter_publish.format.identitylog import append_entries
from alter_publish.pipeline.build import ZonePlan, dnssec_summary, published_handles
from alter_publish.pipeline.commit import Measured, Text, Writes, commit
from alter_publish.pipeline.context import ProvenRun, RunContext, ZoneStart
from alter_publish.pipeline.memory import record_fingerprint, record_memo
from alter_publish.pipeline.paths import current_outputs
from alter_publish.pipeline.plan import plan_zone
from alter_publish.pipeline.render import envelopes_document
from alter_publish.pipeline.reports import Stopwatch, ZoneResult, zone_result
from alter_publish.pipeline.transparency import tlog_proof
from alter_publish.verify.proof import ProofReport, prove_records


@dataclass(frozen=True, slots=True)
class Loaded:
    """A zone read for a full run, not planned yet."""

    spec: ZoneSpec
    source: str  # the definition's text as parsed
    load_seconds: float
    rank = 2

    @property
    def origin(self) -> str:
        """The zone."""
        return self.spec.origin

    @property
    def warnings(self) -> tuple[str, ...]:
        """The definition's warnings."""
        return self.spec.warnings()

    def discard(self) -> None:
        """Nothing held: a full run writes only when it commits."""

    def prove(self, ctx: RunContext) -> ProvenRun:
        """Plan the zone and (with ``ctx.verify``) prove it on the loopback server.

        Raises:
            KeyStoreError: keys are missing or unusable.
            RenderError: a template or the rendered zone is broken.
            ServeError: the loopback server could not start.
        """
        spec, watch = self.spec, Stopwatch([("load", self.load_seconds)])
        published = published_handles(current_outputs(ctx.out, spec.origin)[1])
        plan = plan_zone(ctx, spec, watch, published)
        proof = None
        if ctx.verify:
            with watch.stage("proof"):
                proof = prove_records(
                    plan.served,
                    spec,
                    plan.expectations,
                    now=ctx.now,
                    zone_text=plan.zone_text,
                    anchors=plan.anchors,
                    jobs=ctx.jobs,
                    progress=ctx.progress,
                    checkpoint=plan.log_record,
                )
        # The served rrsets were for the proof: ~300 MB at 100,000 handles, not needed to write.
        return Planned(dataclasses.replace(plan, served=()), proof, watch, self.source)


@dataclass(frozen=True, slots=True)
class Planned:
    """A zone planned and proven in memory, ready to commit."""

    plan: ZonePlan
    proof: ProofReport | None
    watch: Stopwatch
    source: str

    @property
    def warnings(self) -> tuple[str, ...]:
        """The definition's warnings."""
        return self.plan.spec.warnings()

    @property
    def proven(self) -> bool:
        """True when the proof passed (or was skipped)."""
        return self.proof is None or self.proof.ok

    def commit(self, ctx: RunContext, committed: bool) -> ZoneResult:
        """Write the plan when every zone was proven, then (unless ``ctx.check``) record
        what the next run may reuse; report.

        Raises:
            RenderError: a file cannot be written.
        """
        plan, written = self.plan, []
        if committed:
            with self.watch.stage("write"):
                written = self._write(ctx)
        signed_zone = plan.signed_zone
        return zone_result(
            ctx.out,
            plan.spec.origin,
            serial=plan.state.serial,
            handles=len(plan.signed),
            signed=len(plan.new_entries),
            written=written,
            proof=self.proof,
            timings=self.watch.stages,
            ds=signed_zone.ds_text.splitlines() if signed_zone else (),
            dnssec=dnssec_summary(plan),
            changes=plan.changes,
            log=plan.spec.log,
        )

    def _write(self, ctx: RunContext) -> list[str]:
        plan = self.plan
        publication = plan.publication
        proofs = (
            None if publication is None else functools.partial(tlog_proof, publication=publication)
        )
        envelopes = Measured(envelopes_document(plan.spec, plan.signed, plan.state.serial, proofs))
        signed_zone = plan.signed_zone
        writes = Writes(
            definition=plan.spec.path,
            zone=plan.spec.origin,
            log_path=plan.log.path,
            append_log=(
                (lambda: append_entries(plan.log, plan.new_entries)) if plan.new_entries else None
            ),
            state=plan.state,
            zone_file=Text(plan.zone_text),
            envelopes_file=Text(envelopes),
            ds=signed_zone.ds_text.encode("ascii") if signed_zone else b"",
            publication=plan.publication,
        )
        written = commit(ctx, writes)
        if not ctx.check:
            keys = record_fingerprint(ctx, plan, self.source)
            record_memo(ctx, plan, self.source, keys, envelopes.starts)
        return written


def full(ctx: RunContext, start: ZoneStart) -> Loaded:
    """Read the definition once: the fingerprint and memo record the text parsed, not an
    edit that lands while the run goes on.

    Raises:
        DefinitionError: the definition is wrong.
    """
    source = read_definition(start.definition)
    spec = load_zone_text(source, start.definition)
    return Loaded(spec, source, time.perf_counter() - start.started)
