"""Benchmark: `plan` and `push` of N handles to a BIND primary over TSIG (default 2,000).

Signs a generated zone (not timed), starts `named` on loopback with an empty zone
that accepts TSIG-signed updates (not signing it: the proof runs with
--allow-insecure), then times: the first `plan` (AXFR), the `push` (UPDATE messages
plus the proof against the server), and a second `plan` that finds nothing to do.

    python bench/push.py [--handles 2000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sign_zone import NOW, write_zone
from tests.integration.servers import Named, make_tsig_key

ZONE = "bench.example"
EMPTY_ZONE = f"""\
$ORIGIN {ZONE}.
$TTL 3600
@ IN SOA ns1.{ZONE}. hostmaster.{ZONE}. 1 7200 3600 1209600 300
@ IN NS ns1.{ZONE}.
ns1 IN A 192.0.2.1
"""


def cli(root: Path, *args: str, codes: tuple[int, ...] = (0,)) -> float:
    """Run the CLI; returns wall seconds. Exits on an unexpected exit code."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "alter_publish", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in codes:
        sys.exit(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
    return time.perf_counter() - start


def main() -> None:
    """Sign, serve, then time plan, push and plan again."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--handles", type=int, default=2_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / "ws"
        root.mkdir()
        write_zone(root, options.handles)
        cli(root, "sign", "--create-keys", "--no-verify", "--now", str(NOW))
        tsig, key_file = make_tsig_key(Path(temp), "bench-push")
        zone_file = Path(temp) / "empty.zone"
        zone_file.write_text(EMPTY_ZONE, encoding="utf-8")
        with Named(Path(temp) / "named", ZONE, zone_file, tsig=tsig, allow_update=True) as server:
            common = ("--server", server.server_spec, "--tsig-key", str(key_file))
            only = ("--ns", server.server_spec)  # the primary is the only name server
            first = cli(root, "plan", ZONE, *common, codes=(7,))
            push = cli(root, "push", ZONE, *common, *only, "--allow-insecure", "--now", str(NOW))
            second = cli(root, "plan", ZONE, *common)
        print(f"{options.handles} handles to named over TSIG")
        print(f"plan (AXFR, all to add)     {first:6.2f} s")
        print(f"push (updates + proof)      {push:6.2f} s")
        print(f"plan again (nothing to do)  {second:6.2f} s")


if __name__ == "__main__":
    main()
