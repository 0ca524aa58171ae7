"""Typed harness around real authoritative DNS servers, for integration tests.

BIND (``named``), Knot DNS (``knotd``) and NSD (``nsd``) run as child
processes on 127.0.0.1 and a free port (or on the loopback address and the
fixed port given as ``host=`` and ``port=``, as tests/integration/hierarchy.py
runs them on port 53), each in its own working directory with its own
configuration, pid file, journals and logs: no chroot, no user switch, no
control channel on a fixed port and nothing under /etc or /run, so the same
configuration works for root and for an unprivileged user, and never touches
a system instance. Every class resolves its daemon with :func:`require_daemon`,
so a test skips with a visible reason (and the Debian package to install)
where the daemon is missing. Each daemon leads its own process group, so
:meth:`~AuthoritativeServer.stop` and :meth:`~AuthoritativeServer.kill` end
the workers it forked too (NSD's); ``with`` always ends them.

Two ways of serving a zone:

* **pre-signed** (the default): the zone file, already DNSSEC-signed by
  alter-publish, is served as it is. No signing policy is configured and the
  servers hold no keys, so they never re-sign.
* **inline signing** (:class:`Named` and :class:`Knot`, ``inline_signing=True``):
  the DNSSEC records of the zone file are dropped from the served copy and the
  server signs the zone with its own Ed25519 key (a CSK), made at first
  start; it raises the SOA serial as it signs. The server is ready once its
  SOA answer carries an RRSIG. :meth:`AuthoritativeServer.trust_anchor_ds`
  gives the DS to validate its answers to.

With a :class:`TsigKey`, zone transfers (AXFR/IXFR) are allowed when signed
with it; with ``allow_update=True`` (:class:`Named` and :class:`Knot`; NSD
has no dynamic updates) RFC 2136 updates signed with it are accepted too.
Unsigned requests are refused (named: REFUSED, knotd: NOTAUTH); a request
signed with a wrong secret gets a BADSIG TSIG error, which dnspython raises
as :class:`dns.tsig.PeerBadSignature`. Updates are meant for inline
signing: on a pre-signed zone named answers SERVFAIL (it has no private keys
to re-sign with) and knotd applies them unsigned (the changed names turn
bogus). Accepted updates are journaled and survive :meth:`~AuthoritativeServer.kill`
and a restart.

Use as a context manager::

    with Named(tmp_path / "named", "example.com", zone_file) as server:
        host, port = server.address
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Final, Self

import dns.dnssec
import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.DNSKEY
import dns.rdtypes.ANY.SOA
import dns.rdtypes.dnskeybase
import dns.rrset
import dns.tsig
import dns.zone
import pytest

from tests.integration.dnssec_tools import (
    SBIN_PATH,
    ToolError,
    ToolResult,
    free_port,
    require_tool,
    run_tool,
    tool_output,
)

__all__ = [
    "DNSSEC_TYPES",
    "SERVER_PACKAGES",
    "AuthoritativeServer",
    "Knot",
    "Named",
    "Nsd",
    "TsigKey",
    "make_tsig_key",
    "read_tsig_key",
    "require_daemon",
]

#: The Debian package that ships each daemon or helper this module runs.
SERVER_PACKAGES: Final = {
    "named": "bind9",
    "named-checkconf": "bind9",
    "tsig-keygen": "bind9",
    "knotd": "knot",
    "knotc": "knot",
    "nsd": "nsd",
    "nsd-checkconf": "nsd",
}
#: The address every server listens on.
LOOPBACK: Final = "127.0.0.1"
#: How long a server may take to answer ``SOA <zone>`` authoritatively (signed, if signing).
SERVER_READY_SECONDS: Final = 10.0
#: Timeout of each readiness probe.
SERVER_PROBE_SECONDS: Final = 0.2
#: Timeout of one query to a server.
SERVER_QUERY_SECONDS: Final = 5.0
#: How long stop() waits for the daemon to exit after SIGTERM before SIGKILL.
SERVER_STOP_SECONDS: Final = 5.0
#: How long reload() must see the new serial without a lapse: the old workers of a
#: reloading NSD answer a few more queries from the shared sockets after the new ones.
RELOAD_SETTLE_SECONDS: Final = 0.2
#: How many times start() tries a fresh port when the port was taken meanwhile.
SERVER_START_ATTEMPTS: Final = 3
#: Lines of each log shown in errors.
LOG_TAIL_LINES: Final = 30
#: DNSSEC record types, dropped from the served copy when the server signs itself.
DNSSEC_TYPES: Final = frozenset(
    {
        dns.rdatatype.RRSIG,
        dns.rdatatype.NSEC,
        dns.rdatatype.NSEC3,
        dns.rdatatype.NSEC3PARAM,
        dns.rdatatype.DNSKEY,
        dns.rdatatype.CDS,
        dns.rdatatype.CDNSKEY,
    }
)
#: The only TSIG algorithm the harness configures (``tsig-keygen -a hmac-sha256``).
TSIG_ALGORITHM: Final = "hmac-sha256"
#: Log lines that mean the port was taken between free_port() and the daemon's bind().
_PORT_TAKEN: Final = ("address in use", "address already in use")
#: A BIND key clause: ``key "name" { algorithm a; secret "s"; };`` (comments allowed).
_KEY_CLAUSE: Final = re.compile(
    r"""\bkey\s+"?(?P<name>[^"\s{]+)"?\s*\{(?P<body>[^}]*)\}\s*;""", re.DOTALL
)
#: A quoted string (kept: a secret may hold "//") or a comment (#, //, /* */).
_COMMENT_OR_STRING: Final = re.compile(r'"[^"]*"|#[^\n]*|//[^\n]*|/\*.*?\*/', re.DOTALL)
_KEY_ALGORITHM: Final = re.compile(r"\balgorithm\s+\"?(?P<value>[A-Za-z0-9.-]+)\"?\s*;")
_KEY_SECRET: Final = re.compile(r"\bsecret\s+\"(?P<value>[A-Za-z0-9+/=]+)\"\s*;")
#: Characters that would break out of a quoted string in a configuration file.
_UNSAFE_IN_QUOTES: Final = frozenset('"\\\n{};#')


def _quoted(text: str, what: str) -> str:
    """``text`` unchanged, once it is known to be safe inside a quoted config value."""
    bad = sorted(set(text) & _UNSAFE_IN_QUOTES)
    if bad:
        raise ValueError(f"{what} {text!r} holds {''.join(bad)!r}, unsafe in a quoted config value")
    return text


def require_daemon(name: str) -> str:
    """Return the absolute path of a server daemon or helper, or skip the test.

    Like :func:`require_tool`, with the Debian packages of the servers.

    Args:
        name: the executable's name, e.g. ``knotd``.

    Returns:
        The executable's absolute path.

    Raises:
        pytest.skip.Exception: it is not installed.
    """
    if name not in SERVER_PACKAGES:
        return require_tool(name)
    path = shutil.which(name) or shutil.which(name, path=SBIN_PATH)
    if path is None:
        pytest.skip(f"{name} not installed (Debian package: {SERVER_PACKAGES[name]})")
    return str(Path(path).resolve())


# --------------------------------------------------------------------------
# TSIG keys
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TsigKey:
    """A TSIG key as BIND writes it (``tsig-keygen -a hmac-sha256 NAME``).

    Attributes:
        name: the key name, absolute and lower-case without the final dot,
            e.g. ``alter-push``.
        algorithm: the HMAC algorithm, e.g. ``hmac-sha256``.
        secret: the shared secret, base64.
    """

    name: str
    algorithm: str
    secret: str

    def __post_init__(self) -> None:
        """Check the fields.

        Raises:
            ValueError: a bad name or algorithm, or a secret that is not base64.
        """
        try:
            dns.name.from_text(self.name)
        except dns.exception.DNSException as exc:
            raise ValueError(f"TSIG key name {self.name!r}: {exc}") from exc
        _quoted(self.name, "TSIG key name")
        if not re.fullmatch(r"hmac-[a-z0-9]+", self.algorithm):
            raise ValueError(f"TSIG key {self.name!r}: unknown algorithm {self.algorithm!r}")
        try:
            decoded = base64.b64decode(self.secret, validate=True)
        except ValueError as exc:
            raise ValueError(f"TSIG key {self.name!r}: secret is not base64") from exc
        if not decoded:
            raise ValueError(f"TSIG key {self.name!r}: empty secret")

    @classmethod
    def parse(cls, text: str) -> TsigKey:
        """Parse one BIND ``key`` clause, as written by tsig-keygen.

        Args:
            text: the clause, e.g. ``key "k" { algorithm hmac-sha256; secret "..."; };``.

        Returns:
            The key; the name is made canonical (lower case, no final dot).

        Raises:
            ValueError: no key clause, more than one, or a bad field.
        """
        uncommented = _COMMENT_OR_STRING.sub(
            lambda match: match[0] if match[0].startswith('"') else " ", text
        )
        clauses = list(_KEY_CLAUSE.finditer(uncommented))
        if len(clauses) != 1:
            raise ValueError(f"expected one BIND key clause, found {len(clauses)}")
        (clause,) = clauses
        body = clause["body"]
        algorithm = _KEY_ALGORITHM.search(body)
        secret = _KEY_SECRET.search(body)
        if algorithm is None or secret is None:
            raise ValueError(f"key {clause['name']!r}: needs 'algorithm' and 'secret'")
        name = dns.name.from_text(clause["name"]).canonicalize().to_text(omit_final_dot=True)
        return cls(name=name, algorithm=algorithm["value"].lower(), secret=secret["value"])

    def to_text(self) -> str:
        """Return the key as a BIND key clause, the inverse of :meth:`parse`.

        Returns:
            ``key "name" {\\n\\talgorithm ...;\\n\\tsecret "...";\\n};\\n``.
        """
        return (
            f'key "{self.name}" {{\n\talgorithm {self.algorithm};\n\tsecret "{self.secret}";\n}};\n'
        )

    @property
    def dns_name(self) -> dns.name.Name:
        """The key name as a dnspython name."""
        return dns.name.from_text(self.name)

    def keyring(self) -> dict[dns.name.Name, dns.tsig.Key]:
        """Return a dnspython keyring holding this key.

        Returns:
            ``{name: dns.tsig.Key}``, for ``Message.use_tsig``, ``dns.update.UpdateMessage``
            (``keyring=``) and ``dns.query`` (``keyring=``).
        """
        return {self.dns_name: dns.tsig.Key(self.dns_name, self.secret, self.algorithm)}


def read_tsig_key(path: Path) -> TsigKey:
    """Read a BIND key file holding one key clause.

    Args:
        path: the file, e.g. as written by ``tsig-keygen -a hmac-sha256 NAME > path``.

    Returns:
        The key.

    Raises:
        ValueError: the file does not hold exactly one well-formed key clause.
        OSError: the file cannot be read.
    """
    try:
        return TsigKey.parse(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc


def make_tsig_key(workdir: Path, name: str) -> tuple[TsigKey, Path]:
    """Make a fresh HMAC-SHA256 TSIG key with BIND's ``tsig-keygen``.

    Args:
        workdir: directory for the key file (created if missing).
        name: the key name, e.g. ``alter-push``.

    Returns:
        The key and the file it was written to, ``<workdir>/<name>.key`` (mode 0600).

    Raises:
        pytest.skip.Exception: tsig-keygen is not installed.
        ToolError: tsig-keygen failed or wrote something that does not parse.
    """
    argv = [require_daemon("tsig-keygen"), "-a", TSIG_ALGORITHM, name]
    completed = run_tool(argv)
    if completed.returncode != 0:
        raise ToolError(tool_output(argv, completed))
    try:
        key = TsigKey.parse(completed.stdout)
    except ValueError as exc:
        raise ToolError(f"tsig-keygen wrote an unreadable key: {exc}\n{completed.stdout}") from exc
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"{name}.key"
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(completed.stdout, encoding="utf-8")
    return key, path


# --------------------------------------------------------------------------
# The servers
# --------------------------------------------------------------------------


class AuthoritativeServer:
    """An authoritative name server for one zone, run as a child process on loopback.

    Subclasses say how to configure and run one daemon. The daemon runs in
    its own process group (NSD forks workers), so :meth:`kill` and
    :meth:`stop` end every process it made.

    Attributes:
        DAEMON: the executable's name.
        SIGNS: whether the server can sign the zone itself.
        UPDATES: whether the server accepts dynamic updates.
    """

    DAEMON: ClassVar[str]
    SIGNS: ClassVar[bool] = False
    UPDATES: ClassVar[bool] = False

    def __init__(
        self,
        workdir: Path,
        zone: str,
        zone_file: Path | None,
        *,
        tsig: TsigKey | None = None,
        allow_update: bool = False,
        inline_signing: bool = False,
        host: str = LOOPBACK,
        port: int | None = None,
        secondary_of: tuple[str, int] | None = None,
        notify: Sequence[tuple[str, int]] = (),
    ) -> None:
        """Prepare the server; nothing runs or is written until :meth:`start`.

        Args:
            workdir: directory for the configuration, the zone copy, keys,
                journals, pid file and logs (created if missing).
            zone: the zone's origin, e.g. ``example.com``.
            zone_file: the zone in presentation format; copied into ``workdir``
                (None for a secondary, which starts empty).
            tsig: a key that may transfer the zone (and update it, with
                ``allow_update``); a secondary transfers with it, and NOTIFY
                messages are signed with it.
            allow_update: accept RFC 2136 updates signed with ``tsig``.
            inline_signing: sign the zone with the server's own key instead of
                serving ``zone_file``'s signatures.
            host: the IPv4 loopback address to listen on, e.g. ``127.0.10.3``
                (any of 127.0.0.0/8 works on Linux without configuring it).
            port: listen on this port only (e.g. 53, which needs root); by
                default a free port, another one if it is taken meanwhile.
            secondary_of: be a secondary of the primary at this ``(host, port)``:
                transfer the zone from it (AXFR, then IXFR) and accept its
                NOTIFY messages; the server is ready once it serves the zone.
            notify: send NOTIFY to these ``(host, port)`` secondaries when the
                zone changes (and to no one else).

        Raises:
            ValueError: ``allow_update`` without ``tsig``, a feature this server
                lacks, a secondary given a zone file or asked to sign or take
                updates, or a path that cannot be quoted in a configuration file.
            pytest.skip.Exception: the daemon is not installed.
        """
        if secondary_of is not None and (
            zone_file is not None or allow_update or inline_signing or notify
        ):
            raise ValueError(
                "a secondary takes the zone from its primary: no zone file, "
                "no signing, no updates, no notify"
            )
        if secondary_of is None and zone_file is None:
            raise ValueError("a primary needs a zone file")
        if allow_update and tsig is None:
            raise ValueError("allow_update needs a TSIG key: unsigned updates are never allowed")
        if allow_update and not self.UPDATES:
            raise ValueError(f"{self.DAEMON} does not accept dynamic updates")
        if inline_signing and not self.SIGNS:
            raise ValueError(f"{self.DAEMON} does not sign zones")
        self._tool = require_daemon(self.DAEMON)
        self._workdir = workdir.resolve()
        _quoted(str(self._workdir), "workdir")
        self._origin = dns.name.from_text(zone)
        self.zone = self._origin.to_text(omit_final_dot=True)
        self._source = zone_file
        self.secondary_of = secondary_of
        self.notify = tuple(notify)
        self.tsig = tsig
        self.allow_update = allow_update
        self.inline_signing = inline_signing
        self._host = _quoted(host, "host")
        self._fixed_port = port
        self._process: subprocess.Popen[bytes] | None = None
        self._port: int | None = port
        self._prepared = False

    # -- paths ---------------------------------------------------------------

    @property
    def workdir(self) -> Path:
        """The server's working directory."""
        return self._workdir

    @property
    def zone_copy(self) -> Path:
        """The zone file the server loads: ``<workdir>/<zone>.zone``.

        Overwrite it and call :meth:`reload` to serve a new version.
        """
        return self._workdir / f"{self.zone}.zone"

    @property
    def config_file(self) -> Path:
        """The configuration file the daemon runs with."""
        return self._workdir / f"{self.DAEMON}.conf"

    @property
    def console_file(self) -> Path:
        """The daemon's stdout and stderr."""
        return self._workdir / f"{self.DAEMON}.console"

    @property
    def log_files(self) -> tuple[Path, ...]:
        """Every file the daemon logs to, for :meth:`log_tail`."""
        return (self.console_file,)

    # -- state ---------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether the daemon has been started and has not exited."""
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int:
        """The daemon's process id.

        Raises:
            ToolError: the server was never started, or was stopped.
        """
        if self._process is None:
            raise ToolError(f"{self.DAEMON} is not running")
        return self._process.pid

    @property
    def address(self) -> tuple[str, int]:
        """The ``(host, port)`` the server listens on, UDP and TCP.

        Raises:
            ToolError: the server is not running.
        """
        if self._port is None or self._process is None:
            raise ToolError(f"{self.DAEMON} is not running")
        return self._host, self._port

    @property
    def server_spec(self) -> str:
        """The address as ``HOST:PORT``, as the CLI's ``--server`` takes it."""
        host, port = self.address
        return f"{host}:{port}"

    # -- what subclasses provide --------------------------------------------

    def config(self, port: int) -> str:
        """Return the configuration text for listening on ``port``.

        Args:
            port: the UDP and TCP port on 127.0.0.1.

        Returns:
            The configuration.
        """
        raise NotImplementedError

    def argv(self) -> list[str]:
        """Return the command line that runs the daemon in the foreground."""
        raise NotImplementedError

    def checker_argv(self) -> list[str]:
        """Return the command line of the vendor's configuration checker."""
        raise NotImplementedError

    def _prepare_workdir(self) -> None:
        """Create per-daemon directories in the workdir (first start only)."""

    # -- lifecycle -----------------------------------------------------------

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """Return the last lines of each log, for error messages.

        Args:
            lines: how many lines of each to return.

        Returns:
            The lines, or a note that a file is missing.
        """
        parts = []
        for path in self.log_files:
            if path.exists():
                text = path.read_text(encoding="utf-8", errors="replace").splitlines()
                parts.append(f"--- {path}\n" + "\n".join(text[-lines:]))
            else:
                parts.append(f"--- {path} (missing)")
        return "\n".join(parts)

    def _prepare(self) -> None:
        """Copy the zone (without DNSSEC records when the server signs) on first start."""
        if self._prepared:
            return
        self._workdir.mkdir(parents=True, exist_ok=True)
        if self._source is None:
            pass  # a secondary: the zone comes by transfer
        elif self.inline_signing:
            zone = dns.zone.from_file(str(self._source), origin=self._origin, relativize=False)
            for name, node in list(zone.nodes.items()):
                for rdataset in list(node.rdatasets):
                    if rdataset.rdtype in DNSSEC_TYPES:
                        node.delete_rdataset(rdataset.rdclass, rdataset.rdtype, rdataset.covers)
                if not node.rdatasets:
                    zone.delete_node(name)
            zone.to_file(str(self.zone_copy), relativize=False, want_origin=True)
        else:
            shutil.copyfile(self._source, self.zone_copy)
        self._prepare_workdir()
        self._prepared = True

    def check_config(self) -> ToolResult:
        """Write the configuration and check it with the vendor's checker.

        named-checkconf (with ``-z``, which loads the zone too), ``knotc
        conf-check`` or nsd-checkconf; the server need not run.

        Returns:
            ``ok`` when the checker exits 0; ``output`` has what it said.

        Raises:
            pytest.skip.Exception: the checker is not installed.
            ToolError: the checker did not finish in time.
        """
        self._prepare()
        port = self._port if self._port is not None else free_port(self._host)
        self.config_file.write_text(self.config(port), encoding="utf-8")
        argv = self.checker_argv()
        completed = run_tool(argv)
        return ToolResult(completed.returncode == 0, tool_output(argv, completed))

    def start(self) -> None:
        """Write the configuration, start the daemon and wait until it serves the zone.

        A server that was stopped or killed starts again on its old port when
        that is still free, with its workdir (zone copy, journals, keys) as it
        was left.

        Raises:
            ToolError: the server is running already, exits, or does not answer
                ``SOA <zone>`` authoritatively (and signed, when it signs)
                within SERVER_READY_SECONDS; the message ends with its logs.
        """
        if self._process is not None:
            raise ToolError(f"{self.DAEMON} is running already")
        self._prepare()
        for attempt in range(SERVER_START_ATTEMPTS):
            port = self._next_port(attempt)
            self.config_file.write_text(self.config(port), encoding="utf-8")
            offsets = {path: _size(path) for path in self.log_files}
            with self.console_file.open("ab") as console:
                console.write(f"=== alter-publish tests: {' '.join(self.argv())}\n".encode())
                console.flush()
                process = subprocess.Popen(
                    self.argv(),
                    cwd=self._workdir,
                    stdin=subprocess.DEVNULL,
                    stdout=console,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            self._process, self._port = process, port
            try:
                ready = self._wait_ready(process, port)
            except BaseException:
                self.kill()
                raise
            if ready:
                return
            self._process = None
            _terminate(process)
            this_run = "".join(_read_from(path, offset) for path, offset in offsets.items())
            port_taken = any(text in this_run.lower() for text in _PORT_TAKEN)
            retry = self._fixed_port is None and attempt + 1 < SERVER_START_ATTEMPTS
            if not (port_taken and retry):
                state = (
                    f"exit status {process.returncode}"
                    if process.returncode is not None and process.returncode >= 0
                    else f"no answer within {SERVER_READY_SECONDS} s"
                )
                raise ToolError(
                    f"{self.DAEMON} did not serve {self.zone} on {self._host}@{port} "
                    f"({state}):\n{self.log_tail()}"
                )
        raise AssertionError("unreachable")  # pragma: no cover - the loop raises or returns

    def _next_port(self, attempt: int) -> int:
        """The fixed port; else the old port first (a restart), then free ones."""
        if self._fixed_port is not None:
            return self._fixed_port
        if attempt == 0 and self._port is not None:
            return self._port
        return free_port(self._host)

    def _wait_ready(self, process: subprocess.Popen[bytes], port: int) -> bool:
        """Poll ``SOA <zone>`` over UDP until the answer is authoritative (and signed)."""
        probe = dns.message.make_query(self._origin, "SOA", want_dnssec=self.inline_signing)
        deadline = time.monotonic() + SERVER_READY_SECONDS
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return False
            try:
                response = dns.query.udp(probe, self._host, timeout=SERVER_PROBE_SECONDS, port=port)
            except (dns.exception.DNSException, OSError):
                time.sleep(0.05)
                continue
            if self._serves(response):
                return True
            time.sleep(0.05)
        return False

    def _serves(self, response: dns.message.Message) -> bool:
        if response.rcode() != dns.rcode.NOERROR or not response.flags & dns.flags.AA:
            return False
        types = {rrset.rdtype for rrset in response.answer if rrset.name == self._origin}
        if dns.rdatatype.SOA not in types:
            return False
        return not self.inline_signing or dns.rdatatype.RRSIG in types

    def stop(self) -> None:
        """Terminate the daemon (SIGTERM, SIGKILL after SERVER_STOP_SECONDS). Idempotent."""
        process, self._process = self._process, None
        if process is not None:
            _terminate(process)

    def kill(self) -> None:
        """Kill the daemon and its children with SIGKILL, as a crash would. Idempotent."""
        process, self._process = self._process, None
        if process is not None:
            _kill_group(process)

    def reload(self, *, serial: int | None = None) -> None:
        """Ask the daemon to reload its zone (SIGHUP), e.g. after :attr:`zone_copy` changed.

        A pre-signed zone is then served exactly as the new file says
        (knotd drops earlier dynamic updates with it). A zone the
        server signs takes the file's changes only when its serial is above
        the one served (:meth:`soa_serial`); knotd keeps earlier updates.
        named does not reload a zone that accepts updates (BIND wants
        ``rndc freeze``/``thaw`` around edits, and the harness runs no rndc).

        Args:
            serial: wait until the server answers with this SOA serial, and
                only with it, for RELOAD_SETTLE_SECONDS.

        Raises:
            ToolError: the server is not running, or does not serve ``serial``
                within SERVER_READY_SECONDS.
        """
        if self._process is None:
            raise ToolError(f"{self.DAEMON} is not running")
        self._process.send_signal(signal.SIGHUP)
        if serial is None:
            return
        deadline = time.monotonic() + SERVER_READY_SECONDS
        last: int | None = None
        settled_from: float | None = None
        while time.monotonic() < deadline:
            try:
                last = self.soa_serial()
            except ToolError:
                last = None
            if last != serial:
                settled_from = None
            elif settled_from is None:
                settled_from = time.monotonic()
            elif time.monotonic() - settled_from >= RELOAD_SETTLE_SECONDS:
                return
            time.sleep(0.02)
        raise ToolError(
            f"{self.DAEMON} serves serial {last}, not {serial}, after reload:\n{self.log_tail()}"
        )

    def __enter__(self) -> Self:
        """Start the server.

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
        """Stop the server."""
        self.stop()

    # -- queries -------------------------------------------------------------

    def query(
        self,
        name: str | dns.name.Name,
        rdtype: str | dns.rdatatype.RdataType,
        *,
        want_dnssec: bool = True,
        tcp: bool = False,
    ) -> dns.message.Message:
        """Ask the server one question (UDP, then TCP if truncated; or TCP only).

        Args:
            name: the query name; relative names are taken as absolute.
            rdtype: the query type, e.g. ``TXT``.
            want_dnssec: set the DO bit, so RRSIGs come along.
            tcp: ask over TCP only.

        Returns:
            The response, whatever its rcode.

        Raises:
            ToolError: the server is not running or does not answer.
        """
        host, port = self.address
        query = dns.message.make_query(name, rdtype, want_dnssec=want_dnssec)
        try:
            if not tcp:
                response = dns.query.udp(query, host, timeout=SERVER_QUERY_SECONDS, port=port)
                if not response.flags & dns.flags.TC:
                    return response
            return dns.query.tcp(query, host, timeout=SERVER_QUERY_SECONDS, port=port)
        except (dns.exception.DNSException, OSError) as exc:
            raise ToolError(
                f"{self.DAEMON} did not answer {name} {rdtype}: {exc}\n{self.log_tail()}"
            ) from exc

    def rrset(
        self, name: str | dns.name.Name, rdtype: str | dns.rdatatype.RdataType
    ) -> dns.rrset.RRset:
        """Return the answer rrset of one type at one name (DO bit set).

        Args:
            name: the owner name.
            rdtype: the type, e.g. ``DNSKEY``.

        Returns:
            The rrset.

        Raises:
            ToolError: the server does not answer, or answers without that rrset.
        """
        owner = dns.name.from_text(name) if isinstance(name, str) else name
        wanted = dns.rdatatype.RdataType.make(rdtype)
        response = self.query(owner, wanted)
        for rrset in response.answer:
            if rrset.name == owner and rrset.rdtype == wanted:
                return rrset
        raise ToolError(
            f"{self.DAEMON}: no {wanted.name} at {owner} "
            f"(rcode {dns.rcode.to_text(response.rcode())})"
        )

    def soa_serial(self) -> int:
        """Return the SOA serial the server answers with.

        Raises:
            ToolError: the server does not answer with the zone's SOA.
        """
        (soa,) = self.rrset(self._origin, dns.rdatatype.SOA)
        assert isinstance(soa, dns.rdtypes.ANY.SOA.SOA)
        return int(soa.serial)

    def dnskeys(self) -> dns.rrset.RRset:
        """Return the zone's DNSKEY rrset as served.

        Raises:
            ToolError: the server serves no DNSKEY rrset.
        """
        return self.rrset(self._origin, dns.rdatatype.DNSKEY)

    def trust_anchor_ds(self, digest: str = "SHA256") -> tuple[str, ...]:
        """Return DS records for the served secure entry points, as a trust anchor.

        One DS per DNSKEY with the SEP flag (a KSK or CSK; every key when none
        has it), in the format of ``build/<zone>.ds``:
        ``example.com. 3600 IN DS 12345 15 2 ab12...``. Write them to a file
        for ``--trust-anchor``, or hand them to :class:`Unbound`.

        Args:
            digest: the DS digest type, ``SHA256`` or ``SHA384``.

        Returns:
            The records.

        Raises:
            ToolError: the server serves no DNSKEY rrset.
        """
        dnskeys = self.dnskeys()
        keys = [key for key in dnskeys if isinstance(key, dns.rdtypes.ANY.DNSKEY.DNSKEY)]
        sep = [key for key in keys if key.flags & dns.rdtypes.dnskeybase.Flag.SEP] or keys
        origin = self._origin.to_text()
        return tuple(
            f"{origin} {dnskeys.ttl} IN DS {dns.dnssec.make_ds(self._origin, key, digest)}"
            for key in sep
        )

    def write_trust_anchor(self, path: Path) -> Path:
        """Write :meth:`trust_anchor_ds` to ``path``, one record a line.

        Args:
            path: the file to write.

        Returns:
            ``path``.

        Raises:
            ToolError: the server serves no DNSKEY rrset.
        """
        path.write_text("\n".join(self.trust_anchor_ds()) + "\n", encoding="utf-8")
        return path


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _read_from(path: Path, offset: int) -> str:
    """The text of ``path`` after byte ``offset`` (what one run of the daemon logged)."""
    try:
        with path.open("rb") as file:
            file.seek(offset)
            return file.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def _terminate(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the daemon, wait, then SIGKILL whatever is left of its process group."""
    if process.poll() is None:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=SERVER_STOP_SECONDS)
    _kill_group(process)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL every process in the daemon's process group and wait until none lives.

    The daemon leads its own session, so its process group id is its pid.
    Forked workers (NSD's) are reparented when the leader dies and reaped by
    init, not by us: they are waited for through /proc, where a zombie no
    longer counts (it holds no sockets).
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + SERVER_STOP_SECONDS
    while _group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.02)


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still running (Linux /proc; else False)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return False
    for stat in proc.glob("[0-9]*/stat"):
        try:
            text = stat.read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
        fields = text[text.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


class Named(AuthoritativeServer):
    """BIND 9 ``named -g``, primary for one zone.

    Pre-signed zones are served as they are (``dnssec-policy none``, no keys
    in the key directory). ``inline_signing`` sets ``dnssec-policy`` (one
    Ed25519 CSK, keys in ``<workdir>/keys``) with ``inline-signing yes``: the
    zone copy stays unsigned and named serves a signed version of it
    (``<zone>.zone.signed``). Updates go through ``update-policy``, granted to
    the TSIG key for every name in the zone.
    """

    DAEMON = "named"
    SIGNS = True
    UPDATES = True
    #: The name of the signing policy in named.conf.
    POLICY: ClassVar[str] = "alter-test"

    def _prepare_workdir(self) -> None:
        (self.workdir / "keys").mkdir(exist_ok=True)

    def argv(self) -> list[str]:
        """``named -g -4 -n 1 -c named.conf``: foreground, log to stderr, IPv4, one worker."""
        return [self._tool, "-g", "-4", "-n", "1", "-c", str(self.config_file)]

    def checker_argv(self) -> list[str]:
        """``named-checkconf -z named.conf``: the configuration and the zone it loads."""
        return [require_daemon("named-checkconf"), "-z", str(self.config_file)]

    def config(self, port: int) -> str:
        """Return named.conf for listening on ``port``; see :meth:`AuthoritativeServer.config`."""
        work = self.workdir
        options = [
            f'directory "{work}";',
            f'pid-file "{work / "named.pid"}";',
            f'lock-file "{work / "named.lock"}";',
            f'session-keyfile "{work / "session.key"}";',
            f'managed-keys-directory "{work}";',
            f'dump-file "{work / "named_dump.db"}";',
            f'statistics-file "{work / "named.stats"}";',
            f'memstatistics-file "{work / "named.memstats"}";',
            f'key-directory "{work / "keys"}";',
            f"listen-on port {port} {{ {self._host}; }};",
            "listen-on-v6 { none; };",
            "recursion no;",
            "dnssec-validation no;",
            "notify no;",
            "automatic-interface-scan no;",
        ]
        zone = self._zone_statements()
        if self.allow_update and self.tsig is not None:
            zone.append(f'update-policy {{ grant "{self.tsig.name}" zonesub ANY; }};')
        if self.inline_signing:
            zone += [f'dnssec-policy "{self.POLICY}";', "inline-signing yes;"]
        sections = []
        if self.tsig is not None:
            sections.append(self.tsig.to_text())
        sections += [
            _block("options", options),
            "controls { };\n",
        ]
        if self.inline_signing:
            policy = [
                "keys { csk lifetime unlimited algorithm ed25519; };",
                "signatures-validity 14d;",
                "signatures-refresh 5d;",
            ]
            sections.append(_block(f'dnssec-policy "{self.POLICY}"', policy))
        sections.append(_block(f'zone "{self.zone}"', zone))
        return "".join(sections)

    def _key_match(self) -> str:
        return f'key "{self.tsig.name}";' if self.tsig is not None else "none;"

    def _zone_statements(self) -> list[str]:
        """A primary's file and transfer ACL (and NOTIFY), or a secondary's primary."""
        key = f' key "{self.tsig.name}"' if self.tsig is not None else ""
        if self.secondary_of is not None:
            host, port = self.secondary_of
            return [
                "type secondary;",
                f'file "{self.zone_copy}";',
                f"primaries {{ {host} port {port}{key}; }};",
                f"allow-transfer {{ {self._key_match()} }};",
            ]
        zone = [
            "type primary;",
            f'file "{self.zone_copy}";',
            f"allow-transfer {{ {self._key_match()} }};",
        ]
        if self.notify:
            targets = " ".join(f"{host} port {port}{key};" for host, port in self.notify)
            zone += ["notify explicit;", "notify-delay 0;", f"also-notify {{ {targets} }};"]
            # From the address it listens on: a secondary takes NOTIFY from its primary only.
            zone.append(f"notify-source {self._host};")
        return zone


class Knot(AuthoritativeServer):
    """Knot DNS ``knotd`` (foreground), primary for one zone.

    The zone copy is never written back (``zonefile-sync: -1``); changes
    (updates, signatures) live in the journal under ``<workdir>/db``, so a
    restart after :meth:`kill` keeps them. Pre-signed zones are served as
    they are (``dnssec-signing: off``, ``zonefile-load: whole``, journal of
    changes only). ``inline_signing`` sets ``dnssec-signing: on`` with a
    policy of one Ed25519 CSK (``single-type-signing: on``), keys in the KASP
    database, and ``zonefile-load: difference`` with ``journal-content: all``:
    the zone copy is the unsigned input, an edit with a higher serial is
    applied as a difference, and updates survive restarts (with
    ``difference-no-serial`` a restart would revert them to the file). Updates
    are allowed by an ACL ``action: update`` bound to the TSIG key.
    """

    DAEMON = "knotd"
    SIGNS = True
    UPDATES = True
    #: The id of the signing policy in knot.conf.
    POLICY: ClassVar[str] = "alter-test"

    @property
    def config_file(self) -> Path:
        """knot.conf in the workdir."""
        return self.workdir / "knot.conf"

    def _prepare_workdir(self) -> None:
        (self.workdir / "db").mkdir(exist_ok=True)

    def argv(self) -> list[str]:
        """``knotd -c knot.conf``: without ``-d`` knotd stays in the foreground."""
        return [self._tool, "-c", str(self.config_file)]

    def checker_argv(self) -> list[str]:
        """``knotc -c knot.conf conf-check``."""
        return [require_daemon("knotc"), "-c", str(self.config_file), "conf-check"]

    def config(self, port: int) -> str:
        """Return knot.conf for listening on ``port``; see :meth:`AuthoritativeServer.config`."""
        work = self.workdir
        lines = [
            "server:",
            f'    rundir: "{work}"',
            f'    pidfile: "{work / "knot.pid"}"',
            f"    listen: {self._host}@{port}",
            "    udp-workers: 1",
            "    tcp-workers: 1",
            "    background-workers: 1",
            "",
            "database:",
            f'    storage: "{work / "db"}"',
            "",
            "control:",
            '    listen: "knot.sock"',
            "",
            "log:",
            "  - target: stderr",
            "    any: info",
            "",
        ]
        key = [f'    key: "{self.tsig.name}"'] if self.tsig is not None else []
        acl: list[str] = []
        if self.tsig is not None:
            tsig = self.tsig
            lines += [
                "key:",
                f'  - id: "{tsig.name}"',
                f"    algorithm: {tsig.algorithm}",
                f"    secret: {tsig.secret}",
                "",
            ]
            acl += ["  - id: tsig-transfer", *key, "    action: transfer"]
            if self.allow_update:
                acl += ["  - id: tsig-update", *key, "    action: update"]
        if self.secondary_of is not None:
            address = f"    address: {self.secondary_of[0]}"
            acl += ["  - id: primary-notify", address, *key, "    action: notify"]
        acls = [line.removeprefix("  - id: ") for line in acl if line.startswith("  - id: ")]
        if acl:
            lines += ["acl:", *acl, ""]
        remotes = self._knot_remotes()
        if remotes:
            lines.append("remote:")
            for remote_id, (host, port) in remotes.items():
                lines += [f"  - id: {remote_id}", f"    address: {host}@{port}", *key]
            lines.append("")
        if self.inline_signing:
            lines += [
                "policy:",
                f"  - id: {self.POLICY}",
                "    algorithm: ed25519",
                "    single-type-signing: on",
                "    rrsig-lifetime: 14d",
                "    rrsig-refresh: 5d",
                "",
            ]
        lines += [
            "zone:",
            f'  - domain: "{self.zone}"',
            f'    file: "{self.zone_copy}"',
            "    zonefile-sync: -1",
        ]
        if acls:
            lines.append(f"    acl: [{', '.join(acls)}]")
        if self.notify:
            lines.append(f"    notify: [{', '.join(remotes)}]")
        if self.secondary_of is not None:
            lines += [
                "    master: primary",
                "    journal-content: changes",
                "    dnssec-signing: off",
            ]
        elif self.inline_signing:
            lines += [
                "    zonefile-load: difference",
                "    journal-content: all",
                "    dnssec-signing: on",
                f"    dnssec-policy: {self.POLICY}",
            ]
        else:
            lines += [
                "    zonefile-load: whole",
                "    journal-content: changes",
                "    dnssec-signing: off",
            ]
        return "\n".join(lines) + "\n"

    def _knot_remotes(self) -> dict[str, tuple[str, int]]:
        """Remote id -> address: the primary of a secondary, or the secondaries notified."""
        if self.secondary_of is not None:
            return {"primary": self.secondary_of}
        return {f"secondary-{index}": address for index, address in enumerate(self.notify)}


class Nsd(AuthoritativeServer):
    """NSD ``nsd -d``, primary for one zone, serving the zone file as it is.

    NSD neither signs nor accepts dynamic updates; a TSIG key allows zone
    transfers (``provide-xfr``). No nsd.db (``database: ""``) and no
    remote control.
    """

    DAEMON = "nsd"

    def __init__(
        self,
        workdir: Path,
        zone: str,
        zone_file: Path | None,
        *,
        tsig: TsigKey | None = None,
        host: str = LOOPBACK,
        port: int | None = None,
        secondary_of: tuple[str, int] | None = None,
        notify: Sequence[tuple[str, int]] = (),
    ) -> None:
        """Prepare nsd; see :class:`AuthoritativeServer`.

        Raises:
            ValueError: an unquotable path, or a secondary given a zone file.
            pytest.skip.Exception: nsd is not installed.
        """
        super().__init__(
            workdir,
            zone,
            zone_file,
            tsig=tsig,
            host=host,
            port=port,
            secondary_of=secondary_of,
            notify=notify,
        )

    @property
    def log_file(self) -> Path:
        """nsd's log (``logfile:``)."""
        return self.workdir / "nsd.log"

    @property
    def log_files(self) -> tuple[Path, ...]:
        """The console output and the log file."""
        return (self.console_file, self.log_file)

    def argv(self) -> list[str]:
        """``nsd -d -c nsd.conf``: foreground (the workers are forked children)."""
        return [self._tool, "-d", "-c", str(self.config_file)]

    def checker_argv(self) -> list[str]:
        """``nsd-checkconf nsd.conf``."""
        return [require_daemon("nsd-checkconf"), str(self.config_file)]

    def config(self, port: int) -> str:
        """Return nsd.conf for listening on ``port``; see :meth:`AuthoritativeServer.config`."""
        work = self.workdir
        lines = [
            "server:",
            f"    ip-address: {self._host}@{port}",
            f"    port: {port}",
            "    do-ip4: yes",
            "    do-ip6: no",
            '    username: ""',
            '    chroot: ""',
            f'    zonesdir: "{work}"',
            f'    pidfile: "{work / "nsd.pid"}"',
            '    database: ""',
            f'    zonelistfile: "{work / "zone.list"}"',
            f'    xfrdfile: "{work / "xfrd.state"}"',
            f'    xfrdir: "{work}"',
            f'    logfile: "{self.log_file}"',
            "    server-count: 1",
            "    verbosity: 1",
            "    rrl-ratelimit: 0",  # response rate limiting would drop the tests' bursts
            "    rrl-whitelist-ratelimit: 0",
            "    zonefiles-write: 0",
            "",
            "remote-control:",
            "    control-enable: no",
            "",
        ]
        zone = [f'    name: "{self.zone}"', f'    zonefile: "{self.zone_copy}"']
        if self.tsig is not None:
            tsig = self.tsig
            lines += [
                "key:",
                f'    name: "{tsig.name}"',
                f"    algorithm: {tsig.algorithm}",
                f'    secret: "{tsig.secret}"',
                "",
            ]
            zone.append(f'    provide-xfr: 127.0.0.0/8 "{tsig.name}"')
        key = f'"{self.tsig.name}"' if self.tsig is not None else "NOKEY"
        if self.secondary_of is not None:
            host, port = self.secondary_of
            zone += [f"    request-xfr: {host}@{port} {key}", f"    allow-notify: {host} {key}"]
        for host, port in self.notify:
            zone.append(f"    notify: {host}@{port} {key}")
        lines += ["zone:", *zone]
        return "\n".join(lines) + "\n"


def _block(head: str, statements: Sequence[str]) -> str:
    body = "".join(f"\t{statement}\n" for statement in statements)
    return f"{head} {{\n{body}}};\n"
