"""The KSK rollover runbook against a real parent: the loopback hierarchy's ``com.``
(Knot) is changed by the test as a registrar would change it. ``dnssec step
--ds-published`` refuses, naming the parent server, until the parent serves the new
DS; at the end it refuses, naming the server and the old KSK, while the parent still
serves the old DS, and is taken once the test has withdrawn it. The zone, served by
both name servers with only the new DS at the parent, then passes ``check`` from the
root."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from alter_publish import pipeline
from alter_publish.dns.anchors import read_trust_anchors
from alter_publish.dns.hints import read_root_hints
from alter_publish.dns.zonekeys import ZoneKeyRole, ZoneKeyState
from alter_publish.errors import EXIT_KEY
from alter_publish.keys.store import KeyStore
from tests.integration.hierarchy import HierarchyLab, Scenario
from tests.integration.test_runbooks import Runner, execute


def _ds_rdatas(build: Path) -> tuple[str, ...]:
    """The DS rdata texts of build/example.com.ds (the set the parent should hold)."""
    lines = (build / "example.com.ds").read_text(encoding="ascii").splitlines()
    return tuple(" ".join(line.split()[4:]) for line in lines if line.strip())


@dataclass
class ParentRunner(Runner):
    """A runner whose ``--ds-published`` asks the hierarchy's parent: refused first (the
    parent lacks the new DS, or still serves the withdrawn one), then the test publishes
    the DS set the zone asks for at the parent (the registrar's part), and the step is
    taken."""

    lab: HierarchyLab | None = None
    refusals: list[str] = field(default_factory=list)

    def run(self, argv: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
        words = argv[1:]
        if self.lab is None or words[:2] != ("dnssec", "step") or "--ds-published" not in words:
            return super().run(argv)
        hints = ("--root-hints", str(self.lab.hierarchy.root_hints))
        refused = super().run((*argv, *hints))
        assert refused.returncode == EXIT_KEY, refused.stdout + refused.stderr
        (line,) = refused.stderr.strip().splitlines()
        assert f"ns1.nic.com. ({self.lab.hierarchy.addresses.tld})" in line, line
        self.refusals.append(line)
        wanted = _ds_rdatas(self.root / "build")
        self.lab.set_delegation(replace(self.lab.hierarchy.delegation, ds=wanted))
        return super().run((*argv, *hints))


@pytest.mark.slow  # the whole KSK runbook against the loopback hierarchy
def test_the_ksk_runbook_waits_for_the_parent_and_ends_checked(
    hierarchy_lab: HierarchyLab, tmp_path: Path
) -> None:
    hierarchy = hierarchy_lab.apply(Scenario.ALL_GOOD)
    root = tmp_path / "ws"
    shutil.copytree(hierarchy.workspace, root, symlinks=True)
    (root / "offline").mkdir()
    runner = ParentRunner(root, hierarchy.now, offline=False, lab=hierarchy_lab)
    try:
        execute(runner, "ksk-rollover.md")
        keys = KeyStore(root / "keys").zones.entries("example.com", removed=True)
        (old,) = [key for key in keys if key.state is ZoneKeyState.REMOVED]
        (new,) = [key for key in keys if key.role is ZoneKeyRole.KSK and key is not old]
        added, withdrawn = runner.refusals
        assert f"does not serve the DS of ksk-{new.tag} yet" in added, added
        assert f"still serves the DS of ksk-{old.tag} at" in withdrawn, withdrawn
        # The registrar's last part: only the new KSK's DS stays; the zone as signed.
        hierarchy_lab.set_delegation(
            replace(hierarchy_lab.hierarchy.delegation, ds=_ds_rdatas(root / "build"))
        )
        hierarchy_lab.publish(root / "build" / "example.com.zone")
        report = pipeline.check_world(
            root / "zones" / "example.com.yaml",
            out=root / "build",
            keys=KeyStore(root / "keys"),
            now=runner.now,
            hints=read_root_hints(hierarchy.root_hints),
            anchors=read_trust_anchors(hierarchy.anchor_file),
        )
        assert report.findings == (), [f.line("example.com") for f in report.findings]
    finally:
        hierarchy_lab.set_delegation(hierarchy.delegation)
        hierarchy_lab.publish()
