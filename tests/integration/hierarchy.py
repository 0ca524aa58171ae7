"""A loopback DNS hierarchy of real servers: the world as a resolver sees it.

Issue 15 is proven here: a signed root, a signed TLD and the alter-publish
zone, each served by a different real name server on its own loopback address
and port 53 (the only port a recursive resolver follows referrals to), with
unbound validating from the hierarchy's own root anchor::

    .            NSD     127.0.N.1   a.root-servers.test.   (KSK + ZSK, Ed25519)
    com.         Knot    127.0.N.2   ns1.nic.com.           (KSK + ZSK, Ed25519)
    example.com. BIND    127.0.N.3   ns1.example.com.       (signed by `alter-publish sign`)
    example.com. NSD     127.0.N.4   ns2.example.com.       (the same zone, or a scenario's)
    (nothing)            127.0.N.5   where disagreeing glue points
    unbound              127.0.N.53  validating recursive resolver, EDE on

``N`` is 10 unless another process holds that block (each block is claimed
with an flock on ``/tmp/alter-publish-hierarchy-127.0.N.lock`` for the life of
the hierarchy, so parallel test runs on one machine get different blocks).
127.0.0.1 and 127.0.0.53 (systemd-resolved) are never used. Port 53 needs
root: :func:`require_hierarchy` skips with the reason otherwise, and when a
daemon is missing.

Everything is signed with the real clock (``now``, taken at start; inception
an hour before): unbound and ``delv`` validate against the real clock.
example.com is signed by ``alter-publish sign --now ... --allow-simulated-time``
in a workspace (``zones/``, ``keys/``, ``build/``) three times: 20 days ago
(its RRSIGs have expired: :attr:`Hierarchy.expired_zone`), an hour ago with
``~blake``'s resolver ``STALE_BLAKE_RESOLVER`` (:attr:`Hierarchy.stale_zone`,
an older serial) and now with ``CURRENT_BLAKE_RESOLVER`` (``build/``, the zone
every check compares with). All three use the same zone keys.

Use the fixtures of tests/integration/conftest.py: ``hierarchy_lab`` (session
scope: started once, about 3 s) and ``hierarchy`` (the :class:`Hierarchy`,
reset to all-good before each test)::

    def test_x(hierarchy_lab: HierarchyLab) -> None:
        hierarchy = hierarchy_lab.apply(Scenario.WRONG_DS_DIGEST)
        answer = resolver_query(hierarchy, hierarchy.probe_name, "TXT")

:meth:`HierarchyLab.apply` first restores the all-good state (only what a
previous scenario changed), then changes the parent (the ``com.`` zone,
re-signed and reloaded in Knot with a higher serial) or ns2 (NSD), and
flushes unbound's caches (``unbound-control reload``). The scenarios
(:class:`Scenario`):

* ``ALL_GOOD``: DS of the zone's KSK at the parent, both servers current.
* ``WRONG_DS_DIGEST``: the parent's DS has the right key tag and algorithm
  but its digest's last hex digit changed.
* ``RETIRED_KSK_DS``: the parent's DS is that of a KSK the zone no longer
  publishes (:attr:`Hierarchy.retired_ksk_ds`, made by the fixture).
* ``MISSING_DS``: no DS at the parent; NSEC proves the delegation insecure.
* ``STALE_SERVER``: ns2 serves :attr:`Hierarchy.stale_zone`.
* ``LAME_SERVER``: ns2 runs but serves another zone: REFUSED for example.com.
* ``EXPIRED_SERVER``: ns2 serves :attr:`Hierarchy.expired_zone`.
* ``DISAGREEING_GLUE``: the parent's glue for ns2.example.com. points at
  :attr:`Addresses.spare` (nothing listens there); the zone says 127.0.N.4.

Other shapes of the parent: :meth:`HierarchyLab.set_delegation` (e.g. the
new DS during a KSK rollover). After signing the workspace again (rotate,
rollover steps), :meth:`HierarchyLab.publish` serves build/example.com.zone
on ns1 and ns2. The
servers are :class:`~tests.integration.servers.AuthoritativeServer` objects
(``lab.root``, ``lab.tld``, ``lab.ns1``, ``lab.ns2``: ``query``,
``soa_serial``, ``rrset``, ``stop``/``start``); ``lab.resolver.flush()``.

What each scenario looks like through unbound (``resolver_query``, RD+DO)::

    ALL_GOOD          NOERROR, AD
    WRONG_DS_DIGEST   SERVFAIL, EDE 9 "... DS hash mismatches key from 127.0.N.3 ..."
    RETIRED_KSK_DS    SERVFAIL, EDE 9 "... no keys have a DS with algorithm ED25519 ..."
    MISSING_DS        NOERROR, no AD (``example.com DS``: NOERROR, no answer, AD)
    STALE_SERVER      NOERROR, AD; about half the cache-flushed lookups get the old record
    LAME_SERVER       NOERROR, AD (unbound asks ns1 after ns2's REFUSED)
    EXPIRED_SERVER    NOERROR, AD (unbound drops ns2's bogus answer, asks ns1)
    DISAGREEING_GLUE  NOERROR, AD, after a timeout at the spare address

so a validating resolver shows the DS problems and hides the per-server ones:
those are seen by asking each server (``lab.ns2.query``). ``delv +cdflag``
through unbound agrees (secure, bogus, bogus, insecure). :func:`dnsviz_grok`
runs DNSViz on the hierarchy when it is installed (``pip install dnsviz
pygraphviz``): DIGEST_INVALID, MISSING_SEP_FOR_ALG, EXPIRATION_IN_PAST,
INVALID_RCODE, GLUE_MISMATCH (that one takes ~6 s of timeouts).
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import dns.dnssec
import dns.dnssectypes
import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.DNSKEY
import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.integration import recursor
from tests.integration.dnssec_tools import ToolError, require_tool, run_tool, tool_output
from tests.integration.recursor import (
    DNS_PORT,
    Resolver,
    describe,
    dnsviz_codes,
    ede_codes,
    recursive_query,
)
from tests.integration.servers import AuthoritativeServer, Knot, Named, Nsd, require_daemon
from tests.ports import port_free

__all__ = [
    "CURRENT_BLAKE_RESOLVER",
    "DNS_PORT",
    "STALE_BLAKE_RESOLVER",
    "Addresses",
    "Delegation",
    "Hierarchy",
    "HierarchyLab",
    "Scenario",
    "describe",
    "dnsviz_codes",
    "dnsviz_grok",
    "ede_codes",
    "require_hierarchy",
    "resolver_query",
    "running_lab",
]

ZONE: Final = "example.com."
TLD: Final = "com."
ROOT_SERVER: Final = "a.root-servers.test."
TLD_SERVER: Final = "ns1.nic.com."
NS1: Final = "ns1.example.com."
NS2: Final = "ns2.example.com."
#: The handle :attr:`Hierarchy.probe_name` looks up.
PROBE_NAME: Final = "_alter.blake.example.com."
#: ``~blake``'s resolver in the current zone, and in the stale one.
CURRENT_BLAKE_RESOLVER: Final = "https://mcp.example.com/blake"
STALE_BLAKE_RESOLVER: Final = "https://mcp.example.com/blake-old"
#: The loopback /24 blocks tried, 127.0.N.0 for N in this range.
ADDRESS_BLOCKS: Final = range(10, 40)
#: Lifetime of the root's and the TLD's signatures, and how far back they start.
PARENT_SIGNATURE_SECONDS: Final = 14 * 86400
PARENT_INCEPTION_BACK_SECONDS: Final = 3600
#: TTL of every record of the root and the TLD (short: scenarios change them).
PARENT_TTL_SECONDS: Final = 300
#: How long ago the expired zone was signed; its RRSIGs last 14 days.
EXPIRED_SIGNED_AGO_SECONDS: Final = 20 * 86400
STALE_SIGNED_AGO_SECONDS: Final = 3600
#: SOA refresh, retry, expire and minimum of the root and the TLD.
_SOA_TIMERS: Final = f"1800 900 604800 {PARENT_TTL_SECONDS}"
_RUN_CLI: Final = "from alter_publish.cli import main; main()"
_CLI_TIMEOUT_SECONDS: Final = 120.0


class Scenario(enum.StrEnum):
    """The states of the world issue 15 is proven on; see the module docstring."""

    ALL_GOOD = "all-good"
    WRONG_DS_DIGEST = "wrong-ds-digest"
    RETIRED_KSK_DS = "retired-ksk-ds"
    MISSING_DS = "missing-ds"
    STALE_SERVER = "stale-server"
    LAME_SERVER = "lame-server"
    EXPIRED_SERVER = "expired-server"
    DISAGREEING_GLUE = "disagreeing-glue"


#: The scenarios that change ns2, not the parent.
_NS2_SCENARIOS: Final = frozenset(
    {Scenario.STALE_SERVER, Scenario.LAME_SERVER, Scenario.EXPIRED_SERVER}
)


@dataclass(frozen=True, slots=True)
class Addresses:
    """The loopback addresses of one hierarchy, all in 127.0.N.0/24.

    Attributes:
        root: NSD serving ``.``.
        tld: Knot serving ``com.``.
        ns1: BIND serving example.com (ns1.example.com.).
        ns2: NSD serving example.com or a scenario's zone (ns2.example.com.).
        spare: nothing listens here (disagreeing glue points at it).
        resolver: unbound.
    """

    root: str
    tld: str
    ns1: str
    ns2: str
    spare: str
    resolver: str

    @classmethod
    def block(cls, n: int) -> Addresses:
        """The addresses of block ``127.0.n.0/24``."""
        return cls(
            root=f"127.0.{n}.1",
            tld=f"127.0.{n}.2",
            ns1=f"127.0.{n}.3",
            ns2=f"127.0.{n}.4",
            spare=f"127.0.{n}.5",
            resolver=f"127.0.{n}.53",
        )

    def listening(self) -> tuple[str, ...]:
        """Every address a daemon listens on."""
        return (self.root, self.tld, self.ns1, self.ns2, self.resolver)


@dataclass(frozen=True, slots=True)
class Delegation:
    """What the parent (``com.``) publishes for example.com.

    Attributes:
        ns: ``(name server, glue address)`` pairs, e.g. ``("ns1.example.com.", "127.0.10.3")``.
        ds: DS rdata texts, e.g. ``"27878 15 2 d921..."``; empty: an insecure delegation.
    """

    ns: tuple[tuple[str, str], ...]
    ds: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Hierarchy:
    """A running hierarchy, as tests use it (every path absolute).

    Attributes:
        addresses: the loopback addresses.
        port: the port of every server and of the resolver (53).
        now: the POSIX time everything was signed at (the real clock at start).
        scenario: the state the world is in.
        workspace: the alter-publish workspace of example.com (zones/, keys/, build/).
        zone: ``example.com.``.
        tld: ``com.``.
        anchor_file: the root KSK's DS (``. 300 IN DS ...``), for ``--trust-anchor``.
        anchor_dnskey_file: the root KSK's DNSKEY, the same anchor in DNSKEY form.
        root_hints: ``. NS a.root-servers.test.`` and its A, for ``--root-hints``.
        root_zone: the signed root zone NSD serves.
        tld_zone: the signed ``com.`` zone Knot serves now.
        zone_file: build/example.com.zone, what ``sign`` proved (and BIND serves).
        ds_file: build/example.com.ds.
        stale_zone: example.com signed an hour ago, ``~blake`` with the old resolver.
        expired_zone: example.com signed 20 days ago: its RRSIGs have expired.
        retired_ksk_ds: the DS of a KSK example.com does not publish.
        delegation: what the parent publishes for example.com now.
        name_servers: example.com's own ``(name, address)`` pairs.
        probe_name: ``_alter.blake.example.com.``.
    """

    addresses: Addresses
    port: int
    now: int
    scenario: Scenario
    workspace: Path
    zone: str
    tld: str
    anchor_file: Path
    anchor_dnskey_file: Path
    root_hints: Path
    root_zone: Path
    tld_zone: Path
    zone_file: Path
    ds_file: Path
    stale_zone: Path
    expired_zone: Path
    retired_ksk_ds: str
    delegation: Delegation
    name_servers: tuple[tuple[str, str], ...]
    probe_name: str = PROBE_NAME

    @property
    def resolver(self) -> tuple[str, int]:
        """unbound's ``(host, port)``."""
        return self.addresses.resolver, self.port

    @property
    def resolver_spec(self) -> str:
        """unbound as ``HOST:PORT``, as ``--server`` and ``--resolver`` take it."""
        return f"{self.addresses.resolver}:{self.port}"

    @property
    def zone_ds(self) -> tuple[str, ...]:
        """The DS rdata texts of build/example.com.ds (the right ones for the parent)."""
        return _ds_rdatas(self.ds_file)


def require_hierarchy() -> None:
    """Skip unless this process can run the hierarchy: root (port 53) and every daemon.

    Raises:
        pytest.skip.Exception: not root, or a daemon or tool is missing.
    """
    if os.geteuid() != 0:
        pytest.skip("the DNS hierarchy listens on port 53, which needs root")
    for daemon in ("named", "knotd", "nsd"):
        require_daemon(daemon)
    for tool in ("unbound", "unbound-control", "ip"):
        require_tool(tool)


def resolver_query(
    hierarchy: Hierarchy, name: str, rdtype: str, *, cd: bool = False
) -> dns.message.Message:
    """Ask the hierarchy's unbound one question (RD, DO, CD if asked): :func:`recursive_query`.

    Raises:
        ToolError: unbound does not answer.
    """
    return recursive_query(hierarchy.resolver, name, rdtype, cd=cd)


def dnsviz_grok(hierarchy: Hierarchy, *names: str) -> dict[str, Any]:
    """DNSViz's findings on ``names`` (default example.com.), probed from the hierarchy's root.

    See :func:`tests.integration.recursor.dnsviz_grok`.

    Raises:
        pytest.skip.Exception: DNSViz or pygraphviz is not installed.
        ToolError: DNSViz failed.
    """
    root = (ROOT_SERVER, hierarchy.addresses.root)
    return recursor.dnsviz_grok(root, hierarchy.anchor_dnskey_file, names or (ZONE,))


# --------------------------------------------------------------------------
# Zones of the parents
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ZoneKeys:
    """An Ed25519 KSK and ZSK of one zone."""

    ksk: tuple[Ed25519PrivateKey, dns.rdtypes.ANY.DNSKEY.DNSKEY]
    zsk: tuple[Ed25519PrivateKey, dns.rdtypes.ANY.DNSKEY.DNSKEY]

    @classmethod
    def generate(cls) -> _ZoneKeys:
        return cls(ksk=_new_key(257), zsk=_new_key(256))

    def ds(self, origin: str) -> str:
        """The DS rdata (SHA-256) of the KSK."""
        return dns.dnssec.make_ds(origin, self.ksk[1], "SHA256").to_text()


def _new_key(flags: int) -> tuple[Ed25519PrivateKey, dns.rdtypes.ANY.DNSKEY.DNSKEY]:
    private = Ed25519PrivateKey.generate()
    dnskey = dns.dnssec.make_dnskey(private.public_key(), dns.dnssectypes.Algorithm.ED25519, flags)
    return private, dnskey


def _sign(text: str, origin: str, keys: _ZoneKeys, now: int, path: Path) -> Path:
    """Sign zone text (NSEC, both keys) and write it to ``path``."""
    zone = dns.zone.from_text(text, origin=origin, relativize=False)
    dns.dnssec.sign_zone(
        zone,
        keys=[keys.ksk, keys.zsk],
        dnskey_ttl=PARENT_TTL_SECONDS,
        inception=now - PARENT_INCEPTION_BACK_SECONDS,
        expiration=now + PARENT_SIGNATURE_SECONDS,
    )
    zone.to_file(str(path), relativize=False, want_origin=True)
    return path


def _root_text(addresses: Addresses, serial: int, tld_ds: str) -> str:
    ttl = PARENT_TTL_SECONDS
    return "\n".join(
        (
            f". {ttl} IN SOA {ROOT_SERVER} hostmaster.root-servers.test. {serial} {_SOA_TIMERS}",
            f". {ttl} IN NS {ROOT_SERVER}",
            f"{ROOT_SERVER} {ttl} IN A {addresses.root}",
            f"{TLD} {ttl} IN NS {TLD_SERVER}",
            f"{TLD_SERVER} {ttl} IN A {addresses.tld}",
            f"{TLD} {ttl} IN DS {tld_ds}",
            "",
        )
    )


def _tld_text(addresses: Addresses, serial: int, delegation: Delegation) -> str:
    ttl = PARENT_TTL_SECONDS
    lines = [
        f"{TLD} {ttl} IN SOA {TLD_SERVER} hostmaster.nic.com. {serial} {_SOA_TIMERS}",
        f"{TLD} {ttl} IN NS {TLD_SERVER}",
        f"{TLD_SERVER} {ttl} IN A {addresses.tld}",
    ]
    for name, address in delegation.ns:
        lines.append(f"{ZONE} {ttl} IN NS {name}")
        if dns.name.from_text(name).is_subdomain(dns.name.from_text(ZONE)):
            lines.append(f"{name} {ttl} IN A {address}")
    lines += [f"{ZONE} {ttl} IN DS {ds}" for ds in delegation.ds]
    return "\n".join(lines) + "\n"


def _ds_rdatas(ds_file: Path) -> tuple[str, ...]:
    """The DS rdata texts of a ``build/<zone>.ds`` file."""
    text = ds_file.read_text(encoding="utf-8")
    zone = dns.zone.from_text(text, origin=ZONE, relativize=False, check_origin=False)
    return tuple(
        rdata.to_text()
        for _, rdataset in zone.iterate_rdatasets(dns.rdatatype.DS)
        for rdata in rdataset
    )


def _wrong_digest(ds: str) -> str:
    """The DS with the last hex digit of its digest changed."""
    last = ds[-1]
    return ds[:-1] + ("0" if last != "0" else "1")


# --------------------------------------------------------------------------
# The alter-publish zone
# --------------------------------------------------------------------------


def _definition(addresses: Addresses, blake_resolver: str) -> str:
    return f"""zone: example.com
ttl: 5m
soa:
  mname: {NS1}
  rname: hostmaster.example.com.
  refresh: 2h
  retry: 1h
  expire: 2w
  minimum: 5m
ns: [{NS1}, {NS2}]
hosts: {{ns1: [{addresses.ns1}], ns2: [{addresses.ns2}]}}
envelopes: {{lifetime: 30d, renew_before: 7d}}
dnssec:
  enabled: true
  denial: nsec3
  nsec3: {{iterations: 0, salt: "-"}}
  signature_validity: 14d
  refresh: 5d
handles:
  - handle: ~example.com
    resolver: https://mcp.example.com/api/v1/mcp
  - handle: ~blake
    resolver: {blake_resolver}
  - ~drew
"""


def _sign_workspace(root: Path, *args: str) -> None:
    """Run ``alter-publish sign ARGS`` in the workspace.

    Raises:
        ToolError: it failed.
    """
    argv = [sys.executable, "-c", _RUN_CLI, "sign", *args]
    completed = subprocess.run(
        argv, cwd=root, capture_output=True, text=True, timeout=_CLI_TIMEOUT_SECONDS, check=False
    )
    if completed.returncode != 0:
        raise ToolError(tool_output(argv, completed))


def _make_workspace(root: Path, addresses: Addresses, now: int) -> tuple[Path, Path]:
    """Sign example.com three times; return the expired and the stale zone copies."""
    definition = root / "zones" / "example.com.yaml"
    definition.parent.mkdir(parents=True)
    definition.write_text(_definition(addresses, STALE_BLAKE_RESOLVER), encoding="utf-8")
    zone_file = root / "build" / "example.com.zone"
    copies = root / "scenarios"
    copies.mkdir()
    expired, stale = copies / "expired.example.com.zone", copies / "stale.example.com.zone"
    _sign_workspace(
        root,
        "--create-keys",
        "--now",
        str(now - EXPIRED_SIGNED_AGO_SECONDS),
        "--allow-simulated-time",
    )
    shutil.copyfile(zone_file, expired)
    _sign_workspace(root, "--now", str(now - STALE_SIGNED_AGO_SECONDS), "--allow-simulated-time")
    shutil.copyfile(zone_file, stale)
    definition.write_text(_definition(addresses, CURRENT_BLAKE_RESOLVER), encoding="utf-8")
    _sign_workspace(root, "--now", str(now), "--allow-simulated-time")
    return expired, stale


# --------------------------------------------------------------------------
# The hierarchy
# --------------------------------------------------------------------------


def _claim_block(lock_dir: Path) -> tuple[int, int]:
    """Find a 127.0.N.0/24 block nobody uses; return N and the fd holding its lock.

    Raises:
        ToolError: no block in ADDRESS_BLOCKS is free.
    """
    for n in ADDRESS_BLOCKS:
        fd = os.open(
            lock_dir / f"alter-publish-hierarchy-127.0.{n}.lock", os.O_RDWR | os.O_CREAT, 0o600
        )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if all(port_free(address, DNS_PORT) for address in Addresses.block(n).listening()):
            return n, fd
        os.close(fd)
    raise ToolError(
        f"no loopback block 127.0.N.0/24 with port {DNS_PORT} free, N in {ADDRESS_BLOCKS}"
    )


def _add_loopback_addresses(addresses: tuple[str, ...]) -> tuple[str, ...]:
    """Add each address to ``lo`` as a /32 unless there; return those added.

    named listens only on addresses of an interface (it scans them), not on
    any address of 127.0.0.0/8 as NSD, Knot and unbound do.

    Raises:
        ToolError: ``ip`` failed.
    """
    ip = require_tool("ip")
    shown = run_tool([ip, "-4", "-o", "addr", "show", "dev", "lo"]).stdout
    added: list[str] = []
    for address in addresses:
        if f" {address}/" in shown:
            continue
        argv = [ip, "addr", "add", f"{address}/32", "dev", "lo"]
        completed = run_tool(argv)
        if completed.returncode != 0:
            _delete_loopback_addresses(tuple(added))
            raise ToolError(tool_output(argv, completed))
        added.append(address)
    return tuple(added)


def _delete_loopback_addresses(addresses: tuple[str, ...]) -> None:
    """Remove the /32 addresses :func:`_add_loopback_addresses` added."""
    if addresses:
        ip = require_tool("ip")
        for address in addresses:
            run_tool([ip, "addr", "del", f"{address}/32", "dev", "lo"])


class HierarchyLab:
    """Starts, changes and stops the hierarchy; :attr:`hierarchy` describes it.

    Use :func:`running_lab` (or the conftest fixtures), which stop every daemon.
    """

    def __init__(self, workdir: Path, *, lock_dir: Path = Path("/tmp")) -> None:
        """Sign every zone and prepare the servers; nothing runs until :meth:`start`.

        Raises:
            pytest.skip.Exception: see :func:`require_hierarchy`.
            ToolError: no free address block, or ``sign`` failed.
        """
        require_hierarchy()
        self._block, self._lock_fd = _claim_block(lock_dir)
        self._added: tuple[str, ...] = ()
        try:
            self._prepare(workdir)
        except BaseException:
            os.close(self._lock_fd)
            raise

    def _prepare(self, workdir: Path) -> None:
        addresses = Addresses.block(self._block)
        now = int(time.time())
        self._workdir = workdir.resolve()
        files = self._workdir / "parents"
        files.mkdir(parents=True)
        workspace = self._workdir / "workspace"
        expired, stale = _make_workspace(workspace, addresses, now)
        self._root_keys, self._tld_keys = _ZoneKeys.generate(), _ZoneKeys.generate()
        retired = _ZoneKeys.generate()
        self._tld_serial = now
        name_servers = ((NS1, addresses.ns1), (NS2, addresses.ns2))
        build = workspace / "build"
        self._good = Delegation(ns=name_servers, ds=_ds_rdatas(build / "example.com.ds"))
        self.hierarchy = Hierarchy(
            addresses=addresses,
            port=DNS_PORT,
            now=now,
            scenario=Scenario.ALL_GOOD,
            workspace=workspace,
            zone=ZONE,
            tld=TLD,
            anchor_file=files / "root.ds",
            anchor_dnskey_file=files / "root.dnskey",
            root_hints=files / "root.hints",
            root_zone=_sign(
                _root_text(addresses, now, self._tld_keys.ds(TLD)),
                ".",
                self._root_keys,
                now,
                files / "root.zone",
            ),
            tld_zone=files / "com.zone",
            zone_file=build / "example.com.zone",
            ds_file=build / "example.com.ds",
            stale_zone=stale,
            expired_zone=expired,
            retired_ksk_ds=retired.ds(ZONE),
            delegation=self._good,
            name_servers=name_servers,
        )
        self._write_anchors()
        self._write_tld(self._good)
        self._ns1_zone: Path = self.hierarchy.zone_file
        self._ns2_zone: Path = self.hierarchy.zone_file
        self._lame = False
        servers = self._workdir / "servers"
        self.root = Nsd(
            servers / "root", ".", self.hierarchy.root_zone, host=addresses.root, port=DNS_PORT
        )
        self.tld = Knot(
            servers / "com", TLD, self.hierarchy.tld_zone, host=addresses.tld, port=DNS_PORT
        )
        self.ns1 = Named(
            servers / "ns1", ZONE, self.hierarchy.zone_file, host=addresses.ns1, port=DNS_PORT
        )
        self._ns2_server = Nsd(
            servers / "ns2", ZONE, self._ns2_zone, host=addresses.ns2, port=DNS_PORT
        )
        self._lame_server = Nsd(
            servers / "lame", "lame.invalid", self._lame_zone(), host=addresses.ns2, port=DNS_PORT
        )
        self.ns2: AuthoritativeServer = self._ns2_server
        self.resolver = Resolver(
            servers / "unbound",
            addresses.resolver,
            hints=self.hierarchy.root_hints,
            anchor=self.hierarchy.anchor_file,
        )

    def _lame_zone(self) -> Path:
        """A zone ns2 serves when lame: not example.com."""
        path = self._workdir / "parents" / "lame.invalid.zone"
        path.write_text(
            f"lame.invalid. 300 IN SOA {NS2} hostmaster.lame.invalid. 1 1800 900 604800 300\n"
            f"lame.invalid. 300 IN NS {NS2}\n",
            encoding="utf-8",
        )
        return path

    def _write_anchors(self) -> None:
        hierarchy = self.hierarchy
        ttl = PARENT_TTL_SECONDS
        dnskey = self._root_keys.ksk[1]
        hierarchy.anchor_file.write_text(
            f". {ttl} IN DS {self._root_keys.ds('.')}\n", encoding="utf-8"
        )
        hierarchy.anchor_dnskey_file.write_text(
            f". {ttl} IN DNSKEY {dnskey.to_text()}\n", encoding="utf-8"
        )
        hierarchy.root_hints.write_text(
            f". 3600000 NS {ROOT_SERVER}\n{ROOT_SERVER} 3600000 A {hierarchy.addresses.root}\n",
            encoding="utf-8",
        )

    def _write_tld(self, delegation: Delegation) -> None:
        self._tld_serial += 1
        text = _tld_text(self.hierarchy.addresses, self._tld_serial, delegation)
        _sign(text, TLD, self._tld_keys, self.hierarchy.now, self.hierarchy.tld_zone)

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        """Start every server, the resolver last.

        Raises:
            ToolError: a daemon did not start; every one started is stopped.
        """
        try:
            self._added = _add_loopback_addresses(self.hierarchy.addresses.listening())
            for server in (self.root, self.tld, self.ns1, self.ns2):
                server.start()
            self.resolver.start()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop every daemon and release the address block. Idempotent."""
        self.resolver.stop()
        for server in (self.ns2, self.ns1, self.tld, self.root):
            server.stop()
        _delete_loopback_addresses(self._added)
        self._added = ()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    # -- scenarios -------------------------------------------------------------

    def apply(self, scenario: Scenario) -> Hierarchy:
        """Put the world into ``scenario`` (from whatever state) and flush unbound.

        Args:
            scenario: the state wanted.

        Returns:
            The hierarchy in that state.

        Raises:
            ToolError: a server did not take the change.
        """
        hierarchy = self.hierarchy
        delegation = self._good
        ns2_zone, lame = hierarchy.zone_file, False
        good_ds = self._good.ds
        match scenario:
            case Scenario.WRONG_DS_DIGEST:
                delegation = replace(delegation, ds=tuple(_wrong_digest(ds) for ds in good_ds))
            case Scenario.RETIRED_KSK_DS:
                delegation = replace(delegation, ds=(hierarchy.retired_ksk_ds,))
            case Scenario.MISSING_DS:
                delegation = replace(delegation, ds=())
            case Scenario.DISAGREEING_GLUE:
                ns = ((NS1, hierarchy.addresses.ns1), (NS2, hierarchy.addresses.spare))
                delegation = replace(delegation, ns=ns)
            case Scenario.STALE_SERVER:
                ns2_zone = hierarchy.stale_zone
            case Scenario.EXPIRED_SERVER:
                ns2_zone = hierarchy.expired_zone
            case Scenario.LAME_SERVER:
                lame = True
            case Scenario.ALL_GOOD:
                pass
        self.set_delegation(delegation, flush=False)
        if self._ns1_zone != hierarchy.zone_file:
            _serve(self.ns1, hierarchy.zone_file)
            self._ns1_zone = hierarchy.zone_file
        self._serve_on_ns2(ns2_zone, lame=lame)
        self.resolver.flush()
        self.hierarchy = replace(self.hierarchy, scenario=scenario)
        return self.hierarchy

    def publish(self, zone_file: Path | None = None) -> Hierarchy:
        """Serve a zone on ns1 and ns2, e.g. after a test signed the workspace again.

        A lame ns2 serves the zone again: a scenario about ns2 becomes
        ALL_GOOD (the parent is left as it is). unbound is flushed.

        Args:
            zone_file: the zone; default build/example.com.zone as it is now.

        Returns:
            The hierarchy.

        Raises:
            ToolError: a server does not serve the zone's serial.
        """
        source = zone_file or self.hierarchy.zone_file
        _serve(self.ns1, source)
        self._ns1_zone = source
        if self._lame:
            self._serve_on_ns2(source, lame=False)
        _serve(self.ns2, source)
        self._ns2_zone = source
        if self.hierarchy.scenario in _NS2_SCENARIOS:
            self.hierarchy = replace(self.hierarchy, scenario=Scenario.ALL_GOOD)
        self.resolver.flush()
        return self.hierarchy

    def set_delegation(self, delegation: Delegation, *, flush: bool = True) -> Hierarchy:
        """Publish ``delegation`` at the parent: re-sign ``com.`` and reload Knot.

        Nothing happens when the parent publishes it already.

        Args:
            delegation: the NS, glue and DS records for example.com.
            flush: flush unbound's caches afterwards.

        Returns:
            The hierarchy (its scenario unchanged).

        Raises:
            ToolError: Knot does not serve the new serial.
        """
        if delegation != self.hierarchy.delegation:
            self._write_tld(delegation)
            shutil.copyfile(self.hierarchy.tld_zone, self.tld.zone_copy)
            self.tld.reload(serial=self._tld_serial)
            self.hierarchy = replace(self.hierarchy, delegation=delegation)
        if flush:
            self.resolver.flush()
        return self.hierarchy

    def _serve_on_ns2(self, zone_file: Path, *, lame: bool) -> None:
        """Make ns2 serve ``zone_file``, or another zone only when ``lame``."""
        if lame != self._lame:
            self.ns2.stop()
            self.ns2 = self._lame_server if lame else self._ns2_server
            self.ns2.start()
            self._lame = lame
        if not lame and zone_file != self._ns2_zone:
            _serve(self.ns2, zone_file)
        if not lame:
            self._ns2_zone = zone_file


def _serve(server: AuthoritativeServer, zone_file: Path) -> None:
    """Copy ``zone_file`` to the running server and wait until it serves its serial."""
    shutil.copyfile(zone_file, server.zone_copy)
    server.reload(serial=_serial(zone_file))


def _serial(zone_file: Path) -> int:
    zone = dns.zone.from_file(str(zone_file), origin=ZONE, relativize=False)
    soa = zone.get_soa()
    return int(soa.serial)


@contextlib.contextmanager
def running_lab(workdir: Path) -> Iterator[HierarchyLab]:
    """Start a hierarchy in ``workdir``; stop it on the way out.

    Raises:
        pytest.skip.Exception: see :func:`require_hierarchy`.
        ToolError: it did not start.
    """
    lab = HierarchyLab(workdir)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()
