"""``plan``, ``push`` and ``export``: getting the signed records to other servers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from alter_publish.cli.options import (
    JsonOption,
    NowOption,
    OutOption,
    PublishTimeoutOption,
    ServerOption,
    SimulatedTimeOption,
    TrustAnchorOption,
    TsigKeyOption,
    ZoneArgument,
    ZonesDirOption,
    parse_hostport,
    write_now,
)
from alter_publish.cli.output import emit_json, fail, print_verified, warn
from alter_publish.definition.model import load_zone
from alter_publish.definition.workspace import find_definition, workspace_for
from alter_publish.errors import EXIT_DRIFT, EXIT_VERIFICATION, UsageError
from alter_publish.keys.store import KeyStore
from alter_publish.publish import export, fleet
from alter_publish.publish import push as publishing

NsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--ns",
        help="HOST:PORT of a name server of the zone (repeat for each); replaces the "
        "definition's ns (in-zone names at their hosts addresses).",
    ),
]
AllNsOption = Annotated[
    bool,
    typer.Option(
        "--all-ns", help="Also list the SOA serial each name server serves, against the primary's."
    ),
]
WaitOption = Annotated[
    float,
    typer.Option(
        "--wait",
        help="Seconds to wait for every name server to serve the pushed serial, then "
        "prove each (0: do not wait; only the primary is proven).",
        min=0,
    ),
]


def _name_servers(ns: list[str] | None) -> tuple[tuple[str, int], ...]:
    return tuple(parse_hostport(text) for text in ns or ())


def _print_plan(result: publishing.Plan) -> None:
    marks = {"add": "+", "update": "~", "delete": "-"}
    for change in result.changes:
        before = len(change.before.texts) if change.before else 0
        after = len(change.after.texts) if change.after else 0
        typer.echo(
            f"{marks[change.action]} {change.owner} ({change.action}: "
            f"{before} -> {after} record(s))"
        )
    counts = result.counts()
    summary = ", ".join(f"{counts[a]} {a}" for a in ("add", "update", "delete"))
    state = summary if result.pending else "nothing to do"
    typer.echo(
        f"{result.zone}: {state} on {result.server} ({result.served} managed records served, "
        f"read by {result.enumeration})"
    )


def plan(
    zone: ZoneArgument,
    server: ServerOption,
    tsig_key: TsigKeyOption = None,
    out: OutOption = None,
    zones_dir: ZonesDirOption = None,
    timeout: PublishTimeoutOption = publishing.DEFAULT_TIMEOUT_SECONDS,
    all_ns: AllNsOption = False,
    ns: NsOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the adds, updates and deletes of alter1 and log checkpoint records a push would
    make, and with --all-ns the serial each name server serves (exit 7 if anything
    differs or lags)."""
    spec = load_zone(find_definition(zone, zones_dir))
    tsig = publishing.read_tsig_key(tsig_key) if tsig_key else None
    address = parse_hostport(server)
    explicit = _name_servers(ns)
    workspace = workspace_for([spec.path])
    out = workspace.out(out)
    keys = KeyStore(workspace.keys())  # for the record of the last sign: no key is read
    result = publishing.plan(spec, out=out, server=address, tsig=tsig, timeout=timeout, keys=keys)
    serials = None
    if all_ns or explicit:
        servers = fleet.name_servers(spec, explicit)
        serials = fleet.compare_serials(spec, address, servers, timeout=timeout)
    if as_json:
        mapping = result.to_mapping()
        if serials is not None:
            mapping["name_servers"] = serials.to_mapping()
        emit_json(mapping)
    else:
        _print_plan(result)
        if serials is not None:
            _print_serials(serials, result.server)
    if result.pending:
        fail(EXIT_DRIFT, f"{result.zone}: {len(result.changes)} owner name(s) differ; run push")
    if serials is not None and not serials.converged:
        fail(EXIT_DRIFT, serials.summary(pushed=False))


def _print_serials(serials: fleet.Convergence, primary: str) -> None:
    typer.echo(f"{serials.zone}: the primary {primary} serves serial {serials.serial}")
    for served in serials.servers:
        typer.echo(f"  {served.server.where}: {served.describe(serials.serial)}")


PushTsigKeyOption = Annotated[
    Path, typer.Option("--tsig-key", help="TSIG key file in BIND format (tsig-keygen).")
]
PushInsecureOption = Annotated[
    bool,
    typer.Option(
        "--allow-insecure",
        help="The server does not sign the zone: accept unsigned answers in the proof.",
    ),
]
ForceOption = Annotated[
    bool, typer.Option("--force", help="Delete more than --max-delete of our records.")
]
MaxDeleteOption = Annotated[
    float,
    typer.Option(
        "--max-delete",
        help="Largest share of our served records a push may delete without --force.",
        min=0.0,
        max=1.0,
    ),
]
ProveAllOption = Annotated[
    bool,
    typer.Option(
        "--prove-all",
        help="Prove every handle on the server, not only those the push changed.",
    ),
]


def push(
    zone: ZoneArgument,
    server: ServerOption,
    tsig_key: PushTsigKeyOption,
    out: OutOption = None,
    trust_anchor: TrustAnchorOption = None,
    allow_insecure: PushInsecureOption = False,
    force: ForceOption = False,
    max_delete: MaxDeleteOption = publishing.DEFAULT_MAX_DELETE_SHARE,
    now: NowOption = None,
    allow_simulated_time: SimulatedTimeOption = False,
    zones_dir: ZonesDirOption = None,
    ns: NsOption = None,
    timeout: PublishTimeoutOption = publishing.DEFAULT_TIMEOUT_SECONDS,
    wait: WaitOption = fleet.DEFAULT_CONVERGE_SECONDS,
    prove_all: ProveAllOption = False,
    as_json: JsonOption = False,
) -> None:
    """Apply the plan by RFC 2136 dynamic update with TSIG and prove the primary's answers;
    wait until every name server serves the new serial (exit 7 if one does not in time),
    then prove each one's answers."""
    moment = write_now(now, allow_simulated_time)
    if allow_insecure:
        warn("--allow-insecure: the proof accepts answers without DNSSEC validation")
    definition = find_definition(zone, zones_dir)
    tsig = publishing.read_tsig_key(tsig_key)
    address = parse_hostport(server)
    explicit = _name_servers(ns)
    workspace = workspace_for([definition])
    outcome = publishing.push(
        definition,
        out=workspace.out(out),
        server=address,
        tsig=tsig,
        now=moment,
        trust_anchors=trust_anchor,
        allow_insecure=allow_insecure,
        max_delete=max_delete,
        force=force,
        timeout=timeout,
        ns=explicit,
        wait=wait,
        prove_all=prove_all,
        keys=KeyStore(workspace.keys()),  # for the record of the last sign: no key is read
    )
    _print_pushed(outcome, as_json)
    if not outcome.ok:
        reports = (outcome.proof, *outcome.fleet_proofs)
        failed = sum(len(p.failures) for report in reports for p in report.proofs)
        fail(EXIT_VERIFICATION, f"pushed, but the proof failed for {failed} handle(s)")
    if not outcome.convergence.converged:
        fail(EXIT_DRIFT, outcome.convergence.summary())


def _print_pushed(outcome: publishing.PushReport, as_json: bool) -> None:
    result, sent, report = outcome.plan, outcome.sent, outcome.proof
    if as_json:
        emit_json(
            {
                "plan": result.to_mapping(),
                "updates_sent": sent,
                "checked_by": outcome.checked_by,
                "proof": report.to_mapping(),
                "name_servers": outcome.convergence.to_mapping(),
                "name_server_proofs": [proof.to_mapping() for proof in outcome.fleet_proofs],
                "ok": outcome.ok and outcome.convergence.converged,
            }
        )
    else:
        _print_plan(result)
        typer.echo(
            f"{result.zone}: {sent} update message(s) applied; server now matches "
            f"(read by {outcome.checked_by})"
        )
    print_verified(report, as_json)
    if outcome.convergence.converged and not as_json:
        typer.echo(outcome.convergence.summary())
    for proof in outcome.fleet_proofs:
        print_verified(proof, as_json)


FormatOption = Annotated[
    str,
    typer.Option(
        "--format", help="bind-include ($INCLUDE file), octodns (YAML), or well-known (JSON)."
    ),
]
ExportOutputOption = Annotated[
    Path | None,
    typer.Option("--output", help="Write here ('-' for stdout) instead of the default path."),
]


def export_command(
    zone: ZoneArgument,
    fmt: FormatOption,
    out: OutOption = None,
    output: ExportOutputOption = None,
    zones_dir: ZonesDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Export the signed alter1 records for other publishers: BIND, octoDNS or HTTPS."""
    try:
        kind = export.ExportFormat(fmt.lower())
    except ValueError as exc:
        known = ", ".join(str(f) for f in export.ExportFormat)
        raise UsageError(f"--format {fmt!r} is not one of {known}") from exc
    spec = load_zone(find_definition(zone, zones_dir))
    out = workspace_for([spec.path]).out(out)
    if output == Path("-"):
        typer.echo(export.render_export(export.load_export(spec, out), spec, kind), nl=False)
        return
    result = export.export_zone(spec, kind, out=out, output=output)
    if as_json:
        emit_json(result.to_mapping())
        return
    said = "wrote" if result.written else "unchanged"
    typer.echo(f"{spec.origin}: {result.records} alter1 record(s) as {kind}: {said} {result.path}")
