"""The denial of existence a signed zone holds (RFC 4034 4, RFC 5155): the zone's
shape (authoritative names, delegations, empty non-terminals), the NSEC or NSEC3
chain over it with each name's type bitmap, made as :func:`.dnssec.sign_records`
writes them and as :mod:`.chainpatch` patches them."""

from __future__ import annotations

import base64
import hashlib
import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import dns.rdatatype
import dns.rdtypes.util

from alter_publish.definition.model import DNSSECSpec
from alter_publish.dns.nsec3 import NSEC3_HASH_SHA1
from alter_publish.dns.records import (
    Labels,
    RRs,
    ZoneRecords,
    canonical_key,
    labels_of,
    name_text,
    name_wire,
)
from alter_publish.errors import SigningError

NSEC3PARAM_TTL_SECONDS = 0  # RFC 5155 4: not used by resolvers; 0 as BIND does

_RRSIG = dns.rdatatype.RRSIG
_NSEC = dns.rdatatype.NSEC
_NSEC3 = dns.rdatatype.NSEC3
_NSEC3PARAM = dns.rdatatype.NSEC3PARAM
_SOA = dns.rdatatype.SOA
_NS = dns.rdatatype.NS
_DS = dns.rdatatype.DS


@dataclass(frozen=True, slots=True)
class Bitmap:
    """An NSEC/NSEC3 type bitmap: wire form and the text dnspython prints for it."""

    wire: bytes
    text: str

    @classmethod
    def of(cls, types: Iterable[int]) -> Bitmap:
        """The bitmap of ``types`` (in any order, repeats allowed)."""
        rdtypes = [dns.rdatatype.RdataType.make(rdtype) for rdtype in sorted(set(types))]
        windows = dns.rdtypes.util.Bitmap.from_rdtypes(rdtypes).windows
        wire = b"".join(bytes((window, len(bits))) + bits for window, bits in windows)
        return cls(wire, dns.rdtypes.util.Bitmap(windows).to_text())


# --- the zone's shape ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shape:
    """Which names are authoritative, which are delegations, and the empty non-terminals."""

    authoritative: tuple[Labels, ...]  # canonical order
    cuts: frozenset[Labels]
    empty_non_terminals: frozenset[Labels]


def zone_shape(records: ZoneRecords) -> Shape:
    """The authoritative names of ``records`` (below no cut but its own), its cuts and
    its empty non-terminals."""
    origin = records.origin
    depth = len(origin)
    cuts = frozenset(
        labels
        for labels, rrsets in records.owners.items()
        if labels != origin and any(rrs.rdtype == _NS for rrs in rrsets)
    )
    names = sorted(records.owners, key=canonical_key)
    if cuts:
        names = [
            name
            for name in names
            if not any(name[index:] in cuts for index in range(1, len(name) - depth))
        ]
    present = set(names)
    ents: set[Labels] = set()
    for name in names:
        for index in range(1, len(name) - depth):
            parent = name[index:]
            if parent in present:
                break
            ents.add(parent)
    return Shape(tuple(names), cuts, frozenset(ents))


def types_at(rrsets: Iterable[RRs], *, delegation: bool) -> list[int]:
    """The types a name's denial record lists (at a cut: its NS and DS only)."""
    types = [rrs.rdtype for rrs in rrsets]
    if delegation:
        types = [rdtype for rdtype in types if rdtype in (_NS, _DS)]
    return types


def negative_ttl(records: ZoneRecords) -> int:
    """The TTL of the zone's NSEC and NSEC3 records: min(SOA minimum, SOA TTL), RFC 9077.

    Raises:
        SigningError: the zone has no SOA at its apex.
    """
    soa = next((rrs for rrs in records.owners.get(records.origin, ()) if rrs.rdtype == _SOA), None)
    if soa is None or not soa.wires:
        raise SigningError("zone has no SOA at its apex", where=name_text(records.origin))
    (minimum,) = struct.unpack("!I", soa.wires[0][-4:])
    return min(int(minimum), soa.ttl)


#: Each owner's rrsets, as the signer adds to them.
Owners = dict[Labels, list[RRs]]


def add_nsec_chain(owners: Owners, names: Mapping[Labels, str], shape: Shape, ttl: int) -> None:
    """One NSEC per authoritative name; the next name keeps its case (RFC 6840 5.1)."""
    chain = shape.authoritative
    bitmaps: dict[frozenset[int], Bitmap] = {}
    for index, name in enumerate(chain):
        following = names[chain[(index + 1) % len(chain)]]
        types = frozenset((*types_at(owners[name], delegation=name in shape.cuts), _RRSIG, _NSEC))
        bitmap = bitmaps.get(types) or bitmaps.setdefault(types, Bitmap.of(types))
        owners[name].append(nsec_rrs(following, bitmap, ttl))


def nsec3_digest(name: Labels, salt: bytes, iterations: int) -> bytes:
    """RFC 5155 5: SHA-1 over the canonical wire name and salt, iterated."""
    digest = hashlib.sha1(name_wire(name) + salt, usedforsecurity=False).digest()
    for _ in range(iterations):
        digest = hashlib.sha1(digest + salt, usedforsecurity=False).digest()
    return digest


def add_nsec3_chain(
    owners: Owners,
    origin: Labels,
    shape: Shape,
    ttl: int,
    spec: DNSSECSpec,
    sources: dict[Labels, Labels] | None = None,
) -> tuple[Labels, ...]:
    """Add NSEC3PARAM and one NSEC3 per authoritative name and empty non-terminal
    (``sources``, if given, gets each NSEC3 owner's unhashed name).

    Returns:
        The NSEC3 owner names.
    """
    salt = bytes.fromhex(spec.nsec3_salt)
    iterations = spec.nsec3_iterations
    fixed, prefix = _nsec3_fixed(spec), _nsec3_prefix(spec)
    owners[origin].append(RRs(_NSEC3PARAM, NSEC3PARAM_TTL_SECONDS, (fixed,), (prefix.rstrip(),)))
    entries: list[tuple[bytes, tuple[int, ...], Labels]] = []
    cuts = shape.cuts
    for name in (*shape.authoritative, *shape.empty_non_terminals):  # order: by hash, below
        rrsets = owners.get(name)
        types: tuple[int, ...] = ()
        if rrsets:
            types = tuple(types_at(rrsets, delegation=name in cuts))
            if name not in cuts or _DS in types:  # a delegation's NS alone is not signed
                types += (_RRSIG,)
        entries.append((nsec3_digest(name, salt, iterations), types, name))
    entries.sort(key=lambda entry: entry[0])
    # Each hash is written twice: as its NSEC3's owner, and as the previous one's next.
    labels = [b32hex_label(digest) for digest, _, _ in entries]
    bitmaps: dict[tuple[int, ...], Bitmap] = {}
    added = []
    count = len(entries)
    for index, (_, present, name) in enumerate(entries):
        following = index + 1 if index + 1 < count else 0
        bitmap = bitmaps.get(present) or bitmaps.setdefault(present, Bitmap.of(present))
        owner = (labels[index].encode("ascii"), *origin)
        next_hash = (entries[following][0], labels[following])
        owners[owner] = [_nsec3(fixed, prefix, next_hash, bitmap, ttl)]
        added.append(owner)
        if sources is not None:
            sources[owner] = name
    return tuple(added)


def _nsec3_fixed(spec: DNSSECSpec) -> bytes:
    """The NSEC3 (and NSEC3PARAM) rdata fields before the next hashed owner."""
    salt = bytes.fromhex(spec.nsec3_salt)
    return struct.pack("!BBHB", NSEC3_HASH_SHA1, 0, spec.nsec3_iterations, len(salt)) + salt


def _nsec3_prefix(spec: DNSSECSpec) -> str:
    """The NSEC3 rdata text before the next hashed owner (the NSEC3PARAM's text too, but
    for its flags and the trailing space)."""
    salt_text = bytes.fromhex(spec.nsec3_salt).hex() or "-"
    return f"{NSEC3_HASH_SHA1} 0 {spec.nsec3_iterations} {salt_text} "


#: Base32hex (RFC 4648 7) in lower case, as NSEC3 owners are written: each 10 bits as
#: two characters.
_B32HEX = "0123456789abcdefghijklmnopqrstuv"
_B32HEX_PAIRS = tuple(first + second for first in _B32HEX for second in _B32HEX)
#: A SHA-1 digest: 160 bits, 32 characters, no padding.
_SHA1_OCTETS = 20
_SHA1_SHIFTS = tuple(range(150, -1, -10))


def b32hex_label(digest: bytes) -> str:
    """A hash as an NSEC3 owner label or next hashed owner: base32hex, lower case, no
    padding (the same text as ``base64.b32hexencode``'s, which is written in Python and
    costs a second per 250,000 SHA-1 digests). SHA-1, the one NSEC3 hash, gives 20
    octets, which need no padding; any other length is written without it too."""
    if len(digest) != _SHA1_OCTETS:
        return base64.b32hexencode(digest).decode("ascii").lower().rstrip("=")
    number = int.from_bytes(digest, "big")
    pairs = _B32HEX_PAIRS
    return "".join([pairs[(number >> shift) & 0x3FF] for shift in _SHA1_SHIFTS])


def hashed_owner_texts(hashed: Iterable[Labels], origin_text: str) -> Iterator[tuple[Labels, str]]:
    """Each NSEC3 owner (a base32hex label under the origin) with its text, as
    :func:`name_text` writes it: the label needs no escaping."""
    suffix = "" if origin_text == "." else origin_text
    for owner in hashed:
        yield owner, f"{owner[0].decode('ascii')}.{suffix}"


def nsec3_owner(digest: bytes, origin: Labels) -> Labels:
    """The owner of the NSEC3 of a name whose hash is ``digest``."""
    return (b32hex_label(digest).encode("ascii"), *origin)


def nsec3_rrs(following: bytes, bitmap: Bitmap, ttl: int, spec: DNSSECSpec) -> RRs:
    """One NSEC3 rrset (next hashed owner ``following``, types ``bitmap``)."""
    next_hash = (following, b32hex_label(following))
    return _nsec3(_nsec3_fixed(spec), _nsec3_prefix(spec), next_hash, bitmap, ttl)


def _nsec3(
    fixed: bytes, prefix: str, next_hash: tuple[bytes, str], bitmap: Bitmap, ttl: int
) -> RRs:
    """An NSEC3 rrset from its fixed fields (:func:`_nsec3_fixed`, :func:`_nsec3_prefix`),
    the next hashed owner (digest and label) and the types."""
    digest, label = next_hash
    wire = b"".join((fixed, bytes((len(digest),)), digest, bitmap.wire))
    return RRs(_NSEC3, ttl, (wire,), (prefix + label + bitmap.text,))


def nsec_rrs(following: str, bitmap: Bitmap, ttl: int) -> RRs:
    """One NSEC rrset (next owner ``following`` as written, types ``bitmap``)."""
    wire = name_wire(labels_of(following, lower=False))
    return RRs(_NSEC, ttl, (wire + bitmap.wire,), (following + bitmap.text,))


@dataclass(frozen=True, slots=True)
class DenialChain:
    """The NSEC or NSEC3 records :func:`.dnssec.sign_records` adds to a zone.

    Attributes:
        records: per owner, its NSEC, NSEC3 or NSEC3PARAM rrset (one per owner).
        sources: per NSEC3 owner, the name whose hash it is (empty for NSEC).
    """

    records: Mapping[Labels, RRs]
    sources: Mapping[Labels, Labels]


def denial_chain(records: ZoneRecords, spec: DNSSECSpec) -> DenialChain:
    """The denial records signing ``records`` adds, made by the code that signs.

    ``records`` holds the zone as signed but without its RRSIG, NSEC, NSEC3 and
    NSEC3PARAM records (the DNSKEY rrset included): a signed zone read back can be
    compared with what its records make.

    Raises:
        SigningError: the zone has no SOA at its apex.
    """
    owners: Owners = {labels: list(rrsets) for labels, rrsets in records.owners.items()}
    shape = zone_shape(records)
    ttl = negative_ttl(records)
    sources: dict[Labels, Labels] = {}
    if spec.denial == "nsec3":
        add_nsec3_chain(owners, records.origin, shape, ttl, spec, sources)
    else:
        add_nsec_chain(owners, records.names, shape, ttl)
    denial = frozenset({_NSEC, _NSEC3, _NSEC3PARAM})
    chain = {
        labels: rrs for labels, rrsets in owners.items() for rrs in rrsets if rrs.rdtype in denial
    }
    return DenialChain(chain, sources)
