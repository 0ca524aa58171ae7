"""Progress bars for the CLI (rich, on stderr): part of the command layer, like cli.py.

The library reports stages through :class:`alter_publish.parallel.Progress`; this
draws them. Bars appear only on an interactive terminal, never with ``--json``, and
only once a run has taken :data:`SHOW_AFTER_SECONDS`: short runs stay quiet.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING

from alter_publish.parallel import NoProgress

if TYPE_CHECKING:  # rich is imported only when bars are drawn (20 ms of every start)
    from rich.console import Console
    from rich.progress import TaskID

#: Runs shorter than this show no bars.
SHOW_AFTER_SECONDS = 2.0


class StageBars:
    """One bar per stage, shown once the run has lasted ``SHOW_AFTER_SECONDS``."""

    def __init__(self, console: Console) -> None:
        """Bars drawn on ``console`` (stderr)."""
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._started = time.monotonic()
        self._bars = Progress(
            TextColumn("{task.description:<10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        )
        self._visible = False
        self._task: TaskID | None = None

    def __enter__(self) -> StageBars:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._visible:
            self._bars.stop()

    def start(self, stage: str, total: int) -> None:
        """A new bar for ``stage``."""
        self._task = self._bars.add_task(stage, total=total)
        self._maybe_show()

    def advance(self, count: int) -> None:
        """Move the current bar."""
        if self._task is not None:
            self._bars.advance(self._task, count)
        self._maybe_show()

    def done(self) -> None:
        """Fill the current bar."""
        if self._task is not None:
            task = self._bars.tasks[-1]
            self._bars.update(self._task, completed=task.total)
        self._task = None

    def _maybe_show(self) -> None:
        if not self._visible and time.monotonic() - self._started >= SHOW_AFTER_SECONDS:
            self._bars.start()
            self._visible = True


def progress_for(*, as_json: bool) -> StageBars | NoProgress:
    """Bars on an interactive stderr without ``--json``; else nothing."""
    if as_json or not sys.stderr.isatty():
        return NoProgress()
    from rich.console import Console

    return StageBars(Console(stderr=True))


__all__ = ["SHOW_AFTER_SECONDS", "StageBars", "progress_for"]
