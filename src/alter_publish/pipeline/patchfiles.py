"""A patch's new files (:mod:`alter_publish.pipeline.patch`): its zone file and envelopes
document as edits of the last run's, copied into the next generation of the output set
while the rest of the patch is made, and the new zone's SHA-256 made beside."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from alter_publish.definition.state import zone_sha256_soon
from alter_publish.fileio import Chunk
from alter_publish.mapped import Bytes, MappedFile
from alter_publish.pipeline.commit import Chunks, Started, start_writes
from alter_publish.pipeline.context import RunContext
from alter_publish.pipeline.incremental import Edit, apply_edits
from alter_publish.pipeline.patchbase import PatchBase
from alter_publish.pipeline.patchtext import envelope_edits_of
from alter_publish.pipeline.render import SignedHandle

__all__ = ["PatchFiles", "chunks_of"]


@dataclass(frozen=True, slots=True)
class PatchFiles:
    """A patch's new zone file and envelopes document (None: unchanged) as edits of the
    last run's, being copied into the next generation (``started``; None: a check), and
    the new zone's SHA-256 being made (``zone_sha256`` waits for it), all beside the rest
    of the patch (the memo's offsets, the record made ready)."""

    zone: tuple[Chunk, ...] | None
    envelopes: tuple[Chunk, ...] | None
    envelope_edits: list[Edit]
    added_lines: dict[int, Edit]
    started: Started | None
    zone_sha256: Callable[[], str]

    @classmethod
    def start(
        cls,
        ctx: RunContext,
        base: PatchBase,
        signed: Sequence[SignedHandle],
        olds: tuple[Bytes, Bytes],
        serial: tuple[int, int],
        zone_edits: Sequence[Edit],
    ) -> PatchFiles:
        """The files of ``base``'s patch (``signed``: its handles signed), from the last
        run's zone file and envelopes document (``olds``), the ``zone_edits`` and the
        new serial (``serial``, and where the old one's digits end in the envelopes).

        Raises:
            RenderError: the output set cannot be prepared.
        """
        old_zone, old_envelopes = olds
        envelope_edits, added_lines = envelope_edits_of(base, signed, serial, old_envelopes)
        zone = tuple(apply_edits(_source(old_zone), zone_edits)) if zone_edits else None
        envelopes = (
            tuple(apply_edits(_source(old_envelopes), envelope_edits)) if envelope_edits else None
        )
        started = None
        if not ctx.check:
            files = (chunks_of(zone), chunks_of(envelopes))
            started = start_writes(ctx.out, base.spec.origin, *files)
        # 0.9 s at 1,000,000 handles, beside what follows.
        digest = zone_sha256_soon((memoryview(old_zone),) if zone is None else zone)
        return cls(zone, envelopes, envelope_edits, added_lines, started, digest)

    def discard(self) -> None:
        """Wait for the digest's thread and drop the copies (the patch stops)."""
        try:
            with contextlib.suppress(Exception):
                self.zone_sha256()
        finally:
            if self.started is not None:
                self.started.discard()


def chunks_of(chunks: tuple[Chunk, ...] | None) -> Chunks | None:
    """A file's new bytes as the commit takes them (None: kept)."""
    return None if chunks is None else Chunks(chunks)


def _source(old: Bytes) -> MappedFile | memoryview:
    """The last outputs' bytes to cut: mapped (spans the kernel copies), or in memory."""
    return old if isinstance(old, MappedFile) else memoryview(old)
