"""Benchmark: DNSSEC-sign the same N-handle zone with alter-publish and with ldns-signzone.

Generates one unsigned zone of N alter1-sized TXT records (default 10,000; bare,
bot and instrument owners, so the zone has empty non-terminals), then in one run:

- alter-publish: parse the zone text with dnspython, ``sign_records`` it (Ed25519
  KSK + ZSK, NSEC or NSEC3), and produce the signed records' text;
- ``ldns-signzone`` on the same file with Ed25519 keys from ``ldns-keygen``.

Both sign with one core. Prints a table (seconds, and ours / ldns) and checks the
output of both with ``ldns-verify-zone``.

    python bench/dnssec_vs_ldns.py [--handles 10000] [--denial nsec|nsec3|both]
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dns.zone
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.definition.model import DNSSECSpec
from alter_publish.dns.dnssec import SignatureWindow, sign_records
from alter_publish.dns.records import from_zone
from alter_publish.dns.zonekeys import ZoneKey, ZoneKeyRole

ORIGIN = "bench.example"
TIERS = ("_alter.user{n}", "_alter.svc{n}.bot", "_alter.cc-agent-{n}")
VALIDITY_SECONDS = 14 * 86400


def zone_text(handles: int) -> str:
    """An unsigned zone with ``handles`` TXT records the size of real alter1 envelopes."""
    lines = [
        f"$ORIGIN {ORIGIN}.",
        "$TTL 3600",
        f"@ IN SOA ns1.{ORIGIN}. hostmaster.{ORIGIN}. 1 7200 3600 1209600 300",
        f"@ IN NS ns1.{ORIGIN}.",
        "ns1 IN A 192.0.2.1",
    ]
    for n in range(handles):
        owner = TIERS[n % len(TIERS)].format(n=n)
        key = base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")
        sig = base64.urlsafe_b64encode(os.urandom(64)).decode().rstrip("=")
        text = f"v=alter1; h=~user{n}; e=1; k=ed25519; p={key}; t=1767225600; sig={sig}"
        lines.append(f'{owner} IN TXT "{text}"')
    return "\n".join(lines) + "\n"


def ours(text: str, denial: str, now: int) -> tuple[dict[str, float], str]:
    """Time alter-publish's signer on ``text``; returns stage seconds and the signed zone."""
    keys = (
        ZoneKey(ORIGIN, ZoneKeyRole.KSK, now, Ed25519PrivateKey.generate()),
        ZoneKey(ORIGIN, ZoneKeyRole.ZSK, now, Ed25519PrivateKey.generate()),
    )
    start = time.perf_counter()
    zone = dns.zone.from_text(text, origin=ORIGIN + ".", relativize=False)
    parsed = time.perf_counter()
    signed = sign_records(
        from_zone(zone),
        keys=keys,
        spec=DNSSECSpec(denial=denial),
        window=SignatureWindow.fresh(now, VALIDITY_SECONDS),
        dnskey_ttl=3600,
    )
    done = time.perf_counter()
    full = text + signed.records_text
    written = time.perf_counter()
    figures = {
        "parse": parsed - start,
        "sign": done - parsed,
        "text": written - done,
        "total": written - start,
        "signatures": float(signed.signatures),
    }
    return figures, full


def ldns(zone_file: Path, workdir: Path, denial: str, now: int) -> float:
    """Time ``ldns-signzone`` (keys made beforehand, not timed)."""
    keys = []
    for ksk in (True, False):
        args = ["ldns-keygen", "-a", "ED25519", *(["-k"] if ksk else []), ORIGIN]
        made = subprocess.run(args, cwd=workdir, capture_output=True, text=True, check=True)
        keys.append(str(workdir / made.stdout.strip()))
    inception = time.strftime("%Y%m%d%H%M%S", time.gmtime(now - 3600))
    expiration = time.strftime("%Y%m%d%H%M%S", time.gmtime(now + VALIDITY_SECONDS))
    nsec3 = ["-n", "-t", "0"] if denial == "nsec3" else []
    command = [
        "ldns-signzone",
        *nsec3,
        "-i",
        inception,
        "-e",
        expiration,
        "-f",
        str(workdir / f"ldns-{denial}.signed"),
        str(zone_file),
        *keys,
    ]
    start = time.perf_counter()
    subprocess.run(command, cwd=workdir, check=True, capture_output=True)
    return time.perf_counter() - start


def verified(path: Path, now: int) -> bool:
    at = time.strftime("%Y%m%d%H%M%S", time.gmtime(now))
    done = subprocess.run(
        ["ldns-verify-zone", "-t", at, str(path)], capture_output=True, text=True, check=False
    )
    return done.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--handles", type=int, default=10_000)
    parser.add_argument("--denial", choices=("nsec", "nsec3", "both"), default="both")
    args = parser.parse_args()
    if shutil.which("ldns-signzone") is None:
        sys.exit("ldns-signzone not found (Debian package ldnsutils)")
    now = int(time.time())
    text = zone_text(args.handles)
    denials = ("nsec", "nsec3") if args.denial == "both" else (args.denial,)
    print(f"zone: {args.handles} handles, {len(text) / 1e6:.1f} MB of zone text; one core each")
    header = "denial | alter-publish sign | + parse + text | ldns-signzone | ratio sign/ldns"
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory(prefix="alter-bench-") as tmp:
        workdir = Path(tmp)
        zone_file = workdir / f"{ORIGIN}.zone"
        zone_file.write_text(text)
        for denial in denials:
            figures, signed_text = ours(text, denial, now)
            ours_file = workdir / f"ours-{denial}.signed"
            ours_file.write_text(signed_text)
            theirs = ldns(zone_file, workdir, denial, now)
            print(
                f"{denial:6} | {figures['sign']:17.2f}s | {figures['total']:13.2f}s |"
                f" {theirs:12.2f}s | {figures['sign'] / theirs:.2f}"
                f" ({int(figures['signatures'])} RRSIGs)"
            )
            for label, path in (("ours", ours_file), ("ldns", workdir / f"ldns-{denial}.signed")):
                if not verified(path, now):
                    sys.exit(f"ldns-verify-zone rejected the {label} {denial} zone")
        print("ldns-verify-zone accepted every signed zone")


if __name__ == "__main__":
    main()
