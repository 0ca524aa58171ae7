"""``resolve`` and ``verify-record``: what any verifier of alter1 records does."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from alter_publish.cli.log import log_verifier
from alter_publish.cli.options import (
    JsonOption,
    NowOption,
    RootHintsOption,
    SimulatedTimeOption,
    clock_now,
    parse_hostport,
    root_hints_from,
    write_now,
)
from alter_publish.cli.output import emit_json, envelope_mapping, fail, print_envelope, warn
from alter_publish.dns.anchors import read_trust_anchors
from alter_publish.dns.hints import default_root_anchors
from alter_publish.errors import EXIT_VERIFICATION, UsageError, VerificationError
from alter_publish.format.handles import AlterURI, parse_reference
from alter_publish.format.recordtext import record_owner, verify_pasted
from alter_publish.verify.logaudit import load_policy
from alter_publish.verify.logcheck import LOG_FROM_DNS, LogSource
from alter_publish.verify.pinning import PinnedResult, resolve_pinned
from alter_publish.verify.resolve import DEFAULT_TIMEOUT_SECONDS

ReferenceArgument = Annotated[str, typer.Argument(help="An alter: URI or a ~handle.")]
ResolveServerOption = Annotated[
    str, typer.Option("--server", help="HOST:PORT of the name server to ask.")
]
SubstrateOption = Annotated[
    str | None, typer.Option("--substrate", help="Substrate zone for non-domain handles.")
]
ResolveInsecureOption = Annotated[
    bool,
    typer.Option("--allow-insecure", help="Accept answers that are not DNSSEC-validated."),
]
ResolveTimeoutOption = Annotated[
    float,
    typer.Option(
        "--timeout",
        help="Seconds to wait for a reply; an unanswered query is sent once more.",
        min=0.1,
    ),
]
ResolveTrustAnchorOption = Annotated[
    Path | None,
    typer.Option(
        "--trust-anchor",
        help="File of DS or DNSKEY records to validate DNSSEC to, instead of the IANA root "
        "anchors shipped with alter-publish (e.g. build/<zone>.ds for a loopback server).",
    ),
]
PinStoreOption = Annotated[
    Path | None,
    typer.Option(
        "--pin-store",
        help="Pin (handle, epoch, key) on first use in this file and enforce it after: "
        "rollback, key-mismatch and continuity (psig) checks.",
    ),
]

LogOption = Annotated[
    str | None,
    typer.Option(
        "--log",
        help="Check the envelope against its zone's signed transparency log: a tile "
        "directory (build/<zone>/log), or 'dns' for the checkpoint at _alter-log.<zone>. "
        "(needs --log-tiles). With --pin-store, each checkpoint must extend the last one.",
    ),
]
LogKeyOption = Annotated[
    str | None,
    typer.Option("--log-key", help="The log's verifier key (name+hex+base64), or a file of it."),
]
LogTilesOption = Annotated[
    Path | None,
    typer.Option("--log-tiles", help="The tile directory the proofs are made from (--log dns)."),
]
LogPolicyOption = Annotated[
    Path | None,
    typer.Option(
        "--policy",
        help="A tlog-policy file (--log DIR): the checkpoint's cosignatures must meet its "
        "quorum; with --pin-store only such checkpoints are pinned.",
    ),
]


def _log_source(
    log: str | None, key: str | None, tiles: Path | None, policy: Path | None
) -> LogSource | None:
    """What ``--log``, ``--log-key``, ``--log-tiles`` and ``--policy`` ask for."""
    if log is None:
        if key is not None or tiles is not None or policy is not None:
            raise UsageError("--log-key, --log-tiles and --policy go with --log")
        return None
    if key is None:
        raise UsageError("--log needs --log-key (the log's verifier key)")
    if log == LOG_FROM_DNS and tiles is None:
        raise UsageError("--log dns needs --log-tiles (the proofs are made from the tiles)")
    if log == LOG_FROM_DNS and policy is not None:
        # The _alter-log record is the log-signed checkpoint: cosignatures come later.
        raise UsageError("--policy needs --log DIR (the DNS checkpoint carries no cosignatures)")
    return LogSource(
        log,
        tiles if tiles is not None else Path(log),
        log_verifier(key, "--log-key"),
        None if policy is None else load_policy(policy),
    )


def resolve(
    reference: ReferenceArgument,
    server: ResolveServerOption,
    substrate: SubstrateOption = None,
    now: NowOption = None,
    trust_anchor: ResolveTrustAnchorOption = None,
    allow_insecure: ResolveInsecureOption = False,
    timeout: ResolveTimeoutOption = DEFAULT_TIMEOUT_SECONDS,
    pin_store: PinStoreOption = None,
    root_hints: RootHintsOption = None,
    allow_simulated_time: SimulatedTimeOption = False,
    log: LogOption = None,
    log_key: LogKeyOption = None,
    log_tiles: LogTilesOption = None,
    policy: LogPolicyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Resolve and verify a handle against any name server (spec section 7).

    Answers are validated from the IANA root anchors (shipped) unless --trust-anchor
    names others (the zone's own DS for a server not reached from the root). With a
    trust anchor above the handle's zone, the chain of trust is followed down to it,
    as ``delv +vtrace`` does; through a recursive resolver, a
    SERVFAIL is ``bogus`` with the resolver's reason and a secure answer it did not
    mark AD is warned about.
    """
    target = parse_reference(reference)
    source = _log_source(log, log_key, log_tiles, policy)
    moment = write_now(now, allow_simulated_time) if pin_store else clock_now(now)
    if allow_insecure:
        warn("--allow-insecure: accepting answers without DNSSEC validation")
    outcome = resolve_pinned(
        target,
        server=parse_hostport(server),
        substrate=substrate,
        now=moment,
        pin_store=pin_store,
        anchors=read_trust_anchors(trust_anchor) if trust_anchor else default_root_anchors(),
        allow_insecure=allow_insecure,
        timeout=timeout,
        root_hints=root_hints_from(root_hints),
        log=source,
    )
    if outcome.resolution.warning:
        warn(f"WARNING: {outcome.resolution.owner}: {outcome.resolution.warning}")
    _print_resolved(target, outcome, pinning=pin_store is not None, as_json=as_json)


def _print_resolved(
    target: AlterURI, outcome: PinnedResult, *, pinning: bool, as_json: bool
) -> None:
    result = outcome.resolution
    fields: dict[str, Any] = {"handle": target.handle.ref, "owner": result.owner}
    if result.envelope is not None:
        fields = envelope_mapping(result.envelope, result.owner)
    fields.update(
        {
            "ok": result.ok,
            "dnssec": str(result.dnssec),
            "category": result.category,
            "detail": result.detail,
            "path": "/".join(target.path) or None,
            "query": target.query,
            "fragment": target.fragment,
        }
    )
    if result.warning:
        fields["warning"] = result.warning
    if pinning:
        fields["pin"] = outcome.pin
    if outcome.log is not None:
        found = outcome.log
        fields["log"] = {
            "origin": found.origin,
            "checkpoint_size": found.size,
            "index": found.index,
            "source": found.source,
            "pin": found.pin,
        }
    if as_json:
        emit_json(fields)
    elif result.ok:
        print_envelope(fields)
        typer.echo(f"{'dnssec:':12} {result.dnssec}")
        if outcome.pin is not None and result.envelope is not None:
            typer.echo(f"{'pin:':12} {outcome.pin}")
        if outcome.log is not None:
            found = outcome.log
            pin = f", checkpoint {found.pin}" if found.pin else ""
            typer.echo(f"{'log:':12} entry {found.index} in {found.origin} size {found.size}{pin}")
    if not result.ok:
        fail(
            EXIT_VERIFICATION,
            f"{result.owner}: {target.handle.ref}: {result.category}: {result.detail}",
        )


def verify_record_command(
    text: Annotated[str, typer.Argument(help="Record text; quoted TXT strings are joined.")],
    owner: Annotated[str, typer.Option("--owner", help="Owner name the record was found at.")],
    substrate: Annotated[
        str | None,
        typer.Option("--substrate", help="Substrate zone (default: inferred from the owner)."),
    ] = None,
    now: NowOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check one record by hand, as pasted from dig (spec section 6)."""
    owner_name = record_owner(owner)
    try:
        envelope = verify_pasted(text, owner=owner_name, substrate=substrate, now=clock_now(now))
    except VerificationError as exc:
        if as_json:
            emit_json(
                {"ok": False, "owner": owner_name, "category": exc.category, "detail": exc.what}
            )
        raise
    fields = envelope_mapping(envelope, owner_name)
    if as_json:
        emit_json({"ok": True, **fields})
    else:
        print_envelope(fields)
        typer.echo(f"{'result:':12} valid")
