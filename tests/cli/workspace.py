"""A throwaway alter-publish workspace and a way to run the real CLI in it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: The fixed signing time of the fixture workspace (2026-01-01T00:00:00Z).
NOW = 1767225600
#: What a command that writes needs to act at a --now away from the system clock.
SIMULATED_TIME = "--allow-simulated-time"
ZONE = "example.com"
PASSPHRASE_ENVS = ("ALTER_PUBLISH_PASSPHRASE", "ALTER_PUBLISH_PASSPHRASE_FILE")
CLI_TIMEOUT_SECONDS = 60.0
ERROR_PREFIX = "alter-publish: error: "
_RUN_CLI = "from alter_publish.cli import main; main()"

#: path relative to the workspace -> (file bytes or None for a directory, mode bits)
Snapshot = dict[str, tuple[bytes | None, int]]


def simulated(moment: int = NOW) -> tuple[str, str, str]:
    """``--now MOMENT --allow-simulated-time``: for a command that writes (sign, rotate,
    revoke, dnssec keygen/rollover/step, push, resolve --pin-store) at a fixed time;
    read-only commands take ``--now`` alone."""
    return ("--now", str(moment), SIMULATED_TIME)


@dataclass(frozen=True, slots=True)
class Result:
    """What one CLI run did."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def stderr_lines(self) -> list[str]:
        """Non-empty stderr lines."""
        return [line for line in self.stderr.splitlines() if line.strip()]

    def describe(self) -> str:
        """Everything, for assertion messages."""
        return (
            f"args={list(self.args)} rc={self.returncode}\n"
            f"--- stdout ---\n{self.stdout}--- stderr ---\n{self.stderr}"
        )


@dataclass(frozen=True, slots=True)
class Workspace:
    """A signed example.com workspace: zones/, keys/ and build/ under ``root``."""

    root: Path

    @property
    def definition(self) -> Path:
        """zones/example.com.yaml."""
        return self.root / "zones" / f"{ZONE}.yaml"

    @property
    def zone_file(self) -> Path:
        """build/example.com.zone."""
        return self.root / "build" / f"{ZONE}.zone"

    @property
    def envelopes_file(self) -> Path:
        """build/example.com.envelopes.json."""
        return self.root / "build" / f"{ZONE}.envelopes.json"

    def key_dir(self, name: str) -> Path:
        """keys/example.com/<handle-name>/."""
        return self.root / "keys" / ZONE / name

    def run(self, *args: str, env: Mapping[str, str] | None = None, stdin: str = "") -> Result:
        """Run ``alter-publish ARGS`` in a subprocess with the workspace as cwd.

        Passphrase variables of the calling environment are dropped; ``env`` adds to it.
        """
        environ = {k: v for k, v in os.environ.items() if k not in PASSPHRASE_ENVS}
        environ.update(env or {})
        completed = subprocess.run(
            [sys.executable, "-c", _RUN_CLI, *args],
            cwd=self.root,
            env=environ,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_SECONDS,
            check=False,
        )
        return Result(tuple(args), completed.returncode, completed.stdout, completed.stderr)

    def snapshot(self) -> Snapshot:
        """Bytes and mode of every file (and mode of every directory) in the workspace."""
        found: Snapshot = {}
        for path in sorted(self.root.rglob("*")):
            info = path.lstat()
            data = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
            found[path.relative_to(self.root).as_posix()] = (data, stat.S_IMODE(info.st_mode))
        return found


def assert_unchanged(before: Snapshot, after: Snapshot) -> None:
    """Fail naming every path that appeared, vanished or changed."""
    added = sorted(after.keys() - before.keys())
    removed = sorted(before.keys() - after.keys())
    changed = sorted(p for p in before.keys() & after.keys() if before[p] != after[p])
    assert not added, f"files appeared: {added}"
    assert not removed, f"files vanished: {removed}"
    assert not changed, f"files changed: {changed}"


def assert_one_error_line(result: Result, exit_code: int) -> str:
    """The contract for one bad input: the exit code, one error line, no traceback.

    Returns:
        The error line without its ``alter-publish: error: `` prefix.
    """
    assert result.returncode == exit_code, result.describe()
    assert "Traceback" not in result.stderr, result.describe()
    lines = result.stderr_lines
    assert len(lines) == 1, result.describe()
    assert lines[0].startswith(ERROR_PREFIX), result.describe()
    return lines[0].removeprefix(ERROR_PREFIX)
