"""``sign --check``: change nothing, exit 7 when a real run would change an output."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

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


DAY = 86400


def _edit(workspace: Workspace, old: str, new: str) -> None:
    text = workspace.definition.read_text(encoding="utf-8")
    assert old in text
    workspace.definition.write_text(text.replace(old, new, 1), encoding="utf-8")


def _run(workspace: Workspace, *args: str) -> None:
    result = workspace.run(*args)
    assert result.returncode == EXIT_OK, result.describe()


def _add_handle(workspace: Workspace, ref: str) -> None:
    _edit(workspace, "  - ~drew\n", f"  - ~drew\n  - {ref}\n")
    _run(workspace, "keygen", ref, "--zone", ZONE)


Change = tuple[str | None, str]


@pytest.mark.parametrize(
    ("setup", "now", "expected"),
    [
        pytest.param(
            lambda ws: _edit(ws, "mcp.example.com/blake", "mcp.example.com/b2"),
            NOW,
            {("~blake", "resolver-changed")},
            id="resolver",
        ),
        pytest.param(
            lambda ws: _edit(ws, "model: claude-opus-4-7", "model: claude-opus-5"),
            NOW,
            {("~cc-opus-4-7", "tags-changed")},
            id="tags",
        ),
        pytest.param(
            lambda ws: _edit(ws, "lifetime: 7d", "lifetime: 6d"),
            NOW,
            {("~deploy.bot", "lifetime-changed")},
            id="lifetime",
        ),
        pytest.param(
            lambda ws: _run(ws, "rotate", "~drew", "--zone", ZONE, *simulated()),
            NOW,
            {("~drew", "key-rotated")},
            id="rotated",
        ),
        pytest.param(
            lambda ws: _run(ws, "rotate", "~drew", "--zone", ZONE, "--compromised", *simulated()),
            NOW,
            {("~drew", "key-rotated"), ("~drew", "epoch-revoked")},
            id="compromised",
        ),
        pytest.param(
            lambda ws: _add_handle(ws, "~erin"),
            NOW,
            {("~erin", "new")},
            id="new",
        ),
        pytest.param(
            lambda ws: _edit(ws, "  - ~drew\n", ""), NOW, {("~drew", "removed")}, id="removed"
        ),
        pytest.param(
            lambda ws: None,
            NOW + 20 * DAY,
            {
                # 30d envelopes renew on their own slots (docs/zones.md, 'Spread
                # renewals'): ~example.com's and ~blake's fall before day 20, ~drew's after.
                ("~example.com", "renewal-due"),
                ("~blake", "renewal-due"),
                ("~deploy.bot", "renewal-due"),
                ("~cc-opus-4-7", "renewal-due"),
                (None, "dnssec-resign-due"),
            },
            id="renewal-and-dnssec-refresh-due",
        ),
        pytest.param(
            lambda ws: _edit(ws, "minimum: 5m", "minimum: 10m"),
            NOW,
            {(None, "zone-records-changed")},
            id="zone-settings",
        ),
        pytest.param(
            lambda ws: _run(ws, "dnssec", "rollover", ZONE, "zsk", *simulated()),
            NOW,
            {(None, "zone-keys-changed")},
            id="zsk-rollover",
        ),
        pytest.param(
            lambda ws: ws.zone_file.write_text(
                ws.zone_file.read_text(encoding="utf-8") + "; edited by hand\n", encoding="utf-8"
            ),
            NOW,
            {(None, "outputs-differ")},
            id="output-edited",
        ),
    ],
)
def test_check_names_each_handle_that_would_change_and_why(
    workspace: Workspace, setup: Callable[[Workspace], object], now: int, expected: set[Change]
) -> None:
    setup(workspace)
    before = workspace.snapshot()

    result = workspace.run("sign", "--check", "--now", str(now), DEFINITION, "--json")
    text = workspace.run("sign", "--check", "--now", str(now), DEFINITION)

    assert_one_error_line(result, EXIT_DRIFT)
    (zone,) = json.loads(result.stdout)["zones"]
    assert {(change["handle"], change["reason"]) for change in zone["changes"]} == expected
    assert text.returncode == EXIT_DRIFT, text.describe()
    for handle, reason in expected:
        assert f"{ZONE}: {handle or 'zone'}: {reason}" in text.stdout, text.describe()
    assert_unchanged(before, workspace.snapshot())
