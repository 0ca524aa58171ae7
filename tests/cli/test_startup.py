"""A command loads what it runs, not the whole tool: ``sign`` when nothing changed does
not load the signing pipeline, the template engine or the prover, and one command's
``--help`` does not load the others' modules (each costs start-up time on every run)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.workspace import CLI_TIMEOUT_SECONDS, Workspace, simulated

#: Runs the CLI, then writes the modules it loaded to the file named by argv[1].
_RUN_AND_LIST = """\
import atexit, json, sys
listing = sys.argv.pop(1)
atexit.register(lambda: open(listing, "w").write(json.dumps(sorted(sys.modules))))
from alter_publish.cli import main
main()
"""


def _modules(workspace: Workspace, listing: Path, *args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST, str(listing), *args],
        cwd=workspace.root,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(listing.read_text()))


def test_a_sign_that_changes_nothing_loads_no_signing_pipeline(
    workspace: Workspace, tmp_path: Path
) -> None:
    first = workspace.run("sign", "--json", *simulated())
    assert first.returncode == 0, first.describe()
    loaded = _modules(workspace, tmp_path / "modules.json", "sign", "--json", *simulated())
    assert "alter_publish.pipeline.unchanged" in loaded
    heavy = {
        "alter_publish.pipeline.patch",
        "alter_publish.pipeline.full",
        "alter_publish.verify.proof",
        "alter_publish.publish.witnessing",
        "jinja2",
        "rich",  # progress bars: never with --json
        "pydantic",  # typer 0.29 validates every option with it (pyproject.toml pins <0.29)
        "cryptography.x509",  # TLSA records' certificates only
    }
    assert not heavy & loaded, sorted(heavy & loaded)


def test_one_commands_help_loads_no_other_commands_module(
    workspace: Workspace, tmp_path: Path
) -> None:
    loaded = _modules(workspace, tmp_path / "modules.json", "sign", "--help")
    assert "alter_publish.cli.sign" in loaded
    others = {"alter_publish.cli.publish", "alter_publish.cli.open_uri", "alter_publish.cli.log"}
    assert not others & loaded, sorted(others & loaded)


def test_serve_loads_no_resolver_definition_model_or_yaml(
    workspace: Workspace, tmp_path: Path
) -> None:
    # ``serve`` of a big zone answers once its file is read: what it imports besides is
    # start-up time (the resolver, the definition's model and YAML: 0.1 s or more).
    listing = tmp_path / "modules.json"
    argv = [sys.executable, "-c", _RUN_AND_LIST, str(listing), "serve", str(workspace.zone_file)]
    server = subprocess.Popen(
        argv, cwd=workspace.root, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()  # "serving example.com. on 127.0.0.1:PORT ..."
        assert line.startswith("serving "), line + server.stderr.read()
    finally:
        # SIGTERM: a SIGINT may be ignored here (a CI job in the background), and then in
        # the server too. serve stops on either, as after Ctrl-C (its exit handlers run).
        server.send_signal(signal.SIGTERM)
        try:
            server.communicate(timeout=CLI_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()
            raise
    loaded = set(json.loads(listing.read_text()))
    assert {"alter_publish.cli.serve", "alter_publish.pipeline.serving"} <= loaded
    heavy = {
        "alter_publish.cli.resolve",
        "alter_publish.verify.resolve",
        "alter_publish.verify.proof",
        "alter_publish.definition.model",
        "yaml",
    }
    assert not heavy & loaded, sorted(heavy & loaded)


def test_help_before_a_command_is_the_whole_tools_help(workspace: Workspace) -> None:
    # The help asked for before a command name lists every command, as ``--help`` does.
    whole = workspace.run("--help")
    assert whole.returncode == 0, whole.describe()
    for args in (("--help", "sign"), ("-h", "log")):
        first = workspace.run(*args)
        assert first.returncode == 0, first.describe()
        assert first.stdout == whole.stdout


def test_debug_alone_shows_the_help_as_no_arguments_do(workspace: Workspace) -> None:
    bare, debug = workspace.run(), workspace.run("--debug")
    assert bare.returncode == debug.returncode == 0, debug.describe()
    assert debug.stdout == bare.stdout
    assert "Traceback" not in debug.stderr


#: Runs the CLI with an exit handler and an object whose teardown leaves a mark.
_RUN_AND_MARK = """\
import atexit, pathlib, sys
marks = pathlib.Path(sys.argv.pop(1))
atexit.register(lambda: (marks / "atexit").write_text("ran"))


class Torn:
    def __del__(self):
        (marks / "teardown").write_text("ran")


kept = Torn()
from alter_publish.cli import main
main()
"""


@pytest.mark.parametrize(("args", "code"), [(["--version"], 0), (["sign", "--bogus"], 2)])
def test_the_process_ends_without_tearing_its_objects_down(
    tmp_path: Path, args: list[str], code: int
) -> None:
    # Once the outcome is decided the exit handlers run and the output is flushed, but
    # not the interpreter's teardown of every object a run made (0.1-0.2 s of a patch).
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_MARK, str(tmp_path), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == code, done.stderr
    assert (done.stdout if code == 0 else done.stderr).startswith("alter-publish")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["atexit"]
