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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import dns.dnssec
import dns.dnssectypes
import dns.name
import dns.node
import dns.rdata
import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.rdtypes.ANY.DS
import dns.rdtypes.ANY.NSEC
import dns.rdtypes.ANY.NSEC3
import dns.rdtypes.ANY.NSEC3PARAM
import dns.rdtypes.ANY.RRSIG
import dns.rdtypes.ANY.SOA
import dns.rdtypes.util
import dns.zone

from alter_publish.errors import SigningError
from alter_publish.keys import ZoneKey, ZoneKeyRole
from alter_publish.model import DNSSECSpec

ALGORITHM = dns.dnssectypes.Algorithm.ED25519
INCEPTION_BACKDATE_SECONDS = 3600  # tolerate validators whose clocks run behind
NSEC3_HASH_SHA1 = 1
NSEC3PARAM_TTL_SECONDS = 0  # RFC 5155 4: not used by resolvers; 0 as BIND does
DS_DIGEST = "SHA256"

_IN = dns.rdataclass.IN
_RRSIG = dns.rdatatype.RRSIG
_NSEC = dns.rdatatype.NSEC
_NSEC3 = dns.rdatatype.NSEC3
_NSEC3PARAM = dns.rdatatype.NSEC3PARAM
_DNSKEY = dns.rdatatype.DNSKEY
_SOA = dns.rdatatype.SOA
_NS = dns.rdatatype.NS
_DS = dns.rdatatype.DS
_NONE = dns.rdatatype.NONE
_RRSIG_HEADER = struct.Struct("!HBBIIIH")
_RR_FIXED = struct.Struct("!HHIH")
# dnspython's rdata constructors are untyped; these aliases give them signatures once.
_RRSIG_RDATA: Callable[..., dns.rdtypes.ANY.RRSIG.RRSIG] = dns.rdtypes.ANY.RRSIG.RRSIG
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
    ds: tuple[dns.rdtypes.ANY.DS.DS, ...]
    ds_text: str
    window: SignatureWindow
    signatures: int
    denial: str


def ds_records(origin: dns.name.Name, keys: Sequence[ZoneKey], ttl: int) -> tuple[str, ...]:
    """The DS (SHA-256) of each KSK as master-file lines to hand to the parent zone."""
    lines = []
    for key in keys:
        if key.role is ZoneKeyRole.KSK:
            ds = dns.dnssec.make_ds(origin, key.dnskey, DS_DIGEST)
            lines.append(f"{origin.to_text()} {ttl} IN DS {ds.to_text()}")
    return tuple(lines)


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


def signing_input(
    owner: dns.name.Name,
    rdataset: dns.rdataset.Rdataset,
    rrsig: dns.rdtypes.ANY.RRSIG.RRSIG,
    origin: dns.name.Name,
) -> bytes:
    """RFC 4034 6.2: RRSIG rdata (no signature) || canonical RRs sorted by rdata."""
    header = _RRSIG_HEADER.pack(
        rrsig.type_covered,
        rrsig.algorithm,
        rrsig.labels,
        rrsig.original_ttl,
        rrsig.expiration,
        rrsig.inception,
        rrsig.key_tag,
    )
    owner_wire = owner.canonicalize().to_wire()
    assert owner_wire is not None  # noqa: S101 (to_wire without a file returns bytes)
    signer_wire = rrsig.signer.canonicalize().to_wire()
    assert signer_wire is not None  # noqa: S101 (as above)
    parts = [header, signer_wire]
    for rdata_wire in sorted({rdata.to_digestable(origin) for rdata in rdataset}):
        fixed = _RR_FIXED.pack(
            rdataset.rdtype, rdataset.rdclass, rrsig.original_ttl, len(rdata_wire)
        )
        parts.append(owner_wire + fixed + rdata_wire)
    return b"".join(parts)


def _rrsig(
    owner: dns.name.Name,
    rdataset: dns.rdataset.Rdataset,
    key: ZoneKey,
    tag: int,
    window: SignatureWindow,
    origin: dns.name.Name,
) -> dns.rdtypes.ANY.RRSIG.RRSIG:
    fields = (
        _IN,
        _RRSIG,
        rdataset.rdtype,
        ALGORITHM,
        _labels(owner),
        rdataset.ttl,
        window.expiration,
        window.inception,
        tag,
        origin,
    )
    unsigned = _RRSIG_RDATA(*fields, b"")
    signature = key.private_key.sign(signing_input(owner, rdataset, unsigned, origin))
    return _RRSIG_RDATA(*fields, signature)


# --- the zone's shape ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Shape:
    """Which names are authoritative, which are delegations, and the empty non-terminals."""

    authoritative: tuple[dns.name.Name, ...]  # canonical order
    cuts: frozenset[dns.name.Name]
    empty_non_terminals: frozenset[dns.name.Name]


def _shape(zone: dns.zone.Zone, origin: dns.name.Name) -> _Shape:
    names = sorted(zone.nodes)
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


def _types_at(node: dns.node.Node, *, delegation: bool) -> list[dns.rdatatype.RdataType]:
    types = [rdataset.rdtype for rdataset in node.rdatasets if rdataset.rdtype != _RRSIG]
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


def _add(
    zone: dns.zone.Zone, owner: dns.name.Name, ttl: int, rdatas: Sequence[dns.rdata.Rdata]
) -> dns.rdataset.Rdataset:
    rdataset = dns.rdataset.from_rdata_list(ttl, list(rdatas))
    zone.find_node(owner, create=True).replace_rdataset(rdataset)
    return zone.find_node(owner).get_rdataset(_IN, rdataset.rdtype, rdataset.covers)  # type: ignore[return-value]  # (present: just added)


def _add_nsec_chain(zone: dns.zone.Zone, origin: dns.name.Name, shape: _Shape, ttl: int) -> None:
    names = shape.authoritative
    for index, name in enumerate(names):
        following = names[(index + 1) % len(names)]
        types = _types_at(zone.nodes[name], delegation=name in shape.cuts)
        bitmap = dns.rdtypes.util.Bitmap.from_rdtypes([*types, _RRSIG, _NSEC]).windows
        nsec = _NSEC_RDATA(_IN, _NSEC, following, bitmap)
        _add(zone, name, ttl, [nsec])


def _add_nsec3_chain(
    zone: dns.zone.Zone, origin: dns.name.Name, shape: _Shape, ttl: int, spec: DNSSECSpec
) -> tuple[dns.name.Name, ...]:
    """Add NSEC3PARAM and one NSEC3 per authoritative name and empty non-terminal.

    Returns:
        The NSEC3 owner names.
    """
    salt = bytes.fromhex(spec.nsec3_salt)
    iterations = spec.nsec3_iterations
    param = _NSEC3PARAM_RDATA(_IN, _NSEC3PARAM, NSEC3_HASH_SHA1, 0, iterations, salt)
    _add(zone, origin, NSEC3PARAM_TTL_SECONDS, [param])
    entries: list[tuple[bytes, list[dns.rdatatype.RdataType]]] = []
    for name in (*shape.authoritative, *sorted(shape.empty_non_terminals)):
        hashed = dns.dnssec.nsec3_hash(name, salt, iterations, NSEC3_HASH_SHA1)
        types: list[dns.rdatatype.RdataType] = []
        if name in zone.nodes:
            delegation = name in shape.cuts
            types = _types_at(zone.nodes[name], delegation=delegation)
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
        _add(zone, owner, ttl, [nsec3])
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
    """Add DNSKEY, the denial chain and an RRSIG over every authoritative rrset to ``zone``.

    ``zone`` must have absolute names (``relativize=False``) and no DNSSEC records yet.
    KSKs sign the DNSKEY rrset; ZSKs sign everything else.

    Returns:
        The added records as master-file text, the DS records, and counts.

    Raises:
        SigningError: no KSK or no ZSK, or the zone is not signable (no SOA, DNSSEC
            records already present).
    """
    origin = zone.origin
    if origin is None:
        raise SigningError("zone has no origin", where="zone")
    ksks = [(key, key.tag) for key in keys if key.role is ZoneKeyRole.KSK]
    zsks = [(key, key.tag) for key in keys if key.role is ZoneKeyRole.ZSK]
    if not ksks or not zsks:
        raise SigningError("signing needs at least one KSK and one ZSK", where=origin.to_text())
    for _, rdataset in zone.iterate_rdatasets():
        if rdataset.rdtype in _DNSSEC_TYPES:
            raise SigningError(
                f"the unsigned zone already holds {dns.rdatatype.to_text(rdataset.rdtype)} "
                "records; alter-publish adds DNSSEC records itself",
                where=origin.to_text(),
            )
    negative_ttl = _negative_ttl(zone, origin)
    _add(zone, origin, dnskey_ttl, [key.dnskey for key in keys])
    shape = _shape(zone, origin)
    signed_names = list(shape.authoritative)
    if spec.denial == "nsec3":
        signed_names.extend(_add_nsec3_chain(zone, origin, shape, negative_ttl, spec))
    else:
        _add_nsec_chain(zone, origin, shape, negative_ttl)
    signatures = 0
    for name in signed_names:
        node = zone.nodes[name]
        delegation = name in shape.cuts
        for rdataset in list(node.rdatasets):
            if rdataset.rdtype == _RRSIG or (delegation and rdataset.rdtype not in (_DS, _NSEC)):
                continue
            signers = ksks if rdataset.rdtype == _DNSKEY else zsks
            rrsigs = dns.rdataset.Rdataset(_IN, _RRSIG, rdataset.rdtype)
            for key, tag in signers:
                rrsigs.add(_rrsig(name, rdataset, key, tag, window, origin), rdataset.ttl)
            node.replace_rdataset(rrsigs)
            signatures += len(signers)
    ds = tuple(dns.dnssec.make_ds(origin, key.dnskey, DS_DIGEST) for key, _ in ksks)
    ds_lines = ds_records(origin, [key for key, _ in ksks], dnskey_ttl)
    return SignedZone(
        records_text=_dnssec_text(zone),
        ds=ds,
        ds_text="".join(line + "\n" for line in ds_lines),
        window=window,
        signatures=signatures,
        denial=spec.denial,
    )


def _dnssec_text(zone: dns.zone.Zone) -> str:
    """Master-file lines of every DNSSEC record in ``zone``, owners in canonical order."""
    lines: list[str] = []
    for name in sorted(zone.nodes):
        rdatasets = sorted(
            (r for r in zone.nodes[name].rdatasets if r.rdtype in _DNSSEC_TYPES),
            key=lambda r: (r.rdtype, r.covers),
        )
        lines.extend(rdataset.to_text(name) + "\n" for rdataset in rdatasets)
    return "".join(lines)
