"""Correctness at scale: 20,000 handles signed, DNSSEC-signed and proven, in parallel and not.

The zone is checked by independent means after `sign` wrote it: dnspython parses the
whole file (the pipeline itself no longer parses what it renders), every TXT record
is verified with the rules the reference vectors test (`verify_record`), every RRSIG
over it is validated by dnspython's own DNSSEC code, and `ldns-verify-zone` checks the
file when Debian's ldnsutils is installed. A run with one process must write exactly
the bytes a run with two wrote.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import dns.dnssec
import dns.name
import dns.node
import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.rrset
import dns.zone
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish import verify_record
from alter_publish.format.handles import parse_handle
from alter_publish.keys.store import KeyStore
from alter_publish.pipeline import sign

HANDLES = 20_000
ZONE = "scale.example"
NOW = 1_767_225_600
TIERS = ("user{n}", "svc{n}.bot", "cc-agent-{n}")

pytestmark = pytest.mark.slow


def _definition(root: Path) -> Path:
    lines = [
        f"zone: {ZONE}",
        "ttl: 1h",
        f"ns: [ns1.{ZONE}.]",
        "hosts: {ns1: [192.0.2.1]}",
        "dnssec: {enabled: true, denial: nsec3}",
        "handles:",
        f"  - handle: ~{ZONE}",
    ]
    for n in range(1, HANDLES):
        name = TIERS[n % len(TIERS)].format(n=n)
        lines.append(
            f"  - {{handle: ~{name}, resolver: 'https://{ZONE}/{n}'}}"
            if n % 10 == 0
            else f"  - ~{name}"
        )
    path = root / "zones" / f"{ZONE}.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _handle_keys(store: KeyStore, names: list[str]) -> None:
    """Real Ed25519 keys in the store's layout, written without fsync (test speed)."""
    for name in names:
        directory = store.root / ZONE / name
        directory.mkdir(parents=True)
        pem = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        _write_private(directory / "1.pem", pem)
        secret = base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=") + b"\n"
        _write_private(directory / "1.secret", secret)


@pytest.fixture(scope="module")
def signed_twice(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same workspace signed with two processes and, in a copy, with one."""
    base = tmp_path_factory.mktemp("scale")
    two = base / "two"
    definition = _definition(two)
    store = KeyStore(two / "keys")
    names = [ZONE] + [TIERS[n % len(TIERS)].format(n=n) for n in range(1, HANDLES)]
    _handle_keys(store, [parse_handle(f"~{name}").name for name in names])
    store.zones.generate(ZONE, now=NOW)
    store.logs.signer(ZONE, create=True)  # one log key for both: it signs the checkpoint
    one = base / "one"
    shutil.copytree(two, one)
    for root, jobs in ((two, 2), (one, 1)):
        report = sign(
            [root / "zones" / definition.name],
            out=root / "build",
            keys=KeyStore(root / "keys"),
            now=NOW,
            jobs=jobs,
        )
        assert report.ok, [f.detail for z in report.zones if z.proof for f in z.proof.failures]
        (zone,) = report.zones
        assert zone.proof is not None
        assert len(zone.proof.results) == HANDLES
        assert zone.proof.denial is not None
        assert zone.proof.denial.ok
    return two, one


def test_parallel_and_single_process_write_the_same_bytes(signed_twice: tuple[Path, Path]) -> None:
    two, one = signed_twice
    files = [
        f"build/{ZONE}.zone",
        f"build/{ZONE}.envelopes.json",
        f"build/{ZONE}.ds",
        f"zones/{ZONE}.log",
        f"zones/{ZONE}.state.json",
    ]
    for name in files:
        assert (two / name).read_bytes() == (one / name).read_bytes(), name


def test_every_record_verifies_by_the_vector_rules(signed_twice: tuple[Path, Path]) -> None:
    two, _ = signed_twice
    zone = dns.zone.from_file(str(two / "build" / f"{ZONE}.zone"), relativize=False)
    origin = dns.name.from_text(ZONE)
    dnskeys = zone.find_rdataset(origin, dns.rdatatype.DNSKEY)
    keys: dict[dns.name.Name, dns.node.Node | dns.rdataset.Rdataset] = {origin: dnskeys}
    published = json.loads((two / "build" / f"{ZONE}.envelopes.json").read_text())
    expected = {item["owner"]: item["text"] for item in published["handles"]}
    assert len(expected) == HANDLES
    seen = 0
    for name, node in zone.nodes.items():
        txt = node.get_rdataset(dns.rdataclass.IN, dns.rdatatype.TXT)
        if txt is None or name.labels[0] != b"_alter":
            continue
        sigs = node.get_rdataset(dns.rdataclass.IN, dns.rdatatype.RRSIG, dns.rdatatype.TXT)
        assert sigs is not None, name
        dns.dnssec.validate(  # dnspython's own validator: raises on a bad RRSIG
            dns.rrset.from_rdata_list(name, txt.ttl, list(txt)),
            dns.rrset.from_rdata_list(name, sigs.ttl, list(sigs)),
            keys,
            now=NOW,
        )
        owner = name.to_text()
        (rdata,) = list(txt)
        text = b"".join(rdata.strings).decode("ascii")
        envelope = verify_record(text, owner=owner, substrate=ZONE, now=NOW)
        assert text == expected[owner]
        assert envelope.epoch == 1
        seen += 1
    assert seen == HANDLES


@pytest.mark.skipif(shutil.which("ldns-verify-zone") is None, reason="needs Debian's ldnsutils")
def test_ldns_verify_zone_accepts_the_zone(signed_twice: tuple[Path, Path]) -> None:
    two, _ = signed_twice
    done = subprocess.run(
        ["ldns-verify-zone", "-t", "20260105000000", str(two / "build" / f"{ZONE}.zone")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
