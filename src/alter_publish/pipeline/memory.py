"""What a proven run leaves for the next: the fingerprint (nothing changed?) and the memo
(where each handle's lines stand, to patch a few of them).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alter_publish.definition.entries import Entries, split_entries
from alter_publish.definition.model import (
    ZoneSpec,
)
from alter_publish.definition.state import SERIAL_MAX, SignatureWindow
from alter_publish.dns.records import (
    labels_of,
)
from alter_publish.errors import RenderError
from alter_publish.fileio import put_in_place, write_temporary
from alter_publish.format.envelope import (
    CLOCK_SKEW_SECONDS,
)
from alter_publish.keys.journal import NO_JOURNAL
from alter_publish.pipeline.build import Layout, ZonePlan, dnssec_summary
from alter_publish.pipeline.context import RunContext
from alter_publish.pipeline.fingerprint import (
    Fingerprint,
    KeyLines,
    all_key_lines,
    fingerprint_inputs,
    fingerprint_path,
    forget,
    lines_digest,
    split_handle_keys,
)
from alter_publish.pipeline.incremental import Memo, memo_path
from alter_publish.pipeline.paths import default_templates_dir
from alter_publish.pipeline.render import (
    SignedHandle,
)
from alter_publish.threads import soon

#: An envelope that never expires never falls due (past any ``now`` a run can take).
NEVER_DUE = SERIAL_MAX * 2


def envelope_due(item: SignedHandle, spec: ZoneSpec) -> int:
    """When a run must renew ``item``'s envelope (``renew_before`` ahead of its ``x=``)."""
    envelope = item.envelope
    if envelope.expires_at is None:
        return NEVER_DUE
    lifetime = item.spec.lifetime or envelope.expires_at - envelope.signed_at
    return envelope.expires_at - spec.renew_window(lifetime)


def valid_span(
    signed: Sequence[SignedHandle], window: SignatureWindow | None, spec: ZoneSpec
) -> tuple[int, int]:
    """The ``now`` values at which a new run would reuse every envelope of ``signed``
    and every RRSIG made in ``window``."""
    start = max((item.envelope.signed_at for item in signed), default=0)
    start -= CLOCK_SKEW_SECONDS
    stop = min((envelope_due(item, spec) for item in signed), default=NEVER_DUE)
    if window is not None:  # the zone's window: until the next renewal slot starts
        start = max(start, window.expiration - spec.dnssec.signature_validity)
        stop = min(stop, window.renews_at(spec.dnssec))
    return start, stop


def record_fingerprint(ctx: RunContext, plan: ZonePlan, source: str) -> KeyLines:
    """After a written run: record it (``source``: the definition's text as read) if
    proven (``ctx.verify``), else drop any older record.

    Returns:
        The handles' key ``stat`` lines it recorded, every one taken now (none when not
        proven).
    """
    spec = plan.spec
    path = fingerprint_path(ctx.out, spec.path)
    if not ctx.verify:
        forget(path)
        return KeyLines((), NO_JOURNAL)
    handle_keys = tuple(
        (ctx.keys.handle_dir_text(spec.origin, item.spec.handle), item.envelope.epoch)
        for item in plan.signed
    )
    signed_zone = plan.signed_zone
    summary = {
        "warnings": list(spec.warnings()),
        "serial": plan.state.serial,
        "ds": list(signed_zone.ds_text.splitlines()) if signed_zone else [],
        "dnssec": dnssec_summary(plan),
    }
    if files := tls_files(spec):
        summary["tls_files"] = files
    summary |= spec.log.to_mapping()
    span = valid_span(plan.signed, plan.state.signatures, spec)
    keys = all_key_lines(ctx.keys.root, spec.origin, handle_keys, jobs=ctx.jobs)
    fingerprint_later(ctx, spec, source, handle_keys, keys, span, summary).hashed()()
    return keys


@dataclass(frozen=True, slots=True)
class Drafted:
    """A record made in three steps: made, and written to a temporary file (synced) in a
    thread, but for its digest; ``hashed`` (call it once the log and state are written)
    hashes what the run's last writes cannot change, in a thread, and gives the function
    that makes the rest of the digest, writes it in and renames the file; or ``drop``
    removes the file (the run did not commit)."""

    hashed: Callable[[], Callable[[], None]]
    drop: Callable[[], None]


def fingerprint_later(
    ctx: RunContext,
    spec: ZoneSpec,
    source: str,
    handle_keys: tuple[tuple[str, int], ...],
    keys: KeyLines,
    span: tuple[int, int],
    summary: Mapping[str, Any],
) -> Drafted:
    """Record a proven, written run of ``spec`` (see :mod:`fingerprint`; ``keys``: the
    lines of its ``handle_keys``) in three steps (:class:`Drafted`): its JSON now, with
    the digest's place held, written to a temporary file and synced in a thread; the
    first function it gives hashes what the run's last writes cannot change
    (:meth:`Inputs.digest_later`, in a thread: call it once the log and state are
    written); the second makes the rest of the digest and puts it in (once the outputs
    and the state are written).

    Raises:
        RenderError: (the functions it gives) the record cannot be written.
    """
    zone_keys_dir = str(ctx.keys.zones.directory(spec.origin))
    inputs = fingerprint_inputs(
        ctx,
        spec.path,
        spec.origin,
        zone_keys_dir,
        handle_keys,
        source,
        tls_files=[str(name) for name in summary.get("tls_files", ())],
    )
    keys_digest = lines_digest(keys.lines)
    split = split_handle_keys(handle_keys)  # made once: the digest's line and the JSON
    keys_line = inputs.keys_line(keys_digest, split)
    record = Fingerprint(
        digest="",
        valid_from=span[0],
        valid_until=span[1],
        zone=spec.origin,
        zone_keys_dir=zone_keys_dir,
        handle_keys=handle_keys,
        summary=summary,
        keys_digest=keys_digest,
        keys_mark=keys.mark,
        source_sha256=inputs.definition_sha256(),
    )
    path = fingerprint_path(ctx.out, spec.path)
    draft = record.text_later(split)(_HELD).encode()
    at = _held_at(draft, "digest")
    written = _written_soon(path, draft)
    hashing: list[Callable[[], Callable[[], str]]] = []  # the digest's thread, once started

    def hashed() -> Callable[[], None]:
        # The content files hashed as they are now (the log and state as the run wrote
        # them) in a thread, while the outputs are synced; the digest made once it is done.
        hashing.append(soon(functools.partial(inputs.digest_later, keys_line), "record digest"))

        def put() -> None:
            try:
                digest = hashing[0]()().encode()
            except BaseException:
                _drop(written)
                raise
            put_in_place(written(), path, error=RenderError, at=at, patch=digest)

        return put

    def drop() -> None:
        try:
            for started in hashing:  # no thread outlives the run
                with contextlib.suppress(Exception):
                    started()
        finally:
            _drop(written)

    return Drafted(hashed, drop)


def patch_record_later(
    ctx: RunContext,
    spec: ZoneSpec,
    entries: Entries,
    handle_keys: tuple[tuple[str, int], ...],
    keys: KeyLines,
    span: tuple[int, int],
    summary: Mapping[str, Any],
    memo: Memo,
) -> Drafted:
    """The fingerprint (:func:`fingerprint_later`) and ``memo`` (its key lines ``keys``)
    of a patched run, in the three steps of :class:`Drafted`: made, and written to
    temporary files and synced in threads, while the outputs are copied; the content
    files hashed once the log and state are written; the digests (of the outputs, known
    once they are switched to) written in before each is renamed (the fingerprint first).

    Raises:
        RenderError: (the functions it gives) the fingerprint or memo cannot be written.
    """
    fingerprint = fingerprint_later(ctx, spec, entries.text, handle_keys, keys, span, summary)
    path = memo_path(ctx.out, spec.path)
    try:
        memo = dataclasses.replace(memo, keys=keys.lines, keys_mark=keys.mark, base=_HELD)
        draft = memo.to_bytes()
        at = _held_at(draft, "base")
        written = _written_soon(path, draft)
    except BaseException:
        fingerprint.drop()
        raise

    def hashed() -> Callable[[], None]:
        put_fingerprint = fingerprint.hashed()

        def put() -> None:
            try:
                put_fingerprint()
                digest = base_digest(ctx, spec.path, spec.origin, entries).encode()
            except BaseException:  # a new fingerprint beside the old memo: a full run next
                _drop(written)
                raise
            put_in_place(written(), path, error=RenderError, at=at, patch=digest)

        return put

    def drop() -> None:
        fingerprint.drop()
        _drop(written)

    return Drafted(hashed, drop)


def _drop(written: Callable[[], Path]) -> None:
    """Wait for a record's temporary file and remove it."""
    with contextlib.suppress(Exception):
        written().unlink(missing_ok=True)


def _written_soon(path: Path, draft: bytes) -> Callable[[], Path]:
    """Write ``draft`` to a temporary file beside ``path`` and sync it, in a thread: its
    fsync ends when the outputs synced meanwhile are on disk (ext4's ordered data), so
    the caller does not wait for it. The function it gives waits and gives the file.

    Raises:
        RenderError: (the function it gives) it cannot be written.
    """
    write = functools.partial(write_temporary, path, (draft,), error=RenderError)
    return soon(write, f"record {path.name}")


#: A digest's place (64 hex digits: SHA-256) in a record written before it is known.
_HELD = "0" * 64


def _held_at(draft: bytes, key: str) -> int:
    """Where the digest held for ``key`` starts in ``draft``: in its first line (the
    fingerprint's first key; the memo's head, before its sections).

    Raises:
        ValueError: it holds no such place there.
    """
    return draft.index(f'"{key}":"{_HELD}"'.encode(), 0, draft.index(b"\n")) + len(key) + 4


def tls_files(spec: ZoneSpec) -> list[str]:
    """The certificate and key files the zone's TLSA records come from: the record of a
    run tracks them (an edit of one changes the zone's records, not the definition)."""
    return sorted({str(path) for found in spec.tlsa_sets() for path in found.files})


def shipped_templates(templates: Path) -> bool:
    """True when ``templates`` holds exactly the templates alter-publish ships (the
    layout :mod:`incremental` patches is theirs)."""
    try:
        ours = {path.name: path.read_bytes() for path in default_templates_dir().glob("*.j2")}
        theirs = {path.name: path.read_bytes() for path in templates.glob("*.j2")}
    except OSError:
        return False
    return bool(ours) and ours == theirs


#: What stands before the serial in the last part of the envelopes document.
_ENVELOPES_SERIAL_PREFIX = '],\n  "serial": '


def base_digest(ctx: RunContext, definition: Path, origin: str, entries: Entries) -> str:
    """The digest of everything but the handle entries and keys (see ``Inputs.base_digest``)."""
    zone_keys_dir = str(ctx.keys.zones.directory(origin))
    inputs = fingerprint_inputs(ctx, definition, origin, zone_keys_dir, ())
    return inputs.base_digest(entries.header)


def record_memo(
    ctx: RunContext,
    plan: ZonePlan,
    source: str,
    keys: KeyLines,
    envelope_starts: Sequence[int],
) -> None:
    """After a written full run: leave the memo the next run may patch from (none unless
    proven with the shipped templates)."""
    path = memo_path(ctx.out, plan.spec.path)
    memo = None
    if ctx.verify and plan.layout is not None and shipped_templates(ctx.templates):
        memo = _full_memo(plan, split_entries(source), plan.layout, keys, envelope_starts)
    if memo is None:
        forget(path)
        return
    base = base_digest(ctx, plan.spec.path, plan.spec.origin, memo[1])
    dataclasses.replace(memo[0], base=base).write(path)


def _full_memo(
    plan: ZonePlan,
    entries: Entries | None,
    layout: Layout,
    keys: KeyLines,
    envelope_starts: Sequence[int],
) -> tuple[Memo, Entries] | None:
    spec = plan.spec
    count = len(plan.signed)
    if entries is None or len(entries.texts) != count or len(envelope_starts) != count + 3:
        return None
    if len({item.spec.owner for item in plan.signed}) != count:
        return None  # handles sharing an owner share one rrset: only a full run signs it
    blocks: list[int] = []
    apex = (0, 0)
    if plan.signed_zone is not None:
        base = layout.rendered_end + len(plan.zone_text[1].encode())
        found = plan.signed_zone.blocks
        try:
            for item in plan.signed:
                start, end = found[labels_of(item.spec.owner)]
                blocks += (base + start, base + end)
            start, end = found[labels_of(spec.origin + ".")]
        except KeyError:
            return None
        apex = (base + start, base + end)
    memo = Memo(
        zone=spec.origin,
        base="",
        refs=tuple(item.spec.handle.ref for item in plan.signed),
        entries=entries.texts,
        keys=keys.lines,
        keys_mark=keys.mark,
        ttls=tuple(item.spec.ttl for item in plan.signed),
        dues=tuple(envelope_due(item, spec) for item in plan.signed),
        log=plan.log_frontier,
        serial=plan.state.serial,
        serial_at=layout.serial_at,
        rendered_end=layout.rendered_end,
        segments=layout.segments,
        blocks=tuple(blocks),
        apex=apex,
        envelopes=tuple(envelope_starts[1 : count + 2]),
        envelopes_serial_at=envelope_starts[count + 2] + len(_ENVELOPES_SERIAL_PREFIX),
    )
    return memo, entries
