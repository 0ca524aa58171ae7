"""``resolve``, ``verify-record`` and ``serve``: what any verifier of alter1 records does."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, Any

import typer

from alter_publish import pipeline
from alter_publish.cli.options import (
    JsonOption,
    NowOption,
    SimulatedTimeOption,
    TrustAnchorOption,
    clock_now,
    parse_hostport,
    write_now,
)
from alter_publish.cli.output import emit_json, envelope_mapping, fail, print_envelope, warn
from alter_publish.dns.server import ZoneServer
from alter_publish.dns.validation import DNSSECStatus, read_trust_anchors
from alter_publish.dns.wirezone import UnsupportedZoneError, WireZone
from alter_publish.dns.zonetext import txt_text
from alter_publish.errors import EXIT_VERIFICATION, AlterError, UsageError, VerificationError
from alter_publish.format.envelope import verify_record
from alter_publish.format.handles import Handle, normalize_domain, parse_handle, parse_reference
from alter_publish.verify.pins import PinStore
from alter_publish.verify.resolve import resolve as resolve_handle


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
    moment = write_now(now, allow_simulated_time) if pin_store else clock_now(now)
    if allow_insecure:
        warn("--allow-insecure: accepting answers without DNSSEC validation")
    anchors = read_trust_anchors(trust_anchor) if trust_anchor else ()
    address = parse_hostport(server)
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
    if pins is not None:
        fields["pin"] = pin_change
    if as_json:
        emit_json(fields)
    elif result.ok:
        print_envelope(fields)
        typer.echo(f"{'dnssec:':12} {result.dnssec}")
        if pin_change is not None and result.envelope is not None:
            typer.echo(f"{'pin:':12} {pin_change}")
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
    record = _join_txt(text)
    owner_name = owner.lower() if owner.endswith(".") else owner.lower() + "."
    if substrate is None:
        substrate = _infer_substrate(record, owner_name)
    try:
        envelope = verify_record(record, owner=owner_name, substrate=substrate, now=clock_now(now))
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
