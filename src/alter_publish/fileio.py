"""Atomic file writes: temp file in the same directory, fsync, rename."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from alter_publish.errors import AlterError, RenderError


@dataclass(frozen=True, slots=True)
class FileSpan:
    """Bytes ``start:start + len(view)`` of an open file nothing rewrites while a run holds
    it (a mapped output generation: :mod:`alter_publish.mapped`). The writers here have
    the kernel copy spans of :data:`KERNEL_COPY_MIN_OCTETS` or more (``copy_file_range``:
    no pass through this process; a filesystem that shares extents clones the ranges
    whose offsets line up on its blocks, in practice what comes before the first edit
    that changes the length); ``view`` is the same bytes, for whoever reads them
    (hashing, comparing, a short span written)."""

    fd: int
    start: int
    view: memoryview

    def __len__(self) -> int:
        return len(self.view)


#: Bytes as written: whole, a view into a larger buffer (no copy), or a span of a file.
Chunk = bytes | memoryview | FileSpan

#: ``copy_file_range`` cannot copy between these files here: the bytes are written instead.
_NO_KERNEL_COPY = frozenset(
    {errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ETXTBSY}
)
#: A shorter span is written from its bytes: a flush and a system call per span would
#: cost more than they save (a renewal day patches tens of thousands of short gaps).
KERNEL_COPY_MIN_OCTETS = 64 * 1024
#: The buffer of a file written in many pieces: a renewal day's patch writes the zone in
#: tens of thousands of short ones, and each system call lets other threads take the
#: interpreter (the default 8 KB buffer made one per piece or two).
WRITE_BUFFER_OCTETS = 1024 * 1024


def buffer_of(chunk: Chunk) -> bytes | memoryview:
    """The bytes of ``chunk`` as a buffer (a span's mapped view)."""
    return chunk.view if isinstance(chunk, FileSpan) else chunk


def _write_chunk(handle: BinaryIO, chunk: Chunk) -> None:
    """Write ``chunk`` at ``handle``'s position: a span copied by the kernel when it can."""
    if not isinstance(chunk, FileSpan):
        handle.write(chunk)
        return
    if len(chunk.view) < KERNEL_COPY_MIN_OCTETS or chunk.fd < 0:
        handle.write(chunk.view)
        return
    handle.flush()  # the span goes after what is buffered
    copied = _copy_span(chunk, handle.fileno())
    if copied < len(chunk.view):
        handle.write(chunk.view[copied:])


def _copy_span(span: FileSpan, fd: int) -> int:
    """Copy what the kernel will of ``span`` to ``fd``'s position; the bytes copied."""
    copy = getattr(os, "copy_file_range", None)
    done = 0
    while copy is not None and done < len(span.view):
        try:
            copied = copy(span.fd, fd, len(span.view) - done, span.start + done)
        except OSError as exc:
            if exc.errno not in _NO_KERNEL_COPY:
                raise
            break
        if copied <= 0:
            break
        done += copied
    return done


PRIVATE_MODE = 0o600
PUBLIC_MODE = 0o644
#: Directories made for private files (keys): only the owner may enter, whatever the umask.
PRIVATE_DIR_MODE = 0o700
#: Directories made for public files (outputs): nobody but the owner may write.
PUBLIC_DIR_MODE = 0o755


def dir_mode_for(mode: int) -> int:
    """The mode of a directory made to hold a file of ``mode``: 0700 when the file is
    private to its owner, else 0755."""
    return PRIVATE_DIR_MODE if mode & 0o077 == 0 else PUBLIC_DIR_MODE


def make_dirs(directory: Path, mode: int) -> None:
    """Make ``directory`` and its missing parents with ``mode`` exactly (set explicitly:
    the umask does not decide it); directories that exist are left as they are.

    Raises:
        OSError: one could not be made.
    """
    missing: list[Path] = []
    current = directory
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=mode)
        except FileExistsError:
            if not path.is_dir():
                raise
            continue
        path.chmod(mode)  # mkdir's mode is masked by the umask; this one is not


def fsync_directory(directory: Path) -> None:
    """Make a directory's entries (renames, links) durable: after a power loss the
    files renamed into it are the new ones.

    Raises:
        OSError: it cannot be opened or synced.
    """
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def exclusive(directory: Path, what: str, error: type[AlterError] = RenderError) -> Iterator[None]:
    """Hold an advisory lock (``flock``) on ``directory`` (or, while it does not exist,
    on its nearest existing parent) for the block: no lock file is made, and the lock
    goes with the process, however it ends. ``what`` names the work in the error when
    another process holds it.

    Raises:
        AlterError: (``error``) another process holds it, or it cannot be opened.
    """
    target = directory
    while not target.is_dir() and target.parent != target:
        target = target.parent
    try:
        fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise error(f"cannot lock: {exc.strerror}", where=str(target)) from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise error(
                f"another alter-publish process is {what}; wait for it to end",
                where=str(directory),
            ) from None
        yield
    finally:
        os.close(fd)


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of ``path``, a regular file (not through a symbolic link) of at most
    ``limit`` octets: for files from elsewhere (a log mirror) that must not exhaust
    memory (``/dev/zero``, a huge file).

    Raises:
        OSError: unreadable, a link, not a regular file, or larger than ``limit``.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit} octets", str(path))
    return data


def would_write(path: Path, data: bytes, *, mode: int | None = PUBLIC_MODE) -> bool:
    """True when :func:`atomic_write_bytes` would (re)write ``path`` with ``data``.

    ``mode=None`` compares the bytes only (what git and a ``--check`` care about).
    """
    try:
        if path.read_bytes() != data:
            return True
        return mode is not None and (path.stat().st_mode & 0o777) != mode
    except OSError:
        return True


def content_differs(path: Path, data: bytes) -> bool:
    """True when ``path`` is missing or holds other bytes than ``data`` (mode ignored)."""
    return would_write(path, data, mode=None)


def atomic_write_bytes(
    path: Path, data: bytes, *, mode: int = PUBLIC_MODE, error: type[AlterError] = RenderError
) -> bool:
    """Write ``data`` to ``path`` atomically with ``mode``; skip when the bytes are unchanged.
    Missing directories are made with :func:`dir_mode_for` ``mode``.

    Returns:
        True when the file was (re)written, False when it already held ``data``.

    Raises:
        AlterError: (``error``, RenderError by default) the file could not be written.
    """
    if not would_write(path, data, mode=mode):
        return False
    return _replace(path, (data,), mode=mode, error=error, keep_if_same=False)


def _replace(
    path: Path,
    chunks: Iterable[Chunk],
    *,
    mode: int,
    error: type[AlterError],
    keep_if_same: bool,
    reference: Path | None = None,
) -> bool:
    """Write ``chunks`` to a temporary file beside ``path`` (fsync), then rename it over
    ``path``; with ``keep_if_same``, compare with the file in place on the way and keep
    that one (unchanged, mtime and all) when the bytes and mode are the same.
    ``reference`` is the file compared instead of ``path`` (then nothing is kept: the
    caller links it).

    Returns:
        True when ``path`` was replaced.

    Raises:
        AlterError: (``error``) the file could not be written.
    """
    try:
        make_dirs(path.parent, dir_mode_for(mode))
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise error(f"cannot write: {exc.strerror}", where=str(path)) from exc
    try:
        old: BinaryIO | None = None
        same = False
        if keep_if_same:
            compared = reference or path
            try:
                old = compared.open("rb")
                same = (compared.stat().st_mode & 0o777) == mode
            except OSError:
                old, same = None, False
        with os.fdopen(fd, "wb", buffering=WRITE_BUFFER_OCTETS) as handle:
            for data in chunks:
                _write_chunk(handle, data)
                if same and old is not None and old.read(len(data)) != buffer_of(data):
                    same = False
            if old is not None:
                same = same and old.read(1) == b""
                old.close()
            if not same:
                os.fchmod(handle.fileno(), mode)
                handle.flush()
                os.fsync(handle.fileno())
        if same:
            Path(tmp).unlink()
            return False
        Path(tmp).replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise error(f"cannot write: {exc.strerror}", where=str(path)) from exc
    except BaseException:  # an interrupt: leave no temporary file behind
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise
    return True


def write_temporary(
    path: Path,
    chunks: Iterable[Chunk],
    *,
    mode: int = PUBLIC_MODE,
    error: type[AlterError],
) -> Path:
    """Write ``chunks`` to a new temporary file beside ``path``, sync it and close it:
    :func:`put_in_place` renames it over ``path`` (with the bytes known only at the end
    written in). For files written in threads before they are due, so that their
    write-back is done by the time the files that must reach the disk first are synced
    (an fsync waits for the write-back of every file with blocks in the same journal
    transaction, ext4's ordered data).

    Returns:
        The temporary file.

    Raises:
        AlterError: (``error``) it cannot be written (then it is gone).
    """
    try:
        make_dirs(path.parent, dir_mode_for(mode))
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise error(f"cannot write: {exc.strerror}", where=str(path)) from exc
    with _gone_on_failure(Path(tmp), path, error):
        try:
            handle = os.fdopen(fd, "wb", buffering=WRITE_BUFFER_OCTETS)
        except BaseException:
            os.close(fd)
            raise
        with handle:
            for data in chunks:
                _write_chunk(handle, data)
            os.fchmod(handle.fileno(), mode)
            handle.flush()
            os.fsync(handle.fileno())
    return Path(tmp)


def put_in_place(
    temporary: Path, path: Path, *, error: type[AlterError], at: int = 0, patch: bytes = b""
) -> None:
    """Write ``patch`` over the bytes at ``at`` of ``temporary`` (:func:`write_temporary`;
    what was known only at the end, of a size known from the start), sync that and rename
    it over ``path``.

    Raises:
        AlterError: (``error``) it cannot be written or renamed (then it is gone).
    """
    with _gone_on_failure(temporary, path, error):
        fd = os.open(temporary, os.O_WRONLY)
        try:
            if patch:  # what write_temporary synced needs no second fsync
                if os.pwrite(fd, patch, at) != len(patch):
                    raise OSError(errno.EIO, "short write")
                os.fsync(fd)
        finally:
            os.close(fd)
        temporary.replace(path)


@contextlib.contextmanager
def _gone_on_failure(temporary: Path, path: Path, error: type[AlterError]) -> Iterator[None]:
    """Remove ``temporary`` when the block fails (an interrupt too); an ``OSError`` is
    raised as ``error``, naming ``path``."""
    try:
        yield
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise error(f"cannot write: {exc.strerror}", where=str(path)) from exc
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


#: A temporary file of :func:`_replace` for the file named ``name`` (``mkstemp``'s
#: random part is 8 letters, digits or underscores).
_TEMP_NAME = re.compile(r"\.(?P<name>.+)\.[A-Za-z0-9_]{8}\.tmp")


def sweep_temp_files(
    directory: Path,
    owns: Callable[[str], bool],
    names: Iterable[str] | None = None,
    pattern: re.Pattern[str] = _TEMP_NAME,
) -> list[Path]:
    """Remove what interrupted writes left in ``directory``: each ``.<file>.<random>.tmp``
    whose ``<file>`` the caller ``owns`` (nothing else is touched). ``names``, the
    directory's listing when the caller has it, saves listing it again. ``pattern``
    matches another kind of leftover, its group ``name`` naming the file it was for.

    Returns:
        The files removed (a missing directory has none).

    Raises:
        OSError: the directory exists but cannot be listed, or a file cannot be removed.
    """
    if names is None:
        try:
            names = os.listdir(directory)  # noqa: PTH208 (names only)
        except FileNotFoundError:
            return []
    removed: list[Path] = []
    for name in names:
        match = pattern.fullmatch(name)
        if match is not None and owns(match.group("name")):
            path = directory / name
            with contextlib.suppress(FileNotFoundError):  # another run swept it first
                path.unlink()
                removed.append(path)
    return removed


#: Characters encoded at a time by :func:`atomic_write_text` (text is never encoded
#: whole: at 100,000 handles that would be another 100 MB at once).
TEXT_SLICE_CHARS = 1 << 20


def _slices(parts: Iterable[str]) -> Iterator[bytes]:
    for part in parts:
        for start in range(0, len(part), TEXT_SLICE_CHARS):
            yield part[start : start + TEXT_SLICE_CHARS].encode("utf-8")


def _parts(text: str | Iterable[str]) -> Iterable[str]:
    return (text,) if isinstance(text, str) else text


def text_differs(path: Path, text: str | Iterable[str]) -> bool:
    """True when ``path`` is missing or holds other text than ``text`` (mode ignored);
    ``text`` may be consecutive parts (any iterable: it is read once)."""
    return chunks_differ(path, _slices(_parts(text)))


def atomic_write_text(
    path: Path,
    text: str | Iterable[str],
    *,
    mode: int = PUBLIC_MODE,
    error: type[AlterError] = RenderError,
) -> bool:
    """:func:`atomic_write_bytes` for UTF-8 text given whole or as consecutive parts (any
    iterable, read once): one pass writes a temporary file while comparing it with the
    file in place; the temporary file replaces it only when they differ.

    Returns:
        True when the file was (re)written, False when it already held ``text``.

    Raises:
        AlterError: (``error``, RenderError by default) the file could not be written.
    """
    return _replace(path, _slices(_parts(text)), mode=mode, error=error, keep_if_same=True)


def atomic_write_chunks(
    path: Path,
    chunks: Iterable[Chunk],
    *,
    mode: int = PUBLIC_MODE,
    error: type[AlterError] = RenderError,
    compare: bool = True,
) -> bool:
    """:func:`atomic_write_text` for bytes given as consecutive chunks; without
    ``compare`` (the caller knows they differ) the file is replaced unread.

    Raises:
        AlterError: (``error``, RenderError by default) the file could not be written.
    """
    return _replace(path, chunks, mode=mode, error=error, keep_if_same=compare)


def write_compared(
    path: Path,
    content: str | Iterable[str] | Iterable[Chunk],
    reference: Path,
    *,
    mode: int = PUBLIC_MODE,
    error: type[AlterError] = RenderError,
    compare: bool = True,
) -> bool:
    """Write ``content`` (text parts, or byte chunks) to ``path`` (atomically) unless it
    holds what ``reference`` holds; without ``compare`` (the caller knows they differ)
    it is written unread.

    Returns:
        True when ``path`` was written; False when ``reference`` holds the same bytes
        (and mode), and ``path`` is left as it was.

    Raises:
        AlterError: (``error``, RenderError by default) the file could not be written.
    """
    chunks = _as_chunks(content)
    return _replace(path, chunks, mode=mode, error=error, keep_if_same=compare, reference=reference)


def _as_chunks(content: str | Iterable[str] | Iterable[Chunk]) -> Iterator[Chunk]:
    for part in _parts(content) if isinstance(content, str) else content:
        if isinstance(part, str):
            yield from _slices((part,))
        else:
            yield part


def chunks_differ(path: Path, chunks: Iterable[Chunk]) -> bool:
    """:func:`text_differs` for bytes given as consecutive chunks."""
    try:
        with path.open("rb") as handle:
            for expected in chunks:
                if handle.read(len(expected)) != buffer_of(expected):
                    return True
            return handle.read(1) != b""
    except OSError:
        return True
