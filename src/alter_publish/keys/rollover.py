"""DNSSEC key rollovers: ZSK by pre-publication, KSK by double-DS (RFC 7583).

The key store holds each zone key's state and when it entered it
(:class:`~alter_publish.dns.zonekeys.ZoneKeyState`). A rollover is started by :func:`begin`
and advanced by :func:`step`; each transition is allowed only once the interval
RFC 7583 prescribes has passed since the zone carrying the previous state was
published. ``sign`` publishes every state: the signer puts a key in the DNSKEY
rrset, or signs with it, or offers its DS, as its state says.

ZSK, pre-publication (RFC 7583 3.2.1)::

    rollover zsk   new ZSK published (in DNSKEY, not signing)
    wait Ipub  = Dprp + TTLkey
    step           new ZSK active, old ZSK retired (in DNSKEY, not signing)
    wait Iret  = Dsgn + Dprp + TTLsig      (Dsgn = 0: sign re-signs every rrset at once)
    step           old ZSK removed

KSK, double-DS (RFC 7583 3.3.2)::

    rollover ksk   new KSK ds-submitted: hand the printed DS set to the parent
    step --ds-published   the parent serves both DS: new KSK ds-published
    wait IpubP = DprpP + TTLds
    step           new KSK active (in DNSKEY, signs it), old KSK retired (out of DNSKEY)
    wait Iret  = Dprp + TTLkey
    step           old KSK ds-withdrawn: its DS may now leave the parent (CDS: new KSK only)
    step --ds-published   the parent serves the old DS no more: old KSK removed

TTLsig is the largest TTL of a signed rrset in the published zone, capped by the
signature validity (a validator never keeps an RRset past its RRSIG's expiration).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import dns.name

from alter_publish.definition.model import DNSSECSpec
from alter_publish.definition.values import format_span, format_utc
from alter_publish.dns.dnssec import ds_line, ds_records
from alter_publish.dns.zonekeys import ZoneKey, ZoneKeyEntry, ZoneKeyRole, ZoneKeyState
from alter_publish.errors import RolloverError
from alter_publish.keys.store import KeyStore

#: A zone key with or without its private half: rollover logic needs only role and state.
AnyKey = TypeVar("AnyKey", ZoneKey, ZoneKeyEntry)


@dataclass(frozen=True, slots=True)
class RolloverTiming:
    """The RFC 7583 intervals of one zone, in seconds."""

    dnskey_ttl: int
    max_ttl: int
    signature_validity: int
    propagation_delay: int
    parent_ds_ttl: int
    parent_propagation_delay: int

    @classmethod
    def of(cls, spec: DNSSECSpec, *, dnskey_ttl: int, max_ttl: int) -> RolloverTiming:
        """Timing from the zone's settings and TTLs (``max_ttl``: largest signed TTL)."""
        return cls(
            dnskey_ttl=dnskey_ttl,
            max_ttl=max(max_ttl, dnskey_ttl),
            signature_validity=spec.signature_validity,
            propagation_delay=spec.propagation_delay,
            parent_ds_ttl=spec.parent_ds_ttl,
            parent_propagation_delay=spec.parent_propagation_delay,
        )

    @property
    def zsk_publish_wait(self) -> int:
        """Ipub: a pre-published ZSK is in every cache's DNSKEY set after this."""
        return self.propagation_delay + self.dnskey_ttl

    @property
    def zsk_retire_wait(self) -> int:
        """Iret (ZSK): no cache holds an RRSIG by the retired ZSK after this."""
        return self.propagation_delay + min(self.max_ttl, self.signature_validity)

    @property
    def ds_wait(self) -> int:
        """IpubP: every cache holds the DS set with the new KSK's DS after this."""
        return self.parent_propagation_delay + self.parent_ds_ttl

    @property
    def ksk_retire_wait(self) -> int:
        """Iret (KSK): no cache holds the DNSKEY set signed by the old KSK after this."""
        return self.propagation_delay + self.dnskey_ttl

    def to_mapping(self) -> dict[str, int]:
        """JSON form, intervals included."""
        return {
            **dataclasses.asdict(self),
            "zsk_publish_wait": self.zsk_publish_wait,
            "zsk_retire_wait": self.zsk_retire_wait,
            "ds_wait": self.ds_wait,
            "ksk_retire_wait": self.ksk_retire_wait,
        }


@dataclass(frozen=True, slots=True)
class NextStep:
    """What the running rollover does next, and from when.

    ``not_before`` is None when the step waits for the parent (``--ds-published``).
    """

    role: ZoneKeyRole
    action: str
    not_before: int | None

    def due(self, now: int) -> bool:
        """Whether ``step`` may run at ``now`` (without ``--ds-published``)."""
        return self.not_before is not None and now >= self.not_before

    def to_mapping(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "role": str(self.role),
            "action": self.action,
            "not_before": self.not_before,
            "waits_for_parent": self.not_before is None,
        }


@dataclass(frozen=True, slots=True)
class StepResult:
    """What a rollover call changed: the keys afterwards and what to tell the operator.

    ``ds_submit`` is the whole DS set the parent should hold (master-file lines) when
    it must change to include a new key; ``ds_remove`` the DS lines it may now drop.
    """

    zone: str
    keys: tuple[ZoneKeyEntry, ...]
    changed: tuple[str, ...]
    ds_submit: tuple[str, ...] = ()
    ds_remove: tuple[str, ...] = ()
    next_step: NextStep | None = None

    def to_mapping(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "zone": self.zone,
            "changed": list(self.changed),
            "ds_submit": list(self.ds_submit),
            "ds_remove": list(self.ds_remove),
            "keys": [key.index_entry() for key in self.keys],
            "next_step": None if self.next_step is None else self.next_step.to_mapping(),
        }


def _find(keys: Sequence[AnyKey], role: ZoneKeyRole, *states: ZoneKeyState) -> AnyKey | None:
    return next((key for key in keys if key.role is role and key.state in states), None)


def _label(key: AnyKey) -> str:
    return f"{key.role.upper()} {key.tag}"


def _ready(since: int, published: int | None) -> int:
    """When a state counts as published: when it was entered, or the first sign after."""
    return since if published is None else max(since, published)


def next_step(
    keys: Sequence[AnyKey], timing: RolloverTiming, published: int | None = None
) -> NextStep | None:
    """The next step of the rollover in progress, None when none is.

    ``published`` is when the zone with the current key states was first signed
    (waits count from then when it is later than the state change).
    """
    zsk, ksk = ZoneKeyRole.ZSK, ZoneKeyRole.KSK
    if (new := _find(keys, zsk, ZoneKeyState.PUBLISHED)) is not None:
        old = _find(keys, zsk, ZoneKeyState.ACTIVE)
        retire = f", retire {_label(old)}" if old else ""
        return NextStep(
            zsk,
            f"activate {_label(new)}{retire}",
            _ready(new.since, published) + timing.zsk_publish_wait,
        )
    if (old := _find(keys, zsk, ZoneKeyState.RETIRED)) is not None:
        return NextStep(
            zsk,
            f"remove {_label(old)} from the DNSKEY set",
            _ready(old.since, published) + timing.zsk_retire_wait,
        )
    if (new := _find(keys, ksk, ZoneKeyState.DS_SUBMITTED)) is not None:
        return NextStep(
            ksk, f"confirm the parent publishes the DS of {_label(new)} (--ds-published)", None
        )
    if (new := _find(keys, ksk, ZoneKeyState.DS_PUBLISHED)) is not None:
        old = _find(keys, ksk, ZoneKeyState.ACTIVE)
        retire = f", retire {_label(old)}" if old else ""
        return NextStep(ksk, f"activate {_label(new)}{retire}", new.since + timing.ds_wait)
    if (old := _find(keys, ksk, ZoneKeyState.RETIRED)) is not None:
        return NextStep(
            ksk,
            f"withdraw the DS of {_label(old)} from the parent",
            _ready(old.since, published) + timing.ksk_retire_wait,
        )
    if (old := _find(keys, ksk, ZoneKeyState.DS_WITHDRAWN)) is not None:
        return NextStep(
            ksk,
            f"confirm the parent no longer serves the DS of {_label(old)} (--ds-published)",
            None,
        )
    return None


def begin(
    store: KeyStore,
    zone: str,
    role: ZoneKeyRole,
    *,
    now: int,
    timing: RolloverTiming,
    published: int | None = None,
) -> StepResult:
    """Start a rollover: make the new key (a ZSK pre-published, a KSK awaiting its DS).

    Raises:
        RolloverError: a rollover is already running, or the zone has no active key set.
        KeyStoreError: the key store cannot be read or written.
    """
    keys = store.zones.entries(zone)
    running = next_step(keys, timing, published)
    if running is not None:
        raise RolloverError(
            f"a {running.role.upper()} rollover is running (next: {running.action}); "
            "finish it with 'alter-publish dnssec step' first",
            where=zone,
        )
    if not any(key.role is role and key.state is ZoneKeyState.ACTIVE for key in keys):
        raise RolloverError(f"zone {zone} has no active {role.upper()} to roll", where=zone)
    state = ZoneKeyState.PUBLISHED if role is ZoneKeyRole.ZSK else ZoneKeyState.DS_SUBMITTED
    new = store.zones.add(zone, role, state, now=now).entry
    keys = store.zones.entries(zone)
    if role is ZoneKeyRole.ZSK:
        changed = (f"{_label(new)} created and published (not signing yet)",)
        return StepResult(zone, keys, changed, next_step=next_step(keys, timing, now))
    changed = (f"{_label(new)} created; submit its DS to the parent zone",)
    submit = ds_records(dns.name.from_text(zone), keys, timing.dnskey_ttl)
    return StepResult(zone, keys, changed, submit, next_step=next_step(keys, timing, now))


def step(
    store: KeyStore,
    zone: str,
    *,
    now: int,
    timing: RolloverTiming,
    ds_published: bool = False,
    published: int | None = None,
) -> StepResult:
    """Take the next step of the running rollover, if its time has come.

    Raises:
        RolloverError: no rollover is running, it is too early, or the step waits for
            (or was wrongly given) ``ds_published``.
        KeyStoreError: the key store cannot be read or written.
    """
    every = store.zones.entries(zone, removed=True)
    keys = tuple(key for key in every if key.state is not ZoneKeyState.REMOVED)
    upcoming = next_step(keys, timing, published)
    if upcoming is None:
        raise RolloverError(
            "no rollover is running; start one with 'alter-publish dnssec rollover'", where=zone
        )
    if upcoming.not_before is None and not ds_published:
        raise RolloverError(
            f"waiting for the parent: {upcoming.action}; run step --ds-published once the "
            "parent zone serves the new DS",
            where=zone,
        )
    if upcoming.not_before is not None and ds_published:
        raise RolloverError(
            f"--ds-published is not what this step waits for (next: {upcoming.action})",
            where=zone,
        )
    if upcoming.not_before is not None and now < upcoming.not_before:
        raise RolloverError(
            f"too early to {upcoming.action}: not before {format_utc(upcoming.not_before)} "
            f"(in {format_span(upcoming.not_before - now)}); caches may still hold the old data",
            where=zone,
        )
    moves, changed, remove = _transition(keys, upcoming.role)
    after = tuple(key.moved(moves[key.tag], now) if key.tag in moves else key for key in every)
    store.zones.save(zone, after)
    live = tuple(key for key in after if key.state is not ZoneKeyState.REMOVED)
    origin = dns.name.from_text(zone)
    return StepResult(
        zone,
        live,
        tuple(changed),
        ds_remove=tuple(ds_line(origin, k, timing.dnskey_ttl) for k in after if k.tag in remove),
        next_step=next_step(live, timing, now),
    )


def _transition(
    keys: Sequence[ZoneKeyEntry], role: ZoneKeyRole
) -> tuple[dict[int, ZoneKeyState], list[str], set[int]]:
    """The state changes of the next step: tag -> new state, messages, DS to withdraw."""
    moves: dict[int, ZoneKeyState] = {}
    changed: list[str] = []
    remove: set[int] = set()
    active = _find(keys, role, ZoneKeyState.ACTIVE)
    if role is ZoneKeyRole.ZSK:
        if (new := _find(keys, role, ZoneKeyState.PUBLISHED)) is not None:
            moves[new.tag] = ZoneKeyState.ACTIVE
            changed.append(f"{_label(new)} active (signs the zone)")
            if active is not None:
                moves[active.tag] = ZoneKeyState.RETIRED
                changed.append(f"{_label(active)} retired (stays in the DNSKEY set, not signing)")
        elif (old := _find(keys, role, ZoneKeyState.RETIRED)) is not None:
            moves[old.tag] = ZoneKeyState.REMOVED
            changed.append(f"{_label(old)} removed from the DNSKEY set; ZSK rollover complete")
        return moves, changed, remove
    if (new := _find(keys, role, ZoneKeyState.DS_SUBMITTED)) is not None:
        moves[new.tag] = ZoneKeyState.DS_PUBLISHED
        changed.append(f"the parent serves the DS of {_label(new)}")
    elif (new := _find(keys, role, ZoneKeyState.DS_PUBLISHED)) is not None:
        moves[new.tag] = ZoneKeyState.ACTIVE
        changed.append(f"{_label(new)} active (in the DNSKEY set, signs it)")
        if active is not None:
            moves[active.tag] = ZoneKeyState.RETIRED
            changed.append(f"{_label(active)} retired (out of the DNSKEY set; its DS stays)")
    elif (old := _find(keys, role, ZoneKeyState.RETIRED)) is not None:
        moves[old.tag] = ZoneKeyState.DS_WITHDRAWN
        remove.add(old.tag)
        changed.append(
            f"{_label(old)} ds-withdrawn: withdraw its DS from the parent (CDS and CDNSKEY "
            "now list the new KSK only)"
        )
    elif (old := _find(keys, role, ZoneKeyState.DS_WITHDRAWN)) is not None:
        moves[old.tag] = ZoneKeyState.REMOVED
        changed.append(
            f"the parent no longer serves the DS of {_label(old)}: removed; KSK rollover complete"
        )
    return moves, changed, remove
