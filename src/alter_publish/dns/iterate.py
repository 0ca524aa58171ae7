"""Who the chain of trust asks: one server, or the zones' own servers found from the root.

An :class:`Asker` answers "ask the servers of ``zone`` this question". Two kinds:

* :class:`ServerAsker` asks one server everything: a recursive resolver (RD and CD
  set, so that it returns the data even when it would not validate it, and the chain
  is checked here), or an authoritative server that serves every zone on the path.
* :class:`IterativeAsker` resolves iteratively from the root hints (RD clear): it
  starts with the root servers, and :meth:`IterativeAsker.enter` learns the servers
  of each zone cut from the parent's referral (glue, or the name servers' addresses
  resolved from the root in turn).

:func:`ask_server` is the one question both send: DO set, EDNS0, TCP on truncation.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Final, Protocol

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype
import dns.rrset

from alter_publish.dns.hints import RootHints
from alter_publish.dns.wire import EDNS_PAYLOAD_OCTETS
from alter_publish.errors import ResolveError

__all__ = [
    "DNS_PORT",
    "SERVERS_TRIED_MAX",
    "Asker",
    "IterativeAsker",
    "ServerAsker",
    "ask_server",
    "is_recursive",
]

#: The port name servers listen on.
DNS_PORT: Final = 53
#: At most this many servers of one zone are tried before the question fails.
SERVERS_TRIED_MAX: Final = 3
#: How deep name-server address lookups may nest (a server named in a zone whose
#: servers are named in another zone...).
ADDRESS_LOOKUP_DEPTH_MAX: Final = 3
#: The most referrals followed for one address lookup.
REFERRALS_MAX: Final = 16
_USABLE: Final = frozenset({dns.rcode.NOERROR, dns.rcode.NXDOMAIN})
_ADDRESS_TYPES: Final = (dns.rdatatype.A, dns.rdatatype.AAAA)
#: What the chain asks a zone's own servers for: only an authoritative answer (AA) is
#: the zone's data (other questions may rightly be answered by a referral).
_ZONE_DATA: Final = frozenset({dns.rdatatype.DS, dns.rdatatype.DNSKEY})


def ask_server(
    server: tuple[str, int],
    qname: dns.name.Name,
    qtype: dns.rdatatype.RdataType,
    *,
    timeout: float,
    recursion: bool = False,
    checking_disabled: bool = False,
    tcp: bool = False,
) -> dns.message.Message:
    """Ask one question with DO set (over UDP, again over TCP when truncated; over TCP
    only with ``tcp``).

    Args:
        server: the server's address and port.
        qname: the name asked for.
        qtype: the type asked for.
        timeout: seconds to wait for each of the two tries over UDP.
        recursion: set RD.
        checking_disabled: set CD (a validating resolver then returns bogus data).

    Returns:
        The response, whatever its rcode.

    Raises:
        ResolveError: no answer in time, or an unusable reply.
    """
    query = dns.message.make_query(
        qname, qtype, want_dnssec=True, use_edns=0, payload=EDNS_PAYLOAD_OCTETS
    )
    query.flags = (dns.flags.RD if recursion else 0) | (dns.flags.CD if checking_disabled else 0)
    host, port = server
    where = f"{qname} {dns.rdatatype.to_text(qtype)}"
    for attempt in range(2):
        try:
            if tcp:
                return dns.query.tcp(query, host, port=port, timeout=timeout)
            response = dns.query.udp(query, host, port=port, timeout=timeout)
            if response.flags & dns.flags.TC:
                response = dns.query.tcp(query, host, port=port, timeout=timeout)
        except dns.exception.Timeout as exc:
            if attempt:
                raise ResolveError(
                    f"no answer from {host}:{port} within {timeout:g} s", where=where
                ) from exc
            continue
        except (OSError, ValueError, dns.exception.DNSException) as exc:
            raise ResolveError(f"query to {host}:{port} failed: {exc}", where=where) from exc
        return response
    raise AssertionError("unreachable")  # pragma: no cover


def is_recursive(response: dns.message.Message) -> bool:
    """Whether ``response`` comes from a recursive resolver (RA set)."""
    return bool(response.flags & dns.flags.RA)


def _usable(response: dns.message.Message, server: tuple[str, int], where: str) -> None:
    if response.rcode() not in _USABLE:
        host, port = server
        raise ResolveError(
            f"{host}:{port} answered {dns.rcode.to_text(response.rcode())}", where=where
        )


class Asker(Protocol):
    """Asks the servers of a zone; what the chain of trust needs from the network."""

    def ask(
        self, zone: dns.name.Name, qname: dns.name.Name, qtype: dns.rdatatype.RdataType
    ) -> dns.message.Message:
        """Ask a server of ``zone`` about ``qname``/``qtype`` (DO set).

        Raises:
            ResolveError: no server of the zone answered NOERROR or NXDOMAIN.
        """
        ...

    def enter(self, parent: dns.name.Name, child: dns.name.Name) -> None:
        """Learn the servers of ``child``, delegated from ``parent``.

        Raises:
            ResolveError: the delegation names no server that can be reached.
        """
        ...


@dataclass(frozen=True, slots=True)
class ServerAsker:
    """Asks one server everything (RD and CD set when it is a recursive resolver)."""

    server: tuple[str, int]
    recursive: bool
    timeout: float

    def ask(
        self, zone: dns.name.Name, qname: dns.name.Name, qtype: dns.rdatatype.RdataType
    ) -> dns.message.Message:
        """Ask the server (see :meth:`Asker.ask`; ``zone`` is not used).

        Raises:
            ResolveError: no answer, or an rcode other than NOERROR/NXDOMAIN.
        """
        response = ask_server(
            self.server,
            qname,
            qtype,
            timeout=self.timeout,
            recursion=self.recursive,
            checking_disabled=self.recursive,
        )
        _usable(response, self.server, f"{qname} {dns.rdatatype.to_text(qtype)}")
        return response

    def enter(self, parent: dns.name.Name, child: dns.name.Name) -> None:
        """Nothing to learn: the one server serves (or resolves) every zone."""


@dataclass
class IterativeAsker:
    """Resolves from the root hints, as a recursive resolver does, one zone at a time.

    ``port`` is the port of every server (53; tests run a hierarchy on a high port).
    """

    hints: RootHints
    timeout: float
    port: int = DNS_PORT
    _servers: dict[dns.name.Name, tuple[str, ...]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._servers.setdefault(dns.name.root, self.hints.addresses)

    def servers(self, zone: dns.name.Name) -> tuple[str, ...]:
        """The addresses known for ``zone`` (empty before :meth:`enter`)."""
        return self._servers.get(zone, ())

    def ask(
        self, zone: dns.name.Name, qname: dns.name.Name, qtype: dns.rdatatype.RdataType
    ) -> dns.message.Message:
        """Ask the servers of ``zone`` in turn, the first usable answer wins.

        Raises:
            ResolveError: ``zone`` has no known server, or none answered usably.
        """
        where = f"{qname} {dns.rdatatype.to_text(qtype)}"
        if zone not in self._servers:
            self._locate(zone)
        addresses = self._servers.get(zone)
        if not addresses:
            raise ResolveError(f"no known name server for {zone}", where=where)
        errors: list[str] = []
        for address in addresses[:SERVERS_TRIED_MAX]:
            server = (address, self.port)
            try:
                response = ask_server(server, qname, qtype, timeout=self.timeout)
                _usable(response, server, where)
            except ResolveError as exc:
                errors.append(exc.what)
                continue
            if qtype in _ZONE_DATA and not response.flags & dns.flags.AA:
                # A lame server (or an upward referral): not the zone's data; the next.
                errors.append(f"{address}:{self.port} is not authoritative for {zone}")
                continue
            return response
        raise ResolveError(f"no server of {zone} answered: {'; '.join(errors)}", where=where)

    def enter(self, parent: dns.name.Name, child: dns.name.Name) -> None:
        """Ask ``parent``'s servers for ``child`` NS and keep the servers' addresses.

        Raises:
            ResolveError: no answer, or no reachable server named.
        """
        if child not in self._servers:
            self._enter(parent, child, ADDRESS_LOOKUP_DEPTH_MAX)

    def _enter(self, parent: dns.name.Name, child: dns.name.Name, depth: int) -> None:
        response = self.ask(parent, child, dns.rdatatype.NS)
        self._learn(child, response, depth)

    def _learn(self, child: dns.name.Name, response: dns.message.Message, depth: int) -> None:
        names = ns_names(response, child)
        glue = section_addresses(response.additional)
        found = [address for name in names for address in glue.get(name, ())]
        if not found and depth > 0:
            for name in names[:SERVERS_TRIED_MAX]:
                found.extend(self._address_of(name, depth - 1))
                if found:
                    break
        if not found:
            raise ResolveError(f"no address for any name server of {child}", where=str(child))
        self._servers[child] = tuple(sorted(found, key=lambda address: ":" in address))

    def _locate(self, zone: dns.name.Name) -> None:
        """Follow referrals from the deepest known zone to ``zone`` (an anchor below the
        root); best effort: :meth:`ask` then says the zone has no known server."""
        for _ in range(REFERRALS_MAX):
            known = max((k for k in self._servers if zone.is_subdomain(k)), key=len)
            if known == zone:
                return
            try:
                response = self.ask(known, zone, dns.rdatatype.NS)
            except ResolveError:
                return
            cut = zone if ns_names(response, zone) else referral_cut(response, known)
            if cut is None or cut in self._servers:
                return
            try:
                self._learn(cut, response, ADDRESS_LOOKUP_DEPTH_MAX)
            except ResolveError:
                return

    def servers_for(self, name: dns.name.Name) -> tuple[dns.name.Name, tuple[str, ...]]:
        """The zone that answers for ``name`` and its servers' addresses, found by
        following referrals from the deepest zone known (the root at first), as a
        resolver does: the zone whose servers answer ``name`` TXT without a referral.

        Raises:
            ResolveError: no server on the way answered, or too many referrals.
        """
        for _ in range(REFERRALS_MAX):
            zone = max((known for known in self._servers if name.is_subdomain(known)), key=len)
            response = self.ask(zone, name, dns.rdatatype.TXT)
            cut = referral_cut(response, zone)
            if cut is None or not name.is_subdomain(cut) or cut in self._servers:
                return zone, self._servers[zone]
            self._learn(cut, response, ADDRESS_LOOKUP_DEPTH_MAX)
        raise ResolveError(f"more than {REFERRALS_MAX} referrals", where=name.to_text())

    def address_of(self, name: dns.name.Name) -> tuple[str, ...]:
        """``name``'s addresses, resolved from the root as a resolver would (best
        effort: none when it cannot be found)."""
        return tuple(self._address_of(name, ADDRESS_LOOKUP_DEPTH_MAX))

    def _address_of(self, name: dns.name.Name, depth: int) -> list[str]:
        """Resolve ``name``'s A/AAAA from the deepest zone known above it (best effort)."""
        for _ in range(REFERRALS_MAX):
            zone = max((known for known in self._servers if name.is_subdomain(known)), key=len)
            try:
                response = self.ask(zone, name, dns.rdatatype.A)
            except ResolveError:
                return []
            cut = referral_cut(response, zone)
            if cut is None:  # the zone's own answer: its A, then its AAAA (IPv6-only too)
                found = list(section_addresses(response.answer).get(name, ()))
                with contextlib.suppress(ResolveError):
                    response = self.ask(zone, name, dns.rdatatype.AAAA)
                    found += section_addresses(response.answer).get(name, ())
                return found
            try:
                self._learn(cut, response, depth)
            except ResolveError:
                return []
        return []


def ns_names(response: dns.message.Message, child: dns.name.Name) -> list[dns.name.Name]:
    for section in (response.answer, response.authority):
        for rrset in section:
            if rrset.name == child and rrset.rdtype == dns.rdatatype.NS:
                return [rdata.target for rdata in rrset]
    return []


def referral_cut(response: dns.message.Message, zone: dns.name.Name) -> dns.name.Name | None:
    """The cut a referral from ``zone`` points to, if ``response`` is one."""
    for rrset in response.authority:
        if (
            rrset.rdtype == dns.rdatatype.NS
            and rrset.name.is_subdomain(zone)
            and rrset.name != zone
        ):
            name: dns.name.Name = rrset.name
            return name
    return None


def section_addresses(section: list[dns.rrset.RRset]) -> dict[dns.name.Name, tuple[str, ...]]:
    found: dict[dns.name.Name, tuple[str, ...]] = {}
    for rrset in section:
        if rrset.rdtype in _ADDRESS_TYPES:
            found[rrset.name] = found.get(rrset.name, ()) + tuple(r.address for r in rrset)
    return found
