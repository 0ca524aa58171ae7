"""Benchmark: the daily renewal run at steady state on a generated zone (NSEC3).

Signs the zone of bench/run.py's shape once at NOW (full, timed), then runs `sign`
(the library call the CLI makes) once a day at 03:00 for the days given, each timed
as wall seconds with its stage timings; a day written ``7F`` is a full run
(``incremental=False``: what every daily run was before renewals were patched).
The workspace is kept (``--keep``) so later invocations continue from the last day.

    nice python bench/renewal.py --handles 100000 --days 1,2,3,4F,5 [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.run import DEFINITION, NOW, write_zone

from alter_publish.keys.store import KeyStore
from alter_publish.pipeline import sign

DAY_SECONDS = 86_400


def _run(root: Path, now: int, *, incremental: bool, jobs: int) -> str:
    started = time.perf_counter()
    report = sign(
        [root / DEFINITION],
        out=root / "build",
        keys=KeyStore(root / "keys"),
        now=now,
        create_keys=True,
        incremental=incremental,
        jobs=jobs,
    )
    seconds = time.perf_counter() - started
    zone = report.zones[0]
    kind = "full" if zone.patched is None else "patched"
    renewed = zone.dnssec.get("renewed") if zone.dnssec else None
    stages = " ".join(f"{name}={value:.2f}" for name, value in zone.timings)
    return (
        f"{kind} {seconds:.2f}s ok={report.ok} envelopes={zone.signed} "
        f"rrsigs renewed={renewed} [{stages}]"
    )


def main() -> None:
    """Sign once, then the daily runs; one line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--handles", type=int, default=10_000)
    parser.add_argument("--days", default="1,2,3,4,5,6,7F,8,9")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="alter-renewal-"))
    if not (root / "build").exists():
        root.mkdir(parents=True, exist_ok=True)
        write_zone(root, args.handles, "nsec3")
        print("first sign:", _run(root, NOW, incremental=False, jobs=args.jobs), flush=True)
    for item in args.days.split(","):
        day = int(item.rstrip("F"))
        now = NOW + day * DAY_SECONDS + 3 * 3600
        line = _run(root, now, incremental=not item.endswith("F"), jobs=args.jobs)
        print(f"T+{day}d {line}", flush=True)
    print(f"workspace: {root}")


if __name__ == "__main__":
    main()
