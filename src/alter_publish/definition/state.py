"""The serial state beside each definition: ``zones/<zone>.state.json``.

What the last published zone was: its SOA serial and the digest of the content it
labels, the RRSIG window, the zone key states and the TTLs rollover waits depend on,
and the SHA-256 of the zone file as written. ``sign`` writes it; ``verify`` and the
DNSSEC key commands read it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from alter_publish.definition.model import DNSSECSpec
from alter_publish.errors import RenderError
from alter_publish.fileio import Chunk, buffer_of
from alter_publish.threads import soon

INCEPTION_BACKDATE_SECONDS = 3600  # tolerate validators whose clocks run behind
#: Renewals (RRSIGs and envelopes) are spread over slots of this length: each name falls
#: due in its own slot, so a daily run renews a share of the zone, never all of it.
RENEWAL_SLOT_SECONDS = 86_400
_SLOT_DOMAIN = b"alter-publish renewal slot\0"


def renewal_slots(period: int) -> tuple[int, int]:
    """(slots, seconds per slot) for renewals due every ``period`` seconds: whole days,
    or one slot of ``period`` when it is under two days (no spreading)."""
    slots = period // RENEWAL_SLOT_SECONDS
    if slots < 2:
        return 1, max(period, 1)
    return slots, RENEWAL_SLOT_SECONDS


def renewal_slot(name: bytes, slots: int) -> int:
    """The slot of a name (its lower-case wire form, or owner text): the first 8 octets
    of SHA-256 over a fixed label and the name, modulo ``slots``. The owner name
    includes the zone, so every zone spreads differently."""
    digest = hashlib.sha256(_SLOT_DOMAIN + name).digest()
    return int.from_bytes(digest[:8], "big") % slots


@dataclass(frozen=True, slots=True)
class SignatureWindow:
    """Inception and expiration (POSIX seconds) shared by every RRSIG of one signing."""

    inception: int
    expiration: int

    @classmethod
    def fresh(cls, now: int, validity: int) -> SignatureWindow:
        """A new window: valid from an hour before ``now`` for ``validity`` seconds."""
        return cls(inception=max(now - INCEPTION_BACKDATE_SECONDS, 0), expiration=now + validity)

    @classmethod
    def newest(cls, now: int, validity: int, refresh: int) -> SignatureWindow:
        """The zone's window at ``now``: the one starting at the last slot boundary
        (``renewal_slots(validity - refresh)``), the newest any owner's can be."""
        _, length = renewal_slots(validity - refresh)
        return cls.fresh(now - now % length, validity)

    @classmethod
    def for_owner(cls, name: bytes, now: int, validity: int, refresh: int) -> SignatureWindow:
        """The window of one owner's RRSIGs at ``now``: its slot's (see docs/dnssec.md,
        'Spread renewals'). Windows start on the owner's slot every ``slots`` slots, so
        one is due (within ``refresh`` of expiring) exactly when the next starts."""
        slots, _ = renewal_slots(validity - refresh)
        return cls.for_slot(renewal_slot(name, slots), now, validity, refresh)

    @classmethod
    def for_slot(cls, slot: int, now: int, validity: int, refresh: int) -> SignatureWindow:
        """The window at ``now`` of the owners in ``slot`` (:meth:`for_owner`)."""
        slots, length = renewal_slots(validity - refresh)
        cycle = slots * length
        return cls.fresh(now - (now - slot * length) % cycle, validity)

    def renews_at(self, spec: DNSSECSpec) -> int:
        """When, after a zone window (:meth:`newest`), the next slot starts: some
        owner's RRSIGs may fall due from then."""
        _, length = renewal_slots(spec.signature_validity - spec.refresh)
        return self.expiration - spec.signature_validity + length

    def reusable(self, now: int, spec: DNSSECSpec) -> bool:
        """True when signatures made in this window may stay: started, not yet due for refresh,
        and made with the zone's current validity."""
        return (
            self.inception <= now < self.expiration - spec.refresh
            and self.expiration - self.inception
            == spec.signature_validity + INCEPTION_BACKDATE_SECONDS
        )

    def to_mapping(self) -> dict[str, int]:
        """JSON-ready form."""
        return {"inception": self.inception, "expiration": self.expiration}


SERIAL_MAX = 2**32 - 1


STATE_FORMAT = "alter-publish/state/1"


def state_path_for(zone_file: Path) -> Path:
    """``zones/<zone>.yaml`` -> ``zones/<zone>.state.json`` (the SOA serial state)."""
    return zone_file.with_suffix(".state.json")


@dataclass(frozen=True, slots=True)
class ZoneTTLs:
    """TTLs that rollover waits depend on, for the current key states and those before."""

    max_ttl: int
    dnskey_ttl: int
    prior_max_ttl: int = 0
    prior_dnskey_ttl: int = 0

    @property
    def cached_max(self) -> int:
        """The longest any cache may keep a signed rrset published under either states."""
        return max(self.max_ttl, self.prior_max_ttl)

    @property
    def cached_dnskey(self) -> int:
        """The longest any cache may keep a DNSKEY rrset published under either states."""
        return max(self.dnskey_ttl, self.prior_dnskey_ttl)

    def next(self, max_ttl: int, dnskey_ttl: int, *, same_keys: bool) -> ZoneTTLs:
        """After a sign with these TTLs: same key states widen, new states shift."""
        if same_keys:
            return ZoneTTLs(
                max(self.max_ttl, max_ttl),
                max(self.dnskey_ttl, dnskey_ttl),
                self.prior_max_ttl,
                self.prior_dnskey_ttl,
            )
        return ZoneTTLs(max_ttl, dnskey_ttl, self.max_ttl, self.dnskey_ttl)

    def to_mapping(self) -> dict[str, int]:
        """JSON form."""
        return {
            "max_ttl": self.max_ttl,
            "dnskey_ttl": self.dnskey_ttl,
            "prior_max_ttl": self.prior_max_ttl,
            "prior_dnskey_ttl": self.prior_dnskey_ttl,
        }

    @classmethod
    def from_mapping(cls, doc: Mapping[str, Any]) -> ZoneTTLs:
        """Read the JSON form (fields missing in older files count as 0)."""
        max_ttl = int(doc["max_ttl"])
        return cls(
            max_ttl,
            int(doc.get("dnskey_ttl", max_ttl)),
            int(doc.get("prior_max_ttl", 0)),
            int(doc.get("prior_dnskey_ttl", 0)),
        )


@dataclass(frozen=True, slots=True)
class SerialState:
    """The last published serial and the digest of the zone content it labels."""

    serial: int
    digest: str
    signatures: SignatureWindow | None = None
    #: The zone keys the published zone was signed with, as ``role-tag-state``.
    keys: tuple[str, ...] = ()
    #: When a zone with exactly those key states was first published.
    keys_since: int | None = None
    #: The largest TTLs (any signed rrset, DNSKEY) published with these key states, and
    #: with the states before: caches may hold either, so rollover waits use both.
    ttls: ZoneTTLs | None = None
    #: SHA-256 of the zone file as written (``verify`` compares the file with it).
    zone_sha256: str | None = None
    #: SHA-256 of the zone file it replaces: the state is written before the outputs are
    #: switched, so a run killed in between leaves that file, complete, in place.
    previous_zone_sha256: str | None = None

    def replacing(self, old: SerialState | None, published: str | None) -> SerialState:
        """This state, written before the outputs are switched while they hold the zone
        file of SHA-256 ``published`` (None: unknown, take ``old``'s): it remembers that
        digest, which ``verify`` accepts until the switch (:meth:`switched`)."""
        if old is None or self.zone_sha256 is None:
            return self
        if published is None:
            published = old.zone_sha256
        if published == self.zone_sha256:
            published = None
        return dataclasses.replace(self, previous_zone_sha256=published)

    def switched(self) -> SerialState:
        """This state once the outputs hold its zone: nothing older is accepted."""
        return dataclasses.replace(self, previous_zone_sha256=None)

    def to_text(self) -> str:
        """JSON form."""
        doc: dict[str, Any] = {"format": STATE_FORMAT, "serial": self.serial, "digest": self.digest}
        if self.signatures is not None:
            doc["signatures"] = self.signatures.to_mapping()
        if self.keys:
            doc["zone_keys"] = {
                "keys": list(self.keys),
                "since": self.keys_since,
                **(self.ttls.to_mapping() if self.ttls else {}),
            }
        if self.zone_sha256 is not None:
            doc["zone_sha256"] = self.zone_sha256
        if self.previous_zone_sha256 is not None:
            doc["previous_zone_sha256"] = self.previous_zone_sha256
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"

    @classmethod
    def read(cls, path: Path) -> SerialState | None:
        """Read the state file; None when it does not exist.

        Raises:
            RenderError: the file is unreadable or not a state document.
        """
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            window = doc.get("signatures")
            signatures = (
                None
                if window is None
                else SignatureWindow(int(window["inception"]), int(window["expiration"]))
            )
            zone_keys = doc.get("zone_keys") or {}
            if not isinstance(zone_keys, dict):
                raise TypeError("zone_keys is not an object")
            return cls(
                serial=int(doc["serial"]),
                digest=str(doc["digest"]),
                signatures=signatures,
                keys=tuple(str(key) for key in zone_keys.get("keys", ())),
                keys_since=_optional_int(zone_keys.get("since")),
                ttls=ZoneTTLs.from_mapping(zone_keys) if "max_ttl" in zone_keys else None,
                zone_sha256=_optional_str(doc.get("zone_sha256")),
                previous_zone_sha256=_optional_str(doc.get("previous_zone_sha256")),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, OverflowError) as exc:
            raise RenderError(f"not a serial state file ({exc})", where=str(path)) from exc

    def next_for(self, digest: str, now: int) -> int:
        """The serial for content ``digest``: unchanged content keeps the serial."""
        if digest == self.digest:
            return self.serial
        return self.moved_on(now)

    def moved_on(self, now: int) -> int:
        """The serial for content other than the state's."""
        return min(max(self.serial + 1, now), SERIAL_MAX)


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _optional_str(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"not a string: {value!r}")
    return value


def zone_sha256(parts: Iterable[str | Chunk]) -> str:
    """SHA-256 (hex) of a zone file given as the parts written one after the other."""
    sha = hashlib.sha256()
    for part in parts:
        sha.update(part.encode() if isinstance(part, str) else buffer_of(part))
    return sha.hexdigest()


def zone_sha256_soon(
    parts: Sequence[str | Chunk], name: str = "zone-sha256", *, thread: bool = True
) -> Callable[[], str]:
    """:func:`zone_sha256` of ``parts`` made in a thread called ``name`` while the caller
    goes on (hashlib lets go of the interpreter's lock for large buffers: 127 MB at
    100,000 handles, 0.1 s). Without ``thread``, or no thread to spare: made now.

    Returns:
        A function that waits for the digest and gives it; call it on every path (it
        raises what the thread raised: ``TypeError`` for a part that is not a text or
        a chunk), so that no thread outlives its caller.
    """
    return soon(lambda: zone_sha256(parts), name, thread=thread)


class KeyState(Protocol):
    """A zone key as far as the state records it (``ZoneKey`` or ``ZoneKeyEntry``)."""

    @property
    def role(self) -> object: ...
    @property
    def tag(self) -> int: ...
    @property
    def state(self) -> object: ...


def key_states(zone_keys: Sequence[KeyState]) -> tuple[str, ...]:
    """The zone keys as the ``role-tag-state`` strings the serial state records."""
    return tuple(f"{key.role}-{key.tag}-{key.state}" for key in zone_keys)
