"""What a run reports: per-zone results, the sign and verify reports, why a zone changes."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from alter_publish.definition.logspec import LogSpec
from alter_publish.pipeline.paths import ds_path, output_paths

if TYPE_CHECKING:  # a type only: a run that changes nothing need not load the prover
    from alter_publish.verify.proof import ProofReport

#: Why a run changes a zone's outputs (``Change.reason``): per handle, then for the zone.
HANDLE_CHANGE_REASONS = (
    "new",  # published for the first time (or again, after it was taken out)
    "removed",  # no longer in the definition
    "key-rotated",  # the key store holds a newer epoch than the one published
    "key-changed",  # same epoch, another revocation commitment
    "epoch-revoked",  # a revocation of one of its epochs is queued
    "resolver-changed",
    "tags-changed",
    "lifetime-changed",
    "renewal-due",  # within renew_before of its expiry
    "signed-after-now",  # the published envelope is dated after now (a clock set back)
)


ZONE_CHANGE_REASONS = (
    "first-run",  # no state file yet
    "dnssec-resign-due",  # the RRSIGs are within dnssec.refresh of expiring
    "zone-keys-changed",  # DNSSEC keys created, or a rollover step taken
    "zone-records-changed",  # zone-level settings of the definition, or the templates
    "outputs-differ",  # outputs edited or missing: the inputs give other bytes
)


@dataclass(frozen=True, slots=True)
class Change:
    """Why a run changes a handle's records, or (``handle`` None) the zone as a whole."""

    handle: str | None
    reason: str  # one of HANDLE_CHANGE_REASONS or ZONE_CHANGE_REASONS
    detail: str = ""

    def to_text(self) -> str:
        """``~blake: key-rotated: epoch 1 -> 2`` (``zone: ...`` for zone-level changes)."""
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.handle or 'zone'}: {self.reason}{detail}"

    def to_mapping(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"handle": self.handle, "reason": self.reason, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class ZoneResult:
    """What ``sign`` did for one zone."""

    zone: str
    zone_file: Path
    envelopes_file: Path
    serial: int
    handles: int
    signed: int
    reused: int
    written: tuple[str, ...]
    proof: ProofReport | None
    timings: tuple[tuple[str, float], ...]
    ds_file: Path | None = None
    ds: tuple[str, ...] = ()
    dnssec: dict[str, Any] | None = None
    #: Nothing changed since the last proven run: nothing was signed, proven or written.
    unchanged: bool = False
    #: An incremental run: just these handles were signed, proven and patched in.
    patched: tuple[str, ...] | None = None
    #: What changed and why (with ``--check``: what a real run would change).
    changes: tuple[Change, ...] = ()
    #: The definition's ``log:`` (its witness policy: the ``sign`` command cosigns after).
    log: LogSpec = field(default_factory=LogSpec)

    def to_mapping(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "zone": self.zone,
            "changes": [change.to_mapping() for change in self.changes],
            "unchanged": self.unchanged,
            "patched": None if self.patched is None else list(self.patched),
            "zone_file": str(self.zone_file),
            "envelopes_file": str(self.envelopes_file),
            "serial": self.serial,
            "handles": self.handles,
            "signed": self.signed,
            "reused": self.reused,
            "written": list(self.written),
            "proof": self.proof.to_mapping() if self.proof else None,
            "ds_file": str(self.ds_file) if self.ds_file else None,
            "ds": list(self.ds),
            "dnssec": self.dnssec,
            "timings": {stage: round(seconds, 3) for stage, seconds in self.timings},
        }


def zone_result(
    out: Path,
    zone: str,
    *,
    serial: int,
    handles: int,
    signed: int,
    written: Sequence[str] = (),
    proof: ProofReport | None = None,
    timings: Sequence[tuple[str, float]] = (),
    ds: Sequence[str] = (),
    dnssec: dict[str, Any] | None = None,
    changes: tuple[Change, ...] = (),
    unchanged: bool = False,
    patched: tuple[str, ...] | None = None,
    log: LogSpec | None = None,
) -> ZoneResult:
    """The one place a :class:`ZoneResult` is made: paths under ``out``, ``reused`` and the
    changes explained (see :func:`explained`)."""
    zone_file, envelopes_file = output_paths(out, zone)
    return ZoneResult(
        zone=zone,
        zone_file=zone_file,
        envelopes_file=envelopes_file,
        serial=serial,
        handles=handles,
        signed=signed,
        reused=handles - signed,
        written=tuple(written),
        proof=proof,
        timings=tuple(timings),
        ds_file=ds_path(out, zone) if ds else None,
        ds=tuple(ds),
        dnssec=dnssec,
        unchanged=unchanged,
        patched=patched,
        changes=explained(changes, written),
        log=log or LogSpec(),
    )


@dataclass(frozen=True, slots=True)
class SignReport:
    """The outcome of one ``sign`` run; ``committed`` is False when the proof failed."""

    zones: tuple[ZoneResult, ...]
    committed: bool
    warnings: tuple[str, ...] = ()
    check: bool = False  # --check: ``written`` says what would be written
    proven: bool = True  # every proof passed (or was skipped)

    @property
    def drift(self) -> bool:
        """With ``check``: whether a real run would change any file."""
        return any(zone.written for zone in self.zones)

    @property
    def ok(self) -> bool:
        """True when every zone was proven (or the proof was skipped) and written
        (with ``check``: proven)."""
        return self.proven and (self.committed or self.check)

    def to_mapping(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "ok": self.ok,
            "committed": self.committed,
            "check": self.check,
            "drift": self.drift if self.check else None,
            "warnings": list(self.warnings),
            "zones": [z.to_mapping() for z in self.zones],
        }


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The outcome of ``verify`` over already-rendered zones."""

    proofs: tuple[ProofReport, ...]
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every handle of every zone passed."""
        return all(proof.ok for proof in self.proofs)

    def to_mapping(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "ok": self.ok,
            "warnings": list(self.warnings),
            "zones": [proof.to_mapping() for proof in self.proofs],
        }


@dataclass
class Stopwatch:
    """Stage timings for reports (durations only; never the wall clock)."""

    stages: list[tuple[str, float]] = field(default_factory=list)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.stages.append((name, time.perf_counter() - start))


def explained(changes: tuple[Change, ...], written: Sequence[str]) -> tuple[Change, ...]:
    """``changes``, or why ``written`` files change when no handle or zone change says."""
    if changes or not written:
        return changes
    return (Change(None, "outputs-differ", ", ".join(written)),)
