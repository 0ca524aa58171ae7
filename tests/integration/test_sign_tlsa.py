"""``sign`` publishes the TLSA record of a resolver endpoint the definition names a
certificate for (DANE, issue 18 part 4): in the signed zone (checked by ldns-verify-zone),
the same bytes on the full and the incremental path, a certificate change re-signs, and
a host outside the zone is a warning with the record to publish."""

from __future__ import annotations

import shutil
from pathlib import Path

import dns.rdatatype
import dns.zone

from alter_publish.keys.store import KeyStore
from alter_publish.pipeline import SignReport, sign
from alter_publish.pipeline.fingerprint import fingerprint_path
from tests.conftest import NOW
from tests.integration.dnssec_tools import ldns_verify_zone
from tests.tlsfixtures import make_certificate

ZONE = "example.com"
OUTPUTS = (
    f"build/{ZONE}.zone",
    f"build/{ZONE}.envelopes.json",
    f"build/{ZONE}.ds",
    f"zones/{ZONE}.state.json",
)


def _definition(extra: str = "") -> str:
    return (
        f"zone: {ZONE}\n"
        "ns: [ns1]\n"
        "hosts: {ns1: [192.0.2.1], mcp: [192.0.2.80]}\n"
        "dnssec: {denial: nsec3}\n"
        "handles:\n"
        "  - handle: ~blake\n"
        "    resolver: https://mcp.example.com:8443/blake\n"
        "    tls: {cert: certs/mcp.pem}\n"
        "  - ~drew\n"
        "  - ~erin\n"
        "  - ~fay\n" + extra
    )


def _sign(root: Path, now: int, *, incremental: bool = True) -> SignReport:
    report = sign(
        [root / "zones" / f"{ZONE}.yaml"],
        out=root / "build",
        keys=KeyStore(root / "keys"),
        now=now,
        create_keys=True,
        incremental=incremental,
    )
    assert report.ok
    return report


def _workspace(root: Path) -> Path:
    make_certificate(root / "zones" / "certs", "mcp", "mcp.example.com")
    (root / "zones" / f"{ZONE}.yaml").write_text(_definition())
    _sign(root, NOW)
    return root


def _tlsa(root: Path) -> list[str]:
    zone = dns.zone.from_file(str(root / "build" / f"{ZONE}.zone"), origin=ZONE)
    found = zone.get_rdataset("_8443._tcp.mcp", dns.rdatatype.TLSA)
    return sorted(rdata.to_text() for rdata in found or ())


def test_the_tlsa_record_is_published_signed_and_verifies(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    (record,) = _tlsa(root)
    assert record.startswith("3 1 1 ")
    zone = dns.zone.from_file(str(root / "build" / f"{ZONE}.zone"), origin=ZONE)
    signatures = zone.get_rdataset("_8443._tcp.mcp", dns.rdatatype.RRSIG, dns.rdatatype.TLSA)
    assert signatures is not None
    result = ldns_verify_zone(root / "build" / f"{ZONE}.zone", at=NOW)
    assert result.ok, result.output


def test_incremental_and_full_give_the_same_bytes(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    path = root / "zones" / f"{ZONE}.yaml"
    # A handle edit beside the TLSA: patched or not, the bytes of a full run.
    path.write_text(path.read_text().replace("  - ~erin\n", "  - {handle: ~erin, ttl: 1h}\n"))
    twin = tmp_path / "twin"
    shutil.copytree(root, twin)
    _sign(root, NOW + 60)
    _sign(twin, NOW + 60, incremental=False)
    for name in OUTPUTS:
        assert (root / name).read_bytes() == (twin / name).read_bytes(), name
    # The TLSA set changes with a handle edit (its tls): a patch would keep the old one.
    path.write_text(
        path.read_text().replace("{cert: certs/mcp.pem}", "{cert: certs/mcp.pem, matching: 2}")
    )
    shutil.rmtree(twin)
    shutil.copytree(root, twin)
    report = _sign(root, NOW + 120)
    assert report.zones[0].patched is None
    _sign(twin, NOW + 120, incremental=False)
    for name in OUTPUTS:
        assert (root / name).read_bytes() == (twin / name).read_bytes(), name
    (record,) = _tlsa(root)
    assert record.startswith("3 1 2 ")


def test_a_new_certificate_is_published_though_the_definition_is_unchanged(
    tmp_path: Path,
) -> None:
    root = _workspace(tmp_path / "ws")
    before = _tlsa(root)
    assert fingerprint_path(root / "build", root / "zones" / f"{ZONE}.yaml").exists()
    make_certificate(root / "zones" / "certs", "mcp", "mcp.example.com")  # a new key
    report = _sign(root, NOW + 60)
    assert not report.zones[0].unchanged
    after = _tlsa(root)
    assert after != before
    again = _sign(root, NOW + 120)
    assert again.zones[0].unchanged


def test_a_host_outside_the_zone_is_a_warning_with_the_record(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    make_certificate(root / "zones" / "certs", "mcp", "mcp.example.com")
    make_certificate(root / "zones" / "certs", "api", "api.example.net")
    extra = (
        "  - {handle: ~gus, resolver: 'https://api.example.net/gus', tls: {cert: certs/api.pem}}\n"
    )
    (root / "zones" / f"{ZONE}.yaml").write_text(_definition(extra))
    report = _sign(root, NOW)
    warnings = [w for w in report.warnings if "api.example.net" in w]
    assert len(warnings) == 1, report.warnings
    assert "_443._tcp.api.example.net. 3600 IN TLSA 3 1 1 " in warnings[0]
    text = (root / "build" / f"{ZONE}.zone").read_text()
    assert "api.example.net" not in text.replace("https://api.example.net/gus", "")
