"""Publishing to a fleet: the zone's name servers, the SOA serial each serves, and the wait
until every one serves the serial a push left on the primary.

A push changes the primary only; its secondaries take the change by NOTIFY and IXFR (or
AXFR), or at the next SOA refresh when NOTIFY is lost. Until then resolvers that ask a
secondary get the old records. The name servers are the definition's ``ns`` (in-zone
names at their ``hosts`` addresses, others looked up), or the addresses given instead
(``--ns HOST:PORT``: test servers on loopback ports, or servers that resolvers reach at
other addresses than the push host does).

Serials compare by RFC 1982 arithmetic: a server serving a serial at or past the pushed
one has caught up (the primary may have re-signed meanwhile).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype

from alter_publish.definition.model import ZoneSpec
from alter_publish.errors import PublishError

#: How long a push waits, by default, for every name server to serve the pushed serial.
DEFAULT_CONVERGE_SECONDS = 60.0
#: How often each name server that has not caught up is asked for its SOA serial.
POLL_SECONDS = 0.5
#: How long one SOA question to one name server may take while waiting.
PROBE_TIMEOUT_SECONDS = 1.0
#: ... and at least this long, when the wait is nearly over.
PROBE_TIMEOUT_MIN_SECONDS = 0.2
#: Name servers asked at once.
PROBE_THREADS = 8
DNS_PORT = 53
_SERIAL_HALF = 2**31
_SERIAL_SPACE = 2**32


@dataclass(frozen=True, slots=True)
class NameServer:
    """One address of one name server of the zone (``name`` is empty for ``--ns``)."""

    name: str
    host: str
    port: int = DNS_PORT

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)``."""
        return self.host, self.port

    @property
    def where(self) -> str:
        """``HOST:PORT``, or ``ns1.example.com. (192.0.2.53)`` for a name server by name."""
        spelled = f"[{self.host}]" if ":" in self.host and self.port != DNS_PORT else self.host
        at = spelled if self.port == DNS_PORT else f"{spelled}:{self.port}"
        return f"{self.name} ({at})" if self.name else at


def name_servers(
    spec: ZoneSpec,
    explicit: Sequence[tuple[str, int]] = (),
    *,
    lookup: Callable[[str], Sequence[str]] | None = None,
) -> tuple[NameServer, ...]:
    """Every address of every name server of the zone: ``explicit`` when given, else the
    definition's ``ns`` (in-zone names at their ``hosts`` addresses, the others found by
    ``lookup``, the system resolver by default).

    Raises:
        PublishError: a name server has no address.
    """
    if explicit:
        return tuple(dict.fromkeys(NameServer("", host, port) for host, port in explicit))
    find = lookup or _addresses
    hosts = dict(spec.hosts)
    found: list[NameServer] = []
    for ns in spec.ns:
        in_zone = dns.name.from_text(ns).is_subdomain(dns.name.from_text(spec.origin))
        addresses = hosts.get(ns, ()) if in_zone else tuple(find(ns))
        if not addresses:
            how = "the definition's hosts list none" if in_zone else "the resolver finds none"
            raise PublishError(
                f"name server {ns} has no address ({how}); give the servers with --ns HOST:PORT",
                where=spec.origin,
            )
        found += [NameServer(ns, address) for address in addresses]
    return tuple(dict.fromkeys(found))


def _addresses(name: str) -> tuple[str, ...]:
    try:
        infos = socket.getaddrinfo(name, DNS_PORT, type=socket.SOCK_DGRAM)
    except (OSError, UnicodeError):
        return ()
    return tuple(dict.fromkeys(str(info[4][0]) for info in infos))


def behind(served: int, wanted: int) -> bool:
    """Whether serial ``served`` is older than ``wanted`` (RFC 1982 serial arithmetic; a
    gap of exactly 2^31, which RFC 1982 leaves undefined, counts as behind)."""
    gap = (wanted - served) % _SERIAL_SPACE
    return 0 < gap <= _SERIAL_HALF


@dataclass(frozen=True, slots=True)
class ServedSerial:
    """The SOA serial one name server answered with, or why it gave none."""

    server: NameServer
    serial: int | None
    error: str | None = None

    def lags(self, wanted: int) -> bool:
        """Whether it does not yet serve ``wanted`` (or a later serial)."""
        return self.serial is None or behind(self.serial, wanted)

    def describe(self, wanted: int) -> str:
        """``serves serial N`` (and whether it lags ``wanted``), or why there is none."""
        if self.serial is None:
            return f"no serial ({self.error})"
        if self.lags(wanted):
            return f"serves serial {self.serial}, behind {wanted}"
        return f"serves serial {self.serial}"

    def to_mapping(self, wanted: int) -> dict[str, Any]:
        """JSON form."""
        return {
            "server": self.server.where,
            "name": self.server.name or None,
            "address": f"{self.server.host}:{self.server.port}",
            "serial": self.serial,
            "lags": self.lags(wanted),
            "error": self.error,
        }


def served_serial(spec: ZoneSpec, server: NameServer, *, timeout: float) -> ServedSerial:
    """Ask ``server`` for the zone's SOA (UDP, TCP when truncated): an authoritative answer
    gives the serial; no answer, another rcode or a referral give the reason instead."""
    origin = dns.name.from_text(spec.origin)
    query = dns.message.make_query(origin, dns.rdatatype.SOA)
    host, port = server.address
    try:
        reply = dns.query.udp(query, host, port=port, timeout=timeout)
        if reply.flags & dns.flags.TC:
            reply = dns.query.tcp(query, host, port=port, timeout=timeout)
    except dns.exception.Timeout:
        return ServedSerial(server, None, "no answer")
    except (OSError, dns.exception.DNSException, EOFError) as exc:
        return ServedSerial(server, None, f"query failed: {exc or type(exc).__name__}")
    rcode = dns.rcode.to_text(reply.rcode())
    if reply.rcode() == dns.rcode.NOERROR and reply.flags & dns.flags.AA:
        for rrset in reply.answer:
            if rrset.name == origin and rrset.rdtype == dns.rdatatype.SOA:
                return ServedSerial(server, int(next(iter(rrset)).serial))
    return ServedSerial(server, None, f"does not serve the zone (SOA query: {rcode})")


def served_serials(
    spec: ZoneSpec, servers: Sequence[NameServer], *, timeout: float
) -> tuple[ServedSerial, ...]:
    """:func:`served_serial` of every server, asked at once; in the order given."""
    if not servers:
        return ()
    with ThreadPoolExecutor(min(PROBE_THREADS, len(servers))) as pool:
        return tuple(pool.map(lambda s: served_serial(spec, s, timeout=timeout), servers))


@dataclass(frozen=True, slots=True)
class Convergence:
    """How a wait for the pushed serial ended: each server's last answer, and the time."""

    zone: str
    serial: int
    servers: tuple[ServedSerial, ...]
    seconds: float

    @property
    def lagging(self) -> tuple[ServedSerial, ...]:
        """The servers that did not serve the serial when the wait ended."""
        return tuple(served for served in self.servers if served.lags(self.serial))

    @property
    def converged(self) -> bool:
        """Every server serves the serial (or a later one)."""
        return not self.lagging

    def summary(self, *, pushed: bool = True) -> str:
        """One line: who has not caught up (the first, and how many more), or that all
        have; ``pushed``: after a push's wait, else a look now (``plan``)."""
        lagging = self.lagging
        after = f" after {self.seconds:.1f} s" if pushed else ""
        if not lagging:
            return (
                f"{self.zone}: serial {self.serial} served by all {len(self.servers)} "
                f"name server(s){after}"
            )
        first = lagging[0]
        now = (
            f"still serves serial {first.serial}"
            if first.serial is not None
            else f"gives no serial ({first.error})"
        )
        wanted = f"pushed {self.serial}" if pushed else f"the primary serves {self.serial}"
        more = f" (+{len(lagging) - 1} more)" if len(lagging) > 1 else ""
        waited = f"; waited {self.seconds:.1f} s" if pushed else ""
        return f"{self.zone}: {first.server.where} {now}, {wanted}{more}{waited}"

    def to_mapping(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "serial": self.serial,
            "converged": self.converged,
            "seconds": round(self.seconds, 3),
            "servers": [served.to_mapping(self.serial) for served in self.servers],
        }


def wait_for_serial(
    spec: ZoneSpec,
    servers: Sequence[NameServer],
    serial: int,
    *,
    timeout: float,
    poll: float = POLL_SECONDS,
) -> Convergence:
    """Ask every server for its serial every ``poll`` seconds until all serve ``serial``
    (or later) or ``timeout`` seconds have passed; a server that has caught up is not
    asked again."""
    start = time.monotonic()
    deadline = start + timeout
    latest: dict[NameServer, ServedSerial] = {}
    waiting = list(dict.fromkeys(servers))
    while True:
        left = deadline - time.monotonic()
        probe = max(min(PROBE_TIMEOUT_SECONDS, left), PROBE_TIMEOUT_MIN_SECONDS)
        for served in served_serials(spec, waiting, timeout=probe):
            latest[served.server] = served
        waiting = [server for server in waiting if latest[server].lags(serial)]
        left = deadline - time.monotonic()
        if not waiting or left <= 0:
            break
        time.sleep(min(poll, left))
    return Convergence(
        spec.origin,
        serial,
        tuple(latest[server] for server in dict.fromkeys(servers)),
        time.monotonic() - start,
    )


def primary_serial(spec: ZoneSpec, server: tuple[str, int], *, timeout: float) -> int:
    """The SOA serial the primary serves.

    Raises:
        PublishError: it gives no authoritative SOA answer.
    """
    served = served_serial(spec, NameServer("", *server), timeout=timeout)
    if served.serial is None:
        raise PublishError(served.error or "no serial", where=served.server.where)
    return served.serial


def compare_serials(
    spec: ZoneSpec, primary: tuple[str, int], servers: Sequence[NameServer], *, timeout: float
) -> Convergence:
    """Each name server's serial now, against the primary's (``plan --all-ns``).

    Raises:
        PublishError: the primary gives no authoritative SOA answer.
    """
    start = time.monotonic()
    serial = primary_serial(spec, primary, timeout=timeout)
    found = served_serials(spec, servers, timeout=timeout)
    return Convergence(spec.origin, serial, found, time.monotonic() - start)
