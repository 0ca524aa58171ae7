"""DANE for resolver endpoints (RFC 6698, RFC 7671): does the certificate an ``https``
endpoint presents match its DNSSEC-validated TLSA records?

The steps, each usable alone:

* :func:`lookup_tlsa`: the TLSA rrset at ``_<port>._tcp.<host>.``, validated from the
  trust anchors down the chain of trust (through any :class:`~alter_publish.dns.iterate.Asker`:
  iterative from the root hints, or one server);
* :func:`presented_certificate`: a TLS handshake (SNI = the host) and the leaf certificate;
* :func:`match_certificate`: the RFC 7671 rules on one leaf and a TLSA rrset;
* :func:`check_endpoint`: all three for a resolver URI, one :class:`DaneVerdict`.

What is supported: usage 3 (DANE-EE) with selectors 0 and 1 and matching types 0, 1
and 2. DANE-EE binds the key alone: the name in the certificate, its dates and its
issuer are not looked at (RFC 7671 section 5.1). Usages 0, 1 (PKIX-TA, PKIX-EE) and 2
(DANE-TA) need the presented chain and a PKIX path check, which this module does not
do: such records are *unusable* here (RFC 7671 section 4.1: a client ignores records it
does not support); an rrset of only those is ``unsupported``.
"""

from __future__ import annotations

import socket
import ssl
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import dns.exception
import dns.name
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from alter_publish.dns.anchors import TrustAnchor
from alter_publish.dns.chain import ChainWalker
from alter_publish.dns.hints import RootHints
from alter_publish.dns.iterate import Asker, IterativeAsker, ServerAsker, section_addresses
from alter_publish.dns.validation import DNSSECStatus, validate_dnskeys, validate_response
from alter_publish.errors import ResolveError
from alter_publish.format.tlsa import (
    DIGEST_OCTETS,
    Matching,
    Selector,
    TLSAData,
    Usage,
    data_for_certificate,
    tlsa_owner,
)

__all__ = [
    "BLOCKING_CATEGORIES",
    "DANE_CATEGORIES",
    "DNSLookup",
    "DaneLookup",
    "DaneVerdict",
    "TLSAAnswer",
    "check_endpoint",
    "lookup_from_root",
    "lookup_through",
    "lookup_tlsa",
    "match_certificate",
    "presented_certificate",
    "usable",
    "verify_endpoint",
]

DANE_TIMEOUT_SECONDS: Final = 5.0
HTTPS_PORT: Final = 443
#: Every verdict's category.
DANE_CATEGORIES: Final = (
    "match",  # a usable, validated TLSA record matches the presented certificate
    "mismatch",  # validated TLSA records, usable, none matches
    "no-tlsa",  # validated proof that there is no TLSA (or an IP-literal host)
    "insecure-tlsa",  # the TLSA answer is insecure (no DNSSEC on the way): not used
    "bogus-tlsa",  # the TLSA answer fails validation: RFC 7671 4.1 says do not connect
    "lookup-failed",  # the TLSA lookup got no usable answer
    "unreachable",  # validated TLSA, but no TLS handshake with the endpoint
    "unsupported",  # validated TLSA, none usable here (or not https)
)
#: The categories on which a client must not dispatch to the endpoint (RFC 7671 4.1:
#: a secure TLSA rrset must be matched; a bogus or failed lookup must not be ignored).
BLOCKING_CATEGORIES: Final = frozenset({"mismatch", "bogus-tlsa", "lookup-failed", "unreachable"})


@dataclass(frozen=True, slots=True)
class TLSAAnswer:
    """The TLSA rrset at ``owner`` and its DNSSEC status (records empty: none exist)."""

    owner: str
    status: DNSSECStatus
    records: tuple[TLSAData, ...]
    reason: str = ""


@dataclass(frozen=True, slots=True)
class DaneVerdict:
    """What DANE says of one endpoint.

    Attributes:
        host: the endpoint's host (as in the URI, lowercase, no trailing dot).
        port: its TCP port.
        category: one of :data:`DANE_CATEGORIES`.
        detail: one line saying why (never the URI's path, query or fragment).
        records: the TLSA rdatas found (validated or not).
        matched: the record that matched (``match`` only).
    """

    host: str
    port: int
    category: str
    detail: str
    records: tuple[TLSAData, ...] = ()
    matched: TLSAData | None = None

    @property
    def ok(self) -> bool:
        """True when the endpoint presented a certificate its TLSA vouches for."""
        return self.category == "match"

    @property
    def blocks_dispatch(self) -> bool:
        """True when a client must not send the user to this endpoint."""
        return self.category in BLOCKING_CATEGORIES

    def to_mapping(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "host": self.host,
            "port": self.port,
            "category": self.category,
            "detail": self.detail,
            "records": [record.to_text() for record in self.records],
            "matched": self.matched.to_text() if self.matched else None,
        }


class DaneLookup(Protocol):
    """What :func:`check_endpoint` asks the DNS: the validated TLSA rrset, the addresses."""

    def tlsa(self, host: str, port: int) -> TLSAAnswer:
        """The TLSA rrset of ``host:port``, validated.

        Raises:
            ResolveError: no usable answer.
        """
        ...

    def addresses(self, host: str) -> tuple[str, ...]:
        """Where ``host`` is (best effort: empty leaves it to the system resolver)."""
        ...


def _tlsa_records(response: Any, qname: dns.name.Name) -> tuple[TLSAData, ...]:
    found: list[TLSAData] = []
    for rrset in response.answer:
        if (
            rrset.name == qname
            and rrset.rdtype == dns.rdatatype.TLSA
            and rrset.rdclass == dns.rdataclass.IN
        ):
            found += (TLSAData(r.usage, r.selector, r.mtype, bytes(r.cert)) for r in rrset)
    return tuple(sorted(found))


def lookup_tlsa(
    asker: Asker, anchors: Sequence[TrustAnchor], host: str, port: int, *, now: int
) -> TLSAAnswer:
    """The TLSA rrset of ``host:port``, validated from ``anchors`` down the chain of
    trust (the walk :class:`~alter_publish.dns.chain.ChainWalker` does) to the zone that
    holds it, whose DNSKEYs then validate the answer (or the proof that there is none).

    Raises:
        ResolveError: a server on the way did not answer usably.
    """
    owner = tlsa_owner(host, port)
    qname = dns.name.from_text(owner)
    trust = ChainWalker(asker, tuple(anchors), now).trust_for(qname)
    if trust.status is DNSSECStatus.BOGUS:
        return TLSAAnswer(owner, trust.status, (), trust.reason)
    if trust.status is DNSSECStatus.INSECURE or trust.anchor is None:
        try:
            records = _tlsa_records(asker.ask(trust.zone, qname, dns.rdatatype.TLSA), qname)
        except ResolveError:
            records = ()
        return TLSAAnswer(owner, DNSSECStatus.INSECURE, records, trust.reason)
    response = asker.ask(trust.zone, qname, dns.rdatatype.TLSA)
    keys_response = asker.ask(trust.zone, trust.zone, dns.rdatatype.DNSKEY)
    keys_validation, dnskeys = validate_dnskeys(keys_response, trust.anchor, now=now)
    if dnskeys is None:
        return TLSAAnswer(owner, keys_validation.status, (), keys_validation.reason)
    validation = validate_response(
        response, qname, dns.rdatatype.TLSA, zone=trust.zone, dnskeys=dnskeys, now=now
    )
    return TLSAAnswer(owner, validation.status, _tlsa_records(response, qname), validation.reason)


@dataclass
class DNSLookup:
    """A :class:`DaneLookup` through ``asker`` (validating from ``anchors`` at ``now``)."""

    asker: Asker
    anchors: tuple[TrustAnchor, ...]
    now: int

    def tlsa(self, host: str, port: int) -> TLSAAnswer:
        """See :func:`lookup_tlsa`.

        Raises:
            ResolveError: no usable answer.
        """
        return lookup_tlsa(self.asker, self.anchors, host, port, now=self.now)

    def addresses(self, host: str) -> tuple[str, ...]:
        """``host``'s IPv4 and IPv6 addresses as the asker finds them (best effort)."""
        name = dns.name.from_text(host)
        if isinstance(self.asker, IterativeAsker):
            return self.asker.address_of(name)
        found: list[str] = []
        for rdtype in (dns.rdatatype.A, dns.rdatatype.AAAA):
            try:
                response = self.asker.ask(dns.name.root, name, rdtype)
            except ResolveError:
                continue
            found += section_addresses(response.answer).get(name, ())
        return tuple(found)


def lookup_from_root(
    hints: RootHints,
    anchors: Sequence[TrustAnchor],
    *,
    now: int,
    timeout: float,
    port: int = 53,
) -> DNSLookup:
    """A lookup that resolves iteratively from the root ``hints`` (servers on ``port``),
    as ``check`` and ``resolve`` without ``--server`` do."""
    return DNSLookup(IterativeAsker(hints, timeout, port), tuple(anchors), now)


def lookup_through(
    server: tuple[str, int],
    anchors: Sequence[TrustAnchor],
    *,
    now: int,
    timeout: float,
    recursive: bool,
) -> DNSLookup:
    """A lookup that asks one ``server`` everything (a recursive resolver, with CD set,
    or an authoritative server of every zone on the way), validating here."""
    return DNSLookup(ServerAsker(server, recursive, timeout), tuple(anchors), now)


def presented_certificate(
    host: str, port: int, *, timeout: float, address: str | None = None
) -> bytes:
    """The DER leaf certificate ``host:port`` presents in a TLS handshake (SNI ``host``),
    connecting to ``address`` when given. Nothing is sent after the handshake.

    Raises:
        ResolveError: no connection or no handshake within ``timeout``.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False  # DANE-EE: the TLSA record, not a CA, vouches
    context.verify_mode = ssl.CERT_NONE
    where = f"{host}:{port}"
    try:
        with (
            socket.create_connection((address or host, port), timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname=host) as tls,
        ):
            certificate = tls.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError) as exc:
        at = f" at {address}" if address else ""
        raise ResolveError(f"no TLS handshake{at}: {exc}", where=where) from exc
    if not certificate:
        raise ResolveError("the server presented no certificate", where=where)
    return certificate


def usable(record: TLSAData) -> bool:
    """True when this module can check ``record``: DANE-EE, a known selector and
    matching type, and data of the digest's length."""
    if record.usage != Usage.DANE_EE or record.selector not in (Selector.CERT, Selector.SPKI):
        return False
    if record.matching not in (Matching.FULL, Matching.SHA2_256, Matching.SHA2_512):
        return False
    octets = DIGEST_OCTETS.get(Matching(record.matching))
    return octets is None or len(record.data) == octets


def match_certificate(
    certificate_der: bytes, records: Sequence[TLSAData]
) -> tuple[str, TLSAData | None, str]:
    """RFC 7671 on a leaf certificate and a validated TLSA rrset: ``(category, matched
    record, detail)`` with category ``match``, ``mismatch`` or ``unsupported``."""
    candidates = [record for record in records if usable(record)]
    skipped = len(records) - len(candidates)
    note = f" ({skipped} record(s) of usage 0-2 or unknown types not checked)" if skipped else ""
    if not candidates:
        return "unsupported", None, f"no TLSA record usable here{note}: only 3 0|1 0|1|2 are"
    for record in candidates:
        try:
            data = data_for_certificate(certificate_der, record.selector, record.matching)
        except ValueError as exc:
            return "mismatch", None, f"the presented certificate does not parse: {exc}"
        if data == record.data:
            return "match", record, f"presented certificate matches TLSA {_short(record)}"
    spki = data_for_certificate(certificate_der, Selector.SPKI, Matching.SHA2_256)
    return (
        "mismatch",
        None,
        f"presented certificate (SPKI SHA-256 {spki.hex().upper()[:16]}...) matches none of "
        f"{len(candidates)} TLSA record(s){note}",
    )


def _short(record: TLSAData) -> str:
    text = record.to_text()
    return text if len(text) <= 40 else text[:37] + "..."


def verify_endpoint(
    host: str,
    port: int,
    answer: TLSAAnswer,
    *,
    timeout: float,
    address: str | None = None,
) -> DaneVerdict:
    """The verdict on ``host:port`` given its TLSA ``answer``: connects only when the
    answer is secure and holds records."""
    shown = host.lower().rstrip(".")
    if answer.status is DNSSECStatus.BOGUS:
        return DaneVerdict(shown, port, "bogus-tlsa", f"TLSA is bogus: {answer.reason}")
    if answer.status is DNSSECStatus.INSECURE:
        state = "exists" if answer.records else "is absent"
        return DaneVerdict(
            shown,
            port,
            "insecure-tlsa",
            f"TLSA {state}, insecure: {answer.reason}",
            answer.records,
        )
    if not answer.records:
        return DaneVerdict(shown, port, "no-tlsa", f"no TLSA at {answer.owner} (secure denial)")
    try:
        certificate = presented_certificate(shown, port, timeout=timeout, address=address)
    except ResolveError as exc:
        return DaneVerdict(shown, port, "unreachable", exc.what, answer.records)
    category, matched, detail = match_certificate(certificate, answer.records)
    return DaneVerdict(shown, port, category, detail, answer.records, matched)


def endpoint_of(url: str) -> tuple[str, int] | str:
    """``(host, port)`` of an ``https`` URI, or why DANE does not apply (never echoing
    the path, query or fragment)."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port or HTTPS_PORT
    except ValueError:
        return "not a URI with a valid host and port"
    if parts.scheme.lower() != "https":
        return f"the scheme is {parts.scheme or 'missing'}, not https: no TLS to check"
    if not parts.hostname:
        return "no host"
    return parts.hostname.lower().rstrip("."), port


def check_endpoint(
    url: str, lookup: DaneLookup, timeout: float = DANE_TIMEOUT_SECONDS
) -> DaneVerdict:
    """DANE for the endpoint of a resolver URI: look up its TLSA (validated), and when
    secure records exist, connect (to the host's addresses as ``lookup`` finds them)
    and match the presented certificate. Never raises: a failure is a category.

    ``verdict.blocks_dispatch`` is what a client checks before sending the user there.
    """
    endpoint = endpoint_of(url)
    if isinstance(endpoint, str):
        return DaneVerdict("", 0, "unsupported", endpoint)
    host, port = endpoint
    try:
        dns.name.from_text(host)
    except dns.exception.DNSException:
        return DaneVerdict(host, port, "no-tlsa", "the host is not a DNS name")
    if host.replace(".", "").isdigit() or ":" in host:
        return DaneVerdict(host, port, "no-tlsa", "an IP address has no TLSA records")
    try:
        answer = lookup.tlsa(host, port)
    except ResolveError as exc:
        return DaneVerdict(host, port, "lookup-failed", f"TLSA lookup failed: {exc}")
    address = None
    if answer.status is DNSSECStatus.SECURE and answer.records:
        found = lookup.addresses(host)
        address = found[0] if found else None
    return verify_endpoint(host, port, answer, timeout=timeout, address=address)
