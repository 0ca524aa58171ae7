"""Tests for alter_publish.dns.server: the loopback authoritative DNS server.

Most of these exercise the answering logic of alter_publish.dns.zoneindex through
the names alter_publish.dns.server re-exports; NSEC3 proofs are tested in
test_zoneindex.py, and seen through ``dig`` here.
"""

from __future__ import annotations

import base64
import errno
import random
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dns.dnssec
import dns.dnssectypes
import dns.flags
import dns.message
import dns.name
import dns.node
import dns.opcode
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.rdtypes.ANY.DNSKEY
import dns.rrset
import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alter_publish.dns.server import BIND_ATTEMPTS, UDP_PAYLOAD_MAX_OCTETS, ZoneServer
from alter_publish.dns.wire import EDNS_PAYLOAD_OCTETS
from alter_publish.dns.zoneindex import ZoneIndex, answer
from alter_publish.errors import ServeError
from tests.ports import free_port
from tests.unit.test_zoneindex import Nsec3Params, make_nsec3_zone

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

TIMEOUT_SECONDS = 2.0
DROP_WAIT_SECONDS = 0.3
SOA_NEGATIVE_TTL = 300
BIG_TXT_STRINGS = 12
BIG_TXT_STRING_OCTETS = 250
BIG_TXT = " ".join('"' + "a" * BIG_TXT_STRING_OCTETS + '"' for _ in range(BIG_TXT_STRINGS))

EXAMPLE_COM = f"""
$TTL 3600
@            IN SOA ns1 hostmaster 2024010101 7200 3600 1209600 {SOA_NEGATIVE_TTL}
@            IN NS  ns1
ns1          IN A   127.0.0.1
www          IN A   192.0.2.1
alias        IN CNAME www
outside      IN CNAME www.example.net.
_alter.blake IN TXT "v=alter1; blake"
_alter.carol IN TXT {BIG_TXT}
sub          IN NS  ns.sub
ns.sub       IN A   192.0.2.53
"""

EXAMPLE_ORG = """
$TTL 600
@            IN SOA ns1 hostmaster 1 7200 3600 1209600 60
@            IN NS  ns1
ns1          IN A   127.0.0.2
_alter.dave  IN TXT "v=alter1; dave"
"""

SUB_EXAMPLE_COM = """
$TTL 600
@            IN SOA ns hostmaster 1 7200 3600 1209600 60
@            IN NS  ns
ns           IN A   192.0.2.53
_alter.erin  IN TXT "v=alter1; erin"
"""


def make_zone(text: str = EXAMPLE_COM, origin: str = "example.com.") -> dns.zone.Zone:
    return dns.zone.from_text(text, origin)


def make_signed_zone() -> tuple[dns.zone.Zone, dns.rrset.RRset]:
    """Return example.com signed with a fresh Ed25519 key (NSEC), and its DNSKEY rrset."""
    zone = make_zone()
    key = ed25519.Ed25519PrivateKey.generate()
    dnskey = dns.dnssec.make_dnskey(key.public_key(), dns.dnssectypes.Algorithm.ED25519)
    dns.dnssec.sign_zone(zone, keys=[(key, dnskey)], inception=0, expiration=2**31 - 1)
    origin = dns.name.from_text("example.com.")
    dnskeys = dns.rrset.from_rdata(origin, 3600, dnskey)
    return zone, dnskeys


INDEX = ZoneIndex.build([make_zone()])


@pytest.fixture
def server() -> Iterator[ZoneServer]:
    with ZoneServer([make_zone()]) as running:
        yield running


def query(
    qname: str,
    qtype: str = "TXT",
    *,
    payload: int | None = None,
    dnssec: bool = False,
) -> dns.message.Message:
    if payload is None and not dnssec:
        return dns.message.make_query(qname, qtype)
    return dns.message.make_query(
        qname,
        qtype,
        use_edns=0,
        payload=payload or EDNS_PAYLOAD_OCTETS,
        want_dnssec=dnssec,
    )


def ask_udp(server: ZoneServer, message: dns.message.Message) -> dns.message.Message:
    host, port = server.address
    return dns.query.udp(message, host, port=port, timeout=TIMEOUT_SECONDS)


def ask_tcp(server: ZoneServer, message: dns.message.Message) -> dns.message.Message:
    host, port = server.address
    return dns.query.tcp(message, host, port=port, timeout=TIMEOUT_SECONDS)


def ask_direct(message: dns.message.Message, *, max_udp: int | None = 4096) -> dns.message.Message:
    reply = answer(INDEX, message.to_wire(), max_udp=max_udp)
    assert reply is not None
    return dns.message.from_wire(reply)


def raw_udp(server: ZoneServer, payload: bytes, *, wait: float = TIMEOUT_SECONDS) -> bytes | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(wait)
        sock.sendto(payload, server.address)
        try:
            data, _ = sock.recvfrom(65535)
        except TimeoutError:
            return None
        return data


def types_in(section: list[dns.rrset.RRset]) -> list[str]:
    return [dns.rdatatype.to_text(rrset.rdtype) for rrset in section]


def assert_serving(server: ZoneServer) -> None:
    response = ask_udp(server, query("_alter.blake.example.com."))
    assert response.rcode() == dns.rcode.NOERROR
    assert types_in(response.answer) == ["TXT"]


# --------------------------------------------------------------------------
# Positive answers
# --------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_answer_is_authoritative(server: ZoneServer, transport: str) -> None:
    ask = ask_udp if transport == "udp" else ask_tcp
    response = ask(server, query("_alter.blake.example.com."))
    assert response.rcode() == dns.rcode.NOERROR
    assert response.flags & dns.flags.AA
    assert not response.flags & dns.flags.TC
    assert len(response.answer) == 1
    rrset = response.answer[0]
    assert rrset.name == dns.name.from_text("_alter.blake.example.com.")
    assert rrset.ttl == 3600
    assert [rdata.to_text() for rdata in rrset] == ['"v=alter1; blake"']
    assert response.authority == []


@pytest.mark.parametrize(
    ("qname", "qtype", "expected"),
    [
        pytest.param("example.com.", "SOA", ["SOA"], id="apex-soa"),
        pytest.param("example.com.", "NS", ["NS"], id="apex-ns"),
        pytest.param("ns1.example.com.", "A", ["A"], id="glue-a"),
        pytest.param("alias.example.com.", "A", ["CNAME", "A"], id="cname-chased"),
        pytest.param("alias.example.com.", "CNAME", ["CNAME"], id="cname-asked"),
        pytest.param("alias.example.com.", "TXT", ["CNAME"], id="cname-then-nodata"),
        pytest.param("outside.example.com.", "A", ["CNAME"], id="cname-out-of-zone"),
        pytest.param("example.com.", "ANY", ["SOA", "NS"], id="any-at-apex"),
    ],
)
def test_positive_answers(qname: str, qtype: str, expected: list[str]) -> None:
    response = ask_direct(query(qname, qtype))
    assert response.rcode() == dns.rcode.NOERROR
    assert response.flags & dns.flags.AA
    assert sorted(types_in(response.answer)) == sorted(expected)


def test_cname_to_missing_name_is_nxdomain() -> None:
    zone = make_zone(EXAMPLE_COM + "dangling IN CNAME gone\n")
    reply = answer(
        ZoneIndex.build([zone]), query("dangling.example.com.", "A").to_wire(), max_udp=512
    )
    assert reply is not None
    response = dns.message.from_wire(reply)
    assert response.rcode() == dns.rcode.NXDOMAIN
    assert types_in(response.answer) == ["CNAME"]
    assert types_in(response.authority) == ["SOA"]


def test_cname_loop_terminates() -> None:
    zone = make_zone(EXAMPLE_COM + "loop1 IN CNAME loop2\nloop2 IN CNAME loop1\n")
    reply = answer(ZoneIndex.build([zone]), query("loop1.example.com.", "A").to_wire(), max_udp=512)
    assert reply is not None
    response = dns.message.from_wire(reply)
    assert response.rcode() == dns.rcode.NOERROR
    assert types_in(response.answer) == ["CNAME", "CNAME"]


def test_qname_is_case_insensitive(server: ZoneServer) -> None:
    response = ask_udp(server, query("_ALTER.Blake.EXAMPLE.cOm."))
    assert response.rcode() == dns.rcode.NOERROR
    assert response.flags & dns.flags.AA
    assert types_in(response.answer) == ["TXT"]
    assert response.question[0].name.to_text() == "_ALTER.Blake.EXAMPLE.cOm."


# --------------------------------------------------------------------------
# Negative answers, referrals, refusals
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("qname", "qtype", "rcode"),
    [
        pytest.param("nope.example.com.", "A", dns.rcode.NXDOMAIN, id="nxdomain"),
        pytest.param("a.b.nope.example.com.", "TXT", dns.rcode.NXDOMAIN, id="nxdomain-deep"),
        pytest.param("_alter.blake.example.com.", "A", dns.rcode.NOERROR, id="nodata-wrong-type"),
        pytest.param("blake.example.com.", "TXT", dns.rcode.NOERROR, id="nodata-empty-non-term"),
        pytest.param("www.example.com.", "AAAA", dns.rcode.NOERROR, id="nodata-aaaa"),
    ],
)
@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_negative_answer_has_soa(
    server: ZoneServer, transport: str, qname: str, qtype: str, rcode: dns.rcode.Rcode
) -> None:
    ask = ask_udp if transport == "udp" else ask_tcp
    response = ask(server, query(qname, qtype))
    assert response.rcode() == rcode
    assert response.flags & dns.flags.AA
    assert response.answer == []
    assert types_in(response.authority) == ["SOA"]
    soa = response.authority[0]
    assert soa.name == dns.name.from_text("example.com.")
    assert soa.ttl == SOA_NEGATIVE_TTL


@pytest.mark.parametrize(
    ("soa_ttl", "minimum", "expected"),
    [
        pytest.param(3600, 300, 300, id="minimum-smaller"),
        pytest.param(60, 300, 60, id="ttl-smaller"),
    ],
)
def test_negative_ttl_is_min_of_soa_ttl_and_minimum(
    soa_ttl: int, minimum: int, expected: int
) -> None:
    text = f"@ {soa_ttl} IN SOA ns1 hostmaster 1 7200 3600 1209600 {minimum}\n@ 3600 IN NS ns1\n"
    index = ZoneIndex.build([make_zone(text)])
    reply = answer(index, query("nope.example.com.").to_wire(), max_udp=None)
    assert reply is not None
    response = dns.message.from_wire(reply)
    assert response.authority[0].ttl == expected
    assert index.zones[dns.name.from_text("example.com.")].soa.ttl == soa_ttl


@pytest.mark.parametrize(
    "qname",
    [
        pytest.param("a.sub.example.com.", id="below-cut"),
        pytest.param("sub.example.com.", id="at-cut"),
        pytest.param("ns.sub.example.com.", id="glue-below-cut"),
    ],
)
def test_delegation_gives_referral(server: ZoneServer, qname: str) -> None:
    response = ask_udp(server, query(qname, "A"))
    assert response.rcode() == dns.rcode.NOERROR
    assert not response.flags & dns.flags.AA
    assert response.answer == []
    assert types_in(response.authority) == ["NS"]
    assert response.authority[0].name == dns.name.from_text("sub.example.com.")
    assert types_in(response.additional) == ["A"]
    assert response.additional[0].name == dns.name.from_text("ns.sub.example.com.")


def test_ds_at_cut_is_answered_by_parent() -> None:
    response = ask_direct(query("sub.example.com.", "DS"))
    assert response.rcode() == dns.rcode.NOERROR
    assert response.flags & dns.flags.AA
    assert response.answer == []
    assert types_in(response.authority) == ["SOA"]


@pytest.mark.parametrize(
    ("qname", "qclass"),
    [
        pytest.param("example.net.", "IN", id="other-domain"),
        pytest.param("com.", "IN", id="parent-of-zone"),
        pytest.param(".", "IN", id="root"),
        pytest.param("_alter.blake.example.com.", "CH", id="other-class"),
    ],
)
def test_out_of_zone_is_refused(server: ZoneServer, qname: str, qclass: str) -> None:
    message = dns.message.make_query(qname, "TXT", rdclass=qclass)
    response = ask_udp(server, message)
    assert response.rcode() == dns.rcode.REFUSED
    assert not response.flags & dns.flags.AA
    assert response.answer == []
    assert response.authority == []


@pytest.mark.parametrize("qtype", ["AXFR", "IXFR"])
@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_zone_transfer_is_refused(server: ZoneServer, transport: str, qtype: str) -> None:
    ask = ask_udp if transport == "udp" else ask_tcp
    response = ask(server, dns.message.make_query("example.com.", qtype))
    assert response.rcode() == dns.rcode.REFUSED
    assert response.answer == []


# --------------------------------------------------------------------------
# Sizes, truncation, EDNS
# --------------------------------------------------------------------------


def test_big_answer_truncated_on_udp_without_edns(server: ZoneServer) -> None:
    response = ask_udp(server, query("_alter.carol.example.com."))
    assert response.flags & dns.flags.TC
    assert response.flags & dns.flags.AA
    assert response.rcode() == dns.rcode.NOERROR
    assert response.answer == []
    assert response.authority == []
    assert response.additional == []
    assert response.question[0].name == dns.name.from_text("_alter.carol.example.com.")
    assert response.edns < 0


def test_big_answer_complete_over_tcp(server: ZoneServer) -> None:
    response = ask_tcp(server, query("_alter.carol.example.com."))
    assert not response.flags & dns.flags.TC
    assert types_in(response.answer) == ["TXT"]
    strings = next(iter(response.answer[0])).strings
    assert len(strings) == BIG_TXT_STRINGS
    assert all(len(string) == BIG_TXT_STRING_OCTETS for string in strings)


def test_udp_with_fallback_retries_over_tcp(server: ZoneServer) -> None:
    host, port = server.address
    response, used_tcp = dns.query.udp_with_fallback(
        query("_alter.carol.example.com."), host, port=port, timeout=TIMEOUT_SECONDS
    )
    assert used_tcp
    assert types_in(response.answer) == ["TXT"]


@pytest.mark.parametrize(
    ("payload", "truncated"),
    [
        pytest.param(512, True, id="payload-512"),
        pytest.param(1232, True, id="payload-1232"),
        pytest.param(4096, False, id="payload-4096"),
        pytest.param(65000, False, id="payload-65000-capped"),
    ],
)
def test_edns_payload_is_respected(server: ZoneServer, payload: int, truncated: bool) -> None:
    response = ask_udp(server, query("_alter.carol.example.com.", payload=payload))
    assert bool(response.flags & dns.flags.TC) == truncated
    assert response.edns == 0
    assert response.payload == EDNS_PAYLOAD_OCTETS
    assert not response.ednsflags & dns.flags.DO
    assert (response.answer == []) == truncated


def test_udp_limit_is_capped_by_max_udp() -> None:
    message = query("_alter.carol.example.com.", payload=4096)
    assert not ask_direct(message, max_udp=UDP_PAYLOAD_MAX_OCTETS).flags & dns.flags.TC
    assert ask_direct(message, max_udp=1232).flags & dns.flags.TC
    assert ask_direct(message, max_udp=100).flags & dns.flags.TC  # never below 512


def test_no_edns_in_response_without_edns_in_query() -> None:
    response = ask_direct(query("_alter.blake.example.com."))
    assert response.edns < 0


def test_unsupported_edns_version_is_badvers() -> None:
    message = query("_alter.blake.example.com.")
    message.use_edns(1)
    response = ask_direct(message)
    assert response.rcode() == dns.rcode.BADVERS
    assert response.edns == 0


# --------------------------------------------------------------------------
# Malformed input
# --------------------------------------------------------------------------


def _header(msg_id: int, flags: int, qd: int = 0, an: int = 0, ns: int = 0, ar: int = 0) -> bytes:
    return struct.pack("!HHHHHH", msg_id, flags, qd, an, ns, ar)


def _two_questions() -> bytes:
    message = query("_alter.blake.example.com.")
    message.id = 0x4242
    message.question.append(query("www.example.com.", "A").question[0])
    return message.to_wire()


def _response_packet() -> bytes:
    message = query("_alter.blake.example.com.")
    message.id = 0x5151
    return dns.message.make_response(message).to_wire()


def _truncated_query() -> bytes:
    message = query("_alter.blake.example.com.")
    message.id = 0x6161
    return message.to_wire()[:-3]


def _garbage_body() -> bytes:
    return _header(0x7171, int(dns.flags.RD), qd=1) + random.Random(7).randbytes(40)  # noqa: S311 - test data


MALFORMED = [
    pytest.param(b"", None, id="empty"),
    pytest.param(b"\x00\x01\x02\x03\x04", None, id="five-bytes"),
    pytest.param(_header(0x3131, int(dns.flags.RD))[:11], None, id="eleven-bytes"),
    pytest.param(_header(0x1234, int(dns.flags.RD)), dns.rcode.FORMERR, id="header-only"),
    pytest.param(_response_packet(), None, id="response-packet"),
    pytest.param(_two_questions(), dns.rcode.FORMERR, id="two-questions"),
    pytest.param(_truncated_query(), dns.rcode.FORMERR, id="truncated-question"),
    pytest.param(_garbage_body(), dns.rcode.FORMERR, id="garbage-body"),
    pytest.param(_header(0x8181, 0, qd=1, ar=5) + b"\x00", dns.rcode.FORMERR, id="bad-counts"),
]


@pytest.mark.parametrize(("payload", "rcode"), MALFORMED)
def test_malformed_packet_never_kills_the_server(
    server: ZoneServer, payload: bytes, rcode: dns.rcode.Rcode | None
) -> None:
    reply = raw_udp(
        server, payload, wait=TIMEOUT_SECONDS if rcode is not None else DROP_WAIT_SECONDS
    )
    if rcode is None:
        assert reply is None
    else:
        assert reply is not None
        response = dns.message.from_wire(reply)
        assert response.id == struct.unpack("!H", payload[:2])[0]
        assert response.flags & dns.flags.QR
        assert response.rcode() == rcode
    assert_serving(server)


@pytest.mark.parametrize(("payload", "rcode"), MALFORMED)
def test_answer_handles_malformed_packets(payload: bytes, rcode: dns.rcode.Rcode | None) -> None:
    reply = answer(INDEX, payload, max_udp=512)
    if rcode is None:
        assert reply is None
    else:
        assert reply is not None
        assert dns.message.from_wire(reply).rcode() == rcode


def test_random_packets_never_kill_the_server(server: ZoneServer) -> None:
    rng = random.Random(2024)  # noqa: S311 - reproducible test data
    host, port = server.address
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _ in range(300):
            sock.sendto(rng.randbytes(rng.randrange(0, 600)), (host, port))
    assert_serving(server)


@pytest.mark.parametrize(
    "opcode",
    [
        pytest.param(dns.opcode.NOTIFY, id="notify"),
        pytest.param(dns.opcode.STATUS, id="status"),
        pytest.param(dns.opcode.UPDATE, id="update"),
        pytest.param(dns.opcode.IQUERY, id="iquery"),
    ],
)
def test_other_opcodes_are_notimp(server: ZoneServer, opcode: dns.opcode.Opcode) -> None:
    message = query("example.com.", "SOA")
    message.set_opcode(opcode)
    reply = raw_udp(server, message.to_wire())
    assert reply is not None
    (msg_id, flags) = struct.unpack("!HH", reply[:4])
    assert msg_id == message.id
    assert flags & dns.flags.QR
    assert dns.opcode.from_flags(flags) == opcode
    assert dns.rcode.from_flags(flags, 0) == dns.rcode.NOTIMP


def test_opt_as_qtype_is_formerr() -> None:
    wire = bytearray(query("example.com.", "A").to_wire())
    wire[-4:-2] = struct.pack("!H", dns.rdatatype.OPT)
    reply = answer(INDEX, bytes(wire), max_udp=512)
    assert reply is not None
    assert dns.rcode.from_flags(struct.unpack("!H", reply[2:4])[0], 0) == dns.rcode.FORMERR


def test_tsig_signed_query_is_notauth() -> None:
    message = query("example.com.", "SOA")
    message.use_tsig({dns.name.from_text("key."): b"0123456789abcdef"})
    reply = answer(INDEX, message.to_wire(), max_udp=512)
    assert reply is not None
    assert struct.unpack("!H", reply[:2])[0] == message.id
    assert dns.rcode.from_flags(struct.unpack("!H", reply[2:4])[0], 0) == dns.rcode.NOTAUTH


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"\x00\x05hello", id="garbage-message"),
        pytest.param(b"\x00\x00", id="zero-length"),
        pytest.param(
            struct.pack("!H", len(_response_packet())) + _response_packet(), id="response-packet"
        ),
        pytest.param(struct.pack("!H", 5) + b"\x00" * 5, id="short-message"),
    ],
)
def test_tcp_garbage_closes_the_connection(server: ZoneServer, payload: bytes) -> None:
    with socket.create_connection(server.address, timeout=TIMEOUT_SECONDS) as sock:
        sock.sendall(payload)
        assert sock.recv(65535) == b""
    assert_serving(server)
    assert ask_tcp(server, query("_alter.blake.example.com.")).answer != []


def test_tcp_short_read_then_client_close(server: ZoneServer) -> None:
    with socket.create_connection(server.address, timeout=TIMEOUT_SECONDS) as sock:
        sock.sendall(b"\x00\x40\x12")
    assert ask_tcp(server, query("_alter.blake.example.com.")).answer != []


def test_tcp_serves_several_queries_per_connection(server: ZoneServer) -> None:
    names = ["_alter.blake.example.com.", "www.example.com.", "nope.example.com."]
    with socket.create_connection(server.address, timeout=TIMEOUT_SECONDS) as sock:
        for name in names:
            message = query(name, "A")
            dns.query.send_tcp(sock, message, time.time() + TIMEOUT_SECONDS)
            response, _ = dns.query.receive_tcp(sock, time.time() + TIMEOUT_SECONDS)
            assert message.is_response(response)
            assert response.flags & dns.flags.AA


def test_same_query_with_different_ids_gets_matching_ids(server: ZoneServer) -> None:
    for msg_id in (1, 2, 0xFFFF, 1):
        message = query("_alter.blake.example.com.")
        message.id = msg_id
        response = ask_udp(server, message)
        assert response.id == msg_id
        assert types_in(response.answer) == ["TXT"]


# --------------------------------------------------------------------------
# Several zones
# --------------------------------------------------------------------------


def test_two_zones_served_at_once() -> None:
    zones = [make_zone(), make_zone(EXAMPLE_ORG, "example.org.")]
    with ZoneServer(zones) as running:
        com = ask_udp(running, query("_alter.blake.example.com."))
        org = ask_tcp(running, query("_alter.dave.example.org."))
        missing = ask_udp(running, query("nope.example.org."))
    assert com.flags & dns.flags.AA
    assert org.flags & dns.flags.AA
    assert [rdata.to_text() for rdata in org.answer[0]] == ['"v=alter1; dave"']
    assert missing.rcode() == dns.rcode.NXDOMAIN
    assert missing.authority[0].name == dns.name.from_text("example.org.")
    assert missing.authority[0].ttl == 60


def test_longest_origin_wins() -> None:
    parent = make_zone()
    child = make_zone(SUB_EXAMPLE_COM, "sub.example.com.")
    index = ZoneIndex.build([parent, child])
    reply = answer(index, query("_alter.erin.sub.example.com.").to_wire(), max_udp=None)
    assert reply is not None
    response = dns.message.from_wire(reply)
    assert response.flags & dns.flags.AA
    assert types_in(response.answer) == ["TXT"]
    ds_reply = answer(index, query("sub.example.com.", "DS").to_wire(), max_udp=None)
    assert ds_reply is not None
    ds_response = dns.message.from_wire(ds_reply)
    assert ds_response.authority[0].name == dns.name.from_text("example.com.")


def test_index_rejects_bad_zones() -> None:
    with pytest.raises(ServeError, match="twice") as twice:
        ZoneIndex.build([make_zone(), make_zone()])
    assert twice.value.category == "serve"
    empty = dns.zone.Zone("example.net.")
    with pytest.raises(ServeError, match="no SOA") as no_soa:
        ZoneServer([empty])
    assert no_soa.value.where == "example.net."


def test_index_holds_absolute_names_and_empty_non_terminals() -> None:
    zone = INDEX.zones[dns.name.from_text("example.com.")]
    assert dns.name.from_text("blake.example.com.") in zone.names
    assert dns.name.from_text("blake.example.com.") not in zone.nodes
    assert zone.cuts == frozenset({dns.name.from_text("sub.example.com.")})
    ns = zone.nodes[zone.origin][(dns.rdatatype.NS, dns.rdatatype.NONE)]
    assert all(rdata.target.is_absolute() for rdata in ns)
    assert INDEX.find_zone(dns.name.from_text("A.Example.COM.")) is zone
    assert INDEX.find_zone(dns.name.from_text("example.net.")) is None


# --------------------------------------------------------------------------
# DNSSEC (DO bit)
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def signed() -> tuple[ZoneIndex, dns.rrset.RRset]:
    zone, dnskeys = make_signed_zone()
    return ZoneIndex.build([zone]), dnskeys


def keyring(
    signed: tuple[ZoneIndex, dns.rrset.RRset],
) -> dict[dns.name.Name, dns.node.Node | dns.rdataset.Rdataset]:
    return {dns.name.from_text("example.com."): signed[1]}


def ask_signed(
    signed: tuple[ZoneIndex, dns.rrset.RRset], qname: str, qtype: str, *, dnssec: bool
) -> dns.message.Message:
    reply = answer(signed[0], query(qname, qtype, dnssec=dnssec).to_wire(), max_udp=None)
    assert reply is not None
    return dns.message.from_wire(reply)


def test_do_bit_adds_valid_rrsig(signed: tuple[ZoneIndex, dns.rrset.RRset]) -> None:
    response = ask_signed(signed, "_alter.blake.example.com.", "TXT", dnssec=True)
    assert response.ednsflags & dns.flags.DO
    assert types_in(response.answer) == ["TXT", "RRSIG"]
    txt, rrsig = response.answer
    keys = keyring(signed)
    dns.dnssec.validate(txt, rrsig, keys, now=1_700_000_000)


def test_without_do_bit_no_rrsig(signed: tuple[ZoneIndex, dns.rrset.RRset]) -> None:
    response = ask_signed(signed, "_alter.blake.example.com.", "TXT", dnssec=False)
    assert types_in(response.answer) == ["TXT"]
    negative = ask_signed(signed, "nope.example.com.", "TXT", dnssec=False)
    assert types_in(negative.authority) == ["SOA"]


@pytest.mark.parametrize(
    ("qname", "rcode", "nsec_owners"),
    [
        pytest.param(
            "_alter.blake.example.com.",
            dns.rcode.NOERROR,
            ["_alter.blake.example.com."],
            id="nodata-exact-nsec",
        ),
        pytest.param(
            "blake.example.com.", dns.rcode.NOERROR, ["alias.example.com."], id="nodata-ent"
        ),
        pytest.param(
            "zzz.example.com.",
            dns.rcode.NXDOMAIN,
            ["www.example.com.", "example.com."],
            id="nxdomain-and-wildcard",
        ),
    ],
)
def test_do_bit_adds_denial_proofs(
    signed: tuple[ZoneIndex, dns.rrset.RRset],
    qname: str,
    rcode: dns.rcode.Rcode,
    nsec_owners: list[str],
) -> None:
    response = ask_signed(signed, qname, "A", dnssec=True)
    assert response.rcode() == rcode
    assert response.flags & dns.flags.AA
    keys = keyring(signed)
    soa = response.find_rrset(
        response.authority, dns.name.from_text("example.com."), dns.rdataclass.IN, dns.rdatatype.SOA
    )
    assert soa.ttl == SOA_NEGATIVE_TTL
    soa_sig = response.find_rrset(
        response.authority,
        soa.name,
        dns.rdataclass.IN,
        dns.rdatatype.RRSIG,
        dns.rdatatype.SOA,
    )
    dns.dnssec.validate(soa, soa_sig, keys, now=1_700_000_000)
    nsecs = [rrset for rrset in response.authority if rrset.rdtype == dns.rdatatype.NSEC]
    assert [nsec.name.to_text() for nsec in nsecs] == nsec_owners
    for nsec in nsecs:
        sig = response.find_rrset(
            response.authority,
            nsec.name,
            dns.rdataclass.IN,
            dns.rdatatype.RRSIG,
            dns.rdatatype.NSEC,
        )
        dns.dnssec.validate(nsec, sig, keys, now=1_700_000_000)


DIG_OPTIONS = ("+dnssec", "+norec", "+time=2", "+tries=1")


def server_options(server: ZoneServer) -> list[str]:
    """The ``-p PORT @HOST`` options that point dig or delv at the server."""
    host, port = server.address
    return ["-p", str(port), f"@{host}"]


@pytest.mark.parametrize(
    ("qname", "status", "nsec3_count"),
    [
        pytest.param("_alter.nobody.example.com", "NXDOMAIN", 3, id="nxdomain"),
        pytest.param("blake.example.com", "NOERROR", 1, id="nodata-empty-non-terminal"),
    ],
)
def test_dig_sees_nsec3_proofs(qname: str, status: str, nsec3_count: int) -> None:
    dig = shutil.which("dig")
    if dig is None:
        pytest.skip("dig is not installed (Debian package bind9-dnsutils)")
    with ZoneServer([make_nsec3_zone().zone]) as running:
        result = subprocess.run(
            [dig, *DIG_OPTIONS, *server_options(running), qname, "TXT"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"status: {status}" in result.stdout
    assert " aa" in result.stdout.split("flags:", 1)[1].split(";", 1)[0]
    records = [line.split() for line in result.stdout.splitlines() if not line.startswith(";")]
    nsec3s = [fields for fields in records if fields[3:4] == ["NSEC3"]]
    sigs = [fields for fields in records if fields[3:5] == ["RRSIG", "NSEC3"]]
    assert len(nsec3s) == nsec3_count
    assert len(sigs) == nsec3_count
    assert not [fields for fields in records if fields[3:4] == ["NSEC"]]


@pytest.mark.parametrize(
    ("qname", "qtype", "verdict"),
    [
        pytest.param("_alter.nobody.example.com", "TXT", "negative", id="nxdomain"),
        pytest.param("x.blake.example.com", "A", "negative", id="nxdomain-below-ent"),
        pytest.param("ns1.example.com", "TXT", "negative", id="nodata"),
        pytest.param("blake.example.com", "TXT", "negative", id="nodata-empty-non-terminal"),
        pytest.param("sub.example.com", "DS", "negative", id="no-ds-at-delegation"),
        pytest.param("_alter.blake.example.com", "TXT", "positive", id="positive"),
    ],
)
@pytest.mark.parametrize(
    "params",
    [
        pytest.param(Nsec3Params(), id="unsalted"),
        pytest.param(Nsec3Params(iterations=5, salt=bytes.fromhex("aabbccdd")), id="salted"),
    ],
)
def test_delv_validates_nsec3_answers(
    tmp_path: Path, params: Nsec3Params, qname: str, qtype: str, verdict: str
) -> None:
    """BIND's validator, trusting only the zone key, accepts every answer and proof."""
    delv = shutil.which("delv")
    if delv is None:
        pytest.skip("delv is not installed (Debian package bind9-dnsutils)")
    signed = make_nsec3_zone(params)
    key = signed.dnskeys[0]
    assert isinstance(key, dns.rdtypes.ANY.DNSKEY.DNSKEY)
    anchor = tmp_path / "anchor.conf"
    anchor.write_text(
        f"trust-anchors {{ example.com. static-key {key.flags} {key.protocol} "
        f'{int(key.algorithm)} "{base64.b64encode(key.key).decode("ascii")}"; }};\n',
        encoding="utf-8",
    )
    with ZoneServer([signed.zone]) as running:
        result = subprocess.run(
            [delv, "-a", str(anchor), "+root=example.com", *server_options(running), qname, qtype],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    expected = (
        "; negative response, fully validated" if verdict == "negative" else "; fully validated"
    )
    assert result.stdout.splitlines()[:1] == [expected], result.stdout + result.stderr


def test_do_bit_on_unsigned_zone_changes_nothing() -> None:
    response = ask_direct(query("_alter.blake.example.com.", dnssec=True))
    assert response.ednsflags & dns.flags.DO
    assert types_in(response.answer) == ["TXT"]
    negative = ask_direct(query("nope.example.com.", dnssec=True))
    assert types_in(negative.authority) == ["SOA"]


# --------------------------------------------------------------------------
# Lifecycle
# --------------------------------------------------------------------------


def test_stop_is_idempotent_and_releases_the_port() -> None:
    running = ZoneServer([make_zone()])
    running.stop()  # before start: nothing to do
    running.start()
    host, port = running.address
    assert_serving(running)
    running.stop()
    running.stop()
    assert running.address == (host, port)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind((host, port))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind((host, port))
    assert not any(thread.name.endswith(f"-{port}") for thread in threading.enumerate())


def test_server_restarts_after_stop() -> None:
    running = ZoneServer([make_zone()])
    with running:
        assert_serving(running)
    with running:
        assert_serving(running)


def test_address_before_start_raises() -> None:
    with pytest.raises(ServeError, match="not started"):
        _ = ZoneServer([make_zone()]).address


def test_start_twice_raises(server: ZoneServer) -> None:
    with pytest.raises(ServeError, match="already running"):
        server.start()
    assert_serving(server)


def test_fixed_port_in_use_raises_serve_error(server: ZoneServer) -> None:
    host, port = server.address
    other = ZoneServer([make_zone()], address=host, port=port)
    with pytest.raises(ServeError) as caught:
        other.start()
    assert caught.value.where == f"{host}:{port}"
    assert caught.value.category == "serve"
    assert_serving(server)


def _flaky_tcp_bind(
    monkeypatch: pytest.MonkeyPatch, failures: int, taken: list[int] | None = None
) -> list[int]:
    """Make the next ``failures`` TCP binds fail with EADDRINUSE; return the UDP ports tried.
    ``taken`` counts the TCP binds that failed for real (the port of a random UDP port
    is now and then in use for TCP on a busy machine: one more try)."""
    left = [failures]
    udp_ports: list[int] = []

    class FlakySocket(socket.socket):
        def bind(self, address: tuple[Any, ...] | str | ReadableBuffer) -> None:
            if self.type == socket.SOCK_STREAM and left[0] > 0:
                left[0] -= 1
                raise OSError(errno.EADDRINUSE, "Address already in use")
            try:
                super().bind(address)
            except OSError:
                if taken is not None and self.type == socket.SOCK_STREAM:
                    taken.append(1)
                raise
            if self.type == socket.SOCK_DGRAM:
                udp_ports.append(int(self.getsockname()[1]))

    monkeypatch.setattr(socket, "socket", FlakySocket)
    return udp_ports


def test_port_zero_retries_when_tcp_port_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[int] = []
    udp_ports = _flaky_tcp_bind(monkeypatch, failures=2, taken=taken)
    running = ZoneServer([make_zone()])
    running.start()
    monkeypatch.undo()
    try:
        assert len(udp_ports) == 3 + len(taken)
        assert running.address[1] == udp_ports[-1]
        assert ask_tcp(running, query("_alter.blake.example.com.")).answer != []
        assert_serving(running)
    finally:
        running.stop()


def test_port_zero_gives_up_after_bind_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    udp_ports = _flaky_tcp_bind(monkeypatch, failures=BIND_ATTEMPTS)
    with pytest.raises(ServeError, match="cannot bind TCP"):
        ZoneServer([make_zone()]).start()
    assert len(udp_ports) == BIND_ATTEMPTS


def test_fixed_port_with_tcp_taken_raises_and_frees_udp() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = int(taken.getsockname()[1])
        with pytest.raises(ServeError, match="cannot bind TCP") as caught:
            ZoneServer([make_zone()], port=port).start()
        assert caught.value.where == f"127.0.0.1:{port}"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", port))  # the UDP socket of the failed start was closed


def test_fixed_port_is_used() -> None:
    port = free_port()
    with ZoneServer([make_zone()], port=port) as running:
        assert running.address == ("127.0.0.1", port)
        assert_serving(running)


@pytest.mark.parametrize(
    "address",
    [
        pytest.param("256.0.0.1", id="bad-ipv4"),
        pytest.param("192.0.2.1", id="not-local"),
    ],
)
def test_bad_bind_address_raises_serve_error(address: str) -> None:
    with pytest.raises(ServeError) as caught:
        ZoneServer([make_zone()], address=address).start()
    assert caught.value.where == f"{address}:0"


def test_ipv6_loopback() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        running = ZoneServer([make_zone()], address="::1")
        running.start()
    except ServeError:
        pytest.skip("IPv6 loopback not available")
    try:
        host, port = running.address
        response = dns.query.udp(
            query("_alter.blake.example.com."), host, port=port, timeout=TIMEOUT_SECONDS
        )
        assert types_in(response.answer) == ["TXT"]
    finally:
        running.stop()


def test_wait_returns_after_stop_from_another_thread() -> None:
    running = ZoneServer([make_zone()])
    running.wait()  # not running: returns at once
    running.start()
    stopper = threading.Timer(0.2, running.stop)
    stopper.start()
    started = time.monotonic()
    running.wait()
    assert time.monotonic() - started < 5
    stopper.join()


def test_stop_closes_idle_tcp_connections() -> None:
    running = ZoneServer([make_zone()])
    running.start()
    sock = socket.create_connection(running.address, timeout=TIMEOUT_SECONDS)
    try:
        time.sleep(0.1)
        started = time.monotonic()
        running.stop()
        assert time.monotonic() - started < 3
        assert sock.recv(10) == b""
    finally:
        sock.close()


# --------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=700))
def test_answer_never_raises_on_arbitrary_bytes(wire: bytes) -> None:
    for max_udp in (None, 512, 4096):
        reply = answer(INDEX, wire, max_udp=max_udp)
        if reply is not None:
            assert len(reply) >= 12
            assert reply[:2] == wire[:2]
            assert reply[2] & 0x80  # QR


VALID_QUERY = query("_alter.blake.example.com.", payload=1232).to_wire()


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=len(VALID_QUERY) - 1), st.integers(0, 255)),
        min_size=1,
        max_size=6,
    ),
    st.integers(min_value=0, max_value=len(VALID_QUERY)),
)
def test_answer_never_raises_on_mutated_queries(
    mutations: list[tuple[int, int]], keep: int
) -> None:
    wire = bytearray(VALID_QUERY)
    for position, value in mutations:
        wire[position] = value
    mutated = bytes(wire[: max(keep, 12)])
    reply = answer(INDEX, mutated, max_udp=512)
    if reply is not None:
        assert reply[:2] == mutated[:2]
        assert len(reply) <= 512
