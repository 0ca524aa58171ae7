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
from typing import Final

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
    ANY,
    CNAME,
    DNAME,
    DO,
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
    OPT_FIXED_OCTETS,
    QR,
    RR_FIXED,
    RRSIG,
    SOA,
    TRANSFER_TYPES,
    TYPE_CLASS,
    header_reply,
)
from alter_publish.dns.wiremessage import EMPTY, Block, Query, Result, render, scan_options
from alter_publish.dns.wirenames import (
    canonical_key,
    hash_label_value,
    is_in_zone,
    name_text,
    origin_to_wire,
    owner_to_wire,
)
from alter_publish.errors import UnsupportedZoneError

__all__ = [
    "DENIAL_KINDS",
    "WireZone",
]

logger = logging.getLogger(__name__)

#: The denial-of-existence kinds :meth:`WireZone.build` knows (``None``: no proofs).
DENIAL_KINDS: Final = frozenset({"nsec", "nsec3"})
#: What the NSEC3 iterations and salt length fields can hold (RFC 5155 section 3.2).
NSEC3_ITERATIONS_LIMIT: Final = 0xFFFF
SALT_MAX_OCTETS: Final = 255

_RR_TYPE_CLASS_TTL: Final = struct.Struct("!HHI")
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
_ANSWER_OWNER: Final = b"\xc0\x0c"  # a pointer to the question name, right after the header
_WILDCARD_PREFIX: Final = b"\x01*"
_ROOT: Final = b"\x00"


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
        negative_soa: tuple[Block, Block],
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
        self._denials: dict[bytes, Block] = {}

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
        origin_wire, origin_text = origin_to_wire(origin)
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
                wire = owner_to_wire(owner, origin_lower, origin_wire, origin_text)
                wires[owner] = wire
            rdtype = rrset.rdtype
            node = nodes.get(wire)
            if node is None:
                node = nodes[wire] = {}
            elif rdtype in node:
                raise UnsupportedZoneError(
                    f"{_type_text(rdtype)} rrset given twice", where=name_text(wire)
                )
            node[rdtype] = rrset
            if rdtype == NSEC:
                nsec_owners.append(wire)
            elif rdtype == NSEC3 and len(owner) == hashed_depth:
                hashed.add(wire)
                for rd in rrset.rdatas:  # SHA-1 (1) and the chain's parameters
                    if rd[:1] == b"\x01" and rd.startswith(chain_prefix, 2):
                        chain.append((hash_label_value(wire, origin_text), wire))
                        break
            elif rdtype in _UNSUPPORTED_TYPES:
                raise UnsupportedZoneError(
                    f"{_UNSUPPORTED_TYPES[rdtype]} is not served by the wire engine",
                    where=name_text(wire),
                )
            elif rdtype == NS and wire != origin_wire:
                raise UnsupportedZoneError(
                    "delegations are not served by the wire engine", where=name_text(wire)
                )
            elif rdtype == RRSIG:
                raise UnsupportedZoneError(
                    "RRSIG rrsets go in the sigs of the rrset they cover", where=name_text(wire)
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
        return cls.from_records(origin, plain, sigs)

    @classmethod
    def from_records(
        cls,
        origin: dns.name.Name,
        plain: dict[tuple[tuple[bytes, ...], int], tuple[int, tuple[bytes, ...]]],
        sigs: dict[tuple[tuple[bytes, ...], int], tuple[int, tuple[bytes, ...]]],
    ) -> WireZone:
        """Index a zone given as its rrsets by (owner labels, lower case; type): TTL and
        rdata wires, the RRSIGs apart by the type they cover (what :meth:`from_zone`
        reads from a dnspython zone, and ``dns.zonelines`` from a zone file).

        Raises:
            UnsupportedZoneError: an RRSIG without the rrset it covers, an NSEC3 hash
                other than SHA-1, or see :meth:`build`.
        """
        rrsets = []
        signed = 0  # rrsets whose RRSIGs were found: fewer than len(sigs) means an RRSIG
        # without its rrset
        for key, (ttl, rdatas) in plain.items():
            found = sigs.get(key)
            signed += found is not None
            sig_ttl, sig_rdatas = (ttl, ()) if found is None else found
            rrsets.append(SignedRRs(key[0], key[1], ttl, rdatas, sig_rdatas, sig_ttl))
        if signed != len(sigs):
            for owner, covers in sigs:
                if (owner, covers) not in plain:
                    raise UnsupportedZoneError(
                        f"RRSIG covering {_type_text(covers)} without that rrset",
                        where=dns.name.Name(owner).to_text(),
                    )
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
        qtype, qclass = TYPE_CLASS.unpack_from(wire, name_end)
        edns, payload, ednsflags, pad = -1, 0, 0, False
        if arcount:
            if end + OPT_FIXED_OCTETS > size or wire[end] != 0:
                return self._answer_parsed(wire, max_udp)
            rdtype, payload, ednsflags, rdlen = RR_FIXED.unpack_from(wire, end + 1)
            options = end + OPT_FIXED_OCTETS
            if rdtype != OPT or options + rdlen != size:
                return self._answer_parsed(wire, max_udp)
            if rdlen:
                scanned = scan_options(wire, options, size)
                if scanned is None:
                    return self._answer_parsed(wire, max_udp)
                pad = scanned
            edns = (ednsflags >> 16) & 0xFF
        elif end != size:
            return self._answer_parsed(wire, max_udp)
        query = Query(msg_id, flags, wire[HEADER_OCTETS:end], 1, edns, payload, ednsflags, pad)
        if edns > 0:
            return render(query, Result(_BADVERS), max_udp)
        qname = wire[HEADER_OCTETS:name_end].lower()
        in_zone = is_in_zone(qname, starts, self._origin_wire)
        return render(query, self._fill(qname, in_zone, qtype, qclass, query), max_udp)

    def _answer_parsed(self, wire: bytes, max_udp: int | None) -> bytes | None:
        """Answer a query that is not a plain one, parsing it with dnspython first."""
        try:
            message = dns.message.from_wire(wire)
        except dns.message.UnknownTSIGKey:
            return header_reply(wire, _NOTAUTH)
        except Exception:  # anything unparseable is the client's format error
            return header_reply(wire, _FORMERR)
        question = b"".join(
            (rrset.name.to_wire() or b"") + TYPE_CLASS.pack(rrset.rdtype, rrset.rdclass)
            for rrset in message.question
        )
        pad = any(option.otype == dns.edns.OptionType.PADDING for option in message.options)
        query = Query(
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
            return render(query, Result(_NOTIMP), max_udp)
        if message.edns > 0:
            return render(query, Result(_BADVERS), max_udp)
        if len(message.question) != 1:
            return render(query, Result(_FORMERR, echo_question=False), max_udp)
        first = message.question[0]
        qname = first.name.canonicalize().to_wire() or b""
        in_zone = first.name.is_subdomain(self.origin_name)
        result = self._fill(qname, in_zone, int(first.rdtype), int(first.rdclass), query)
        return render(query, result, max_udp)

    @property
    def origin_name(self) -> dns.name.Name:
        """The apex as a dnspython name."""
        return dns.name.Name(self.origin)

    def _fill(self, qname: bytes, in_zone: bool, qtype: int, qclass: int, query: Query) -> Result:
        if qtype in TRANSFER_TYPES:
            return Result(_REFUSED)
        if qtype == OPT:
            return Result(_FORMERR)
        if not in_zone or qclass != IN:
            return Result(_REFUSED)
        dnssec = query.edns >= 0 and bool(query.ednsflags & DO)
        return self._resolve(qname, qtype, dnssec=dnssec)

    def _resolve(self, name: bytes, qtype: int, *, dnssec: bool) -> Result:
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
            return Result(_NOERROR, True, dnssec, answer)
        rrset = node.get(qtype)
        if rrset is None:
            return self._negative(_NOERROR, name, dnssec=dnssec)
        return Result(_NOERROR, True, dnssec, self._answer_block(rrset, dnssec=dnssec))

    def _answer_block(self, rrset: SignedRRs, *, dnssec: bool) -> Block:
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

    def _negative(self, rcode: int, name: bytes, *, dnssec: bool) -> Result:
        soa = self._negative_soa[dnssec]
        if not dnssec or self.denial is None:
            return Result(rcode, True, dnssec, EMPTY, soa)
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
        return Result(rcode, True, True, EMPTY, (b"".join(parts), count))

    def _denial_block(self, owner: bytes) -> Block:
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
        proof = [owners[bisect.bisect_right(keys, canonical_key(name)) - 1]]  # -1 wraps
        if nxdomain:
            encloser = name
            while encloser not in self._names and len(encloser) > len(self._origin_wire):
                encloser = encloser[encloser[0] + 1 :]
            wildcard = canonical_key(_WILDCARD_PREFIX + encloser)
            proof.append(owners[bisect.bisect_right(keys, wildcard) - 1])
        return proof

    def _sorted_nsec_chain(self) -> tuple[list[tuple[bytes, ...]], list[bytes]]:
        """NSEC owners in canonical order (RFC 4034 6.1), and their sort keys; made on first use."""
        chain = self._nsec_chain
        if chain is None:
            pairs = sorted((canonical_key(owner), owner) for owner in self._nsec_owners)
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


def _records(owner: bytes, rdtype: int, ttl: int, rdatas: tuple[bytes, ...]) -> bytes:
    """Resource records of one rrset, uncompressed but for ``owner``, as wire."""
    head = owner + _RR_TYPE_CLASS_TTL.pack(rdtype, IN, ttl)
    return b"".join([head + len(rdata).to_bytes(2, "big") + rdata for rdata in rdatas])


def _negative_soa(origin_wire: bytes, soa: SignedRRs) -> tuple[Block, Block]:
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


def _type_text(rdtype: int) -> str:
    return dns.rdatatype.to_text(dns.rdatatype.RdataType.make(rdtype))
