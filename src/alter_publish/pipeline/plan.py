"""One zone planned in memory: the envelope chain, the zone keys, the render and the
DNSSEC signatures, with the serial state the run will write (:class:`ZonePlan`).
"""

from __future__ import annotations

import dataclasses

from alter_publish.definition.model import ZoneSpec
from alter_publish.definition.state import (
    SerialState,
    SignatureWindow,
    state_path_for,
    zone_sha256,
)
from alter_publish.dns.dnssec import SignedZone, choose_window, sign_records
from alter_publish.dns.records import SignedRRs, ZoneRecords, unsigned_rrsets
from alter_publish.dns.zonekeys import ZoneKey
from alter_publish.format.identitylog import IdentityLog, log_path_for, read_log
from alter_publish.format.tiles import TreeHashes
from alter_publish.keys.lifecycle import (
    LogIndex,
    read_revocations,
    revocations_path_for,
    zone_revocations,
)
from alter_publish.pipeline.build import (
    ZonePlan,
    dnssec_section,
    handles_added_and_removed,
    next_state,
    render,
    zone_changes,
)
from alter_publish.pipeline.chain import EnvelopeChain, handle_expectations, run_chain
from alter_publish.pipeline.context import RunContext
from alter_publish.pipeline.reports import Stopwatch
from alter_publish.pipeline.transparency import Publication, plan_publication


def plan_zone(
    ctx: RunContext,
    spec: ZoneSpec,
    watch: Stopwatch,
    published: frozenset[str] | None = None,
) -> ZonePlan:
    """Sign what needs signing and render the zone, without writing outputs.

    ``published`` (the handles of the last outputs, when known) lets the plan's
    ``changes`` name the handles added and removed since.

    Raises:
        KeyStoreError: missing or unusable keys.
        RenderError: a template or the rendered zone is broken.
        SigningError: the zone keys cannot sign.
    """
    with watch.stage("keys+envelopes"):
        log = read_log(log_path_for(spec.path))
        index = LogIndex(log)
        revocations = zone_revocations(
            spec, index, read_revocations(revocations_path_for(spec.path))
        )
        chain = EnvelopeChain(spec, ctx.keys, ctx.now, index, revocations, log.tree())
        run_chain(ctx, chain, log)
        expectations = handle_expectations(chain.signed, index)
    with watch.stage("log"):
        publication = _publish_log(ctx, spec, log, chain)
    with watch.stage("zone keys"):
        zone_keys = (
            ctx.keys.zones.current(spec.origin, create=ctx.create_keys, now=ctx.now)
            if spec.dnssec.enabled
            else ()
        )
    with watch.stage("render"):
        previous = SerialState.read(state_path_for(spec.path))
        window = choose_window(ctx.now, spec.dnssec) if spec.dnssec.enabled else None
        rendered = render(ctx, spec, chain.signed, previous, window, zone_keys, publication.latest)
    signed_zone: SignedZone | None = None
    served: tuple[SignedRRs, ...]
    dnssec_text: tuple[str, ...] = ()
    if window is not None:
        with watch.stage("dnssec"):
            since = previous.signatures if previous else None
            signed_zone, dnssec_text = _sign(
                ctx, spec, rendered.records, zone_keys, (window, since)
            )
            served = signed_zone.rrsets
    else:
        served = unsigned_rrsets(rendered.records)
    changes = chain.changes
    changes += handles_added_and_removed(spec, published, changes)
    changes += zone_changes(previous, rendered.digest, window, zone_keys, bool(changes))
    state = next_state(
        previous,
        rendered.serial,
        rendered.digest,
        window,
        zone_keys,
        signed_zone,
        ctx.now,
        spec.ttl,
    )
    return ZonePlan(
        spec=spec,
        log=log,
        new_entries=tuple(chain.new_entries),
        signed=tuple(chain.signed),
        state=dataclasses.replace(state, zone_sha256=zone_sha256((rendered.text, *dnssec_text))),
        zone_text=(rendered.text, *dnssec_text),
        served=served,
        signed_zone=signed_zone,
        zone_keys=zone_keys,
        expectations=expectations,
        layout=rendered.layout,
        log_frontier=tuple(chain.tree.frontier()),
        changes=tuple(changes),
        publication=publication,
        log_record=rendered.log_record,
    )


def _publish_log(
    ctx: RunContext, spec: ZoneSpec, log: IdentityLog, chain: EnvelopeChain
) -> Publication:
    """The log's tiles rebuilt from every entry and the run's checkpoint (each envelope's
    tlog-proof is made as the envelopes file is written: ``transparency.tlog_proof``).

    Raises:
        KeyStoreError: the zone has checkpoints but its log key is gone.
        RenderError: the checkpoint history is unreadable.
    """
    tree = TreeHashes.of_entries(entry.to_bytes() for entry in (*log.entries, *chain.new_entries))
    publication = plan_publication(
        ctx.keys, spec.origin, spec.path, ctx.out, tree, create=ctx.create_keys
    )
    return publication


def _sign(
    ctx: RunContext,
    spec: ZoneSpec,
    records: ZoneRecords,
    zone_keys: tuple[ZoneKey, ...],
    windows: tuple[SignatureWindow, SignatureWindow | None],
) -> tuple[SignedZone, tuple[str, ...]]:
    """The zone's DNSSEC records, and the text they add to the zone file (the plan keeps
    no second reference to the records' text); ``windows``: the zone's signature window
    and the previous run's (to count the RRSIGs renewed).

    Raises:
        SigningError: the zone keys cannot sign.
    """
    signed_zone = sign_records(
        records,
        keys=zone_keys,
        spec=spec.dnssec,
        window=windows[0],
        dnskey_ttl=spec.ttl,
        jobs=ctx.jobs,
        progress=ctx.progress,
        spread=True,
        renewed_since=None if windows[1] is None else windows[1].inception,
    )
    text = (dnssec_section(signed_zone), *signed_zone.records_parts)
    return dataclasses.replace(signed_zone, records_parts=()), text
