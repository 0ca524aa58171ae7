"""`sign` and `verify` end to end: real keys, real templates, a real loopback server."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import dns.rdatatype
import dns.zone
import pytest

from alter_publish import merkle_root, verify_record
from alter_publish.errors import KeyStoreError
from alter_publish.format.envelope import parse_envelope
from alter_publish.format.identitylog import read_log
from alter_publish.keys.store import KeyStore
from alter_publish.pipeline import SignReport, default_templates_dir, sign, verify
from tests.conftest import NOW, Workspace


def _sign(ws: Workspace, now: int = NOW, *, verify: bool = True) -> SignReport:
    return sign([ws.zone_file], out=ws.out, keys=ws.keys, now=now, create_keys=True, verify=verify)


def _txt_records(path: Path) -> dict[str, str]:
    zone = dns.zone.from_file(str(path), origin="example.com.", relativize=False)
    found: dict[str, str] = {}
    for name, rdataset in zone.iterate_rdatasets(dns.rdatatype.TXT):
        for rdata in rdataset:
            found[name.to_text()] = b"".join(rdata.strings).decode("ascii")
    return found


def test_sign_writes_a_zone_whose_every_record_verifies(workspace: Workspace) -> None:
    report = sign(
        [workspace.zone_file], out=workspace.out, keys=workspace.keys, now=NOW, create_keys=True
    )
    assert report.ok
    (zone,) = report.zones
    assert zone.proof is not None
    assert zone.proof.ok
    assert [r.handle for r in zone.proof.results] == [
        "~example.com",
        "~blake",
        "~drew",
        "~deploy.bot",
        "~cc-opus-4-7",
    ]
    records = _txt_records(workspace.rendered)
    # Beside the handles: the log's latest checkpoint, proven too (docs/format.md 12).
    assert records.pop("_alter-log.example.com.").startswith("v=alter-log1; n=")
    assert zone.proof.checkpoint is not None
    assert zone.proof.checkpoint.ok
    assert set(records) == {r.owner for r in zone.proof.results}
    for owner, text in records.items():
        envelope = verify_record(text, owner=owner, substrate="example.com", now=NOW)
        assert envelope.signed_at == NOW
    doc = json.loads(workspace.envelopes.read_text())
    assert {h["owner"]: h["text"] for h in doc["handles"]} == records


def test_rendered_zone_passes_named_checkzone(workspace: Workspace) -> None:
    checkzone = shutil.which("named-checkzone")
    if checkzone is None:
        pytest.skip("named-checkzone not installed (Debian bind9-utils; .ci/run installs it)")
    _sign(workspace)
    result = subprocess.run(
        [checkzone, "-k", "fail", "-n", "fail", "example.com", str(workspace.rendered)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "OK" in result.stdout


def test_sign_is_idempotent(workspace: Workspace) -> None:
    _sign(workspace)
    before = {p: p.read_bytes() for p in (workspace.rendered, workspace.envelopes, workspace.log)}
    report = sign([workspace.zone_file], out=workspace.out, keys=workspace.keys, now=NOW + 3600)
    assert report.ok
    (zone,) = report.zones
    assert (zone.signed, zone.written) == (0, ())
    assert {p: p.read_bytes() for p in before} == before


def test_a_change_raises_the_serial_and_resigns_only_what_changed(workspace: Workspace) -> None:
    first = _sign(workspace).zones[0]
    log_before = read_log(workspace.log)
    text = workspace.zone_file.read_text().replace(
        "https://mcp.example.com/blake", "https://mcp.example.com/blake2"
    )
    workspace.zone_file.write_text(text)
    second = _sign(workspace, now=NOW + 60).zones[0]
    assert (second.signed, second.reused) == (1, 4)
    assert second.serial > first.serial
    log_after = read_log(workspace.log)
    assert log_after.size == log_before.size + 1
    newest = parse_envelope(log_after.entries[-1].text)
    assert newest.resolver == "https://mcp.example.com/blake2"
    assert (newest.log_size, newest.log_root) == (log_before.size, log_before.root())


def test_ttl_change_raises_serial_without_resigning(workspace: Workspace) -> None:
    first = _sign(workspace).zones[0]
    workspace.zone_file.write_text(workspace.zone_file.read_text().replace("ttl: 1h ", "ttl: 2h "))
    second = _sign(workspace).zones[0]
    assert second.signed == 0
    assert second.serial == first.serial + 1


def test_envelopes_are_renewed_inside_the_renewal_window(workspace: Workspace) -> None:
    _sign(workspace)
    # ~cc-opus-4-7 lives 1 day: renew window is min(7d, 12h); at +13h it must be re-signed.
    report = _sign(workspace, now=NOW + 13 * 3600).zones[0]
    assert report.signed == 1


def test_log_entries_and_log_tags_agree_with_rfc9162(workspace: Workspace) -> None:
    _sign(workspace)
    log = read_log(workspace.log)
    assert log.size == 5
    for index, entry in enumerate(log.entries):
        envelope = parse_envelope(entry.text)
        assert envelope.log_size == index
        assert envelope.log_root == merkle_root(e.to_bytes() for e in log.entries[:index])


@pytest.mark.parametrize(
    ("dnssec", "category"),
    [
        # DNSSEC sees the changed TXT before the envelope check does.
        pytest.param(True, "bogus", id="signed-zone-bogus"),
        # Without DNSSEC the envelope's own signature still catches it.
        pytest.param(False, "bad-signature", id="unsigned-zone-bad-signature"),
    ],
)
def test_verify_catches_one_flipped_signature_character(
    workspace: Workspace, dnssec: bool, category: str
) -> None:
    if not dnssec:
        text = workspace.zone_file.read_text()
        workspace.zone_file.write_text(text.replace("  enabled: true", "  enabled: false"))
    _sign(workspace)
    text = workspace.rendered.read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("_alter.blake.") and "sig=" in ln)
    index = line.index("sig=") + 10
    flipped = line[:index] + ("A" if line[index] != "A" else "B") + line[index + 1 :]
    workspace.rendered.write_text(text.replace(line, flipped))
    report = verify([workspace.zone_file], out=workspace.out, now=NOW)
    assert not report.ok
    failures = report.proofs[0].failures
    assert [(f.handle, f.category) for f in failures] == [("~blake", category)]


def test_failed_proof_replaces_no_output(workspace: Workspace, tmp_path: Path) -> None:
    _sign(workspace)
    before = {p: p.read_bytes() for p in (workspace.rendered, workspace.envelopes, workspace.log)}
    broken = tmp_path / "broken-templates"
    shutil.copytree(default_templates_dir(), broken)
    handles = broken / "handles.j2"
    handles.write_text(handles.read_text().replace("{{ record.rdata }}", '"v=alter1; h=~x; e=1"'))
    workspace.zone_file.write_text(workspace.zone_file.read_text().replace("ttl: 1h ", "ttl: 2h "))
    report = sign(
        [workspace.zone_file],
        out=workspace.out,
        keys=workspace.keys,
        now=NOW + 60,
        templates=broken,
    )
    assert not report.ok
    proof = report.zones[0].proof
    assert proof is not None
    assert {f.category for f in proof.failures} == {"not-found"}
    assert len(proof.failures) == 5
    assert {p: p.read_bytes() for p in before} == before


def test_no_verify_skips_the_proof(workspace: Workspace) -> None:
    report = _sign(workspace, verify=False)
    assert report.zones[0].proof is None
    assert workspace.rendered.exists()


def test_missing_keys_are_an_error_without_create_keys(workspace: Workspace) -> None:
    with pytest.raises(KeyStoreError) as info:
        sign([workspace.zone_file], out=workspace.out, keys=workspace.keys, now=NOW)
    assert len(info.value.reasons) == 5
    assert not workspace.out.exists()


def test_encrypted_keys_sign_with_the_passphrase(workspace: Workspace) -> None:
    keys = KeyStore(workspace.root / "keys", passphrase=b"correct horse")
    report = sign([workspace.zone_file], out=workspace.out, keys=keys, now=NOW, create_keys=True)
    assert report.ok
    pem = (workspace.root / "keys" / "example.com" / "blake" / "1.pem").read_bytes()
    assert b"ENCRYPTED PRIVATE KEY" in pem
    # (Into another directory: a run that would change nothing needs no key at all.)
    with pytest.raises(KeyStoreError, match="ALTER_PUBLISH_PASSPHRASE"):
        sign([workspace.zone_file], out=workspace.out / "again", keys=workspace.keys, now=NOW)
