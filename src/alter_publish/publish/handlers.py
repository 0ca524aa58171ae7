"""Registering ``alter-publish open`` as the Linux handler of ``alter:`` URIs (xdg).

``install`` writes the desktop entry (:func:`~alter_publish.publish.handlerfiles.desktop_entry`)
atomically into ``$XDG_DATA_HOME/applications`` (``--user``, default
``~/.local/share/applications``) or ``/usr/local/share/applications`` (``--system``), runs
``update-desktop-database`` on that directory and (per user) ``xdg-mime default``, then
reports what ``xdg-mime query default x-scheme-handler/alter`` says. Another desktop
file that is already the default is reported and left alone: only ``force`` replaces
it. ``uninstall`` removes the desktop entry and our line in the user's ``mimeapps.list``.

The xdg tools run as argv lists (no shell) with the caller's environment, so
``XDG_DATA_HOME``, ``XDG_CONFIG_HOME`` and ``XDG_DATA_DIRS`` decide where they look.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from alter_publish.errors import HandlerError, UsageError
from alter_publish.fileio import PUBLIC_DIR_MODE, atomic_write_text, make_dirs
from alter_publish.publish.handlerfiles import DESKTOP_FILE_ID, MIME_TYPE, desktop_entry

__all__ = [
    "SYSTEM_APPLICATIONS",
    "HandlerOptions",
    "HandlerStatus",
    "applications_dir",
    "handler_argv",
    "handler_status",
    "install_handler",
    "program_argv",
    "uninstall_handler",
]

SYSTEM_APPLICATIONS: Final = Path("/usr/local/share/applications")
TOOL_TIMEOUT_SECONDS: Final = 30.0
_DEFAULTS_SECTION: Final = "[Default Applications]"


@dataclass(frozen=True, slots=True)
class HandlerStatus:
    """Where the handler stands.

    Attributes:
        scope: ``user`` or ``system``.
        desktop_file: where our desktop entry is (or would be).
        installed: the desktop entry exists.
        exec_line: its ``Exec=`` value, when installed.
        default: what ``xdg-mime query default x-scheme-handler/alter`` says ("" if none).
        is_default: the default is our desktop file.
        replaced: the other default that ``force`` replaced, if any.
        notes: what was skipped or is worth knowing (one line each).
    """

    scope: str
    desktop_file: Path
    installed: bool
    exec_line: str | None
    default: str
    is_default: bool
    replaced: str | None = None
    notes: tuple[str, ...] = ()

    def to_mapping(self) -> dict[str, object]:
        """JSON form."""
        return {
            "scope": self.scope,
            "desktop_file": str(self.desktop_file),
            "installed": self.installed,
            "exec": self.exec_line,
            "default": self.default or None,
            "is_default": self.is_default,
            "replaced": self.replaced,
            "notes": list(self.notes),
        }


def applications_dir(env: Mapping[str, str], *, system: bool) -> Path:
    """``/usr/local/share/applications`` (system) or ``$XDG_DATA_HOME/applications`` (user).

    Raises:
        UsageError: per user, with neither ``XDG_DATA_HOME`` nor ``HOME`` set.
    """
    if system:
        return SYSTEM_APPLICATIONS
    data_home = env.get("XDG_DATA_HOME", "")
    if data_home and Path(data_home).is_absolute():
        return Path(data_home) / "applications"
    home = env.get("HOME", "")
    if not home:
        raise UsageError("neither XDG_DATA_HOME nor HOME is set: where is the user's data?")
    return Path(home) / ".local" / "share" / "applications"


def _mimeapps_list(env: Mapping[str, str]) -> Path:
    config_home = env.get("XDG_CONFIG_HOME", "")
    if config_home and Path(config_home).is_absolute():
        return Path(config_home) / "mimeapps.list"
    return Path(env.get("HOME", "/")) / ".config" / "mimeapps.list"


def _tool(argv: Sequence[str], env: Mapping[str, str], *, package: str) -> str:
    """Run an xdg tool; its stdout, stripped.

    Raises:
        HandlerError: the tool is missing (naming its Debian package) or failed.
    """
    if shutil.which(argv[0], path=env.get("PATH")) is None:
        raise HandlerError(f"{argv[0]} is not installed (Debian package {package})")
    try:
        done = subprocess.run(  # noqa: S603 - argv list, no shell
            list(argv),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HandlerError(f"{' '.join(argv[:2])} failed: {exc}") from exc
    if done.returncode != 0:
        reason = " ".join(done.stderr.split())[:200] or f"exit status {done.returncode}"
        raise HandlerError(f"{' '.join(argv[:2])} failed: {reason}")
    return done.stdout.strip()


def _query_default(env: Mapping[str, str]) -> str:
    return _tool(["xdg-mime", "query", "default", MIME_TYPE], env, package="xdg-utils")


def _exec_of(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return next((line[5:] for line in text.splitlines() if line.startswith("Exec=")), None)


def handler_status(
    env: Mapping[str, str], *, system: bool, notes: tuple[str, ...] = ()
) -> HandlerStatus:
    """Our desktop entry and what xdg-mime says the default handler is.

    Raises:
        UsageError: no user data directory.
        HandlerError: xdg-mime is missing or failed.
    """
    path = applications_dir(env, system=system) / DESKTOP_FILE_ID
    default = _query_default(env)
    return HandlerStatus(
        scope="system" if system else "user",
        desktop_file=path,
        installed=path.is_file(),
        exec_line=_exec_of(path),
        default=default,
        is_default=default == DESKTOP_FILE_ID,
        notes=notes,
    )


def _update_database(directory: Path, env: Mapping[str, str]) -> tuple[str, ...]:
    if shutil.which("update-desktop-database", path=env.get("PATH")) is None:
        return ("update-desktop-database is not installed (desktop-file-utils): skipped",)
    _tool(["update-desktop-database", str(directory)], env, package="desktop-file-utils")
    return ()


@dataclass(frozen=True, slots=True)
class HandlerOptions:
    """The resolution options written into the handler's command (files absolute)."""

    substrate: str | None = None
    server: str | None = None
    trust_anchor: Path | None = None
    root_hints: Path | None = None
    pin_store: Path | None = None
    timeout: float | None = None


def program_argv(argv0: str, executable: str) -> list[str]:
    """This alter-publish by absolute path, from how it was started (``argv0``): the
    ``alter-publish`` script, else ``executable -m alter_publish``."""
    if Path(argv0).name == "alter-publish":
        found = shutil.which(argv0) or argv0
        return [str(Path(found).absolute())]
    return [executable, "-m", "alter_publish"]


def handler_argv(program: Sequence[str], options: HandlerOptions) -> list[str]:
    """``program open --launch [options]``: what a click runs (then ``--`` and the URL).

    Raises:
        UsageError: an argument holds white space or a quote: xdg-open's generic mode
            splits the Exec= line on white space and keeps quotes, so it would break.
    """
    argv = [*program, "open", "--launch"]
    for flag, value in (
        ("--substrate", options.substrate),
        ("--server", options.server),
        ("--trust-anchor", options.trust_anchor and str(options.trust_anchor.absolute())),
        ("--root-hints", options.root_hints and str(options.root_hints.absolute())),
        ("--pin-store", options.pin_store and str(options.pin_store.absolute())),
        ("--timeout", None if options.timeout is None else f"{options.timeout:g}"),
    ):
        if value:
            argv += [flag, value]
    for arg in argv:
        if any(ch.isspace() or ch in "\"'" for ch in arg):
            raise UsageError(
                f"{arg!r} holds white space or a quote: xdg-open would split or mangle it "
                "on the Exec= line; use a path without them",
                where=DESKTOP_FILE_ID,
            )
    return argv


def install_handler(
    argv: Sequence[str], env: Mapping[str, str], *, system: bool, force: bool
) -> HandlerStatus:
    """Make ``argv -- URL`` the handler of ``alter:`` URIs.

    ``argv`` is the command to run (:func:`handler_argv`).

    Raises:
        UsageError: another handler is the default and ``force`` is not set (nothing
            is written), or no user data directory.
        HandlerError: an xdg tool is missing or failed, or a file cannot be written.
    """
    before = _query_default(env)
    replaced = before if before and before != DESKTOP_FILE_ID else None
    if replaced is not None and not force:
        raise UsageError(
            f"{replaced} is the default handler of {MIME_TYPE}: --force replaces it",
            where=MIME_TYPE,
        )
    directory = applications_dir(env, system=system)
    try:
        make_dirs(directory, PUBLIC_DIR_MODE)
    except OSError as exc:
        raise HandlerError(f"cannot make {directory}: {exc.strerror}") from exc
    atomic_write_text(directory / DESKTOP_FILE_ID, desktop_entry(argv), error=HandlerError)
    notes = _update_database(directory, env)
    if system:
        notes += ("system scope: xdg-mime default is per user; each user's default is theirs",)
    else:
        _tool(["xdg-mime", "default", DESKTOP_FILE_ID, MIME_TYPE], env, package="xdg-utils")
    status = handler_status(env, system=system, notes=notes)
    return dataclasses.replace(status, replaced=replaced)


def _without_our_default(text: str) -> str | None:
    """``mimeapps.list`` text without our desktop id as the alter: default (None: no
    change)."""
    lines = text.splitlines(keepends=True)
    section = ""
    changed = False
    kept: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped
        key, equals, value = stripped.partition("=")
        if section == _DEFAULTS_SECTION and equals and key.strip() == MIME_TYPE:
            ids = [item for item in value.split(";") if item and item != DESKTOP_FILE_ID]
            if len(ids) != len([item for item in value.split(";") if item]):
                changed = True
                if ids:
                    kept.append(f"{MIME_TYPE}={';'.join(ids)};\n")
                continue
        kept.append(line)
    return "".join(kept) if changed else None


def uninstall_handler(env: Mapping[str, str], *, system: bool) -> HandlerStatus:
    """Remove our desktop entry and (per user) our default in ``mimeapps.list``.

    Raises:
        UsageError: no user data directory.
        HandlerError: a file cannot be removed or written, or an xdg tool failed.
    """
    directory = applications_dir(env, system=system)
    path = directory / DESKTOP_FILE_ID
    notes: tuple[str, ...] = ()
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise HandlerError(f"cannot remove {path}: {exc.strerror}") from exc
    if not system:
        mimeapps = _mimeapps_list(env)
        try:
            text = mimeapps.read_text(encoding="utf-8") if mimeapps.is_file() else ""
        except (OSError, UnicodeDecodeError) as exc:
            raise HandlerError(f"cannot read {mimeapps}: {exc}") from exc
        updated = _without_our_default(text)
        if updated is not None:
            atomic_write_text(mimeapps, updated, mode=_mode_of(mimeapps), error=HandlerError)
            notes += (f"removed our default from {mimeapps}",)
    if directory.is_dir():
        notes += _update_database(directory, env)
    return handler_status(env, system=system, notes=notes)


def _mode_of(path: Path) -> int:
    return path.stat().st_mode & 0o777
