"""Slow TCP clients against a real ``alter-publish serve``: the flood, the probe, the RSS.

Shared by ``tests/integration/test_slow_clients.py`` and ``bench/slow_tcp.py``. The flood
runs in its own process (its reconnect loop must not steal the probe's GIL): each of its
clients connects, sends a 0xffff length prefix, then one byte a second, and reconnects
at once whenever the server drops it. The probe asks ordinary TCP queries, one a second,
each with its own timeout, and records which were answered and how fast.
"""

from __future__ import annotations

import multiprocessing
import selectors
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import dns.exception
import dns.message
import dns.query
import dns.rcode

if TYPE_CHECKING:
    from multiprocessing.sharedctypes import Synchronized

ZONE: Final = "example.com"
ZONE_TEXT: Final = f"""\
$ORIGIN {ZONE}.
$TTL 3600
@ IN SOA ns1.{ZONE}. hostmaster.{ZONE}. 1 7200 3600 1209600 300
@ IN NS ns1.{ZONE}.
ns1 IN A 192.0.2.1
www IN A 192.0.2.80
_alter.blake IN TXT "v=alter1; h=~blake"
"""
#: The probe's query: an answer with one A record.
PROBE_NAME: Final = f"www.{ZONE}."
#: How long the flood's clients wait between the bytes they trickle.
TRICKLE_SECONDS: Final = 1.0
#: A length prefix that announces the largest message TCP can carry.
HUGE_PREFIX: Final = b"\xff\xff"


def write_zone(directory: Path) -> Path:
    """Write the small test zone as ``<directory>/example.com.zone``."""
    path = directory / f"{ZONE}.zone"
    path.write_text(ZONE_TEXT, encoding="utf-8")
    return path


class ServeProcess:
    """``python -m alter_publish serve ZONEFILE --port 0 *options`` as a child process."""

    def __init__(self, zone_file: Path, *options: str) -> None:
        """Start the server and read the address it prints.

        Raises:
            RuntimeError: the server exited before it printed its address.
        """
        self.process = subprocess.Popen(
            [sys.executable, "-m", "alter_publish", "serve", str(zone_file), *options],
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        if " on " not in line:
            self.process.kill()
            raise RuntimeError(f"serve did not start: {line!r}")
        host, port = line.split(" on ")[1].split(" ")[0].rsplit(":", 1)
        self.address = (host, int(port))

    def rss_kib(self) -> int:
        """The server's resident set size (VmRSS of /proc/PID/status), in KiB."""
        status = Path(f"/proc/{self.process.pid}/status").read_text(encoding="ascii")
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS line")  # pragma: no cover - Linux always has it

    def close(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL) and wait for it."""
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a hung server
            self.process.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()


def _flood(
    address: tuple[str, int],
    clients: int,
    stop: multiprocessing.synchronize.Event,
    connects: Synchronized[int],
) -> None:
    """The flood's process: ``clients`` slow connections, each re-opened when dropped."""
    selector = selectors.DefaultSelector()
    next_byte: dict[socket.socket, float] = {}

    def open_one() -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.connect_ex(address)
        selector.register(sock, selectors.EVENT_WRITE)
        next_byte[sock] = -1.0  # connecting
        with connects.get_lock():
            connects.value += 1

    def reopen(sock: socket.socket) -> None:
        selector.unregister(sock)
        del next_byte[sock]
        sock.close()
        open_one()

    for _ in range(clients):
        open_one()
    while not stop.is_set():
        now = time.monotonic()
        for key, events in selector.select(timeout=0.05):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            if next_byte[sock] < 0 and events & selectors.EVENT_WRITE:
                if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    reopen(sock)
                    continue
                try:
                    sock.send(HUGE_PREFIX)
                except OSError:
                    reopen(sock)
                    continue
                selector.modify(sock, selectors.EVENT_READ)
                next_byte[sock] = now + TRICKLE_SECONDS
            elif events & selectors.EVENT_READ:
                try:
                    data = sock.recv(4096)
                except OSError:
                    data = b""
                if not data:  # dropped by the server: come straight back
                    reopen(sock)
        for sock, due in list(next_byte.items()):
            if 0 <= due <= now:
                try:
                    sock.send(b"\x00")
                    next_byte[sock] = now + TRICKLE_SECONDS
                except OSError:
                    reopen(sock)
    for sock in next_byte:
        sock.close()


class SlowFlood:
    """``clients`` slow clients against ``address``, in a child process, until closed."""

    def __init__(self, address: tuple[str, int], clients: int) -> None:
        """Start the flood's process."""
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self.connects = context.Value("q", 0)
        self._process = context.Process(
            target=_flood, args=(address, clients, self._stop, self.connects), daemon=True
        )
        self._process.start()

    def close(self) -> None:
        """Stop the flood and wait for its process."""
        self._stop.set()
        self._process.join(10)
        if self._process.is_alive():  # pragma: no cover - a stuck flood
            self._process.kill()
            self._process.join()


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What the probe saw: one latency in seconds per query, ``None`` if unanswered."""

    latencies: tuple[float | None, ...]

    @property
    def answered(self) -> int:
        """How many queries got their answer."""
        return sum(1 for latency in self.latencies if latency is not None)

    def summary(self) -> str:
        """``answered/asked, latency min/median/max``."""
        times = sorted(latency for latency in self.latencies if latency is not None)
        text = f"{self.answered}/{len(self.latencies)} answered"
        if times:
            median = times[len(times) // 2]
            text += f", latency ms min {times[0] * 1e3:.1f} median {median * 1e3:.1f} "
            text += f"max {times[-1] * 1e3:.1f}"
        return text


def probe(
    address: tuple[str, int], *, queries: int = 10, every: float = 1.0, timeout: float = 3.0
) -> ProbeResult:
    """Ask ``queries`` ordinary TCP queries, one every ``every`` seconds, each ``timeout`` long."""
    latencies: list[float | None] = []
    start = time.monotonic()
    for index in range(queries):
        time.sleep(max(0.0, start + index * every - time.monotonic()))
        query = dns.message.make_query(PROBE_NAME, "A")
        began = time.monotonic()
        try:
            reply = dns.query.tcp(query, address[0], port=address[1], timeout=timeout)
        except (OSError, EOFError, dns.exception.DNSException):
            latencies.append(None)
            continue
        ok = query.is_response(reply) and reply.rcode() == dns.rcode.NOERROR and reply.answer
        latencies.append(time.monotonic() - began if ok else None)
    return ProbeResult(tuple(latencies))


def wait_for_flood(flood: SlowFlood, connects: int, limit: float = 5.0) -> None:
    """Wait until the flood has opened ``connects`` connections (or ``limit`` seconds)."""
    deadline = time.monotonic() + limit
    while flood.connects.value < connects and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # let the first prefixes land
