"""The files of a zone's DNSSEC keys, beside its handle keys in the key store::

    keys/<zone>/_dnssec/keys.json            which keys exist: role, key tag, state, created
    keys/<zone>/_dnssec/<role>-<tag>.pem     PKCS#8 PEM private key (KSK or ZSK), mode 0600

``_dnssec`` is a name no handle can have. Its directories are made 0700 and checked
as every key directory is (:mod:`alter_publish.keys.permissions`), once per zone and
process (:meth:`ZoneKeyStore.check_dirs`), which also sweeps the temporary files that
interrupted writes left in ``_dnssec/`` and ``keys/`` itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dns.dnssec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.dns.zonekeys import (
    ZoneKey,
    ZoneKeyEntry,
    ZoneKeyRole,
    ZoneKeyState,
    key_file_name,
    key_order,
)
from alter_publish.errors import KeyStoreError, VerificationError
from alter_publish.fileio import PRIVATE_MODE, atomic_write_bytes, sweep_temp_files
from alter_publish.format.envelope import b64url_decode, public_bytes
from alter_publish.interrupts import deferred_interrupts
from alter_publish.keys.pem import (
    ensure_gitignore,
    load_private_key,
    make_key_dirs,
    private_pem,
)
from alter_publish.keys.permissions import check_dir

ZONE_KEYS_DIR = "_dnssec"
ZONE_KEYS_INDEX = "keys.json"
ZONE_KEYS_FORMAT = "alter-publish/zone-keys/1"
#: The private key files of ``_dnssec/`` (:func:`key_file_name`).
_ZONE_KEY_FILE = re.compile(
    "(?:" + "|".join(re.escape(str(role)) for role in ZoneKeyRole) + r")-[0-9]{5,}\.pem"
)
#: The file the store writes in ``keys/`` itself.
_ROOT_FILE = ".gitignore"


@dataclass(frozen=True, slots=True)
class ZoneKeyStore:
    """The DNSSEC keys of the zones under ``root`` (a key store's root)."""

    root: Path
    passphrase: bytes | None = field(default=None, repr=False)
    #: Zones whose directories this process has checked (shared with the key store).
    checked: set[str] = field(default_factory=set, repr=False, compare=False)
    #: Remove leftovers of interrupted writes (a run that writes; see ``KeyStore.sweep``).
    sweep: bool = field(default=False, compare=False)

    def directory(self, zone: str) -> Path:
        """Directory holding a zone's DNSSEC keys and their index."""
        return self.root / zone / ZONE_KEYS_DIR

    def check_dirs(self, zone: str) -> None:
        """Refuse ``keys/``, ``keys/<zone>/`` and ``keys/<zone>/_dnssec/`` when group or
        others may write one or another user owns one, then remove the temporary files
        interrupted writes left of the store's files in ``keys/`` and ``_dnssec/``.
        Done once per zone in this process (``checked``): a few system calls per run.

        Raises:
            KeyStoreError: a directory is unsafe or cannot be looked at, or a temporary
                file cannot be removed.
        """
        if zone in self.checked:
            return
        directory = self.directory(zone)
        present = check_dir(str(self.root)) and check_dir(str(self.root / zone))
        present = present and check_dir(str(directory))
        try:
            if self.sweep:
                sweep_temp_files(self.root, lambda name: name == _ROOT_FILE)
            if self.sweep and present:
                sweep_temp_files(directory, _owned)
        except OSError as exc:
            where = str(exc.filename or directory)
            raise KeyStoreError(f"cannot remove: {exc.strerror}", where=where) from exc
        self.checked.add(zone)

    def _read_index(self, zone: str) -> list[dict[str, Any]]:
        self.check_dirs(zone)
        path = self.directory(zone) / ZONE_KEYS_INDEX
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

    def entries(self, zone: str, *, removed: bool = False) -> tuple[ZoneKeyEntry, ...]:
        """The zone's DNSSEC keys as listed in ``keys.json``, without loading private keys.

        Ordered as :meth:`load`; ``removed`` keys are left out unless asked for.
        An entry written before public keys were listed is completed from its key file.

        Raises:
            KeyStoreError: the index is corrupt, or an old entry's key file unreadable.
        """
        directory = self.directory(zone)
        found: list[ZoneKeyEntry] = []
        for item in self._read_index(zone):
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
                path = directory / key_file_name(role, tag)
                public_key = public_bytes(load_private_key(path, self.passphrase))
            entry = ZoneKeyEntry(zone, role, tag, created, state, since, public_key)
            if dns.dnssec.key_id(entry.dnskey) != tag:
                raise KeyStoreError(
                    f"public key has key tag {dns.dnssec.key_id(entry.dnskey)}, index says {tag}",
                    where=str(directory / ZONE_KEYS_INDEX),
                )
            found.append(entry)
        return tuple(sorted(found, key=key_order))

    def load(self, zone: str) -> tuple[ZoneKey, ...]:
        """The zone's DNSSEC keys in use (not ``removed``), with their private keys,
        KSKs first, each ordered by creation then tag.

        Raises:
            KeyStoreError: the index or a key file is missing, unsafe, or corrupt.
        """
        directory = self.directory(zone)
        loaded: list[ZoneKey] = []
        for entry in self.entries(zone):
            path = directory / key_file_name(entry.role, entry.tag)
            private_key = load_private_key(path, self.passphrase)
            key = ZoneKey(zone, entry.role, entry.created, private_key, entry.state, entry.since)
            if key.tag != entry.tag:
                raise KeyStoreError(
                    f"key file holds key tag {key.tag}, index says {entry.tag}", where=str(path)
                )
            loaded.append(key)
        return tuple(sorted(loaded, key=key_order))

    def generate(self, zone: str, *, now: int) -> tuple[ZoneKey, ...]:
        """Create a KSK and a ZSK for a zone that has no DNSSEC keys yet.

        Raises:
            KeyStoreError: the zone has keys already, or a file cannot be written.
        """
        directory = self.directory(zone)
        if self._read_index(zone):
            raise KeyStoreError(
                "zone has DNSSEC keys already; keys are never overwritten", where=str(directory)
            )
        # Key files without an index (a crash between writes, a lost keys.json) still
        # count: new keys would silently change the DS the parent holds.
        if any(directory.glob("*.pem")):
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
        with deferred_interrupts():  # key files and their index: all or none
            ensure_gitignore(self.root)
            for key in created:
                self._write_key_file(key)
            self.save(zone, created)
        return tuple(created)

    def _write_key_file(self, key: ZoneKey) -> None:
        atomic_write_bytes(
            self.directory(key.zone) / key_file_name(key.role, key.tag),
            private_pem(key.private_key, self.passphrase),
            mode=PRIVATE_MODE,
            error=KeyStoreError,
        )

    def save(self, zone: str, keys: Sequence[ZoneKey | ZoneKeyEntry]) -> None:
        """Write ``keys.json`` listing ``keys`` (every key, removed ones included).

        Raises:
            KeyStoreError: the index cannot be written.
        """
        make_key_dirs(self.directory(zone))  # the index is public, its directory is not
        index = {"format": ZONE_KEYS_FORMAT, "keys": [key.index_entry() for key in keys]}
        atomic_write_bytes(
            self.directory(zone) / ZONE_KEYS_INDEX,
            (json.dumps(index, indent=2, sort_keys=True) + "\n").encode(),
            error=KeyStoreError,
        )

    def add(self, zone: str, role: ZoneKeyRole, state: ZoneKeyState, *, now: int) -> ZoneKey:
        """Create one more DNSSEC key (for a rollover), its tag distinct from every other.

        Raises:
            KeyStoreError: the zone has no keys yet, or a file cannot be written.
        """
        existing = self.entries(zone, removed=True)
        if not existing:
            raise KeyStoreError(
                f"zone {zone} has no DNSSEC keys to roll; run 'alter-publish dnssec keygen {zone}'",
                where=str(self.directory(zone)),
            )
        tags = {key.tag for key in existing}
        while True:
            key = ZoneKey(zone, role, now, Ed25519PrivateKey.generate(), state, now)
            if key.tag not in tags:
                break
        with deferred_interrupts():  # the key file and its index entry: both or none
            self._write_key_file(key)
            self.save(zone, (*existing, key.entry))
        return key

    def current(self, zone: str, *, create: bool, now: int) -> tuple[ZoneKey, ...]:
        """The zone's active KSK(s) and ZSK(s), creating a pair when allowed.

        Raises:
            KeyStoreError: no complete key set and ``create`` is False, or loading failed.
        """
        found = self.load(zone)
        roles = {key.role for key in found if key.signs}
        if roles == {ZoneKeyRole.KSK, ZoneKeyRole.ZSK}:
            return found
        if not found and create:
            return self.generate(zone, now=now)
        missing = "no DNSSEC keys" if not found else "no active KSK and ZSK pair"
        raise KeyStoreError(
            f"zone {zone} has {missing} in {self.directory(zone)}; run "
            f"'alter-publish dnssec keygen {zone}' or sign with --create-keys",
            where=zone,
        )


def _owned(name: str) -> bool:
    """True for the name of a file the store keeps in ``_dnssec/``."""
    return name == ZONE_KEYS_INDEX or _ZONE_KEY_FILE.fullmatch(name) is not None
