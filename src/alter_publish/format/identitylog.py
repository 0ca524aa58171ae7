"""The per-zone IdentityLog: an append-only RFC 9162 Merkle log (spec section 8).

On disk the log is a text file next to the zone definition, one entry per line:
``<owner name> <record text>``. Owner names hold no spaces and record texts are
printable ASCII, so the line splits unambiguously at its first space. The entry
that is hashed is ``owner 0x00 text``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from alter_publish.errors import RenderError
from alter_publish.fileio import Chunk, atomic_write_chunks, atomic_write_text
from alter_publish.mapped import Bytes, MappedFile, read_mapped

LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(entry: bytes) -> bytes:
    """RFC 9162 leaf hash ``SHA-256(0x00 || entry)``."""
    return hashlib.sha256(LEAF_PREFIX + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 9162 interior node hash ``SHA-256(0x01 || left || right)``."""
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


class MerkleTree:
    """Incremental RFC 9162 tree hash: O(log n) state, O(1) amortised append."""

    __slots__ = ("_size", "_stack")

    def __init__(self) -> None:
        self._stack: list[tuple[int, bytes]] = []  # (subtree size, hash), sizes strictly decreasing
        self._size = 0

    @property
    def size(self) -> int:
        """Number of entries appended."""
        return self._size

    def append(self, entry: bytes) -> None:
        """Append one entry (raw bytes, not yet hashed)."""
        size, digest = 1, leaf_hash(entry)
        while self._stack and self._stack[-1][0] == size:
            left_size, left = self._stack.pop()
            size, digest = left_size + size, node_hash(left, digest)
        self._stack.append((size, digest))
        self._size += 1

    def frontier(self) -> list[tuple[int, str]]:
        """The state to resume from (see :meth:`resume`): each perfect subtree's size and
        hash (hex), largest first."""
        return [(size, digest.hex()) for size, digest in self._stack]

    @classmethod
    def resume(cls, frontier: Sequence[tuple[int, str]]) -> MerkleTree:
        """The tree whose :meth:`frontier` was ``frontier``.

        Raises:
            ValueError: not a frontier (sizes must be distinct powers of two, largest first).
        """
        tree = cls()
        sizes = [int(size) for size, _ in frontier]
        if any(size <= 0 or size & (size - 1) for size in sizes) or sizes != sorted(
            set(sizes), reverse=True
        ):
            raise ValueError("not a Merkle tree frontier")
        tree._stack = [
            (size, bytes.fromhex(digest)) for size, (_, digest) in zip(sizes, frontier, strict=True)
        ]
        if any(len(digest) != len(EMPTY_ROOT) for _, digest in tree._stack):
            raise ValueError("not a Merkle tree frontier")
        tree._size = sum(sizes)
        return tree

    def root(self) -> bytes:
        """The tree hash of everything appended so far (``SHA-256("")`` when empty)."""
        if not self._stack:
            return EMPTY_ROOT
        digest = self._stack[-1][1]
        for _, left in reversed(self._stack[:-1]):
            digest = node_hash(left, digest)
        return digest


def merkle_root(entries: Iterable[bytes | str]) -> bytes:
    """RFC 9162 tree hash of ``entries`` (``str`` entries are UTF-8 encoded).

    Returns:
        The 32-byte root.
    """
    tree = MerkleTree()
    for entry in entries:
        tree.append(entry.encode("utf-8") if isinstance(entry, str) else entry)
    return tree.root()


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One published record: the owner name it sits at and its text."""

    owner: str
    text: str

    def to_bytes(self) -> bytes:
        """The hashed form ``owner 0x00 text``."""
        return b"%s\x00%s" % (self.owner.encode("ascii"), self.text.encode("ascii"))

    def to_line(self) -> str:
        """The on-disk form ``owner text``."""
        return f"{self.owner} {self.text}\n"


@dataclass(frozen=True, slots=True)
class IdentityLog:
    """A zone's log as read from disk: its entries in publication order."""

    path: Path
    entries: tuple[LogEntry, ...]

    @property
    def size(self) -> int:
        """Number of entries."""
        return len(self.entries)

    def tree(self) -> MerkleTree:
        """A Merkle tree over the entries, ready for further appends."""
        tree = MerkleTree()
        for entry in self.entries:
            tree.append(entry.to_bytes())
        return tree

    def root(self) -> bytes:
        """Tree hash of the log."""
        return self.tree().root()


def log_path_for(zone_file: Path) -> Path:
    """Where a zone definition's log lives: ``zones/<zone>.yaml`` -> ``zones/<zone>.log``."""
    return zone_file.with_suffix(".log")


def read_log(path: Path) -> IdentityLog:
    """Read a log file; a missing file is an empty log.

    Raises:
        RenderError: the file is unreadable or a line is not ``owner text``.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return IdentityLog(path=path, entries=())
    except OSError as exc:
        raise RenderError(f"cannot read log: {exc.strerror}", where=str(path)) from exc
    entries: list[LogEntry] = []
    try:
        lines = raw.decode("ascii").splitlines()
    except UnicodeDecodeError as exc:
        raise RenderError("log is not ASCII", where=str(path)) from exc
    for number, line in enumerate(lines, start=1):
        owner, space, text = line.partition(" ")
        if not space or not owner.endswith("."):
            raise RenderError("not '<owner.> <record text>'", where=f"{path}:{number}")
        entries.append(LogEntry(owner=owner, text=text))
    return IdentityLog(path=path, entries=tuple(entries))


#: Up to this many owners, :func:`read_owner_entries` searches the log's bytes for each;
#: above it, it goes through the lines once (a day's renewals: thousands of owners).
OWNER_SCANS = 64


def read_owner_entries(path: Path, owners: Iterable[str]) -> tuple[Bytes, IdentityLog]:
    """The log file's bytes (mapped: :func:`append_lines` has the kernel copy them), and
    just the entries at ``owners`` (in log order): what :class:`LogIndex` needs to judge
    those owners, without making an entry of every line (:func:`read_log` at 100,000
    handles: 0.25 s).

    Raises:
        RenderError: the file is unreadable, or not ASCII.
    """
    try:
        raw = read_mapped(path)
    except FileNotFoundError:
        return b"", IdentityLog(path=path, entries=())
    except OSError as exc:
        raise RenderError(f"cannot read log: {exc.strerror}", where=str(path)) from exc
    wanted = set(owners)
    if len(wanted) > OWNER_SCANS:  # the whole log's bytes copied once, checked, then split
        data = raw[:]
        if not data.isascii():
            raise RenderError("log is not ASCII", where=str(path))
        return raw, IdentityLog(path=path, entries=tuple(_entries_at(data, wanted)))
    step = 1 << 24  # a mapped file's bytes copied a slice at a time: isascii runs in C
    if not all(raw[at : at + step].isascii() for at in range(0, len(raw), step)):
        raise RenderError("log is not ASCII", where=str(path))
    found: list[tuple[int, LogEntry]] = []
    for owner in wanted:
        prefix = f"{owner} ".encode("ascii")
        needle = b"\n" + prefix
        hit = raw.find(needle)
        at = 0 if raw.startswith(prefix) else (hit + 1 if hit >= 0 else -1)
        while at >= 0:
            end = raw.find(b"\n", at)
            end = len(raw) if end < 0 else end
            found.append((at, LogEntry(owner, raw[at + len(prefix) : end].decode("ascii"))))
            hit = raw.find(needle, end)
            at = hit + 1 if hit >= 0 else -1
    found.sort(key=lambda item: item[0])
    return raw, IdentityLog(path=path, entries=tuple(entry for _, entry in found))


def _entries_at(data: bytes, owners: set[str]) -> Iterator[LogEntry]:
    """The entries of the lines of ``data`` (ASCII) whose owner is one of ``owners``."""
    wanted = {owner.encode("ascii"): owner for owner in owners}
    for line in data.split(b"\n"):
        owner, _, text = line.partition(b" ")
        if owner in wanted:
            yield LogEntry(wanted[owner], text.decode("ascii"))


def append_lines(path: Path, raw: Bytes, new: Sequence[LogEntry]) -> None:
    """Write the log file ``raw`` with ``new`` appended, atomically (by rename; a mapped
    ``raw`` is copied by the kernel, not through this process, and not compared: the
    new file is longer).

    Raises:
        RenderError: the file could not be written.
    """
    if new:
        tail = "".join(entry.to_line() for entry in new).encode("ascii")
        separator = b"\n" if raw and raw[-1:] != b"\n" else b""
        head: Chunk
        if isinstance(raw, MappedFile):
            if raw.rewritten():  # what was read and checked is not what would be copied
                raise RenderError("log changed while this run read it; run again", where=str(path))
            head = raw.span(0, len(raw))
        else:
            head = raw
        atomic_write_chunks(path, (head, separator, tail), compare=False)


def append_entries(log: IdentityLog, new: Sequence[LogEntry]) -> IdentityLog:
    """Append ``new`` to the log file atomically (the whole file is replaced by rename).

    Raises:
        RenderError: the file could not be written.
    """
    if not new:
        return log
    atomic_write_text(log.path, (entry.to_line() for entry in (*log.entries, *new)))
    return IdentityLog(path=log.path, entries=(*log.entries, *new))
