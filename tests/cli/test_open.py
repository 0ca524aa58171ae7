"""``open`` against the embedded server: dispatch only after verification, and no
failure ever shows the surface path (draft 7.1 and 7.3)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from alter_publish.errors import EXIT_NETWORK, EXIT_USAGE, EXIT_VERIFICATION
from tests.cli.workspace import ERROR_PREFIX, NOW, ZONE, Workspace, assert_unchanged

PRIVATE_SURFACE = "s3cr3t-surface"
BLAKE_RESOLVER = "https://mcp.example.com/blake"


@pytest.fixture
def served(workspace: Workspace) -> Iterator[str]:
    """The workspace's signed zone on the embedded server: its ``HOST:PORT``."""
    server = subprocess.Popen(
        [sys.executable, "-m", "alter_publish", "serve", str(workspace.zone_file)],
        cwd=workspace.root,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        yield line.split(" on ")[1].split(" ")[0]
    finally:
        server.terminate()
        server.wait(timeout=10)


def _stub_opener(directory: Path) -> tuple[dict[str, str], Path]:
    """A PATH whose ``xdg-open`` records its arguments (the platform opener ``--launch``
    runs), and the file it records into."""
    record = directory / "opened.txt"
    stub = directory / "bin" / "xdg-open"
    stub.parent.mkdir()
    stub.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> "{record}"\n', encoding="utf-8")
    stub.chmod(0o755)
    return {"PATH": f"{stub.parent}:/usr/bin:/bin"}, record


def _open(workspace: Workspace, served: str, uri: str, *extra: str) -> list[str]:
    return [
        "open",
        uri,
        "--server",
        served,
        "--substrate",
        ZONE,
        "--trust-anchor",
        str(workspace.root / "build" / f"{ZONE}.ds"),
        "--now",
        str(NOW),
        *extra,
    ]


def test_open_prints_the_verified_target(workspace: Workspace, served: str) -> None:
    args = _open(workspace, served, "alter:~blake/inbox?x=1#top")
    result = workspace.run(*args)
    assert result.returncode == 0, result.describe()
    assert result.stdout == f"{BLAKE_RESOLVER}/inbox?x=1#top\n"
    assert result.stderr == ""


def test_open_launch_hands_the_target_to_the_platform_opener(
    workspace: Workspace, served: str, tmp_path: Path
) -> None:
    env, record = _stub_opener(tmp_path)
    result = workspace.run(*_open(workspace, served, "alter:~blake/caf\u00e9"), "--launch", env=env)
    assert result.returncode == 0, result.describe()
    assert record.read_text(encoding="utf-8") == f"{BLAKE_RESOLVER}/caf%C3%A9\n"
    assert result.stdout == ""


FAILURES = [
    pytest.param(
        "alter:~blake/" + PRIVATE_SURFACE,
        ("--now", str(NOW + 400 * 86400)),
        EXIT_VERIFICATION,
        "bogus",
        id="expired-signatures",
    ),
    pytest.param(
        "alter:~nobody/" + PRIVATE_SURFACE, (), EXIT_VERIFICATION, "not-found", id="not-found"
    ),
    pytest.param(
        "alter:~drew/" + PRIVATE_SURFACE + "?q=" + PRIVATE_SURFACE,
        (),
        EXIT_VERIFICATION,
        "no-resolver",
        id="no-resolver",
    ),
    pytest.param(
        "alter:~blake/../" + PRIVATE_SURFACE, (), EXIT_VERIFICATION, "unsafe-path", id="dot-segment"
    ),
    pytest.param(
        "alter:~blake/%2e%2e/" + PRIVATE_SURFACE,
        (),
        EXIT_VERIFICATION,
        "unsafe-path",
        id="encoded-dot",
    ),
    pytest.param(
        "alter://~blake/" + PRIVATE_SURFACE, (), EXIT_USAGE, "directly by a ~handle", id="authority"
    ),
    pytest.param(
        "alter:~blake/" + PRIVATE_SURFACE + "%zz",
        (),
        EXIT_USAGE,
        "bad path segment 1",
        id="bad-escape",
    ),
    pytest.param(
        "alter:~blake?" + PRIVATE_SURFACE + " x", (), EXIT_USAGE, "bad query", id="bad-query"
    ),
    pytest.param(
        "alter:~bl\u00e4ke/" + PRIVATE_SURFACE, (), EXIT_USAGE, "bad handle", id="non-ascii-handle"
    ),
    pytest.param(  # the byte 0xC3 alone: argv that is not UTF-8 (it crashed, exit 70)
        "alter:~blake/" + PRIVATE_SURFACE + "\udcc3",
        (),
        EXIT_USAGE,
        "not valid UTF-8",
        id="not-utf8",
    ),
    pytest.param(
        "alter:~blake/" + PRIVATE_SURFACE + "\u202e" + PRIVATE_SURFACE,
        (),
        EXIT_USAGE,
        "bidirectional formatting character",
        id="bidi-override",
    ),
]


@pytest.mark.parametrize(("uri", "extra", "code", "says"), FAILURES)
def test_a_failure_dispatches_nothing_and_never_shows_the_surface(
    workspace: Workspace,
    served: str,
    tmp_path: Path,
    uri: str,
    extra: tuple[str, ...],
    code: int,
    says: str,
) -> None:
    env, record = _stub_opener(tmp_path)
    before = workspace.snapshot()
    result = workspace.run(*_open(workspace, served, uri), *extra, "--launch", env=env)
    assert result.returncode == code, result.describe()
    assert len(result.stderr_lines) == 1, result.describe()
    assert result.stderr_lines[0].startswith(ERROR_PREFIX)
    assert says in result.stderr
    assert PRIVATE_SURFACE not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr
    assert not record.exists(), "the opener ran"
    assert_unchanged(before, workspace.snapshot())


def test_a_wrong_trust_anchor_is_bogus_and_dispatches_nothing(
    workspace: Workspace, served: str, tmp_path: Path
) -> None:
    env, record = _stub_opener(tmp_path)
    ds = (workspace.root / "build" / f"{ZONE}.ds").read_text(encoding="utf-8").strip()
    wrong = tmp_path / "wrong.ds"
    wrong.write_text(ds[:-1] + ("0" if ds[-1] != "0" else "1") + "\n", encoding="utf-8")
    args = _open(workspace, served, f"alter:~blake/{PRIVATE_SURFACE}")
    args[args.index("--trust-anchor") + 1] = str(wrong)
    result = workspace.run(*args, "--launch", env=env)
    assert result.returncode == EXIT_VERIFICATION, result.describe()
    assert "bogus" in result.stderr
    assert PRIVATE_SURFACE not in result.stderr
    assert not record.exists()


def test_an_unreachable_server_names_the_owner_only(workspace: Workspace, tmp_path: Path) -> None:
    env, record = _stub_opener(tmp_path)
    args = _open(workspace, "127.0.0.1:9", f"alter:~blake/{PRIVATE_SURFACE}?{PRIVATE_SURFACE}")
    result = workspace.run(*args, "--timeout", "0.2", "--launch", env=env)
    assert result.returncode == EXIT_NETWORK, result.describe()
    assert "_alter.blake.example.com." in result.stderr
    assert PRIVATE_SURFACE not in result.stderr
    assert not record.exists()


def test_options_after_the_double_dash_are_the_uri_s_not_open_s(
    workspace: Workspace, served: str, tmp_path: Path
) -> None:
    # The registered handlers run `open --launch -- URL`: a URL that smuggles in words
    # (a browser passing a stray quote) must not become options such as --trust-anchor.
    env, record = _stub_opener(tmp_path)
    uri = f"alter:~blake/{PRIVATE_SURFACE}"
    args = _open(workspace, served, uri)
    args.remove(uri)
    result = workspace.run(*args, "--launch", "--", uri, "--server", "127.0.0.1:9", env=env)
    assert result.returncode == EXIT_USAGE, result.describe()
    assert not record.exists()
