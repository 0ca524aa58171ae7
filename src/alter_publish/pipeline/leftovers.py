"""What interrupted runs left behind, swept before a run writes (its own module: every
run, one that changes nothing too, sweeps; none needs the writers of :mod:`.commit`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from alter_publish.definition.state import state_path_for
from alter_publish.errors import RenderError
from alter_publish.fileio import sweep_temp_files
from alter_publish.format.identitylog import log_path_for
from alter_publish.keys.lifecycle import revocations_path_for
from alter_publish.outputset import sweep_links, sweep_stores
from alter_publish.pipeline.paths import LOG_DIR, checkpoints_path_for

#: Files a run owns in the output directory, by their ending (the zone file, envelopes,
#: DS file, memo and fingerprint, a BIND include export).
_OUTPUT_ENDINGS = (
    ".zone",
    ".envelopes.json",
    ".ds",
    ".memo.json",
    ".fingerprint.json",
    ".alter.include",
)


def sweep_leftovers(out: Path, definitions: Sequence[Path]) -> list[Path]:
    """Remove what interrupted runs left: temporary files beside the files a run owns
    (in the output directory and its zones' log tiles; beside each definition: it, its
    state, log, checkpoint history and revocations) and generations of output sets never
    switched to.

    Returns:
        What was removed.

    Raises:
        RenderError: a directory cannot be listed or a leftover removed.
    """
    owned: dict[Path, set[str]] = {}
    for definition in definitions:
        names = owned.setdefault(definition.parent, set())
        for path in (definition, state_path_for(definition), log_path_for(definition)):
            names.add(path.name)
        names.add(revocations_path_for(definition).name)
        names.add(checkpoints_path_for(definition).name)
    try:
        removed = sweep_temp_files(out, lambda name: name.endswith(_OUTPUT_ENDINGS))
        removed += sweep_stores(out)
        removed += sweep_links(out, lambda name: name.endswith(_OUTPUT_ENDINGS))
        for directory, names in owned.items():
            removed += sweep_temp_files(directory, names.__contains__)
        for log in out.glob(f"*/{LOG_DIR}"):  # tiles and checkpoints: every name is ours
            for folder, _, files in os.walk(log):
                removed += sweep_temp_files(Path(folder), lambda _: True, files)
    except OSError as exc:
        raise RenderError(
            f"cannot remove what an interrupted run left: {exc.strerror}",
            where=str(exc.filename or out),
        ) from exc
    return removed
