"""The key store: real Ed25519 keys on a real file system."""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from alter_publish.errors import KeyStoreError
from alter_publish.format.envelope import b64url, revocation_commitment
from alter_publish.format.handles import parse_handle
from alter_publish.keys.pem import PASSPHRASE_ENV, PASSPHRASE_FILE_ENV, passphrase_from_env
from alter_publish.keys.store import ROTATION_FORMAT, Continuity, KeyStore, Rotation

BLAKE = parse_handle("~blake")


def test_generate_then_load_round_trips(tmp_path: Path) -> None:
    store = KeyStore(tmp_path)
    made = store.generate("example.com", BLAKE, 1)
    loaded = store.load("example.com", BLAKE, 1)
    assert loaded.public_key == made.public_key
    assert loaded.revocation_secret == made.revocation_secret
    assert store.epochs("example.com", BLAKE) == (1,)
    for path in store.paths("example.com", BLAKE, 1):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "revocation_secret" not in repr(loaded).split("(", 1)[1]


def test_keys_are_never_overwritten(tmp_path: Path) -> None:
    store = KeyStore(tmp_path)
    store.generate("example.com", BLAKE, 1)
    with pytest.raises(KeyStoreError, match="never overwritten"):
        store.generate("example.com", BLAKE, 1)


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644], ids=["group", "other", "both"])
def test_readable_private_files_are_refused(tmp_path: Path, mode: int) -> None:
    store = KeyStore(tmp_path)
    store.generate("example.com", BLAKE, 1)
    key_path, _ = store.paths("example.com", BLAKE, 1)
    key_path.chmod(mode)
    with pytest.raises(KeyStoreError, match="chmod 600"):
        store.load("example.com", BLAKE, 1)


def test_encrypted_key_needs_the_right_passphrase(tmp_path: Path) -> None:
    KeyStore(tmp_path, passphrase=b"s3cret").generate("example.com", BLAKE, 1)
    with pytest.raises(KeyStoreError, match=PASSPHRASE_ENV):
        KeyStore(tmp_path).load("example.com", BLAKE, 1)
    with pytest.raises(KeyStoreError, match="wrong passphrase"):
        KeyStore(tmp_path, passphrase=b"wrong").load("example.com", BLAKE, 1)
    assert KeyStore(tmp_path, passphrase=b"s3cret").load("example.com", BLAKE, 1).epoch == 1


def test_current_creates_only_when_asked(tmp_path: Path) -> None:
    store = KeyStore(tmp_path)
    with pytest.raises(KeyStoreError, match="--create-keys"):
        store.current_material("example.com", BLAKE)
    assert store.current_material("example.com", BLAKE, create=True)[0] == 1
    assert store.epochs("example.com", BLAKE) == (1,)
    assert (tmp_path / ".gitignore").read_text().startswith("# alter-publish key store")


def test_corrupt_secret_is_refused(tmp_path: Path) -> None:
    store = KeyStore(tmp_path)
    store.generate("example.com", BLAKE, 1)
    _, secret_path = store.paths("example.com", BLAKE, 1)
    secret_path.write_text("not base64url!\n")
    with pytest.raises(KeyStoreError, match="revocation secret"):
        store.load("example.com", BLAKE, 1)


def test_passphrase_from_env(tmp_path: Path) -> None:
    assert passphrase_from_env({}) is None
    assert passphrase_from_env({PASSPHRASE_ENV: "pw"}) == b"pw"
    file = tmp_path / "pw"
    file.write_text("from-file\n")
    assert passphrase_from_env({PASSPHRASE_FILE_ENV: str(file)}) == b"from-file"
    with pytest.raises(KeyStoreError, match="only one"):
        passphrase_from_env({PASSPHRASE_ENV: "a", PASSPHRASE_FILE_ENV: str(file)})
    with pytest.raises(KeyStoreError, match="empty"):
        passphrase_from_env({PASSPHRASE_ENV: ""})


# --- revocation secrets kept offline -------------------------------------------------


def test_generate_with_secret_out_keeps_only_the_commitment(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    offline = tmp_path / "offline" / "blake-1.secret"
    made = store.generate("example.com", BLAKE, 1, secret_out=offline)
    assert stat.S_IMODE(offline.stat().st_mode) == 0o600
    secret = store.read_secret("example.com", BLAKE, 1, offline)
    _, secret_path = store.paths("example.com", BLAKE, 1)
    assert not secret_path.exists()
    rc_path = store.commitment_path("example.com", BLAKE, 1)
    assert rc_path.read_text() == b64url(revocation_commitment(secret)) + "\n"
    assert made.revocation_secret is None
    assert made.commitment == revocation_commitment(secret)
    loaded = store.load("example.com", BLAKE, 1)
    assert loaded.revocation_secret is None
    assert loaded.commitment == revocation_commitment(secret)
    assert loaded.public_key == made.public_key
    assert store.epochs("example.com", BLAKE) == (1,)


def test_generate_refuses_an_existing_secret_out(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    offline = tmp_path / "blake-1.secret"
    offline.write_text("an older secret\n")
    with pytest.raises(KeyStoreError, match="exists already") as excinfo:
        store.generate("example.com", BLAKE, 1, secret_out=offline)
    assert excinfo.value.where == str(offline)
    assert offline.read_text() == "an older secret\n"
    assert not store.root.exists()


def test_load_without_secret_or_commitment_names_the_files(tmp_path: Path) -> None:
    store = KeyStore(tmp_path)
    store.generate("example.com", BLAKE, 1)
    _, secret_path = store.paths("example.com", BLAKE, 1)
    secret_path.unlink()
    with pytest.raises(KeyStoreError, match="missing") as excinfo:
        store.load("example.com", BLAKE, 1)
    assert excinfo.value.where == str(secret_path)
    assert "1.rc" in excinfo.value.what


def test_corrupt_commitment_is_refused(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    store.generate("example.com", BLAKE, 1, secret_out=tmp_path / "offline.secret")
    rc_path = store.commitment_path("example.com", BLAKE, 1)
    rc_path.write_text(b64url(bytes(31)) + "\n")
    with pytest.raises(KeyStoreError, match="commitment") as excinfo:
        store.load("example.com", BLAKE, 1)
    assert excinfo.value.where == str(rc_path)


@pytest.mark.parametrize(
    "content",
    [
        b64url(bytes(31)).encode(),
        b64url(bytes(33)).encode(),
        (b64url(bytes(32)) + "=").encode(),
        b"+" * 43,
        b"",
        b"\xff" * 43,
    ],
    ids=["31-bytes", "33-bytes", "padded", "not-base64url", "empty", "not-ascii"],
)
def test_read_secret_rejects_what_is_not_a_secret(tmp_path: Path, content: bytes) -> None:
    store = KeyStore(tmp_path / "keys")
    path = tmp_path / "given.secret"
    path.write_bytes(content)
    path.chmod(0o600)
    with pytest.raises(KeyStoreError, match="32-byte revocation secret") as excinfo:
        store.read_secret("example.com", BLAKE, 1, path)
    assert excinfo.value.where == str(path)


def test_read_secret_reads_a_good_file_and_names_a_missing_one(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    path = tmp_path / "given.secret"
    path.write_text(b64url(bytes(range(32))) + "\n")
    path.chmod(0o600)
    assert store.read_secret("example.com", BLAKE, 1, path) == bytes(range(32))
    with pytest.raises(KeyStoreError, match="--secret-file"):
        store.read_secret("example.com", BLAKE, 1)


# --- rotation records ------------------------------------------------------------------


def _rotation(store: KeyStore) -> Rotation:
    public = store.generate("example.com", BLAKE, 2).public_key
    return Rotation(2, 1_767_225_600, "scheduled", Continuity.PSIG, public)


@pytest.mark.parametrize("continuity", list(Continuity), ids=str)
def test_rotation_round_trips(tmp_path: Path, continuity: Continuity) -> None:
    store = KeyStore(tmp_path)
    made = _rotation(store)
    rotation = Rotation(made.epoch, made.created, "compromised", continuity, made.public_key)
    assert store.rotation("example.com", BLAKE, 2) is None
    store.write_rotation("example.com", BLAKE, rotation)
    assert store.rotation("example.com", BLAKE, 2) == rotation
    assert store.rotation("example.com", BLAKE, 1) is None


BAD_ROTATIONS = {
    "not-json": "{not json",
    "not-an-object": "[]",
    "wrong-format": {"format": "alter-publish/rotation/0"},
    "other-epoch": {"epoch": 3},
    "bad-continuity": {"continuity": "maybe"},
    "key-too-short": {"p": b64url(bytes(31))},
    "missing-created": {"created": None},
}


@pytest.mark.parametrize("change", BAD_ROTATIONS.values(), ids=BAD_ROTATIONS.keys())
def test_corrupt_rotation_is_refused(tmp_path: Path, change: str | dict[str, object]) -> None:
    store = KeyStore(tmp_path)
    store.write_rotation("example.com", BLAKE, _rotation(store))
    path = store.handle_dir("example.com", BLAKE) / "2.json"
    if isinstance(change, str):
        path.write_text(change)
    else:
        doc = json.loads(path.read_text())
        assert doc["format"] == ROTATION_FORMAT
        doc.update(change)
        path.write_text(json.dumps({k: v for k, v in doc.items() if v is not None}))
    with pytest.raises(KeyStoreError) as excinfo:
        store.rotation("example.com", BLAKE, 2)
    assert excinfo.value.where == str(path)


@pytest.mark.parametrize(
    ("passphrase", "offline"),
    [
        pytest.param(None, False, id="plain"),
        pytest.param(b"correct horse", False, id="encrypted"),
        pytest.param(None, True, id="secret-offline"),
    ],
)
def test_current_material_is_what_the_key_object_holds(
    tmp_path: Path, passphrase: bytes | None, offline: bool
) -> None:
    from cryptography.hazmat.primitives import serialization

    store = KeyStore(tmp_path / "keys", passphrase=passphrase)
    handle = parse_handle("~blake")
    for epoch in (1, 2):  # the current epoch is the highest
        secret_out = tmp_path / f"secret-{epoch}" if offline else None
        store.generate("example.com", handle, epoch, secret_out=secret_out)
    key = store.load("example.com", handle, 2)
    raw = key.private_key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    assert store.current_material("example.com", handle) == (2, raw, key.commitment)
    zone_fd = store.open_zone_dir("example.com")
    assert zone_fd is not None
    try:  # the workers' path, through the open zone directory, reads the same
        found = store.current_material("example.com", handle, zone_fd=zone_fd)
        assert found == (2, raw, key.commitment)
        with pytest.raises(KeyStoreError, match="--create-keys"):
            store.current_material("example.com", parse_handle("~nobody"), zone_fd=zone_fd)
    finally:
        os.close(zone_fd)


@contextlib.contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("offline", [False, True], ids=["secret-kept", "secret-offline"])
def test_key_directories_are_0700_whatever_the_umask(tmp_path: Path, offline: bool) -> None:
    """Offline, the first file of the epoch is its public ``.rc``: the directory is not."""
    store = KeyStore(tmp_path / "keys")
    with _umask(0):
        store.generate("example.com", BLAKE, 1, secret_out=tmp_path / "s" if offline else None)
        store.zones.save("example.org", [])  # keys.json is public, _dnssec/ is not
    keys = tmp_path / "keys"
    made = [keys, keys / "example.com", keys / "example.com" / "blake"]
    made += [keys / "example.org", keys / "example.org" / "_dnssec"]
    assert {str(path): f"{_mode(path):04o}" for path in made} == {str(p): "0700" for p in made}


def _worker_material(store: KeyStore) -> tuple[int, bytes, bytes]:
    """``current_material`` as the signing workers call it, through the open zone dir."""
    zone_fd = store.open_zone_dir("example.com")
    try:
        return store.current_material("example.com", BLAKE, zone_fd=zone_fd)
    finally:
        if zone_fd is not None:
            os.close(zone_fd)


@pytest.mark.parametrize("where", ["root", "zone", "handle"])
def test_key_directories_others_can_write_are_refused(tmp_path: Path, where: str) -> None:
    KeyStore(tmp_path / "keys").generate("example.com", BLAKE, 1)
    directory = {
        "root": tmp_path / "keys",
        "zone": tmp_path / "keys" / "example.com",
        "handle": tmp_path / "keys" / "example.com" / "blake",
    }[where]
    directory.chmod(0o775)
    store = KeyStore(tmp_path / "keys")  # a new run: nothing checked yet
    with pytest.raises(KeyStoreError, match=f"chmod 700 {directory}$"):
        store.load("example.com", BLAKE, 1)
    with pytest.raises(KeyStoreError, match="writable by group or others"):
        _worker_material(store)
    directory.chmod(0o755)  # readable by others is accepted, as OpenSSH does
    assert KeyStore(tmp_path / "keys").load("example.com", BLAKE, 1).epoch == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
@pytest.mark.parametrize("which", ["key", "secret", "handle-dir"])
def test_key_files_of_another_user_are_refused(tmp_path: Path, which: str) -> None:
    store = KeyStore(tmp_path / "keys")
    store.generate("example.com", BLAKE, 1)
    key_path, secret_path = store.paths("example.com", BLAKE, 1)
    path = {"key": key_path, "secret": secret_path, "handle-dir": key_path.parent}[which]
    os.chown(path, 12345, -1)
    with pytest.raises(KeyStoreError, match=f"uid 12345.*chown root {path}$"):
        KeyStore(tmp_path / "keys").current_material("example.com", BLAKE)


def test_listing_a_handle_sweeps_its_temp_files_only(tmp_path: Path) -> None:
    """A store that writes (``sweep``, as ``sign`` makes it) removes them; a read-only
    one (``keys status``, ``sign --check``) deletes nothing."""
    store = KeyStore(tmp_path / "keys")
    store.generate("example.com", BLAKE, 1)
    directory = store.handle_dir("example.com", BLAKE)
    ours = [".1.pem.abcd1234.tmp", ".2.secret.k3q9xw_2.tmp", ".2.rc.AAAAAAAA.tmp"]
    theirs = [".notes.txt.abcd1234.tmp", ".1.pem.tmp", "notes.txt", ".x.pem.abcd1234.tmp"]
    for name in (*ours, *theirs):
        (directory / name).write_bytes(b"x")
    before = sorted(p.name for p in directory.iterdir())
    assert store.epochs("example.com", BLAKE) == (1,)
    assert sorted(p.name for p in directory.iterdir()) == before
    store = KeyStore(tmp_path / "keys", sweep=True)
    assert store.unfinished_epochs("example.com", BLAKE) == ()  # epoch 2 only had temps
    assert sorted(p.name for p in directory.iterdir()) == sorted(["1.pem", "1.secret", *theirs])
