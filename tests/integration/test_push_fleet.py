"""``push`` and ``plan --all-ns`` to a fleet: a signing primary and its secondaries.

BIND is the primary: it signs the zone itself (inline signing), takes the alter1 records
by TSIG-signed UPDATE and NOTIFYs its secondaries, NSD and Knot, each on its own loopback
port, which then transfer the zone from it (IXFR/AXFR, TSIG). Checked: a push waits
until every name server serves the pushed serial and proves the records at each; with a
secondary stopped it gives up after --timeout, exit 7, naming the server; ``plan
--all-ns`` lists the serial each serves, and which lag the primary (here a secondary
the primary does not NOTIFY, which only catches up at its SOA refresh, hours away).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from alter_publish.errors import EXIT_DRIFT, EXIT_OK
from alter_publish.pipeline.clock import SIMULATED_TIME_FLAG
from tests.integration.dnssec_tools import free_port
from tests.integration.servers import LOOPBACK, AuthoritativeServer, Knot, Named, Nsd, make_tsig_key
from tests.integration.test_push import SERVER_ZONE, ZONE, Workspace

#: How long a push may wait for the fleet in the test that stops a secondary.
SHORT_WAIT_SECONDS = 3


@dataclass(frozen=True)
class Fleet:
    """The primary, its two secondaries, the signed workspace, the TSIG key and DS files."""

    primary: Named
    nsd: Nsd
    knot: Knot
    ws: Workspace
    key_file: Path
    anchor: Path
    root: Path

    @property
    def servers(self) -> tuple[AuthoritativeServer, ...]:
        return (self.primary, self.nsd, self.knot)

    def ns_args(self, *servers: AuthoritativeServer) -> tuple[str, ...]:
        return tuple(arg for s in servers or self.servers for arg in ("--ns", s.server_spec))

    def push(self, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.ws.run(
            "push",
            ZONE,
            "--server",
            self.primary.server_spec,
            "--tsig-key",
            str(self.key_file),
            "--trust-anchor",
            str(self.anchor),
            "--now",
            str(self.ws.now),
            SIMULATED_TIME_FLAG,  # ws.now was read from the clock when the test began
            *extra,
        )

    def plan_all_ns(self, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.ws.run(
            "plan",
            ZONE,
            "--server",
            self.primary.server_spec,
            "--tsig-key",
            str(self.key_file),
            "--all-ns",
            *extra,
        )


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    """BIND (inline signing, TSIG updates) NOTIFYing an NSD and a Knot secondary."""
    ws = Workspace(tmp_path / "ws", int(time.time()))
    ws.ok("sign", "--create-keys", "--now", str(ws.now))
    key, key_file = make_tsig_key(tmp_path, "alter-push")
    zone_file = tmp_path / "server.zone"
    zone_file.write_text(SERVER_ZONE, encoding="utf-8")
    ports = (free_port(LOOPBACK), free_port(LOOPBACK))
    primary = Named(
        tmp_path / "named",
        ZONE,
        zone_file,
        tsig=key,
        allow_update=True,
        inline_signing=True,
        notify=[(LOOPBACK, port) for port in ports],
    )
    with primary:
        nsd = Nsd(
            tmp_path / "nsd", ZONE, None, tsig=key, port=ports[0], secondary_of=primary.address
        )
        knot = Knot(
            tmp_path / "knot", ZONE, None, tsig=key, port=ports[1], secondary_of=primary.address
        )
        with nsd, knot:
            anchor = primary.write_trust_anchor(tmp_path / "server-ds.txt")
            yield Fleet(primary, nsd, knot, ws, key_file, anchor, tmp_path)


def test_push_waits_for_every_name_server_and_proves_each(fleet: Fleet) -> None:
    before = fleet.primary.soa_serial()
    assert {server.soa_serial() for server in fleet.servers} == {before}
    pushed = fleet.push(*fleet.ns_args())
    # Before the fleet: "no such option: --ns" (exit 2).
    assert pushed.returncode == EXIT_OK, pushed.stdout + pushed.stderr
    serial = fleet.primary.soa_serial()
    assert serial > before
    assert [server.soa_serial() for server in fleet.servers] == [serial] * 3
    assert f"{ZONE}: serial {serial} served by all 3 name server(s)" in pushed.stdout
    for server in fleet.servers:  # the primary's proof, then one per name server
        assert f"5/5 handles verified on {server.server_spec} (secure)" in pushed.stdout
    # One handle edited: the primary (its plan read by zone transfer) is proven for it,
    # each copy for every handle (a copy proven for one name only could serve stale or
    # badly signed records for the rest at the same serial).
    definition = fleet.ws.root / "zones" / f"{ZONE}.yaml"
    text = definition.read_text(encoding="utf-8")
    assert "  - ~drew\n" in text
    definition.write_text(
        text.replace("  - ~drew\n", "  - {handle: ~drew, resolver: 'https://drew.example/'}\n"),
        encoding="utf-8",
    )
    fleet.ws.ok("sign", "--now", str(fleet.ws.now + 60), SIMULATED_TIME_FLAG)
    again = fleet.push(*fleet.ns_args())
    assert again.returncode == EXIT_OK, again.stdout + again.stderr
    assert f"1/1 handles verified on {fleet.primary.server_spec} (secure)" in again.stdout
    for server in fleet.servers[1:]:
        assert f"5/5 handles verified on {server.server_spec} (secure)" in again.stdout


def test_push_with_a_secondary_stopped_exits_7_naming_it(fleet: Fleet) -> None:
    stopped = fleet.knot.server_spec
    fleet.knot.stop()
    start = time.monotonic()
    pushed = fleet.push(
        *fleet.ns_args(fleet.primary, fleet.nsd),
        "--ns",
        stopped,
        "--wait",
        str(SHORT_WAIT_SECONDS),
    )
    elapsed = time.monotonic() - start
    # Before the fleet: "no such option: --ns" (exit 2).
    assert pushed.returncode == EXIT_DRIFT, pushed.stdout + pushed.stderr
    lines = [line for line in pushed.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, pushed.stderr
    serial = fleet.primary.soa_serial()
    assert f"{ZONE}: {stopped} gives no serial (no answer), pushed {serial}" in lines[0]
    assert elapsed < SHORT_WAIT_SECONDS + 15, elapsed  # the push itself, then the bounded wait
    assert fleet.nsd.soa_serial() == serial  # the others converged meanwhile
    assert "5/5 handles verified on " + fleet.primary.server_spec in pushed.stdout


def test_plan_all_ns_shows_each_serial_and_who_lags(fleet: Fleet) -> None:
    # A secondary the primary does not NOTIFY: it catches up at the SOA refresh (2 h).
    with Nsd(
        fleet.root / "nsd-unnotified",
        ZONE,
        None,
        tsig=fleet.primary.tsig,
        secondary_of=fleet.primary.address,
    ) as quiet:
        old = quiet.soa_serial()
        everyone = (*fleet.servers, quiet)
        synced = fleet.plan_all_ns(*fleet.ns_args(*everyone), "--json")
        # Before the fleet: "no such option: --all-ns" (exit 2).
        assert synced.returncode == EXIT_DRIFT, synced.stderr  # 5 owner names to add
        mapping = json.loads(synced.stdout)["name_servers"]
        assert [s["serial"] for s in mapping["servers"]] == [old] * 4
        assert not any(s["lags"] for s in mapping["servers"])
        pushed = fleet.push(*fleet.ns_args(*everyone), "--wait", "1")
        assert pushed.returncode == EXIT_DRIFT, pushed.stdout + pushed.stderr
        serial = fleet.primary.soa_serial()
        assert f"{quiet.server_spec} still serves serial {old}, pushed {serial}" in pushed.stderr
        plan = fleet.plan_all_ns(*fleet.ns_args(*everyone))
        assert plan.returncode == EXIT_DRIFT, plan.stdout + plan.stderr
        assert f"the primary {fleet.primary.server_spec} serves serial {serial}" in plan.stdout
        for server in fleet.servers:
            assert f"  {server.server_spec}: serves serial {serial}\n" in plan.stdout
        assert f"  {quiet.server_spec}: serves serial {old}, behind {serial}\n" in plan.stdout
        assert plan.stderr.strip().endswith(
            f"{ZONE}: {quiet.server_spec} still serves serial {old}, the primary serves {serial}"
        )


def test_push_with_no_wait_proves_the_primary_only(fleet: Fleet) -> None:
    """``--wait 0``: a push host that cannot reach the secondaries (or has no IPv6 for
    them) proves the primary and does not wait."""
    stopped = fleet.knot.server_spec
    fleet.knot.stop()
    pushed = fleet.push(*fleet.ns_args(fleet.primary, fleet.nsd), "--ns", stopped, "--wait", "0")
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert "5/5 handles verified on " + fleet.primary.server_spec in pushed.stdout
    assert stopped not in pushed.stdout
