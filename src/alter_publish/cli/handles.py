"""Handle keys: ``keygen``, ``rotate``, ``revoke`` and ``keys status``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from alter_publish import pipeline
from alter_publish.cli.options import (
    HandleArgument,
    JsonOption,
    KeysOption,
    NowOption,
    SimulatedTimeOption,
    ZoneNameOption,
    ZonesArgument,
    ZonesDirOption,
    clock_now,
    definition_and_keys,
    keystore,
    write_now,
)
from alter_publish.cli.output import ago, emit_json, print_dnssec_status, warn
from alter_publish.definition.model import load_zone
from alter_publish.definition.workspace import (
    find_definition,
    find_zone_files,
    git_exposure,
    workspace_for,
)
from alter_publish.errors import UsageError
from alter_publish.format.envelope import b64url
from alter_publish.format.handles import parse_handle
from alter_publish.keys import commands as keyops
from alter_publish.keys.lifecycle import RotateResult, RotationMode


def keygen(
    handle: HandleArgument,
    zone: ZoneNameOption,
    secret_out: Annotated[
        Path | None,
        typer.Option("--secret-out", help="Write the revocation secret here (keep offline)."),
    ] = None,
    keys: KeysOption = None,
    zones_dir: ZonesDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a handle's first key (epoch 1) and its revocation secret."""
    spec = load_zone(find_definition(zone, zones_dir))
    store = keystore(workspace_for([spec.path]).keys(keys))
    key = pipeline.keygen(parse_handle(handle), spec=spec, keys=store, secret_out=secret_out)
    _warn_exposed(secret_out)
    key_path, secret_path = store.paths(spec.origin, key.handle, key.epoch)
    secret_path = secret_out or secret_path
    fields = {
        "handle": key.handle.ref,
        "epoch": key.epoch,
        "key_id": key.key_id,
        "public_key": b64url(key.public_key),
        "private_key_file": str(key_path),
        "revocation_secret_file": str(secret_path),
    }
    if as_json:
        emit_json(fields)
    else:
        typer.echo(f"{key.handle.ref}: epoch {key.epoch} key {key.key_id} written to {key_path}")
        typer.echo(f"{key.handle.ref}: revocation secret in {secret_path}; keep a copy offline")


def _warn_exposed(secret: Path | None) -> None:
    """One WARNING line when a revocation secret landed where git would commit it."""
    exposure = git_exposure(secret) if secret is not None else None
    if exposure is not None:
        warn(f"WARNING: {exposure}")


CompromisedOption = Annotated[
    bool,
    typer.Option(
        "--compromised",
        help="The current key is compromised: revoke its epoch, publish the next without psig.",
    ),
]
LostOption = Annotated[
    bool,
    typer.Option(
        "--lost",
        help="The current key is lost: publish the next epoch without psig "
        "(revoked too when its secret is at hand).",
    ),
]
NewSecretOutOption = Annotated[
    Path | None,
    typer.Option("--secret-out", help="Write the new revocation secret here (keep offline)."),
]
CurrentSecretOption = Annotated[
    Path | None,
    typer.Option("--secret-file", help="The current epoch's revocation secret (offline copy)."),
]


def rotate(
    handle: HandleArgument,
    zone: ZoneNameOption,
    compromised: CompromisedOption = False,
    lost: LostOption = False,
    secret_out: NewSecretOutOption = None,
    secret_file: CurrentSecretOption = None,
    now: NowOption = None,
    allow_simulated_time: SimulatedTimeOption = False,
    keys: KeysOption = None,
    zones_dir: ZonesDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Make a handle's next key epoch; the next sign publishes it (psig by the old key)."""
    mode = _rotation_mode(compromised=compromised, lost=lost)
    moment = write_now(now, allow_simulated_time)
    definition, store = definition_and_keys(zone, zones_dir, keys)
    result = keyops.rotate_handle(
        str(definition),
        handle,
        keys=store,
        now=moment,
        mode=mode,
        secret_out=secret_out,
        secret_file=secret_file,
    )
    _warn_exposed(secret_out)
    if as_json:
        emit_json(result.to_mapping())
    else:
        _print_rotated(result, definition)


def _print_rotated(result: RotateResult, definition: Path) -> None:
    ref = result.handle.ref
    if result.revocation is not None:
        typer.echo(f"{ref}: revocation of epoch {result.revocation.epoch} queued for sign")
    continuity = (
        f"psig by epoch {result.previous_epoch}"
        if str(result.rotation.continuity) == "psig"
        else "no psig (pinned verifiers must re-pin out of band)"
    )
    typer.echo(f"{ref}: epoch {result.key.epoch} key {result.key.key_id} created; {continuity}")
    typer.echo(f"{ref}: revocation secret in {result.secret_file}; keep a copy offline")
    typer.echo(f"next: alter-publish sign {definition}")


def _rotation_mode(*, compromised: bool, lost: bool) -> RotationMode:
    """The rotation ``--compromised`` / ``--lost`` ask for (at most one of them)."""
    if compromised and lost:
        raise UsageError("give at most one of --compromised and --lost")
    if compromised:
        return RotationMode.COMPROMISED
    return RotationMode.LOST if lost else RotationMode.SCHEDULED


EpochOption = Annotated[
    int | None,
    typer.Option(
        "--epoch",
        help="The past epoch to revoke (the current one needs 'rotate --compromised').",
        min=1,
    ),
]
PastSecretOption = Annotated[
    Path | None,
    typer.Option("--secret-file", help="That epoch's revocation secret (offline copy)."),
]


def revoke(
    handle: HandleArgument,
    zone: ZoneNameOption,
    epoch: EpochOption = None,
    secret_file: PastSecretOption = None,
    now: NowOption = None,
    allow_simulated_time: SimulatedTimeOption = False,
    keys: KeysOption = None,
    zones_dir: ZonesDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Queue the revocation of a past epoch; it needs only that epoch's revocation secret."""
    moment = write_now(now, allow_simulated_time)
    definition, store = definition_and_keys(zone, zones_dir, keys)
    ref, revoked, new = keyops.revoke_handle(
        str(definition),
        handle,
        keys=store,
        now=moment,
        epoch=epoch,
        secret_file=secret_file,
    )
    if as_json:
        emit_json({"handle": ref, "epoch": revoked, "queued": new})
        return
    said = "queued" if new else "was already queued or published"
    typer.echo(f"{ref}: revocation of epoch {revoked} {said}")
    typer.echo(f"next: alter-publish sign {definition}")


def keys_status(
    zones: ZonesArgument = None,
    now: NowOption = None,
    keys: KeysOption = None,
    as_json: JsonOption = False,
) -> None:
    """Per handle: epochs, key ids, states, expiry, next action; per zone: DNSSEC keys."""
    moment = clock_now(now)
    zone_files = find_zone_files(zones or [])
    report = keyops.keys_status(
        zone_files, keys=keystore(workspace_for(zone_files).keys(keys)), now=moment
    )
    if as_json:
        emit_json({"now": moment, "zones": [zone.to_mapping(moment) for zone in report]})
        return
    for zone in report:
        for status in zone.handles:
            epochs = ", ".join(
                f"{e.epoch}:{e.key_id or '?'}:{e.state}{'' if e.published else '(unpublished)'}"
                for e in status.epochs
            )
            typer.echo(f"{zone.zone}: {status.handle}: epochs [{epochs or 'none'}]")
            typer.echo(
                f"{zone.zone}: {status.handle}: expires {ago(status.expires, moment)}; "
                f"next: {status.next_action}"
            )
        if zone.dnssec is not None:
            print_dnssec_status(zone.dnssec, moment)
