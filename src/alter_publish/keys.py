"""The key store: one Ed25519 key and one revocation secret per handle per epoch.

Layout under the store root (``keys/`` by default)::

    keys/<zone>/<handle-name>/<epoch>.pem     PKCS#8 PEM private key, mode 0600
    keys/<zone>/<handle-name>/<epoch>.secret  base64url 32-byte revocation secret, mode 0600

Public keys need no file of their own: every envelope in the IdentityLog carries one.

Private keys are encrypted when a passphrase is configured; it comes from the
environment (``ALTER_PUBLISH_PASSPHRASE``) or a file named there
(``ALTER_PUBLISH_PASSPHRASE_FILE``), never from the command line.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.envelope import SECRET_OCTETS, b64url, b64url_decode, key_id, public_bytes
from alter_publish.errors import KeyStoreError, VerificationError
from alter_publish.fileio import PRIVATE_MODE, atomic_write_bytes
from alter_publish.handles import Handle

PASSPHRASE_ENV = "ALTER_PUBLISH_PASSPHRASE"  # noqa: S105 (a variable name, not a secret)
PASSPHRASE_FILE_ENV = "ALTER_PUBLISH_PASSPHRASE_FILE"  # noqa: S105 (a variable name)
PRIVATE_KEY_SUFFIX = ".pem"
SECRET_SUFFIX = ".secret"  # noqa: S105 (a file suffix)
GITIGNORE_TEXT = """\
# alter-publish key store: private keys and revocation secrets never enter git.
*
!.gitignore
!README.md
!*/
!*.pub
"""
_EPOCH_FILE = re.compile(r"([1-9][0-9]{0,9})\.pem")


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


@dataclass(frozen=True, slots=True)
class HandleKey:
    """One epoch's key material for a handle. Its repr never shows secrets."""

    handle: Handle
    epoch: int
    private_key: Ed25519PrivateKey = field(repr=False)
    revocation_secret: bytes = field(repr=False)

    @property
    def public_key(self) -> bytes:
        """Raw 32-byte public key."""
        return public_bytes(self.private_key)

    @property
    def key_id(self) -> str:
        """Short display id of the public key."""
        return key_id(self.public_key)


def _check_private_mode(path: Path) -> None:
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError as exc:
        raise KeyStoreError(f"cannot read: {exc.strerror}", where=str(path)) from exc
    if mode & 0o077:
        raise KeyStoreError(
            f"private file is readable by group or others (mode {mode:04o}); "
            f"fix with: chmod 600 {path}",
            where=str(path),
        )


def _read_private(path: Path) -> bytes:
    _check_private_mode(path)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise KeyStoreError(f"cannot read: {exc.strerror}", where=str(path)) from exc


@dataclass(frozen=True, slots=True)
class KeyStore:
    """A key store rooted at ``root``; ``passphrase`` encrypts new keys and decrypts old ones."""

    root: Path
    passphrase: bytes | None = field(default=None, repr=False)

    def handle_dir(self, zone: str, handle: Handle) -> Path:
        """Directory holding every epoch of one handle's keys."""
        return self.root / zone / handle.name

    def paths(self, zone: str, handle: Handle, epoch: int) -> tuple[Path, Path]:
        """(private key, revocation secret) paths of one epoch."""
        base = self.handle_dir(zone, handle)
        return base / f"{epoch}{PRIVATE_KEY_SUFFIX}", base / f"{epoch}{SECRET_SUFFIX}"

    def epochs(self, zone: str, handle: Handle) -> tuple[int, ...]:
        """Epochs with a private key on disk, ascending."""
        try:
            names = [path.name for path in self.handle_dir(zone, handle).iterdir()]
        except FileNotFoundError:
            return ()
        except OSError as exc:
            raise KeyStoreError(
                f"cannot list keys: {exc.strerror}", where=str(self.handle_dir(zone, handle))
            ) from exc
        return tuple(sorted(int(m.group(1)) for n in names if (m := _EPOCH_FILE.fullmatch(n))))

    def ensure_gitignore(self) -> None:
        """Write ``<root>/.gitignore`` so private material stays out of git."""
        atomic_write_bytes(self.root / ".gitignore", GITIGNORE_TEXT.encode(), error=KeyStoreError)

    def generate(self, zone: str, handle: Handle, epoch: int) -> HandleKey:
        """Create and save a new key and revocation secret for ``epoch``.

        Raises:
            KeyStoreError: a key for that epoch exists already, or a file cannot be written.
        """
        key_path, secret_path = self.paths(zone, handle, epoch)
        if key_path.exists() or secret_path.exists():
            raise KeyStoreError(
                f"{handle.ref} already has an epoch {epoch} key; keys are never overwritten",
                where=str(key_path),
            )
        private_key = Ed25519PrivateKey.generate()
        secret = os.urandom(SECRET_OCTETS)
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(self.passphrase)
            if self.passphrase
            else serialization.NoEncryption()
        )
        pem = private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )
        self.ensure_gitignore()
        atomic_write_bytes(
            secret_path, (b64url(secret) + "\n").encode(), mode=PRIVATE_MODE, error=KeyStoreError
        )
        atomic_write_bytes(key_path, pem, mode=PRIVATE_MODE, error=KeyStoreError)
        return HandleKey(
            handle=handle, epoch=epoch, private_key=private_key, revocation_secret=secret
        )

    def load(self, zone: str, handle: Handle, epoch: int) -> HandleKey:
        """Load one epoch's key and revocation secret.

        Raises:
            KeyStoreError: missing, unsafe permissions, wrong passphrase, or corrupt.
        """
        key_path, secret_path = self.paths(zone, handle, epoch)
        pem = _read_private(key_path)
        encrypted = b"ENCRYPTED PRIVATE KEY" in pem
        if encrypted and not self.passphrase:
            raise KeyStoreError(
                f"key is encrypted; set {PASSPHRASE_ENV} or {PASSPHRASE_FILE_ENV}",
                where=str(key_path),
            )
        try:
            private_key = serialization.load_pem_private_key(
                pem, password=self.passphrase if encrypted else None
            )
        except (ValueError, TypeError) as exc:
            what = (
                "wrong passphrase or corrupt key" if encrypted else "not a PKCS#8 PEM private key"
            )
            raise KeyStoreError(what, where=str(key_path)) from exc
        if not isinstance(private_key, Ed25519PrivateKey):
            raise KeyStoreError("not an Ed25519 key", where=str(key_path))
        if not secret_path.exists():
            raise KeyStoreError(
                "revocation secret is missing (it must sit beside the key while signing)",
                where=str(secret_path),
            )
        try:
            text = _read_private(secret_path).decode("ascii").strip()
            secret = b64url_decode(text, SECRET_OCTETS, tag="secret")
        except (UnicodeDecodeError, VerificationError) as exc:
            raise KeyStoreError(
                "not a base64url 32-byte revocation secret", where=str(secret_path)
            ) from exc
        return HandleKey(
            handle=handle, epoch=epoch, private_key=private_key, revocation_secret=secret
        )

    def current(self, zone: str, handle: Handle, *, create: bool = False) -> HandleKey:
        """The highest-epoch key of a handle, creating epoch 1 when allowed.

        Raises:
            KeyStoreError: no key and ``create`` is False, or loading failed.
        """
        epochs = self.epochs(zone, handle)
        if epochs:
            return self.load(zone, handle, epochs[-1])
        if not create:
            raise KeyStoreError(
                f"no key for {handle.ref} in {self.handle_dir(zone, handle)}; "
                f"run 'alter-publish keygen {handle.ref} --zone {zone}' or sign with --create-keys",
                where=handle.ref,
            )
        return self.generate(zone, handle, 1)
