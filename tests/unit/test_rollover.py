"""DNSSEC key rollovers: RFC 7583 timing, the ZSK and KSK state machines, and keyops."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import dns.name
import pytest

from alter_publish import pipeline
from alter_publish.definition.model import DNSSECSpec, load_zone
from alter_publish.definition.state import SerialState, state_path_for
from alter_publish.dns.dnssec import ds_line
from alter_publish.dns.zonekeys import (
    ZoneKey,
    ZoneKeyEntry,
    ZoneKeyRole,
    ZoneKeyState,
    cds_keys,
)
from alter_publish.errors import RolloverError
from alter_publish.keys import commands as keyops
from alter_publish.keys import rollover
from alter_publish.keys.rollover import RolloverTiming, StepResult
from alter_publish.keys.store import KeyStore
from tests.conftest import NOW, Workspace

AnyKey = TypeVar("AnyKey", ZoneKey, ZoneKeyEntry)

ZONE = "example.com"
ORIGIN = dns.name.from_text(ZONE)
DAY = 86_400
BEGIN = NOW + 1_000
TIMING = RolloverTiming(
    dnskey_ttl=3_600,
    max_ttl=7_200,
    signature_validity=14 * DAY,
    propagation_delay=600,
    parent_ds_ttl=DAY,
    parent_propagation_delay=1_800,
)
ZSK, KSK = ZoneKeyRole.ZSK, ZoneKeyRole.KSK


@pytest.fixture
def store(tmp_path: Path) -> KeyStore:
    """A key store holding a freshly generated KSK and ZSK for example.com."""
    keys = KeyStore(tmp_path / "keys")
    keys.zones.generate(ZONE, now=NOW)
    return keys


def rollover_error(call: Callable[[], object]) -> RolloverError:
    """The RolloverError ``call`` raises."""
    with pytest.raises(RolloverError) as info:
        call()
    assert info.value.category == "rollover"
    return info.value


def only(keys: Sequence[AnyKey], role: ZoneKeyRole, state: ZoneKeyState) -> AnyKey:
    """The one key of ``role`` in ``state``."""
    found = [key for key in keys if key.role is role and key.state is state]
    assert len(found) == 1, [key.index_entry() for key in keys]
    return found[0]


def by_tag(keys: Sequence[AnyKey], tag: int) -> AnyKey:
    return next(key for key in keys if key.tag == tag)


def step(store: KeyStore, now: int, *, ds_published: bool = False) -> StepResult:
    return rollover.step(store, ZONE, now=now, timing=TIMING, ds_published=ds_published)


# --- timing --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_ttl", "validity", "retire_wait"),
    [
        pytest.param(5_000, 20_000, 300 + 5_000, id="largest-ttl"),
        pytest.param(50_000, 20_000, 300 + 20_000, id="capped-by-signature-validity"),
        pytest.param(10, 20_000, 300 + 1_000, id="max-ttl-raised-to-dnskey-ttl"),
    ],
)
def test_timing_follows_rfc_7583(max_ttl: int, validity: int, retire_wait: int) -> None:
    spec = DNSSECSpec(
        signature_validity=validity,
        propagation_delay=300,
        parent_ds_ttl=90_000,
        parent_propagation_delay=7_000,
    )
    timing = RolloverTiming.of(spec, dnskey_ttl=1_000, max_ttl=max_ttl)
    assert timing.max_ttl == max(max_ttl, 1_000)
    assert timing.zsk_publish_wait == 300 + 1_000  # Dprp + TTLkey
    assert timing.zsk_retire_wait == retire_wait  # Dprp + min(TTLsig, validity)
    assert timing.ds_wait == 7_000 + 90_000  # DprpP + TTLds
    assert timing.ksk_retire_wait == 300 + 1_000  # Dprp + TTLkey
    mapping = timing.to_mapping()
    assert (mapping["ds_wait"], mapping["zsk_retire_wait"]) == (97_000, retire_wait)


def tags(keys: Sequence[AnyKey]) -> set[int]:
    """The key tags of ``keys``."""
    return {key.tag for key in keys}


# --- ZSK pre-publication ------------------------------------------------------------------


def test_zsk_rollover_walks_published_active_retired_removed(store: KeyStore) -> None:
    old = only(store.zones.load(ZONE), ZSK, ZoneKeyState.ACTIVE)
    ksk = only(store.zones.load(ZONE), KSK, ZoneKeyState.ACTIVE)

    begun = rollover.begin(store, ZONE, ZSK, now=BEGIN, timing=TIMING)
    new = only(begun.keys, ZSK, ZoneKeyState.PUBLISHED)
    assert (new.in_dnskey, new.signs, new.created, new.since) == (True, False, BEGIN, BEGIN)
    assert cds_keys(begun.keys) == ()  # a ZSK rollover asks nothing of the parent
    assert new.tag not in (old.tag, ksk.tag)
    assert begun.ds_submit == ()
    assert begun.next_step is not None
    assert begun.next_step.not_before == BEGIN + TIMING.zsk_publish_wait

    activate_at = BEGIN + TIMING.zsk_publish_wait
    error = rollover_error(lambda: step(store, activate_at - 1))
    assert "too early" in error.what
    assert "not before" in error.what
    assert only(store.zones.load(ZONE), ZSK, ZoneKeyState.PUBLISHED).tag == new.tag

    activated = step(store, activate_at)
    assert only(activated.keys, ZSK, ZoneKeyState.ACTIVE).tag == new.tag
    retired = only(activated.keys, ZSK, ZoneKeyState.RETIRED)
    assert (retired.tag, retired.in_dnskey, retired.signs) == (old.tag, True, False)
    assert activated.ds_remove == ()
    assert activated.next_step is not None
    remove_at = activate_at + TIMING.zsk_retire_wait
    assert activated.next_step.not_before == remove_at

    rollover_error(lambda: step(store, remove_at - 1))
    removed = step(store, remove_at)
    assert old.tag not in {key.tag for key in removed.keys}
    assert removed.next_step is None
    assert removed.ds_remove == ()  # a ZSK has no DS
    assert {key.tag for key in store.zones.load(ZONE)} == {ksk.tag, new.tag}
    every = store.zones.entries(ZONE, removed=True)
    assert by_tag(every, old.tag).state is ZoneKeyState.REMOVED
    assert by_tag(every, ksk.tag).state is ZoneKeyState.ACTIVE
    assert rollover.next_step(store.zones.load(ZONE), TIMING) is None

    error = rollover_error(lambda: step(store, remove_at + 10 * DAY))
    assert "no rollover is running" in error.what


# --- KSK double-DS ------------------------------------------------------------------------


def test_ksk_rollover_walks_the_double_ds_states(store: KeyStore) -> None:
    old = only(store.zones.load(ZONE), KSK, ZoneKeyState.ACTIVE)
    zsk = only(store.zones.load(ZONE), ZSK, ZoneKeyState.ACTIVE)
    assert cds_keys(store.zones.load(ZONE)) == ()  # no rollover: no CDS/CDNSKEY

    begun = rollover.begin(store, ZONE, KSK, now=BEGIN, timing=TIMING)
    new = only(begun.keys, KSK, ZoneKeyState.DS_SUBMITTED)
    assert (new.in_ds, new.in_dnskey, new.signs) == (True, False, False)
    old_ds, new_ds = (ds_line(ORIGIN, key, TIMING.dnskey_ttl) for key in (old, new))
    assert old_ds != new_ds
    assert sorted(begun.ds_submit) == sorted([old_ds, new_ds])
    assert tags(cds_keys(begun.keys)) == {old.tag, new.tag}  # CDS: add the new DS
    assert begun.next_step is not None
    assert begun.next_step.not_before is None  # waits for the parent, not the clock

    error = rollover_error(lambda: step(store, BEGIN + 100 * DAY))
    assert "--ds-published" in error.what
    confirmed_at = BEGIN + 5_000
    confirmed = step(store, confirmed_at, ds_published=True)
    assert only(confirmed.keys, KSK, ZoneKeyState.DS_PUBLISHED).tag == new.tag
    assert only(confirmed.keys, KSK, ZoneKeyState.ACTIVE).tag == old.tag
    assert tags(cds_keys(confirmed.keys)) == {old.tag, new.tag}
    assert confirmed.next_step is not None
    activate_at = confirmed_at + TIMING.ds_wait
    assert confirmed.next_step.not_before == activate_at

    error = rollover_error(lambda: step(store, activate_at, ds_published=True))
    assert "--ds-published" in error.what
    assert only(store.zones.load(ZONE), KSK, ZoneKeyState.DS_PUBLISHED).tag == new.tag
    error = rollover_error(lambda: step(store, activate_at - 1))
    assert "too early" in error.what
    activated = step(store, activate_at)
    active = only(activated.keys, KSK, ZoneKeyState.ACTIVE)
    assert (active.tag, active.in_dnskey, active.signs) == (new.tag, True, True)
    retired = only(activated.keys, KSK, ZoneKeyState.RETIRED)
    assert (retired.tag, retired.in_dnskey, retired.in_ds) == (old.tag, False, True)
    assert by_tag(activated.keys, zsk.tag).state is ZoneKeyState.ACTIVE
    assert activated.ds_remove == ()
    # RFC 7583 double-DS: the old DS stays at the parent until Iret has passed
    assert tags(cds_keys(activated.keys)) == {old.tag, new.tag}

    withdraw_at = activate_at + TIMING.ksk_retire_wait
    rollover_error(lambda: step(store, withdraw_at - 1))
    withdrawn = step(store, withdraw_at)
    assert withdrawn.ds_remove == (old_ds,)
    gone = only(withdrawn.keys, KSK, ZoneKeyState.DS_WITHDRAWN)
    assert (gone.tag, gone.in_dnskey, gone.in_ds, gone.signs) == (old.tag, False, False, False)
    # CDS/CDNSKEY list the new KSK only: a polling parent drops the old DS (RFC 7344 4.1:
    # no CDS at all would tell it to change nothing)
    assert tags(cds_keys(withdrawn.keys)) == {new.tag}
    assert withdrawn.next_step is not None
    assert withdrawn.next_step.not_before is None  # waits for the parent again
    error = rollover_error(lambda: step(store, withdraw_at + 100 * DAY))
    assert "--ds-published" in error.what

    removed = step(store, withdraw_at + 3_600, ds_published=True)
    assert removed.ds_remove == ()
    assert cds_keys(removed.keys) == ()  # the rollover is over: no CDS/CDNSKEY
    assert removed.next_step is None
    assert {key.tag for key in store.zones.load(ZONE)} == {new.tag, zsk.tag}
    assert by_tag(store.zones.entries(ZONE, removed=True), old.tag).state is ZoneKeyState.REMOVED


# --- refusals and the published time ------------------------------------------------------


@pytest.mark.parametrize(
    ("running", "second"), [(ZSK, KSK), (ZSK, ZSK), (KSK, ZSK), (KSK, KSK)], ids=str
)
def test_begin_refuses_while_a_rollover_runs(
    store: KeyStore, running: ZoneKeyRole, second: ZoneKeyRole
) -> None:
    rollover.begin(store, ZONE, running, now=BEGIN, timing=TIMING)
    before = store.zones.load(ZONE)
    error = rollover_error(
        lambda: rollover.begin(store, ZONE, second, now=BEGIN + 1, timing=TIMING)
    )
    assert running.upper() in error.what
    assert (other := {ZSK: KSK, KSK: ZSK}[running]).upper() not in error.what, other
    assert [key.index_entry() for key in store.zones.load(ZONE)] == [
        key.index_entry() for key in before
    ]


def test_zsk_waits_count_from_the_later_of_since_and_published(store: KeyStore) -> None:
    rollover.begin(store, ZONE, ZSK, now=BEGIN, timing=TIMING)
    keys = store.zones.load(ZONE)
    signed_at = BEGIN + 3_000

    def not_before(published: int | None) -> int | None:
        upcoming = rollover.next_step(keys, TIMING, published)
        assert upcoming is not None
        return upcoming.not_before

    assert not_before(None) == BEGIN + TIMING.zsk_publish_wait
    assert not_before(BEGIN - 500) == BEGIN + TIMING.zsk_publish_wait
    assert not_before(signed_at) == signed_at + TIMING.zsk_publish_wait

    def step_published(now: int) -> StepResult:
        return rollover.step(store, ZONE, now=now, timing=TIMING, published=signed_at)

    rollover_error(lambda: step_published(BEGIN + TIMING.zsk_publish_wait))
    rollover_error(lambda: step_published(signed_at + TIMING.zsk_publish_wait - 1))
    activated = step_published(signed_at + TIMING.zsk_publish_wait)
    assert only(activated.keys, ZSK, ZoneKeyState.RETIRED).since == (
        signed_at + TIMING.zsk_publish_wait
    )

    keys = store.zones.load(ZONE)
    later = signed_at + TIMING.zsk_publish_wait + 2_000
    assert not_before(later) == later + TIMING.zsk_retire_wait


def test_begin_needs_an_active_key_of_the_role(store: KeyStore) -> None:
    keys = store.zones.load(ZONE)
    store.zones.save(
        ZONE, [key.moved(ZoneKeyState.REMOVED, NOW) if key.role is ZSK else key for key in keys]
    )
    error = rollover_error(lambda: rollover.begin(store, ZONE, ZSK, now=BEGIN, timing=TIMING))
    assert "no active ZSK" in error.what
    assert len(store.zones.entries(ZONE, removed=True)) == 2  # no key was made


# --- since and keys.json ------------------------------------------------------------------


def test_moved_keys_take_the_steps_now_and_keys_json_round_trips(store: KeyStore) -> None:
    ksk = only(store.zones.load(ZONE), KSK, ZoneKeyState.ACTIVE)
    begun = rollover.begin(store, ZONE, ZSK, now=BEGIN, timing=TIMING)
    new = only(begun.keys, ZSK, ZoneKeyState.PUBLISHED)
    at = BEGIN + TIMING.zsk_publish_wait + 77
    activated = step(store, at)
    assert by_tag(activated.keys, new.tag).since == at
    retired = only(activated.keys, ZSK, ZoneKeyState.RETIRED)
    assert (retired.since, retired.created) == (at, NOW)
    assert (by_tag(activated.keys, ksk.tag).since, by_tag(activated.keys, new.tag).created) == (
        NOW,
        BEGIN,
    )

    reloaded = KeyStore(store.root).zones.entries(ZONE, removed=True)
    assert [key.index_entry() for key in reloaded] == [key.index_entry() for key in activated.keys]
    for key in KeyStore(store.root).zones.load(ZONE):  # private keys load, and match
        assert key.entry == by_tag(activated.keys, key.tag)

    gone_at = at + TIMING.zsk_retire_wait + 5
    step(store, gone_at)
    removed = by_tag(KeyStore(store.root).zones.entries(ZONE, removed=True), retired.tag)
    assert (removed.state, removed.since) == (ZoneKeyState.REMOVED, gone_at)


# --- keyops over the real pipeline --------------------------------------------------------


def sign(workspace: Workspace, now: int) -> SerialState:
    """Sign the workspace zone at ``now``; the state file it leaves."""
    report = pipeline.sign(
        [workspace.zone_file], out=workspace.out, keys=workspace.keys, now=now, create_keys=True
    )
    assert report.ok
    state = SerialState.read(state_path_for(workspace.zone_file))
    assert state is not None
    assert state.keys_since is not None
    assert state.ttls is not None
    return state


def test_keyops_zsk_rollover_waits_count_from_the_sign(workspace: Workspace) -> None:
    zone = str(workspace.zone_file)
    spec = load_zone(workspace.zone_file)
    rules = spec.dnssec
    sign(workspace, NOW)
    status = keyops.dnssec_status(zone, keys=workspace.keys)
    assert (status.signed, status.next_step) == (True, None)

    started = keyops.dnssec_rollover(zone, ZSK, keys=workspace.keys, now=NOW + 60)
    new = only(started.keys, ZSK, ZoneKeyState.PUBLISHED)
    by_name = keyops.dnssec_status(
        "example.com", keys=workspace.keys, zones_dir=workspace.root / "zones"
    )
    assert by_name.signed is False
    assert by_name.next_step is not None
    assert by_name.next_step.not_before == NOW + 60 + rules.propagation_delay + spec.ttl
    error = rollover_error(lambda: keyops.dnssec_step(zone, keys=workspace.keys, now=NOW + DAY))
    assert "sign" in error.what
    assert only(workspace.keys.zones.load(ZONE), ZSK, ZoneKeyState.PUBLISHED).tag == new.tag

    signed_at = NOW + 2 * 3_600  # later than the rollover: the wait counts from here
    state = sign(workspace, signed_at)
    assert state.keys_since == signed_at
    status = keyops.dnssec_status(zone, keys=workspace.keys)
    assert status.signed is True
    assert status.next_step is not None
    activate_at = state.keys_since + rules.propagation_delay + spec.ttl
    assert status.next_step.not_before == activate_at
    assert (status.next_step.due(activate_at - 1), status.next_step.due(activate_at)) == (
        False,
        True,
    )
    rollover_error(lambda: keyops.dnssec_step(zone, keys=workspace.keys, now=activate_at - 1))
    activated = keyops.dnssec_step(zone, keys=workspace.keys, now=activate_at)
    assert only(activated.keys, ZSK, ZoneKeyState.ACTIVE).tag == new.tag
    assert keyops.dnssec_status(zone, keys=workspace.keys).signed is False

    state = sign(workspace, activate_at + 600)
    assert state.ttls is not None
    ttl_sig = min(max(state.ttls.cached_max, spec.ttl), rules.signature_validity)
    status = keyops.dnssec_status(zone, keys=workspace.keys)
    assert status.signed is True
    assert status.next_step is not None
    remove_at = activate_at + 600 + rules.propagation_delay + ttl_sig
    assert status.next_step.not_before == remove_at
    finished = keyops.dnssec_step(zone, keys=workspace.keys, now=remove_at)
    assert finished.next_step is None
    assert len(finished.keys) == 2
    sign(workspace, remove_at + 60)
    assert keyops.dnssec_status(zone, keys=workspace.keys).signed is True


def test_keyops_ksk_rollover_offers_both_ds(workspace: Workspace) -> None:
    zone = str(workspace.zone_file)
    sign(workspace, NOW)
    old = only(workspace.keys.zones.load(ZONE), KSK, ZoneKeyState.ACTIVE)
    started = keyops.dnssec_rollover(zone, KSK, keys=workspace.keys, now=NOW + 60)
    new = only(started.keys, KSK, ZoneKeyState.DS_SUBMITTED)
    ttl = load_zone(workspace.zone_file).ttl
    expected = sorted(ds_line(ORIGIN, key, ttl) for key in (old, new))
    assert sorted(started.ds_submit) == expected
    assert sorted(keyops.dnssec_status(zone, keys=workspace.keys).ds) == expected
    sign(workspace, NOW + 120)
    error = rollover_error(
        lambda: keyops.dnssec_rollover(zone, ZSK, keys=workspace.keys, now=NOW + 180)
    )
    assert "KSK" in error.what
    assert len(workspace.keys.zones.load(ZONE)) == 3  # no ZSK was made
