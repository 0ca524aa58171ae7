"""check_now: a command that writes acts at the system clock's time unless told otherwise."""

from __future__ import annotations

import pytest

from alter_publish.errors import EXIT_USAGE, UsageError
from alter_publish.format.envelope import CLOCK_SKEW_SECONDS
from alter_publish.pipeline.clock import CLOCK_FLOOR, SIMULATED_TIME_FLAG, check_now, serial_warning

CLOCK = 1_795_612_000  # 2026-11-25T12:26:40Z
TEN_YEARS = 3650 * 86400


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        pytest.param(None, CLOCK, id="no-now-is-the-clock"),
        pytest.param(CLOCK, CLOCK, id="the-clock"),
        pytest.param(CLOCK - CLOCK_SKEW_SECONDS, CLOCK - CLOCK_SKEW_SECONDS, id="slack-behind"),
        pytest.param(CLOCK + CLOCK_SKEW_SECONDS, CLOCK + CLOCK_SKEW_SECONDS, id="slack-ahead"),
    ],
)
def test_a_now_within_the_slack_is_taken(now: int | None, expected: int) -> None:
    assert check_now(now, CLOCK) == expected


@pytest.mark.parametrize(
    ("now", "said"),
    [
        pytest.param(1_795_475, ("1970-01-21T18:44:35Z", "before", "not valid now"), id="typo"),
        pytest.param(CLOCK - CLOCK_SKEW_SECONDS - 1, ("before",), id="just-past-the-slack"),
        pytest.param(CLOCK + CLOCK_SKEW_SECONDS + 1, ("after", "serial"), id="just-ahead"),
        pytest.param(CLOCK + TEN_YEARS, ("2036-", "3650d after", "serial"), id="ten-years"),
    ],
)
def test_a_now_far_from_the_clock_is_refused(now: int, said: tuple[str, ...]) -> None:
    with pytest.raises(UsageError) as caught:
        check_now(now, CLOCK)
    error = caught.value
    assert (error.exit_code, error.where) == (EXIT_USAGE, "--now")
    text = str(error)
    assert "\n" not in text
    assert str(now) in text
    assert SIMULATED_TIME_FLAG in text
    for part in said:
        assert part in text, text


@pytest.mark.parametrize(
    "now",
    [
        pytest.param(None, id="no-now"),
        pytest.param(1_795_475, id="typo"),
        pytest.param(CLOCK + TEN_YEARS, id="ten-years"),
        pytest.param(0, id="epoch"),
    ],
)
def test_the_flag_takes_any_time(now: int | None) -> None:
    assert check_now(now, CLOCK, allow_simulated=True) == (CLOCK if now is None else now)


@pytest.mark.parametrize(
    "clock",
    [
        pytest.param(0, id="no-rtc-1970"),
        pytest.param(86_400, id="a-day-after-1970"),
        pytest.param(CLOCK_FLOOR - 1, id="a-second-before-the-floor"),
    ],
)
@pytest.mark.parametrize(
    "now", [pytest.param(None, id="no-now"), pytest.param("clock", id="now-at-the-clock")]
)
def test_an_implausible_clock_is_refused(clock: int, now: str | None) -> None:
    moment = clock if now == "clock" else None
    with pytest.raises(UsageError) as caught:
        check_now(moment, clock)
    text = str(caught.value)
    assert caught.value.where == "clock"
    assert "2026-01-01T00:00:00Z" in text
    assert SIMULATED_TIME_FLAG in text
    # Told so, the user acts at a time of their choosing.
    assert check_now(CLOCK, clock, allow_simulated=True) == CLOCK


def test_the_floor_itself_is_a_plausible_clock() -> None:
    assert check_now(None, CLOCK_FLOOR) == CLOCK_FLOOR


@pytest.mark.parametrize(
    ("serial", "warned"),
    [
        pytest.param(CLOCK - 86_400, False, id="behind"),
        pytest.param(CLOCK, False, id="at-now"),
        pytest.param(CLOCK + CLOCK_SKEW_SECONDS, False, id="within-the-slack"),
        pytest.param(CLOCK + CLOCK_SKEW_SECONDS + 1, True, id="past-the-slack"),
        pytest.param(1_895_475_069, True, id="years-ahead"),
    ],
)
def test_a_serial_ahead_of_now_is_warned_about(serial: int, warned: bool) -> None:
    warning = serial_warning("example.com.", serial, CLOCK)
    assert (warning is not None) is warned
    if warning is not None:
        assert warning.startswith(f"example.com.: SOA serial {serial} ")
        assert "docs/zones.md" in warning
        assert "\n" not in warning
