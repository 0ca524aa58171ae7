"""Iterative resolution asks a zone's servers in turn: a lame one (NOERROR without AA)
must not stand in for the zone's keys."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import dns.flags
import dns.message
import dns.name
import dns.rdatatype
import dns.rrset
import dns.zone
import pytest

from alter_publish.dns.hints import RootHints
from alter_publish.dns.iterate import IterativeAsker
from alter_publish.dns.server import ZoneServer
from tests.ports import free_port

ROOT = dns.name.root
DNSKEY_TEXT = "257 3 15 l02Woi0iS8Aa25FQkUd9RMzZHJpBoRQwAQEX1SxZJA4="


@contextlib.contextmanager
def _serve(address: str, port: int, *, authoritative: bool) -> Iterator[None]:
    """A real UDP server on loopback answering every question (AA set or not)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((address, port))
    sock.settimeout(0.1)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                data, peer = sock.recvfrom(4096)
            except TimeoutError:
                continue
            query = dns.message.from_wire(data)
            reply = dns.message.make_response(query)
            if authoritative:
                reply.flags |= dns.flags.AA
                reply.answer.append(dns.rrset.from_text(ROOT, 3600, "IN", "DNSKEY", DNSKEY_TEXT))
            sock.sendto(reply.to_wire(), peer)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        sock.close()


@pytest.fixture
def port() -> int:
    return free_port("127.0.0.1", "127.0.0.2")


def test_a_lame_server_is_passed_over_for_the_zone_keys(port: int) -> None:
    with (
        _serve("127.0.0.1", port, authoritative=False),
        _serve("127.0.0.2", port, authoritative=True),
    ):
        hints = RootHints(((dns.name.from_text("a.root."), ("127.0.0.1", "127.0.0.2")),))
        asker = IterativeAsker(hints, 1.0, port)
        response = asker.ask(ROOT, ROOT, dns.rdatatype.DNSKEY)
    assert response.flags & dns.flags.AA
    assert response.answer


ROOT_ZONE = """\
. 3600 IN SOA a.root. hostmaster.root. 1 3600 600 86400 300
. 3600 IN NS a.root.
a.root. 3600 IN A 127.0.0.1
ns.v6only. 3600 IN AAAA 2001:db8::53
ns.dual. 3600 IN A 192.0.2.53
ns.dual. 3600 IN AAAA 2001:db8::54
"""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("ns.v6only.", ("2001:db8::53",), id="ipv6-only"),
        pytest.param("ns.dual.", ("192.0.2.53", "2001:db8::54"), id="both"),
        pytest.param("ns.missing.", (), id="none"),
    ],
)
def test_a_name_servers_addresses_are_its_a_and_aaaa(name: str, expected: tuple[str, ...]) -> None:
    # An out-of-zone name server with only an AAAA was reported unreachable: A alone was asked.
    zone = dns.zone.from_text(ROOT_ZONE, origin=ROOT, relativize=False)
    with ZoneServer([zone]) as server:
        host, port = server.address
        hints = RootHints(((dns.name.from_text("a.root."), (host,)),))
        asker = IterativeAsker(hints, 1.0, port)
        assert asker.address_of(dns.name.from_text(name)) == expected
