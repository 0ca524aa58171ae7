"""`sign` and `verify` with DNSSEC: signed output, signature windows, DS, anchors, switches."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import dns.dnssec
import dns.name
import dns.node
import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.rdtypes.ANY.NSEC3PARAM
import dns.rdtypes.ANY.RRSIG
import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.dns.dnssec import INCEPTION_BACKDATE_SECONDS, ds_records
from alter_publish.dns.zonekeys import ZoneKey, ZoneKeyRole
from alter_publish.errors import KeyStoreError
from alter_publish.keys.store import KeyStore
from alter_publish.pipeline import SignReport, ZoneResult, sign, verify
from tests.conftest import NOW, Workspace

ORIGIN = dns.name.from_text("example.com.")
IN = dns.rdataclass.IN
DAY = 86400
VALIDITY = 14 * DAY  # the example zone's signature_validity
REFRESH = 5 * DAY  # the example zone's refresh
#: The first moment the example zone's signatures are due for refresh.
REFRESH_DUE = NOW + VALIDITY - REFRESH
DNSSEC_TYPES = frozenset(
    {
        dns.rdatatype.DNSKEY,
        dns.rdatatype.RRSIG,
        dns.rdatatype.NSEC,
        dns.rdatatype.NSEC3,
        dns.rdatatype.NSEC3PARAM,
    }
)

# Built at run time so no committed file looks like it holds a PEM private key.
PEM_KEY_LABEL = b"PRIVATE " + b"KEY-----"


# --- helpers -----------------------------------------------------------------------


def _sign(ws: Workspace, now: int = NOW, *, create_keys: bool = True) -> SignReport:
    return sign([ws.zone_file], out=ws.out, keys=ws.keys, now=now, create_keys=create_keys)


def _zone_result(ws: Workspace, now: int = NOW) -> ZoneResult:
    report = _sign(ws, now)
    assert report.ok
    (zone,) = report.zones
    return zone


def _edit(ws: Workspace, old: str, new: str) -> None:
    text = ws.zone_file.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    ws.zone_file.write_text(text.replace(old, new), encoding="utf-8")


def _stable(ws: Workspace) -> None:
    """No envelope of the example zone ever needs renewing (a 30d envelope's renewal
    may fall on any of its slots: from the second day on)."""
    _edit(ws, "  lifetime: 30d ", "  lifetime: never ")
    _edit(ws, "    lifetime: 7d\n", "    lifetime: never\n")
    _edit(ws, "    lifetime: 1d\n", "    lifetime: never\n")


def _ds_path(ws: Workspace) -> Path:
    return ws.out / "example.com.ds"


def _state_path(ws: Workspace) -> Path:
    return ws.root / "zones" / "example.com.state.json"


def _state(ws: Workspace) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(_state_path(ws).read_text(encoding="utf-8"))
    return doc


def _outputs(ws: Workspace) -> dict[str, bytes]:
    """Bytes of every file sign writes (build/, through its links, and the zone's state
    and log)."""
    paths = [*sorted(path for path in ws.out.iterdir() if path.is_file()), _state_path(ws), ws.log]
    return {path.name: path.read_bytes() for path in paths}


def _parse(ws: Workspace) -> dns.zone.Zone:
    return dns.zone.from_text(
        ws.rendered.read_text(encoding="utf-8"), origin=ORIGIN, relativize=False
    )


def _types(zone: dns.zone.Zone) -> set[dns.rdatatype.RdataType]:
    return {rdataset.rdtype for _, rdataset in zone.iterate_rdatasets()}


def _rrsigs(zone: dns.zone.Zone) -> list[dns.rdtypes.ANY.RRSIG.RRSIG]:
    found: list[dns.rdtypes.ANY.RRSIG.RRSIG] = []
    for _, rdataset in zone.iterate_rdatasets():
        if rdataset.rdtype == dns.rdatatype.RRSIG:
            found.extend(rdataset)
    return found


def _validate_every_rrset(zone: dns.zone.Zone, now: int) -> int:
    """``dns.dnssec.validate`` every rrset; every rrset must be signed. Returns the count."""
    dnskeys = zone.get_rdataset(ORIGIN, dns.rdatatype.DNSKEY)
    assert dnskeys is not None
    keyring: dict[dns.name.Name, dns.node.Node | dns.rdataset.Rdataset] = {ORIGIN: dnskeys}
    checked = 0
    for name, node in zone.nodes.items():
        for rdataset in node.rdatasets:
            if rdataset.rdtype == dns.rdatatype.RRSIG:
                continue
            sigs = node.get_rdataset(IN, dns.rdatatype.RRSIG, rdataset.rdtype)
            assert sigs is not None, (name.to_text(), dns.rdatatype.to_text(rdataset.rdtype))
            dns.dnssec.validate((name, rdataset), (name, sigs), keyring, ORIGIN, now=now)
            checked += 1
    return checked


def _window(zone: dns.zone.Zone) -> set[tuple[int, int]]:
    return {(rrsig.inception, rrsig.expiration) for rrsig in _rrsigs(zone)}


def _spread(zone: dns.zone.Zone, now: int) -> set[tuple[int, int]]:
    """The RRSIG windows of ``zone`` signed at ``now``, each checked to be one of its
    renewal slots' (docs/dnssec.md, 'Spread renewals'): the zone's validity, started on
    a day boundary at most one cycle (validity - refresh) before ``now``; the newest
    starts on ``now``'s day."""
    windows = _window(zone)
    for inception, expiration in windows:
        start = inception + INCEPTION_BACKDATE_SECONDS
        assert expiration - start == VALIDITY
        assert now - (VALIDITY - REFRESH) < start <= now
        assert start % DAY == 0
        assert expiration - now > REFRESH
    assert max(windows) == (
        now - now % DAY - INCEPTION_BACKDATE_SECONDS,
        now - now % DAY + VALIDITY,
    )
    assert len(windows) > 1  # spread: several slots in use
    return windows


def _run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "alter_publish", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


# --- the signed output -------------------------------------------------------------


@pytest.mark.parametrize("denial", ["nsec", "nsec3"])
def test_every_rrset_of_the_signed_zone_validates_with_dnspython(
    workspace: Workspace, denial: str
) -> None:
    _edit(workspace, "  denial: nsec3 ", f"  denial: {denial} ")
    zone_result = _zone_result(workspace)

    zone = _parse(workspace)

    chain = (
        {dns.rdatatype.NSEC3, dns.rdatatype.NSEC3PARAM}
        if denial == "nsec3"
        else {dns.rdatatype.NSEC}
    )
    assert DNSSEC_TYPES & _types(zone) == {dns.rdatatype.DNSKEY, dns.rdatatype.RRSIG} | chain
    checked = _validate_every_rrset(zone, NOW)
    assert checked == len(_rrsigs(zone))  # one signer per rrset: the KSK or the ZSK
    assert zone_result.dnssec is not None
    assert zone_result.dnssec["signatures"] == len(_rrsigs(zone))
    assert zone_result.dnssec["denial"] == denial
    _spread(zone, NOW)


def test_dnskeys_are_the_key_stores_ksk_and_zsk(workspace: Workspace) -> None:
    zone_result = _zone_result(workspace)
    keys = workspace.keys.zones.load("example.com")

    dnskeys = _parse(workspace).get_rdataset(ORIGIN, dns.rdatatype.DNSKEY)

    assert dnskeys is not None
    assert sorted(rdata.to_text() for rdata in dnskeys) == sorted(
        key.dnskey.to_text() for key in keys
    )
    assert zone_result.dnssec is not None
    assert zone_result.dnssec["keys"] == [
        {"role": str(key.role), "tag": key.tag, "algorithm": 15} for key in keys
    ]
    signers = {
        (r.type_covered == dns.rdatatype.DNSKEY, r.key_tag) for r in _rrsigs(_parse(workspace))
    }
    ksk, zsk = keys
    assert signers == {(True, ksk.tag), (False, zsk.tag)}


def test_ds_file_is_the_ksk_digest_and_matches_dnssec_ds(workspace: Workspace) -> None:
    zone_result = _zone_result(workspace)
    keys = workspace.keys.zones.load("example.com")
    ksk = keys[0]

    text = _ds_path(workspace).read_text(encoding="ascii")

    assert zone_result.ds_file == _ds_path(workspace)
    assert str(_ds_path(workspace)) in zone_result.written
    assert text.splitlines() == list(zone_result.ds)
    assert tuple(text.splitlines()) == ds_records(ORIGIN, keys, 3600)
    ((owner, ttl, rdclass, rdtype, *rdata),) = (line.split() for line in text.splitlines())
    assert (owner, ttl, rdclass, rdtype) == ("example.com.", "3600", "IN", "DS")
    expected = dns.dnssec.make_ds(ORIGIN, ksk.dnskey, "SHA256")
    assert " ".join(rdata) == expected.to_text()
    shown = _run_cli(workspace.root, "dnssec", "ds", "example.com")
    assert shown.returncode == 0, shown.stderr
    assert [line.split(": ", 2)[2] for line in shown.stdout.splitlines() if " DS " in line] == (
        text.splitlines()
    )


def test_json_report_carries_ds_dnssec_and_warnings(workspace: Workspace) -> None:
    doc = _sign(workspace).to_mapping()

    assert doc["warnings"] == []
    (zone,) = doc["zones"]
    assert zone["ds"] == _ds_path(workspace).read_text(encoding="ascii").splitlines()
    assert zone["ds_file"] == str(_ds_path(workspace))
    assert zone["dnssec"]["denial"] == "nsec3"
    assert (zone["dnssec"]["inception"], zone["dnssec"]["expiration"]) == (
        NOW - INCEPTION_BACKDATE_SECONDS,
        NOW + VALIDITY,
    )
    assert zone["proof"]["denial"]["ok"] is True


def test_nsec3_parameters_reach_the_zone_and_warn(workspace: Workspace) -> None:
    _edit(workspace, "    iterations: 0 ", "    iterations: 5 ")
    _edit(workspace, '    salt: "-" ', "    salt: c0ffee ")

    report = _sign(workspace)

    assert report.ok
    assert len(report.warnings) == 2
    assert all(w.startswith(f"{workspace.zone_file}: NSEC3 ") for w in report.warnings)
    param = _parse(workspace).get_rdataset(ORIGIN, dns.rdatatype.NSEC3PARAM)
    assert param is not None
    (rdata,) = param
    assert isinstance(rdata, dns.rdtypes.ANY.NSEC3PARAM.NSEC3PARAM)
    assert (rdata.iterations, rdata.salt) == (5, bytes.fromhex("c0ffee"))
    _validate_every_rrset(_parse(workspace), NOW)


# --- the proof ---------------------------------------------------------------------


def test_proof_is_secure_and_reports_the_denial_probe(workspace: Workspace) -> None:
    zone_result = _zone_result(workspace)

    proof = zone_result.proof

    assert proof is not None
    assert proof.ok
    assert {result.dnssec for result in proof.results} == {"secure"}
    assert proof.denial is not None
    assert (proof.denial.ok, proof.denial.category, proof.denial.dnssec) == (True, None, "secure")
    assert proof.denial.owner == "_alter.absent--alter-publish-probe.example.com."
    assert proof.checkpoint is not None  # the log's checkpoint record, validated
    assert (proof.checkpoint.ok, proof.checkpoint.dnssec) == (True, "secure")
    assert proof.checkpoint.owner == "_alter-log.example.com."
    assert proof.checks == (*proof.results, proof.denial, proof.checkpoint)


def test_verify_with_the_default_ds_passes(workspace: Workspace) -> None:
    _sign(workspace)

    report = verify([workspace.zone_file], out=workspace.out, now=NOW + DAY)

    assert report.ok
    (proof,) = report.proofs
    assert {result.dnssec for result in proof.results} == {"secure"}
    assert proof.denial is not None
    assert proof.denial.ok
    assert proof.denial.dnssec == "secure"


def test_verify_with_a_dnskey_anchor_passes(workspace: Workspace, tmp_path: Path) -> None:
    _sign(workspace)
    ksk = workspace.keys.zones.load("example.com")[0]
    anchor = tmp_path / "anchor.key"
    anchor.write_text(f"example.com. IN DNSKEY {ksk.dnskey.to_text()}\n", encoding="ascii")

    report = verify([workspace.zone_file], out=workspace.out, now=NOW, trust_anchors=anchor)

    assert report.ok


def _foreign_ds(tmp_path: Path) -> Path:
    """A DS for example.com made from a KSK the zone does not hold."""
    stranger = ZoneKey("example.com", ZoneKeyRole.KSK, NOW, Ed25519PrivateKey.generate())
    path = tmp_path / "wrong.ds"
    path.write_text("\n".join(ds_records(ORIGIN, [stranger], 3600)) + "\n", encoding="ascii")
    return path


def test_verify_with_a_wrong_ds_is_bogus(workspace: Workspace, tmp_path: Path) -> None:
    _sign(workspace)

    report = verify(
        [workspace.zone_file], out=workspace.out, now=NOW, trust_anchors=_foreign_ds(tmp_path)
    )

    assert not report.ok
    (proof,) = report.proofs
    assert len(proof.results) == 5
    assert {(f.category, f.dnssec) for f in proof.failures} == {("bogus", "bogus")}
    assert set(proof.failures) == set(proof.checks)
    assert proof.denial is not None
    assert proof.denial.category == "bogus"


def test_verify_with_a_stale_default_ds_is_bogus(workspace: Workspace, tmp_path: Path) -> None:
    _sign(workspace)
    shutil.copyfile(_foreign_ds(tmp_path), _ds_path(workspace))

    report = verify([workspace.zone_file], out=workspace.out, now=NOW)

    assert {f.category for f in report.proofs[0].failures} == {"bogus"}


def test_verify_after_the_signatures_expire_fails(workspace: Workspace) -> None:
    _sign(workspace)

    report = verify([workspace.zone_file], out=workspace.out, now=NOW + VALIDITY + 1)

    assert not report.ok
    assert {f.dnssec for f in report.proofs[0].failures} == {"bogus"}


# --- signature windows and idempotence ---------------------------------------------


def test_second_sign_at_the_same_time_writes_nothing(workspace: Workspace) -> None:
    _sign(workspace)
    before = _outputs(workspace)

    zone_result = _zone_result(workspace)

    assert (zone_result.written, zone_result.signed) == ((), 0)
    assert _outputs(workspace) == before


@pytest.mark.parametrize(
    "later",
    [
        pytest.param(3600, id="plus-1h"),
        pytest.param(DAY - 1, id="last-second-of-the-day"),
    ],
)
def test_before_the_next_renewal_slot_the_output_stays_byte_identical(
    workspace: Workspace, later: int
) -> None:
    _stable(workspace)
    first = _zone_result(workspace)
    before = _outputs(workspace)

    again = _zone_result(workspace, NOW + later)

    assert (again.written, again.signed, again.serial) == ((), 0, first.serial)
    assert again.dnssec == first.dnssec
    assert _outputs(workspace) == before
    _validate_every_rrset(_parse(workspace), NOW + later)


@pytest.mark.parametrize(
    "later",
    [
        pytest.param(VALIDITY - REFRESH, id="refresh-due-9d"),
        pytest.param(10 * DAY, id="plus-10d"),
    ],
)
def test_inside_the_refresh_window_signatures_are_remade(workspace: Workspace, later: int) -> None:
    _stable(workspace)
    first = _zone_result(workspace)
    log_before = workspace.log.read_bytes()
    old_windows = _window(_parse(workspace))
    now = NOW + later

    again = _zone_result(workspace, now)

    window = (now - INCEPTION_BACKDATE_SECONDS, now + VALIDITY)  # the newest slot's
    assert again.signed == 0  # envelopes are not re-signed, only RRSIGs
    assert workspace.log.read_bytes() == log_before
    assert again.serial == now > first.serial
    assert again.dnssec is not None
    assert (again.dnssec["inception"], again.dnssec["expiration"]) == window
    assert _state(workspace)["signatures"] == {"inception": window[0], "expiration": window[1]}
    assert _state(workspace)["serial"] == now
    zone = _parse(workspace)
    assert not _spread(zone, now) & old_windows  # a whole cycle later: every slot renewed
    soa = zone.get_rdataset(ORIGIN, dns.rdatatype.SOA)
    assert soa is not None
    assert soa[0].serial == now
    _validate_every_rrset(zone, now)
    assert str(_ds_path(workspace)) not in again.written  # the keys did not change
    assert verify([workspace.zone_file], out=workspace.out, now=now + REFRESH).ok


def test_a_day_later_one_slot_and_the_due_envelope_are_renewed(workspace: Workspace) -> None:
    # As shipped, ~cc-opus-4-7 lives 1d: a day later it is re-signed, and the owners whose
    # renewal slot starts that day get new RRSIGs; the others keep theirs.
    first = _zone_result(workspace)
    before = _window(_parse(workspace))

    again = _zone_result(workspace, NOW + DAY)

    assert (again.signed, again.reused) == (1, 4)
    assert again.serial == NOW + DAY > first.serial
    assert again.dnssec is not None
    assert 0 < again.dnssec["renewed"] < again.dnssec["signatures"]
    assert str(_ds_path(workspace)) not in again.written
    zone = _parse(workspace)
    after = _spread(zone, NOW + DAY)
    assert after - before == {(NOW + DAY - INCEPTION_BACKDATE_SECONDS, NOW + DAY + VALIDITY)}
    assert len(after & before) == len(before) - 1  # the oldest slot's owners moved on
    _validate_every_rrset(zone, NOW + DAY)


def test_a_changed_handle_keeps_the_window_but_raises_the_serial(workspace: Workspace) -> None:
    first = _zone_result(workspace)
    _edit(workspace, "https://mcp.example.com/blake\n", "https://mcp.example.com/blake2\n")

    again = _zone_result(workspace)

    assert again.signed == 1
    assert again.serial == first.serial + 1
    assert first.dnssec is not None
    assert again.dnssec is not None
    assert (again.dnssec["inception"], again.dnssec["expiration"]) == (
        first.dnssec["inception"],
        first.dnssec["expiration"],
    )
    assert _state(workspace)["signatures"] == {
        "inception": first.dnssec["inception"],
        "expiration": first.dnssec["expiration"],
    }
    _validate_every_rrset(_parse(workspace), NOW)


def test_a_new_signature_validity_starts_a_new_window(workspace: Workspace) -> None:
    _stable(workspace)
    _zone_result(workspace)
    _edit(workspace, "  signature_validity: 14d ", "  signature_validity: 21d ")

    again = _zone_result(workspace, NOW + DAY)

    assert again.dnssec is not None
    assert (again.dnssec["inception"], again.dnssec["expiration"]) == (
        NOW + DAY - INCEPTION_BACKDATE_SECONDS,
        NOW + DAY + 21 * DAY,
    )


# --- switches ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "switch"),
    [
        pytest.param("nsec", "nsec3", id="nsec-to-nsec3"),
        pytest.param("nsec3", "nsec", id="nsec3-to-nsec"),
    ],
)
def test_switching_denial_replaces_the_chain_and_raises_the_serial(
    workspace: Workspace, start: str, switch: str
) -> None:
    _edit(workspace, "  denial: nsec3 ", f"  denial: {start} ")
    first = _zone_result(workspace)
    _edit(workspace, f"  denial: {start} ", f"  denial: {switch} ")

    again = _zone_result(workspace)

    assert again.serial == first.serial + 1
    assert again.signed == 0
    assert first.dnssec is not None
    assert again.dnssec is not None
    assert again.dnssec["denial"] == switch
    assert again.dnssec["inception"] == first.dnssec["inception"]
    types = _types(_parse(workspace))
    if switch == "nsec3":
        assert {dns.rdatatype.NSEC3, dns.rdatatype.NSEC3PARAM} <= types
        assert dns.rdatatype.NSEC not in types
    else:
        assert dns.rdatatype.NSEC in types
        assert not {dns.rdatatype.NSEC3, dns.rdatatype.NSEC3PARAM} & types
    _validate_every_rrset(_parse(workspace), NOW)
    assert again.proof is not None
    assert again.proof.denial is not None
    assert again.proof.denial.ok


def test_dnssec_off_publishes_unsigned_and_removes_the_stale_ds(workspace: Workspace) -> None:
    first = _zone_result(workspace)
    assert _ds_path(workspace).is_file()
    _edit(workspace, "  enabled: true\n", "  enabled: false\n")

    report = _sign(workspace)

    assert report.ok
    (zone_result,) = report.zones
    assert len(report.warnings) == 1
    assert report.warnings[0].startswith(f"{workspace.zone_file}: DNSSEC is OFF")
    assert not _ds_path(workspace).exists()
    assert f"{_ds_path(workspace)} (removed: the zone is unsigned)" in zone_result.written
    assert (zone_result.ds_file, zone_result.ds, zone_result.dnssec) == (None, (), None)
    assert zone_result.serial == first.serial + 1
    assert not DNSSEC_TYPES & _types(_parse(workspace))
    assert "signatures" not in _state(workspace)
    proof = zone_result.proof
    assert proof is not None
    assert proof.ok
    assert {result.dnssec for result in proof.results} == {"insecure"}
    assert proof.denial is None
    assert verify([workspace.zone_file], out=workspace.out, now=NOW).ok

    # Every run says it again, even when nothing changes.
    again = _sign(workspace)
    assert again.warnings == report.warnings
    assert again.zones[0].written == ()


def test_an_unsigned_zone_under_a_ds_is_bogus(workspace: Workspace, tmp_path: Path) -> None:
    # Why sign removes a stale .ds: a DS at the parent makes the unsigned zone bogus.
    _zone_result(workspace)
    shutil.copyfile(_ds_path(workspace), tmp_path / "old.ds")
    _edit(workspace, "  enabled: true\n", "  enabled: false\n")
    _zone_result(workspace)

    report = verify(
        [workspace.zone_file], out=workspace.out, now=NOW, trust_anchors=tmp_path / "old.ds"
    )

    assert {(f.category, f.dnssec) for f in report.proofs[0].failures} == {("bogus", "bogus")}
    assert len(report.proofs[0].failures) == 5


def test_dnssec_false_shorthand_creates_no_zone_keys(workspace: Workspace) -> None:
    text = workspace.zone_file.read_text(encoding="utf-8")
    section = re.search(r"^dnssec:.*\n(?:  .*\n)+", text, flags=re.MULTILINE)
    assert section is not None
    workspace.zone_file.write_text(text.replace(section.group(0), "dnssec: false\n"))

    zone_result = _zone_result(workspace)

    assert zone_result.dnssec is None
    assert not workspace.keys.zones.directory("example.com").exists()
    assert not _ds_path(workspace).exists()


def test_turning_dnssec_back_on_writes_the_ds_again(workspace: Workspace) -> None:
    _zone_result(workspace)
    ds_text = _ds_path(workspace).read_bytes()
    _edit(workspace, "  enabled: true\n", "  enabled: false\n")
    _zone_result(workspace)
    _edit(workspace, "  enabled: false\n", "  enabled: true\n")

    zone_result = _zone_result(workspace)

    assert str(_ds_path(workspace)) in zone_result.written
    assert _ds_path(workspace).read_bytes() == ds_text  # the same keys: the same DS
    _validate_every_rrset(_parse(workspace), NOW)


# --- keys ----------------------------------------------------------------------------


def test_missing_zone_keys_without_create_keys_name_dnssec_keygen(workspace: Workspace) -> None:
    _sign(workspace)
    before = _outputs(workspace)
    shutil.rmtree(workspace.keys.zones.directory("example.com"))

    with pytest.raises(KeyStoreError) as info:
        _sign(workspace, create_keys=False)

    assert info.value.category == "key"
    assert info.value.where == "example.com"
    assert "alter-publish dnssec keygen example.com" in info.value.what
    assert _outputs(workspace) == before


def test_new_zone_keys_change_the_ds_and_raise_the_serial(workspace: Workspace) -> None:
    first = _zone_result(workspace)
    old_ds = _ds_path(workspace).read_bytes()
    shutil.rmtree(workspace.keys.zones.directory("example.com"))

    again = _zone_result(workspace)

    assert again.serial == first.serial + 1
    assert str(_ds_path(workspace)) in again.written
    assert _ds_path(workspace).read_bytes() != old_ds
    _validate_every_rrset(_parse(workspace), NOW)


def test_encrypted_zone_keys_sign_with_the_passphrase(workspace: Workspace) -> None:
    keys = KeyStore(workspace.root / "keys", passphrase=b"correct horse")
    report = sign([workspace.zone_file], out=workspace.out, keys=keys, now=NOW, create_keys=True)
    assert report.ok
    for pem in keys.zones.directory("example.com").glob("*.pem"):
        assert pem.read_bytes().startswith(b"-----BEGIN ENCRYPTED " + PEM_KEY_LABEL)
    # (A run that would change nothing needs no key: force a real one by moving the clock
    # past the signatures' refresh point.)
    with pytest.raises(KeyStoreError):
        _sign(workspace, now=NOW + 30 * 86400, create_keys=False)
