"""``sign --check``: change nothing, exit 7 when a real run would change an output."""

from __future__ import annotations

import json

from alter_publish.errors import EXIT_DRIFT, EXIT_OK, EXIT_USAGE, EXIT_VERIFICATION
from tests.cli.workspace import (
    NOW,
    ZONE,
    Workspace,
    assert_one_error_line,
    assert_unchanged,
    simulated,
)

DEFINITION = f"zones/{ZONE}.yaml"


def test_an_up_to_date_workspace_checks_clean(workspace: Workspace) -> None:
    before = workspace.snapshot()
    result = workspace.run("sign", "--check", "--now", str(NOW), DEFINITION)
    assert result.returncode == EXIT_OK, result.describe()
    assert f"{ZONE}: up to date" in result.stdout
    assert_unchanged(before, workspace.snapshot())


def test_a_change_is_drift_and_nothing_is_written(workspace: Workspace) -> None:
    text = workspace.definition.read_text(encoding="utf-8")
    workspace.definition.write_text(text.replace("lifetime: 7d", "lifetime: 6d"), encoding="utf-8")
    before = workspace.snapshot()
    result = workspace.run("sign", "--check", "--now", str(NOW + 60), DEFINITION, "--json")
    line = assert_one_error_line(result, EXIT_DRIFT)
    assert "would change" in line
    report = json.loads(result.stdout)
    assert (report["ok"], report["check"], report["drift"], report["committed"]) == (
        True,
        True,
        True,
        False,
    )
    (zone,) = report["zones"]
    assert f"zones/{ZONE}.log" in zone["written"]
    assert f"build/{ZONE}.zone" in zone["written"]
    assert_unchanged(before, workspace.snapshot())
    # The real run then writes exactly that, and a second check is clean.
    assert workspace.run("sign", *simulated(NOW + 60), DEFINITION).returncode == EXIT_OK
    again = workspace.run("sign", "--check", "--now", str(NOW + 60), DEFINITION)
    assert again.returncode == EXIT_OK, again.describe()


def test_check_cannot_create_keys(workspace: Workspace) -> None:
    before = workspace.snapshot()
    result = workspace.run("sign", "--check", "--create-keys", "--now", str(NOW), DEFINITION)
    assert "--create-keys" in assert_one_error_line(result, EXIT_USAGE)
    assert_unchanged(before, workspace.snapshot())


def test_a_failing_proof_is_still_exit_1(workspace: Workspace) -> None:
    zone_file = workspace.root / "templates"
    zone_file.mkdir()
    (zone_file / "zone.j2").write_text(
        "$ORIGIN {{ origin }}\n@ 3600 IN SOA a. b. {{ serial }} 1 1 1 1\n@ 3600 IN NS a.\n",
        encoding="utf-8",
    )
    before = workspace.snapshot()
    result = workspace.run(
        "sign", "--check", "--templates", "templates", "--now", str(NOW), DEFINITION
    )
    assert result.returncode == EXIT_VERIFICATION, result.describe()
    assert "proof failed for 5 handle(s)" in result.stderr_lines[-1]
    assert_unchanged(before, workspace.snapshot())
