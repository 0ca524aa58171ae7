"""The one pipelined DNS client, against a real loopback server."""

from __future__ import annotations

import socket

import dns.flags
import dns.message
import dns.name
import dns.rdatatype
import dns.zone
import pytest

from alter_publish.dns import client
from alter_publish.dns.server import ZoneServer
from alter_publish.dns.wire import EDNS_PAYLOAD_OCTETS

ZONE_TEXT = """\
$ORIGIN example.com.
$TTL 300
@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300
@ IN NS ns1
ns1 IN A 127.0.0.1
_alter.blake IN TXT "v=alter1"
"""


@pytest.fixture
def server() -> ZoneServer:
    return ZoneServer([dns.zone.from_text(ZONE_TEXT, origin="example.com.")])


def _question(owner: str, rdtype: dns.rdatatype.RdataType) -> bytes:
    return client.question_wire(dns.name.from_text(owner).to_digestable(), rdtype)


def test_a_query_is_what_dnspython_reads_as_a_do_query() -> None:
    wire = client.query_wire(_question("_alter.Blake.example.com.", dns.rdatatype.TXT), 4321)
    query = dns.message.from_wire(wire)
    assert query.id == 4321
    assert query.question[0].name == dns.name.from_text("_alter.blake.example.com.")
    assert query.question[0].rdtype == dns.rdatatype.TXT
    assert query.payload == EDNS_PAYLOAD_OCTETS
    assert query.ednsflags & dns.flags.DO


def test_many_questions_come_back_in_order(server: ZoneServer) -> None:
    asked = [
        ("example.com.", dns.rdatatype.SOA),
        ("_alter.blake.example.com.", dns.rdatatype.TXT),
        ("nowhere.example.com.", dns.rdatatype.TXT),
    ] * 50
    with server, client.udp_socket(server.address) as sock:
        replies = client.exchange_many(
            sock, [_question(o, t) for o, t in asked], timeout=2.0, window=16
        )
    for (owner, rdtype), reply in zip(asked, replies, strict=True):
        assert reply is not None
        response = dns.message.from_wire(reply)
        assert response.question[0].name == dns.name.from_text(owner)
        assert response.question[0].rdtype == rdtype


def test_an_unanswered_question_is_none_after_its_tries() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))
        with client.udp_socket(silent.getsockname()) as sock:
            (reply,) = client.exchange_many(
                sock, [_question("example.com.", dns.rdatatype.SOA)], timeout=0.05
            )
    assert reply is None


@pytest.mark.parametrize(
    ("window", "timeout"),
    [pytest.param(0, 1.0, id="window-0"), pytest.param(1, 0.0, id="timeout-0")],
)
def test_bad_window_or_timeout_is_refused(window: int, timeout: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        client.checked_window(window, timeout)
