"""Renewals spread out: daily runs after a first sign renew a bounded share of the zone.

A zone is signed at NOW, then signed again every day. Each envelope's ``x=`` and each
owner's RRSIG window fall on the name's own renewal slot (docs/dnssec.md and
docs/zones.md, 'Spread renewals'), so no day renews every envelope or every RRSIG; over
one cycle every name is renewed once. Every day the run is made twice, on the
workspace (whatever strategy applies) and on a copy with ``incremental=False``, and
the outputs must be the same bytes. The daily runs are patches (the envelopes due
signed again like edits, the RRSIGs whose owner's slot started made again in place),
for NSEC and NSEC3 denial alike.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import alter_publish.pipeline.renewsoon as renewsoon
from alter_publish.definition.model import load_zone
from alter_publish.definition.state import SerialState, state_path_for
from alter_publish.dns.chainpatch import SignedSection
from alter_publish.dns.dnssec import choose_window
from alter_publish.dns.records import labels_of
from alter_publish.dns.renewdue import due_owners
from alter_publish.format.handles import parse_handle
from alter_publish.keys.store import KeyStore
from alter_publish.pipeline import SignReport, sign
from alter_publish.pipeline.patchrenew import DNSSEC_HEADER
from tests.conftest import NOW

ZONE = "renew.example"
HANDLES = 120
DAY_SECONDS = 86_400
OUTPUTS = (
    f"build/{ZONE}.zone",
    f"build/{ZONE}.envelopes.json",
    f"build/{ZONE}.ds",
    f"zones/{ZONE}.log",
    f"zones/{ZONE}.state.json",
)
#: lifetime 10d, renew_before 2d: renewal due 8d after signing, spread over 7 daily
#: slots; RRSIGs 14d, refreshed 5d before expiry: 9 daily slots.
ENVELOPE_SLOTS = 7
RRSIG_SLOTS = 9


def _definition(denial: str = "nsec3") -> str:
    lines = [
        f"zone: {ZONE}",
        "ttl: 1h",
        f"ns: [ns1.{ZONE}.]",
        "hosts: {ns1: [192.0.2.1]}",
        f"dnssec: {{enabled: true, denial: {denial}}}",
        "envelopes: {lifetime: 10d, renew_before: 2d}",
        "handles:",
        *(f"  - ~user{n}" for n in range(1, HANDLES + 1)),
    ]
    return "\n".join(lines) + "\n"


def _sign(root: Path, now: int, *, incremental: bool = True, jobs: int = 1) -> SignReport:
    report = sign(
        [root / "zones" / f"{ZONE}.yaml"],
        out=root / "build",
        keys=KeyStore(root / "keys"),
        now=now,
        create_keys=True,
        incremental=incremental,
        jobs=jobs,
    )
    assert report.ok
    return report


@pytest.mark.slow  # 16 daily runs, each twice (patched and full): ~30 s
@pytest.mark.parametrize("denial", ["nsec3", "nsec"])
def test_daily_runs_renew_a_bounded_share(tmp_path: Path, denial: str) -> None:
    root = tmp_path / "ws"
    (root / "zones").mkdir(parents=True)
    (root / "zones" / f"{ZONE}.yaml").write_text(_definition(denial))
    first = _sign(root, NOW).zones[0]
    assert first.signed == HANDLES
    assert first.dnssec is not None
    signatures = int(first.dnssec["signatures"])
    envelopes_per_day: list[int] = []
    rrsigs_per_day: list[int | None] = []
    for day in range(1, 17):
        now = NOW + day * DAY_SECONDS + 3 * 3600  # a daily run at 03:00
        twin = tmp_path / f"twin-{day}"
        shutil.copytree(root, twin)
        zone = _sign(root, now).zones[0]
        full = _sign(twin, now, incremental=False).zones[0]
        for name in OUTPUTS:
            assert (root / name).read_bytes() == (twin / name).read_bytes(), (day, name)
        # A patch, not a full signing: just the handles due signed again.
        assert zone.patched is not None, (day, zone.changes)
        assert full.patched is None
        assert zone.signed == full.signed
        assert zone.changes == full.changes, day
        assert zone.dnssec == full.dnssec, day
        envelopes_per_day.append(full.signed)
        assert full.dnssec is not None
        rrsigs_per_day.append(full.dnssec.get("renewed"))
        shutil.rmtree(twin)
    # Envelopes: none due the first day after signing, then each renewed once in the
    # 7 slots after, a bounded share a day (never all: that was every 8th day before).
    assert envelopes_per_day[0] == 0
    assert sum(envelopes_per_day[:8]) == HANDLES
    assert max(envelopes_per_day) <= 3 * HANDLES // ENVELOPE_SLOTS, envelopes_per_day
    # RRSIGs: the SOA's and NSEC3PARAM's change whenever the serial does; the rest are
    # spread over 9 slots.
    counts = [count for count in rrsigs_per_day if count is not None]
    assert len(counts) == len(rrsigs_per_day)
    assert max(counts) <= 3 * signatures // RRSIG_SLOTS, (counts, signatures)
    assert min(counts) > 0
    assert sum(counts[:RRSIG_SLOTS]) >= signatures


#: Changes made on a renewal day beside what falls due (the definition's text edited):
#: a handle's entry edited, one added, one removed.
_DAY_CHANGES = {
    2: ("  - ~user7\n", "  - {handle: ~user7, resolver: https://renew.example/x}\n"),
    5: ("  - ~user9\n", "  - ~user9\n  - ~newcomer\n"),
    6: ("  - ~user11\n", ""),
}


def _spy_renewals(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each renewal the workers made was taken (True) or made again (False)."""
    monkeypatch.setattr(renewsoon, "MIN_RRSIGS", 0)  # workers for a small zone too
    taken: list[bool] = []
    take = renewsoon.RenewalSoon.renewal

    def spied(self: renewsoon.RenewalSoon, *args: Any) -> Any:
        result = take(self, *args)
        taken.append(result is not None)
        return result

    monkeypatch.setattr(renewsoon.RenewalSoon, "renewal", spied)
    return taken


@pytest.mark.slow  # 7 signings on workers, 6 full ones: ~8 s each
@pytest.mark.parametrize(
    ("denial", "workers"),
    [("nsec3", "made"), ("nsec", "made"), ("nsec3", "failed"), ("nsec3", "stale head")],
)
def test_renewals_made_by_workers_are_a_full_runs_bytes(
    tmp_path: Path, denial: str, workers: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A day's RRSIGs are found and made by workers beside the envelopes and the render
    # (at 100,000 handles, from about 4,000 due), on days when handles change too (the
    # rrsets the patch signs anyway left out of theirs); when a worker's part fails,
    # the patch makes them itself, to the same bytes.
    taken = _spy_renewals(monkeypatch)
    if workers == "failed":

        def fails(self: Any, span: tuple[int, int]) -> Any:
            raise RuntimeError("a worker's part failed")

        monkeypatch.setattr(renewsoon._Job, "part", fails)
    if workers == "stale head":  # the NS and A rrsets as a worker read them are not today's
        part = renewsoon._Job.part

        def stale(self: Any, span: tuple[int, int]) -> Any:
            return [
                (labels, rdtype, ttl + 1, *rest) if rdtype in (1, 2) else made
                for made in part(self, span)
                for labels, rdtype, ttl, *rest in [made]
            ]

        monkeypatch.setattr(renewsoon._Job, "part", stale)
    root = tmp_path / "ws"
    (root / "zones").mkdir(parents=True)
    definition = root / "zones" / f"{ZONE}.yaml"
    definition.write_text(_definition(denial))
    _sign(root, NOW, jobs=2)
    days = (1, 2, 5, 6, 8, 9)  # the apex's NS due on day 8, ns1's A on day 9
    for day in days:
        if day in _DAY_CHANGES:
            old, new = _DAY_CHANGES[day]
            assert old in definition.read_text()
            definition.write_text(definition.read_text().replace(old, new))
        # The handle added gets its key before the twin is copied: one key for both.
        KeyStore(root / "keys").current_material(ZONE, parse_handle("~newcomer"), create=True)
        now = NOW + day * DAY_SECONDS + 3 * 3600
        twin = tmp_path / f"twin-{day}"
        shutil.copytree(root, twin)
        zone = _sign(root, now, jobs=2).zones[0]
        _sign(twin, now, incremental=False)
        assert zone.patched is not None, (day, zone.changes)
        for name in OUTPUTS:
            assert (root / name).read_bytes() == (twin / name).read_bytes(), (day, name)
        shutil.rmtree(twin)
    tampered = workers == "stale head"
    assert taken == [workers == "made" or (tampered and day not in (8, 9)) for day in days]


def test_owners_due_found_in_parts_cut_anywhere_are_each_found_once(tmp_path: Path) -> None:
    # The workers each take the owners whose block starts in their part of the DNSSEC
    # section: cut at any byte, the parts together find what the whole finds, each once.
    root = tmp_path / "ws"
    (root / "zones").mkdir(parents=True)
    definition = root / "zones" / f"{ZONE}.yaml"
    definition.write_text(_definition())
    _sign(root, NOW)
    data = (root / "build" / f"{ZONE}.zone").read_bytes()
    previous = SerialState.read(state_path_for(definition))
    assert previous is not None
    assert previous.signatures is not None
    spec = load_zone(definition).dnssec
    window = choose_window(NOW + 2 * DAY_SECONDS + 3 * 3600, spec)
    header = DNSSEC_HEADER.search(data)
    assert header is not None
    section = SignedSection(data, header.end(), len(data), labels_of(f"{ZONE}."))
    whole = [due.block for due in due_owners(section, previous.signatures, window, spec)]
    assert whole  # two slots started: owners fall due
    lines = [
        section.start,
        *(at + 1 for at in range(section.start, section.end - 1) if data[at : at + 1] == b"\n"),
    ]
    for cut in sorted({*lines[::7], *(at + 3 for at in lines[::11]), section.end}):
        parts = [
            due.block
            for span in ((section.start, cut), (cut, section.end))
            for due in due_owners(section, previous.signatures, window, spec, span)
        ]
        assert sorted(parts, key=lambda block: block.start) == sorted(
            whole, key=lambda block: block.start
        ), cut
