"""The loopback proof's fast path: raw pipelined UDP and a hand-checked secure TXT answer.

Proving a zone asks one question per handle, and almost every answer has the same
shape: one TXT rrset at the owner and its RRSIG, signed by a zone key, not expanded
from a wildcard. :func:`secure_txt` checks exactly that shape on the wire bytes,
without building dnspython objects, and says None for anything else; the caller then
runs the full validator (:mod:`alter_publish.dns.validation`) on that response. The fast
path is never more lenient than the full one: every check of
``validation._Checker._problem`` is made, and every message dnspython would refuse to
parse in the full path is refused here.

:func:`exchange_many` sends the queries (:func:`query_wire`) over one UDP socket with
many in flight, as :meth:`alter_publish.verify.resolve.StubResolver.exchange_many` does, and
hands back the raw replies.
"""

from __future__ import annotations

import contextlib
import ipaddress
import secrets
import selectors
import socket
import struct
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

import dns.dnssec
import dns.exception
import dns.name
import dns.rdata
import dns.rdtypes.ANY.DNSKEY
import dns.rdtypes.dnskeybase
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from alter_publish.errors import ResolveError
from alter_publish.format import ed25519

__all__ = [
    "EDNS_PAYLOAD_OCTETS",
    "PIPELINE_WINDOW",
    "QUERY_TRIES",
    "WINDOW_MAX",
    "ZoneKeys",
    "exchange_many",
    "owner_labels",
    "query_wire",
    "secure_txt",
]

#: The EDNS0 payload size the queries advertise (DNS flag day 2020).
EDNS_PAYLOAD_OCTETS: Final = 1232
#: Queries in flight at once by default.
PIPELINE_WINDOW: Final = 64
#: The most queries in flight at once, whatever the window asked for (ids are 16 bits).
WINDOW_MAX: Final = 1 << 15
#: A query is sent at most this often before it counts as unanswered.
QUERY_TRIES: Final = 2
#: The largest UDP datagram read.
DATAGRAM_MAX_OCTETS: Final = 65535

_ED25519: Final = 15
_DNSKEY_PROTOCOL: Final = 3
_ZONE_KEY: Final = int(dns.rdtypes.dnskeybase.Flag.ZONE)
_REVOKE: Final = int(dns.rdtypes.dnskeybase.Flag.REVOKE)
_ED25519_KEY_OCTETS: Final = 32
_TXT: Final = 16
_RRSIG: Final = 46
_OPT: Final = 41
_IN: Final = 1
_LABEL_MAX_OCTETS: Final = 63
_NAME_MAX_OCTETS: Final = 255
_HEADER_OCTETS: Final = 12
_RR_FIXED_OCTETS: Final = 10
_RRSIG_FIXED_OCTETS: Final = 18
_QR: Final = 0x8000
#: QR, opcode, TC and rcode: a plain answer has QR=1 and the rest 0.
_FLAGS_CHECKED: Final = 0x8000 | 0x7800 | 0x0200 | 0x000F
_COMPRESSED: Final = 0xC0
_POINTER_HOPS_MAX: Final = 16  # dnspython's MAX_COMPRESSION_POINTER_CHAIN
_QUESTION_POINTER: Final = b"\xc0\x0c"  # a name compressed to the question's, at offset 12
_TXT_IN: Final = b"\x00\x10\x00\x01"
_QUERY_FLAGS: Final = b"\x00\x00\x00\x01\x00\x00\x00\x00\x00\x01"  # RD=0; QD=1, AR=1
_OPT_DO: Final = struct.pack("!BHHIH", 0, _OPT, EDNS_PAYLOAD_OCTETS, 0x8000, 0)
_HEADER: Final = struct.Struct("!HHHHHH")
_RR: Final = struct.Struct("!HHIH")
_RRSIG_FIXED: Final = struct.Struct("!HBBIIIH")


def _name_wire(labels: Sequence[bytes]) -> bytes | None:
    """The uncompressed, lowercased wire form of an absolute name; None if it is not one."""
    if not labels or labels[-1] != b"":
        return None
    parts = []
    for label in labels[:-1]:
        if not 0 < len(label) <= _LABEL_MAX_OCTETS:
            return None
        parts.append(len(label).to_bytes(1, "big"))
        parts.append(label)
    parts.append(b"\x00")
    wire = b"".join(parts).lower()  # length octets (< 64) are no ASCII letters
    return wire if len(wire) <= _NAME_MAX_OCTETS else None


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
    return query_id.to_bytes(2, "big") + _QUERY_FLAGS + name + _TXT_IN + _OPT_DO


# --------------------------------------------------------------------------
# Pipelined exchange
# --------------------------------------------------------------------------


class _Flight:
    """One query waiting for its reply."""

    __slots__ = ("index", "query_id", "question", "tries", "wire")

    def __init__(self, index: int, query_id: int, wire: bytes) -> None:
        self.index = index
        self.query_id = query_id
        self.wire = wire
        self.question = wire[_HEADER_OCTETS : len(wire) - len(_OPT_DO)].lower()
        self.tries = 0


def _loopback_socket(server: tuple[str, int]) -> socket.socket:
    """A non-blocking UDP socket on the loopback address, connected to ``server``.

    Raises:
        OSError: ``server`` is no loopback IP address, or the socket cannot be set up.
    """
    host, port = server
    try:
        address = ipaddress.ip_address(host)
    except ValueError as exc:
        raise OSError(f"{host!r} is not an IP address") from exc
    if not address.is_loopback:
        raise OSError(f"{host} is not a loopback address")
    family, loopback = (
        (socket.AF_INET6, "::1") if address.version == 6 else (socket.AF_INET, "127.0.0.1")
    )
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        sock.bind((loopback, 0))
        sock.connect((host, port))  # the kernel drops datagrams from anyone else
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def exchange_many(
    server: tuple[str, int],
    queries: Sequence[tuple[bytes, ...]],
    *,
    timeout: float,
    window: int = PIPELINE_WINDOW,
) -> list[bytes | None]:
    """Ask ``owner TXT`` (see :func:`query_wire`) for many owners over one UDP socket.

    Up to ``window`` queries are in flight at once, each with a random 16-bit id that
    is unique among them. A reply is taken for a query only if it is a response
    (QR=1) with the query's id and the very question asked (name compared
    case-insensitively). A query unanswered after ``timeout`` seconds is sent once
    more; unanswered again, its result is None. Truncated or otherwise unusable
    replies are handed back as they are: :func:`secure_txt` refuses them.

    Args:
        server: the server's loopback IP address and port; the socket is bound to the
            loopback address of the same family (127.0.0.1 or ::1).
        queries: the owners, as labels (see :func:`owner_labels`).
        timeout: seconds to wait for each copy of a query.
        window: the most queries in flight at once (at most :data:`WINDOW_MAX`).

    Returns:
        Per query, in the order given, the reply's wire bytes or None.

    Raises:
        ValueError: ``window`` is below 1, ``timeout`` not above 0, or an owner is not an
            absolute name.
        ResolveError: the server is not at a loopback IP address, or no UDP socket to
            it could be opened.
    """
    if window < 1:
        raise ValueError(f"window must be at least 1, not {window}")
    if not timeout > 0:
        raise ValueError(f"timeout must be above 0 seconds, not {timeout}")
    window = min(window, WINDOW_MAX)  # ids must stay unique in flight, and easy to draw
    wires = [query_wire(owner, 0) for owner in queries]  # checks every owner up front
    results: list[bytes | None] = [None] * len(queries)
    if not queries:
        return results
    try:
        sock = _loopback_socket(server)
    except OSError as exc:
        host, port = server
        raise ResolveError(f"cannot open a UDP socket: {exc}", where=f"{host}:{port}") from exc
    with sock, selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_READ)
        _pipeline(sock, selector, wires, results, timeout, window)
    return results


def _send(
    sock: socket.socket,
    flight: _Flight,
    deadlines: deque[tuple[float, _Flight, int]],
    timeout: float,
) -> None:
    flight.tries += 1
    with contextlib.suppress(OSError):  # buffer full, or an earlier ICMP error: count it lost
        sock.send(flight.wire)
    deadlines.append((time.monotonic() + timeout, flight, flight.tries))


def _pipeline(
    sock: socket.socket,
    selector: selectors.BaseSelector,
    wires: list[bytes],
    results: list[bytes | None],
    timeout: float,
    window: int,
) -> None:
    pending: dict[int, _Flight] = {}
    # Every copy sent, in the order sent; with one timeout for all, also in deadline order.
    deadlines: deque[tuple[float, _Flight, int]] = deque()
    upcoming = 0
    while True:
        while upcoming < len(wires) and len(pending) < window:
            query_id = secrets.randbits(16)
            while query_id in pending:
                query_id = secrets.randbits(16)
            wire = query_id.to_bytes(2, "big") + wires[upcoming][2:]
            flight = _Flight(upcoming, query_id, wire)
            pending[query_id] = flight
            _send(sock, flight, deadlines, timeout)
            upcoming += 1
        if not pending:
            return
        now = time.monotonic()
        while deadlines and deadlines[0][0] <= now:
            _, flight, tries = deadlines.popleft()
            if pending.get(flight.query_id) is not flight or flight.tries != tries:
                continue  # answered, or sent again since
            if tries >= QUERY_TRIES:
                del pending[flight.query_id]  # its result stays None
            else:
                _send(sock, flight, deadlines, timeout)
        if not pending:
            continue
        wait = max(0.0, deadlines[0][0] - now)
        if selector.select(wait):
            _receive(sock, pending, results)


def _receive(sock: socket.socket, pending: dict[int, _Flight], results: list[bytes | None]) -> None:
    while True:
        try:
            reply = sock.recv(DATAGRAM_MAX_OCTETS)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # e.g. ICMP port unreachable: the deadlines deal with it
            return
        if len(reply) < _HEADER_OCTETS or not reply[2] & 0x80:
            continue
        flight = pending.get(int.from_bytes(reply[:2], "big"))
        if flight is None:
            continue  # a late duplicate, or not ours
        question = flight.question
        end = _HEADER_OCTETS + len(question)
        if reply[4:6] != b"\x00\x01" or reply[_HEADER_OCTETS:end].lower() != question:
            continue
        results[flight.index] = reply
        del pending[flight.query_id]


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
            return (b"".join(parts).lower(), end) if total < _NAME_MAX_OCTETS else None
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
        if length > _LABEL_MAX_OCTETS:
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
        if length > _LABEL_MAX_OCTETS:
            return None  # compressed or an unknown label type: dnspython refuses
        total += 1 + length
        position += 1 + length
        if total >= _NAME_MAX_OCTETS:
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
        :func:`alter_publish.pipeline.render.txt_text` does), in the order served, duplicates
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
    if size < _HEADER_OCTETS:
        return None
    _, flags, qdcount, ancount, nscount, arcount = _HEADER.unpack_from(message)
    if flags & _FLAGS_CHECKED != _QR or qdcount != 1 or ancount < 2 or nscount or arcount > 1:
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
    position = _HEADER_OCTETS + len(owner_wire)
    if (
        message[_HEADER_OCTETS:position].lower() != owner_wire
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
        if position > size or rdclass != _IN:
            return None
        if rdtype == _TXT:
            if not _txt_well_formed(message, start, position):
                return None
            rdatas[message[start:position]] = None
        elif rdtype == _RRSIG:
            if rdlength <= _RRSIG_FIXED_OCTETS or message[start] or message[start + 1] != _TXT:
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
        if rdtype != _OPT or ttl >> 16 or rdlength:
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
