"""The library calls the CLI makes: sign, verify, keygen, resolve and friends.

``sign`` runs the whole pipeline for each zone: load the definition, load keys,
reuse or sign envelopes (appending new ones to the IdentityLog), render the zone
through the templates, parse it back, DNSSEC-sign it, prove it on a loopback
server (every handle resolved, validated to the zone's DS and verified), and
only then write the log, the serial state and the outputs.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dns.zone
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.definition import workspace
from alter_publish.definition.loader import read_definition
from alter_publish.definition.model import (
    NEVER,
    HandleSpec,
    ZoneSpec,
    format_duration,
    format_utc,
    load_handle_entries,
    load_zone,
    load_zone_text,
)
from alter_publish.definition.workspace import OFFLINE_DIR, OFFLINE_GITIGNORE_TEXT
from alter_publish.definition.workspace import zone_origin as zone_origin  # re-exported
from alter_publish.dns.anchors import TrustAnchor, parse_trust_anchors, read_trust_anchors
from alter_publish.dns.dnssec import (
    SignatureWindow,
    SignedZone,
    choose_window,
    rrsig_lines,
    sign_records,
)
from alter_publish.dns.records import (
    HandleRecord,
    Labels,
    RRs,
    SignedRRs,
    ZoneRecords,
    from_zone,
    labels_of,
    split_rendered,
    unsigned_rrsets,
    with_handles,
)
from alter_publish.dns.zonekeys import ZoneKey, ZoneKeyEntry
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.errors import (
    AlterError,
    DefinitionError,
    KeyStoreError,
    RenderError,
    UsageError,
    VerificationError,
)
from alter_publish.fileio import (
    Chunk,
    atomic_write_bytes,
    atomic_write_chunks,
    atomic_write_text,
    chunks_differ,
    content_differs,
    text_differs,
)
from alter_publish.format.ed25519 import SigningKey
from alter_publish.format.envelope import (
    CLOCK_SKEW_SECONDS,
    Envelope,
    Tags,
    key_id,
    parse_envelope,
    sign_envelope,
)
from alter_publish.format.handles import Handle
from alter_publish.format.identitylog import (
    IdentityLog,
    LogEntry,
    MerkleTree,
    append_entries,
    append_lines,
    log_path_for,
    read_log,
    read_owner_entries,
)
from alter_publish.keys.lifecycle import (
    HandleRevocations,
    LogIndex,
    read_revocations,
    revocations_path_for,
    zone_revocations,
)
from alter_publish.keys.store import Continuity, HandleKey, KeyStore
from alter_publish.parallel import NoProgress, Progress, Workers, ranges, shared
from alter_publish.pipeline.clock import serial_warning
from alter_publish.pipeline.fingerprint import (
    Fingerprint,
    Inputs,
    fingerprint_path,
    forget,
    handle_key_lines,
    inputs_for,
    remembering_digests,
)
from alter_publish.pipeline.incremental import (
    PATCH_MAX_SHARE,
    PATCH_OWNER_SCANS,
    Edit,
    Entries,
    Memo,
    apply_edits,
    memo_path,
    shift,
    split_entries,
)
from alter_publish.pipeline.render import (
    ENVELOPES_FORMAT,
    SignedHandle,
    content_digest,
    envelope_line,
    envelopes_document,
    handle_rrsets,
    handle_segments,
    render_zone_text,
    template_context,
)
from alter_publish.verify.proof import (
    Expectation,
    ProofReport,
    check_answers,
    prove_records,
    prove_served,
    prove_zone,
)
from alter_publish.verify.zonecheck import ZONE_CHECK_CATEGORY, check_zone
from alter_publish.version import __version__

SERIAL_MAX = 2**32 - 1
_SOA_TYPE = 6
_TXT_TYPE = 16
STATE_FORMAT = "alter-publish/state/1"


# --- reports -----------------------------------------------------------------

#: Why a run changes a zone's outputs (``Change.reason``): per handle, then for the zone.
HANDLE_CHANGE_REASONS = (
    "new",  # published for the first time (or again, after it was taken out)
    "removed",  # no longer in the definition
    "key-rotated",  # the key store holds a newer epoch than the one published
    "key-changed",  # same epoch, another revocation commitment
    "epoch-revoked",  # a revocation of one of its epochs is queued
    "resolver-changed",
    "tags-changed",
    "lifetime-changed",
    "renewal-due",  # within renew_before of its expiry
    "signed-after-now",  # the published envelope is dated after now (a clock set back)
)
ZONE_CHANGE_REASONS = (
    "first-run",  # no state file yet
    "dnssec-resign-due",  # the RRSIGs are within dnssec.refresh of expiring
    "zone-keys-changed",  # DNSSEC keys created, or a rollover step taken
    "zone-records-changed",  # zone-level settings of the definition, or the templates
    "outputs-differ",  # outputs edited or missing: the inputs give other bytes
)


@dataclass(frozen=True, slots=True)
class Change:
    """Why a run changes a handle's records, or (``handle`` None) the zone as a whole."""

    handle: str | None
    reason: str  # one of HANDLE_CHANGE_REASONS or ZONE_CHANGE_REASONS
    detail: str = ""

    def to_text(self) -> str:
        """``~blake: key-rotated: epoch 1 -> 2`` (``zone: ...`` for zone-level changes)."""
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.handle or 'zone'}: {self.reason}{detail}"

    def to_mapping(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"handle": self.handle, "reason": self.reason, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class ZoneResult:
    """What ``sign`` did for one zone."""

    zone: str
    zone_file: Path
    envelopes_file: Path
    serial: int
    handles: int
    signed: int
    reused: int
    written: tuple[str, ...]
    proof: ProofReport | None
    timings: tuple[tuple[str, float], ...]
    ds_file: Path | None = None
    ds: tuple[str, ...] = ()
    dnssec: dict[str, Any] | None = None
    #: Nothing changed since the last proven run: nothing was signed, proven or written.
    unchanged: bool = False
    #: An incremental run: just these handles were signed, proven and patched in.
    patched: tuple[str, ...] | None = None
    #: What changed and why (with ``--check``: what a real run would change).
    changes: tuple[Change, ...] = ()

    def to_mapping(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "zone": self.zone,
            "changes": [change.to_mapping() for change in self.changes],
            "unchanged": self.unchanged,
            "patched": None if self.patched is None else list(self.patched),
            "zone_file": str(self.zone_file),
            "envelopes_file": str(self.envelopes_file),
            "serial": self.serial,
            "handles": self.handles,
            "signed": self.signed,
            "reused": self.reused,
            "written": list(self.written),
            "proof": self.proof.to_mapping() if self.proof else None,
            "ds_file": str(self.ds_file) if self.ds_file else None,
            "ds": list(self.ds),
            "dnssec": self.dnssec,
            "timings": {stage: round(seconds, 3) for stage, seconds in self.timings},
        }


@dataclass(frozen=True, slots=True)
class SignReport:
    """The outcome of one ``sign`` run; ``committed`` is False when the proof failed."""

    zones: tuple[ZoneResult, ...]
    committed: bool
    warnings: tuple[str, ...] = ()
    check: bool = False  # --check: ``written`` says what would be written
    proven: bool = True  # every proof passed (or was skipped)

    @property
    def drift(self) -> bool:
        """With ``check``: whether a real run would change any file."""
        return any(zone.written for zone in self.zones)

    @property
    def ok(self) -> bool:
        """True when every zone was proven (or the proof was skipped) and written
        (with ``check``: proven)."""
        return self.proven and (self.committed or self.check)

    def to_mapping(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "ok": self.ok,
            "committed": self.committed,
            "check": self.check,
            "drift": self.drift if self.check else None,
            "warnings": list(self.warnings),
            "zones": [z.to_mapping() for z in self.zones],
        }


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The outcome of ``verify`` over already-rendered zones."""

    proofs: tuple[ProofReport, ...]
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every handle of every zone passed."""
        return all(proof.ok for proof in self.proofs)

    def to_mapping(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "ok": self.ok,
            "warnings": list(self.warnings),
            "zones": [proof.to_mapping() for proof in self.proofs],
        }


@dataclass
class _Stopwatch:
    """Stage timings for reports (durations only; never the wall clock)."""

    stages: list[tuple[str, float]] = field(default_factory=list)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.stages.append((name, time.perf_counter() - start))


# --- paths -------------------------------------------------------------------


def default_templates_dir() -> Path:
    """The templates shipped with alter-publish (packaged, or the source tree's)."""
    package = Path(__file__).resolve().parents[1]  # src/alter_publish
    packaged = package / "templates"
    return packaged if packaged.is_dir() else package.parents[1] / "templates"


def state_path_for(zone_file: Path) -> Path:
    """``zones/<zone>.yaml`` -> ``zones/<zone>.state.json`` (the SOA serial state)."""
    return zone_file.with_suffix(".state.json")


def output_paths(out: Path, zone: str) -> tuple[Path, Path]:
    """(``<out>/<zone>.zone``, ``<out>/<zone>.envelopes.json``)."""
    return out / f"{zone}.zone", out / f"{zone}.envelopes.json"


def ds_path(out: Path, zone: str) -> Path:
    """``<out>/<zone>.ds``: the DS records to hand to the parent zone (the trust anchor)."""
    return out / f"{zone}.ds"


def find_zone_files(paths: Sequence[Path], zones_dir: Path | None = None) -> tuple[Path, ...]:
    """The zone definitions named, or every ``zones/*.yaml`` of the nearest directory
    upwards that has any (see :mod:`alter_publish.definition.workspace`).

    Raises:
        UsageError: nothing to work on.
    """
    return workspace.find_zone_files(paths, zones_dir)


# --- state -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ZoneTTLs:
    """TTLs that rollover waits depend on, for the current key states and those before."""

    max_ttl: int
    dnskey_ttl: int
    prior_max_ttl: int = 0
    prior_dnskey_ttl: int = 0

    @property
    def cached_max(self) -> int:
        """The longest any cache may keep a signed rrset published under either states."""
        return max(self.max_ttl, self.prior_max_ttl)

    @property
    def cached_dnskey(self) -> int:
        """The longest any cache may keep a DNSKEY rrset published under either states."""
        return max(self.dnskey_ttl, self.prior_dnskey_ttl)

    def next(self, max_ttl: int, dnskey_ttl: int, *, same_keys: bool) -> ZoneTTLs:
        """After a sign with these TTLs: same key states widen, new states shift."""
        if same_keys:
            return ZoneTTLs(
                max(self.max_ttl, max_ttl),
                max(self.dnskey_ttl, dnskey_ttl),
                self.prior_max_ttl,
                self.prior_dnskey_ttl,
            )
        return ZoneTTLs(max_ttl, dnskey_ttl, self.max_ttl, self.dnskey_ttl)

    def to_mapping(self) -> dict[str, int]:
        """JSON form."""
        return {
            "max_ttl": self.max_ttl,
            "dnskey_ttl": self.dnskey_ttl,
            "prior_max_ttl": self.prior_max_ttl,
            "prior_dnskey_ttl": self.prior_dnskey_ttl,
        }

    @classmethod
    def from_mapping(cls, doc: Mapping[str, Any]) -> ZoneTTLs:
        """Read the JSON form (fields missing in older files count as 0)."""
        max_ttl = int(doc["max_ttl"])
        return cls(
            max_ttl,
            int(doc.get("dnskey_ttl", max_ttl)),
            int(doc.get("prior_max_ttl", 0)),
            int(doc.get("prior_dnskey_ttl", 0)),
        )


@dataclass(frozen=True, slots=True)
class SerialState:
    """The last published serial and the digest of the zone content it labels."""

    serial: int
    digest: str
    signatures: SignatureWindow | None = None
    #: The zone keys the published zone was signed with, as ``role-tag-state``.
    keys: tuple[str, ...] = ()
    #: When a zone with exactly those key states was first published.
    keys_since: int | None = None
    #: The largest TTLs (any signed rrset, DNSKEY) published with these key states, and
    #: with the states before: caches may hold either, so rollover waits use both.
    ttls: ZoneTTLs | None = None
    #: SHA-256 of the zone file as written (``verify`` compares the file with it).
    zone_sha256: str | None = None

    def to_text(self) -> str:
        """JSON form."""
        doc: dict[str, Any] = {"format": STATE_FORMAT, "serial": self.serial, "digest": self.digest}
        if self.signatures is not None:
            doc["signatures"] = self.signatures.to_mapping()
        if self.keys:
            doc["zone_keys"] = {
                "keys": list(self.keys),
                "since": self.keys_since,
                **(self.ttls.to_mapping() if self.ttls else {}),
            }
        if self.zone_sha256 is not None:
            doc["zone_sha256"] = self.zone_sha256
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"

    @classmethod
    def read(cls, path: Path) -> SerialState | None:
        """Read the state file; None when it does not exist.

        Raises:
            RenderError: the file is unreadable or not a state document.
        """
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            window = doc.get("signatures")
            signatures = (
                None
                if window is None
                else SignatureWindow(int(window["inception"]), int(window["expiration"]))
            )
            zone_keys = doc.get("zone_keys") or {}
            if not isinstance(zone_keys, dict):
                raise TypeError("zone_keys is not an object")
            return cls(
                serial=int(doc["serial"]),
                digest=str(doc["digest"]),
                signatures=signatures,
                keys=tuple(str(key) for key in zone_keys.get("keys", ())),
                keys_since=_optional_int(zone_keys.get("since")),
                ttls=ZoneTTLs.from_mapping(zone_keys) if "max_ttl" in zone_keys else None,
                zone_sha256=_optional_str(doc.get("zone_sha256")),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, OverflowError) as exc:
            raise RenderError(f"not a serial state file ({exc})", where=str(path)) from exc

    def next_for(self, digest: str, now: int) -> int:
        """The serial for content ``digest``: unchanged content keeps the serial."""
        if digest == self.digest:
            return self.serial
        return min(max(self.serial + 1, now), SERIAL_MAX)


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _optional_str(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"not a string: {value!r}")
    return value


def zone_sha256(parts: Iterable[str | Chunk]) -> str:
    """SHA-256 (hex) of a zone file given as the parts written one after the other."""
    sha = hashlib.sha256()
    for part in parts:
        sha.update(part.encode() if isinstance(part, str) else part)
    return sha.hexdigest()


def key_states(zone_keys: Sequence[ZoneKey | ZoneKeyEntry]) -> tuple[str, ...]:
    """The zone keys as the ``role-tag-state`` strings the serial state records."""
    return tuple(f"{key.role}-{key.tag}-{key.state}" for key in zone_keys)


# --- signing -----------------------------------------------------------------


def _tags_after_rc(envelope: Envelope) -> Tags:
    names = [name for name, _ in envelope.tags]
    start = names.index("rc") + 1
    return tuple(tag for tag in envelope.tags[start:] if tag[0] not in ("psig", "sig"))


def _resign_reason(
    previous: Envelope | None, spec: HandleSpec, key: _Key, now: int, zone: ZoneSpec
) -> tuple[str, str] | None:
    """Why the logged envelope cannot be published again, as (reason, detail) (see
    ``HANDLE_CHANGE_REASONS``); None when it still says exactly what the definition asks."""
    if previous is None:
        return "new", f"epoch {key.epoch}"
    if previous.epoch != key.epoch:
        return "key-rotated", f"epoch {previous.epoch} -> {key.epoch}"
    if previous.public_key != key.public_key or previous.revocation_commitment != key.commitment:
        return "key-changed", f"epoch {key.epoch}: the key store's key or commitment differs"
    tags = spec.envelope_tags()
    if previous.resolver != spec.resolver:
        return "resolver-changed", f"{previous.resolver or '-'} -> {spec.resolver or '-'}"
    if _tags_after_rc(previous) != tags:
        return "tags-changed", ""
    lifetime = None if previous.expires_at is None else previous.expires_at - previous.signed_at
    if lifetime != spec.lifetime:
        return "lifetime-changed", f"{_lifetime_text(lifetime)} -> {_lifetime_text(spec.lifetime)}"
    if previous.signed_at > now + CLOCK_SKEW_SECONDS:
        return "signed-after-now", f"signed {format_utc(previous.signed_at)}"
    if previous.expires_at is not None and now >= previous.expires_at - zone.renew_window(
        lifetime or 0
    ):
        said = "expired" if now >= previous.expires_at else "expires"
        return "renewal-due", f"{said} {format_utc(previous.expires_at)}"
    return None


def _lifetime_text(seconds: int | None) -> str:
    return NEVER if seconds is None else format_duration(seconds)


def _check_against_log(
    handle_spec: HandleSpec, key: _Key, logged: Envelope | None, zone: str
) -> None:
    """Never publish an older epoch than the log did, nor another key under its epoch.

    Raises:
        KeyStoreError: the key store's newest key is behind, or differs from, the log.
    """
    if logged is None or (logged.epoch, logged.public_key) == (key.epoch, key.public_key):
        return
    ref = handle_spec.handle.ref
    if logged.epoch > key.epoch:
        what = (
            f"the log published epoch {logged.epoch} but the key store's newest key is "
            f"epoch {key.epoch} (a rollback for every verifier); restore the epoch "
            f"{logged.epoch} key, or run 'alter-publish rotate {ref} --zone {zone} --lost'"
        )
        raise KeyStoreError(what, where=ref)
    if logged.epoch == key.epoch:
        what = (
            f"the epoch {key.epoch} key in the key store ({key.key_id}) is not the one the "
            f"log published ({logged.key_id}); verifiers would see a key swap. Restore it, "
            f"or run 'alter-publish rotate {ref} --zone {zone} --lost'"
        )
        raise KeyStoreError(what, where=ref)


def _previous_key(
    spec: ZoneSpec,
    handle_spec: HandleSpec,
    key: _Key,
    keys: KeyStore,
    revoked: frozenset[int],
    published: bool,
) -> Ed25519PrivateKey | None:
    """The key that signs ``psig=`` for ``key``'s epoch, or None for no continuity.

    ``published`` says whether this epoch was published before (a renewal).

    Raises:
        KeyStoreError: the rotation promised continuity but the previous key is missing.
    """
    if key.epoch == 1:
        return None
    handle, previous = handle_spec.handle, key.epoch - 1
    rotation = keys.rotation(spec.origin, handle, key.epoch)
    if rotation is not None and rotation.continuity is Continuity.NONE:
        return None
    if previous in revoked:  # a revoked key can no longer vouch
        return None
    if previous not in keys.epochs(spec.origin, handle):
        # Continuity is owed when an epoch is first published; renewals carry psig only
        # while the old key is kept (a store from before rotations were recorded: never).
        if rotation is None or published:
            return None
        raise KeyStoreError(
            f"epoch {key.epoch} of {handle.ref} was rotated with continuity, but the epoch "
            f"{previous} key that signs its psig= is missing",
            where=str(keys.paths(spec.origin, handle, previous)[0]),
        )
    return keys.load(spec.origin, handle, previous).private_key


#: Handles per key-loading task (workers load the next spans while the chain runs).
KEY_SPAN_HANDLES = 1000
#: How much lower the key loaders' scheduling priority is than the envelope chain's.
LOADER_NICE = 10


@dataclass(frozen=True, slots=True)
class _Key:
    """A handle's current key as a worker loaded it (seed, public key, commitment)."""

    handle: Handle
    epoch: int
    public_key: bytes
    commitment: bytes
    seed: bytes = field(repr=False)

    @property
    def key_id(self) -> str:
        """Short display id of the public key."""
        return key_id(self.public_key)

    def private(self) -> SigningKey:
        """The signing key (no derivation: the worker that loaded it knows its public key)."""
        return SigningKey.from_seed(self.seed, self.public_key)


#: A loaded key as it crosses the process boundary: (epoch, public key, commitment, seed),
#: or the problem as one line. Plain tuples: they pickle several times faster.
_Loaded = tuple[int, bytes, bytes, bytes] | str


def _load_key_span(span: tuple[int, int]) -> list[_Loaded]:
    """Worker side: the current key of handles ``span`` (or the problem, one line).

    A key is never created here for a handle whose owner name is in the log: the main
    process decides (:func:`_current_material`), so no key contradicts the log.
    """
    keys, origin, handles, create, logged_owners = shared()
    loaded: list[_Loaded] = []
    zone_fd = keys.open_zone_dir(origin)
    try:
        for handle in handles[span[0] : span[1]]:
            try:
                epoch, seed, commitment = keys.current_material(
                    origin,
                    handle,
                    create=create and handle.owner(origin) not in logged_owners,
                    zone_fd=zone_fd,
                )
            except KeyStoreError as exc:
                loaded.append(str(exc))
                continue
            loaded.append((epoch, SigningKey.from_seed(seed).public, commitment, seed))
    finally:
        if zone_fd is not None:
            os.close(zone_fd)
    return loaded


def _current_material(
    spec: ZoneSpec, handle_spec: HandleSpec, keys: KeyStore, index: LogIndex, *, create: bool
) -> tuple[int, bytes, bytes]:
    """A handle's current key material, created (with ``create``) only when the log never
    published the handle: a new epoch-1 key would contradict the log for every verifier.

    Raises:
        KeyStoreError: no usable key; for a published handle the advice says where the
            key store was looked for and how to recover, never ``--create-keys``.
    """
    handle = handle_spec.handle
    try:
        return keys.current_material(spec.origin, handle)
    except KeyStoreError as exc:
        if keys.epochs(spec.origin, handle):
            raise  # a key is there but unusable: the store's own message says why
        published = index.published_epoch(handle_spec.owner, handle)
        if published:
            raise KeyStoreError(
                f"no key in {keys.handle_dir(spec.origin, handle)}, but "
                f"{log_path_for(spec.path)} published epoch {published}: restore the key "
                f"store (or give --keys where it is), or if the key is gone run 'alter-publish "
                f"rotate {handle.ref} --zone {spec.path} --lost' (--create-keys would make a "
                "key the log contradicts)",
                where=handle.ref,
            ) from exc
        if not create:
            raise
    return keys.current_material(spec.origin, handle, create=True)


def _retry_material(
    spec: ZoneSpec, handle_spec: HandleSpec, keys: KeyStore, index: LogIndex, create: bool
) -> _Loaded:
    """A worker's key problem looked at again here, where the log is known."""
    try:
        epoch, seed, commitment = _current_material(spec, handle_spec, keys, index, create=create)
    except KeyStoreError as exc:
        return str(exc)
    return epoch, SigningKey.from_seed(seed).public, commitment, seed


def _sign_handle(
    spec: ZoneSpec,
    handle_spec: HandleSpec,
    key: _Key,
    keys: KeyStore,
    now: int,
    index: LogIndex,
    revocations: Mapping[str, HandleRevocations],
    tree: MerkleTree,
    signed: list[SignedHandle],
    new_entries: list[LogEntry],
    changes: list[Change],
) -> None:
    """One link of the envelope chain: log new revocations, then reuse the logged
    envelope or sign a new one (its ``log=`` is the log so far) and log it; ``changes``
    gets why, for every record it adds.

    Raises:
        KeyStoreError: the current key is revoked, or behind or different from the log.
    """
    handle_revocations = revocations.get(handle_spec.handle.ref, HandleRevocations())
    published = handle_revocations.every
    revoked = handle_revocations.epochs
    if key.epoch in revoked:
        raise KeyStoreError(
            f"the current key (epoch {key.epoch}) of {handle_spec.handle.ref} is "
            f"revoked; run 'alter-publish rotate {handle_spec.handle.ref} --zone "
            f"{spec.origin} --compromised'",
            where=handle_spec.handle.ref,
        )
    ref = handle_spec.handle.ref
    for revocation in handle_revocations.new:
        entry = LogEntry(owner=handle_spec.owner, text=revocation.to_text())
        tree.append(entry.to_bytes())
        new_entries.append(entry)
        changes.append(Change(ref, "epoch-revoked", f"epoch {revocation.epoch}"))
    previous = index.latest(handle_spec.owner, handle_spec.handle)
    _check_against_log(handle_spec, key, previous, spec.origin)
    reason = _resign_reason(previous, handle_spec, key, now, spec)
    if reason is None:
        assert previous is not None  # noqa: S101 (narrowing: only a logged one is reused)
        signed.append(SignedHandle(handle_spec, previous, published))
        return
    changes.append(Change(ref, *reason))
    renewal = previous is not None and previous.epoch == key.epoch
    previous_key = _previous_key(spec, handle_spec, key, keys, revoked, renewal)
    envelope = sign_envelope(
        handle=handle_spec.handle,
        owner=handle_spec.owner,
        epoch=key.epoch,
        private_key=key.private(),
        signed_at=now,
        expires_at=None if handle_spec.lifetime is None else now + handle_spec.lifetime,
        log_size=tree.size,
        log_root=tree.root(),
        commitment=key.commitment,
        extra_tags=handle_spec.envelope_tags(),
        previous_key=previous_key,
    )
    entry = LogEntry(owner=handle_spec.owner, text=envelope.to_text())
    tree.append(entry.to_bytes())
    new_entries.append(entry)
    signed.append(SignedHandle(handle_spec, envelope, published))


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
    layout: _Layout | None = None
    #: The log's Merkle tree frontier once the new entries are appended.
    log_frontier: tuple[tuple[int, str], ...] = ()
    #: What this run changes and why.
    changes: tuple[Change, ...] = ()

    @property
    def anchors(self) -> tuple[TrustAnchor, ...]:
        """The zone's own DS as trust anchor (none for an unsigned zone)."""
        if self.signed_zone is None:
            return ()
        return parse_trust_anchors(self.signed_zone.ds_text, where=f"{self.spec.origin}.ds")


def plan_zone(
    spec: ZoneSpec,
    *,
    keys: KeyStore,
    now: int,
    create_keys: bool,
    templates: Path,
    watch: _Stopwatch,
    jobs: int = 1,
    progress: Progress | None = None,
    published: frozenset[str] | None = None,
) -> ZonePlan:
    """Sign what needs signing and render the zone, without writing outputs.

    ``published`` (the handles of the last outputs, when known) lets the plan's
    ``changes`` name the handles added and removed since.

    Raises:
        KeyStoreError: missing or unusable keys.
        RenderError: a template or the rendered zone is broken.
    """
    progress = progress or NoProgress()
    with watch.stage("keys+envelopes"):
        log = read_log(log_path_for(spec.path))
        index = LogIndex(log)
        revocations = zone_revocations(
            spec, index, read_revocations(revocations_path_for(spec.path))
        )
        tree = log.tree()
        signed: list[SignedHandle] = []
        new_entries: list[LogEntry] = []
        changes: list[Change] = []
        problems: list[str] = []
        progress.start("envelopes", len(spec.handles))
        # Workers load the keys span by span while this process runs the envelope chain
        # (each envelope's log= names the log after the one before: it cannot be parallel).
        spans = ranges(len(spec.handles), KEY_SPAN_HANDLES)
        logged_owners = frozenset(entry.owner for entry in log.entries) if create_keys else ()
        handles = tuple(h.handle for h in spec.handles)
        loading = (keys, spec.origin, handles, create_keys, logged_owners)
        # Key files are small reads that wait on the disk when not cached: twice as many
        # loaders as CPUs keep both busy either way. The chain here is the critical path:
        # the loaders run at a lower priority and take what CPU it leaves.
        with Workers(
            2 * jobs if jobs > 1 else 1, loading, size=len(spec.handles), nice=LOADER_NICE
        ) as pool:
            for (first, _), loaded in zip(
                spans, pool.map_chunks(_load_key_span, spans, progress=progress), strict=True
            ):
                for handle_spec, material in zip(spec.handles[first:], loaded, strict=False):
                    if isinstance(material, str):
                        material = _retry_material(spec, handle_spec, keys, index, create_keys)
                    if isinstance(material, str):
                        problems.append(material)
                    if problems or isinstance(material, str):
                        continue  # keep loading to report every problem, sign nothing more
                    key = _Key(handle_spec.handle, *material)
                    _sign_handle(
                        spec,
                        handle_spec,
                        key,
                        keys,
                        now,
                        index,
                        revocations,
                        tree,
                        signed,
                        new_entries,
                        changes,
                    )
        if problems:
            more = len(problems) - 1
            raise KeyStoreError(
                problems[0] + (f" (+{more} more)" if more else ""), reasons=tuple(problems)
            )
        progress.done()
        expectations = _expectations(signed, index)
    with watch.stage("zone keys"):
        zone_keys = (
            keys.zones.current(spec.origin, create=create_keys, now=now)
            if spec.dnssec.enabled
            else ()
        )
    with watch.stage("render"):
        previous_state = SerialState.read(state_path_for(spec.path))
        window = (
            choose_window(previous_state.signatures if previous_state else None, now, spec.dnssec)
            if spec.dnssec.enabled
            else None
        )
        rendered = _render(spec, signed, templates, previous_state, window, zone_keys, now)
        rendered_text, serial, digest, records, layout = rendered
        zone_text: tuple[str, ...] = (rendered_text,)
        del rendered
    signed_zone = None
    served: tuple[SignedRRs, ...]
    if window is not None:
        with watch.stage("dnssec"):
            signed_zone = sign_records(
                records,
                keys=zone_keys,
                spec=spec.dnssec,
                window=window,
                dnskey_ttl=spec.ttl,
                jobs=jobs,
                progress=progress,
            )
            zone_text += (_dnssec_section(signed_zone), signed_zone.records_text)
            # The records are in zone_text now: the plan keeps no second reference.
            signed_zone = dataclasses.replace(signed_zone, records_text="")
            served = signed_zone.rrsets
    else:
        served = unsigned_rrsets(records)
    changes += _handles_added_and_removed(spec, published, changes)
    changes += _zone_changes(previous_state, digest, window, zone_keys, bool(changes))
    return ZonePlan(
        spec=spec,
        log=log,
        new_entries=tuple(new_entries),
        signed=tuple(signed),
        state=dataclasses.replace(
            _next_state(
                previous_state, serial, digest, window, zone_keys, signed_zone, now, spec.ttl
            ),
            zone_sha256=zone_sha256(zone_text),
        ),
        zone_text=zone_text,
        served=served,
        signed_zone=signed_zone,
        zone_keys=zone_keys,
        expectations=expectations,
        layout=layout,
        log_frontier=tuple(tree.frontier()),
        changes=tuple(changes),
    )


def _handles_added_and_removed(
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


def _zone_changes(
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
            f"signatures expiring {format_utc(previous.signatures.expiration)} are made again"
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


def _published_handles(envelopes_file: Path) -> frozenset[str] | None:
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


#: Rendered in place of the serial, then replaced: one render gives both the digest text
#: (serial 0) and the zone text. Far above any serial, so it cannot occur by accident.
_SERIAL_SENTINEL = 987_654_321_987_654_321


def _render(
    spec: ZoneSpec,
    signed: Sequence[SignedHandle],
    templates: Path,
    previous_state: SerialState | None,
    window: SignatureWindow | None,
    zone_keys: Sequence[ZoneKey],
    now: int,
) -> tuple[str, int, str, ZoneRecords, _Layout | None]:
    """Render the zone once; returns (zone text, serial, content digest, records, layout).

    Raises:
        RenderError: a template or the rendered zone is broken.
    """
    version = __version__
    rrsets = handle_rrsets(signed)
    context = template_context(spec, signed, _SERIAL_SENTINEL, version, rrsets)
    text = render_zone_text(templates, context)
    del context  # 100,000 dicts: gone before the zone is signed
    sentinel = str(_SERIAL_SENTINEL)
    plain = text.count(sentinel) == 1
    draft = (
        text.replace(sentinel, "0")
        if plain
        else render_zone_text(templates, template_context(spec, signed, 0, version, rrsets))
    )
    digest = content_digest(draft + _dnssec_fingerprint(spec, zone_keys, window))
    serial = (
        previous_state.next_for(digest, now) if previous_state else min(max(now, 1), SERIAL_MAX)
    )
    zone_text = (
        text.replace(sentinel, str(serial))
        if plain
        else render_zone_text(templates, template_context(spec, signed, serial, version, rrsets))
    )
    serial_index = text.find(sentinel) if plain else -1
    del text, draft  # two more copies of the zone otherwise live through signing
    layout = _layout(zone_text, serial_index, rrsets)
    return zone_text, serial, digest, _records(spec, rrsets, zone_text), layout


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where the rendered zone text puts the serial and each handle's lines (byte
    offsets, for the memo of :mod:`incremental`)."""

    serial_at: int
    segments: tuple[int, ...]  # each handle's first line, then the end of the last one's
    rendered_end: int


def _layout(text: str, serial_index: int, rrsets: Sequence[HandleRecord]) -> _Layout | None:
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
    return _Layout(
        serial_at=len(text[:serial_index].encode()),
        segments=tuple(start + delta for start in (*starts, end)),
        rendered_end=end + delta + len(text[end:].encode()),
    )


def _records(spec: ZoneSpec, handle_records: Sequence[HandleRecord], zone_text: str) -> ZoneRecords:
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
        _refuse_wildcards(head, zone_file.name)
        records = with_handles(from_zone(head), handle_records)
        if records is not None:
            return records
    zone = parse_zone_text(zone_text, spec.origin, where=zone_file.name)
    _refuse_wildcards(zone, zone_file.name)
    return from_zone(zone)


def _next_state(
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


def _expectations(signed: Sequence[SignedHandle], index: LogIndex) -> dict[str, Expectation]:
    """What the proof checks for each handle signed (see :func:`_expectation`)."""
    return {
        item.spec.handle.ref: _expectation(
            item.spec,
            item.envelope,
            tuple(revocation.to_text() for revocation in item.revocations),
            index,
        )
        for item in signed
    }


def _expectation(
    handle_spec: HandleSpec,
    envelope: Envelope,
    revocations: tuple[str, ...],
    index: LogIndex,
) -> Expectation:
    """What the proof checks for a handle: ``psig`` against the key the log published
    for the epoch before, as a verifier that pinned that epoch would check it."""
    previous = None
    if envelope.psig is not None and envelope.epoch > 1:
        logged = index.latest(handle_spec.owner, handle_spec.handle, envelope.epoch - 1)
        previous = None if logged is None else (envelope.epoch - 1, logged.public_key)
    return Expectation(envelope.to_text(), revocations, previous)


def _refuse_wildcards(zone: dns.zone.Zone, where: str) -> None:
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


def _dnssec_fingerprint(
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


def _dnssec_section(signed: SignedZone) -> str:
    return (
        f"\n; DNSSEC (alter-publish): Ed25519 keys, {signed.denial.upper()} denial, "
        f"{signed.signatures} signatures valid "
        f"{format_utc(signed.window.inception)} to {format_utc(signed.window.expiration)}\n"
    )


@remembering_digests()
def sign(
    zone_files: Sequence[Path],
    *,
    out: Path,
    keys: KeyStore,
    now: int,
    create_keys: bool = False,
    templates: Path | None = None,
    verify: bool = True,
    check: bool = False,
    jobs: int = 1,
    progress: Progress | None = None,
    incremental: bool = True,
) -> SignReport:
    """Sign, render and prove every zone; write outputs only if every proof passes.

    With ``check`` nothing is written, not even keys: each zone's ``written`` lists
    the files a real run would change (``SignReport.drift``). ``jobs`` processes sign
    and verify (the outputs are the same bytes for any ``jobs``); long stages report
    to ``progress``. When a few handles changed since the last proven run, only they
    are signed, proven and patched into its outputs (see :mod:`incremental`; the same
    bytes as a full run). ``incremental=False`` does the whole job whatever changed.

    Returns:
        The report; ``ok`` is False (and nothing was written) when a proof failed.

    Raises:
        DefinitionError: a zone definition is wrong.
        KeyStoreError: keys are missing or unusable.
        RenderError: templates, rendering or writing failed.
        ServeError: the loopback server could not start.
    """
    if check and create_keys:
        raise UsageError("--check changes nothing, so it cannot --create-keys")
    template_dir = templates or default_templates_dir()
    progress = progress or NoProgress()
    options = f"{out.resolve()} {template_dir.resolve()} verify={verify}"
    specs = []
    loading: dict[str, float] = {}
    unchanged: list[ZoneResult] = []
    early_warnings: list[str] = []
    patches: list[_Patch] = []
    sources: dict[str, str] = {}
    for path in zone_files:
        started = time.perf_counter()
        record = Fingerprint.read(fingerprint_path(out, path)) if incremental else None
        if record is not None and record.zone_keys_dir == str(keys.zones.directory(record.zone)):
            handle_lines = handle_key_lines(record.handle_keys, jobs=jobs)
            same = _unchanged(
                path, out, keys, template_dir, options, now, started, record, handle_lines
            )
            if same is not None:
                unchanged.append(same[0])
                early_warnings.extend(same[1])
                continue
            patch = (
                _try_patch(
                    path,
                    out,
                    keys,
                    template_dir,
                    options,
                    now,
                    record,
                    handle_lines,
                    create_keys=create_keys,
                    started=started,
                )
                if verify
                else None
            )
            if patch is not None:
                patches.append(patch)
                continue
        # Read once: the fingerprint and memo record the text parsed, not an edit that
        # lands while the run goes on.
        source = read_definition(path)
        specs.append(load_zone_text(source, path))
        sources[specs[-1].origin] = source
        loading[specs[-1].origin] = time.perf_counter() - started
    names = [spec.origin for spec in specs] + [patch.spec.origin for patch in patches]
    if len(set(names)) != len(names):
        raise UsageError(f"a zone is named twice: {', '.join(names)}")
    plans: list[tuple[ZonePlan, ProofReport | None, _Stopwatch]] = []
    for spec in specs:
        watch = _Stopwatch()
        watch.stages.append(("load", loading[spec.origin]))
        plan = plan_zone(
            spec,
            keys=keys,
            now=now,
            create_keys=create_keys,
            templates=template_dir,
            watch=watch,
            jobs=jobs,
            progress=progress,
            published=_published_handles(output_paths(out, spec.origin)[1]),
        )
        proof = None
        if verify:
            with watch.stage("proof"):
                proof = prove_records(
                    plan.served,
                    spec,
                    plan.expectations,
                    now=now,
                    zone_text=plan.zone_text,
                    anchors=plan.anchors,
                    jobs=jobs,
                    progress=progress,
                )
        # The served rrsets were for the proof: ~300 MB at 100,000 handles, not needed to write.
        plans.append((dataclasses.replace(plan, served=()), proof, watch))
    committed = all(proof is None or proof.ok for _, proof, _ in plans) and all(
        patch.proof.ok for patch in patches
    )
    results: list[ZoneResult] = []
    for patch in patches:
        written: list[str] = []
        if committed:
            with patch.watch.stage("write"):
                written = _commit_patch(patch, out, keys, template_dir, options, dry_run=check)
        results.append(_patch_result(patch, out, written))
    for plan, proof, watch in plans:
        zone_file, envelopes_file = output_paths(out, plan.spec.origin)
        ds_file = ds_path(out, plan.spec.origin)
        written = []
        if committed:
            with watch.stage("write"):
                written, envelope_starts = _commit(
                    plan, zone_file, envelopes_file, ds_file, dry_run=check
                )
                if not check:
                    source = sources[plan.spec.origin]
                    handle_lines = _record_fingerprint(
                        plan, source, out, keys, template_dir, options, proven=verify, jobs=jobs
                    )
                    if verify:
                        _record_memo(
                            plan,
                            source,
                            out,
                            keys,
                            template_dir,
                            options,
                            handle_lines,
                            envelope_starts,
                        )
                    else:
                        forget(memo_path(out, plan.spec.path))
        signed_zone = plan.signed_zone
        results.append(
            ZoneResult(
                zone=plan.spec.origin,
                zone_file=zone_file,
                envelopes_file=envelopes_file,
                serial=plan.state.serial,
                handles=len(plan.signed),
                signed=len(plan.new_entries),
                reused=len(plan.signed) - len(plan.new_entries),
                written=tuple(written),
                proof=proof,
                timings=tuple(watch.stages),
                ds_file=ds_file if signed_zone else None,
                ds=tuple(signed_zone.ds_text.splitlines()) if signed_zone else (),
                dnssec=_dnssec_summary(plan),
                changes=_explained(plan.changes, written),
            )
        )
    warnings = (
        *early_warnings,
        *(warning for patch in patches for warning in patch.spec.warnings()),
        *(warning for spec in specs for warning in spec.warnings()),
        *(
            warning
            for zone in (*unchanged, *results)
            if (warning := serial_warning(zone.zone, zone.serial, now))
        ),
    )
    return SignReport(
        zones=(*unchanged, *results),
        committed=committed and not check,
        warnings=warnings,
        check=check,
        proven=committed,
    )


def _explained(changes: tuple[Change, ...], written: Sequence[str]) -> tuple[Change, ...]:
    """``changes``, or why ``written`` files change when no handle or zone change says."""
    if changes or not written:
        return changes
    return (Change(None, "outputs-differ", ", ".join(written)),)


def _fingerprint_inputs(
    definition: Path,
    origin: str,
    out: Path,
    templates: Path,
    options: str,
    zone_keys_dir: str,
    handle_keys: Sequence[tuple[str, int]],
    definition_text: str | None = None,
) -> Inputs:
    zone_file, envelopes_file = output_paths(out, origin)
    return inputs_for(
        definition,
        templates=templates,
        content_files=(
            revocations_path_for(definition),
            log_path_for(definition),
            state_path_for(definition),
        ),
        zone_keys_dir=zone_keys_dir,
        handle_keys=handle_keys,
        outputs=(zone_file, envelopes_file, ds_path(out, origin)),
        options=options,
        definition_text=definition_text,
    )


def _unchanged(
    definition: Path,
    out: Path,
    keys: KeyStore,
    templates: Path,
    options: str,
    now: int,
    started: float,
    record: Fingerprint,
    handle_lines: Sequence[str],
) -> tuple[ZoneResult, tuple[str, ...]] | None:
    """The result (and the definition's warnings) of a run that would change nothing
    (see :mod:`fingerprint`), or None."""
    inputs = _fingerprint_inputs(
        definition,
        record.zone,
        out,
        templates,
        options,
        record.zone_keys_dir,
        record.handle_keys,
    )
    if not record.holds(inputs.digest(handle_lines), now):
        return None
    summary = record.summary
    zone_file, envelopes_file = output_paths(out, record.zone)
    ds = tuple(str(line) for line in summary.get("ds", ()))
    warnings = tuple(str(warning) for warning in summary.get("warnings", ()))
    return ZoneResult(
        zone=record.zone,
        zone_file=zone_file,
        envelopes_file=envelopes_file,
        serial=int(summary["serial"]),
        handles=len(record.handle_keys),
        signed=0,
        reused=len(record.handle_keys),
        written=(),
        proof=None,
        timings=(("unchanged", time.perf_counter() - started),),
        ds_file=ds_path(out, record.zone) if ds else None,
        ds=ds,
        dnssec=summary.get("dnssec"),
        unchanged=True,
    ), warnings


def _valid_span(
    signed: Sequence[SignedHandle], window: SignatureWindow | None, spec: ZoneSpec
) -> tuple[int, int]:
    """The ``now`` values at which a new run would reuse every envelope of ``signed``
    and every RRSIG made in ``window``."""
    start = max((item.envelope.signed_at for item in signed), default=0)
    start -= CLOCK_SKEW_SECONDS
    stop = SERIAL_MAX * 2
    for item in signed:
        envelope = item.envelope
        if envelope.expires_at is not None:
            lifetime = envelope.expires_at - envelope.signed_at
            stop = min(stop, envelope.expires_at - spec.renew_window(lifetime))
    if window is not None:
        start = max(start, window.inception)
        stop = min(stop, window.expiration - spec.dnssec.refresh)
    return start, stop


def _record_fingerprint(
    plan: ZonePlan,
    source: str,
    out: Path,
    keys: KeyStore,
    templates: Path,
    options: str,
    *,
    proven: bool,
    jobs: int = 1,
) -> list[str]:
    """After a written run: record it (``source``: the definition's text as read) if
    proven, else drop any older record.

    Returns:
        The handles' key ``stat`` lines it recorded (none when not proven).
    """
    spec = plan.spec
    path = fingerprint_path(out, spec.path)
    if not proven:
        forget(path)
        return []
    handle_keys = tuple(
        (keys.handle_dir_text(spec.origin, item.spec.handle), item.envelope.epoch)
        for item in plan.signed
    )
    signed_zone = plan.signed_zone
    summary = {
        "warnings": list(spec.warnings()),
        "serial": plan.state.serial,
        "ds": list(signed_zone.ds_text.splitlines()) if signed_zone else [],
        "dnssec": _dnssec_summary(plan),
    }
    handle_lines = handle_key_lines(handle_keys, jobs=jobs)
    span = _valid_span(plan.signed, plan.state.signatures, spec)
    _write_fingerprint(
        spec, source, out, keys, templates, options, handle_keys, handle_lines, span, summary
    )
    return handle_lines


def _write_fingerprint(
    spec: ZoneSpec,
    source: str,
    out: Path,
    keys: KeyStore,
    templates: Path,
    options: str,
    handle_keys: tuple[tuple[str, int], ...],
    handle_lines: Sequence[str],
    span: tuple[int, int],
    summary: Mapping[str, Any],
) -> None:
    """Record a proven, written run of ``spec`` (see :mod:`fingerprint`)."""
    zone_keys_dir = str(keys.zones.directory(spec.origin))
    inputs = _fingerprint_inputs(
        spec.path, spec.origin, out, templates, options, zone_keys_dir, handle_keys, source
    )
    Fingerprint(
        digest=inputs.digest(handle_lines),
        valid_from=span[0],
        valid_until=span[1],
        zone=spec.origin,
        zone_keys_dir=zone_keys_dir,
        handle_keys=handle_keys,
        summary=summary,
    ).write(fingerprint_path(out, spec.path))


def _dnssec_summary(plan: ZonePlan) -> dict[str, Any] | None:
    signed = plan.signed_zone
    if signed is None:
        return None
    return {
        "denial": signed.denial,
        "signatures": signed.signatures,
        "inception": signed.window.inception,
        "expiration": signed.window.expiration,
        "keys": [
            {"role": str(key.role), "tag": key.tag, "algorithm": 15} for key in plan.zone_keys
        ],
    }


def _commit(
    plan: ZonePlan, zone_file: Path, envelopes_file: Path, ds_file: Path, *, dry_run: bool = False
) -> tuple[list[str], list[int]]:
    """Log first, then serial state, then outputs: a crash never leaves outputs the log lacks.

    With ``dry_run`` nothing is written: the result lists what would be.

    Returns:
        What was written, and where each part of the envelopes document starts.
    """
    write = content_differs if dry_run else atomic_write_bytes
    write_text = text_differs if dry_run else atomic_write_text
    written: list[str] = []
    if plan.new_entries:
        if not dry_run:
            append_entries(plan.log, plan.new_entries)
        written.append(str(plan.log.path))
    state_path = state_path_for(plan.spec.path)
    if write(state_path, plan.state.to_text().encode()):
        written.append(str(state_path))
    if write_text(zone_file, plan.zone_text):
        written.append(str(zone_file))
    envelopes = _Measured(envelopes_document(plan.spec, plan.signed, plan.state.serial))
    if write_text(envelopes_file, envelopes):
        written.append(str(envelopes_file))
    if plan.signed_zone is not None:
        if write(ds_file, plan.signed_zone.ds_text.encode("ascii")):
            written.append(str(ds_file))
    elif ds_file.exists() and dry_run:
        written.append(f"{ds_file} (would be removed: the zone is unsigned)")
    elif ds_file.exists():
        # A DS left at the registrar for an unsigned zone makes it bogus: do not offer one.
        try:
            ds_file.unlink()
        except OSError as exc:
            raise RenderError(
                f"cannot remove stale DS file: {exc.strerror}", where=str(ds_file)
            ) from exc
        written.append(f"{ds_file} (removed: the zone is unsigned)")
    return written, envelopes.starts


# --- incremental -------------------------------------------------------------------


class _Measured:
    """Text parts passed through as they are written, noting where each starts (bytes)."""

    def __init__(self, parts: Iterable[str]) -> None:
        self.parts = parts
        self.starts: list[int] = []
        self.size = 0

    def __iter__(self) -> Iterator[str]:
        for part in self.parts:
            self.starts.append(self.size)
            self.size += len(part) if part.isascii() else len(part.encode())
            yield part


def _shipped_templates(templates: Path) -> bool:
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


def _base_digest(
    definition: Path,
    origin: str,
    out: Path,
    keys: KeyStore,
    templates: Path,
    options: str,
    entries: Entries,
) -> str:
    zone_keys_dir = str(keys.zones.directory(origin))
    inputs = _fingerprint_inputs(definition, origin, out, templates, options, zone_keys_dir, ())
    return inputs.base_digest(entries.header)


def _record_memo(
    plan: ZonePlan,
    source: str,
    out: Path,
    keys: KeyStore,
    templates: Path,
    options: str,
    handle_lines: Sequence[str],
    envelope_starts: Sequence[int],
) -> None:
    """After a proven full run: leave the memo the next run may patch from (or none)."""
    path = memo_path(out, plan.spec.path)
    memo = None
    if plan.layout is not None and _shipped_templates(templates):
        memo = _full_memo(plan, split_entries(source), plan.layout, handle_lines, envelope_starts)
    if memo is None:
        forget(path)
        return
    base = _base_digest(plan.spec.path, plan.spec.origin, out, keys, templates, options, memo[1])
    dataclasses.replace(memo[0], base=base).write(path)


def _full_memo(
    plan: ZonePlan,
    entries: Entries | None,
    layout: _Layout,
    handle_lines: Sequence[str],
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
        keys=tuple(handle_lines),
        ttls=tuple(item.spec.ttl for item in plan.signed),
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


@dataclass(frozen=True, slots=True)
class _Patch:
    """An incremental run of one zone: a few handles' lines patched into the last
    proven run's outputs (see :mod:`incremental`), in memory until committed."""

    spec: ZoneSpec  # the zone (``spec.path`` its definition) with just the changed handles
    log_path: Path
    raw_log: bytes
    new_entries: tuple[LogEntry, ...]
    signed: tuple[SignedHandle, ...]
    state: SerialState
    zone: tuple[Chunk, ...] | None  # None: unchanged
    envelopes: tuple[Chunk, ...] | None
    memo: Memo  # after the patch (``base`` is taken once the outputs are written)
    entries: Entries
    record: Fingerprint
    handle_keys: tuple[tuple[str, int], ...]
    handle_lines: tuple[str, ...]
    proof: ProofReport
    watch: _Stopwatch
    changes: tuple[Change, ...] = ()


def _try_patch(
    definition: Path,
    out: Path,
    keys: KeyStore,
    templates: Path,
    options: str,
    now: int,
    record: Fingerprint,
    handle_lines: Sequence[str],
    *,
    create_keys: bool,
    started: float,
) -> _Patch | None:
    """Patch the handles whose entry or key changed into the last proven run's outputs
    and prove them; None when that cannot be done exactly as a full run would do it
    (then: a full run, which also names any problem in the definition).

    Raises:
        KeyStoreError: a changed handle's key is missing, unusable or behind the log.
        SigningError: the zone keys cannot sign.
    """
    memo = Memo.read(memo_path(out, definition))
    if memo is None or memo.zone != record.zone or not _shipped_templates(templates):
        return None
    if not record.valid_from <= now < record.valid_until:
        return None  # something falls due: a full run renews it
    try:
        entries = split_entries(read_definition(definition))
    except DefinitionError:
        return None  # the full run says what is wrong
    count = len(memo.refs)
    if entries is None or len(entries.texts) != count or len(handle_lines) != count:
        return None
    if _base_digest(definition, memo.zone, out, keys, templates, options, entries) != memo.base:
        return None
    changed = tuple(
        index
        for index, (entry, key, old_entry, old_key) in enumerate(
            zip(entries.texts, handle_lines, memo.entries, memo.keys, strict=True)
        )
        if entry != old_entry or key != old_key
    )
    if not changed or len(changed) > max(1, int(count * PATCH_MAX_SHARE)):
        return None
    try:
        zone = load_zone_text(entries.header, definition)
        handle_specs = load_handle_entries(entries.document(changed), definition, zone)
    except AlterError:
        return None
    if [(h.handle.ref, h.ttl) for h in handle_specs] != [
        (memo.refs[index], memo.ttls[index]) for index in changed
    ]:
        return None  # a handle renamed, or a TTL that may move the zone's largest
    spec = dataclasses.replace(zone, handles=handle_specs)
    previous_state = SerialState.read(state_path_for(definition))
    if spec.origin != memo.zone or spec.dnssec.enabled != bool(memo.blocks):
        return None
    if previous_state is None or previous_state.serial != memo.serial:
        return None
    zone_keys: tuple[ZoneKey, ...] = ()
    window = None
    if spec.dnssec.enabled:
        zone_keys = keys.zones.current(spec.origin, create=False, now=now)
        window = choose_window(previous_state.signatures, now, spec.dnssec)
        if window != previous_state.signatures or key_states(zone_keys) != previous_state.keys:
            return None
    watch = _Stopwatch([("load", time.perf_counter() - started)])

    with watch.stage("keys+envelopes"):
        log_path = log_path_for(definition)
        if len(handle_specs) <= PATCH_OWNER_SCANS:
            raw_log, log = read_owner_entries(log_path, (h.owner for h in handle_specs))
        else:
            log = read_log(log_path)
            raw_log = log_path.read_bytes() if log.entries else b""
        index = LogIndex(log)
        revocations = zone_revocations(
            spec, index, read_revocations(revocations_path_for(definition))
        )
        if any(item.new for item in revocations.values()):
            return None
        try:
            tree = MerkleTree.resume(memo.log)
        except ValueError:
            return None
        if tree.size != raw_log.count(b"\n") or b"\r" in raw_log:
            return None  # a log not as this tool writes it: the full run reads it line by line
        signed: list[SignedHandle] = []
        new_entries: list[LogEntry] = []
        changes: list[Change] = []
        for handle_spec in handle_specs:
            epoch, seed, commitment = _current_material(
                spec, handle_spec, keys, index, create=create_keys
            )
            public = SigningKey.from_seed(seed).public
            key = _Key(handle_spec.handle, epoch, public, commitment, seed)
            _sign_handle(
                spec,
                handle_spec,
                key,
                keys,
                now,
                index,
                revocations,
                tree,
                signed,
                new_entries,
                changes,
            )
        expectations = _expectations(signed, index)

    zone_file, envelopes_file = output_paths(out, spec.origin)
    # The memo and the old outputs are hints checked as they are used: anything that
    # does not fit declines (a full run rewrites the outputs whole).
    try:
        with watch.stage("render"):
            try:
                old_zone = zone_file.read_bytes()
                old_envelopes = envelopes_file.read_bytes()
            except OSError:
                return None
            if not memo.fits(old_zone, old_envelopes, changed):
                return None
            old_serial = str(memo.serial).encode()
            serial_end = memo.serial_at + len(old_serial)
            env_serial_end = memo.envelopes_serial_at + len(old_serial)
            if (
                old_zone[memo.serial_at : serial_end] != old_serial
                or old_envelopes[memo.envelopes_serial_at : env_serial_end] != old_serial
            ):
                return None
            rrsets = handle_rrsets(signed)
            context = template_context(spec, signed, 0, __version__, rrsets)
            segments = [text.encode() for text in handle_segments(templates, context)]
            segment_edits: list[Edit] = [
                (memo.segments[index], memo.segments[index + 1], segment)
                for index, segment in zip(changed, segments, strict=True)
            ]
            draft = hashlib.sha256()
            rendered = memoryview(old_zone)[: memo.rendered_end]
            for chunk in apply_edits(
                rendered, [(memo.serial_at, serial_end, b"0"), *segment_edits]
            ):
                draft.update(chunk)
            draft.update(_dnssec_fingerprint(spec, zone_keys, window).encode())
            serial = previous_state.next_for(draft.hexdigest(), now)
            new_serial = str(serial).encode()
            zone_edits: list[Edit] = [(memo.serial_at, serial_end, new_serial), *segment_edits]
            head = b"".join(apply_edits(old_zone[: memo.segments[0]], zone_edits[:1])).decode()
            proof_text = [head, *(segment.decode() for segment in segments)]

        if window is not None:
            with watch.stage("dnssec"):
                blocks = _patched_blocks(
                    old_zone, memo, changed, head, rrsets, spec, zone_keys, window, zone_file.name
                )
                if blocks is None:
                    return None
                zone_edits.extend(blocks)
                proof_text.extend(new.decode() for _, _, new in blocks)
        # Edits that change nothing (an entry's comment edited, say) are no edits: a full run
        # would leave such a file alone.
        zone_edits = sorted(
            (edit for edit in zone_edits if old_zone[edit[0] : edit[1]] != edit[2]),
            key=lambda edit: edit[0],
        )

        mini = parse_zone_text("".join(proof_text), spec.origin, where=zone_file.name)
    except (ValueError, UnicodeDecodeError, RenderError):
        return None

    with watch.stage("proof"):
        anchors: tuple[TrustAnchor, ...] = ()
        if window is not None:
            anchors = read_trust_anchors(ds_path(out, spec.origin))
        proof = prove_zone(mini, spec, expectations, now=now, anchors=anchors, probe=False)

    envelope_edits: list[Edit] = [
        (
            memo.envelopes[index],
            memo.envelopes[index + 1],
            (("\n" if index == 0 else ",\n") + envelope_line(item)).encode(),
        )
        for index, item in zip(changed, signed, strict=True)
    ]
    envelope_edits.append((memo.envelopes_serial_at, env_serial_end, new_serial))
    envelope_edits = [
        edit for edit in envelope_edits if old_envelopes[edit[0] : edit[1]] != edit[2]
    ]
    handle_keys = list(record.handle_keys)
    lines = list(handle_lines)
    for position, item in zip(changed, signed, strict=True):
        directory = handle_keys[position][0]
        handle_keys[position] = (directory, item.envelope.epoch)
        lines[position] = handle_key_lines([handle_keys[position]])[0]
    zone_offsets = shift([*memo.segments, *memo.blocks, *memo.apex, memo.rendered_end], zone_edits)
    segments_count = len(memo.segments)
    blocks_end = segments_count + len(memo.blocks)
    envelope_offsets = shift((*memo.envelopes, memo.envelopes_serial_at), envelope_edits)
    after = dataclasses.replace(
        memo,
        entries=entries.texts,
        keys=tuple(lines),
        log=tuple(tree.frontier()),
        serial=serial,
        segments=zone_offsets[:segments_count],
        blocks=zone_offsets[segments_count:blocks_end],
        apex=(zone_offsets[blocks_end], zone_offsets[blocks_end + 1]),
        rendered_end=zone_offsets[-1],
        envelopes=envelope_offsets[:-1],
        envelopes_serial_at=envelope_offsets[-1],
    )
    new_zone = tuple(apply_edits(memoryview(old_zone), zone_edits)) if zone_edits else None
    state = dataclasses.replace(
        previous_state,
        serial=serial,
        digest=draft.hexdigest(),
        zone_sha256=zone_sha256((old_zone,) if new_zone is None else new_zone),
    )
    return _Patch(
        spec=spec,
        log_path=log_path,
        raw_log=raw_log,
        new_entries=tuple(new_entries),
        signed=tuple(signed),
        state=state,
        zone=new_zone,
        envelopes=(
            tuple(apply_edits(memoryview(old_envelopes), envelope_edits))
            if envelope_edits
            else None
        ),
        memo=after,
        entries=entries,
        record=record,
        handle_keys=tuple(handle_keys),
        handle_lines=tuple(lines),
        proof=proof,
        watch=watch,
        changes=tuple(changes),
    )


def _patched_blocks(
    old_zone: bytes,
    memo: Memo,
    changed: Sequence[int],
    head: str,
    rrsets: Sequence[HandleRecord],
    spec: ZoneSpec,
    zone_keys: Sequence[ZoneKey],
    window: SignatureWindow,
    where: str,
) -> list[Edit] | None:
    """The apex's and each changed handle's DNSSEC lines with new RRSIGs over the SOA
    and their TXT rrsets (every other line stays: the owners and their types are the
    same, so the denial chain is too)."""
    records = from_zone(parse_zone_text(head, spec.origin, where=where))
    origin = records.origin
    soa = next((rrs for rrs in records.owners[origin] if rrs.rdtype == _SOA_TYPE), None)
    if soa is None:
        return None
    names = dict(records.names)
    todo: list[tuple[Labels, RRs]] = [(origin, soa)]
    for record in rrsets:
        labels = labels_of(record.owner)
        names[labels] = record.owner
        todo.append((labels, RRs(_TXT_TYPE, record.ttl, record.wires)))
    signatures = rrsig_lines(todo, keys=zone_keys, window=window, origin=origin, names=names)
    spans = [memo.apex, *((memo.blocks[2 * i], memo.blocks[2 * i + 1]) for i in changed)]
    covered = ["SOA", *("TXT" for _ in changed)]
    owners = [names[origin], *(record.owner for record in rrsets)]
    edits: list[Edit] = []
    for (start, end), kind, owner, lines in zip(spans, covered, owners, signatures, strict=True):
        prefix = f"{owner} ".encode()
        if old_zone[start - 1 : start] != b"\n" or old_zone.startswith(prefix, end):
            return None  # not where the owner's lines start, or not all of them
        block = _with_rrsigs(old_zone[start:end].decode("ascii"), owner, kind, lines)
        if block is None:
            return None
        edits.append((start, end, block.encode("ascii")))
    return edits


def _with_rrsigs(block: str, owner: str, covered: str, lines: str) -> str | None:
    """``block`` (one owner's DNSSEC lines) with its RRSIGs over ``covered`` replaced;
    None when it is not that owner's block."""
    rows = block.splitlines(keepends=True)
    if not all(row.startswith(f"{owner} ") and row.endswith("\n") for row in rows):
        return None
    marker = f" IN RRSIG {covered} "
    found = [number for number, row in enumerate(rows) if marker in row]
    if not found or found != list(range(found[0], found[-1] + 1)):
        return None
    return "".join(rows[: found[0]]) + lines + "".join(rows[found[-1] + 1 :])


def _commit_patch(
    patch: _Patch,
    out: Path,
    keys: KeyStore,
    templates: Path,
    options: str,
    *,
    dry_run: bool,
) -> list[str]:
    """Write a patch as :func:`_commit` writes a plan (log, state, outputs), then the
    fingerprint and memo of the run it makes."""
    spec = patch.spec
    zone_file, envelopes_file = output_paths(out, spec.origin)
    write = content_differs if dry_run else atomic_write_bytes
    write_chunks = (
        chunks_differ if dry_run else functools.partial(atomic_write_chunks, compare=False)
    )
    written: list[str] = []
    if patch.new_entries:
        if not dry_run:
            append_lines(patch.log_path, patch.raw_log, patch.new_entries)
        written.append(str(patch.log_path))
    state_path = state_path_for(spec.path)
    if write(state_path, patch.state.to_text().encode()):
        written.append(str(state_path))
    if patch.zone is not None and write_chunks(zone_file, patch.zone):
        written.append(str(zone_file))
    if patch.envelopes is not None and write_chunks(envelopes_file, patch.envelopes):
        written.append(str(envelopes_file))
    if dry_run:
        return written
    record = patch.record
    # The span of the envelopes patched in, within the last run's (a little short,
    # never long: a later run at worst goes in full).
    valid_from, valid_until = _valid_span(patch.signed, patch.state.signatures, spec)
    span = (max(record.valid_from, valid_from), min(record.valid_until, valid_until))
    summary = {**record.summary, "serial": patch.state.serial}
    _write_fingerprint(
        spec,
        patch.entries.text,
        out,
        keys,
        templates,
        options,
        patch.handle_keys,
        patch.handle_lines,
        span,
        summary,
    )
    base = _base_digest(spec.path, spec.origin, out, keys, templates, options, patch.entries)
    dataclasses.replace(patch.memo, base=base).write(memo_path(out, spec.path))
    return written


def _patch_result(patch: _Patch, out: Path, written: Sequence[str]) -> ZoneResult:
    spec, summary = patch.spec, patch.record.summary
    zone_file, envelopes_file = output_paths(out, spec.origin)
    ds = tuple(str(line) for line in summary.get("ds", ()))
    return ZoneResult(
        zone=spec.origin,
        zone_file=zone_file,
        envelopes_file=envelopes_file,
        serial=patch.state.serial,
        handles=len(patch.memo.refs),
        signed=len(patch.new_entries),
        reused=len(patch.memo.refs) - len(patch.new_entries),
        written=tuple(written),
        proof=patch.proof,
        timings=tuple(patch.watch.stages),
        ds_file=ds_path(out, spec.origin) if ds else None,
        ds=ds,
        dnssec=summary.get("dnssec"),
        patched=tuple(item.spec.handle.ref for item in patch.signed),
        changes=_explained(patch.changes, written),
    )


# --- verify ------------------------------------------------------------------


def read_expected(envelopes_file: Path) -> dict[str, tuple[Envelope, tuple[str, ...]]]:
    """Handle-ref -> (signed envelope, revocation texts) from ``<zone>.envelopes.json``.

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
        }
    except FileNotFoundError as exc:
        raise RenderError(
            "not found; run 'alter-publish sign' first", where=str(envelopes_file)
        ) from exc
    except (OSError, ValueError, KeyError, TypeError, AlterError) as exc:
        raise RenderError(f"not an envelopes document ({exc})", where=str(envelopes_file)) from exc


def read_zone_file(path: Path, origin: str) -> dns.zone.Zone:
    """Read and parse a rendered zone file.

    Raises:
        RenderError: missing, unreadable or not a valid zone (names the line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise RenderError("not found; run 'alter-publish sign' first", where=str(path)) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise RenderError(f"cannot read: {exc}", where=str(path)) from exc
    return parse_zone_text(text, origin, where=str(path))


def verify(
    zone_files: Sequence[Path],
    *,
    out: Path,
    now: int,
    trust_anchors: Path | None = None,
    server: tuple[str, int] | None = None,
    allow_insecure: bool = False,
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

    Raises:
        DefinitionError: a zone definition is wrong.
        RenderError: an output file is missing or broken.
        UsageError: a trust anchor file is missing or not DS/DNSKEY records.
        ServeError: the loopback server could not start.
        ResolveError: ``server`` gives no usable answer (down, or refusing the zone).
        VerificationError: the zone file is not the one ``sign`` proved (names the record).
    """
    proofs: list[ProofReport] = []
    warnings: list[str] = []
    given = read_trust_anchors(trust_anchors) if trust_anchors else None
    for path in zone_files:
        spec = load_zone(path)
        warnings.extend(spec.warnings())
        zone_file, envelopes_file = output_paths(out, spec.origin)
        anchors: tuple[TrustAnchor, ...] = ()
        if given is not None:
            anchors = given
        elif spec.dnssec.enabled and not allow_insecure:
            anchors = read_trust_anchors(ds_path(out, spec.origin))
        index = LogIndex(read_log(log_path_for(spec.path)))
        expected = read_expected(envelopes_file)
        expectations = {
            handle_spec.handle.ref: _expectation(handle_spec, envelope, revocations, index)
            for handle_spec in spec.handles
            if handle_spec.handle.ref in expected
            for envelope, revocations in [expected[handle_spec.handle.ref]]
        }
        if server is None:
            zone = read_zone_file(zone_file, spec.origin)
            proof = prove_zone(zone, spec, expectations, now=now, anchors=anchors)
            proofs.append(proof)
            # A handle that failed is reported as the proof found it; when only the denial
            # probe failed, the zone check names the record (the SOA, the chain) at fault.
            if all(result.ok for result in proof.results):
                _check_zone_file(zone, zone_file, spec, now)
        else:
            check_answers(server, spec.origin, now=now)
            secure = False if allow_insecure else None
            proofs.append(
                prove_served(server, spec, expectations, now=now, anchors=anchors, secure=secure)
            )
    return VerifyReport(proofs=tuple(proofs), warnings=tuple(warnings))


def _check_zone_file(
    zone: dns.zone.Zone,
    zone_file: Path,
    spec: ZoneSpec,
    now: int,
) -> None:
    """The whole-zone check of :func:`verify`: signatures and chain, then the digest.

    Raises:
        VerificationError: names the first record (or the file) not as ``sign`` proved it.
        RenderError: the state file or the zone file cannot be read.
    """
    check_zone(zone, dnssec=spec.dnssec, now=now, where=str(zone_file))
    state_path = state_path_for(spec.path)
    state = SerialState.read(state_path)
    if state is None or state.zone_sha256 is None:
        return  # signed before alter-publish recorded the digest
    try:
        digest = zone_sha256((zone_file.read_bytes(),))
    except OSError as exc:
        raise RenderError(f"cannot read: {exc.strerror}", where=str(zone_file)) from exc
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


def dnssec_keygen(zone: str, *, keys: KeyStore, now: int) -> tuple[ZoneKey, ...]:
    """Create a zone's KSK and ZSK (Ed25519).

    Returns:
        The new keys; their DS comes from :func:`alter_publish.dns.dnssec.ds_records`.

    Raises:
        UsageError: ``zone`` is not a domain name.
        KeyStoreError: the zone has DNSSEC keys already, or writing failed.
    """
    return keys.zones.generate(zone_origin(zone), now=now)


# --- keys ----------------------------------------------------------------------


def keygen(
    handle: Handle, *, spec: ZoneSpec, keys: KeyStore, secret_out: Path | None = None
) -> HandleKey:
    """Create the first key (epoch 1) of a handle that ``spec`` lists.

    With ``secret_out`` the revocation secret goes there (to be kept offline) and the
    store keeps only its commitment.

    Raises:
        UsageError: the handle's record would lie outside the zone, or the definition
            does not list the handle.
        KeyStoreError: the handle has a key already, or writing failed.
    """
    origin = spec.origin
    owner = handle.owner(origin)
    if not (owner == f"_alter.{origin}." or owner.endswith(f".{origin}.")):
        raise UsageError(f"owner {owner} is outside zone {origin}", where=handle.ref)
    if spec.find(handle.ref) is None:
        raise UsageError(
            f"{spec.path} does not list it; add it to the definition first", where=handle.ref
        )
    epochs = keys.epochs(origin, handle)
    if epochs:
        raise KeyStoreError(
            f"already has a key (epoch {epochs[-1]}); keys are never overwritten",
            where=str(keys.handle_dir(origin, handle)),
        )
    return keys.generate(origin, handle, 1, secret_out=secret_out)


# --- init ----------------------------------------------------------------------

ZONE_SCAFFOLD = """\
# alter-publish zone definition (schema: docs/zones.md in alter-publish).
# Sign, render and prove it (from any directory of the workspace) with:
#   alter-publish sign {zone} --create-keys
zone: {zone}
ttl: 1h                       # default TTL (seconds, or 30m / 1h / 1d / 1w)

soa:
  mname: ns1.{zone}.          # primary name server
  rname: hostmaster.{zone}.   # contact mailbox, '@' written as '.'
  refresh: 2h
  retry: 1h
  expire: 2w
  minimum: 5m                 # negative-caching TTL

ns:                           # the zone's name servers
  - ns1.{zone}.

hosts:                        # address records (glue for in-zone name servers)
  ns1: [192.0.2.53]

envelopes:
  lifetime: 30d               # x= = signing time + lifetime ('never': no expiry)
  renew_before: 7d            # re-sign when an envelope is this close to expiry

dnssec:                       # Ed25519 (algorithm 15); hand <out>/{zone}.ds to your registrar
  enabled: true
  denial: nsec                # nsec, or nsec3 (RFC 9276: iterations 0, no salt)
  signature_validity: 14d     # RRSIG expiration = signing time + this
  refresh: 5d                 # re-sign when signatures are this close to expiring

handles:
  - handle: ~{zone}           # the domain's own handle: _alter.{zone}.
  - handle: ~alice            # a person: _alter.alice.{zone}.
    resolver: https://{zone}/alter/alice
  - ~deploy.bot               # a bot: _alter.deploy.bot.{zone}.
"""


def init_workspace(directory: Path, zone: str, keys_dir: Path | None = None) -> tuple[Path, ...]:
    """Scaffold a zone owner's workspace: ``zones/<zone>.yaml``, ``templates/``, ``keys/``
    and ``offline/`` (both git-ignored).

    Existing files are left alone; the zone definition must not exist yet.

    Returns:
        The files created.

    Raises:
        UsageError: the zone name is not a domain, or its definition exists already.
        RenderError: a file cannot be written.
    """
    origin = zone_origin(zone)
    created: list[Path] = []
    definition = directory / "zones" / f"{origin}.yaml"
    if definition.exists():
        raise UsageError("exists already; edit it instead", where=str(definition))
    atomic_write_bytes(definition, ZONE_SCAFFOLD.format(zone=origin).encode())
    created.append(definition)
    for template in sorted(default_templates_dir().glob("*.j2")):
        target = directory / "templates" / template.name
        if not target.exists():
            atomic_write_bytes(target, template.read_bytes())
            created.append(target)
    store = KeyStore(keys_dir or directory / "keys")
    gitignore = store.root / ".gitignore"
    if not gitignore.exists():
        store.ensure_gitignore()
        created.append(gitignore)
    offline = directory / OFFLINE_DIR / ".gitignore"
    if not offline.exists():
        atomic_write_bytes(offline, OFFLINE_GITIGNORE_TEXT.encode())
        created.append(offline)
    return tuple(created)
