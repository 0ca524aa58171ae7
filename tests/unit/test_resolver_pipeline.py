"""Pipelined queries: many in flight on one socket, resent once, timed out, kept in order."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import dns.zone
import pytest

from alter_publish.dns.client import PIPELINE_WINDOW, QUERY_TRIES
from alter_publish.dns.server import ZoneServer
from alter_publish.errors import ResolveError
from alter_publish.verify.resolve import StubResolver

NOW = 1_767_225_600
COUNT = PIPELINE_WINDOW * 3 + 5  # several windows, the last one partial


def _zone() -> dns.zone.Zone:
    lines = ["$TTL 300", "@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300", "@ IN NS ns1"]
    lines += [f'h{n} IN TXT "record {n}"' for n in range(COUNT)]
    return dns.zone.from_text("\n".join(lines), origin="example.com.", relativize=False)


def _names() -> list[dns.name.Name]:
    return [dns.name.from_text(f"h{n}.example.com.") for n in range(COUNT)]


def test_answers_come_back_in_order_from_a_real_server() -> None:
    with ZoneServer([_zone()]) as server, StubResolver(server.address, NOW) as stub:
        results = stub.exchange_many(_names(), dns.rdatatype.TXT)
    assert len(results) == COUNT
    for n, result in enumerate(results):
        assert not isinstance(result, ResolveError), result
        response, transport = result
        assert transport == "udp"
        assert response.question[0].name == dns.name.from_text(f"h{n}.example.com.")
        assert response.answer[0][0].strings == (f"record {n}".encode(),)


@pytest.fixture
def lossy_server() -> Iterator[tuple[tuple[str, int], list[int]]]:
    """A UDP server that drops the first copy of every query and answers the second."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.05)
    seen: dict[bytes, int] = {}
    copies: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                wire, client = sock.recvfrom(65535)
            except TimeoutError:
                continue
            seen[wire] = seen.get(wire, 0) + 1
            copies.append(seen[wire])
            if seen[wire] >= 2:
                response = dns.message.make_response(dns.message.from_wire(wire))
                response.set_rcode(dns.rcode.NXDOMAIN)
                sock.sendto(response.to_wire(), client)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield sock.getsockname(), copies
    stop.set()
    thread.join()
    sock.close()


def test_unanswered_queries_are_sent_again_once(
    lossy_server: tuple[tuple[str, int], list[int]],
) -> None:
    address, copies = lossy_server
    names = _names()[:10]
    with StubResolver(address, NOW, timeout=0.2) as stub:
        results = stub.exchange_many(names, dns.rdatatype.TXT)
    assert all(not isinstance(result, ResolveError) for result in results), results
    assert sorted(copies) == [1] * 10 + [2] * 10


def test_a_silent_server_times_every_query_out_after_its_tries() -> None:
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    try:
        names = _names()[:5]
        start = time.monotonic()
        with StubResolver(silent.getsockname(), NOW, timeout=0.1) as stub:
            results = stub.exchange_many(names, dns.rdatatype.TXT)
        elapsed = time.monotonic() - start
    finally:
        silent.close()
    assert all(isinstance(result, ResolveError) for result in results)
    assert all("no answer" in str(result) for result in results)
    assert QUERY_TRIES * 0.1 <= elapsed < QUERY_TRIES * 0.1 + 1.0
