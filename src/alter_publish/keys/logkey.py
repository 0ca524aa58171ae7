"""A zone's transparency log key, beside its other keys in the key store::

    keys/<zone>/_log/current.pem           PKCS#8 PEM Ed25519 private key, mode 0600
    keys/<zone>/_log/current.vkey          its verifier key (public, written with it)
    keys/<zone>/_log/retired-<hex8>.pem    a key rotated out (kept: old checkpoints)
    keys/<zone>/_log/retired-<hex8>.vkey   its verifier key
    keys/<zone>/_log/handover              the retired key's <hex8> until the new key's
                                           first checkpoint is signed by both

Checking the published log (``verify``) reads the ``.vkey`` files only, never a private
key; whatever loads a private key to sign (``sign``, ``log rotate-key``) writes its
``.vkey`` when it is missing (a store from before they existed).

The key signs the zone's checkpoints as a C2SP signed note under the name
``<zone>/alter-log`` (the log's origin). ``_log`` is a name no handle can have.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from alter_publish.errors import KeyStoreError, VerificationError
from alter_publish.fileio import PRIVATE_MODE, PUBLIC_MODE, atomic_write_bytes
from alter_publish.format.note import ED25519_TYPE, Signer, Verifier
from alter_publish.interrupts import deferred_interrupts
from alter_publish.keys.pem import ensure_gitignore, load_private_key, make_key_dirs, private_pem
from alter_publish.keys.permissions import check_dir

LOG_KEYS_DIR = "_log"
CURRENT_LOG_KEY = "current.pem"
HANDOVER_FILE = "handover"
LOG_ORIGIN_SUFFIX = "/alter-log"
PRIVATE_SUFFIX = ".pem"
PUBLIC_SUFFIX = ".vkey"


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
        signer = Signer(log_origin(zone), _seed(load_private_key(path, self.passphrase)))
        self._publish(zone, CURRENT_LOG_KEY, signer.verifier)
        return signer

    def public_path(self, zone: str, key_file: str = CURRENT_LOG_KEY) -> Path:
        """The public file of the key in ``key_file``: its verifier key."""
        return self.directory(zone) / (key_file.removesuffix(PRIVATE_SUFFIX) + PUBLIC_SUFFIX)

    def verifier(self, zone: str) -> Verifier | None:
        """The verifier key of the log key that signed the zone's latest checkpoint (the
        retired key while a handover is pending), read from its public file: no private
        key is read (and no passphrase needed). None: the zone has no log key.

        Raises:
            KeyStoreError: the public file is missing and so is the private key (a
                store from before the public file existed reads its private key, as
                then, until the next ``sign`` writes the public one), unreadable, or
                not the zone's log key.
        """
        retired = self._handover_id(zone)
        if retired is not None:
            key_file = f"retired-{retired}{PRIVATE_SUFFIX}"
        elif self.public_path(zone).exists() or self.exists(zone):
            key_file = CURRENT_LOG_KEY  # the private key may be kept elsewhere
        else:
            return None
        path = self.public_path(zone, key_file)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            private = self.directory(zone) / key_file
            if private.exists():  # a store from before the public file: as then
                seed = _seed(load_private_key(private, self.passphrase))
                return Signer(log_origin(zone), seed).verifier
            raise KeyStoreError(
                f"the log key's verifier key is missing (it is written beside {key_file} "
                "by sign; run sign once with this version)",
                where=str(path),
            ) from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise KeyStoreError(f"cannot read: {exc}", where=str(path)) from exc
        try:
            verifier = Verifier.parse(text)
        except VerificationError as exc:
            raise KeyStoreError(f"not a verifier key: {exc.what}", where=str(path)) from exc
        if verifier.name != log_origin(zone) or verifier.algorithm != ED25519_TYPE:
            raise KeyStoreError(f"not the log key of {log_origin(zone)}", where=str(path))
        return verifier

    def require_verifier(self, zone: str) -> Verifier:
        """:meth:`verifier`, which must exist.

        Raises:
            KeyStoreError: the zone has no log key, or as :meth:`verifier`.
        """
        verifier = self.verifier(zone)
        if verifier is None:
            raise KeyStoreError("the zone has no log key", where=str(self.path(zone)))
        return verifier

    def _publish(self, zone: str, key_file: str, verifier: Verifier) -> None:
        """Write ``verifier`` as the public file of ``key_file`` (skipped when it holds it).

        Raises:
            KeyStoreError: it cannot be written.
        """
        path, data = self.public_path(zone, key_file), f"{verifier.to_text()}\n".encode()
        with contextlib.suppress(OSError):
            if path.read_bytes() == data:
                return  # every sign loads the key: no write (and no fsync) when unchanged
        atomic_write_bytes(path, data, mode=PUBLIC_MODE, error=KeyStoreError)

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
        retired = self.directory(zone) / f"retired-{key_id}{PRIVATE_SUFFIX}"
        with deferred_interrupts():
            atomic_write_bytes(
                retired, self.path(zone).read_bytes(), mode=PRIVATE_MODE, error=KeyStoreError
            )
            self._publish(zone, retired.name, old.verifier)
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
        key_id = self._handover_id(zone)
        if key_id is None:
            return None
        path = self.directory(zone) / f"retired-{key_id}{PRIVATE_SUFFIX}"
        if not path.exists():
            marker = self.directory(zone) / HANDOVER_FILE
            raise KeyStoreError(f"the retired key {path} is gone", where=str(marker))
        signer = Signer(log_origin(zone), _seed(load_private_key(path, self.passphrase)))
        self._publish(zone, path.name, signer.verifier)
        return signer

    def _handover_id(self, zone: str) -> str | None:
        """The retired key's ``<hex8>`` named by the handover marker, if any.

        Raises:
            KeyStoreError: the marker is unreadable or names no key ID.
        """
        marker = self.directory(zone) / HANDOVER_FILE
        try:
            key_id = marker.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise KeyStoreError(f"cannot read: {exc}", where=str(marker)) from exc
        if len(key_id) != 8 or any(ch not in "0123456789abcdef" for ch in key_id):
            raise KeyStoreError(f"not a key ID: {key_id!r}", where=str(marker))
        return key_id

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
        self._publish(zone, CURRENT_LOG_KEY, Signer(log_origin(zone), _seed(private_key)).verifier)
