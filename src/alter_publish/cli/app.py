"""The ``alter-publish`` app: its command tree, and the one place errors become exit codes.

Every error becomes one stderr line and a documented exit code (README, "Exit
codes"); ``--debug`` re-raises instead, for a traceback. Each command lives in the
module of its topic and is listed here, in the order ``--help`` shows it.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Annotated, Any, Final, NoReturn

import typer

from alter_publish.cli.output import FailureError
from alter_publish.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    AlterError,
    DispatchError,
    VerificationError,
)
from alter_publish.version import __version__

#: ``-h`` as well as ``--help``, on every command.
HELP_SETTINGS: Final = {"help_option_names": ["-h", "--help"]}

#: Every command: (its group, or "" for the top level; its name; the ``cli`` module and
#: function behind it), in the order ``--help`` lists them. A run imports only the
#: modules of the command it runs (each pulls in the library it calls): ``sign`` starts
#: without loading what ``open`` or ``push`` need.
COMMANDS: Final = (
    ("", "sign", "sign", "sign"),
    ("", "verify", "sign", "verify"),
    ("", "resolve", "resolve", "resolve"),
    ("", "verify-record", "resolve", "verify_record_command"),
    ("", "open", "open_uri", "open_command"),
    ("handler", "install", "handler", "install"),
    ("handler", "uninstall", "handler", "uninstall"),
    ("handler", "status", "handler", "status"),
    ("handler", "files", "handler", "files"),
    ("", "serve", "serve", "serve"),
    ("", "keygen", "handles", "keygen"),
    ("", "init", "init", "init"),
    ("dnssec", "keygen", "dnssec", "dnssec_keygen"),
    ("dnssec", "ds", "dnssec", "dnssec_ds"),
    ("dnssec", "status", "dnssec", "dnssec_status"),
    ("dnssec", "rollover", "dnssec", "dnssec_rollover"),
    ("dnssec", "step", "dnssec", "dnssec_step"),
    ("", "rotate", "handles", "rotate"),
    ("", "revoke", "handles", "revoke"),
    ("", "plan", "publish", "plan"),
    ("", "push", "publish", "push"),
    ("", "export", "publish", "export_command"),
    ("", "check", "world", "check"),
    ("keys", "status", "handles", "keys_status"),
    ("log", "verify", "log", "log_verify"),
    ("log", "consistency", "log", "log_consistency"),
    ("log", "witness", "witness", "log_witness"),
    ("log", "witness-keygen", "witness", "log_witness_keygen"),
    ("log", "cosign", "witness", "log_cosign"),
    ("log", "prove", "log", "log_prove"),
    ("log", "rotate-key", "log", "log_rotate_key"),
)

#: The command groups: name and help.
GROUPS: Final = {
    "handler": "The alter: URI handler: xdg registration, and other platforms' files.",
    "dnssec": "DNSSEC zone keys (Ed25519 KSK and ZSK) and the DS for the parent zone.",
    "keys": "Handle and zone key status across zones.",
    "log": "Audit a zone's published transparency log (C2SP checkpoints and tiles).",
}


def _app(only: str | None = None) -> typer.Typer:
    """The app with every command, or (``only``: a top-level command or group's name)
    with just that one's commands: the same command as the whole app has."""
    app = typer.Typer(
        name="alter-publish",
        context_settings=HELP_SETTINGS,
        help="Sign, render and prove alter1 identity records (_alter TXT) for the zones you own.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.callback()(_root)
    groups: dict[str, typer.Typer] = {}
    for group, name, module, function in COMMANDS:
        if only is not None and only != (group or name):
            continue
        target = app
        if group:
            if group not in groups:
                groups[group] = typer.Typer(
                    name=group,
                    context_settings=HELP_SETTINGS,
                    help=GROUPS[group],
                    no_args_is_help=True,
                )
                app.add_typer(groups[group])
            target = groups[group]
        callback = getattr(importlib.import_module(f"alter_publish.cli.{module}"), function)
        target.command(name)(callback)
    return app


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"alter-publish {__version__}")
        raise typer.Exit


def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_callback, is_eager=True, help="Print the version."
        ),
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    """alter-publish: signed _alter records for the zones you own, proven before publishing."""


MAX_ERROR_LINES = 20


def _error_lines(error: AlterError) -> list[str]:
    if isinstance(error, VerificationError | DispatchError):
        where = f"{error.where}: " if error.where else ""
        return [f"{where}{error.category}: {error.what}"]
    if len(error.reasons) <= 1:
        return [str(error)]
    lines = list(error.reasons[:MAX_ERROR_LINES])
    if len(error.reasons) > MAX_ERROR_LINES:
        lines.append(f"... and {len(error.reasons) - MAX_ERROR_LINES} more problems")
    return lines


#: Each command's line in its group's listing: a whole sentence that fits on one line
#: (typer would cut the docstring's first sentence to the terminal's width).
SUMMARIES: Final = {
    (): "Sign, prove and publish alter1 records for your zones.",
    ("sign",): "Sign, prove on loopback, then write the zones' outputs.",
    ("verify",): "Prove written outputs, on loopback or at a name server.",
    ("resolve",): "Resolve and verify a handle at any name server.",
    ("verify-record",): "Check one record by hand, as pasted from dig.",
    ("open",): "Verify an alter: URI from the root, then dispatch it.",
    ("handler",): "Register the alter: URI handler, or write its files.",
    ("handler", "install"): "Make open --launch the desktop's alter: handler.",
    ("handler", "uninstall"): "Remove the desktop's alter: handler.",
    ("handler", "status"): "Show the alter: handler and the desktop's default.",
    ("handler", "files"): "Write macOS, Windows, Android or iOS handler files.",
    ("serve",): "Serve zone files from the embedded name server.",
    ("keygen",): "Create a handle's first key and revocation secret.",
    ("init",): "Scaffold a workspace: a definition, templates, keys/.",
    ("rotate",): "Make a handle's next key epoch, for sign to publish.",
    ("revoke",): "Queue the revocation of a past key epoch.",
    ("plan",): "List the record changes a push would make.",
    ("push",): "Update a primary by RFC 2136 with TSIG, then prove it.",
    ("export",): "Export the signed records for BIND, octoDNS or HTTPS.",
    ("check",): "Check the published zone at its parent and every server.",
    ("keys",): "Handle and zone key status across zones.",
    ("keys", "status"): "Show key epochs and states, and what is due next.",
    ("log",): "Audit a zone's published transparency log.",
    ("log", "verify"): "Recompute a log's tiles and root; check its checkpoint.",
    ("log", "consistency"): "Check that a newer checkpoint extends an older one.",
    ("log", "prove"): "Print an envelope's verified inclusion proof (tlog-proof).",
    ("log", "witness"): "Run a local witness (tlog-witness add-checkpoint).",
    ("log", "witness-keygen"): "Make a witness key; print its verifier key.",
    ("log", "cosign"): "Collect witness cosignatures into a checkpoint.",
    ("log", "rotate-key"): "Make a new log key; the next checkpoint is signed by both.",
    ("dnssec",): "Zone DNSSEC keys, rollovers and the DS for the parent.",
    ("dnssec", "keygen"): "Create a zone's KSK and ZSK and print the DS.",
    ("dnssec", "ds"): "Print the zone's DNSSEC keys and the DS records.",
    ("dnssec", "status"): "Show the zone's DNSSEC keys and the rollover step.",
    ("dnssec", "rollover"): "Start a ZSK or KSK rollover (RFC 7583).",
    ("dnssec", "step"): "Take the running rollover's next step.",
}

#: The metavar of every argument and option that takes a value, by parameter name, the
#: same in every command (another name shows as itself in capitals).
METAVARS: Final = {
    "zones": "ZONE",
    "zone": "ZONE",
    "substrate": "ZONE",
    "zone_files": "ZONEFILE",
    "handle": "HANDLE",
    "reference": "URI|HANDLE",
    "uri": "URI",
    "text": "RECORD",
    "owner": "NAME",
    "role": "zsk|ksk",
    "out": "DIR",
    "keys": "DIR",
    "templates": "DIR",
    "zones_dir": "DIR",
    "directory": "DIR",
    "now": "UNIX",
    "jobs": "N",
    "epoch": "N",
    "server": "HOST:PORT",
    "resolver": "HOST:PORT",
    "ns": "HOST:PORT",
    "root_hints": "FILE",
    "address": "ADDRESS",
    "port": "PORT",
    "tcp_max_connections": "N",
    "tcp_io_timeout": "MS",
    "tcp_idle_timeout": "SECONDS",
    "timeout": "SECONDS",
    "wait": "SECONDS",
    "ttl": "SECONDS",
    "max_delete": "SHARE",
    "fmt": "FORMAT",
    "trust_anchor": "FILE",
    "tsig_key": "FILE",
    "secret_out": "FILE",
    "secret_file": "FILE",
    "pin_store": "FILE",
    "output": "FILE",
    "platform": "PLATFORM",
    "exe": "PATH",
}


def cli_command(only: str | None = None) -> Any:
    """The click command behind the app (for tools that walk its options), with the
    summaries of ``SUMMARIES`` and the metavars of ``METAVARS`` (``only``: see
    :func:`_app`)."""
    command = typer.main.get_command(_app(only))
    _plain_help(command, ())
    return command


#: The names a command line may start with: top-level commands and groups.
TOP_LEVEL: Final = frozenset(group or name for group, name, _, _ in COMMANDS)


def _command_name(args: Sequence[str]) -> str | None:
    """The top-level command or group ``args`` run, when it is one (None: the whole app,
    for the top-level help, even as ``--help sign``, ``--version`` or a name it does not
    know)."""
    for arg in args:
        if arg in ("--", *HELP_SETTINGS["help_option_names"]):
            return None
        if not arg.startswith("-"):
            return arg if arg in TOP_LEVEL else None
    return None


def _no_type(ctx: Any) -> None:
    return None


def _plain_help(command: Any, path: tuple[str, ...]) -> None:
    """Give ``command`` and its subcommands whole summaries and plain metavars."""
    command.short_help = SUMMARIES.get(path, command.short_help)
    for param in command.params:
        if getattr(param, "is_flag", False) or param.name is None:
            continue
        param.metavar = METAVARS.get(param.name, param.name.upper())
        if param.param_type_name == "argument":
            # typer prints an argument's type after its metavar (``ZONE <list[Path]>``).
            param.display_type_rich = _no_type
    for name, subcommand in getattr(command, "commands", {}).items():
        _plain_help(subcommand, (*path, name))


def _split_debug(args: Sequence[str]) -> tuple[list[str], bool]:
    """``args`` without ``--debug``, which may stand before or after the command."""
    end = args.index("--") if "--" in args else len(args)
    kept = [arg for arg in args[:end] if arg != "--debug"]
    return [*kept, *args[end:]], len(kept) < end


def _terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM takes Ctrl-C's path: writes in progress finish, then exit 130."""
    raise KeyboardInterrupt


#: The garbage collector's thresholds for a command (Python's are 700, 10, 10). A run
#: builds millions of objects that live to its end; with the defaults the collector
#: walked them again and again: 0.3-0.8 s of a daily renewal at 100,000 handles, and
#: more of a full sign. Cycles are still collected: young ones every 100,000
#: allocations, older ones less often (the peak of a full sign did not grow: bench/).
GC_THRESHOLDS = (100_000, 50, 10)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app and map every error to one line and an exit code."""
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGTERM, _terminate)
    thresholds = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    code: str | int | None = None  # None: another exception, which the interpreter reports
    try:
        _main(argv)
        code = 0
    except SystemExit as done:
        code = 0 if done.code is None else done.code
        raise
    finally:
        gc.set_threshold(*thresholds)  # called in-process: the caller's, as they were
        for signum, handler in previous.items():
            # The process's own entry point: the outcome is decided, and a signal during
            # the interpreter's exit would only print an "Exception ignored" traceback.
            # Called in-process (``argv`` given): the caller's handlers, as they were.
            restored = signal.SIG_DFL if handler is None else handler
            signal.signal(signum, signal.SIG_IGN if argv is None else restored)
        if argv is None and code is not None:
            _leave(code)


def _leave(code: str | int) -> NoReturn:
    """End the process now that its outcome is decided: the exit handlers run (worker
    pools' and the like), the output is flushed, and the interpreter's teardown of
    every object the run made is skipped (0.1-0.2 s of a patch run at 100,000
    handles; nothing is left to write by then: every file was written and synced)."""
    if isinstance(code, str):
        sys.stderr.write(f"{code}\n")  # as the interpreter would print sys.exit("...")
        code = 1
    atexit._run_exitfuncs()  # what a normal exit runs first
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code)


def _main(argv: list[str] | None) -> None:
    args, debug = _split_debug(sys.argv[1:] if argv is None else argv)
    args = args or ["--help"]  # after --debug is taken out: alone, it shows the help too
    command = cli_command(_command_name(args))
    try:
        code = command.main(args=args, prog_name="alter-publish", standalone_mode=False)
    except FailureError as failure:
        typer.echo(f"alter-publish: error: {failure}", err=True)
        sys.exit(failure.code)
    except AlterError as error:
        if debug:
            raise
        for line in _error_lines(error):
            typer.echo(f"alter-publish: error: {line}", err=True)
        sys.exit(error.exit_code)
    except typer.Abort:
        typer.echo("alter-publish: aborted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except typer.TyperException as error:  # usage errors: bad option, missing argument
        if debug:
            raise
        format_message = getattr(error, "format_message", None)
        text = format_message() if callable(format_message) else str(error)
        typer.echo(f"alter-publish: error: {' '.join(str(text).split())} (see --help)", err=True)
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        typer.echo("alter-publish: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as error:
        if debug:
            raise
        typer.echo(
            f"alter-publish: internal error: {type(error).__name__}: "
            f"{' '.join(str(error).split())} (rerun with --debug and report it)",
            err=True,
        )
        sys.exit(EXIT_INTERNAL)
    if code == EXIT_INTERRUPTED:  # typer turns KeyboardInterrupt into a bare exit 130
        typer.echo("alter-publish: interrupted", err=True)
    sys.exit(code if isinstance(code, int) else EXIT_OK)
