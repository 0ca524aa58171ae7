"""Time you can trust: a command that writes acts at the system clock's time.

A ``--now`` more than ``CLOCK_SKEW_SECONDS`` from the clock (a typo, a date years
ahead) is refused with one line naming ``--allow-simulated-time`` and changes
nothing; with that flag it is taken as given (tests and rehearsals). Read-only
commands take any ``--now``. A serial left ahead of the time by such a run is
reported on every later sign.
"""

from __future__ import annotations

import time

import pytest

from alter_publish.errors import EXIT_OK, EXIT_USAGE, EXIT_VERIFICATION
from alter_publish.pipeline.clock import SIMULATED_TIME_FLAG
from tests.cli.workspace import (
    NOW,
    ZONE,
    Workspace,
    assert_one_error_line,
    assert_unchanged,
)

TYPO = 1_795_475  # 1795475069 with the last three digits dropped: 1970-01-21
TEN_YEARS_SECONDS = 3650 * 86_400
DEFINITION = f"zones/{ZONE}.yaml"
WARNING_PREFIX = "alter-publish: WARNING: "


def _ten_years_ahead() -> int:
    return int(time.time()) + TEN_YEARS_SECONDS


def _refused(workspace: Workspace, *args: str) -> str:
    """Run ``args``; it must exit 2 with one line and leave every file as it was."""
    before = workspace.snapshot()
    result = workspace.run(*args)
    line = assert_one_error_line(result, EXIT_USAGE)
    assert SIMULATED_TIME_FLAG in line, line
    assert_unchanged(before, workspace.snapshot())
    return line


def test_a_mistyped_now_signs_nothing(workspace: Workspace) -> None:
    line = _refused(workspace, "sign", "--now", str(TYPO), DEFINITION)
    assert line.startswith(f"--now: 1970-01-21T18:44:35Z ({TYPO}) is "), line
    assert "before the system clock" in line


def test_a_now_years_ahead_signs_nothing(workspace: Workspace) -> None:
    ahead = _ten_years_ahead()
    line = _refused(workspace, "sign", "--now", str(ahead), DEFINITION)
    assert line.startswith("--now: 2036-"), line
    assert "3650d after the system clock" in line
    assert "serial" in line


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("sign", "--no-verify", "--create-keys"), id="sign-no-verify"),
        pytest.param(("rotate", "~blake", "--zone", ZONE), id="rotate"),
        pytest.param(("revoke", "~blake", "--zone", ZONE, "--epoch", "1"), id="revoke"),
        pytest.param(("dnssec", "keygen", "example.org"), id="dnssec-keygen"),
        pytest.param(("dnssec", "rollover", ZONE, "zsk"), id="dnssec-rollover"),
        pytest.param(("dnssec", "step", ZONE), id="dnssec-step"),
        pytest.param(
            ("push", ZONE, "--server", "127.0.0.1:53", "--tsig-key", "t.key", "--allow-insecure"),
            id="push",
        ),
        pytest.param(
            (
                "resolve",
                "~blake",
                "--server",
                "127.0.0.1:53",
                "--substrate",
                ZONE,
                "--pin-store",
                "pins.json",
            ),
            id="resolve-pin-store",
        ),
    ],
)
def test_every_command_that_writes_refuses_a_now_far_from_the_clock(
    workspace: Workspace, args: tuple[str, ...]
) -> None:
    _refused(workspace, *args, "--now", str(TYPO))


@pytest.mark.parametrize(
    "moment", [pytest.param(TYPO, id="typo"), pytest.param(_ten_years_ahead(), id="ten-years")]
)
def test_the_flag_signs_at_a_simulated_time(workspace: Workspace, moment: int) -> None:
    result = workspace.run("sign", "--now", str(moment), SIMULATED_TIME_FLAG, DEFINITION)
    assert result.returncode == EXIT_OK, result.describe()
    assert f"{ZONE}: wrote " in result.stdout


def test_a_serial_left_ahead_is_reported_on_the_next_sign(workspace: Workspace) -> None:
    ahead = _ten_years_ahead()
    jumped = workspace.run("sign", "--now", str(ahead), SIMULATED_TIME_FLAG, DEFINITION)
    assert jumped.returncode == EXIT_OK, jumped.describe()

    result = workspace.run("sign", DEFINITION)  # at the system clock

    assert result.returncode == EXIT_OK, result.describe()
    warnings = [line for line in result.stderr_lines if line.startswith(WARNING_PREFIX)]
    assert len(warnings) == 1, result.describe()
    assert warnings[0].startswith(f"{WARNING_PREFIX}{ZONE}: SOA serial {ahead + 1} is ")
    assert "docs/zones.md" in warnings[0]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        pytest.param(("verify", "--now", str(NOW)), EXIT_OK, id="verify-months-ago"),
        pytest.param(("sign", "--check", "--now", str(NOW)), EXIT_OK, id="sign-check"),
        pytest.param(("keys", "status", "--now", str(TYPO)), EXIT_OK, id="keys-status"),
        pytest.param(("dnssec", "status", ZONE, "--now", str(TYPO)), EXIT_OK, id="dnssec-status"),
        pytest.param(("verify", "--now", str(TYPO)), EXIT_VERIFICATION, id="verify-typo"),
    ],
)
def test_read_only_commands_take_any_now(
    workspace: Workspace, args: tuple[str, ...], code: int
) -> None:
    before = workspace.snapshot()
    result = workspace.run(*args)
    assert result.returncode == code, result.describe()
    assert SIMULATED_TIME_FLAG not in result.stderr, result.describe()
    assert_unchanged(before, workspace.snapshot())
