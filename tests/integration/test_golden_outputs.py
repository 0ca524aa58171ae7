"""Same behaviour, same bytes: signed outputs pinned by digest across refactors.

Every key is derived from a fixed seed and the clock is fixed, so a full `sign` writes the same
bytes on every run and every machine. The digests below were taken from the code before the
package was split into subpackages; a change to any output byte (zone, envelopes, DS, log,
state) fails here and must be a deliberate, documented format change. (Issue 17 changed the
envelopes deliberately: each line carries its ``tlog_proof``; the checkpoint and its history
were added, signed by a log key from a fixed seed. Issue 17's second part changed the zone
and state deliberately: the zone publishes its latest checkpoint at ``_alter-log.<zone>.``,
signed.)

Changed deliberately (issue 16, spread renewals): envelope ``x=`` and RRSIG windows now
fall on each name's renewal slot (docs/dnssec.md, 'Spread renewals'), which changes the
zone, envelopes, log and state of every case; the DS files are unchanged.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dns.dnssec
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.DNSKEY
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "zones" / "example.com.yaml"
NOW = 1_767_225_600  # 2026-01-01T00:00:00Z
GENERATED_HANDLES = 2_000
TIERS = ("user{n}", "svc{n}.bot", "cc-agent-{n}")

#: zone -> output (relative to the workspace, ``*`` for the zone) -> SHA-256 of its bytes.
GOLDEN: dict[str, dict[str, str]] = {
    "example.com": {
        "build/*.ds": "2542742d841e4216e6284b17402cf9c185500d8ee2935a5a97a5981cff58709e",
        "build/*.envelopes": "6fcb89cb02b0aed3ee170b10c57a4120358cb7e6128f58056908a443bfabaa5d",
        "build/*/log/checkpoint": (
            "e9d06daa861dc5624550c73b43a9027368948bcb5f3f4ea29d59f6ace64acea2"
        ),
        "zones/*.checkpoints": "e9b25275fbfb830d1e9c857afad8af0317f1d3920f31f06a90fda47d5778fcc6",
        "build/*.zone": "b32c9b6ec9c5a22810a64a5e017004b95ccc1b4e339c25a7701df1d1faae54e7",
        "zones/*.log": "a4bd56963e34aced832fc64db980533beb32cc5d6299e3d6139997424a4e70bc",
        "zones/*.state.json": "fec3447ce74419c1c0d337a834b2a214f667792fb53091babd1ff957177e3e5c",
    },
    "golden-nsec.example": {
        "build/*.ds": "5fa72fea82238501b8fb10af930cb75cc004cba0478de6490fd3345721812bc4",
        "build/*.envelopes": "1b8792614368aba7a523141765cbd09b64e4b8d215aa190b20e4df0b96827f43",
        "build/*/log/checkpoint": (
            "11b2826abef38d2f2586397cde91385e432f191bd17c2d744c132fb3cce2e758"
        ),
        "zones/*.checkpoints": "d6c1ed1b52169312dff37166c80205e8e9dab7d0f9203f23afe8b4631111f74d",
        "build/*.zone": "cbc534320d87bcb7b1a225b71e55a75286f519c61fc8b24ef2b72b178daf9d7d",
        "zones/*.log": "a1b956ebe45df1f0aa813f2e7e0bf31e75750f50dd83e9b65bddffc5143a5775",
        "zones/*.state.json": "547f09321b801e65a0391d7cdbf7f36753979e9195fdf5ec243b66397f77838b",
    },
    "golden-nsec3.example": {
        "build/*.ds": "b8f2d47b86c0cbfd3bdac998a81fb8acad5d0f97b418708784705d7b02f51d10",
        "build/*.envelopes": "144f26fe0bbc8c7ede44f22a460a2e9b7051be362302eca518eef34f794c3254",
        "build/*/log/checkpoint": (
            "4fbcdf97741ea224395cb3999d7f1f611d5dac605f6e900ad421ba23ba5e651e"
        ),
        "zones/*.checkpoints": "bc3520043f925ce7ba36f307a49b8cee99d1301805385f6c456b901b1a1d9c96",
        "build/*.zone": "266d5416b1d66a0cd3573d5e38d007f5bedca79d03263483af98fb83d70b2d58",
        "zones/*.log": "b96348003e7c307f51b6433ce2597f0ed043676dc001d967854c55c58e410478",
        "zones/*.state.json": "3812375c3d00bc15ac9abd90cf49c96f60285da16838772c031cbcba4101a121",
    },
}


def _seed(*parts: str) -> bytes:
    return hashlib.sha256("\0".join(("alter-publish golden", *parts)).encode()).digest()


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _pem(seed: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(seed).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _public(seed: bytes) -> bytes:
    return (
        Ed25519PrivateKey.from_private_bytes(seed)
        .public_key()
        .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _write_keys(keys: Path, zone: str, handle_dirs: list[str]) -> None:
    """Epoch-1 handle keys, a KSK and ZSK and the log key in the key store's layout, from
    fixed seeds."""
    _write_private(keys / zone / "_log" / "current.pem", _pem(_seed(zone, "log")))
    for name in handle_dirs:
        _write_private(keys / zone / name / "1.pem", _pem(_seed(zone, name, "key")))
        secret = _b64url(_seed(zone, name, "secret")).encode() + b"\n"
        _write_private(keys / zone / name / "1.secret", secret)
    entries = []
    for role, flags in (("ksk", 257), ("zsk", 256)):
        seed = _seed(zone, role)
        public = _public(seed)
        dnskey = dns.rdata.from_text(
            dns.rdataclass.IN,
            dns.rdatatype.DNSKEY,
            f"{flags} 3 15 {base64.b64encode(public).decode()}",
        )
        assert isinstance(dnskey, dns.rdtypes.ANY.DNSKEY.DNSKEY)
        tag = dns.dnssec.key_id(dnskey)
        file = f"{role}-{tag:05d}.pem"
        _write_private(keys / zone / "_dnssec" / file, _pem(seed))
        entries.append(
            {
                "algorithm": 15,
                "created": NOW,
                "file": file,
                "public_key": _b64url(public),
                "role": role,
                "since": NOW,
                "state": "active",
                "tag": tag,
            }
        )
    index = {"format": "alter-publish/zone-keys/1", "keys": entries}
    (keys / zone / "_dnssec" / "keys.json").write_text(json.dumps(index, indent=2) + "\n")


def _generated(zone: str, denial: str) -> tuple[str, list[str]]:
    lines = [
        f"zone: {zone}",
        "ttl: 1h",
        f"ns: [ns1.{zone}.]",
        "hosts: {ns1: [192.0.2.1]}",
        f"dnssec: {{enabled: true, denial: {denial}}}",
        "handles:",
        f"  - handle: ~{zone}",
    ]
    names = [zone]
    for n in range(1, GENERATED_HANDLES):
        name = TIERS[n % len(TIERS)].format(n=n)
        names.append(name)
        lines.append(
            f"  - {{handle: ~{name}, resolver: 'https://{zone}/{n}'}}"
            if n % 10 == 0
            else f"  - ~{name}"
        )
    return "\n".join(lines) + "\n", names


CASES = {
    "example.com": None,
    "golden-nsec.example": "nsec",
    "golden-nsec3.example": "nsec3",
}


def _workspace(root: Path, zone: str) -> Path:
    denial = CASES[zone]
    definition = root / "zones" / f"{zone}.yaml"
    definition.parent.mkdir(parents=True)
    if denial is None:
        shutil.copy(EXAMPLE, definition)
        handle_dirs = ["example.com", "blake", "drew", "deploy.bot", "cc-opus-4-7"]
    else:
        text, names = _generated(zone, denial)
        definition.write_text(text, encoding="utf-8")
        handle_dirs = names
    _write_keys(root / "keys", zone, handle_dirs)
    return definition


def _path(name: str, zone: str) -> str:
    path = name.replace("*", zone)
    return path + ".json" if path.endswith(".envelopes") else path


def _outputs(root: Path, zone: str) -> dict[str, str]:
    names = ["build/*.zone", "build/*.envelopes", "build/*.ds", "zones/*.log"]
    names += ["zones/*.state.json", "zones/*.checkpoints", "build/*/log/checkpoint"]
    return {
        name: hashlib.sha256((root / _path(name, zone)).read_bytes()).hexdigest() for name in names
    }


@pytest.mark.parametrize("zone", list(CASES), ids=list(CASES))
def test_a_full_sign_writes_the_golden_bytes(tmp_path: Path, zone: str) -> None:
    definition = _workspace(tmp_path, zone)
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "alter_publish",
            "sign",
            str(definition),
            "--keys",
            str(tmp_path / "keys"),
            "--out",
            str(tmp_path / "build"),
            "--now",
            str(NOW),
            "--allow-simulated-time",
            "--jobs",
            "2",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    assert _outputs(tmp_path, zone) == GOLDEN[zone]
