"""``check`` on a fleet that ``push`` publishes to, delegated from the loopback hierarchy.

Issue 15, "Done when": a BIND primary with NSD and Knot secondaries: ``push``
converges all three and ``check`` passes; stopping one secondary gives exit 7 naming
it. The fleet serves example.com on three more addresses of the hierarchy's block
(127.0.N.6 BIND, .7 NSD, .8 Knot, port 53), and the hierarchy's ``com.`` delegates
example.com to them (ns1, ns2, ns3.example.com., glue, the DS of the key the
primary signs with). BIND signs the zone itself (inline signing), takes the alter1
records and the log's ``_alter-log`` checkpoint record by TSIG-signed UPDATE and
NOTIFYs NSD and Knot, which transfer it; ``check --primary`` compares the checkpoint
each serves with ``build/<zone>/log/checkpoint``.
"""

from __future__ import annotations

import base64
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dns.name
import dns.query
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.TXT
import dns.update
import pytest

from alter_publish.errors import EXIT_DRIFT, EXIT_OK, EXIT_USAGE, EXIT_VERIFICATION
from alter_publish.format.envelope import split_txt
from alter_publish.pipeline.clock import SIMULATED_TIME_FLAG
from alter_publish.publish.push import read_tsig_key
from tests.integration.hierarchy import (
    DNS_PORT,
    Delegation,
    Hierarchy,
    HierarchyLab,
    Scenario,
    _add_loopback_addresses,
    _delete_loopback_addresses,
)
from tests.integration.servers import Knot, Named, Nsd, make_tsig_key
from tests.integration.test_push import Workspace

ZONE = "example.com"
LOG_OWNER = f"_alter-log.{ZONE}."
LOG_PREFIX = "v=alter-log1; n="
NAMES = ("ns1.example.com.", "ns2.example.com.", "ns3.example.com.")
#: The last octets of the fleet's addresses in the hierarchy's block (.1 to .5 and .53
#: are the hierarchy's).
OCTETS = (6, 7, 8)
#: How long the push that finds a secondary stopped waits for it.
SHORT_WAIT_SECONDS = 2
#: How long a restarted secondary may take to transfer the zone.
CATCH_UP_SECONDS = 10


def _definition(addresses: tuple[str, ...], resolver: str) -> str:
    hosts = ", ".join(f"ns{i}: [{a}]" for i, a in enumerate(addresses, start=1))
    return f"""zone: example.com
ttl: 5m
soa:
  mname: {NAMES[0]}
  rname: hostmaster.example.com.
  refresh: 2h
  retry: 1h
  expire: 2w
  minimum: 5m
ns: [{", ".join(NAMES)}]
hosts: {{{hosts}}}
envelopes: {{lifetime: 30d, renew_before: 7d}}
dnssec:
  enabled: true
  denial: nsec3
  nsec3: {{iterations: 0, salt: "-"}}
  signature_validity: 14d
  refresh: 5d
handles:
  - handle: ~example.com
    resolver: https://mcp.example.com/api/v1/mcp
  - handle: ~blake
    resolver: {resolver}
  - ~drew
"""


def _server_zone(addresses: tuple[str, ...]) -> str:
    lines = [
        "$ORIGIN example.com.",
        "$TTL 300",
        f"@ IN SOA {NAMES[0]} hostmaster.example.com. 1 7200 3600 1209600 300",
        *(f"@ IN NS {name}" for name in NAMES),
        *(f"{name} IN A {address}" for name, address in zip(NAMES, addresses, strict=True)),
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class WorldFleet:
    """The fleet, its workspace, the TSIG key, the primary's DS, the hierarchy."""

    primary: Named
    nsd: Nsd
    knot: Knot
    ws: Workspace
    key_file: Path
    anchor: Path
    hierarchy: Hierarchy
    addresses: tuple[str, ...]

    @property
    def specs(self) -> tuple[str, ...]:
        return tuple(f"{address}:{DNS_PORT}" for address in self.addresses)

    def push(self, *extra: str) -> subprocess.CompletedProcess[str]:
        ns = [arg for spec in self.specs for arg in ("--ns", spec)]
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
            SIMULATED_TIME_FLAG,
            *ns,
            *extra,
        )

    def check(self, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.ws.run(
            "check",
            ZONE,
            "--root-hints",
            str(self.hierarchy.root_hints),
            "--trust-anchor",
            str(self.hierarchy.anchor_file),
            "--timeout",
            "1",
            *extra,
        )

    def sign(self, resolver: str) -> None:
        definition = self.ws.root / "zones" / f"{ZONE}.yaml"
        definition.write_text(_definition(self.addresses, resolver), encoding="utf-8")
        self.ws.ok("sign", "--now", str(self.ws.now))


@pytest.fixture
def world_fleet(hierarchy_lab: HierarchyLab, tmp_path: Path) -> Iterator[WorldFleet]:
    """The fleet on 127.0.N.6-8:53, delegated from the hierarchy's ``com.``."""
    hierarchy = hierarchy_lab.apply(Scenario.ALL_GOOD)
    block = hierarchy.addresses.root.rsplit(".", 1)[0]
    addresses = tuple(f"{block}.{octet}" for octet in OCTETS)
    ws = Workspace(tmp_path / "ws", int(time.time()))
    (ws.root / "zones" / f"{ZONE}.yaml").write_text(
        _definition(addresses, "https://mcp.example.com/blake"), encoding="utf-8"
    )
    ws.ok("sign", "--create-keys", "--now", str(ws.now))
    key, key_file = make_tsig_key(tmp_path, "alter-push")
    zone_file = tmp_path / "server.zone"
    zone_file.write_text(_server_zone(addresses), encoding="utf-8")
    added = _add_loopback_addresses(addresses)
    try:
        primary = Named(
            tmp_path / "named",
            ZONE,
            zone_file,
            tsig=key,
            allow_update=True,
            inline_signing=True,
            host=addresses[0],
            port=DNS_PORT,
            notify=[(address, DNS_PORT) for address in addresses[1:]],
        )
        with primary:
            nsd = Nsd(
                tmp_path / "nsd",
                ZONE,
                None,
                tsig=key,
                host=addresses[1],
                port=DNS_PORT,
                secondary_of=primary.address,
            )
            knot = Knot(
                tmp_path / "knot",
                ZONE,
                None,
                tsig=key,
                host=addresses[2],
                port=DNS_PORT,
                secondary_of=primary.address,
            )
            with nsd, knot:
                anchor = primary.write_trust_anchor(tmp_path / "primary-ds.txt")
                ds = tuple(line.split(" DS ", 1)[1] for line in primary.trust_anchor_ds())
                hierarchy = hierarchy_lab.set_delegation(
                    Delegation(ns=tuple(zip(NAMES, addresses, strict=True)), ds=ds)
                )
                yield WorldFleet(primary, nsd, knot, ws, key_file, anchor, hierarchy, addresses)
    finally:
        hierarchy_lab.apply(Scenario.ALL_GOOD)
        _delete_loopback_addresses(added)


def test_push_converges_the_fleet_and_check_passes(world_fleet: WorldFleet) -> None:
    pushed = world_fleet.push()
    assert pushed.returncode == EXIT_OK, pushed.stdout + pushed.stderr
    assert "served by all 3 name server(s)" in pushed.stdout
    checked = world_fleet.check("--primary", world_fleet.primary.server_spec)
    # Before --primary: "No such option: --primary" (exit 2).
    assert checked.returncode == EXIT_OK, checked.stdout + checked.stderr
    assert "3 name server address(es) and 1 of the parent com. checked; 0 finding(s)" in (
        checked.stdout
    )
    # Without it, check expects sign's serial and DS: the primary signs with its own.
    unaware = world_fleet.check()
    assert unaware.returncode == EXIT_VERIFICATION, unaware.stdout + unaware.stderr
    assert "error ds-mismatch at ns1.nic.com." in unaware.stdout
    assert unaware.stdout.count("converging serial-behind at ns") == 3


def test_a_stopped_secondary_push_exits_7_and_check_1_naming_it(world_fleet: WorldFleet) -> None:
    """A stopped secondary: ``push`` gives up after ``--wait``, exit 7 (it may yet catch
    up); ``check`` reports it ``unreachable``, an error, exit 1: a server that does not
    answer is not converging (docs/after-publishing.md). Started again, it transfers
    the zone and ``check`` passes."""
    assert world_fleet.push().returncode == EXIT_OK
    stopped = world_fleet.knot
    where = f"ns3.example.com. ({world_fleet.addresses[2]})"
    stopped.stop()
    world_fleet.sign("https://mcp.example.com/blake-new")
    pushed = world_fleet.push("--wait", str(SHORT_WAIT_SECONDS))
    assert pushed.returncode == EXIT_DRIFT, pushed.stdout + pushed.stderr
    assert f"{world_fleet.addresses[2]} gives no serial (no answer)" in pushed.stderr
    primary = world_fleet.primary.server_spec
    checked = world_fleet.check("--primary", primary)
    assert checked.returncode == EXIT_VERIFICATION, checked.stdout + checked.stderr
    findings = [line for line in checked.stdout.splitlines() if " at " in line]
    assert findings == [
        f"example.com: error unreachable at {where}: no answer from "
        f"{world_fleet.specs[2]} within 1 s"
    ], checked.stdout
    stopped.start()
    serial = world_fleet.primary.soa_serial()
    deadline = time.monotonic() + CATCH_UP_SECONDS
    while stopped.soa_serial() != serial and time.monotonic() < deadline:
        time.sleep(0.2)
    checked = world_fleet.check("--primary", primary)
    assert checked.returncode == EXIT_OK, checked.stdout + checked.stderr


def _replace_checkpoint_by_hand(world_fleet: WorldFleet) -> None:
    """On the primary, swap the ``_alter-log`` record for one whose checkpoint claims one
    more entry (signature lines kept): what a stale or forged push would leave."""
    (served,) = world_fleet.primary.rrset(LOG_OWNER, dns.rdatatype.TXT)
    assert isinstance(served, dns.rdtypes.ANY.TXT.TXT)
    text = b"".join(served.strings).decode("ascii")
    assert text.startswith(LOG_PREFIX)
    lines = base64.b64decode(text.removeprefix(LOG_PREFIX)).decode("utf-8").split("\n")
    lines[1] = str(int(lines[1]) + 1)
    forged = LOG_PREFIX + base64.b64encode("\n".join(lines).encode("utf-8")).decode("ascii")
    key = read_tsig_key(world_fleet.key_file)
    update = dns.update.UpdateMessage(
        ZONE + ".", keyring=key.keyring, keyname=key.keyname, keyalgorithm=key.algorithm
    )
    update.delete(LOG_OWNER, "TXT")
    rdata = dns.rdtypes.ANY.TXT.TXT(dns.rdataclass.IN, dns.rdatatype.TXT, split_txt(forged))
    update.add(LOG_OWNER, 300, rdata)
    host, port = world_fleet.primary.address
    assert dns.query.tcp(update, host, port=port, timeout=5).rcode() == 0


def test_check_primary_finds_a_checkpoint_record_that_is_not_signs(
    world_fleet: WorldFleet,
) -> None:
    assert world_fleet.push().returncode == EXIT_OK
    _replace_checkpoint_by_hand(world_fleet)
    serial = world_fleet.primary.soa_serial()
    deadline = time.monotonic() + CATCH_UP_SECONDS
    secondaries = (world_fleet.nsd, world_fleet.knot)
    while any(s.soa_serial() != serial for s in secondaries) and time.monotonic() < deadline:
        time.sleep(0.2)

    checked = world_fleet.check("--primary", world_fleet.primary.server_spec)

    # Before: check --primary did not compare the record (push did not send it): exit 0.
    assert checked.returncode == EXIT_VERIFICATION, checked.stdout + checked.stderr
    findings = [line for line in checked.stdout.splitlines() if " at " in line]
    assert len(findings) == 3, checked.stdout
    assert all(" error log-checkpoint-differs at ns" in line for line in findings), findings
    assert all(f"{LOG_OWNER}: serves the checkpoint of size" in line for line in findings)
    # The served checkpoint claims a bigger tree: putting sign's back is a rollback to
    # push refuses without --force; forced, it does, and check passes again.
    refused = world_fleet.push()
    assert refused.returncode == EXIT_USAGE, refused.stdout + refused.stderr
    assert "would replace the served checkpoint of size" in refused.stderr
    assert world_fleet.push("--force").returncode == EXIT_OK
    assert world_fleet.check("--primary", world_fleet.primary.server_spec).returncode == EXIT_OK
