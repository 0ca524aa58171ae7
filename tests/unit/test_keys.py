"""The key store: real Ed25519 keys on a real file system."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from alter_publish.errors import KeyStoreError
from alter_publish.handles import parse_handle
from alter_publish.keys import (
    PASSPHRASE_ENV,
    PASSPHRASE_FILE_ENV,
    KeyStore,
    passphrase_from_env,
)

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
        store.current("example.com", BLAKE)
    assert store.current("example.com", BLAKE, create=True).epoch == 1
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
