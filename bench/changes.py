"""Benchmark: the fixed cost of each kind of small change, from one signed workspace.

Builds (once) a workspace of bench/run.py's shape (NSEC3; the handle keys written by
run.py's ``fast_keygen``) and its first full sign, then keeps a snapshot of its outputs
(``build/`` as hard links: a generation is never modified once written, so the links
keep the very inodes the fingerprint recorded; ``zones/`` copied). Each timed step
restores that snapshot, makes one change and times one real ``sign --json`` (the CLI,
as a subprocess, bytecode cached; wall seconds, and the CPU seconds of it and its
workers, which the machine's other load disturbs less): nothing changed, one handle
edited, added, removed, renamed, one key rotated, the daily renewal one day after
the first sign (``renewal``) and the next day's (``renewal2``: day 1's run, untimed,
then day 2's, when the first envelopes fall due), and the full re-sign of everything,
every envelope and RRSIG expired (``resign``, not in the default kinds: about a
minute).

    python bench/changes.py --workspace DIR [--handles 100000] [--rounds 2]
                            [--src PATH ...] [--kinds none,edit,...] [--cold] [--fresh]

``--fresh`` signs the kept state again in full first, with the first ``--src``: the
snapshot keeps the memo of the run that made it, and a memo of another format reads as
none, so every change would go in full (a line after a run says so).

``--cold`` (root only) has the kernel drop its page cache before each timed run, as
a machine that reclaims cold pages leaves the key files of a daily renewal, which
were last read a lifetime ago.

With several ``--src`` (checkouts' ``src`` directories, e.g. the commit before a
change and after it) each step runs once per source, alternating, so both see the
same machine load. Prints one line per run: wall seconds and the report's stages.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.run import (
    DEFINITION,
    NOW,
    RESIGN_NOW,
    SIMULATED_TIME,
    ZONE,
    Options,
    change_handle,
    cli_env,
    edit_definition,
    fast_keygen,
    write_zone,
)

REPO = Path(__file__).resolve().parents[1]
STEP_NOW = NOW + 180
RENEWAL_NOW = NOW + 86_400 + 3 * 3600
ROTATED = "user6"
ADDED, RENAMED = "newcomer", "renamed18"
KINDS = ("none", "edit", "add", "remove", "rename", "rotate", "renewal", "renewal2")
#: Also known, not run unless named.
MORE_KINDS = ("resign",)
#: The kinds that go in full by design.
FULL_KINDS = ("resign",)


def sign(root: Path, src: Path, now: int, *extra: str) -> tuple[float, float, dict[str, object]]:
    """One ``sign --json`` with ``src`` first on the path and this checkout's templates
    (the path is part of the record: another checkout's own would mean a full run):
    (wall seconds, CPU seconds of it and its workers, zones[0])."""
    env = cli_env()
    env["PYTHONPATH"] = os.pathsep.join([str(src), *env["PYTHONPATH"].split(os.pathsep)[1:]])
    argv = [sys.executable, "-m", "alter_publish", "sign", "--json", "--now", str(now)]
    # One templates path for every source: the record of a run names it.
    argv += ["--templates", str(REPO / "templates")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [*argv, SIMULATED_TIME, *extra], cwd=root, env=env, capture_output=True, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if done.returncode != 0:
        raise SystemExit(f"sign failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return wall, cpu, json.loads(done.stdout)["zones"][0]


def build(root: Path, handles: int) -> None:
    """The workspace, its keys and its first full sign (not timed)."""
    root.mkdir(parents=True)
    write_zone(root, handles, "nsec3")
    options = Options((handles,), None, "nsec3", None, True, Path(os.devnull), True)
    fast_keygen(root, handles, options)
    sign(root, REPO / "src", NOW)


JOURNAL = f"keys/{ZONE}/.changes"


def snapshot(root: Path) -> Path:
    """Keep the signed state: build/ as hard links, zones/ copied; the rotated handle's
    key directory's times (its ``stat`` is in the fingerprint) and the key store's
    journal (a run reads what was appended since its record)."""
    saved = root.parent / f"{root.name}.snapshot"
    if not saved.exists():
        saved.mkdir()
        subprocess.run(["cp", "-al", str(root / "build"), str(saved / "build")], check=True)
        shutil.copytree(root / "zones", saved / "zones")
        info = (root / "keys" / ZONE / ROTATED).stat()
        (saved / "rotated.json").write_text(json.dumps([info.st_atime_ns, info.st_mtime_ns]))
        if (root / JOURNAL).exists():
            shutil.copy2(root / JOURNAL, saved / "journal")
    return saved


def refresh(root: Path, src: Path) -> None:
    """Drop the snapshot and sign its state again in full with ``src`` (whose memo and
    record the timed runs then start from)."""
    saved = root.parent / f"{root.name}.snapshot"
    if saved.exists():
        restore(root, saved)
        shutil.rmtree(saved)
    sign(root, src, NOW, "--full")


def restore(root: Path, saved: Path) -> None:
    """Back to the snapshot: outputs, zones/, and the key store as it was."""
    for name in ("build", "zones"):
        shutil.rmtree(root / name)
    subprocess.run(["cp", "-al", str(saved / "build"), str(root / "build")], check=True)
    shutil.copytree(saved / "zones", root / "zones")
    keys = root / "keys" / ZONE
    for name in (ADDED, RENAMED):
        shutil.rmtree(keys / name, ignore_errors=True)
    rotated = keys / ROTATED
    for path in rotated.iterdir():
        if path.name not in ("1.pem", "1.secret"):
            path.unlink()
    atime, mtime = json.loads((saved / "rotated.json").read_text())
    os.utime(rotated, ns=(atime, mtime))
    if (saved / "journal").exists():
        shutil.copy2(saved / "journal", root / JOURNAL)
    else:
        (root / JOURNAL).unlink(missing_ok=True)


def change(root: Path, kind: str, src: Path) -> tuple[int, tuple[str, ...]]:
    """Make one change; (the sign's now, its extra options)."""
    definition = root / DEFINITION
    if kind == "edit":
        change_handle(definition, "~user3")
    elif kind == "add":
        edit_definition(definition, "  - ~user21", f"  - ~user21\n  - ~{ADDED}")
    elif kind == "remove":
        edit_definition(definition, "  - ~user15", "")
    elif kind == "rename":
        edit_definition(definition, "  - ~user18", f"  - ~{RENAMED}")
    elif kind == "rotate":
        env = cli_env()
        env["PYTHONPATH"] = str(src)
        argv = [sys.executable, "-m", "alter_publish", "rotate", f"~{ROTATED}", "--zone", ZONE]
        subprocess.run(
            [*argv, "--now", str(NOW + 120), SIMULATED_TIME], cwd=root, env=env, check=True
        )
    if kind == "renewal2":
        sign(root, src, RENEWAL_NOW)  # day 1, untimed
        return RENEWAL_NOW + 86_400, ()
    if kind == "renewal":
        return RENEWAL_NOW, ()
    if kind == "resign":
        return RESIGN_NOW, ()
    return STEP_NOW, ("--create-keys",) if kind in ("add", "rename") else ()


def drop_page_cache() -> None:
    """Write back, then have the kernel drop its clean page cache, dentries and inodes."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError as exc:
        raise SystemExit(f"--cold: cannot drop the page cache: {exc.strerror} (root only)") from exc


def main() -> None:
    """Build or reuse the workspace, then time each kind of change per source."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--handles", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--src", type=Path, action="append")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--cold", action="store_true", help="drop the page cache first")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="sign the snapshot again in full first (after a change of the memo's format)",
    )
    args = parser.parse_args()
    unknown = set(args.kinds.split(",")) - set(KINDS) - set(MORE_KINDS)
    if unknown:
        parser.error(f"unknown kinds: {', '.join(sorted(unknown))}")
    root = args.workspace.resolve()
    sources = args.src or [REPO / "src"]
    if not root.exists():
        build(root, args.handles)
    elif args.fresh:
        refresh(root, sources[0])
    saved = snapshot(root)
    print(f"load {os.getloadavg()[0]:.2f}", flush=True)
    for _ in range(args.rounds):
        for kind in args.kinds.split(","):
            for src in sources:
                restore(root, saved)
                now, extra = change(root, kind, src)
                if args.cold:
                    drop_page_cache()
                wall, cpu, zone = sign(root, src, now, *extra)
                how = "unchanged" if zone.get("unchanged") else "patched"
                how = how if zone.get("unchanged") or zone.get("patched") is not None else "FULL"
                stages = " ".join(f"{k} {v:.2f}" for k, v in dict(zone["timings"]).items())
                line = f"{kind:8} {wall:6.2f} s (cpu {cpu:5.2f} s)  {how:9} {src}  [{stages}]"
                print(line, flush=True)
                if how == "FULL" and kind not in FULL_KINDS:
                    hint = "" if args.fresh else " (--fresh signs it again with the first --src)"
                    print(f"  (in full: this source reads the snapshot's memo as none?{hint})")
        print(f"load {os.getloadavg()[0]:.2f}", flush=True)
    restore(root, saved)


if __name__ == "__main__":
    main()
