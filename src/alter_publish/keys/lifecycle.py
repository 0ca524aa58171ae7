"""Handle key lifecycle: rotation with continuity, revocation and status (spec 4-6).

What a zone published lives in its IdentityLog (``zones/<zone>.log``); what it is
about to publish lives in the key store (new epochs) and in the revocations file
``zones/<zone>.revocations.json`` (public: a revocation reveals its secret on
purpose). ``sign`` publishes every revocation of the file and of the log at the
handle's owner name, for as long as the handle is in the zone, so an old envelope
replayed from a cache or by whoever stole its key is rejected as ``revoked``.

A rotation makes epoch e+1. Its envelope carries ``psig`` by the epoch-e key
(continuity), unless the rotation says otherwise: after a compromise the old key
can no longer vouch, and a lost key cannot.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from alter_publish.definition.model import HandleSpec, ZoneSpec
from alter_publish.definition.values import format_utc
from alter_publish.errors import AlterError, DefinitionError, KeyStoreError, UsageError
from alter_publish.fileio import atomic_write_bytes
from alter_publish.format.envelope import (
    Envelope,
    Revocation,
    b64url,
    key_id,
    parse_record,
    parse_record_or_none,
    revocation_commitment,
)
from alter_publish.format.handles import Handle, parse_handle
from alter_publish.format.identitylog import IdentityLog, log_path_for, read_log
from alter_publish.interrupts import deferred_interrupts
from alter_publish.keys.store import Continuity, HandleKey, KeyStore, Rotation

REVOCATIONS_FORMAT = "alter-publish/revocations/1"
#: Marks record texts worth parsing when looking for revocations.
_REVOCATION_MARK = "rev="


def revocations_path_for(zone_file: Path) -> Path:
    """``zones/<zone>.yaml`` -> ``zones/<zone>.revocations.json``."""
    return zone_file.with_suffix(".revocations.json")


class RotationMode(StrEnum):
    """Why a handle key is rotated; it decides continuity and revocation."""

    SCHEDULED = "scheduled"  # psig by the old key
    COMPROMISED = "compromised"  # revoke the old epoch, no psig
    LOST = "lost"  # no psig; revoke too when the secret is at hand


# --- what the log says ---------------------------------------------------------------


class LogIndex:
    """A zone's log entries grouped by owner name; records are parsed only when asked."""

    def __init__(self, log: IdentityLog) -> None:
        self._texts: dict[str, list[str]] = {}
        for entry in log.entries:
            self._texts.setdefault(entry.owner, []).append(entry.text)

    def _records(self, owner: str, *, newest_first: bool = True) -> Iterable[str]:
        texts = self._texts.get(owner, ())
        return reversed(texts) if newest_first else iter(texts)

    def newest_text(self, owner: str) -> str | None:
        """The text of the last entry logged at ``owner`` (unparsed), or None."""
        texts = self._texts.get(owner)
        return texts[-1] if texts else None

    def latest(self, owner: str, handle: Handle, epoch: int | None = None) -> Envelope | None:
        """The last logged envelope of ``handle`` (of ``epoch``, if given)."""
        for text in self._records(owner):
            record = parse_record_or_none(text)
            if (
                isinstance(record, Envelope)
                and record.handle == handle
                and (epoch is None or record.epoch == epoch)
            ):
                return record
        return None

    def envelopes(self, owner: str, handle: Handle) -> tuple[Envelope, ...]:
        """Every logged envelope of ``handle``, oldest first."""
        found = (parse_record_or_none(text) for text in self._records(owner, newest_first=False))
        return tuple(r for r in found if isinstance(r, Envelope) and r.handle == handle)

    def revocations(self, owner: str, handle: Handle) -> tuple[Revocation, ...]:
        """Every logged revocation of ``handle``, oldest first."""
        found = (
            parse_record_or_none(text)
            for text in self._records(owner, newest_first=False)
            if _REVOCATION_MARK in text
        )
        return tuple(r for r in found if isinstance(r, Revocation) and r.handle == handle)

    def published_epoch(self, owner: str, handle: Handle) -> int:
        """The highest epoch the zone ever published for ``handle`` (0 for none)."""
        return max((envelope.epoch for envelope in self.envelopes(owner, handle)), default=0)


# --- the revocations file --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RevocationEntry:
    """One revocation of the revocations file, with when and why it was made."""

    revocation: Revocation
    made: int
    reason: str

    def to_mapping(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "handle": self.revocation.handle.ref,
            "epoch": self.revocation.epoch,
            "text": self.revocation.to_text(),
            "made": self.made,
            "reason": self.reason,
        }


def read_revocations(path: Path) -> tuple[RevocationEntry, ...]:
    """Read the revocations file; a missing file holds none.

    Raises:
        DefinitionError: the file is unreadable or an entry is not a revocation.
    """
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ()
    except (OSError, ValueError) as exc:
        raise DefinitionError(f"not a revocations file ({exc})", where=str(path)) from exc
    if not isinstance(doc, dict) or doc.get("format") != REVOCATIONS_FORMAT:
        raise DefinitionError(f"not a {REVOCATIONS_FORMAT} document", where=str(path))
    items = doc.get("revocations") or []
    if not isinstance(items, list):
        raise DefinitionError("'revocations' must be a list", where=str(path))
    entries: list[RevocationEntry] = []
    for number, item in enumerate(items, start=1):
        where = f"{path}: revocation {number}"
        try:
            record = parse_record(str(item["text"]))
            made, reason = int(item["made"]), str(item["reason"])
        except (KeyError, TypeError, ValueError, OverflowError, AlterError) as exc:
            raise DefinitionError(f"not a revocation entry ({exc})", where=where) from exc
        if not isinstance(record, Revocation):
            raise DefinitionError("text is not a revocation record", where=where)
        entries.append(RevocationEntry(record, made, reason))
    return tuple(entries)


def add_revocation(path: Path, entry: RevocationEntry) -> bool:
    """Add ``entry`` to the revocations file (atomically); False if it was there already.

    Raises:
        DefinitionError: the file is unreadable.
        RenderError: the file cannot be written.
    """
    entries = read_revocations(path)
    if any(old.revocation == entry.revocation for old in entries):
        return False
    doc = {
        "format": REVOCATIONS_FORMAT,
        "revocations": [item.to_mapping() for item in (*entries, entry)],
    }
    atomic_write_bytes(path, (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode())
    return True


@dataclass(frozen=True, slots=True)
class HandleRevocations:
    """The revocations a handle publishes: already logged, and new to this run."""

    logged: tuple[Revocation, ...] = ()
    new: tuple[Revocation, ...] = ()

    @property
    def every(self) -> tuple[Revocation, ...]:
        """All of them, in publication order."""
        return self.logged + self.new

    @property
    def epochs(self) -> frozenset[int]:
        """The revoked epochs."""
        return frozenset(revocation.epoch for revocation in self.every)


def zone_revocations(
    spec: ZoneSpec, index: LogIndex, entries: Sequence[RevocationEntry]
) -> dict[str, HandleRevocations]:
    """Handle-ref -> the revocations to publish for it (handles with none are left out)."""
    pending: dict[Handle, list[Revocation]] = {}
    for entry in entries:
        pending.setdefault(entry.revocation.handle, []).append(entry.revocation)
    found: dict[str, HandleRevocations] = {}
    for handle_spec in spec.handles:
        logged = index.revocations(handle_spec.owner, handle_spec.handle)
        new = tuple(r for r in pending.get(handle_spec.handle, ()) if r not in logged)
        if logged or new:
            found[handle_spec.handle.ref] = HandleRevocations(logged, new)
    return found


# --- rotate and revoke -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RotateResult:
    """A rotation: the new epoch's key, and the revocation it queued, if any."""

    handle: Handle
    previous_epoch: int
    key: HandleKey
    rotation: Rotation
    revocation: Revocation | None
    secret_file: Path

    def to_mapping(self) -> dict[str, Any]:
        """JSON form (public data only)."""
        return {
            "handle": self.handle.ref,
            "previous_epoch": self.previous_epoch,
            "epoch": self.key.epoch,
            "key_id": self.key.key_id,
            "public_key": b64url(self.key.public_key),
            "continuity": str(self.rotation.continuity),
            "reason": self.rotation.reason,
            "revoked_epoch": None if self.revocation is None else self.revocation.epoch,
            "revocation_secret_file": str(self.secret_file),
        }


def _handle_spec(spec: ZoneSpec, ref: str) -> HandleSpec:
    handle_spec = spec.find(parse_handle(ref).ref)
    if handle_spec is None:
        raise UsageError(f"{ref} is not a handle of {spec.path}", where=ref)
    return handle_spec


def current_epoch(spec: ZoneSpec, handle_spec: HandleSpec, keys: KeyStore, index: LogIndex) -> int:
    """The handle's current epoch: the highest in the key store or ever published."""
    stored = keys.epochs(spec.origin, handle_spec.handle)
    published = index.published_epoch(handle_spec.owner, handle_spec.handle)
    return max(max(stored, default=0), published)


def _revocation_for(
    spec: ZoneSpec,
    handle_spec: HandleSpec,
    epoch: int,
    *,
    keys: KeyStore,
    index: LogIndex,
    secret_file: Path | None,
) -> Revocation:
    """The revocation of ``epoch``, its secret checked against what was committed.

    Raises:
        KeyStoreError: the secret is missing, unreadable, or not this epoch's.
    """
    handle = handle_spec.handle
    secret = keys.read_secret(spec.origin, handle, epoch, secret_file)
    # What was published decides; the key store speaks only for an unpublished epoch.
    commitments = {
        envelope.revocation_commitment
        for envelope in index.envelopes(handle_spec.owner, handle)
        if envelope.epoch == epoch
    }
    if not commitments and epoch in keys.epochs(spec.origin, handle):
        commitments.add(keys.load(spec.origin, handle, epoch).commitment)
    if not commitments:
        raise KeyStoreError(
            f"{handle.ref} has no epoch {epoch}: nothing was published or stored for it",
            where=handle.ref,
        )
    if revocation_commitment(secret) not in commitments:
        raise KeyStoreError(
            f"this secret does not match the rc= committed for epoch {epoch} of {handle.ref}",
            where=str(secret_file or keys.paths(spec.origin, handle, epoch)[1]),
        )
    return Revocation(handle=handle, epoch=epoch, secret=secret)


def rotate(
    spec: ZoneSpec,
    ref: str,
    *,
    keys: KeyStore,
    now: int,
    mode: RotationMode = RotationMode.SCHEDULED,
    secret_out: Path | None = None,
    secret_file: Path | None = None,
) -> RotateResult:
    """Make the handle's next epoch; the next ``sign`` publishes it.

    ``SCHEDULED`` gives the new envelope ``psig`` by the current key (which must be
    at hand). ``COMPROMISED`` queues the revocation of the current epoch (its secret
    from the store or ``secret_file``) and gives no ``psig``. ``LOST`` gives no
    ``psig`` and revokes only when the secret is at hand.

    Raises:
        UsageError: the handle is not in the zone, or has no key to rotate.
        KeyStoreError: the current key or secret is missing or does not match.
        DefinitionError: the revocations file is broken.
    """
    if mode is RotationMode.SCHEDULED and secret_file is not None:
        raise UsageError(
            "--secret-file is for --compromised or --lost (a scheduled rotation revokes nothing)"
        )
    handle_spec = _handle_spec(spec, ref)
    handle = handle_spec.handle
    index = LogIndex(read_log(log_path_for(spec.path)))
    epoch = current_epoch(spec, handle_spec, keys, index)
    if epoch == 0:
        raise UsageError(
            f"{handle.ref} has no key to rotate; run 'alter-publish keygen {handle.ref} "
            f"--zone {spec.origin}'",
            where=handle.ref,
        )
    newest_stored = max(keys.epochs(spec.origin, handle), default=0)
    published = index.published_epoch(handle_spec.owner, handle)
    if newest_stored > published:
        raise UsageError(
            f"epoch {newest_stored} of {handle.ref} is not published yet; run "
            f"'alter-publish sign {spec.path}' first (rotating past an epoch no verifier "
            "has seen breaks continuity, and a compromise is of the published key)",
            where=handle.ref,
        )
    revoked = {r.epoch for r in index.revocations(handle_spec.owner, handle)}
    revoked |= {
        entry.revocation.epoch
        for entry in read_revocations(revocations_path_for(spec.path))
        if entry.revocation.handle == handle
    }
    revocation: Revocation | None = None
    continuity = Continuity.NONE
    if mode is RotationMode.SCHEDULED:
        if epoch in revoked:
            raise KeyStoreError(
                f"epoch {epoch} of {handle.ref} is revoked and cannot vouch for the next; "
                "rotate with --compromised",
                where=handle.ref,
            )
        if epoch not in keys.epochs(spec.origin, handle):
            raise KeyStoreError(
                f"the epoch {epoch} key of {handle.ref} is not in the key store, so it cannot "
                "sign psig=; if it is lost, rotate with --lost",
                where=str(keys.paths(spec.origin, handle, epoch)[0]),
            )
        keys.load(spec.origin, handle, epoch)  # fails now, not at the next sign
        continuity = Continuity.PSIG
    elif mode is RotationMode.COMPROMISED or secret_file is not None:
        revocation = _revocation_for(
            spec, handle_spec, epoch, keys=keys, index=index, secret_file=secret_file
        )
    elif keys.paths(spec.origin, handle, epoch)[1].exists():  # LOST, secret in the store
        revocation = _revocation_for(
            spec, handle_spec, epoch, keys=keys, index=index, secret_file=None
        )
    keys.check_new(spec.origin, handle, epoch + 1, secret_out=secret_out)  # before any write
    revocations_file = revocations_path_for(spec.path)
    before = revocations_file.read_bytes() if revocations_file.exists() else None

    def rotation_of(public_key: bytes) -> Rotation:
        return Rotation(epoch + 1, now, str(mode), continuity, public_key)

    # The revocation and the new epoch go together: SIGINT and SIGTERM wait for both.
    with deferred_interrupts():
        if revocation is not None:
            add_revocation(revocations_file, RevocationEntry(revocation, now, f"rotate --{mode}"))
        try:
            key = keys.generate(
                spec.origin, handle, epoch + 1, secret_out=secret_out, rotation=rotation_of
            )
        except AlterError:
            _restore(revocations_file, before)  # a failed rotation queues nothing
            raise
    rotation = rotation_of(key.public_key)
    written_secret = secret_out or keys.paths(spec.origin, handle, epoch + 1)[1]
    return RotateResult(handle, epoch, key, rotation, revocation, written_secret)


def _restore(path: Path, content: bytes | None) -> None:
    if content is None:
        path.unlink(missing_ok=True)
    else:
        atomic_write_bytes(path, content)


def revoke(
    spec: ZoneSpec,
    ref: str,
    *,
    keys: KeyStore,
    now: int,
    epoch: int | None = None,
    secret_file: Path | None = None,
) -> tuple[Revocation, bool]:
    """Queue the revocation of a past epoch; the next ``sign`` publishes it.

    Returns:
        The revocation, and False when it was queued or published already.

    Raises:
        UsageError: the handle is not in the zone, or ``epoch`` is its current one.
        KeyStoreError: the secret is missing or is not that epoch's.
        DefinitionError: the revocations file is broken.
    """
    handle_spec = _handle_spec(spec, ref)
    handle = handle_spec.handle
    index = LogIndex(read_log(log_path_for(spec.path)))
    current = current_epoch(spec, handle_spec, keys, index)
    target = current if epoch is None else epoch
    if target == current:
        raise UsageError(
            f"epoch {target} is the current key of {handle.ref}; revoking it alone leaves "
            f"no valid record. Run 'alter-publish rotate {handle.ref} --zone {spec.origin} "
            "--compromised' to revoke it and publish a new key",
            where=handle.ref,
        )
    if not 1 <= target < current:
        raise UsageError(
            f"{handle.ref} has epochs 1 to {current}; there is no epoch {target}", where=handle.ref
        )
    revocation = _revocation_for(
        spec, handle_spec, target, keys=keys, index=index, secret_file=secret_file
    )
    if revocation in index.revocations(handle_spec.owner, handle):
        return revocation, False
    entry = RevocationEntry(revocation, now, "revoke")
    return revocation, add_revocation(revocations_path_for(spec.path), entry)


# --- status ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EpochStatus:
    """One epoch of a handle: its key and where it stands."""

    epoch: int
    key_id: str | None
    state: str  # active, retired, revoked, or unfinished (cut short before its key)
    published: bool
    revocation: str | None  # None, "pending" (queued) or "published"
    continuity: str | None  # psig or none for a rotated epoch

    def to_mapping(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "epoch": self.epoch,
            "key_id": self.key_id,
            "state": self.state,
            "published": self.published,
            "revocation": self.revocation,
            "continuity": self.continuity,
        }


@dataclass(frozen=True, slots=True)
class HandleStatus:
    """A handle's epochs, its current envelope's expiry and the next action due."""

    handle: str
    owner: str
    epochs: tuple[EpochStatus, ...]
    expires: int | None
    next_action: str
    due: int | None

    def to_mapping(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "handle": self.handle,
            "owner": self.owner,
            "epochs": [epoch.to_mapping() for epoch in self.epochs],
            "expires": self.expires,
            "next_action": self.next_action,
            "due": self.due,
        }


def handle_status(
    spec: ZoneSpec,
    handle_spec: HandleSpec,
    *,
    keys: KeyStore,
    index: LogIndex,
    pending: Mapping[Handle, Sequence[Revocation]],
    now: int,
) -> HandleStatus:
    """Where one handle's keys stand (reads the key store without loading private keys)."""
    handle, owner = handle_spec.handle, handle_spec.owner
    envelopes = index.envelopes(owner, handle)
    logged_revocations = {r.epoch for r in index.revocations(owner, handle)}
    queued = {r.epoch for r in pending.get(handle, ())} - logged_revocations
    stored = set(keys.epochs(spec.origin, handle))
    current = max(max(stored, default=0), max((e.epoch for e in envelopes), default=0))
    keys_by_epoch = {envelope.epoch: envelope.public_key for envelope in envelopes}
    epochs: list[EpochStatus] = []
    for epoch in sorted(stored | set(keys_by_epoch)):
        rotation = keys.rotation(spec.origin, handle, epoch)
        public = keys_by_epoch.get(epoch) or (rotation.public_key if rotation else None)
        revocation = (
            "published" if epoch in logged_revocations else "pending" if epoch in queued else None
        )
        state = "revoked" if revocation else "active" if epoch == current else "retired"
        epochs.append(
            EpochStatus(
                epoch=epoch,
                key_id=key_id(public) if public else None,
                state=state,
                published=epoch in keys_by_epoch,
                revocation=revocation,
                continuity=str(rotation.continuity) if rotation else None,
            )
        )
    # Files of an epoch a run cut short before writing its key (never published).
    unfinished = [epoch for epoch in keys.unfinished_epochs(spec.origin, handle) if epoch > current]
    epochs.extend(EpochStatus(epoch, None, "unfinished", False, None, None) for epoch in unfinished)
    latest = envelopes[-1] if envelopes else None
    expires = latest.expires_at if latest and latest.epoch == current else None
    found = spec.find(handle.ref)
    lifetime = found.lifetime if found is not None else None
    action, due = _next_action(spec, current, latest, queued, now, lifetime)
    if unfinished:
        remade = "keygen or sign --create-keys" if current == 0 else "the next rotate"
        action += (
            f" (epoch {unfinished[0]} was cut short before its key was written; "
            f"{remade} discards what it left)"
        )
    return HandleStatus(handle.ref, owner, tuple(epochs), expires, action, due)


def _next_action(
    spec: ZoneSpec,
    current: int,
    latest: Envelope | None,
    queued: set[int],
    now: int,
    lifetime: int | None,
) -> tuple[str, int | None]:
    if current == 0:
        return "create a key: keygen, or sign --create-keys", now
    if latest is None or latest.epoch != current:
        return f"sign: publish epoch {current}", now
    if queued:
        epochs = ", ".join(str(epoch) for epoch in sorted(queued))
        return f"sign: publish the revocation of epoch {epochs}", now
    if latest.expires_at is None:
        return "none (the envelope does not expire)", None
    # The renewal window of the handle's lifetime, as sign judges it (x= is spread
    # earlier than t= + lifetime: docs/zones.md, 'Spread renewals').
    renew_at = latest.expires_at - spec.renew_window(
        lifetime or latest.expires_at - latest.signed_at
    )
    if renew_at <= now:
        return f"sign: re-sign (expires {format_utc(latest.expires_at)})", renew_at
    return f"sign by {format_utc(renew_at)} to renew", renew_at


def zone_handle_status(spec: ZoneSpec, *, keys: KeyStore, now: int) -> tuple[HandleStatus, ...]:
    """Status of every handle of a zone.

    Raises:
        KeyStoreError: the key store cannot be read.
        DefinitionError: the revocations file is broken.
        RenderError: the log is unreadable.
    """
    index = LogIndex(read_log(log_path_for(spec.path)))
    pending: dict[Handle, list[Revocation]] = {}
    for entry in read_revocations(revocations_path_for(spec.path)):
        pending.setdefault(entry.revocation.handle, []).append(entry.revocation)
    return tuple(
        handle_status(spec, handle_spec, keys=keys, index=index, pending=pending, now=now)
        for handle_spec in spec.handles
    )
