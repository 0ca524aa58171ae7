"""``handler``: register ``open`` as the handler of alter: URIs (xdg), or write the
registration files of other platforms."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from alter_publish.cli.options import JsonOption, RootHintsOption, TrustAnchorOption
from alter_publish.cli.output import emit_json
from alter_publish.cli.resolve import PinStoreOption, SubstrateOption
from alter_publish.publish.handlerfiles import (
    PLATFORMS,
    WINDOWS_EXE_DEFAULT,
    platform_files,
    write_platform_files,
)
from alter_publish.publish.handlers import (
    HandlerOptions,
    HandlerStatus,
    handler_argv,
    handler_status,
    install_handler,
    program_argv,
    uninstall_handler,
)

ScopeOption = Annotated[
    bool,
    typer.Option(
        "--user/--system",
        help="Per user ($XDG_DATA_HOME/applications, the default) or for every user "
        "(/usr/local/share/applications).",
    ),
]
ForceOption = Annotated[
    bool,
    typer.Option("--force", help="Replace another application that is the alter: default."),
]
BakedServerOption = Annotated[
    str | None,
    typer.Option("--server", help="HOST:PORT the handler asks (default: found from the root)."),
]
BakedTimeoutOption = Annotated[
    float | None,
    typer.Option("--timeout", help="Seconds the handler waits for each reply.", min=0.1),
]
PlatformOption = Annotated[str, typer.Option("--platform", help=f"One of {', '.join(PLATFORMS)}.")]
FilesOutOption = Annotated[Path, typer.Option("--out", help="Directory to write the files into.")]
ExeOption = Annotated[
    str,
    typer.Option("--exe", help="windows: the alter-publish program the registry runs."),
]
HkcrOption = Annotated[
    bool,
    typer.Option(
        "--hkcr",
        help="windows: register under HKEY_CLASSES_ROOT (every user; administrator) "
        "instead of HKEY_CURRENT_USER\\Software\\Classes.",
    ),
]


def _print_status(status: HandlerStatus, as_json: bool) -> None:
    if as_json:
        emit_json(status.to_mapping())
        return
    absent = "" if status.installed else " (absent)"
    typer.echo(f"{'desktop file:':14} {status.desktop_file}{absent}")
    if status.exec_line:
        typer.echo(f"{'exec:':14} {status.exec_line}")
    mark = " (alter-publish)" if status.is_default else ""
    typer.echo(f"{'default:':14} {status.default or '(none)'}{mark}")
    if status.replaced:
        typer.echo(f"{'replaced:':14} {status.replaced}")
    for note in status.notes:
        typer.echo(f"{'note:':14} {note}")


def install(
    user: ScopeOption = True,
    force: ForceOption = False,
    substrate: SubstrateOption = None,
    server: BakedServerOption = None,
    trust_anchor: TrustAnchorOption = None,
    root_hints: RootHintsOption = None,
    pin_store: PinStoreOption = None,
    timeout: BakedTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Make `alter-publish open --launch` the desktop's handler of alter: URIs.

    Resolution options given here are written into the handler's Exec= line (files
    by absolute path), so every click validates the same way.
    """
    options = HandlerOptions(substrate, server, trust_anchor, root_hints, pin_store, timeout)
    argv = handler_argv(program_argv(sys.argv[0], sys.executable), options)
    status = install_handler(argv, os.environ, system=not user, force=force)
    _print_status(status, as_json)


def uninstall(user: ScopeOption = True, as_json: JsonOption = False) -> None:
    """Remove the handler's desktop entry and its default."""
    _print_status(uninstall_handler(os.environ, system=not user), as_json)


def status(user: ScopeOption = True, as_json: JsonOption = False) -> None:
    """Show the handler's desktop entry and what xdg-mime says the default is."""
    _print_status(handler_status(os.environ, system=not user), as_json)


def files(
    platform: PlatformOption,
    out: FilesOutOption = Path(),
    exe: ExeOption = WINDOWS_EXE_DEFAULT,
    hkcr: HkcrOption = False,
    as_json: JsonOption = False,
) -> None:
    """Write the registration files of macOS, Windows, Android or iOS (docs/open.md)."""
    made = platform_files(platform, exe=exe, machine=hkcr)
    written = write_platform_files(made, out)
    if as_json:
        emit_json(
            {
                "platform": platform,
                "files": [
                    {"path": str(path), "what": item.what}
                    for path, item in zip(written, made, strict=True)
                ],
            }
        )
        return
    for path, item in zip(written, made, strict=True):
        typer.echo(f"{path}  ({item.what})")
