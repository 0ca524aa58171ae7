"""Recursive resolvers as servers: unbound validating the loopback hierarchy.

unbound runs on 127.0.20.5 with the test root as its trust anchor and a stub zone per
zone of chainzones.py (its servers listen on a high port, which referrals cannot say).
The stub resolver is pointed at unbound: a SERVFAIL is ``bogus`` with unbound's
Extended DNS Error and the local verdict on the answer asked with CD; an answer that
is insecure from the root is never ``secure``; and a secure answer unbound did not
mark AD is flagged. Skipped where unbound is not installed.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import dns.flags
import dns.name
import dns.rdatatype

from alter_publish.dns.anchors import TrustAnchor
from alter_publish.dns.iterate import ask_server
from alter_publish.dns.validation import DNSSECStatus
from alter_publish.errors import ResolveError
from alter_publish.verify.resolve import NO_AD_WARNING, Answer, StubResolver
from tests.integration.chainzones import (
    COM_ADDRESS,
    EXAMPLE_ADDRESS,
    OWNER,
    ROOT_ADDRESS,
    Flaw,
    Hierarchy,
    Key,
    build_hierarchy,
    serving,
)
from tests.integration.servers import require_daemon

UNBOUND_ADDRESS = "127.0.20.5"
TIMEOUT = 2.0
START_SECONDS = 10.0
SECURE, INSECURE, BOGUS = DNSSECStatus.SECURE, DNSSECStatus.INSECURE, DNSSECStatus.BOGUS


STUB_ZONES = ((".", ROOT_ADDRESS), ("com.", COM_ADDRESS), ("example.com.", EXAMPLE_ADDRESS))


def _config(directory: Path, hierarchy: Hierarchy, port: int) -> str:
    anchor = hierarchy.root_anchor_text.strip()
    stubs = "".join(
        f'stub-zone:\n  name: "{zone}"\n  stub-addr: {address}@{port}\n'
        for zone, address in STUB_ZONES
    )
    return f"""server:
  interface: {UNBOUND_ADDRESS}@{port}
  access-control: 127.0.0.0/8 allow
  do-daemonize: no
  username: ""
  chroot: ""
  directory: "{directory}"
  pidfile: "{directory}/unbound.pid"
  use-syslog: no
  logfile: "{directory}/unbound.log"
  verbosity: 1
  do-not-query-localhost: no
  do-ip6: no
  module-config: "validator iterator"
  trust-anchor: "{anchor}"
  ede: yes
  val-log-level: 2
  qname-minimisation: no
  cache-max-ttl: 0
remote-control:
  control-enable: no
{stubs}"""


def _wait_ready(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"unbound exited with {process.returncode}")
        with contextlib.suppress(ResolveError):
            ask_server((UNBOUND_ADDRESS, port), dns.name.root, dns.rdatatype.SOA, timeout=0.2)
            return
    raise RuntimeError("unbound did not answer in time")


@contextlib.contextmanager
def unbound(directory: Path, hierarchy: Hierarchy, port: int) -> Iterator[tuple[str, int]]:
    """Run unbound in the foreground on ``127.0.20.5:port`` until the block ends."""
    executable = require_daemon("unbound")
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "unbound.conf"
    config.write_text(_config(directory, hierarchy, port), encoding="utf-8")
    process = subprocess.Popen([executable, "-d", "-c", str(config)], stderr=subprocess.PIPE)
    try:
        _wait_ready(port, process)
        yield UNBOUND_ADDRESS, port
    finally:
        process.terminate()
        process.wait(timeout=10)


def _through_unbound(tmp_path: Path, flaw: Flaw, anchor: str = "root") -> Answer:
    now = int(time.time())
    hierarchy = build_hierarchy(now, flaw)
    anchors: tuple[TrustAnchor, ...] = (
        (hierarchy.root_anchor,) if anchor == "root" else (hierarchy.example_anchor,)
    )
    with (
        serving(hierarchy) as port,
        unbound(tmp_path / "unbound", hierarchy, port) as resolver,
        StubResolver(resolver, now, anchors, TIMEOUT) as stub,
    ):
        return stub.query_txt(OWNER)


def test_secure_through_unbound(tmp_path: Path) -> None:
    answer = _through_unbound(tmp_path, Flaw.NONE)
    assert (answer.dnssec, answer.reason, answer.warning) == (SECURE, "", "")
    assert answer.texts == ("v=alter1 blake",)


def test_servfail_is_bogus_with_the_resolvers_reason_and_the_local_one(tmp_path: Path) -> None:
    # Before: "answered SERVFAIL", a network error, unbound's EDE dropped.
    answer = _through_unbound(tmp_path, Flaw.WRONG_DS)
    assert (answer.rcode, answer.dnssec) == ("SERVFAIL", BOGUS)
    assert f"resolver {UNBOUND_ADDRESS}:" in answer.reason
    assert "answered SERVFAIL (EDE " in answer.reason
    assert answer.reason.endswith(
        "with CD set the answer is bogus here: com. DS for example.com.: no DS matches"
        f" a KSK of example.com. DNSKEY (tags {Key.make('example.com. ksk', 257).tag})"
    )


def test_removed_ds_is_insecure_through_unbound(tmp_path: Path) -> None:
    answer = _through_unbound(tmp_path, Flaw.NO_DS)
    assert answer.dnssec is INSECURE
    assert "insecure delegation" in answer.reason


def test_secure_to_the_zones_own_ds_but_not_ad_is_flagged(tmp_path: Path) -> None:
    # Before: "secure", exit 0, while every validating resolver sees it insecure.
    answer = _through_unbound(tmp_path, Flaw.NO_DS, anchor="zone")
    assert (answer.dnssec, answer.warning) == (SECURE, NO_AD_WARNING)


def test_unbound_sets_ad_on_a_secure_answer(tmp_path: Path) -> None:
    # The premise of the flag above: unbound marks what it validated.
    now = int(time.time())
    hierarchy = build_hierarchy(now)
    with serving(hierarchy) as port, unbound(tmp_path / "unbound", hierarchy, port) as resolver:
        response = ask_server(
            resolver, dns.name.from_text(OWNER), dns.rdatatype.TXT, timeout=TIMEOUT, recursion=True
        )
    assert response.flags & dns.flags.AD
    assert response.flags & dns.flags.RA
