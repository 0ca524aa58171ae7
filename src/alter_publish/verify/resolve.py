"""Resolve a handle (spec section 7): query TXT with DO -> DNSSEC validation to a trust
anchor -> alter1 records -> revocations -> verify each envelope -> select the highest
valid epoch.

A :class:`StubResolver` asks one server directly (the loopback proof's server, or
``--server``) and validates what it gets with :mod:`alter_publish.dns.validation`: the
zone's DNSKEY rrset against the trust anchor (fetched once per zone and cached),
then the TXT answer or its NSEC/NSEC3 denial against those keys.

When the answer is signed by a zone below the closest anchor (a root anchor, say),
the chain of trust down to that zone is walked by :class:`~alter_publish.dns.chain.ChainWalker`:
through the server itself when it is a recursive resolver (RA set) or authoritative
for the anchor's zone, else iteratively from ``root_hints``. The server's own DNSKEY
rrset must then match the DS the parent serves.

Recursive resolvers: a SERVFAIL is ``bogus`` (with the resolver's Extended DNS Error,
and the verdict of the answer asked again with CD set and validated here); a secure
answer the resolver did not mark AD carries a ``warning``. The verdict is always the
local one: an answer the resolver marks AD but that validates ``insecure`` here is
``insecure``.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field

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

from alter_publish.dns import client
from alter_publish.dns.anchors import TrustAnchor, anchor_for
from alter_publish.dns.chain import ChainWalker, ZoneTrust
from alter_publish.dns.hints import RootHints
from alter_publish.dns.iterate import (
    DNS_PORT,
    Asker,
    IterativeAsker,
    ServerAsker,
    ask_server,
    is_recursive,
)
from alter_publish.dns.validation import (
    DNSSECStatus,
    Validation,
    signer_of,
    validate_dnskeys,
    validate_response,
)
from alter_publish.dns.wire import EDNS_PAYLOAD_OCTETS
from alter_publish.dns.zonetext import txt_text
from alter_publish.errors import ResolveError, VerificationError
from alter_publish.format.envelope import (
    Envelope,
    Revocation,
    parse_record,
    verify_envelope,
)
from alter_publish.format.handles import AlterURI, Handle

__all__ = [
    "Answer",
    "Candidate",
    "DNSSECStatus",
    "Resolution",
    "StubResolver",
    "query_txt",
    "resolve",
    "resolve_answer",
    "select_envelope",
]

DEFAULT_TIMEOUT_SECONDS = 3.0
#: The warning on a secure answer from a recursive resolver that did not set AD.
NO_AD_WARNING = (
    "validates here, but the resolver did not set AD: it does not validate, "
    "or does not reach this answer from its trust anchor"
)
_LENIENT_H = re.compile(r"(?:^|;)\s*h\s*=\s*([^;\s]+)")
_LENIENT_E = re.compile(r"(?:^|;)\s*e\s*=\s*([0-9]{1,10})\s*(?:;|$)")


@dataclass(frozen=True, slots=True)
class Answer:
    """The TXT answer at an owner name: record texts (strings joined) and how it was had."""

    owner: str
    texts: tuple[str, ...]
    rcode: str
    transport: str
    dnssec: DNSSECStatus
    reason: str = ""
    warning: str = ""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One alter1 record at the owner that names the handle, and what its verification said."""

    text: str
    epoch: int
    category: str | None
    detail: str


@dataclass(frozen=True, slots=True)
class Resolution:
    """The outcome of resolving one handle.

    ``envelope`` is set only when ``category`` is None (success).
    """

    handle: Handle
    owner: str
    dnssec: DNSSECStatus
    envelope: Envelope | None
    category: str | None
    detail: str
    candidates: tuple[Candidate, ...] = ()
    warning: str = ""

    @property
    def ok(self) -> bool:
        """True when a valid envelope was selected."""
        return self.category is None and self.envelope is not None


@dataclass
class StubResolver:
    """Queries one server with DO set and validates answers to the configured trust anchors.

    Owners under no anchor are ``insecure``. DNSKEY answers are validated once per zone
    and reused, so a proof over many handles fetches each zone's keys once. Questions
    are sent with RD set (ignored by authoritative servers; a recursive resolver answers
    only then). ``root_hints`` (servers on ``hints_port``) are where the chain of trust is
    walked from when the server is neither recursive nor authoritative for the anchor.
    """

    server: tuple[str, int]
    now: int
    anchors: Sequence[TrustAnchor] = ()
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    root_hints: RootHints | None = None
    hints_port: int = DNS_PORT
    _walker: ChainWalker | None = field(default=None, repr=False)
    _keys: dict[dns.name.Name, tuple[Validation, dns.rrset.RRset | None]] = field(
        default_factory=dict, repr=False
    )
    _socket: socket.socket | None = field(default=None, repr=False)

    def __enter__(self) -> StubResolver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the UDP socket reused across queries (a new one opens on the next query)."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def _udp_socket(self) -> socket.socket:
        # One socket for every query of a run: a socket per query costs more than the query.
        if self._socket is None:
            self._socket = client.udp_socket(self.server)
        return self._socket

    def exchange(
        self, qname: dns.name.Name, rdtype: dns.rdatatype.RdataType, *, where: str
    ) -> tuple[dns.message.Message, str]:
        """Ask one DO question (the one-query case of :meth:`exchange_many`).

        Returns:
            ``(response, transport)``.

        Raises:
            ResolveError: no answer in time, an unusable reply, or an rcode other than
                NOERROR/NXDOMAIN.
        """
        (result,) = self.exchange_many([qname], rdtype)
        if isinstance(result, ResolveError):
            raise ResolveError(result.what, where=where) from result
        return result

    def _timeout(self, where: str) -> ResolveError:
        host, port = self.server
        return ResolveError(f"no answer from {host}:{port} within {self.timeout:g} s", where=where)

    def _usable(self, response: dns.message.Message, where: str) -> dns.message.Message:
        rcode = response.rcode()
        if rcode == dns.rcode.SERVFAIL and is_recursive(response):
            return response  # a resolver's verdict: judged by _answer
        if rcode not in (dns.rcode.NOERROR, dns.rcode.NXDOMAIN):
            host, port = self.server
            raise ResolveError(f"{host}:{port} answered {dns.rcode.to_text(rcode)}", where=where)
        return response

    def _exchange_tcp(self, query: dns.message.Message, *, where: str) -> dns.message.Message:
        host, port = self.server
        try:
            response = dns.query.tcp(query, host, port=port, timeout=self.timeout)
        except dns.exception.Timeout as exc:
            raise self._timeout(where) from exc
        except (OSError, dns.exception.DNSException) as exc:
            raise ResolveError(f"query to {host}:{port} failed: {exc}", where=where) from exc
        return self._usable(response, where)

    def exchange_many(
        self, names: Sequence[dns.name.Name], rdtype: dns.rdatatype.RdataType
    ) -> list[tuple[dns.message.Message, str] | ResolveError]:
        """Ask many questions with the pipelined client (:mod:`alter_publish.dns.client`):
        one UDP socket, up to ``PIPELINE_WINDOW`` in flight, each sent again once if
        unanswered after ``timeout``; a truncated reply is asked again over TCP.

        Returns:
            Per name, in the order of ``names``, ``(response, transport)`` or the
            :class:`ResolveError` it met.
        """
        questions = [client.question_wire(name.to_digestable(), rdtype) for name in names]
        try:
            replies = client.exchange_many(
                self._udp_socket(), questions, timeout=self.timeout, recursion_desired=True
            )
        except OSError as exc:
            host, port = self.server
            error = ResolveError(f"query to {host}:{port} failed: {exc}", where=f"{host}:{port}")
            return [error for _ in names]
        return [
            self._response(name, rdtype, reply) for name, reply in zip(names, replies, strict=True)
        ]

    def _response(
        self, name: dns.name.Name, rdtype: dns.rdatatype.RdataType, reply: bytes | None
    ) -> tuple[dns.message.Message, str] | ResolveError:
        where = name.to_text()
        if reply is None:
            return self._timeout(where)
        try:
            response = dns.message.from_wire(reply, ignore_trailing=False)
            if response.flags & dns.flags.TC:
                return self._exchange_tcp(_make_query(name, rdtype), where=where), "tcp"
            return self._usable(response, where), "udp"
        except ResolveError as exc:
            return exc
        except dns.exception.DNSException as exc:
            host, port = self.server
            return ResolveError(f"unusable reply from {host}:{port}: {exc}", where=where)

    def zone_keys(self, anchor: TrustAnchor) -> tuple[Validation, dns.rrset.RRset | None]:
        """The anchor zone's DNSKEY rrset, validated against the anchor (cached).

        Raises:
            ResolveError: the DNSKEY query failed.
        """
        cached = self._keys.get(anchor.zone)
        if cached is None:
            response, _ = self.exchange(
                anchor.zone, dns.rdatatype.DNSKEY, where=anchor.zone.to_text()
            )
            if response.rcode() == dns.rcode.SERVFAIL:  # a resolver: ask for the data itself
                response = self._usable(self._ask_cd(anchor.zone, dns.rdatatype.DNSKEY), "")
            cached = validate_dnskeys(response, anchor, now=self.now)
            self._keys[anchor.zone] = cached
        return cached

    def query_txt(self, owner: str) -> Answer:
        """The TXT rrset at ``owner`` with its DNSSEC status.

        Raises:
            ResolveError: the server did not answer usably.
        """
        name = dns.name.from_text(owner)
        response, transport = self.exchange(name, dns.rdatatype.TXT, where=owner)
        return self._answer(owner, name, response, transport)

    def query_txt_many(self, owners: Sequence[str]) -> list[Answer | ResolveError]:
        """:meth:`query_txt` for many owners at once, pipelined (see :meth:`exchange_many`).

        Returns:
            Per owner, its answer or the :class:`ResolveError` it met.

        Raises:
            ResolveError: the DNSKEY query of an anchored zone failed.
        """
        names = [dns.name.from_text(owner) for owner in owners]
        answers: list[Answer | ResolveError] = []
        for owner, name, result in zip(
            owners, names, self.exchange_many(names, dns.rdatatype.TXT), strict=True
        ):
            if isinstance(result, ResolveError):
                answers.append(result)
            else:
                answers.append(self._answer(owner, name, *result))
        return answers

    def _answer(
        self, owner: str, name: dns.name.Name, response: dns.message.Message, transport: str
    ) -> Answer:
        if response.rcode() == dns.rcode.SERVFAIL:
            reason = self._servfail_reason(name, response)
            return Answer(owner, (), "SERVFAIL", transport, DNSSECStatus.BOGUS, reason)
        texts: list[str] = []
        for rrset in response.answer:
            # Only what validation looks at: class IN TXT at the owner itself.
            if (
                rrset.name == name
                and rrset.rdtype == dns.rdatatype.TXT
                and rrset.rdclass == dns.rdataclass.IN
            ):
                texts.extend(txt_text(rdata.strings) for rdata in rrset)
        validation = self.validate(response, name)
        unmarked = (
            is_recursive(response)
            and validation.status is DNSSECStatus.SECURE
            and not response.flags & dns.flags.AD
        )
        return Answer(
            owner=owner,
            texts=tuple(texts),
            rcode=dns.rcode.to_text(response.rcode()),
            transport=transport,
            dnssec=validation.status,
            reason=validation.reason,
            warning=NO_AD_WARNING if unmarked else "",
        )

    def _servfail_reason(self, name: dns.name.Name, response: dns.message.Message) -> str:
        """Why a recursive resolver's SERVFAIL is bogus: its Extended DNS Errors, and the
        answer asked again with CD set, validated here."""
        host, port = self.server
        errors = "; ".join(option.to_text() for option in response.extended_errors())
        reason = f"resolver {host}:{port} answered SERVFAIL" + (f" ({errors})" if errors else "")
        try:
            checked = self._ask_cd(name, dns.rdatatype.TXT)
        except ResolveError as exc:
            return f"{reason}; asked with CD set: {exc.what}"
        if checked.rcode() not in (dns.rcode.NOERROR, dns.rcode.NXDOMAIN):
            return f"{reason}; with CD set it answered {dns.rcode.to_text(checked.rcode())}"
        local = self.validate(checked, name)
        return f"{reason}; with CD set the answer is {local.status} here" + (
            f": {local.reason}" if local.reason else ""
        )

    def _ask_cd(self, name: dns.name.Name, rdtype: dns.rdatatype.RdataType) -> dns.message.Message:
        return ask_server(
            self.server, name, rdtype, timeout=self.timeout, recursion=True, checking_disabled=True
        )

    def validate(self, response: dns.message.Message, name: dns.name.Name) -> Validation:
        """DNSSEC status of a TXT response for ``name``, from the closest trust anchor.

        Raises:
            ResolveError: a query on the chain of trust failed.
        """
        anchor = anchor_for(self.anchors, name)
        if anchor is None:
            return Validation(DNSSECStatus.INSECURE, "no trust anchor covers this name")
        signer = signer_of(response, name)
        target = name if signer is None else signer
        if target == anchor.zone or not target.is_subdomain(anchor.zone):
            zone, trusted = anchor.zone, anchor
        else:
            trust = self.chain(anchor).trust_for(target)
            if trust.status is not DNSSECStatus.SECURE or trust.anchor is None:
                return Validation(trust.status, trust.reason)
            if signer is not None and trust.zone != signer:
                return Validation(
                    DNSSECStatus.BOGUS,
                    f"answer signed by {signer}, not a zone cut"
                    f" (the chain from {anchor.zone} ends at {trust.zone})",
                )
            zone, trusted = trust.zone, trust.anchor
        keys_validation, dnskeys = self.zone_keys(trusted)
        if dnskeys is None:
            return keys_validation
        return validate_response(
            response, name, dns.rdatatype.TXT, zone=zone, dnskeys=dnskeys, now=self.now
        )

    def zone_trust(self, zone: dns.name.Name) -> ZoneTrust:
        """The chain of trust from the closest anchor down to ``zone`` (see
        :class:`~alter_publish.dns.chain.ChainWalker`); ``anchor`` of a secure result is
        what :meth:`zone_keys` checks this server's DNSKEY rrset against.

        Raises:
            ResolveError: a query on the chain of trust failed.
        """
        anchor = anchor_for(self.anchors, zone)
        if anchor is None:
            return ZoneTrust(zone, DNSSECStatus.INSECURE, "no trust anchor covers this name")
        if anchor.zone == zone:
            return ZoneTrust(zone, DNSSECStatus.SECURE, "", anchor)
        return self.chain(anchor).trust_for(zone)

    def chain(self, anchor: TrustAnchor) -> ChainWalker:
        """The chain walker (made on first use, by asking the server about
        ``anchor.zone`` whether it is recursive or authoritative for it).

        Raises:
            ResolveError: the server did not answer that question.
        """
        if self._walker is None:
            self._walker = ChainWalker(self._asker(anchor.zone), tuple(self.anchors), self.now)
        return self._walker

    def _asker(self, zone: dns.name.Name) -> Asker:
        probe = ask_server(
            self.server, zone, dns.rdatatype.SOA, timeout=self.timeout, recursion=True
        )
        if is_recursive(probe):
            return ServerAsker(self.server, recursive=True, timeout=self.timeout)
        authoritative = probe.rcode() == dns.rcode.NOERROR and probe.flags & dns.flags.AA
        if authoritative or self.root_hints is None:
            return ServerAsker(self.server, recursive=False, timeout=self.timeout)
        return IterativeAsker(self.root_hints, self.timeout, self.hints_port)


def _make_query(qname: dns.name.Name, rdtype: dns.rdatatype.RdataType) -> dns.message.Message:
    query = dns.message.make_query(
        qname, rdtype, want_dnssec=True, use_edns=0, payload=EDNS_PAYLOAD_OCTETS
    )
    query.flags |= dns.flags.RD
    return query


def query_txt(
    server: tuple[str, int],
    owner: str,
    *,
    now: int,
    anchors: Sequence[TrustAnchor] = (),
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> Answer:
    """Query ``owner`` TXT with DNSSEC OK and validate it (see :class:`StubResolver`).

    Raises:
        ResolveError: no answer in time, an unusable reply, or an rcode other than
            NOERROR/NXDOMAIN.
    """
    with StubResolver(server, now, anchors, timeout) as stub:
        return stub.query_txt(owner)


def _lenient_names_handle(text: str, handle: Handle) -> int | None:
    """For a record that does not parse: its epoch (or 0) if it names ``handle``, else None."""
    match = _LENIENT_H.search(text)
    if match is None or match.group(1).lower() != handle.ref:
        return None
    epoch = _LENIENT_E.search(text)
    return int(epoch.group(1)) if epoch else 0


def select_envelope(
    handle: Handle,
    owner: str,
    texts: Sequence[str],
    *,
    substrate: str | None,
    now: int,
    pinned: tuple[int, bytes] | None = None,
) -> tuple[Envelope | None, str | None, str, tuple[Candidate, ...]]:
    """Spec section 7 after DNSSEC: pick the valid envelope with the highest epoch.

    Returns:
        ``(envelope, category, detail, candidates)``; ``category`` None means success.
    """
    envelopes: list[tuple[str, Envelope]] = []
    revocations: list[Revocation] = []
    candidates: list[Candidate] = []
    for text in texts:
        try:
            record = parse_record(text)
        except VerificationError as exc:
            epoch = _lenient_names_handle(text, handle)
            if epoch is not None:
                candidates.append(Candidate(text, epoch, exc.category, exc.what))
            continue
        if isinstance(record, Revocation) and record.handle == handle:
            revocations.append(record)
        elif isinstance(record, Envelope) and record.handle == handle:
            envelopes.append((text, record))
    valid: list[Envelope] = []
    for text, envelope in envelopes:
        try:
            verify_envelope(
                envelope,
                owner=owner,
                substrate=substrate,
                now=now,
                pinned=pinned,
                revocations=revocations,
            )
        except VerificationError as exc:
            candidates.append(Candidate(text, envelope.epoch, exc.category, exc.what))
            continue
        candidates.append(Candidate(text, envelope.epoch, None, "valid"))
        valid.append(envelope)
    found = tuple(candidates)
    if valid:
        best = max(envelope.epoch for envelope in valid)
        top = [envelope for envelope in valid if envelope.epoch == best]
        if len({envelope.public_key for envelope in top}) > 1:
            return (
                None,
                "conflict",
                f"two valid envelopes for epoch {best} with different keys",
                found,
            )
        return top[0], None, f"epoch {best} verified", found
    if not candidates:
        return None, "not-found", f"no alter1 envelope for {handle.ref} at {owner}", found
    worst = max(candidates, key=lambda candidate: candidate.epoch)
    return None, worst.category, worst.detail, found


def resolve(
    reference: AlterURI | Handle,
    *,
    server: tuple[str, int] | StubResolver,
    substrate: str | None,
    now: int,
    anchors: Sequence[TrustAnchor] = (),
    allow_insecure: bool = False,
    pinned: tuple[int, bytes] | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    root_hints: RootHints | None = None,
) -> Resolution:
    """Resolve and verify a handle against ``server`` (spec section 7).

    ``server`` is an address, or a :class:`StubResolver` to reuse (its anchors, timeout
    and root hints apply, and its ``now`` must equal ``now``).

    Returns:
        The resolution; check ``ok`` and ``category``.

    Raises:
        HandleError: a non-domain handle without a substrate.
        ResolveError: the server did not answer usably.
    """
    handle = reference.handle if isinstance(reference, AlterURI) else reference
    owner = handle.owner(substrate)
    if isinstance(server, StubResolver):
        if server.now != now:
            raise ValueError(f"resolver validates at {server.now}, asked to verify at {now}")
        answer = server.query_txt(owner)
    else:
        with StubResolver(server, now, anchors, timeout, root_hints) as stub:
            answer = stub.query_txt(owner)
    return resolve_answer(
        handle, answer, substrate=substrate, now=now, allow_insecure=allow_insecure, pinned=pinned
    )


def resolve_answer(
    handle: Handle,
    answer: Answer,
    *,
    substrate: str | None,
    now: int,
    allow_insecure: bool = False,
    pinned: tuple[int, bytes] | None = None,
) -> Resolution:
    """Spec section 7 from a TXT answer already had: DNSSEC status, then the envelopes.

    Returns:
        The resolution; check ``ok`` and ``category``.
    """
    owner = answer.owner
    if answer.dnssec is DNSSECStatus.BOGUS:
        detail = f"DNSSEC validation failed: {answer.reason}"
        return Resolution(handle, owner, answer.dnssec, None, "bogus", detail)
    if answer.dnssec is DNSSECStatus.INSECURE and not allow_insecure:
        detail = f"answer is not DNSSEC-validated ({answer.reason})"
        return Resolution(handle, owner, answer.dnssec, None, "insecure", detail)
    envelope, category, detail, candidates = select_envelope(
        handle, owner, answer.texts, substrate=substrate, now=now, pinned=pinned
    )
    return Resolution(
        handle, owner, answer.dnssec, envelope, category, detail, candidates, answer.warning
    )
