"""Benchmark: SIGKILL `sign` at random moments of its write stage; is `build/` one set?

Makes a workspace of N handles (DNSSEC, NSEC3), signs it, then K times: changes every
envelope (the envelope lifetime), starts `sign` and kills it with SIGKILL at a moment
drawn at random from the write events a whole run shows (each temporary file,
generation being written and link, found by watching the workspace), then checks that
the zone file's serial is the envelopes document's and that `verify` passes. After the
K kills, one clean run, then every leftover of an interrupted write is listed.

    python bench/kill_sign.py [--handles 3000] [--kills 10] [--seed 20]

The CLI runs from whatever `alter_publish` Python imports: set PYTHONPATH to another
checkout's `src` to measure it.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.killing import (
    leftovers,
    make_workspace,
    one_set,
    sign_killed_at,
    verify,
)


def main() -> None:
    """Run the campaign; print one line per kill and the totals."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--handles", type=int, default=3000)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--seed", type=int, default=20)
    args = parser.parse_args()
    draw = random.Random(args.seed)  # noqa: S311 (reproducible draws, not secrets)
    with tempfile.TemporaryDirectory(prefix="kill-sign-") as temp:
        root = Path(temp) / "ws"
        started = time.monotonic()
        make_workspace(root, args.handles)
        watched = sign_killed_at(root, 0, 31)
        moments = len(watched.events)
        print(f"{args.handles} handles; a whole run shows {moments} write events:")
        print("  " + ", ".join(watched.events))
        mixed = failed = killed = 0
        for attempt in range(args.kills):
            moment = draw.randint(1, moments)
            kill = sign_killed_at(root, moment, 40 + attempt)
            killed += kill.killed
            problem = one_set(root)
            checked = verify(root)
            mixed += problem is not None
            failed += checked.returncode != 0
            at = kill.events[-1] if kill.events else "-"
            verdict = "verify ok" if checked.returncode == 0 else "VERIFY FAILED"
            print(
                f"kill {attempt + 1:2}: event {moment:2} ({at}): killed={kill.killed} "
                f"set={'one' if problem is None else 'MIXED: ' + problem}; {verdict}"
            )
        finished = sign_killed_at(root, 0, 30)
        left = leftovers(root)
        print(
            f"{killed} of {args.kills} runs killed mid-write; mixed sets: {mixed}; "
            f"verify failed: {failed}; clean run after: "
            f"{'ok' if not finished.killed else 'killed?'}, verify rc {verify(root).returncode}; "
            f"leftovers: {left or 'none'}; {time.monotonic() - started:.0f} s"
        )


if __name__ == "__main__":
    main()
