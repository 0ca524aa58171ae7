"""``check`` on the loopback hierarchy of real servers (tests/integration/hierarchy.py):
each scenario gives the findings, from the server, that a zone owner needs, and the
exit code the docs promise (0 all good, 7 converging, 1 otherwise)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import dns.dnssec
import dns.name
import dns.rdata
import dns.rdatatype
import dns.rdtypes.ANY.DNSKEY
import dns.zone
import pytest

from alter_publish import pipeline
from alter_publish.dns.anchors import read_trust_anchors
from alter_publish.dns.hints import read_root_hints
from alter_publish.dns.zonekeys import ZoneKeyState
from alter_publish.errors import EXIT_DRIFT, EXIT_KEY, EXIT_OK, EXIT_VERIFICATION
from alter_publish.format.logrecord import checkpoint_strings
from alter_publish.format.note import Note, Signer
from alter_publish.format.tlog import Checkpoint
from alter_publish.keys.store import KeyStore
from alter_publish.verify.world import Finding, Prober
from tests.integration.hierarchy import Hierarchy, HierarchyLab, Scenario

_RUN_CLI = "from alter_publish.cli import main; main()"


def _check(hierarchy: Hierarchy) -> pipeline.WorldReport:
    return pipeline.check_world(
        hierarchy.workspace / "zones" / "example.com.yaml",
        out=hierarchy.workspace / "build",
        keys=KeyStore(hierarchy.workspace / "keys"),
        now=hierarchy.now,
        hints=read_root_hints(hierarchy.root_hints),
        anchors=read_trust_anchors(hierarchy.anchor_file),
        resolvers=[hierarchy.resolver],
    )


def _codes(report: pipeline.WorldReport) -> dict[str, set[str | None]]:
    found: dict[str, set[str | None]] = {}
    for finding in report.findings:
        found.setdefault(finding.code, set()).add(finding.server)
    return found


def test_all_good_is_exit_0_and_every_server_was_asked(hierarchy: Hierarchy) -> None:
    report = _check(hierarchy)
    assert report.findings == (), [f.line("example.com") for f in report.findings]
    assert report.exit_code == EXIT_OK
    assert report.located.parent == "com."
    assert [s.name for s in report.located.servers] == ["ns1.example.com.", "ns2.example.com."]
    assert report.located.parent_servers[0].addresses == (hierarchy.addresses.tld,)


@pytest.mark.parametrize(
    ("scenario", "code", "exit_code"),
    [
        (Scenario.WRONG_DS_DIGEST, "ds-mismatch", EXIT_VERIFICATION),
        (Scenario.RETIRED_KSK_DS, "ds-mismatch", EXIT_VERIFICATION),
        (Scenario.MISSING_DS, "ds-missing", EXIT_VERIFICATION),
        (Scenario.STALE_SERVER, "serial-behind", EXIT_DRIFT),
        (Scenario.LAME_SERVER, "lame", EXIT_VERIFICATION),
        (Scenario.EXPIRED_SERVER, "signatures-expired", EXIT_VERIFICATION),
        (Scenario.DISAGREEING_GLUE, "glue-mismatch", EXIT_VERIFICATION),
    ],
)
def test_each_scenario_is_named_with_its_server(
    hierarchy_lab: HierarchyLab, scenario: Scenario, code: str, exit_code: int
) -> None:
    hierarchy = hierarchy_lab.apply(scenario)
    report = _check(hierarchy)
    codes = _codes(report)
    lines = [f.line("example.com") for f in report.findings]
    assert code in codes, lines
    assert report.exit_code == exit_code, lines
    servers = codes[code]
    if code.startswith(("ds-", "glue-")):
        assert servers == {f"ns1.nic.com. ({hierarchy.addresses.tld})"}, lines
    else:
        assert servers == {f"ns2.example.com. ({hierarchy.addresses.ns2})"}, lines


def test_the_chain_from_the_root_names_the_broken_link(hierarchy_lab: HierarchyLab) -> None:
    hierarchy = hierarchy_lab.apply(Scenario.WRONG_DS_DIGEST)
    (finding,) = [f for f in _check(hierarchy).findings if f.code == "chain-bogus"]
    assert "com. DS for example.com." in finding.message, finding.message
    hierarchy = hierarchy_lab.apply(Scenario.MISSING_DS)
    codes = _codes(_check(hierarchy))
    assert "chain-insecure" in codes


@pytest.mark.parametrize(
    ("scenario", "code"),
    [
        (Scenario.WRONG_DS_DIGEST, "resolver-servfail"),
        (Scenario.MISSING_DS, "resolver-insecure"),
    ],
)
def test_the_resolver_sees_the_broken_chain(
    hierarchy_lab: HierarchyLab, scenario: Scenario, code: str
) -> None:
    hierarchy = hierarchy_lab.apply(scenario)
    findings = [f for f in _check(hierarchy).findings if f.code == code]
    assert len(findings) == 1
    if code == "resolver-servfail":
        assert "EDE 9" in findings[0].message  # unbound's DNSKEY missing / DS mismatch


def test_the_command_line_prints_findings_and_exits_as_documented(
    hierarchy_lab: HierarchyLab,
) -> None:
    hierarchy = hierarchy_lab.apply(Scenario.STALE_SERVER)
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            _RUN_CLI,
            "check",
            "example.com",
            "--json",
            "--resolver",
            hierarchy.resolver_spec,
            "--now",
            str(hierarchy.now),
            "--root-hints",
            str(hierarchy.root_hints),
            "--trust-anchor",
            str(hierarchy.anchor_file),
        ],
        cwd=hierarchy.workspace,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == EXIT_DRIFT, completed.stdout
    document = json.loads(completed.stdout)
    assert {f["code"] for f in document["findings"]} <= {"serial-behind", "resolver-stale"}
    assert document["findings"][0]["code"] == "serial-behind"
    assert document["findings"][0]["severity"] == "converging"
    assert "Traceback" not in completed.stderr
    assert len(completed.stderr.strip().splitlines()) == 1


def test_ds_published_is_refused_until_every_parent_server_serves_the_new_ds(
    hierarchy_lab: HierarchyLab, tmp_path: Path
) -> None:
    """A KSK rollover's ``--ds-published`` asks the parent (found from the root) and
    refuses, naming the server, while it lacks the new KSK's DS; once the parent serves
    both DS the step is taken."""
    hierarchy = hierarchy_lab.apply(Scenario.ALL_GOOD)
    workspace = tmp_path / "ws"
    shutil.copytree(hierarchy.workspace, workspace, symlinks=True)
    at = ("--now", str(hierarchy.now), "--allow-simulated-time")
    hints = ("--root-hints", str(hierarchy.root_hints))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", _RUN_CLI, *args],
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    started = cli("dnssec", "rollover", "example.com", "ksk", *at)
    assert started.returncode == 0, started.stderr
    signed = cli("sign", *at)
    assert signed.returncode == 0, signed.stderr
    refused = cli("dnssec", "step", "example.com", "--ds-published", *at, *hints)
    assert refused.returncode == EXIT_KEY, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert f"ns1.nic.com. ({hierarchy.addresses.tld})" in lines[0]
    assert "does not serve the DS of ksk-" in lines[0]
    keys = KeyStore(workspace / "keys").zones.entries("example.com")
    (new,) = [key for key in keys if key.state is ZoneKeyState.DS_SUBMITTED]
    new_ds = dns.dnssec.make_ds("example.com.", new.dnskey, "SHA256").to_text()
    try:
        hierarchy_lab.set_delegation(
            replace(hierarchy.delegation, ds=(*hierarchy.delegation.ds, new_ds))
        )
        taken = cli("dnssec", "step", "example.com", "--ds-published", *at, *hints)
        assert taken.returncode == 0, taken.stderr
    finally:
        hierarchy_lab.set_delegation(hierarchy.delegation)


def test_a_cds_or_cdnskey_other_than_the_ds_set_is_named_at_each_server(
    hierarchy_lab: HierarchyLab, tmp_path: Path
) -> None:
    # A parent polling CDS/CDNSKEY (RFC 7344) installs what they say: one naming another
    # key than the DS set sign wrote must be an error (CDNSKEY was not compared at all).
    hierarchy = hierarchy_lab.apply(Scenario.ALL_GOOD)
    other = "257 3 15 l02Woi0iS8Aa25FQkUd9RMzZHJpBoRQwAQEX1SxZJA4="
    zone = hierarchy.zone_file.read_text(encoding="utf-8")
    tampered = tmp_path / "example.com.zone"
    tampered.write_text(
        zone
        + "example.com. 3600 IN CDS 2371 15 2 "
        + "0" * 64
        + f"\nexample.com. 3600 IN CDNSKEY {other}\n",
        encoding="utf-8",
    )
    hierarchy = hierarchy_lab.publish(tampered)
    report = _check(hierarchy)
    codes = _codes(report)
    lines = [f.line("example.com") for f in report.findings]
    servers = {
        f"ns1.example.com. ({hierarchy.addresses.ns1})",
        f"ns2.example.com. ({hierarchy.addresses.ns2})",
    }
    assert codes.get("cds-mismatch") == servers, lines
    assert codes.get("cdnskey-mismatch") == servers, lines
    assert report.exit_code == EXIT_VERIFICATION, lines
    (line,) = {f.message for f in report.findings if f.code == "cdnskey-mismatch"}
    assert f"tag {dns.dnssec.key_id(_dnskey(other))} algorithm 15" in line, line


def test_a_served_log_checkpoint_other_than_the_built_one_is_named_at_each_server(
    hierarchy_lab: HierarchyLab, tmp_path: Path
) -> None:
    # The _alter-log record was compared with build/<zone>/log/checkpoint only by the
    # loopback verify: check now compares what each name server serves.
    hierarchy = hierarchy_lab.apply(Scenario.ALL_GOOD)
    built = (hierarchy.workspace / "build" / "example.com" / "log" / "checkpoint").read_text()
    assert Note.parse(built).signatures, "the hierarchy's zone publishes a log"
    other = Signer("example.com/alter-log", bytes(32))
    forged = Note(Checkpoint(other.name, 1, bytes(32)).to_text()).signed_by(other).to_text()
    zone = dns.zone.from_file(str(hierarchy.zone_file), origin="example.com.", relativize=False)
    rdataset = zone.find_rdataset("_alter-log.example.com.", "TXT")
    ttl = rdataset.ttl
    rdataset.clear()  # type: ignore[no-untyped-call]  # dnspython leaves clear() untyped
    strings = " ".join(f'"{part}"' for part in checkpoint_strings(forged))
    rdataset.add(dns.rdata.from_text("IN", "TXT", strings), ttl)
    tampered = tmp_path / "example.com.zone"
    zone.to_file(str(tampered), relativize=False)
    hierarchy = hierarchy_lab.publish(tampered)
    report = _check(hierarchy)
    codes = _codes(report)
    lines = [f.line("example.com") for f in report.findings]
    servers = {
        f"ns1.example.com. ({hierarchy.addresses.ns1})",
        f"ns2.example.com. ({hierarchy.addresses.ns2})",
    }
    assert codes.get("log-checkpoint-differs") == servers, lines
    assert report.exit_code == EXIT_VERIFICATION, lines
    (line,) = {f.message for f in report.findings if f.code == "log-checkpoint-differs"}
    assert "serves the checkpoint of size 1; sign wrote the checkpoint of size" in line, line


def _dnskey(text: str) -> dns.rdtypes.ANY.DNSKEY.DNSKEY:
    rdata = dns.rdata.from_text("IN", "DNSKEY", text)
    assert isinstance(rdata, dns.rdtypes.ANY.DNSKEY.DNSKEY)
    return rdata


def test_a_ttl_outliving_its_signature_is_a_warning_at_each_server(
    hierarchy: Hierarchy,
) -> None:
    """``ttl-beyond-signature`` once now + TTL passes the RRSIG's expiration (the zone's
    TTL is 5 minutes: a minute before the SOA's signature expires), at every address; not
    while the TTL still ends before it."""
    reply = Prober().ask(
        hierarchy.addresses.ns1, dns.name.from_text("example.com."), dns.rdatatype.SOA
    )
    (sigs,) = [rrset for rrset in reply.answer if rrset.rdtype == dns.rdatatype.RRSIG]
    expiration = max(rdata.expiration for rdata in sigs)

    def soa_findings(now: int) -> list[Finding]:
        report = pipeline.check_world(
            hierarchy.workspace / "zones" / "example.com.yaml",
            out=hierarchy.workspace / "build",
            keys=KeyStore(hierarchy.workspace / "keys"),
            now=now,
            hints=read_root_hints(hierarchy.root_hints),
            anchors=read_trust_anchors(hierarchy.anchor_file),
        )
        return [
            f
            for f in report.findings
            if f.code == "ttl-beyond-signature" and f.message.startswith("example.com. SOA ")
        ]

    found = soa_findings(expiration - 60)
    assert {f.server for f in found} == {
        f"ns1.example.com. ({hierarchy.addresses.ns1})",
        f"ns2.example.com. ({hierarchy.addresses.ns2})",
    }, found
    assert {f.severity for f in found} == {"warning"}
    assert "TTL 300 s" in found[0].message, found[0].message
    assert soa_findings(expiration - 400) == []
