"""The key store: one Ed25519 key and one revocation secret per handle per epoch.

Layout under the store root (``keys/`` by default)::

    keys/<zone>/<handle-name>/<epoch>.pem     PKCS#8 PEM private key, mode 0600
    keys/<zone>/<handle-name>/<epoch>.secret  base64url 32-byte revocation secret, mode 0600
    keys/<zone>/<handle-name>/<epoch>.rc      its commitment only, when the secret was
                                              written elsewhere to be kept offline
    keys/<zone>/<handle-name>/<epoch>.json    how a rotated epoch came to be (public)
    keys/<zone>/.changes                      the handles whose keys the store wrote
                                              (:mod:`alter_publish.keys.journal`)

Public keys need no file of their own: every envelope in the IdentityLog carries one.

Every directory of the store is made 0700 whatever the umask, and every read refuses a
key directory group or others may write, or one another user owns
(:mod:`alter_publish.keys.permissions`). Listing a handle's directory also removes the
temporary files interrupted writes left there (they may hold private key bytes).

DNSSEC zone keys sit beside the handles (:mod:`alter_publish.keys.zonestore`, reached
as :attr:`KeyStore.zones`); private files are read and written by
:mod:`alter_publish.keys.pem`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.errors import KeyStoreError, VerificationError
from alter_publish.fileio import PRIVATE_MODE, atomic_write_bytes, sweep_temp_files
from alter_publish.format.envelope import (
    SECRET_OCTETS,
    b64url,
    b64url_decode,
    key_id,
    public_bytes,
    revocation_commitment,
)
from alter_publish.format.handles import Handle
from alter_publish.interrupts import deferred_interrupts
from alter_publish.keys import journal
from alter_publish.keys.logkey import LogKeyStore
from alter_publish.keys.pem import (
    ensure_gitignore,
    load_private_key,
    load_seed,
    make_key_dirs,
    private_pem,
    read_private,
)
from alter_publish.keys.permissions import check_dir_fd
from alter_publish.keys.zonestore import ZoneKeyStore

PRIVATE_KEY_SUFFIX = ".pem"
SECRET_SUFFIX = ".secret"  # noqa: S105 (a file suffix)
COMMITMENT_SUFFIX = ".rc"
ROTATION_SUFFIX = ".json"
ROTATION_FORMAT = "alter-publish/rotation/1"
_EPOCH_FILE = re.compile(r"([1-9][0-9]{0,9})\.pem")
#: The files of an epoch besides its key, and the temporary files of any of them.
_EPOCH_PART = re.compile(r"([1-9][0-9]{0,9})\.(?:secret|rc|json)")
_EPOCH_TEMP = re.compile(r"\.([1-9][0-9]{0,9})\.(?:pem|secret|rc|json)\..+\.tmp")


@dataclass(frozen=True, slots=True)
class HandleKey:
    """One epoch's key material for a handle. Its repr never shows secrets.

    ``revocation_secret`` is None when the secret was exported to be kept offline;
    signing needs only its ``commitment`` (the envelope's ``rc=``).
    """

    handle: Handle
    epoch: int
    private_key: Ed25519PrivateKey = field(repr=False)
    revocation_secret: bytes | None = field(repr=False)
    commitment: bytes = b""

    def __post_init__(self) -> None:
        if not self.commitment:
            if self.revocation_secret is None:
                raise ValueError("a handle key needs its revocation secret or its commitment")
            object.__setattr__(self, "commitment", revocation_commitment(self.revocation_secret))

    @property
    def public_key(self) -> bytes:
        """Raw 32-byte public key."""
        return public_bytes(self.private_key)

    @property
    def key_id(self) -> str:
        """Short display id of the public key."""
        return key_id(self.public_key)


class Continuity(StrEnum):
    """Whether a rotated epoch's envelope carries ``psig=`` by the previous epoch's key."""

    PSIG = "psig"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class Rotation:
    """How an epoch was made by ``rotate``: when, why, and whether it carries ``psig``."""

    epoch: int
    created: int
    reason: str
    continuity: Continuity
    public_key: bytes

    def to_mapping(self) -> dict[str, Any]:
        """JSON form (public data only)."""
        return {
            "format": ROTATION_FORMAT,
            "epoch": self.epoch,
            "created": self.created,
            "reason": self.reason,
            "continuity": str(self.continuity),
            "p": b64url(self.public_key),
        }


@dataclass(frozen=True, slots=True)
class KeyStore:
    """A key store rooted at ``root``; ``passphrase`` encrypts new keys and decrypts old ones."""

    root: Path
    passphrase: bytes | None = field(default=None, repr=False)
    #: Zones whose directories this process has checked (:meth:`check_zone`).
    checked: set[str] = field(default_factory=set, repr=False, compare=False)
    #: Remove the temporary files interrupted writes left, as directories are listed:
    #: only for a run that writes (``sign``); a read-only command never deletes.
    sweep: bool = field(default=False, compare=False)

    def handle_dir(self, zone: str, handle: Handle) -> Path:
        """Directory holding every epoch of one handle's keys."""
        return self.root / zone / handle.name

    def handle_dir_text(self, zone: str, handle: Handle) -> str:
        """:meth:`handle_dir` as text, made without ``Path`` (100,000 of them at scale)."""
        return f"{self.root}/{zone}/{handle.name}"

    def paths(self, zone: str, handle: Handle, epoch: int) -> tuple[Path, Path]:
        """(private key, revocation secret) paths of one epoch."""
        base = self.handle_dir(zone, handle)
        return base / f"{epoch}{PRIVATE_KEY_SUFFIX}", base / f"{epoch}{SECRET_SUFFIX}"

    def epochs(self, zone: str, handle: Handle) -> tuple[int, ...]:
        """Epochs with a private key on disk, ascending.

        Raises:
            KeyStoreError: the directory exists but cannot be listed.
        """
        return tuple(sorted(self._listing(zone, handle)[2]))

    def _listing(self, zone: str, handle: Handle) -> tuple[str, list[str], list[int]]:
        """(directory, file names, epochs with a key) of a handle.

        Raises:
            KeyStoreError: the directory exists but cannot be listed, or is unsafe.
        """
        directory, names = self._names(zone, handle)
        return directory, names, key_epochs(names)

    def _names(self, zone: str, handle: Handle) -> tuple[str, list[str]]:
        """(directory, file names) of a handle, its directories checked and its temporary
        files swept (:meth:`_list_open`); no names when there is no directory.

        Raises:
            KeyStoreError: the directory exists but cannot be listed, or is unsafe.
        """
        self.check_zone(zone)
        directory = self.handle_dir_text(zone, handle)
        try:
            handle_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            return directory, []
        except OSError as exc:
            raise KeyStoreError(f"cannot list keys: {exc.strerror}", where=directory) from exc
        try:
            return directory, _list_open(directory, handle_fd, sweep=self.sweep)
        except OSError as exc:
            raise KeyStoreError(f"cannot list keys: {exc.strerror}", where=directory) from exc
        finally:
            os.close(handle_fd)

    def check_zone(self, zone: str) -> None:
        """Refuse unsafe directories above a zone's keys, and sweep the temporary files
        left in them (once per zone in this process; see
        :meth:`ZoneKeyStore.check_dirs <alter_publish.keys.zonestore.ZoneKeyStore.check_dirs>`).

        Raises:
            KeyStoreError: ``keys/``, ``keys/<zone>/`` or its ``_dnssec/`` is writable by
                group or others or owned by another user, or cannot be looked at.
        """
        if zone not in self.checked:
            self.zones.check_dirs(zone)

    @property
    def logs(self) -> LogKeyStore:
        """The zones' transparency log keys, under the same root with the same passphrase."""
        return LogKeyStore(self.root, self.passphrase)

    @property
    def zones(self) -> ZoneKeyStore:
        """The zones' DNSSEC keys, kept under the same root with the same passphrase."""
        return ZoneKeyStore(self.root, self.passphrase, self.checked, self.sweep)

    def ensure_gitignore(self) -> None:
        """Write ``<root>/.gitignore`` so private material stays out of git.

        Raises:
            KeyStoreError: the file cannot be written.
        """
        ensure_gitignore(self.root)

    def commitment_path(self, zone: str, handle: Handle, epoch: int) -> Path:
        """Where an epoch's revocation commitment sits when its secret is kept offline."""
        return self.handle_dir(zone, handle) / f"{epoch}{COMMITMENT_SUFFIX}"

    def check_new(
        self, zone: str, handle: Handle, epoch: int, *, secret_out: Path | None = None
    ) -> None:
        """Check that :meth:`generate` could write ``epoch`` (nothing is in the way).

        What a run cut short left of ``epoch`` (:meth:`unfinished_epochs`, and a
        ``secret_out`` holding the secret of that unfinished epoch) is not in the way:
        :meth:`generate` discards it.

        Raises:
            KeyStoreError: ``epoch`` or a later one has a key, or ``secret_out`` exists
                and is not left over from an unfinished ``epoch``.
        """
        key_path = self.paths(zone, handle, epoch)[0]
        newest = max(self.epochs(zone, handle), default=0)
        if newest >= epoch:
            raise KeyStoreError(
                f"{handle.ref} epoch {epoch}: exists already; keys are never overwritten",
                where=str(key_path if newest == epoch else self.paths(zone, handle, newest)[0]),
            )
        if (
            secret_out is not None
            and secret_out.exists()
            and not self._left_over(zone, handle, epoch, secret_out)
        ):
            raise KeyStoreError(
                f"{handle.ref} epoch {epoch}: exists already; keys are never overwritten",
                where=str(secret_out),
            )

    def _left_over(self, zone: str, handle: Handle, epoch: int, secret_out: Path) -> bool:
        """True when ``secret_out`` holds the secret of an unfinished ``epoch`` (its
        commitment is the ``.rc`` that epoch left, and it has no key)."""
        try:
            rc = self.commitment_path(zone, handle, epoch).read_text(encoding="ascii").strip()
            text = secret_out.read_text(encoding="ascii").strip()
            secret = b64url_decode(text, SECRET_OCTETS, tag="secret")
        except (OSError, UnicodeDecodeError, VerificationError):
            return False
        return b64url(revocation_commitment(secret)) == rc

    def unfinished_epochs(self, zone: str, handle: Handle) -> tuple[int, ...]:
        """Epochs above the newest key that have files but no key: left by a run cut
        short before the key was written (the next run that makes the epoch discards
        them). Ascending.

        Raises:
            KeyStoreError: the directory exists but cannot be listed.
        """
        _, names, epochs = self._listing(zone, handle)
        return tuple(sorted(self._leftovers(names, max(epochs, default=0))))

    @staticmethod
    def _leftovers(names: Sequence[str], newest: int) -> dict[int, list[str]]:
        """Epoch -> its files, for the epochs above ``newest`` (which have no key)."""
        found: dict[int, list[str]] = {}
        for name in names:
            match = _EPOCH_PART.fullmatch(name) or _EPOCH_TEMP.fullmatch(name)
            if match is not None and int(match.group(1)) > newest:
                found.setdefault(int(match.group(1)), []).append(name)
        return found

    def _discard_unfinished(
        self, zone: str, handle: Handle, epoch: int, secret_out: Path | None
    ) -> None:
        """Remove what runs cut short left of ``epoch`` and later epochs (no key is among
        it: those epochs are above the newest key), and a ``secret_out`` of that epoch.

        Raises:
            KeyStoreError: a file cannot be removed.
        """
        directory, names, epochs = self._listing(zone, handle)
        doomed = [
            Path(directory, name)
            for number, files in self._leftovers(names, max(epochs, default=0)).items()
            if number >= epoch
            for name in files
        ]
        if secret_out is not None and secret_out.exists():
            doomed.insert(0, secret_out)  # check_new found it is this epoch's leftover
        for path in doomed:
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                raise KeyStoreError(f"cannot remove: {exc.strerror}", where=str(path)) from exc

    def generate(
        self,
        zone: str,
        handle: Handle,
        epoch: int,
        *,
        secret_out: Path | None = None,
        rotation: Callable[[bytes], Rotation] | None = None,
    ) -> HandleKey:
        """Create and save a new key and revocation secret for ``epoch``.

        With ``secret_out`` the secret is written there (mode 0600) to be moved offline,
        and the store keeps only its commitment (``<epoch>.rc``), which is all signing needs.
        ``rotation`` makes the epoch's rotation record from its public key.

        The key is written last: the epoch exists whole or not at all. What an earlier
        run cut short left of it is discarded first. SIGINT and SIGTERM wait until the
        files are written.

        Raises:
            KeyStoreError: a key for that epoch or a later one (or ``secret_out``) exists
                already, or a file cannot be written.
        """
        key_path, secret_path = self.paths(zone, handle, epoch)
        self.check_new(zone, handle, epoch, secret_out=secret_out)
        private_key = Ed25519PrivateKey.generate()
        secret = os.urandom(SECRET_OCTETS)
        pem = private_pem(private_key, self.passphrase)
        secret_line = (b64url(secret) + "\n").encode()
        with deferred_interrupts():
            self.ensure_gitignore()
            # 0700 before any file: the first may be public (``.rc`` with ``secret_out``).
            make_key_dirs(self.handle_dir(zone, handle))
            # Journaled before (a run killed midway) and after (a run that took its
            # lines meanwhile): the next run looks at this handle's keys again.
            journal.note(self.root, zone, handle.name)
            self._discard_unfinished(zone, handle, epoch, secret_out)
            if secret_out is None:
                atomic_write_bytes(secret_path, secret_line, mode=PRIVATE_MODE, error=KeyStoreError)
            else:
                atomic_write_bytes(secret_out, secret_line, mode=PRIVATE_MODE, error=KeyStoreError)
                commitment = b64url(revocation_commitment(secret)) + "\n"
                atomic_write_bytes(
                    self.commitment_path(zone, handle, epoch),
                    commitment.encode(),
                    error=KeyStoreError,
                )
            if rotation is not None:
                self.write_rotation(zone, handle, rotation(public_bytes(private_key)))
            # The commit: epochs() lists an epoch once its key is there.
            atomic_write_bytes(key_path, pem, mode=PRIVATE_MODE, error=KeyStoreError)
            journal.note(self.root, zone, handle.name)
        return HandleKey(
            handle=handle,
            epoch=epoch,
            private_key=private_key,
            revocation_secret=None if secret_out else secret,
            commitment=revocation_commitment(secret),
        )

    def write_rotation(self, zone: str, handle: Handle, rotation: Rotation) -> None:
        """Record how a rotated epoch was made (``<epoch>.json``, public).

        Raises:
            KeyStoreError: the file cannot be written.
        """
        path = self.handle_dir(zone, handle) / f"{rotation.epoch}{ROTATION_SUFFIX}"
        text = json.dumps(rotation.to_mapping(), indent=2, sort_keys=True) + "\n"
        atomic_write_bytes(path, text.encode(), error=KeyStoreError)

    def rotation(self, zone: str, handle: Handle, epoch: int) -> Rotation | None:
        """How ``epoch`` was made by ``rotate``; None for a first key or an older store.

        Raises:
            KeyStoreError: the file is unreadable or not a rotation record.
        """
        path = self.handle_dir(zone, handle) / f"{epoch}{ROTATION_SUFFIX}"
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise KeyStoreError(f"not a rotation record ({exc})", where=str(path)) from exc
        try:
            if doc["format"] != ROTATION_FORMAT or int(doc["epoch"]) != epoch:
                raise ValueError("format or epoch")
            return Rotation(
                epoch=epoch,
                created=int(doc["created"]),
                reason=str(doc["reason"]),
                continuity=Continuity(str(doc["continuity"])),
                public_key=b64url_decode(str(doc["p"]), 32, tag="p"),
            )
        except (KeyError, ValueError, TypeError, OverflowError, VerificationError) as exc:
            raise KeyStoreError(f"not a {ROTATION_FORMAT} record", where=str(path)) from exc

    def read_secret(self, zone: str, handle: Handle, epoch: int, file: Path | None = None) -> bytes:
        """An epoch's revocation secret, from ``file`` or else from the store.

        Raises:
            KeyStoreError: not there (named with a hint), unsafe permissions, or not a secret.
        """
        path = file or self.paths(zone, handle, epoch)[1]
        if file is None and not path.exists():
            raise KeyStoreError(
                f"the epoch {epoch} revocation secret of {handle.ref} is not in the key store; "
                "pass the offline copy with --secret-file",
                where=str(path),
            )
        try:
            text = read_private(path).decode("ascii").strip()
            return b64url_decode(text, SECRET_OCTETS, tag="secret")
        except (UnicodeDecodeError, VerificationError) as exc:
            raise KeyStoreError(
                "not a base64url 32-byte revocation secret", where=str(path)
            ) from exc

    def load(self, zone: str, handle: Handle, epoch: int) -> HandleKey:
        """Load one epoch's key and revocation secret (or, when offline, its commitment).

        Raises:
            KeyStoreError: missing, unsafe permissions (of the files or the directories
                above them), wrong passphrase, or corrupt.
        """
        directory, names = self._names(zone, handle)
        return self._load(zone, handle, epoch, directory, names)

    def _load(
        self, zone: str, handle: Handle, epoch: int, directory: str, names: Sequence[str]
    ) -> HandleKey:
        """:meth:`load` with the directory listing at hand (one listing per handle)."""
        key_path = Path(f"{directory}/{epoch}{PRIVATE_KEY_SUFFIX}")
        private_key = load_private_key(key_path, self.passphrase)
        secret = self._secret(directory, epoch, names)
        if secret is not None:
            return HandleKey(handle, epoch, private_key, revocation_secret=secret)
        commitment = self._commitment(directory, epoch, names)
        return HandleKey(handle, epoch, private_key, revocation_secret=None, commitment=commitment)

    def _secret(
        self, directory: str, epoch: int, names: Sequence[str], *, dir_fd: int | None = None
    ) -> bytes | None:
        """An epoch's revocation secret from the store; None when it is kept offline.

        Raises:
            KeyStoreError: unreadable, unsafe permissions, or not a secret.
        """
        secret_path = Path(f"{directory}/{epoch}{SECRET_SUFFIX}")
        if secret_path.name not in names:
            return None
        try:
            text = read_private(secret_path, dir_fd=dir_fd).decode("ascii").strip()
            return b64url_decode(text, SECRET_OCTETS, tag="secret")
        except (UnicodeDecodeError, VerificationError) as exc:
            raise KeyStoreError(
                "not a base64url 32-byte revocation secret", where=str(secret_path)
            ) from exc

    def _commitment(
        self, directory: str, epoch: int, names: Sequence[str], *, dir_fd: int | None = None
    ) -> bytes:
        """An epoch's ``rc=``: the hash of its secret, or its ``.rc`` file when offline.

        Raises:
            KeyStoreError: neither is there, or one is unreadable or malformed.
        """
        secret = self._secret(directory, epoch, names, dir_fd=dir_fd)
        if secret is not None:
            return revocation_commitment(secret)
        secret_path = Path(f"{directory}/{epoch}{SECRET_SUFFIX}")
        commitment_path = Path(f"{directory}/{epoch}{COMMITMENT_SUFFIX}")
        try:
            text = commitment_path.read_text(encoding="ascii").strip()
        except FileNotFoundError as exc:
            raise KeyStoreError(
                f"revocation secret is missing (keep it beside the key, or its commitment "
                f"in {commitment_path.name} when the secret is offline)",
                where=str(secret_path),
            ) from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise KeyStoreError(f"cannot read: {exc}", where=str(commitment_path)) from exc
        try:
            return b64url_decode(text, 32, tag="rc")
        except VerificationError as exc:
            raise KeyStoreError(
                "not a base64url SHA-256 commitment", where=str(commitment_path)
            ) from exc

    def current_material(
        self, zone: str, handle: Handle, *, create: bool = False, zone_fd: int | None = None
    ) -> tuple[int, bytes, bytes]:
        """``(epoch, seed, revocation commitment)`` of a handle's highest-epoch key, creating
        epoch 1 when ``create`` allows: what signing needs, read without building a key
        object (the signing workers' path; a whole :class:`HandleKey` is :meth:`load`'s).
        ``zone_fd``, the zone's key directory opened (:meth:`open_zone_dir`), saves looking
        the zone's directories up again for each of 100,000 keys.

        Raises:
            KeyStoreError: no key and ``create`` is False, loading failed, or a key
                directory is unsafe.
        """
        if zone_fd is None:
            self.check_zone(zone)  # else open_zone_dir did
        directory = self.handle_dir_text(zone, handle)
        try:
            handle_fd = os.open(
                handle.name if zone_fd is not None else directory,
                os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC,
                dir_fd=zone_fd,
            )
        except FileNotFoundError:
            handle_fd = -1
        except OSError as exc:
            raise KeyStoreError(f"cannot list keys: {exc.strerror}", where=directory) from exc
        if handle_fd >= 0:
            try:
                names = _list_open(directory, handle_fd, sweep=self.sweep)
                epochs = key_epochs(names)
                if epochs:
                    epoch = max(epochs)
                    key_path = Path(f"{directory}/{epoch}{PRIVATE_KEY_SUFFIX}")
                    seed = load_seed(key_path, self.passphrase, dir_fd=handle_fd)
                    commitment = self._commitment(directory, epoch, names, dir_fd=handle_fd)
                    return epoch, seed, commitment
            except OSError as exc:
                raise KeyStoreError(f"cannot list keys: {exc.strerror}", where=directory) from exc
            finally:
                os.close(handle_fd)
        if not create:
            raise KeyStoreError(
                f"no key for {handle.ref} in {directory}; "
                f"run 'alter-publish keygen {handle.ref} --zone {zone}' or sign with --create-keys",
                where=handle.ref,
            )
        key = self.generate(zone, handle, 1)
        seed = key.private_key.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
        return key.epoch, seed, key.commitment

    def open_zone_dir(self, zone: str) -> int | None:
        """The zone's key directory opened, for :meth:`current_material` (None when absent;
        close it with ``os.close``), once :meth:`check_zone` has passed.

        Raises:
            KeyStoreError: a directory above the zone's keys is unsafe (:meth:`check_zone`).
        """
        self.check_zone(zone)
        try:
            return os.open(f"{self.root}/{zone}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None


def key_epochs(names: Iterable[str]) -> list[int]:
    """The epochs with a private key among a handle directory's file ``names``."""
    return [int(m.group(1)) for name in names if (m := _EPOCH_FILE.fullmatch(name))]


def current_key_files(names: Iterable[str]) -> tuple[str, ...]:
    """The files loading a handle's current key may read, among its directory's
    ``names``: the highest epoch's key, secret and commitment (none: no key)."""
    epochs = key_epochs(names)
    if not epochs:
        return ()
    epoch = max(epochs)
    suffixes = (PRIVATE_KEY_SUFFIX, SECRET_SUFFIX, COMMITMENT_SUFFIX)
    return tuple(f"{epoch}{suffix}" for suffix in suffixes)


def _owned(name: str) -> bool:
    """True for the name of a file the store keeps in a handle's directory."""
    return _EPOCH_FILE.fullmatch(name) is not None or _EPOCH_PART.fullmatch(name) is not None


def _list_open(directory: str, handle_fd: int, *, sweep: bool) -> list[str]:
    """The file names of the open handle directory ``handle_fd`` (at ``directory``), once
    it passed the StrictModes check (one ``fstat``: no path looked up again), without the
    temporary files of the store's own files, which are removed (with ``sweep``): an
    interrupted write left them, and they may hold private key bytes.

    Raises:
        KeyStoreError: the directory is writable by group or others or owned by another
            user.
        OSError: it cannot be listed, or a temporary file cannot be removed.
    """
    check_dir_fd(directory, handle_fd)
    names = os.listdir(handle_fd)  # an open directory: no path looked up again
    hidden = [name for name in names if name.startswith(".")]
    if not hidden or not sweep:
        return names
    swept = {path.name for path in sweep_temp_files(Path(directory), _owned, hidden)}
    return [name for name in names if name not in swept] if swept else names
