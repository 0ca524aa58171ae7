"""Spread renewals: envelope ``x=`` on each handle's slot (``pipeline.chain.envelope_expiry``)
and the slots themselves (``definition.state``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from alter_publish.definition.state import RENEWAL_SLOT_SECONDS, renewal_slot, renewal_slots
from alter_publish.pipeline.chain import envelope_expiry

NOW = 1_767_225_600
DAY = RENEWAL_SLOT_SECONDS
OWNERS = [f"_alter.user{n}.example.com." for n in range(3000)]


@given(
    owner=st.sampled_from(OWNERS),
    signed_at=st.integers(NOW, NOW + 400 * DAY),
    lifetime_days=st.integers(1, 400),
    renew_days=st.integers(0, 30),
)
def test_expiry_is_never_later_than_the_lifetime_nor_due_within_a_day(
    owner: str, signed_at: int, lifetime_days: int, renew_days: int
) -> None:
    lifetime = lifetime_days * DAY
    renew = min(renew_days * DAY, lifetime // 2)
    expiry = envelope_expiry(owner, signed_at, lifetime, renew)
    assert expiry <= signed_at + lifetime
    period = lifetime - renew
    if period // DAY - 1 >= 2:
        assert expiry - renew > signed_at + DAY  # not due the day it is signed
        assert expiry > signed_at + lifetime - period  # shortened by less than a period
    else:
        assert expiry == signed_at + lifetime


def test_first_renewals_spread_over_the_cycle_and_recur() -> None:
    """30d envelopes, renewed 7d before expiry: 22 daily slots; each handle renews once
    in the 22 days after its first due date, then every 22 days on its day."""
    lifetime, renew = 30 * DAY, 7 * DAY
    due = {owner: envelope_expiry(owner, NOW, lifetime, renew) - renew for owner in OWNERS}
    per_day: dict[int, int] = {}
    for moment in due.values():
        per_day[(moment - NOW) // DAY] = per_day.get((moment - NOW) // DAY, 0) + 1
    assert len(per_day) == 22
    assert max(per_day.values()) < 3 * len(OWNERS) // 22
    for owner in OWNERS[:50]:
        renewed_at = due[owner] + 3 * 3600  # the daily run after it falls due
        again = envelope_expiry(owner, renewed_at, lifetime, renew) - renew
        assert again == due[owner] + 22 * DAY


@pytest.mark.parametrize(("period", "expected"), [(DAY, (1, DAY)), (9 * DAY, (9, DAY))])
def test_slots(period: int, expected: tuple[int, int]) -> None:
    assert renewal_slots(period) == expected
    assert 0 <= renewal_slot(b"\x05_alter\x07example\x03com\x00", expected[0]) < expected[0]
