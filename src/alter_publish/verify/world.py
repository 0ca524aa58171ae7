"""What the world sees of a zone: its parent's delegation (DS, NS, glue) at every parent
name server, and the zone at every address of every one of its name servers, over UDP
and TCP (``alter-publish check``).

Each finding has a stable ``code``, a ``severity`` and the ``server`` it came from:

- ``error``: the world sees something the zone owner did not publish, or cannot see
  what they did (a wrong DS, a lame server, records other than ``sign`` proved);
- ``converging``: a server still serves an older serial (it has not caught up yet);
- ``warning``: works, but worth knowing (NSEC lets anyone list every handle);
- ``info``: checked and as it should be (a resolver endpoint's certificate matches its
  validated TLSA: ``dane-match``), said so that a check of DANE shows what it checked.

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
from dns.rdtypes.ANY.DNSKEY import DNSKEY
from dns.rdtypes.dsbase import DSBase

from alter_publish.definition.model import ZoneSpec
from alter_publish.dns.anchors import TrustAnchor
from alter_publish.dns.chain import ChainWalker
from alter_publish.dns.hints import RootHints
from alter_publish.dns.iterate import (
    REFERRALS_MAX,
    SERVERS_TRIED_MAX,
    IterativeAsker,
    ask_server,
    ns_names,
    referral_cut,
    section_addresses,
)
from alter_publish.dns.validation import DNSSECStatus
from alter_publish.errors import AlterError, ResolveError
from alter_publish.format.logrecord import log_record_owner
from alter_publish.verify.logserved import LOG_CHECKPOINT_DIFFERS, served_log_problem
from alter_publish.verify.proof import Expectation, ProofReport, prove_served

#: How long one try of a question to one server may take (two tries over UDP).
WORLD_TIMEOUT_SECONDS = 2.0

SEVERITIES = ("error", "converging", "warning", "info")

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
    "ttl-beyond-signature": "warning",
    "cds-mismatch": "error",
    "cdnskey-mismatch": "error",
    "resolver-servfail": "error",
    "resolver-stale": "converging",
    "resolver-insecure": "error",
    "resolver-unreachable": "error",
    "nsec-walkable": "warning",
    "chain-bogus": "error",
    "chain-insecure": "error",
    "chain-unreachable": "error",
    "ipv6-unreachable": "warning",
    "dane-match": "info",
    "dane-mismatch": "error",
    "dane-unreachable": "error",
    "dane-tlsa-bogus": "error",
    "dane-tlsa-missing": "error",
    "dane-tlsa-insecure": "error",
    "dane-tlsa-differs": "error",
    "dane-lookup-failed": "error",
    "dane-unsupported": "warning",
    LOG_CHECKPOINT_DIFFERS: "error",
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


def ds_text(rdata: DSBase) -> str:
    """A DS (or CDS) rdata as the checks compare and print it:
    ``key_tag algorithm digest_type DIGEST`` (hex digest in capitals)."""
    return f"{rdata.key_tag} {rdata.algorithm} {rdata.digest_type} {rdata.digest.hex().upper()}"


def proof_findings(proof: ProofReport, where: str) -> list[Finding]:
    """``records-differ`` for each handle a proof at ``where`` did not verify."""
    return [
        Finding("records-differ", f"{result.handle}: {result.category}: {result.detail}", where)
        for result in proof.results
        if not result.ok
    ]


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
        ksks: the KSKs whose DS the parent should serve (those of the build's DS file).
        retired: KSKs the key store has retired or removed (their DS should go).
        ns: the zone's name servers (absolute names).
        glue: in-zone name server name -> its addresses, as the zone publishes them.
        anchors: trust anchors the zone's answers validate to (its DS).
        expectations: handle-ref -> what was signed (as the loopback proof takes it).
        log_checkpoint: the log-signed checkpoint note the ``_alter-log`` record holds
            (None: the zone publishes no log).
    """

    serial: int
    ds: frozenset[str]
    ksks: tuple[DNSKEY, ...]
    retired: tuple[DNSKEY, ...]
    ns: tuple[str, ...]
    glue: Mapping[str, frozenset[str]]
    anchors: tuple[TrustAnchor, ...] = ()
    expectations: Mapping[str, Expectation] = field(default_factory=dict)
    log_checkpoint: str | None = None


class SkippedError(ResolveError):
    """An IPv6 address not asked: IPv6 does not work from this host."""


@dataclass
class Prober:
    """How ``check`` asks name servers: one port, one timeout (two tries over UDP each);
    IPv6 addresses are skipped, with one warning, once the first IPv6 address asked has
    not answered and none has (a host without an IPv6 path would otherwise wait out the
    timeout at every IPv6 address of every server and report each as an error)."""

    port: int = 53
    timeout: float = WORLD_TIMEOUT_SECONDS
    ipv6_answered: bool = False
    ipv6_failure: str | None = None

    def ask(
        self,
        address: str,
        qname: dns.name.Name,
        rdtype: dns.rdatatype.RdataType,
        *,
        tcp: bool = False,
    ) -> dns.message.Message:
        """One DO question, RD clear (over TCP with ``tcp``, or when truncated).

        Raises:
            ResolveError: no answer in time, or the query failed (``SkippedError``: an
                IPv6 address not asked, or the first IPv6 failure).
        """
        ipv6 = ":" in address
        if ipv6 and self.ipv6_failure is not None and not self.ipv6_answered:
            raise SkippedError("IPv6 does not work from here", where=address)
        try:
            reply = ask_server((address, self.port), qname, rdtype, timeout=self.timeout, tcp=tcp)
        except ResolveError as exc:
            if ipv6 and not self.ipv6_answered:
                self.ipv6_failure = f"{address}: {exc.what}"
                raise SkippedError(exc.what, where=address) from exc
            raise
        self.ipv6_answered = self.ipv6_answered or ipv6
        return reply

    def findings(self) -> list[Finding]:
        """The one warning for IPv6 addresses not checked."""
        if self.ipv6_failure is None or self.ipv6_answered:
            return []
        return [
            Finding(
                "ipv6-unreachable",
                f"no IPv6 address answered from here ({self.ipv6_failure}): IPv6 addresses "
                "were not checked; run check from a host with IPv6",
            )
        ]


def answer_of(
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


def locate(
    zone: str,
    ns: Sequence[str],
    glue: Mapping[str, frozenset[str]],
    hints: RootHints,
    prober: Prober,
    *,
    zone_servers: bool = True,
) -> Located:
    """Find the parent zone of ``zone`` and its name servers by following referrals from
    the root (``hints``), as a resolver does; and (``zone_servers``) the addresses of
    the zone's name servers: ``ns`` (the zone's own; in-zone ones at their ``glue``) and
    any other the parent names (at its glue), others looked up from the root.

    Raises:
        ResolveError: no server on the way answers.
    """
    apex = dns.name.from_text(zone)
    asker = IterativeAsker(hints, prober.timeout, prober.port)
    level_zone = dns.name.root
    level = tuple(Server(name.to_text(), addresses) for name, addresses in hints.servers)
    referred: dict[dns.name.Name, tuple[str, ...]] = {}
    parent_ns: list[dns.name.Name] = []
    for _ in range(REFERRALS_MAX):
        reply = _first_reply(level, apex, prober)
        answered = reply.flags & dns.flags.AA and reply.answer  # it serves the zone itself
        cut = None if answered else referral_cut(reply, level_zone)
        referred = section_addresses(reply.additional)
        if cut is None or cut == apex:
            parent_ns = ns_names(reply, apex)
            if cut == apex:  # these servers may serve a zone below level_zone too
                level_zone = _zone_of_delegation(level, apex, prober) or level_zone
            break
        level = tuple(
            Server(name.to_text(), referred.get(name) or asker.address_of(name))
            for name in sorted(ns_names(reply, cut))
        )
        level_zone = cut
    own = [dns.name.from_text(name) for name in ns]
    names = [*own, *sorted(name for name in parent_ns if name not in own)] if zone_servers else []
    servers = tuple(
        Server(name.to_text(), _addresses_of(name, glue, referred, asker)) for name in names
    )
    return Located(level_zone.to_text(), level, servers)


def _addresses_of(
    name: dns.name.Name,
    glue: Mapping[str, frozenset[str]],
    referred: Mapping[dns.name.Name, tuple[str, ...]],
    asker: IterativeAsker,
) -> tuple[str, ...]:
    """The zone's own address records for an in-zone name server, else the parent's
    glue, else a lookup from the root."""
    text = name.to_text().lower()
    if text in glue:
        return tuple(sorted(glue[text]))
    return referred.get(name) or asker.address_of(name)


def _zone_of_delegation(
    servers: Sequence[Server], apex: dns.name.Name, prober: Prober
) -> dns.name.Name | None:
    """The zone ``servers`` hold ``apex``'s delegation in: the zone of their answer to
    ``apex DS`` (its SOA when they have none, else its signer). One server set may serve
    the grandparent and the parent; the zone that referred to them is then not the parent.
    """
    try:
        reply = _first_reply(servers, apex, prober, dns.rdatatype.DS)
    except ResolveError:
        return None
    if not reply.flags & dns.flags.AA:
        return None
    for rrset in reply.authority:
        if (
            rrset.rdtype == dns.rdatatype.SOA
            and apex.is_subdomain(rrset.name)
            and rrset.name != apex
        ):
            return rrset.name
    for rrset in reply.answer:
        if rrset.rdtype == dns.rdatatype.RRSIG and rrset.name == apex:
            signer: dns.name.Name = next(iter(rrset)).signer
            if signer != apex:
                return signer
    return None


def _first_reply(
    servers: Sequence[Server],
    apex: dns.name.Name,
    prober: Prober,
    rdtype: dns.rdatatype.RdataType = dns.rdatatype.NS,
) -> dns.message.Message:
    """The first usable answer of a few of ``servers`` to ``apex NS`` (or ``rdtype``).

    Raises:
        ResolveError: none of them answered.
    """
    errors: list[str] = []
    for server in servers[:SERVERS_TRIED_MAX]:
        for address in server.addresses:
            try:
                reply = prober.ask(address, apex, rdtype)
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
    prober: Prober,
    *,
    now: int,
) -> list[Finding]:
    """Walk the chain of trust from the closest anchor down to ``zone``'s keys, as a
    validating resolver does: it must be secure, and a broken link is named."""
    walker = ChainWalker(IterativeAsker(hints, prober.timeout, prober.port), anchors, now)
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


# --- the zone's own servers ------------------------------------------------------------


def check_servers(
    spec: ZoneSpec, located: Located, expected: Expected, prober: Prober, *, now: int
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
            findings += _check_address(spec, apex, address, expected, prober, now=now, where=where)
    return findings


def _check_address(
    spec: ZoneSpec,
    apex: dns.name.Name,
    address: str,
    expected: Expected,
    prober: Prober,
    *,
    now: int,
    where: str,
) -> list[Finding]:
    try:
        reply = prober.ask(address, apex, dns.rdatatype.SOA)
    except SkippedError:
        return []
    except ResolveError as exc:
        return [Finding("unreachable", exc.what, where)]
    soa = answer_of(reply, apex, dns.rdatatype.SOA)
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
        prober.ask(address, apex, dns.rdatatype.SOA, tcp=True)
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
    findings += _cds_findings(apex, address, expected, prober, where=where)
    if expected.log_checkpoint is not None:
        owner = log_record_owner(spec.origin)
        try:
            reply = prober.ask(address, dns.name.from_text(owner), dns.rdatatype.TXT)
        except ResolveError as exc:
            return [*findings, Finding("unreachable", exc.what, where)]
        if problem := served_log_problem(reply, owner, expected.log_checkpoint):
            findings.append(Finding(LOG_CHECKPOINT_DIFFERS, problem, where))
    try:
        proof = prove_served(
            (address, prober.port),
            spec,
            expected.expectations,
            now=now,
            anchors=expected.anchors,
            timeout=prober.timeout,
        )
    except AlterError as exc:
        return [*findings, Finding("unreachable", str(exc), where)]
    return [*findings, *proof_findings(proof, where)]


def _cds_findings(
    apex: dns.name.Name, address: str, expected: Expected, prober: Prober, *, where: str
) -> list[Finding]:
    """A CDS or CDNSKEY set (published during a KSK rollover, RFC 7344) must name the
    keys of the DS set ``sign`` wrote: a parent that polls either would otherwise
    install something else."""
    findings: list[Finding] = []
    wrote = " / ".join(sorted(expected.ds))
    rrset = _apex_rrset(apex, address, dns.rdatatype.CDS, prober)
    if rrset is not None:
        served = {ds_text(rdata) for rdata in rrset}
        if served != set(expected.ds):
            listed = " / ".join(sorted(served))
            message = f"serves CDS {listed}; sign wrote the DS set {wrote}"
            findings.append(Finding("cds-mismatch", message, where))
    rrset = _apex_rrset(apex, address, dns.rdatatype.CDNSKEY, prober)
    if rrset is not None:
        keys = {_key_material(rdata) for rdata in rrset}
        if keys != {_key_material(key) for key in expected.ksks}:
            tags = " / ".join(sorted(_key_label(rdata) for rdata in rrset))
            message = f"serves CDNSKEY {tags}; sign wrote the DS set {wrote}"
            findings.append(Finding("cdnskey-mismatch", message, where))
    return findings


def _apex_rrset(
    apex: dns.name.Name, address: str, rdtype: dns.rdatatype.RdataType, prober: Prober
) -> dns.rrset.RRset | None:
    try:
        reply = prober.ask(address, apex, rdtype)
    except ResolveError:
        return None
    return answer_of(reply, apex, rdtype)


def _key_material(rdata: Any) -> tuple[int, int, int, bytes]:
    """A DNSKEY or CDNSKEY as the key it is (flags, protocol, algorithm, key)."""
    return (rdata.flags, rdata.protocol, int(rdata.algorithm), bytes(rdata.key))


def _key_label(rdata: Any) -> str:
    """``tag N algorithm A`` for a (C)DNSKEY; the RFC 8078 delete request by name."""
    if int(rdata.algorithm) == 0:
        return "delete (algorithm 0)"
    return f"tag {dns.dnssec.key_id(rdata)} algorithm {int(rdata.algorithm)}"


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
    timeout: float = WORLD_TIMEOUT_SECONDS,
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
            reply = ask_server(
                (host, port), apex, dns.rdatatype.SOA, timeout=timeout, recursion=True
            )
        except ResolveError as exc:
            findings.append(Finding("resolver-unreachable", exc.what, where))
            continue
        if reply.rcode() == dns.rcode.SERVFAIL:
            errors = "; ".join(option.to_text() for option in reply.extended_errors())
            cause = f" ({errors})" if errors else ""
            verdict = ": validation fails (bogus)" if signed else ""
            findings.append(Finding("resolver-servfail", f"SERVFAIL{cause}{verdict}", where))
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
            spec,
            (host, port),
            expected,
            now=now,
            anchors=anchors,
            hints=hints,
            where=where,
            timeout=timeout,
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
    timeout: float,
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
            timeout=timeout,
        )
    except AlterError as exc:
        return [Finding("resolver-unreachable", str(exc), where)]
    return proof_findings(proof, where)


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
