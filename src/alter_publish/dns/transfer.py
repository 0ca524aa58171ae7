"""A zone transfer (AXFR, RFC 5936, or IXFR, RFC 1995) read at the wire level, keeping
only some TXT records.

``plan`` compares the alter1 TXT records a server serves with what ``sign`` wrote. A
signed zone of 100,000 names transfers as about half a million records (TXT, RRSIG,
NSEC or NSEC3); parsing each into dnspython objects took most of a minute. Here each
message is walked record by record: a record's type, class, TTL and length are read
with one ``struct`` call and its data is skipped unless it is a TXT record of class IN
whose owner is selected (an ``_alter`` owner name in the zone): only those owners are
decompressed and their character-strings read.

Nothing is trusted less than with dnspython's reader: the message id, the QR bit, the
opcode, the question and the rcode of every message are checked, names as dnspython
reads them (pointers pointing back, labels of at most 63 octets, names of at most 255),
the transfer must begin with the zone's SOA and end with the same SOA, and with a TSIG
key every signed message is validated by dnspython's TSIG code (``dns.tsig.validate``,
the context carried across messages as RFC 8945 section 5.3.1 describes), the first
and the last must be signed, at most 99 unsigned in a row. Only the data of records it
skips is not parsed (dnspython parses it all). The dnspython reader stays beside it as
the reference (:func:`transfer_txt_reference`); tests check they agree on a real
server's transfer and on made-up ones (``tests/unit/test_transfer.py``).

An incremental transfer (:func:`transfer_txt_changes`) is read the same way: after the
opening SOA come the differences from the serial asked for, each as the old version's
SOA, the records deleted, the new version's SOA and the records added; the SOA of the
zone's current version closes it. A server that keeps no history sends the whole zone
instead (then read as an AXFR), and one whose zone has not changed sends its SOA alone
(as does one whose zone is older than the serial asked for: refused).
"""

from __future__ import annotations

import re
import secrets
import socket
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import dns.exception
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.tsig

from alter_publish.dns.wirenames import is_in_zone, label_starts, name_text
from alter_publish.errors import ResolveError

__all__ = [
    "TransferredTxt",
    "TxtChanges",
    "transfer_txt",
    "transfer_txt_changes",
    "transfer_txt_reference",
]

_HEADER: Final = struct.Struct("!HHHHHH")
_RECORD: Final = struct.Struct("!HHIH")
#: The question of a transfer response after its name: type AXFR or IXFR, class IN.
_AXFR_IN: Final = struct.pack("!HH", int(dns.rdatatype.AXFR), int(dns.rdataclass.IN))
_IXFR_IN: Final = struct.pack("!HH", int(dns.rdatatype.IXFR), int(dns.rdataclass.IN))
_LENGTH: Final = struct.Struct("!H")
_QR: Final = 0x8000
_RCODE_MASK: Final = 0x000F
#: The opcode bits; a response to a query (opcode 0) has them clear.
_OPCODE_MASK: Final = 0x7800
_POINTER: Final = 0xC0
_POINTER_MASK: Final = 0x3FFF
_TXT: Final = int(dns.rdatatype.TXT)
_SOA: Final = int(dns.rdatatype.SOA)
_TSIG: Final = int(dns.rdatatype.TSIG)
_IN: Final = int(dns.rdataclass.IN)
#: The SOA serial's offset from the end of the SOA rdata (serial refresh retry expire minimum).
_SERIAL_FROM_END: Final = 20
#: Serial number arithmetic's modulus (RFC 1982).
_SERIAL_SPACE: Final = 1 << 32
#: A label's longest length; length octets 0x40-0xBF are not labels (RFC 1035 4.1.4, RFC 6891 5).
_LABEL_MAX: Final = 63
#: A name's longest wire, root label included (RFC 1035 section 3.1).
_NAME_MAX: Final = 255
#: SOA rdata's shortest: two names of at least the root label and five 32-bit numbers.
_SOA_RDATA_MIN: Final = 2 + _SERIAL_FROM_END
#: Unsigned messages allowed in a row between signed ones (RFC 8945 section 5.3.1).
_UNSIGNED_MAX: Final = 99
_BAD_LENGTH: Final = "a label length octet that is neither a length (0-63) nor a pointer"
_TOO_LONG: Final = "a name over 255 octets in a transfer message"

#: Names whose text is their labels joined by dots (nothing to escape).
_PLAIN_NAME: Final = re.compile(rb"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
#: Selects owners by their lower-cased uncompressed wire.
Selector = Callable[[bytes], bool]


@dataclass(frozen=True, slots=True)
class TransferredTxt:
    """One TXT record from a transfer: owner (lower-cased text), TTL, character-strings."""

    owner: str
    ttl: int
    strings: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class TxtChanges:
    """An incremental transfer's outcome (:func:`transfer_txt_changes`).

    Attributes:
        serial: the zone's serial now.
        records: every selected TXT record of the zone, when the server sent the whole
            zone instead of its differences; else None.
        changes: the selected TXT records deleted (False) and added (True) since the
            serial asked for, in the order the versions follow one another (empty when
            the zone has not changed, or ``records`` holds the whole zone).
    """

    serial: int
    records: tuple[TransferredTxt, ...] | None
    changes: tuple[tuple[bool, TransferredTxt], ...]


@dataclass(frozen=True, slots=True)
class _Tsig:
    key: dns.tsig.Key
    request_mac: bytes


def _check_pointer(target: int, limit: int, wire: bytes) -> None:
    """A compression pointer must point into the message, before ``limit``.

    Raises:
        ResolveError: it does not.
    """
    if target >= len(wire):
        raise ResolveError("a compression pointer out of its transfer message")
    if target >= limit:
        raise ResolveError(
            "a compression pointer that does not point back (a loop or a forward pointer)"
        )


def _name_end(wire: bytes, pos: int) -> int:
    """The offset just past the (possibly compressed) name at ``pos``.

    Only what skipping needs is checked here (label length octets, a pointer pointing
    before the name, an uncompressed name of at most 255 octets); names that are read
    go through :func:`_name_wire`.

    Raises:
        ResolveError: a bad label length octet, a pointer that does not point back,
            a name over 255 octets.
        IndexError: the name runs past the message.
    """
    start = pos
    while True:
        length = wire[pos]
        if length == 0:
            break
        if length >= _POINTER:
            _check_pointer(((length << 8) | wire[pos + 1]) & _POINTER_MASK, start, wire)
            return pos + 2
        if length > _LABEL_MAX:
            raise ResolveError(_BAD_LENGTH)
        pos += length + 1
    if pos + 1 - start > _NAME_MAX:
        raise ResolveError(_TOO_LONG)
    return pos + 1


def _name_wire(wire: bytes, pos: int) -> bytes:
    """The lower-cased uncompressed wire of the name at ``pos``.

    As dnspython reads names: each compression pointer must point before the name
    or pointer target it was found in (so no loop), a label length octet is at most
    63, and the name at most 255 octets.

    Raises:
        ResolveError: a pointer loop or forward pointer, a pointer out of the
            message, a bad label length octet, a name over 255 octets.
        IndexError: the name runs past the message.
    """
    parts: list[bytes] = []
    size = 0
    limit = pos
    while True:
        length = wire[pos]
        if length == 0:
            parts.append(b"\x00")
            return b"".join(parts).lower()
        if length >= _POINTER:
            target = ((length << 8) | wire[pos + 1]) & _POINTER_MASK
            _check_pointer(target, limit, wire)
            pos = limit = target
            continue
        if length > _LABEL_MAX:
            raise ResolveError(_BAD_LENGTH)
        label = wire[pos : pos + length + 1]
        if len(label) != length + 1:
            raise IndexError(pos)
        parts.append(label)
        size += length + 1
        if size >= _NAME_MAX:
            raise ResolveError(_TOO_LONG)
        pos += length + 1


def _owner_text(wire: bytes) -> str:
    """The text of a lower-cased name wire: labels of letters, digits, ``-`` and ``_``
    joined directly, anything else by dnspython (which escapes it)."""
    labels: list[bytes] = []
    pos = 0
    while wire[pos]:
        labels.append(wire[pos + 1 : pos + 1 + wire[pos]])
        pos += wire[pos] + 1
    joined = b".".join(labels)
    if joined.count(b".") == len(labels) - 1 and _PLAIN_NAME.fullmatch(joined):
        return joined.decode("ascii") + "."
    return name_text(wire)


def _strings(rdata: bytes) -> tuple[bytes, ...]:
    """The character-strings of a TXT rdata.

    Raises:
        ResolveError: no string (RFC 1035 3.3.14: one or more), a string runs past the rdata.
    """
    if not rdata:
        raise ResolveError("a TXT record with no string in the transfer")
    found: list[bytes] = []
    pos = 0
    while pos < len(rdata):
        end = pos + 1 + rdata[pos]
        if end > len(rdata):
            raise ResolveError("a TXT string runs past its record")
        found.append(rdata[pos + 1 : end])
        pos = end
    return tuple(found)


class _Reader:
    """Walks the messages of one transfer; keeps the TXT records in the zone that
    ``select`` accepts (it never sees an owner outside the zone)."""

    def __init__(
        self,
        origin: bytes,
        query_id: int,
        select: Selector,
        tsig: _Tsig | None,
        since: int | None = None,
    ) -> None:
        self.origin = origin
        self.query_id = query_id
        self.select = select
        self.tsig = tsig
        self.since = since  # an IXFR from this serial; None: an AXFR
        self.records: list[TransferredTxt] = []
        self.changes: list[tuple[bool, TransferredTxt]] = []
        #: IXFR: None until the record after the opening SOA tells (an SOA: differences
        #: follow; anything else: the whole zone), then whether differences follow.
        self.incremental: bool | None = None
        self._deleting = False
        self._version = 0
        self.serial: int | None = None
        self._soa_fields: tuple[bytes, bytes, bytes] | None = None
        self.done = False
        self._ctx: Any = None
        self._last_signed = False
        self._first = True
        self._unsigned = 0

    def message(self, wire: bytes) -> None:
        """Read one message of the transfer.

        Raises:
            ResolveError: a malformed or unexpected message, or a bad TSIG.
        """
        if self.done:
            raise ResolveError("a message after the closing SOA")
        if len(wire) < _HEADER.size:
            raise ResolveError("a transfer message shorter than its header")
        ident, flags, qdcount, ancount, nscount, arcount = _HEADER.unpack_from(wire)
        if ident != self.query_id or flags & (_QR | _OPCODE_MASK) != _QR:
            raise ResolveError("a transfer message that answers another query")
        if flags & _RCODE_MASK:
            rcode = dns.rcode.to_text(dns.rcode.Rcode(flags & _RCODE_MASK))
            raise ResolveError(f"the transfer was answered with {rcode}")
        try:
            self._read(wire, qdcount, ancount, nscount + arcount)
        except (IndexError, struct.error) as exc:
            raise ResolveError("a truncated record in a transfer message") from exc
        if self.since is not None and self.incremental is None and self.serial is not None:
            # The opening SOA is all there is so far: alone in the answer, at the serial
            # asked for, it says the zone is unchanged; at an older one, that the server
            # is behind (nothing will follow). Else what follows is in the next message.
            if self.serial == self.since:
                self.done = True
            elif 0 < (self.since - self.serial) % _SERIAL_SPACE < _SERIAL_SPACE // 2:
                raise ResolveError(
                    f"the incremental transfer was answered with the SOA alone, of serial "
                    f"{self.serial}, older than {self.since}"
                )

    def _read(self, wire: bytes, qdcount: int, ancount: int, others: int) -> None:
        pos = _HEADER.size
        if qdcount:
            pos = self._question(wire, pos, qdcount)
        unpack = _RECORD.unpack_from
        for _ in range(ancount):
            owner_at = pos
            pos = _name_end(wire, pos)
            rdtype, rdclass, ttl, rdlength = unpack(wire, pos)
            pos += 10
            end = pos + rdlength
            if end > len(wire):
                raise ResolveError("a record runs past its transfer message")
            if self.done:
                raise ResolveError("records after the closing SOA")
            if rdtype == _SOA:
                self._soa(wire, owner_at, rdclass, end - pos, end)
            elif self.serial is None:
                raise ResolveError("the transfer does not begin with the zone's SOA")
            else:
                if self.since is not None and self.incremental is None:
                    self.incremental = False  # IXFR answered with the whole zone
                if rdtype == _TXT and rdclass == _IN:
                    # A TTL with its top bit set reads as 0 (RFC 2181, section 8).
                    self._txt(wire, owner_at, 0 if ttl >> 31 else ttl, wire[pos:end])
            pos = end
        self._tail(wire, pos, others)

    def _txt(self, wire: bytes, owner_at: int, ttl: int, rdata: bytes) -> None:
        owner = _name_wire(wire, owner_at)
        if is_in_zone(owner, label_starts(owner), self.origin) and self.select(owner):
            record = TransferredTxt(_owner_text(owner), ttl, _strings(rdata))
            if self.incremental:
                self.changes.append((not self._deleting, record))
            else:
                self.records.append(record)

    def _question(self, wire: bytes, pos: int, qdcount: int) -> int:
        """The offset past the question, which must be the zone's AXFR or IXFR, as asked
        (as dnspython checks).

        Raises:
            ResolveError: another question.
        """
        end = _name_end(wire, pos) + 4
        asked = _AXFR_IN if self.since is None else _IXFR_IN
        if qdcount != 1 or wire[end - 4 : end] != asked or _name_wire(wire, pos) != self.origin:
            raise ResolveError("a transfer message with another question")
        return end

    def _soa(self, wire: bytes, owner_at: int, rdclass: int, rdlength: int, end: int) -> None:
        if _name_wire(wire, owner_at) != self.origin:
            raise ResolveError("an SOA record of another zone in the transfer")
        if rdclass != _IN:
            raise ResolveError("an SOA record of a class other than IN in the transfer")
        if rdlength < _SOA_RDATA_MIN:
            raise ResolveError("an SOA record too short for its fields in the transfer")
        mname_end = _name_end(wire, end - rdlength)
        rname_end = _name_end(wire, mname_end)
        if rname_end + _SERIAL_FROM_END != end:
            raise ResolveError("an SOA record whose fields do not fill its data in the transfer")
        fields = (
            _name_wire(wire, end - rdlength),
            _name_wire(wire, mname_end),
            wire[rname_end + 4 : end],
        )
        (serial,) = struct.unpack_from("!I", wire, rname_end)
        if self.serial is None:
            self.serial, self._soa_fields = serial, fields
        elif self.since is not None and self.incremental is not False:
            self._version_soa(serial, fields)
        elif serial != self.serial:
            raise ResolveError("the zone changed during the transfer (two SOA serials)")
        elif fields != self._soa_fields:
            raise ResolveError("the closing SOA differs from the opening SOA")
        else:
            self.done = True

    def _version_soa(self, serial: int, fields: tuple[bytes, bytes, bytes]) -> None:
        """An SOA after the opening one of an incremental transfer: each difference is
        the old version's SOA, deletions, the new version's SOA, additions; the zone's
        current SOA closes the transfer (RFC 1995 section 4).

        Raises:
            ResolveError: the differences do not start at the serial asked for, or do
                not follow on from one another.
        """
        if self.incremental is None:  # the second record: differences follow
            if serial == self.serial and fields == self._soa_fields:
                self.incremental, self.done = False, True  # the whole zone, which is empty
                return
            if serial != self.since:
                raise ResolveError(
                    f"the incremental transfer starts at serial {serial}, not {self.since}"
                )
            self.incremental, self._deleting, self._version = True, True, serial
        elif self._deleting:  # the new version's SOA: its additions follow
            self._deleting, self._version = False, serial
        elif serial == self.serial:  # the closing SOA
            if fields != self._soa_fields:
                raise ResolveError("the closing SOA differs from the opening SOA")
            if self._version != serial:
                raise ResolveError(
                    f"the incremental transfer ends at serial {self._version}, not {serial}"
                )
            self.done = True
        elif serial != self._version:
            raise ResolveError("an incremental transfer whose versions do not follow on")
        else:  # the next difference starts at the version just reached
            self._deleting = True

    def _tail(self, wire: bytes, pos: int, others: int) -> None:
        """Authority and additional sections: only a TSIG, last, is expected."""
        tsig_at = None
        for index in range(others):
            record_at = pos
            pos = _name_end(wire, pos)
            rdtype, _, _, rdlength = _RECORD.unpack_from(wire, pos)
            if rdtype == _TSIG:
                if index != others - 1:
                    raise ResolveError("a TSIG record that is not the last record")
                tsig_at = record_at
            pos += 10 + rdlength
        if pos != len(wire):
            raise ResolveError("trailing octets after a transfer message")
        self._check_tsig(wire, tsig_at)

    def _check_tsig(self, wire: bytes, tsig_at: int | None) -> None:
        first, self._first = self._first, False
        if self.tsig is None:
            if tsig_at is not None:
                raise ResolveError("a TSIG-signed transfer message, and no key was given")
            return
        if tsig_at is None:
            if first:
                raise ResolveError("the first transfer message is not TSIG-signed")
            self._unsigned += 1
            if self._unsigned > _UNSIGNED_MAX:
                raise ResolveError(f"more than {_UNSIGNED_MAX} unsigned transfer messages in a row")
            self._ctx.update(wire)  # unsigned messages between signed ones (RFC 8945 5.3.1)
            self._last_signed = False
            return
        try:
            owner, used = dns.name.from_wire(wire, tsig_at)
            header_at = tsig_at + used
            rdlength = _LENGTH.unpack_from(wire, header_at + 8)[0]
            rdata = dns.rdata.from_wire(
                dns.rdataclass.ANY, dns.rdatatype.TSIG, wire, header_at + 10, rdlength
            )
            self._ctx = dns.tsig.validate(  # type: ignore[no-untyped-call]  # dnspython untyped
                wire,
                self.tsig.key,
                owner,
                rdata,
                int(time.time()),
                self.tsig.request_mac,
                tsig_at,
                self._ctx,
                True,
            )
        except (dns.exception.DNSException, ValueError) as exc:
            raise ResolveError(f"a transfer message fails its TSIG check: {exc}") from exc
        self._last_signed = True
        self._unsigned = 0

    def finish(self) -> None:
        """Check the transfer ended as it must.

        Raises:
            ResolveError: no closing SOA, or a last message not signed.
        """
        if not self.done:
            raise ResolveError("the transfer ended before its closing SOA")
        if self.tsig is not None and not self._last_signed:
            raise ResolveError("the last transfer message is not TSIG-signed")


def _wire(name: dns.name.Name) -> bytes:
    """The lower-cased uncompressed wire of a name."""
    wire = name.canonicalize().to_wire()
    assert wire is not None  # noqa: S101 - to_wire without a file returns the bytes
    return wire


def _read_exactly(sock: socket.socket, size: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    while size:
        left = deadline - time.monotonic()
        if left <= 0:
            raise dns.exception.Timeout
        sock.settimeout(left)
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise EOFError("the server closed the transfer connection")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _messages(sock: socket.socket, deadline: float) -> Iterator[bytes]:
    while True:
        (size,) = _LENGTH.unpack(_read_exactly(sock, 2, deadline))
        yield _read_exactly(sock, size, deadline)


def transfer_txt(
    origin: dns.name.Name,
    server: tuple[str, int],
    select: Selector,
    *,
    keyring: dict[dns.name.Name, dns.tsig.Key] | None = None,
    keyname: dns.name.Name | None = None,
    timeout: float,
    lifetime: float,
) -> tuple[int, list[TransferredTxt]]:
    """AXFR ``origin`` from ``server`` over TCP; the SOA serial and the TXT records
    (class IN) whose owner ``select`` accepts, in transfer order.

    ``select`` gets each TXT owner as its lower-cased uncompressed wire; owners outside
    the zone are never passed. ``timeout`` bounds each read, ``lifetime`` the whole
    transfer.

    Raises:
        ResolveError: a refused or malformed transfer, a bad TSIG.
        dns.exception.Timeout: no answer in time.
        OSError, EOFError: the connection failed or closed early.
    """
    query = dns.message.make_query(origin, dns.rdatatype.AXFR)
    reader = _transfer(query, origin, server, select, keyring, keyname, timeout, lifetime)
    assert reader.serial is not None  # noqa: S101 - done implies the opening SOA was read
    return reader.serial, reader.records


def transfer_txt_changes(
    origin: dns.name.Name,
    server: tuple[str, int],
    select: Selector,
    since: int,
    *,
    keyring: dict[dns.name.Name, dns.tsig.Key] | None = None,
    keyname: dns.name.Name | None = None,
    timeout: float,
    lifetime: float,
) -> TxtChanges:
    """IXFR ``origin`` from ``server`` over TCP from serial ``since``: the selected TXT
    records deleted and added since (or, from a server that sends the whole zone
    instead, all of them). Arguments and errors as :func:`transfer_txt`; also refused:
    differences that start at another serial, do not follow on or stop short of the
    zone's current version, and an SOA alone of a serial older than ``since``.
    """
    query = dns.message.make_query(origin, dns.rdatatype.IXFR)
    rrset = query.find_rrset(
        query.authority, origin, dns.rdataclass.IN, dns.rdatatype.SOA, create=True
    )
    rrset.add(dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.SOA, f". . {since} 0 0 0 0"))
    reader = _transfer(
        query, origin, server, select, keyring, keyname, timeout, lifetime, since=since
    )
    assert reader.serial is not None  # noqa: S101 - done implies the opening SOA was read
    whole = None if reader.incremental or reader.serial == since else tuple(reader.records)
    return TxtChanges(reader.serial, whole, tuple(reader.changes))


def _transfer(
    query: dns.message.Message,
    origin: dns.name.Name,
    server: tuple[str, int],
    select: Selector,
    keyring: dict[dns.name.Name, dns.tsig.Key] | None,
    keyname: dns.name.Name | None,
    timeout: float,
    lifetime: float,
    since: int | None = None,
) -> _Reader:
    """Send ``query`` (TSIG-signed with ``keyring``/``keyname`` when given) and read
    the transfer that answers it to its closing SOA."""
    query.id = secrets.randbits(16)
    tsig = None
    if keyring is not None and keyname is not None:
        query.use_tsig(keyring, keyname, algorithm=keyring[keyname].algorithm)
    wire = query.to_wire()
    if keyring is not None and keyname is not None and query.mac is not None:
        tsig = _Tsig(keyring[keyname], query.mac)
    reader = _Reader(_wire(origin), query.id, select, tsig, since)
    deadline = time.monotonic() + lifetime
    host, port = server
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect((host, port))
            sock.sendall(_LENGTH.pack(len(wire)) + wire)
            for message in _messages(sock, deadline):
                reader.message(message)
                if reader.done:
                    break
        reader.finish()
    except ResolveError as exc:
        raise ResolveError(exc.what, where=f"{host}:{port}") from exc
    return reader


def transfer_txt_reference(
    origin: dns.name.Name,
    server: tuple[str, int],
    select: Selector,
    *,
    keyring: dict[dns.name.Name, dns.tsig.Key] | None = None,
    keyname: dns.name.Name | None = None,
    timeout: float,
    lifetime: float,
) -> tuple[int, list[TransferredTxt]]:
    """:func:`transfer_txt` by dnspython's own transfer reader (the reference: slow).

    Raises:
        dns.exception.DNSException, OSError, EOFError: as ``dns.query.xfr``.
    """
    host, port = server
    messages = dns.query.xfr(
        host,
        origin,
        port=port,
        timeout=timeout,
        lifetime=lifetime,
        keyring=keyring,
        keyname=keyname,
        keyalgorithm=keyring[keyname].algorithm
        if keyring and keyname
        else dns.tsig.default_algorithm,
        relativize=False,
    )
    origin_wire = _wire(origin)
    serial: int | None = None
    found: list[TransferredTxt] = []
    for message in messages:
        for rrset in message.answer:
            if rrset.rdtype == dns.rdatatype.SOA and serial is None:
                serial = int(next(iter(rrset)).serial)
            if rrset.rdtype != dns.rdatatype.TXT or rrset.rdclass != dns.rdataclass.IN:
                continue
            owner = _wire(rrset.name)
            if not (is_in_zone(owner, label_starts(owner), origin_wire) and select(owner)):
                continue
            text = rrset.name.canonicalize().to_text()
            found.extend(TransferredTxt(text, int(rrset.ttl), tuple(r.strings)) for r in rrset)
    if serial is None:
        raise ResolveError("the transfer held no SOA")
    return serial, found
