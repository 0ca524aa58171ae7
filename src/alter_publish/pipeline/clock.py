"""Time you can trust: whether a command that writes may act at a requested time.

Only the command line reads the system clock; it passes the clock and the
requested ``--now`` to :func:`check_now`. A command that writes time-dependent
state (signatures, log entries, key epochs, rollover steps, pins, the SOA
serial) acts at the system clock's time, give or take ``CLOCK_SKEW_SECONDS``,
unless the user says ``--allow-simulated-time``: a typo in ``--now`` must not
publish signatures that are already expired, nor move the serial years ahead
for good. Read-only commands take any ``--now`` and never call this.
"""

from __future__ import annotations

from alter_publish.definition.values import format_span, format_utc
from alter_publish.errors import UsageError
from alter_publish.format.envelope import CLOCK_SKEW_SECONDS

#: No system clock reads earlier than this on a machine running this release
#: (2026-01-01T00:00:00Z): an earlier one is a board with no RTC, or a clock reset.
CLOCK_FLOOR = 1_767_225_600
#: The option that lets a command write at a time other than the system clock's.
SIMULATED_TIME_FLAG = "--allow-simulated-time"


def check_now(now: int | None, clock: int, *, allow_simulated: bool = False) -> int:
    """The time a command that writes acts at: ``now``, else the system ``clock``.

    Args:
        now: the requested time (``--now``), or None for the clock's.
        clock: the system clock, Unix seconds.
        allow_simulated: the user said ``--allow-simulated-time``: any ``now`` (and any
            clock) is taken as given.

    Raises:
        UsageError: without ``allow_simulated``, the clock reads before ``CLOCK_FLOOR``,
            or ``now`` is more than ``CLOCK_SKEW_SECONDS`` away from it.
    """
    moment = clock if now is None else now
    if allow_simulated:
        return moment
    if clock < CLOCK_FLOOR:
        raise UsageError(
            f"the system clock reads {format_utc(clock)}, before this release "
            f"({format_utc(CLOCK_FLOOR)}): what this writes would not be valid at the real "
            f"time; set the clock, or give --now with {SIMULATED_TIME_FLAG}",
            where="clock",
        )
    offset = moment - clock
    if abs(offset) <= CLOCK_SKEW_SECONDS:
        return moment
    if offset < 0:
        relation, why = "before", "what this writes would be dated then, not valid now"
    else:
        relation = "after"
        why = "what this writes would not be valid yet, and the SOA serial would jump ahead"
    raise UsageError(
        f"{format_utc(moment)} ({moment}) is {format_span(abs(offset))} {relation} the "
        f"system clock (more than {CLOCK_SKEW_SECONDS}s): {why}; "
        f"to simulate time, give {SIMULATED_TIME_FLAG}",
        where="--now",
    )


def serial_warning(zone: str, serial: int, now: int) -> str | None:
    """A warning when a zone's SOA serial is ahead of ``now`` by more than the slack.

    ``sign`` makes the serial max(previous + 1, now), so a serial far ahead of the time
    was left by a run at a later (simulated or mistyped) time. It cannot go back without
    breaking secondaries (RFC 1982); docs/zones.md says how to recover.

    Returns:
        The warning, one line, or None when the serial is within ``CLOCK_SKEW_SECONDS``
        of ``now`` or behind it.
    """
    ahead = serial - now
    if ahead <= CLOCK_SKEW_SECONDS:
        return None
    return (
        f"{zone}: SOA serial {serial} is {format_span(ahead)} ahead of the time signed at "
        f"({format_utc(now)}), left by a run at a later time; a serial cannot go back "
        "without breaking secondaries: see docs/zones.md, 'A serial ahead of the clock'"
    )
