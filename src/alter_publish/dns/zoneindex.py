"""Authoritative answers from indexed zones: query wire in, response wire out, no sockets.

A :class:`ZoneIndex` is built once from one or more :class:`dns.zone.Zone`
objects and never changes; the per-query path is ``dns.message.from_wire`` ->
:func:`answer` -> ``Message.to_wire``. :func:`answer` is a pure function, so
the protocol logic is testable without sockets; :class:`ResponseCache`
memoizes it for a transport (:mod:`alter_publish.dns.server`) that answers the
same questions again and again.

DNSSEC: when a query sets the DO bit, answers carry the RRSIGs the zone holds
and negative answers and unsigned referrals carry denial proofs. Zones whose
apex holds an NSEC3PARAM rrset and which hold NSEC3 rrsets get NSEC3 proofs
(RFC 5155 section 7.2): for NXDOMAIN the closest encloser proof plus the
NSEC3 covering the wildcard at the closest encloser; for NODATA (also at an
empty non-terminal, and for DS at a delegation) and for referrals to unsigned
delegations the NSEC3 matching the name, or the closest provable encloser
proof where no NSEC3 matches (Opt-Out). The hashed owner names of NSEC3
rrsets are not names of the zone (RFC 5155 section 7.2.8): a query for one is
answered with its NSEC3 rrset for qtype NSEC3 or ANY and as NXDOMAIN, with
proofs, for every other type. The sorted NSEC3 chain these proofs are picked
from is :class:`~alter_publish.dns.nsec3.Nsec3Chain`. Other
signed zones get NSEC proofs (RFC 4035 section 3.1.3). Signatures are served
as they are, never made or checked.

Not implemented (on purpose, the zones we serve do not need them): wildcard
synthesis (so no wildcard answer or wildcard NODATA proofs), zone transfers
(refused), TSIG (answered NOTAUTH), additional-section processing beyond
referral glue.
"""

from __future__ import annotations

import bisect
import logging
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
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

from alter_publish.dns import wire as w
from alter_publish.dns.nsec3 import Nsec3Chain, find_hashed_owners
from alter_publish.errors import ServeError

__all__ = [
    "CACHEABLE_QUERY_OCTETS_MAX",
    "CNAME_CHAIN_MAX",
    "RESPONSE_CACHE_ENTRIES_MAX",
    "IndexedZone",
    "Node",
    "RRsetKey",
    "Resolution",
    "ResponseCache",
    "ZoneIndex",
    "answer",
]

logger = logging.getLogger(__name__)

#: The longest CNAME chain followed inside one zone.
CNAME_CHAIN_MAX: Final = 8
#: Responses the cache remembers (keyed by query bytes after the id); cleared when full.
RESPONSE_CACHE_ENTRIES_MAX: Final = 16384
#: Longer queries are answered but not cached.
CACHEABLE_QUERY_OCTETS_MAX: Final = 512

_NONE: Final = int(dns.rdatatype.NONE)
_GLUE_TYPES: Final = (int(dns.rdatatype.A), int(dns.rdatatype.AAAA))
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
        names: every owner name plus the empty non-terminals above them,
            except the hashed owner names of an NSEC3 zone.
        cuts: names below the apex that carry an NS rrset (delegations).
        nsec_names: owners of NSEC rrsets in canonical DNSSEC order.
        negative_soa: the SOA rrset with TTL min(SOA TTL, SOA minimum), RFC 2308.
        negative_soa_sig: the SOA's RRSIG with that TTL, if the zone is signed.
        nsec3: the NSEC3 chain, if the zone is signed with NSEC3 (then used
            for every denial proof instead of NSEC).
    """

    origin: dns.name.Name
    rdclass: dns.rdataclass.RdataClass
    nodes: Mapping[dns.name.Name, Node]
    names: frozenset[dns.name.Name]
    cuts: frozenset[dns.name.Name]
    nsec_names: tuple[dns.name.Name, ...]
    negative_soa: dns.rrset.RRset
    negative_soa_sig: dns.rrset.RRset | None
    nsec3: Nsec3Chain | None = None

    @classmethod
    def build(cls, zone: dns.zone.Zone) -> IndexedZone:
        """Index one zone.

        Args:
            zone: a zone with an origin and an SOA rrset at its apex.

        Returns:
            The indexed zone.

        Raises:
            ServeError: the zone has no origin, no SOA at its apex, rdata
                that cannot be made absolute, or an NSEC3 chain that cannot
                be used (see :meth:`Nsec3Chain.build`).
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
        soa = apex.get((w.SOA, _NONE))
        if soa is None or len(soa) == 0:
            raise ServeError("zone has no SOA record at its apex", where=origin.to_text())
        minimum = cast("dns.rdtypes.ANY.SOA.SOA", soa[0]).minimum
        negative_ttl = min(soa.ttl, minimum)
        negative_soa = dns.rrset.from_rdata_list(origin, negative_ttl, list(soa))
        soa_sig = apex.get((w.RRSIG, w.SOA))
        negative_soa_sig = (
            None
            if soa_sig is None
            else dns.rrset.from_rdata_list(origin, negative_ttl, list(soa_sig))
        )

        hashed_owners = find_hashed_owners(origin, nodes)
        names: set[dns.name.Name] = {origin}
        for owner in nodes:
            if owner in hashed_owners:
                continue
            name = owner
            while name not in names and len(name) > len(origin):
                names.add(name)
                name = name.parent()
        cuts = frozenset(
            owner for owner, node in nodes.items() if owner != origin and (w.NS, _NONE) in node
        )
        nsec_names = tuple(
            sorted(owner for owner, node in nodes.items() if (w.NSEC, _NONE) in node)
        )
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
            nsec3=Nsec3Chain.build(origin, nodes, names),
        )

    @property
    def soa(self) -> dns.rrset.RRset:
        """The zone's SOA rrset, with its TTL as published."""
        return self.nodes[self.origin][(w.SOA, _NONE)]

    def resolve(self, qname: dns.name.Name, qtype: int, *, dnssec: bool = False) -> Resolution:
        """Look a question up in this zone (the caller picked the zone).

        Args:
            qname: the query name, at or below ``origin``.
            qtype: the query type (ANY returns every rrset at the name).
            dnssec: the query set the DO bit: add RRSIGs and the NSEC or
                NSEC3 proofs the zone holds.

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
            if node is not None and qtype not in w.HASHED_OWNER_TYPES and self._is_hashed(name):
                node = None  # RFC 5155 7.2.8: not a name of the zone
            if node is None:
                rcode = dns.rcode.NOERROR if name in self.names else dns.rcode.NXDOMAIN
                return self._negative(rcode, name, answer, dnssec=dnssec)
            if qtype == w.ANY:
                answer.extend(
                    rrset for (rdtype, _), rrset in node.items() if dnssec or rdtype != w.RRSIG
                )
                return Resolution(dns.rcode.NOERROR, True, tuple(answer))
            rrset = node.get((qtype, _NONE))
            if rrset is not None:
                answer.append(rrset)
                self._add_sig(answer, node, qtype, dnssec=dnssec)
                return Resolution(dns.rcode.NOERROR, True, tuple(answer))
            cname = node.get((w.CNAME, _NONE))
            if cname is None:
                return self._negative(dns.rcode.NOERROR, name, answer, dnssec=dnssec)
            answer.append(cname)
            self._add_sig(answer, node, w.CNAME, dnssec=dnssec)
            seen.add(name)
            target = cast("dns.rdtypes.ANY.CNAME.CNAME", cname[0]).target
            if target in seen or not target.is_subdomain(self.origin):
                break
            name = target
        return Resolution(dns.rcode.NOERROR, True, tuple(answer))

    # -- helpers ----------------------------------------------------------

    def _is_hashed(self, name: dns.name.Name) -> bool:
        return self.nsec3 is not None and name in self.nsec3.hashed_owners

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
                if qtype == w.DS and depth == len(labels):
                    return None
                return candidate
        return None

    def _add_sig(
        self, rrsets: list[dns.rrset.RRset], node: Node, rdtype: int, *, dnssec: bool
    ) -> None:
        if dnssec:
            sig = node.get((w.RRSIG, rdtype))
            if sig is not None:
                rrsets.append(sig)

    def _add_denial(
        self, authority: list[dns.rrset.RRset], owner: dns.name.Name | None, rdtype: int
    ) -> None:
        """Append the NSEC or NSEC3 rrset at ``owner`` and its RRSIG, once."""
        if owner is None:
            return
        node = self.nodes[owner]
        rrset = node[(rdtype, _NONE)]
        if any(present is rrset for present in authority):
            return
        authority.append(rrset)
        self._add_sig(authority, node, rdtype, dnssec=True)

    def _nsec_covering(self, name: dns.name.Name) -> dns.name.Name | None:
        """Return the owner of the NSEC that matches or covers ``name``."""
        if not self.nsec_names:
            return None
        index = bisect.bisect_right(self.nsec_names, name) - 1
        return self.nsec_names[index]  # -1 wraps to the last NSEC, as the chain does

    def _add_nsec_proof(
        self, authority: list[dns.rrset.RRset], rcode: dns.rcode.Rcode, name: dns.name.Name
    ) -> None:
        """NSEC proofs (RFC 4035 3.1.3): the NSEC covering ``name``, and the wildcard."""
        self._add_denial(authority, self._nsec_covering(name), w.NSEC)
        if rcode == dns.rcode.NXDOMAIN and self.nsec_names:
            encloser = name
            while encloser not in self.names and len(encloser) > len(self.origin):
                encloser = encloser.parent()
            wildcard = dns.name.Name((_WILDCARD_LABEL, *encloser.labels))
            self._add_denial(authority, self._nsec_covering(wildcard), w.NSEC)

    def _add_nsec3_proof(
        self,
        authority: list[dns.rrset.RRset],
        chain: Nsec3Chain,
        name: dns.name.Name,
        *,
        nxdomain: bool,
    ) -> None:
        """NSEC3 proofs (RFC 5155 7.2) that ``name`` (or, for NODATA, its type) is absent.

        The closest provable encloser proof: the NSEC3 matching the nearest
        name at or above ``name`` that has one, plus the NSEC3 covering the
        next closer name when that is not ``name`` itself. For NXDOMAIN also
        the NSEC3 covering the wildcard at the closest encloser (7.2.2). When
        ``name`` has a matching NSEC3 (NODATA 7.2.3, DS 7.2.4, unsigned
        delegation 7.2.7) that NSEC3 alone is the proof.
        """
        encloser = name
        next_closer: dns.name.Name | None = None
        match = chain.matching(encloser)
        while match is None and len(encloser) > len(self.origin):
            next_closer = encloser
            encloser = encloser.parent()
            match = chain.matching(encloser)
        self._add_denial(authority, match, w.NSEC3)
        if next_closer is not None:
            self._add_denial(authority, chain.covering(next_closer), w.NSEC3)
        if nxdomain:
            wildcard = dns.name.Name((_WILDCARD_LABEL, *encloser.labels))
            self._add_denial(authority, chain.covering(wildcard), w.NSEC3)

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
            if self.nsec3 is not None:
                nxdomain = rcode == dns.rcode.NXDOMAIN
                self._add_nsec3_proof(authority, self.nsec3, name, nxdomain=nxdomain)
            else:
                self._add_nsec_proof(authority, rcode, name)
        return Resolution(rcode, True, tuple(answer), tuple(authority))

    def _referral(self, cut: dns.name.Name, *, dnssec: bool) -> Resolution:
        node = self.nodes[cut]
        ns = node[(w.NS, _NONE)]
        authority = [ns]
        if dnssec:
            ds = node.get((w.DS, _NONE))
            if ds is not None:
                authority.append(ds)
                self._add_sig(authority, node, w.DS, dnssec=True)
            elif self.nsec3 is not None:
                self._add_nsec3_proof(authority, self.nsec3, cut, nxdomain=False)
            elif (w.NSEC, _NONE) in node:
                self._add_denial(authority, cut, w.NSEC)
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
    """Return ``rdata`` with every domain name in it made absolute.

    Raises:
        ServeError: the rdata does not survive the round trip through wire format.
    """
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
            ServeError: a zone cannot be indexed (see :meth:`IndexedZone.build`),
                or two zones share an origin.
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
        return w.header_reply(wire, dns.rcode.SERVFAIL)


class ResponseCache:
    """Memo of :func:`answer` for an immutable index (which :meth:`replace` swaps).

    The response depends only on the query bytes after the id and on the
    transport limit, so repeated questions (a load generator, a resolver
    retrying) skip parsing and rendering. Dict operations are atomic under
    the GIL, so several serving threads share one cache without a lock; the
    index and its entries are swapped together as one tuple.
    """

    __slots__ = ("_state",)

    def __init__(self, index: ZoneIndex) -> None:
        """Start with an empty cache.

        Args:
            index: the zones to answer from.
        """
        self._state: tuple[ZoneIndex, dict[tuple[int | None, bytes], bytes]] = (index, {})

    @property
    def index(self) -> ZoneIndex:
        """The zones answered from."""
        return self._state[0]

    def replace(self, index: ZoneIndex) -> None:
        """Answer from ``index`` from now on, with an empty cache."""
        self._state = (index, {})

    def answer(self, wire: bytes, max_udp: int | None) -> bytes | None:
        """Answer one query like :func:`answer`, from the cache when possible. Never raises.

        Args:
            wire: the query as received (without the TCP length prefix).
            max_udp: as for :func:`answer` (``None`` means TCP).

        Returns:
            The response wire with the query's id, or ``None`` when nothing
            should be sent.
        """
        index, entries = self._state
        key = (max_udp, wire[2:])
        cached = entries.get(key)
        if cached is not None:
            return wire[:2] + cached[2:]
        reply = answer(index, wire, max_udp=max_udp)
        if reply is not None and len(wire) <= CACHEABLE_QUERY_OCTETS_MAX:
            if len(entries) >= RESPONSE_CACHE_ENTRIES_MAX:
                entries.clear()
            entries[key] = reply
        return reply


def _answer(index: ZoneIndex, wire: bytes, max_udp: int | None) -> bytes | None:
    if len(wire) < w.HEADER_OCTETS:
        return None
    (flags,) = struct.unpack_from("!H", wire, 2)
    if flags & w.QR:
        return None
    try:
        query = dns.message.from_wire(wire)
    except dns.message.UnknownTSIGKey:
        return w.header_reply(wire, dns.rcode.NOTAUTH)
    except Exception:  # anything unparseable is the client's format error
        return w.header_reply(wire, dns.rcode.FORMERR)

    response = dns.message.make_response(query, our_payload=w.EDNS_PAYLOAD_OCTETS)
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
    if qtype in w.TRANSFER_TYPES:
        response.set_rcode(dns.rcode.REFUSED)
        return
    if qtype == dns.rdatatype.OPT:
        response.set_rcode(dns.rcode.FORMERR)
        return
    zone = index.find_zone(qname)
    if zone is not None and qtype == w.DS and qname == zone.origin and len(qname) > 1:
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
    limit = w.udp_limit(query.edns, query.payload, max_udp)
    try:
        return response.to_wire(max_size=limit)
    except dns.exception.TooBig:
        response.answer = []
        response.authority = []
        response.additional = []
        response.flags |= dns.flags.TC
        return response.to_wire(max_size=limit)
