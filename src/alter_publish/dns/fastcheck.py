"""The loopback proof's fast path: raw pipelined UDP and a hand-checked secure TXT answer.

Proving a zone asks one question per handle, and almost every answer has the same
shape: one TXT rrset at the owner and its RRSIG, signed by a zone key, not expanded
from a wildcard. :func:`secure_txt` checks exactly that shape on the wire bytes,
without building dnspython objects, and says None for anything else; the caller then
runs the full validator (:mod:`alter_publish.dns.validation`) on that response. The fast
path is never more lenient than the full one: every check of
``validation._Checker._problem`` is made, and every message dnspython would refuse to
parse in the full path is refused here.

:func:`exchange_many` asks the questions over a loopback socket with the one pipelined
client (:mod:`alter_publish.dns.client`) and hands back the raw replies.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

import dns.dnssec
import dns.dnssectypes
import dns.exception
import dns.name
import dns.rdata
import dns.rdtypes.ANY.DNSKEY
import dns.rdtypes.dnskeybase
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from alter_publish.dns import client
from alter_publish.dns.client import PIPELINE_WINDOW
from alter_publish.dns.wire import (
    HEADER_OCTETS,
    IN,
    LABEL_MAX_OCTETS,
    NAME_MAX_OCTETS,
    OPCODE_MASK,
    OPT,
    QR,
    RRSIG,
    TC,
    TXT,
)
from alter_publish.errors import ResolveError
from alter_publish.format import ed25519

__all__ = [
    "ZoneKeys",
    "exchange_many",
    "owner_labels",
    "query_wire",
    "secure_txt",
]

_ED25519: Final = int(dns.dnssectypes.Algorithm.ED25519)
_DNSKEY_PROTOCOL: Final = 3
_ZONE_KEY: Final = int(dns.rdtypes.dnskeybase.Flag.ZONE)
_REVOKE: Final = int(dns.rdtypes.dnskeybase.Flag.REVOKE)
_ED25519_KEY_OCTETS: Final = 32
_RR_FIXED_OCTETS: Final = 10
_RRSIG_FIXED_OCTETS: Final = 18
#: QR, opcode, TC and rcode: a plain answer has QR=1 and the rest 0.
_FLAGS_CHECKED: Final = QR | OPCODE_MASK | TC | 0x000F
_COMPRESSED: Final = 0xC0
_POINTER_HOPS_MAX: Final = 16  # dnspython's MAX_COMPRESSION_POINTER_CHAIN
_QUESTION_POINTER: Final = b"\xc0\x0c"  # a name compressed to the question's, at offset 12
_TXT_IN: Final = struct.pack("!HH", TXT, IN)
_HEADER: Final = struct.Struct("!HHHHHH")
_RR: Final = struct.Struct("!HHIH")
_RRSIG_FIXED: Final = struct.Struct("!HBBIIIH")


def _name_wire(labels: Sequence[bytes]) -> bytes | None:
    """The uncompressed, lowercased wire form of an absolute name; None if it is not one."""
    if not labels or labels[-1] != b"":
        return None
    parts = []
    for label in labels[:-1]:
        if not 0 < len(label) <= LABEL_MAX_OCTETS:
            return None
        parts.append(len(label).to_bytes(1, "big"))
        parts.append(label)
    parts.append(b"\x00")
    wire = b"".join(parts).lower()  # length octets (< 64) are no ASCII letters
    return wire if len(wire) <= NAME_MAX_OCTETS else None


def owner_labels(owner: str) -> tuple[bytes, ...]:
    """The lowercase labels of an absolute owner name, root ``b""`` included.

    Args:
        owner: the name in presentation form, e.g. ``_alter.blake.example.com.``.

    Returns:
        The labels, e.g. ``(b"_alter", b"blake", b"example", b"com", b"")``.

    Raises:
        ValueError: ``owner`` is not an absolute domain name.
    """
    if "\\" not in owner and owner.endswith(".") and owner.isascii():
        labels = tuple(owner.lower().encode("ascii").split(b"."))
        if owner == "." or _name_wire(labels) is not None:
            return labels[1:] if owner == "." else labels
    try:
        name = dns.name.from_text(owner, origin=None)
    except (dns.exception.DNSException, UnicodeError) as exc:
        raise ValueError(f"{owner!r} is not a domain name: {exc}") from exc
    if not name.is_absolute():
        raise ValueError(f"{owner!r} is not absolute")
    return tuple(name.canonicalize().labels)


@dataclass(frozen=True, slots=True)
class ZoneKeys:
    """The zone keys that RRSIGs in the zone may be made with.

    Attributes:
        origin: the zone apex as lowercase labels, root ``b""`` included.
        keys: key tag -> the Ed25519 (algorithm 15) public keys with that tag.
    """

    origin: tuple[bytes, ...]
    keys: Mapping[int, tuple[Ed25519PublicKey, ...]]
    _origin_wire: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Freeze the key map and precompute the apex's wire form.

        Raises:
            ValueError: ``origin`` is not an absolute name.
        """
        origin = tuple(label.lower() for label in self.origin)
        wire = _name_wire(origin)
        if wire is None:
            raise ValueError(f"zone origin {self.origin!r} is not an absolute name")
        object.__setattr__(self, "origin", origin)
        object.__setattr__(self, "keys", MappingProxyType(dict(self.keys)))
        object.__setattr__(self, "_origin_wire", wire)

    @classmethod
    def from_dnskeys(cls, origin: dns.name.Name, dnskeys: Iterable[dns.rdata.Rdata]) -> ZoneKeys:
        """The keys of a DNSKEY rrset that validated to the zone's trust anchor.

        Kept are the keys :func:`dns.dnssec.validate_rrsig` would try for an RRSIG
        over a TXT rrset, as the full validator builds them: ZONE flag set, protocol 3,
        not revoked (RFC 5011 2.1), algorithm 15 with a 32-octet key. KSKs are kept, as
        the full validator accepts any zone key.

        Args:
            origin: the zone apex, absolute.
            dnskeys: the validated DNSKEY rdatas.

        Returns:
            The zone keys.

        Raises:
            ValueError: ``origin`` is not absolute.
        """
        if not origin.is_absolute():
            raise ValueError(f"zone origin {origin} is not absolute")
        found: dict[int, list[Ed25519PublicKey]] = {}
        for rdata in dnskeys:
            if not isinstance(rdata, dns.rdtypes.ANY.DNSKEY.DNSKEY):
                continue
            if (
                not rdata.flags & _ZONE_KEY
                or rdata.flags & _REVOKE
                or rdata.protocol != _DNSKEY_PROTOCOL
                or rdata.algorithm != _ED25519
                or len(rdata.key) != _ED25519_KEY_OCTETS
            ):
                continue
            try:
                public = Ed25519PublicKey.from_public_bytes(rdata.key)
            except ValueError:  # an unusable key validates nothing, in either path
                continue
            found.setdefault(dns.dnssec.key_id(rdata), []).append(public)
        return cls(
            tuple(origin.canonicalize().labels), {tag: tuple(keys) for tag, keys in found.items()}
        )


def query_wire(owner: tuple[bytes, ...], query_id: int) -> bytes:
    """A TXT IN query for ``owner``: RD=0, EDNS0 with a 1232-octet payload and DO=1.

    Args:
        owner: the owner's labels, root ``b""`` included (see :func:`owner_labels`).
        query_id: the 16-bit message id.

    Returns:
        The query in wire form.

    Raises:
        ValueError: ``owner`` is not an absolute name, or the id is out of range.
    """
    wire = _name_wire(owner)
    if wire is None:
        raise ValueError(f"{owner!r} is not an absolute domain name")
    if not 0 <= query_id <= 0xFFFF:
        raise ValueError(f"query id {query_id} is not a 16-bit number")
    name = b"".join(len(label).to_bytes(1, "big") + label for label in owner)
    return client.query_wire(name + _TXT_IN, query_id)


def exchange_many(
    server: tuple[str, int],
    queries: Sequence[tuple[bytes, ...]],
    *,
    timeout: float,
    window: int = PIPELINE_WINDOW,
) -> list[bytes | None]:
    """Ask ``owner TXT`` (see :func:`query_wire`) for many owners of a loopback server,
    with the pipelined client (:func:`alter_publish.dns.client.exchange_many`).

    Truncated or otherwise unusable replies are handed back as they are:
    :func:`secure_txt` refuses them.

    Args:
        server: the server's loopback IP address and port; the socket is bound to the
            loopback address of the same family (127.0.0.1 or ::1).
        queries: the owners, as labels (see :func:`owner_labels`).
        timeout: seconds to wait for each copy of a query.
        window: the most queries in flight at once.

    Returns:
        Per query, in the order given, the reply's wire bytes or None.

    Raises:
        ValueError: ``window`` is below 1, ``timeout`` not above 0, or an owner is not an
            absolute name.
        ResolveError: the server is not at a loopback IP address, or no UDP socket to
            it could be opened.
    """
    questions = []
    for owner in queries:  # checks every owner up front
        name = _name_wire(owner)
        if name is None:
            raise ValueError(f"{owner!r} is not an absolute domain name")
        questions.append(name + _TXT_IN)
    window = client.checked_window(window, timeout)
    if not questions:
        return []
    try:
        sock = client.loopback_socket(server)
    except OSError as exc:
        host, port = server
        raise ResolveError(f"cannot open a UDP socket: {exc}", where=f"{host}:{port}") from exc
    with sock:
        return client.exchange_many(sock, questions, timeout=timeout, window=window)


# --------------------------------------------------------------------------
# The secure positive answer
# --------------------------------------------------------------------------


def _read_name(message: bytes, position: int) -> tuple[bytes, int] | None:
    """Read a possibly compressed name: its lowercased uncompressed wire and where it ends.

    Pointers are followed as dnspython follows them: each points before the one
    before it, at most 16 in a row, and no part of the name read after a pointer may
    reach into the part read before it. None for any name dnspython refuses.
    """
    size = len(message)
    limit = size  # where reading must stop: the start of the previous segment
    lowest = position  # every pointer must point below this
    end = -1
    hops = 0
    parts: list[bytes] = []
    total = 0
    while True:
        if position >= limit:
            return None
        length = message[position]
        if length == 0:
            if end < 0:
                end = position + 1
            parts.append(b"\x00")
            return (b"".join(parts).lower(), end) if total < NAME_MAX_OCTETS else None
        if length >= _COMPRESSED:
            if position + 1 >= limit:
                return None
            target = ((length & 0x3F) << 8) | message[position + 1]
            hops += 1
            if target >= lowest or hops > _POINTER_HOPS_MAX:
                return None
            if end < 0:
                end = position + 2
            limit = lowest
            lowest = target
            position = target
            continue
        if length > LABEL_MAX_OCTETS:
            return None  # 0x40 and 0x80 label types
        following = position + 1 + length
        if following > limit:
            return None
        parts.append(message[position:following])
        total += 1 + length
        position = following


def _plain_name_end(message: bytes, position: int, end: int) -> int | None:
    """Where the uncompressed name at ``position`` ends, if it is one and ends by ``end``."""
    total = 0
    while position < end:
        length = message[position]
        if length == 0:
            return position + 1
        if length > LABEL_MAX_OCTETS:
            return None  # compressed or an unknown label type: dnspython refuses
        total += 1 + length
        position += 1 + length
        if total >= NAME_MAX_OCTETS:
            return None
    return None


def _txt_strings(rdata: bytes) -> bytes:
    """The character-strings of a well-formed TXT rdata, joined."""
    parts = []
    position = 0
    while position < len(rdata):
        following = position + 1 + rdata[position]
        parts.append(rdata[position + 1 : following])
        position = following
    return b"".join(parts)


def _txt_well_formed(message: bytes, start: int, end: int) -> bool:
    """A TXT rdata dnspython accepts: at least one character-string, filling it exactly."""
    position = start
    while position < end:
        position += 1 + message[position]
    return position == end and start < end


def secure_txt(
    response: bytes, owner: tuple[bytes, ...], keys: ZoneKeys, now: int
) -> tuple[str, ...] | None:
    """The TXT texts of ``response`` if it is a plain secure positive answer, else None.

    Plain means: QR=1, opcode QUERY, rcode NOERROR, TC=0; exactly the question
    ``owner TXT IN``; in the answer only one TXT IN rrset at ``owner`` and RRSIGs over
    it; no authority records; at most an OPT (no options, extended rcode 0) in the
    additional section; nothing after it. Secure means some RRSIG passes every check
    of the full validator: signer is the zone apex, ``owner`` is in the zone, key tag
    and algorithm 15 name a key of ``keys``, labels equal the owner's label count
    (an RRSIG with fewer labels, a wildcard expansion, gives None), ``now`` is within
    inception..expiration, and the Ed25519 signature verifies over the RFC 4034
    3.1.8.1 signing input.

    None means "not shown secure here": run the full validator on the response. This
    never raises on malformed input.

    Args:
        response: the reply's wire bytes.
        owner: the owner asked for, as lowercase labels with root ``b""``.
        keys: the zone's keys.
        now: the current time, seconds since the epoch.

    Returns:
        Each TXT rdata's character-strings joined and decoded as latin-1 (as
        :func:`alter_publish.dns.zonetext.txt_text` does), in the order served, duplicates
        dropped; or None.
    """
    try:
        return _secure_txt(response, owner, keys, now)
    except (IndexError, struct.error):  # a bounds check missed: still not shown secure
        return None


def _secure_txt(
    message: bytes, owner: tuple[bytes, ...], keys: ZoneKeys, now: int
) -> tuple[str, ...] | None:
    size = len(message)
    if size < HEADER_OCTETS:
        return None
    _, flags, qdcount, ancount, nscount, arcount = _HEADER.unpack_from(message)
    if flags & _FLAGS_CHECKED != QR or qdcount != 1 or ancount < 2 or nscount or arcount > 1:
        return None
    owner_wire = _name_wire(owner)
    origin = keys.origin
    if (
        owner_wire is None
        or len(owner) < len(origin)
        or tuple(label.lower() for label in owner[len(owner) - len(origin) :]) != origin
        or owner[0] == b"*"
    ):
        return None
    label_count = len(owner) - 1
    position = HEADER_OCTETS + len(owner_wire)
    if (
        message[HEADER_OCTETS:position].lower() != owner_wire
        or message[position : position + 4] != _TXT_IN
    ):
        return None
    position += 4

    rdatas: dict[bytes, None] = {}  # unique TXT rdatas, in the order served
    sigs: list[tuple[int, int]] = []
    for _ in range(ancount):
        if message[position : position + 2] == _QUESTION_POINTER:
            position += 2
        else:
            name = _read_name(message, position)
            if name is None or name[0] != owner_wire:
                return None
            position = name[1]
        if position + _RR_FIXED_OCTETS > size:
            return None
        rdtype, rdclass, _, rdlength = _RR.unpack_from(message, position)
        start = position + _RR_FIXED_OCTETS
        position = start + rdlength
        if position > size or rdclass != IN:
            return None
        if rdtype == TXT:
            if not _txt_well_formed(message, start, position):
                return None
            rdatas[message[start:position]] = None
        elif rdtype == RRSIG:
            if rdlength <= _RRSIG_FIXED_OCTETS or message[start] or message[start + 1] != TXT:
                return None  # an RRSIG over another type: not the plain shape
            if message[start + 3] < label_count:
                return None  # a wildcard expansion needs the denial the full validator checks
            sigs.append((start, position))
        else:
            return None

    if arcount:
        if position + 1 + _RR_FIXED_OCTETS > size or message[position] != 0:
            return None
        rdtype, _, ttl, rdlength = _RR.unpack_from(message, position + 1)
        # Extended rcode and EDNS version 0, no options (dnspython would parse each one).
        if rdtype != OPT or ttl >> 16 or rdlength:
            return None
        position += 1 + _RR_FIXED_OCTETS
    if position != size or not rdatas or not sigs:
        return None

    origin_wire = keys._origin_wire
    signer_end_offset = _RRSIG_FIXED_OCTETS + len(origin_wire)
    # Every signer must be a name dnspython parses (uncompressed, inside the rdata), or the
    # full path refuses the whole message; only those that are the apex are tried below.
    by_apex: list[tuple[int, int]] = []
    for start, end in sigs:
        signer_end = _plain_name_end(message, start + _RRSIG_FIXED_OCTETS, end)
        if signer_end is None:
            return None
        signer = message[start + _RRSIG_FIXED_OCTETS : signer_end]
        if signer_end - start == signer_end_offset and signer.lower() == origin_wire:
            by_apex.append((start, end))
    ordered = sorted(rdatas)
    for start, end in by_apex:
        _, algorithm, labels, _, expiration, inception, key_tag = _RRSIG_FIXED.unpack_from(
            message, start
        )
        candidates = keys.keys.get(key_tag)
        if (
            algorithm != _ED25519
            or labels != label_count
            or not inception <= now <= expiration
            or not candidates
        ):
            continue
        fixed = owner_wire + _TXT_IN + message[start + 4 : start + 8]
        signed = b"".join(
            (
                message[start : start + _RRSIG_FIXED_OCTETS],
                origin_wire,
                *(fixed + len(rdata).to_bytes(2, "big") + rdata for rdata in ordered),
            )
        )
        signature = message[start + signer_end_offset : end]
        for public in candidates:
            if not ed25519.verify(public.public_bytes_raw(), signature, signed):
                continue
            return tuple(_txt_strings(rdata).decode("latin-1") for rdata in rdatas)
    return None
