"""DNSSEC zone keys: a key's role (KSK or ZSK), its state in a rollover, its DNSKEY and tag.

The model only: the files that hold zone keys are :mod:`alter_publish.keys.zonestore`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

import dns.dnssec
import dns.dnssectypes
import dns.rdtypes.ANY.DNSKEY
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from alter_publish.format.envelope import b64url, public_bytes

DNSKEY_FLAGS_ZSK = 256
DNSKEY_FLAGS_KSK = 257


class ZoneKeyRole(StrEnum):
    """What a DNSSEC zone key signs: the DNSKEY rrset (KSK) or everything else (ZSK)."""

    KSK = "ksk"
    ZSK = "zsk"

    @property
    def flags(self) -> int:
        """DNSKEY flags: zone key, plus SEP for a KSK."""
        return DNSKEY_FLAGS_KSK if self is ZoneKeyRole.KSK else DNSKEY_FLAGS_ZSK


class ZoneKeyState(StrEnum):
    """Where a DNSSEC key is in its life (docs/dnssec.md, "Rollovers").

    A ZSK goes published -> active -> retired -> removed (pre-publication); a new KSK
    goes ds-submitted -> ds-published -> active, and the KSK it replaces active ->
    retired -> ds-withdrawn -> removed (double-DS: ``ds-withdrawn`` is a retired KSK
    whose DS the parent is asked to drop, removed once it serves it no more).
    """

    DS_SUBMITTED = "ds-submitted"
    DS_PUBLISHED = "ds-published"
    PUBLISHED = "published"
    ACTIVE = "active"
    RETIRED = "retired"
    DS_WITHDRAWN = "ds-withdrawn"
    REMOVED = "removed"


class _ZoneKeyStateful:
    """What a zone key's role and state mean for the zone (shared by key and entry)."""

    __slots__ = ()
    role: ZoneKeyRole
    state: ZoneKeyState

    @property
    def in_dnskey(self) -> bool:
        """Whether the zone's DNSKEY rrset carries this key."""
        if self.role is ZoneKeyRole.KSK:
            return self.state is ZoneKeyState.ACTIVE
        return self.state in (ZoneKeyState.PUBLISHED, ZoneKeyState.ACTIVE, ZoneKeyState.RETIRED)

    @property
    def signs(self) -> bool:
        """Whether this key makes RRSIGs (DNSKEY rrset for a KSK, the rest for a ZSK)."""
        return self.state is ZoneKeyState.ACTIVE

    @property
    def in_ds(self) -> bool:
        """Whether the parent zone should hold a DS for this key."""
        return self.role is ZoneKeyRole.KSK and self.state in (
            ZoneKeyState.DS_SUBMITTED,
            ZoneKeyState.DS_PUBLISHED,
            ZoneKeyState.ACTIVE,
            ZoneKeyState.RETIRED,
        )


def dnskey_of(public_key: bytes, role: ZoneKeyRole) -> dns.rdtypes.ANY.DNSKEY.DNSKEY:
    """The DNSKEY rdata of an Ed25519 public key in ``role`` (algorithm 15)."""
    return dns.dnssec.make_dnskey(
        Ed25519PublicKey.from_public_bytes(public_key),
        dns.dnssectypes.Algorithm.ED25519,
        flags=role.flags,
    )


@dataclass(frozen=True, slots=True)
class ZoneKeyEntry(_ZoneKeyStateful):
    """A zone key as ``keys.json`` lists it: everything but the private key."""

    zone: str
    role: ZoneKeyRole
    tag: int
    created: int
    state: ZoneKeyState
    since: int
    public_key: bytes

    @property
    def dnskey(self) -> dns.rdtypes.ANY.DNSKEY.DNSKEY:
        """The DNSKEY rdata (algorithm 15, ED25519)."""
        return dnskey_of(self.public_key, self.role)

    def moved(self, state: ZoneKeyState, now: int) -> ZoneKeyEntry:
        """This key in ``state`` from ``now`` on."""
        return dataclasses.replace(self, state=state, since=now)

    def index_entry(self) -> dict[str, Any]:
        """This key's line in ``keys.json`` (no secrets)."""
        return {
            "role": str(self.role),
            "tag": self.tag,
            "algorithm": int(dns.dnssectypes.Algorithm.ED25519),
            "file": key_file_name(self.role, self.tag),
            "created": self.created,
            "state": str(self.state),
            "since": self.since,
            "public_key": b64url(self.public_key),
        }


@dataclass(frozen=True, slots=True)
class ZoneKey(_ZoneKeyStateful):
    """One DNSSEC key of a zone and its state. Its repr never shows the private key."""

    zone: str
    role: ZoneKeyRole
    created: int
    private_key: Ed25519PrivateKey = field(repr=False)
    state: ZoneKeyState = ZoneKeyState.ACTIVE
    since: int = -1  # when the key entered ``state``; -1 means at ``created``

    def __post_init__(self) -> None:
        if self.since < 0:
            object.__setattr__(self, "since", self.created)

    def moved(self, state: ZoneKeyState, now: int) -> ZoneKey:
        """This key in ``state`` from ``now`` on."""
        return ZoneKey(self.zone, self.role, self.created, self.private_key, state, now)

    @property
    def entry(self) -> ZoneKeyEntry:
        """The key without its private half."""
        public = public_bytes(self.private_key)
        return ZoneKeyEntry(
            self.zone, self.role, self.tag, self.created, self.state, self.since, public
        )

    @property
    def dnskey(self) -> dns.rdtypes.ANY.DNSKEY.DNSKEY:
        """The DNSKEY rdata (algorithm 15, ED25519)."""
        return dnskey_of(public_bytes(self.private_key), self.role)

    @property
    def tag(self) -> int:
        """The RFC 4034 key tag of the DNSKEY."""
        return dns.dnssec.key_id(self.dnskey)

    def index_entry(self) -> dict[str, Any]:
        """This key's line in ``keys.json`` (no secrets)."""
        return self.entry.index_entry()


def key_order(key: ZoneKey | ZoneKeyEntry) -> tuple[bool, int, int]:
    """Sort key: KSKs first, each by creation then tag."""
    return (key.role is not ZoneKeyRole.KSK, key.created, key.tag)


def key_file_name(role: ZoneKeyRole, tag: int) -> str:
    """The private key file of a zone key (``ksk-01234.pem``)."""
    return f"{role}-{tag:05d}.pem"


_Key = TypeVar("_Key", ZoneKey, ZoneKeyEntry)

#: The states of a KSK that mean a KSK rollover runs (double-DS, RFC 7583 3.3.2).
_KSK_ROLLING = frozenset(
    {
        ZoneKeyState.DS_SUBMITTED,
        ZoneKeyState.DS_PUBLISHED,
        ZoneKeyState.RETIRED,
        ZoneKeyState.DS_WITHDRAWN,
    }
)


def cds_keys(keys: Sequence[_Key]) -> tuple[_Key, ...]:
    """The KSKs the zone's CDS and CDNSKEY rrsets list (RFC 7344, RFC 8078): while a KSK
    rollover runs (a KSK ds-submitted, ds-published, retired or ds-withdrawn), every KSK
    whose DS the parent should hold at that moment (``in_ds``: the zone's DS file); none
    otherwise.

    A retired KSK is listed until Iret has passed: RFC 7583 double-DS keeps its DS at
    the parent for Iret after the DNSKEY change, and a parent polling CDS must not drop
    it sooner. Then it is ``ds-withdrawn``: the sets list the new KSK only, which tells a
    polling parent to drop the old DS (no CDS at all would tell it to change nothing,
    RFC 7344 4.1); they go once the parent serves the old DS no more (``removed``).
    """
    if not any(key.role is ZoneKeyRole.KSK and key.state in _KSK_ROLLING for key in keys):
        return ()
    return tuple(key for key in keys if key.in_ds)
