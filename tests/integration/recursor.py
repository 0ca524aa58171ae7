"""Recursive resolution on a loopback hierarchy: unbound, and DNSViz as an oracle.

:class:`Resolver` runs unbound as a validating recursive resolver from given
root hints and trust anchor (tests/integration/hierarchy.py starts one on
127.0.N.53:53); :func:`recursive_query` asks it a question and
:func:`describe` / :func:`ede_codes` read the answer, Extended DNS Errors
included. :func:`dnsviz_grok` runs DNSViz (``pip install dnsviz
pygraphviz``; skipped when missing) from the same root.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import dns.exception
import dns.flags
import dns.message
import dns.query
import dns.rcode
import pytest

from tests.integration.dnssec_tools import ToolError, require_tool, run_tool, tool_output
from tests.integration.servers import _terminate

__all__ = [
    "DNS_PORT",
    "Resolver",
    "describe",
    "dnsviz_codes",
    "dnsviz_grok",
    "ede_codes",
    "recursive_query",
]

#: The port resolvers follow referrals to.
DNS_PORT: Final = 53
RESOLVER_READY_SECONDS: Final = 10.0
RESOLVER_PROBE_SECONDS: Final = 0.2
RESOLVER_QUERY_SECONDS: Final = 10.0
DNSVIZ_TIMEOUT_SECONDS: Final = 60.0


def recursive_query(
    server: tuple[str, int], name: str, rdtype: str, *, cd: bool = False
) -> dns.message.Message:
    """Ask a recursive resolver one question with RD and DO set (CD when asked), UDP then TCP.

    Args:
        server: the resolver's ``(host, port)``.
        name: the query name.
        rdtype: the query type.
        cd: set Checking Disabled (a validating resolver then answers without validating).

    Returns:
        The response, whatever its rcode; EDE options are in ``response.extended_errors()``.

    Raises:
        ToolError: the resolver does not answer.
    """
    query = dns.message.make_query(name, rdtype, want_dnssec=True, use_edns=0)
    query.flags |= dns.flags.RD | (dns.flags.CD if cd else 0)
    host, port = server
    try:
        response = dns.query.udp(query, host, timeout=RESOLVER_QUERY_SECONDS, port=port)
        if response.flags & dns.flags.TC:
            response = dns.query.tcp(query, host, timeout=RESOLVER_QUERY_SECONDS, port=port)
    except (dns.exception.DNSException, OSError) as exc:
        raise ToolError(f"{host}@{port} did not answer {name} {rdtype}: {exc}") from exc
    return response


class Resolver:
    """unbound as a validating recursive resolver, from the root hints and anchor given.

    Own process group, own directory, no chroot, no user switch; a control
    socket in its directory for :meth:`flush`. Validates at the real clock.
    """

    def __init__(
        self, workdir: Path, address: str, *, hints: Path, anchor: Path, port: int = DNS_PORT
    ) -> None:
        """Prepare unbound; nothing runs until :meth:`start`.

        Args:
            workdir: its directory (config, log, pid file, control socket).
            address: the loopback address to listen on, e.g. ``127.0.10.53``.
            hints: the root hints file (``root-hints:``).
            anchor: the trust anchor file, DS or DNSKEY (``trust-anchor-file:``).
            port: the port to listen on.

        Raises:
            pytest.skip.Exception: unbound or unbound-control is not installed.
        """
        self._tool = require_tool("unbound")
        self._control = require_tool("unbound-control")
        self.workdir = workdir
        self.address = address
        self._hints = hints
        self._anchor = anchor
        self.port = port
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def config_file(self) -> Path:
        """unbound.conf."""
        return self.workdir / "unbound.conf"

    @property
    def log_file(self) -> Path:
        """unbound's log (``logfile:``)."""
        return self.workdir / "unbound.log"

    def config(self) -> str:
        """The unbound.conf text."""
        work = self.workdir
        server = [
            f"interface: {self.address}",
            f"port: {self.port}",
            "access-control: 127.0.0.0/8 allow",
            "do-ip6: no",
            "do-daemonize: no",
            'username: ""',
            'chroot: ""',
            f'directory: "{work}"',
            f'pidfile: "{work / "unbound.pid"}"',
            "use-syslog: no",
            f'logfile: "{self.log_file}"',
            "verbosity: 1",
            "val-log-level: 2",
            "ede: yes",
            "num-threads: 1",
            "do-not-query-localhost: no",
            'module-config: "validator iterator"',
            f'root-hints: "{self._hints}"',
            f'trust-anchor-file: "{self._anchor}"',
            "trust-anchor-signaling: no",
            "root-key-sentinel: no",
            "prefetch: no",
        ]
        control = [
            "control-enable: yes",
            f'control-interface: "{work / "unbound.ctl"}"',
            "control-use-cert: no",
        ]
        return (
            "\n".join(
                ["server:", *(f"    {line}" for line in server), "remote-control:"]
                + [f"    {line}" for line in control]
            )
            + "\n"
        )

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the log and the console output."""
        parts = []
        for path in (self.workdir / "unbound.console", self.log_file):
            if path.exists():
                text = path.read_text(encoding="utf-8", errors="replace").splitlines()
                parts.append(f"--- {path}\n" + "\n".join(text[-lines:]))
        return "\n".join(parts)

    def start(self) -> None:
        """Start ``unbound -d`` and wait until it answers.

        Raises:
            ToolError: it exits or does not answer within RESOLVER_READY_SECONDS.
        """
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(self.config(), encoding="utf-8")
        with (self.workdir / "unbound.console").open("ab") as console:
            self._process = subprocess.Popen(
                [self._tool, "-d", "-c", str(self.config_file)],
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                stdout=console,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        probe = dns.message.make_query("version.server.", "TXT", "CH")
        deadline = time.monotonic() + RESOLVER_READY_SECONDS
        while time.monotonic() < deadline and self._process.poll() is None:
            with contextlib.suppress(dns.exception.Timeout, OSError):
                dns.query.udp(probe, self.address, timeout=RESOLVER_PROBE_SECONDS, port=self.port)
                return
            time.sleep(0.05)
        self.stop()
        raise ToolError(f"unbound did not start on {self.address}@{self.port}:\n{self.log_tail()}")

    def flush(self) -> None:
        """Drop every cache (``unbound-control reload``: rrsets, messages, keys, infra).

        Raises:
            ToolError: unbound-control failed.
        """
        argv = [self._control, "-c", str(self.config_file), "reload"]
        completed = run_tool(argv)
        if completed.returncode != 0:
            raise ToolError(tool_output(argv, completed) + "\n" + self.log_tail())

    def stop(self) -> None:
        """Terminate unbound and its process group. Idempotent."""
        process, self._process = self._process, None
        if process is not None:
            _terminate(process)


def dnsviz_grok(
    root: tuple[str, str], anchor_dnskey_file: Path, names: Sequence[str]
) -> dict[str, Any]:
    """Probe names with DNSViz from a root server and return ``dnsviz grok``'s findings.

    ``dnsviz probe -A -4 -x .:SERVER=ADDRESS NAMES`` then ``dnsviz grok
    -t ANCHOR -l warning``: per name, ``delegation.status`` (``SECURE``,
    ``INSECURE``, ``BOGUS``), each DS's ``status`` and error ``code`` (e.g.
    ``DIGEST_INVALID``), and the errors and warnings of every rrset.

    Args:
        root: the root server's ``(name, address)``, e.g. ``("a.root-servers.test.", ADDR)``.
        anchor_dnskey_file: the root's trusted DNSKEY records.
        names: the names to probe.

    Returns:
        grok's JSON document.

    Raises:
        pytest.skip.Exception: DNSViz or pygraphviz is not installed
            (``pip install dnsviz pygraphviz``; pygraphviz needs libgraphviz-dev).
        ToolError: it failed or printed something that is not JSON.
    """
    beside = Path(sys.executable).parent / "dnsviz"
    tool = str(beside) if beside.is_file() else shutil.which("dnsviz")
    if tool is None:
        pytest.skip("dnsviz not installed (pip install dnsviz)")
    probe = [tool, "probe", "-A", "-4", "-x", f".:{root[0]}={root[1]}", *names]
    probed = run_tool(probe)
    if probed.returncode != 0:
        raise ToolError(tool_output(probe, probed))
    grok = [tool, "grok", "-t", str(anchor_dnskey_file), "-l", "warning"]
    grokked = subprocess.run(
        grok,
        input=probed.stdout,
        capture_output=True,
        text=True,
        timeout=DNSVIZ_TIMEOUT_SECONDS,
        check=False,
    )
    if "pygraphviz is required" in grokked.stderr:
        pytest.skip("pygraphviz not installed (pip install pygraphviz; needs libgraphviz-dev)")
    try:
        found = json.loads(grokked.stdout)
    except json.JSONDecodeError as exc:
        raise ToolError(tool_output(grok, grokked)) from exc
    if grokked.returncode != 0 or not isinstance(found, dict):
        raise ToolError(tool_output(grok, grokked))
    return found


def dnsviz_codes(found: dict[str, Any]) -> frozenset[str]:
    """Every error and warning ``code`` anywhere in a :func:`dnsviz_grok` document."""
    codes: set[str] = set()
    pending: list[object] = [found]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if isinstance(item.get("code"), str):
                codes.add(item["code"])
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return frozenset(codes)


def ede_codes(response: dns.message.Message) -> tuple[int, ...]:
    """The Extended DNS Error codes of a response."""
    return tuple(int(option.code) for option in response.extended_errors())


def describe(response: dns.message.Message) -> str:
    """rcode, flags, EDE and answer, one line, for assertion messages."""
    errors = "; ".join(f"EDE {int(e.code)} {e.text!r}" for e in response.extended_errors())
    answer = " | ".join(rrset.to_text() for rrset in response.answer)
    flags = dns.flags.to_text(response.flags)
    return f"{dns.rcode.to_text(response.rcode())} [{flags}] {errors} {answer}"
