"""Tests for alter_publish.dns.wirezone: the wire-level engine answers as the dnspython one does.

The oracle is :func:`alter_publish.dns.zoneindex.answer` over ``ZoneIndex.build([zone])``
for the same zone. Every response is compared with the oracle's semantically:
id, flags, rcode, EDNS (presence, version, flags, payload, option types), the
question exactly as sent (0x20 case kept) and each section as a set of rrsets,
TTLs included. The one allowed difference is where truncation starts: the
oracle compresses every name and the wire engine only answer owners, so a
response may be truncated by the wire engine while the oracle's still fits
(checked to be that case, and nothing else).

The zones: about 130 ``_alter`` owners of sovereign, bot (``_alter.x.bot``,
``_alter.x.ops.bot``), instrument and dotted handles, with their empty
non-terminals, unsigned and signed by :func:`alter_publish.dns.dnssec.sign_records`
with NSEC, NSEC3, and salted iterated NSEC3.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import dns.edns
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.query
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alter_publish.definition.model import DNSSECSpec
from alter_publish.dns.dnssec import SignatureWindow, sign_records
from alter_publish.dns.records import SignedRRs, from_zone
from alter_publish.dns.server import ZoneServer
from alter_publish.dns.validation import DNSSECStatus, validate_response
from alter_publish.dns.wirezone import WireZone
from alter_publish.dns.zoneindex import ResponseCache, ZoneIndex, answer
from alter_publish.dns.zonekeys import ZoneKey, ZoneKeyRole
from alter_publish.errors import EXIT_INTERNAL, AlterError, UnsupportedZoneError

NOW = 1_767_225_600  # 2026-01-01T00:00:00Z
ORIGIN = dns.name.from_text("example.com.")
ORIGIN_LABELS = (b"example", b"com", b"")
TIMEOUT_SECONDS = 2.0
EDNS_PAYLOAD_OCTETS = 1232
UDP_MAX_OCTETS = 4096
PADDING_BLOCK_OCTETS = 468
GENERATED_OWNERS = 120
BIG_TXT = " ".join('"' + "a" * 250 + '"' for _ in range(12))  # ~3 kB: truncated below 4096

FIXED_ZONE = f"""\
$ORIGIN example.com.
$TTL 3600
@                  IN SOA  ns1 hostmaster 2024010101 7200 3600 1209600 300
@                  IN NS   ns1
@                  IN A    192.0.2.1
ns1                IN A    192.0.2.53
_alter             IN TXT  "v=alter1; zone"
_alter.blake       IN TXT  "v=alter1; blake"
_alter.carol       IN TXT  {BIG_TXT}
_alter.deploy.bot  IN TXT  "v=alter1; deploy.bot"
_alter.cc-thermo   IN TXT  "v=alter1; instrument"
_alter.team.erin   IN TXT  "v=alter1; team.erin"
"""

KEYS = (
    ZoneKey("example.com", ZoneKeyRole.KSK, NOW, Ed25519PrivateKey.generate()),
    ZoneKey("example.com", ZoneKeyRole.ZSK, NOW, Ed25519PrivateKey.generate()),
)
WINDOW = SignatureWindow.fresh(NOW, 14 * 86400)

#: Zone variant -> the DNSSEC spec it is signed with (None: unsigned).
VARIANTS: dict[str, DNSSECSpec | None] = {
    "unsigned": None,
    "nsec": DNSSECSpec(denial="nsec"),
    "nsec3": DNSSECSpec(denial="nsec3"),
    "nsec3-salted": DNSSECSpec(denial="nsec3", nsec3_iterations=3, nsec3_salt="aabbccdd"),
}
SIGNED_VARIANTS = [name for name, spec in VARIANTS.items() if spec is not None]


def generated_owners(count: int) -> list[str]:
    """Owner names (relative) of sovereign, bot, instrument and deeper bot handles."""
    shapes = ("_alter.h{:03d}", "_alter.b{:03d}.bot", "_alter.cc-{:03d}", "_alter.r{:03d}.ops.bot")
    return [shapes[index % len(shapes)].format(index) for index in range(count)]


def zone_text(count: int = GENERATED_OWNERS) -> str:
    lines = [FIXED_ZONE]
    for index, owner in enumerate(generated_owners(count)):
        key = f"{index:064x}"
        lines.append(f'{owner} {300 + index} IN TXT "v=alter1; k=ed25519; p={key}; i={index}"\n')
    return "".join(lines)


@dataclass(frozen=True, slots=True)
class Served:
    """One test zone, its oracle index, its wire engine and (signed) its DNSKEY rrset."""

    name: str
    zone: dns.zone.Zone
    index: ZoneIndex
    wire: WireZone
    dnskeys: dns.rrset.RRset | None

    @property
    def hashed_owner(self) -> str:
        """An NSEC3 owner name of the zone (or one shaped like it)."""
        for name, node in self.zone.nodes.items():
            if node.get_rdataset(dns.rdataclass.IN, dns.rdatatype.NSEC3) is not None:
                return name.derelativize(ORIGIN).to_text()
        return "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example.com."


@functools.cache
def served(name: str) -> Served:
    text = zone_text()
    spec = VARIANTS[name]
    dnskeys = None
    if spec is not None:
        unsigned = dns.zone.from_text(text, origin=ORIGIN, relativize=False)
        result = sign_records(
            from_zone(unsigned), keys=KEYS, spec=spec, window=WINDOW, dnskey_ttl=3600
        )
        text += result.records_text
    zone = dns.zone.from_text(text, origin=ORIGIN, relativize=False)
    if spec is not None:
        dnskeys = zone.find_rrset(ORIGIN, dns.rdatatype.DNSKEY)
    return Served(name, zone, ZoneIndex.build([zone]), WireZone.from_zone(zone), dnskeys)


# --------------------------------------------------------------------------
# Comparing with the oracle
# --------------------------------------------------------------------------


def section(rrsets: list[dns.rrset.RRset]) -> frozenset[object]:
    return frozenset(
        (
            rrset.name.canonicalize(),
            rrset.rdclass,
            rrset.rdtype,
            rrset.covers,
            rrset.ttl,
            frozenset(rdata.to_text() for rdata in rrset),
        )
        for rrset in rrsets
    )


def summary(wire: bytes | None) -> object:
    """What a response means (None: no response)."""
    if wire is None:
        return None
    message = dns.message.from_wire(wire)
    return (
        message.id,
        message.flags,
        message.rcode(),
        message.edns,
        message.ednsflags,
        message.payload,
        tuple(option.otype for option in message.options),
        tuple((rrset.name.to_text(), rrset.rdtype, rrset.rdclass) for rrset in message.question),
        section(message.answer),
        section(message.authority),
        section(message.additional),
    )


def response_limit(wire: bytes, max_udp: int | None) -> int:
    if max_udp is None:
        return 65535
    try:
        query = dns.message.from_wire(wire)
    except Exception:  # header-only replies to what dnspython cannot parse
        return 512
    return max(512, min(query.payload, max_udp)) if query.edns >= 0 else 512


def mismatch(zone: Served, wire: bytes, max_udp: int | None) -> str | None:
    """Compare both engines on one query; return a description of any difference.

    A response the wire engine truncates is accepted where the oracle's fits
    only thanks to compression: the oracle's is within the limit, the wire
    engine's untruncated one (over TCP) is not, and the truncated one is the
    oracle's truncation.
    """
    expected = answer(zone.index, wire, max_udp=max_udp)
    got = zone.wire.answer(wire, max_udp)
    if summary(expected) == summary(got):
        if expected is not None and got is not None:
            if len(expected) % PADDING_BLOCK_OCTETS == 0 and len(expected) > 12:
                assert len(got) % PADDING_BLOCK_OCTETS == 0, "not padded"
            assert len(got) <= response_limit(wire, max_udp)
        return None
    if expected is not None and got is not None:
        tc = dns.flags.TC
        ours, theirs = dns.message.from_wire(got), dns.message.from_wire(expected)
        if ours.flags & tc and not theirs.flags & tc:
            full = zone.wire.answer(wire, None)
            limit = response_limit(wire, max_udp)
            theirs_truncated = dns.message.from_wire(expected)
            theirs_truncated.flags |= tc
            theirs_truncated.answer = theirs_truncated.authority = []
            theirs_truncated.additional = []
            truncated_alike = summary(got) == summary(theirs_truncated.to_wire())
            if full is not None and len(expected) <= limit < len(full) and truncated_alike:
                return None
    return f"oracle {summary(expected)}\n   got {summary(got)}"


def make_query(
    qname: str,
    qtype: str,
    *,
    edns: int | None = None,
    dnssec: bool = False,
    payload: int = EDNS_PAYLOAD_OCTETS,
    qclass: str = "IN",
) -> bytes:
    name = dns.name.from_text(qname, ORIGIN)
    if edns is None and not dnssec:
        return dns.message.make_query(name, qtype, qclass).to_wire()
    message = dns.message.make_query(
        name,
        qtype,
        qclass,
        use_edns=0 if edns is None else edns,
        payload=payload,
        want_dnssec=dnssec,
    )
    return message.to_wire()


@dataclass(frozen=True, slots=True)
class Flavour:
    """How a question is asked: EDNS and DO, and over which transport."""

    edns: int | None
    dnssec: bool
    payload: int
    max_udp: int | None


FLAVOURS = (
    Flavour(None, dnssec=False, payload=0, max_udp=UDP_MAX_OCTETS),
    Flavour(None, dnssec=False, payload=0, max_udp=None),
    Flavour(0, dnssec=False, payload=EDNS_PAYLOAD_OCTETS, max_udp=UDP_MAX_OCTETS),
    Flavour(0, dnssec=True, payload=EDNS_PAYLOAD_OCTETS, max_udp=UDP_MAX_OCTETS),
    Flavour(0, dnssec=True, payload=UDP_MAX_OCTETS, max_udp=UDP_MAX_OCTETS),
    Flavour(0, dnssec=True, payload=512, max_udp=UDP_MAX_OCTETS),
    Flavour(0, dnssec=True, payload=EDNS_PAYLOAD_OCTETS, max_udp=None),
)


#: The flavours that tell most apart: no EDNS over UDP, DO over UDP, DO over TCP.
SOME_FLAVOURS = (FLAVOURS[0], FLAVOURS[3], FLAVOURS[6])


def mismatches(
    zone: Served,
    qname: str,
    qtype: str,
    *,
    qclass: str = "IN",
    flavours: tuple[Flavour, ...] = FLAVOURS,
) -> list[str]:
    found = []
    for flavour in flavours:
        wire = make_query(
            qname,
            qtype,
            edns=flavour.edns,
            dnssec=flavour.dnssec,
            payload=flavour.payload,
            qclass=qclass,
        )
        problem = mismatch(zone, wire, flavour.max_udp)
        if problem is not None:
            found.append(f"{qname} {qclass} {qtype} {flavour}:\n{problem}")
    return found


# --------------------------------------------------------------------------
# The question table
# --------------------------------------------------------------------------

HASHED = "{hashed}"  # replaced by an NSEC3 owner name of the zone

QUESTIONS = [
    # positive answers
    pytest.param("@", "SOA", id="apex-soa"),
    pytest.param("@", "NS", id="apex-ns"),
    pytest.param("@", "A", id="apex-a"),
    pytest.param("@", "DNSKEY", id="apex-dnskey"),
    pytest.param("@", "NSEC3PARAM", id="apex-nsec3param"),
    pytest.param("@", "NSEC", id="apex-nsec"),
    pytest.param("@", "ANY", id="apex-any"),
    pytest.param("_alter", "TXT", id="apex-handle-txt"),
    pytest.param("ns1", "A", id="host-a"),
    pytest.param("_alter.blake", "TXT", id="sovereign-txt"),
    pytest.param("_alter.deploy.bot", "TXT", id="bot-txt"),
    pytest.param("_alter.cc-thermo", "TXT", id="instrument-txt"),
    pytest.param("_alter.team.erin", "TXT", id="dotted-sovereign-txt"),
    pytest.param("_alter.r003.ops.bot", "TXT", id="deep-bot-txt"),
    pytest.param("_ALTER.Blake.EXAMPLE.com.", "TXT", id="0x20-case-kept"),
    pytest.param("_alter.blake", "ANY", id="handle-any"),
    pytest.param("_alter.carol", "TXT", id="big-txt-truncated-on-udp"),
    # NODATA
    pytest.param("_alter.blake", "A", id="nodata-at-handle"),
    pytest.param("@", "MX", id="nodata-at-apex"),
    pytest.param("@", "DS", id="ds-at-apex"),
    pytest.param("_alter.blake", "RRSIG", id="nodata-rrsig-type"),
    pytest.param("ns1", "NSEC3", id="nodata-nsec3-at-a-name"),
    pytest.param("blake", "TXT", id="nodata-ent-above-handle"),
    pytest.param("bot", "TXT", id="nodata-ent-bot"),
    pytest.param("deploy.bot", "TXT", id="nodata-ent-deploy-bot"),
    pytest.param("ops.bot", "A", id="nodata-ent-ops-bot"),
    pytest.param("erin", "TXT", id="nodata-ent-dotted"),
    pytest.param("BOT", "ANY", id="nodata-ent-any-upper-case"),
    # NXDOMAIN
    pytest.param("_alter.nobody", "TXT", id="nxdomain-absent-handle"),
    pytest.param("nobody", "A", id="nxdomain-below-apex"),
    pytest.param("x.blake", "TXT", id="nxdomain-below-ent"),
    pytest.param("x._alter.blake", "TXT", id="nxdomain-below-owner"),
    pytest.param("a.b.deploy.bot", "TXT", id="nxdomain-deep-below-ent"),
    pytest.param("_alter.zzz.bot", "TXT", id="nxdomain-in-bot-ent"),
    pytest.param("0", "A", id="nxdomain-before-first"),
    pytest.param("zzzz", "A", id="nxdomain-after-last"),
    pytest.param("x.ns1", "A", id="nxdomain-below-host"),
    pytest.param("*", "TXT", id="nxdomain-wildcard-name"),
    pytest.param("*.bot", "TXT", id="nxdomain-wildcard-below-ent"),
    pytest.param("_ALTER.NoBody", "TXT", id="nxdomain-upper-case"),
    # hashed owner names (RFC 5155 7.2.8)
    pytest.param(HASHED, "NSEC3", id="hashed-owner-nsec3"),
    pytest.param(HASHED, "ANY", id="hashed-owner-any"),
    pytest.param(HASHED, "A", id="hashed-owner-a-is-nxdomain"),
    pytest.param("x." + HASHED, "NSEC3", id="below-hashed-owner"),
    # refused and errors
    pytest.param("example.org.", "A", id="refused-other-zone"),
    pytest.param("com.", "SOA", id="refused-parent"),
    pytest.param(".", "NS", id="refused-root"),
    pytest.param("xexample.com.", "A", id="refused-suffix-not-at-label"),
    pytest.param("@", "AXFR", id="refused-axfr"),
    pytest.param("@", "IXFR", id="refused-ixfr"),
    pytest.param("example.org.", "AXFR", id="refused-axfr-other-zone"),
    pytest.param("@", "OPT", id="formerr-qtype-opt"),
    pytest.param("example.org.", "OPT", id="formerr-qtype-opt-other-zone"),
    pytest.param("@", "TYPE65280", id="private-type"),
]


@pytest.fixture(scope="module", params=list(VARIANTS))
def zone(request: pytest.FixtureRequest) -> Served:
    variant: str = request.param
    return served(variant)


@pytest.mark.parametrize(("qname", "qtype"), QUESTIONS)
def test_answers_match_the_oracle(zone: Served, qname: str, qtype: str) -> None:
    qname = qname.replace(HASHED, zone.hashed_owner)
    assert mismatches(zone, qname, qtype) == []


@pytest.mark.parametrize(
    ("qname", "qclass"),
    [
        pytest.param("_alter.blake", "CH", id="chaos"),
        pytest.param("_alter.blake", "ANY", id="class-any"),
        pytest.param("_alter.blake", "HS", id="hesiod"),
        pytest.param("example.org.", "CH", id="chaos-other-zone"),
    ],
)
def test_other_classes_match_the_oracle(zone: Served, qname: str, qclass: str) -> None:
    assert mismatches(zone, qname, "TXT", qclass=qclass) == []


def test_every_owner_matches_the_oracle(zone: Served) -> None:
    problems = []
    hashed = zone.wire.denial == "nsec3"
    for name, node in zone.zone.nodes.items():
        owner = name.derelativize(ORIGIN).to_text()
        if hashed and node.get_rdataset(dns.rdataclass.IN, dns.rdatatype.NSEC3) is not None:
            problems += mismatches(zone, owner, "NSEC3", flavours=SOME_FLAVOURS[1:2])
            continue  # the table asks the rest at hashed owner names
        for rdataset in node.rdatasets:
            if rdataset.rdtype != dns.rdatatype.RRSIG:
                rdtype = dns.rdatatype.to_text(rdataset.rdtype)
                problems += mismatches(zone, owner, rdtype, flavours=SOME_FLAVOURS)
        other = "A" if owner.startswith("_alter") else "TXT"
        problems += mismatches(zone, owner, other, flavours=SOME_FLAVOURS)
        problems += mismatches(zone, "nx." + owner, "TXT", flavours=SOME_FLAVOURS)
    assert problems == []


@pytest.mark.parametrize(
    ("qname", "payload", "max_udp", "truncated"),
    [
        pytest.param("_alter.carol", None, UDP_MAX_OCTETS, True, id="no-edns-udp"),
        pytest.param("_alter.carol", None, None, False, id="no-edns-tcp"),
        pytest.param("_alter.carol", 1232, UDP_MAX_OCTETS, True, id="edns-1232"),
        pytest.param("_alter.carol", 4096, UDP_MAX_OCTETS, False, id="edns-4096"),
        pytest.param("_alter.carol", 4096, 1232, True, id="edns-4096-capped-by-server"),
        pytest.param("_alter.carol", 100, UDP_MAX_OCTETS, True, id="edns-payload-below-512"),
        pytest.param("_alter.blake", 100, UDP_MAX_OCTETS, False, id="small-fits-512"),
    ],
)
def test_truncation_matches_the_oracle(
    qname: str, payload: int | None, max_udp: int | None, truncated: bool
) -> None:
    zone = served("nsec")
    wire = make_query(qname, "TXT", edns=None if payload is None else 0, payload=payload or 0)
    expected = answer(zone.index, wire, max_udp=max_udp)
    got = zone.wire.answer(wire, max_udp)
    assert summary(got) == summary(expected)
    assert got is not None
    response = dns.message.from_wire(got)
    assert bool(response.flags & dns.flags.TC) is truncated
    assert (response.answer == []) is truncated
    assert [rrset.name.to_text() for rrset in response.question] == [f"{qname}.example.com."]


# --------------------------------------------------------------------------
# Odd and malformed packets
# --------------------------------------------------------------------------

BASE = make_query("_alter.blake", "TXT", edns=0, dnssec=True)
PLAIN = make_query("_alter.blake", "TXT")
QNAME = dns.name.from_text("_alter.blake.example.com.").to_wire() or b""
QUESTION_END = 12 + len(QNAME) + 4


def with_header(wire: bytes, **fields: int) -> bytes:
    names = ("id", "flags", "qdcount", "ancount", "nscount", "arcount")
    values = dict(zip(names, struct.unpack_from("!6H", wire), strict=True))
    values.update(fields)
    return struct.pack("!6H", *(values[name] for name in names)) + wire[12:]


def with_opt(base: bytes, *, ttl: int = 0, payload: int = 1232, rdata: bytes = b"") -> bytes:
    opt = b"\x00" + struct.pack("!HHIH", dns.rdatatype.OPT, payload, ttl, len(rdata)) + rdata
    return with_header(base[:QUESTION_END], arcount=1) + opt


def option(code: int, data: bytes) -> bytes:
    return struct.pack("!HH", code, len(data)) + data


def with_opcode(wire: bytes, opcode: int) -> bytes:
    (flags,) = struct.unpack_from("!H", wire, 2)
    return with_header(wire, flags=(flags & ~0x7800) | (opcode << 11))


def two_questions(*, compressed: bool) -> bytes:
    second = b"\xc0\x0c" if compressed else QNAME
    body = PLAIN[12:QUESTION_END] + second + struct.pack("!HH", 1, 1)
    return with_header(PLAIN[:12], qdcount=2) + body


def tsig_query() -> bytes:
    message = dns.message.make_query("_alter.blake.example.com.", "TXT")
    message.use_tsig({dns.name.from_text("key."): b"0123456789abcdef"})
    return message.to_wire()


def long_name_query() -> bytes:
    labels = b"".join(b"\x3f" + b"a" * 63 for _ in range(4))  # 256 octets with the root
    return with_header(PLAIN[:12]) + labels + b"\x00" + struct.pack("!HH", 16, 1)


ECS = option(8, struct.pack("!HBB", 1, 24, 0) + bytes([192, 0, 2]))
COOKIE = option(10, b"\x01" * 8)

PACKETS: list[object] = [
    pytest.param(b"", id="empty"),
    pytest.param(PLAIN[:11], id="shorter-than-header"),
    pytest.param(with_header(PLAIN[:12], qdcount=0), id="header-only-no-question"),
    pytest.param(with_header(PLAIN, flags=0x8000), id="response-is-dropped"),
    pytest.param(PLAIN[: QUESTION_END - 2], id="truncated-question"),
    pytest.param(PLAIN[:20], id="truncated-name"),
    pytest.param(PLAIN + b"\x00", id="trailing-junk"),
    pytest.param(BASE + b"\x00", id="trailing-junk-after-opt"),
    pytest.param(with_header(PLAIN[:12]) + b"\x41x" + PLAIN[13:], id="bad-label-type"),
    pytest.param(with_header(PLAIN[:12]) + b"\xc0\x0c" + PLAIN[-4:], id="pointer-loop"),
    pytest.param(with_header(PLAIN[:12]) + b"\xc0\x02" + PLAIN[-4:], id="pointer-into-header"),
    pytest.param(long_name_query(), id="name-too-long"),
    pytest.param(two_questions(compressed=False), id="two-questions"),
    pytest.param(two_questions(compressed=True), id="two-questions-compressed"),
    pytest.param(with_opcode(two_questions(compressed=False), 4), id="two-questions-notify"),
    pytest.param(with_header(PLAIN, qdcount=2), id="qdcount-too-high"),
    pytest.param(
        with_header(PLAIN, ancount=1) + QNAME + struct.pack("!HHIH", 1, 1, 60, 4) + b"\x7f\0\0\1",
        id="record-in-answer-section",
    ),
    pytest.param(with_header(BASE, ancount=1, arcount=0), id="opt-in-answer-section"),
    pytest.param(with_header(BASE + BASE[QUESTION_END:], arcount=2), id="two-opts"),
    pytest.param(
        with_header(BASE[:QUESTION_END], arcount=1) + b"\x01x" + BASE[QUESTION_END:],
        id="opt-with-owner",
    ),
    pytest.param(BASE[:-3], id="opt-truncated"),
    pytest.param(tsig_query(), id="tsig-is-notauth"),
    pytest.param(with_opt(BASE, ttl=1 << 16), id="edns-version-1-badvers"),
    pytest.param(with_opt(BASE, ttl=(1 << 16) | 0x8000), id="edns-version-1-with-do"),
    pytest.param(with_opt(BASE, ttl=0x8000, payload=0), id="edns-payload-0"),
    pytest.param(with_opt(BASE, ttl=0xFF008000), id="edns-extended-rcode-in-query"),
    pytest.param(with_opt(BASE, ttl=0x7FFF), id="edns-other-flags"),
    pytest.param(with_opt(BASE, ttl=0x8000, rdata=option(12, bytes(20))), id="edns-padding"),
    pytest.param(
        with_opt(make_query("_alter.carol", "TXT"), rdata=option(12, b"")),
        id="edns-padding-big-answer",
    ),
    pytest.param(with_opt(BASE, rdata=COOKIE), id="edns-client-cookie"),
    pytest.param(with_opt(BASE, rdata=option(10, b"\x01" * 24)), id="edns-full-cookie"),
    pytest.param(with_opt(BASE, rdata=option(10, b"\x01" * 5)), id="edns-bad-cookie"),
    pytest.param(with_opt(BASE, rdata=option(10, b"\x01" * 12)), id="edns-bad-server-cookie"),
    pytest.param(with_opt(BASE, rdata=ECS), id="edns-client-subnet"),
    pytest.param(with_opt(BASE, rdata=option(8, b"\x00")), id="edns-bad-client-subnet"),
    pytest.param(with_opt(BASE, rdata=option(65001, b"xyz") + COOKIE), id="edns-unknown-option"),
    pytest.param(with_opt(BASE, rdata=b"\x00\x0a\x00\x08\x01"), id="edns-option-overrun"),
    pytest.param(with_opt(BASE, rdata=b"\x00\x0a\x00"), id="edns-option-header-cut"),
    pytest.param(with_header(PLAIN, flags=0x0110), id="rd-and-cd-set"),
    pytest.param(with_header(PLAIN, flags=0x0220), id="tc-and-ad-set-in-query"),
    pytest.param(with_header(PLAIN, flags=0x0040), id="z-bit-set"),
    pytest.param(with_header(PLAIN, flags=0x000F), id="rcode-bits-in-query"),
    *(pytest.param(with_opcode(BASE, opcode), id=f"opcode-{opcode}") for opcode in range(1, 16)),
]


@pytest.mark.parametrize("wire", PACKETS)
@pytest.mark.parametrize("max_udp", [512, UDP_MAX_OCTETS, None], ids=["udp-512", "udp", "tcp"])
def test_packets_match_the_oracle(wire: bytes, max_udp: int | None) -> None:
    for variant in ("unsigned", "nsec3"):
        assert mismatch(served(variant), wire, max_udp) is None


def test_header_replies_are_byte_identical() -> None:
    zone = served("nsec")
    for wire in (tsig_query(), PLAIN[: QUESTION_END - 2], with_header(PLAIN[:12]) + b"\xc0\x0c"):
        assert zone.wire.answer(wire, 512) == answer(zone.index, wire, max_udp=512)


BASES = [BASE, PLAIN, make_query("nobody", "A", edns=0, dnssec=True), make_query("bot", "TXT")]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(BASES),
    st.lists(st.tuples(st.integers(0, 80), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(min_value=0, max_value=80),
    st.sampled_from([512, UDP_MAX_OCTETS, None]),
    st.sampled_from(SIGNED_VARIANTS),
)
def test_mutated_queries_match_the_oracle(
    base: bytes,
    mutations: list[tuple[int, int]],
    cut: int,
    max_udp: int | None,
    variant: str,
) -> None:
    wire = bytearray(base)
    for position, value in mutations:
        if position < len(wire):
            wire[position] = value
    mutated = bytes(wire[: max(len(wire) - cut, 0)])
    assert mismatch(served(variant), mutated, max_udp) is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=120))
def test_random_bytes_match_the_oracle(wire: bytes) -> None:
    assert mismatch(served("nsec3"), wire, 512) is None


# --------------------------------------------------------------------------
# DNSSEC: the validator accepts the wire engine's answers
# --------------------------------------------------------------------------


@pytest.mark.parametrize("variant", SIGNED_VARIANTS)
@pytest.mark.parametrize(
    ("qname", "qtype"),
    [
        pytest.param("_alter.blake.example.com.", "TXT", id="positive"),
        pytest.param("_alter.r003.ops.bot.example.com.", "TXT", id="positive-deep-bot"),
        pytest.param("example.com.", "SOA", id="positive-apex"),
        pytest.param("_alter.blake.example.com.", "A", id="nodata"),
        pytest.param("blake.example.com.", "TXT", id="nodata-ent"),
        pytest.param("bot.example.com.", "TXT", id="nodata-ent-bot"),
        pytest.param("deploy.bot.example.com.", "TXT", id="nodata-ent-deploy-bot"),
        pytest.param("_alter.nobody.example.com.", "TXT", id="nxdomain"),
        pytest.param("x.blake.example.com.", "TXT", id="nxdomain-below-ent"),
        pytest.param("x._alter.blake.example.com.", "TXT", id="nxdomain-below-owner"),
        pytest.param("a.b.deploy.bot.example.com.", "TXT", id="nxdomain-deep"),
        pytest.param("zzzz.example.com.", "A", id="nxdomain-after-last"),
        pytest.param("0.example.com.", "A", id="nxdomain-before-first"),
    ],
)
def test_validator_accepts_answers(variant: str, qname: str, qtype: str) -> None:
    zone = served(variant)
    assert zone.dnskeys is not None
    wire = make_query(qname, qtype, dnssec=True, payload=UDP_MAX_OCTETS)
    reply = zone.wire.answer(wire, None)
    assert reply is not None
    response = dns.message.from_wire(reply)
    name = dns.name.from_text(qname)
    verdict = validate_response(
        response,
        name,
        dns.rdatatype.from_text(qtype),
        zone=ORIGIN,
        dnskeys=zone.dnskeys,
        now=NOW,
    )
    assert (verdict.status, verdict.reason) == (DNSSECStatus.SECURE, "")
    proof_type = dns.rdatatype.NSEC if variant == "nsec" else dns.rdatatype.NSEC3
    if response.answer == []:
        assert proof_type in {rrset.rdtype for rrset in response.authority}


# --------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variant", "denial"),
    [
        pytest.param("unsigned", None, id="unsigned"),
        pytest.param("nsec", "nsec", id="nsec"),
        pytest.param("nsec3", "nsec3", id="nsec3"),
        pytest.param("nsec3-salted", "nsec3", id="nsec3-salted"),
    ],
)
def test_from_zone_derives_denial(variant: str, denial: str | None) -> None:
    zone = served(variant).wire
    assert zone.denial == denial
    assert zone.origin == ORIGIN_LABELS


def test_relative_zone_is_served_alike() -> None:
    zone = dns.zone.from_text(zone_text(12), origin=ORIGIN)  # relativized names
    index, wire_zone = ZoneIndex.build([zone]), WireZone.from_zone(zone)
    relative = Served("relative", zone, index, wire_zone, None)
    for qname, qtype in [("@", "SOA"), ("@", "NS"), ("_alter.h000", "TXT"), ("bot", "A")]:
        assert mismatches(relative, qname, qtype) == []


def soa_rrset() -> SignedRRs:
    rdata = dns.rdata.from_text("IN", "SOA", "ns1.example.com. h.example.com. 1 2 3 4 300")
    return SignedRRs(ORIGIN_LABELS, dns.rdatatype.SOA, 3600, (rdata.to_wire() or b"",))


def txt(owner: tuple[bytes, ...], rdtype: int = dns.rdatatype.TXT) -> SignedRRs:
    return SignedRRs(owner, rdtype, 300, (b"\x04data",))


@pytest.mark.parametrize(
    ("rrsets", "denial", "message"),
    [
        pytest.param([txt((b"www", *ORIGIN_LABELS))], None, "no SOA", id="no-soa"),
        pytest.param(
            [soa_rrset(), txt((b"www", *ORIGIN_LABELS), dns.rdatatype.CNAME)],
            None,
            "CNAME",
            id="cname",
        ),
        pytest.param(
            [soa_rrset(), txt((b"www", *ORIGIN_LABELS), dns.rdatatype.DNAME)],
            None,
            "DNAME",
            id="dname",
        ),
        pytest.param(
            [soa_rrset(), txt((b"sub", *ORIGIN_LABELS), dns.rdatatype.NS)],
            None,
            "delegations",
            id="delegation",
        ),
        pytest.param(
            [soa_rrset(), txt((b"*", b"bot", *ORIGIN_LABELS))], None, "wildcards", id="wildcard"
        ),
        pytest.param(
            [soa_rrset(), txt((b"www", *ORIGIN_LABELS), dns.rdatatype.RRSIG)],
            None,
            "sigs",
            id="rrsig-rrset",
        ),
        pytest.param([soa_rrset(), soa_rrset()], None, "given twice", id="duplicate"),
        pytest.param(
            [soa_rrset(), txt((b"www", b"example", b"org", b""))],
            None,
            "outside the zone",
            id="outside-zone",
        ),
        pytest.param(
            [soa_rrset(), txt((b"wwwexample", b"com", b""))],
            None,
            "outside the zone",
            id="suffix-not-at-label",
        ),
        pytest.param(
            [soa_rrset(), txt((b"www", b"example", b"com"))],
            None,
            "outside the zone",
            id="owner-without-root",
        ),
        pytest.param(
            [soa_rrset(), txt((b"a" * 64, *ORIGIN_LABELS))], None, "label", id="label-too-long"
        ),
        pytest.param(
            [soa_rrset(), txt((b"", b"x", *ORIGIN_LABELS))], None, "empty label", id="empty-label"
        ),
        pytest.param([soa_rrset()], "nsec5", "unknown denial", id="unknown-denial"),
        pytest.param([soa_rrset()], "nsec3", "hash parameters", id="nsec3-without-chain"),
    ],
)
def test_build_rejects_what_it_does_not_serve(
    rrsets: list[SignedRRs], denial: str | None, message: str
) -> None:
    with pytest.raises(UnsupportedZoneError, match=message) as caught:
        WireZone.build(ORIGIN_LABELS, rrsets, denial=denial)
    assert caught.value.category == "unsupported-zone"
    assert caught.value.exit_code == EXIT_INTERNAL  # internal: answerer_for falls back
    assert "\n" not in str(caught.value)


def with_records(extra: str) -> dns.zone.Zone:
    return dns.zone.from_text(zone_text(4) + extra, origin=ORIGIN, relativize=False)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        pytest.param("www IN CNAME ns1\n", "CNAME", id="cname"),
        pytest.param("sub IN NS ns.sub\nns.sub IN A 192.0.2.9\n", "delegations", id="delegation"),
        pytest.param('*.bot IN TXT "wild"\n', "wildcards", id="wildcard"),
        pytest.param(
            "www IN RRSIG A 15 3 300 20260115000000 20251231230000 1 example.com. AAAA\n",
            "without that rrset",
            id="orphan-rrsig",
        ),
        pytest.param(
            'x IN TXT "t"\n'
            "x IN RRSIG TXT 15 3 300 20260115000000 20251231230000 1 example.com. AAAA\n"
            "www IN RRSIG A 15 3 300 20260115000000 20251231230000 1 example.com. AAAA\n",
            "without that rrset",
            id="orphan-rrsig-beside-a-signed-rrset",
        ),
        pytest.param(
            "@ 0 IN NSEC3PARAM 1 0 0 -\n"
            "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom 300 IN NSEC3 1 0 7 aabb "
            "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom A\n",
            "no NSEC3 records have the parameters",
            id="nsec3param-without-chain",
        ),
    ],
)
def test_from_zone_rejects_what_it_does_not_serve(extra: str, message: str) -> None:
    zone = with_records(extra)
    with pytest.raises(UnsupportedZoneError, match=message):
        WireZone.from_zone(zone)


def test_zone_of_another_class_is_rejected() -> None:
    zone = dns.zone.from_text(
        "@ 3600 SOA ns1 h 1 2 3 4 5\n@ 3600 NS ns1\n", origin=ORIGIN, rdclass=dns.rdataclass.CH
    )
    with pytest.raises(UnsupportedZoneError, match="class IN"):
        WireZone.from_zone(zone)


def test_nsec3_records_without_nsec3param_are_plain_names() -> None:
    """As in the dnspython engine: no NSEC3PARAM, no NSEC3 zone."""
    signed = served("nsec3").zone
    zone = dns.zone.Zone(ORIGIN, relativize=False)
    with zone.writer() as txn:
        for name, rdataset in signed.iterate_rdatasets():
            if rdataset.rdtype != dns.rdatatype.NSEC3PARAM and not (
                rdataset.rdtype == dns.rdatatype.RRSIG
                and rdataset.covers == dns.rdatatype.NSEC3PARAM
            ):
                txn.add(name, rdataset)
    plain = Served("no-nsec3param", zone, ZoneIndex.build([zone]), WireZone.from_zone(zone), None)
    assert plain.wire.denial is None
    hashed = served("nsec3").hashed_owner
    for qname, qtype in [(hashed, "A"), (hashed, "NSEC3"), ("nobody", "A"), ("bot", "TXT")]:
        assert mismatches(plain, qname, qtype) == []


def synthetic_rrsets(count: int, *, txt_octets: int = 300) -> Iterator[SignedRRs]:
    """A zone of ``count`` handles built straight as wire: TXT, a fake RRSIG and an NSEC each."""
    owners = [(b"_alter", f"h{index:06d}".encode(), *ORIGIN_LABELS) for index in range(count)]
    apex = ORIGIN_LABELS
    chain = sorted([apex, *owners], key=lambda owner: owner[::-1])

    def name_wire(owner: tuple[bytes, ...]) -> bytes:
        return b"".join(bytes((len(label),)) + label for label in owner)

    def sig(rdtype: int, labels: int) -> bytes:
        fixed = struct.pack("!HBBIIIH", rdtype, 15, labels, 300, NOW + 86400, NOW, 4242)
        return fixed + name_wire(apex) + bytes(64)

    soa = dns.rdata.from_text("IN", "SOA", "ns1.example.com. h.example.com. 1 2 3 4 300")
    yield SignedRRs(apex, dns.rdatatype.SOA, 300, (soa.to_wire() or b"",), (sig(6, 2),))
    ns = dns.rdata.from_text("IN", "NS", "ns1.example.com.")
    yield SignedRRs(apex, dns.rdatatype.NS, 300, (ns.to_wire() or b"",), (sig(2, 2),))
    text = b"v=alter1; " + b"k" * (txt_octets - 12)
    strings = [text[start : start + 255] for start in range(0, len(text), 255)]
    txt_rdata = b"".join(bytes((len(string),)) + string for string in strings)
    bitmap_apex = b"\x00\x06\x22\x00\x00\x00\x00\x03"  # NS SOA RRSIG NSEC
    bitmap_handle = b"\x00\x06\x00\x00\x80\x00\x00\x03"  # TXT RRSIG NSEC
    for position, owner in enumerate(chain):
        following = name_wire(chain[(position + 1) % len(chain)])
        bitmap = bitmap_apex if owner == apex else bitmap_handle
        if owner != apex:
            yield SignedRRs(owner, dns.rdatatype.TXT, 300, (txt_rdata,), (sig(16, 4),))
        yield SignedRRs(
            owner, dns.rdatatype.NSEC, 300, (following + bitmap,), (sig(47, len(owner) - 1),)
        )


def zone_of(rrsets: list[SignedRRs]) -> dns.zone.Zone:
    """The same rrsets as a dnspython zone, for the oracle."""
    zone = dns.zone.Zone(ORIGIN, relativize=False)
    with zone.writer() as txn:
        for rrset in rrsets:
            name = dns.name.Name(rrset.owner)
            for rdtype, ttl, rdatas in (
                (rrset.rdtype, rrset.ttl, rrset.rdatas),
                (dns.rdatatype.RRSIG, rrset.ttl, rrset.sigs),
            ):
                for data in rdatas:
                    rdata = dns.rdata.from_wire(
                        dns.rdataclass.IN, dns.rdatatype.RdataType.make(rdtype), data, 0, len(data)
                    )
                    txn.add(name, ttl, rdata)
    return zone


def test_build_from_wire_rrsets_matches_the_oracle() -> None:
    rrsets = list(synthetic_rrsets(60))
    zone = zone_of(rrsets)
    built = WireZone.build(ORIGIN_LABELS, rrsets, denial="nsec")
    synthetic = Served("synthetic", zone, ZoneIndex.build([zone]), built, None)
    problems = []
    for qname, qtype in [
        ("@", "SOA"),
        ("@", "ANY"),
        ("_alter.h000000", "TXT"),
        ("_alter.h000059", "TXT"),
        ("h000007", "TXT"),
        ("_alter.h000007", "A"),
        ("_alter.zzz", "TXT"),
        ("x._alter.h000003", "TXT"),
        ("a", "TXT"),
    ]:
        problems += mismatches(synthetic, qname, qtype)
    assert problems == []


def test_build_lower_cases_owners() -> None:
    rrsets = [soa_rrset(), txt((b"_ALTER", b"Blake", b"EXAMPLE", b"com", b""))]
    zone = WireZone.build((b"Example", b"COM", b""), rrsets, denial=None)
    assert zone.origin == ORIGIN_LABELS
    reply = zone.answer(make_query("_alter.blake", "TXT"), None)
    assert reply is not None
    response = dns.message.from_wire(reply)
    assert response.rcode() == dns.rcode.NOERROR
    assert [rrset.rdtype for rrset in response.answer] == [dns.rdatatype.TXT]


def test_unsupported_zone_error_is_an_alter_error() -> None:
    with pytest.raises(AlterError):
        WireZone.build(ORIGIN_LABELS, [], denial=None)


# --------------------------------------------------------------------------
# Serving over loopback
# --------------------------------------------------------------------------

Ask = Callable[[dns.message.Message, str, int], dns.message.Message]


def ask_udp(message: dns.message.Message, host: str, port: int) -> dns.message.Message:
    return dns.query.udp(message, host, port=port, timeout=TIMEOUT_SECONDS)


def ask_tcp(message: dns.message.Message, host: str, port: int) -> dns.message.Message:
    return dns.query.tcp(message, host, port=port, timeout=TIMEOUT_SECONDS)


@pytest.mark.parametrize(
    ("ask", "max_udp"),
    [pytest.param(ask_udp, UDP_MAX_OCTETS, id="udp"), pytest.param(ask_tcp, None, id="tcp")],
)
def test_server_serves_a_wire_zone(ask: Ask, max_udp: int | None) -> None:
    zone = served("nsec3")
    questions = [
        ("_alter.blake.example.com.", "TXT"),
        ("bot.example.com.", "TXT"),
        ("_alter.nobody.example.com.", "TXT"),
        ("_alter.carol.example.com.", "TXT"),
    ]
    with ZoneServer(answerer=zone.wire) as server:
        host, port = server.address
        assert server.index.zones == {}
        for qname, qtype in questions:
            message = dns.message.make_query(
                qname, qtype, use_edns=0, payload=EDNS_PAYLOAD_OCTETS, want_dnssec=True
            )
            response = ask(message, host, port)
            expected = answer(zone.index, message.to_wire(), max_udp=max_udp)
            assert summary(response.to_wire()) == summary(expected)


def test_server_swaps_answerers_while_serving() -> None:
    nsec, nsec3 = served("nsec"), served("nsec3")
    message = dns.message.make_query("_alter.nobody.example.com.", "TXT", want_dnssec=True)

    def proof_types(server: ZoneServer) -> set[int]:
        host, port = server.address
        response = ask_udp(message, host, port)
        return {int(rrset.rdtype) for rrset in response.authority} - {
            dns.rdatatype.SOA,
            dns.rdatatype.RRSIG,
        }

    with ZoneServer([nsec.zone]) as server:
        assert proof_types(server) == {dns.rdatatype.NSEC}
        server.load_answerer(nsec3.wire)
        assert proof_types(server) == {dns.rdatatype.NSEC3}
        server.load_answerer(nsec.wire)
        assert proof_types(server) == {dns.rdatatype.NSEC}
        server.load_answerer(nsec3.wire)
        server.load_answerer(ResponseCache(ZoneIndex.build([nsec.zone])))  # dnspython's
        assert proof_types(server) == {dns.rdatatype.NSEC}


def test_server_without_zones_or_answerer_refuses() -> None:
    with ZoneServer() as server:
        host, port = server.address
        response = ask_udp(dns.message.make_query("example.com.", "SOA"), host, port)
        assert response.rcode() == dns.rcode.REFUSED


@pytest.mark.parametrize(
    ("salt", "iterations"),
    [
        pytest.param(b"", 0x10000, id="iterations-over-16-bits"),
        pytest.param(b"\x00" * 256, 0, id="salt-over-255-octets"),
        pytest.param(b"", -1, id="negative-iterations"),
    ],
)
def test_build_rejects_nsec3_parameters_out_of_range(salt: bytes, iterations: int) -> None:
    with pytest.raises(UnsupportedZoneError, match="out of range"):
        WireZone.build(
            ORIGIN_LABELS,
            [soa_rrset()],
            denial="nsec3",
            nsec3_salt=salt,
            nsec3_iterations=iterations,
        )


def test_nsec3_owner_label_must_be_a_hash() -> None:
    param = SignedRRs(ORIGIN_LABELS, dns.rdatatype.NSEC3PARAM, 0, (b"\x01\x00\x00\x00\x00",))
    nsec3 = SignedRRs(
        (b"not-a-hash", *ORIGIN_LABELS), dns.rdatatype.NSEC3, 300, (b"\x01\x00\x00\x00\x00",)
    )
    with pytest.raises(UnsupportedZoneError, match="base32hex"):
        WireZone.build(ORIGIN_LABELS, [soa_rrset(), param, nsec3], denial="nsec3")


def test_root_zone_matches_the_oracle() -> None:
    text = (
        "@ 3600 IN SOA a.root. h.root. 1 2 3 4 300\n"
        "@ 3600 IN NS a.root.\n"
        "a.root. 3600 IN A 192.0.2.1\n"
        '_alter.example. 3600 IN TXT "v=alter1; root"\n'
    )
    zone = dns.zone.from_text(text, origin=dns.name.root, relativize=False)
    root = Served("root", zone, ZoneIndex.build([zone]), WireZone.from_zone(zone), None)
    problems = []
    for qname, qtype in [
        (".", "SOA"),
        (".", "DS"),
        ("_alter.example.", "TXT"),
        ("example.", "TXT"),
        ("nowhere.", "A"),
        ("x.a.root.", "A"),
    ]:
        problems += mismatches(root, qname, qtype)
    assert problems == []
