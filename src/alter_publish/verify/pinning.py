"""Resolving with a pin store: its policy, in one place (spec 6 step 6, trust on first use).

The store is read, the handle's pin (if any) is enforced by :func:`resolve`, and a
successful answer moves the pin only when it was DNSSEC-validated: an unvalidated
(possibly spoofed) answer must not be able to plant or move a pin.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from alter_publish.dns.anchors import TrustAnchor
from alter_publish.dns.hints import RootHints
from alter_publish.dns.validation import DNSSECStatus
from alter_publish.format.handles import AlterURI, Handle
from alter_publish.verify.logcheck import LogCheck, LogSource, check_log, fetch_checkpoint
from alter_publish.verify.pins import PinStore
from alter_publish.verify.resolve import DEFAULT_TIMEOUT_SECONDS, Resolution, resolve

#: What happened to the pin when the answer verified but was not DNSSEC-validated.
PIN_NOT_UPDATED_INSECURE: Final = "not updated (answer not DNSSEC-validated)"


@dataclass(frozen=True, slots=True)
class PinnedResult:
    """A resolution and what it did to the pin store.

    Attributes:
        resolution: the outcome of resolving the handle (its pin enforced).
        pin: ``pinned``, ``advanced``, ``unchanged`` or :data:`PIN_NOT_UPDATED_INSECURE`;
            None without a pin store or when the resolution failed.
    """

    resolution: Resolution
    pin: str | None
    #: The envelope found in its zone's signed log (``resolve --log``), if asked.
    log: LogCheck | None = None


def resolve_pinned(
    reference: AlterURI | Handle,
    *,
    server: tuple[str, int],
    substrate: str | None,
    now: int,
    pin_store: Path | None,
    anchors: Sequence[TrustAnchor] = (),
    allow_insecure: bool = False,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    root_hints: RootHints | None = None,
    log: LogSource | None = None,
) -> PinnedResult:
    """Resolve ``reference`` (spec section 7), enforcing and updating ``pin_store`` if given.

    The store is written only when a DNSSEC-validated answer pins or advances the handle
    (or, with ``log``, the log's checkpoint: see :mod:`alter_publish.verify.logcheck`).

    Returns:
        The resolution (check ``resolution.ok``) and the pin change.

    Raises:
        UsageError: ``pin_store`` is unreadable or not a pin store.
        HandleError: a non-domain handle without a substrate.
        ResolveError: the server did not answer usably.
        RenderError: the pin store cannot be written.
        VerificationError: with ``log``, the envelope is not in the signed log, or the
            checkpoint does not extend the one pinned (its category).
    """
    handle = reference.handle if isinstance(reference, AlterURI) else reference
    pins = PinStore.read(pin_store) if pin_store is not None else None
    result = resolve(
        reference,
        server=server,
        substrate=substrate,
        now=now,
        anchors=anchors,
        allow_insecure=allow_insecure,
        timeout=timeout,
        root_hints=root_hints,
        pinned=pins.pinned(handle.owner(substrate)) if pins is not None else None,
    )
    if not result.ok or result.envelope is None:
        return PinnedResult(result, None)
    found = None
    if log is not None:
        note = fetch_checkpoint(
            log,
            server,
            now=now,
            anchors=anchors,
            allow_insecure=allow_insecure,
            timeout=timeout,
            root_hints=root_hints,
        )
        origin = log.verifier.name
        pinned = pins.checkpoints.get(origin) if pins is not None else None
        checkpoint, log_pin = check_log(result.envelope, result.owner, log, note, pinned)
        found = LogCheck(origin, checkpoint.size, result.envelope.log_size, note[1])
        if pins is not None and result.dnssec is DNSSECStatus.SECURE:
            pins.checkpoints[origin] = checkpoint
            found = dataclasses.replace(found, pin=log_pin)
    if pins is None:
        return PinnedResult(result, None, found)
    if result.dnssec is not DNSSECStatus.SECURE:
        return PinnedResult(result, PIN_NOT_UPDATED_INSECURE, found)
    change = pins.accept(result.owner, result.envelope, now)
    if change != "unchanged" or (found is not None and found.pin != "unchanged"):
        pins.write()
    return PinnedResult(result, change, found)
