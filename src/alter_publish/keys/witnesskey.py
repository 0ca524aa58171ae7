"""A witness's signing key: one file holding a signed-note signer key
(``PRIVATE+KEY+<name>+<hex key ID>+<base64(0x04 || seed)>``, mode 0600), the form
Go's ``note`` package and other witnesses use; its ``cosignature/v1`` verifier key
(type 0x04) is what policies list."""

from __future__ import annotations

import os
from pathlib import Path

from alter_publish.errors import KeyStoreError, VerificationError
from alter_publish.fileio import PRIVATE_MODE, atomic_write_bytes
from alter_publish.format.ed25519 import SEED_OCTETS
from alter_publish.format.note import COSIGNATURE_V1_TYPE, Signer, check_key_name


def generate_witness_key(name: str, path: Path) -> Signer:
    """A new witness key named ``name``, written to ``path`` (which must not exist).

    Raises:
        KeyStoreError: a bad name, ``path`` exists, or it cannot be written.
    """
    try:
        check_key_name(name)
    except VerificationError as exc:
        raise KeyStoreError(exc.what, where="witness key name") from exc
    if path.exists():
        raise KeyStoreError("exists already; not overwriting a key", where=str(path))
    signer = Signer(name, os.urandom(SEED_OCTETS), COSIGNATURE_V1_TYPE)
    data = (signer.to_text() + "\n").encode()
    atomic_write_bytes(path, data, mode=PRIVATE_MODE, error=KeyStoreError)
    return signer


def load_witness_key(path: Path) -> Signer:
    """The witness key in ``path`` (a signer key of type 0x01 or 0x04; it cosigns as
    type 0x04 either way).

    Raises:
        KeyStoreError: unreadable, or not a signer key.
    """
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise KeyStoreError(f"cannot read the witness key: {exc}", where=str(path)) from exc
    try:
        signer = Signer.parse(text)
    except VerificationError as exc:
        raise KeyStoreError(exc.what, where=str(path)) from exc
    return Signer(signer.name, signer.seed, COSIGNATURE_V1_TYPE)
