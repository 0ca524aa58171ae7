"""Killing ``sign`` for real: SIGKILL at the moments its write stage makes a temporary
file, a generation being written or a link, found by watching the workspace (not by
sleeping a guessed time). Shared by tests/integration/test_kill.py and bench/kill_sign.py.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ZONE = "kill.example"
NOW = 1767225600
_RUN_CLI = "from alter_publish.cli import main; main()"
SIMULATED = ("--now", str(NOW), "--allow-simulated-time")
#: What an interrupted write leaves: a temporary file, a generation being written, a link.
_LEFTOVER = re.compile(r".*\.(tmp|staging|link)")
_SERIAL = re.compile(r"\sIN SOA \S+ \S+ \(\s+(\d+) ; serial\n")


def definition(handles: int, lifetime_days: int) -> str:
    """A zone of ``handles`` handles whose every envelope depends on ``lifetime_days``."""
    lines = [
        f"zone: {ZONE}",
        "ttl: 1h",
        f"ns: [ns1.{ZONE}.]",
        "hosts: {ns1: [192.0.2.1]}",
        "dnssec: {enabled: true, denial: nsec3}",
        f"envelopes: {{lifetime: {lifetime_days}d, renew_before: 1d}}",
        "handles:",
        f"  - handle: ~{ZONE}",
        "    resolver: https://kill.example/apex",
    ]
    lines += [f"  - ~user{n}" for n in range(1, handles)]
    return "\n".join(lines) + "\n"


def cli(*args: str) -> list[str]:
    """The command line of ``alter-publish ARGS`` (run it with the workspace as cwd)."""
    return [sys.executable, "-c", _RUN_CLI, *args]


def run(root: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run ``alter-publish ARGS`` in ``root`` to the end."""
    return subprocess.run(
        cli(*args), cwd=root, capture_output=True, text=True, timeout=timeout, check=False
    )


def make_workspace(root: Path, handles: int) -> None:
    """A workspace of ``handles`` handles, signed once.

    Raises:
        AssertionError: the first sign failed.
    """
    (root / "zones").mkdir(parents=True)
    (root / "zones" / f"{ZONE}.yaml").write_text(definition(handles, 30))
    done = run(root, "sign", "--create-keys", *SIMULATED)
    assert done.returncode == 0, done.stderr


def _watched(root: Path) -> Iterator[Path]:
    yield root / "zones"
    build = root / "build"
    yield build
    try:
        stores = [build / name for name in os.listdir(build) if name.endswith(".outputs")]  # noqa: PTH208
    except FileNotFoundError:
        return
    for store in stores:
        yield store
        try:
            inner = os.listdir(store)  # noqa: PTH208
        except FileNotFoundError:
            continue
        yield from (store / name for name in inner if name.endswith(".staging"))


def leftovers(root: Path) -> list[str]:
    """Every temporary file, generation being written or link under ``root`` (relative)."""
    return sorted(
        path.relative_to(root).as_posix()
        for path in root.rglob("*")
        if _LEFTOVER.fullmatch(path.name)
    )


def _write_events(root: Path) -> set[str]:
    seen: set[str] = set()
    for directory in _watched(root):
        try:
            names = os.listdir(directory)  # noqa: PTH208 (polled: names only)
        except FileNotFoundError:
            continue
        seen.update(f"{directory.name}/{name}" for name in names if _LEFTOVER.fullmatch(name))
        if directory.name.endswith(".staging"):
            seen.update(f"{directory.name}/{name}" for name in names)
        if directory.name.endswith(".outputs"):  # a generation retired by a switch
            seen.update(f"{directory.name}/{name}" for name in names if name.endswith(".retired"))
    return seen


def retired(root: Path) -> list[str]:
    """The output generations retired under ``root``'s ``build/`` (relative), which the
    next ``sign`` removes."""
    return sorted(
        path.relative_to(root).as_posix() for path in (root / "build").glob("*.outputs/*.retired")
    )


@dataclass(frozen=True, slots=True)
class Kill:
    """One ``sign`` killed (or not: it finished before the moment came)."""

    moment: int  # the write event it was to be killed at
    killed: bool
    events: tuple[str, ...]  # what it had been seen writing


def sign_killed_at(root: Path, moment: int, lifetime_days: int, text: str | None = None) -> Kill:
    """Change every envelope (the lifetime; or write the definition ``text``), start
    ``sign`` and SIGKILL it as soon as the ``moment``-th write event is seen (0: never;
    it runs to the end)."""
    if text is None:
        text = definition_for(root, lifetime_days)
    (root / "zones" / f"{ZONE}.yaml").write_text(text)
    process = subprocess.Popen(
        cli("sign", *SIMULATED),
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    events: list[str] = []
    killed = False
    deadline = time.monotonic() + 600
    while process.poll() is None and time.monotonic() < deadline:
        for event in sorted(_write_events(root) - set(events)):
            events.append(event)
        if moment and len(events) >= moment:
            process.send_signal(signal.SIGKILL)
            killed = True
            break
    process.wait(timeout=60)
    return Kill(moment, killed and process.returncode == -signal.SIGKILL, tuple(events))


def definition_for(root: Path, lifetime_days: int) -> str:
    """The workspace's definition with every envelope's lifetime ``lifetime_days``."""
    handles = (root / "zones" / f"{ZONE}.yaml").read_text().count("\n  - ")
    return definition(handles, lifetime_days)


def one_set(root: Path) -> str | None:
    """Why ``build/`` is not one run's output set (None: it is): the zone file's SOA
    serial must be the serial of the envelopes document, read through the stable paths."""
    zone_text = (root / "build" / f"{ZONE}.zone").read_text()
    match = _SERIAL.search(zone_text)
    if match is None:
        return "no SOA serial in the zone file"
    envelopes = json.loads((root / "build" / f"{ZONE}.envelopes.json").read_text())
    if int(match.group(1)) != envelopes["serial"]:
        return f"zone serial {match.group(1)}, envelopes serial {envelopes['serial']}"
    return None


def verify(root: Path) -> subprocess.CompletedProcess[str]:
    """``verify`` of the workspace's zone as it stands."""
    return run(root, "verify", f"zones/{ZONE}.yaml", "--now", str(NOW))
