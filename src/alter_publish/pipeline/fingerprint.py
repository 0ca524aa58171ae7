"""Did anything change since the last proven ``sign``? (without reading the definition)

After a proven run, ``sign`` records in ``<out>/.<definition>.fingerprint.json``
a digest of everything its output depends on: the definition, templates,
revocations file, log and state files (by content), the zone's DNSSEC key
files and every handle's key directory and current key file (by ``stat``: inode,
size, modification time, as git and make judge files, and mode and owner), the outputs as written,
and the span of ``--now`` over which nothing falls due (no envelope to renew,
no RRSIG to refresh). A later run whose digest matches inside that span would
write the same bytes, so it stops there: no parse, no signing, no proof, no
write. Any difference, or any doubt (a missing or unreadable record), means a
full run.

The handle keys' ``stat`` lines are taken once, by a full run; later runs take anew
only the lines of the handles the key store's journal names since (see
:mod:`alter_publish.keys.journal`), and the record keeps their digest and where the
journal stood.
"""

from __future__ import annotations

import array
import base64
import functools
import hashlib
import itertools
import json
import operator
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from alter_publish.definition.state import state_path_for
from alter_publish.errors import RenderError
from alter_publish.fileio import atomic_write_bytes
from alter_publish.format.identitylog import log_path_for
from alter_publish.keys.journal import NO_JOURNAL, Mark, changes_since, journal_mark
from alter_publish.keys.lifecycle import revocations_path_for
from alter_publish.parallel import Workers, ranges, shared
from alter_publish.pipeline.paths import ds_path, output_paths
from alter_publish.version import __version__

if TYPE_CHECKING:
    from alter_publish.pipeline.context import RunContext

FINGERPRINT_FORMAT = "alter-publish/fingerprint/3"


def fingerprint_path(out: Path, definition: Path) -> Path:
    """Where the record of the last proven run of ``definition`` into ``out`` lives
    (a hidden file beside the outputs; it holds inode numbers, so it is machine-local)."""
    return out / f".{definition.name}.fingerprint.json"


def _stat_line(path: str) -> str:
    return f"{path} {_stat_text(path)}\n"


#: Content digests by (path, inode, size, mtime), remembered for one run (the run context
#: holds one): one ``sign`` hashes the same log and definition for the no-change check, the
#: incremental check and the records it leaves. Never across runs: a file rewritten in place
#: within one clock tick keeps its size and mtime.
DigestMemo = dict[tuple[str, int, int, int], str]


def _content_line(path: Path, digests: DigestMemo | None) -> str:
    return f"{path} {content_digest(path, digests)}\n"


def content_digest(path: Path, digests: DigestMemo | None) -> str:
    """The SHA-256 (hex) of ``path``'s bytes, looked up in ``digests`` or hashed and
    remembered there; ``-`` when it cannot be read."""
    if digests is None:
        return _content_digest(path)
    try:
        info = path.stat()
    except OSError:
        return "-"
    key = (str(path), info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in digests:
        digests[key] = _content_digest(path)
    return digests[key]


def hashed_as_is(digests: DigestMemo, path: Path, fd: int) -> bool:
    """Whether the memo of content digests holds ``path`` as the open file ``fd`` is now
    (same inode, size and modification time): the bytes read are the bytes hashed."""
    try:
        info = os.fstat(fd)
    except OSError:
        return False
    return (str(path), info.st_ino, info.st_size, info.st_mtime_ns) in digests


def _content_digest(path: Path) -> str:
    sha = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                sha.update(chunk)
        return sha.hexdigest()
    except OSError:
        return "-"


def _stat_text(path: str, dir_fd: int | None = None) -> str:
    try:
        info = os.stat(path, dir_fd=dir_fd)  # str paths: 200,000 stats at 100k handles
    except OSError:
        return "-"
    # Mode and owner too: a key directory made writable by others (or given away) must
    # bring the run back to reading its keys, which refuses it.
    return f"{info.st_ino} {info.st_size} {info.st_mtime_ns} {info.st_mode:o} {info.st_uid}"


def handle_key_lines(handle_keys: Sequence[tuple[str, int]], *, jobs: int = 1) -> list[str]:
    """Per handle: the ``stat`` (inode, size, mtime) of its key directory and of its
    current key file, as one line (``jobs`` processes take them: 200,000 system calls
    at 100,000 handles)."""
    with Workers(jobs, handle_keys, size=len(handle_keys)) as pool:
        spans = ranges(len(handle_keys), max(len(handle_keys) // (4 * jobs), 1))
        return [line for lines in pool.map_chunks(_key_lines, spans) for line in lines]


def _key_lines(span: tuple[int, int]) -> list[str]:
    """The lines of one span of ``handle_keys``: each stat taken relative to the handle
    directory's parent, opened once (a third faster than resolving every path whole)."""
    handle_keys: Sequence[tuple[str, int]] = shared()
    parents: dict[str, int | None] = {}
    lines: list[str] = []
    try:
        for directory, epoch in handle_keys[span[0] : span[1]]:
            parent, _, name = directory.rpartition("/")
            fd = None
            if directory[:1] == "/" and name:  # a whole path (else: stat'ed as it stands)
                if parent not in parents:
                    parents[parent] = _open_directory(parent or "/")
                fd = parents[parent]
            if fd is None:
                name = directory
            lines.append(f"{_stat_text(name, fd)} {_stat_text(f'{name}/{epoch}.pem', fd)}")
    finally:
        for fd in parents.values():
            if fd is not None:
                os.close(fd)
    return lines


def _open_directory(path: str) -> int | None:
    """A descriptor of directory ``path`` (None: it cannot be opened; paths are then
    resolved whole, and say ``-`` as before where they cannot be stat'ed)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a run's outputs depend on, as far as the fingerprint tracks it."""

    definition: Path
    templates: Path
    content_files: tuple[Path, ...]  # revocations, log, state
    zone_keys_dir: Path
    handle_keys: tuple[tuple[str, int], ...]  # (handle key directory, current epoch)
    outputs: tuple[Path, ...]
    options: str  # out, templates, verify: what else decides the run
    #: The definition's text as the run read it (None: as the file holds it now). A run
    #: records what it parsed, not an edit that landed while it ran.
    definition_text: str | None = None
    #: The run's memo of content digests (None: hash every file).
    digests: DigestMemo | None = field(default=None, repr=False, compare=False)

    def digest(self, keys_digest: str) -> str:
        """SHA-256 over every tracked input and output (``keys_digest``: the
        :func:`lines_digest` of the :func:`handle_key_lines` of ``handle_keys``)."""
        return self.digest_later(self.keys_line(keys_digest))()

    def keys_line(self, keys_digest: str, split: tuple[list[str], str] | None = None) -> str:
        """The digest's line of the handle keys (``split``: :func:`split_handle_keys` of
        ``handle_keys``, made already)."""
        dirs, epochs = split_handle_keys(self.handle_keys) if split is None else split
        return f"{json.dumps(dirs)}\n{epochs}\n{keys_digest}\n"

    def digest_later(self, keys_line: str) -> Callable[[], str]:
        """:meth:`digest`, with the work that the files a run writes last cannot change
        done now (the definition's line; with a memo of content digests, the content
        files hashed as they are now; ``keys_line``: :meth:`keys_line`): the function it
        gives makes the digest of the files as they are when it is called. A run calls
        this while its outputs are written, and the function once they are."""
        definition = f"{self.definition} {self.definition_sha256()}\n"
        if self.digests is not None:  # what has not changed by then is looked up, not hashed
            for path in self.content_files:
                _content_line(path, self.digests)
        return functools.partial(self._digest, definition, keys_line)

    def definition_sha256(self) -> str:
        """The SHA-256 (hex) of the definition: of the text the run read, or the file's."""
        if self.definition_text is None:
            return content_digest(self.definition, self.digests)
        return hashlib.sha256(self.definition_text.encode()).hexdigest()

    def base_digest(self, header: str) -> str:
        """SHA-256 over everything but the definition's handle entries and the handle
        keys: ``header`` stands for the definition (see :mod:`incremental`)."""
        return self._digest(f"header {hashlib.sha256(header.encode()).hexdigest()}\n", "")

    def _digest(self, definition_line: str, handle_lines: str) -> str:
        sha = hashlib.sha256()
        sha.update(f"{FINGERPRINT_FORMAT} {__version__} {self.options}\n".encode())
        sha.update(definition_line.encode())
        templates = sorted(self.templates.glob("*.j2")) if self.templates.is_dir() else []
        for path in (*templates, *self.content_files):
            sha.update(_content_line(path, self.digests).encode())
        try:
            zone_key_files = sorted(os.listdir(self.zone_keys_dir))  # noqa: PTH208 (names)
        except OSError:
            zone_key_files = []
        lines = [_stat_line(f"{self.zone_keys_dir}/{name}") for name in zone_key_files]
        sha.update("".join(lines).encode())
        sha.update(handle_lines.encode())
        sha.update("".join(_stat_line(str(path)) for path in self.outputs).encode())
        return sha.hexdigest()


def lines_digest(lines: Sequence[str]) -> str:
    """SHA-256 of handle key ``stat`` lines (what a record keeps of them)."""
    return hashlib.sha256(("\n".join(lines) + "\n").encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class KeyLines:
    """Handle key ``stat`` lines (:func:`handle_key_lines`, one per handle of a record)
    and where the key store's journal stood before they were taken: a key the store
    wrote after ``mark`` is named in the journal past it."""

    lines: tuple[str, ...]
    mark: Mark


def key_lines(
    root: Path | str,
    zone: str,
    handle_keys: Sequence[tuple[str, int]],
    recorded: KeyLines | None,
    *,
    jobs: int = 1,
) -> KeyLines:
    """The lines of ``handle_keys`` now: ``recorded`` with the lines of the handles the
    journal names since taken anew, or every line taken (no ``recorded``, or the
    journal cannot tell). The journal is read before any line is taken."""
    if recorded is None or len(recorded.lines) != len(handle_keys):
        return all_key_lines(root, zone, handle_keys, jobs=jobs)
    now, touched = changes_since(root, zone, recorded.mark)
    if touched is None:
        return all_key_lines(root, zone, handle_keys, jobs=jobs)
    indices = touched_indices(root, zone, handle_keys, touched)
    return KeyLines(_taken_anew(recorded.lines, handle_keys, indices, jobs), now)


def all_key_lines(
    root: Path | str, zone: str, handle_keys: Sequence[tuple[str, int]], *, jobs: int = 1
) -> KeyLines:
    """Every line of ``handle_keys``, taken after the journal's mark is read."""
    mark = journal_mark(root, zone)
    return KeyLines(tuple(handle_key_lines(handle_keys, jobs=jobs)), mark)


def recorded_key_lines(
    root: Path | str,
    zone: str,
    handle_keys: Sequence[tuple[str, int]],
    taken: KeyLines,
    own: Mapping[int, str],
    *,
    jobs: int = 1,
) -> KeyLines:
    """What a patch run records of its key lines: ``taken`` (the last run's, with the
    handles named since its mark and those this run signed taken anew). ``own``: for
    each handle this run signed (by index), its line before the run loaded its key (""
    when it had none: a key the run made, ``--create-keys``).

    When the journal names, since ``taken.mark``, only handles of ``own`` whose key is
    as the run found or made it (the line now, the line taken after signing and the
    line before agree), the record moves past them. Otherwise (a key written beside
    this run, after it took its lines or loaded that key) it keeps ``taken.mark``, so
    the next run looks at that handle's key again."""
    now, touched = changes_since(root, zone, taken.mark)
    if touched is None:
        return taken
    indices = touched_indices(root, zone, handle_keys, touched)
    if not all(index in own for index in indices):
        return taken
    lines = _taken_anew(taken.lines, handle_keys, indices, jobs)
    for index in indices:
        if lines[index] != taken.lines[index] or own[index] not in ("", lines[index]):
            return taken
    return KeyLines(lines, now)


def _taken_anew(
    lines: Sequence[str], handle_keys: Sequence[tuple[str, int]], indices: list[int], jobs: int
) -> tuple[str, ...]:
    """``lines`` with those at ``indices`` taken again."""
    if not indices:
        return tuple(lines)
    found = list(lines)
    taken = handle_key_lines([handle_keys[index] for index in indices], jobs=jobs)
    for index, line in zip(indices, taken, strict=True):
        found[index] = line
    return tuple(found)


def touched_indices(
    root: Path | str, zone: str, handle_keys: Sequence[tuple[str, int]], names: Iterable[str]
) -> list[int]:
    """Where among ``handle_keys`` the handles with directory ``names`` stand (a C loop)."""
    if not names:
        return []
    dirs = {f"{root}/{zone}/{name}" for name in names}
    found = map(dirs.__contains__, map(_dir, handle_keys))
    return list(itertools.compress(itertools.count(), found))


_dir = operator.itemgetter(0)


def split_handle_keys(handle_keys: Sequence[tuple[str, int]]) -> tuple[list[str], str]:
    """The handle key directories, and their epochs as base64 of little-endian 64-bit
    integers: the record's form of ``handle_keys``, made in C loops (100,000 pairs as
    JSON lists took 0.1 s to write and read back)."""
    epochs = array.array("q", map(operator.itemgetter(1), handle_keys))
    if sys.byteorder != "little":
        epochs.byteswap()
    return list(map(operator.itemgetter(0), handle_keys)), base64.b64encode(epochs).decode()


def joined_handle_keys(dirs: object, epochs: object) -> tuple[tuple[str, int], ...]:
    """The pairs :func:`split_handle_keys` split.

    Raises:
        ValueError: not a list of text and as many epochs.
        TypeError: a directory is not text.
    """
    packed = array.array("q", base64.b64decode(str(epochs), validate=True))
    if sys.byteorder != "little":
        packed.byteswap()
    if not isinstance(dirs, list) or len(dirs) != len(packed):
        raise ValueError("handle keys: not as many directories as epochs")
    if not all(map(str.__instancecheck__, dirs)):  # every one text (a C loop)
        raise TypeError("handle keys: a directory is not text")
    return tuple(zip(dirs, packed, strict=True))


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """The record of one proven run: its digest, the span of ``now`` it holds for, and
    what the report of an unchanged run shows."""

    digest: str
    valid_from: int
    valid_until: int
    zone: str
    zone_keys_dir: str
    handle_keys: tuple[tuple[str, int], ...]
    summary: Mapping[str, Any]
    #: The digest of the handle key lines the run took, and where the key store's
    #: journal stood when it took them.
    keys_digest: str = ""
    keys_mark: Mark = NO_JOURNAL
    #: The SHA-256 of the definition the run read ("": a record that did not keep it): a
    #: run whose definition has another is not unchanged, whatever else holds.
    source_sha256: str = ""

    def keys_digest_now(self, root: Path | str, *, jobs: int = 1) -> str | None:
        """The digest of the handle key lines now, for :meth:`Inputs.digest`: the
        recorded one when the journal names none of the handles since (their lines are
        as they were), None when it names one (something changed); every line taken
        when the journal cannot tell."""
        _, touched = changes_since(root, self.zone, self.keys_mark)
        if touched is None:
            return lines_digest(handle_key_lines(self.handle_keys, jobs=jobs))
        if touched_indices(root, self.zone, self.handle_keys, touched):
            return None
        return self.keys_digest

    def holds(self, digest: str, now: int) -> bool:
        """True when ``digest`` is the recorded one and ``now`` is inside the span."""
        return digest == self.digest and self.valid_from <= now < self.valid_until

    def to_text(self) -> str:
        """JSON form."""
        return self.text_later()(self.digest)

    def text_later(self, split: tuple[list[str], str] | None = None) -> Callable[[str], str]:
        """:meth:`to_text` made now but for the digest, which the function it gives takes
        (the JSON of 100,000 handles' key directories is made while a patch's outputs
        are written; the digest is known once they are). ``split``:
        :func:`split_handle_keys` of ``handle_keys``, made already."""
        doc = {
            "format": FINGERPRINT_FORMAT,
            "valid_from": self.valid_from,
            "valid_until": self.valid_until,
            "zone": self.zone,
            "zone_keys_dir": self.zone_keys_dir,
            "handle_dirs": (keys := split or split_handle_keys(self.handle_keys))[0],
            "handle_epochs": keys[1],
            "keys_digest": self.keys_digest,
            "keys_mark": self.keys_mark.to_text(),
            "source_sha256": self.source_sha256,
            "summary": dict(self.summary),
        }
        rest = json.dumps(doc, separators=(",", ":"), sort_keys=True)
        # The keys are sorted, and "digest" comes first: the text json.dumps gives with it.
        return lambda digest: f'{{"digest":{json.dumps(digest)},{rest[1:]}\n'

    @classmethod
    def read(cls, path: Path) -> Fingerprint | None:
        """The record at ``path``; None when missing or not a record (then: a full run)."""
        try:
            doc = json.loads(path.read_bytes())
            if doc["format"] != FINGERPRINT_FORMAT:
                return None
            return cls(
                digest=str(doc["digest"]),
                valid_from=int(doc["valid_from"]),
                valid_until=int(doc["valid_until"]),
                zone=str(doc["zone"]),
                zone_keys_dir=str(doc["zone_keys_dir"]),
                handle_keys=joined_handle_keys(doc["handle_dirs"], doc["handle_epochs"]),
                summary=dict(doc["summary"]),
                keys_digest=str(doc["keys_digest"]),
                keys_mark=Mark.from_text(doc["keys_mark"]),
                source_sha256=str(doc.get("source_sha256", "")),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, path: Path) -> None:
        """Write the record atomically.

        Raises:
            RenderError: it cannot be written.
        """
        atomic_write_bytes(path, self.to_text().encode(), error=RenderError)


def forget(path: Path) -> None:
    """Drop a record (a fingerprint or memo): a failed or unproven run, or one that
    leaves none, must not leave an old one standing."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise RenderError(f"cannot remove: {exc.strerror}", where=str(path)) from exc


def inputs_for(
    definition: Path,
    *,
    templates: Path,
    content_files: Iterable[Path],
    zone_keys_dir: str,
    handle_keys: Sequence[tuple[str, int]],
    outputs: Iterable[Path],
    options: str,
    definition_text: str | None = None,
    digests: DigestMemo | None = None,
) -> Inputs:
    """The :class:`Inputs` of a run (see the module docstring)."""
    return Inputs(
        definition=definition,
        templates=templates,
        content_files=tuple(content_files),
        zone_keys_dir=Path(zone_keys_dir),
        handle_keys=tuple(handle_keys),
        outputs=tuple(outputs),
        options=options,
        definition_text=definition_text,
        digests=digests,
    )


def fingerprint_inputs(
    ctx: RunContext,
    definition: Path,
    origin: str,
    zone_keys_dir: str,
    handle_keys: Sequence[tuple[str, int]],
    definition_text: str | None = None,
    tls_files: Sequence[str] = (),
) -> Inputs:
    """The :class:`Inputs` a run of ``definition`` (zone ``origin``) into ``ctx.out`` has
    (``tls_files``: the certificates and keys its TLSA records come from)."""
    zone_file, envelopes_file = output_paths(ctx.out, origin)
    return inputs_for(
        definition,
        templates=ctx.templates,
        content_files=(
            revocations_path_for(definition),
            log_path_for(definition),
            state_path_for(definition),
            *(Path(name) for name in tls_files),
        ),
        zone_keys_dir=zone_keys_dir,
        handle_keys=handle_keys,
        outputs=(zone_file, envelopes_file, ds_path(ctx.out, origin)),
        options=ctx.options,
        definition_text=definition_text,
        digests=ctx.digests,
    )
