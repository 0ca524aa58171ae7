"""The IdentityLog published as a C2SP transparency log (docs/transparency.md).

Every run that appends to the log signs a checkpoint with the zone's log key
(:mod:`alter_publish.keys.logkey`) and keeps it in the checkpoint history beside the
log (``zones/<zone>.checkpoints``: the signed notes, oldest first, each followed by a
blank line). ``build/<zone>/log/`` holds the log as tiles for any static web host:
``checkpoint`` (the latest), ``tile/<L>/<N>[.p/<W>]`` and ``tile/entries/<N>[.p/<W>]``;
only tiles that are new or wider are written, each atomically, the checkpoint last. Each
envelope carries a c2sp.org/tlog-proof of its entry in the checkpoint of the run that
logged it, so a proof never changes once made (a full run and a patch agree).
"""

from __future__ import annotations

import base64
import bisect
import dataclasses
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from alter_publish.definition.model import ZoneSpec
from alter_publish.errors import RenderError, VerificationError
from alter_publish.fileio import atomic_write_bytes
from alter_publish.format.identitylog import leaf_hash
from alter_publish.format.note import Note
from alter_publish.format.tiles import ENTRIES, TILE_WIDTH, Tile, TreeHashes, tiles_for_size
from alter_publish.format.tlog import PROOF_HEADER, Checkpoint
from alter_publish.keys.logkey import LogKeyStore, log_origin
from alter_publish.keys.store import KeyStore
from alter_publish.pipeline.chain import EnvelopeChain
from alter_publish.pipeline.context import RunContext
from alter_publish.pipeline.paths import CHECKPOINT_FILE, checkpoints_path_for, log_dir
from alter_publish.pipeline.render import SignedHandle


@dataclass(frozen=True, slots=True)
class History:
    """The checkpoint history as read: the file's bytes and its notes with their sizes."""

    path: Path
    raw: bytes
    notes: tuple[str, ...]
    sizes: tuple[int, ...]


def read_history(path: Path) -> History:
    """Read a checkpoint history; a missing file is an empty history.

    Raises:
        RenderError: the file is unreadable or not a list of checkpoints.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return History(path, b"", (), ())
    except OSError as exc:
        raise RenderError(f"cannot read: {exc.strerror}", where=str(path)) from exc
    try:
        parts = raw.decode("utf-8").split("\n\n")
        if parts[-1] != "" or len(parts) % 2 != 1:
            raise ValueError("not notes each followed by a blank line")
        pairs = zip(parts[:-1:2], parts[1::2], strict=True)
        notes = tuple(f"{body}\n\n{sigs}\n" for body, sigs in pairs)
        sizes = tuple(Checkpoint.parse(Note.parse(note).text).size for note in notes)
    except (UnicodeDecodeError, ValueError, VerificationError) as exc:
        raise RenderError(f"not a checkpoint history: {exc}", where=str(path)) from exc
    if list(sizes) != sorted(set(sizes)):
        raise RenderError("checkpoint sizes do not grow", where=str(path))
    return History(path, raw, notes, sizes)


@dataclass(frozen=True, slots=True)
class Publication:
    """What a run publishes of the log: the tree, the history before the run, and the
    checkpoint the run signed (None: the history's last one covers the tree)."""

    directory: Path
    tree: TreeHashes
    history: History
    new_note: str | None
    #: The log keys whose handover ``new_note`` completes (signed by the retired key too).
    handover: tuple[LogKeyStore, str] | None = None

    @property
    def notes(self) -> tuple[str, ...]:
        """Every checkpoint, the new one included."""
        return self.history.notes + ((self.new_note,) if self.new_note else ())

    @property
    def latest(self) -> str | None:
        """The latest checkpoint (None: the log has none)."""
        notes = self.notes
        return notes[-1] if notes else None

    @property
    def sizes(self) -> tuple[int, ...]:
        """Each checkpoint's size."""
        return self.history.sizes + ((self.tree.size,) if self.new_note else ())

    def proof_for(self, index: int, entry: bytes) -> str | None:
        """The tlog-proof of ``entry`` at ``index`` in the first checkpoint covering it
        (None when none does, or the tree holds another entry there)."""
        sizes = self.sizes
        position = bisect.bisect_right(sizes, index)
        if position == len(sizes) or index >= self.tree.size:
            return None
        if self.tree.hash_at(0, index) != leaf_hash(entry):
            return None
        hashes = "".join(
            f"{_b64(digest)}\n" for digest in self.tree.inclusion_proof(index, sizes[position])
        )
        return f"{PROOF_HEADER}\nindex {index}\n{hashes}\n{self.notes[position]}"


def plan_publication(
    keys: KeyStore, zone: str, definition: Path, out: Path, tree: TreeHashes, *, create: bool
) -> Publication:
    """Sign a checkpoint when the tree grew past the history's last one.

    The log key is made when the zone has no checkpoint yet (or with ``create``).

    Raises:
        KeyStoreError: the zone has checkpoints but its log key is gone.
        RenderError: the history is unreadable, or the log does not extend its last
            checkpoint (an entry changed or removed: signing it would fork the log).
    """
    history = read_history(checkpoints_path_for(definition))
    if history.notes:
        last = Checkpoint.parse(Note.parse(history.notes[-1]).text)
        try:
            extends = tree.size >= last.size and tree.root(last.size) == last.root
        except ValueError:  # a stored tile it needs is missing or wrong
            extends = False
        if not extends:
            raise RenderError(
                f"the log does not extend its last signed checkpoint (size {last.size}): "
                "entries were changed or removed; restore the log from a backup",
                where=str(history.path),
            )
    new_note, handover = None, None
    if tree.size and (not history.sizes or history.sizes[-1] != tree.size):
        signer = keys.logs.signer(zone, create=create or not history.notes)
        checkpoint = Checkpoint(log_origin(zone), tree.size, tree.root())
        note = Note(checkpoint.to_text()).signed_by(signer)
        if (retired := keys.logs.handover(zone)) is not None:
            # A rotated key's first checkpoint: signed by the old key too (docs/keys.md).
            note, handover = note.signed_by(retired), (keys.logs, zone)
        new_note = note.to_text()
    return Publication(log_dir(out, zone), tree, history, new_note, handover)


def with_proofs(signed: Sequence[SignedHandle], publication: Publication) -> list[SignedHandle]:
    """``signed`` with each envelope's tlog-proof."""
    return [dataclasses.replace(item, tlog_proof=tlog_proof(item, publication)) for item in signed]


def tlog_proof(item: SignedHandle, publication: Publication) -> str | None:
    """The tlog-proof of ``item``'s envelope (see :meth:`Publication.proof_for`): made as
    ``<zone>.envelopes.json`` is written, a full run keeps none (~1.7 KB each, 170 MB at
    100,000 handles)."""
    return publication.proof_for(
        item.envelope.log_size, _entry(item.spec.owner, item.envelope.to_text())
    )


@functools.lru_cache(maxsize=1 << 18)
def _b64(digest: bytes) -> str:
    """A hash in standard base64 (proofs share most of theirs)."""
    return base64.b64encode(digest).decode()


def _entry(owner: str, text: str) -> bytes:
    return b"%s\x00%s" % (owner.encode("ascii"), text.encode("ascii"))


def resumed_tree(
    directory: Path, base_size: int, new: Iterable[bytes], root: bytes
) -> TreeHashes | None:
    """The tree of the stored tiles of ``base_size`` with ``new`` appended, or None when
    the stored tiles are missing or do not lead to ``root``."""
    tree = TreeHashes(base_size, lambda tile: (directory / tile.path).read_bytes())
    try:
        tree.extend(new)
        if tree.root() != root:
            return None
    except (OSError, ValueError):
        return None
    return tree


def resumed_publication(
    ctx: RunContext, spec: ZoneSpec, chain: EnvelopeChain
) -> Publication | None:
    """The log's checkpoint and tiles after ``chain`` (a patch run), resumed from the
    stored tiles; None when the history or tiles are behind the log (a full run brings
    them up to it).

    Raises:
        KeyStoreError: the zone has checkpoints but its log key is gone.
        RenderError: the checkpoint history is unreadable.
    """
    new = [entry.to_bytes() for entry in chain.new_entries]
    base_size = chain.tree.size - len(new)
    history = read_history(checkpoints_path_for(spec.path))
    if (history.sizes[-1] if history.sizes else 0) != base_size:
        return None
    tree = resumed_tree(log_dir(ctx.out, spec.origin), base_size, new, chain.tree.root())
    if tree is None:
        return None
    return plan_publication(ctx.keys, spec.origin, spec.path, ctx.out, tree, create=ctx.create_keys)


def write_publication(publication: Publication) -> list[str]:
    """Append the new checkpoint to the history, then write the changed tiles, then
    ``checkpoint`` (each file atomically).

    Returns:
        The files written.

    Raises:
        RenderError: a file cannot be written.
        KeyStoreError: a key rotation's handover marker cannot be removed.
    """
    written: list[str] = []
    history = publication.history
    if publication.new_note is not None:
        atomic_write_bytes(history.path, history.raw + publication.new_note.encode() + b"\n")
        written.append(str(history.path))
        if publication.handover is not None:
            store, zone = publication.handover
            store.handed_over(zone)
    directory = publication.directory
    tiles = 0
    for tile, data in publication.tree.changed():
        tiles += _write_tile(directory, tile, data)
    tiles += _write_partials(publication)
    if tiles:
        written.append(f"{directory}/tile ({tiles} tiles)")
    if publication.notes and not _holds(directory / CHECKPOINT_FILE, publication.notes[-1]):
        atomic_write_bytes(directory / CHECKPOINT_FILE, publication.notes[-1].encode())
        written.append(str(directory / CHECKPOINT_FILE))
    return written


def _holds(path: Path, note: str) -> bool:
    """Whether ``path`` holds ``note``, bare or with cosignature lines after its own
    (``sign`` cosigns after committing: a later run keeps those cosignatures)."""
    try:
        return path.read_bytes().startswith(note.encode())
    except OSError:
        return False


def _write_partials(publication: Publication) -> int:
    """The partial tiles of every checkpointed size that are missing (a rebuilt
    directory): the proofs of older checkpoints need them.

    Raises:
        RenderError: a file cannot be written.
    """
    directory, tree, written = publication.directory, publication.tree, 0
    for size in publication.sizes:
        for tile in tiles_for_size(size):
            if tile.width == TILE_WIDTH:
                continue
            for each in (
                (tile, Tile(ENTRIES, tile.index, tile.width)) if tile.level == 0 else (tile,)
            ):
                if not (directory / each.path).exists():
                    written += _write_tile(directory, each, tree.tile_data(each))
    return written


def _write_tile(directory: Path, tile: Tile, data: bytes) -> int:
    """Write one tile unless it is there with these bytes (a full tile never changes)."""
    return int(atomic_write_bytes(directory / tile.path, data))
