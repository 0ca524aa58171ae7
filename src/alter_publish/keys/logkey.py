"""A zone's transparency log key, beside its other keys in the key store::

    keys/<zone>/_log/current.pem           PKCS#8 PEM Ed25519 private key, mode 0600
    keys/<zone>/_log/retired-<hex8>.pem    a key rotated out (kept: old checkpoints)
    keys/<zone>/_log/handover              the retired key's <hex8> until the new key's
                                           first checkpoint is signed by both

The key signs the zone's checkpoints as a C2SP signed note under the name
``<zone>/alter-log`` (the log's origin). ``_log`` is a name no handle can have.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from alter_publish.errors import KeyStoreError
from alter_publish.fileio import PRIVATE_MODE, atomic_write_bytes
from alter_publish.format.note import Signer
from alter_publish.interrupts import deferred_interrupts
from alter_publish.keys.pem import ensure_gitignore, load_private_key, make_key_dirs, private_pem
from alter_publish.keys.permissions import check_dir

LOG_KEYS_DIR = "_log"
CURRENT_LOG_KEY = "current.pem"
HANDOVER_FILE = "handover"
LOG_ORIGIN_SUFFIX = "/alter-log"


def log_origin(zone: str) -> str:
    """The checkpoint origin (and key name) of a zone's log: ``<zone>/alter-log``."""
    return zone.rstrip(".").lower() + LOG_ORIGIN_SUFFIX


def _seed(private_key: Ed25519PrivateKey) -> bytes:
    return private_key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())


@dataclass(frozen=True, slots=True)
class LogKeyStore:
    """The log keys of the zones under ``root`` (a key store's root)."""

    root: Path
    passphrase: bytes | None = field(default=None, repr=False)

    def directory(self, zone: str) -> Path:
        """Where a zone's log keys are."""
        return self.root / zone / LOG_KEYS_DIR

    def path(self, zone: str) -> Path:
        """The current log key's file."""
        return self.directory(zone) / CURRENT_LOG_KEY

    def exists(self, zone: str) -> bool:
        """True when the zone has a current log key file."""
        return self.path(zone).exists()

    def signer(self, zone: str, *, create: bool) -> Signer:
        """The zone's log signer; with ``create``, a new key when it has none.

        Raises:
            KeyStoreError: no key (and not ``create``), an unreadable or unsafe key file.
        """
        for directory in (self.root, self.root / zone, self.directory(zone)):
            check_dir(str(directory))
        path = self.path(zone)
        if not path.exists():
            if not create:
                raise KeyStoreError(
                    "no log key: the zone's checkpoints were signed with a key that is "
                    "gone; restore it, or give --create-keys to start a new one (verifiers "
                    "that know the old key will refuse the new checkpoints)",
                    where=str(path),
                )
            self._write(zone, Ed25519PrivateKey.generate())
        return Signer(log_origin(zone), _seed(load_private_key(path, self.passphrase)))

    def rotate(self, zone: str) -> Signer:
        """Retire the current key (kept as ``retired-<key id>.pem``), make a new one, and
        mark the old one for the handover: the next checkpoint is signed by both (see
        :meth:`handover`). The origin (the key name) stays.

        Raises:
            KeyStoreError: the zone has no log key, a handover is pending (no checkpoint
                was signed since the last rotation), or a file cannot be written.
        """
        old = self.signer(zone, create=False)
        if self.handover(zone) is not None:
            raise KeyStoreError(
                "the last rotation is pending: sign a new checkpoint (a sign that logs an "
                "envelope) before rotating again",
                where=str(self.directory(zone) / HANDOVER_FILE),
            )
        key_id = old.verifier.key_id.hex()
        retired = self.directory(zone) / f"retired-{key_id}.pem"
        with deferred_interrupts():
            atomic_write_bytes(
                retired, self.path(zone).read_bytes(), mode=PRIVATE_MODE, error=KeyStoreError
            )
            self._write(zone, Ed25519PrivateKey.generate())
            atomic_write_bytes(
                self.directory(zone) / HANDOVER_FILE, f"{key_id}\n".encode(), error=KeyStoreError
            )
        return self.signer(zone, create=False)

    def handover(self, zone: str) -> Signer | None:
        """The retired key that signed the latest checkpoint, while the new key has signed
        none (None: no rotation pending). It signs the new key's first checkpoint too.

        Raises:
            KeyStoreError: the retired key named is unreadable.
        """
        marker = self.directory(zone) / HANDOVER_FILE
        try:
            key_id = marker.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise KeyStoreError(f"cannot read: {exc}", where=str(marker)) from exc
        path = self.directory(zone) / f"retired-{key_id}.pem"
        if not path.exists():
            raise KeyStoreError(f"the retired key {path} is gone", where=str(marker))
        return Signer(log_origin(zone), _seed(load_private_key(path, self.passphrase)))

    def handed_over(self, zone: str) -> None:
        """The new key's first checkpoint is written: end the handover.

        Raises:
            KeyStoreError: the marker cannot be removed.
        """
        try:
            (self.directory(zone) / HANDOVER_FILE).unlink(missing_ok=True)
        except OSError as exc:
            raise KeyStoreError(
                f"cannot remove: {exc.strerror}", where=str(self.directory(zone))
            ) from exc

    def _write(self, zone: str, private_key: Ed25519PrivateKey) -> None:
        ensure_gitignore(self.root)
        make_key_dirs(self.directory(zone))
        atomic_write_bytes(
            self.path(zone),
            private_pem(private_key, self.passphrase),
            mode=PRIVATE_MODE,
            error=KeyStoreError,
        )
