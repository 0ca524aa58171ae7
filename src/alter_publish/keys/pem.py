"""Private key files: the passphrase, reads that refuse loose modes, PKCS#8 PEM in and out.

Private keys are encrypted when a passphrase is configured; it comes from the
environment (``ALTER_PUBLISH_PASSPHRASE``) or a file named there
(``ALTER_PUBLISH_PASSPHRASE_FILE``), never from the command line.
"""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.errors import KeyStoreError
from alter_publish.fileio import PRIVATE_DIR_MODE, atomic_write_bytes, make_dirs
from alter_publish.keys.permissions import owner_problem

PASSPHRASE_ENV = "ALTER_PUBLISH_PASSPHRASE"  # noqa: S105 (a variable name, not a secret)
PASSPHRASE_FILE_ENV = "ALTER_PUBLISH_PASSPHRASE_FILE"  # noqa: S105 (a variable name)
GITIGNORE_TEXT = """\
# alter-publish key store: private keys and revocation secrets never enter git.
*
!.gitignore
!README.md
!*/
!*.pub
"""


def passphrase_from_env(environ: Mapping[str, str]) -> bytes | None:
    """The key passphrase from ``ALTER_PUBLISH_PASSPHRASE`` or the file it names.

    Raises:
        KeyStoreError: both are set, the file is unreadable, or the passphrase is empty.
    """
    value = environ.get(PASSPHRASE_ENV)
    file = environ.get(PASSPHRASE_FILE_ENV)
    if value is not None and file is not None:
        raise KeyStoreError(f"set only one of {PASSPHRASE_ENV} and {PASSPHRASE_FILE_ENV}")
    if file is not None:
        try:
            value = Path(file).read_text(encoding="utf-8").rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise KeyStoreError(f"cannot read passphrase file: {exc}", where=file) from exc
    if value is None:
        return None
    if not value:
        raise KeyStoreError("the key passphrase is empty", where=file or PASSPHRASE_ENV)
    return value.encode("utf-8")


def ensure_gitignore(root: Path) -> None:
    """Write ``<root>/.gitignore`` so private material stays out of git (making ``root``
    0700 first when missing: the file itself is public, the directory is not).

    Raises:
        KeyStoreError: the file cannot be written.
    """
    make_key_dirs(root)
    atomic_write_bytes(root / ".gitignore", GITIGNORE_TEXT.encode(), error=KeyStoreError)


def make_key_dirs(directory: Path) -> None:
    """Make ``directory`` and its missing parents 0700 whatever the umask (what exists
    is left as it is).

    Raises:
        KeyStoreError: one cannot be made.
    """
    try:
        make_dirs(directory, PRIVATE_DIR_MODE)
    except OSError as exc:
        raise KeyStoreError(f"cannot make directory: {exc.strerror}", where=str(directory)) from exc


def _mode_problem(path: Path, info: os.stat_result) -> KeyStoreError | None:
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        return KeyStoreError(
            f"private file is readable by group or others (mode {mode:04o}); "
            f"fix with: chmod 600 {path}",
            where=str(path),
        )
    return owner_problem(path, info)


def read_private(path: Path, *, dir_fd: int | None = None) -> bytes:
    """A private file's bytes, refused when group or others may read it or another user
    owns it (``dir_fd``: an open directory ``path`` is in, which saves looking the
    directories up again).

    One open and one fstat: the mode checked is that of the file read (no race), and
    loading 100,000 handle keys stays a few seconds.
    """
    try:
        name = path if dir_fd is None else path.name
        fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        raise KeyStoreError(f"cannot read: {exc.strerror}", where=str(path)) from exc
    try:
        problem = _mode_problem(path, os.fstat(fd))
        if problem is not None:
            raise problem
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise KeyStoreError(f"cannot read: {exc.strerror}", where=str(path)) from exc
    finally:
        os.close(fd)


def private_pem(private_key: Ed25519PrivateKey, passphrase: bytes | None) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(passphrase)
        if passphrase
        else serialization.NoEncryption()
    )
    return private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )


# The unencrypted PKCS#8 form of an Ed25519 key, as cryptography writes it: PEM armour
# around base64(DER prefix || 32-byte seed). Read by hand (1 µs) where the key is only
# needed as a seed (the signing workers); anything else goes through cryptography.
_PEM_LABEL = b"PRIVATE" + b" KEY"
_PEM_HEAD = b"-----BEGIN " + _PEM_LABEL + b"-----\n"
_PEM_TAIL = b"\n-----END " + _PEM_LABEL + b"-----\n"
_PKCS8_ED25519_PREFIX = bytes.fromhex("302e020100300506032b657004220420")


def load_seed(path: Path, passphrase: bytes | None, *, dir_fd: int | None = None) -> bytes:
    """The 32-byte seed of a private key file (any form :func:`load_private_key` reads)."""
    pem = read_private(path, dir_fd=dir_fd)
    if pem.startswith(_PEM_HEAD) and pem.endswith(_PEM_TAIL):
        try:
            der = base64.b64decode(pem[len(_PEM_HEAD) : -len(_PEM_TAIL)], validate=True)
        except ValueError:
            der = b""
        if len(der) == 48 and der.startswith(_PKCS8_ED25519_PREFIX):
            return der[len(_PKCS8_ED25519_PREFIX) :]
    return private_key_of(pem, path, passphrase).private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


def load_private_key(path: Path, passphrase: bytes | None) -> Ed25519PrivateKey:
    return private_key_of(read_private(path), path, passphrase)


def private_key_of(pem: bytes, path: Path, passphrase: bytes | None) -> Ed25519PrivateKey:
    encrypted = b"ENCRYPTED PRIVATE KEY" in pem
    if encrypted and not passphrase:
        raise KeyStoreError(
            f"key is encrypted; set {PASSPHRASE_ENV} or {PASSPHRASE_FILE_ENV}",
            where=str(path),
        )
    try:
        private_key = serialization.load_pem_private_key(
            pem, password=passphrase if encrypted else None
        )
    except (ValueError, TypeError) as exc:
        what = "wrong passphrase or corrupt key" if encrypted else "not a PKCS#8 PEM private key"
        raise KeyStoreError(what, where=str(path)) from exc
    if not isinstance(private_key, Ed25519PrivateKey):
        raise KeyStoreError("not an Ed25519 key", where=str(path))
    return private_key
