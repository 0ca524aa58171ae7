"""Same behaviour, same bytes: signed outputs pinned by digest across refactors.

Every key is derived from a fixed seed and the clock is fixed, so a full `sign` writes the same
bytes on every run and every machine. The digests below were taken from the code before the
package was split into subpackages; a change to any output byte (zone, envelopes, DS, log,
state) fails here and must be a deliberate, documented format change. (Issue 17 changed the
envelopes deliberately: each line carries its ``tlog_proof``; the checkpoint and its history
were added, signed by a log key from a fixed seed. Issue 17's second part changed the zone and state
deliberately: the zone publishes its latest checkpoint at ``_alter-log.<zone>.``, signed.)
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
        "build/*.envelopes": "c53b35fc57851912d6c2ccd34e67fdd153679737dfc14dd7d18a14d20d48e4e4",
        "build/*/log/checkpoint": (
            "e4afc5c07d29ca7749fd4d15b71f0f3b185ddb05b40405437836c484d27204d0"
        ),
        "zones/*.checkpoints": "a518bee98a3c359bd83120d2668000e957e869f53b9bfb1a54f6afe2c32c2617",
        "build/*.zone": "4e748496e8987a34e03af2d364159a10bce006c382d342d5d664aa7702b188f4",
        "zones/*.log": "5ca330157162414a65ed9bb41d30290b21282e40ae0f9c1d6b3fc08fb96da68f",
        "zones/*.state.json": "cbd767d74df8b0ba8f793f753480888fd50e44e6f5968d0f95a49626521f5b1e",
    },
    "golden-nsec.example": {
        "build/*.ds": "5fa72fea82238501b8fb10af930cb75cc004cba0478de6490fd3345721812bc4",
        "build/*.envelopes": "0c6295413c4ae6612ea789f90fa38a66cfee0ca83aaa32b9c51f4f1e247ee4b8",
        "build/*/log/checkpoint": (
            "ef6758e760595d1c24a1d46b1fcb67d5cf5113ebb3c86f88e29f523497672764"
        ),
        "zones/*.checkpoints": "d6c2e13bc0df689b0db13d796de806ce9afd40d602c9bf0695bfbb16d4f8525a",
        "build/*.zone": "276f6ad7d530cbb3ff6dbae08f4872c929c36b950f8222e79fcab04fbdf39bcc",
        "zones/*.log": "d2e3a7ef6b3b374bb5927588d1ab4e3c8f4533e2755e69438aa2763f5379324d",
        "zones/*.state.json": "274cda0ff313ea95bd5972af3d24b4df863b9eb1e3d87b99778a368b48967607",
    },
    "golden-nsec3.example": {
        "build/*.ds": "b8f2d47b86c0cbfd3bdac998a81fb8acad5d0f97b418708784705d7b02f51d10",
        "build/*.envelopes": "178970b3844234a6e39560cdeccc871993aa3199008bb9a2b7d447429c6f79e9",
        "build/*/log/checkpoint": (
            "1e95e2ec437446621b505d0dd4b1a3445956cc4a45a637fd4291c28fed72b04d"
        ),
        "zones/*.checkpoints": "8fc62dc1675a44161b48233c04972ffc80ccf70eea4af74771b3d155029d2007",
        "build/*.zone": "44527644085fdf88b945523a6b887517e006b4e94316477dbcf01684df1bcba7",
        "zones/*.log": "b2604804367cdbecc4aca75d37fd99620e92a170b1fa2af6a9d43906407f013d",
        "zones/*.state.json": "ac72e340bf8e61bc039f8cee7c92c0e1b04266576c425da0a520046da418e534",
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
