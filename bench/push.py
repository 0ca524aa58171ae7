"""Benchmark: `plan` and `push` against a real primary (BIND or Knot) over TSIG.

Two scenarios, both on loopback with the server signing the zone itself (inline
signing) and the push's proof validating to the server's own DS:

- ``--scenario all`` (the default): the server starts with an empty zone; times
  the first ``plan`` (everything to add), the ``push`` of every record and a
  second ``plan`` with nothing to do.
- ``--scenario one``: the server starts serving every record ``sign`` wrote (the
  unsigned ``build/<zone>.zone`` it loads and signs); then one handle is edited
  and signed (not timed), and ``plan`` (one update), ``push`` (one UPDATE and its
  proof) and ``plan`` again are timed. Issue 16's target: plan and push of one
  change against Knot at 100,000 names, each under 5 s.

    python bench/push.py [--handles 2000] [--server named|knot] [--scenario all|one]
                         [--keep DIR] [--plans N] [--src PATH ...]

``--plans N`` times the first plan N times; with several ``--src`` (checkouts' ``src``
directories, e.g. before and after a change) each round runs each in turn, so both see
the same server and machine load; push and the last plan run the last one's.

The workspace is signed without DNSSEC of its own (the server signs). Needs bind9 or
knot (Debian packages of the same names).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from run import cli_env
from sign_zone import write_zone
from tests.integration import servers
from tests.integration.servers import AuthoritativeServer, Knot, Named, make_tsig_key

REPO = Path(__file__).resolve().parents[1]
ZONE = "bench.example"
EMPTY_ZONE = f"""\
$ORIGIN {ZONE}.
$TTL 3600
@ IN SOA ns1.{ZONE}. hostmaster.{ZONE}. 1 7200 3600 1209600 300
@ IN NS ns1.{ZONE}.
ns1 IN A 192.0.2.1
"""
CHANGED_HANDLE = "~user3"
CHANGED_RESOLVER = "https://bench.example/changed"
#: A server signing 100,000 names needs more than the test harness's 10 s to answer.
SERVER_READY_SECONDS = 600.0
SERVER_CLASSES: dict[str, type[AuthoritativeServer]] = {"named": Named, "knot": Knot}
TARGET_SECONDS = 5.0
EXIT_OK = 0
EXIT_DRIFT = 7


def cli(
    root: Path, *args: str, codes: tuple[int, ...] = (EXIT_OK,), src: Path = REPO / "src"
) -> tuple[float, str]:
    """Run the CLI of checkout ``src``; returns (wall seconds, stdout). Exits on an
    unexpected exit code."""
    env = cli_env()
    env["PYTHONPATH"] = os.pathsep.join([str(src), *env["PYTHONPATH"].split(os.pathsep)[1:]])
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "alter_publish", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if done.returncode not in codes:
        sys.exit(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
    return time.perf_counter() - start, done.stdout


def change_one(definition: Path) -> None:
    """Give CHANGED_HANDLE a new resolver."""
    lines = definition.read_text().splitlines()
    index = lines.index(f"  - {CHANGED_HANDLE}")
    lines[index] = f"  - {{handle: {CHANGED_HANDLE}, resolver: '{CHANGED_RESOLVER}'}}"
    definition.write_text("\n".join(lines) + "\n")


def changes_of(stdout: str) -> str:
    """``add N, update N, delete N (enumeration)`` from a ``plan --json``."""
    document = json.loads(stdout)
    counts = document["counts"]
    listed = ", ".join(f"{action} {number}" for action, number in counts.items())
    return f"{listed} ({document.get('enumeration')})"


def main() -> None:
    """Sign, serve, then time plan, push and plan again."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--handles", type=int, default=2_000)
    parser.add_argument("--server", choices=sorted(SERVER_CLASSES), default="named")
    parser.add_argument("--scenario", choices=("all", "one"), default="all")
    parser.add_argument("--keep", type=Path, help="reuse or create a signed workspace here")
    parser.add_argument(
        "--src",
        type=Path,
        action="append",
        help="a checkout's src to time plan with (repeat: each in turn; default this one's)",
    )
    parser.add_argument("--plans", type=int, default=1, help="rounds of the first plan")
    options = parser.parse_args()
    sources = options.src or [REPO / "src"]
    servers.SERVER_READY_SECONDS = SERVER_READY_SECONDS  # type: ignore[misc]  # Final in tests
    with tempfile.TemporaryDirectory() as temp:
        root = options.keep or Path(temp) / "ws"
        definition = root / "zones" / f"{ZONE}.yaml"
        if not definition.exists():
            root.mkdir(parents=True, exist_ok=True)
            write_zone(root, options.handles)
        # At the real time: the server signs at the real time and the proof runs then.
        # Proven, as an operator signs before a push: the change below is then patched
        # in, and plan finds the outputs as the proven run left them.
        cli(root, "sign", "--create-keys", src=sources[-1])
        tsig, key_file = make_tsig_key(Path(temp), "bench-push")
        zone_file = Path(temp) / "server.zone"
        if options.scenario == "one":
            shutil.copyfile(root / "build" / f"{ZONE}.zone", zone_file)
        else:
            zone_file.write_text(EMPTY_ZONE, encoding="utf-8")
        server_class = SERVER_CLASSES[options.server]
        workdir = Path(temp) / "server"
        started = time.perf_counter()
        server = server_class(
            workdir, ZONE, zone_file, tsig=tsig, allow_update=True, inline_signing=True
        )
        with server:
            ready = time.perf_counter() - started
            anchor = server.write_trust_anchor(Path(temp) / "server-ds.txt")
            common = ("--server", server.server_spec, "--tsig-key", str(key_file))
            push_args = (
                *("--trust-anchor", str(anchor), "--now", str(int(time.time()))),
                *("--ns", server.server_spec),  # the primary is the only name server
            )
            print(f"{options.handles} handles, {options.server} (inline signing) over TSIG")
            print(f"server ready (signed)        {ready:6.2f} s")
            if options.scenario == "one":
                _, before = cli(root, "plan", ZONE, *common, "--json")
                print(f"plan before the change: {changes_of(before)}")
                change_one(definition)
                # Signed by the checkout whose plan the verdict takes: its record names
                # that checkout's templates, as one installation's would.
                cli(root, "sign", src=sources[-1])
            for _ in range(options.plans):
                for src in sources:  # the last checkout's is the plan the verdict takes
                    first, stdout = cli(
                        root, "plan", ZONE, *common, "--json", codes=(EXIT_DRIFT,), src=src
                    )
                    label = f"  {src}" if len(sources) > 1 else ""
                    print(
                        f"plan                         {first:6.2f} s   {changes_of(stdout)}{label}"
                    )
            push, _ = cli(root, "push", ZONE, *common, *push_args, src=sources[-1])
            print(f"push (updates + proof)       {push:6.2f} s")
            second, stdout = cli(root, "plan", ZONE, *common, "--json", src=sources[-1])
            print(f"plan again (nothing to do)   {second:6.2f} s   {changes_of(stdout)}")
        if options.scenario == "one":
            for label, seconds in (("plan", first), ("push", push)):
                verdict = "PASS" if seconds < TARGET_SECONDS else "FAIL"
                print(
                    f"{verdict}: {label} of one change < {TARGET_SECONDS:.0f} s ({seconds:.2f} s)"
                )


if __name__ == "__main__":
    main()
