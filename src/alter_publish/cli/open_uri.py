"""``open``: resolve, validate and verify an ``alter:`` URI, then dispatch it (draft 4.4)."""

from __future__ import annotations

from typing import Annotated

import typer

from alter_publish.cli.options import (
    JsonOption,
    NowOption,
    RootHintsOption,
    SimulatedTimeOption,
    TrustAnchorOption,
    clock_now,
    parse_hostport,
    root_hints_from,
    write_now,
)
from alter_publish.cli.output import emit_json
from alter_publish.cli.resolve import PinStoreOption, ResolveTimeoutOption, SubstrateOption
from alter_publish.dns.anchors import read_trust_anchors
from alter_publish.dns.hints import default_root_anchors
from alter_publish.format.handles import parse_uri
from alter_publish.publish.opener import open_uri
from alter_publish.verify.dispatch import OpenSettings
from alter_publish.verify.resolve import DEFAULT_TIMEOUT_SECONDS

UriArgument = Annotated[
    str, typer.Argument(help="The alter: URI (or IRI), e.g. alter:~blake/inbox.")
]
OpenServerOption = Annotated[
    str | None,
    typer.Option(
        "--server",
        help="HOST:PORT of a name server or recursive resolver to ask (default: the "
        "zone's own servers, found from the root hints).",
    ),
]
LaunchOption = Annotated[
    bool,
    typer.Option(
        "--launch/--print",
        help="Hand the verified target to the platform opener (xdg-open, open, start), "
        "or print it (the default).",
    ),
]


def open_command(
    uri: UriArgument,
    launch_it: LaunchOption = False,
    server: OpenServerOption = None,
    substrate: SubstrateOption = None,
    trust_anchor: TrustAnchorOption = None,
    root_hints: RootHintsOption = None,
    pin_store: PinStoreOption = None,
    timeout: ResolveTimeoutOption = DEFAULT_TIMEOUT_SECONDS,
    now: NowOption = None,
    allow_simulated_time: SimulatedTimeOption = False,
    as_json: JsonOption = False,
) -> None:
    """Open an alter: URI: resolve, DNSSEC-validate from the root, verify, then dispatch.

    Only after the envelope verifies is its resolver (r=) joined with the surface path,
    query and fragment (docs/open.md) and printed or launched. Errors name the handle,
    never the surface path.
    """
    target = parse_uri(uri)
    settings = OpenSettings(
        substrate=substrate,
        now=write_now(now, allow_simulated_time) if pin_store else clock_now(now),
        anchors=read_trust_anchors(trust_anchor) if trust_anchor else default_root_anchors(),
        root_hints=root_hints_from(root_hints),
        server=parse_hostport(server) if server else None,
        timeout=timeout,
        pin_store=pin_store,
    )
    dispatch = open_uri(target, settings, launch_it=launch_it)
    result = dispatch.resolution
    if as_json:
        emit_json(
            {
                "ok": True,
                "handle": target.handle.ref,
                "owner": result.owner,
                "dnssec": str(result.dnssec),
                "epoch": result.envelope.epoch if result.envelope else None,
                "url": dispatch.url,
                "launched": launch_it,
                "pin": dispatch.pin,
            }
        )
    elif not launch_it:
        typer.echo(dispatch.url)
