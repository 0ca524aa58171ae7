"""The zone built in memory: render through the templates, parse back, lay out, and the
next serial state (:class:`ZonePlan` is everything ``sign`` computed before writing).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dns.zone

from alter_publish.definition.model import ZoneSpec
from alter_publish.definition.state import (
    SERIAL_MAX,
    SerialState,
    SignatureWindow,
    ZoneTTLs,
    key_states,
)
from alter_publish.definition.values import format_utc
from alter_publish.dns.anchors import TrustAnchor, parse_trust_anchors
from alter_publish.dns.dnssec import (
    SignedZone,
)
from alter_publish.dns.records import (
    HandleRecord,
    SignedRRs,
    ZoneRecords,
    from_zone,
    labels_of,
    split_rendered,
    with_handles,
)
from alter_publish.dns.zonekeys import ZoneKey
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.errors import (
    RenderError,
)
from alter_publish.format.identitylog import (
    IdentityLog,
    LogEntry,
)
from alter_publish.pipeline.context import RunContext
from alter_publish.pipeline.paths import output_paths
from alter_publish.pipeline.render import (
    ENVELOPES_FORMAT,
    SignedHandle,
    content_digest,
    handle_rrsets,
    log_rrset,
    missing_tlsa,
    render_zone_text,
    template_context,
)
from alter_publish.pipeline.reports import Change
from alter_publish.pipeline.transparency import Publication
from alter_publish.verify.proof import (
    Expectation,
)
from alter_publish.version import __version__


@dataclass(frozen=True, slots=True)
class ZonePlan:
    """Everything ``sign`` computed for a zone, in memory, before anything is written."""

    spec: ZoneSpec
    log: IdentityLog
    new_entries: tuple[LogEntry, ...]
    signed: tuple[SignedHandle, ...]
    state: SerialState
    #: The zone file's text, in parts written one after the other (the rendered zone,
    #: then the DNSSEC records): never one 100 MB string at 100,000 handles.
    zone_text: tuple[str, ...]
    served: tuple[SignedRRs, ...]
    signed_zone: SignedZone | None = None
    zone_keys: tuple[ZoneKey, ...] = ()
    expectations: Mapping[str, Expectation] = field(default_factory=dict)
    #: Where the rendered text put the serial and each handle (None: not as shipped).
    layout: Layout | None = None
    #: The log's Merkle tree frontier once the new entries are appended.
    log_frontier: tuple[tuple[int, str], ...] = ()
    #: What this run changes and why.
    changes: tuple[Change, ...] = ()
    #: The log's checkpoint and tiles to write (None: not published).
    publication: Publication | None = None
    #: The checkpoint record's text as the zone publishes it (None: it does not).
    log_record: str | None = None

    @property
    def anchors(self) -> tuple[TrustAnchor, ...]:
        """The zone's own DS as trust anchor (none for an unsigned zone)."""
        if self.signed_zone is None:
            return ()
        return parse_trust_anchors(self.signed_zone.ds_text, where=f"{self.spec.origin}.ds")


def handles_added_and_removed(
    spec: ZoneSpec, published: frozenset[str] | None, changes: Sequence[Change]
) -> list[Change]:
    """Handles the last outputs did not publish (whose envelope is reused) or did and the
    definition no longer lists."""
    if published is None:
        return []
    named = {change.handle for change in changes if change.reason == "new"}
    found: list[Change] = [
        Change(handle_spec.handle.ref, "new", "published again")
        for handle_spec in spec.handles
        if handle_spec.handle.ref not in published and handle_spec.handle.ref not in named
    ]
    listed = {handle_spec.handle.ref for handle_spec in spec.handles}
    found += (Change(ref, "removed", "") for ref in sorted(published - listed))
    return found


def zone_changes(
    previous: SerialState | None,
    digest: str,
    window: SignatureWindow | None,
    zone_keys: Sequence[ZoneKey],
    explained: bool,
) -> list[Change]:
    """Why the zone as a whole changes (``explained``: handle changes account for it)."""
    if previous is None:
        return [Change(None, "first-run", "no state file yet")]
    found: list[Change] = []
    if window is not None and window != previous.signatures:
        detail = (
            f"a renewal slot started after {format_utc(previous.signatures.inception)}: "
            "its owners' signatures are made again"
            if previous.signatures is not None
            else "the zone is signed for the first time"
        )
        found.append(Change(None, "dnssec-resign-due", detail))
    if window is not None and key_states(zone_keys) != previous.keys:
        found.append(Change(None, "zone-keys-changed", " ".join(key_states(zone_keys))))
    if digest != previous.digest and not explained and not found:
        detail = "the definition's zone settings or the templates changed"
        found.append(Change(None, "zone-records-changed", detail))
    return found


def published_handles(envelopes_file: Path) -> frozenset[str] | None:
    """The handles ``<zone>.envelopes.json`` lists, or None when it is missing or not
    as this tool writes it (one handle a line, keys sorted)."""
    try:
        data = envelopes_file.read_bytes()
    except OSError:
        return None
    if not data.startswith(b'{\n  "format": ' + json.dumps(ENVELOPES_FORMAT).encode()):
        return None
    refs = _PUBLISHED_HANDLE.findall(data)
    if len(refs) != data.count(b"\n    {"):
        return None
    return frozenset(ref.decode() for ref in refs)


#: The ``"handle"`` key of a handle's line in ``<zone>.envelopes.json`` (a value holds
#: no unescaped quote, so this text is a key wherever it occurs).
_PUBLISHED_HANDLE = re.compile(rb'"handle": "([^"\\]+)"')


_TXT_TYPE = 16

#: Rendered in place of the serial, then replaced: one render gives both the digest text
#: (serial 0) and the zone text. Far above any serial, so it cannot occur by accident.
_SERIAL_SENTINEL = 987_654_321_987_654_321


@dataclass(frozen=True, slots=True)
class Rendered:
    """The zone rendered once: its text, serial, content digest, records and layout."""

    text: str
    serial: int
    digest: str
    records: ZoneRecords
    layout: Layout | None
    #: The checkpoint record's text when the templates rendered it (the proof expects it).
    log_record: str | None = None


def render(
    ctx: RunContext,
    spec: ZoneSpec,
    signed: Sequence[SignedHandle],
    previous_state: SerialState | None,
    window: SignatureWindow | None,
    zone_keys: Sequence[ZoneKey],
    log_note: str | None = None,
) -> Rendered:
    """Render the zone once through ``ctx.templates``: the serial is rendered as a
    sentinel, then replaced by 0 for the digest and by the serial that digest gives.
    ``log_note`` is the log's latest signed checkpoint, published at ``_alter-log``.

    Raises:
        RenderError: a template or the rendered zone is broken.
    """
    templates, version = ctx.templates, __version__
    rrsets = handle_rrsets(signed)
    log = log_rrset(spec, log_note)
    context = template_context(spec, signed, _SERIAL_SENTINEL, version, rrsets, log)
    text = render_zone_text(templates, context)
    del context  # 100,000 dicts: gone before the zone is signed
    sentinel = str(_SERIAL_SENTINEL)
    plain = text.count(sentinel) == 1
    draft = (
        text.replace(sentinel, "0")
        if plain
        else render_zone_text(templates, template_context(spec, signed, 0, version, rrsets, log))
    )
    digest = content_digest(draft + dnssec_fingerprint(spec, zone_keys, window))
    serial = (
        previous_state.next_for(digest, ctx.now)
        if previous_state
        else min(max(ctx.now, 1), SERIAL_MAX)
    )
    zone_text = (
        text.replace(sentinel, str(serial))
        if plain
        else render_zone_text(
            templates, template_context(spec, signed, serial, version, rrsets, log)
        )
    )
    if (line := missing_tlsa(spec, zone_text)) is not None:
        raise RenderError(
            f"the zone template does not render the TLSA record {line!r} (render 'tlsa' as "
            "the shipped zone.j2 does)",
            where=str(templates),
        )
    serial_index = text.find(sentinel) if plain else -1
    del text, draft  # two more copies of the zone otherwise live through signing
    layout_ = find_layout(zone_text, serial_index, rrsets)
    records = rendered_records(spec, rrsets, zone_text)
    published = log is not None and any(
        rrs.rdtype == _TXT_TYPE and list(rrs.wires) == list(log.wires)
        for rrs in records.owners.get(labels_of(log.owner), ())
    )
    return Rendered(
        zone_text, serial, digest, records, layout_, log.texts[0] if log and published else None
    )


@dataclass(frozen=True, slots=True)
class Layout:
    """Where the rendered zone text puts the serial and each handle's lines (byte
    offsets, for the memo of :mod:`incremental`)."""

    serial_at: int
    segments: tuple[int, ...]  # each handle's first line, then the end of the last one's
    rendered_end: int


def find_layout(text: str, serial_index: int, rrsets: Sequence[HandleRecord]) -> Layout | None:
    """The layout of ``text`` as the shipped templates render it (each handle's lines
    start one line above its first record), or None when it is not laid out so."""
    if serial_index < 0 or not rrsets:
        return None
    starts: list[int] = []
    at = 0
    for record in rrsets:
        for number, line in enumerate(record.lines()):
            found = text.find(line, at)
            if found <= 0 or text[found - 1] != "\n":
                return None
            if number == 0:
                start = text.rfind("\n", 0, found - 1) + 1
                if start < at:
                    return None
                starts.append(start)
            at = found + len(line)
    if text[at : at + 1] != "\n" or not text[starts[0] : at].isascii():
        return None
    end = at + 1
    delta = len(text[: starts[0]].encode()) - starts[0]
    return Layout(
        serial_at=len(text[:serial_index].encode()),
        segments=tuple(start + delta for start in (*starts, end)),
        rendered_end=end + delta + len(text[end:].encode()),
    )


def rendered_records(
    spec: ZoneSpec, handle_records: Sequence[HandleRecord], zone_text: str
) -> ZoneRecords:
    """The rendered zone's records: the handle records taken as rendered, the rest parsed
    (the whole text is parsed when the template renders the handle records its own way).

    Raises:
        RenderError: the rendered zone is not valid, or has a wildcard owner.
    """
    zone_file, _ = output_paths(Path(), spec.origin)
    split = split_rendered(zone_text, handle_records)
    if split is not None:
        head = parse_zone_text(
            split.head, spec.origin, where=zone_file.name, line_of=split.original_line
        )
        refuse_wildcards(head, zone_file.name)
        records = with_handles(from_zone(head), handle_records)
        if records is not None:
            return records
    zone = parse_zone_text(zone_text, spec.origin, where=zone_file.name)
    refuse_wildcards(zone, zone_file.name)
    return from_zone(zone)


def next_state(
    previous: SerialState | None,
    serial: int,
    digest: str,
    window: SignatureWindow | None,
    zone_keys: Sequence[ZoneKey],
    signed_zone: SignedZone | None,
    now: int,
    dnskey_ttl: int,
) -> SerialState:
    if signed_zone is None:
        return SerialState(serial=serial, digest=digest, signatures=window)
    states = key_states(zone_keys)
    same = previous is not None and previous.keys == states and previous.keys_since is not None
    before = previous.ttls if previous is not None else None
    ttls = (
        ZoneTTLs(signed_zone.max_ttl, dnskey_ttl)
        if before is None
        else before.next(signed_zone.max_ttl, dnskey_ttl, same_keys=same)
    )
    return SerialState(
        serial=serial,
        digest=digest,
        signatures=window,
        keys=states,
        keys_since=previous.keys_since if same and previous is not None else now,
        ttls=ttls,
    )


def refuse_wildcards(zone: dns.zone.Zone, where: str) -> None:
    """The loopback server does not synthesize wildcard answers, so no proof could pass.

    Raises:
        RenderError: the rendered zone has a wildcard owner name.
    """
    wild = next((name for name in zone.nodes if name.is_wild()), None)
    if wild is not None:
        raise RenderError(
            f"wildcard owner {wild} is not supported (the loopback proof does not "
            "synthesize wildcard answers); list the names instead",
            where=where,
        )


def dnssec_fingerprint(
    spec: ZoneSpec, zone_keys: Sequence[ZoneKey], window: SignatureWindow | None
) -> str:
    """What besides the rendered text decides the signed output (for the serial digest)."""
    if window is None:
        return ""
    doc = {
        "dnssec": spec.dnssec.signing_mapping(),
        "keys": list(key_states(zone_keys)),
        "window": window.to_mapping(),
    }
    return "\n; " + json.dumps(doc, sort_keys=True)


def dnssec_section(signed: SignedZone) -> str:
    return (
        f"\n; DNSSEC (alter-publish): Ed25519 keys, {signed.denial.upper()} denial, "
        f"{signed.signatures} signatures in daily renewal slots, the newest valid "
        f"{format_utc(signed.window.inception)} to {format_utc(signed.window.expiration)}\n"
    )


def dnssec_summary(plan: ZonePlan) -> dict[str, Any] | None:
    signed = plan.signed_zone
    if signed is None:
        return None
    return {
        "denial": signed.denial,
        "signatures": signed.signatures,
        "renewed": signed.renewed,
        "inception": signed.window.inception,
        "expiration": signed.window.expiration,
        "keys": [
            {"role": str(key.role), "tag": key.tag, "algorithm": 15} for key in plan.zone_keys
        ],
    }
