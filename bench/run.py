"""Benchmark: the scale targets, measured end to end with the real CLI at each size.

For each size (default 1,000, 10,000 and 100,000 handles), in a fresh workspace:
key generation (not a target), a full first sign of every envelope with existing
keys, a sign with nothing changed (and a check that no output was rewritten), a
sign after one handle changed, a sign after one handle key was rotated, then the
same records DNSSEC-signed by ``ldns-signzone`` and ``dnssec-signzone``, the
Ed25519 floor from ``openssl speed``, and ``dnsperf`` against ``alter-publish
serve``. Prints a table as it goes and writes bench/RESULTS.md (after every size).

    python bench/run.py [--sizes 1000,10000,100000] [--jobs N] [--denial nsec|nsec3]
                        [--keep DIR] [--skip-tools] [--output bench/RESULTS.md]

Runs only the CLI, as subprocesses (``python -m alter_publish``); imports nothing
from the package. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import importlib.metadata
import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, ClassVar

import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.update

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration import servers  # the test harness's servers
from tests.integration.servers import Knot, make_tsig_key

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUTPUT = REPO / "bench" / "RESULTS.md"
ZONE = "bench.example"
DEFINITION = f"zones/{ZONE}.yaml"
ZONE_FILE = f"build/{ZONE}.zone"
ENVELOPES_FILE = f"build/{ZONE}.envelopes.json"
NOW = 1_767_225_600
CHANGE_NOW = NOW + 60
ROTATE_NOW = NOW + 120
NAMES_NOW = NOW + 180  # handles added, removed, renamed: one step a minute after this
ADDED_HANDLE = "~newcomer"
ADDED_AFTER = "~user21"  # plain entries (see write_zone): one line each
REMOVED_HANDLE = "~user15"
RENAMED_HANDLE = ("~user18", "~renamed18")
#: Every command that writes runs at a simulated time (NOW is in the past).
SIMULATED_TIME = "--allow-simulated-time"
TIERS = ("user{n}", "svc{n}.bot", "cc-agent-{n}")
CHANGED_HANDLE = "~user3"
ROTATED_HANDLE = "~user6"
# The twins of the timed steps, which measure memory (see ``twin``).
TWIN_CHANGED_HANDLE = "~user9"
TWIN_ROTATED_HANDLE = "~user12"
TWIN_DELAY_SECONDS = 30
CHANGED_RESOLVER = "https://bench.example/changed"
MIN_HANDLES = 10
#: At BIG_SIZE handles and more the bench writes the handle keys itself (keygen is not
#: a target) and runs only issue 16's steps at that size (see ``run_big``).
BIG_SAMPLE_INTERVAL_SECONDS = 1.0
#: The 1,000,000-handle full sign is killed past this summed Pss (the target is 8 GiB;
#: the machine's 24 GiB are shared with other work); ``--memory-limit-gib`` moves it.
BIG_MEMORY_LIMIT_MIB = 10_240.0
PKCS8_ED25519_PREFIX = bytes.fromhex("302e020100300506032b657004220420")
#: The PEM label of a PKCS#8 key (spelled apart: no key header appears in the source).
PEM_LABEL = b"PRIVATE " + b"KEY"
SIGNATURE_VALIDITY_SECONDS = 14 * 86400
SAMPLE_INTERVAL_SECONDS = 0.05
SERVER_START_TIMEOUT_SECONDS = 1200.0
SERVER_POLL_SECONDS = 0.05
#: issue 16: serve of a 100,000-handle zone answers within this of its start.
TARGET_SERVE_START_SECONDS = 5.0
SERVER_STOP_TIMEOUT_SECONDS = 10.0
DNSPERF_SECONDS = 10
OPENSSL_SPEED_SECONDS = 3
MIB = 1024 * 1024
TARGET_SIZE = 100_000
TARGET_SIGN_SECONDS = 45.0
TARGET_PEAK_MIB = 1024.0
TARGET_DNSSEC_RATIO = 1.0
TARGET_ONE_CHANGE_SECONDS = 3.0
TARGET_ONE_NAME_SECONDS = 1.0
TARGET_NO_CHANGE_SECONDS = 2.0
TARGET_QPS = 10_000.0
DAY_SECONDS = 86_400
#: The definition's default envelope lifetime (definition/model.py DEFAULT_LIFETIME_SECONDS).
ENVELOPE_LIFETIME_SECONDS = 30 * DAY_SECONDS
#: Daily renewal runs at steady state: signs this many days after the first sign.
RENEWAL_DAYS = (1, 2)
#: The full re-sign: every envelope and RRSIG expired (outputs present).
RESIGN_NOW = NOW + ENVELOPE_LIFETIME_SECONDS + DAY_SECONDS
#: Its sampled twin: everything expired once more.
RESIGN_TWIN_NOW = RESIGN_NOW + ENVELOPE_LIFETIME_SECONDS + DAY_SECONDS
#: issue 16's targets (bench/README.md): at 100,000 handles ...
TARGET_DAILY_SECONDS = 3.0
TARGET_RESIGN_SECONDS = 30.0
TARGET_ISSUE_NO_CHANGE_SECONDS = 0.5
#: ... and at 1,000,000 handles.
BIG_SIZE = 1_000_000
TARGET_BIG_SIGN_SECONDS = 360.0
TARGET_BIG_PEAK_MIB = 8192.0
TARGET_BIG_ADD_SECONDS = 2.0
KNOT_UPDATES = 5
KNOT_READY_SECONDS = 1800.0
KNOT_POLL_SECONDS = 0.01
KNOT_SIGNED_TIMEOUT_SECONDS = 60.0
DNSSEC_TYPES = frozenset({"RRSIG", "NSEC", "NSEC3", "NSEC3PARAM", "DNSKEY"})
CLASSES = frozenset({"IN", "CH", "HS", "CS"})
STAGE_ORDER = (
    "load",
    "keys",
    "envelopes",
    "keys+envelopes",
    "zone keys",
    "render",
    "dnssec",
    "parse",
    "proof",
    "write",
    "unchanged",
)
PACKAGES = {
    "ldns-signzone": "ldnsutils",
    "ldns-keygen": "ldnsutils",
    "ldns-verify-zone": "ldnsutils",
    "kzonesign": "knot-dnssecutils",
    "dnssec-signzone": "bind9-utils",
    "dnssec-keygen": "bind9-utils",
    "dnsperf": "dnsperf",
    "knotd": "knot",
    "knotc": "knot",
    "openssl": "openssl",
}
QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')


class BenchError(Exception):
    """A step failed; the message is printed and the run exits non-zero."""


class MemoryGuard(Exception):  # noqa: N818 (not an error of the bench: a stop)
    """A measured command passed its memory limit and was killed."""

    def __init__(self, seconds: float, size: int, wall: float) -> None:
        super().__init__(f"killed at {size / MIB:,.0f} MiB after {seconds:.0f} s")
        self.seconds = seconds
        self.size = size
        self.wall = wall


# ---------------------------------------------------------------- measuring


@dataclass(frozen=True, slots=True)
class Run:
    """One finished command: its wall time, memory, exit status and output."""

    argv: tuple[str, ...]
    wall_seconds: float
    peak_tree_bytes: int
    maxrss_bytes: int
    returncode: int
    stdout: str
    stderr: str

    @property
    def peak_mib(self) -> float:
        """Peak of the summed Pss over the process tree, MiB."""
        return self.peak_tree_bytes / MIB

    @property
    def maxrss_mib(self) -> float:
        """ru_maxrss of the main process (largest of it and its reaped children), MiB."""
        return self.maxrss_bytes / MIB

    def memory_of(self, twin: Run) -> Run:
        """This run's time with ``twin``'s memory (see ``twin``)."""
        return dataclasses.replace(
            self, peak_tree_bytes=twin.peak_tree_bytes, maxrss_bytes=twin.maxrss_bytes
        )


def process_parents() -> dict[int, int]:
    """Map every live pid to its parent pid, from /proc/<pid>/stat."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1:
            parents[int(entry.name)] = int(fields[1])
    return parents


def resident_bytes(pid: int) -> int:
    """Proportional set size (Pss) of one process in bytes (0 once it is gone).

    Workers are forked and share copy-on-write pages with their parent; summing VmRSS
    over the tree would count those pages once per process, Pss counts them once.
    """
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    for line in rollup.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return 0


def tree_pids(root: int) -> list[int]:
    """``root`` and all its live descendants."""
    children: dict[int, list[int]] = {}
    for pid, parent in process_parents().items():
        children.setdefault(parent, []).append(pid)
    found = []
    pending = [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, ()))
    return found


def tree_resident_bytes(root: int) -> int:
    """Sum of Pss over ``root`` and all its descendants."""
    return sum(resident_bytes(pid) for pid in tree_pids(root))


class TreeSampler(threading.Thread):
    """Samples the summed Pss of a process tree every 50 ms; keeps the peak."""

    def __init__(
        self, root: int, interval: float = SAMPLE_INTERVAL_SECONDS, limit_bytes: int | None = None
    ) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.interval = interval
        #: Past this summed Pss the tree is killed (SIGKILL, by pid) and ``stopped_at``
        #: keeps the figure: the 1,000,000-handle run must not take the machine's memory.
        self.limit_bytes = limit_bytes
        self.stopped_at: tuple[float, int] | None = None
        self._begun = time.perf_counter()
        self.peak_bytes = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        """Sample until stopped."""
        while True:
            now = tree_resident_bytes(self.root)
            self.peak_bytes = max(self.peak_bytes, now)
            if self.limit_bytes is not None and now > self.limit_bytes:
                self.stopped_at = (time.perf_counter() - self._begun, now)
                for pid in reversed(tree_pids(self.root)):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                return
            if self.interval >= 1.0:
                elapsed = time.perf_counter() - self._begun
                print(f"    ... {elapsed:6.0f} s, Pss {now / MIB:,.0f} MiB", flush=True)
            if self._stop_event.wait(self.interval):
                return

    def stop(self) -> None:
        """Stop sampling and wait for the thread."""
        self._stop_event.set()
        self.join()


def read_back(stream: IO[bytes]) -> str:
    """Everything written to a temporary output file."""
    stream.seek(0)
    return stream.read().decode("utf-8", errors="replace")


def measure(
    argv: Sequence[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    *,
    sample: bool = True,
    interval: float = SAMPLE_INTERVAL_SECONDS,
    limit_bytes: int | None = None,
) -> Run:
    """Run one command; wall time, peak tree Pss (when ``sample``), ru_maxrss, output."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err)
        sampler = TreeSampler(process.pid, interval, limit_bytes)
        if sample:
            sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        if sample:
            sampler.stop()
        process.returncode = os.waitstatus_to_exitcode(status)
        if sampler.stopped_at is not None:
            seconds, size = sampler.stopped_at
            raise MemoryGuard(seconds, size, wall)
        return Run(
            argv=tuple(argv),
            wall_seconds=wall,
            peak_tree_bytes=sampler.peak_bytes,
            maxrss_bytes=usage.ru_maxrss * 1024,
            returncode=process.returncode,
            stdout=read_back(out),
            stderr=read_back(err),
        )


def cli_env() -> dict[str, str]:
    """The environment for CLI runs: this checkout's src first on the path, and bytecode
    cached as an installed package has it (with ``PYTHONDONTWRITEBYTECODE`` set, every
    run compiled the package's ~130 modules again: 0.3-0.4 s of each command here)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    paths = [str(REPO / "src"), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def cli(
    root: Path,
    *args: str,
    sample: bool = True,
    interval: float = SAMPLE_INTERVAL_SECONDS,
    limit_bytes: int | None = None,
) -> Run:
    """Run ``alter-publish ARGS`` in ``root``, measured (memory only when ``sample``).

    Raises:
        BenchError: the command exited non-zero (its stderr is in the message).
    """
    argv = [sys.executable, "-m", "alter_publish", *args]
    run = measure(argv, root, cli_env(), sample=sample, interval=interval, limit_bytes=limit_bytes)
    if run.returncode != 0:
        raise BenchError(
            f"alter-publish {shlex.join(args)} failed (exit {run.returncode}) in {root}:\n"
            f"{run.stderr.rstrip()}"
        )
    return run


def tool(argv: Sequence[str], cwd: Path) -> Run:
    """Run another tool, measured.

    Raises:
        BenchError: it exited non-zero.
    """
    # One process each: its ru_maxrss is its peak, no sampler to slow it (see run_size).
    run = measure(argv, cwd, sample=False)
    run = dataclasses.replace(run, peak_tree_bytes=run.maxrss_bytes)
    if run.returncode != 0:
        raise BenchError(
            f"{shlex.join(argv)} failed (exit {run.returncode}):\n"
            f"{(run.stderr or run.stdout).rstrip()[-2000:]}"
        )
    return run


def missing(*tools: str) -> str | None:
    """A note naming the Debian packages of the tools not installed, or None."""
    absent = [name for name in tools if shutil.which(name) is None]
    if not absent:
        return None
    packages = sorted({PACKAGES.get(name, name) for name in absent})
    return f"{', '.join(absent)} not found (Debian package {', '.join(packages)}): skipped"


# ---------------------------------------------------------------- workspace


def write_zone(root: Path, handles: int, denial: str) -> Path:
    """A DNSSEC zone definition of ``handles`` handles, mixed like bench/sign_zone.py."""
    lines = [
        f"zone: {ZONE}",
        "ttl: 1h",
        f"ns: [ns1.{ZONE}.]",
        "hosts: {ns1: [192.0.2.1]}",
        f"dnssec: {{enabled: true, denial: {denial}}}",
        "handles:",
        f"  - handle: ~{ZONE}",
    ]
    for n in range(1, handles):
        name = TIERS[n % len(TIERS)].format(n=n)
        if n % 10 == 0:
            lines.append(f"  - {{handle: ~{name}, resolver: 'https://{ZONE}/{n}'}}")
        else:
            lines.append(f"  - ~{name}")
    path = root / DEFINITION
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def handle_names(handles: int) -> Iterator[str]:
    """The handles ``write_zone`` wrote after the zone's own, without the ``~``."""
    for n in range(1, handles):
        yield TIERS[n % len(TIERS)].format(n=n)


def fast_keygen(root: Path, handles: int, options: Options) -> tuple[float, str]:
    """Make every key as ``sign --create-keys`` would, faster: the CLI makes the zone's
    keys and the first handles' (a definition of three handles), then this writes
    ``keys/<zone>/<handle>/1.pem`` (unencrypted PKCS#8 Ed25519, 0600) and ``1.secret``
    (base64url of 32 random octets, 0600) in 0700 directories for the rest, without
    fsync. Returns (wall seconds, detail).
    """
    start = time.perf_counter()
    definition = root / DEFINITION
    full = definition.read_text()
    lines = full.splitlines()
    first = lines.index(f"  - handle: ~{ZONE}")
    definition.write_text("\n".join(lines[: first + 3]) + "\n")
    cli(root, *sign_args(options, NOW, "--create-keys", "--no-verify"), sample=False)
    definition.write_text(full)
    reset_to_keys_only(root)
    base = root / "keys" / ZONE
    written = 0
    for name in handle_names(handles):
        directory = base / name
        if directory.exists():
            continue
        directory.mkdir(mode=0o700)
        seed = os.urandom(32)
        der = base64.b64encode(PKCS8_ED25519_PREFIX + seed)
        pem = b"-----BEGIN %s-----\n%s\n-----END %s-----\n" % (PEM_LABEL, der, PEM_LABEL)
        secret = base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=") + b"\n"
        for file_name, content in (("1.secret", secret), ("1.pem", pem)):
            fd = os.open(directory / file_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, content)
            finally:
                os.close(fd)
        written += 1
    detail = f"CLI made the zone keys and 3 handles' keys; this bench wrote {written:,} more"
    return time.perf_counter() - start, detail


def change_handle(definition: Path, handle: str) -> str:
    """Give ``handle`` a new resolver in the definition; returns what changed.

    Raises:
        BenchError: the handle is not in the definition.
    """
    lines = definition.read_text().splitlines()
    for index, line in enumerate(lines):
        if line == f"  - {handle}" or line.startswith(f"  - {{handle: {handle},"):
            resolver = CHANGED_RESOLVER
            if resolver in line:
                resolver += "-again"
            lines[index] = f"  - {{handle: {handle}, resolver: '{resolver}'}}"
            definition.write_text("\n".join(lines) + "\n")
            return f"{handle} resolver -> {resolver}"
    raise BenchError(f"{definition}: handle {handle} not found")


def reset_to_keys_only(root: Path) -> list[str]:
    """Delete what sign wrote (build/, zones/ files but the definition); keep keys/."""
    removed: list[str] = []
    build = root / "build"
    if build.exists():
        shutil.rmtree(build)
        removed.append("build/")
    for path in sorted((root / "zones").iterdir()):
        if path.name != Path(DEFINITION).name:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(f"zones/{path.name}")
    return removed


Snapshot = dict[str, tuple[int, int, int]]


def snapshot(root: Path) -> Snapshot:
    """(inode, mtime ns, size) of every file under build/ and zones/."""
    files: Snapshot = {}
    for top in ("build", "zones"):
        for path in sorted((root / top).rglob("*")):
            if path.is_file():
                stat = path.stat()
                key = path.relative_to(root).as_posix()
                files[key] = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
    return files


def rewritten(before: Snapshot, after: Snapshot) -> list[str]:
    """Files that were rewritten (+ new, - deleted) between two snapshots."""
    names = sorted(before.keys() | after.keys())
    changes: list[str] = []
    for name in names:
        if name not in before:
            changes.append(f"+{name}")
        elif name not in after:
            changes.append(f"-{name}")
        elif before[name] != after[name]:
            changes.append(name)
    return changes


# ---------------------------------------------------------------- sign reports


def zone_report(run: Run) -> dict[str, Any]:
    """``zones[0]`` of a ``sign --json`` report.

    Raises:
        BenchError: stdout is not the expected JSON.
    """
    try:
        report = json.loads(run.stdout)
        zone = report["zones"][0]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise BenchError(f"sign --json printed no zone report: {run.stdout[:300]!r}") from exc
    if not isinstance(zone, dict):
        raise BenchError(f"sign --json: zones[0] is not an object: {zone!r}")
    return zone


def stage_timings(zone: dict[str, Any]) -> list[tuple[str, float]]:
    """The report's stage timings, in pipeline order (unknown stages after, as reported)."""
    timings = zone.get("timings") or {}
    known = [stage for stage in STAGE_ORDER if stage in timings]
    others = [stage for stage in timings if stage not in STAGE_ORDER]
    return [(stage, float(timings[stage])) for stage in (*known, *others)]


def signature_count(zone: dict[str, Any]) -> int:
    """RRSIGs the sign reports (0 without DNSSEC)."""
    dnssec = zone.get("dnssec") or {}
    return int(dnssec.get("signatures", 0))


def sign_detail(zone: dict[str, Any]) -> str:
    """signed/reused counts and the stage timings, compactly."""
    stages = " ".join(f"{stage} {seconds:.2f}" for stage, seconds in stage_timings(zone))
    return f"signed {zone.get('signed')}, reused {zone.get('reused')}; stages: {stages}"


# ---------------------------------------------------------------- zone text


def bare_text(line: str) -> str:
    """A zone-file line without quoted strings and comments."""
    return QUOTED.sub('""', line).split(";", 1)[0]


def record_type(lines: Sequence[str]) -> str:
    """The type of the record written on ``lines`` (one logical record)."""
    text = " ".join(bare_text(line) for line in lines).replace("(", " ").replace(")", " ")
    tokens = text.split()
    start = 0 if lines[0][:1] in (" ", "\t") else 1
    for token in tokens[start:]:
        if not token.isdigit() and token.upper() not in CLASSES:
            return token.upper()
    return ""


def zone_entries(lines: Iterable[str]) -> Iterator[tuple[str | None, list[str]]]:
    """(record type, physical lines) per logical record; None for comments and directives."""
    pending: list[str] = []
    depth = 0
    for line in lines:
        bare = bare_text(line)
        if not pending and (not bare.strip() or bare.startswith("$")):
            yield None, [line]
            continue
        pending.append(line)
        depth += bare.count("(") - bare.count(")")
        if depth > 0:
            continue
        yield record_type(pending), pending
        pending, depth = [], 0
    if pending:
        yield record_type(pending), pending


def count_types(path: Path) -> Counter[str]:
    """Records per type in a zone file."""
    with path.open() as stream:
        return Counter(kind for kind, _ in zone_entries(stream) if kind)


def strip_dnssec(signed: Path, unsigned: Path) -> tuple[Counter[str], Counter[str]]:
    """Copy ``signed`` without RRSIG, NSEC, NSEC3, NSEC3PARAM, DNSKEY; (kept, dropped)."""
    kept: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    with signed.open() as source, unsigned.open("w") as target:
        for kind, lines in zone_entries(source):
            if kind in DNSSEC_TYPES:
                dropped[kind] += 1
                continue
            if kind:
                kept[kind] += 1
            target.writelines(lines)
    return kept, dropped


def describe(counts: Counter[str]) -> str:
    """``TXT 1000, RRSIG 3007, ...`` (largest first)."""
    return ", ".join(f"{kind} {number}" for kind, number in counts.most_common())


# ---------------------------------------------------------------- other signers


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One other signer's run on the unsigned copy."""

    label: str
    run: Run
    rrsigs: int
    check: str


def signature_window() -> tuple[str, str]:
    """(inception, expiration) as YYYYMMDDHHMMSS: an hour ago to 14 days ahead, real time."""
    now = int(time.time())
    stamp = "%Y%m%d%H%M%S"
    return (
        time.strftime(stamp, time.gmtime(now - 3600)),
        time.strftime(stamp, time.gmtime(now + SIGNATURE_VALIDITY_SECONDS)),
    )


def check_signed(path: Path) -> str:
    """Untimed sanity check of a signed zone: ldns-verify-zone, else dnssec-verify.

    Raises:
        BenchError: the checker rejects the zone.
    """
    if shutil.which("ldns-verify-zone"):
        argv = ["ldns-verify-zone", str(path)]
    elif shutil.which("dnssec-verify"):
        argv = ["dnssec-verify", "-o", ZONE, str(path)]
    else:
        return "not checked (no ldns-verify-zone or dnssec-verify)"
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchError(f"{argv[0]} rejected {path}: {(done.stderr or done.stdout).strip()}")
    return f"{argv[0]} OK"


def ldns_signzone(unsigned: Path, work: Path, denial: str) -> ToolResult:
    """Time ldns-signzone (Ed25519 KSK + ZSK from ldns-keygen, made untimed)."""
    work.mkdir()
    keys = []
    for ksk in (True, False):
        argv = ["ldns-keygen", "-a", "ED25519", *(["-k"] if ksk else []), ZONE]
        keys.append(tool(argv, work).stdout.strip())
    inception, expiration = signature_window()
    nsec3 = ["-n", "-t", "0"] if denial == "nsec3" else []
    output = work / "signed.zone"
    argv = [
        "ldns-signzone",
        *nsec3,
        "-i",
        inception,
        "-e",
        expiration,
        "-f",
        str(output),
        str(unsigned),
        *keys,
    ]
    run = tool(argv, work)
    return ToolResult("ldns-signzone", run, count_types(output)["RRSIG"], check_signed(output))


def kzonesign(unsigned: Path, work: Path, denial: str, threads: int) -> ToolResult:
    """Time kzonesign (Knot DNS) with an Ed25519 KSK + ZSK policy and ``threads`` signing
    threads; it makes its keys in its own KASP database (in the timed run: microseconds)."""
    work.mkdir()
    (work / "db").mkdir()
    (work / "out").mkdir()
    config = work / "knot.conf"
    config.write_text(
        "\n".join(
            [
                "server:",
                f'    rundir: "{work}"',
                "database:",
                f'    storage: "{work / "db"}"',
                "policy:",
                "  - id: bench",
                "    algorithm: ed25519",
                f"    nsec3: {'on' if denial == 'nsec3' else 'off'}",
                *(
                    ["    nsec3-iterations: 0", "    nsec3-salt-length: 0"]
                    if denial == "nsec3"
                    else []
                ),
                f"    rrsig-lifetime: {SIGNATURE_VALIDITY_SECONDS}",
                f"    signing-threads: {threads}",
                "zone:",
                f"  - domain: {ZONE}",
                f'    file: "{unsigned}"',
                "    dnssec-signing: on",
                "    dnssec-policy: bench",
            ]
        )
        + "\n"
    )
    run = tool(["kzonesign", "-c", str(config), "-o", str(work / "out"), ZONE], work)
    output = work / "out" / unsigned.name
    label = f"kzonesign ({threads} threads)"
    return ToolResult(label, run, count_types(output)["RRSIG"], check_signed(output))


def bind_keys(work: Path) -> list[str]:
    """Ed25519 KSK + ZSK from dnssec-keygen in ``work``; their base names."""
    keys = []
    for ksk in (True, False):
        argv = ["dnssec-keygen", "-q", "-a", "ED25519", *(["-f", "KSK"] if ksk else [])]
        keys.append(tool([*argv, "-K", str(work), ZONE], work).stdout.strip())
    return keys


def dnssec_signzone(
    unsigned: Path, work: Path, keys: Sequence[str], denial: str, threads: int
) -> ToolResult:
    """Time dnssec-signzone -n THREADS with the keys given explicitly (DNSKEYs in the input)."""
    source = work / "unsigned+dnskey.zone"
    if not source.exists():
        with source.open("w") as target:
            target.write(unsigned.read_text())
            for key in keys:
                target.write((work / f"{key}.key").read_text())
    inception, expiration = signature_window()
    nsec3 = ["-3", "-", "-H", "0"] if denial == "nsec3" else []
    output = work / f"signed-n{threads}.zone"
    argv = [
        "dnssec-signzone",
        "-o",
        ZONE,
        "-K",
        str(work),
        *nsec3,
        "-n",
        str(threads),
        "-s",
        inception,
        "-e",
        expiration,
        "-f",
        str(output),
        str(source),
        *keys,
    ]
    run = tool(argv, work)
    label = f"dnssec-signzone -n {threads}"
    return ToolResult(label, run, count_types(output)["RRSIG"], check_signed(output))


@dataclass(frozen=True, slots=True)
class Speed:
    """openssl speed ed25519, one core."""

    sign_per_second: float
    verify_per_second: float


def openssl_speed() -> Speed:
    """Parse ``openssl speed -seconds 3 ed25519``.

    Raises:
        BenchError: openssl failed or printed no Ed25519 line.
    """
    argv = ["openssl", "speed", "-seconds", str(OPENSSL_SPEED_SECONDS), "ed25519"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    for line in done.stdout.splitlines():
        if "Ed25519" in line:
            numbers = line.split()
            with contextlib.suppress(ValueError, IndexError):
                return Speed(float(numbers[-2]), float(numbers[-1]))
    raise BenchError(f"{shlex.join(argv)}: no Ed25519 line: {done.stdout[-500:]}{done.stderr}")


def floor_seconds(handles: int, rrsigs: int, speed: Speed, cores: int) -> float:
    """Ed25519 arithmetic alone: every sign and 2 verifies per handle, on every core."""
    signs = (handles + rrsigs) / (speed.sign_per_second * cores)
    verifies = 2 * handles / (speed.verify_per_second * cores)
    return signs + verifies


# ---------------------------------------------------------------- dnsperf


def free_port() -> int:
    """A loopback port free for both UDP and TCP right now."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind(("127.0.0.1", 0))
            port = int(udp.getsockname()[1])
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
                try:
                    tcp.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    raise BenchError("no free loopback port for UDP and TCP")


@dataclass(frozen=True, slots=True)
class Dnsperf:
    """dnsperf figures against alter-publish serve."""

    queries_per_second: float
    sent: int
    lost: int
    start_seconds: float


def dnsperf_figure(output: str, label: str) -> str:
    """The value after ``label:`` in dnsperf's statistics.

    Raises:
        BenchError: the label is not there.
    """
    match = re.search(rf"^\s*{re.escape(label)}:\s+(\S+)", output, re.MULTILINE)
    if match is None:
        raise BenchError(f"dnsperf printed no '{label}': {output[-800:]}")
    return match.group(1)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Ctrl-C the server we started; kill it if it does not stop."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(SERVER_STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def first_answer(owner: str, port: int) -> bool:
    """Does a server on 127.0.0.1:port answer ``owner`` TXT over UDP with a TXT record
    within a poll step? (An unconnected UDP socket is not told of a closed port, so each
    try waits that long: a longer wait made the start time step by more than half a
    second.)"""
    qname = b"".join(bytes([len(label)]) + label.encode() for label in owner.rstrip(".").split("."))
    query = struct.pack("!6H", 0x5E7E, 0, 1, 0, 0, 0) + qname + b"\0" + struct.pack("!2H", 16, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.settimeout(SERVER_POLL_SECONDS)
        try:
            udp.sendto(query, ("127.0.0.1", port))
            reply = udp.recv(65535)
        except OSError:
            return False
    # The reply to our query, NOERROR, at least one answer record.
    return len(reply) >= 12 and reply[:2] == query[:2] and reply[3] & 0xF == 0 and reply[7] > 0


@contextlib.contextmanager
def serving(root: Path, owner: str) -> Iterator[tuple[int, float]]:
    """``alter-publish serve build/<zone>.zone`` on a free port, until the block ends:
    (the port, the seconds from starting the process to its first answer to ``owner``
    TXT, a real UDP query).

    Raises:
        BenchError: the server exits or does not answer in time.
    """
    port = free_port()
    argv = [sys.executable, "-m", "alter_publish", "serve", ZONE_FILE, "--port", str(port)]
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        server = subprocess.Popen(
            argv, cwd=root, env=cli_env(), stdout=subprocess.DEVNULL, stderr=err
        )
        try:
            while not first_answer(owner, port):
                if server.poll() is not None:
                    raise BenchError(
                        f"alter-publish serve exited {server.returncode}: {read_back(err).strip()}"
                    )
                if time.perf_counter() - start > SERVER_START_TIMEOUT_SECONDS:
                    raise BenchError(f"alter-publish serve not answering on port {port}")
                time.sleep(SERVER_POLL_SECONDS)
            yield port, time.perf_counter() - start
        finally:
            stop(server)


def served_owners(root: Path) -> list[str]:
    """Every handle's owner name, from the envelopes document."""
    envelopes = json.loads((root / ENVELOPES_FILE).read_text())
    return [str(handle["owner"]) for handle in envelopes["handles"]]


def serve_start(root: Path) -> float:
    """Seconds from starting ``alter-publish serve`` to its first answer (the last
    handle's TXT, over UDP)."""
    with serving(root, served_owners(root)[-1]) as (_, started):
        return started


def run_dnsperf(root: Path) -> Dnsperf:
    """Serve build/<zone>.zone, query every _alter owner's TXT with dnsperf.

    Raises:
        BenchError: the server does not come up, or dnsperf fails.
    """
    owners = served_owners(root)
    queries = root / "dnsperf-queries.txt"
    queries.write_text("".join(f"{owner} TXT\n" for owner in owners))
    with serving(root, owners[-1]) as (port, started):
        perf = [
            "dnsperf",
            *("-s", "127.0.0.1", "-p", str(port), "-d", str(queries)),
            *("-l", str(DNSPERF_SECONDS), "-D", "-c", "1", "-T", "1"),
        ]
        output = tool(perf, root).stdout
    return Dnsperf(
        queries_per_second=float(dnsperf_figure(output, "Queries per second")),
        sent=int(dnsperf_figure(output, "Queries sent")),
        lost=int(dnsperf_figure(output, "Queries lost")),
        start_seconds=started,
    )


# ---------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class Row:
    """One line of a size's table."""

    label: str
    wall_seconds: float | None
    peak_mib: float | None
    maxrss_mib: float | None
    detail: str

    def text(self) -> str:
        """The row as printed while running."""
        wall = "" if self.wall_seconds is None else f"{self.wall_seconds:8.2f} s"
        peak = "" if self.peak_mib is None else f"{self.peak_mib:6.0f} MiB"
        return f"  {self.label:34} {wall:>10} {peak:>10}  {self.detail}"

    def markdown(self) -> str:
        """The row as a Markdown table line."""
        cells = [
            self.label,
            "" if self.wall_seconds is None else f"{self.wall_seconds:.2f}",
            "" if self.peak_mib is None else f"{self.peak_mib:.0f}",
            "" if self.maxrss_mib is None else f"{self.maxrss_mib:.0f}",
            self.detail.replace("|", "\\|"),
        ]
        return "| " + " | ".join(cells) + " |"


@dataclass(slots=True)
class SizeResult:
    """Everything measured at one size; filled in as the steps run."""

    handles: int
    workspace: Path
    rows: list[Row] = field(default_factory=list)
    full_sign: float | None = None
    dnssec_stage: float | None = None
    rrsigs: int = 0
    peak_sign_mib: float | None = None
    no_change: float | None = None
    no_change_rewritten: list[str] | None = None
    one_change: float | None = None
    rotated: float | None = None
    #: Handles added, removed, renamed: (label, wall seconds) of each sign.
    names: list[tuple[str, float]] = field(default_factory=list)
    ldns: float | None = None
    floor: float | None = None
    qps: float | None = None
    serve_start: float | None = None
    #: Daily renewal runs: (label, wall seconds).
    renewals: list[tuple[str, float]] = field(default_factory=list)
    resign: float | None = None
    resign_peak_mib: float | None = None
    #: Knot DNS: seconds from sending each RFC 2136 add to its RRSIG being served.
    knot_updates: list[float] = field(default_factory=list)
    kzonesign: float | None = None
    #: The 1,000,000-handle full sign killed at this summed Pss (MiB), if it was.
    full_sign_stopped: float | None = None
    #: The summed-Pss limit the 1,000,000-handle full sign ran under (MiB).
    memory_limit_mib: float = BIG_MEMORY_LIMIT_MIB
    notes: list[str] = field(default_factory=list)

    def add(self, row: Row) -> None:
        """Keep a row and print it."""
        self.rows.append(row)
        print(row.text(), flush=True)

    def add_run(self, label: str, run: Run, detail: str) -> None:
        """Keep and print a row for a measured run."""
        self.add(Row(label, run.wall_seconds, run.peak_mib, run.maxrss_mib, detail))

    def note(self, text: str) -> None:
        """Keep and print a note (a skipped column, a check)."""
        self.notes.append(text)
        print(f"  note: {text}", flush=True)

    def ratios(self) -> list[tuple[str, float | None]]:
        """Our DNSSEC stage and whole sign against ldns-signzone, whole sign against the floor."""
        return [
            ("our `dnssec` stage / ldns-signzone", divide(self.dnssec_stage, self.ldns)),
            ("our whole sign / ldns-signzone", divide(self.full_sign, self.ldns)),
            ("our whole sign / Ed25519 floor", divide(self.full_sign, self.floor)),
        ]


def divide(top: float | None, bottom: float | None) -> float | None:
    """top / bottom, or None when either is unknown or bottom is 0."""
    if top is None or bottom is None or bottom == 0:
        return None
    return top / bottom


@dataclass(frozen=True, slots=True)
class Machine:
    """Where and with what the run happened."""

    date: str
    cores: int
    cpu: str
    python: str
    libraries: str
    tools: tuple[str, ...]
    #: What pages the page cache out besides memory pressure (:func:`page_reclaim`).
    reclaim: str


#: Where Linux lists its DAMON monitors and their schemes (sysfs).
DAMON_KDAMONDS = Path("/sys/kernel/mm/damon/admin/kdamonds")


def page_reclaim(kdamonds: Path = DAMON_KDAMONDS) -> str:
    """The DAMON schemes running here that page out idle memory: with one, a file read
    more than its idle age ago (a key, the last outputs) comes from the disk again, so
    a step's time depends on what ran in the minute before it."""

    def read(path: Path) -> str:
        return path.read_text().strip()

    found = []
    for scheme in sorted(kdamonds.glob("*/contexts/*/schemes/*")):
        kdamond, context = scheme.parents[3], scheme.parents[1]
        try:
            if read(kdamond / "state") != "on" or read(scheme / "action") != "pageout":
                continue
            aggregation_us = int(read(context / "monitoring_attrs" / "intervals" / "aggr_us"))
            age = int(read(scheme / "access_pattern" / "age" / "min")) * aggregation_us / 1e6
            quota = int(read(scheme / "quotas" / "bytes")) / MIB
            per_ms = int(read(scheme / "quotas" / "reset_interval_ms"))
            filters = scheme / "ops_filters"
            anon_kept = any(
                read(item / "type") == "anon" and read(item / "allow") == "N"
                for item in filters.glob("[0-9]*")
            )
        except (OSError, ValueError):
            continue
        pages = "file pages" if anon_kept else "pages"
        found.append(
            f"kdamond {kdamond.name} pages out {pages} idle {age:.0f} s or more"
            f" (up to {quota:.0f} MiB per {per_ms} ms)"
        )
    return "page reclaim: " + ("; ".join(found) if found else "no DAMON pageout scheme on")


def first_line(argv: Sequence[str], pattern: str = "") -> str:
    """The first output line of a command (matching ``pattern``), or 'not installed'."""
    if shutil.which(argv[0]) is None:
        return f"{argv[0]}: not installed"
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    for line in (done.stdout + done.stderr).splitlines():
        if line.strip() and re.search(pattern, line):
            return line.strip() if argv[0] in line else f"{argv[0]}: {line.strip()}"
    return f"{argv[0]}: version unknown"


def describe_machine() -> Machine:
    """Date, cores, CPU, Python, library and tool versions."""
    date = subprocess.run(["date", "-u"], capture_output=True, text=True, check=True).stdout
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    versions = []
    for name in ("dnspython", "cryptography", "PyNaCl", "PyYAML", "Jinja2"):
        try:
            versions.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{name} not installed")
    tools = (
        first_line(["ldns-signzone", "-v"]),
        first_line(["dnssec-signzone", "-V"]),
        first_line(["dnsperf", "-h"], "^Version"),
        first_line(["openssl", "version"]),
    )
    return Machine(
        date=date.strip(),
        cores=len(os.sched_getaffinity(0)),
        cpu=cpu,
        python=f"Python {platform.python_version()} ({sys.executable})",
        libraries=", ".join(versions),
        tools=tools,
        reclaim=page_reclaim(),
    )


def verdict(ok: bool | None) -> str:
    """PASS, FAIL or NOT MEASURED."""
    return "NOT MEASURED" if ok is None else ("PASS" if ok else "FAIL")


def below(value: float | None, limit: float) -> bool | None:
    """value < limit, or None when not measured."""
    return None if value is None else value < limit


def targets(result: SizeResult) -> list[str]:
    """The checklist at 100,000 handles, one line per target."""
    dnssec_ratio = divide(result.dnssec_stage, result.ldns)
    nothing_rewritten = result.no_change_rewritten == []
    no_change = below(result.no_change, TARGET_NO_CHANGE_SECONDS)
    lines = [
        (below(result.full_sign, TARGET_SIGN_SECONDS), "whole sign < 45 s", result.full_sign, "s"),
        (below(result.peak_sign_mib, TARGET_PEAK_MIB), "peak < 1 GiB", result.peak_sign_mib, "MiB"),
        (
            None if dnssec_ratio is None else dnssec_ratio <= TARGET_DNSSEC_RATIO,
            "dnssec stage / ldns-signzone <= 1.0",
            dnssec_ratio,
            "",
        ),
        (
            below(result.one_change, TARGET_ONE_CHANGE_SECONDS),
            "one change (handle edited) < 3 s",
            result.one_change,
            "s",
        ),
        (
            below(result.rotated, TARGET_ONE_CHANGE_SECONDS),
            "one change (key rotated, its sign) < 3 s",
            result.rotated,
            "s",
        ),
        (
            None if no_change is None else no_change and nothing_rewritten,
            "no change < 2 s with nothing rewritten",
            result.no_change,
            "s, rewritten: " + (", ".join(result.no_change_rewritten or []) or "none"),
        ),
        (
            below(result.serve_start, TARGET_SERVE_START_SECONDS),
            "serve answers < 5 s after start",
            result.serve_start,
            "s",
        ),
        (
            None if result.qps is None else result.qps >= TARGET_QPS,
            "dnsperf >= 10,000 qps",
            result.qps,
            "qps",
        ),
    ]
    lines += (
        (below(seconds, TARGET_ONE_NAME_SECONDS), f"{label} < 1.0 s", seconds, "s")
        for label, seconds in result.names
    )
    out = []
    for ok, label, value, unit in lines:
        measured = "not measured" if value is None else f"{value:,.2f} {unit}".rstrip()
        out.append(f"- [{'x' if ok else ' '}] {verdict(ok)}: {label} (measured: {measured})")
    return out


def seconds_text(value: float | None) -> str:
    """``1.23 s`` or ``not measured``."""
    return "not measured" if value is None else f"{value:,.2f} s"


def issue_targets(result: SizeResult) -> list[str]:
    """Issue 16's targets table for this size (100,000 or 1,000,000 handles), or []."""
    names = dict(result.names)
    rows: list[tuple[str, str, str, bool | None]] = []
    if result.handles == TARGET_SIZE:
        changes = [
            ("add one handle", names.get("one handle added")),
            ("remove one handle", names.get("one handle removed")),
            ("rename one handle", names.get("one handle renamed")),
            ("edit one handle", result.one_change),
            ("rotate one key (its sign)", result.rotated),
        ]
        rows += [
            (label, "< 1.0 s", seconds_text(value), below(value, TARGET_ONE_NAME_SECONDS))
            for label, value in changes
        ]
        no_change = below(result.no_change, TARGET_ISSUE_NO_CHANGE_SECONDS)
        rows.append(("nothing changed", "< 0.5 s", seconds_text(result.no_change), no_change))
        for label, value in result.renewals:
            rows.append((label, "< 3 s", seconds_text(value), below(value, TARGET_DAILY_SECONDS)))
        if not result.renewals:
            rows.append(("daily renewal", "< 3 s", "not measured", None))
        rows.append(
            (
                "full re-sign, outputs present, all expired",
                "< 30 s",
                seconds_text(result.resign),
                below(result.resign, TARGET_RESIGN_SECONDS),
            )
        )
        peak = result.resign_peak_mib
        rows.append(
            (
                "full re-sign: peak",
                "< 1 GiB",
                "not measured" if peak is None else f"{peak:,.0f} MiB",
                below(peak, TARGET_PEAK_MIB),
            )
        )
    elif result.handles == BIG_SIZE:
        peak = result.peak_sign_mib
        peak_text = "not measured" if peak is None else f"{peak:,.0f} MiB"
        peak_ok = below(peak, TARGET_BIG_PEAK_MIB)
        stopped = result.full_sign_stopped
        if stopped is not None:
            peak_text = f"killed at {stopped:,.0f} MiB (limit {result.memory_limit_mib:,.0f})"
            peak_ok = stopped < TARGET_BIG_PEAK_MIB
        rows += [
            (
                "first full sign with proof",
                "< 6 min",
                seconds_text(result.full_sign),
                below(result.full_sign, TARGET_BIG_SIGN_SECONDS),
            ),
            ("first full sign: peak", "< 8 GiB", peak_text, peak_ok),
            (
                "add one handle",
                "< 2 s",
                seconds_text(names.get("one handle added")),
                below(names.get("one handle added"), TARGET_BIG_ADD_SECONDS),
            ),
        ]
    else:
        return []
    knot = result.knot_updates
    knot_text = (
        "not measured" if not knot else f"{min(knot):.3f}-{max(knot):.3f} s ({len(knot)} updates)"
    )
    if result.handles == TARGET_SIZE:
        rows.append(("Knot DNS: one RFC 2136 add signed and served", "measured", knot_text, None))
    rows += [
        ("kzonesign, same records", "measured", seconds_text(result.kzonesign), None),
        ("ldns-signzone, same records", "measured", seconds_text(result.ldns), None),
    ]
    lines = ["| target | limit | measured | verdict |", "|---|---|---:|---|"]
    for label, limit, measured, ok in rows:
        mark = "-" if limit == "measured" else verdict(ok)
        lines.append(f"| {label} | {limit} | {measured} | {mark} |")
    return lines


def render_results(machine: Machine, command: str, results: Sequence[SizeResult]) -> str:
    """bench/RESULTS.md."""
    lines = [
        "# Scale benchmark results",
        "",
        "Written by `bench/run.py` (see bench/README.md); every figure is one real run.",
        "",
        f"- date: {machine.date}",
        f"- machine: {machine.cores} cores, {machine.cpu}",
        f"- {machine.python}; {machine.libraries}",
        *(f"- {line}" for line in machine.tools),
        f"- {machine.reclaim}",
        "",
        "Command:",
        "",
        f"    {command}",
        "",
        "Columns: wall seconds, from a run without the memory sampler; peak = the peak",
        "of the summed Pss of the process tree (sampled every 50 ms) in the step's twin",
        "run (the same step again, or on another handle: see bench/README.md; for the",
        "other signers, their ru_maxrss); ru_maxrss = wait4's figure for the main process",
        "(the largest of it and its reaped children; Linux also counts the pre-exec copy",
        "of run.py, so a small tool shows run.py's own size). keygen is not a target;",
        "the full sign re-signs every envelope with the keys keygen made.",
    ]
    for result in results:
        lines += [
            "",
            f"## {result.handles:,} handles",
            "",
            "| step | wall s | peak MiB | ru_maxrss MiB | detail |",
            "|---|---:|---:|---:|---|",
            *(row.markdown() for row in result.rows),
            "",
            *(
                f"- {label}: {'n/a' if value is None else f'{value:.2f}'}"
                for label, value in result.ratios()
            ),
            *(f"- note: {text}" for text in result.notes),
        ]
        table = issue_targets(result)
        if table:
            lines += ["", f"### Issue 16 targets at {result.handles:,} handles", "", *table]
        if result.handles == TARGET_SIZE:
            lines += ["", "### Earlier targets (issue 6) at 100,000 handles", "", *targets(result)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- one size


@dataclass(frozen=True, slots=True)
class Options:
    """Parsed command line."""

    sizes: tuple[int, ...]
    jobs: int | None
    denial: str
    keep: Path | None
    skip_tools: bool
    output: Path
    fast_keygen: bool = False
    memory_limit_mib: float = BIG_MEMORY_LIMIT_MIB


def sign_args(options: Options, now: int, *extra: str) -> list[str]:
    """``sign --json --now NOW --allow-simulated-time [--jobs N] EXTRA``."""
    jobs = ["--jobs", str(options.jobs)] if options.jobs is not None else []
    return ["sign", "--json", "--now", str(now), SIMULATED_TIME, *jobs, *extra]


def run_big(handles: int, root: Path, options: Options, cores: int) -> SizeResult:
    """Issue 16's steps at one million handles: keys written by the bench, the first
    full sign with proof (sampled every second: one run), one handle added, then
    ldns-signzone and kzonesign on the same records."""
    result = SizeResult(handles, root)
    result.note("load average at start (1, 5, 15 min): " + load_text())
    print(f"\n{handles:,} handles, denial {options.denial}, workspace {root}", flush=True)
    write_zone(root, handles, options.denial)
    seconds, detail = fast_keygen(root, handles, options)
    result.add(Row("keygen (not a target)", seconds, None, None, detail))
    interval = BIG_SAMPLE_INTERVAL_SECONDS
    result.memory_limit_mib = options.memory_limit_mib
    limit = int(options.memory_limit_mib * MIB)
    settle(result, "keygen")  # its million key files are written without fsync
    try:
        full = cli(root, *sign_args(options, NOW), interval=interval, limit_bytes=limit)
    except MemoryGuard as stop:
        result.full_sign_stopped = stop.size / MIB
        detail = (
            f"STOPPED by run.py: summed Pss {stop.size / MIB:,.0f} MiB > limit "
            f"{options.memory_limit_mib:,.0f} MiB after {stop.seconds:.0f} s (target peak 8 GiB); "
            "no figures for the steps after it"
        )
        result.add(Row("full sign", stop.wall, stop.size / MIB, None, detail))
        result.note("load average at the stop (1, 5, 15 min): " + load_text())
        return result
    zone = zone_report(full)
    result.full_sign = full.wall_seconds
    result.rrsigs = signature_count(zone)
    result.peak_sign_mib = full.peak_mib
    detail = f"{sign_detail(zone)}; {result.rrsigs} RRSIGs; memory sampled every {interval:.0f} s"
    result.add_run("full sign", full, detail)
    for stage, seconds in stage_timings(zone):
        result.add(Row(f"  stage {stage}", seconds, None, None, ""))
        if stage == "dnssec":
            result.dnssec_stage = seconds
    result.note("load average after the full sign (1, 5, 15 min): " + load_text())
    settle(result, "the full sign")
    rrsigs = names_changed(result, root, options, only_add=True)
    if not options.skip_tools:
        other_signers(result, root, options.denial, rrsigs, cores, big=True)
    result.note("load average at end (1, 5, 15 min): " + load_text())
    return result


def run_size(
    handles: int, root: Path, options: Options, speed: Speed | None, cores: int
) -> SizeResult:
    """Every step at one size, in workspace ``root``."""
    result = SizeResult(handles, root)
    result.note("load average at start (1, 5, 15 min): " + load_text())
    print(f"\n{handles:,} handles, denial {options.denial}, workspace {root}", flush=True)
    write_zone(root, handles, options.denial)

    if options.fast_keygen:
        seconds, detail = fast_keygen(root, handles, options)
        result.add(Row("keygen (not a target)", seconds, None, None, detail))
    else:
        keygen = cli(root, *sign_args(options, NOW, "--create-keys", "--no-verify"))
        removed = reset_to_keys_only(root)
        detail = f"{sign_detail(zone_report(keygen))}; then removed {', '.join(removed)}"
        result.add_run("keygen (not a target)", keygen, detail)

    # Timed runs go without the memory sampler: reading smaps_rollup of a 900 MB process
    # takes ~30 ms and holds its memory map lock, so sampling every 50 ms slowed the
    # sign it measured by a fifth. Each timed step has a sampled twin (the same step
    # again, or the same kind of step on another handle) whose peak memory it reports.
    twin = cli(root, *sign_args(options, NOW))
    reset_to_keys_only(root)
    settle(result, "the twin of the full sign")
    full = cli(root, *sign_args(options, NOW), sample=False).memory_of(twin)
    zone = zone_report(full)
    result.full_sign = full.wall_seconds
    result.rrsigs = signature_count(zone)
    result.peak_sign_mib = full.peak_mib
    result.add_run("full sign", full, f"{sign_detail(zone)}; {result.rrsigs} RRSIGs")
    for stage, seconds in stage_timings(zone):
        result.add(Row(f"  stage {stage}", seconds, None, None, ""))
        if stage == "dnssec":
            result.dnssec_stage = seconds

    settle(result, "the full sign")
    before = snapshot(root)
    again = cli(root, *sign_args(options, NOW), sample=False)
    changes = rewritten(before, snapshot(root))
    again = again.memory_of(cli(root, *sign_args(options, NOW)))
    result.no_change = again.wall_seconds
    result.no_change_rewritten = changes
    result.peak_sign_mib = max(result.peak_sign_mib, again.peak_mib)
    listed = ", ".join(changes) or "none"
    result.add_run("no change", again, f"rewritten: {listed}; {sign_detail(zone_report(again))}")

    what = change_handle(root / DEFINITION, CHANGED_HANDLE)
    before = snapshot(root)
    changed = cli(root, *sign_args(options, CHANGE_NOW), sample=False)
    changes = rewritten(before, snapshot(root))
    change_handle(root / DEFINITION, TWIN_CHANGED_HANDLE)
    changed = changed.memory_of(cli(root, *sign_args(options, CHANGE_NOW + TWIN_DELAY_SECONDS)))
    result.one_change = changed.wall_seconds
    result.peak_sign_mib = max(result.peak_sign_mib, changed.peak_mib)
    detail = f"{what}; changed: {', '.join(changes) or 'none'}; {sign_detail(zone_report(changed))}"
    result.add_run("one handle changed", changed, detail)

    rotate = cli(
        root, "rotate", ROTATED_HANDLE, "--zone", ZONE, "--now", str(ROTATE_NOW), SIMULATED_TIME
    )
    result.add_run(f"rotate {ROTATED_HANDLE} (not a target)", rotate, "")
    before = snapshot(root)
    published = cli(root, *sign_args(options, ROTATE_NOW), sample=False)
    changes = rewritten(before, snapshot(root))
    cli(
        root,
        "rotate",
        TWIN_ROTATED_HANDLE,
        "--zone",
        ZONE,
        "--now",
        str(ROTATE_NOW),
        SIMULATED_TIME,
    )
    twin_now = ROTATE_NOW + TWIN_DELAY_SECONDS
    published = published.memory_of(cli(root, *sign_args(options, twin_now)))
    result.rotated = published.wall_seconds
    result.peak_sign_mib = max(result.peak_sign_mib, published.peak_mib)
    detail = f"changed: {', '.join(changes) or 'none'}; {sign_detail(zone_report(published))}"
    result.add_run("one key rotated: sign", published, detail)
    names_changed(result, root, options)
    last_rrsigs = signature_count(zone_report(published))

    if not options.skip_tools:
        other_signers(result, root, options.denial, last_rrsigs, cores)
        if speed is not None:
            handles_signed = int(zone.get("signed", handles))
            result.floor = floor_seconds(handles_signed, result.rrsigs, speed, cores)
            result.add(
                Row(
                    "Ed25519 floor (openssl speed)",
                    result.floor,
                    None,
                    None,
                    f"({handles_signed} envelope + {result.rrsigs} RRSIG signs) / "
                    f"({speed.sign_per_second:,.0f}/s x {cores}) + {2 * handles_signed} "
                    f"verifies / ({speed.verify_per_second:,.0f}/s x {cores})",
                )
            )

    settle(result, "the changes" if options.skip_tools else "the other signers")
    result.serve_start = serve_start(root)
    detail = "alter-publish serve build/<zone>.zone: start to first UDP answer (last handle's TXT)"
    result.add(Row("serve: first answer", result.serve_start, None, None, detail))

    absent = missing("dnsperf")
    if absent:
        result.note(absent)
    else:
        perf = run_dnsperf(root)
        result.qps = perf.queries_per_second
        result.add(
            Row(
                "dnsperf (serve, 1 client)",
                None,
                None,
                None,
                f"{perf.queries_per_second:,.0f} qps, {perf.sent:,} sent, {perf.lost} lost; "
                f"server answered {perf.start_seconds:.1f} s after start",
            )
        )
    settle(result, "serve")
    renewals(result, root, options)
    result.note("load average at end (1, 5, 15 min): " + load_text())
    return result


def load_text() -> str:
    """The load averages, e.g. ``2.01 1.54 3.00``."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


#: Settled: in one second, the tasks that were not idle all waited on the disk for less
#: than this share of it (PSI's ``full`` stall time, /proc/pressure/io).
SETTLED_IO_FULL = 0.01
SETTLE_MOST_SECONDS = 180.0


def io_full_stall_us() -> int | None:
    """``full total=`` of ``/proc/pressure/io``: microseconds in which every non-idle task
    was stalled on I/O since boot (None without PSI, or a file not of that form)."""
    try:
        text = Path("/proc/pressure/io").read_text(encoding="ascii")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("full "):
            fields = dict(item.partition("=")[::2] for item in line.split()[1:])
            total = fields.get("total", "")
            return int(total) if total.isdigit() else None
    return None


def settle(result: SizeResult, after: str) -> None:
    """Write back what the steps before left dirty and wait until the disk is idle, so
    that a timed step is not charged for another tool's writes (session 36: a renewal
    day took 53 s right after dnssec-signzone and Knot wrote GBs, 7.8 s alone). Idle: a
    second in which the full I/O stall time grew by under 1 % of it (the counter, not
    ``avg10``: that decays over tens of seconds, this run's own sync included). Notes
    how long it took, and when it gave up."""
    started = time.perf_counter()
    os.sync()
    synced = time.perf_counter() - started
    counter = io_full_stall_us()
    stalled: float | None = None  # the share of the last second fully stalled
    while counter is not None and time.perf_counter() - started <= SETTLE_MOST_SECONDS:
        time.sleep(1.0)
        previous, counter = counter, io_full_stall_us()
        if counter is None:
            break
        stalled = (counter - previous) / 1e6
        if stalled < SETTLED_IO_FULL:
            break
    waited = time.perf_counter() - started
    if counter is None:
        shown = "no I/O pressure figures: sync only"
    elif stalled is None:
        shown = "GAVE UP: the sync took the whole wait"
    else:
        verdict = "" if stalled < SETTLED_IO_FULL else "GAVE UP: "
        shown = f"{verdict}the last second {stalled:.1%} stalled on I/O"
    result.note(f"settled after {after}: sync {synced:.1f} s, in all {waited:.1f} s ({shown})")


def edit_definition(definition: Path, old: str, new: str) -> None:
    """Replace the line ``old`` (a whole line) of the definition by ``new`` (lines).

    Raises:
        BenchError: the line is not in the definition.
    """
    lines = definition.read_text().splitlines()
    if old not in lines:
        raise BenchError(f"{definition}: no line {old!r}")
    index = lines.index(old)
    lines[index : index + 1] = new.splitlines()
    definition.write_text("\n".join(lines) + "\n")


def names_changed(
    result: SizeResult, root: Path, options: Options, *, only_add: bool = False
) -> int:
    """One handle added (its key made by the sign), one removed, one renamed: each sign
    timed (not sampled; the proof included). Returns the RRSIG count of the last sign."""
    definition = root / DEFINITION
    old, new = RENAMED_HANDLE
    steps = (
        ("one handle added", f"  - {ADDED_AFTER}", f"  - {ADDED_AFTER}\n  - {ADDED_HANDLE}"),
        ("one handle removed", f"  - {REMOVED_HANDLE}", ""),
        ("one handle renamed", f"  - {old}", f"  - {new}"),
    )
    for number, (label, line, replacement) in enumerate(steps[:1] if only_add else steps):
        edit_definition(definition, line, replacement)
        before = snapshot(root)
        now = NAMES_NOW + 60 * number
        run = cli(root, *sign_args(options, now, "--create-keys"), sample=False)
        changes = rewritten(before, snapshot(root))
        zone = zone_report(run)
        result.names.append((label, run.wall_seconds))
        patched = "patched" if zone.get("patched") is not None else "IN FULL"
        detail = f"{patched}; changed: {', '.join(changes) or 'none'}; {sign_detail(zone)}"
        result.add_run(f"{label}: sign", run, detail)
    return signature_count(zone)


def renewals(result: SizeResult, root: Path, options: Options) -> None:
    """Daily renewal runs (1 and 2 days after the first sign), then the full re-sign of
    everything with the outputs present and every envelope and RRSIG expired, timed,
    and its sampled twin (everything expired once more) for its peak."""
    for days in RENEWAL_DAYS:
        before = snapshot(root)
        run = cli(root, *sign_args(options, NOW + days * DAY_SECONDS), sample=False)
        changes = rewritten(before, snapshot(root))
        zone = zone_report(run)
        label = f"daily renewal, day {days}"
        result.renewals.append((label, run.wall_seconds))
        patched = "patched" if zone.get("patched") is not None else "IN FULL"
        detail = f"{patched}; changed: {len(changes)} files; {sign_detail(zone)}"
        result.add_run(f"{label}: sign", run, detail)
    resign = cli(root, *sign_args(options, RESIGN_NOW), sample=False)
    twin = cli(root, *sign_args(options, RESIGN_TWIN_NOW))
    resign = resign.memory_of(twin)
    result.resign = resign.wall_seconds
    result.resign_peak_mib = resign.peak_mib
    zone = zone_report(resign)
    patched = "patched" if zone.get("patched") is not None else "in full"
    days = (RESIGN_NOW - NOW) // DAY_SECONDS
    detail = (
        f"first sign + {days} days (lifetime 30 d + 1 d: all expired), {patched}; "
        f"{sign_detail(zone)}; peak from the twin at + {(RESIGN_TWIN_NOW - NOW) // DAY_SECONDS} d"
    )
    result.add_run("full re-sign, all expired", resign, detail)


class BenchKnot(Knot):
    """The test harness's Knot (inline signing, one Ed25519 CSK) with room for a big
    zone in its journal (``journal-content: all`` keeps the signed zone there: the
    default 20 MiB made updates SERVFAIL at 100,000 names); NSEC3 (no salt, no extra
    iterations) when ``nsec3``, like this bench's zone."""

    nsec3: ClassVar[bool] = False

    def config(self, port: int) -> str:
        """knot.conf with a 4 GiB journal and, with ``nsec3``, NSEC3 in the policy."""
        text = (
            super()
            .config(port)
            .replace(
                "    journal-content: all\n",
                "    journal-content: all\n    journal-max-usage: 4G\n",
            )
        )
        if self.nsec3:
            policy = "    single-type-signing: on\n"
            nsec3 = "    nsec3: on\n    nsec3-iterations: 0\n    nsec3-salt-length: 0\n"
            text = text.replace(policy, policy + nsec3)
        return text


class BenchKnotNsec3(BenchKnot):
    """:class:`BenchKnot` with NSEC3."""

    nsec3 = True


def knot_updates(result: SizeResult, unsigned: Path, work: Path, denial: str) -> None:
    """Knot DNS serving the unsigned records, signing them itself (its own Ed25519 CSK):
    start until it serves the zone signed, then KNOT_UPDATES RFC 2136 adds of a TXT (TSIG),
    each timed from sending until Knot answers it with its RRSIG.

    Raises:
        BenchError: an update is refused or not served signed in time.
    """
    servers.SERVER_READY_SECONDS = KNOT_READY_SECONDS  # type: ignore[misc]  # Final in tests
    work.mkdir()
    tsig, _ = make_tsig_key(work, "bench-update")
    server_class = BenchKnotNsec3 if denial == "nsec3" else BenchKnot
    started = time.perf_counter()
    server = server_class(
        work / "server", ZONE, unsigned, tsig=tsig, allow_update=True, inline_signing=True
    )
    with server:
        ready = time.perf_counter() - started
        detail = f"knotd {denial}, Ed25519 CSK, 1 background worker: start to SOA served signed"
        result.add(Row("Knot DNS: load and sign", ready, None, None, detail))
        host, port = server.address
        for number in range(1, KNOT_UPDATES + 1):
            owner = f"_alter.knot-update{number}.{ZONE}."
            update = dns.update.UpdateMessage(ZONE, keyring=tsig.keyring(), keyname=tsig.dns_name)
            update.add(owner, 3600, "TXT", f'"v=alter1; bench update {number}"')
            start = time.perf_counter()
            response = dns.query.tcp(update, host, port=port, timeout=10)
            if response.rcode() != dns.rcode.NOERROR:
                raise BenchError(
                    f"knotd refused update {number}: {dns.rcode.to_text(response.rcode())}"
                )
            while not signed_answer(owner, host, port):
                if time.perf_counter() - start > KNOT_SIGNED_TIMEOUT_SECONDS:
                    raise BenchError(
                        f"knotd: {owner} not served signed after {KNOT_SIGNED_TIMEOUT_SECONDS} s"
                    )
                time.sleep(KNOT_POLL_SECONDS)
            result.knot_updates.append(time.perf_counter() - start)
    seconds = result.knot_updates
    detail = (
        f"{len(seconds)} RFC 2136 adds of one TXT (TSIG), send to RRSIG served "
        f"(polled every {KNOT_POLL_SECONDS * 1000:.0f} ms): "
        + ", ".join(f"{value:.3f}" for value in seconds)
    )
    result.add(
        Row(
            "Knot DNS: one add signed and served",
            min(seconds),
            None,
            None,
            f"min {min(seconds):.3f} max {max(seconds):.3f} s; {detail}",
        )
    )


def signed_answer(owner: str, host: str, port: int) -> bool:
    """Whether the server answers ``owner`` TXT with its RRSIG."""
    query = dns.message.make_query(owner, "TXT", want_dnssec=True)
    response = dns.query.udp(query, host, port=port, timeout=2)
    return any(rrset.rdtype == dns.rdatatype.RRSIG for rrset in response.answer)


def other_signers(
    result: SizeResult, root: Path, denial: str, rrsigs: int, cores: int, *, big: bool = False
) -> None:
    """Step 6: the same records signed by ldns-signzone, kzonesign, Knot DNS (update
    latency) and dnssec-signzone; ``big``: ldns-signzone and kzonesign only."""
    tools = root / "other-signers"
    tools.mkdir()
    unsigned = tools / f"{ZONE}.unsigned.zone"
    kept, dropped = strip_dnssec(root / ZONE_FILE, unsigned)
    envelopes = json.loads((root / ENVELOPES_FILE).read_text())
    expected_txt = len(envelopes["handles"])
    problems = []
    if kept["SOA"] != 1:
        problems.append(f"{kept['SOA']} SOA records")
    if kept["TXT"] < expected_txt:
        problems.append(f"{kept['TXT']} TXT records for {expected_txt} envelopes")
    if dropped["RRSIG"] != rrsigs:
        problems.append(f"dropped {dropped['RRSIG']} RRSIGs, sign reported {rrsigs}")
    if problems:
        raise BenchError(f"unsigned copy of {ZONE_FILE} looks wrong: {'; '.join(problems)}")
    result.note(f"unsigned copy: kept {describe(kept)}; dropped {describe(dropped)}")

    absent = missing("ldns-signzone", "ldns-keygen")
    if absent:
        result.note(absent)
    else:
        ldns = ldns_signzone(unsigned, tools / "ldns", denial)
        result.ldns = ldns.run.wall_seconds
        result.add_run(ldns.label + " (1 core)", ldns.run, f"{ldns.rrsigs} RRSIGs; {ldns.check}")

    absent = missing("kzonesign")
    if absent:
        result.note(absent)
    else:
        knot = kzonesign(unsigned, tools / "knot", denial, cores)
        result.kzonesign = knot.run.wall_seconds
        result.add_run(knot.label, knot.run, f"{knot.rrsigs} RRSIGs; {knot.check}")

    if big:
        return
    absent = missing("knotd", "knotc")
    if absent:
        result.note(absent)
    else:
        try:
            knot_updates(result, unsigned, tools / "knotd", denial)
        except BenchError as error:
            result.note(f"Knot DNS update latency not measured: {error}")

    absent = missing("dnssec-signzone", "dnssec-keygen")
    if absent:
        result.note(absent)
    else:
        work = tools / "bind"
        work.mkdir()
        keys = bind_keys(work)
        for threads in sorted({1, cores}):
            bind = dnssec_signzone(unsigned, work, keys, denial, threads)
            detail = f"{bind.rrsigs} RRSIGs (incl. its own verify); {bind.check}"
            result.add_run(bind.label, bind.run, detail)


# ---------------------------------------------------------------- main


def parse_options(argv: Sequence[str] | None = None) -> Options:
    """The command line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated")
    parser.add_argument("--jobs", type=int, help="pass --jobs N to every sign")
    parser.add_argument("--denial", choices=("nsec", "nsec3"), default="nsec")
    parser.add_argument("--keep", type=Path, help="keep workspaces in DIR/<size>")
    parser.add_argument("--skip-tools", action="store_true", help="skip the other signers")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument(
        "--fast-keygen", action="store_true", help="write the handle keys in run.py (as at 1M)"
    )
    parser.add_argument(
        "--memory-limit-gib",
        type=float,
        default=BIG_MEMORY_LIMIT_MIB / 1024,
        help="at 1,000,000 handles, kill the full sign past this summed Pss (default 10)",
    )
    args = parser.parse_args(argv)
    try:
        sizes = tuple(int(size.replace("_", "")) for size in args.sizes.split(","))
    except ValueError:
        parser.error(f"--sizes: not a list of whole numbers: {args.sizes}")
    if any(size < MIN_HANDLES for size in sizes):
        parser.error(f"--sizes: every size must be at least {MIN_HANDLES}")
    if args.jobs is not None and args.jobs < 1:
        parser.error("--jobs must be at least 1")
    for size in sizes if args.keep is not None else ():
        workspace = args.keep / str(size)
        if workspace.exists() and any(workspace.iterdir()):
            parser.error(f"--keep: {workspace} is not empty")
    if args.memory_limit_gib <= 0:
        parser.error("--memory-limit-gib must be positive")
    return Options(
        sizes,
        args.jobs,
        args.denial,
        args.keep,
        args.skip_tools,
        args.output,
        args.fast_keygen,
        args.memory_limit_gib * 1024,
    )


def main() -> int:
    """Run every size; write the results after each. Returns the exit status."""
    options = parse_options()
    command = shlex.join(["python", *sys.argv])
    machine = describe_machine()
    print(f"{machine.date}; {machine.cores} cores, {machine.cpu}")
    print(f"{machine.python}; {machine.libraries}")
    for line in machine.tools:
        print(line)
    print(machine.reclaim)
    speed = None
    if not options.skip_tools:
        absent = missing("openssl")
        if absent:
            print(f"note: {absent}")
        else:
            speed = openssl_speed()
            print(
                f"openssl speed ed25519, one core: {speed.sign_per_second:,.0f} sign/s, "
                f"{speed.verify_per_second:,.0f} verify/s"
            )
    results: list[SizeResult] = []
    try:
        for handles in options.sizes:
            with contextlib.ExitStack() as stack:
                if options.keep is None:
                    temp = tempfile.TemporaryDirectory(prefix=f"alter-bench-{handles}-")
                    root = Path(stack.enter_context(temp))
                else:
                    root = options.keep / str(handles)
                    root.mkdir(parents=True, exist_ok=True)
                if handles >= BIG_SIZE:
                    results.append(run_big(handles, root, options, machine.cores))
                else:
                    results.append(run_size(handles, root, options, speed, machine.cores))
            for label, value in results[-1].ratios():
                print(f"  {label}: {'n/a' if value is None else f'{value:.2f}'}")
            options.output.write_text(render_results(machine, command, results))
    except BenchError as error:
        print(f"run.py: error: {error}", file=sys.stderr)
        return 1
    for result in results:
        for line in issue_targets(result):
            print(line)
    print(f"\nwrote {options.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
