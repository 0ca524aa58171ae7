"""Typed harness around independent DNSSEC validators, for integration tests.

The tests check that validators we did not write agree with our signer and
server: ldns (``ldns-verify-zone``), BIND (``dnssec-verify``, ``delv``) and
unbound. Every wrapper resolves its tool with :func:`require_tool`, so a test
skips with a visible reason (and the Debian package to install) where the tool
is missing.

Time handling differs per tool, and tests must sign accordingly:

* ``ldns-verify-zone -t YYYYMMDDhhmmss`` validates at any UTC time (both
  ends of the RRSIG window inclusive), so zones signed at a fixed ``now``
  can be checked: pass ``at=now``.
* ``dnssec-verify`` checks RRSIG inception and expiration against the real
  clock and has no option to set the time; signatures outside their window
  make it fail with ``No self-signed KSK DNSKEY found``. Zones checked with it
  must be signed with ``now = int(time.time())``, taken by the test.
* ``delv`` validates against the real clock too (no option); tests using it
  must sign with the real time.
* unbound validates at ``val-override-date`` when :class:`Unbound` is given
  ``at``, so zones signed at a fixed ``now`` can be served to it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final, Literal

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.DS
import dns.zonefile
import pytest

__all__ = [
    "TOOL_PACKAGES",
    "DelvResult",
    "DelvStatus",
    "ToolError",
    "ToolResult",
    "Unbound",
    "UnboundAnswer",
    "delv",
    "dnssec_verify",
    "free_port",
    "ldns_verify_zone",
    "require_tool",
    "run_tool",
    "tool_output",
]

#: The Debian package that ships each tool the harness knows.
TOOL_PACKAGES: Final = {
    "ldns-verify-zone": "ldnsutils",
    "ldns-signzone": "ldnsutils",
    "ldns-keygen": "ldnsutils",
    "dnssec-verify": "bind9-utils",
    "dnssec-signzone": "bind9-utils",
    "dnssec-keygen": "bind9-utils",
    "delv": "bind9-dnsutils",
    "dig": "bind9-dnsutils",
    "unbound": "unbound",
    "unbound-checkconf": "unbound",
    "unbound-control": "unbound",
    "ip": "iproute2",
}
#: Where daemons live when PATH lacks the sbin directories (non-root users).
SBIN_PATH: Final = os.pathsep.join(("/usr/local/sbin", "/usr/sbin", "/sbin"))
#: How long one run of a command-line tool may take.
TOOL_TIMEOUT_SECONDS: Final = 30.0
#: dnssec-verify cannot take a time: ``at`` must be this close to the real clock.
DNSSEC_VERIFY_CLOCK_SKEW_SECONDS: Final = 300
#: How many ports free_port() tries before giving up.
FREE_PORT_ATTEMPTS: Final = 16
#: How many times Unbound starts on a fresh port when the port was taken meanwhile.
UNBOUND_START_ATTEMPTS: Final = 3
#: How long Unbound may take to answer its first query.
UNBOUND_READY_SECONDS: Final = 10.0
#: Timeout of each readiness probe.
UNBOUND_PROBE_SECONDS: Final = 0.2
#: Timeout of one query to unbound.
UNBOUND_QUERY_SECONDS: Final = 5.0
#: How long Unbound waits for the daemon to exit after SIGTERM before SIGKILL.
UNBOUND_STOP_SECONDS: Final = 5.0
#: Lines of the unbound log shown in errors.
LOG_TAIL_LINES: Final = 30

_RRSIG_TIME_FORMAT: Final = "%Y%m%d%H%M%S"
#: What delv prints (after "resolution failed: ") when validation, not transport, failed.
_DELV_BOGUS_REASONS: Final = (
    "broken trust chain",
    "RRSIG failed to verify",
    "RRSIG has expired",
    "RRSIG validity period has not begun",
    "no valid RRSIG",
    "no valid DS",
    "no valid KEY",
    "no valid signature found",
    "insecurity proof failed",
    "must-be-secure",
)
_DELV_FAILED: Final = ";; resolution failed:"


class ToolError(RuntimeError):
    """A tool could not be run or gave no verdict (not: the tool rejected the input)."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The verdict of a zone checker.

    Attributes:
        ok: the tool exited 0 (the zone validates).
        output: the command line, stdout and stderr, for assertion messages.
    """

    ok: bool
    output: str


DelvStatus = Literal["secure", "insecure", "bogus"]


@dataclass(frozen=True, slots=True)
class DelvResult:
    """The outcome of one delv lookup.

    Attributes:
        status: ``secure`` ("; fully validated"), ``insecure`` ("; unsigned
            answer") or ``bogus`` (validation failed).
        output: the command line, stdout and stderr.
    """

    status: DelvStatus
    output: str

    @property
    def negative(self) -> bool:
        """Whether the answer was NXDOMAIN or NODATA ("; negative response, ...")."""
        return "; negative response" in self.output


@dataclass(frozen=True, slots=True)
class UnboundAnswer:
    """unbound's response to one query.

    Attributes:
        rcode: the response code as text (``NOERROR``, ``NXDOMAIN``, ``SERVFAIL``).
        ad: whether the AD (authenticated data) bit is set.
        texts: presentation form of each answer rdata of the queried type
            (RRSIGs excluded), e.g. ``'"v=alter1; ..."'`` for TXT.
    """

    rcode: str
    ad: bool
    texts: tuple[str, ...]


def require_tool(name: str) -> str:
    """Return the absolute path of a command-line tool, or skip the test.

    PATH is searched first, then the sbin directories (unbound lives in
    /usr/sbin, which a non-root PATH often lacks).

    Args:
        name: the executable's name, e.g. ``ldns-verify-zone``.

    Returns:
        The tool's absolute path.

    Raises:
        pytest.skip.Exception: the tool is not installed.
    """
    path = shutil.which(name) or shutil.which(name, path=SBIN_PATH)
    if path is None:
        package = TOOL_PACKAGES.get(name, "unknown")
        pytest.skip(f"{name} not installed (Debian package: {package})")
    return str(Path(path).resolve())


def run_tool(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            check=False,
            timeout=TOOL_TIMEOUT_SECONDS,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"{argv[0]}: no result within {TOOL_TIMEOUT_SECONDS} s") from exc


def tool_output(argv: Sequence[str], completed: subprocess.CompletedProcess[str]) -> str:
    return (
        f"$ {' '.join(argv)}\n"
        f"exit status {completed.returncode}\n"
        f"{completed.stdout}{completed.stderr}"
    )


def _rrsig_time(at: int) -> str:
    """Format a POSIX time as an RRSIG-style UTC date, ``YYYYMMDDHHMMSS``."""
    return time.strftime(_RRSIG_TIME_FORMAT, time.gmtime(at))


def ldns_verify_zone(
    zone_file: Path, *, trust_anchor_file: Path | None = None, at: int | None = None
) -> ToolResult:
    """Check a signed zone file with ldns-verify-zone.

    Checks every RRSIG, the NSEC(3) chain and (with ``trust_anchor_file``)
    that the DNSKEYs chain to the anchor. Without an anchor file the tool
    reads /usr/share/dns/root.key, which does not apply to other zones.

    Args:
        zone_file: the signed zone in presentation format, absolute names.
        trust_anchor_file: a file of DS or DNSKEY records (``-k``).
        at: POSIX time to validate at (``-t YYYYMMDDhhmmss``, UTC); the real
            clock when None.

    Returns:
        ``ok`` when the tool exits 0 ("Zone is verified and complete").

    Raises:
        pytest.skip.Exception: ldns-verify-zone is not installed.
        ToolError: the tool did not finish in time.
    """
    argv = [require_tool("ldns-verify-zone")]
    if trust_anchor_file is not None:
        argv += ["-k", str(trust_anchor_file)]
    if at is not None:
        argv += ["-t", _rrsig_time(at)]
    argv.append(str(zone_file))
    completed = run_tool(argv)
    return ToolResult(completed.returncode == 0, tool_output(argv, completed))


def dnssec_verify(zone_file: Path, origin: str, *, at: int | None = None) -> ToolResult:
    """Check a signed zone file with BIND's dnssec-verify.

    dnssec-verify checks that every rrset is signed by every algorithm in the
    DNSKEY rrset and that the DNSKEYs are self-signed. It checks RRSIG
    inception and expiration against the real clock and cannot be given
    another time, so the zone must be signed with the real time.

    Args:
        zone_file: the signed zone in presentation format.
        origin: the zone's origin (``-o``).
        at: the time the caller means to validate at; only accepted when
            within DNSSEC_VERIFY_CLOCK_SKEW_SECONDS of the real clock.

    Returns:
        ``ok`` when the tool exits 0 ("Zone fully signed").

    Raises:
        ValueError: ``at`` is far from the real clock (dnssec-verify would
            validate at a different time than asked).
        pytest.skip.Exception: dnssec-verify is not installed.
        ToolError: the tool did not finish in time.
    """
    if at is not None and abs(at - time.time()) > DNSSEC_VERIFY_CLOCK_SKEW_SECONDS:
        raise ValueError(
            f"dnssec-verify validates at the real clock and cannot be given a time; "
            f"at={at} is {int(time.time()) - at} s away: sign with the real time"
        )
    argv = [require_tool("dnssec-verify"), "-o", origin, str(zone_file)]
    completed = run_tool(argv)
    return ToolResult(completed.returncode == 0, tool_output(argv, completed))


def _ds(text: str) -> dns.rdtypes.ANY.DS.DS:
    rdata = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.DS, text)
    assert isinstance(rdata, dns.rdtypes.ANY.DS.DS)
    return rdata


def _quoted(text: str, what: str) -> str:
    if '"' in text or "\n" in text:
        raise ValueError(f"{what} cannot be quoted in a config file: {text!r}")
    return f'"{text}"'


def delv(
    server: tuple[str, int],
    name: str,
    rdtype: str,
    *,
    anchor_zone: str,
    anchor_ds: Sequence[str],
    options: Sequence[str] = (),
) -> DelvResult:
    """Look a name up with delv against one server, validating from a DS anchor.

    delv validates against the real clock (no option sets the time): zones
    it checks must be signed with the real time. It exits 0 whatever the
    verdict, so the verdict is read from its output.

    Args:
        server: the ``(host, port)`` of the authoritative server.
        name: the query name.
        rdtype: the query type, e.g. ``TXT``.
        anchor_zone: the zone the anchor is for (``+root=``).
        anchor_ds: DS rdata texts, e.g. ``"12345 15 2 ab12..."``; each becomes
            ``static-ds`` in a ``trust-anchors`` file (``-a``).
        options: more delv options, e.g. ``("+cdflag",)`` to validate the
            answers of a validating resolver (which answers SERVFAIL to bogus
            data without it).

    Returns:
        The status and output.

    Raises:
        ValueError: a DS text does not parse, or no DS is given.
        pytest.skip.Exception: delv is not installed.
        ToolError: delv gave no validation verdict (e.g. the server did not
            answer) or did not finish in time.
    """
    if not anchor_ds:
        raise ValueError("delv needs at least one DS trust anchor")
    zone = dns.name.from_text(anchor_zone).to_text()
    lines = ["trust-anchors {"]
    for text in anchor_ds:
        ds = _ds(text)
        fields = f"{ds.key_tag} {int(ds.algorithm)} {ds.digest_type}"
        lines.append(f'    {zone} static-ds {fields} "{ds.digest.hex()}";')
    lines.append("};")
    tool = require_tool("delv")
    host, port = server
    with tempfile.TemporaryDirectory(prefix="delv-") as tmp:
        anchors = Path(tmp) / "trust-anchors.conf"
        anchors.write_text("\n".join(lines) + "\n", encoding="utf-8")
        argv = [
            tool,
            f"@{host}",
            "-p",
            str(port),
            "-a",
            str(anchors),
            f"+root={zone}",
            "-c",
            "IN",
            "-t",
            rdtype,
            *options,
            "-q",
            name,
        ]
        completed = run_tool(argv)
    output = tool_output(argv, completed)
    return DelvResult(_delv_status(completed.stdout, completed.stderr, output), output)


def _delv_status(stdout: str, stderr: str, output: str) -> DelvStatus:
    for line in stdout.splitlines():
        if not line.startswith("; "):
            continue
        if line.endswith("fully validated"):
            return "secure"
        if line.endswith("unsigned answer"):
            return "insecure"
    for line in stderr.splitlines():
        if line.startswith(_DELV_FAILED):
            reason = line.removeprefix(_DELV_FAILED).strip()
            if any(bogus in reason for bogus in _DELV_BOGUS_REASONS):
                return "bogus"
    raise ToolError(f"delv gave no validation verdict:\n{output}")


def free_port(host: str = "127.0.0.1") -> int:
    """Return a port that is free for both UDP and TCP on ``host`` right now.

    The port is released before returning, so another process may take it;
    callers that start a daemon on it retry on a bind failure.

    Args:
        host: the IPv4 address to probe.

    Returns:
        The port number.

    Raises:
        ToolError: no port was free for both protocols after FREE_PORT_ATTEMPTS tries.
    """
    for _ in range(FREE_PORT_ATTEMPTS):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind((host, 0))
            port = int(udp.getsockname()[1])
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
                try:
                    tcp.bind((host, port))
                except OSError:
                    continue
                return port
    raise ToolError(f"no port free for UDP and TCP on {host} after {FREE_PORT_ATTEMPTS} tries")


def _anchor_line(record: str) -> str:
    """Normalise one DS or DNSKEY record (``owner [ttl] [class] type rdata``)."""
    try:
        rrsets = dns.zonefile.read_rrsets(
            record, rdclass=None, origin=dns.name.root, relativize=False, default_ttl=3600
        )
    except dns.exception.DNSException as exc:
        raise ValueError(f"bad trust anchor {record!r}: {exc}") from exc
    if len(rrsets) != 1 or len(rrsets[0]) != 1:
        raise ValueError(f"trust anchor must be one record: {record!r}")
    rrset = rrsets[0]
    if rrset.rdtype not in (dns.rdatatype.DS, dns.rdatatype.DNSKEY):
        raise ValueError(f"trust anchor must be DS or DNSKEY: {record!r}")
    rdtype = dns.rdatatype.to_text(rrset.rdtype)
    return f"{rrset.name.to_text()} {rdtype} {rrset[0].to_text()}"


class Unbound:
    """A validating unbound on 127.0.0.1 that resolves one zone from our server.

    The zone is a stub zone pointing at ``upstream``; everything else is
    refused locally (``local-zone: "." refuse``), so unbound never primes the
    root or queries the internet. Trust-anchor signalling (RFC 8145 ``_ta-``
    queries) is off. Validation happens at ``at`` (``val-override-date``)
    when given, else at the real clock. unbound caches answers, bogus ones
    included: use distinct names, or a fresh instance, per served zone.

    Use as a context manager::

        with Unbound(tmp_path, zone="example.com.", upstream=server.address,
                     trust_anchors=[f"example.com. DS {ds}"]) as unbound:
            answer = unbound.query("_alter.example.com.", "TXT")
    """

    def __init__(
        self,
        workdir: Path,
        *,
        zone: str,
        upstream: tuple[str, int],
        trust_anchors: Sequence[str],
        at: int | None = None,
        more_stubs: Sequence[tuple[str, tuple[str, int]]] = (),
    ) -> None:
        """Prepare the configuration; nothing runs until :meth:`start`.

        Args:
            workdir: directory for unbound.conf, the pid file and the logs
                (created if missing).
            zone: the zone to resolve from ``upstream``.
            upstream: the ``(IPv4 address, port)`` of the authoritative server.
            trust_anchors: DS or DNSKEY records, one ``trust-anchor:`` each,
                e.g. ``"example.com. DS 12345 15 2 ab12..."``.
            at: POSIX time to validate at; the real clock when None.
            more_stubs: further ``(zone, (address, port))`` stub zones, e.g. a
                parent zone that serves the DS of ``zone``.

        Raises:
            ValueError: an anchor does not parse, or a path holds a quote.
            pytest.skip.Exception: unbound is not installed.
        """
        self._tool = require_tool("unbound")
        self._workdir = workdir.resolve()
        _quoted(str(self._workdir), "workdir")
        self._zone = dns.name.from_text(zone).to_text()
        self._upstream = upstream
        self._anchors = tuple(_anchor_line(record) for record in trust_anchors)
        if not self._anchors:
            raise ValueError("unbound needs at least one trust anchor")
        self._at = at
        self._stubs = (
            (self._zone, upstream),
            *tuple((dns.name.from_text(name).to_text(), address) for name, address in more_stubs),
        )
        self._process: subprocess.Popen[bytes] | None = None
        self._address: tuple[str, int] | None = None

    @property
    def config_file(self) -> Path:
        """The configuration file unbound runs with."""
        return self._workdir / "unbound.conf"

    @property
    def log_file(self) -> Path:
        """unbound's log (``logfile:``)."""
        return self._workdir / "unbound.log"

    @property
    def console_file(self) -> Path:
        """unbound's stdout and stderr (messages before the log file opens)."""
        return self._workdir / "unbound.console"

    @property
    def address(self) -> tuple[str, int]:
        """The ``(host, port)`` unbound listens on.

        Raises:
            ToolError: unbound is not running.
        """
        if self._address is None:
            raise ToolError("unbound is not running")
        return self._address

    def config(self, port: int) -> str:
        """Return the unbound.conf text for listening on ``port``.

        Args:
            port: the UDP and TCP port on 127.0.0.1.

        Returns:
            The configuration.
        """
        workdir = self._workdir
        server = [
            "interface: 127.0.0.1",
            f"port: {port}",
            "do-ip6: no",
            "do-daemonize: no",
            'username: ""',
            'chroot: ""',
            f'directory: "{workdir}"',
            f'pidfile: "{workdir / "unbound.pid"}"',
            "use-syslog: no",
            f'logfile: "{self.log_file}"',
            "verbosity: 1",
            "val-log-level: 2",
            "num-threads: 1",
            "do-not-query-localhost: no",
            'module-config: "validator iterator"',
            "qname-minimisation: no",
            "trust-anchor-signaling: no",
            'local-zone: "." refuse',
            *(f'local-zone: "{name}" transparent' for name, _ in self._stubs),
            *(f"trust-anchor: {_quoted(anchor, 'trust anchor')}" for anchor in self._anchors),
        ]
        if self._at is not None:
            server.append(f'val-override-date: "{_rrsig_time(self._at)}"')
        stubs = [
            line
            for name, (host, port) in self._stubs
            for line in ("stub-zone:", f'    name: "{name}"', f"    stub-addr: {host}@{port}")
        ]
        sections = [
            "server:",
            *(f"    {line}" for line in server),
            *stubs,
            "remote-control:",
            "    control-enable: no",
        ]
        return "\n".join(sections) + "\n"

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """Return the last lines of unbound's console output and log, for error messages.

        Args:
            lines: how many lines of each to return.

        Returns:
            The lines, or a note that the files are missing.
        """
        parts = []
        for path in (self.console_file, self.log_file):
            if path.exists():
                text = path.read_text(encoding="utf-8", errors="replace").splitlines()
                parts.append(f"--- {path.name}\n" + "\n".join(text[-lines:]))
            else:
                parts.append(f"--- {path.name} (missing)")
        return "\n".join(parts)

    def start(self) -> None:
        """Write the configuration, start ``unbound -d`` and wait until it answers.

        Raises:
            ToolError: unbound is running already, exits, or does not answer
                within UNBOUND_READY_SECONDS; the message ends with its log.
        """
        if self._process is not None:
            raise ToolError("unbound is running already")
        self._workdir.mkdir(parents=True, exist_ok=True)
        for attempt in range(UNBOUND_START_ATTEMPTS):
            port = free_port()
            self.config_file.write_text(self.config(port), encoding="utf-8")
            self.log_file.unlink(missing_ok=True)
            with self.console_file.open("wb") as console:
                process = subprocess.Popen(
                    [self._tool, "-d", "-c", str(self.config_file)],
                    stdin=subprocess.DEVNULL,
                    stdout=console,
                    stderr=subprocess.STDOUT,
                )
            if self._wait_ready(process, port):
                self._process = process
                self._address = ("127.0.0.1", port)
                return
            _stop(process)
            port_taken = "could not open ports" in self.log_tail()
            if not (port_taken and attempt + 1 < UNBOUND_START_ATTEMPTS):
                raise ToolError(
                    f"unbound did not start on 127.0.0.1@{port} "
                    f"(exit status {process.returncode}):\n{self.log_tail()}"
                )
        raise AssertionError("unreachable")  # pragma: no cover - the loop raises or returns

    def _wait_ready(self, process: subprocess.Popen[bytes], port: int) -> bool:
        """Poll with a local query (``version.server CH TXT``) until unbound answers."""
        probe = dns.message.make_query("version.server.", "TXT", "CH")
        deadline = time.monotonic() + UNBOUND_READY_SECONDS
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return False
            try:
                dns.query.udp(probe, "127.0.0.1", timeout=UNBOUND_PROBE_SECONDS, port=port)
            except (dns.exception.Timeout, OSError):
                time.sleep(0.05)
                continue
            return True
        return False

    def stop(self) -> None:
        """Terminate unbound and wait for it to exit. Idempotent."""
        process, self._process, self._address = self._process, None, None
        if process is not None:
            _stop(process)

    def query(self, name: str, rdtype: str) -> UnboundAnswer:
        """Ask unbound one question with RD and DO set (UDP, then TCP if truncated).

        Args:
            name: the query name.
            rdtype: the query type, e.g. ``TXT``.

        Returns:
            The rcode, the AD bit and the answer rdata of type ``rdtype``.

        Raises:
            ToolError: unbound is not running or does not answer.
        """
        host, port = self.address
        query = dns.message.make_query(name, rdtype, want_dnssec=True)
        query.flags |= dns.flags.RD
        try:
            response = dns.query.udp(query, host, timeout=UNBOUND_QUERY_SECONDS, port=port)
            if response.flags & dns.flags.TC:
                response = dns.query.tcp(query, host, timeout=UNBOUND_QUERY_SECONDS, port=port)
        except (dns.exception.DNSException, OSError) as exc:
            raise ToolError(f"unbound did not answer {name} {rdtype}: {exc}") from exc
        wanted = dns.rdatatype.from_text(rdtype)
        texts = tuple(
            rdata.to_text()
            for rrset in response.answer
            if rrset.rdtype == wanted
            for rdata in rrset
        )
        return UnboundAnswer(
            rcode=dns.rcode.to_text(response.rcode()),
            ad=bool(response.flags & dns.flags.AD),
            texts=texts,
        )

    def __enter__(self) -> Unbound:
        """Start unbound.

        Raises:
            ToolError: see :meth:`start`.
        """
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop unbound."""
        self.stop()


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=UNBOUND_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
