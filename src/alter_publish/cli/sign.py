"""``sign`` and ``verify``: the whole run over a workspace, and the proof of its outputs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alter_publish import pipeline
from alter_publish.cli.options import (
    JsonOption,
    KeysOption,
    NowOption,
    OutOption,
    RootHintsOption,
    SimulatedTimeOption,
    TrustAnchorOption,
    ZonesArgument,
    clock_now,
    keystore,
    parse_hostport,
    root_hints_from,
    write_now,
)
from alter_publish.cli.output import (
    emit_json,
    fail,
    print_proof_failures,
    print_verified,
    warn,
)
from alter_publish.cli.progress import progress_for
from alter_publish.definition.workspace import find_zone_files, workspace_for
from alter_publish.errors import EXIT_DRIFT, EXIT_VERIFICATION, UsageError
from alter_publish.parallel import default_jobs

if TYPE_CHECKING:
    from alter_publish.publish.witnessing import ZoneCosign

#: ``sign --check`` prints at most this many changes per zone (``--json`` lists all).
MAX_CHANGE_LINES = 50


CreateKeysOption = Annotated[
    bool,
    typer.Option(
        "--create-keys",
        help="Create epoch-1 keys for handles that have none, and DNSSEC keys for zones.",
    ),
]
NoVerifyOption = Annotated[
    bool, typer.Option("--no-verify", help="Skip the loopback proof (outputs are unproven).")
]
TemplatesOption = Annotated[
    Path | None,
    typer.Option(
        "--templates",
        help="Directory with zone.j2 (default: templates/ of the zone's workspace when it "
        "exists, else the built-in ones).",
    ),
]
CheckOption = Annotated[
    bool,
    typer.Option(
        "--check",
        help="Change nothing; exit 7 if a real run would change any output (for CI).",
    ),
]
JobsOption = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        min=1,
        help="Processes that sign and verify (default: every CPU); outputs are identical.",
    ),
]
FullOption = Annotated[
    bool,
    typer.Option(
        "--full",
        help="Do the whole job even when nothing or only a few handles changed (by "
        "default those are patched into the last proven run's outputs: same bytes).",
    ),
]
VerifyServerOption = Annotated[
    str | None,
    typer.Option(
        "--server",
        help="HOST:PORT of a name server to prove instead of the loopback one "
        "(what it serves must be what sign wrote).",
    ),
]
VerifyInsecureOption = Annotated[
    bool,
    typer.Option(
        "--allow-insecure",
        help="With --server: accept answers that are not DNSSEC-validated.",
    ),
]


def sign(
    zones: ZonesArgument = None,
    out: OutOption = None,
    now: NowOption = None,
    allow_simulated_time: SimulatedTimeOption = False,
    create_keys: CreateKeysOption = False,
    no_verify: NoVerifyOption = False,
    templates: TemplatesOption = None,
    keys: KeysOption = None,
    check: CheckOption = False,
    jobs: JobsOption = None,
    full: FullOption = False,
    as_json: JsonOption = False,
) -> None:
    """Sign every handle, DNSSEC-sign the zone, prove it on loopback, then write the outputs."""
    moment = clock_now(now) if check else write_now(now, allow_simulated_time)
    if no_verify:
        warn("--no-verify: outputs are written WITHOUT the loopback proof")
    zone_files = find_zone_files(zones or [])
    where = workspace_for(zone_files)
    with progress_for(as_json=as_json) as progress:
        report = pipeline.sign(
            zone_files,
            out=where.out(out),
            keys=keystore(where.keys(keys)),
            now=moment,
            create_keys=create_keys,
            templates=where.templates(templates),
            verify=not no_verify,
            check=check,
            jobs=jobs or default_jobs(),
            progress=progress,
            incremental=not full,
        )
    cosigned = _cosign(report, where.out(out))
    _print_signed(report, as_json, cosigned)
    _check_cosigned(cosigned)
    if not report.proven:
        failed = sum(len(z.proof.failures) for z in report.zones if z.proof)
        fail(EXIT_VERIFICATION, f"proof failed for {failed} handle(s); no output was written")
    if report.check and report.drift:
        count = sum(len(zone.written) for zone in report.zones)
        fail(EXIT_DRIFT, f"--check: {count} output file(s) would change; run sign")


def _print_signed(
    report: pipeline.SignReport, as_json: bool, cosigned: tuple[ZoneCosign, ...] = ()
) -> None:
    for warning in report.warnings:
        warn(f"WARNING: {warning}")
    if as_json:
        extra = {"cosign": [zone.to_mapping() for zone in cosigned]} if cosigned else {}
        emit_json(report.to_mapping() | extra)
    for zone in report.zones:
        if zone.proof is not None:
            print_proof_failures(zone.proof)
        if not as_json:
            _print_zone(report, zone)
    for cosign in () if as_json else cosigned:
        if cosign.outcomes:
            names = ", ".join(cosign.cosigners) or "no witness"
            typer.echo(f"{cosign.zone}: checkpoint cosigned by {names}")


def _cosign(report: pipeline.SignReport, out: Path) -> tuple[ZoneCosign, ...]:
    """The witnesses' cosignatures of the zones with a witness policy (loaded only then:
    a run that changes nothing starts faster without them)."""
    if not any(zone.log.policy is not None for zone in report.zones):
        return ()
    from alter_publish.publish.witnessing import cosign_signed

    return cosign_signed(report, out)


def _check_cosigned(cosigned: tuple[ZoneCosign, ...]) -> None:
    """Warn about each witness that gave no cosignature; a quorum not met fails the run
    only where the definition requires it (``log: {require_quorum: true}``)."""
    for zone in cosigned:
        for outcome in zone.outcomes:
            if outcome.problem is not None:
                warn(f"WARNING: {zone.zone}: witness {outcome.name}: {outcome.problem}")
        if zone.problem is not None:
            warn(f"WARNING: {zone.zone}: cosigning: {zone.problem}")
        if zone.ok:
            continue
        found = ", ".join(zone.cosigners) or "none"
        what = (
            f"{zone.checkpoint}: quorum-not-met: cosignatures do not meet the policy's quorum "
            f"(valid: {found})"
        )
        if zone.required:
            fail(EXIT_VERIFICATION, what)
        warn(f"WARNING: {what}")


def _print_zone(report: pipeline.SignReport, zone: pipeline.ZoneResult) -> None:
    proven = "proof skipped"
    if zone.proof is not None:
        proof = zone.proof
        passed = len(proof.results) - sum(1 for r in proof.results if not r.ok)
        statuses = sorted({result.dnssec for result in proof.results}) or ["-"]
        proven = f"{passed}/{len(proof.results)} proven on {proof.server} ({'/'.join(statuses)})"
        if zone.patched is not None:
            proven = f"incremental: {len(zone.patched)} changed, {proven}"
    timings = " ".join(f"{stage}={seconds:.2f}s" for stage, seconds in zone.timings)
    typer.echo(
        f"{zone.zone}: {zone.handles} handles, {zone.signed} signed, {zone.reused} unchanged; "
        f"serial {zone.serial}; {proven}; {timings}"
    )
    if report.check and report.proven:
        changed = f"would write {', '.join(zone.written)}" if zone.written else "up to date"
        typer.echo(f"{zone.zone}: {changed}")
        _print_changes(zone)
    elif report.committed:
        changed = f"wrote {', '.join(zone.written)}" if zone.written else "nothing changed"
        typer.echo(f"{zone.zone}: {changed}")
        for line in zone.ds:
            typer.echo(f"{zone.zone}: DS for the parent zone: {line}")


def _print_changes(zone: pipeline.ZoneResult) -> None:
    for change in zone.changes[:MAX_CHANGE_LINES]:
        typer.echo(f"{zone.zone}: {change.to_text()}")
    if len(zone.changes) > MAX_CHANGE_LINES:
        more = len(zone.changes) - MAX_CHANGE_LINES
        typer.echo(f"{zone.zone}: ... and {more} more changes (--json lists every one)")


def verify(
    zones: ZonesArgument = None,
    out: OutOption = None,
    now: NowOption = None,
    trust_anchor: TrustAnchorOption = None,
    server: VerifyServerOption = None,
    allow_insecure: VerifyInsecureOption = False,
    root_hints: RootHintsOption = None,
    keys: KeysOption = None,
    as_json: JsonOption = False,
) -> None:
    """Prove already-rendered output: serve it on loopback (or ask --server) and verify it."""
    if allow_insecure and not server:
        raise UsageError("--allow-insecure is for --server (the loopback proof validates)")
    if allow_insecure:
        warn("--allow-insecure: accepting answers without DNSSEC validation")
    zone_files = find_zone_files(zones or [])
    where = workspace_for(zone_files)
    report = pipeline.verify(
        zone_files,
        out=where.out(out),
        now=clock_now(now),
        trust_anchors=trust_anchor,
        server=parse_hostport(server) if server else None,
        allow_insecure=allow_insecure,
        root_hints=root_hints_from(root_hints) if server else None,
        log_keys=keystore(where.keys(keys)).logs,
    )
    for warning in report.warnings:
        warn(f"WARNING: {warning}")
    if as_json:
        emit_json(report.to_mapping())
    print_verified(report, as_json)
    if not report.ok:
        failed = sum(len(p.failures) for p in report.proofs)
        fail(EXIT_VERIFICATION, f"verification failed for {failed} handle(s)")
