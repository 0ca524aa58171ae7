"""Help reads well: whole one-line summaries, plain metavars and ``-h`` on every command."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from alter_publish.cli import cli_command, main
from alter_publish.errors import EXIT_OK

#: The widest a summary may be and still fit on one line of an 80-column listing.
SUMMARY_MAX_CHARS = 80 - 2 - len("verify-record") - 2
PROGRAM = "alter-publish"


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, subcommand in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(subcommand, (*path, name))


COMMANDS = [
    pytest.param(path, command, id=" ".join(path) or PROGRAM)
    for path, command in _commands(cli_command())
]


@pytest.mark.parametrize(("path", "command"), COMMANDS)
def test_summary_is_a_whole_sentence_on_one_line(path: tuple[str, ...], command: Any) -> None:
    summary = command.get_short_help_str(limit=45)

    assert summary.endswith("."), summary
    assert not summary.endswith("..."), summary
    assert "\n" not in summary
    assert len(summary) <= SUMMARY_MAX_CHARS, summary


@pytest.mark.parametrize(("path", "command"), COMMANDS)
def test_metavars_are_plain(path: tuple[str, ...], command: Any) -> None:
    ctx = command.context_class(command, info_name=" ".join((PROGRAM, *path)))

    for param in command.params:
        record = param.get_help_record(ctx)
        if record is None:
            continue
        shown = record[0]
        for bad in ("[", "<", "list"):
            assert bad not in shown, f"{param.name}: {shown!r}"
        if not getattr(param, "is_flag", False):
            assert param.metavar, param.name
            assert param.metavar.upper() == param.metavar or "|" in param.metavar
    usage = " ".join(command.collect_usage_pieces(ctx))
    assert "<" not in usage, usage
    assert "list" not in usage, usage
    assert not re.search(r"[\[{][a-z_]+[\]}]", usage), usage  # a parameter's own name


@pytest.mark.parametrize(("path", "command"), COMMANDS)
def test_dash_h_prints_the_help_of_each_command(
    path: tuple[str, ...], command: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main([*path, "-h"])

    out = capsys.readouterr().out
    assert info.value.code == EXIT_OK
    assert out.startswith(f"Usage: {' '.join((PROGRAM, *path))} ")
    assert "-h, --help" in out


@pytest.mark.parametrize(
    ("path", "command"), [param for param in COMMANDS if getattr(param.values[1], "commands", None)]
)
def test_listing_shows_each_summary_whole_on_one_line(
    path: tuple[str, ...],
    command: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "80")

    with pytest.raises(SystemExit):
        main([*path, "--help"])

    lines = capsys.readouterr().out.splitlines()
    for name, subcommand in command.commands.items():
        summary = subcommand.get_short_help_str()
        assert any(line.split() == [name, *summary.split()] for line in lines), (name, lines)
