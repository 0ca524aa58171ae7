"""What commands print: JSON documents, warnings, failures and the shared printers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from alter_publish.definition.values import format_span, format_utc

if TYPE_CHECKING:  # names of types only: every command imports this module, few need them
    from alter_publish import pipeline
    from alter_publish.format.envelope import Envelope
    from alter_publish.keys import commands as keyops
    from alter_publish.keys.rollover import NextStep
    from alter_publish.verify.proof import ProofReport


class FailureError(Exception):
    """A command's own failure: ``main`` prints its message and exits with ``code``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def fail(code: int, message: str) -> NoReturn:
    """End the command with one error line and the exit code ``code``.

    Raises:
        FailureError: always; ``main`` maps it.
    """
    raise FailureError(code, message)


def emit_json(document: Any) -> None:
    """Print ``document`` as the command's one JSON document."""
    typer.echo(json_text(document, json.JSONEncoder(sort_keys=True).encode))


#: Lists longer than this print one compact item per line (a sign of 100,000 handles
#: reports 100,000 proofs: ``indent=`` would run the pure-Python encoder over them).
_JSON_LONG_LIST = 64


def json_text(value: Any, encode: Callable[[Any], str], level: int = 0) -> str:
    """``value`` as JSON indented by two spaces (keys sorted), long lists a line per item."""
    pad = "  " * level
    if isinstance(value, dict) and value:
        members = (
            f"{pad}  {encode(key)}: {json_text(item, encode, level + 1)}"
            for key, item in sorted(value.items())
        )
        return "{\n" + ",\n".join(members) + f"\n{pad}}}"
    if isinstance(value, list) and value:
        long = len(value) > _JSON_LONG_LIST
        items = (
            f"{pad}  {encode(item) if long else json_text(item, encode, level + 1)}"
            for item in value
        )
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    return encode(value)


def warn(message: str) -> None:
    """One ``alter-publish: ...`` line on stderr."""
    typer.echo(f"alter-publish: {message}", err=True)


def print_proof_failures(report: ProofReport) -> None:
    """A stderr line per handle the proof failed."""
    for failure in report.failures:
        typer.echo(
            f"{failure.owner}: {failure.handle}: {failure.category}: {failure.detail}", err=True
        )


def print_verified(report: pipeline.VerifyReport, as_json: bool) -> None:
    """Each proof's failures, and (without ``--json``) a line of how many handles passed."""
    for proof in report.proofs:
        print_proof_failures(proof)
        if not as_json:
            passed = len(proof.results) - sum(1 for r in proof.results if not r.ok)
            statuses = sorted({result.dnssec for result in proof.results}) or ["-"]
            typer.echo(
                f"{proof.zone}: {passed}/{len(proof.results)} handles verified on {proof.server}"
                f" ({'/'.join(statuses)})"
            )


def envelope_mapping(envelope: Envelope, owner: str) -> dict[str, Any]:
    """The envelope's fields, with the owner name it was found at."""
    return {**envelope.to_mapping(), "owner": owner}


def print_envelope(fields: dict[str, Any]) -> None:
    """The fields of an envelope a person reads, one ``name: value`` line each."""
    for key in ("handle", "tier", "owner", "epoch", "key_id", "expires_at", "resolver", "path"):
        if key in fields:
            value = fields[key]
            typer.echo(f"{key + ':':12} {'-' if value is None else value}")


def ago(when: int | None, now: int) -> str:
    """``when`` in UTC and relative to ``now`` (``in 3d``, ``2h ago``), or ``-``."""
    if when is None:
        return "-"
    delta = when - now
    span = format_span(abs(delta))
    relative = f"in {span}" if delta > 0 else f"{span} ago" if delta else "now"
    return f"{format_utc(when)} ({relative})"


def print_dnssec_status(status: keyops.ZoneKeysStatus, now: int) -> None:
    """A zone's DNSSEC keys and states, and the running rollover's next step."""
    zone = status.zone
    for key in status.keys:
        where = [w for w, on in (("DNSKEY", key.in_dnskey), ("DS", key.in_ds)) if on]
        typer.echo(
            f"{zone}: {key.role.upper()} {key.tag}: {key.state} since {format_utc(key.since)}"
            f"{'; signs' if key.signs else ''}{'; in ' + '+'.join(where) if where else ''}"
        )
    if not status.signed:
        typer.echo(f"{zone}: the key states are not published yet: run sign")
    print_next_step(zone, "next step", status.next_step, now, "no rollover running")


def print_next_step(
    zone: str, label: str, upcoming: NextStep | None, now: int, when_none: str
) -> None:
    """The rollover's next step and when it may be taken, or ``when_none``."""
    if upcoming is None:
        typer.echo(f"{zone}: {when_none}")
    elif upcoming.not_before is None:
        typer.echo(f"{zone}: {label}: {upcoming.action}")
    else:
        typer.echo(f"{zone}: {label}: {upcoming.action}, from {ago(upcoming.not_before, now)}")
