"""Publishing to a real primary: plan and push the zone's alter1 records and its log
checkpoint record (RFC 2136 + TSIG).

What we would publish is what ``sign`` proved and wrote (``<out>/<zone>.envelopes.json``
and ``<out>/<zone>/log/checkpoint``). What the server serves is read by zone transfer
(AXFR, TSIG-signed) when the server allows it, else by asking each of our owner names.
Only records we own are ever compared, added or deleted: TXT records at an ``_alter``
owner name whose text is an alter1 record with an ``h=`` tag (envelopes and
revocations), and the ``v=alter-log1`` record at ``_alter-log.<zone>.``
(:mod:`alter_publish.publish.managed`). Everything else in the zone, other TXT records
at the same names included, is left alone.

A push is a series of UPDATE messages, each atomic at the server and each signed with
the TSIG key; if it is cut short, the next ``plan`` shows what is left and the next
``push`` finishes it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dns.exception
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype
import dns.tsig
import dns.update

from alter_publish.definition.model import ZoneSpec, load_zone
from alter_publish.errors import PublishError, ResolveError, UsageError
from alter_publish.format.envelope import Revocation, parse_record_or_none
from alter_publish.format.logrecord import log_record_owner
from alter_publish.keys.store import KeyStore
from alter_publish.pipeline import VerifyReport, verify
from alter_publish.pipeline.unchanged import outputs_as_proven
from alter_publish.publish.desired import desired_records, read_desired
from alter_publish.publish.fleet import (
    DEFAULT_CONVERGE_SECONDS,
    Convergence,
    name_servers,
    primary_serial,
    wait_for_serial,
)
from alter_publish.publish.managed import (
    Records,
    checkpoint_rollback,
    desired_log_records,
    newest_epoch,
    owned_at,
    owned_checker,
    selects_owner_wire,
    txt_rdata,
)
from alter_publish.publish.transferring import (
    TRANSFER_FAILURES,
    Snapshot,
    Transfer,
    Transferred,
    TransferRequest,
)

# Read from here by the CLI and the tests, as before the key file had its module.
from alter_publish.publish.tsig import TSIG_ALGORITHMS as TSIG_ALGORITHMS
from alter_publish.publish.tsig import TsigKey as TsigKey
from alter_publish.publish.tsig import read_tsig_key as read_tsig_key
from alter_publish.verify.resolve import StubResolver

#: The default largest share of our served records a push may delete without --force.
DEFAULT_MAX_DELETE_SHARE = 0.25
#: UPDATE messages are cut at about this size (TCP allows 65535 octets).
UPDATE_OCTETS_TARGET = 16_000
DEFAULT_TIMEOUT_SECONDS = 5.0
# --- records ---------------------------------------------------------------------------


def served_records(
    spec: ZoneSpec,
    server: tuple[str, int],
    *,
    tsig: TsigKey | None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    transfer: Transfer | None = None,
) -> tuple[dict[str, Records], str]:
    """Our records as the server serves them, and how they were found (``axfr`` or
    ``queries``: without a transfer, records at owners we no longer list are not seen).
    ``transfer``: the zone's transfer already under way (:func:`start_transfer`).

    Raises:
        PublishError: the server is not authoritative for the zone, or does not answer.
    """
    served, how, _ = _served(spec, server, tsig=tsig, timeout=timeout, transfer=transfer)
    return served, how


def _served(
    spec: ZoneSpec,
    server: tuple[str, int],
    *,
    tsig: TsigKey | None,
    timeout: float,
    transfer: Transfer | None,
) -> tuple[dict[str, Records], str, Snapshot | None]:
    """:func:`served_records`, and what the transfer showed (None: no transfer)."""
    transferred = (
        _transferred(_request(spec, server, tsig, timeout)) if transfer is None else transfer.rows()
    )
    if transferred is not None:
        snapshot = Snapshot.of(spec.origin, *transferred)
        return dict(snapshot.served), "axfr", snapshot
    # Transfers refused or not offered: ask for each owner we know.
    origin = dns.name.from_text(spec.origin)
    owners = [handle_spec.owner for handle_spec in spec.handles]
    owners.append(log_record_owner(spec.origin))
    ours = owned_checker(spec.origin)
    found: dict[str, Records] = {}
    with StubResolver(server, 0, (), timeout) as stub:
        try:
            soa, _ = stub.exchange(origin, dns.rdatatype.SOA, where=spec.origin)
        except ResolveError as exc:
            raise PublishError(exc.what, where=f"{server[0]}:{server[1]}") from exc
        if soa.rcode() != dns.rcode.NOERROR or not soa.answer:
            rcode = dns.rcode.to_text(soa.rcode())
            raise PublishError(
                f"server is not authoritative for {spec.origin} (SOA query: {rcode})",
                where=f"{server[0]}:{server[1]}",
            )
        names = [dns.name.from_text(owner) for owner in owners]
        for owner, result in zip(owners, stub.exchange_many(names, dns.rdatatype.TXT), strict=True):
            if isinstance(result, ResolveError):
                raise PublishError(result.what, where=owner)
            response, _ = result
            records = owned_at(owner, response.answer, ours(owner))
            if records is not None:
                found[owner] = records
    return found, "queries", None


def start_transfer(
    spec: ZoneSpec,
    server: tuple[str, int],
    tsig: TsigKey | None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> Transfer:
    """The zone's transfer, started in a child process (see :mod:`.transferring`)."""
    return Transfer(_request(spec, server, tsig, timeout))


def _request(
    spec: ZoneSpec, server: tuple[str, int], tsig: TsigKey | None, timeout: float
) -> TransferRequest:
    """The zone's transfer, keeping the TXT records at our owners (read at the wire
    level: see :mod:`alter_publish.dns.transfer`)."""
    return TransferRequest(
        spec.origin,
        server,
        selects_owner_wire(spec.origin),
        keyring=tsig.keyring if tsig else None,
        keyname=tsig.keyname if tsig else None,
        timeout=timeout,
    )


def _transferred(request: TransferRequest) -> Transferred | None:
    """The serial and rows of ``request``, read here; None when the server offers no
    transfer."""
    try:
        return request.rows()
    except TRANSFER_FAILURES:
        return None


# --- plan ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Change:
    """What a push does at one owner name."""

    owner: str
    action: str  # add, update or delete
    before: Records | None
    after: Records | None

    @property
    def deletes(self) -> int:
        """How many of our served records this change deletes outright: every record of
        an owner we no longer publish, and revocations we would stop serving. A record
        replaced by its renewal or successor (or re-added with a new TTL) is no deletion.
        """
        if self.before is None:
            return 0
        if self.after is None:
            return len(self.before.texts)
        return len(self.dropped_revocations())

    def dropped_revocations(self) -> tuple[Revocation, ...]:
        """Served revocations the change would stop serving."""
        if self.before is None:
            return ()
        keep = set(self.after.texts) if self.after else set()
        return tuple(
            record
            for text in self.before.texts
            if text not in keep and isinstance(record := parse_record_or_none(text), Revocation)
        )

    def rollback(self) -> str | None:
        """Why this change would move a handle backwards, if it would."""
        if self.before is None or self.after is None:
            return None
        if moved_back := checkpoint_rollback(self.owner, self.before, self.after):
            return moved_back
        dropped = self.dropped_revocations()
        if dropped:
            return f"{self.owner}: would stop serving the revocation of epoch {dropped[0].epoch}"
        served = newest_epoch(self.before.texts)
        wanted = newest_epoch(self.after.texts)
        if served is not None and wanted is not None and wanted < served:
            return f"{self.owner}: would replace served epoch {served} with epoch {wanted}"
        return None

    def to_mapping(self) -> dict[str, Any]:
        """JSON form."""

        def side(records: Records | None) -> dict[str, Any] | None:
            return None if records is None else {"ttl": records.ttl, "texts": list(records.texts)}

        return {
            "owner": self.owner,
            "action": self.action,
            "before": side(self.before),
            "after": side(self.after),
        }


@dataclass(frozen=True, slots=True)
class Plan:
    """The changes that would make the server serve what ``sign`` wrote."""

    zone: str
    server: str
    changes: tuple[Change, ...]
    served: int  # our records the server serves now
    enumeration: str  # axfr, ixfr (an axfr brought up to date) or queries
    #: What the transfer showed, for :func:`replan` (None: no transfer).
    snapshot: Snapshot | None = field(default=None, repr=False, compare=False)

    @property
    def pending(self) -> bool:
        """Whether anything needs doing."""
        return bool(self.changes)

    @property
    def deletes(self) -> int:
        """Our served records the push removes or replaces."""
        return sum(change.deletes for change in self.changes)

    def counts(self) -> dict[str, int]:
        """Changes by action."""
        return {
            action: sum(1 for change in self.changes if change.action == action)
            for action in ("add", "update", "delete")
        }

    def to_mapping(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "zone": self.zone,
            "server": self.server,
            "pending": self.pending,
            "counts": self.counts(),
            "served_records": self.served,
            "deletes": self.deletes,
            "enumeration": self.enumeration,
            "changes": [change.to_mapping() for change in self.changes],
        }


def make_plan(
    spec: ZoneSpec,
    desired: Mapping[str, Records],
    served: Mapping[str, Records],
    *,
    server: str,
    enumeration: str,
    snapshot: Snapshot | None = None,
    owners: Iterable[str] | None = None,
) -> Plan:
    """Compare what we would publish with what is served; owners in canonical order.
    ``owners``: only these may differ (the others were compared already)."""
    changes: list[Change] = []
    # Compare first, then sort only what differs (sorting 100,000 names took 20 s).
    differ = [
        owner
        for owner in (set(desired) | set(served) if owners is None else set(owners))
        if owner not in desired or owner not in served or not desired[owner].same_as(served[owner])
    ]
    for owner in sorted(differ, key=lambda o: dns.name.from_text(o)):
        want, have = desired.get(owner), served.get(owner)
        if want is None and have is not None:
            changes.append(Change(owner, "delete", have, None))
        elif have is None and want is not None:
            changes.append(Change(owner, "add", None, want))
        elif want is not None and have is not None and not want.same_as(have):
            changes.append(Change(owner, "update", have, want))
    total = sum(len(records.texts) for records in served.values())
    return Plan(spec.origin, server, tuple(changes), total, enumeration, snapshot)


def plan(
    spec: ZoneSpec,
    *,
    out: Path,
    server: tuple[str, int],
    tsig: TsigKey | None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    desired: Mapping[str, Records] | None = None,
    transfer: Transfer | None = None,
    keys: KeyStore | None = None,
) -> Plan:
    """What a push to ``server`` would change (``desired``: the records of ``out`` when
    already read by :func:`desired_records`; ``transfer``: the zone's transfer already
    under way, see :func:`start_transfer`).

    Otherwise ``out`` is read here, and an output that cannot be planned from sends the
    server nothing: the zone is transferred meanwhile only when the outputs are as the
    last proven ``sign`` left them (its record holds: ``keys`` is the store it used).

    Raises:
        RenderError: nothing was signed yet (run sign).
        PublishError: the server is not authoritative or does not answer.
    """
    early = desired is None and transfer is None and keys is not None
    if early and keys is not None and outputs_as_proven(spec.path, out=out, keys=keys):
        desired_log_records(spec, out)  # the one output the record does not cover: first
        with start_transfer(spec, server, tsig, timeout) as started:
            desired = desired_records(spec, out, proven=True)
            served, enumeration, snapshot = _served(
                spec, server, tsig=tsig, timeout=timeout, transfer=started
            )
    else:
        desired = desired_records(spec, out) if desired is None else desired
        served, enumeration, snapshot = _served(
            spec, server, tsig=tsig, timeout=timeout, transfer=transfer
        )
    where = f"{server[0]}:{server[1]}"
    return make_plan(
        spec, desired, served, server=where, enumeration=enumeration, snapshot=snapshot
    )


def replan(
    spec: ZoneSpec,
    before: Plan,
    desired: Mapping[str, Records],
    *,
    out: Path,
    server: tuple[str, int],
    tsig: TsigKey | None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> Plan:
    """The plan again after the updates: what changed since ``before``'s transfer (an
    IXFR from its serial, RFC 1995) applied to what it showed, and compared where
    anything changed (the rest was compared by ``before``, against the same
    ``desired``); the whole :func:`plan` when ``before`` had no transfer or the server
    sends no differences.

    Raises:
        PublishError: as :func:`plan`.
    """
    where = f"{server[0]}:{server[1]}"
    if before.snapshot is not None:
        try:
            changes = _request(spec, server, tsig, timeout).changes(before.snapshot.serial)
        except TRANSFER_FAILURES:
            changes = None
        if changes is not None and changes.records is None:
            now, touched = before.snapshot.updated(spec.origin, changes)
            owners = touched.union(change.owner for change in before.changes)
            return make_plan(
                spec,
                desired,
                now.served,
                server=where,
                enumeration="ixfr",
                snapshot=now,
                owners=owners,
            )
        if changes is not None and changes.records is not None:  # the server sent it all
            rows = [(record.owner, record.ttl, record.strings) for record in changes.records]
            whole = Snapshot.of(spec.origin, changes.serial, rows)
            return make_plan(
                spec, desired, whole.served, server=where, enumeration="axfr", snapshot=whole
            )
    return plan(spec, out=out, server=server, tsig=tsig, timeout=timeout, desired=desired)


# --- push -----------------------------------------------------------------------------------


def server_signs(
    spec: ZoneSpec, server: tuple[str, int], *, timeout: float = DEFAULT_TIMEOUT_SECONDS
) -> bool:
    """Whether the server serves a DNSKEY rrset for the zone (it signs what it is sent).

    Raises:
        PublishError: the server does not answer.
    """
    origin = dns.name.from_text(spec.origin)
    with StubResolver(server, 0, (), timeout) as stub:
        try:
            response, _ = stub.exchange(origin, dns.rdatatype.DNSKEY, where=spec.origin)
        except ResolveError as exc:
            raise PublishError(exc.what, where=f"{server[0]}:{server[1]}") from exc
    return any(rrset.rdtype == dns.rdatatype.DNSKEY for rrset in response.answer)


def check_deletes(plan: Plan, max_share: float, *, force: bool) -> None:
    """Refuse a plan that moves a handle backwards (an older epoch, a revocation
    withdrawn: an old ``build/`` pushed again), or deletes more than ``max_share`` of
    our served records.

    Raises:
        UsageError: it does, and ``force`` is not given.
    """
    if force:
        return
    backwards = [reason for change in plan.changes if (reason := change.rollback())]
    if backwards:
        more = f" (+{len(backwards) - 1} more)" if len(backwards) > 1 else ""
        raise UsageError(
            f"{backwards[0]}{more}; is build/ older than what was pushed? Run sign, or "
            "push with --force to roll back on purpose",
            where=plan.zone,
        )
    if plan.deletes == 0:
        return
    share = plan.deletes / max(plan.served, 1)
    if share > max_share:
        raise UsageError(
            f"the push would delete or replace {plan.deletes} of the {plan.served} managed "
            f"records served ({share:.0%}, over the {max_share:.0%} allowed); check the plan, "
            "then push with --force (or a higher --max-delete)",
            where=plan.zone,
        )


def _batches(plan: Plan, octets: int) -> Iterable[list[Change]]:
    batch: list[Change] = []
    size = 0
    for change in plan.changes:
        texts = (change.before.texts if change.before else ()) + (
            change.after.texts if change.after else ()
        )
        cost = sum(len(text) + 32 for text in texts) + len(change.owner)
        if batch and size + cost > octets:
            yield batch
            batch, size = [], 0
        batch.append(change)
        size += cost
    if batch:
        yield batch


def _update_message(
    zone: str, changes: Sequence[Change], tsig: TsigKey
) -> dns.update.UpdateMessage:
    update = dns.update.UpdateMessage(
        zone + ".", keyring=tsig.keyring, keyname=tsig.keyname, keyalgorithm=tsig.algorithm
    )
    for change in changes:
        if change.before is not None:
            for rdata in change.before.rdatas():
                update.delete(change.owner, rdata)
        if change.after is not None:
            for text in change.after.texts:
                update.add(change.owner, change.after.ttl, txt_rdata(text))
    return update


def apply(
    plan: Plan,
    server: tuple[str, int],
    tsig: TsigKey,
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    batch_octets: int = UPDATE_OCTETS_TARGET,
) -> int:
    """Send the plan as TSIG-signed UPDATE messages; returns how many were sent.

    Each message is atomic at the server; if one fails, those before it stay applied
    and a new plan shows what is left.

    Raises:
        PublishError: the server refused an update or stopped answering (with how many
            messages it had accepted).
    """
    host, port = server
    sent = 0
    for batch in _batches(plan, batch_octets):
        message = _update_message(plan.zone, batch, tsig)
        try:
            response = dns.query.tcp(message, host, port=port, timeout=timeout)
        except (dns.exception.DNSException, OSError, EOFError) as exc:
            raise PublishError(
                f"update {sent + 1} failed ({exc or type(exc).__name__}) after {sent} applied; "
                "run plan to see what is left, then push again",
                where=f"{host}:{port}",
            ) from exc
        if response.rcode() != dns.rcode.NOERROR:
            rcode = dns.rcode.to_text(response.rcode())
            hint = (
                " (is the TSIG key allowed to update this zone?)"
                if rcode
                in (
                    "REFUSED",
                    "NOTAUTH",
                )
                else ""
            )
            raise PublishError(
                f"the server answered update {sent + 1} with {rcode}{hint}; {sent} applied",
                where=f"{host}:{port}",
            )
        sent += 1
    return sent


@dataclass(frozen=True, slots=True)
class PushReport:
    """A push: the plan applied, the UPDATE messages sent, the proof against the primary;
    then the wait for every name server to serve the primary's serial and, once all do,
    the proof against each (but the primary, proven already)."""

    plan: Plan
    sent: int
    proof: VerifyReport
    convergence: Convergence
    fleet_proofs: tuple[VerifyReport, ...] = ()
    #: How the plan after the updates read the primary: axfr, ixfr or queries.
    checked_by: str = ""

    @property
    def ok(self) -> bool:
        """Every proof passed (the primary's, and each name server's)."""
        return self.proof.ok and all(report.ok for report in self.fleet_proofs)


def push(
    definition: Path,
    *,
    out: Path,
    server: tuple[str, int],
    tsig: TsigKey,
    now: int,
    trust_anchors: Path | None = None,
    allow_insecure: bool = False,
    max_delete: float = DEFAULT_MAX_DELETE_SHARE,
    force: bool = False,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ns: Sequence[tuple[str, int]] = (),
    wait: float = DEFAULT_CONVERGE_SECONDS,
    prove_all: bool = False,
    keys: KeyStore | None = None,
) -> PushReport:
    """Plan, check, apply, confirm the server converged, then prove what it serves; wait
    up to ``wait`` seconds for every name server of the zone (``ns``, else the
    definition's, see :func:`~alter_publish.publish.fleet.name_servers`) to serve the
    primary's serial, and prove what each serves once all do.

    The proofs cover the handles at the owner names the push changed (every handle
    with ``prove_all``, or when there was nothing to change): the plan read after the
    updates has compared every managed record served with what ``sign`` wrote, so one
    change costs one handle's proof, not the zone's. Each proof also checks the
    ``_alter-log`` record (the log's latest checkpoint, when the zone has a log). They
    validate to ``trust_anchors`` (the zone as the server signs it), or accept unsigned
    answers with ``allow_insecure``; exactly one must be given. ``timeout`` bounds each
    answer. ``keys``: the key store the last ``sign`` used (no key is read): when that
    run's record holds, what it proved is not checked against the log again
    (:func:`~alter_publish.publish.desired.read_desired`).

    Raises:
        UsageError: neither or both of the two; an unsigned server without
            ``allow_insecure``; a rollback or too many deletions without ``force``.
        RenderError: nothing signed yet, or an output older than the log.
        PublishError: the server refused an update, stopped answering, or still
            differs after the push; a name server of the zone has no address.
        ResolveError: a name server that serves the serial gives no usable answer.
    """
    spec = load_zone(definition)
    where = f"{server[0]}:{server[1]}"
    if allow_insecure == (trust_anchors is not None):
        raise UsageError(
            "push needs --trust-anchor FILE (the DS of the zone as the server signs it) "
            "or, for a zone nobody signs, --allow-insecure; not both"
        )
    if not allow_insecure and not server_signs(spec, server, timeout=timeout):
        raise UsageError(
            f"{where} serves {spec.origin} unsigned, so every answer would be 'insecure'; "
            "pass --allow-insecure to publish there anyway",
            where=spec.origin,
        )
    # Read once: the plan after the updates compares the server with what was pushed.
    # The server was asked for its DNSKEY already (unless --allow-insecure): the zone is
    # transferred while out is read.
    early = None if allow_insecure else start_transfer(spec, server, tsig, timeout)
    with contextlib.nullcontext() if early is None else early as transfer:
        proven = keys is not None and outputs_as_proven(spec.path, out=out, keys=keys)
        wanted = read_desired(spec, out, proven=proven)
        desired = wanted.records
        planned = plan(
            spec,
            out=out,
            server=server,
            tsig=tsig,
            timeout=timeout,
            desired=desired,
            transfer=transfer,
        )
    check_deletes(planned, max_delete, force=force)
    # Settled before anything changes (a server without address stops here); no wait: none.
    fleet = name_servers(spec, ns) if wait > 0 else ()
    sent = apply(planned, server, tsig, timeout=timeout) if planned.pending else 0
    after = replan(spec, planned, desired, out=out, server=server, tsig=tsig, timeout=timeout)
    if after.pending:
        raise PublishError(
            f"{len(after.changes)} owner name(s) still differ after the push "
            "(does the server accept the updates for this zone?)",
            where=where,
        )

    # The primary is proven for the owners it changed only when the plan read after the
    # updates came from a whole zone transfer, or one brought up to date by the server's
    # differences since (every alter1 record compared); copies and
    # a primary without transfers are proven for every handle. Signatures on unchanged
    # names are only checked with --prove-all.
    narrow = not prove_all and planned.pending and after.enumeration in ("axfr", "ixfr")
    changed = [c.owner for c in planned.changes] if narrow else None

    def prove(at: tuple[str, int], owners: list[str] | None = None) -> VerifyReport:
        return verify(
            [definition],
            out=out,
            now=now,
            trust_anchors=trust_anchors,
            server=at,
            allow_insecure=allow_insecure,
            owners=owners,
            log_record=True,
            specs=(spec,),
            expected=(wanted.expectations(owners),),
        )

    proof = prove(server, changed)
    serial = primary_serial(spec, server, timeout=timeout)
    if not proof.ok:  # the primary is wrong: waiting for copies of it proves nothing
        fleet = ()
    convergence = wait_for_serial(spec, fleet, serial, timeout=wait)
    if not convergence.converged:
        return PushReport(planned, sent, proof, convergence, checked_by=after.enumeration)
    others = dict.fromkeys(ns.address for ns in fleet if ns.address != server)  # proven
    fleet_proofs = tuple(prove(address) for address in others)
    return PushReport(planned, sent, proof, convergence, fleet_proofs, after.enumeration)
