"""Where a workspace's files are: found from the zone definition, as git finds its top.

A workspace is the directory ``init`` makes: ``zones/`` (definitions, with each
zone's log, state and revocations beside its definition), ``keys/``, ``build/``,
``templates/`` and ``offline/``. The rule every command follows:

* The **root** of a definition is the parent of the ``zones/`` directory that
  holds it, else the definition's own directory.
* ``--keys``, ``--out`` and ``--templates`` given explicitly win (relative to the
  current directory, as typed). Their defaults are ``<root>/keys``,
  ``<root>/build`` and ``<root>/templates`` (the latter only when that directory
  exists; else the built-in templates). Definitions of different workspaces in
  one run need the directory given.
* A zone given by name (``example.com``, ``example.com.``) is
  ``zones/<name>.yaml`` in the current directory or the nearest parent directory
  that has it; with no definitions at all, ``zones/*.yaml`` of the nearest
  directory upwards that has any. A definition's path works wherever a name does.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from alter_publish.errors import AlterError, UsageError
from alter_publish.format.handles import normalize_domain, parse_handle

ZONES_DIR: Final = "zones"
KEYS_DIR: Final = "keys"
BUILD_DIR: Final = "build"
TEMPLATES_DIR: Final = "templates"
#: Where ``init`` puts revocation secrets kept off the key store (git-ignored).
OFFLINE_DIR: Final = "offline"
DEFINITION_SUFFIXES: Final = (".yaml", ".yml")
#: ``offline/.gitignore``: nothing in it but this file enters git.
OFFLINE_GITIGNORE_TEXT: Final = """\
# alter-publish: revocation secrets kept off the key store; copy them to real
# offline storage (a USB stick, a vault). Nothing here enters git.
*
!.gitignore
"""
GIT_TIMEOUT_SECONDS: Final = 10.0


@dataclass(frozen=True, slots=True)
class Workspace:
    """The workspace root(s) of the definitions a command works on, and its directories:
    each method returns the directory given explicitly, else the root's default."""

    #: The distinct roots, as typed (one for definitions of one workspace; none: cwd).
    roots: tuple[Path, ...]

    def root(self, option: str) -> Path:
        """The one root.

        Raises:
            UsageError: the definitions are in different workspaces (``option`` would
                settle it).
        """
        if len(self.roots) > 1:
            listed = ", ".join(map(str, self.roots))
            raise UsageError(
                f"the definitions are in different workspaces ({listed}); run one "
                f"workspace at a time or give {option}"
            )
        return self.roots[0] if self.roots else Path()

    def keys(self, given: Path | None = None) -> Path:
        """``given``, else ``<root>/keys``.

        Raises:
            UsageError: as :meth:`root`.
        """
        return given if given is not None else self.root("--keys") / KEYS_DIR

    def out(self, given: Path | None = None) -> Path:
        """``given``, else ``<root>/build``.

        Raises:
            UsageError: as :meth:`root`.
        """
        return given if given is not None else self.root("--out") / BUILD_DIR

    def templates(self, given: Path | None = None) -> Path | None:
        """``given``, else ``<root>/templates`` when it exists, else None (built-in).

        Raises:
            UsageError: as :meth:`root`.
        """
        if given is not None:
            return given
        own = self.root("--templates") / TEMPLATES_DIR
        return own if own.is_dir() else None


def zone_origin(zone: str) -> str:
    """``zone`` as a normalized domain name like ``example.com``.

    Raises:
        UsageError: not a domain name with at least two labels.
    """
    origin = normalize_domain(zone)
    try:
        parse_handle("~" + origin)
    except AlterError as exc:
        raise UsageError(f"zone {zone!r} is not a domain name: {exc.what}") from exc
    if "." not in origin:
        raise UsageError(f"zone {zone!r} is not a domain name like example.com")
    return origin


def workspace_root(definition: Path) -> Path:
    """The root of the workspace holding ``definition``: the parent of its ``zones/``
    directory, else the definition's own directory (relative when typed relative)."""
    folder = definition.parent
    if folder.name == ZONES_DIR:
        return folder.parent
    absolute = folder.resolve()
    return absolute.parent if absolute.name == ZONES_DIR else folder


def workspace_for(definitions: Sequence[Path]) -> Workspace:
    """The workspace of ``definitions`` (with none: the current directory)."""
    roots: dict[Path, Path] = {}
    for definition in definitions:
        root = workspace_root(definition)
        roots.setdefault(root.resolve(), root)
    return Workspace(tuple(roots.values()))


def _upwards() -> list[Path]:
    """The current directory and its parents, as relative paths (``.``, ``..``, ...)."""
    depth = len(Path.cwd().parents)
    return [Path(*[".."] * up) if up else Path() for up in range(depth + 1)]


def looks_like_definition(zone: str) -> bool:
    """True when ``zone`` names a definition file rather than a zone."""
    given = Path(zone)
    return given.suffix in DEFINITION_SUFFIXES or given.is_file()


def find_definition(zone: str, zones_dir: Path | None = None) -> Path:
    """A zone's definition: ``zone`` itself if it is one, else ``zones/<zone>.yaml`` in
    ``zones_dir`` when given, else in the current directory or the nearest parent.

    Raises:
        UsageError: not a domain name or a definition, or no such definition.
    """
    try:
        if looks_like_definition(zone):
            given = Path(zone)
            if not given.is_file():
                raise UsageError("no such zone definition", where=zone)
            return given
        name = f"{zone_origin(zone)}.yaml"
        if zones_dir is not None:
            path = zones_dir / name
            if not path.is_file():
                raise UsageError(f"no zone definition {path}; pass the definition file", where=zone)
            return path
        for folder in _upwards():
            path = folder / ZONES_DIR / name
            if path.is_file():
                return path
    except OSError as exc:
        raise UsageError(f"not a zone definition ({exc.strerror})", where=zone[:80]) from exc
    raise UsageError(
        f"no zone definition {ZONES_DIR}/{name} here or in a parent directory; "
        "pass the definition file",
        where=zone,
    )


def find_definition_if_any(zone: str) -> Path | None:
    """As :func:`find_definition`, but None for a zone name with no definition found.

    Raises:
        UsageError: not a domain name, or a definition path that does not exist.
    """
    if looks_like_definition(zone):
        return find_definition(zone)
    name = f"{zone_origin(zone)}.yaml"
    return next(
        (f / ZONES_DIR / name for f in _upwards() if (f / ZONES_DIR / name).is_file()), None
    )


def find_zone_files(paths: Sequence[Path], zones_dir: Path | None = None) -> tuple[Path, ...]:
    """The zone definitions named (a zone name is found as :func:`find_definition`
    finds it), or every ``zones/*.yaml`` (of ``zones_dir`` when given, else of the
    current directory or the nearest parent having any).

    Raises:
        UsageError: nothing to work on, or a zone name without a definition.
    """
    if paths:
        return tuple(
            path if looks_like_definition(str(path)) else find_definition(str(path), zones_dir)
            for path in paths
        )
    folders = [zones_dir] if zones_dir is not None else [f / ZONES_DIR for f in _upwards()]
    for folder in folders:
        found = tuple(
            sorted(p for suffix in DEFINITION_SUFFIXES for p in folder.glob(f"*{suffix}"))
        )
        if found:
            return found
    where = f"{zones_dir}/*.yaml" if zones_dir else f"{ZONES_DIR}/*.yaml here or in a parent"
    raise UsageError(f"no zone definitions given and none found in {where}")


def git_exposure(path: Path) -> str | None:
    """Why ``path`` (a secret) would enter git: it lies in a git work tree and is not
    ignored there; None when it is ignored, outside any work tree, or git is missing.

    Only asks git when a ``.git`` sits in a parent directory and ``git`` is installed.
    """
    absolute = path.resolve()
    top = next((d for d in absolute.parents if (d / ".git").exists()), None)
    git = shutil.which("git")
    if top is None or git is None:
        return None
    try:
        checked = subprocess.run(  # noqa: S603 (git from PATH, fixed arguments)
            [git, "-C", str(top), "check-ignore", "-q", str(absolute)],
            capture_output=True,
            check=False,
            timeout=GIT_TIMEOUT_SECONDS,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if checked.returncode != 1:  # 0: ignored; 128: not a work tree after all, or an error
        return None
    return (
        f"{path} is inside the git work tree {top} and not ignored: 'git add -A' would "
        f"commit it; keep it outside, or under {OFFLINE_DIR}/ of a workspace made by init"
    )
