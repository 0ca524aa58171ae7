"""Handle key lifecycle: rotate, revoke and status against a real signed workspace."""

from __future__ import annotations

import json
import os
from pathlib import Path

import dns.rdatatype
import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.definition.model import ZoneSpec, load_zone
from alter_publish.errors import DefinitionError, KeyStoreError, UsageError, VerificationError
from alter_publish.format.envelope import (
    Envelope,
    Revocation,
    b64url,
    parse_record,
    sign_envelope,
    verify_record,
)
from alter_publish.format.handles import parse_handle
from alter_publish.format.identitylog import read_log
from alter_publish.keys.lifecycle import (
    REVOCATIONS_FORMAT,
    HandleStatus,
    LogIndex,
    RevocationEntry,
    RotationMode,
    add_revocation,
    read_revocations,
    revocations_path_for,
    revoke,
    rotate,
    zone_handle_status,
)
from alter_publish.keys.store import Continuity
from alter_publish.pipeline import SignReport, sign
from tests.conftest import NOW, Workspace

ZONE = "example.com"
BLAKE = parse_handle("~blake")
OWNER = "_alter.blake.example.com."
MINUTE = 60


def _sign(ws: Workspace, now: int) -> SignReport:
    report = sign([ws.zone_file], out=ws.out, keys=ws.keys, now=now, create_keys=True)
    assert report.ok
    return report


def _spec(ws: Workspace) -> ZoneSpec:
    return load_zone(ws.zone_file)


def _revocations_file(ws: Workspace) -> Path:
    return revocations_path_for(ws.zone_file)


def _txt_at(zone_path: Path, owner: str) -> list[str]:
    """Every TXT record text the rendered zone serves at ``owner``."""
    zone = dns.zone.from_file(str(zone_path), origin="example.com.", relativize=False)
    texts: list[str] = []
    for name, rdataset in zone.iterate_rdatasets(dns.rdatatype.TXT):
        if name.to_text() == owner:
            texts.extend(b"".join(rdata.strings).decode("ascii") for rdata in rdataset)
    return texts


def _served(ws: Workspace) -> tuple[Envelope, list[str]]:
    """The one envelope served for ~blake and every text at its owner name."""
    texts = _txt_at(ws.rendered, OWNER)
    envelopes = [r for r in map(parse_record, texts) if isinstance(r, Envelope)]
    assert len(envelopes) == 1, texts
    return envelopes[0], texts


def _log_lines(ws: Workspace) -> list[str]:
    return ws.log.read_text().splitlines()


def _blake_status(ws: Workspace, now: int) -> HandleStatus:
    found = {s.handle: s for s in zone_handle_status(_spec(ws), keys=ws.keys, now=now)}
    return found["~blake"]


def _write_secret(path: Path, secret: bytes) -> Path:
    path.write_text(b64url(secret) + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def signed(workspace: Workspace) -> Workspace:
    """The example workspace signed once at NOW, every handle at epoch 1."""
    _sign(workspace, NOW)
    return workspace


# --- rotate ------------------------------------------------------------------------------


def test_scheduled_rotation_publishes_the_next_epoch_with_psig(signed: Workspace) -> None:
    k1 = signed.keys.load(ZONE, BLAKE, 1).public_key
    log_before = read_log(signed.log).size
    result = rotate(_spec(signed), "~blake", keys=signed.keys, now=NOW + MINUTE)
    assert (result.previous_epoch, result.key.epoch) == (1, 2)
    assert result.rotation.continuity is Continuity.PSIG
    assert result.revocation is None
    assert signed.keys.rotation(ZONE, BLAKE, 2) == result.rotation
    assert result.rotation.public_key == result.key.public_key
    assert result.key.public_key != k1
    assert signed.keys.epochs(ZONE, BLAKE) == (1, 2)

    report = _sign(signed, NOW + 2 * MINUTE)
    assert report.zones[0].signed == 1
    envelope, texts = _served(signed)
    assert texts == [envelope.to_text()]  # epoch 1 is gone from the zone
    assert envelope.epoch == 2
    assert envelope.public_key == result.key.public_key
    assert envelope.psig is not None
    verified = verify_record(
        envelope.to_text(), owner=OWNER, substrate=ZONE, now=NOW + 2 * MINUTE, pinned=(1, k1)
    )
    assert verified.epoch == 2
    other = signed.keys.load(ZONE, parse_handle("~drew"), 1).public_key
    with pytest.raises(VerificationError) as excinfo:
        verify_record(
            envelope.to_text(), owner=OWNER, substrate=ZONE, now=NOW + 2 * MINUTE, pinned=(1, other)
        )
    assert excinfo.value.category == "bad-continuity"
    log = read_log(signed.log)
    assert log.size == log_before + 1
    assert (log.entries[-1].owner, log.entries[-1].text) == (OWNER, envelope.to_text())


def test_compromised_rotation_revokes_the_old_epoch_once(signed: Workspace) -> None:
    old = LogIndex(read_log(signed.log)).latest(OWNER, BLAKE, 1)
    assert old is not None
    result = rotate(
        _spec(signed), "~blake", keys=signed.keys, now=NOW + MINUTE, mode=RotationMode.COMPROMISED
    )
    assert result.rotation.continuity is Continuity.NONE
    assert result.revocation is not None
    assert result.revocation.epoch == 1
    assert result.revocation.revokes(old)
    (entry,) = read_revocations(_revocations_file(signed))
    assert entry == RevocationEntry(result.revocation, NOW + MINUTE, "rotate --compromised")

    first = _sign(signed, NOW + 2 * MINUTE).zones[0]
    envelope, texts = _served(signed)
    revocation_text = result.revocation.to_text()
    assert sorted(texts) == sorted([revocation_text, envelope.to_text()])
    assert envelope.epoch == 2
    assert envelope.psig is None
    verify_record(
        envelope.to_text(), owner=OWNER, substrate=ZONE, now=NOW + 2 * MINUTE, revocations=texts
    )
    with pytest.raises(VerificationError) as excinfo:
        verify_record(
            old.to_text(), owner=OWNER, substrate=ZONE, now=NOW + 2 * MINUTE, revocations=texts
        )
    assert excinfo.value.category == "revoked"
    lines = _log_lines(signed)
    assert lines.count(f"{OWNER} {revocation_text}") == 1

    second = _sign(signed, NOW + 3 * MINUTE).zones[0]
    assert _log_lines(signed) == lines
    assert second.serial == first.serial
    assert second.signed == 0
    assert sorted(_served(signed)[1]) == sorted(texts)


@pytest.mark.parametrize("secret_kept", [True, False], ids=["secret-in-store", "secret-gone"])
def test_lost_rotation_needs_no_old_key(signed: Workspace, secret_kept: bool) -> None:
    key_path, secret_path = signed.keys.paths(ZONE, BLAKE, 1)
    key_path.unlink()
    if not secret_kept:
        secret_path.unlink()
    result = rotate(
        _spec(signed), "~blake", keys=signed.keys, now=NOW + MINUTE, mode=RotationMode.LOST
    )
    assert result.key.epoch == 2
    assert result.rotation.continuity is Continuity.NONE
    assert (result.revocation is not None) == secret_kept
    queued = read_revocations(_revocations_file(signed))
    assert [e.revocation.epoch for e in queued] == ([1] if secret_kept else [])

    _sign(signed, NOW + 2 * MINUTE)
    envelope, texts = _served(signed)
    assert (envelope.epoch, envelope.psig) == (2, None)
    assert len(texts) == (2 if secret_kept else 1)


def test_scheduled_rotation_without_the_old_key_points_to_lost(signed: Workspace) -> None:
    signed.keys.paths(ZONE, BLAKE, 1)[0].unlink()
    with pytest.raises(KeyStoreError, match="--lost"):
        rotate(_spec(signed), "~blake", keys=signed.keys, now=NOW + MINUTE)
    handle_dir = signed.keys.handle_dir(ZONE, BLAKE)
    assert sorted(p.name for p in handle_dir.iterdir()) == ["1.secret"]


def test_scheduled_rotation_of_a_revoked_epoch_is_refused(signed: Workspace) -> None:
    secret = signed.keys.read_secret(ZONE, BLAKE, 1)
    add_revocation(
        _revocations_file(signed), RevocationEntry(Revocation(BLAKE, 1, secret), NOW, "test")
    )
    with pytest.raises(KeyStoreError, match="--compromised"):
        rotate(_spec(signed), "~blake", keys=signed.keys, now=NOW + MINUTE)
    assert signed.keys.epochs(ZONE, BLAKE) == (1,)


def test_rotate_refuses_an_unknown_handle_or_one_without_a_key(workspace: Workspace) -> None:
    with pytest.raises(UsageError, match="keygen"):
        rotate(_spec(workspace), "~blake", keys=workspace.keys, now=NOW)
    with pytest.raises(UsageError, match="not a handle"):
        rotate(_spec(workspace), "~nobody", keys=workspace.keys, now=NOW)


def test_a_failed_rotation_queues_no_revocation(signed: Workspace, tmp_path: Path) -> None:
    taken = tmp_path / "taken.secret"
    taken.write_text("keep me\n")
    with pytest.raises(KeyStoreError, match="exists already"):
        rotate(
            _spec(signed),
            "~blake",
            keys=signed.keys,
            now=NOW + MINUTE,
            mode=RotationMode.COMPROMISED,
            secret_out=taken,
        )
    assert signed.keys.epochs(ZONE, BLAKE) == (1,)
    assert read_revocations(_revocations_file(signed)) == ()


# --- revoke ------------------------------------------------------------------------------


@pytest.mark.parametrize("epoch", [None, 1], ids=["default", "explicit"])
def test_revoke_refuses_the_current_epoch(signed: Workspace, epoch: int | None) -> None:
    with pytest.raises(UsageError) as excinfo:
        revoke(_spec(signed), "~blake", keys=signed.keys, now=NOW, epoch=epoch)
    assert "rotate" in str(excinfo.value)
    assert "--compromised" in str(excinfo.value)
    assert not _revocations_file(signed).exists()


@pytest.mark.parametrize("epoch", [0, -1, 3], ids=["zero", "negative", "future"])
def test_revoke_refuses_an_epoch_that_does_not_exist(signed: Workspace, epoch: int) -> None:
    rotate(_spec(signed), "~blake", keys=signed.keys, now=NOW + MINUTE)
    with pytest.raises(UsageError, match="no epoch"):
        revoke(_spec(signed), "~blake", keys=signed.keys, now=NOW, epoch=epoch)
    assert not _revocations_file(signed).exists()


def test_revoke_with_the_wrong_secret_is_refused(signed: Workspace, tmp_path: Path) -> None:
    rotate(_spec(signed), "~blake", keys=signed.keys, now=NOW + MINUTE)
    wrong = _write_secret(tmp_path / "wrong.secret", os.urandom(32))
    with pytest.raises(KeyStoreError, match="does not match"):
        revoke(
            _spec(signed), "~blake", keys=signed.keys, now=NOW + MINUTE, epoch=1, secret_file=wrong
        )
    assert not _revocations_file(signed).exists()


def test_revoke_twice_is_not_new(signed: Workspace) -> None:
    rotate(_spec(signed), "~blake", keys=signed.keys, now=NOW + MINUTE)
    first, new = revoke(_spec(signed), "~blake", keys=signed.keys, now=NOW + MINUTE, epoch=1)
    assert new
    assert first == Revocation(BLAKE, 1, signed.keys.read_secret(ZONE, BLAKE, 1))
    again, new = revoke(_spec(signed), "~blake", keys=signed.keys, now=NOW + MINUTE, epoch=1)
    assert (again, new) == (first, False)  # queued already
    _sign(signed, NOW + 2 * MINUTE)
    assert first.to_text() in _served(signed)[1]
    assert len(read_revocations(_revocations_file(signed))) == 1
    _revocations_file(signed).unlink()  # the log alone still knows it was published
    again, new = revoke(_spec(signed), "~blake", keys=signed.keys, now=NOW + 3 * MINUTE, epoch=1)
    assert (again, new) == (first, False)


def test_an_offline_secret_stays_out_of_the_store(signed: Workspace, tmp_path: Path) -> None:
    offline = tmp_path / "offline" / "blake-2.secret"
    result = rotate(_spec(signed), "~blake", keys=signed.keys, now=NOW + MINUTE, secret_out=offline)
    assert result.secret_file == offline
    assert result.key.revocation_secret is None
    assert not signed.keys.paths(ZONE, BLAKE, 2)[1].exists()
    assert signed.keys.commitment_path(ZONE, BLAKE, 2).exists()
    _sign(signed, NOW + 2 * MINUTE)
    rotate(_spec(signed), "~blake", keys=signed.keys, now=NOW + 3 * MINUTE)

    with pytest.raises(KeyStoreError, match="--secret-file"):
        revoke(_spec(signed), "~blake", keys=signed.keys, now=NOW + 3 * MINUTE, epoch=2)
    revocation, new = revoke(
        _spec(signed),
        "~blake",
        keys=signed.keys,
        now=NOW + 3 * MINUTE,
        epoch=2,
        secret_file=offline,
    )
    assert new
    assert revocation.epoch == 2
    epoch2 = LogIndex(read_log(signed.log)).latest(OWNER, BLAKE, 2)
    assert epoch2 is not None
    assert revocation.revokes(epoch2)


# --- status ------------------------------------------------------------------------------


def _epochs(status: HandleStatus) -> list[tuple[int, str, bool, str | None, str | None]]:
    return [(e.epoch, e.state, e.published, e.revocation, e.continuity) for e in status.epochs]


def test_status_follows_a_scheduled_rotation(signed: Workspace) -> None:
    before = _blake_status(signed, NOW + MINUTE)
    assert _epochs(before) == [(1, "active", True, None, None)]
    result = rotate(_spec(signed), "~blake", keys=signed.keys, now=NOW + MINUTE)

    pending = _blake_status(signed, NOW + MINUTE)
    assert _epochs(pending) == [
        (1, "retired", True, None, None),
        (2, "active", False, None, "psig"),
    ]
    assert pending.epochs[1].key_id == result.key.key_id
    assert pending.next_action == "sign: publish epoch 2"
    assert pending.due == NOW + MINUTE
    assert pending.expires is None

    _sign(signed, NOW + 2 * MINUTE)
    published = _blake_status(signed, NOW + 2 * MINUTE)
    assert _epochs(published) == [
        (1, "retired", True, None, None),
        (2, "active", True, None, "psig"),
    ]
    envelope, _ = _served(signed)
    assert envelope.expires_at is not None
    assert published.expires == envelope.expires_at
    assert published.next_action.startswith("sign by ")


def test_status_shows_a_revocation_pending_then_published(signed: Workspace) -> None:
    rotate(
        _spec(signed), "~blake", keys=signed.keys, now=NOW + MINUTE, mode=RotationMode.COMPROMISED
    )
    pending = _blake_status(signed, NOW + MINUTE)
    assert _epochs(pending) == [
        (1, "revoked", True, "pending", None),
        (2, "active", False, None, "none"),
    ]
    assert pending.next_action == "sign: publish epoch 2"

    _sign(signed, NOW + 2 * MINUTE)
    published = _blake_status(signed, NOW + 2 * MINUTE)
    assert _epochs(published) == [
        (1, "revoked", True, "published", None),
        (2, "active", True, None, "none"),
    ]
    assert published.expires == _served(signed)[0].expires_at
    drew = {s.handle: s for s in zone_handle_status(_spec(signed), keys=signed.keys, now=NOW)}
    assert _epochs(drew["~drew"]) == [(1, "active", True, None, None)]


def test_status_asks_to_publish_a_queued_revocation(signed: Workspace) -> None:
    rotate(_spec(signed), "~blake", keys=signed.keys, now=NOW + MINUTE)
    _sign(signed, NOW + 2 * MINUTE)
    revoke(_spec(signed), "~blake", keys=signed.keys, now=NOW + 3 * MINUTE, epoch=1)
    status = _blake_status(signed, NOW + 3 * MINUTE)
    assert _epochs(status)[0] == (1, "revoked", True, "pending", None)
    assert status.next_action == "sign: publish the revocation of epoch 1"


# --- sign and the revocations file -------------------------------------------------------


def test_sign_refuses_a_revoked_current_epoch(signed: Workspace) -> None:
    log_before = _log_lines(signed)
    secret = signed.keys.read_secret(ZONE, BLAKE, 1)
    entry = RevocationEntry(Revocation(BLAKE, 1, secret), NOW, "by hand")
    assert add_revocation(_revocations_file(signed), entry)
    assert not add_revocation(_revocations_file(signed), entry)
    with pytest.raises(KeyStoreError, match="rotate"):
        sign([signed.zone_file], out=signed.out, keys=signed.keys, now=NOW + MINUTE)
    assert _log_lines(signed) == log_before


def test_revocations_file_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "zones" / "example.com.revocations.json"
    assert read_revocations(path) == ()
    entries = [
        RevocationEntry(Revocation(BLAKE, epoch, bytes([epoch]) * 32), NOW + epoch, "revoke")
        for epoch in (1, 2)
    ]
    for entry in entries:
        assert add_revocation(path, entry)
    assert read_revocations(path) == tuple(entries)
    assert json.loads(path.read_text())["format"] == REVOCATIONS_FORMAT


def _envelope_text() -> str:
    return sign_envelope(
        handle=BLAKE,
        owner=OWNER,
        epoch=1,
        private_key=Ed25519PrivateKey.generate(),
        signed_at=NOW,
        expires_at=None,
        log_size=0,
        log_root=bytes(32),
        revocation_secret=bytes(32),
    ).to_text()


def _entry(text: str) -> dict[str, object]:
    return {"handle": "~blake", "epoch": 1, "text": text, "made": NOW, "reason": "revoke"}


REVOCATION_TEXT = f"v=alter1; h=~blake; e=1; rev={b64url(bytes(32))}"
BAD_REVOCATION_FILES = {
    "not-json": "{not json",
    "wrong-format": json.dumps({"format": "alter-publish/pins/1", "revocations": []}),
    "not-an-object": json.dumps([_entry(REVOCATION_TEXT)]),
    "envelope-text": json.dumps(
        {"format": REVOCATIONS_FORMAT, "revocations": [_entry(_envelope_text())]}
    ),
    "other-record": json.dumps(
        {"format": REVOCATIONS_FORMAT, "revocations": [_entry("v=alter1; org=example")]}
    ),
    "malformed-rev": json.dumps(
        {"format": REVOCATIONS_FORMAT, "revocations": [_entry(REVOCATION_TEXT + "=")]}
    ),
    "tags-out-of-order": json.dumps(
        {
            "format": REVOCATIONS_FORMAT,
            "revocations": [_entry(f"v=alter1; e=1; h=~blake; rev={b64url(bytes(32))}")],
        }
    ),
    "missing-made": json.dumps(
        {
            "format": REVOCATIONS_FORMAT,
            "revocations": [{"text": REVOCATION_TEXT, "reason": "revoke"}],
        }
    ),
    "entry-not-an-object": json.dumps({"format": REVOCATIONS_FORMAT, "revocations": ["x"]}),
}


@pytest.mark.parametrize("text", BAD_REVOCATION_FILES.values(), ids=BAD_REVOCATION_FILES.keys())
def test_read_revocations_rejects_what_is_not_a_revocation(tmp_path: Path, text: str) -> None:
    path = tmp_path / "example.com.revocations.json"
    path.write_text(text)
    with pytest.raises(DefinitionError) as excinfo:
        read_revocations(path)
    assert str(path) in str(excinfo.value)


def test_a_well_formed_entry_is_read(tmp_path: Path) -> None:
    path = tmp_path / "example.com.revocations.json"
    path.write_text(
        json.dumps({"format": REVOCATIONS_FORMAT, "revocations": [_entry(REVOCATION_TEXT)]})
    )
    (entry,) = read_revocations(path)
    assert entry.revocation == Revocation(BLAKE, 1, bytes(32))


def test_read_revocations_rejects_a_revocations_value_that_is_not_a_list(tmp_path: Path) -> None:
    path = tmp_path / "example.com.revocations.json"
    path.write_text(json.dumps({"format": REVOCATIONS_FORMAT, "revocations": 5}))
    with pytest.raises(DefinitionError):
        read_revocations(path)
