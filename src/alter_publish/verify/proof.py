"""The loopback proof: serve a zone on 127.0.0.1 and resolve, validate and verify it.

Every handle is queried over real UDP (TCP on truncation) with DNSSEC OK, its answer
validated to the zone's trust anchors, its envelope verified (spec 6 and 7) and
compared with what was signed. A rotated handle's ``psig`` is checked against the
key the log says the previous epoch had, and every revocation the zone should
publish must be served beside the envelope.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.zone

from alter_publish.definition.model import HandleSpec, ZoneSpec
from alter_publish.dns.anchors import TrustAnchor
from alter_publish.dns.answerers import Answerer, answerer_for, answerer_for_rrsets
from alter_publish.dns.fastcheck import ZoneKeys, exchange_many, owner_labels, secure_txt
from alter_publish.dns.hints import RootHints
from alter_publish.dns.records import SignedRRs, labels_of
from alter_publish.dns.server import ZoneServer
from alter_publish.dns.validation import DNSSECStatus
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.errors import ResolveError
from alter_publish.format.envelope import Envelope
from alter_publish.format.handles import Handle, parse_handle
from alter_publish.format.logrecord import LOG_RECORD_LABEL, log_record_owner
from alter_publish.parallel import Progress, Workers, ranges
from alter_publish.verify.resolve import Answer, StubResolver, resolve_answer

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
    #: For a verified envelope: its epoch, key id and expiry.
    epoch: int | None = None
    key_id: str | None = None
    expires_at: int | None = None

    @classmethod
    def verified(
        cls, ref: str, owner: str, detail: str, dnssec: str, envelope: Envelope
    ) -> HandleProof:
        """A passing verdict for ``envelope``."""
        return cls(
            ref, owner, None, detail, dnssec, envelope.epoch, envelope.key_id, envelope.expires_at
        )

    @property
    def ok(self) -> bool:
        """True when the served record verified and equals what was signed."""
        return self.category is None

    def to_mapping(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "handle": self.handle,
            "owner": self.owner,
            "ok": self.ok,
            "category": self.category,
            "detail": self.detail,
            "dnssec": self.dnssec,
            "epoch": self.epoch,
            "key_id": self.key_id,
            "expires_at": self.expires_at,
        }


@dataclass(frozen=True, slots=True)
class ProofReport:
    """Every handle of one zone resolved and verified on a loopback server."""

    zone: str
    server: str
    results: tuple[HandleProof, ...]
    seconds: float
    denial: HandleProof | None = None
    #: Handles taken out of the zone, each proven to resolve to a secure denial.
    removed: tuple[HandleProof, ...] = ()
    #: The zone's checkpoint record (``_alter-log``), when one was expected.
    checkpoint: HandleProof | None = None

    @property
    def checks(self) -> tuple[HandleProof, ...]:
        """Every verdict: the handles, then the denial probe and the checkpoint record
        (if any), then the removed."""
        extra = tuple(check for check in (self.denial, self.checkpoint) if check is not None)
        return self.results + extra + self.removed

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
            "checkpoint": self.checkpoint.to_mapping() if self.checkpoint else None,
            "failed": len(self.failures),
            "seconds": round(self.seconds, 3),
        } | ({"removed": [result.to_mapping() for result in self.removed]} if self.removed else {})


#: A handle no zone publishes: the proof resolves it to check the signed denial.
ABSENT_PROBE = parse_handle("~absent--alter-publish-probe")


def prove_zone(
    zone: dns.zone.Zone | Answerer,
    spec: ZoneSpec,
    expected: Mapping[str, Expectation],
    *,
    now: int,
    anchors: Sequence[TrustAnchor] = (),
    jobs: int = 1,
    progress: Progress | None = None,
    probe: bool = True,
    absent: Sequence[Handle] = (),
    checkpoint: str | None = None,
    fresh: bool = True,
) -> ProofReport:
    """Serve ``zone`` (a dnspython zone, or the engine that answers it) on 127.0.0.1
    (OS-chosen port) and prove it (see :func:`prove_served`; ``absent``: handles taken
    out, each must resolve to a secure denial). The ``jobs`` workers are fresh
    interpreters unless not ``fresh``: forks, for a small process (a patch's proof),
    which then start in milliseconds instead of importing for half a second.

    Raises:
        ServeError: the loopback server could not start.
    """
    with Workers(jobs, fresh=fresh, size=len(spec.handles)) as workers:  # start meanwhile
        answerer = answerer_for([zone]) if isinstance(zone, dns.zone.Zone) else zone
        return _prove_answerer(
            answerer, spec, expected, now, anchors, workers, progress, probe, checkpoint, absent
        )


def prove_records(
    rrsets: Sequence[SignedRRs],
    spec: ZoneSpec,
    expected: Mapping[str, Expectation],
    *,
    now: int,
    zone_text: str | Sequence[str],
    anchors: Sequence[TrustAnchor] = (),
    jobs: int = 1,
    progress: Progress | None = None,
    checkpoint: str | None = None,
) -> ProofReport:
    """Serve the zone ``sign`` made (its rrsets in wire form, or ``zone_text`` parsed when
    the wire server does not support it) on 127.0.0.1 and prove it.

    Raises:
        RenderError: ``zone_text`` is needed and does not parse.
        ServeError: the loopback server could not start.
    """
    # Fresh interpreters, not forks: forked workers would copy every page of this big
    # process that their allocations land in (hundreds of MB at 100,000 handles). They
    # start while the zone is indexed.
    with Workers(jobs, fresh=True, size=len(spec.handles)) as workers:
        answerer = answerer_for_rrsets(
            labels_of(spec.origin + "."),
            rrsets,
            spec.dnssec,
            lambda: parse_zone_text(
                zone_text if isinstance(zone_text, str) else "".join(zone_text),
                spec.origin,
                where=f"{spec.origin}.zone",
            ),
        )
        return _prove_answerer(
            answerer, spec, expected, now, anchors, workers, progress, checkpoint=checkpoint
        )


def _prove_answerer(
    answerer: Answerer,
    spec: ZoneSpec,
    expected: Mapping[str, Expectation],
    now: int,
    anchors: Sequence[TrustAnchor],
    workers: Workers,
    progress: Progress | None,
    probe: bool = True,
    checkpoint: str | None = None,
    absent: Sequence[Handle] = (),
) -> ProofReport:
    with ZoneServer([], answerer=answerer) as server:
        return prove_served(
            server.address,
            spec,
            expected,
            now=now,
            anchors=anchors,
            workers=workers,
            progress=progress,
            probe=probe,
            checkpoint=checkpoint,
            absent=absent,
        )


def check_answers(
    server: tuple[str, int], origin: str, *, now: int, timeout: float = PROOF_TIMEOUT_SECONDS
) -> None:
    """Ask ``server`` for the SOA of ``origin``: a server that is down or refuses is a
    network error, not a failed proof of every handle.

    Raises:
        ResolveError: no usable answer (none in time, or an rcode other than
            NOERROR/NXDOMAIN), naming the server.
    """
    host, port = server
    apex = dns.name.from_text(origin)
    with StubResolver(server, now, (), timeout) as stub:
        try:
            stub.exchange(apex, dns.rdatatype.SOA, where=apex.to_text())
        except ResolveError as exc:
            raise ResolveError(
                f"no usable answer to SOA {apex.to_text()} ({exc.what})", where=f"{host}:{port}"
            ) from exc


def prove_served(
    server: tuple[str, int],
    spec: ZoneSpec,
    expected: Mapping[str, Expectation],
    *,
    now: int,
    anchors: Sequence[TrustAnchor] = (),
    timeout: float = PROOF_TIMEOUT_SECONDS,
    secure: bool | None = None,
    root_hints: RootHints | None = None,
    jobs: int = 1,
    workers: Workers | None = None,
    progress: Progress | None = None,
    probe: bool = True,
    absent: Sequence[Handle] = (),
    checkpoint: str | None = None,
) -> ProofReport:
    """Resolve and verify every handle of ``spec`` at the name server ``server``.

    ``expected`` maps handle-refs to what was signed for them (see :class:`Expectation`).
    When ``secure`` (by default: when the zone is DNSSEC-signed) every answer must
    validate ``secure`` to ``anchors``, and (unless not ``probe``) a handle the zone does
    not publish must come back as a ``secure`` denial (NSEC/NSEC3); else unsigned
    answers are accepted. An anchor above the zone (the root's) is followed down the
    chain of trust, from ``root_hints`` when ``server`` cannot serve the path itself.

    Plain secure answers are checked by :mod:`fastcheck` on ``workers`` (or ``jobs``
    processes forked here); every other answer, and every handle that fails there, is
    resolved again and judged by the full validator, so a verdict never depends on the
    fast path. ``checkpoint`` (the record text of the log's latest checkpoint) must be
    served at ``_alter-log.<zone>.``, validated like the handles.
    """
    start = time.perf_counter()
    secure = spec.dnssec.enabled if secure is None else secure
    probe = probe and secure and spec.find(ABSENT_PROBE.ref) is None
    handles = spec.handles
    host, port = server
    results: list[HandleProof | None] = [None] * len(handles)
    if progress is not None:
        progress.start("proof", len(handles))
    with StubResolver(server, now, anchors, timeout, root_hints) as stub:
        dnskeys = _zone_keys(stub, spec) if secure else None
        if dnskeys is not None and handles:
            # Each task carries its handles as plain tuples (the workers may be fresh
            # interpreters that share nothing with this process).
            work = (server, spec.origin, dnskeys, now, timeout)
            spans = ranges(len(handles), PROOF_CHUNK_HANDLES)
            tasks = (
                (
                    work,
                    [
                        _task(h.handle.ref, h.owner, expected.get(h.handle.ref))
                        for h in handles[first:stop]
                    ],
                )
                for first, stop in spans
            )
            with contextlib.ExitStack() as stack:
                pool = workers or stack.enter_context(Workers(jobs, fresh=True, size=len(handles)))
                for (first, _), verdicts in zip(
                    spans, pool.map_chunks(_prove_span, tasks, progress=progress), strict=True
                ):
                    for index, passed in enumerate(verdicts, start=first):
                        if passed is not None:
                            handle_spec = handles[index]
                            results[index] = HandleProof(
                                handle_spec.handle.ref,
                                handle_spec.owner,
                                None,
                                passed[0],
                                str(DNSSECStatus.SECURE),
                                *passed[1:],
                            )
        again = [index for index, result in enumerate(results) if result is None]
        owners = [handles[index].owner for index in again]
        if probe:
            owners.append(ABSENT_PROBE.owner(spec.origin))
        if checkpoint is not None:
            owners.append(log_record_owner(spec.origin))
        owners += (handle.owner(spec.origin) for handle in absent)
        try:  # every query in flight at once; see StubResolver.exchange_many
            answers = stub.query_txt_many(owners) if owners else []
        except ResolveError as exc:  # the zone's DNSKEY query failed
            answers = [exc] * len(owners)
    for index, answer in zip(again, answers, strict=False):
        handle_spec = handles[index]
        want = expected.get(handle_spec.handle.ref)
        results[index] = _prove_handle(handle_spec, answer, spec, want, now, secure=secure)
        if progress is not None:
            progress.advance(1)
    if progress is not None:
        progress.done()
    tail = answers[len(again) :]
    denial = _prove_denial(tail[0], spec, now) if probe else None
    tail = tail[1:] if probe else tail
    log_proof = None
    if checkpoint is not None:
        log_proof = _prove_checkpoint(tail[0], spec, checkpoint, secure=secure)
        tail = tail[1:]
    removed = tuple(
        _prove_denial(answer, spec, now, handle)
        for handle, answer in zip(absent, tail, strict=True)
    )
    return ProofReport(
        zone=spec.origin,
        server=f"{host}:{port}",
        results=tuple(result for result in results if result is not None),
        seconds=time.perf_counter() - start,
        denial=denial,
        removed=removed,
        checkpoint=log_proof,
    )


#: Handles per task of the parallel proof (one pipelined exchange each).
PROOF_CHUNK_HANDLES = 1000


def _zone_keys(stub: StubResolver, spec: ZoneSpec) -> tuple[bytes, ...] | None:
    """The zone's DNSKEY rdata wires, validated by the full validator to the trust
    anchors; None when they do not validate (every handle then takes the full path and
    says why)."""
    origin = dns.name.from_text(spec.origin)
    try:  # from the zone's own anchor, or down the chain from one above it
        trust = stub.zone_trust(origin)
        if trust.status is not DNSSECStatus.SECURE or trust.anchor is None:
            return None
        validation, dnskeys = stub.zone_keys(trust.anchor)
    except ResolveError:
        return None
    if validation.status is not DNSSECStatus.SECURE or dnskeys is None:
        return None
    return tuple(rdata.to_digestable() for rdata in dnskeys)


#: A fast-path verdict as it crosses the process boundary: (detail, epoch, key id, expiry)
#: of a handle that passed, None for one the full path must judge. (Plain tuples pickle
#: several times faster than dataclasses: 100,000 of them per proof.)
_Passed = tuple[str, int | None, str | None, int | None]


#: One handle as a proof task carries it: handle ref, owner, and what was signed for it
#: as the Expectation's fields. Plain values, like the verdicts: 100,000 Expectations took
#: 0.74 s to pickle in this process (which serves the workers' queries meanwhile) and
#: 0.63 s to unpickle in the workers; as tuples 0.15 and 0.10 s, and 0.16 s to build the
#: Expectations again there.
_Task = tuple[str, str, tuple[str, tuple[str, ...], tuple[int, bytes] | None] | None]


def _task(ref: str, owner: str, want: Expectation | None) -> _Task:
    """A handle as :func:`_prove_span` takes it."""
    return ref, owner, None if want is None else (want.text, want.revocations, want.previous)


def _prove_span(
    task: tuple[tuple[tuple[str, int], str, tuple[bytes, ...], int, float], list[_Task]],
) -> list[_Passed | None]:
    """Worker side: prove these handles through the fast path; None where it declines or
    the handle fails (the full path then gives the verdict)."""
    (server, origin, dnskeys, now, timeout), tasks = task
    keys = _worker_keys(origin, dnskeys)
    owners = [owner_labels(owner) for _, owner, _ in tasks]
    replies = exchange_many(server, owners, timeout=timeout)
    verdicts: list[_Passed | None] = []
    for (ref, owner, fields), labels, reply in zip(tasks, owners, replies, strict=True):
        texts = None if reply is None else secure_txt(reply, labels, keys, now)
        if texts is None:
            verdicts.append(None)
            continue
        want = None if fields is None else Expectation(*fields)
        answer = Answer(owner, texts, "NOERROR", "udp", DNSSECStatus.SECURE)
        verdict = _judge(parse_handle(ref), owner, answer, origin, want, now, secure=True)
        verdicts.append(
            (verdict.detail, verdict.epoch, verdict.key_id, verdict.expires_at)
            if verdict.ok
            else None
        )
    return verdicts


_WORKER_KEYS: dict[tuple[str, tuple[bytes, ...]], ZoneKeys] = {}


def _worker_keys(origin: str, dnskeys: tuple[bytes, ...]) -> ZoneKeys:
    """The zone keys from their DNSKEY rdata wires (made once per worker process)."""
    found = _WORKER_KEYS.get((origin, dnskeys))
    if found is None:
        name = dns.name.from_text(origin)
        rdatas = [
            dns.rdata.from_wire(dns.rdataclass.IN, dns.rdatatype.DNSKEY, wire, 0, len(wire))
            for wire in dnskeys
        ]
        found = _WORKER_KEYS.setdefault((origin, dnskeys), ZoneKeys.from_dnskeys(name, rdatas))
    return found


def _prove_handle(
    handle_spec: HandleSpec,
    answer: Answer | ResolveError,
    spec: ZoneSpec,
    want: Expectation | None,
    now: int,
    *,
    secure: bool,
) -> HandleProof:
    return _judge(
        handle_spec.handle, handle_spec.owner, answer, spec.origin, want, now, secure=secure
    )


def _judge(
    handle: Handle,
    owner: str,
    answer: Answer | ResolveError,
    origin: str,
    want: Expectation | None,
    now: int,
    *,
    secure: bool,
) -> HandleProof:
    """The verdict on one handle's answer (what :func:`_prove_handle` says, from parts)."""
    ref = handle.ref
    if isinstance(answer, ResolveError):
        return HandleProof(ref, owner, "network", answer.what, "unknown")
    if want is None:
        return HandleProof(ref, owner, "not-signed", "no signed envelope on record", "unknown")
    resolution = resolve_answer(
        handle,
        answer,
        substrate=origin,
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
    return HandleProof.verified(ref, owner, resolution.detail, status, resolution.envelope)


def _prove_checkpoint(
    answer: Answer | ResolveError, spec: ZoneSpec, want: str, *, secure: bool
) -> HandleProof:
    """The log's checkpoint record must be served (validated, in a signed zone) as signed."""
    ref, owner = LOG_RECORD_LABEL, log_record_owner(spec.origin)
    if isinstance(answer, ResolveError):
        return HandleProof(ref, owner, "network", answer.what, "unknown")
    status = str(answer.dnssec)
    if answer.dnssec is not DNSSECStatus.SECURE and (secure or answer.dnssec is DNSSECStatus.BOGUS):
        detail = f"answer is not DNSSEC-validated ({answer.reason})"
        return HandleProof(ref, owner, "bogus" if status == "bogus" else "insecure", detail, status)
    if list(answer.texts) != [want]:
        detail = "served checkpoint record differs from the one signed"
        return HandleProof(ref, owner, "mismatch", detail, status)
    return HandleProof(ref, owner, None, "checkpoint record served as signed", status)


def _prove_denial(
    answer: Answer | ResolveError, spec: ZoneSpec, now: int, handle: Handle = ABSENT_PROBE
) -> HandleProof:
    """An unpublished handle must resolve to a validated denial, never to a record."""
    ref, owner = handle.ref, handle.owner(spec.origin)
    if isinstance(answer, ResolveError):
        return HandleProof(ref, owner, "network", answer.what, "unknown")
    unsigned = not spec.dnssec.enabled  # then an insecure denial is all there is
    resolution = resolve_answer(
        handle, answer, substrate=spec.origin, now=now, allow_insecure=unsigned
    )
    status = str(resolution.dnssec)
    if resolution.category == "not-found" and (status == "secure" or unsigned):
        return HandleProof(ref, owner, None, "denial of existence validated", status)
    detail = f"expected a secure denial, got {resolution.category or 'a record'}"
    return HandleProof(ref, owner, resolution.category or "mismatch", detail, status)
