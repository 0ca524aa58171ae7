"""Rotating ~blake twice and revoking the middle epoch, with a pinned verifier watching.

At every step ``sign`` must prove the zone on loopback (DNSSEC-validated, every
envelope verified, rotated envelopes' ``psig`` checked against the logged key of
the epoch before, revocations served) and a verifier that pins on first use must
accept each honest rotation. Attacks are served as zones DNSSEC-signed with the
zone's own keys, so only the alter1 layer can catch them: a replayed older zone
(rollback), a new key without ``psig`` (no-continuity), another key at the pinned
epoch (key-mismatch), and the revoked epoch's envelope replayed (revoked).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import dns.name
import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.rdtypes.ANY.TXT
import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish import pipeline
from alter_publish.definition.model import load_zone
from alter_publish.dns.anchors import read_trust_anchors
from alter_publish.dns.dnssec import SignatureWindow, sign_records
from alter_publish.dns.records import from_zone
from alter_publish.dns.server import ZoneServer
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.errors import KeyStoreError
from alter_publish.format.envelope import (
    Envelope,
    Revocation,
    parse_record,
    sign_envelope,
    split_txt,
)
from alter_publish.format.handles import parse_handle
from alter_publish.keys.lifecycle import (
    RevocationEntry,
    RotationMode,
    add_revocation,
    revocations_path_for,
    revoke,
    rotate,
)
from alter_publish.verify.pins import PinStore
from alter_publish.verify.resolve import Resolution, resolve
from tests.conftest import NOW, Workspace

BLAKE = parse_handle("~blake")
OWNER = "_alter.blake.example.com."
DAY = 86400
_DNSSEC_TYPES = {
    dns.rdatatype.RRSIG,
    dns.rdatatype.NSEC,
    dns.rdatatype.NSEC3,
    dns.rdatatype.NSEC3PARAM,
    dns.rdatatype.DNSKEY,
}


@dataclass
class Verifier:
    """A relying party that resolves ~blake with a pin store, like ``resolve --pin-store``."""

    pins: PinStore
    anchors_file: Path

    def resolve(self, zone: dns.zone.Zone, now: int) -> Resolution:
        anchors = read_trust_anchors(self.anchors_file)
        with ZoneServer([zone]) as server:
            result = resolve(
                BLAKE,
                server=server.address,
                substrate="example.com",
                now=now,
                anchors=anchors,
                pinned=self.pins.pinned(OWNER),
            )
        if result.ok and result.envelope is not None:
            self.pins.accept(OWNER, result.envelope, now)
        return result


def _sign(ws: Workspace, now: int, *, create: bool = False) -> dns.zone.Zone:
    report = pipeline.sign([ws.zone_file], out=ws.out, keys=ws.keys, now=now, create_keys=create)
    (zone,) = report.zones
    assert zone.proof is not None
    assert zone.proof.ok, [failure.to_mapping() for failure in zone.proof.failures]
    assert report.committed
    assert pipeline.verify([ws.zone_file], out=ws.out, now=now).ok
    return pipeline.read_zone_file(ws.rendered, "example.com")


def _served(zone: dns.zone.Zone) -> list[str]:
    rdataset = zone.find_rdataset(OWNER, dns.rdatatype.TXT)
    return [b"".join(rdata.strings).decode() for rdata in rdataset]


def _envelope(zone: dns.zone.Zone) -> Envelope:
    (envelope,) = [r for t in _served(zone) if isinstance(r := parse_record(t), Envelope)]
    return envelope


def _forged(ws: Workspace, base: dns.zone.Zone, texts: list[str], now: int) -> dns.zone.Zone:
    """``base`` with ~blake's TXT replaced by ``texts``, re-signed with the zone's own keys."""
    unsigned = dns.zone.Zone(base.origin, relativize=False)
    for name, node in base.nodes.items():
        for rdataset in node.rdatasets:
            if rdataset.rdtype not in _DNSSEC_TYPES:
                unsigned.replace_rdataset(name, rdataset)
    ttl = unsigned.find_rdataset(OWNER, dns.rdatatype.TXT).ttl
    rdatas = [
        dns.rdtypes.ANY.TXT.TXT(dns.rdataclass.IN, dns.rdatatype.TXT, list(split_txt(text)))
        for text in texts
    ]
    unsigned.replace_rdataset(OWNER, dns.rdataset.from_rdata_list(ttl, rdatas))
    spec = load_zone(ws.zone_file)
    window = SignatureWindow.fresh(now, spec.dnssec.signature_validity)
    keys = ws.keys.zones.load("example.com")
    signed = sign_records(
        from_zone(unsigned), keys=keys, spec=spec.dnssec, window=window, dnskey_ttl=spec.ttl
    )
    return parse_zone_text(unsigned.to_text() + signed.records_text, "example.com", where="forged")


def _attacker_envelope(epoch: int, now: int, *, key: Ed25519PrivateKey | None = None) -> str:
    envelope = sign_envelope(
        handle=BLAKE,
        owner=OWNER,
        epoch=epoch,
        private_key=key or Ed25519PrivateKey.generate(),
        signed_at=now,
        expires_at=now + 30 * DAY,
        log_size=0,
        log_root=b"\0" * 32,
        revocation_secret=b"\1" * 32,
    )
    return envelope.to_text()


def test_rotate_twice_revoke_the_middle_epoch_with_a_pinned_verifier(workspace: Workspace) -> None:
    ws = workspace
    spec = load_zone(ws.zone_file)
    verifier = Verifier(PinStore(ws.root / "pins.json"), ws.out / "example.com.ds")

    zone1 = _sign(ws, NOW, create=True)
    first = verifier.resolve(zone1, NOW)
    assert (first.category, first.envelope and first.envelope.epoch) == (None, 1)

    rotate(spec, "~blake", keys=ws.keys, now=NOW + DAY)
    zone2 = _sign(ws, NOW + DAY)
    epoch2 = _envelope(zone2)
    assert (epoch2.epoch, epoch2.psig is not None) == (2, True)
    second = verifier.resolve(zone2, NOW + DAY)
    assert (second.category, verifier.pins.pinned(OWNER)) == (None, (2, epoch2.public_key))

    rotate(spec, "~blake", keys=ws.keys, now=NOW + 2 * DAY)
    zone3 = _sign(ws, NOW + 2 * DAY)
    epoch3 = _envelope(zone3)
    assert (epoch3.epoch, epoch3.psig is not None) == (3, True)
    third = verifier.resolve(zone3, NOW + 2 * DAY)
    assert (third.category, verifier.pins.pinned(OWNER)) == (None, (3, epoch3.public_key))

    revoke(spec, "~blake", keys=ws.keys, now=NOW + 3 * DAY, epoch=2)
    zone4 = _sign(ws, NOW + 3 * DAY)
    served = _served(zone4)
    assert len(served) == 2
    assert any(text.startswith("v=alter1; h=~blake; e=2; rev=") for text in served)
    fourth = verifier.resolve(zone4, NOW + 3 * DAY)
    assert (fourth.category, fourth.envelope and fourth.envelope.epoch) == (None, 3)

    later = NOW + 3 * DAY + 60
    revocation = next(text for text in served if "rev=" in text)

    # Rollback: the zone of step one, replayed (its DNSSEC signatures are still valid).
    assert verifier.resolve(zone1, later).category == "rollback"
    # A key swap without psig: the next epoch under a key the pinned one never vouched for.
    swap = _forged(ws, zone4, [_attacker_envelope(4, later), revocation], later)
    assert verifier.resolve(swap, later).category == "no-continuity"
    # Another key at the pinned epoch.
    other = _forged(ws, zone4, [_attacker_envelope(3, later), revocation], later)
    assert verifier.resolve(other, later).category == "key-mismatch"
    # The revoked epoch replayed beside its revocation: revoked, whatever the pin says.
    replay = _forged(ws, zone4, [epoch2.to_text(), revocation], later)
    assert verifier.resolve(replay, later).category == "revoked"
    fresh = Verifier(PinStore(ws.root / "fresh-pins.json"), verifier.anchors_file)
    assert fresh.resolve(replay, later).category == "revoked"
    # Beside the honest record the replay changes nothing, and is reported as revoked.
    both = verifier.resolve(_forged(ws, zone4, [*served, epoch2.to_text()], later), later)
    assert (both.category, both.envelope and both.envelope.epoch) == (None, 3)
    assert [c.category for c in both.candidates if c.epoch == 2] == ["revoked"]
    # None of it moved the pin.
    assert verifier.pins.pinned(OWNER) == (3, epoch3.public_key)


def test_compromised_rotation_revokes_and_publishes_without_psig(workspace: Workspace) -> None:
    ws = workspace
    spec = load_zone(ws.zone_file)
    verifier = Verifier(PinStore(ws.root / "pins.json"), ws.out / "example.com.ds")
    zone1 = _sign(ws, NOW, create=True)
    assert verifier.resolve(zone1, NOW).ok
    result = rotate(spec, "~blake", keys=ws.keys, now=NOW + DAY, mode=RotationMode.COMPROMISED)
    assert result.revocation is not None
    zone2 = _sign(ws, NOW + DAY)
    epoch2 = _envelope(zone2)
    assert (epoch2.epoch, epoch2.psig) == (2, None)
    assert any("; e=1; rev=" in text for text in _served(zone2))
    # The old key cannot vouch: a pinned verifier must re-pin out of band.
    assert verifier.resolve(zone2, NOW + DAY).category == "no-continuity"
    fresh = Verifier(PinStore(ws.root / "fresh.json"), verifier.anchors_file)
    assert fresh.resolve(zone2, NOW + DAY).ok


def test_the_proof_checks_psig_against_the_logged_key(workspace: Workspace) -> None:
    """A psig by a key other than the one the log published for the epoch before fails."""
    ws = workspace
    spec = load_zone(ws.zone_file)
    _sign(ws, NOW, create=True)
    key_path, _ = ws.keys.paths("example.com", BLAKE, 1)
    ws.keys.generate("example.com", BLAKE, 9)  # a stranger's key, moved into epoch 1
    shutil.copyfile(ws.keys.paths("example.com", BLAKE, 9)[0], key_path)
    for path in ws.keys.paths("example.com", BLAKE, 9):
        path.unlink()
    rotate(spec, "~blake", keys=ws.keys, now=NOW + DAY)
    before = ws.rendered.read_bytes()
    report = pipeline.sign([ws.zone_file], out=ws.out, keys=ws.keys, now=NOW + DAY)
    assert not report.committed
    (zone,) = report.zones
    assert zone.proof is not None
    assert [(f.handle, f.category) for f in zone.proof.failures] == [("~blake", "bad-continuity")]
    assert ws.rendered.read_bytes() == before


def test_signing_refuses_a_revoked_current_key(workspace: Workspace) -> None:
    ws = workspace
    spec = load_zone(ws.zone_file)
    _sign(ws, NOW, create=True)
    rotate(spec, "~blake", keys=ws.keys, now=NOW + DAY)
    _sign(ws, NOW + DAY)
    # Queue the current epoch's revocation by hand (revoke refuses to).

    secret = ws.keys.read_secret("example.com", BLAKE, 2)
    add_revocation(
        revocations_path_for(ws.zone_file), RevocationEntry(Revocation(BLAKE, 2, secret), NOW, "x")
    )
    with pytest.raises(KeyStoreError, match="--compromised"):
        pipeline.sign([ws.zone_file], out=ws.out, keys=ws.keys, now=NOW + 2 * DAY)
