"""Wire-level authoritative answers for one zone: bytes in, bytes out, no dnspython per query.

:class:`WireZone` answers exactly like :func:`alter_publish.dns.zoneindex.answer`
does for one zone (the dnspython engine is the specification), for the zones
alter-publish serves: no delegations, CNAMEs, DNAMEs or wildcards. It is built
from :class:`~alter_publish.dns.records.SignedRRs` values (owner labels and rdata
already in wire form: what the signer makes), so that building costs a few
microseconds per rrset; a query costs about ten: the header, question and OPT
record are parsed by hand, and answers are joined from bytes prepared on first
use once per rrset (kept for the zone's life).

A query that is not plain (another opcode, several questions, records in other
sections, name compression in the question, EDNS options that dnspython parses
itself, other than COOKIE) goes through ``dns.message.from_wire`` first, so that
exactly the queries dnspython rejects get FORMERR (or NOTAUTH for TSIG); its
answer is then made the same way. Responses are not compressed except for
answer owners, which point at the question name; the TC bit is set when the
response does not fit, as with the dnspython engine, but because that engine
compresses every name, the exact size at which truncation starts differs.

Zones the engine does not handle raise :class:`~alter_publish.errors.UnsupportedZoneError`
when built; :func:`~alter_publish.dns.answerers.answerer_for` then serves them with
:class:`~alter_publish.dns.zoneindex.ZoneIndex`.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
import struct
from collections.abc import Iterable
from typing import Final, NamedTuple

import dns.edns
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.zone

from alter_publish.dns.nsec3 import NSEC3_HASH_SHA1
from alter_publish.dns.records import SignedRRs
from alter_publish.dns.wire import (
    AA,
    ANY,
    CNAME,
    DNAME,
    DO,
    EDNS_PAYLOAD_OCTETS,
    HASHED_OWNER_TYPES,
    HEADER,
    HEADER_OCTETS,
    IN,
    LABEL_MAX_OCTETS,
    NAME_MAX_OCTETS,
    NS,
    NSEC,
    NSEC3,
    NSEC3PARAM,
    OPCODE_MASK,
    OPT,
    QR,
    RD,
    RR_FIXED,
    RRSIG,
    SOA,
    TC,
    TRANSFER_TYPES,
    header_reply,
    udp_limit,
)
from alter_publish.errors import UnsupportedZoneError

__all__ = [
    "DENIAL_KINDS",
    "PADDING_BLOCK_OCTETS",
    "WireZone",
]

logger = logging.getLogger(__name__)

#: The denial-of-existence kinds :meth:`WireZone.build` knows (``None``: no proofs).
DENIAL_KINDS: Final = frozenset({"nsec", "nsec3"})
#: Responses to padded queries are padded to a multiple of this (RFC 8467, as dnspython does).
PADDING_BLOCK_OCTETS: Final = 468
#: What the NSEC3 iterations and salt length fields can hold (RFC 5155 section 3.2).
NSEC3_ITERATIONS_LIMIT: Final = 0xFFFF
SALT_MAX_OCTETS: Final = 255

_RR_TYPE_CLASS_TTL: Final = struct.Struct("!HHI")
_TYPE_CLASS: Final = struct.Struct("!HH")
_NSEC3_PARAMS: Final = struct.Struct("!HB")  # iterations, salt length

_NOERROR: Final = int(dns.rcode.NOERROR)
_FORMERR: Final = int(dns.rcode.FORMERR)
_SERVFAIL: Final = int(dns.rcode.SERVFAIL)
_NXDOMAIN: Final = int(dns.rcode.NXDOMAIN)
_NOTIMP: Final = int(dns.rcode.NOTIMP)
_REFUSED: Final = int(dns.rcode.REFUSED)
_NOTAUTH: Final = int(dns.rcode.NOTAUTH)
_BADVERS: Final = int(dns.rcode.BADVERS)
_UNSUPPORTED_TYPES: Final = {CNAME: "CNAME", DNAME: "DNAME"}
_COOKIE: Final = int(dns.edns.OptionType.COOKIE)
_PADDING: Final = int(dns.edns.OptionType.PADDING)
#: COOKIE option lengths dnspython accepts: a client cookie, plus 8-32 octets of server cookie.
_COOKIE_OCTETS: Final = frozenset({8, *range(16, 41)})
_OPT_FIXED_OCTETS: Final = 11  # root owner, type, class, TTL, rdata length
_OPTION_HEADER_OCTETS: Final = 4
_ANSWER_OWNER: Final = b"\xc0\x0c"  # a pointer to the question name, right after the header
_WILDCARD_PREFIX: Final = b"\x01*"
_ROOT: Final = b"\x00"
#: The length octet of each possible label, indexed by length.
_LENGTH_OCTETS: Final = tuple(bytes((length,)) for length in range(LABEL_MAX_OCTETS + 1))
#: NSEC3 hashes are SHA-1 digests: 32 base32hex digits in an owner label.
_NSEC3_LABEL_OCTETS: Final = 32
_BASE32: Final = 32

#: Pre-joined resource records and how many there are.
_Block = tuple[bytes, int]
_EMPTY: Final[_Block] = (b"", 0)


class _Query(NamedTuple):
    """What the answer depends on, parsed from one query.

    A NamedTuple rather than a frozen dataclass: one is made per query, and
    making a frozen dataclass costs several times as much.
    """

    msg_id: int
    flags: int
    question: bytes  # the question section to echo, as wire
    qdcount: int
    edns: int  # EDNS version, -1 without OPT
    payload: int
    ednsflags: int
    pad: bool  # the query carried a PADDING option


class _Result(NamedTuple):
    """The content of one response (a NamedTuple, as :class:`_Query`)."""

    rcode: int
    authoritative: bool = False
    dnssec: bool = False
    answer: _Block = _EMPTY
    authority: _Block = _EMPTY
    echo_question: bool = True


class WireZone:
    """One zone, indexed for answering queries wire to wire.

    Immutable once built (lazily filled caches aside), so threads share it
    without a lock. Use :meth:`build` or :meth:`from_zone`, then
    :meth:`answer`.
    """

    __slots__ = (
        "_answers",
        "_chain",
        "_denials",
        "_hashed",
        "_names",
        "_negative_soa",
        "_nodes",
        "_nsec3_iterations",
        "_nsec3_salt",
        "_nsec_chain",
        "_nsec_owners",
        "_origin_wire",
        "denial",
        "origin",
    )

    def __init__(
        self,
        *,
        origin: tuple[bytes, ...],
        origin_wire: bytes,
        denial: str | None,
        nodes: dict[bytes, dict[int, SignedRRs]],
        names: frozenset[bytes],
        hashed: frozenset[bytes],
        nsec_owners: list[bytes],
        chain: tuple[list[int], list[bytes]],
        nsec3_salt: bytes,
        nsec3_iterations: int,
        negative_soa: tuple[_Block, _Block],
    ) -> None:
        """Hold prepared parts; use :meth:`build` or :meth:`from_zone` instead."""
        self.origin = origin
        self.denial = denial
        self._origin_wire = origin_wire
        self._nodes = nodes
        self._names = names
        self._hashed = hashed
        self._nsec_owners = nsec_owners
        self._nsec_chain: tuple[list[tuple[bytes, ...]], list[bytes]] | None = None
        self._chain = chain
        self._nsec3_salt = nsec3_salt
        self._nsec3_iterations = nsec3_iterations
        self._negative_soa = negative_soa
        # id(rrset) -> (answer records with RRSIGs, octets and count without, count with)
        self._answers: dict[int, tuple[bytes, int, int, int]] = {}
        self._denials: dict[bytes, _Block] = {}

    # ------------------------------------------------------------------
    # Building
    # ------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        origin: tuple[bytes, ...],
        rrsets: Iterable[SignedRRs],
        *,
        denial: str | None,
        nsec3_salt: bytes = b"",
        nsec3_iterations: int = 0,
    ) -> WireZone:
        """Index the rrsets of one zone (class IN).

        Args:
            origin: the apex labels, root last.
            rrsets: every rrset of the zone, DNSSEC ones (DNSKEY, NSEC, NSEC3,
                NSEC3PARAM) included, NSEC3 rrsets at their hashed owners.
            denial: ``"nsec"`` or ``"nsec3"``: the proofs negative answers to
                DO queries carry; ``None`` for none (an unsigned zone).
            nsec3_salt: the salt of the NSEC3 chain (``denial="nsec3"``).
            nsec3_iterations: the extra hash iterations of the NSEC3 chain.

        Returns:
            The zone, ready to answer.

        Raises:
            UnsupportedZoneError: the zone has a delegation, CNAME, DNAME or
                wildcard, no SOA at its apex, an rrset given twice or outside
                the zone, a bad owner name, or (NSEC3) no NSEC3 record with the
                chain's parameters; or ``denial`` is unknown.
        """
        origin_wire, origin_text = _origin_wire(origin)
        if denial is not None and denial not in DENIAL_KINDS:
            raise UnsupportedZoneError(f"unknown denial {denial!r}", where=origin_text)
        if not 0 <= nsec3_iterations <= NSEC3_ITERATIONS_LIMIT or len(nsec3_salt) > SALT_MAX_OCTETS:
            raise UnsupportedZoneError("NSEC3 iterations or salt out of range", where=origin_text)
        origin_lower = tuple(label.lower() for label in origin)
        hashed_depth = len(origin) + 1 if denial == "nsec3" else -1
        chain_prefix = _NSEC3_PARAMS.pack(nsec3_iterations, len(nsec3_salt)) + nsec3_salt
        wires: dict[tuple[bytes, ...], bytes] = {}
        nodes: dict[bytes, dict[int, SignedRRs]] = {}
        nsec_owners: list[bytes] = []
        chain: list[tuple[int, bytes]] = []
        hashed: set[bytes] = set()
        for rrset in rrsets:
            owner = rrset.owner
            wire = wires.get(owner)
            if wire is None:
                wire = _owner_wire(owner, origin_lower, origin_wire, origin_text)
                wires[owner] = wire
            rdtype = rrset.rdtype
            node = nodes.get(wire)
            if node is None:
                node = nodes[wire] = {}
            elif rdtype in node:
                raise UnsupportedZoneError(
                    f"{_type_text(rdtype)} rrset given twice", where=_name_text(wire)
                )
            node[rdtype] = rrset
            if rdtype == NSEC:
                nsec_owners.append(wire)
            elif rdtype == NSEC3 and len(owner) == hashed_depth:
                hashed.add(wire)
                if any(
                    rd[:1] == b"\x01" and rd[2:].startswith(chain_prefix) for rd in rrset.rdatas
                ):
                    chain.append((_hash_label_value(wire, origin_text), wire))
            elif rdtype in _UNSUPPORTED_TYPES:
                raise UnsupportedZoneError(
                    f"{_UNSUPPORTED_TYPES[rdtype]} is not served by the wire engine",
                    where=_name_text(wire),
                )
            elif rdtype == NS and wire != origin_wire:
                raise UnsupportedZoneError(
                    "delegations are not served by the wire engine", where=_name_text(wire)
                )
            elif rdtype == RRSIG:
                raise UnsupportedZoneError(
                    "RRSIG rrsets go in the sigs of the rrset they cover", where=_name_text(wire)
                )
        soa = nodes.get(origin_wire, {}).get(SOA)
        if soa is None or not soa.rdatas:
            raise UnsupportedZoneError("zone has no SOA record at its apex", where=origin_text)
        if denial == "nsec3" and not chain:
            raise UnsupportedZoneError(
                "no NSEC3 records have the chain's hash parameters", where=origin_text
            )
        chain.sort()
        origin_octets = len(origin_wire)
        names: set[bytes] = {origin_wire}
        for wire in nodes:
            if wire in hashed:
                continue
            name = wire
            while name not in names and len(name) > origin_octets:
                names.add(name)
                name = name[name[0] + 1 :]
        return cls(
            origin=origin_lower,
            origin_wire=origin_wire,
            denial=denial,
            nodes=nodes,
            names=frozenset(names),
            hashed=frozenset(hashed),
            nsec_owners=nsec_owners if denial == "nsec" else [],
            chain=([label for label, _ in chain], [wire for _, wire in chain]),
            nsec3_salt=nsec3_salt,
            nsec3_iterations=nsec3_iterations,
            negative_soa=_negative_soa(origin_wire, soa),
        )

    @classmethod
    def from_zone(cls, zone: dns.zone.Zone) -> WireZone:
        """Index a dnspython zone, signed or not, with the proofs its records allow.

        The zone is an NSEC3 zone when its apex holds an NSEC3PARAM (flags 0)
        and NSEC3 records with its parameters sit directly below the apex (the
        first such NSEC3PARAM wins, as in the dnspython engine), else an NSEC
        zone when it holds NSEC records.

        Args:
            zone: the zone (relative or absolute names).

        Returns:
            The zone, ready to answer.

        Raises:
            UnsupportedZoneError: the zone has no origin, is not of class IN,
                has an RRSIG without the rrset it covers, uses an NSEC3 hash
                other than SHA-1, or see :meth:`build`.
        """
        origin = zone.origin
        if origin is None:
            raise UnsupportedZoneError("zone has no origin", where="zone")
        where = origin.to_text()
        if zone.rdclass != dns.rdataclass.IN:
            raise UnsupportedZoneError("only class IN zones are served", where=where)
        plain: dict[tuple[tuple[bytes, ...], int], tuple[int, tuple[bytes, ...]]] = {}
        sigs: dict[tuple[tuple[bytes, ...], int], tuple[int, tuple[bytes, ...]]] = {}
        for rel_name, rdataset in zone.iterate_rdatasets():
            owner = tuple(label.lower() for label in rel_name.derelativize(origin).labels)
            rdatas = tuple(rdata.to_wire(origin=origin) or b"" for rdata in rdataset)
            if rdataset.rdtype == dns.rdatatype.RRSIG:
                sigs[(owner, int(rdataset.covers))] = (rdataset.ttl, rdatas)
            else:
                plain[(owner, int(rdataset.rdtype))] = (rdataset.ttl, rdatas)
        for owner, covers in sigs:
            if (owner, covers) not in plain:
                raise UnsupportedZoneError(
                    f"RRSIG covering {_type_text(covers)} without that rrset",
                    where=dns.name.Name(owner).to_text(),
                )
        rrsets = []
        for key, (ttl, rdatas) in plain.items():
            sig_ttl, sig_rdatas = sigs.get(key, (ttl, ()))
            rrsets.append(SignedRRs(key[0], key[1], ttl, rdatas, sig_rdatas, sig_ttl))
        denial, salt, iterations = _zone_denial(origin, plain)
        return cls.build(
            tuple(label.lower() for label in origin.labels),
            rrsets,
            denial=denial,
            nsec3_salt=salt,
            nsec3_iterations=iterations,
        )

    # ------------------------------------------------------------------
    # Answering
    # ------------------------------------------------------------------

    def answer(self, wire: bytes, max_udp: int | None) -> bytes | None:
        """Answer one query wire to wire, as :func:`~alter_publish.dns.zoneindex.answer` does.

        Args:
            wire: the query as received (without the TCP length prefix).
            max_udp: the largest UDP response the server will send; the limit
                for one response is ``max(512, min(client EDNS payload,
                max_udp))``, or 512 without EDNS. ``None`` means TCP (65535).

        Returns:
            The response wire, or ``None`` when nothing should be sent (shorter
            than a header, or the message is itself a response).
        """
        try:
            return self._answer(wire, max_udp)
        except Exception:  # one bad packet must never stop the server
            logger.debug("internal error answering a query", exc_info=True)
            return header_reply(wire, _SERVFAIL)

    def _answer(self, wire: bytes, max_udp: int | None) -> bytes | None:
        size = len(wire)
        if size < HEADER_OCTETS:
            return None
        msg_id, flags, qdcount, ancount, nscount, arcount = HEADER.unpack_from(wire)
        if flags & QR:
            return None
        if flags & OPCODE_MASK or qdcount != 1 or ancount or nscount or arcount > 1:
            return self._answer_parsed(wire, max_udp)
        # The question: plain labels only (compression and odd label types go the slow way).
        pos = HEADER_OCTETS
        starts: list[int] = []  # label offsets in the name
        while True:
            if pos >= size:
                return self._answer_parsed(wire, max_udp)
            length = wire[pos]
            if length == 0:
                break
            if length > LABEL_MAX_OCTETS:
                return self._answer_parsed(wire, max_udp)
            starts.append(pos - HEADER_OCTETS)
            pos += length + 1
        name_end = pos + 1
        end = name_end + 4
        if name_end - HEADER_OCTETS > NAME_MAX_OCTETS or end > size:
            return self._answer_parsed(wire, max_udp)
        qtype, qclass = _TYPE_CLASS.unpack_from(wire, name_end)
        edns, payload, ednsflags, pad = -1, 0, 0, False
        if arcount:
            if end + _OPT_FIXED_OCTETS > size or wire[end] != 0:
                return self._answer_parsed(wire, max_udp)
            rdtype, payload, ednsflags, rdlen = RR_FIXED.unpack_from(wire, end + 1)
            options = end + _OPT_FIXED_OCTETS
            if rdtype != OPT or options + rdlen != size:
                return self._answer_parsed(wire, max_udp)
            if rdlen:
                scanned = _scan_options(wire, options, size)
                if scanned is None:
                    return self._answer_parsed(wire, max_udp)
                pad = scanned
            edns = (ednsflags >> 16) & 0xFF
        elif end != size:
            return self._answer_parsed(wire, max_udp)
        query = _Query(msg_id, flags, wire[HEADER_OCTETS:end], 1, edns, payload, ednsflags, pad)
        if edns > 0:
            return _render(query, _Result(_BADVERS), max_udp)
        qname = wire[HEADER_OCTETS:name_end].lower()
        in_zone = _in_zone(qname, starts, self._origin_wire)
        return _render(query, self._fill(qname, in_zone, qtype, qclass, query), max_udp)

    def _answer_parsed(self, wire: bytes, max_udp: int | None) -> bytes | None:
        """Answer a query that is not a plain one, parsing it with dnspython first."""
        try:
            message = dns.message.from_wire(wire)
        except dns.message.UnknownTSIGKey:
            return header_reply(wire, _NOTAUTH)
        except Exception:  # anything unparseable is the client's format error
            return header_reply(wire, _FORMERR)
        question = b"".join(
            (rrset.name.to_wire() or b"") + _TYPE_CLASS.pack(rrset.rdtype, rrset.rdclass)
            for rrset in message.question
        )
        pad = any(option.otype == dns.edns.OptionType.PADDING for option in message.options)
        query = _Query(
            message.id,
            message.flags,
            question,
            len(message.question),
            message.edns,
            message.payload,
            message.ednsflags,
            pad,
        )
        if message.flags & OPCODE_MASK:
            return _render(query, _Result(_NOTIMP), max_udp)
        if message.edns > 0:
            return _render(query, _Result(_BADVERS), max_udp)
        if len(message.question) != 1:
            return _render(query, _Result(_FORMERR, echo_question=False), max_udp)
        first = message.question[0]
        qname = first.name.canonicalize().to_wire() or b""
        in_zone = first.name.is_subdomain(self.origin_name)
        result = self._fill(qname, in_zone, int(first.rdtype), int(first.rdclass), query)
        return _render(query, result, max_udp)

    @property
    def origin_name(self) -> dns.name.Name:
        """The apex as a dnspython name."""
        return dns.name.Name(self.origin)

    def _fill(self, qname: bytes, in_zone: bool, qtype: int, qclass: int, query: _Query) -> _Result:
        if qtype in TRANSFER_TYPES:
            return _Result(_REFUSED)
        if qtype == OPT:
            return _Result(_FORMERR)
        if not in_zone or qclass != IN:
            return _Result(_REFUSED)
        dnssec = query.edns >= 0 and bool(query.ednsflags & DO)
        return self._resolve(qname, qtype, dnssec=dnssec)

    def _resolve(self, name: bytes, qtype: int, *, dnssec: bool) -> _Result:
        """Look up one question (``name``: the lower-cased query name wire, in the zone)."""
        node = self._nodes.get(name)
        if node is not None and qtype not in HASHED_OWNER_TYPES and name in self._hashed:
            node = None  # RFC 5155 7.2.8: not a name of the zone
        if node is None:
            rcode = _NOERROR if name in self._names else _NXDOMAIN
            return self._negative(rcode, name, dnssec=dnssec)
        if qtype == ANY:
            blocks = [self._answer_block(rrset, dnssec=dnssec) for rrset in node.values()]
            answer = (b"".join(block[0] for block in blocks), sum(block[1] for block in blocks))
            return _Result(_NOERROR, True, dnssec, answer)
        rrset = node.get(qtype)
        if rrset is None:
            return self._negative(_NOERROR, name, dnssec=dnssec)
        return _Result(_NOERROR, True, dnssec, self._answer_block(rrset, dnssec=dnssec))

    def _answer_block(self, rrset: SignedRRs, *, dnssec: bool) -> _Block:
        """The rrset (with its RRSIGs for DO) as answer records owned by the question name.

        Made on first use and kept: the zone holds every rrset, so ids stay unique.
        """
        entry = self._answers.get(id(rrset))
        if entry is None:
            plain = _records(_ANSWER_OWNER, rrset.rdtype, rrset.ttl, rrset.rdatas)
            sig_ttl = rrset.ttl if rrset.sig_ttl is None else rrset.sig_ttl
            signed = plain + _records(_ANSWER_OWNER, RRSIG, sig_ttl, rrset.sigs)
            count = len(rrset.rdatas)
            entry = (signed, len(plain), count, count + len(rrset.sigs))
            self._answers[id(rrset)] = entry
        if dnssec:
            return entry[0], entry[3]
        return entry[0][: entry[1]], entry[2]

    def _negative(self, rcode: int, name: bytes, *, dnssec: bool) -> _Result:
        soa = self._negative_soa[dnssec]
        if not dnssec or self.denial is None:
            return _Result(rcode, True, dnssec, _EMPTY, soa)
        owners = (
            self._nsec3_proof(name, nxdomain=rcode == _NXDOMAIN)
            if self.denial == "nsec3"
            else self._nsec_proof(name, nxdomain=rcode == _NXDOMAIN)
        )
        parts, count = [soa[0]], soa[1]
        for owner in dict.fromkeys(owners):  # each proof once, in order
            block = self._denial_block(owner)
            parts.append(block[0])
            count += block[1]
        return _Result(rcode, True, True, _EMPTY, (b"".join(parts), count))

    def _denial_block(self, owner: bytes) -> _Block:
        """The NSEC or NSEC3 rrset at ``owner`` with its RRSIGs, as authority records."""
        block = self._denials.get(owner)
        if block is None:
            rdtype = NSEC3 if self.denial == "nsec3" else NSEC
            rrset = self._nodes[owner][rdtype]
            sig_ttl = rrset.ttl if rrset.sig_ttl is None else rrset.sig_ttl
            block = (
                _records(owner, rdtype, rrset.ttl, rrset.rdatas)
                + _records(owner, RRSIG, sig_ttl, rrset.sigs),
                len(rrset.rdatas) + len(rrset.sigs),
            )
            self._denials[owner] = block
        return block

    def _nsec_proof(self, name: bytes, *, nxdomain: bool) -> list[bytes]:
        """NSEC proofs (RFC 4035 3.1.3): the NSEC covering ``name``, and the wildcard."""
        keys, owners = self._sorted_nsec_chain()
        if not keys:
            return []
        proof = [owners[bisect.bisect_right(keys, _canonical_key(name)) - 1]]  # -1 wraps
        if nxdomain:
            encloser = name
            while encloser not in self._names and len(encloser) > len(self._origin_wire):
                encloser = encloser[encloser[0] + 1 :]
            wildcard = _canonical_key(_WILDCARD_PREFIX + encloser)
            proof.append(owners[bisect.bisect_right(keys, wildcard) - 1])
        return proof

    def _sorted_nsec_chain(self) -> tuple[list[tuple[bytes, ...]], list[bytes]]:
        """NSEC owners in canonical order (RFC 4034 6.1), and their sort keys; made on first use."""
        chain = self._nsec_chain
        if chain is None:
            pairs = sorted((_canonical_key(owner), owner) for owner in self._nsec_owners)
            chain = ([key for key, _ in pairs], [owner for _, owner in pairs])
            self._nsec_chain = chain
        return chain

    def _nsec3_proof(self, name: bytes, *, nxdomain: bool) -> list[bytes]:
        """NSEC3 proofs (RFC 5155 7.2), picked as :mod:`alter_publish.dns.zoneindex` picks them."""
        hashes, owners = self._chain
        encloser = name
        digest = self._hash(encloser)
        next_closer: int | None = None
        index = bisect.bisect_left(hashes, digest)
        matched = index < len(hashes) and hashes[index] == digest
        while not matched and len(encloser) > len(self._origin_wire):
            next_closer = digest
            encloser = encloser[encloser[0] + 1 :]
            digest = self._hash(encloser)
            index = bisect.bisect_left(hashes, digest)
            matched = index < len(hashes) and hashes[index] == digest
        proof = [owners[index]] if matched else []
        if next_closer is not None:
            proof.append(owners[bisect.bisect_right(hashes, next_closer) - 1])
        if nxdomain:
            wildcard = self._hash(_WILDCARD_PREFIX + encloser)
            proof.append(owners[bisect.bisect_right(hashes, wildcard) - 1])
        return proof

    def _hash(self, name: bytes) -> int:
        """The NSEC3 hash of a lower-cased name wire (RFC 5155 5), as an integer.

        Integers sort as the base32hex labels spelling them do, and come
        from an owner label with ``int(label, 32)``, at C speed both ways.
        """
        salt = self._nsec3_salt
        digest = hashlib.sha1(name + salt, usedforsecurity=False).digest()
        for _ in range(self._nsec3_iterations):
            digest = hashlib.sha1(digest + salt, usedforsecurity=False).digest()
        return int.from_bytes(digest, "big")


# ----------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------


def _origin_wire(origin: tuple[bytes, ...]) -> tuple[bytes, str]:
    """The origin's lower-cased wire and its text (for messages).

    Raises:
        UnsupportedZoneError: the origin is not a valid absolute name.
    """
    try:
        text = dns.name.Name(origin).to_text()
    except Exception as exc:
        raise UnsupportedZoneError(f"bad origin {origin!r}: {exc}", where="zone") from exc
    if not origin or origin[-1] != b"":
        raise UnsupportedZoneError("origin must end with the root label", where=text)
    return b"".join(bytes((len(label),)) + label.lower() for label in origin), text


def _owner_wire(
    owner: tuple[bytes, ...], origin: tuple[bytes, ...], origin_wire: bytes, where: str
) -> bytes:
    """The lower-cased wire of an owner name in the zone (``origin``: lower-cased labels).

    Raises:
        UnsupportedZoneError: bad labels, a wildcard, or a name outside the zone.
    """
    cut = len(owner) - len(origin)
    if cut < 0 or (
        owner[cut:] != origin and tuple(label.lower() for label in owner[cut:]) != origin
    ):
        raise UnsupportedZoneError(f"owner {owner!r} is outside the zone", where=where)
    prefix = owner[:cut]
    if b"" in prefix:
        raise UnsupportedZoneError(f"empty label in owner {owner!r}", where=where)
    try:
        parts = [part for label in prefix for part in (_LENGTH_OCTETS[len(label)], label)]
    except IndexError:
        raise UnsupportedZoneError(f"label too long in owner {owner!r}", where=where) from None
    parts.append(origin_wire)
    wire = b"".join(parts)
    if len(wire) > NAME_MAX_OCTETS:
        raise UnsupportedZoneError(f"owner {owner!r} is too long", where=where)
    if prefix[:1] == (b"*",):
        raise UnsupportedZoneError(
            "wildcards are not served by the wire engine", where=_name_text(wire.lower())
        )
    return wire if wire.islower() else wire.lower()


def _hash_label_value(wire: bytes, where: str) -> int:
    """The integer a hashed owner's base32hex label spells (see :meth:`WireZone._hash`).

    Raises:
        UnsupportedZoneError: the label is not 32 base32hex digits.
    """
    label = wire[1 : 1 + wire[0]]
    try:
        if len(label) != _NSEC3_LABEL_OCTETS or not label.isalnum():
            raise ValueError(label)
        return int(label, _BASE32)
    except ValueError:
        raise UnsupportedZoneError(
            "NSEC3 owner label is not a base32hex SHA-1 hash", where=_name_text(wire)
        ) from None


def _label_starts(name: bytes) -> list[int]:
    """The offset of each (non-root) label of a name wire."""
    starts, pos = [], 0
    while name[pos]:
        starts.append(pos)
        pos += name[pos] + 1
    return starts


def _in_zone(name: bytes, starts: list[int], origin: bytes) -> bool:
    """Whether ``name`` (a lower-cased wire, its labels at ``starts``) is ``origin`` or below it."""
    cut = len(name) - len(origin)
    return name.endswith(origin) and (cut == 0 or cut in starts or origin == _ROOT)


def _canonical_key(name: bytes) -> tuple[bytes, ...]:
    """Sort key of a lower-cased name wire in canonical order (RFC 4034 6.1)."""
    labels = []
    pos = 0
    length = name[0]
    while length:
        labels.append(name[pos + 1 : pos + 1 + length])
        pos += length + 1
        length = name[pos]
    labels.reverse()
    return tuple(labels)


def _records(owner: bytes, rdtype: int, ttl: int, rdatas: tuple[bytes, ...]) -> bytes:
    """Resource records of one rrset, uncompressed but for ``owner``, as wire."""
    head = owner + _RR_TYPE_CLASS_TTL.pack(rdtype, IN, ttl)
    return b"".join([head + len(rdata).to_bytes(2, "big") + rdata for rdata in rdatas])


def _negative_soa(origin_wire: bytes, soa: SignedRRs) -> tuple[_Block, _Block]:
    """The SOA for negative answers with TTL min(SOA TTL, SOA minimum) (RFC 2308), and with
    its RRSIGs at that TTL."""
    (minimum,) = struct.unpack("!I", soa.rdatas[0][-4:])
    ttl = min(soa.ttl, minimum)
    plain = _records(origin_wire, SOA, ttl, soa.rdatas)
    signed = plain + _records(origin_wire, RRSIG, ttl, soa.sigs)
    return (plain, len(soa.rdatas)), (signed, len(soa.rdatas) + len(soa.sigs))


def _zone_denial(
    origin: dns.name.Name,
    plain: dict[tuple[tuple[bytes, ...], int], tuple[int, tuple[bytes, ...]]],
) -> tuple[str | None, bytes, int]:
    """The denial kind, NSEC3 salt and iterations a dnspython zone's records call for.

    Raises:
        UnsupportedZoneError: no NSEC3PARAM with flags 0 has NSEC3 records with
            its parameters, or the chosen one's hash is not SHA-1.
    """
    apex = tuple(label.lower() for label in origin.labels)
    params = plain.get((apex, NSEC3PARAM))
    hashed_depth = len(apex) + 1
    nsec3s = [
        rdatas
        for (owner, rdtype), (_, rdatas) in plain.items()
        if rdtype == NSEC3 and len(owner) == hashed_depth
    ]
    if params is not None and nsec3s:
        for param in params[1]:
            algorithm, flags = param[0], param[1]
            if flags != 0:
                continue  # RFC 5155 4.1.2: servers ignore NSEC3PARAM with other flags
            iterations, salt_length = _NSEC3_PARAMS.unpack_from(param, 2)
            chain_params = param[2 : 5 + salt_length]  # NSEC3 rdata starts the same way
            if any(
                rdata[0] == algorithm and rdata[2 : 5 + salt_length] == chain_params
                for rdatas in nsec3s
                for rdata in rdatas
            ):
                if algorithm != NSEC3_HASH_SHA1:
                    raise UnsupportedZoneError(
                        f"unsupported NSEC3 hash algorithm {algorithm}", where=origin.to_text()
                    )
                return "nsec3", param[5 : 5 + salt_length], iterations
        raise UnsupportedZoneError(
            "no NSEC3 records have the parameters of an NSEC3PARAM with flags 0",
            where=origin.to_text(),
        )
    if any(rdtype == NSEC for _, rdtype in plain):
        return "nsec", b"", 0
    return None, b"", 0


def _scan_options(wire: bytes, start: int, end: int) -> bool | None:
    """Check EDNS options the way dnspython would parse them.

    Returns:
        Whether a PADDING option is present, or ``None`` when an option is
        malformed or of a type dnspython parses itself (then dnspython decides).
    """
    pad = False
    pos = start
    while pos < end:
        if pos + _OPTION_HEADER_OCTETS > end:
            return None
        code, length = _TYPE_CLASS.unpack_from(wire, pos)
        pos += _OPTION_HEADER_OCTETS + length
        if pos > end:
            return None
        if code == _PADDING:
            pad = True
        elif code == _COOKIE:
            if length not in _COOKIE_OCTETS:
                return None
        elif not _generic_option(code):
            return None
    return pad


_GENERIC_OPTIONS: dict[int, bool] = {}


def _generic_option(code: int) -> bool:
    """Whether dnspython keeps an option of this type as opaque bytes."""
    generic = _GENERIC_OPTIONS.get(code)
    if generic is None:
        option_class = dns.edns.get_option_class(dns.edns.OptionType.make(code))
        generic = option_class is dns.edns.GenericOption
        _GENERIC_OPTIONS[code] = generic
    return generic


def _render(query: _Query, result: _Result, max_udp: int | None) -> bytes:
    """Assemble the response, with TC and empty sections when it does not fit."""
    limit = udp_limit(query.edns, query.payload, max_udp)
    question, qdcount = (query.question, query.qdcount) if result.echo_question else (b"", 0)
    answer, authority = result.answer, result.authority
    flags = QR | (query.flags & (OPCODE_MASK | RD)) | (result.rcode & 0xF)
    if result.authoritative:
        flags |= AA
    opt_octets = 0
    if query.edns >= 0:
        opt_octets = _OPT_FIXED_OCTETS + (_OPTION_HEADER_OCTETS if query.pad else 0)
    size = HEADER_OCTETS + len(question) + len(answer[0]) + len(authority[0]) + opt_octets
    if size > limit or (query.pad and _padded(size) > limit):
        flags |= TC
        answer = authority = _EMPTY
        size = HEADER_OCTETS + len(question) + opt_octets
    header = HEADER.pack(
        query.msg_id,
        flags,
        qdcount,
        answer[1],
        authority[1],
        1 if query.edns >= 0 else 0,
    )
    if query.edns < 0:
        return b"".join((header, question, answer[0], authority[0]))
    ednsflags = ((result.rcode >> 4) << 24) | (DO if result.dnssec else 0)
    options = b""
    if query.pad:
        padding = _padded(size) - size
        options = _TYPE_CLASS.pack(_PADDING, padding) + bytes(padding)
    opt = _ROOT + RR_FIXED.pack(OPT, EDNS_PAYLOAD_OCTETS, ednsflags, len(options)) + options
    return b"".join((header, question, answer[0], authority[0], opt))


def _padded(size: int) -> int:
    """``size`` rounded up to a multiple of the padding block."""
    return -(-size // PADDING_BLOCK_OCTETS) * PADDING_BLOCK_OCTETS


def _type_text(rdtype: int) -> str:
    return dns.rdatatype.to_text(dns.rdatatype.RdataType.make(rdtype))


def _name_text(wire: bytes) -> str:
    """A lower-cased name wire as text, for messages."""
    labels = [wire[pos + 1 : pos + 1 + wire[pos]] for pos in _label_starts(wire)]
    return dns.name.Name([*labels, b""]).to_text()
