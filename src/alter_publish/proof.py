"""The loopback proof: serve a zone on 127.0.0.1 and resolve, validate and verify it.

Every handle is queried over real UDP (TCP on truncation) with DNSSEC OK, its answer
validated to the zone's trust anchors, its envelope verified (spec 6 and 7) and
compared with what was signed. A rotated handle's ``psig`` is checked against the
key the log says the previous epoch had, and every revocation the zone should
publish must be served beside the envelope.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dns.zone

from alter_publish.envelope import Envelope
from alter_publish.errors import ResolveError
from alter_publish.handles import parse_handle
from alter_publish.model import HandleSpec, ZoneSpec
from alter_publish.resolver import Answer, StubResolver, resolve_answer
from alter_publish.server import ZoneServer
from alter_publish.validation import TrustAnchor

PROOF_TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class Expectation:
    """What the proof must find served for one handle.

    Attributes:
        text: the envelope record text that was signed.
        revocations: revocation record texts that must be served beside it.
        previous: ``(epoch, public key)`` of the epoch before, from the key history,
            set when the envelope carries ``psig``: the psig must verify with this key.
    """

    text: str
    revocations: tuple[str, ...] = ()
    previous: tuple[int, bytes] | None = None


@dataclass(frozen=True, slots=True)
class HandleProof:
    """The loopback proof's verdict on one handle."""

    handle: str
    owner: str
    category: str | None
    detail: str
    dnssec: str
    envelope: Envelope | None = None

    @property
    def ok(self) -> bool:
        """True when the served record verified and equals what was signed."""
        return self.category is None

    def to_mapping(self) -> dict[str, Any]:
        """JSON-ready form."""
        envelope = self.envelope
        return {
            "handle": self.handle,
            "owner": self.owner,
            "ok": self.ok,
            "category": self.category,
            "detail": self.detail,
            "dnssec": self.dnssec,
            "epoch": envelope.epoch if envelope else None,
            "key_id": envelope.key_id if envelope else None,
            "expires_at": envelope.expires_at if envelope else None,
        }


@dataclass(frozen=True, slots=True)
class ProofReport:
    """Every handle of one zone resolved and verified on a loopback server."""

    zone: str
    server: str
    results: tuple[HandleProof, ...]
    seconds: float
    denial: HandleProof | None = None

    @property
    def checks(self) -> tuple[HandleProof, ...]:
        """Every verdict: the handles, then the denial probe (if any)."""
        return self.results + ((self.denial,) if self.denial else ())

    @property
    def ok(self) -> bool:
        """True when every handle (and the denial probe) passed."""
        return all(result.ok for result in self.checks)

    @property
    def failures(self) -> tuple[HandleProof, ...]:
        """The checks that failed."""
        return tuple(result for result in self.checks if not result.ok)

    def to_mapping(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "zone": self.zone,
            "server": self.server,
            "ok": self.ok,
            "handles": [result.to_mapping() for result in self.results],
            "denial": self.denial.to_mapping() if self.denial else None,
            "failed": len(self.failures),
            "seconds": round(self.seconds, 3),
        }


#: A handle no zone publishes: the proof resolves it to check the signed denial.
ABSENT_PROBE = parse_handle("~absent--alter-publish-probe")


def prove_zone(
    zone: dns.zone.Zone,
    spec: ZoneSpec,
    expected: Mapping[str, Expectation],
    *,
    now: int,
    anchors: Sequence[TrustAnchor] = (),
) -> ProofReport:
    """Serve ``zone`` on 127.0.0.1 (OS-chosen port) and prove it (see :func:`prove_served`).

    Raises:
        ServeError: the loopback server could not start.
    """
    with ZoneServer([zone]) as server:
        return prove_served(server.address, spec, expected, now=now, anchors=anchors)


def prove_served(
    server: tuple[str, int],
    spec: ZoneSpec,
    expected: Mapping[str, Expectation],
    *,
    now: int,
    anchors: Sequence[TrustAnchor] = (),
    timeout: float = PROOF_TIMEOUT_SECONDS,
    secure: bool | None = None,
) -> ProofReport:
    """Resolve and verify every handle of ``spec`` at the name server ``server``.

    ``expected`` maps handle-refs to what was signed for them (see :class:`Expectation`).
    When ``secure`` (by default: when the zone is DNSSEC-signed) every answer must
    validate ``secure`` to ``anchors``, and a handle the zone does not publish must
    come back as a ``secure`` denial (NSEC/NSEC3); else unsigned answers are accepted.
    """
    start = time.perf_counter()
    secure = spec.dnssec.enabled if secure is None else secure
    probe = secure and spec.find(ABSENT_PROBE.ref) is None
    owners = [handle_spec.owner for handle_spec in spec.handles]
    if probe:
        owners.append(ABSENT_PROBE.owner(spec.origin))
    host, port = server
    with StubResolver(server, now, anchors, timeout) as stub:
        try:  # every query in flight at once; see StubResolver.exchange_many
            answers = stub.query_txt_many(owners)
        except ResolveError as exc:  # the zone's DNSKEY query failed
            answers = [exc] * len(owners)
    results = [
        _prove_handle(
            handle_spec, answer, spec, expected.get(handle_spec.handle.ref), now, secure=secure
        )
        for handle_spec, answer in zip(spec.handles, answers, strict=False)
    ]
    denial = _prove_denial(answers[-1], spec, now) if probe else None
    return ProofReport(
        zone=spec.origin,
        server=f"{host}:{port}",
        results=tuple(results),
        seconds=time.perf_counter() - start,
        denial=denial,
    )


def _prove_handle(
    handle_spec: HandleSpec,
    answer: Answer | ResolveError,
    spec: ZoneSpec,
    want: Expectation | None,
    now: int,
    *,
    secure: bool,
) -> HandleProof:
    ref, owner = handle_spec.handle.ref, handle_spec.owner
    if isinstance(answer, ResolveError):
        return HandleProof(ref, owner, "network", answer.what, "unknown")
    if want is None:
        return HandleProof(ref, owner, "not-signed", "no signed envelope on record", "unknown")
    resolution = resolve_answer(
        handle_spec.handle,
        answer,
        substrate=spec.origin,
        now=now,
        allow_insecure=not secure,
        # A verifier pinned to the previous epoch: the psig must verify with its key.
        pinned=want.previous,
    )
    status = str(resolution.dnssec)
    if not resolution.ok or resolution.envelope is None:
        category = resolution.category or "not-found"
        return HandleProof(ref, owner, category, resolution.detail, status)
    if resolution.envelope.to_text() != want.text:
        detail = "served envelope differs from the one signed"
        return HandleProof(ref, owner, "mismatch", detail, status)
    missing = [text for text in want.revocations if text not in answer.texts]
    if missing:
        detail = f"{len(missing)} revocation record(s) signed for it are not served"
        return HandleProof(ref, owner, "mismatch", detail, status)
    return HandleProof(ref, owner, None, resolution.detail, status, resolution.envelope)


def _prove_denial(answer: Answer | ResolveError, spec: ZoneSpec, now: int) -> HandleProof:
    """An unpublished handle must resolve to a validated denial, never to a record."""
    ref, owner = ABSENT_PROBE.ref, ABSENT_PROBE.owner(spec.origin)
    if isinstance(answer, ResolveError):
        return HandleProof(ref, owner, "network", answer.what, "unknown")
    resolution = resolve_answer(ABSENT_PROBE, answer, substrate=spec.origin, now=now)
    status = str(resolution.dnssec)
    if resolution.category == "not-found" and status == "secure":
        return HandleProof(ref, owner, None, "denial of existence validated", status)
    detail = f"expected a secure denial, got {resolution.category or 'a record'}"
    return HandleProof(ref, owner, resolution.category or "mismatch", detail, status)
