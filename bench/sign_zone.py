"""Benchmark: `alter-publish sign` on a generated zone of N handles (default 10,000).

Runs the real command in a fresh temporary workspace, twice: a cold run that
creates every key and signs every envelope, then a warm run with nothing
changed. Prints wall time, the per-stage timings the command reports and the
peak resident memory of each run.

    python bench/sign_zone.py [--handles 10000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NOW = 1_767_225_600
TIERS = ("user{n}", "svc{n}.bot", "cc-agent-{n}")


def write_zone(root: Path, handles: int) -> Path:
    """A zone definition with ``handles`` handles of mixed tiers."""
    lines = [
        "zone: bench.example",
        "ttl: 1h",
        "ns: [ns1.bench.example.]",
        "hosts: {ns1: [192.0.2.1]}",
        "handles:",
        "  - handle: ~bench.example",
    ]
    for n in range(1, handles):
        name = TIERS[n % len(TIERS)].format(n=n)
        if n % 10 == 0:
            lines.append(f"  - {{handle: ~{name}, resolver: 'https://bench.example/{n}'}}")
        else:
            lines.append(f"  - ~{name}")
    path = root / "zones" / "bench.example.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def run(root: Path, *args: str) -> tuple[float, float, dict[str, object]]:
    """Run the CLI once; returns (wall seconds, peak RSS MiB, JSON report)."""
    simulated = ("--now", str(NOW), "--allow-simulated-time")  # NOW is in the past
    command = [sys.executable, "-m", "alter_publish", "sign", "--json", *simulated, *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    peak = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 1024
    if done.returncode != 0:
        sys.exit(f"sign failed ({done.returncode}): {done.stderr.strip()}")
    report: dict[str, object] = json.loads(done.stdout)
    return wall, peak, report


def main() -> None:
    """Generate, sign twice, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--handles", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, help="workspace to keep (default: temporary)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        root = options.keep or Path(temp)
        root.mkdir(parents=True, exist_ok=True)
        write_zone(root, options.handles)
        print(f"sign of {options.handles} handles in {root}")
        runs = (
            ("cold (create keys, sign all)", ("--create-keys",)),
            ("warm (nothing changed)", ()),
        )
        for label, args in runs:
            wall, peak, report = run(root, *args)
            zone = report["zones"][0]  # type: ignore[index]
            timings = " ".join(f"{k}={v:.2f}s" for k, v in zone["timings"].items())
            print(
                f"{label:30} wall {wall:6.2f} s  peak RSS {peak:6.0f} MiB  "
                f"signed {zone['signed']}  reused {zone['reused']}  {timings}"
            )


if __name__ == "__main__":
    main()
