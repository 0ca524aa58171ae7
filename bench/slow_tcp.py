"""Benchmark: ordinary TCP queries to `serve` while slow clients hold and re-open connections.

Starts `python -m alter_publish serve` on a small zone (with any extra options given
after `--`), reads its RSS, starts the flood (N clients, each sending a 0xffff length
prefix then one byte a second, reconnecting at once when dropped, in a process of
their own), then asks Q ordinary TCP queries, one a second, each with a 3 s timeout,
and prints how many were answered, their latency and the server's RSS before,
during (peak, sampled every 200 ms) and after.

    python bench/slow_tcp.py [--clients 100] [--queries 10] [-- --tcp-io-timeout 500 ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.slowclients import ServeProcess, SlowFlood, probe, wait_for_flood, write_zone


def main() -> None:
    """Run the flood and the probe; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=3.0)
    parser.add_argument("serve_options", nargs="*", help="options for serve, after --")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        server = ServeProcess(write_zone(Path(directory)), *args.serve_options)
        try:
            time.sleep(0.5)
            before = server.rss_kib()
            flood = SlowFlood(server.address, args.clients)
            peak = [before]
            done = threading.Event()

            def sample() -> None:
                while not done.wait(0.2):
                    peak[0] = max(peak[0], server.rss_kib())

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            try:
                wait_for_flood(flood, args.clients)
                result = probe(server.address, queries=args.queries, timeout=args.timeout)
                connects = flood.connects.value
            finally:
                done.set()
                sampler.join()
                flood.close()
            after = server.rss_kib()
        finally:
            server.close()
    options = " ".join(args.serve_options) or "(defaults)"
    print(f"serve {options}; {args.clients} slow clients, {connects} connections opened")
    print(f"TCP queries: {result.summary()}")
    print(f"server RSS KiB: before {before}, peak during {peak[0]}, after {after}")


if __name__ == "__main__":
    main()
