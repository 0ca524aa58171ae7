"""CDS and CDNSKEY (RFC 7344, RFC 8078) through a KSK rollover on the command line.

A registry that polls its children reads the CDS/CDNSKEY rrsets at the apex as the DS
set the child wants the parent to hold. ``sign`` publishes them while a KSK rollover
runs, listing the KSKs whose DS the parent should hold at that moment (the zone's DS
file), signed by the KSK that signs the DNSKEY set; none before or after. At every
stage the zone is parsed back with dnspython, the rrsets are checked against the key
store and validated, and ``verify``, ldns-verify-zone and BIND's dnssec-verify accept
the whole zone.

dnssec-verify has no option to set the time, so the rollover runs in simulated time
ending before the real clock: every signature window covers the real now.
"""

from __future__ import annotations

import base64
import json
import shutil
import time
from pathlib import Path
from typing import Any

import dns.dnssec
import dns.name
import dns.rdatatype
import dns.rdtypes.ANY.CDNSKEY
import dns.rdtypes.ANY.NSEC3
import dns.rdtypes.ANY.RRSIG
import dns.rrset
import dns.zone
import pytest

from alter_publish.pipeline import read_zone_file
from tests.cli.workspace import ZONE, Result, Workspace, simulated
from tests.integration.dnssec_tools import dnssec_verify, ldns_verify_zone, require_tool

SOURCE_DEFINITION = Path(__file__).resolve().parents[2] / "zones" / f"{ZONE}.yaml"
DAY_SECONDS = 86400
ORIGIN = dns.name.from_text(ZONE)
SHA256 = 2  # DS digest type (RFC 4509)
KSK_FLAGS = 257


def _ok(result: Result) -> Result:
    assert result.returncode == 0, result.describe()
    assert "Traceback" not in result.stderr, result.describe()
    return result


def _keys(ws: Workspace, moment: int) -> list[dict[str, Any]]:
    status = _ok(ws.run("dnssec", "status", ZONE, "--now", str(moment), "--json"))
    keys: list[dict[str, Any]] = json.loads(status.stdout)["keys"]
    return keys


def _tags(keys: list[dict[str, Any]], *states: str) -> set[int]:
    return {key["tag"] for key in keys if key["role"] == "ksk" and key["state"] in states}


def _public(key: dict[str, Any]) -> bytes:
    text: str = key["public_key"]
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _rrset(zone: dns.zone.Zone, rdtype: str, covers: str | None = None) -> dns.rrset.RRset | None:
    rdataset = zone.get_rdataset(ORIGIN, rdtype, covers=covers or "TYPE0")
    return (
        None
        if rdataset is None
        else dns.rrset.from_rdata_list(ORIGIN, rdataset.ttl, list(rdataset))
    )


def _apex_types(zone: dns.zone.Zone) -> set[str]:
    """The types the apex's NSEC3 says it holds (the example zone uses NSEC3, no salt)."""
    owner = dns.name.from_text(dns.dnssec.nsec3_hash(ORIGIN, None, 0, 1).lower(), ORIGIN)
    rdataset = zone.get_rdataset(owner, "NSEC3")
    assert rdataset is not None, "no NSEC3 for the apex"
    (nsec3,) = [rdata for rdata in rdataset if isinstance(rdata, dns.rdtypes.ANY.NSEC3.NSEC3)]
    return {
        dns.rdatatype.to_text(dns.rdatatype.RdataType.make(window * 256 + index * 8 + bit))
        for window, bitmap in nsec3.windows
        for index, octet in enumerate(bitmap)
        for bit in range(8)
        if octet & (0x80 >> bit)
    }


def _check_stage(ws: Workspace, moment: int, listed: set[int], signer: int) -> None:
    """The zone signed at ``moment`` publishes CDS/CDNSKEY for exactly the KSKs ``listed``
    (none when empty), signed by the KSK ``signer``; every validator accepts the zone."""
    zone = read_zone_file(ws.zone_file, ZONE)
    dnskeys = _rrset(zone, "DNSKEY")
    assert dnskeys is not None
    cds, cdnskey = _rrset(zone, "CDS"), _rrset(zone, "CDNSKEY")
    store = {key["tag"]: key for key in _keys(ws, moment)}
    if not listed:
        assert (cds, cdnskey) == (None, None), "CDS/CDNSKEY outside a KSK rollover"
        assert not {"CDS", "CDNSKEY"} & _apex_types(zone)
        assert _rrset(zone, "RRSIG", "CDS") is None
        assert _rrset(zone, "RRSIG", "CDNSKEY") is None
    else:
        assert cds is not None, "no CDS during a KSK rollover"
        assert cdnskey is not None, "no CDNSKEY during a KSK rollover"
        assert cds.ttl == cdnskey.ttl == dnskeys.ttl
        assert {rdata.key_tag for rdata in cds} == listed
        assert {rdata.digest_type for rdata in cds} == {SHA256}
        ds_file = (ws.root / "build" / f"{ZONE}.ds").read_text(encoding="ascii").splitlines()
        assert sorted(rdata.to_text() for rdata in cds) == sorted(
            line.split(" IN DS ")[1] for line in ds_file
        ), "the CDS set is not the DS set the zone asks the parent to hold"
        keys = [rdata for rdata in cdnskey if isinstance(rdata, dns.rdtypes.ANY.CDNSKEY.CDNSKEY)]
        assert len(keys) == len(cdnskey)
        assert {dns.dnssec.key_id(key) for key in keys} == listed
        assert {key.flags for key in keys} == {KSK_FLAGS}
        assert {key.key for key in keys} == {_public(store[tag]) for tag in listed}
        for covered, rrset in (("CDS", cds), ("CDNSKEY", cdnskey)):
            sigs = _rrset(zone, "RRSIG", covered)
            assert sigs is not None, f"{covered} is not signed"
            assert {sig.key_tag for sig in sigs} == {signer}
            dns.dnssec.validate(rrset, sigs, {ORIGIN: dnskeys}, now=moment)
        assert {"CDS", "CDNSKEY"} <= _apex_types(zone)
        assert store[signer]["state"] == "active"
    assert {dns.dnssec.key_id(key) for key in dnskeys if key.flags == KSK_FLAGS} == {signer}
    _ok(ws.run("verify", "--now", str(moment)))
    ldns = ldns_verify_zone(ws.zone_file, at=moment)
    assert ldns.ok, ldns.output
    bind = dnssec_verify(ws.zone_file, ZONE)
    assert bind.ok, bind.output


@pytest.mark.slow  # a whole KSK rollover, BIND-checked at every step
def test_a_ksk_rollover_publishes_cds_and_cdnskey_then_removes_them(tmp_path: Path) -> None:
    require_tool("ldns-verify-zone")
    require_tool("dnssec-verify")
    ws = Workspace(tmp_path / "ws")
    (ws.root / "zones").mkdir(parents=True)
    shutil.copyfile(SOURCE_DEFINITION, ws.definition)
    start = int(time.time()) - 3 * DAY_SECONDS  # the rollover ends ~1 day before now
    _ok(ws.run("sign", "--create-keys", *simulated(start)))
    (old,) = _tags(_keys(ws, start), "active")
    _check_stage(ws, start, set(), old)

    begun = json.loads(
        _ok(ws.run("dnssec", "rollover", ZONE, "ksk", *simulated(start), "--json")).stdout
    )
    (new,) = _tags(begun["keys"], "ds-submitted")
    _ok(ws.run("sign", *simulated(start)))
    _check_stage(ws, start, {old, new}, old)

    confirmed_at = start + 60
    confirmed = ws.run(
        "dnssec",
        "step",
        ZONE,
        "--ds-published",
        "--no-parent-check",
        *simulated(confirmed_at),
        "--json",
    )
    activate_at = json.loads(_ok(confirmed).stdout)["next_step"]["not_before"]
    _ok(ws.run("sign", *simulated(confirmed_at)))
    _check_stage(ws, confirmed_at, {old, new}, old)

    activated = json.loads(
        _ok(ws.run("dnssec", "step", ZONE, *simulated(activate_at), "--json")).stdout
    )
    assert _tags(activated["keys"], "active") == {new}
    assert _tags(activated["keys"], "retired") == {old}
    _ok(ws.run("sign", *simulated(activate_at)))
    # RFC 7583 double-DS: the old DS stays at the parent until Iret has passed
    _check_stage(ws, activate_at, {old, new}, new)

    withdraw_at = activated["next_step"]["not_before"]
    assert withdraw_at < time.time() - DAY_SECONDS / 2
    _ok(ws.run("dnssec", "step", ZONE, *simulated(withdraw_at)))
    _ok(ws.run("sign", *simulated(withdraw_at)))
    # The new KSK only: tells a polling parent to drop the old DS (no CDS would not)
    _check_stage(ws, withdraw_at, {new}, new)

    removed_at = withdraw_at + 60
    removed = ws.run(
        "dnssec", "step", ZONE, "--ds-published", "--no-parent-check", *simulated(removed_at)
    )
    _ok(removed)
    _ok(ws.run("sign", *simulated(removed_at)))
    _check_stage(ws, removed_at, set(), new)


def test_cds_is_in_the_apex_nsec_bitmap(tmp_path: Path) -> None:
    """With NSEC denial the apex's NSEC lists CDS and CDNSKEY while they are published."""
    ws = Workspace(tmp_path / "ws")
    (ws.root / "zones").mkdir(parents=True)
    text = SOURCE_DEFINITION.read_text(encoding="utf-8").replace("denial: nsec3", "denial: nsec")
    ws.definition.write_text(text, encoding="utf-8")
    start = int(time.time()) - DAY_SECONDS
    _ok(ws.run("sign", "--create-keys", *simulated(start)))
    _ok(ws.run("dnssec", "rollover", ZONE, "ksk", *simulated(start)))
    _ok(ws.run("sign", *simulated(start)))
    zone = read_zone_file(ws.zone_file, ZONE)
    nsec = zone.get_rdataset(ORIGIN, "NSEC")
    assert nsec is not None
    (rdata,) = list(nsec)
    assert " CDS CDNSKEY" in rdata.to_text()
    _ok(ws.run("verify", "--now", str(start)))
    ldns = ldns_verify_zone(ws.zone_file, at=start)
    assert ldns.ok, ldns.output
