"""The fleet of a push: which name servers, serial arithmetic, and a wait that gives up."""

from __future__ import annotations

import socket

import pytest

from alter_publish.definition.model import load_zone
from alter_publish.errors import PublishError
from alter_publish.publish.fleet import NameServer, behind, name_servers, wait_for_serial
from tests.conftest import EXAMPLE_ZONE


def test_name_servers_are_the_definitions_with_in_zone_addresses_from_hosts() -> None:
    spec = load_zone(EXAMPLE_ZONE)
    servers = name_servers(spec, lookup=lambda name: ("198.51.100.2",))
    assert [server.where for server in servers] == [
        "ns1.example.com. (192.0.2.53)",
        "ns1.example.com. (2001:db8::53)",
        "ns2.example.net. (198.51.100.2)",
    ]


def test_explicit_name_servers_replace_the_definitions() -> None:
    spec = load_zone(EXAMPLE_ZONE)
    given = [("127.0.0.1", 5301), ("127.0.0.1", 5302), ("127.0.0.1", 5301)]
    servers = name_servers(spec, given)
    assert [server.where for server in servers] == ["127.0.0.1:5301", "127.0.0.1:5302"]


def test_a_name_server_without_address_is_refused_before_any_push() -> None:
    spec = load_zone(EXAMPLE_ZONE)
    with pytest.raises(PublishError, match=r"ns2\.example\.net\. has no address.*--ns"):
        name_servers(spec, lookup=lambda name: ())


@pytest.mark.parametrize(
    ("served", "wanted", "lags"),
    [
        (5, 5, False),
        (4, 5, True),
        (6, 5, False),  # the primary re-signed meanwhile
        (2**32 - 1, 3, True),  # RFC 1982: the serial wrapped
        (3, 2**32 - 1, False),
        (0, 2**31, True),  # RFC 1982 leaves a gap of 2^31 undefined: not caught up
    ],
)
def test_serials_compare_by_rfc1982(served: int, wanted: int, lags: bool) -> None:
    assert behind(served, wanted) is lags


def test_the_wait_ends_at_its_timeout_naming_a_silent_server() -> None:
    spec = load_zone(EXAMPLE_ZONE)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:  # bound, never answers
        silent.bind(("127.0.0.1", 0))
        port = silent.getsockname()[1]
        result = wait_for_serial(spec, [NameServer("", "127.0.0.1", port)], 7, timeout=0.6)
    assert not result.converged
    assert 0.6 <= result.seconds < 2.5
    assert result.summary().startswith(
        f"example.com: 127.0.0.1:{port} gives no serial (no answer), pushed 7; waited "
    )
