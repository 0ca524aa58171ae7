"""The CLI's progress bars: drawn on a terminal once a run is long, with rich loaded
only then."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from alter_publish.cli import progress
from alter_publish.cli.progress import StageBars, progress_for
from alter_publish.parallel import NoProgress


def test_bars_are_drawn_for_each_stage_once_the_run_is_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(progress, "SHOW_AFTER_SECONDS", 0.0)
    out = io.StringIO()
    with StageBars(Console(file=out, force_terminal=True, width=80)) as bars:
        bars.start("dnssec", 10)
        bars.advance(4)
        bars.done()
    assert "dnssec" in out.getvalue()
    assert "10/10" in out.getvalue()


def test_json_or_no_terminal_draws_nothing() -> None:
    assert isinstance(progress_for(as_json=True), NoProgress)
