"""A file's bytes mapped read-only, used where a run reads a big file it will mostly copy.

A patch run (:mod:`alter_publish.pipeline.patch`) reads the last run's zone file and
envelopes document (about 330 MB at 100,000 handles), looks at a few lines, and writes
them out again with those lines changed. Read into ``bytes`` they cost an allocation
and a copy of every byte before anything is written; mapped, the kernel reads the
pages the run looks at and the write copies the rest straight from the page cache
(about twice as fast at that size on the development machine, see bench/RESULTS.md).

Only for files nothing rewrites in place while they are mapped: an output generation
is never modified once written (:mod:`alter_publish.outputset`), and a patch runs
under the output directory's lock. (A tool outside alter-publish that truncates a
generation's file in place, say ``cp x build/<zone>.zone`` through the symlink, while a
run maps it would kill the run with SIGBUS; nothing in alter-publish does.)

Each live mapping holds two file descriptors (Python before 3.13 keeps a duplicate of
the one it maps, and :class:`MappedFile` keeps one for the kernel's copies),
and a run keeps every patched zone's mappings until it commits. So at most
:data:`MAX_LIVE_MAPPINGS` are live at once; beyond that a file is read into ``bytes``
as before: a workspace of 500 patched zones never runs out of descriptors.
"""

from __future__ import annotations

import mmap
import os
import weakref
from pathlib import Path

from alter_publish.fileio import FileSpan

__all__ = ["Bytes", "MappedFile", "read_mapped"]


class MappedFile(mmap.mmap):
    """A read-only ``mmap`` with the ``bytes`` methods a patch uses (slices are ``bytes``;
    ``memoryview``, ``re`` and ``hashlib`` take it as a buffer), and the file it maps
    kept open (``fd``) for :meth:`span`."""

    fd: int = -1
    #: The file's size and modification time when it was mapped.
    taken: tuple[int, int] = (0, 0)

    def rewritten(self) -> bool:
        """True when the file was changed in place since it was mapped (a writer here
        replaces files by rename: the mapped one stays as it was)."""
        info = os.fstat(self.fd)
        return (info.st_size, info.st_mtime_ns) != self.taken

    def span(self, start: int, end: int) -> FileSpan:
        """Bytes ``start:end`` as a :class:`FileSpan` (written by the kernel's copy)."""
        return FileSpan(self.fd, start, memoryview(self)[start:end])

    def index(self, sub: bytes, start: int = 0, end: int | None = None) -> int:
        """Like ``bytes.index``.

        Raises:
            ValueError: ``sub`` is not there.
        """
        at = self.find(sub, start, len(self) if end is None else end)
        if at < 0:
            raise ValueError("subsection not found")
        return at

    def startswith(self, prefix: bytes, start: int = 0) -> bool:
        """Like ``bytes.startswith`` with one prefix."""
        return self[start : start + len(prefix)] == prefix

    def count(self, sub: bytes, start: int = 0, end: int | None = None) -> int:
        """Like ``bytes.count`` (of the slice: meant for a few lines)."""
        return self[start:end].count(sub)

    def __contains__(self, sub: object) -> bool:
        """``sub in self`` as for ``bytes`` (``mmap`` itself only looks for one byte)."""
        return isinstance(sub, bytes) and self.find(sub) >= 0


#: A file's bytes, read or mapped.
Bytes = bytes | MappedFile

#: At most this many mappings live at once in a process (each holds two descriptors).
MAX_LIVE_MAPPINGS = 32

_live: weakref.WeakSet[MappedFile] = weakref.WeakSet()


def read_mapped(path: Path) -> MappedFile | bytes:
    """``path``'s bytes: mapped while fewer than :data:`MAX_LIVE_MAPPINGS` mappings are
    live, else read (an empty file: ``b""``, which cannot be mapped).

    Raises:
        OSError: the file cannot be opened, read or mapped.
    """
    with path.open("rb") as handle:
        info = os.fstat(handle.fileno())
        if info.st_size == 0 or len(_live) >= MAX_LIVE_MAPPINGS:
            return handle.read()
        mapped = MappedFile(handle.fileno(), 0, access=mmap.ACCESS_READ)
        mapped.fd = os.dup(handle.fileno())
        mapped.taken = (info.st_size, info.st_mtime_ns)
        weakref.finalize(mapped, os.close, mapped.fd)
        _live.add(mapped)
        return mapped
