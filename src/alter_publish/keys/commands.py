"""The key lifecycle commands: rotate, revoke, keys status, dnssec status|rollover|step.

Each call works on a zone definition (a path, or a zone name looked up as
``zones/<zone>.yaml`` here or in the nearest parent directory), changes only the
key store and the public revocations file, and leaves publishing to ``sign``.
DNSSEC rollover waits are counted from when ``sign`` first published the current
key states (``zones/<zone>.state.json``), so a step taken but not yet signed never shortens a wait.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dns.name

from alter_publish.definition.model import ZoneSpec, load_zone
from alter_publish.definition.state import SerialState, key_states, state_path_for
from alter_publish.definition.workspace import find_definition
from alter_publish.dns.dnssec import ds_records
from alter_publish.dns.zonekeys import ZoneKeyEntry, ZoneKeyRole
from alter_publish.errors import RolloverError, UsageError
from alter_publish.keys.lifecycle import (
    HandleStatus,
    RotateResult,
    RotationMode,
    revoke,
    rotate,
    zone_handle_status,
)
from alter_publish.keys.rollover import (
    NextStep,
    RolloverTiming,
    StepResult,
    next_step,
)
from alter_publish.keys.rollover import begin as begin_rollover
from alter_publish.keys.rollover import step as step_rollover
from alter_publish.keys.store import KeyStore

__all__ = [
    "KeysStatus",
    "RotateResult",
    "RotationMode",
    "ZoneKeysStatus",
    "dnssec_rollover",
    "dnssec_status",
    "dnssec_step",
    "keys_status",
    "revoke_handle",
    "rotate_handle",
]


def rotate_handle(
    zone: str,
    handle: str,
    *,
    keys: KeyStore,
    now: int,
    mode: RotationMode = RotationMode.SCHEDULED,
    secret_out: Path | None = None,
    secret_file: Path | None = None,
    zones_dir: Path | None = None,
) -> RotateResult:
    """Make a handle's next epoch (see :func:`alter_publish.keys.lifecycle.rotate`).

    Raises:
        UsageError: unknown zone or handle, or nothing to rotate.
        KeyStoreError: a key or secret is missing, or does not match.
        DefinitionError: the zone definition or revocations file is broken.
    """
    spec = load_zone(find_definition(zone, zones_dir))
    return rotate(
        spec, handle, keys=keys, now=now, mode=mode, secret_out=secret_out, secret_file=secret_file
    )


def revoke_handle(
    zone: str,
    handle: str,
    *,
    keys: KeyStore,
    now: int,
    epoch: int | None = None,
    secret_file: Path | None = None,
    zones_dir: Path | None = None,
) -> tuple[str, int, bool]:
    """Queue the revocation of a past epoch (see :func:`alter_publish.keys.lifecycle.revoke`).

    Returns:
        (handle-ref, revoked epoch, whether it is newly queued).

    Raises:
        UsageError: unknown zone, handle or epoch, or the current epoch.
        KeyStoreError: the secret is missing or is not that epoch's.
        DefinitionError: the zone definition or revocations file is broken.
    """
    spec = load_zone(find_definition(zone, zones_dir))
    revocation, new = revoke(spec, handle, keys=keys, now=now, epoch=epoch, secret_file=secret_file)
    return revocation.handle.ref, revocation.epoch, new


# --- DNSSEC keys -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ZoneKeysStatus:
    """A zone's DNSSEC keys, its rollover timing and the next step."""

    zone: str
    keys: tuple[ZoneKeyEntry, ...]
    timing: RolloverTiming
    next_step: NextStep | None
    signed: bool  # the last sign published exactly these key states
    ds: tuple[str, ...]

    def to_mapping(self, now: int) -> dict[str, Any]:
        """JSON form."""
        return {
            "zone": self.zone,
            "keys": [
                {
                    **key.index_entry(),
                    "in_dnskey": key.in_dnskey,
                    "signs": key.signs,
                    "in_ds": key.in_ds,
                }
                for key in self.keys
            ],
            "ds": list(self.ds),
            "signed": self.signed,
            "timing": self.timing.to_mapping(),
            "next_step": None if self.next_step is None else self.next_step.to_mapping(),
            "step_due": self.next_step is not None and self.next_step.due(now),
        }


def _zone_keys_context(
    spec: ZoneSpec, keys: KeyStore
) -> tuple[tuple[ZoneKeyEntry, ...], RolloverTiming, int | None, bool]:
    """(keys incl. removed, timing, when the current states were published, signed?)."""
    if not spec.dnssec.enabled:
        raise UsageError(
            f"DNSSEC is off for {spec.origin} (dnssec.enabled: false in {spec.path})",
            where=spec.origin,
        )
    every = keys.zones.entries(spec.origin, removed=True)
    live = tuple(key for key in every if key.state != "removed")
    state = SerialState.read(state_path_for(spec.path))
    ttls = state.ttls if state is not None else None
    timing = RolloverTiming.of(
        spec.dnssec,
        dnskey_ttl=max(spec.ttl, ttls.cached_dnskey if ttls else 0),
        max_ttl=max(spec.ttl, ttls.cached_max if ttls else 0),
    )
    signed = state is not None and state.keys == key_states(live)
    published = state.keys_since if signed and state is not None else None
    return every, timing, published, signed


def dnssec_status(zone: str, *, keys: KeyStore, zones_dir: Path | None = None) -> ZoneKeysStatus:
    """Where a zone's DNSSEC keys stand and what the running rollover does next.

    Raises:
        UsageError: unknown zone.
        KeyStoreError: the key store cannot be read.
        DefinitionError: the zone definition is broken.
        RenderError: the serial state file is broken.
    """
    spec = load_zone(find_definition(zone, zones_dir))
    every, timing, published, signed = _zone_keys_context(spec, keys)
    live = tuple(key for key in every if key.state != "removed")
    upcoming = next_step(live, timing, published)
    ds = ds_records(dns.name.from_text(spec.origin), live, spec.ttl)
    return ZoneKeysStatus(spec.origin, every, timing, upcoming, signed, ds)


def _require_signed(spec: ZoneSpec, signed: bool) -> None:
    if not signed:
        raise RolloverError(
            f"the published zone does not carry the current key states yet; run "
            f"'alter-publish sign {spec.path}' first (waits count from that sign)",
            where=spec.origin,
        )


def dnssec_rollover(
    zone: str,
    role: ZoneKeyRole,
    *,
    keys: KeyStore,
    now: int,
    zones_dir: Path | None = None,
) -> StepResult:
    """Start a ZSK (pre-publication) or KSK (double-DS) rollover.

    Raises:
        RolloverError: a rollover is running, or the zone's keys are not yet signed.
        KeyStoreError: the key store cannot be read or written.
        UsageError: unknown zone.
    """
    spec = load_zone(find_definition(zone, zones_dir))
    _, timing, published, signed = _zone_keys_context(spec, keys)
    _require_signed(spec, signed)
    return begin_rollover(keys, spec.origin, role, now=now, timing=timing, published=published)


def dnssec_step(
    zone: str,
    *,
    keys: KeyStore,
    now: int,
    ds_published: bool = False,
    zones_dir: Path | None = None,
) -> StepResult:
    """Take the running rollover's next step once its wait is over.

    Raises:
        RolloverError: no rollover, too early, the zone is not signed with the current
            states, or the step waits for (or was wrongly given) ``ds_published``.
        KeyStoreError: the key store cannot be read or written.
        UsageError: unknown zone.
    """
    spec = load_zone(find_definition(zone, zones_dir))
    _, timing, published, signed = _zone_keys_context(spec, keys)
    _require_signed(spec, signed)
    return step_rollover(
        keys, spec.origin, now=now, timing=timing, ds_published=ds_published, published=published
    )


# --- keys status ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KeysStatus:
    """``keys status`` for one zone: its handles and its DNSSEC keys."""

    zone: str
    handles: tuple[HandleStatus, ...]
    dnssec: ZoneKeysStatus | None

    def to_mapping(self, now: int) -> dict[str, Any]:
        """JSON form."""
        return {
            "zone": self.zone,
            "handles": [handle.to_mapping() for handle in self.handles],
            "dnssec": None if self.dnssec is None else self.dnssec.to_mapping(now),
        }


def keys_status(zone_files: Sequence[Path], *, keys: KeyStore, now: int) -> tuple[KeysStatus, ...]:
    """Every handle's epochs and next action, and every zone's DNSSEC keys.

    Raises:
        DefinitionError: a zone definition or revocations file is broken.
        KeyStoreError: the key store cannot be read.
        RenderError: a log or state file is broken.
    """
    found: list[KeysStatus] = []
    for path in zone_files:
        spec = load_zone(path)
        handles = zone_handle_status(spec, keys=keys, now=now)
        zone_keys = None
        if spec.dnssec.enabled and keys.zones.entries(spec.origin, removed=True):
            zone_keys = dnssec_status(str(path), keys=keys)
        found.append(KeysStatus(spec.origin, handles, zone_keys))
    return tuple(found)
