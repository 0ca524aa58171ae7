"""DNSSEC zone signing (Ed25519, RFC 8080): DNSKEY, NSEC or NSEC3 chain, RRSIGs, DS.

Signing is deterministic: Ed25519 signatures depend only on the key and the
signed bytes, and every RRSIG of a run shares one :class:`SignatureWindow`
(inception and expiration). ``sign`` keeps the window of the previous run while
it is outside the refresh period, so unchanged inputs give byte-identical output
and RRSIGs are re-made only when they are due.

The signing input is built here rather than through ``dns.dnssec.sign``: per
RFC 4034 section 6 it is the RRSIG rdata without the signature followed by the
rrset in canonical form (lowercased owner, original TTL, rdata sorted by their
canonical wire form).
"""

from __future__ import annotations

import base64
import struct
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import dns.dnssec
import dns.dnssectypes
import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.NSEC
import dns.rdtypes.ANY.NSEC3
import dns.rdtypes.ANY.NSEC3PARAM
import dns.rdtypes.util
import dns.zone

from alter_publish.errors import SigningError
from alter_publish.keys import ZoneKey, ZoneKeyEntry, ZoneKeyRole
from alter_publish.model import DNSSECSpec
from alter_publish.nsec3 import NSEC3_HASH_SHA1, nsec3_hash

ALGORITHM = dns.dnssectypes.Algorithm.ED25519
INCEPTION_BACKDATE_SECONDS = 3600  # tolerate validators whose clocks run behind
NSEC3PARAM_TTL_SECONDS = 0  # RFC 5155 4: not used by resolvers; 0 as BIND does
DS_DIGEST = "SHA256"
RRSIG_TIME_LIMIT = 2**32  # RRSIG times are 32-bit seconds (serial arithmetic aside)

_IN = dns.rdataclass.IN
_RRSIG = dns.rdatatype.RRSIG
_NSEC = dns.rdatatype.NSEC
_NSEC3 = dns.rdatatype.NSEC3
_NSEC3PARAM = dns.rdatatype.NSEC3PARAM
_DNSKEY = dns.rdatatype.DNSKEY
_SOA = dns.rdatatype.SOA
_TXT = dns.rdatatype.TXT
_NS = dns.rdatatype.NS
_DS = dns.rdatatype.DS
_NONE = dns.rdatatype.NONE
_RRSIG_HEADER = struct.Struct("!HBBIIIH")
_RR_FIXED = struct.Struct("!HHIH")
# dnspython's rdata constructors are untyped; these aliases give them signatures once.
_NSEC_RDATA: Callable[..., dns.rdtypes.ANY.NSEC.NSEC] = dns.rdtypes.ANY.NSEC.NSEC
_NSEC3_RDATA: Callable[..., dns.rdtypes.ANY.NSEC3.NSEC3] = dns.rdtypes.ANY.NSEC3.NSEC3
_NSEC3PARAM_RDATA: Callable[..., dns.rdtypes.ANY.NSEC3PARAM.NSEC3PARAM] = (
    dns.rdtypes.ANY.NSEC3PARAM.NSEC3PARAM
)
_DNSSEC_TYPES = frozenset({_RRSIG, _NSEC, _NSEC3, _NSEC3PARAM, _DNSKEY})


@dataclass(frozen=True, slots=True)
class SignatureWindow:
    """Inception and expiration (POSIX seconds) shared by every RRSIG of one signing."""

    inception: int
    expiration: int

    @classmethod
    def fresh(cls, now: int, validity: int) -> SignatureWindow:
        """A new window: valid from an hour before ``now`` for ``validity`` seconds."""
        return cls(inception=max(now - INCEPTION_BACKDATE_SECONDS, 0), expiration=now + validity)

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


@dataclass(frozen=True, slots=True)
class SignedZone:
    """What signing added to a zone."""

    records_text: str
    ds_text: str
    window: SignatureWindow
    signatures: int
    denial: str
    max_ttl: int = 0  # the largest TTL of a signed rrset (RFC 7583's TTLsig)


def ds_line(origin: dns.name.Name, key: ZoneKey | ZoneKeyEntry, ttl: int) -> str:
    """The DS (SHA-256) of one key as a master-file line."""
    ds = dns.dnssec.make_ds(origin, key.dnskey, DS_DIGEST)
    return f"{origin.to_text()} {ttl} IN DS {ds.to_text()}"


def ds_records(
    origin: dns.name.Name, keys: Sequence[ZoneKey | ZoneKeyEntry], ttl: int
) -> tuple[str, ...]:
    """The DS of each KSK the parent should hold (see ``ZoneKey.in_ds``), as master-file lines."""
    return tuple(ds_line(origin, key, ttl) for key in keys if key.in_ds)


def choose_window(previous: SignatureWindow | None, now: int, spec: DNSSECSpec) -> SignatureWindow:
    """Keep the previous window while it is reusable, else start a fresh one."""
    if previous is not None and previous.reusable(now, spec):
        return previous
    return SignatureWindow.fresh(now, spec.signature_validity)


# --- canonical form ---------------------------------------------------------------


def _labels(name: dns.name.Name) -> int:
    """RRSIG labels field: owner labels without the root and a leading wildcard."""
    count = len(name) - 1
    return count - 1 if name.is_wild() else count


def canonical_key(name: dns.name.Name) -> tuple[bytes, ...]:
    """Sort key giving RFC 4034 6.1 canonical name order (far faster than Name.__lt__)."""
    return tuple(label.lower() for label in reversed(name.labels))


def _wire(name: dns.name.Name) -> bytes:
    wire = name.to_wire()
    assert wire is not None  # noqa: S101 (to_wire without a file returns bytes)
    return wire


def _digestable(rdata: dns.rdata.Rdata, origin: dns.name.Name) -> bytes:
    """Canonical rdata wire (RFC 4034 6.2); TXT, the bulk of our zones, by hand."""
    if rdata.rdtype == _TXT:
        strings: tuple[bytes, ...] = rdata.strings  # type: ignore[attr-defined]  # (TXT rdata)
        return b"".join(bytes((len(s),)) + s for s in strings)
    if rdata.rdtype == _NSEC:  # next name as is (RFC 6840 5.1), then the type bitmap
        nsec: dns.rdtypes.ANY.NSEC.NSEC = rdata  # type: ignore[assignment]  # (NSEC rdata)
        windows = b"".join(bytes((w, len(bits))) + bits for w, bits in nsec.windows)
        return _wire(nsec.next) + windows
    return rdata.to_digestable(origin)


def _signed_data(
    header: bytes, owner_wire: bytes, rdtype: int, ttl: int, rdata_wires: Iterable[bytes]
) -> bytes:
    parts = [header]
    for rdata_wire in rdata_wires:
        parts.append(owner_wire + _RR_FIXED.pack(rdtype, _IN, ttl, len(rdata_wire)) + rdata_wire)
    return b"".join(parts)


@dataclass(frozen=True, slots=True)
class _Signer:
    """One key's fixed RRSIG fields, so each signature costs one header pack and one sign."""

    key: ZoneKey
    tag: int
    window: SignatureWindow
    origin: dns.name.Name
    origin_wire: bytes
    origin_text: str
    expiration_text: str
    inception_text: str

    @classmethod
    def make(cls, key: ZoneKey, window: SignatureWindow, origin: dns.name.Name) -> _Signer:
        return cls(
            key=key,
            tag=key.tag,
            window=window,
            origin=origin,
            origin_wire=_wire(origin.canonicalize()),
            origin_text=origin.to_text(),
            expiration_text=_sigtime(window.expiration),
            inception_text=_sigtime(window.inception),
        )

    def sign(self, owner: dns.name.Name, owner_wire: bytes, rrs: _RRs) -> str:
        """The master-file line of the RRSIG over ``rrs`` at ``owner``."""
        labels = _labels(owner)
        rdtype, ttl = rrs.rdtype, rrs.ttl
        header = (
            _RRSIG_HEADER.pack(
                rdtype,
                ALGORITHM,
                labels,
                ttl,
                self.window.expiration,
                self.window.inception,
                self.tag,
            )
            + self.origin_wire
        )
        wires = sorted({_digestable(rdata, self.origin) for rdata in rrs.rdatas})
        signature = self.key.private_key.sign(_signed_data(header, owner_wire, rdtype, ttl, wires))
        return (
            f"{owner.to_text()} {ttl} IN RRSIG {dns.rdatatype.to_text(rdtype)} "
            f"{int(ALGORITHM)} {labels} {ttl} {self.expiration_text} {self.inception_text} "
            f"{self.tag} {self.origin_text} {base64.b64encode(signature).decode('ascii')}\n"
        )


def _sigtime(seconds: int) -> str:
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(seconds))


# --- the zone's shape ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Shape:
    """Which names are authoritative, which are delegations, and the empty non-terminals."""

    authoritative: tuple[dns.name.Name, ...]  # canonical order
    cuts: frozenset[dns.name.Name]
    empty_non_terminals: frozenset[dns.name.Name]


def _shape(zone: dns.zone.Zone, origin: dns.name.Name) -> _Shape:
    names = sorted(zone.nodes, key=canonical_key)
    cuts = {
        name
        for name in names
        if name != origin and zone.nodes[name].get_rdataset(_IN, _NS) is not None
    }
    authoritative = []
    for name in names:
        parent = name.parent() if name != origin else None
        occluded = False
        while parent is not None and parent != origin and len(parent) > len(origin):
            if parent in cuts:
                occluded = True
                break
            parent = parent.parent()
        if not occluded:
            authoritative.append(name)
    present = set(authoritative)
    ents: set[dns.name.Name] = set()
    for name in authoritative:
        parent = name
        while len(parent) > len(origin) + 1:
            parent = parent.parent()
            if parent not in present:
                ents.add(parent)
    return _Shape(tuple(authoritative), frozenset(cuts), frozenset(ents))


@dataclass(frozen=True, slots=True)
class _RRs:
    """One rrset to publish and sign: its type, TTL and rdata (no dnspython set overhead)."""

    rdtype: dns.rdatatype.RdataType
    ttl: int
    rdatas: tuple[dns.rdata.Rdata, ...]


_Records = dict[dns.name.Name, list[_RRs]]


def _types_at(rrs: Iterable[_RRs], *, delegation: bool) -> list[dns.rdatatype.RdataType]:
    types = [item.rdtype for item in rrs if item.rdtype != _RRSIG]
    if delegation:
        types = [rdtype for rdtype in types if rdtype in (_NS, _DS)]
    return types


def _signed_here(types: Iterable[dns.rdatatype.RdataType], *, delegation: bool) -> bool:
    return any(rdtype == _DS or not delegation for rdtype in types)


def _negative_ttl(zone: dns.zone.Zone, origin: dns.name.Name) -> int:
    soa = zone.nodes[origin].get_rdataset(_IN, _SOA)
    if soa is None:
        raise SigningError("zone has no SOA at its apex", where=origin.to_text())
    minimum = soa[0].minimum
    return min(int(minimum), soa.ttl)


def _add_nsec_chain(records: _Records, shape: _Shape, ttl: int) -> None:
    names = shape.authoritative
    for index, name in enumerate(names):
        following = names[(index + 1) % len(names)]
        types = _types_at(records[name], delegation=name in shape.cuts)
        bitmap = dns.rdtypes.util.Bitmap.from_rdtypes([*types, _RRSIG, _NSEC]).windows
        nsec = _NSEC_RDATA(_IN, _NSEC, following, bitmap)
        records[name].append(_RRs(_NSEC, ttl, (nsec,)))


def _add_nsec3_chain(
    records: _Records, origin: dns.name.Name, shape: _Shape, ttl: int, spec: DNSSECSpec
) -> tuple[dns.name.Name, ...]:
    """Add NSEC3PARAM and one NSEC3 per authoritative name and empty non-terminal.

    Returns:
        The NSEC3 owner names.
    """
    salt = bytes.fromhex(spec.nsec3_salt)
    iterations = spec.nsec3_iterations
    param = _NSEC3PARAM_RDATA(_IN, _NSEC3PARAM, NSEC3_HASH_SHA1, 0, iterations, salt)
    records[origin].append(_RRs(_NSEC3PARAM, NSEC3PARAM_TTL_SECONDS, (param,)))
    entries: list[tuple[bytes, list[dns.rdatatype.RdataType]]] = []
    for name in (*shape.authoritative, *shape.empty_non_terminals):  # order: by hash, below
        hashed = nsec3_hash(name, salt, iterations, NSEC3_HASH_SHA1)  # same as the server
        types: list[dns.rdatatype.RdataType] = []
        if name in records:
            delegation = name in shape.cuts
            types = _types_at(records[name], delegation=delegation)
            if _signed_here(types, delegation=delegation):
                types.append(_RRSIG)
        entries.append((base64.b32hexdecode(hashed), types))
    entries.sort(key=lambda entry: entry[0])
    owners = []
    for index, (digest, types) in enumerate(entries):
        following = entries[(index + 1) % len(entries)][0]
        bitmap = dns.rdtypes.util.Bitmap.from_rdtypes(types).windows
        nsec3 = _NSEC3_RDATA(_IN, _NSEC3, NSEC3_HASH_SHA1, 0, iterations, salt, following, bitmap)
        label = base64.b32hexencode(digest).decode("ascii").lower()
        owner = dns.name.Name((label.encode("ascii"), *origin.labels))
        records[owner] = [_RRs(_NSEC3, ttl, (nsec3,))]
        owners.append(owner)
    return tuple(owners)


# --- signing ------------------------------------------------------------------------


def sign_zone(
    zone: dns.zone.Zone,
    *,
    keys: Sequence[ZoneKey],
    spec: DNSSECSpec,
    window: SignatureWindow,
    dnskey_ttl: int,
) -> SignedZone:
    """DNSKEY, the denial chain and an RRSIG over every authoritative rrset of ``zone``.

        ``zone`` (absolute names, ``relativize=False``, no DNSSEC records yet) is only read:
        the result is the text to append to the zone's master file, which the caller parses
        back to serve exactly what it writes. The DNSKEY rrset holds every key whose state
    puts it there; active KSKs sign the DNSKEY rrset, active ZSKs the rest.

        Returns:
            The added records as master-file text, the DS records, and counts.

        Raises:
            SigningError: no KSK or no ZSK, RRSIG times out of range, or the zone is not
                signable (no SOA, DNSSEC records already present).
    """
    origin = zone.origin
    if origin is None:
        raise SigningError("zone has no origin", where="zone")
    if window.expiration >= RRSIG_TIME_LIMIT:
        raise SigningError(
            f"signatures would expire after {_sigtime(RRSIG_TIME_LIMIT - 1)}, "
            "past what an RRSIG can express (RFC 4034 3.1.5); check --now",
            where=origin.to_text(),
        )
    signing = [key for key in keys if key.signs]
    ksks = [_Signer.make(key, window, origin) for key in signing if key.role is ZoneKeyRole.KSK]
    zsks = [_Signer.make(key, window, origin) for key in signing if key.role is ZoneKeyRole.ZSK]
    if not ksks or not zsks:
        raise SigningError(
            "signing needs at least one active KSK and one active ZSK", where=origin.to_text()
        )
    records: _Records = {}
    for name, node in zone.nodes.items():
        rrs = []
        for rdataset in node.rdatasets:
            if rdataset.rdtype in _DNSSEC_TYPES:
                raise SigningError(
                    f"the unsigned zone already holds {dns.rdatatype.to_text(rdataset.rdtype)} "
                    "records; alter-publish adds DNSSEC records itself",
                    where=origin.to_text(),
                )
            rrs.append(_RRs(rdataset.rdtype, rdataset.ttl, tuple(rdataset)))
        records[name] = rrs
    negative_ttl = _negative_ttl(zone, origin)
    dnskeys = tuple(key.dnskey for key in keys if key.in_dnskey)
    records[origin].append(_RRs(_DNSKEY, dnskey_ttl, dnskeys))
    shape = _shape(zone, origin)
    signed_names = list(shape.authoritative)
    if spec.denial == "nsec3":
        signed_names.extend(_add_nsec3_chain(records, origin, shape, negative_ttl, spec))
    else:
        _add_nsec_chain(records, shape, negative_ttl)
    signatures = max_ttl = 0
    sig_lines: dict[dns.name.Name, list[str]] = {}
    for name in signed_names:
        delegation = name in shape.cuts
        owner_wire = _wire(name.canonicalize())
        lines = sig_lines.setdefault(name, [])
        for item in sorted(records[name], key=lambda rrs: rrs.rdtype):
            if delegation and item.rdtype not in (_DS, _NSEC):
                continue
            max_ttl = max(max_ttl, item.ttl)
            for signer in ksks if item.rdtype == _DNSKEY else zsks:
                lines.append(signer.sign(name, owner_wire, item))
                signatures += 1
    ds_lines = ds_records(origin, keys, dnskey_ttl)
    return SignedZone(
        records_text=_dnssec_text(records, sig_lines),
        ds_text="".join(line + "\n" for line in ds_lines),
        window=window,
        signatures=signatures,
        denial=spec.denial,
        max_ttl=max_ttl,
    )


def _dnssec_text(records: _Records, sig_lines: dict[dns.name.Name, list[str]]) -> str:
    """Master-file lines of every DNSSEC record, owners in canonical order, each owner's
    DNSKEY/NSEC/NSEC3/NSEC3PARAM first, then its RRSIGs by covered type."""
    lines: list[str] = []
    for name in sorted(records, key=canonical_key):
        owner = name.to_text()
        for rrs in sorted(records[name], key=lambda item: item.rdtype):
            if rrs.rdtype in _DNSSEC_TYPES:
                rdtype = dns.rdatatype.to_text(rrs.rdtype)
                lines.extend(
                    f"{owner} {rrs.ttl} IN {rdtype} {rdata.to_text()}\n" for rdata in rrs.rdatas
                )
        lines.extend(sig_lines.get(name, ()))
    return "".join(lines)
