"""``log verify``, ``log consistency`` and ``log prove``: audit a zone's published
transparency log; ``log rotate-key``: a new log key."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Annotated

import typer

from alter_publish.cli.options import (
    HandleArgument,
    JsonOption,
    KeysOption,
    OutOption,
    ZoneNameOption,
    ZonesDirOption,
    definition_and_keys,
)
from alter_publish.cli.output import emit_json
from alter_publish.definition.model import load_zone
from alter_publish.definition.workspace import workspace_for
from alter_publish.errors import UsageError, VerificationError
from alter_publish.format.note import COSIGNATURE_V1_TYPE, Verifier
from alter_publish.pipeline.logproof import prove_envelope
from alter_publish.verify.logaudit import audit_log, consistency, load_policy

KeyOption = Annotated[
    str,
    typer.Option("--key", help="The log's verifier key (name+hex+base64), or a file holding it."),
]


def log_verifier(key: str, option: str = "--key") -> Verifier:
    """The log's verifier key (type 0x01) given inline or in a file to ``option``."""
    text = key
    if "+" not in key:
        try:
            text = Path(key).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise UsageError(f"cannot read: {exc.strerror}", where=key) from exc
    try:
        verifier = Verifier.parse(text)
    except VerificationError as exc:
        raise UsageError(exc.what, where=option) from exc
    if verifier.algorithm == COSIGNATURE_V1_TYPE:
        raise UsageError(
            f"{verifier.name} is a witness cosignature key (type 0x04), not a log key",
            where=option,
        )
    return verifier


def log_verify(
    directory: Annotated[Path, typer.Argument(help="The log directory (build/<zone>/log).")],
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            help="The log's verifier key (name+hex+base64), or a file holding it "
            "(default: the --policy's log of the checkpoint's origin).",
        ),
    ] = None,
    older: Annotated[
        list[Path] | None,
        typer.Option("--older", help="An older checkpoint the log must extend (repeatable)."),
    ] = None,
    policy: Annotated[
        Path | None,
        typer.Option(
            "--policy",
            help="A tlog-policy file: the checkpoint's cosignatures must meet its quorum.",
        ),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Recompute every tile and the root from the entries and check the checkpoint."""
    audit = audit_log(
        directory,
        None if key is None else log_verifier(key),
        tuple(older or ()),
        None if policy is None else load_policy(policy),
    )
    checkpoint = audit.checkpoint
    if json_output:
        emit_json(
            {
                "ok": True,
                "origin": checkpoint.origin,
                "size": checkpoint.size,
                "root": base64.b64encode(checkpoint.root).decode(),
                "tiles": audit.tiles,
                "bundles": audit.bundles,
                "extends": list(audit.extends),
                "cosigners": list(audit.cosigners),
            }
        )
        return
    typer.echo(
        f"{directory}: ok: {checkpoint.origin} size {checkpoint.size}, "
        f"{audit.tiles} tiles and {audit.bundles} entry bundles recomputed"
        + (f", extends sizes {', '.join(map(str, audit.extends))}" if audit.extends else "")
        + (f", cosigned by {', '.join(audit.cosigners)}" if audit.cosigners else "")
    )


def log_consistency(
    old: Annotated[Path, typer.Argument(help="The older checkpoint file.")],
    new: Annotated[Path, typer.Argument(help="The newer checkpoint file.")],
    key: KeyOption,
    tiles: Annotated[
        Path, typer.Option("--tiles", help="The log directory the proof is made from.")
    ],
    json_output: JsonOption = False,
) -> None:
    """Check that a newer checkpoint extends an older one."""
    added = consistency(old, new, log_verifier(key), tiles)
    if json_output:
        emit_json({"ok": True, "added": added})
        return
    typer.echo(f"{new}: ok: extends {old} by {added} entries")


def log_prove(
    handle: HandleArgument,
    zone: ZoneNameOption,
    epoch: Annotated[
        int | None,
        typer.Option("--epoch", help="An older epoch: its latest envelope, proven from the tiles."),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option("--key", help="The log's verifier key (default: from the key store)."),
    ] = None,
    keys: KeysOption = None,
    zones_dir: ZonesDirOption = None,
    out: OutOption = None,
    json_output: JsonOption = False,
) -> None:
    """Print an envelope's C2SP tlog-proof, verified against its signed checkpoint."""
    definition, store = definition_and_keys(zone, zones_dir, keys)
    spec = load_zone(definition)
    verifier = log_verifier(key) if key else store.logs.require_verifier(spec.origin)
    found = prove_envelope(spec, workspace_for([definition]).out(out), verifier, handle, epoch)
    if json_output:
        emit_json({"ok": True, **found.to_mapping()})
        return
    typer.echo(found.proof, nl=False)


def log_rotate_key(
    zone: Annotated[str, typer.Argument(help="The zone (its name or definition file).")],
    keys: KeysOption = None,
    zones_dir: ZonesDirOption = None,
    json_output: JsonOption = False,
) -> None:
    """Make a new log key (the origin stays); the next checkpoint is signed by both keys."""
    definition, store = definition_and_keys(zone, zones_dir, keys)
    origin = load_zone(definition).origin
    old = store.logs.signer(origin, create=False).verifier.to_text()
    new = store.logs.rotate(origin).verifier.to_text()
    if json_output:
        emit_json({"ok": True, "zone": origin, "old": old, "new": new})
        return
    typer.echo(f"{origin}: new log key {new}")
    typer.echo(f"{origin}: retired {old}; the next checkpoint is signed by both")
