"""``resolve`` and ``verify --server`` on the loopback hierarchy of real servers, from
the hierarchy's root anchor: through the validating resolver and at the zone's second
name server, each scenario gives the verdict a user must see (the issue's table)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from alter_publish.errors import EXIT_NETWORK, EXIT_OK, EXIT_VERIFICATION
from tests.integration.hierarchy import Hierarchy, HierarchyLab, Scenario

_RUN_CLI = "from alter_publish.cli import main; main()"


def _cli(hierarchy: Hierarchy, *args: str) -> subprocess.CompletedProcess[str]:
    anchor = ("--trust-anchor", str(hierarchy.anchor_file))
    hints = ("--root-hints", str(hierarchy.root_hints))
    return subprocess.run(
        [sys.executable, "-c", _RUN_CLI, *args, *anchor, *hints, "--now", str(hierarchy.now)],
        cwd=hierarchy.workspace,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _resolve(hierarchy: Hierarchy, server: str) -> tuple[int, dict[str, object]]:
    done = _cli(
        hierarchy, "resolve", "~blake", "--substrate", "example.com", "--server", server, "--json"
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}


@pytest.mark.parametrize(
    ("scenario", "exit_code", "verdict"),
    [
        (Scenario.ALL_GOOD, EXIT_OK, "secure"),
        (Scenario.WRONG_DS_DIGEST, EXIT_VERIFICATION, "bogus"),
        (Scenario.RETIRED_KSK_DS, EXIT_VERIFICATION, "bogus"),
        (Scenario.MISSING_DS, EXIT_VERIFICATION, "insecure"),
    ],
)
def test_resolve_through_the_validating_resolver(
    hierarchy_lab: HierarchyLab, scenario: Scenario, exit_code: int, verdict: str
) -> None:
    hierarchy = hierarchy_lab.apply(scenario)
    code, document = _resolve(hierarchy, hierarchy.resolver_spec)
    assert code == exit_code, document
    assert verdict in json.dumps(document), document


@pytest.mark.parametrize(
    ("scenario", "exit_code", "verdict"),
    [
        (Scenario.ALL_GOOD, EXIT_OK, "secure"),
        (Scenario.EXPIRED_SERVER, EXIT_VERIFICATION, "bogus"),
        (Scenario.LAME_SERVER, EXIT_NETWORK, "REFUSED"),
    ],
)
def test_resolve_at_the_second_name_server(
    hierarchy_lab: HierarchyLab, scenario: Scenario, exit_code: int, verdict: str
) -> None:
    hierarchy = hierarchy_lab.apply(scenario)
    code, document = _resolve(hierarchy, f"{hierarchy.addresses.ns2}:{hierarchy.port}")
    assert code == exit_code, document
    if document:
        assert verdict in json.dumps(document), document


@pytest.mark.parametrize(
    ("scenario", "exit_code"),
    [
        (Scenario.ALL_GOOD, EXIT_OK),
        (Scenario.STALE_SERVER, EXIT_VERIFICATION),
        (Scenario.EXPIRED_SERVER, EXIT_VERIFICATION),
        (Scenario.WRONG_DS_DIGEST, EXIT_VERIFICATION),
    ],
)
def test_verify_at_the_second_name_server_from_the_root(
    hierarchy_lab: HierarchyLab, scenario: Scenario, exit_code: int
) -> None:
    hierarchy = hierarchy_lab.apply(scenario)
    server = f"{hierarchy.addresses.ns2}:{hierarchy.port}"
    done = _cli(hierarchy, "verify", "zones/example.com.yaml", "--server", server)
    assert done.returncode == exit_code, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
