"""The key store's journal: the handles whose keys the store wrote, in order.

``keys/<zone>/.changes`` starts with one line naming the journal (``alter-publish key
journal`` and a random id), then holds one line per handle key the store writes: the
handle's directory name, appended (and synced) before the key's files are written and
again once they are. A run that took every handle's key ``stat`` lines remembers where
the journal stood (a :class:`Mark`: its id and size, read before the stats); the next
run reads only what was appended since, and takes anew the lines of the handles named
there. So a run that changes one handle, or nothing, looks at one key directory, not at
100,000 (issue 16: no stat of every key file).

Only what the store writes is in the journal. A key file changed by other means (copied
in by hand, restored from a backup) is read by the next run that signs its handle, or by
``sign --full``. A journal that is missing where one was, replaced, shorter than the
mark or unreadable tells nothing: the run then takes every handle's lines, as without it.
"""

from __future__ import annotations

import errno
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from alter_publish.errors import KeyStoreError
from alter_publish.fileio import fsync_directory

JOURNAL_NAME = ".changes"  # no handle's directory: a handle's name starts [a-z0-9]
_HEADER = b"alter-publish key journal "
_ID_CHARS = 32
_HEADER_OCTETS = len(_HEADER) + _ID_CHARS + 1


@dataclass(frozen=True, slots=True)
class Mark:
    """Where a zone's journal stood: its id and size ("" and 0: there was none)."""

    journal: str
    size: int

    def to_text(self) -> str:
        """``<id>:<size>`` (``-`` for no journal)."""
        return f"{self.journal}:{self.size}" if self.journal else "-"

    @classmethod
    def from_text(cls, text: object) -> Mark:
        """The mark :meth:`to_text` wrote.

        Raises:
            ValueError: not such a text.
        """
        if text == "-":
            return NO_JOURNAL
        journal, _, size = str(text).partition(":")
        if len(journal) != _ID_CHARS or not size.isdigit():
            raise ValueError(f"not a key journal mark: {text!r}")
        return cls(journal, int(size))


NO_JOURNAL = Mark("", 0)


def journal_path(root: Path | str, zone: str) -> str:
    """Where the journal of ``zone``'s handle keys lives under the store ``root``."""
    return f"{root}/{zone}/{JOURNAL_NAME}"


def note(root: Path | str, zone: str, name: str) -> None:
    """Append ``name`` (a handle's directory name) to the zone's journal, durably,
    making the journal when there is none, or a new one in place of one whose first
    line is not a journal's (which would tell nothing ever after); ``keys/<zone>/``
    exists: the store made it.

    Raises:
        KeyStoreError: it cannot be written.
    """
    path = journal_path(root, zone)
    try:
        if _journal_id(_head(path) or b"") is None:
            _create(path)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        try:
            os.write(fd, f"{name}\n".encode())  # one short write: never interleaved
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise KeyStoreError(f"cannot write the key journal: {exc.strerror}", where=path) from exc


def _create(path: str) -> None:
    """Make the journal with its header, whole or not at all: written beside it, then
    linked in where there is none (``link`` fails when another process made one first;
    that one stays), or renamed over one that is not a journal (or where the filesystem
    has no hard links)."""
    temp = Path(f"{path}.{secrets.token_hex(8)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, _HEADER + secrets.token_hex(_ID_CHARS // 2).encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        head = _head(path) if os.path.lexists(path) else None
        if head is not None and _journal_id(head) is None:
            temp.replace(path)  # unreadable as a journal: a new one (a new id)
        else:
            os.link(temp, path)
    except FileExistsError:
        pass
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        if not os.path.lexists(path):
            temp.replace(path)
    finally:
        temp.unlink(missing_ok=True)
    fsync_directory(Path(path).parent)


def changes_since(root: Path | str, zone: str, mark: Mark) -> tuple[Mark, frozenset[str] | None]:
    """The journal's mark now, and the names of the handles whose keys the store wrote
    since ``mark`` (None: the journal cannot tell; then every handle's lines are taken)."""
    path = journal_path(root, zone)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return NO_JOURNAL, (frozenset() if mark == NO_JOURNAL else None)
    except OSError:
        return NO_JOURNAL, None
    try:
        size = os.fstat(fd).st_size
        journal = _journal_id(os.pread(fd, _HEADER_OCTETS, 0))
        if journal is None:
            return NO_JOURNAL, None
        start = _HEADER_OCTETS if mark == NO_JOURNAL else mark.size
        if mark != NO_JOURNAL and (mark.journal != journal or size < mark.size):
            return Mark(journal, _whole(fd, size)), None
        data = _read(fd, start, size)
    except OSError:
        return NO_JOURNAL, None
    finally:
        os.close(fd)
    # Up to the last whole line: one being appended is read whole by the next run.
    data = data[: data.rfind(b"\n") + 1]
    now = Mark(journal, start + len(data))
    return now, frozenset(data.decode("utf-8", "surrogateescape").split("\n")) - {""}


def journal_mark(root: Path | str, zone: str) -> Mark:
    """Where the zone's journal stands now (:data:`NO_JOURNAL` when there is none or it
    cannot be read: the next run then reads it all, or takes every line)."""
    path = journal_path(root, zone)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return NO_JOURNAL
    try:
        journal = _journal_id(os.pread(fd, _HEADER_OCTETS, 0))
        size = _whole(fd, os.fstat(fd).st_size)
    except OSError:
        return NO_JOURNAL
    finally:
        os.close(fd)
    return NO_JOURNAL if journal is None else Mark(journal, size)


def _whole(fd: int, size: int) -> int:
    """Where the last whole line of the open journal ``fd`` (``size`` octets) ends: a
    line being appended is not passed over."""
    start = max(size - 4096, 0)
    tail = os.pread(fd, size - start, start)
    return start + tail.rfind(b"\n") + 1 if b"\n" in tail else size


def _head(path: str) -> bytes | None:
    """The first bytes of the file at ``path`` (as many as a journal's first line; None:
    it cannot be read, which does not make it a file to replace)."""
    try:
        with open(path, "rb") as handle:  # noqa: PTH123 (a str path)
            return handle.read(_HEADER_OCTETS)
    except OSError:
        return None


def _journal_id(header: bytes) -> str | None:
    """The id a journal's first line names (None: not a journal's first line)."""
    if not (header.startswith(_HEADER) and header.endswith(b"\n")):
        return None
    journal = header[len(_HEADER) : -1].decode("ascii", "replace")
    return journal if len(journal) == _ID_CHARS else None


def _read(fd: int, start: int, end: int) -> bytes:
    """Bytes ``start`` to ``end`` of the open file ``fd``."""
    parts: list[bytes] = []
    while start < end:
        part = os.pread(fd, end - start, start)
        if not part:
            break
        parts.append(part)
        start += len(part)
    return b"".join(parts)
