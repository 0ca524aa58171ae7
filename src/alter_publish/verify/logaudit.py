"""Auditing a zone's published transparency log (``alter-publish log``): recompute every
tile and the root from the entry bundles, check the checkpoint's signature, and check
that checkpoints extend one another.

Failures raise :class:`VerificationError` with one of the log categories:
``tampered-entry`` (an entry or the root is not what the entries give),
``dropped-entry`` (a bundle or entry is missing), ``bad-tile`` (a hash tile is not what
the signed entries give, or a mirror's tile does not agree with the signed root),
``equivocation`` (two signed roots for one size), ``fork`` (a newer checkpoint does not
extend an older one), ``rollback`` (a checkpoint older than one seen before),
``bad-signature``, ``malformed``, and with a witness policy (c2sp.org/tlog-policy)
``quorum-not-met`` (too few valid cosignatures).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from alter_publish.errors import UsageError, VerificationError
from alter_publish.fileio import read_bounded
from alter_publish.format.note import ED25519_TYPE, Note, Verifier
from alter_publish.format.policy import Policy
from alter_publish.format.tiles import (
    ENTRIES,
    Tile,
    TreeHashes,
    bundle_tiles,
    decode_entries,
    tiles_for_size,
)
from alter_publish.format.tlog import (
    HASH_OCTETS,
    Checkpoint,
    consistency_proof,
    verify_consistency,
)

CHECKPOINT_FILE = "checkpoint"


@dataclass(frozen=True, slots=True)
class LogAudit:
    """A log directory that passed the audit: its checkpoint and what was checked."""

    directory: Path
    checkpoint: Checkpoint
    tiles: int
    bundles: int
    extends: tuple[int, ...]  # the sizes of the older checkpoints it was found to extend
    cosigners: tuple[str, ...] = ()  # the policy's witnesses that cosigned it (with a policy)


def signed_checkpoint(text: str, verifier: Verifier, where: str) -> Checkpoint:
    """The checkpoint of a signed note, its signature and origin checked.

    Raises:
        VerificationError: ``bad-signature`` or ``malformed``.
        UsageError: ``verifier`` is a witness cosignature key, not a log key.
    """
    if verifier.algorithm != ED25519_TYPE:
        raise UsageError(
            f"{verifier.name} is a witness cosignature key (type 0x04), not a log key",
            where=where,
        )
    try:
        note = Note.parse(text)
        note.verify(verifier)
        checkpoint = Checkpoint.parse(note.text)
    except VerificationError as exc:
        raise VerificationError(exc.what, where=where, category=exc.category) from exc
    if checkpoint.origin != verifier.name:
        raise VerificationError(
            f"origin {checkpoint.origin!r} is not the key's {verifier.name!r}",
            where=where,
            category="bad-signature",
        )
    return checkpoint


#: The largest checkpoint file read from a log directory (a note with many cosignatures).
CHECKPOINT_OCTETS_MAX = 64 * 1024


def stored_tiles(directory: Path) -> Callable[[Tile], bytes]:
    """A tile loader for :class:`TreeHashes` reading ``directory`` (a log's tiles, perhaps
    a mirror's): each a regular file no larger than its tile can be, a hash tile exactly
    its width of hashes.

    The loader raises :class:`VerificationError`: ``dropped-entry`` for a missing file,
    ``bad-tile`` (naming the file) for an unreadable, linked, special, oversized or
    (a hash tile) cut short one.
    """

    def load(tile: Tile) -> bytes:
        path = directory / tile.path
        try:
            data = read_bounded(path, tile.octets_max)
        except FileNotFoundError as exc:
            raise VerificationError("missing", where=str(path), category="dropped-entry") from exc
        except OSError as exc:
            what = f"cannot read: {exc.strerror}"
            raise VerificationError(what, where=str(path), category="bad-tile") from exc
        if tile.level != ENTRIES and len(data) != tile.width * HASH_OCTETS:
            what = f"holds {len(data)} octets, not {tile.width} hashes"
            raise VerificationError(what, where=str(path), category="bad-tile")
        return data

    return load


def check_tiles(tree: TreeHashes, root: bytes, directory: Path) -> None:
    """Check that the tiles ``tree`` read from ``directory`` (through
    :func:`stored_tiles`) agree with ``root``, the signed root of its size: called when
    a proof made from them fails, to tell a bad mirror from a bad log.

    Raises:
        VerificationError: ``bad-tile`` naming the tile (or, when the right edge gives
            another root, the edge's tiles); ``dropped-entry`` for a missing tile.
    """
    try:
        bad = tree.misfits(root)
    except ValueError as exc:
        raise VerificationError(str(exc), where=str(directory), category="bad-tile") from exc
    if len(bad) == 1:
        what = f"its hashes do not lead to the signed root of size {tree.size}"
        raise VerificationError(what, where=str(directory / bad[0].path), category="bad-tile")
    if bad:
        paths = ", ".join(tile.path for tile in bad)
        what = f"the tiles {paths} do not give the signed root of size {tree.size}"
        raise VerificationError(what, where=str(directory), category="bad-tile")


def read_checkpoint_file(path: Path) -> str:
    """A log directory's checkpoint file, bounded (:data:`CHECKPOINT_OCTETS_MAX`).

    Raises:
        OSError: unreadable, a link, not a regular file, or too large.
        UnicodeDecodeError: not UTF-8.
    """
    return read_bounded(path, CHECKPOINT_OCTETS_MAX).decode("utf-8")


def _read(path: Path, category: str) -> bytes:
    try:
        return read_bounded(path, Tile(ENTRIES, 0).octets_max)
    except OSError as exc:
        raise VerificationError(
            f"cannot read: {exc.strerror}", where=str(path), category=category
        ) from exc


def _entries(directory: Path, size: int) -> list[bytes]:
    """Every entry of the bundles of a tree of ``size``.

    Raises:
        VerificationError: ``dropped-entry``: a bundle or an entry is missing.
    """
    entries: list[bytes] = []
    for tile in bundle_tiles(size):
        path = directory / tile.path
        try:
            found = decode_entries(_read(path, "dropped-entry"))
        except ValueError as exc:
            raise VerificationError(str(exc), where=str(path), category="tampered-entry") from exc
        if len(found) != tile.width:
            category = "dropped-entry" if len(found) < tile.width else "tampered-entry"
            raise VerificationError(
                f"holds {len(found)} entries, not {tile.width}", where=str(path), category=category
            )
        entries += found
    return entries


def load_policy(path: Path) -> Policy:
    """The witness policy in ``path``.

    Raises:
        UsageError: unreadable, or ``path:line: what`` for the first bad line.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the policy: {exc}", where=str(path)) from exc
    return Policy.parse(text, str(path))


def policy_log_key(text: str, policy: Policy, where: str) -> Verifier:
    """The key ``policy`` lists for the log of the checkpoint note ``text``.

    Raises:
        VerificationError: ``bad-signature``: the policy lists no log of that origin;
            ``malformed``.
    """
    try:
        origin = Checkpoint.parse(Note.parse(text).text).origin
    except VerificationError as exc:
        raise VerificationError(exc.what, where=where, category=exc.category) from exc
    key = policy.log_for(origin)
    if key is None:
        raise VerificationError(
            f"the policy lists no log {origin!r}", where=where, category="bad-signature"
        )
    return key


def root_at(directory: Path, size: int) -> bytes:
    """The root of the first ``size`` entries of the log in ``directory`` (its bundles).

    Raises:
        VerificationError: a bundle is missing or malformed (``dropped-entry``).
    """
    return TreeHashes.of_entries(_entries(directory, size)).root()


def audit_log(
    directory: Path,
    verifier: Verifier | None,
    older: Sequence[Path] = (),
    policy: Policy | None = None,
) -> LogAudit:
    """Check ``directory`` (a ``build/<zone>/log``): the checkpoint's signature (by
    ``verifier``, else the ``policy``'s log of its origin), its cosignatures against the
    ``policy``'s quorum, every tile against the entries, the root, and that it extends
    each ``older`` checkpoint.

    Raises:
        VerificationError: the first problem, with its category (see the module;
            ``quorum-not-met`` when the cosignatures fall short of the policy's quorum).
        UsageError: neither a verifier nor a policy.
    """
    where = str(directory / CHECKPOINT_FILE)
    text = _read(directory / CHECKPOINT_FILE, "malformed").decode("utf-8", "replace")
    if verifier is None:
        if policy is None:
            raise UsageError("needs the log's key or a policy listing it", where="log verify")
        verifier = policy_log_key(text, policy, where)
    checkpoint = signed_checkpoint(text, verifier, where)
    cosigners = () if policy is None else policy.check(Note.parse(text), where)
    tree = TreeHashes.of_entries(_entries(directory, checkpoint.size))
    if tree.root() != checkpoint.root:
        raise VerificationError(
            f"the entries give another root than the checkpoint of size {checkpoint.size}",
            where=where,
            category="tampered-entry",
        )
    # The entries are the signed log's: a tile that differs is the tile's fault.
    expected = dict(tree.changed())
    hash_tiles = tiles_for_size(checkpoint.size)
    for tile in hash_tiles:
        path = directory / tile.path
        if _read(path, "bad-tile") != expected[tile]:
            raise VerificationError(
                "tile differs from the hashes of the entries",
                where=str(path),
                category="bad-tile",
            )
    extends: list[int] = []
    for path in older:
        old = signed_checkpoint(
            _read(path, "malformed").decode("utf-8", "replace"), verifier, str(path)
        )
        check_extends(old, checkpoint, tree, str(path))
        extends.append(old.size)
    return LogAudit(
        directory,
        checkpoint,
        len(hash_tiles),
        len(bundle_tiles(checkpoint.size)),
        tuple(extends),
        cosigners,
    )


def check_extends(old: Checkpoint, new: Checkpoint, tree: TreeHashes, where: str) -> None:
    """Check that ``new`` extends ``old`` with a consistency proof made from ``tree`` (the
    tree of ``new``, possibly read from untrusted tiles: the proof is checked against
    both signed roots).

    Raises:
        VerificationError: ``rollback``, ``equivocation`` or ``fork``.
        ValueError: ``tree`` cannot give a hash the proof needs.
    """
    if old.size > new.size:
        raise VerificationError(
            f"checkpoint of size {new.size} is older than the one of size {old.size} seen before",
            where=where,
            category="rollback",
        )
    proof = consistency_proof(tree.subtree, old.size, new.size) if old.size else []
    try:
        verify_consistency(old.size, new.size, old.root, new.root, proof)
    except VerificationError as exc:
        raise VerificationError(exc.what, where=where, category=exc.category) from exc


def consistency(old_path: Path, new_path: Path, verifier: Verifier, tiles: Path) -> int:
    """Check that the checkpoint in ``new_path`` extends the one in ``old_path`` (both
    signed by ``verifier``), with a proof made from the tiles under ``tiles``.

    Returns:
        The number of entries added between them.

    Raises:
        VerificationError: ``bad-signature``, ``rollback``, ``equivocation``, ``fork``;
            ``bad-tile`` (a tile of ``tiles`` does not agree with the new checkpoint)
            or ``dropped-entry`` (one is missing).
    """
    old = signed_checkpoint(
        _read(old_path, "malformed").decode("utf-8", "replace"), verifier, str(old_path)
    )
    new = signed_checkpoint(
        _read(new_path, "malformed").decode("utf-8", "replace"), verifier, str(new_path)
    )
    tree = TreeHashes(new.size, stored_tiles(tiles))
    try:
        check_extends(old, new, tree, str(new_path))
    except (OSError, ValueError) as exc:
        raise VerificationError(
            f"cannot read the tiles: {exc}", where=str(tiles), category="dropped-entry"
        ) from exc
    except VerificationError as exc:
        if exc.category == "fork":
            check_tiles(tree, new.root, tiles)
        raise
    return new.size - old.size
