"""Writing a run: log first, then serial state, then outputs (a crash never leaves outputs
the log lacks), for a full run and a patched one alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from alter_publish.definition.state import SerialState, state_path_for
from alter_publish.errors import RenderError
from alter_publish.fileio import (
    Chunk,
    atomic_write_bytes,
    atomic_write_chunks,
    atomic_write_text,
    chunks_differ,
    content_differs,
    text_differs,
)
from alter_publish.interrupts import deferred_interrupts
from alter_publish.pipeline.context import RunContext
from alter_publish.pipeline.paths import ds_path, output_paths


@dataclass(frozen=True, slots=True)
class Text:
    """A file's new text, as parts written one after the other (compared, then replaced)."""

    parts: Iterable[str]


@dataclass(frozen=True, slots=True)
class Chunks:
    """A file's new bytes as chunks, known to differ from the file's (replaced unread)."""

    parts: Iterable[Chunk]


@dataclass(frozen=True, slots=True)
class Writes:
    """What a run writes for one zone, in the order :func:`commit` writes it."""

    definition: Path  # the state file stands beside it
    zone: str
    log_path: Path
    #: Appends the run's new entries to the log (None: no new entries).
    append_log: Callable[[], object] | None
    state: SerialState
    zone_file: Text | Chunks | None  # None: left as it is
    envelopes_file: Text | Chunks | None
    #: The DS file's bytes; ``b""`` for an unsigned zone (a stale DS goes); None: left alone.
    ds: bytes | None = None


def commit(ctx: RunContext, writes: Writes) -> list[str]:
    """Write the log, then the serial state, then the outputs (with ``ctx.check``: nothing,
    but say what would be written).

    Returns:
        What was (or would be) written.

    Raises:
        RenderError: a file cannot be written or a stale DS file removed.
    """
    # Ctrl-C and SIGTERM wait until the zone's log, state and outputs are all written.
    with deferred_interrupts():
        return _commit(ctx, writes)


def _commit(ctx: RunContext, writes: Writes) -> list[str]:
    dry_run = ctx.check
    write = content_differs if dry_run else atomic_write_bytes
    written: list[str] = []
    if writes.append_log is not None:
        if not dry_run:
            writes.append_log()
        written.append(str(writes.log_path))
    state_path = state_path_for(writes.definition)
    if write(state_path, writes.state.to_text().encode()):
        written.append(str(state_path))
    zone_file, envelopes_file = output_paths(ctx.out, writes.zone)
    for path, content in ((zone_file, writes.zone_file), (envelopes_file, writes.envelopes_file)):
        if content is not None and _write(path, content, dry_run=dry_run):
            written.append(str(path))
    if writes.ds is not None:
        written += _write_ds(ds_path(ctx.out, writes.zone), writes.ds, dry_run=dry_run)
    return written


def _write(path: Path, content: Text | Chunks, *, dry_run: bool) -> bool:
    if isinstance(content, Text):
        if dry_run:
            return text_differs(path, content.parts)
        return atomic_write_text(path, content.parts)
    if dry_run:
        return chunks_differ(path, content.parts)
    return atomic_write_chunks(path, content.parts, compare=False)


def _write_ds(ds_file: Path, ds: bytes, *, dry_run: bool) -> list[str]:
    """Write the DS file, or remove it for an unsigned zone: a DS left at the registrar for
    an unsigned zone makes it bogus, so none is offered.

    Raises:
        RenderError: it cannot be written or removed.
    """
    if ds:
        written = content_differs(ds_file, ds) if dry_run else atomic_write_bytes(ds_file, ds)
        return [str(ds_file)] if written else []
    if not ds_file.exists():
        return []
    if dry_run:
        return [f"{ds_file} (would be removed: the zone is unsigned)"]
    try:
        ds_file.unlink()
    except OSError as exc:
        raise RenderError(
            f"cannot remove stale DS file: {exc.strerror}", where=str(ds_file)
        ) from exc
    return [f"{ds_file} (removed: the zone is unsigned)"]


class Measured:
    """Text parts passed through as they are written, noting where each starts (bytes)."""

    def __init__(self, parts: Iterable[str]) -> None:
        self.parts = parts
        self.starts: list[int] = []
        self.size = 0

    def __iter__(self) -> Iterator[str]:
        for part in self.parts:
            self.starts.append(self.size)
            self.size += len(part) if part.isascii() else len(part.encode())
            yield part
