"""Every runbook in docs/runbooks/ executed as written, with the published state checked.

Each runbook's numbered steps are read from the Markdown; the commands of every
``sh`` block run in order, in a fresh workspace, through the real CLI. The clock
is simulated (``--now`` and, on commands that write, ``--allow-simulated-time``)
and stepped: each step happens a minute after the one before, a ``dnssec step``
waits until the time ``dnssec status`` names, and confirming the parent's DS
(``--ds-published``) happens three hours later (the registrar's pace). After
every step the published output must match the key store and prove again;
each runbook then has its own end state to reach.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dns.name
import dns.rdatatype
import dns.zone
import pytest

from alter_publish import pipeline
from alter_publish.cli import cli_command
from alter_publish.dns.zonekeys import ZoneKeyRole
from alter_publish.format.envelope import Envelope, parse_record, verify_record
from alter_publish.format.handles import parse_handle
from alter_publish.keys import commands as keyops
from alter_publish.keys.lifecycle import read_revocations, revocations_path_for
from alter_publish.keys.store import KeyStore
from alter_publish.pipeline.clock import SIMULATED_TIME_FLAG
from tests.conftest import EXAMPLE_ZONE, NOW, REPO

RUNBOOKS = REPO / "docs" / "runbooks"
ZONE = "example.com"
BLAKE = parse_handle("~blake")
BLAKE_OWNER = "_alter.blake.example.com."
SECRET_1 = "offline/blake-1.secret"  # noqa: S105 (a path)
STEP_SECONDS = 60
REGISTRAR_SECONDS = 3 * 3600
#: Shell commands a runbook may use besides alter-publish (run without a shell).
OTHER_COMMANDS = frozenset({"mkdir", "mv", "cp", "rm", "chmod", "ls", "cat"})
_STEP = re.compile(r"^(\d+)\. ", re.MULTILINE)
_SH_BLOCK = re.compile(r"^ *```sh\n(.*?)^ *```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Step:
    """One numbered step of a runbook and the commands of its ``sh`` blocks."""

    number: int
    commands: tuple[tuple[str, ...], ...]


def read_runbook(path: Path) -> list[Step]:
    """The numbered steps of a runbook, in order, each with its commands."""
    text = path.read_text(encoding="utf-8")
    starts = [(m.start(), int(m.group(1))) for m in _STEP.finditer(text)]
    steps = []
    for (start, number), (end, _) in zip(starts, [*starts[1:], (len(text), 0)], strict=True):
        commands = tuple(
            tuple(shlex.split(line))
            for block in _SH_BLOCK.findall(text[start:end])
            for line in block.splitlines()
            if line.strip() and not line.strip().startswith("#")
        )
        steps.append(Step(number, commands))
    assert [step.number for step in steps] == list(range(1, len(steps) + 1)), path.name
    return steps


def _commands_with(option: str) -> frozenset[tuple[str, ...]]:
    """Subcommand paths (like ``("dnssec", "step")``) that take ``option``."""
    found: set[tuple[str, ...]] = set()

    def walk(command: Any, path: tuple[str, ...]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands is not None:
            for name, sub in subcommands.items():
                walk(sub, (*path, name))
        elif any(option in param.opts for param in command.params):
            found.add(path)

    walk(cli_command(), ())
    return frozenset(found)


WITH_NOW = _commands_with("--now")
#: Commands that write need it to act at the runner's clock, not the system's.
WITH_SIMULATED_TIME = _commands_with(SIMULATED_TIME_FLAG)


def _offline(words: tuple[str, ...]) -> tuple[str, ...]:
    """The runbook's words, with ``--no-parent-check`` added to ``dnssec step
    --ds-published``: no parent is reachable here (the parent check itself is proven on
    the loopback hierarchy, tests/integration/test_world_check.py)."""
    if words[:2] == ("dnssec", "step") and "--ds-published" in words:
        return (*words, "--no-parent-check")
    return words


@dataclass
class Runner:
    """Runs a runbook's commands in a workspace with a simulated clock."""

    root: Path
    now: int
    #: No parent name server is reachable: ``--ds-published`` gets ``--no-parent-check``.
    offline: bool = True

    @property
    def keys(self) -> KeyStore:
        return KeyStore(self.root / "keys")

    @property
    def definition(self) -> Path:
        return self.root / "zones" / f"{ZONE}.yaml"

    def run(self, argv: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
        if argv[0] == "alter-publish":
            words = _offline(argv[1:]) if self.offline else argv[1:]
            path = next((words[:n] for n in (2, 1) if words[:n] in WITH_NOW), None)
            extra = ("--now", str(self.now)) if path else ()
            if path in WITH_SIMULATED_TIME:
                extra = (*extra, SIMULATED_TIME_FLAG)
            command = [sys.executable, "-m", "alter_publish", *words, *extra]
        else:
            assert argv[0] in OTHER_COMMANDS, f"runbook uses {argv[0]!r}"
            command = list(argv)
        return subprocess.run(
            command, cwd=self.root, capture_output=True, text=True, check=False, timeout=120
        )

    def advance(self, step: Step) -> None:
        """Move the clock to when ``step`` may run."""
        self.now += STEP_SECONDS
        words = [command[1:] for command in step.commands if command[0] == "alter-publish"]
        if any(w[:2] == ("dnssec", "step") and "--ds-published" in w for w in words):
            self.now += REGISTRAR_SECONDS
        elif any(w[:2] == ("dnssec", "step") for w in words):
            status = keyops.dnssec_status(str(self.definition), keys=self.keys)
            assert status.next_step is not None, "the runbook steps with no rollover running"
            assert status.next_step.not_before is not None
            self.now = max(self.now, status.next_step.not_before)


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    """The workspace the runbooks assume (docs/runbooks/README.md)."""
    root = tmp_path / "ws"
    (root / "zones").mkdir(parents=True)
    shutil.copy(EXAMPLE_ZONE, root / "zones" / f"{ZONE}.yaml")
    (root / "offline").mkdir()
    ready = Runner(root, NOW)
    for argv in (
        (
            "alter-publish",
            "keygen",
            "~blake",
            "--zone",
            ZONE,
            "--secret-out",
            "offline/blake-1.secret",
        ),
        ("alter-publish", "sign", "zones/example.com.yaml", "--create-keys"),
    ):
        result = ready.run(argv)
        assert result.returncode == 0, result.stderr
    return ready


# --- the published state -----------------------------------------------------------------


def _published(runner: Runner) -> dns.zone.Zone:
    return pipeline.read_zone_file(runner.root / "build" / f"{ZONE}.zone", ZONE)


def _served_texts(zone: dns.zone.Zone, owner: str) -> list[str]:
    rdataset = zone.find_rdataset(owner, dns.rdatatype.TXT)
    return [b"".join(rdata.strings).decode() for rdata in rdataset]


def _blake(zone: dns.zone.Zone) -> Envelope:
    (envelope,) = [
        r for t in _served_texts(zone, BLAKE_OWNER) if isinstance(r := parse_record(t), Envelope)
    ]
    return envelope


def check_published(runner: Runner) -> None:
    """The published output matches the key store and proves at the runner's time."""
    zone = _published(runner)
    origin = dns.name.from_text(ZONE)
    live = runner.keys.zones.load(ZONE)
    dnskeys = zone.find_rdataset(origin, dns.rdatatype.DNSKEY)
    assert sorted(dns.dnssec.key_id(key) for key in dnskeys) == sorted(
        key.tag for key in live if key.in_dnskey
    )
    signers = {
        rrsig.key_tag
        for node in zone.nodes.values()
        for rdataset in node
        if rdataset.rdtype == dns.rdatatype.RRSIG
        for rrsig in rdataset
    }
    assert signers == {key.tag for key in live if key.signs}
    ds_text = (runner.root / "build" / f"{ZONE}.ds").read_text(encoding="ascii")
    assert sorted(int(line.split()[4]) for line in ds_text.splitlines()) == sorted(
        key.tag for key in live if key.in_ds
    )
    assert _blake(zone).epoch == max(runner.keys.epochs(ZONE, BLAKE))
    served = _served_texts(zone, BLAKE_OWNER)
    for entry in read_revocations(revocations_path_for(runner.definition)):
        assert entry.revocation.to_text() in served
    report = pipeline.verify([runner.definition], out=runner.root / "build", now=runner.now)
    assert report.ok, [p.to_mapping() for p in report.proofs]


def _outputs(runner: Runner) -> dict[str, bytes]:
    build = runner.root / "build"
    return {path.name: path.read_bytes() for path in sorted(build.iterdir()) if path.is_file()}


def execute(runner: Runner, name: str, directory: Path = RUNBOOKS) -> list[dns.zone.Zone]:
    """Run every step of a runbook; returns the published zone after each step.

    After a step that signs, the published output must match the key store and
    prove; after any other step it must be exactly what it was.
    """
    published = []
    for step in read_runbook(directory / name):
        runner.advance(step)
        before = _outputs(runner)
        for argv in step.commands:
            result = runner.run(argv)
            assert result.returncode == 0, (
                f"{name} step {step.number}: {shlex.join(argv)} (now {runner.now})\n"
                f"{result.stdout}{result.stderr}"
            )
        if any(argv[:2] == ("alter-publish", "sign") for argv in step.commands):
            check_published(runner)
        else:
            assert _outputs(runner) == before, f"{name} step {step.number} changed the output"
        published.append(_published(runner))
    return published


# --- each runbook ----------------------------------------------------------------------


def _epoch1_key(runner: Runner) -> bytes:
    log = (runner.root / "zones" / f"{ZONE}.log").read_text(encoding="utf-8")
    texts = [line.split(" ", 1)[1] for line in log.splitlines() if line.startswith(BLAKE_OWNER)]
    envelopes = [r for t in texts if isinstance(r := parse_record(t), Envelope) and r.epoch == 1]
    return envelopes[0].public_key


def _rotated(runner: Runner, published: list[dns.zone.Zone], *, continuity: bool) -> None:
    epoch1 = _epoch1_key(runner)
    envelope = _blake(published[-1])
    assert envelope.epoch == 2
    assert (envelope.psig is not None) is continuity
    if continuity:
        verify_record(
            envelope.to_text(),
            owner=BLAKE_OWNER,
            substrate=ZONE,
            now=runner.now,
            pinned=(1, epoch1),
        )
    revoked = [t for t in _served_texts(published[-1], BLAKE_OWNER) if "; e=1; rev=" in t]
    assert len(revoked) == (0 if continuity else 1)
    assert not (runner.root / "keys" / ZONE / "blake" / "2.secret").exists()
    assert (runner.root / "offline" / "blake-2.secret").stat().st_mode & 0o077 == 0


def _zone_key_tags(zone: dns.zone.Zone, flags: int) -> set[int]:
    dnskeys = zone.find_rdataset(dns.name.from_text(ZONE), dns.rdatatype.DNSKEY)
    return {dns.dnssec.key_id(key) for key in dnskeys if key.flags == flags}


def _check_zsk(runner: Runner, published: list[dns.zone.Zone]) -> None:
    counts = [len(_zone_key_tags(zone, 256)) for zone in published]
    assert counts == [1, 2, 2, 1, 1]
    assert _zone_key_tags(published[0], 256) != _zone_key_tags(published[-1], 256)
    assert _zone_key_tags(published[0], 257) == _zone_key_tags(published[-1], 257)


def _check_ksk(runner: Runner, published: list[dns.zone.Zone]) -> None:
    ksks = [_zone_key_tags(zone, 257) for zone in published]
    assert ksks[0] == ksks[1] == ksks[2] == ksks[3]
    assert ksks[4] == ksks[5] == ksks[6] == ksks[7]
    assert ksks[0] != ksks[-1]
    (new,) = ksks[-1]
    ds_text = (runner.root / "build" / f"{ZONE}.ds").read_text(encoding="ascii")
    assert [int(line.split()[4]) for line in ds_text.splitlines()] == [new]
    roles = {key.role for key in runner.keys.zones.load(ZONE)}
    assert roles == {ZoneKeyRole.KSK, ZoneKeyRole.ZSK}


def _lose_blake_key(runner: Runner) -> None:
    (runner.root / "keys" / ZONE / "blake" / "1.pem").unlink()


RUNBOOK_CASES: dict[str, tuple[Callable[[Runner], None] | None, Callable[..., None]]] = {
    "rotate-handle-key.md": (None, lambda r, p: _rotated(r, p, continuity=True)),
    "compromised-handle-key.md": (None, lambda r, p: _rotated(r, p, continuity=False)),
    "lost-handle-key.md": (_lose_blake_key, lambda r, p: _rotated(r, p, continuity=False)),
    "zsk-rollover.md": (None, _check_zsk),
    "ksk-rollover.md": (None, _check_ksk),
}


def test_every_runbook_is_tested() -> None:
    assert sorted(p.name for p in RUNBOOKS.glob("*.md") if p.name != "README.md") == sorted(
        RUNBOOK_CASES
    )


@pytest.mark.parametrize("name", sorted(RUNBOOK_CASES))
def test_runbook_executes_green(runner: Runner, name: str) -> None:
    setup, check = RUNBOOK_CASES[name]
    if setup is not None:
        setup(runner)
    published = execute(runner, name)
    check(runner, published)


def test_a_drifted_runbook_fails(runner: Runner, tmp_path: Path) -> None:
    """The harness is not a rubber stamp: a step the code refuses makes it fail."""
    drifted = tmp_path / "zsk-rollover.md"
    text = (RUNBOOKS / "zsk-rollover.md").read_text(encoding="utf-8")
    drifted.write_text(text.replace("example.com zsk", "example.com csk"), encoding="utf-8")
    with pytest.raises(AssertionError, match="csk"):
        execute(runner, drifted.name, directory=tmp_path)


def test_status_json_agrees_with_the_runbooks_workspace(runner: Runner) -> None:
    result = runner.run(("alter-publish", "keys", "status", "--json"))
    assert result.returncode == 0, result.stderr
    (zone,) = json.loads(result.stdout)["zones"]
    blake = next(h for h in zone["handles"] if h["handle"] == "~blake")
    assert [(e["epoch"], e["state"], e["published"]) for e in blake["epochs"]] == [
        (1, "active", True)
    ]
