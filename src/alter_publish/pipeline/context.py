"""What one ``sign`` run is given, once: :class:`RunContext`, and where each zone starts.

Every stage of the pipeline takes the context instead of the same half-dozen
parameters; it also holds the run's memo of file digests (see
:mod:`alter_publish.pipeline.fingerprint`), so no module keeps state between runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from alter_publish.keys.store import KeyStore
from alter_publish.parallel import NoProgress, Progress
from alter_publish.pipeline.fingerprint import (
    DigestMemo,
    Fingerprint,
    fingerprint_path,
)
from alter_publish.pipeline.reports import ZoneResult


@dataclass(frozen=True, slots=True)
class RunContext:
    """One ``sign`` run: where it writes, the keys and templates, ``now`` and its options."""

    out: Path
    keys: KeyStore
    templates: Path
    now: int
    create_keys: bool = False
    verify: bool = True
    check: bool = False  # nothing is written: results say what would be
    jobs: int = 1
    incremental: bool = True
    progress: Progress = field(default_factory=NoProgress)
    #: Content digests remembered while this run goes on (never across runs).
    digests: DigestMemo = field(default_factory=dict, repr=False, compare=False)
    #: What besides the files decides the outputs (part of every fingerprint).
    options: str = field(init=False)

    def __post_init__(self) -> None:
        options = f"{self.out.resolve()} {self.templates.resolve()} verify={self.verify}"
        object.__setattr__(self, "options", options)


@dataclass(frozen=True, slots=True)
class ZoneStart:
    """A definition as the run starts on it: when, and the record of its last proven run
    (None: no usable record, so neither the unchanged nor the patch strategy applies)."""

    definition: Path
    started: float
    record: Fingerprint | None = None

    @classmethod
    def read(cls, ctx: RunContext, definition: Path) -> ZoneStart:
        """Start on ``definition``: read the record of its last proven run, if usable.

        Raises:
            KeyStoreError: a directory above the zone's keys is unsafe (``check_zone``).
        """
        started = time.perf_counter()
        out, keys = ctx.out, ctx.keys
        record = Fingerprint.read(fingerprint_path(out, definition)) if ctx.incremental else None
        if record is None or record.zone_keys_dir != str(keys.zones.directory(record.zone)):
            return cls(definition, started)
        keys.check_zone(record.zone)  # the strategies that follow may read no key
        return cls(definition, started, record)


class ProvenRun(Protocol):
    """One zone's run proven in memory (or with nothing to prove), to commit or not."""

    @property
    def warnings(self) -> tuple[str, ...]:
        """The definition's warnings."""

    @property
    def proven(self) -> bool:
        """True when its proof passed (or nothing needed one)."""

    def commit(self, ctx: RunContext, committed: bool) -> ZoneResult:
        """Write (when ``committed``: every zone proven) and report."""


class ZoneRun(Protocol):
    """One zone's run as a strategy took it, before the runs are proven."""

    #: Report order: unchanged zones, then patched ones, then full runs.
    rank: int

    @property
    def origin(self) -> str | None:
        """The zone run (None: nothing runs, so it cannot clash with another)."""

    def prove(self, ctx: RunContext) -> ProvenRun:
        """The run once planned and proven (itself when it already is)."""

    def discard(self) -> None:
        """Let go of what it holds for a commit that will not come (a patch's files
        being written); nothing once committed."""
