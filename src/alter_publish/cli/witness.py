"""``log witness``, ``log witness-keygen`` and ``log cosign``: a minimal local witness
(c2sp.org/tlog-witness) and the client that collects cosignatures for a checkpoint."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from alter_publish.cli.log import log_verifier
from alter_publish.cli.options import JsonOption, NowOption
from alter_publish.cli.output import emit_json
from alter_publish.errors import VerificationError
from alter_publish.keys.witnesskey import generate_witness_key, load_witness_key
from alter_publish.publish.cosign import cosign_checkpoint
from alter_publish.publish.witness import Witness, WitnessState, witness_server
from alter_publish.verify.logaudit import load_policy

PORT_MAX = 65535


def log_witness(
    key: Annotated[
        Path, typer.Option("--key", help="The witness's signer key file (log witness-keygen).")
    ],
    state: Annotated[
        Path, typer.Option("--state", help="Where the latest cosigned checkpoints are kept.")
    ],
    logs: Annotated[
        list[str],
        typer.Option("--log", help="A log's verifier key, or a file holding it (repeatable)."),
    ],
    address: Annotated[str, typer.Option("--address", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port (0: any free port).", min=0, max=PORT_MAX)
    ] = 0,
    now: NowOption = None,
) -> None:
    """Run a witness: cosign each checkpoint that extends the last one it cosigned."""
    signer = load_witness_key(key)
    verifiers = [log_verifier(text, "--log") for text in logs]
    witness = Witness(
        signer,
        verifiers,
        WitnessState(state),
        (lambda: now) if now is not None else (lambda: int(time.time())),
    )
    with witness_server(witness, address, port) as (server, (bound_host, bound_port)):
        names = ", ".join(sorted(witness.logs))
        typer.echo(
            f"witness {signer.name} for {names} on http://{bound_host}:{bound_port}; "
            "Ctrl-C to stop",
            err=True,
        )
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            typer.echo("stopped", err=True)


def log_witness_keygen(
    name: Annotated[str, typer.Argument(help="The witness's key name, e.g. witness.example/w1.")],
    out: Annotated[Path, typer.Option("--out", help="The signer key file to write (0600).")],
    json_output: JsonOption = False,
) -> None:
    """Make a witness key; print its verifier key (cosignature/v1, for policies)."""
    vkey = generate_witness_key(name, out).verifier.to_text()
    if json_output:
        emit_json({"ok": True, "key": str(out), "vkey": vkey})
        return
    typer.echo(vkey)


def log_cosign(
    directory: Annotated[Path, typer.Argument(help="The log directory (build/<zone>/log).")],
    policy: Annotated[
        Path,
        typer.Option("--policy", help="A tlog-policy file: log, witnesses with URLs, quorum."),
    ],
    json_output: JsonOption = False,
) -> None:
    """Collect witness cosignatures into the log's checkpoint; fail below the quorum."""
    report = cosign_checkpoint(directory, load_policy(policy))
    if json_output:
        emit_json(
            {
                "ok": report.ok,
                "size": report.checkpoint.size,
                "cosigners": list(report.cosigners),
                "witnesses": {o.name: o.problem or "cosigned" for o in report.outcomes},
            }
        )
    else:
        for outcome in report.outcomes:
            typer.echo(f"{outcome.name}: {outcome.problem or 'cosigned'}")
    if not report.ok:
        found = ", ".join(report.cosigners) or "none"
        raise VerificationError(
            f"cosignatures do not meet the policy's quorum (valid: {found})",
            where=str(directory / "checkpoint"),
            category="quorum-not-met",
        )
    if not json_output:
        typer.echo(
            f"{directory}/checkpoint: size {report.checkpoint.size} cosigned by "
            + ", ".join(report.cosigners or ("nobody (quorum none)",))
        )
