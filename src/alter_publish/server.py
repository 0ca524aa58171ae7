"""Embedded loopback authoritative DNS server (UDP and TCP on one port).

The server answers authoritatively from one or more :class:`dns.zone.Zone`
objects and never recurses. Lookups run against a :class:`ZoneIndex` built
once when the server is created; the per-query path is
``dns.message.from_wire`` -> :func:`answer` -> ``Message.to_wire``.

:func:`answer` is a pure function from query wire to response wire, so the
protocol logic is testable without sockets; :class:`ZoneServer` only moves
bytes: one thread runs a plain ``recvfrom`` loop for UDP, one thread accepts
TCP connections and each connection gets a thread that answers
length-prefixed queries until the client closes or goes idle.

Not implemented (on purpose, the zones we serve do not need them):
wildcard synthesis, NSEC3 denial proofs, zone transfers (refused), TSIG
(answered NOTAUTH), additional-section processing beyond referral glue.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import socket
import struct
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType, TracebackType
from typing import Final, cast

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.CNAME
import dns.rdtypes.ANY.NS
import dns.rdtypes.ANY.SOA
import dns.rrset
import dns.zone

from alter_publish.errors import ServeError

__all__ = [
    "EDNS_PAYLOAD_OCTETS",
    "UDP_PAYLOAD_MAX_OCTETS",
    "IndexedZone",
    "Resolution",
    "ZoneIndex",
    "ZoneServer",
    "answer",
]

logger = logging.getLogger(__name__)

#: The EDNS payload size the server advertises (DNS flag day 2020).
EDNS_PAYLOAD_OCTETS: Final = 1232
#: The largest UDP response the server sends, whatever the client offers.
UDP_PAYLOAD_MAX_OCTETS: Final = 4096
#: The UDP response limit for clients without EDNS (RFC 1035).
UDP_CLASSIC_MAX_OCTETS: Final = 512
#: The largest DNS message (and TCP response) there is.
DNS_MESSAGE_MAX_OCTETS: Final = 65535
#: Size of the fixed DNS header.
HEADER_OCTETS: Final = 12
#: How long a TCP connection may sit idle between (or within) queries.
TCP_IDLE_TIMEOUT_SECONDS: Final = 5.0
#: TCP connections served at once; further connections are closed at once.
TCP_CONNECTIONS_MAX: Final = 64
#: listen() backlog of the TCP socket.
TCP_BACKLOG: Final = 128
#: How many UDP+TCP port pairs to try when the OS picks the port.
BIND_ATTEMPTS: Final = 8
#: Receive buffer asked for on the UDP socket (bursts from load generators).
UDP_RECV_BUFFER_OCTETS: Final = 1 << 20
#: How long stop() waits for each serving thread to finish.
THREAD_JOIN_SECONDS: Final = 2.0
#: How often wait() wakes up (so that KeyboardInterrupt is seen promptly).
WAIT_POLL_SECONDS: Final = 0.5
#: The longest CNAME chain followed inside one zone.
CNAME_CHAIN_MAX: Final = 8
#: Responses the server remembers (keyed by query bytes after the id); cleared when full.
RESPONSE_CACHE_ENTRIES_MAX: Final = 16384
#: Longer queries are answered but not cached.
CACHEABLE_QUERY_OCTETS_MAX: Final = 512

_QR: Final = int(dns.flags.QR)
_RD: Final = int(dns.flags.RD)
_OPCODE_MASK: Final = 0x7800
_NONE: Final = int(dns.rdatatype.NONE)
_SOA: Final = int(dns.rdatatype.SOA)
_NS: Final = int(dns.rdatatype.NS)
_CNAME: Final = int(dns.rdatatype.CNAME)
_DS: Final = int(dns.rdatatype.DS)
_RRSIG: Final = int(dns.rdatatype.RRSIG)
_NSEC: Final = int(dns.rdatatype.NSEC)
_ANY: Final = int(dns.rdatatype.ANY)
_GLUE_TYPES: Final = (int(dns.rdatatype.A), int(dns.rdatatype.AAAA))
_TRANSFER_TYPES: Final = frozenset({int(dns.rdatatype.AXFR), int(dns.rdatatype.IXFR)})
_WILDCARD_LABEL: Final = b"*"

#: ``(rdtype, covers)``: the key of an rrset inside a node.
RRsetKey = tuple[int, int]
#: All rrsets at one owner name.
Node = Mapping[RRsetKey, dns.rrset.RRset]


# --------------------------------------------------------------------------
# Index
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Resolution:
    """The outcome of looking a question up in one zone.

    Attributes:
        rcode: NOERROR (answer, NODATA or referral) or NXDOMAIN.
        authoritative: whether the AA bit is set (False for referrals).
        answer: rrsets for the answer section.
        authority: rrsets for the authority section.
        additional: rrsets for the additional section (referral glue).
    """

    rcode: dns.rcode.Rcode
    authoritative: bool
    answer: tuple[dns.rrset.RRset, ...] = ()
    authority: tuple[dns.rrset.RRset, ...] = ()
    additional: tuple[dns.rrset.RRset, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class IndexedZone:
    """One zone, indexed for lookups. All names and rdata are absolute.

    Attributes:
        origin: the zone apex.
        rdclass: the zone's class (IN in practice).
        nodes: owner name -> ``{(rdtype, covers): rrset}``.
        names: every owner name plus the empty non-terminals above them.
        cuts: names below the apex that carry an NS rrset (delegations).
        nsec_names: owners of NSEC rrsets in canonical DNSSEC order.
        negative_soa: the SOA rrset with TTL min(SOA TTL, SOA minimum), RFC 2308.
        negative_soa_sig: the SOA's RRSIG with that TTL, if the zone is signed.
    """

    origin: dns.name.Name
    rdclass: dns.rdataclass.RdataClass
    nodes: Mapping[dns.name.Name, Node]
    names: frozenset[dns.name.Name]
    cuts: frozenset[dns.name.Name]
    nsec_names: tuple[dns.name.Name, ...]
    negative_soa: dns.rrset.RRset
    negative_soa_sig: dns.rrset.RRset | None

    @classmethod
    def build(cls, zone: dns.zone.Zone) -> IndexedZone:
        """Index one zone.

        Args:
            zone: a zone with an origin and an SOA rrset at its apex.

        Returns:
            The indexed zone.

        Raises:
            ServeError: the zone has no origin, no SOA at its apex, or rdata
                that cannot be made absolute.
        """
        origin = zone.origin
        if origin is None:
            raise ServeError("zone has no origin", where="zone")
        nodes: dict[dns.name.Name, dict[RRsetKey, dns.rrset.RRset]] = {}
        for rel_name, rdataset in zone.iterate_rdatasets():
            owner = rel_name.derelativize(origin)
            rrset = dns.rrset.RRset(owner, rdataset.rdclass, rdataset.rdtype, rdataset.covers)
            rrset.update_ttl(rdataset.ttl)
            for rdata in rdataset:
                rrset.add(_absolute_rdata(rdata, origin))
            nodes.setdefault(owner, {})[(int(rdataset.rdtype), int(rdataset.covers))] = rrset

        apex = nodes.get(origin, {})
        soa = apex.get((_SOA, _NONE))
        if soa is None or len(soa) == 0:
            raise ServeError("zone has no SOA record at its apex", where=origin.to_text())
        minimum = cast("dns.rdtypes.ANY.SOA.SOA", soa[0]).minimum
        negative_ttl = min(soa.ttl, minimum)
        negative_soa = dns.rrset.from_rdata_list(origin, negative_ttl, list(soa))
        soa_sig = apex.get((_RRSIG, _SOA))
        negative_soa_sig = (
            None
            if soa_sig is None
            else dns.rrset.from_rdata_list(origin, negative_ttl, list(soa_sig))
        )

        names: set[dns.name.Name] = {origin}
        for owner in nodes:
            name = owner
            while name not in names and len(name) > len(origin):
                names.add(name)
                name = name.parent()
        cuts = frozenset(
            owner for owner, node in nodes.items() if owner != origin and (_NS, _NONE) in node
        )
        nsec_names = tuple(sorted(owner for owner, node in nodes.items() if (_NSEC, _NONE) in node))
        return cls(
            origin=origin,
            rdclass=dns.rdataclass.RdataClass(zone.rdclass),
            nodes=MappingProxyType(
                {owner: MappingProxyType(node) for owner, node in nodes.items()}
            ),
            names=frozenset(names),
            cuts=cuts,
            nsec_names=nsec_names,
            negative_soa=negative_soa,
            negative_soa_sig=negative_soa_sig,
        )

    @property
    def soa(self) -> dns.rrset.RRset:
        """The zone's SOA rrset, with its TTL as published."""
        return self.nodes[self.origin][(_SOA, _NONE)]

    def resolve(self, qname: dns.name.Name, qtype: int, *, dnssec: bool = False) -> Resolution:
        """Look a question up in this zone (the caller picked the zone).

        Args:
            qname: the query name, at or below ``origin``.
            qtype: the query type (ANY returns every rrset at the name).
            dnssec: the query set the DO bit: add RRSIGs and NSEC proofs the
                zone holds.

        Returns:
            What to put in the response.
        """
        answer: list[dns.rrset.RRset] = []
        seen: set[dns.name.Name] = set()
        name = qname
        for _ in range(CNAME_CHAIN_MAX + 1):
            cut = self._cut_above(name, qtype)
            if cut is not None:
                if answer:  # a CNAME led into delegated space: stop chasing
                    return Resolution(dns.rcode.NOERROR, True, tuple(answer))
                return self._referral(cut, dnssec=dnssec)
            node = self.nodes.get(name)
            if node is None:
                rcode = dns.rcode.NOERROR if name in self.names else dns.rcode.NXDOMAIN
                return self._negative(rcode, name, answer, dnssec=dnssec)
            if qtype == _ANY:
                answer.extend(
                    rrset for (rdtype, _), rrset in node.items() if dnssec or rdtype != _RRSIG
                )
                return Resolution(dns.rcode.NOERROR, True, tuple(answer))
            rrset = node.get((qtype, _NONE))
            if rrset is not None:
                answer.append(rrset)
                self._add_sig(answer, node, qtype, dnssec=dnssec)
                return Resolution(dns.rcode.NOERROR, True, tuple(answer))
            cname = node.get((_CNAME, _NONE))
            if cname is None:
                return self._negative(dns.rcode.NOERROR, name, answer, dnssec=dnssec)
            answer.append(cname)
            self._add_sig(answer, node, _CNAME, dnssec=dnssec)
            seen.add(name)
            target = cast("dns.rdtypes.ANY.CNAME.CNAME", cname[0]).target
            if target in seen or not target.is_subdomain(self.origin):
                break
            name = target
        return Resolution(dns.rcode.NOERROR, True, tuple(answer))

    # -- helpers ----------------------------------------------------------

    def _cut_above(self, name: dns.name.Name, qtype: int) -> dns.name.Name | None:
        """Return the highest delegation point at or above ``name``, if any.

        A DS query for the cut itself is answered by the parent side (here).
        """
        if not self.cuts:
            return None
        labels = name.labels
        for depth in range(len(self.origin) + 1, len(labels) + 1):
            candidate = dns.name.Name(labels[-depth:])
            if candidate in self.cuts:
                if qtype == _DS and depth == len(labels):
                    return None
                return candidate
        return None

    def _add_sig(
        self, rrsets: list[dns.rrset.RRset], node: Node, rdtype: int, *, dnssec: bool
    ) -> None:
        if dnssec:
            sig = node.get((_RRSIG, rdtype))
            if sig is not None:
                rrsets.append(sig)

    def _nsec_covering(self, name: dns.name.Name) -> dns.name.Name | None:
        """Return the owner of the NSEC that matches or covers ``name``."""
        if not self.nsec_names:
            return None
        index = bisect.bisect_right(self.nsec_names, name) - 1
        return self.nsec_names[index]  # -1 wraps to the last NSEC, as the chain does

    def _add_nsec(self, authority: list[dns.rrset.RRset], owner: dns.name.Name | None) -> None:
        if owner is None:
            return
        node = self.nodes[owner]
        nsec = node[(_NSEC, _NONE)]
        if any(rrset is nsec for rrset in authority):
            return
        authority.append(nsec)
        self._add_sig(authority, node, _NSEC, dnssec=True)

    def _negative(
        self,
        rcode: dns.rcode.Rcode,
        name: dns.name.Name,
        answer: list[dns.rrset.RRset],
        *,
        dnssec: bool,
    ) -> Resolution:
        authority = [self.negative_soa]
        if dnssec:
            if self.negative_soa_sig is not None:
                authority.append(self.negative_soa_sig)
            self._add_nsec(authority, self._nsec_covering(name))
            if rcode == dns.rcode.NXDOMAIN and self.nsec_names:
                encloser = name
                while encloser not in self.names and len(encloser) > len(self.origin):
                    encloser = encloser.parent()
                wildcard = dns.name.Name((_WILDCARD_LABEL, *encloser.labels))
                self._add_nsec(authority, self._nsec_covering(wildcard))
        return Resolution(rcode, True, tuple(answer), tuple(authority))

    def _referral(self, cut: dns.name.Name, *, dnssec: bool) -> Resolution:
        node = self.nodes[cut]
        ns = node[(_NS, _NONE)]
        authority = [ns]
        if dnssec:
            ds = node.get((_DS, _NONE))
            if ds is not None:
                authority.append(ds)
                self._add_sig(authority, node, _DS, dnssec=True)
            elif (_NSEC, _NONE) in node:
                self._add_nsec(authority, cut)
        additional: list[dns.rrset.RRset] = []
        for rdata in ns:
            target = cast("dns.rdtypes.ANY.NS.NS", rdata).target
            target_node = self.nodes.get(target)
            if target_node is None:
                continue
            for rdtype in _GLUE_TYPES:
                glue = target_node.get((rdtype, _NONE))
                if glue is not None and not any(rrset is glue for rrset in additional):
                    additional.append(glue)
        return Resolution(dns.rcode.NOERROR, False, (), tuple(authority), tuple(additional))


def _absolute_rdata(rdata: dns.rdata.Rdata, origin: dns.name.Name) -> dns.rdata.Rdata:
    """Return ``rdata`` with every domain name in it made absolute."""
    try:
        wire = rdata.to_wire(origin=origin) or b""  # bytes, as no file is given
        return dns.rdata.from_wire(rdata.rdclass, rdata.rdtype, wire, 0, len(wire))
    except dns.exception.DNSException as exc:
        raise ServeError(
            f"cannot make {dns.rdatatype.to_text(rdata.rdtype)} rdata absolute: {exc}",
            where=origin.to_text(),
        ) from exc


@dataclass(frozen=True, slots=True, eq=False)
class ZoneIndex:
    """Immutable lookup structure over every served zone, built once.

    Attributes:
        zones: zone origin -> indexed zone.
        origin_depths: the distinct label counts of the origins, longest first.
    """

    zones: Mapping[dns.name.Name, IndexedZone]
    origin_depths: tuple[int, ...]

    @classmethod
    def build(cls, zones: Sequence[dns.zone.Zone]) -> ZoneIndex:
        """Index every zone.

        Args:
            zones: the zones to serve; origins must be distinct.

        Returns:
            The index.

        Raises:
            ServeError: a zone has no origin or SOA, or two zones share an origin.
        """
        indexed: dict[dns.name.Name, IndexedZone] = {}
        for zone in zones:
            entry = IndexedZone.build(zone)
            if entry.origin in indexed:
                raise ServeError("zone given twice", where=entry.origin.to_text())
            indexed[entry.origin] = entry
        depths = tuple(sorted({len(origin) for origin in indexed}, reverse=True))
        return cls(zones=MappingProxyType(indexed), origin_depths=depths)

    def find_zone(self, qname: dns.name.Name) -> IndexedZone | None:
        """Return the zone with the longest origin at or above ``qname``, if any."""
        labels = qname.labels
        for depth in self.origin_depths:
            if depth <= len(labels):
                zone = self.zones.get(dns.name.Name(labels[-depth:]))
                if zone is not None:
                    return zone
        return None


# --------------------------------------------------------------------------
# Answering
# --------------------------------------------------------------------------


def answer(index: ZoneIndex, wire: bytes, *, max_udp: int | None) -> bytes | None:
    """Answer one query, wire to wire. Never raises.

    Args:
        index: the zones to answer from.
        wire: the query as received (without the TCP length prefix).
        max_udp: the largest UDP response the server will send; the limit for
            one response is ``max(512, min(client EDNS payload, max_udp))``, or
            512 without EDNS. ``None`` means TCP (limit 65535).

    Returns:
        The response wire, or ``None`` when nothing should be sent (shorter
        than a header, or the message is itself a response).
    """
    try:
        return _answer(index, wire, max_udp)
    except Exception:  # one bad packet must never stop the server
        logger.debug("internal error answering a query", exc_info=True)
        return _header_reply(wire, dns.rcode.SERVFAIL)


def _header_reply(wire: bytes, rcode: dns.rcode.Rcode) -> bytes | None:
    """Build a header-only response echoing id, opcode and RD; None to drop."""
    if len(wire) < HEADER_OCTETS:
        return None
    msg_id, flags = struct.unpack_from("!HH", wire)
    if flags & _QR:
        return None
    reply_flags = _QR | (flags & (_OPCODE_MASK | _RD)) | (int(rcode) & 0xF)
    return struct.pack("!HHHHHH", msg_id, reply_flags, 0, 0, 0, 0)


def _answer(index: ZoneIndex, wire: bytes, max_udp: int | None) -> bytes | None:
    if len(wire) < HEADER_OCTETS:
        return None
    (flags,) = struct.unpack_from("!H", wire, 2)
    if flags & _QR:
        return None
    try:
        query = dns.message.from_wire(wire)
    except dns.message.UnknownTSIGKey:
        return _header_reply(wire, dns.rcode.NOTAUTH)
    except Exception:  # anything unparseable is the client's format error
        return _header_reply(wire, dns.rcode.FORMERR)

    response = dns.message.make_response(query, our_payload=EDNS_PAYLOAD_OCTETS)
    if query.opcode() != dns.opcode.QUERY:
        response.set_rcode(dns.rcode.NOTIMP)
    elif query.edns > 0:
        response.set_rcode(dns.rcode.BADVERS)
    elif len(query.question) != 1:
        response.question = []
        response.set_rcode(dns.rcode.FORMERR)
    else:
        _fill(index, query, response)
    return _render(response, query, max_udp)


def _fill(index: ZoneIndex, query: dns.message.Message, response: dns.message.Message) -> None:
    question = query.question[0]
    qname = question.name
    qtype = int(question.rdtype)
    if qtype in _TRANSFER_TYPES:
        response.set_rcode(dns.rcode.REFUSED)
        return
    if qtype == dns.rdatatype.OPT:
        response.set_rcode(dns.rcode.FORMERR)
        return
    zone = index.find_zone(qname)
    if zone is not None and qtype == _DS and qname == zone.origin and len(qname) > 1:
        zone = index.find_zone(qname.parent()) or zone  # DS lives in the parent zone
    if zone is None or question.rdclass != zone.rdclass:
        response.set_rcode(dns.rcode.REFUSED)
        return
    dnssec = query.edns >= 0 and bool(query.ednsflags & dns.flags.DO)
    if dnssec:
        response.want_dnssec(True)
    result = zone.resolve(qname, qtype, dnssec=dnssec)
    if result.authoritative:
        response.flags |= dns.flags.AA
    response.set_rcode(result.rcode)
    response.answer = list(result.answer)
    response.authority = list(result.authority)
    response.additional = list(result.additional)


def _render(
    response: dns.message.Message, query: dns.message.Message, max_udp: int | None
) -> bytes:
    if max_udp is None:
        limit = DNS_MESSAGE_MAX_OCTETS
    elif query.edns >= 0:
        limit = max(UDP_CLASSIC_MAX_OCTETS, min(query.payload, max_udp))
    else:
        limit = UDP_CLASSIC_MAX_OCTETS
    try:
        return response.to_wire(max_size=limit)
    except dns.exception.TooBig:
        response.answer = []
        response.authority = []
        response.additional = []
        response.flags |= dns.flags.TC
        return response.to_wire(max_size=limit)


class _ResponseCache:
    """Memo of :func:`answer` for one immutable index.

    The response depends only on the query bytes after the id and on the
    transport limit, so repeated questions (a load generator, a resolver
    retrying) skip parsing and rendering. Dict operations are atomic under
    the GIL, so the UDP and TCP threads share one cache without a lock.
    """

    __slots__ = ("_entries", "_index")

    def __init__(self, index: ZoneIndex) -> None:
        self._index = index
        self._entries: dict[tuple[int | None, bytes], bytes] = {}

    def answer(self, wire: bytes, max_udp: int | None) -> bytes | None:
        key = (max_udp, wire[2:])
        cached = self._entries.get(key)
        if cached is not None:
            return wire[:2] + cached[2:]
        reply = answer(self._index, wire, max_udp=max_udp)
        if reply is not None and len(wire) <= CACHEABLE_QUERY_OCTETS_MAX:
            if len(self._entries) >= RESPONSE_CACHE_ENTRIES_MAX:
                self._entries.clear()
            self._entries[key] = reply
        return reply


# --------------------------------------------------------------------------
# Sockets
# --------------------------------------------------------------------------


class ZoneServer:
    """Authoritative server for one or more dns.zone.Zone objects, UDP and TCP on the same port.

    Use as a context manager (``with ZoneServer(zones) as server:``), or call
    :meth:`start` and :meth:`stop`. The zones are indexed once, when the
    server is created; later changes to the zone objects are not seen.
    """

    def __init__(
        self,
        zones: Sequence[dns.zone.Zone],
        *,
        address: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        """Index the zones; nothing is bound until :meth:`start`.

        Args:
            zones: the zones to serve; origins must be distinct.
            address: the IP address (or host name) to bind.
            port: the UDP and TCP port; 0 lets the OS pick a free one.

        Raises:
            ServeError: a zone has no origin or SOA, or two zones share an origin.
        """
        self._index = ZoneIndex.build(zones)
        self._cache = _ResponseCache(self._index)
        self._host = address
        self._port = port
        self._lock = threading.Lock()
        self._udp: socket.socket | None = None
        self._tcp: socket.socket | None = None
        self._bound: tuple[str, int] | None = None
        self._threads: list[threading.Thread] = []
        self._conns: set[socket.socket] = set()
        self._conn_threads: set[threading.Thread] = set()
        self._conns_lock = threading.Lock()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()

    @property
    def index(self) -> ZoneIndex:
        """The lookup structure the server answers from."""
        return self._index

    @property
    def address(self) -> tuple[str, int]:
        """The ``(host, port)`` the server is (or was last) bound to.

        Raises:
            ServeError: the server was never started.
        """
        if self._bound is None:
            raise ServeError("server not started", where=self._where(self._port))
        return self._bound

    def _where(self, port: int) -> str:
        return f"{self._host}:{port}"

    def start(self) -> None:
        """Bind UDP, then TCP on the same port, and serve in daemon threads.

        Raises:
            ServeError: the server is already running, the address does not
                resolve, or a socket cannot be bound.
        """
        with self._lock:
            if not self._stopped.is_set():
                raise ServeError("server already running", where=self._where(self._port))
            udp, tcp = self._bind()
            host, port = udp.getsockname()[:2]
            self._udp, self._tcp = udp, tcp
            self._bound = (str(host), int(port))
            self._stopping.clear()
            self._stopped.clear()
            self._threads = [
                threading.Thread(
                    target=self._serve_udp, args=(udp,), name=f"dns-udp-{port}", daemon=True
                ),
                threading.Thread(
                    target=self._serve_tcp, args=(tcp,), name=f"dns-tcp-{port}", daemon=True
                ),
            ]
            for thread in self._threads:
                thread.start()
            logger.debug("serving %d zone(s) on %s:%d", len(self._index.zones), host, port)

    def _bind(self) -> tuple[socket.socket, socket.socket]:
        try:
            infos = socket.getaddrinfo(
                self._host, self._port, type=socket.SOCK_DGRAM, flags=socket.AI_PASSIVE
            )
        except (OSError, UnicodeError) as exc:
            raise ServeError(
                f"cannot resolve bind address: {exc}", where=self._where(self._port)
            ) from exc
        family, _, _, _, sockaddr = infos[0]
        attempts = BIND_ATTEMPTS if self._port == 0 else 1
        for attempt in range(attempts):
            udp = socket.socket(family, socket.SOCK_DGRAM)
            try:
                with contextlib.suppress(OSError):
                    udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, UDP_RECV_BUFFER_OCTETS)
                udp.bind(sockaddr)
            except OSError as exc:
                udp.close()
                raise ServeError(
                    f"cannot bind UDP socket: {exc.strerror or exc}",
                    where=self._where(self._port),
                ) from exc
            port = int(udp.getsockname()[1])
            tcp = socket.socket(family, socket.SOCK_STREAM)
            try:
                tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                tcp.bind((sockaddr[0], port, *sockaddr[2:]))
                tcp.listen(TCP_BACKLOG)
            except OSError as exc:
                tcp.close()
                udp.close()
                if attempt + 1 < attempts:
                    logger.debug("TCP port %d taken, trying another", port)
                    continue
                raise ServeError(
                    f"cannot bind TCP socket: {exc.strerror or exc}", where=self._where(port)
                ) from exc
            return udp, tcp
        raise ServeError("no free port pair found", where=self._where(self._port))

    def stop(self) -> None:
        """Close the sockets and join the serving threads. Idempotent."""
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopping.set()
            udp, tcp, bound = self._udp, self._tcp, self._bound
            if udp is None or tcp is None or bound is None:  # pragma: no cover - not started
                self._stopped.set()
                return
            wake_host = _wake_host(bound[0], udp.family)
            # Wake the UDP loop: a datagram to ourselves, and shutdown() for good measure.
            with (
                contextlib.suppress(OSError),
                socket.socket(udp.family, socket.SOCK_DGRAM) as waker,
            ):
                waker.sendto(b"", (wake_host, bound[1]))
            with contextlib.suppress(OSError):
                udp.shutdown(socket.SHUT_RDWR)
            # Wake the accept loop: shutdown() on Linux, a connection elsewhere.
            with contextlib.suppress(OSError):
                tcp.shutdown(socket.SHUT_RDWR)
            with (
                contextlib.suppress(OSError),
                socket.create_connection((wake_host, bound[1]), timeout=0.5),
            ):
                pass
            with self._conns_lock:
                conns = list(self._conns)
                conn_threads = list(self._conn_threads)
            for conn in conns:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
            for thread in [*self._threads, *conn_threads]:
                thread.join(THREAD_JOIN_SECONDS)
            udp.close()
            tcp.close()
            self._udp = self._tcp = None
            self._threads = []
            self._stopped.set()
            logger.debug("stopped serving on %s:%d", *bound)

    def wait(self) -> None:
        """Block until :meth:`stop` is called from another thread.

        Returns at once if the server is not running. A KeyboardInterrupt in
        the waiting thread propagates (the caller then calls :meth:`stop`).
        """
        while not self._stopped.wait(WAIT_POLL_SECONDS):
            continue

    def __enter__(self) -> ZoneServer:
        """Start the server.

        Raises:
            ServeError: see :meth:`start`.
        """
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop the server."""
        self.stop()

    # -- serving threads ----------------------------------------------------

    def _serve_udp(self, sock: socket.socket) -> None:
        respond = self._cache.answer
        stopping = self._stopping
        recvfrom = sock.recvfrom
        sendto = sock.sendto
        while True:
            try:
                wire, peer = recvfrom(DNS_MESSAGE_MAX_OCTETS)
            except OSError:
                if stopping.is_set() or sock.fileno() < 0:
                    return
                logger.debug("UDP receive failed", exc_info=True)
                continue
            if stopping.is_set():
                return
            try:
                reply = respond(wire, UDP_PAYLOAD_MAX_OCTETS)
                if reply is not None:
                    sendto(reply, peer)
            except Exception:  # keep serving whatever happens to one packet
                logger.debug("UDP reply to %s failed", peer, exc_info=True)

    def _serve_tcp(self, listener: socket.socket) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                if self._stopping.is_set() or listener.fileno() < 0:
                    return
                logger.debug("TCP accept failed", exc_info=True)
                continue
            with self._conns_lock:
                if self._stopping.is_set() or len(self._conns) >= TCP_CONNECTIONS_MAX:
                    conn.close()
                    continue
                thread = threading.Thread(
                    target=self._serve_tcp_connection,
                    args=(conn,),
                    name="dns-tcp-conn",
                    daemon=True,
                )
                self._conns.add(conn)
                self._conn_threads.add(thread)
            thread.start()

    def _serve_tcp_connection(self, conn: socket.socket) -> None:
        respond = self._cache.answer
        try:
            conn.settimeout(TCP_IDLE_TIMEOUT_SECONDS)
            while not self._stopping.is_set():
                prefix = _recv_exact(conn, 2)
                if prefix is None:
                    return
                (length,) = struct.unpack("!H", prefix)
                wire = _recv_exact(conn, length)
                if wire is None:
                    return
                reply = respond(wire, None)
                if reply is None:  # garbage or a response: hang up
                    return
                conn.sendall(struct.pack("!H", len(reply)) + reply)
        except Exception:  # timeouts, resets, anything: just close
            logger.debug("TCP connection closed on error", exc_info=True)
        finally:
            conn.close()
            with self._conns_lock:
                self._conns.discard(conn)
                self._conn_threads.discard(threading.current_thread())


def _recv_exact(conn: socket.socket, count: int) -> bytes | None:
    """Read exactly ``count`` bytes; ``None`` if the peer closes first."""
    buffer = bytearray(count)
    view = memoryview(buffer)
    received = 0
    while received < count:
        chunk = conn.recv_into(view[received:])
        if chunk == 0:
            return None
        received += chunk
    return bytes(buffer)


def _wake_host(host: str, family: int) -> str:
    """The address to reach a socket bound to ``host`` (wildcards -> loopback)."""
    if host in ("0.0.0.0", ""):  # noqa: S104 - comparing, not binding
        return "127.0.0.1"
    if family == socket.AF_INET6 and host == "::":
        return "::1"
    return host
