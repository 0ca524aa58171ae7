"""``verify``: prove already-rendered output, on the loopback server or a real one."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import dns.zone

from alter_publish.definition.model import (
    ZoneSpec,
    load_zone,
)
from alter_publish.definition.state import SerialState, state_path_for, zone_sha256
from alter_publish.dns.anchors import TrustAnchor, read_trust_anchors
from alter_publish.dns.hints import RootHints
from alter_publish.errors import (
    AlterError,
    RenderError,
    VerificationError,
)
from alter_publish.format.envelope import (
    Envelope,
    parse_envelope,
)
from alter_publish.format.identitylog import (
    log_path_for,
    read_log,
)
from alter_publish.format.logrecord import checkpoint_record
from alter_publish.keys.lifecycle import (
    LogIndex,
)
from alter_publish.keys.logkey import LogKeyStore
from alter_publish.pipeline.chain import handle_expectation
from alter_publish.pipeline.logverify import check_published_log, published_log_note
from alter_publish.pipeline.paths import current_outputs, ds_path, output_paths
from alter_publish.pipeline.reports import VerifyReport
from alter_publish.pipeline.zonefiles import read_zone_file
from alter_publish.verify.proof import (
    Expectation,
    ProofReport,
    check_answers,
    prove_served,
    prove_zone,
)
from alter_publish.verify.zonecheck import ZONE_CHECK_CATEGORY, check_zone


def read_expected(
    envelopes_file: Path, where: Path | None = None, *, only: Collection[str] | None = None
) -> dict[str, tuple[Envelope, tuple[str, ...]]]:
    """Handle-ref -> (signed envelope, revocation texts) from ``<zone>.envelopes.json``
    (named ``where`` in errors: the stable path of a file read from an output set);
    ``only``: just these handles' entries are parsed (a proof of a few handles).

    Raises:
        RenderError: missing, unreadable or not an envelopes document.
    """
    try:
        doc = json.loads(envelopes_file.read_text(encoding="utf-8"))
        return {
            str(item["handle"]): (
                parse_envelope(str(item["text"])),
                tuple(str(text) for text in item.get("revocations", ())),
            )
            for item in doc["handles"]
            if only is None or str(item["handle"]) in only
        }
    except FileNotFoundError as exc:
        raise RenderError(
            "not found; run 'alter-publish sign' first", where=str(where or envelopes_file)
        ) from exc
    except (OSError, ValueError, KeyError, TypeError, AlterError) as exc:
        raise RenderError(
            f"not an envelopes document ({exc})", where=str(where or envelopes_file)
        ) from exc


def expectations_for(
    spec: ZoneSpec, envelopes_file: Path, *, where: Path | None = None, narrowed: bool = False
) -> dict[str, Expectation]:
    """Handle-ref -> what ``sign`` signed and proved for it, from the envelopes document
    (named ``where`` in errors) and the zone's log (each rotated handle's previous key);
    ``narrowed``: ``spec`` holds a few of the zone's handles, and only their entries of
    the document are read (the others are not checked).

    Raises:
        RenderError: the envelopes document or the log is missing or broken.
    """
    index = LogIndex(read_log(log_path_for(spec.path)))
    only = {handle.handle.ref for handle in spec.handles} if narrowed else None
    expected = read_expected(envelopes_file, where=where, only=only)
    return {
        handle_spec.handle.ref: handle_expectation(handle_spec, envelope, revocations, index)
        for handle_spec in spec.handles
        if handle_spec.handle.ref in expected
        for envelope, revocations in [expected[handle_spec.handle.ref]]
    }


def verify(
    zone_files: Sequence[Path],
    *,
    out: Path,
    now: int,
    trust_anchors: Path | None = None,
    server: tuple[str, int] | None = None,
    allow_insecure: bool = False,
    root_hints: RootHints | None = None,
    owners: Collection[str] | None = None,
    log_keys: LogKeyStore | None = None,
    log_record: bool = False,
    specs: Sequence[ZoneSpec] | None = None,
    expected: Sequence[Mapping[str, Expectation]] | None = None,
) -> VerifyReport:
    """Prove already-rendered output: serve ``<out>/<zone>.zone`` and verify every handle.

    Unless a handle failed the proof, the whole zone file is then checked
    (:func:`alter_publish.verify.zonecheck.check_zone`): every RRSIG, the TTLs they sign and the
    NSEC/NSEC3 chain, then its SHA-256 against the one ``sign`` recorded in the zone's
    state file. The first record found wrong fails the run.

    With ``server`` the proof runs against that name server instead (BIND, Knot, NSD,
    a provider): what it serves must be what ``sign`` wrote to
    ``<out>/<zone>.envelopes.json``. DNSSEC zones are validated to ``trust_anchors``
    (DS or DNSKEY records), by default the ``<out>/<zone>.ds`` that ``sign`` wrote;
    ``allow_insecure`` accepts unsigned answers (a server that does not sign).
    An anchor above the zone (the root's) is followed down the chain of trust, from
    ``root_hints`` when the server is neither recursive nor serves the whole path.
    ``owners`` (with ``server`` only: ``push`` after a small change) limits the proof to
    the handles at those owner names (lower-case text with the final dot); the chain of
    trust to them is proven as for every handle. ``log_keys``: the log too (``_check_log``).
    ``log_record`` (with ``server``: ``push``): the ``_alter-log`` record too, validated
    like the handles, as the log-signed note of ``<out>/<zone>/log/checkpoint``.
    ``specs``: ``zone_files`` as the caller loaded them, in order (``push``: parsed once).
    ``expected``: with ``specs``, each zone's handle-ref -> :class:`Expectation` of the
    handles proven, as the caller read them (``push``: the document it planned with).

    Raises:
        DefinitionError: a zone definition is wrong.
        RenderError: an output file (the log's checkpoint included) is missing or broken.
        UsageError: a trust anchor file is missing or not DS/DNSKEY records.
        ServeError: the loopback server could not start.
        ResolveError: ``server`` gives no usable answer (down, or refusing the zone).
        VerificationError: the zone file is not the one ``sign`` proved (names the record).
    """
    proofs: list[ProofReport] = []
    warnings: list[str] = []
    given = read_trust_anchors(trust_anchors) if trust_anchors else None
    loaded: Sequence[ZoneSpec | None] = [None] * len(zone_files) if specs is None else specs
    for index, (path, known) in enumerate(zip(zone_files, loaded, strict=True)):
        spec = load_zone(path) if known is None else known
        warnings.extend(spec.warnings())
        zone_file, envelopes_file = output_paths(out, spec.origin)  # named in messages
        read = current_outputs(out, spec.origin)  # read: one set, however sign switches it
        anchors = given if given is not None else _own_anchors(spec, out, read[2], allow_insecure)
        if narrowed := server is not None and owners is not None:  # those handles only
            spec = _at_owners(spec, owners or ())
        expectations = _expectations(spec, expected, index, (read[1], envelopes_file), narrowed)
        if server is None:
            zone = read_zone_file(read[0], spec.origin, where=zone_file)
            proofs.append(prove_zone(zone, spec, expectations, now=now, anchors=anchors))
            if all(result.ok for result in proofs[-1].results):
                warnings.extend(_check_zone_file(zone, (read[0], zone_file), spec, now))
                _check_log(zone, spec, out, log_keys)
        else:
            check_answers(server, spec.origin, now=now)
            proofs.append(
                prove_served(
                    server,
                    spec,
                    expectations,
                    now=now,
                    anchors=anchors,
                    secure=False if allow_insecure else None,
                    root_hints=root_hints,
                    checkpoint=_log_record(out, spec.origin) if log_record else None,
                )
            )
    return VerifyReport(proofs=tuple(proofs), warnings=tuple(warnings))


def _expectations(
    spec: ZoneSpec,
    expected: Sequence[Mapping[str, Expectation]] | None,
    index: int,
    document: tuple[Path, Path],
    narrowed: bool,
) -> dict[str, Expectation]:
    """What the proof of zone ``index`` expects: the caller's (``expected``), else what
    the envelopes ``document`` (read, named in errors) says for ``spec``'s handles.

    Raises:
        RenderError: the envelopes document or the log is missing or broken.
    """
    if expected is not None:
        return dict(expected[index])
    return expectations_for(spec, document[0], where=document[1], narrowed=narrowed)


def _own_anchors(
    spec: ZoneSpec, out: Path, ds_file: Path, allow_insecure: bool
) -> tuple[TrustAnchor, ...]:
    """The anchors of a zone proven without ``--trust-anchor``: the DS ``sign`` wrote
    (``ds_file``, read from the current output set) for a signed zone; none otherwise.

    Raises:
        UsageError: the DS file is missing or not DS records.
    """
    if spec.dnssec.enabled and not allow_insecure:
        return read_trust_anchors(ds_file, where=ds_path(out, spec.origin))
    return ()


def _at_owners(spec: ZoneSpec, owners: Collection[str]) -> ZoneSpec:
    """``spec`` with only its handles at ``owners`` (lower-case, absolute)."""
    wanted = frozenset(owners)
    return dataclasses.replace(
        spec, handles=tuple(handle for handle in spec.handles if handle.owner in wanted)
    )


def _log_record(out: Path, origin: str) -> str | None:
    """The ``_alter-log`` record text of ``<out>/<origin>/log/checkpoint`` (its log-signed
    note); None when the zone publishes no log.

    Raises:
        RenderError: the checkpoint file is unreadable or not a signed note.
    """
    note = published_log_note(out, origin)
    return None if note is None else checkpoint_record(note)


def _check_log(
    zone: dns.zone.Zone, spec: ZoneSpec, out: Path, log_keys: LogKeyStore | None
) -> None:
    """With ``log_keys`` (loopback ``verify``): the zone's ``_alter-log`` record must be the
    log-signed checkpoint of ``<out>/<zone>/log/checkpoint``, signed by the zone's log
    key, and the log's tiles must give it
    (:func:`alter_publish.pipeline.logverify.check_published_log`).

    Raises:
        VerificationError: with its category.
        KeyStoreError: the log key's public file is missing or unreadable.
    """
    if log_keys is None:
        return
    # The public key file only (the retired key's while a handover is pending): no
    # private key is read, no passphrase needed.
    check_published_log(zone, spec.origin, out, log_keys.verifier(spec.origin))


def _check_zone_file(
    zone: dns.zone.Zone,
    files: tuple[Path, Path],
    spec: ZoneSpec,
    now: int,
) -> tuple[str, ...]:
    """The whole-zone check of :func:`verify`: signatures and chain, then the digest. It
    runs once every handle passed: a handle that failed is reported as the proof found
    it; when only the denial probe failed, this names the record (the SOA, the chain).

    Returns a warning when no digest was recorded (the file is then not compared).

    Raises:
        VerificationError: names the first record (or the file) not as ``sign`` proved it.
        RenderError: the state file or the zone file cannot be read.
    """
    path, zone_file = files  # the file read, and its name
    check_zone(zone, dnssec=spec.dnssec, now=now, where=str(zone_file))
    state_path = state_path_for(spec.path)
    state = SerialState.read(state_path)
    if state is None or state.zone_sha256 is None:  # no state, or signed before the digest
        return (
            f"{zone_file}: {state_path} records no SHA-256 of the zone file sign wrote: "
            "the file was checked record by record only, not compared with it",
        )
    try:
        digest = zone_sha256((path.read_bytes(),))
    except OSError as exc:
        raise RenderError(f"cannot read: {exc.strerror}", where=str(zone_file)) from exc
    if digest == state.previous_zone_sha256 and digest != state.zone_sha256:
        return (
            f"{zone_file}: the outputs of the sign before the last one (the last was stopped "
            f"after writing {state_path}, before switching the outputs); run sign again",
        )
    if digest != state.zone_sha256:
        raise VerificationError(
            f"not the zone file sign wrote (its SHA-256 is not the one in {state_path}); "
            + (
                "every record verifies, so it was re-signed or edited outside alter-publish"
                if spec.dnssec.enabled
                else "the zone is unsigned, so no record can say which line changed"
            ),
            where=str(zone_file),
            category=ZONE_CHECK_CATEGORY,
        )
    return ()
