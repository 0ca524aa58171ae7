"""``dnssec keygen|ds|status|rollover|step``: zone keys and their RFC 7583 rollovers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import dns.name
import typer

from alter_publish import pipeline
from alter_publish.cli.options import (
    JsonOption,
    KeysOption,
    NowOption,
    RootHintsOption,
    SimulatedTimeOption,
    TtlOption,
    ZonesDirOption,
    clock_now,
    definition_and_keys,
    keystore,
    root_hints_from,
    write_now,
)
from alter_publish.cli.output import emit_json, print_dnssec_status, print_next_step, warn
from alter_publish.definition.model import load_zone
from alter_publish.definition.workspace import (
    find_definition_if_any,
    workspace_for,
    zone_origin,
)
from alter_publish.dns.dnssec import ds_records
from alter_publish.dns.zonekeys import ZoneKey, ZoneKeyEntry, ZoneKeyRole
from alter_publish.errors import KeyStoreError, UsageError
from alter_publish.keys import commands as keyops
from alter_publish.keys.rollover import StepResult

DnssecZoneArgument = Annotated[
    str,
    typer.Argument(
        help="The zone: a name (example.com) or its definition file; the key store is that "
        "of the definition's workspace (here when there is no definition)."
    ),
]
ZoneOrFileArgument = Annotated[str, typer.Argument(help="The zone: a name or a definition file.")]


def _print_zone_keys(
    zone: str, found: Sequence[ZoneKey | ZoneKeyEntry], ttl: int, as_json: bool
) -> None:
    ds = ds_records(dns.name.from_text(zone), found, ttl)
    if as_json:
        emit_json({"zone": zone, "keys": [key.index_entry() for key in found], "ds": list(ds)})
        return
    for key in found:
        typer.echo(f"{zone}: {key.role.upper()} {key.tag} (Ed25519, algorithm 15)")
    for line in ds:
        typer.echo(f"{zone}: DS for the parent zone: {line}")


def _zone_and_keys(zone: str, keys: Path | None) -> tuple[str, Path]:
    """The zone's name and key store, from its definition when it has one."""
    definition = find_definition_if_any(zone)
    origin = zone_origin(zone) if definition is None else load_zone(definition).origin
    return origin, workspace_for([definition] if definition else []).keys(keys)


def dnssec_keygen(
    zone: DnssecZoneArgument,
    now: NowOption = None,
    allow_simulated_time: SimulatedTimeOption = False,
    ttl: TtlOption = 3600,
    keys: KeysOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a zone's KSK and ZSK (Ed25519) and print the DS to give the registrar."""
    moment = write_now(now, allow_simulated_time)
    origin, store = _zone_and_keys(zone, keys)
    created = pipeline.dnssec_keygen(origin, keys=keystore(store), now=moment)
    _print_zone_keys(origin, created, ttl, as_json)


def dnssec_ds(
    zone: DnssecZoneArgument,
    ttl: TtlOption = 3600,
    keys: KeysOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the zone's DNSSEC keys in use and the DS records the parent zone should hold."""
    origin, store = _zone_and_keys(zone, keys)
    found = keystore(store).zones.entries(origin)
    if not found:
        raise KeyStoreError(
            f"no DNSSEC keys; run 'alter-publish dnssec keygen {origin}'", where=origin
        )
    _print_zone_keys(origin, found, ttl, as_json)


def dnssec_status(
    zone: ZoneOrFileArgument,
    now: NowOption = None,
    keys: KeysOption = None,
    zones_dir: ZonesDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the zone's DNSSEC keys, their states, and the running rollover's next step."""
    moment = clock_now(now)
    definition, store = definition_and_keys(zone, zones_dir, keys)
    status = keyops.dnssec_status(str(definition), keys=store)
    if as_json:
        emit_json(status.to_mapping(moment))
        return
    print_dnssec_status(status, moment)
    for line in status.ds:
        typer.echo(f"{status.zone}: DS the parent should hold: {line}")


def _print_step(result: StepResult, now: int, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_mapping())
        return
    zone, upcoming = result.zone, result.next_step
    for line in result.changed:
        typer.echo(f"{zone}: {line}")
    for line in result.ds_submit:
        typer.echo(f"{zone}: the parent should now hold: {line}")
    for line in result.ds_remove:
        typer.echo(f"{zone}: withdraw from the parent: {line}")
    typer.echo("next: alter-publish sign (it publishes these key states)")
    print_next_step(zone, "then", upcoming, now, "rollover complete")


def dnssec_rollover(
    zone: ZoneOrFileArgument,
    role: Annotated[
        str, typer.Argument(help="zsk (pre-publication) or ksk (double-DS).", show_default=False)
    ],
    now: NowOption = None,
    allow_simulated_time: SimulatedTimeOption = False,
    keys: KeysOption = None,
    zones_dir: ZonesDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Start a ZSK or KSK rollover (RFC 7583); 'dnssec step' takes it on."""
    try:
        key_role = ZoneKeyRole(role.lower())
    except ValueError as exc:
        raise UsageError(f"role {role!r} is not zsk or ksk") from exc
    moment = write_now(now, allow_simulated_time)
    definition, store = definition_and_keys(zone, zones_dir, keys)
    result = keyops.dnssec_rollover(str(definition), key_role, keys=store, now=moment)
    _print_step(result, moment, as_json)


def dnssec_step(
    zone: ZoneOrFileArgument,
    ds_published: Annotated[
        bool,
        typer.Option(
            "--ds-published",
            help="Confirm the parent zone now serves the DS set the step waits for: the new "
            "KSK's DS added or, at the end of a KSK rollover, the old one withdrawn (every "
            "parent name server is asked first).",
        ),
    ] = False,
    root_hints: RootHintsOption = None,
    no_parent_check: Annotated[
        bool,
        typer.Option(
            "--no-parent-check",
            help="Take --ds-published on your word, asking no parent server (offline).",
        ),
    ] = False,
    now: NowOption = None,
    allow_simulated_time: SimulatedTimeOption = False,
    keys: KeysOption = None,
    zones_dir: ZonesDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Take the running rollover's next step, once RFC 7583's wait is over."""
    moment = write_now(now, allow_simulated_time)
    definition, store = definition_and_keys(zone, zones_dir, keys)
    if no_parent_check and not ds_published:
        raise UsageError(
            "--no-parent-check is for --ds-published (the only step that asks the parent)"
        )
    if no_parent_check:
        warn("WARNING: --no-parent-check: no parent name server was asked for the DS set")
    result = pipeline.dnssec_step(
        definition,
        keys=store,
        now=moment,
        ds_published=ds_published,
        hints=root_hints_from(root_hints),
        parent_check=not no_parent_check,
    )
    _print_step(result, moment, as_json)
