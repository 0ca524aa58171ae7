"""Atomic file writes: temp file in the same directory, fsync, rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from alter_publish.errors import AlterError, RenderError

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
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise error(f"cannot write: {exc.strerror}", where=str(path)) from exc
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        Path(tmp).replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise error(f"cannot write: {exc.strerror}", where=str(path)) from exc
    return True


#: Characters encoded at a time by :func:`atomic_write_text` (the text is never encoded
#: whole: at 100,000 handles that would be another 80 MB at once).
TEXT_SLICE_CHARS = 1 << 20


def _slices(text: str | Sequence[str]) -> Iterator[bytes]:
    for part in (text,) if isinstance(text, str) else text:
        for start in range(0, len(part), TEXT_SLICE_CHARS):
            yield part[start : start + TEXT_SLICE_CHARS].encode("utf-8")


def _same_text(path: Path, text: str | Sequence[str]) -> bool:
    """True when ``path`` holds exactly ``text`` in UTF-8 (compared slice by slice)."""
    try:
        with path.open("rb") as handle:
            for expected in _slices(text):
                if handle.read(len(expected)) != expected:
                    return False
            return handle.read(1) == b""
    except OSError:
        return False


def atomic_write_text(
    path: Path,
    text: str | Sequence[str],
    *,
    mode: int = PUBLIC_MODE,
    error: type[AlterError] = RenderError,
) -> bool:
    """:func:`atomic_write_bytes` for UTF-8 text (or consecutive parts of it), encoded a
    slice at a time.

    Returns:
        True when the file was (re)written, False when it already held ``text``.

    Raises:
        AlterError: (``error``, RenderError by default) the file could not be written.
    """
    if _same_text(path, text) and (path.stat().st_mode & 0o777) == mode:
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise error(f"cannot write: {exc.strerror}", where=str(path)) from exc
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            for data in _slices(text):
                handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        Path(tmp).replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise error(f"cannot write: {exc.strerror}", where=str(path)) from exc
    return True


def text_differs(path: Path, text: str | Sequence[str]) -> bool:
    """True when ``path`` is missing or holds other text than ``text`` (mode ignored)."""
    return not _same_text(path, text)
