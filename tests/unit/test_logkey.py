"""The log key store's public files (keys/logkey.py): what checks the published log reads
the verifier key beside the private key, never the private key."""

from __future__ import annotations

from pathlib import Path

import pytest

from alter_publish.errors import KeyStoreError
from alter_publish.keys.logkey import LogKeyStore

ZONE = "example.com"


def _garble(store: LogKeyStore, name: str) -> None:
    """Make a private key file unusable: reading it now fails."""
    (store.directory(ZONE) / name).write_bytes(b"not a key\n")


def test_the_verifier_is_read_without_the_private_key(tmp_path: Path) -> None:
    store = LogKeyStore(tmp_path / "keys", passphrase=b"correct horse")
    signer = store.signer(ZONE, create=True)
    assert store.public_path(ZONE).read_text() == signer.verifier.to_text() + "\n"
    _garble(store, "current.pem")
    locked = LogKeyStore(tmp_path / "keys")  # no passphrase either
    assert locked.verifier(ZONE) == signer.verifier
    assert locked.require_verifier(ZONE) == signer.verifier
    with pytest.raises(KeyStoreError):
        locked.signer(ZONE, create=False)  # the private key was garbled indeed
    (store.directory(ZONE) / "current.pem").unlink()  # kept offline: still verifiable
    assert locked.verifier(ZONE) == signer.verifier


def test_during_a_handover_the_retired_key_s_public_file_is_read(tmp_path: Path) -> None:
    store = LogKeyStore(tmp_path / "keys")
    old = store.signer(ZONE, create=True)
    new = store.rotate(ZONE)
    retired = f"retired-{old.verifier.key_id.hex()}.pem"
    _garble(store, retired)
    _garble(store, "current.pem")
    assert store.verifier(ZONE) == old.verifier
    store.handed_over(ZONE)
    assert store.verifier(ZONE) == new.verifier


def test_a_store_without_public_files_reads_the_private_key_until_sign_writes_them(
    tmp_path: Path,
) -> None:
    store = LogKeyStore(tmp_path / "keys")
    assert store.verifier(ZONE) is None
    with pytest.raises(KeyStoreError, match="no log key"):
        store.require_verifier(ZONE)
    signer = store.signer(ZONE, create=True)
    store.public_path(ZONE).unlink()  # a store from before the public files: as then
    assert store.verifier(ZONE) == signer.verifier
    assert not store.public_path(ZONE).exists()  # verify writes nothing
    _garble(store, "current.pem")  # neither file usable: an error naming the key file
    with pytest.raises(KeyStoreError) as caught:
        store.verifier(ZONE)
    assert str(caught.value).startswith(f"{store.path(ZONE)}: "), caught.value
    store = LogKeyStore(tmp_path / "keys2")
    signer = store.signer(ZONE, create=True)
    store.public_path(ZONE).unlink()
    assert store.signer(ZONE, create=False) == signer  # what sign does: it writes it again
    assert store.public_path(ZONE).exists()
    assert store.verifier(ZONE) == signer.verifier
    store.public_path(ZONE).write_text(signer.verifier.to_text().replace(ZONE, "other.example"))
    with pytest.raises(KeyStoreError):
        store.verifier(ZONE)
