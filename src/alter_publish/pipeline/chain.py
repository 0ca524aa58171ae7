"""The envelope chain: load each handle's key (in workers), reuse or sign its envelope,
append it to the IdentityLog; ``plan_zone`` runs it and the build for one zone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.definition.model import HandleSpec, ZoneSpec
from alter_publish.definition.state import RENEWAL_SLOT_SECONDS, renewal_slot
from alter_publish.definition.values import NEVER, format_duration, format_utc
from alter_publish.errors import (
    KeyStoreError,
)
from alter_publish.format.ed25519 import SigningKey
from alter_publish.format.envelope import (
    CLOCK_SKEW_SECONDS,
    Envelope,
    Tags,
    key_id,
    sign_envelope,
)
from alter_publish.format.handles import Handle
from alter_publish.format.identitylog import (
    IdentityLog,
    LogEntry,
    MerkleTree,
    log_path_for,
)
from alter_publish.keys.lifecycle import (
    HandleRevocations,
    LogIndex,
)
from alter_publish.keys.readahead import ReadAhead
from alter_publish.keys.store import Continuity, KeyStore
from alter_publish.parallel import Workers, ranges, shared
from alter_publish.pipeline.context import RunContext
from alter_publish.pipeline.render import (
    SignedHandle,
)
from alter_publish.pipeline.reports import Change
from alter_publish.verify.proof import (
    Expectation,
)


def _tags_after_rc(envelope: Envelope) -> Tags:
    names = [name for name, _ in envelope.tags]
    start = names.index("rc") + 1
    return tuple(tag for tag in envelope.tags[start:] if tag[0] not in ("psig", "sig"))


def _resign_reason(
    previous: Envelope | None, spec: HandleSpec, key: LoadedKey, now: int, zone: ZoneSpec
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
    if not _expiry_fits(previous, spec, zone):
        if lifetime is not None and spec.lifetime is not None and lifetime <= spec.lifetime:
            # A spread x= (or t= + lifetime) that renew_before now puts elsewhere.
            detail = f"x= {format_utc(previous.expires_at or 0)} is not this lifetime's"
            return "lifetime-changed", f"{detail} ({_lifetime_text(spec.lifetime)})"
        return "lifetime-changed", f"{_lifetime_text(lifetime)} -> {_lifetime_text(spec.lifetime)}"
    if previous.signed_at > now + CLOCK_SKEW_SECONDS:
        return "signed-after-now", f"signed {format_utc(previous.signed_at)}"
    if previous.expires_at is not None and now >= previous.expires_at - zone.renew_window(
        spec.lifetime or 0
    ):
        said = "expired" if now >= previous.expires_at else "expires"
        return "renewal-due", f"{said} {format_utc(previous.expires_at)}"
    return None


def envelope_expiry(owner: str, signed_at: int, lifetime: int, renew: int) -> int:
    """An envelope's ``x=``: its renewal, ``renew`` before it, falls on the owner's slot.

    Without spreading every envelope of a first sign would fall due on one day, every
    lifetime. Renewal is due ``period = lifetime - renew`` after signing; the owner's
    renewal days recur every ``cycle`` (``period`` less a day, in whole days, at least
    two) from an offset given by its slot (``renewal_slot`` of the owner name), and the
    envelope expires ``renew`` after the last of those days no later than ``period``
    after signing. So ``x=`` is at most ``cycle`` (less than ``period``) before
    ``signed_at + lifetime`` and renewal never comes within a day of signing; renewed on
    its day, an envelope's next renewal is ``cycle`` later, so at steady state a daily
    run renews about ``1/cycle`` of the zone's envelopes. A ``period`` under three days
    is not spread: ``x=`` is ``signed_at + lifetime``.
    """
    period = lifetime - renew
    slots = period // RENEWAL_SLOT_SECONDS - 1
    if slots < 2:
        return signed_at + lifetime
    cycle = slots * RENEWAL_SLOT_SECONDS
    offset = renewal_slot(owner.lower().rstrip(".").encode(), slots) * RENEWAL_SLOT_SECONDS
    due = signed_at + period
    return due - (due - offset) % cycle + renew


def _expiry_fits(previous: Envelope, spec: HandleSpec, zone: ZoneSpec) -> bool:
    """The logged envelope's ``x=`` is what the handle's lifetime gives: spread
    (:func:`envelope_expiry`), or ``t=`` plus the lifetime (as before spreading)."""
    if spec.lifetime is None or previous.expires_at is None:
        return spec.lifetime is None and previous.expires_at is None
    signed_at, lifetime = previous.signed_at, spec.lifetime
    spread = envelope_expiry(spec.owner, signed_at, lifetime, zone.renew_window(lifetime))
    return previous.expires_at in (spread, signed_at + lifetime)


def _lifetime_text(seconds: int | None) -> str:
    return NEVER if seconds is None else format_duration(seconds)


def _check_against_log(
    handle_spec: HandleSpec, key: LoadedKey, logged: Envelope | None, zone: str
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
    key: LoadedKey,
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
class LoadedKey:
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

#: Why a handle's logged envelope must be signed again, decided by its key loader:
#: (reason, detail, renewal: the logged envelope has the key's epoch).
Decided = tuple[str, str, bool]


def decide(
    spec: ZoneSpec, handle_spec: HandleSpec, key: LoadedKey, index: LogIndex, now: int
) -> Decided | None:
    """What :meth:`EnvelopeChain.add` decides about the logged envelope, when it must be
    signed again; None when it is reused, or the log contradicts the key (``add`` then
    decides, and says why). It depends on the log as read and the key alone, not on the
    chain, so key loaders decide in parallel: parsing 100,000 logged envelopes is the
    largest part of a full re-sign's chain otherwise.
    """
    previous = index.latest(handle_spec.owner, handle_spec.handle)
    if previous is None:
        return None
    try:
        _check_against_log(handle_spec, key, previous, spec.origin)
    except KeyStoreError:
        return None
    reason = _resign_reason(previous, handle_spec, key, now, spec)
    return None if reason is None else (*reason, previous.epoch == key.epoch)


#: A loaded key and the decision on its logged envelope, as they cross the process
#: boundary.
_LoadedDecided = tuple[_Loaded, Decided | None]


def _load_key_span(span: tuple[int, int]) -> list[_LoadedDecided]:
    """Worker side: the current key of handles ``span`` (or the problem, one line), and
    whether the logged envelope must be signed again (:func:`decide`).

    A key is never created here for a handle whose owner name is in the log: the main
    process decides (:func:`current_material`), so no key contradicts the log.
    """
    keys, spec, create, logged_owners, index, now = shared()
    origin = spec.origin
    loaded: list[_LoadedDecided] = []
    zone_fd = keys.open_zone_dir(origin)
    handles = spec.handles[span[0] : span[1]]
    try:
        with ReadAhead(zone_fd, [item.handle.name for item in handles]) as ahead:
            for at, handle_spec in enumerate(handles):
                ahead.before(at)  # files not cached: read the block's ahead, many at once
                handle = handle_spec.handle
                try:
                    epoch, seed, commitment = keys.current_material(
                        origin,
                        handle,
                        create=create and handle.owner(origin) not in logged_owners,
                        zone_fd=zone_fd,
                    )
                except KeyStoreError as exc:
                    loaded.append((str(exc), None))
                    continue
                public = SigningKey.from_seed(seed).public
                key = LoadedKey(handle, epoch, public, commitment, seed)
                decided = decide(spec, handle_spec, key, index, now)
                loaded.append(((epoch, public, commitment, seed), decided))
    finally:
        if zone_fd is not None:
            os.close(zone_fd)
    return loaded


def current_material(
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
        epoch, seed, commitment = current_material(spec, handle_spec, keys, index, create=create)
    except KeyStoreError as exc:
        return str(exc)
    return epoch, SigningKey.from_seed(seed).public, commitment, seed


class EnvelopeChain:
    """The envelope chain of one zone as it is built: each envelope's ``log=`` names the
    log after the one before (so it cannot be parallel); ``changes`` says why, for every
    record it adds."""

    def __init__(
        self,
        spec: ZoneSpec,
        keys: KeyStore,
        now: int,
        index: LogIndex,
        revocations: Mapping[str, HandleRevocations],
        tree: MerkleTree,
    ) -> None:
        self.spec, self.keys, self.now = spec, keys, now
        self.index, self.revocations, self.tree = index, revocations, tree
        self.signed: list[SignedHandle] = []
        self.new_entries: list[LogEntry] = []
        self.changes: list[Change] = []

    def add(self, handle_spec: HandleSpec, key: LoadedKey, decided: Decided | None = None) -> None:
        """One link: log new revocations, then reuse the logged envelope or sign a new
        one and log it. ``decided`` (a key loader's :func:`decide` for this handle and
        key) spares parsing the logged envelope when it must be signed again.

        Raises:
            KeyStoreError: the current key is revoked, or behind or different from the log.
        """
        spec, ref = self.spec, handle_spec.handle.ref
        handle_revocations = self.revocations.get(ref, HandleRevocations())
        revoked = handle_revocations.epochs
        if key.epoch in revoked:
            raise KeyStoreError(
                f"the current key (epoch {key.epoch}) of {ref} is revoked; run "
                f"'alter-publish rotate {ref} --zone {spec.origin} --compromised'",
                where=ref,
            )
        for revocation in handle_revocations.new:
            self._log(LogEntry(owner=handle_spec.owner, text=revocation.to_text()))
            self.changes.append(Change(ref, "epoch-revoked", f"epoch {revocation.epoch}"))
        if decided is None:
            previous = self.index.latest(handle_spec.owner, handle_spec.handle)
            _check_against_log(handle_spec, key, previous, spec.origin)
            reason = _resign_reason(previous, handle_spec, key, self.now, spec)
            if reason is None:
                assert previous is not None  # noqa: S101 (narrowing: only a logged one is reused)
                self.signed.append(SignedHandle(handle_spec, previous, handle_revocations.every))
                return
            renewal = previous is not None and previous.epoch == key.epoch
        else:
            reason, renewal = decided[:2], decided[2]
        self.changes.append(Change(ref, *reason))
        envelope = sign_envelope(
            handle=handle_spec.handle,
            owner=handle_spec.owner,
            epoch=key.epoch,
            private_key=key.private(),
            signed_at=self.now,
            expires_at=(
                None
                if handle_spec.lifetime is None
                else envelope_expiry(
                    handle_spec.owner,
                    self.now,
                    handle_spec.lifetime,
                    spec.renew_window(handle_spec.lifetime),
                )
            ),
            log_size=self.tree.size,
            log_root=self.tree.root(),
            commitment=key.commitment,
            extra_tags=handle_spec.envelope_tags(),
            previous_key=_previous_key(spec, handle_spec, key, self.keys, revoked, renewal),
        )
        self._log(LogEntry(owner=handle_spec.owner, text=envelope.to_text()))
        self.signed.append(SignedHandle(handle_spec, envelope, handle_revocations.every))

    def _log(self, entry: LogEntry) -> None:
        self.tree.append(entry.to_bytes())
        self.new_entries.append(entry)


def run_chain(ctx: RunContext, chain: EnvelopeChain, log: IdentityLog) -> None:
    """Every handle of ``chain.spec`` through the chain, its key loaded by workers span by
    span while this process runs the chain.

    Raises:
        KeyStoreError: keys are missing or unusable (every problem, listed).
    """
    spec = chain.spec
    problems: list[str] = []
    ctx.progress.start("envelopes", len(spec.handles))
    spans = ranges(len(spec.handles), KEY_SPAN_HANDLES)
    logged_owners = frozenset(entry.owner for entry in log.entries) if ctx.create_keys else ()
    loading = (ctx.keys, spec, ctx.create_keys, logged_owners, chain.index, chain.now)
    # Key files are small reads that wait on the disk when not cached: twice as many
    # loaders as CPUs keep both busy either way. The chain here is the critical path:
    # the loaders run at a lower priority and take what CPU it leaves.
    loaders = 2 * ctx.jobs if ctx.jobs > 1 else 1
    with Workers(loaders, loading, size=len(spec.handles), nice=LOADER_NICE) as pool:
        chunks = pool.map_chunks(_load_key_span, spans, progress=ctx.progress)
        for (first, _), loaded in zip(spans, chunks, strict=True):
            for handle_spec, (material, decided) in zip(spec.handles[first:], loaded, strict=False):
                if isinstance(material, str):
                    material = _retry_material(
                        spec, handle_spec, ctx.keys, chain.index, ctx.create_keys
                    )
                if isinstance(material, str):
                    problems.append(material)
                if problems or isinstance(material, str):
                    continue  # keep loading to report every problem, sign nothing more
                chain.add(handle_spec, LoadedKey(handle_spec.handle, *material), decided)
    if problems:
        more = len(problems) - 1
        raise KeyStoreError(
            problems[0] + (f" (+{more} more)" if more else ""), reasons=tuple(problems)
        )
    ctx.progress.done()


def handle_expectations(signed: Sequence[SignedHandle], index: LogIndex) -> dict[str, Expectation]:
    """What the proof checks for each handle signed (see :func:`handle_expectation`)."""
    return {
        item.spec.handle.ref: handle_expectation(
            item.spec,
            item.envelope,
            tuple(revocation.to_text() for revocation in item.revocations),
            index,
        )
        for item in signed
    }


def handle_expectation(
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
