"""``check``: what the world sees of a published zone (the parent's DS and delegation,
every name server, each resolver), against what ``sign`` wrote."""

from __future__ import annotations

from typing import Annotated

import typer

from alter_publish import pipeline
from alter_publish.cli.options import (
    JsonOption,
    KeysOption,
    NowOption,
    OutOption,
    RootHintsOption,
    TrustAnchorOption,
    clock_now,
    definition_and_keys,
    parse_hostport,
    root_hints_from,
)
from alter_publish.cli.output import emit_json, fail
from alter_publish.definition.workspace import workspace_for
from alter_publish.dns.anchors import read_trust_anchors
from alter_publish.dns.hints import default_root_anchors
from alter_publish.errors import EXIT_DRIFT, EXIT_OK
from alter_publish.verify.world import WORLD_TIMEOUT_SECONDS

ResolverOption = Annotated[
    list[str] | None,
    typer.Option(
        "--resolver",
        help="A recursive resolver to check the zone through (repeat for more).",
    ),
]


def check(
    zone: Annotated[str, typer.Argument(help="The zone: its name or its definition's path.")],
    resolver: ResolverOption = None,
    trust_anchor: TrustAnchorOption = None,
    root_hints: RootHintsOption = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            min=0.1,
            help="Seconds to wait for each try of each question (two tries over UDP).",
        ),
    ] = WORLD_TIMEOUT_SECONDS,
    primary: Annotated[
        str | None,
        typer.Option(
            "--primary",
            metavar="HOST:PORT",
            help="The zone is signed by this primary (as push publishes it): expect its "
            "serial and the DS of its keys, not sign's.",
        ),
    ] = None,
    out: OutOption = None,
    keys: KeysOption = None,
    now: NowOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check the published zone at every parent and zone name server and each resolver."""
    definition, store = definition_and_keys(zone, None, keys)
    report = pipeline.check_world(
        definition,
        out=workspace_for([definition]).out(out),
        keys=store,
        now=clock_now(now),
        hints=root_hints_from(root_hints),
        anchors=read_trust_anchors(trust_anchor) if trust_anchor else default_root_anchors(),
        resolvers=[parse_hostport(text) for text in resolver or []],
        timeout=timeout,
        primary=parse_hostport(primary) if primary else None,
    )
    if as_json:
        emit_json(report.to_mapping())
    else:
        for finding in report.findings:
            typer.echo(finding.line(report.zone))
        servers = sum(len(server.addresses) for server in report.located.servers)
        parents = sum(len(server.addresses) for server in report.located.parent_servers)
        typer.echo(
            f"{report.zone}: serial {report.serial}; {servers} name server address(es) and "
            f"{parents} of the parent {report.located.parent} checked; "
            f"{len(report.findings)} finding(s)"
        )
    code = report.exit_code
    if code == EXIT_DRIFT:
        fail(code, f"{report.zone}: some name servers have not caught up yet")
    if code != EXIT_OK:
        errors = sum(finding.severity == "error" for finding in report.findings)
        fail(code, f"{report.zone}: {errors} error(s) in what the world sees")
