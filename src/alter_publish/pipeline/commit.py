"""Writing a run: log first, then serial state, then outputs (a crash never leaves outputs
the log lacks), for a full run and a patched one alike.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Iterator
from pathlib import Path

from alter_publish.definition.state import state_path_for
from alter_publish.errors import (
    RenderError,
)
from alter_publish.fileio import (
    atomic_write_bytes,
    atomic_write_chunks,
    atomic_write_text,
    chunks_differ,
    content_differs,
    text_differs,
)
from alter_publish.format.identitylog import (
    append_entries,
    append_lines,
)
from alter_publish.keys.store import KeyStore
from alter_publish.pipeline.build import ZonePlan
from alter_publish.pipeline.incremental import (
    memo_path,
)
from alter_publish.pipeline.memory import _base_digest, _valid_span, _write_fingerprint
from alter_publish.pipeline.patch import _Patch
from alter_publish.pipeline.paths import output_paths
from alter_publish.pipeline.render import (
    envelopes_document,
)


def _commit(
    plan: ZonePlan, zone_file: Path, envelopes_file: Path, ds_file: Path, *, dry_run: bool = False
) -> tuple[list[str], list[int]]:
    """Log first, then serial state, then outputs: a crash never leaves outputs the log lacks.

    With ``dry_run`` nothing is written: the result lists what would be.

    Returns:
        What was written, and where each part of the envelopes document starts.
    """
    write = content_differs if dry_run else atomic_write_bytes
    write_text = text_differs if dry_run else atomic_write_text
    written: list[str] = []
    if plan.new_entries:
        if not dry_run:
            append_entries(plan.log, plan.new_entries)
        written.append(str(plan.log.path))
    state_path = state_path_for(plan.spec.path)
    if write(state_path, plan.state.to_text().encode()):
        written.append(str(state_path))
    if write_text(zone_file, plan.zone_text):
        written.append(str(zone_file))
    envelopes = _Measured(envelopes_document(plan.spec, plan.signed, plan.state.serial))
    if write_text(envelopes_file, envelopes):
        written.append(str(envelopes_file))
    if plan.signed_zone is not None:
        if write(ds_file, plan.signed_zone.ds_text.encode("ascii")):
            written.append(str(ds_file))
    elif ds_file.exists() and dry_run:
        written.append(f"{ds_file} (would be removed: the zone is unsigned)")
    elif ds_file.exists():
        # A DS left at the registrar for an unsigned zone makes it bogus: do not offer one.
        try:
            ds_file.unlink()
        except OSError as exc:
            raise RenderError(
                f"cannot remove stale DS file: {exc.strerror}", where=str(ds_file)
            ) from exc
        written.append(f"{ds_file} (removed: the zone is unsigned)")
    return written, envelopes.starts


class _Measured:
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


def _commit_patch(
    patch: _Patch,
    out: Path,
    keys: KeyStore,
    templates: Path,
    options: str,
    *,
    dry_run: bool,
) -> list[str]:
    """Write a patch as :func:`_commit` writes a plan (log, state, outputs), then the
    fingerprint and memo of the run it makes."""
    spec = patch.spec
    zone_file, envelopes_file = output_paths(out, spec.origin)
    write = content_differs if dry_run else atomic_write_bytes
    write_chunks = (
        chunks_differ if dry_run else functools.partial(atomic_write_chunks, compare=False)
    )
    written: list[str] = []
    if patch.new_entries:
        if not dry_run:
            append_lines(patch.log_path, patch.raw_log, patch.new_entries)
        written.append(str(patch.log_path))
    state_path = state_path_for(spec.path)
    if write(state_path, patch.state.to_text().encode()):
        written.append(str(state_path))
    if patch.zone is not None and write_chunks(zone_file, patch.zone):
        written.append(str(zone_file))
    if patch.envelopes is not None and write_chunks(envelopes_file, patch.envelopes):
        written.append(str(envelopes_file))
    if dry_run:
        return written
    record = patch.record
    # The span of the envelopes patched in, within the last run's (a little short,
    # never long: a later run at worst goes in full).
    valid_from, valid_until = _valid_span(patch.signed, patch.state.signatures, spec)
    span = (max(record.valid_from, valid_from), min(record.valid_until, valid_until))
    summary = {**record.summary, "serial": patch.state.serial}
    _write_fingerprint(
        spec,
        patch.entries.text,
        out,
        keys,
        templates,
        options,
        patch.handle_keys,
        patch.handle_lines,
        span,
        summary,
    )
    base = _base_digest(spec.path, spec.origin, out, keys, templates, options, patch.entries)
    dataclasses.replace(patch.memo, base=base).write(memo_path(out, spec.path))
    return written
