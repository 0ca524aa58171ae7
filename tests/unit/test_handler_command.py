"""The command a click runs: the URL after ``--``, and nothing xdg-open would mangle."""

from __future__ import annotations

from pathlib import Path

import pytest

from alter_publish.errors import UsageError
from alter_publish.publish.handlerfiles import exec_line, reg_file
from alter_publish.publish.handlers import HandlerOptions, handler_argv, program_argv


def test_the_url_comes_after_a_double_dash_on_the_exec_line() -> None:
    # Without `--` a URL a browser passes with stray quotes or spaces could add options.
    argv = ["/usr/bin/alter-publish", "open", "--launch", "--timeout", "2"]
    assert exec_line(argv) == "/usr/bin/alter-publish open --launch --timeout 2 -- %u"


def test_the_registry_command_puts_the_url_after_a_double_dash() -> None:
    text = reg_file("C:\\alter-publish.exe").decode("utf-16")
    assert '\\"C:\\\\alter-publish.exe\\" open --launch -- \\"%1\\""' in text


def test_a_program_path_ending_in_a_backslash_is_refused() -> None:
    # "C:\x\" would end in \", which Windows reads as an escaped quote.
    with pytest.raises(UsageError, match="is not a program path"):
        reg_file("C:\\Tools\\")


def test_baked_options_are_absolute_and_after_open_launch(tmp_path: Path) -> None:
    anchor = tmp_path / "root.ds"
    options = HandlerOptions(substrate="example.com", trust_anchor=anchor, timeout=2.0)
    argv = handler_argv(["/usr/bin/alter-publish"], options)
    assert argv == [
        "/usr/bin/alter-publish",
        "open",
        "--launch",
        "--substrate",
        "example.com",
        "--trust-anchor",
        str(anchor.absolute()),
        "--timeout",
        "2",
    ]


@pytest.mark.parametrize("path", ["/tmp/my anchors/root.ds", "/tmp/it's/root.ds", '/tmp/"q"'])
def test_a_baked_path_xdg_open_would_split_is_refused(path: str) -> None:
    with pytest.raises(UsageError, match="white space or a quote"):
        handler_argv(["/usr/bin/alter-publish"], HandlerOptions(trust_anchor=Path(path)))


def test_the_program_is_the_script_by_absolute_path_or_python_m() -> None:
    assert program_argv("/opt/bin/alter-publish", "/usr/bin/python3") == ["/opt/bin/alter-publish"]
    assert program_argv("/x/alter_publish/__main__.py", "/usr/bin/python3") == [
        "/usr/bin/python3",
        "-m",
        "alter_publish",
    ]
