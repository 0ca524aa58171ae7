"""The ``alter-publish`` command: parse options, make one library call, print, exit.

Every error becomes one stderr line and a documented exit code (README, "Exit
codes"); ``--debug`` re-raises instead, for a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Final, NoReturn

import dns.name
import typer

from alter_publish import pipeline
from alter_publish.cli.progress import progress_for
from alter_publish.definition.model import format_span, format_utc, load_zone
from alter_publish.definition.workspace import find_definition_if_any, git_exposure, workspace_for
from alter_publish.dns.anchors import read_trust_anchors
from alter_publish.dns.dnssec import ds_records
from alter_publish.dns.server import ZoneServer
from alter_publish.dns.validation import DNSSECStatus
from alter_publish.dns.wirezone import WireZone
from alter_publish.dns.zonekeys import ZoneKey, ZoneKeyEntry, ZoneKeyRole
from alter_publish.dns.zonetext import txt_text
from alter_publish.errors import (
    EXIT_DRIFT,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_VERIFICATION,
    AlterError,
    KeyStoreError,
    UnsupportedZoneError,
    UsageError,
    VerificationError,
)
from alter_publish.format.envelope import CLOCK_SKEW_SECONDS, Envelope, b64url, verify_record
from alter_publish.format.handles import Handle, normalize_domain, parse_handle, parse_reference
from alter_publish.keys import commands as keyops
from alter_publish.keys.lifecycle import RotationMode
from alter_publish.keys.pem import passphrase_from_env
from alter_publish.keys.rollover import NextStep, StepResult
from alter_publish.keys.store import KeyStore
from alter_publish.parallel import default_jobs
from alter_publish.pipeline.clock import SIMULATED_TIME_FLAG, check_now
from alter_publish.publish import export
from alter_publish.publish import push as publishing
from alter_publish.verify.pins import PinStore
from alter_publish.verify.proof import ProofReport
from alter_publish.verify.resolve import resolve as resolve_handle
from alter_publish.version import __version__

#: ``-h`` as well as ``--help``, on every command.
HELP_SETTINGS: Final = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    name="alter-publish",
    context_settings=HELP_SETTINGS,
    help="Sign, render and prove alter1 identity records (_alter TXT) for the zones you own.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

NowOption = Annotated[
    int | None,
    typer.Option("--now", help="Unix time to act at (default: the system clock).", min=0),
]
SimulatedTimeOption = Annotated[
    bool,
    typer.Option(
        SIMULATED_TIME_FLAG,
        help=f"Write at a --now more than {CLOCK_SKEW_SECONDS}s from the system clock, or with "
        "a clock before this release (tests, rehearsals): outputs may not be valid now.",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
OutOption = Annotated[
    Path | None,
    typer.Option("--out", help="Output directory (default: build/ of the zone's workspace)."),
]
KeysOption = Annotated[
    Path | None,
    typer.Option("--keys", help="Key store directory (default: keys/ of the zone's workspace)."),
]
TrustAnchorOption = Annotated[
    Path | None,
    typer.Option(
        "--trust-anchor",
        help="File of DS or DNSKEY records to validate DNSSEC to (e.g. build/<zone>.ds).",
    ),
]
ZonesDirOption = Annotated[
    Path | None,
    typer.Option(
        "--zones",
        help="Where zone definitions live (default: zones/ here or in the nearest parent "
        "directory that has the zone's definition).",
    ),
]
ZoneNameOption = Annotated[
    str,
    typer.Option(
        "--zone",
        help="The zone: a name (example.com, found as zones/<name>.yaml) or its definition file.",
    ),
]
ZonesArgument = Annotated[
    list[Path] | None,
    typer.Argument(
        help="Zone definitions or zone names (default: zones/*.yaml, here or in the nearest "
        "parent directory having any).",
        show_default=False,
    ),
]


def _now(value: int | None) -> int:
    return int(time.time()) if value is None else value


def _write_now(value: int | None, allow_simulated: bool) -> int:
    """The time a command that writes acts at; refuses one the clock does not vouch for."""
    return check_now(value, int(time.time()), allow_simulated=allow_simulated)


def _keystore(root: Path) -> KeyStore:
    return KeyStore(root=root, passphrase=passphrase_from_env(os.environ))


def _emit_json(document: Any) -> None:
    typer.echo(_json_text(document, json.JSONEncoder(sort_keys=True).encode))


#: Lists longer than this print one compact item per line (a sign of 100,000 handles
#: reports 100,000 proofs: ``indent=`` would run the pure-Python encoder over them).
_JSON_LONG_LIST = 64


def _json_text(value: Any, encode: Callable[[Any], str], level: int = 0) -> str:
    """``value`` as JSON indented by two spaces (keys sorted), long lists a line per item."""
    pad = "  " * level
    if isinstance(value, dict) and value:
        members = (
            f"{pad}  {encode(key)}: {_json_text(item, encode, level + 1)}"
            for key, item in sorted(value.items())
        )
        return "{\n" + ",\n".join(members) + f"\n{pad}}}"
    if isinstance(value, list) and value:
        long = len(value) > _JSON_LONG_LIST
        items = (
            f"{pad}  {encode(item) if long else _json_text(item, encode, level + 1)}"
            for item in value
        )
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    return encode(value)


def _warn(message: str) -> None:
    typer.echo(f"alter-publish: {message}", err=True)


def _print_proof_failures(report: ProofReport) -> None:
    for failure in report.failures:
        typer.echo(
            f"{failure.owner}: {failure.handle}: {failure.category}: {failure.detail}", err=True
        )


def _envelope_mapping(envelope: Envelope, owner: str) -> dict[str, Any]:
    return {**envelope.to_mapping(), "owner": owner}


def _print_envelope(fields: dict[str, Any]) -> None:
    for key in ("handle", "tier", "owner", "epoch", "key_id", "expires_at", "resolver", "path"):
        if key in fields:
            value = fields[key]
            typer.echo(f"{key + ':':12} {'-' if value is None else value}")


@app.command()
def sign(
    zones: ZonesArgument = None,
    out: OutOption = None,
    now: NowOption = None,
    allow_simulated_time: SimulatedTimeOption = False,
    create_keys: Annotated[
        bool,
        typer.Option(
            "--create-keys",
            help="Create epoch-1 keys for handles that have none, and DNSSEC keys for zones.",
        ),
    ] = False,
    no_verify: Annotated[
        bool, typer.Option("--no-verify", help="Skip the loopback proof (outputs are unproven).")
    ] = False,
    templates: Annotated[
        Path | None,
        typer.Option(
            "--templates",
            help="Directory with zone.j2 (default: templates/ of the zone's workspace when it "
            "exists, else the built-in ones).",
        ),
    ] = None,
    keys: KeysOption = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Change nothing; exit 7 if a real run would change any output (for CI).",
        ),
    ] = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            min=1,
            help="Processes that sign and verify (default: every CPU); outputs are identical.",
        ),
    ] = None,
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="Do the whole job even when nothing or only a few handles changed (by "
            "default those are patched into the last proven run's outputs: same bytes).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Sign every handle, DNSSEC-sign the zone, prove it on loopback, then write the outputs."""
    moment = _now(now) if check else _write_now(now, allow_simulated_time)
    if no_verify:
        _warn("--no-verify: outputs are written WITHOUT the loopback proof")
    zone_files = pipeline.find_zone_files(zones or [])
    where = workspace_for(zone_files)
    with progress_for(as_json=as_json) as progress:
        report = pipeline.sign(
            zone_files,
            out=where.out(out),
            keys=_keystore(where.keys(keys)),
            now=moment,
            create_keys=create_keys,
            templates=where.templates(templates),
            verify=not no_verify,
            check=check,
            jobs=jobs or default_jobs(),
            progress=progress,
            incremental=not full,
        )
    for warning in report.warnings:
        _warn(f"WARNING: {warning}")
    if as_json:
        _emit_json(report.to_mapping())
    for zone in report.zones:
        if zone.proof is not None:
            _print_proof_failures(zone.proof)
        if as_json:
            continue
        proven = "proof skipped"
        if zone.proof is not None:
            proof = zone.proof
            passed = len(proof.results) - sum(1 for r in proof.results if not r.ok)
            statuses = sorted({result.dnssec for result in proof.results}) or ["-"]
            proven = (
                f"{passed}/{len(proof.results)} proven on {proof.server} ({'/'.join(statuses)})"
            )
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
    if not report.proven:
        failed = sum(len(z.proof.failures) for z in report.zones if z.proof)
        _fail(EXIT_VERIFICATION, f"proof failed for {failed} handle(s); no output was written")
    if report.check and report.drift:
        count = sum(len(zone.written) for zone in report.zones)
        _fail(EXIT_DRIFT, f"--check: {count} output file(s) would change; run sign")


#: ``sign --check`` prints at most this many changes per zone (``--json`` lists all).
MAX_CHANGE_LINES = 50


def _print_changes(zone: pipeline.ZoneResult) -> None:
    for change in zone.changes[:MAX_CHANGE_LINES]:
        typer.echo(f"{zone.zone}: {change.to_text()}")
    if len(zone.changes) > MAX_CHANGE_LINES:
        more = len(zone.changes) - MAX_CHANGE_LINES
        typer.echo(f"{zone.zone}: ... and {more} more changes (--json lists every one)")


@app.command()
def verify(
    zones: ZonesArgument = None,
    out: OutOption = None,
    now: NowOption = None,
    trust_anchor: TrustAnchorOption = None,
    server: Annotated[
        str | None,
        typer.Option(
            "--server",
            help="HOST:PORT of a name server to prove instead of the loopback one "
            "(what it serves must be what sign wrote).",
        ),
    ] = None,
    allow_insecure: Annotated[
        bool,
        typer.Option(
            "--allow-insecure",
            help="With --server: accept answers that are not DNSSEC-validated.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Prove already-rendered output: serve it on loopback (or ask --server) and verify it."""
    if allow_insecure and not server:
        raise UsageError("--allow-insecure is for --server (the loopback proof validates)")
    if allow_insecure:
        _warn("--allow-insecure: accepting answers without DNSSEC validation")
    zone_files = pipeline.find_zone_files(zones or [])
    report = pipeline.verify(
        zone_files,
        out=workspace_for(zone_files).out(out),
        now=_now(now),
        trust_anchors=trust_anchor,
        server=_parse_hostport(server) if server else None,
        allow_insecure=allow_insecure,
    )
    for warning in report.warnings:
        _warn(f"WARNING: {warning}")
    if as_json:
        _emit_json(report.to_mapping())
    _print_verified(report, as_json)
    if not report.ok:
        failed = sum(len(p.failures) for p in report.proofs)
        _fail(EXIT_VERIFICATION, f"verification failed for {failed} handle(s)")


def _print_verified(report: pipeline.VerifyReport, as_json: bool) -> None:
    for proof in report.proofs:
        _print_proof_failures(proof)
        if not as_json:
            passed = len(proof.results) - sum(1 for r in proof.results if not r.ok)
            statuses = sorted({result.dnssec for result in proof.results}) or ["-"]
            typer.echo(
                f"{proof.zone}: {passed}/{len(proof.results)} handles verified on {proof.server}"
                f" ({'/'.join(statuses)})"
            )


def _parse_hostport(text: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    host = host.strip("[]")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--server {text!r} is not HOST:PORT")
    try:  # dnspython queries need an address: look a host name up here, at the edge
        address = socket.getaddrinfo(host, int(port), proto=socket.IPPROTO_UDP)[0][4][0]
    except (OSError, UnicodeError) as exc:
        raise UsageError(f"--server {text!r}: cannot find host {host!r} ({exc})") from exc
    return str(address), int(port)


@app.command()
def resolve(
    reference: Annotated[str, typer.Argument(help="An alter: URI or a ~handle.")],
    server: Annotated[str, typer.Option("--server", help="HOST:PORT of the name server to ask.")],
    substrate: Annotated[
        str | None, typer.Option("--substrate", help="Substrate zone for non-domain handles.")
    ] = None,
    now: NowOption = None,
    trust_anchor: TrustAnchorOption = None,
    allow_insecure: Annotated[
        bool,
        typer.Option("--allow-insecure", help="Accept answers that are not DNSSEC-validated."),
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            help="Seconds to wait for a reply; an unanswered query is sent once more.",
            min=0.1,
        ),
    ] = 3.0,
    pin_store: Annotated[
        Path | None,
        typer.Option(
            "--pin-store",
            help="Pin (handle, epoch, key) on first use in this file and enforce it after: "
            "rollback, key-mismatch and continuity (psig) checks.",
        ),
    ] = None,
    allow_simulated_time: SimulatedTimeOption = False,
    as_json: JsonOption = False,
) -> None:
    """Resolve and verify a handle against any name server (spec section 7)."""
    target = parse_reference(reference)
    moment = _write_now(now, allow_simulated_time) if pin_store else _now(now)
    if allow_insecure:
        _warn("--allow-insecure: accepting answers without DNSSEC validation")
    anchors = read_trust_anchors(trust_anchor) if trust_anchor else ()
    address = _parse_hostport(server)
    pins = PinStore.read(pin_store) if pin_store else None
    pinned = pins.pinned(target.handle.owner(substrate)) if pins else None
    result = resolve_handle(
        target,
        server=address,
        substrate=substrate,
        now=moment,
        anchors=anchors,
        allow_insecure=allow_insecure,
        timeout=timeout,
        pinned=pinned,
    )
    pin_change = None
    if pins is not None and result.ok and result.envelope is not None:
        if result.dnssec is DNSSECStatus.SECURE:
            pin_change = pins.accept(result.owner, result.envelope, moment)
            if pin_change != "unchanged":
                pins.write()
        else:  # a spoofed answer must not be able to plant a pin
            pin_change = "not updated (answer not DNSSEC-validated)"
    fields: dict[str, Any] = {"handle": target.handle.ref, "owner": result.owner}
    if result.envelope is not None:
        fields = _envelope_mapping(result.envelope, result.owner)
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
    if pins is not None:
        fields["pin"] = pin_change
    if as_json:
        _emit_json(fields)
    elif result.ok:
        _print_envelope(fields)
        typer.echo(f"{'dnssec:':12} {result.dnssec}")
        if pin_change is not None and result.envelope is not None:
            typer.echo(f"{'pin:':12} {pin_change}")
    if not result.ok:
        _fail(
            EXIT_VERIFICATION,
            f"{result.owner}: {target.handle.ref}: {result.category}: {result.detail}",
        )


@app.command("verify-record")
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
    record = _join_txt(text)
    owner_name = owner.lower() if owner.endswith(".") else owner.lower() + "."
    if substrate is None:
        substrate = _infer_substrate(record, owner_name)
    try:
        envelope = verify_record(record, owner=owner_name, substrate=substrate, now=_now(now))
    except VerificationError as exc:
        if as_json:
            _emit_json(
                {"ok": False, "owner": owner_name, "category": exc.category, "detail": exc.what}
            )
        raise
    fields = _envelope_mapping(envelope, owner_name)
    if as_json:
        _emit_json({"ok": True, **fields})
    else:
        _print_envelope(fields)
        typer.echo(f"{'result:':12} valid")


def _join_txt(text: str) -> str:
    """Accept dig's form (``"v=alter1; ..." "...rest"``) as well as plain record text."""
    stripped = text.strip()
    if not stripped.startswith('"'):
        return stripped
    import dns.rdata
    import dns.rdataclass
    import dns.rdatatype

    try:
        rdata = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.TXT, stripped)
    except Exception as exc:
        raise UsageError(f"not TXT rdata: {exc}") from exc
    return txt_text(rdata.strings)  # type: ignore[attr-defined]  # TXT rdata


def _infer_substrate(record: str, owner: str) -> str | None:
    """The substrate implied by the owner name for the record's own handle, if any."""
    for part in record.split(";"):
        name, _, value = part.partition("=")
        if name.strip() == "h":
            try:
                handle: Handle = parse_handle(value.strip())
            except AlterError:
                return None
            prefix = f"_alter.{handle.name}."
            if not handle.is_domain and owner.startswith(prefix) and len(owner) > len(prefix):
                return owner[len(prefix) :]
    return None


@app.command()
def serve(
    zone_files: Annotated[list[Path], typer.Argument(help="Zone files to serve.")],
    address: Annotated[str, typer.Option("--address", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port (0: any free port).", min=0, max=65535)
    ] = 0,
) -> None:
    """Serve zone files with the embedded authoritative server (UDP and TCP) until Ctrl-C."""
    zones = [pipeline.read_zone_file(path, _origin_of(path)) for path in zone_files]
    answerer: WireZone | None = None
    if len(zones) == 1:  # one zone: the wire engine (no per-query parsing), when it can
        with contextlib.suppress(UnsupportedZoneError):
            answerer = WireZone.from_zone(zones[0])
    with ZoneServer(
        [] if answerer else zones, answerer=answerer, address=address, port=port
    ) as server:
        host, bound = server.address
        names = ", ".join(str(zone.origin) for zone in zones)
        typer.echo(f"serving {names} on {host}:{bound} (udp+tcp); Ctrl-C to stop", err=True)
        try:
            server.wait()
        except KeyboardInterrupt:
            typer.echo("stopped", err=True)


def _origin_of(path: Path) -> str:
    """Zone origin of a zone file: its $ORIGIN line, else its file name (``x.com.zone``)."""
    try:
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if line.upper().startswith("$ORIGIN"):
                    return normalize_domain(line.split()[1])
    except (OSError, UnicodeDecodeError, IndexError):
        pass
    return normalize_domain(path.name.removesuffix(".zone"))


@app.command()
def keygen(
    handle: Annotated[str, typer.Argument(help="The handle, e.g. ~blake.")],
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
    spec = load_zone(keyops.zone_definition(zone, zones_dir))
    store = _keystore(workspace_for([spec.path]).keys(keys))
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
        _emit_json(fields)
    else:
        typer.echo(f"{key.handle.ref}: epoch {key.epoch} key {key.key_id} written to {key_path}")
        typer.echo(f"{key.handle.ref}: revocation secret in {secret_path}; keep a copy offline")


def _warn_exposed(secret: Path | None) -> None:
    """One WARNING line when a revocation secret landed where git would commit it."""
    exposure = git_exposure(secret) if secret is not None else None
    if exposure is not None:
        _warn(f"WARNING: {exposure}")


@app.command()
def init(
    directory: Annotated[Path, typer.Argument(help="Workspace directory.")] = Path(),
    zone: Annotated[str, typer.Option("--zone", help="Your zone.")] = "example.com",
) -> None:
    """Scaffold a workspace: zones/<zone>.yaml, templates/, keys/ with its .gitignore."""
    for path in pipeline.init_workspace(directory, zone):
        typer.echo(f"created {path}")
    definition = (directory / "zones" / f"{normalize_domain(zone)}.yaml").resolve()
    typer.echo(f"next: alter-publish sign {definition} --create-keys")


dnssec_app = typer.Typer(
    name="dnssec",
    context_settings=HELP_SETTINGS,
    help="DNSSEC zone keys (Ed25519 KSK and ZSK) and the DS for the parent zone.",
    no_args_is_help=True,
)
app.add_typer(dnssec_app)


def _print_zone_keys(
    zone: str, found: Sequence[ZoneKey | ZoneKeyEntry], ttl: int, as_json: bool
) -> None:
    ds = ds_records(dns.name.from_text(zone), found, ttl)
    if as_json:
        _emit_json(
            {
                "zone": zone,
                "keys": [key.index_entry() for key in found],
                "ds": list(ds),
            }
        )
        return
    for key in found:
        typer.echo(f"{zone}: {key.role.upper()} {key.tag} (Ed25519, algorithm 15)")
    for line in ds:
        typer.echo(f"{zone}: DS for the parent zone: {line}")


DnssecZoneArgument = Annotated[
    str,
    typer.Argument(
        help="The zone: a name (example.com) or its definition file; the key store is that "
        "of the definition's workspace (here when there is no definition)."
    ),
]


def _zone_and_keys(zone: str, keys: Path | None) -> tuple[str, Path]:
    """The zone's name and key store, from its definition when it has one."""
    definition = find_definition_if_any(zone)
    origin = pipeline.zone_origin(zone) if definition is None else load_zone(definition).origin
    return origin, workspace_for([definition] if definition else []).keys(keys)


@dnssec_app.command("keygen")
def dnssec_keygen(
    zone: DnssecZoneArgument,
    now: NowOption = None,
    allow_simulated_time: SimulatedTimeOption = False,
    ttl: Annotated[int, typer.Option("--ttl", help="TTL printed on the DS.", min=0)] = 3600,
    keys: KeysOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a zone's KSK and ZSK (Ed25519) and print the DS to give the registrar."""
    moment = _write_now(now, allow_simulated_time)
    origin, store = _zone_and_keys(zone, keys)
    created = pipeline.dnssec_keygen(origin, keys=_keystore(store), now=moment)
    _print_zone_keys(origin, created, ttl, as_json)


@dnssec_app.command("ds")
def dnssec_ds(
    zone: DnssecZoneArgument,
    ttl: Annotated[int, typer.Option("--ttl", help="TTL printed on the DS.", min=0)] = 3600,
    keys: KeysOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the zone's DNSSEC keys in use and the DS records the parent zone should hold."""
    origin, store = _zone_and_keys(zone, keys)
    found = _keystore(store).zones.entries(origin)
    if not found:
        raise KeyStoreError(
            f"no DNSSEC keys; run 'alter-publish dnssec keygen {origin}'", where=origin
        )
    _print_zone_keys(origin, found, ttl, as_json)


def _ago(when: int | None, now: int) -> str:
    if when is None:
        return "-"
    delta = when - now
    span = format_span(abs(delta))
    relative = f"in {span}" if delta > 0 else f"{span} ago" if delta else "now"
    return f"{format_utc(when)} ({relative})"


@app.command()
def rotate(
    handle: Annotated[str, typer.Argument(help="The handle, e.g. ~blake.")],
    zone: ZoneNameOption,
    compromised: Annotated[
        bool,
        typer.Option(
            "--compromised",
            help="The current key is compromised: revoke its epoch, publish the next without psig.",
        ),
    ] = False,
    lost: Annotated[
        bool,
        typer.Option(
            "--lost",
            help="The current key is lost: publish the next epoch without psig "
            "(revoked too when its secret is at hand).",
        ),
    ] = False,
    secret_out: Annotated[
        Path | None,
        typer.Option("--secret-out", help="Write the new revocation secret here (keep offline)."),
    ] = None,
    secret_file: Annotated[
        Path | None,
        typer.Option("--secret-file", help="The current epoch's revocation secret (offline copy)."),
    ] = None,
    now: NowOption = None,
    allow_simulated_time: SimulatedTimeOption = False,
    keys: KeysOption = None,
    zones_dir: ZonesDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Make a handle's next key epoch; the next sign publishes it (psig by the old key)."""
    if compromised and lost:
        raise UsageError("give at most one of --compromised and --lost")
    moment = _write_now(now, allow_simulated_time)
    mode = (
        RotationMode.COMPROMISED
        if compromised
        else RotationMode.LOST
        if lost
        else RotationMode.SCHEDULED
    )
    definition = keyops.zone_definition(zone, zones_dir)
    result = keyops.rotate_handle(
        str(definition),
        handle,
        keys=_keystore(workspace_for([definition]).keys(keys)),
        now=moment,
        mode=mode,
        secret_out=secret_out,
        secret_file=secret_file,
    )
    _warn_exposed(secret_out)
    if as_json:
        _emit_json(result.to_mapping())
        return
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


@app.command()
def revoke(
    handle: Annotated[str, typer.Argument(help="The handle, e.g. ~blake.")],
    zone: ZoneNameOption,
    epoch: Annotated[
        int | None,
        typer.Option(
            "--epoch",
            help="The past epoch to revoke (the current one needs 'rotate --compromised').",
            min=1,
        ),
    ] = None,
    secret_file: Annotated[
        Path | None,
        typer.Option("--secret-file", help="That epoch's revocation secret (offline copy)."),
    ] = None,
    now: NowOption = None,
    allow_simulated_time: SimulatedTimeOption = False,
    keys: KeysOption = None,
    zones_dir: ZonesDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Queue the revocation of a past epoch; it needs only that epoch's revocation secret."""
    moment = _write_now(now, allow_simulated_time)
    definition = keyops.zone_definition(zone, zones_dir)
    ref, revoked, new = keyops.revoke_handle(
        str(definition),
        handle,
        keys=_keystore(workspace_for([definition]).keys(keys)),
        now=moment,
        epoch=epoch,
        secret_file=secret_file,
    )
    if as_json:
        _emit_json({"handle": ref, "epoch": revoked, "queued": new})
        return
    said = "queued" if new else "was already queued or published"
    typer.echo(f"{ref}: revocation of epoch {revoked} {said}")
    typer.echo(f"next: alter-publish sign {definition}")


ServerOption = Annotated[
    str, typer.Option("--server", help="HOST:PORT of the zone's primary name server.")
]
TsigKeyOption = Annotated[
    Path | None,
    typer.Option("--tsig-key", help="TSIG key file in BIND format (as tsig-keygen writes it)."),
]
ZoneArgument = Annotated[
    str, typer.Argument(help="The zone: a name (example.com) or its definition file.")
]
PublishTimeoutOption = Annotated[
    float,
    typer.Option("--timeout", help="Seconds to wait for each answer from the server.", min=0.1),
]


def _print_plan(result: publishing.Plan) -> None:
    marks = {"add": "+", "update": "~", "delete": "-"}
    for change in result.changes:
        before = len(change.before.texts) if change.before else 0
        after = len(change.after.texts) if change.after else 0
        typer.echo(
            f"{marks[change.action]} {change.owner} ({change.action}: "
            f"{before} -> {after} alter1 record(s))"
        )
    counts = result.counts()
    summary = ", ".join(f"{counts[a]} {a}" for a in ("add", "update", "delete"))
    state = summary if result.pending else "nothing to do"
    typer.echo(
        f"{result.zone}: {state} on {result.server} ({result.served} alter1 records served, "
        f"read by {result.enumeration})"
    )


@app.command()
def plan(
    zone: ZoneArgument,
    server: ServerOption,
    tsig_key: TsigKeyOption = None,
    out: OutOption = None,
    zones_dir: ZonesDirOption = None,
    timeout: PublishTimeoutOption = publishing.DEFAULT_TIMEOUT_SECONDS,
    as_json: JsonOption = False,
) -> None:
    """List the adds, updates and deletes of alter1 records a push would make (exit 7 if any)."""
    spec = load_zone(keyops.zone_definition(zone, zones_dir))
    tsig = publishing.read_tsig_key(tsig_key) if tsig_key else None
    address = _parse_hostport(server)
    out = workspace_for([spec.path]).out(out)
    result = publishing.plan(spec, out=out, server=address, tsig=tsig, timeout=timeout)
    if as_json:
        _emit_json(result.to_mapping())
    else:
        _print_plan(result)
    if result.pending:
        _fail(EXIT_DRIFT, f"{result.zone}: {len(result.changes)} owner name(s) differ; run push")


@app.command()
def push(
    zone: ZoneArgument,
    server: ServerOption,
    tsig_key: Annotated[
        Path, typer.Option("--tsig-key", help="TSIG key file in BIND format (tsig-keygen).")
    ],
    out: OutOption = None,
    trust_anchor: TrustAnchorOption = None,
    allow_insecure: Annotated[
        bool,
        typer.Option(
            "--allow-insecure",
            help="The server does not sign the zone: accept unsigned answers in the proof.",
        ),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Delete more than --max-delete of our records.")
    ] = False,
    max_delete: Annotated[
        float,
        typer.Option(
            "--max-delete",
            help="Largest share of our served records a push may delete without --force.",
            min=0.0,
            max=1.0,
        ),
    ] = publishing.DEFAULT_MAX_DELETE_SHARE,
    now: NowOption = None,
    allow_simulated_time: SimulatedTimeOption = False,
    zones_dir: ZonesDirOption = None,
    timeout: PublishTimeoutOption = publishing.DEFAULT_TIMEOUT_SECONDS,
    as_json: JsonOption = False,
) -> None:
    """Apply the plan by RFC 2136 dynamic update with TSIG, then prove the server's answers."""
    moment = _write_now(now, allow_simulated_time)
    if allow_insecure:
        _warn("--allow-insecure: the proof accepts answers without DNSSEC validation")
    definition = keyops.zone_definition(zone, zones_dir)
    tsig = publishing.read_tsig_key(tsig_key)
    address = _parse_hostport(server)
    outcome = publishing.push(
        definition,
        out=workspace_for([definition]).out(out),
        server=address,
        tsig=tsig,
        now=moment,
        trust_anchors=trust_anchor,
        allow_insecure=allow_insecure,
        max_delete=max_delete,
        force=force,
        timeout=timeout,
    )
    result, sent, report = outcome.plan, outcome.sent, outcome.proof
    if as_json:
        _emit_json(
            {
                "plan": result.to_mapping(),
                "updates_sent": sent,
                "proof": report.to_mapping(),
                "ok": report.ok,
            }
        )
    else:
        _print_plan(result)
        typer.echo(f"{result.zone}: {sent} update message(s) applied; server now matches")
    _print_verified(report, as_json)
    if not report.ok:
        failed = sum(len(p.failures) for p in report.proofs)
        _fail(EXIT_VERIFICATION, f"pushed, but the proof failed for {failed} handle(s)")


@app.command("export")
def export_command(
    zone: ZoneArgument,
    fmt: Annotated[
        str,
        typer.Option(
            "--format", help="bind-include ($INCLUDE file), octodns (YAML), or well-known (JSON)."
        ),
    ],
    out: OutOption = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", help="Write here ('-' for stdout) instead of the default path."),
    ] = None,
    zones_dir: ZonesDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Export the signed alter1 records for other publishers: BIND, octoDNS or HTTPS."""
    try:
        kind = export.ExportFormat(fmt.lower())
    except ValueError as exc:
        known = ", ".join(str(f) for f in export.ExportFormat)
        raise UsageError(f"--format {fmt!r} is not one of {known}") from exc
    spec = load_zone(keyops.zone_definition(zone, zones_dir))
    out = workspace_for([spec.path]).out(out)
    if output == Path("-"):
        typer.echo(export.render_export(export.load_export(spec, out), spec, kind), nl=False)
        return
    result = export.export_zone(spec, kind, out=out, output=output)
    if as_json:
        _emit_json(result.to_mapping())
        return
    said = "wrote" if result.written else "unchanged"
    typer.echo(f"{spec.origin}: {result.records} alter1 record(s) as {kind}: {said} {result.path}")


keys_app = typer.Typer(
    context_settings=HELP_SETTINGS,
    name="keys",
    help="Handle and zone key status across zones.",
    no_args_is_help=True,
)
app.add_typer(keys_app)


@keys_app.command("status")
def keys_status(
    zones: ZonesArgument = None,
    now: NowOption = None,
    keys: KeysOption = None,
    as_json: JsonOption = False,
) -> None:
    """Per handle: epochs, key ids, states, expiry, next action; per zone: DNSSEC keys."""
    moment = _now(now)
    zone_files = pipeline.find_zone_files(zones or [])
    report = keyops.keys_status(
        zone_files, keys=_keystore(workspace_for(zone_files).keys(keys)), now=moment
    )
    if as_json:
        _emit_json({"now": moment, "zones": [zone.to_mapping(moment) for zone in report]})
        return
    for zone in report:
        for status in zone.handles:
            epochs = ", ".join(
                f"{e.epoch}:{e.key_id or '?'}:{e.state}{'' if e.published else '(unpublished)'}"
                for e in status.epochs
            )
            typer.echo(f"{zone.zone}: {status.handle}: epochs [{epochs or 'none'}]")
            typer.echo(
                f"{zone.zone}: {status.handle}: expires {_ago(status.expires, moment)}; "
                f"next: {status.next_action}"
            )
        if zone.dnssec is not None:
            _print_dnssec_status(zone.dnssec, moment)


def _print_dnssec_status(status: keyops.ZoneKeysStatus, now: int) -> None:
    zone = status.zone
    for key in status.keys:
        where = [w for w, on in (("DNSKEY", key.in_dnskey), ("DS", key.in_ds)) if on]
        typer.echo(
            f"{zone}: {key.role.upper()} {key.tag}: {key.state} since {format_utc(key.since)}"
            f"{'; signs' if key.signs else ''}{'; in ' + '+'.join(where) if where else ''}"
        )
    if not status.signed:
        typer.echo(f"{zone}: the key states are not published yet: run sign")
    _print_next_step(zone, "next step", status.next_step, now, "no rollover running")


def _print_next_step(
    zone: str, label: str, upcoming: NextStep | None, now: int, when_none: str
) -> None:
    if upcoming is None:
        typer.echo(f"{zone}: {when_none}")
    elif upcoming.not_before is None:
        typer.echo(f"{zone}: {label}: {upcoming.action}")
    else:
        typer.echo(f"{zone}: {label}: {upcoming.action}, from {_ago(upcoming.not_before, now)}")


@dnssec_app.command("status")
def dnssec_status(
    zone: Annotated[str, typer.Argument(help="The zone: a name or a definition file.")],
    now: NowOption = None,
    keys: KeysOption = None,
    zones_dir: ZonesDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the zone's DNSSEC keys, their states, and the running rollover's next step."""
    moment = _now(now)
    definition = keyops.zone_definition(zone, zones_dir)
    store = _keystore(workspace_for([definition]).keys(keys))
    status = keyops.dnssec_status(str(definition), keys=store)
    if as_json:
        _emit_json(status.to_mapping(moment))
        return
    _print_dnssec_status(status, moment)
    for line in status.ds:
        typer.echo(f"{status.zone}: DS the parent should hold: {line}")


def _print_step(result: StepResult, now: int, as_json: bool) -> None:
    if as_json:
        _emit_json(result.to_mapping())
        return
    zone, upcoming = result.zone, result.next_step
    for line in result.changed:
        typer.echo(f"{zone}: {line}")
    for line in result.ds_submit:
        typer.echo(f"{zone}: the parent should now hold: {line}")
    for line in result.ds_remove:
        typer.echo(f"{zone}: withdraw from the parent: {line}")
    typer.echo("next: alter-publish sign (it publishes these key states)")
    _print_next_step(zone, "then", upcoming, now, "rollover complete")


@dnssec_app.command("rollover")
def dnssec_rollover(
    zone: Annotated[str, typer.Argument(help="The zone: a name or a definition file.")],
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
    moment = _write_now(now, allow_simulated_time)
    definition = keyops.zone_definition(zone, zones_dir)
    store = _keystore(workspace_for([definition]).keys(keys))
    result = keyops.dnssec_rollover(str(definition), key_role, keys=store, now=moment)
    _print_step(result, moment, as_json)


@dnssec_app.command("step")
def dnssec_step(
    zone: Annotated[str, typer.Argument(help="The zone: a name or a definition file.")],
    ds_published: Annotated[
        bool,
        typer.Option(
            "--ds-published",
            help="Confirm the parent zone now serves the new KSK's DS (checked nowhere else).",
        ),
    ] = False,
    now: NowOption = None,
    allow_simulated_time: SimulatedTimeOption = False,
    keys: KeysOption = None,
    zones_dir: ZonesDirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Take the running rollover's next step, once RFC 7583's wait is over."""
    moment = _write_now(now, allow_simulated_time)
    definition = keyops.zone_definition(zone, zones_dir)
    store = _keystore(workspace_for([definition]).keys(keys))
    result = keyops.dnssec_step(str(definition), keys=store, now=moment, ds_published=ds_published)
    _print_step(result, moment, as_json)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"alter-publish {__version__}")
        raise typer.Exit


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_callback, is_eager=True, help="Print the version."
        ),
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    """alter-publish: signed _alter records for the zones you own, proven before publishing."""


class _FailureError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _fail(code: int, message: str) -> NoReturn:
    raise _FailureError(code, message)


MAX_ERROR_LINES = 20


def _error_lines(error: AlterError) -> list[str]:
    if isinstance(error, VerificationError):
        where = f"{error.where}: " if error.where else ""
        return [f"{where}{error.category}: {error.what}"]
    if len(error.reasons) <= 1:
        return [str(error)]
    lines = list(error.reasons[:MAX_ERROR_LINES])
    if len(error.reasons) > MAX_ERROR_LINES:
        lines.append(f"... and {len(error.reasons) - MAX_ERROR_LINES} more problems")
    return lines


#: Each command's line in its group's listing: a whole sentence that fits on one line
#: (typer would cut the docstring's first sentence to the terminal's width).
SUMMARIES: Final = {
    (): "Sign, prove and publish alter1 records for your zones.",
    ("sign",): "Sign, prove on loopback, then write the zones' outputs.",
    ("verify",): "Prove written outputs, on loopback or at a name server.",
    ("resolve",): "Resolve and verify a handle at any name server.",
    ("verify-record",): "Check one record by hand, as pasted from dig.",
    ("serve",): "Serve zone files from the embedded name server.",
    ("keygen",): "Create a handle's first key and revocation secret.",
    ("init",): "Scaffold a workspace: a definition, templates, keys/.",
    ("rotate",): "Make a handle's next key epoch, for sign to publish.",
    ("revoke",): "Queue the revocation of a past key epoch.",
    ("plan",): "List the record changes a push would make.",
    ("push",): "Update a primary by RFC 2136 with TSIG, then prove it.",
    ("export",): "Export the signed records for BIND, octoDNS or HTTPS.",
    ("keys",): "Handle and zone key status across zones.",
    ("keys", "status"): "Show key epochs and states, and what is due next.",
    ("dnssec",): "Zone DNSSEC keys, rollovers and the DS for the parent.",
    ("dnssec", "keygen"): "Create a zone's KSK and ZSK and print the DS.",
    ("dnssec", "ds"): "Print the zone's DNSSEC keys and the DS records.",
    ("dnssec", "status"): "Show the zone's DNSSEC keys and the rollover step.",
    ("dnssec", "rollover"): "Start a ZSK or KSK rollover (RFC 7583).",
    ("dnssec", "step"): "Take the running rollover's next step.",
}

#: The metavar of every argument and option that takes a value, by parameter name, the
#: same in every command (another name shows as itself in capitals).
METAVARS: Final = {
    "zones": "ZONE",
    "zone": "ZONE",
    "substrate": "ZONE",
    "zone_files": "ZONEFILE",
    "handle": "HANDLE",
    "reference": "URI|HANDLE",
    "text": "RECORD",
    "owner": "NAME",
    "role": "zsk|ksk",
    "out": "DIR",
    "keys": "DIR",
    "templates": "DIR",
    "zones_dir": "DIR",
    "directory": "DIR",
    "now": "UNIX",
    "jobs": "N",
    "epoch": "N",
    "server": "HOST:PORT",
    "address": "ADDRESS",
    "port": "PORT",
    "timeout": "SECONDS",
    "ttl": "SECONDS",
    "max_delete": "SHARE",
    "fmt": "FORMAT",
    "trust_anchor": "FILE",
    "tsig_key": "FILE",
    "secret_out": "FILE",
    "secret_file": "FILE",
    "pin_store": "FILE",
    "output": "FILE",
}


def cli_command() -> Any:
    """The click command behind the app (for tools that walk its options), with the
    summaries of ``SUMMARIES`` and the metavars of ``METAVARS``."""
    command = typer.main.get_command(app)
    _plain_help(command, ())
    return command


def _no_type(ctx: Any) -> None:
    return None


def _plain_help(command: Any, path: tuple[str, ...]) -> None:
    """Give ``command`` and its subcommands whole summaries and plain metavars."""
    command.short_help = SUMMARIES.get(path, command.short_help)
    for param in command.params:
        if getattr(param, "is_flag", False) or param.name is None:
            continue
        param.metavar = METAVARS.get(param.name, param.name.upper())
        if param.param_type_name == "argument":
            # typer prints an argument's type after its metavar (``ZONE <list[Path]>``).
            param.display_type_rich = _no_type
    for name, subcommand in getattr(command, "commands", {}).items():
        _plain_help(subcommand, (*path, name))


def _split_debug(args: Sequence[str]) -> tuple[list[str], bool]:
    """``args`` without ``--debug``, which may stand before or after the command."""
    end = args.index("--") if "--" in args else len(args)
    kept = [arg for arg in args[:end] if arg != "--debug"]
    return [*kept, *args[end:]], len(kept) < end


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app and map every error to one line and an exit code."""
    args, debug = _split_debug((sys.argv[1:] if argv is None else argv) or ["--help"])
    command = cli_command()
    try:
        code = command.main(args=args, prog_name="alter-publish", standalone_mode=False)
    except _FailureError as failure:
        typer.echo(f"alter-publish: error: {failure}", err=True)
        sys.exit(failure.code)
    except AlterError as error:
        if debug:
            raise
        for line in _error_lines(error):
            typer.echo(f"alter-publish: error: {line}", err=True)
        sys.exit(error.exit_code)
    except typer.Abort:
        typer.echo("alter-publish: aborted", err=True)
        sys.exit(130)
    except typer.TyperException as error:  # usage errors: bad option, missing argument
        if debug:
            raise
        format_message = getattr(error, "format_message", None)
        text = format_message() if callable(format_message) else str(error)
        typer.echo(f"alter-publish: error: {' '.join(str(text).split())} (see --help)", err=True)
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        typer.echo("alter-publish: interrupted", err=True)
        sys.exit(130)
    except Exception as error:
        if debug:
            raise
        typer.echo(
            f"alter-publish: internal error: {type(error).__name__}: "
            f"{' '.join(str(error).split())} (rerun with --debug and report it)",
            err=True,
        )
        sys.exit(EXIT_INTERNAL)
    sys.exit(code if isinstance(code, int) else EXIT_OK)


if __name__ == "__main__":
    main()
