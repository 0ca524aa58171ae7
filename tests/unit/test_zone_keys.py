"""DNSSEC zone keys in the key store: layout, modes, passphrases, and broken stores."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import dns.dnssec
import dns.dnssectypes
import dns.name
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.dns.zonekeys import (
    DNSKEY_FLAGS_KSK,
    DNSKEY_FLAGS_ZSK,
    ZoneKey,
    ZoneKeyRole,
    ZoneKeyState,
)
from alter_publish.errors import EXIT_KEY, KeyStoreError
from alter_publish.format.envelope import b64url, public_bytes
from alter_publish.keys.pem import PASSPHRASE_ENV
from alter_publish.keys.store import KeyStore
from alter_publish.keys.zonestore import ZONE_KEYS_FORMAT

# Built at run time so no committed file looks like it holds a PEM private key.
PEM_KEY_LABEL = b"PRIVATE " + b"KEY-----"

ZONE = "example.com"
NOW = 1_767_225_600  # 2026-01-01T00:00:00Z
PASSPHRASE = b"correct horse battery staple"
ED25519 = int(dns.dnssectypes.Algorithm.ED25519)


def key_file(role: ZoneKeyRole, tag: int) -> str:
    """The documented file name of a zone key: ``<role>-<tag, 5 digits>.pem``."""
    return f"{role}-{tag:05d}.pem"


def index_path(store: KeyStore) -> Path:
    return store.zones.directory(ZONE) / "keys.json"


def read_index(store: KeyStore) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(index_path(store).read_text(encoding="utf-8"))
    return doc


def write_index(store: KeyStore, doc: object) -> None:
    index_path(store).write_text(json.dumps(doc), encoding="utf-8")


def key_error(store: KeyStore) -> KeyStoreError:
    """The KeyStoreError loading the zone's keys raises."""
    with pytest.raises(KeyStoreError) as info:
        store.zones.load(ZONE)
    return info.value


def files_of(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


@pytest.fixture
def store(tmp_path: Path) -> KeyStore:
    """A key store holding a freshly generated KSK and ZSK for example.com."""
    keys = KeyStore(tmp_path / "keys")
    keys.zones.generate(ZONE, now=NOW)
    return keys


# --- generate and load -------------------------------------------------------------


def test_generate_makes_one_ksk_and_one_zsk(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "keys")
    ksk, zsk = keys.zones.generate(ZONE, now=NOW)
    assert (ksk.role, zsk.role) == (ZoneKeyRole.KSK, ZoneKeyRole.ZSK)
    assert (ksk.zone, zsk.zone) == (ZONE, ZONE)
    assert (ksk.created, zsk.created) == (NOW, NOW)
    assert ksk.tag != zsk.tag


def test_layout_index_and_file_modes(store: KeyStore) -> None:
    directory = store.root / ZONE / "_dnssec"
    assert store.zones.directory(ZONE) == directory
    ksk, zsk = store.zones.load(ZONE)
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        ["keys.json", key_file(ksk.role, ksk.tag), key_file(zsk.role, zsk.tag)]
    )
    for key in (ksk, zsk):
        pem = directory / key_file(key.role, key.tag)
        assert stat.S_IMODE(pem.stat().st_mode) == 0o600
        assert pem.read_bytes().startswith(b"-----BEGIN " + PEM_KEY_LABEL)
    doc = read_index(store)
    assert doc == {
        "format": ZONE_KEYS_FORMAT,
        "keys": [
            {
                "role": str(key.role),
                "tag": key.tag,
                "algorithm": ED25519,
                "file": key_file(key.role, key.tag),
                "created": NOW,
                "state": "active",
                "since": NOW,
                "public_key": b64url(public_bytes(key.private_key)),
            }
            for key in (ksk, zsk)
        ],
    }
    assert (store.root / ".gitignore").is_file()


def test_index_holds_no_secrets(store: KeyStore) -> None:
    text = index_path(store).read_text(encoding="utf-8")
    assert "PRIVATE" not in text
    for key in store.zones.load(ZONE):
        raw = key.private_key.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
        assert raw.hex() not in text


def test_load_round_trips(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "keys")
    made = keys.zones.generate(ZONE, now=NOW)
    loaded = keys.zones.load(ZONE)
    assert [(k.role, k.tag, k.created) for k in loaded] == [
        (k.role, k.tag, k.created) for k in made
    ]
    assert [k.dnskey for k in loaded] == [k.dnskey for k in made]


def test_zone_without_keys_has_none(tmp_path: Path) -> None:
    assert KeyStore(tmp_path / "keys").zones.load(ZONE) == ()


def test_second_generate_is_refused_and_changes_nothing(store: KeyStore) -> None:
    before = files_of(store.zones.directory(ZONE))
    with pytest.raises(KeyStoreError) as info:
        store.zones.generate(ZONE, now=NOW + 60)
    assert info.value.category == "key"
    assert info.value.exit_code == EXIT_KEY
    assert info.value.where == str(store.zones.directory(ZONE))
    assert files_of(store.zones.directory(ZONE)) == before


def test_keys_of_other_zones_are_separate(store: KeyStore) -> None:
    other = store.zones.generate("example.org", now=NOW)
    assert {k.tag for k in store.zones.load("example.org")} == {k.tag for k in other}
    assert {k.zone for k in store.zones.load("example.org")} == {"example.org"}
    assert len(store.zones.load(ZONE)) == 2


# --- ZoneKey -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "flags"),
    [
        pytest.param(ZoneKeyRole.KSK, DNSKEY_FLAGS_KSK, id="ksk-257"),
        pytest.param(ZoneKeyRole.ZSK, DNSKEY_FLAGS_ZSK, id="zsk-256"),
    ],
)
def test_dnskey_and_tag(role: ZoneKeyRole, flags: int) -> None:
    private_key = Ed25519PrivateKey.generate()
    key = ZoneKey(ZONE, role, NOW, private_key)
    dnskey = key.dnskey
    assert (dnskey.flags, dnskey.protocol, dnskey.algorithm) == (flags, 3, ED25519)
    assert dnskey.key == private_key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    assert key.tag == dns.dnssec.key_id(dnskey)
    assert role.flags == flags


def test_ds_of_the_ksk_matches_its_dnskey(store: KeyStore) -> None:
    ksk = store.zones.load(ZONE)[0]
    ds = dns.dnssec.make_ds(dns.name.from_text(ZONE + "."), ksk.dnskey, "SHA256")
    assert (ds.key_tag, ds.algorithm) == (ksk.tag, ED25519)


def test_repr_never_shows_the_private_key(store: KeyStore) -> None:
    for key in store.zones.load(ZONE):
        text = repr(key)
        raw = key.private_key.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
        assert "private_key" not in text
        assert "Ed25519PrivateKey" not in text
        assert raw.hex() not in text
        assert text.startswith(f"ZoneKey(zone={ZONE!r}, ")
    assert "passphrase" not in repr(KeyStore(store.root, passphrase=PASSPHRASE))
    assert PASSPHRASE.decode() not in repr(KeyStore(store.root, passphrase=PASSPHRASE))


# --- current_zone_keys ---------------------------------------------------------------


def test_current_zone_keys_without_create_names_dnssec_keygen(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "keys")
    with pytest.raises(KeyStoreError) as info:
        keys.zones.current(ZONE, create=False, now=NOW)
    assert info.value.where == ZONE
    assert f"alter-publish dnssec keygen {ZONE}" in info.value.what
    assert "--create-keys" in info.value.what
    assert not keys.zones.directory(ZONE).exists()


def test_current_zone_keys_creates_once_then_reuses(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "keys")
    made = keys.zones.current(ZONE, create=True, now=NOW)
    again = keys.zones.current(ZONE, create=True, now=NOW + 86400)
    assert [(k.role, k.tag, k.created) for k in again] == [(k.role, k.tag, k.created) for k in made]
    reloaded = keys.zones.current(ZONE, create=False, now=NOW)
    assert [k.dnskey for k in reloaded] == [k.dnskey for k in made]


@pytest.mark.parametrize("create", [False, True], ids=["no-create", "create"])
def test_incomplete_key_set_is_refused_even_with_create(store: KeyStore, create: bool) -> None:
    doc = read_index(store)
    doc["keys"] = [entry for entry in doc["keys"] if entry["role"] == "ksk"]
    write_index(store, doc)
    with pytest.raises(KeyStoreError) as info:
        store.zones.current(ZONE, create=create, now=NOW)
    assert info.value.where == ZONE
    assert "dnssec keygen" in info.value.what


def test_removed_keys_are_not_loaded_unless_asked(store: KeyStore) -> None:
    doc = read_index(store)
    doc["keys"][1]["state"] = "removed"
    write_index(store, doc)
    (ksk,) = store.zones.load(ZONE)
    assert ksk.role is ZoneKeyRole.KSK
    assert [key.role for key in store.zones.entries(ZONE, removed=True)] == [
        ZoneKeyRole.KSK,
        ZoneKeyRole.ZSK,
    ]


def test_retired_keys_load_with_their_state(store: KeyStore) -> None:
    doc = read_index(store)
    doc["keys"][1]["state"] = "retired"
    doc["keys"][1]["since"] = NOW + 60
    write_index(store, doc)
    _, zsk = store.zones.load(ZONE)
    assert (zsk.state, zsk.since) == (ZoneKeyState.RETIRED, NOW + 60)
    assert zsk.in_dnskey
    assert not zsk.signs
    with pytest.raises(KeyStoreError, match="no active KSK and ZSK pair"):
        store.zones.current(ZONE, create=False, now=NOW)


def test_unknown_state_is_a_bad_entry(store: KeyStore) -> None:
    doc = read_index(store)
    doc["keys"][0]["state"] = "sleeping"
    write_index(store, doc)
    with pytest.raises(KeyStoreError, match="bad key entry"):
        store.zones.load(ZONE)


def test_add_zone_key_keeps_tags_distinct_and_the_index_whole(store: KeyStore) -> None:
    before = store.zones.load(ZONE)
    new = store.zones.add(ZONE, ZoneKeyRole.ZSK, ZoneKeyState.PUBLISHED, now=NOW + 5)
    after = store.zones.load(ZONE)
    assert new.tag not in {key.tag for key in before}
    assert [key.tag for key in after] == [before[0].tag, before[1].tag, new.tag]
    assert (after[2].state, after[2].since) == (ZoneKeyState.PUBLISHED, NOW + 5)
    assert new.in_dnskey
    assert not new.signs


# --- passphrase ----------------------------------------------------------------------


def test_passphrase_encrypts_zone_keys(tmp_path: Path) -> None:
    root = tmp_path / "keys"
    made = KeyStore(root, passphrase=PASSPHRASE).zones.generate(ZONE, now=NOW)
    for key in made:
        pem = (root / ZONE / "_dnssec" / key_file(key.role, key.tag)).read_bytes()
        assert pem.startswith(b"-----BEGIN ENCRYPTED " + PEM_KEY_LABEL)
    loaded = KeyStore(root, passphrase=PASSPHRASE).zones.load(ZONE)
    assert [k.dnskey for k in loaded] == [k.dnskey for k in made]


@pytest.mark.parametrize(
    ("passphrase", "fragment"),
    [
        pytest.param(None, PASSPHRASE_ENV, id="no-passphrase"),
        pytest.param(b"wrong", "wrong passphrase", id="wrong-passphrase"),
    ],
)
def test_encrypted_zone_keys_need_the_passphrase(
    tmp_path: Path, passphrase: bytes | None, fragment: str
) -> None:
    root = tmp_path / "keys"
    (ksk, _) = KeyStore(root, passphrase=PASSPHRASE).zones.generate(ZONE, now=NOW)
    with pytest.raises(KeyStoreError) as info:
        KeyStore(root, passphrase=passphrase).zones.load(ZONE)
    assert info.value.where == str(root / ZONE / "_dnssec" / key_file(ksk.role, ksk.tag))
    assert fragment in info.value.what


# --- broken stores -------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644], ids=["group", "other", "both"])
@pytest.mark.parametrize("role", [ZoneKeyRole.KSK, ZoneKeyRole.ZSK], ids=["ksk", "zsk"])
def test_readable_zone_key_is_refused_with_a_chmod_hint(
    store: KeyStore, role: ZoneKeyRole, mode: int
) -> None:
    key = next(k for k in store.zones.load(ZONE) if k.role is role)
    path = store.zones.directory(ZONE) / key_file(key.role, key.tag)
    path.chmod(mode)
    error = key_error(store)
    assert error.where == str(path)
    assert f"chmod 600 {path}" in error.what


def test_key_file_whose_tag_does_not_match_the_index(store: KeyStore) -> None:
    ksk = store.zones.load(ZONE)[0]
    path = store.zones.directory(ZONE) / key_file(ksk.role, ksk.tag)
    path.write_bytes(
        Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    error = key_error(store)
    assert error.where == str(path)
    assert f"index says {ksk.tag}" in error.what


def test_missing_key_file(store: KeyStore) -> None:
    zsk = store.zones.load(ZONE)[1]
    path = store.zones.directory(ZONE) / key_file(zsk.role, zsk.tag)
    path.unlink()
    assert key_error(store).where == str(path)


def test_key_file_that_is_not_a_pem(store: KeyStore) -> None:
    zsk = store.zones.load(ZONE)[1]
    path = store.zones.directory(ZONE) / key_file(zsk.role, zsk.tag)
    path.write_bytes(b"not a key\n")
    assert key_error(store).where == str(path)


CORRUPT_INDEXES = [
    pytest.param(b"{not json", id="not-json"),
    pytest.param(b"\xff\xfe\x00", id="not-utf8"),
    pytest.param(b"", id="empty"),
    pytest.param(b'{"format": "alter-publish/zone-keys/2", "keys": []}', id="unknown-format"),
    pytest.param(b'{"keys": []}', id="no-format"),
    pytest.param(b'{"format": "alter-publish/zone-keys/1", "keys": {}}', id="keys-not-a-list"),
    pytest.param(b'{"format": "alter-publish/zone-keys/1"}', id="keys-missing"),
    pytest.param(
        b"[]",
        id="json-list",
    ),
    pytest.param(
        b'"alter-publish/zone-keys/1"',
        id="json-string",
    ),
]


@pytest.mark.parametrize("data", CORRUPT_INDEXES)
def test_corrupt_index_is_a_key_store_error(store: KeyStore, data: bytes) -> None:
    index_path(store).write_bytes(data)
    error = key_error(store)
    assert error.where == str(index_path(store))
    assert error.category == "key"


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param({"tag": 1, "created": NOW, "state": "active"}, id="no-role"),
        pytest.param({"role": "csk", "tag": 1, "created": NOW, "state": "active"}, id="bad-role"),
        pytest.param({"role": "ksk", "tag": "x", "created": NOW, "state": "active"}, id="bad-tag"),
        pytest.param({"role": "ksk", "tag": None, "created": NOW, "state": "active"}, id="no-tag"),
        pytest.param({"role": "ksk", "tag": 1, "state": "active"}, id="no-created"),
    ],
)
def test_bad_index_entry_is_a_key_store_error(store: KeyStore, entry: dict[str, Any]) -> None:
    write_index(store, {"format": ZONE_KEYS_FORMAT, "keys": [entry]})
    error = key_error(store)
    assert error.where == str(index_path(store))
    assert error.what.startswith("bad key entry")


def test_corrupt_index_also_stops_generate(store: KeyStore) -> None:
    index_path(store).write_bytes(b"{not json")
    with pytest.raises(KeyStoreError) as info:
        store.zones.generate(ZONE, now=NOW)
    assert info.value.where == str(index_path(store))
