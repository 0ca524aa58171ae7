"""The key store: one Ed25519 key and one revocation secret per handle per epoch.

Layout under the store root (``keys/`` by default)::

    keys/<zone>/<handle-name>/<epoch>.pem     PKCS#8 PEM private key, mode 0600
    keys/<zone>/<handle-name>/<epoch>.secret  base64url 32-byte revocation secret, mode 0600
    keys/<zone>/<handle-name>/<epoch>.rc      its commitment only, when the secret was
                                              written elsewhere to be kept offline
    keys/<zone>/<handle-name>/<epoch>.json    how a rotated epoch came to be (public)

Public keys need no file of their own: every envelope in the IdentityLog carries one.

DNSSEC zone keys (Ed25519, algorithm 15) sit beside the handles, under a name no
handle can have::

    keys/<zone>/_dnssec/keys.json            which keys exist: role, key tag, state, created
    keys/<zone>/_dnssec/<role>-<tag>.pem     PKCS#8 PEM private key (KSK or ZSK), mode 0600

Private keys are encrypted when a passphrase is configured; it comes from the
environment (``ALTER_PUBLISH_PASSPHRASE``) or a file named there
(``ALTER_PUBLISH_PASSPHRASE_FILE``), never from the command line.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import dns.dnssec
import dns.dnssectypes
import dns.rdtypes.ANY.DNSKEY
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from alter_publish.errors import KeyStoreError, VerificationError
from alter_publish.fileio import PRIVATE_MODE, atomic_write_bytes
from alter_publish.format.envelope import (
    SECRET_OCTETS,
    b64url,
    b64url_decode,
    key_id,
    public_bytes,
    revocation_commitment,
)
from alter_publish.format.handles import Handle

PASSPHRASE_ENV = "ALTER_PUBLISH_PASSPHRASE"  # noqa: S105 (a variable name, not a secret)
PASSPHRASE_FILE_ENV = "ALTER_PUBLISH_PASSPHRASE_FILE"  # noqa: S105 (a variable name)
PRIVATE_KEY_SUFFIX = ".pem"
SECRET_SUFFIX = ".secret"  # noqa: S105 (a file suffix)
COMMITMENT_SUFFIX = ".rc"
ROTATION_SUFFIX = ".json"
ROTATION_FORMAT = "alter-publish/rotation/1"
GITIGNORE_TEXT = """\
# alter-publish key store: private keys and revocation secrets never enter git.
*
!.gitignore
!README.md
!*/
!*.pub
"""
_EPOCH_FILE = re.compile(r"([1-9][0-9]{0,9})\.pem")
ZONE_KEYS_DIR = "_dnssec"
ZONE_KEYS_INDEX = "keys.json"
ZONE_KEYS_FORMAT = "alter-publish/zone-keys/1"
DNSKEY_FLAGS_ZSK = 256
DNSKEY_FLAGS_KSK = 257


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


def _mode_problem(path: Path, mode: int) -> KeyStoreError | None:
    if mode & 0o077:
        return KeyStoreError(
            f"private file is readable by group or others (mode {mode:04o}); "
            f"fix with: chmod 600 {path}",
            where=str(path),
        )
    return None


def _read_private(path: Path, *, dir_fd: int | None = None) -> bytes:
    """A private file's bytes, refused when group or others may read it (``dir_fd``: an
    open directory ``path`` is in, which saves looking the directories up again).

    One open and one fstat: the mode checked is that of the file read (no race), and
    loading 100,000 handle keys stays a few seconds.
    """
    try:
        name = path if dir_fd is None else path.name
        fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        raise KeyStoreError(f"cannot read: {exc.strerror}", where=str(path)) from exc
    try:
        problem = _mode_problem(path, stat.S_IMODE(os.fstat(fd).st_mode))
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


def _private_pem(private_key: Ed25519PrivateKey, passphrase: bytes | None) -> bytes:
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


def _load_seed(path: Path, passphrase: bytes | None, *, dir_fd: int | None = None) -> bytes:
    """The 32-byte seed of a private key file (any form :func:`_load_private_pem` reads)."""
    pem = _read_private(path, dir_fd=dir_fd)
    if pem.startswith(_PEM_HEAD) and pem.endswith(_PEM_TAIL):
        try:
            der = base64.b64decode(pem[len(_PEM_HEAD) : -len(_PEM_TAIL)], validate=True)
        except ValueError:
            der = b""
        if len(der) == 48 and der.startswith(_PKCS8_ED25519_PREFIX):
            return der[len(_PKCS8_ED25519_PREFIX) :]
    return _private_key_of(pem, path, passphrase).private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


def _load_private_pem(path: Path, passphrase: bytes | None) -> Ed25519PrivateKey:
    return _private_key_of(_read_private(path), path, passphrase)


def _private_key_of(pem: bytes, path: Path, passphrase: bytes | None) -> Ed25519PrivateKey:
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


class ZoneKeyRole(StrEnum):
    """What a DNSSEC zone key signs: the DNSKEY rrset (KSK) or everything else (ZSK)."""

    KSK = "ksk"
    ZSK = "zsk"

    @property
    def flags(self) -> int:
        """DNSKEY flags: zone key, plus SEP for a KSK."""
        return DNSKEY_FLAGS_KSK if self is ZoneKeyRole.KSK else DNSKEY_FLAGS_ZSK


class ZoneKeyState(StrEnum):
    """Where a DNSSEC key is in its life (docs/dnssec.md, "Rollovers").

    A ZSK goes published -> active -> retired -> removed (pre-publication); a new KSK
    goes ds-submitted -> ds-published -> active, and the KSK it replaces active ->
    retired -> removed (double-DS).
    """

    DS_SUBMITTED = "ds-submitted"
    DS_PUBLISHED = "ds-published"
    PUBLISHED = "published"
    ACTIVE = "active"
    RETIRED = "retired"
    REMOVED = "removed"


class _ZoneKeyStateful:
    """What a zone key's role and state mean for the zone (shared by key and entry)."""

    __slots__ = ()
    role: ZoneKeyRole
    state: ZoneKeyState

    @property
    def in_dnskey(self) -> bool:
        """Whether the zone's DNSKEY rrset carries this key."""
        if self.role is ZoneKeyRole.KSK:
            return self.state is ZoneKeyState.ACTIVE
        return self.state in (ZoneKeyState.PUBLISHED, ZoneKeyState.ACTIVE, ZoneKeyState.RETIRED)

    @property
    def signs(self) -> bool:
        """Whether this key makes RRSIGs (DNSKEY rrset for a KSK, the rest for a ZSK)."""
        return self.state is ZoneKeyState.ACTIVE

    @property
    def in_ds(self) -> bool:
        """Whether the parent zone should hold a DS for this key."""
        return self.role is ZoneKeyRole.KSK and self.state in (
            ZoneKeyState.DS_SUBMITTED,
            ZoneKeyState.DS_PUBLISHED,
            ZoneKeyState.ACTIVE,
            ZoneKeyState.RETIRED,
        )


def _dnskey(public_key: bytes, role: ZoneKeyRole) -> dns.rdtypes.ANY.DNSKEY.DNSKEY:
    return dns.dnssec.make_dnskey(
        Ed25519PublicKey.from_public_bytes(public_key),
        dns.dnssectypes.Algorithm.ED25519,
        flags=role.flags,
    )


@dataclass(frozen=True, slots=True)
class ZoneKeyEntry(_ZoneKeyStateful):
    """A zone key as ``keys.json`` lists it: everything but the private key."""

    zone: str
    role: ZoneKeyRole
    tag: int
    created: int
    state: ZoneKeyState
    since: int
    public_key: bytes

    @property
    def dnskey(self) -> dns.rdtypes.ANY.DNSKEY.DNSKEY:
        """The DNSKEY rdata (algorithm 15, ED25519)."""
        return _dnskey(self.public_key, self.role)

    def moved(self, state: ZoneKeyState, now: int) -> ZoneKeyEntry:
        """This key in ``state`` from ``now`` on."""
        return dataclasses.replace(self, state=state, since=now)

    def index_entry(self) -> dict[str, Any]:
        """This key's line in ``keys.json`` (no secrets)."""
        return {
            "role": str(self.role),
            "tag": self.tag,
            "algorithm": int(dns.dnssectypes.Algorithm.ED25519),
            "file": _zone_key_file(self.role, self.tag),
            "created": self.created,
            "state": str(self.state),
            "since": self.since,
            "public_key": b64url(self.public_key),
        }


@dataclass(frozen=True, slots=True)
class ZoneKey(_ZoneKeyStateful):
    """One DNSSEC key of a zone and its state. Its repr never shows the private key."""

    zone: str
    role: ZoneKeyRole
    created: int
    private_key: Ed25519PrivateKey = field(repr=False)
    state: ZoneKeyState = ZoneKeyState.ACTIVE
    since: int = -1  # when the key entered ``state``; -1 means at ``created``

    def __post_init__(self) -> None:
        if self.since < 0:
            object.__setattr__(self, "since", self.created)

    def moved(self, state: ZoneKeyState, now: int) -> ZoneKey:
        """This key in ``state`` from ``now`` on."""
        return ZoneKey(self.zone, self.role, self.created, self.private_key, state, now)

    @property
    def entry(self) -> ZoneKeyEntry:
        """The key without its private half."""
        public = public_bytes(self.private_key)
        return ZoneKeyEntry(
            self.zone, self.role, self.tag, self.created, self.state, self.since, public
        )

    @property
    def dnskey(self) -> dns.rdtypes.ANY.DNSKEY.DNSKEY:
        """The DNSKEY rdata (algorithm 15, ED25519)."""
        return _dnskey(public_bytes(self.private_key), self.role)

    @property
    def tag(self) -> int:
        """The RFC 4034 key tag of the DNSKEY."""
        return dns.dnssec.key_id(self.dnskey)

    def index_entry(self) -> dict[str, Any]:
        """This key's line in ``keys.json`` (no secrets)."""
        return self.entry.index_entry()


def _zone_key_order(key: ZoneKey | ZoneKeyEntry) -> tuple[bool, int, int]:
    return (key.role is not ZoneKeyRole.KSK, key.created, key.tag)


def _zone_key_file(role: ZoneKeyRole, tag: int) -> str:
    return f"{role}-{tag:05d}{PRIVATE_KEY_SUFFIX}"


@dataclass(frozen=True, slots=True)
class KeyStore:
    """A key store rooted at ``root``; ``passphrase`` encrypts new keys and decrypts old ones."""

    root: Path
    passphrase: bytes | None = field(default=None, repr=False)

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
        """Epochs with a private key on disk, ascending."""
        try:
            names = os.listdir(self.handle_dir(zone, handle))  # noqa: PTH208 (names only, 100k dirs)
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

    def commitment_path(self, zone: str, handle: Handle, epoch: int) -> Path:
        """Where an epoch's revocation commitment sits when its secret is kept offline."""
        return self.handle_dir(zone, handle) / f"{epoch}{COMMITMENT_SUFFIX}"

    def check_new(
        self, zone: str, handle: Handle, epoch: int, *, secret_out: Path | None = None
    ) -> None:
        """Check that :meth:`generate` could write ``epoch`` (nothing is in the way).

        Raises:
            KeyStoreError: a file for that epoch, or ``secret_out``, exists already.
        """
        key_path, secret_path = self.paths(zone, handle, epoch)
        commitment_path = self.commitment_path(zone, handle, epoch)
        for path in (key_path, secret_path, commitment_path, secret_out):
            if path is not None and path.exists():
                raise KeyStoreError(
                    f"{handle.ref} epoch {epoch}: exists already; keys are never overwritten",
                    where=str(path),
                )

    def generate(
        self, zone: str, handle: Handle, epoch: int, *, secret_out: Path | None = None
    ) -> HandleKey:
        """Create and save a new key and revocation secret for ``epoch``.

        With ``secret_out`` the secret is written there (mode 0600) to be moved offline,
        and the store keeps only its commitment (``<epoch>.rc``), which is all signing needs.

        Raises:
            KeyStoreError: a key for that epoch (or ``secret_out``) exists already, or a
                file cannot be written.
        """
        key_path, secret_path = self.paths(zone, handle, epoch)
        self.check_new(zone, handle, epoch, secret_out=secret_out)
        private_key = Ed25519PrivateKey.generate()
        secret = os.urandom(SECRET_OCTETS)
        pem = _private_pem(private_key, self.passphrase)
        self.ensure_gitignore()
        secret_line = (b64url(secret) + "\n").encode()
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
        atomic_write_bytes(key_path, pem, mode=PRIVATE_MODE, error=KeyStoreError)
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
            text = _read_private(path).decode("ascii").strip()
            return b64url_decode(text, SECRET_OCTETS, tag="secret")
        except (UnicodeDecodeError, VerificationError) as exc:
            raise KeyStoreError(
                "not a base64url 32-byte revocation secret", where=str(path)
            ) from exc

    def load(self, zone: str, handle: Handle, epoch: int) -> HandleKey:
        """Load one epoch's key and revocation secret (or, when offline, its commitment).

        Raises:
            KeyStoreError: missing, unsafe permissions, wrong passphrase, or corrupt.
        """
        directory = self.handle_dir(zone, handle)
        try:
            names = os.listdir(directory)  # noqa: PTH208 (names only)
        except OSError:
            names = []
        return self._load(zone, handle, epoch, str(directory), names)

    def _load(
        self, zone: str, handle: Handle, epoch: int, directory: str, names: Sequence[str]
    ) -> HandleKey:
        """:meth:`load` with the directory listing at hand (one listing per handle)."""
        key_path = Path(f"{directory}/{epoch}{PRIVATE_KEY_SUFFIX}")
        private_key = _load_private_pem(key_path, self.passphrase)
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
            text = _read_private(secret_path, dir_fd=dir_fd).decode("ascii").strip()
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

    def _listing(self, zone: str, handle: Handle) -> tuple[str, list[str], list[int]]:
        """(directory, file names, epochs with a key) of a handle, with str paths: they
        are several times cheaper than Path at 100,000 handles.

        Raises:
            KeyStoreError: the directory exists but cannot be listed.
        """
        directory = self.handle_dir_text(zone, handle)
        try:
            names = os.listdir(directory)  # noqa: PTH208 (names only)
        except FileNotFoundError:
            names = []
        except OSError as exc:
            raise KeyStoreError(f"cannot list keys: {exc.strerror}", where=directory) from exc
        epochs = [int(m.group(1)) for name in names if (m := _EPOCH_FILE.fullmatch(name))]
        return directory, names, epochs

    def current_material(
        self, zone: str, handle: Handle, *, create: bool = False, zone_fd: int | None = None
    ) -> tuple[int, bytes, bytes]:
        """``(epoch, seed, revocation commitment)`` of a handle's current key: what signing
        needs, read without building a key object (the signing workers' fast path).
        ``zone_fd``, the zone's key directory opened (:meth:`open_zone_dir`), makes each
        key three system calls cheaper.

        Raises:
            KeyStoreError: as :meth:`current`.
        """
        if zone_fd is not None:
            found = self._material_at(zone_fd, zone, handle)
            if found is not None:
                return found
        directory, names, epochs = self._listing(zone, handle)
        if not epochs:
            key = self.current(zone, handle, create=create)
            seed = key.private_key.private_bytes(
                serialization.Encoding.Raw,
                serialization.PrivateFormat.Raw,
                serialization.NoEncryption(),
            )
            return key.epoch, seed, key.commitment
        epoch = max(epochs)
        seed = _load_seed(Path(f"{directory}/{epoch}{PRIVATE_KEY_SUFFIX}"), self.passphrase)
        return epoch, seed, self._commitment(directory, epoch, names)

    def open_zone_dir(self, zone: str) -> int | None:
        """The zone's key directory opened, for :meth:`current_material` (None when absent;
        close it with ``os.close``)."""
        try:
            return os.open(f"{self.root}/{zone}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None

    def _material_at(
        self, zone_fd: int, zone: str, handle: Handle
    ) -> tuple[int, bytes, bytes] | None:
        """:meth:`current_material` through the open zone directory; None when the handle
        has no key there (the caller's full path reports that, or creates one).

        Raises:
            KeyStoreError: as :meth:`current`.
        """
        directory = self.handle_dir_text(zone, handle)
        try:
            handle_fd = os.open(
                handle.name, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=zone_fd
            )
        except OSError:
            return None
        try:
            names = os.listdir(handle_fd)  # noqa: PTH208 (an open directory: no path)
            epochs = [int(m.group(1)) for name in names if (m := _EPOCH_FILE.fullmatch(name))]
            if not epochs:
                return None
            epoch = max(epochs)
            key_path = Path(f"{directory}/{epoch}{PRIVATE_KEY_SUFFIX}")
            seed = _load_seed(key_path, self.passphrase, dir_fd=handle_fd)
            return epoch, seed, self._commitment(directory, epoch, names, dir_fd=handle_fd)
        except OSError as exc:
            raise KeyStoreError(f"cannot list keys: {exc.strerror}", where=directory) from exc
        finally:
            os.close(handle_fd)

    def current(self, zone: str, handle: Handle, *, create: bool = False) -> HandleKey:
        """The highest-epoch key of a handle, creating epoch 1 when allowed.

        Raises:
            KeyStoreError: no key and ``create`` is False, or loading failed.
        """
        directory, names, epochs = self._listing(zone, handle)
        if epochs:
            return self._load(zone, handle, max(epochs), directory, names)
        if not create:
            raise KeyStoreError(
                f"no key for {handle.ref} in {self.handle_dir(zone, handle)}; "
                f"run 'alter-publish keygen {handle.ref} --zone {zone}' or sign with --create-keys",
                where=handle.ref,
            )
        return self.generate(zone, handle, 1)

    # --- DNSSEC zone keys --------------------------------------------------------

    def zone_keys_dir(self, zone: str) -> Path:
        """Directory holding a zone's DNSSEC keys and their index."""
        return self.root / zone / ZONE_KEYS_DIR

    def _read_zone_index(self, zone: str) -> list[dict[str, Any]]:
        path = self.zone_keys_dir(zone) / ZONE_KEYS_INDEX
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise KeyStoreError(f"not a zone key index ({exc})", where=str(path)) from exc
        entries = doc.get("keys") if isinstance(doc, dict) else None
        if not isinstance(doc, dict) or doc.get("format") != ZONE_KEYS_FORMAT:
            raise KeyStoreError(f"not a {ZONE_KEYS_FORMAT} document", where=str(path))
        if not isinstance(entries, list):
            raise KeyStoreError(f"not a {ZONE_KEYS_FORMAT} document", where=str(path))
        if not all(isinstance(entry, dict) for entry in entries):
            raise KeyStoreError("a key entry is not a JSON object", where=str(path))
        return entries

    def zone_key_entries(self, zone: str, *, removed: bool = False) -> tuple[ZoneKeyEntry, ...]:
        """The zone's DNSSEC keys as listed in ``keys.json``, without loading private keys.

        Ordered as :meth:`zone_keys`; ``removed`` keys are left out unless asked for.
        An entry written before public keys were listed is completed from its key file.

        Raises:
            KeyStoreError: the index is corrupt, or an old entry's key file unreadable.
        """
        directory = self.zone_keys_dir(zone)
        found: list[ZoneKeyEntry] = []
        for item in self._read_zone_index(zone):
            try:
                role = ZoneKeyRole(str(item["role"]))
                created = int(item["created"])
                tag = int(item["tag"])
                state = ZoneKeyState(str(item.get("state", "active")))
                since = int(item.get("since", created))
                public = item.get("public_key")
                public_key = None if public is None else b64url_decode(str(public), 32, tag="p")
            except (KeyError, ValueError, TypeError, OverflowError, VerificationError) as exc:
                raise KeyStoreError(
                    f"bad key entry {item!r}", where=str(directory / ZONE_KEYS_INDEX)
                ) from exc
            if state is ZoneKeyState.REMOVED and not removed:
                continue
            if public_key is None:
                path = directory / _zone_key_file(role, tag)
                public_key = public_bytes(_load_private_pem(path, self.passphrase))
            entry = ZoneKeyEntry(zone, role, tag, created, state, since, public_key)
            if dns.dnssec.key_id(entry.dnskey) != tag:
                raise KeyStoreError(
                    f"public key has key tag {dns.dnssec.key_id(entry.dnskey)}, index says {tag}",
                    where=str(directory / ZONE_KEYS_INDEX),
                )
            found.append(entry)
        return tuple(sorted(found, key=_zone_key_order))

    def zone_keys(self, zone: str) -> tuple[ZoneKey, ...]:
        """The zone's DNSSEC keys in use (not ``removed``), with their private keys,
        KSKs first, each ordered by creation then tag.

        Raises:
            KeyStoreError: the index or a key file is missing, unsafe, or corrupt.
        """
        directory = self.zone_keys_dir(zone)
        loaded: list[ZoneKey] = []
        for entry in self.zone_key_entries(zone):
            path = directory / _zone_key_file(entry.role, entry.tag)
            private_key = _load_private_pem(path, self.passphrase)
            key = ZoneKey(zone, entry.role, entry.created, private_key, entry.state, entry.since)
            if key.tag != entry.tag:
                raise KeyStoreError(
                    f"key file holds key tag {key.tag}, index says {entry.tag}", where=str(path)
                )
            loaded.append(key)
        return tuple(sorted(loaded, key=_zone_key_order))

    def generate_zone_keys(self, zone: str, *, now: int) -> tuple[ZoneKey, ...]:
        """Create a KSK and a ZSK for a zone that has no DNSSEC keys yet.

        Raises:
            KeyStoreError: the zone has keys already, or a file cannot be written.
        """
        directory = self.zone_keys_dir(zone)
        if self._read_zone_index(zone):
            raise KeyStoreError(
                "zone has DNSSEC keys already; keys are never overwritten", where=str(directory)
            )
        # Key files without an index (a crash between writes, a lost keys.json) still
        # count: new keys would silently change the DS the parent holds.
        if any(directory.glob(f"*{PRIVATE_KEY_SUFFIX}")):
            raise KeyStoreError(
                f"holds zone key files but no {ZONE_KEYS_INDEX} listing them; restore "
                f"{ZONE_KEYS_INDEX} (or move the key files away to start over)",
                where=str(directory),
            )
        created: list[ZoneKey] = []
        tags: set[int] = set()
        for role in (ZoneKeyRole.KSK, ZoneKeyRole.ZSK):
            while True:  # distinct key tags keep validators' key lookup unambiguous
                key = ZoneKey(zone, role, now, Ed25519PrivateKey.generate())
                if key.tag not in tags:
                    break
            tags.add(key.tag)
            created.append(key)
        self.ensure_gitignore()
        for key in created:
            self._write_zone_key_file(key)
        self.save_zone_keys(zone, created)
        return tuple(created)

    def _write_zone_key_file(self, key: ZoneKey) -> None:
        atomic_write_bytes(
            self.zone_keys_dir(key.zone) / _zone_key_file(key.role, key.tag),
            _private_pem(key.private_key, self.passphrase),
            mode=PRIVATE_MODE,
            error=KeyStoreError,
        )

    def save_zone_keys(self, zone: str, keys: Sequence[ZoneKey | ZoneKeyEntry]) -> None:
        """Write ``keys.json`` listing ``keys`` (every key, removed ones included).

        Raises:
            KeyStoreError: the index cannot be written.
        """
        index = {"format": ZONE_KEYS_FORMAT, "keys": [key.index_entry() for key in keys]}
        atomic_write_bytes(
            self.zone_keys_dir(zone) / ZONE_KEYS_INDEX,
            (json.dumps(index, indent=2, sort_keys=True) + "\n").encode(),
            error=KeyStoreError,
        )

    def add_zone_key(
        self, zone: str, role: ZoneKeyRole, state: ZoneKeyState, *, now: int
    ) -> ZoneKey:
        """Create one more DNSSEC key (for a rollover), its tag distinct from every other.

        Raises:
            KeyStoreError: the zone has no keys yet, or a file cannot be written.
        """
        existing = self.zone_key_entries(zone, removed=True)
        if not existing:
            raise KeyStoreError(
                f"zone {zone} has no DNSSEC keys to roll; run 'alter-publish dnssec keygen {zone}'",
                where=str(self.zone_keys_dir(zone)),
            )
        tags = {key.tag for key in existing}
        while True:
            key = ZoneKey(zone, role, now, Ed25519PrivateKey.generate(), state, now)
            if key.tag not in tags:
                break
        self._write_zone_key_file(key)
        self.save_zone_keys(zone, (*existing, key.entry))
        return key

    def current_zone_keys(self, zone: str, *, create: bool, now: int) -> tuple[ZoneKey, ...]:
        """The zone's active KSK(s) and ZSK(s), creating a pair when allowed.

        Raises:
            KeyStoreError: no complete key set and ``create`` is False, or loading failed.
        """
        found = self.zone_keys(zone)
        roles = {key.role for key in found if key.signs}
        if roles == {ZoneKeyRole.KSK, ZoneKeyRole.ZSK}:
            return found
        if not found and create:
            return self.generate_zone_keys(zone, now=now)
        missing = "no DNSSEC keys" if not found else "no active KSK and ZSK pair"
        raise KeyStoreError(
            f"zone {zone} has {missing} in {self.zone_keys_dir(zone)}; run "
            f"'alter-publish dnssec keygen {zone}' or sign with --create-keys",
            where=zone,
        )
