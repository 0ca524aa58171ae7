"""Benchmark: key lifecycle commands on a generated zone of N handles (default 10,000).

Signs the zone once (cold, not timed here: see sign_zone.py), then times the
real commands an operator runs: `keys status`, `rotate` of one handle and the
`sign` that publishes it, `revoke` of its old epoch and its `sign`, and a full
ZSK rollover (rollover, sign, step, sign, step, sign) with the clock stepped
past each wait.

    python bench/lifecycle.py [--handles 10000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sign_zone import NOW, write_zone

ZONE = "bench.example"
DEFINITION = f"zones/{ZONE}.yaml"


def at(now: int) -> tuple[str, str, str]:
    """``--now NOW`` for a command that writes: the bench runs at a simulated time."""
    return ("--now", str(now), "--allow-simulated-time")


def cli(root: Path, *args: str) -> tuple[float, str]:
    """Run the CLI once; returns (wall seconds, stdout). Exits on failure."""
    command = [sys.executable, "-m", "alter_publish", *args]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return wall, done.stdout


def not_before(root: Path, now: int) -> int:
    """When the running rollover's next step is allowed."""
    _, out = cli(root, "dnssec", "status", ZONE, "--json", "--now", str(now))
    step = json.loads(out)["next_step"]
    return int(step["not_before"])


def main() -> None:
    """Generate, sign, then time each lifecycle command."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--handles", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, help="workspace to keep (default: temporary)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        root = options.keep or Path(temp)
        root.mkdir(parents=True, exist_ok=True)
        write_zone(root, options.handles)
        now = NOW
        cold, _ = cli(root, "sign", "--create-keys", *at(now), DEFINITION)
        print(f"{options.handles} handles; cold sign {cold:.2f} s (not part of the figures)")
        rows: list[tuple[str, float]] = []
        now += 60
        rows.append(("keys status --json", cli(root, "keys", "status", "--json", DEFINITION)[0]))
        rows.append(("rotate ~user3", cli(root, "rotate", "~user3", "--zone", ZONE, *at(now))[0]))
        rows.append(("sign (publish epoch 2)", cli(root, "sign", *at(now), DEFINITION)[0]))
        now += 60
        revoke = ("revoke", "~user3", "--zone", ZONE, "--epoch", "1", *at(now))
        rows.append(("revoke ~user3 --epoch 1", cli(root, *revoke)[0]))
        rows.append(("sign (publish revocation)", cli(root, "sign", *at(now), DEFINITION)[0]))
        now += 60
        rollover = ("dnssec", "rollover", ZONE, "zsk", *at(now))
        rows.append(("dnssec rollover zsk", cli(root, *rollover)[0]))
        rows.append(("sign (ZSK pre-published)", cli(root, "sign", *at(now), DEFINITION)[0]))
        for label in ("activate", "remove old"):
            now = not_before(root, now)
            rows.append((f"dnssec step ({label})", cli(root, "dnssec", "step", ZONE, *at(now))[0]))
            rows.append((f"sign ({label})", cli(root, "sign", *at(now), DEFINITION)[0]))
        for label, seconds in rows:
            print(f"{label:28} {seconds:6.2f} s")


if __name__ == "__main__":
    main()
