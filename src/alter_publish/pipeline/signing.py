"""``sign`` runs the whole pipeline for each zone: load the definition, load keys,
reuse or sign envelopes (appending new ones to the IdentityLog), render the zone
through the templates, parse it back, DNSSEC-sign it, prove it on a loopback
server (every handle resolved, validated to the zone's DS and verified), and
only then write the log, the serial state and the outputs.

Each zone goes to the first strategy that applies: :mod:`.unchanged` (nothing to do),
:mod:`.patch` (a few handles patched in), :mod:`.full` (the whole job).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path

from alter_publish.errors import UsageError
from alter_publish.fileio import exclusive
from alter_publish.interrupts import INTERRUPT_SIGNALS
from alter_publish.keys.store import KeyStore
from alter_publish.outputset import remove_retired, retired_generations
from alter_publish.parallel import NoProgress, Progress
from alter_publish.pipeline.clock import serial_warning
from alter_publish.pipeline.context import ProvenRun, RunContext, ZoneRun, ZoneStart
from alter_publish.pipeline.leftovers import sweep_leftovers
from alter_publish.pipeline.paths import default_templates_dir
from alter_publish.pipeline.reports import SignReport, ZoneResult
from alter_publish.pipeline.unchanged import unchanged
from alter_publish.threads import soon


def sign(
    zone_files: Sequence[Path],
    *,
    out: Path,
    keys: KeyStore,
    now: int,
    create_keys: bool = False,
    templates: Path | None = None,
    verify: bool = True,
    check: bool = False,
    jobs: int = 1,
    progress: Progress | None = None,
    incremental: bool = True,
) -> SignReport:
    """Sign, render and prove every zone; write outputs only if every proof passes.

    With ``check`` nothing is written, not even keys: each zone's ``written`` lists
    the files a real run would change (``SignReport.drift``). ``jobs`` processes sign
    and verify (the outputs are the same bytes for any ``jobs``); long stages report
    to ``progress``. When a few handles changed since the last proven run, only they
    are signed, proven and patched into its outputs (see :mod:`incremental`; the same
    bytes as a full run). ``incremental=False`` does the whole job whatever changed.

    Returns:
        The report; ``ok`` is False (and nothing was written) when a proof failed.

    Raises:
        DefinitionError: a zone definition is wrong.
        KeyStoreError: keys are missing or unusable.
        RenderError: templates, rendering or writing failed.
        ServeError: the loopback server could not start.
    """
    if check and create_keys:
        raise UsageError("--check changes nothing, so it cannot --create-keys")
    ctx = RunContext(
        out=out,
        keys=keys if check else dataclasses.replace(keys, sweep=True),
        templates=templates or default_templates_dir(),
        now=now,
        create_keys=create_keys,
        verify=verify,
        check=check,
        jobs=jobs,
        incremental=incremental,
        progress=progress or NoProgress(),
    )
    # One writer of an output directory at a time: each sweeps what interrupted runs
    # left there, which another run's files in progress would look like.
    with contextlib.nullcontext() if check else exclusive(out, "signing into it"):
        if not check:
            sweep_leftovers(out, zone_files)
        with contextlib.nullcontext() if check else _removing_retired(out):
            proven_runs, proven, zones = _run(ctx, zone_files)
    warnings = (
        *(warning for run in proven_runs for warning in run.warnings),
        *(warning for zone in zones if (warning := serial_warning(zone.zone, zone.serial, now))),
    )
    return SignReport(
        zones=zones,
        committed=proven and not check,
        warnings=warnings,
        check=check,
        proven=proven,
    )


@contextlib.contextmanager
def _removing_retired(out: Path) -> Iterator[None]:
    """Remove the output generations the last runs retired (found now: not those this
    run retires) while the block runs (the kernel's work, which lets go of the
    interpreter), and wait for it at the end."""
    retired = retired_generations(out)
    if not retired:
        yield
        return
    removed = soon(functools.partial(_remove_quietly, retired), "remove-retired")
    try:
        yield
    finally:
        removed()  # no thread outlives the run


def _remove_quietly(retired: list[Path]) -> list[Path]:
    """:func:`remove_retired` in a thread that leaves Ctrl-C and SIGTERM to the main one
    (a signal it took while workers start would be lost: see ``starting_workers``)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, INTERRUPT_SIGNALS)
    return remove_retired(retired)


def _run(
    ctx: RunContext, zone_files: Sequence[Path]
) -> tuple[list[ProvenRun], bool, tuple[ZoneResult, ...]]:
    """Each zone through its strategy, proven, and committed when every one was proven:
    (the proven runs, whether all were, their results).

    Raises:
        AlterError: see :func:`sign`.
    """
    runs: list[ZoneRun] = []
    try:
        for path in zone_files:
            runs.append(_strategy(ctx, path))
        runs.sort(key=lambda run: run.rank)
        _refuse_twice(runs)
        proven_runs = [run.prove(ctx) for run in runs]  # full runs plan and prove here
        proven = all(run.proven for run in proven_runs)
        return proven_runs, proven, tuple(run.commit(ctx, proven) for run in proven_runs)
    except BaseException:
        for run in runs:  # a patch's files may be being copied
            with contextlib.suppress(Exception):
                run.discard()
        raise


def _strategy(ctx: RunContext, definition: Path) -> ZoneRun:
    """The first strategy that can take the zone: unchanged, patched, or in full.

    Raises:
        DefinitionError: the definition is wrong (read in full).
        KeyStoreError: a changed handle's key is missing or unusable.
    """
    start = ZoneStart.read(ctx, definition)
    if found := unchanged(ctx, start):
        return found
    # Imported here: a run that changes nothing never loads the signing pipeline.
    from alter_publish.pipeline.full import full
    from alter_publish.pipeline.patch import patched

    return patched(ctx, start) or full(ctx, start)


def _refuse_twice(runs: Sequence[ZoneRun]) -> None:
    """Zones run in full, then patched ones: no zone twice.

    Raises:
        UsageError: two definitions name the same zone.
    """
    names = [run.origin for run in sorted(runs, key=lambda run: -run.rank) if run.origin]
    if len(set(names)) != len(names):
        raise UsageError(f"a zone is named twice: {', '.join(names)}")
