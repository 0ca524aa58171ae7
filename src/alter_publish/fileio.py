"""Atomic file writes: temp file in the same directory, fsync, rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from alter_publish.errors import AlterError, RenderError

#: Bytes as written: whole, or a view into a larger buffer (no copy).
Chunk = bytes | memoryview

PRIVATE_MODE = 0o600
PUBLIC_MODE = 0o644


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
) -> bool:
    """Write ``chunks`` to a temporary file beside ``path`` (fsync), then rename it over
    ``path``; with ``keep_if_same``, compare with the file in place on the way and keep
    that one (unchanged, mtime and all) when the bytes and mode are the same.

    Returns:
        True when ``path`` was replaced.

    Raises:
        AlterError: (``error``) the file could not be written.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise error(f"cannot write: {exc.strerror}", where=str(path)) from exc
    try:
        old: BinaryIO | None = None
        same = False
        if keep_if_same:
            try:
                old = path.open("rb")
                same = (path.stat().st_mode & 0o777) == mode
            except OSError:
                old, same = None, False
        with os.fdopen(fd, "wb") as handle:
            for data in chunks:
                handle.write(data)
                if same and old is not None and old.read(len(data)) != data:
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


def chunks_differ(path: Path, chunks: Iterable[Chunk]) -> bool:
    """:func:`text_differs` for bytes given as consecutive chunks."""
    try:
        with path.open("rb") as handle:
            for expected in chunks:
                if handle.read(len(expected)) != expected:
                    return True
            return handle.read(1) != b""
    except OSError:
        return True
