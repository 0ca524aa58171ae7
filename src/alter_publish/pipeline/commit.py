"""Writing a run: log first (with its checkpoint history and tiles), then serial state,
then outputs (a crash never leaves outputs the log lacks), for a full run and a patched
one alike. The outputs are one set, switched
at once (:mod:`alter_publish.outputset`): a kill at any instant leaves the whole previous
set or the whole new one. A patch copies its files into the new generation earlier
(:func:`start_writes`), where no reader sees them, synced as they are copied, and
renames them into it beside the log and state; the set is switched to them once the
log and state are on disk.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from alter_publish.definition.state import SerialState, state_path_for
from alter_publish.errors import RenderError
from alter_publish.fileio import (
    Chunk,
    atomic_write_bytes,
    chunks_differ,
    content_differs,
    fsync_directory,
    put_in_place,
    text_differs,
    write_compared,
    write_temporary,
)
from alter_publish.interrupts import deferred_interrupts
from alter_publish.outputset import OutputSet, Staging
from alter_publish.pipeline.context import RunContext
from alter_publish.pipeline.paths import zone_outputs
from alter_publish.pipeline.transparency import Publication, write_publication
from alter_publish.threads import soon, wait_all


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
    #: The log as a transparency log: checkpoint history, tiles, checkpoint (None: none).
    publication: Publication | None = None
    #: The outputs' files already being written into the next generation (a patch's).
    started: Started | None = None


@dataclass(frozen=True, slots=True)
class Started:
    """A patch's output files being copied into the next generation of its zone's set
    (:func:`start_writes`) while its record is made ready: temporary files, synced once
    copied, which the commit renames while it writes the log and state, then switches
    to; or the run drops them (:meth:`discard`). No reader sees a generation before the
    switch."""

    staging: Staging
    #: Per file name: wait for its copy, the temporary file (raises what the copy raised).
    copies: Mapping[str, Callable[[], Path]]

    def copied(self) -> None:
        """Wait for every copy.

        Raises:
            RenderError: a file could not be written (the first; the others as notes).
        """
        wait_all(list(self.copies.values()))

    def placed_soon(self) -> dict[str, Callable[[], bool]]:
        """Start renaming the copies (synced) into the generation, a thread each; per
        file name, wait for it (True: written)."""
        return {
            name: soon(partial(_put_in_place, self.staging, name, copy), f"place {name}")
            for name, copy in self.copies.items()
        }

    def discard(self) -> None:
        """Wait for the copies, then drop the generation (nothing once switched to)."""
        try:
            with contextlib.suppress(Exception):
                self.copied()
        finally:
            self.staging.abandon()


def start_writes(
    out: Path, zone: str, zone_file: Chunks | None, envelopes_file: Chunks | None
) -> Started:
    """Start copying a patch's zone file and envelopes document (None: kept as they are)
    into the next generation of ``zone``'s output set in ``out``, a thread each:
    temporary files (:func:`fileio.write_temporary`), each synced once copied, while the
    patch makes its memo and record, so that the commit's fsyncs of the log and state
    find them on the disk (ext4's ordered data: an fsync waits for the write-back of every
    file in its journal transaction; synced at the commit, beside the log and state, the
    copies held those fsyncs up 0.15-0.2 s at 100,000 handles).

    Raises:
        RenderError: the output set cannot be prepared.
    """
    outputs = zone_outputs(out, zone)
    zone_name, envelopes_name, _ = outputs.names
    staging = outputs.stage()
    files = {zone_name: zone_file, envelopes_name: envelopes_file}
    copies: dict[str, Callable[[], Path]] = {}
    try:
        for name, content in files.items():
            if content is not None:
                copy = partial(
                    write_temporary, staging.path(name), content.parts, error=RenderError
                )
                copies[name] = soon(copy, f"write {name}")
    except BaseException:
        Started(staging, copies).discard()
        raise
    return Started(staging, copies)


def commit(
    ctx: RunContext, writes: Writes, meanwhile: Callable[[], object] | None = None
) -> list[str]:
    """Write the log, then the serial state, then the outputs (with ``ctx.check``: nothing,
    but say what would be written). ``meanwhile``, work that writes no file (the run's
    record, made ready), is done while the outputs' files are written (a patch's: once
    its log and state are written, while its copies are put in place); it may not be done at
    all (nothing to write, or a check), so its caller sees to that.

    Returns:
        What was (or would be) written.

    Raises:
        RenderError: a file cannot be written or a stale DS file removed.
        Exception: what ``meanwhile`` raised (then no output is switched).
    """
    # Ctrl-C and SIGTERM wait until the zone's log, state and outputs are all written.
    with deferred_interrupts():
        return _commit(ctx, writes, meanwhile)


def _commit(ctx: RunContext, writes: Writes, meanwhile: Callable[[], object] | None) -> list[str]:
    # A patch's copies, made and synced (a file that could not be written leaves the log
    # as it was), are put in place while the log and state are written, and
    # ``meanwhile`` is done once they are; a full run writes its files once the log and
    # state are durable.
    placing: dict[str, Callable[[], bool]] = {}
    if writes.started is not None:
        writes.started.copied()
        placing = writes.started.placed_soon()
    try:
        written, state = _log_and_state(ctx, writes, meanwhile if placing else None)
    except BaseException:
        with contextlib.suppress(Exception):  # no thread outlives the commit
            wait_all(list(placing.values()))
        raise
    outputs = zone_outputs(ctx.out, writes.zone)
    if ctx.check:
        return written + _would_write(outputs, writes)
    switched = _switch(outputs, writes, None if placing else meanwhile, placing)
    if state.previous_zone_sha256 is not None:  # the outputs hold the new zone now
        atomic_write_bytes(state_path_for(writes.definition), state.switched().to_text().encode())
    return written + switched


def _log_and_state(
    ctx: RunContext, writes: Writes, meanwhile: Callable[[], object] | None
) -> tuple[list[str], SerialState]:
    """Write the log, its publication and the serial state (``meanwhile`` done once they
    are written), and make them durable (with ``ctx.check``: nothing, but say what
    would be written).

    Returns:
        What was (or would be) written, and the state.

    Raises:
        RenderError: a file cannot be written.
    """
    dry_run = ctx.check
    write = content_differs if dry_run else atomic_write_bytes
    written: list[str] = []
    if writes.append_log is not None:
        if not dry_run:
            writes.append_log()
        written.append(str(writes.log_path))
    if writes.publication is not None:
        if dry_run:
            if writes.publication.new_note is not None:
                written.append(str(writes.publication.history.path))
        else:
            written += write_publication(writes.publication)
    state_path = state_path_for(writes.definition)
    outputs = zone_outputs(ctx.out, writes.zone)
    current = outputs.current()
    published = None if current == outputs.out else _manifest(current).get("zone_sha256")
    state = writes.state.replacing(SerialState.read(state_path), published)
    if write(state_path, state.to_text().encode()):
        written.append(str(state_path))
    if meanwhile is not None:
        meanwhile()
    if not dry_run and written:  # the log and state are on disk before any output
        _durable({writes.log_path.parent, state_path.parent})
    return written, state


def _durable(directories: set[Path]) -> None:
    """fsync the directories the log and state were renamed into (power loss).

    Raises:
        RenderError: one cannot be synced.
    """
    for directory in directories:
        try:
            fsync_directory(directory)
        except OSError as exc:
            raise RenderError(f"cannot sync: {exc.strerror}", where=str(directory)) from exc


def _contents(outputs: OutputSet, writes: Writes) -> dict[str, Text | Chunks | bytes | None]:
    """Each file of the set: its new content (``b""``: none), or None to keep it."""
    zone_name, envelopes_name, ds_name = outputs.names
    return {zone_name: writes.zone_file, envelopes_name: writes.envelopes_file, ds_name: writes.ds}


#: A generation's own record: the SHA-256 of its zone file (the state names it as the
#: previous zone until the next generation is switched to).
MANIFEST = "manifest.json"


def _manifest(generation: Path) -> dict[str, str]:
    """The generation's manifest; empty when it has none (an older release's outputs)."""
    try:
        doc = json.loads((generation / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {key: value for key, value in doc.items() if isinstance(value, str)}


def _would_write(outputs: OutputSet, writes: Writes) -> list[str]:
    """What :func:`_switch` would change (``sign --check``)."""
    written: list[str] = []
    seen = outputs.readable()  # what readers of the stable paths see
    for path, (name, content) in zip(seen, _contents(outputs, writes).items(), strict=True):
        if content == b"":
            if path.exists():
                written.append(f"{outputs.out / name} (would be removed: the zone is unsigned)")
        elif content is not None and _differs(path, content):
            written.append(str(outputs.out / name))
    return written


def _differs(path: Path, content: Text | Chunks | bytes) -> bool:
    if isinstance(content, Text):
        return text_differs(path, content.parts)
    if isinstance(content, Chunks):
        return chunks_differ(path, content.parts)
    return content_differs(path, content)


def _switch(
    outputs: OutputSet,
    writes: Writes,
    meanwhile: Callable[[], object] | None,
    placing: Mapping[str, Callable[[], bool]],
) -> list[str]:
    """Write the files that changed into a new generation of the set (a patch's copies,
    ``writes.started``, are being put in place there: ``placing``; the others carried over;
    ``meanwhile`` done while they are written), then switch the whole set at once;
    nothing changed: the set stays.

    Raises:
        RenderError: a file cannot be written, or the set cannot be switched.
    """
    started = writes.started
    staging = outputs.stage() if started is None else started.staging
    written: list[str] = []
    try:
        # A patch's copies are being put in place (``placing``); other files given as chunks
        # are written side by side, a thread each (the kernel's copies and fsyncs let go
        # of the interpreter's lock). Text is rendered here, one file after the other:
        # two renderings in threads only take turns with the lock (a full run's write
        # stage took 0.3-0.7 s longer). When one fails the others still run.
        writing = dict(placing)  # a patch's copies, being put in place
        writing |= {
            name: soon(
                partial(_write, staging, name, content),
                f"write {name}",
                thread=isinstance(content, Chunks),
            )
            for name, content in _contents(outputs, writes).items()
            if content is not None and content != b"" and name not in writing
        }
        try:
            if writing and meanwhile is not None:
                meanwhile()
        finally:  # every writer ends before anything is raised
            done = dict(zip(writing, wait_all(list(writing.values())), strict=True))
        for name, content in _contents(outputs, writes).items():
            if content == b"":  # a DS left at the registrar for an unsigned zone makes it
                if staging.previous_path(name).exists():  # bogus: none is offered
                    written.append(f"{outputs.out / name} (removed: the zone is unsigned)")
            elif done.get(name, False):
                written.append(str(outputs.out / name))
            else:
                staging.keep(name)
        if written:
            manifest = {"zone_sha256": writes.state.zone_sha256}
            atomic_write_bytes(staging.path(MANIFEST), json.dumps(manifest).encode())
            staging.switch()
            return written
        staging.abandon()
    except BaseException:
        staging.abandon()
        raise
    return outputs.ensure_links()


def _put_in_place(staging: Staging, name: str, copy: Callable[[], Path]) -> bool:
    """Rename a patch's copy of ``name`` (synced) into the new generation."""
    put_in_place(copy(), staging.path(name), error=RenderError)
    return True


def _write(staging: Staging, name: str, content: Text | Chunks | bytes) -> bool:
    """Write ``name`` into the new generation unless the current set has the same bytes."""
    parts: Iterable[str] | Iterable[Chunk]
    parts = (content,) if isinstance(content, bytes) else content.parts
    return write_compared(
        staging.path(name),
        parts,
        staging.previous_path(name),
        compare=not isinstance(content, Chunks),
    )


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
