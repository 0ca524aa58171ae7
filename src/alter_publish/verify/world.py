"""What the world sees of a zone: its parent's delegation (DS, NS, glue) at every parent
name server, and the zone at every address of every one of its name servers, over UDP
and TCP (``alter-publish check``).

Each finding has a stable ``code``, a ``severity`` and the ``server`` it came from:

- ``error``: the world sees something the zone owner did not publish, or cannot see
  what they did (a wrong DS, a lame server, records other than ``sign`` proved);
- ``converging``: a server still serves an older serial (it has not caught up yet);
- ``warning``: works, but worth knowing (NSEC lets anyone list every handle).

Servers are found from the root, as a resolver finds them (``locate``): the parent is
the zone whose servers refer to the zone; the zone's own name servers are the ones its
definition publishes. The chain of trust is walked from the trust anchor (``check_chain``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dns.dnssec
import dns.edns
import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from alter_publish.definition.model import ZoneSpec
from alter_publish.dns.anchors import TrustAnchor
from alter_publish.dns.chain import ChainWalker
from alter_publish.dns.hints import RootHints
from alter_publish.dns.iterate import (
    IterativeAsker,
    ns_names,
    referral_cut,
    section_addresses,
)
from alter_publish.dns.validation import DNSSECStatus
from alter_publish.errors import AlterError, ResolveError
from alter_publish.verify.proof import Expectation, prove_served

#: How long one question to one server may take.
WORLD_TIMEOUT_SECONDS = 3.0

SEVERITIES = ("error", "converging", "warning")

#: Every finding code, with its severity (docs/after-publishing.md explains each).
CODES: Mapping[str, str] = {
    "ds-missing": "error",
    "ds-mismatch": "error",
    "ds-retired": "error",
    "ds-stale": "warning",
    "ds-extra": "warning",
    "ds-not-built": "warning",
    "ds-unsigned-zone": "error",
    "parent-unreachable": "error",
    "ns-mismatch": "warning",
    "glue-mismatch": "error",
    "lame": "error",
    "unreachable": "error",
    "tcp-failed": "error",
    "serial-behind": "converging",
    "serial-ahead": "error",
    "records-differ": "error",
    "signatures-expiring": "warning",
    "signatures-expired": "error",
    "resolver-servfail": "error",
    "resolver-stale": "converging",
    "resolver-insecure": "error",
    "resolver-unreachable": "error",
    "nsec-walkable": "warning",
    "chain-bogus": "error",
    "chain-insecure": "error",
    "chain-unreachable": "error",
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing ``check`` found, from one server (None: the zone as a whole)."""

    code: str
    message: str
    server: str | None = None

    @property
    def severity(self) -> str:
        """``error``, ``converging`` or ``warning`` (see :data:`CODES`)."""
        return CODES[self.code]

    def to_mapping(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "code": self.code,
            "severity": self.severity,
            "server": self.server,
            "message": self.message,
        }

    def line(self, zone: str) -> str:
        """One line: ``zone: severity code at server: message``."""
        at = f" at {self.server}" if self.server else ""
        return f"{zone}: {self.severity} {self.code}{at}: {self.message}"


@dataclass(frozen=True, slots=True)
class Server:
    """A name server by name, with the addresses it was found at."""

    name: str
    addresses: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Expected:
    """What the zone owner published, as ``check`` compares it.

    Attributes:
        serial: the SOA serial ``sign`` last wrote (the state's).
        ds: DS rdata texts of the build's DS file (``key_tag alg digest_type digest``).
        retired: key tags of KSKs the key store has retired or removed.
        ns: the zone's name servers (absolute names).
        glue: in-zone name server name -> its addresses, as the zone publishes them.
        anchors: trust anchors the zone's answers validate to (its DS).
        expectations: handle-ref -> what was signed (as the loopback proof takes it).
    """

    serial: int
    ds: frozenset[str]
    retired: frozenset[int]
    ns: tuple[str, ...]
    glue: Mapping[str, frozenset[str]]
    anchors: tuple[TrustAnchor, ...] = ()
    expectations: Mapping[str, Expectation] = field(default_factory=dict)


def _query(
    server: str,
    qname: dns.name.Name | str,
    rdtype: dns.rdatatype.RdataType,
    *,
    port: int,
    tcp: bool = False,
    cd: bool = False,
    recursion: bool = False,
    timeout: float = WORLD_TIMEOUT_SECONDS,
) -> dns.message.Message:
    """One DO query (over TCP when asked or when the UDP reply is truncated).

    Raises:
        ResolveError: no answer in time, or the query failed.
    """
    name = dns.name.from_text(qname) if isinstance(qname, str) else qname
    query = dns.message.make_query(name, rdtype, want_dnssec=True, use_edns=0, payload=1232)
    if cd:
        query.flags |= dns.flags.CD
    if not recursion:
        query.flags &= ~dns.flags.RD
    where = f"{server}:{port}" if port != 53 else server
    try:
        if tcp:
            return dns.query.tcp(query, server, port=port, timeout=timeout)
        response = dns.query.udp(query, server, port=port, timeout=timeout)
        if response.flags & dns.flags.TC:
            return dns.query.tcp(query, server, port=port, timeout=timeout)
        return response
    except dns.exception.Timeout as exc:
        raise ResolveError(f"no answer within {timeout:g} s", where=where) from exc
    except (OSError, dns.exception.DNSException) as exc:
        raise ResolveError(f"query failed: {exc}", where=where) from exc


def _answer(
    response: dns.message.Message, name: dns.name.Name, rdtype: int
) -> dns.rrset.RRset | None:
    for rrset in response.answer:
        if rrset.name == name and rrset.rdtype == rdtype:
            return rrset
    return None


# --- finding the servers -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Located:
    """The zone's parent and both sides' name servers, as found from the root."""

    parent: str
    parent_servers: tuple[Server, ...]
    servers: tuple[Server, ...]


#: Zone cuts followed from the root at most.
REFERRALS_MAX = 16


def locate(
    zone: str,
    ns: Sequence[str],
    glue: Mapping[str, frozenset[str]],
    hints: RootHints,
    *,
    port: int = 53,
    timeout: float = WORLD_TIMEOUT_SECONDS,
) -> Located:
    """Find the parent zone of ``zone`` and its name servers by following referrals from
    the root (``hints``), as a resolver does; and the addresses of ``ns`` (the zone's
    own: in-zone ones at their ``glue``, others looked up from the root).

    Raises:
        ResolveError: no server on the way answers.
    """
    apex = dns.name.from_text(zone)
    asker = IterativeAsker(hints, timeout, port)
    level_zone = dns.name.root
    level = tuple(Server(name.to_text(), addresses) for name, addresses in hints.servers)
    for _ in range(REFERRALS_MAX):
        reply = _first_reply(level, apex, port=port, timeout=timeout)
        answered = reply.flags & dns.flags.AA and reply.answer  # it serves the zone itself
        cut = None if answered else referral_cut(reply, level_zone)
        if cut is None or cut == apex:
            break
        referred = section_addresses(reply.additional)
        level = tuple(
            Server(name.to_text(), referred.get(name) or asker.address_of(name))
            for name in sorted(ns_names(reply, cut))
        )
        level_zone = cut
    servers = tuple(
        Server(
            name,
            tuple(sorted(glue[name]))
            if name in glue
            else asker.address_of(dns.name.from_text(name)),
        )
        for name in ns
    )
    return Located(level_zone.to_text(), level, servers)


def _first_reply(
    servers: Sequence[Server], apex: dns.name.Name, *, port: int, timeout: float
) -> dns.message.Message:
    errors: list[str] = []
    for server in servers:
        for address in server.addresses:
            try:
                reply = _query(address, apex, dns.rdatatype.NS, port=port, timeout=timeout)
            except ResolveError as exc:
                errors.append(exc.what)
                continue
            if reply.rcode() in (dns.rcode.NOERROR, dns.rcode.NXDOMAIN):
                return reply
            errors.append(f"{address}: {dns.rcode.to_text(reply.rcode())}")
    raise ResolveError(
        f"no name server on the way from the root answered ({'; '.join(errors[:3])})",
        where=apex.to_text(),
    )


# --- the chain of trust ------------------------------------------------------------------


def check_chain(
    zone: str,
    anchors: tuple[TrustAnchor, ...],
    hints: RootHints,
    *,
    now: int,
    port: int = 53,
    timeout: float = WORLD_TIMEOUT_SECONDS,
) -> list[Finding]:
    """Walk the chain of trust from the closest anchor down to ``zone``'s keys, as a
    validating resolver does: it must be secure, and a broken link is named."""
    walker = ChainWalker(IterativeAsker(hints, timeout, port), anchors, now)
    try:
        trust = walker.trust_for(dns.name.from_text(zone))
    except ResolveError as exc:
        return [Finding("chain-unreachable", str(exc))]
    if trust.status is DNSSECStatus.SECURE and trust.zone == dns.name.from_text(zone):
        return []
    if trust.status is DNSSECStatus.BOGUS:
        return [Finding("chain-bogus", f"bogus from the trust anchor: {trust.reason}")]
    reason = trust.reason or f"the chain ends at {trust.zone}, above the zone"
    return [Finding("chain-insecure", f"insecure from the trust anchor: {reason}")]


# --- the parent ----------------------------------------------------------------------


def check_parent(
    zone: str, located: Located, expected: Expected, *, signed: bool, port: int = 53
) -> list[Finding]:
    """Ask every address of every parent name server for the zone's DS and delegation."""
    findings: list[Finding] = []
    apex = dns.name.from_text(zone)
    for server in located.parent_servers:
        if not server.addresses:
            findings.append(Finding("parent-unreachable", "no address found", server.name))
        for address in server.addresses:
            where = f"{server.name} ({address})"
            try:
                ds_reply = _query(address, apex, dns.rdatatype.DS, port=port)
                ns_reply = _query(address, apex, dns.rdatatype.NS, port=port)
            except ResolveError as exc:
                findings.append(Finding("parent-unreachable", exc.what, where))
                continue
            findings += _ds_findings(ds_reply, apex, expected, signed=signed, where=where)
            findings += _delegation_findings(ns_reply, apex, expected, where=where)
    return findings


def _ds_findings(
    reply: dns.message.Message, apex: dns.name.Name, expected: Expected, *, signed: bool, where: str
) -> list[Finding]:
    rrset = _answer(reply, apex, dns.rdatatype.DS)
    served = {_ds_text(rdata) for rdata in rrset} if rrset is not None else set()
    if not signed:
        if served:
            return [
                Finding(
                    "ds-unsigned-zone",
                    f"serves DS {sorted(served)} for an unsigned zone: "
                    "validating resolvers answer SERVFAIL",
                    where,
                )
            ]
        return []
    if not served:
        return [
            Finding(
                "ds-missing",
                "serves no DS: the zone is insecure for every validating resolver",
                where,
            )
        ]
    findings: list[Finding] = []
    matching = served & expected.ds
    for text in sorted(served - expected.ds):
        tag = int(text.split()[0])
        if tag in expected.retired:
            code = "ds-stale" if matching else "ds-retired"
            what = "still serves" if matching else "serves only"
            findings.append(Finding(code, f"{what} DS {text} of a retired KSK (tag {tag})", where))
        elif not matching:
            findings.append(
                Finding(
                    "ds-mismatch",
                    f"serves DS {text}, which matches no KSK of the zone "
                    f"(expected {' / '.join(sorted(expected.ds))})",
                    where,
                )
            )
        else:
            findings.append(
                Finding(
                    "ds-extra", f"also serves DS {text}, which matches no KSK of the zone", where
                )
            )
    if not matching and not findings:
        findings.append(Finding("ds-mismatch", "serves no DS of the zone's KSKs", where))
    missing = expected.ds - served
    if matching and missing:
        findings.append(
            Finding(
                "ds-not-built", f"does not serve DS {sorted(missing)} of the build's DS file", where
            )
        )
    return findings


def _ds_text(rdata: Any) -> str:
    return f"{rdata.key_tag} {rdata.algorithm} {rdata.digest_type} {rdata.digest.hex().upper()}"


def _delegation_findings(
    reply: dns.message.Message, apex: dns.name.Name, expected: Expected, *, where: str
) -> list[Finding]:
    """The parent's NS set (a referral: authority section) and its glue, against the
    zone's own."""
    rrsets = [*reply.answer, *reply.authority]
    ns = next((r for r in rrsets if r.name == apex and r.rdtype == dns.rdatatype.NS), None)
    if ns is None:
        return [Finding("ns-mismatch", "gives no NS records for the zone", where)]
    names = sorted(rdata.target.to_text() for rdata in ns)
    findings: list[Finding] = []
    if names != sorted(expected.ns):
        findings.append(
            Finding(
                "ns-mismatch",
                f"delegates to {', '.join(names)}; the zone says {', '.join(sorted(expected.ns))}",
                where,
            )
        )
    glue: dict[str, set[str]] = {}
    for rrset in reply.additional:
        if rrset.rdtype in (dns.rdatatype.A, dns.rdatatype.AAAA):
            glue.setdefault(rrset.name.to_text(), set()).update(r.address for r in rrset)
    for name, addresses in sorted(glue.items()):
        own = expected.glue.get(name)
        if own is not None and set(own) != addresses:
            findings.append(
                Finding(
                    "glue-mismatch",
                    f"glue for {name} is {', '.join(sorted(addresses))}; "
                    f"the zone says {', '.join(sorted(own))}",
                    where,
                )
            )
    return findings


# --- the zone's own servers ------------------------------------------------------------


def check_servers(
    spec: ZoneSpec, located: Located, expected: Expected, *, now: int, port: int = 53
) -> list[Finding]:
    """Ask every address of every name server of the zone, over UDP and TCP: the serial,
    the alter1 records handle by handle (validated to the zone's DS) and how long the
    signatures have left."""
    findings: list[Finding] = []
    apex = dns.name.from_text(spec.origin)
    for server in located.servers:
        if not server.addresses:
            findings.append(Finding("unreachable", "no address found for it", server.name))
        for address in server.addresses:
            where = f"{server.name} ({address})"
            findings += _check_address(
                spec, apex, address, expected, now=now, port=port, where=where
            )
    return findings


def _check_address(
    spec: ZoneSpec,
    apex: dns.name.Name,
    address: str,
    expected: Expected,
    *,
    now: int,
    port: int,
    where: str,
) -> list[Finding]:
    try:
        reply = _query(address, apex, dns.rdatatype.SOA, port=port)
    except ResolveError as exc:
        return [Finding("unreachable", exc.what, where)]
    soa = _answer(reply, apex, dns.rdatatype.SOA)
    if reply.rcode() != dns.rcode.NOERROR or soa is None or not reply.flags & dns.flags.AA:
        rcode = dns.rcode.to_text(reply.rcode())
        return [
            Finding(
                "lame",
                f"does not serve the zone (SOA query: {rcode}, "
                f"AA {'set' if reply.flags & dns.flags.AA else 'not set'})",
                where,
            )
        ]
    findings: list[Finding] = []
    try:
        _query(address, apex, dns.rdatatype.SOA, port=port, tcp=True)
    except ResolveError as exc:
        findings.append(Finding("tcp-failed", exc.what, where))
    serial = next(iter(soa)).serial
    findings += _signature_findings(reply, spec, now=now, where=where)
    if serial < expected.serial:
        return [
            *findings,
            Finding(
                "serial-behind", f"serves serial {serial}; sign wrote {expected.serial}", where
            ),
        ]
    if serial > expected.serial:
        return [
            *findings,
            Finding(
                "serial-ahead",
                f"serves serial {serial}, newer than the {expected.serial} sign wrote: "
                "another zone?",
                where,
            ),
        ]
    try:
        proof = prove_served(
            (address, port),
            spec,
            expected.expectations,
            now=now,
            anchors=expected.anchors,
            timeout=WORLD_TIMEOUT_SECONDS,
        )
    except AlterError as exc:
        return [*findings, Finding("unreachable", str(exc), where)]
    for result in proof.results:
        if not result.ok:
            findings.append(
                Finding(
                    "records-differ", f"{result.handle}: {result.category}: {result.detail}", where
                )
            )
    return findings


def _signature_findings(
    reply: dns.message.Message, spec: ZoneSpec, *, now: int, where: str
) -> list[Finding]:
    """The SOA's RRSIGs must have more than ``dnssec.refresh`` left (the re-signing
    interval: less means a missed run)."""
    if not spec.dnssec.enabled:
        return []
    left = [
        rdata.expiration - now
        for rrset in reply.answer
        if rrset.rdtype == dns.rdatatype.RRSIG
        for rdata in rrset
    ]
    if left and min(left) <= 0:
        return [Finding("signatures-expired", "the SOA's signature has expired: bogus", where)]
    if left and min(left) < spec.dnssec.refresh:
        days = min(left) / 86400
        return [
            Finding(
                "signatures-expiring",
                f"the SOA's signature expires in {days:.1f} days "
                f"(re-signing is due within {spec.dnssec.refresh // 86400} days)",
                where,
            )
        ]
    return []


# --- resolvers -------------------------------------------------------------------------


def check_resolvers(
    spec: ZoneSpec,
    resolvers: Iterable[tuple[str, int]],
    expected: Expected,
    *,
    now: int,
    anchors: tuple[TrustAnchor, ...],
    hints: RootHints,
) -> list[Finding]:
    """Through each recursive resolver: the zone's SOA answered, and (signed) validated
    (AD set; a SERVFAIL names the Extended DNS Error when the resolver gives one); then
    every handle resolved through it, validated from ``anchors`` and compared with what
    ``sign`` proved."""
    findings: list[Finding] = []
    apex = dns.name.from_text(spec.origin)
    signed = spec.dnssec.enabled
    for host, port in resolvers:
        where = f"resolver {host}:{port}"
        try:
            reply = _query(host, apex, dns.rdatatype.SOA, port=port, recursion=True)
        except ResolveError as exc:
            findings.append(Finding("resolver-unreachable", exc.what, where))
            continue
        if reply.rcode() == dns.rcode.SERVFAIL:
            errors = "; ".join(
                f"EDE {option.code}{': ' + option.text if option.text else ''}"
                for option in reply.extended_errors()
            )
            cause = f" ({errors})" if errors else ""
            findings.append(
                Finding("resolver-servfail", f"SERVFAIL{cause}: validation fails (bogus)", where)
            )
            continue
        if signed and not reply.flags & dns.flags.AD:
            findings.append(
                Finding(
                    "resolver-insecure",
                    "answers without AD: the zone does not validate as secure there "
                    "(no DS at the parent?)",
                    where,
                )
            )
            continue
        findings += _resolved_records(
            spec, (host, port), expected, now=now, anchors=anchors, hints=hints, where=where
        )
    return findings


def _resolved_records(
    spec: ZoneSpec,
    resolver: tuple[str, int],
    expected: Expected,
    *,
    now: int,
    anchors: tuple[TrustAnchor, ...],
    hints: RootHints,
    where: str,
) -> list[Finding]:
    """Every handle through ``resolver``, validated from the anchor down."""
    try:
        proof = prove_served(
            resolver,
            spec,
            expected.expectations,
            now=now,
            anchors=anchors,
            root_hints=hints,
            timeout=WORLD_TIMEOUT_SECONDS,
        )
    except AlterError as exc:
        return [Finding("resolver-unreachable", str(exc), where)]
    return [
        Finding("records-differ", f"{result.handle}: {result.category}: {result.detail}", where)
        for result in proof.results
        if not result.ok
    ]


def denial_findings(spec: ZoneSpec) -> list[Finding]:
    """NSEC lets anyone list every handle by walking the chain."""
    if spec.dnssec.enabled and spec.dnssec.denial == "nsec":
        return [
            Finding(
                "nsec-walkable",
                "the zone denies with NSEC: anyone can list every handle by walking the "
                "chain; NSEC3 (RFC 9276: 0 iterations, no salt) hides names",
            )
        ]
    return []


def parent_missing_ds(
    zone: str, located: Located, dnskeys: Sequence[Any], *, port: int = 53
) -> list[str]:
    """The parent servers (``name (address)``) that do not serve a DS for each of
    ``dnskeys`` (any digest type, recomputed from the key), or give no answer."""
    apex = dns.name.from_text(zone)
    missing: list[str] = []
    for server in located.parent_servers:
        for address in server.addresses or ("no address",):
            where = f"{server.name} ({address})"
            try:
                reply = _query(address, apex, dns.rdatatype.DS, port=port)
            except ResolveError:
                missing.append(where)
                continue
            rrset = _answer(reply, apex, dns.rdatatype.DS)
            served = list(rrset) if rrset is not None else []
            if not all(any(_ds_of(apex, key, ds) for ds in served) for key in dnskeys):
                missing.append(where)
    return missing


def _ds_of(apex: dns.name.Name, dnskey: Any, ds: Any) -> bool:
    """True when ``ds`` is a DS of ``dnskey`` (its digest type recomputed)."""
    try:
        return bool(dns.dnssec.make_ds(apex, dnskey, ds.digest_type) == ds)
    except (dns.exception.DNSException, ValueError):
        return False
