"""``plan`` and ``push`` against real primaries (BIND, Knot) with TSIG on loopback.

The primaries own the zone and sign it themselves (inline signing): alter-publish
pushes only its alter1 records and the log's checkpoint record (``_alter-log``) and
proves the answers against the server's own DS. Checked: plan then push converges (a
second plan has nothing to do), records we do not own are never touched, a record
changed on the server by hand shows as drift, a sign that appends to the log is
pushed with its new checkpoint, large deletions need --force, and a push cut short by
a killed server is finished by the next plan and push with nothing lost.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dns.name
import dns.query
import dns.rdatatype
import dns.update
import pytest

from alter_publish.definition.model import load_zone
from alter_publish.errors import EXIT_DRIFT, EXIT_NETWORK, EXIT_OK, EXIT_USAGE
from alter_publish.pipeline.clock import SIMULATED_TIME_FLAG
from alter_publish.publish import push as publishing
from tests.conftest import EXAMPLE_ZONE
from tests.integration.servers import AuthoritativeServer, Knot, Named, make_tsig_key

ZONE = "example.com"
LOG_OWNER = f"_alter-log.{ZONE}."
FOREIGN = (
    ("www.example.com.", '"not ours"'),
    ("_alter.blake.example.com.", '"keep me: not an alter1 record"'),
    ("_alter.example.com.", '"v=alter1; org=example"'),  # alter1, but no h=: not ours
)
SERVER_ZONE = """\
$ORIGIN example.com.
$TTL 3600
@ IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 300
@ IN NS ns1.example.com.
ns1 IN A 192.0.2.53
""" + "".join(f"{owner} 3600 IN TXT {text}\n" for owner, text in FOREIGN)


class Workspace:
    """A signed example.com workspace and a way to run the CLI in it."""

    def __init__(self, root: Path, now: int) -> None:
        self.root = root
        self.now = now
        (root / "zones").mkdir(parents=True)
        (root / "zones" / f"{ZONE}.yaml").write_bytes(EXAMPLE_ZONE.read_bytes())

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "alter_publish", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )

    def ok(self, *args: str) -> subprocess.CompletedProcess[str]:
        result = self.run(*args)
        assert result.returncode == EXIT_OK, f"{args}\n{result.stdout}{result.stderr}"
        return result


@pytest.fixture(params=[Named, Knot], ids=["named", "knotd"])
def primary(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[AuthoritativeServer, Workspace, Path, Path]]:
    """A signing primary with TSIG updates, a signed workspace, the key file, the DS file."""
    server_class: type[AuthoritativeServer] = request.param
    now = int(time.time())
    ws = Workspace(tmp_path / "ws", now)
    ws.ok("sign", "--create-keys", "--now", str(now))
    key, key_file = make_tsig_key(tmp_path, "alter-push")
    zone_file = tmp_path / "server.zone"
    zone_file.write_text(SERVER_ZONE, encoding="utf-8")
    server = server_class(
        tmp_path / "server", ZONE, zone_file, tsig=key, allow_update=True, inline_signing=True
    )
    with server:
        anchor = server.write_trust_anchor(tmp_path / "server-ds.txt")
        yield server, ws, key_file, anchor


def _plan(ws: Workspace, server: AuthoritativeServer, key_file: Path) -> tuple[int, dict[str, Any]]:
    spec = server.server_spec
    result = ws.run("plan", ZONE, "--server", spec, "--tsig-key", str(key_file), "--json")
    assert result.returncode in (EXIT_OK, EXIT_DRIFT), result.stderr
    return result.returncode, json.loads(result.stdout)


def _push(
    ws: Workspace, server: AuthoritativeServer | str, key_file: Path, anchor: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    spec = server if isinstance(server, str) else server.server_spec
    return ws.run(
        "push",
        ZONE,
        "--server",
        spec,
        "--tsig-key",
        str(key_file),
        "--trust-anchor",
        str(anchor),
        "--now",
        str(ws.now),
        SIMULATED_TIME_FLAG,  # ws.now was read from the clock when the test began
        "--ns",
        spec,  # the primary is the zone's only name server here
        *extra,
    )


def _foreign_intact(server: AuthoritativeServer) -> None:
    for owner, text in FOREIGN:
        texts = {
            rdata.to_text() for rdata in server.rrset(dns.name.from_text(owner), dns.rdatatype.TXT)
        }
        assert text in texts, (owner, texts)


def test_plan_then_push_converges_and_touches_nothing_else(
    primary: tuple[AuthoritativeServer, Workspace, Path, Path],
) -> None:
    server, ws, key_file, anchor = primary
    code, first = _plan(ws, server, key_file)
    assert code == EXIT_DRIFT
    assert first["counts"] == {"add": 6, "update": 0, "delete": 0}  # 5 handles, the log
    assert first["enumeration"] == "axfr"
    pushed = _push(ws, server, key_file, anchor)
    assert pushed.returncode == EXIT_OK, pushed.stdout + pushed.stderr
    assert "5/5 handles verified" in pushed.stdout
    assert "(secure)" in pushed.stdout  # validated to the server's own DS
    # After its updates the push read the server's differences since its plan (IXFR),
    # not the whole zone again.
    assert "server now matches (read by ixfr)" in pushed.stdout
    code, second = _plan(ws, server, key_file)
    assert (code, second["pending"], second["served_records"]) == (EXIT_OK, False, 6)
    assert _served_checkpoint(server) == _built_checkpoint(ws)
    _foreign_intact(server)
    # The proof against the server also passes on its own.
    verify = ws.run(
        "verify",
        "--server",
        server.server_spec,
        "--trust-anchor",
        str(anchor),
        "--now",
        str(ws.now),
    )
    assert verify.returncode == EXIT_OK, verify.stdout + verify.stderr


def test_a_record_changed_by_hand_shows_up_as_drift(
    primary: tuple[AuthoritativeServer, Workspace, Path, Path],
) -> None:
    server, ws, key_file, anchor = primary
    assert _push(ws, server, key_file, anchor).returncode == EXIT_OK
    key = publishing.read_tsig_key(key_file)
    update = dns.update.UpdateMessage(
        ZONE + ".", keyring=key.keyring, keyname=key.keyname, keyalgorithm=key.algorithm
    )
    update.add("_alter.drew.example.com.", 3600, "TXT", '"v=alter1; h=~drew; e=9; planted"')
    host, port = server.address
    assert dns.query.tcp(update, host, port=port, timeout=5).rcode() == 0
    code, drift = _plan(ws, server, key_file)
    assert code == EXIT_DRIFT
    assert [(c["owner"], c["action"]) for c in drift["changes"]] == [
        ("_alter.drew.example.com.", "update")
    ]
    assert _push(ws, server, key_file, anchor).returncode == EXIT_OK
    assert _plan(ws, server, key_file)[0] == EXIT_OK


def _served_checkpoint(server: AuthoritativeServer) -> tuple[int, str]:
    """The tree size and root of the checkpoint record the server serves."""
    (record,) = [
        b"".join(rdata.strings).decode("ascii")
        for rdata in server.rrset(dns.name.from_text(LOG_OWNER), dns.rdatatype.TXT)
    ]
    prefix = "v=alter-log1; n="
    assert record.startswith(prefix)
    lines = base64.b64decode(record.removeprefix(prefix)).decode("utf-8").split("\n")
    return int(lines[1]), lines[2]


def _built_checkpoint(ws: Workspace) -> tuple[int, str]:
    """The tree size and root of ``build/<zone>/log/checkpoint``."""
    lines = (ws.root / "build" / ZONE / "log" / "checkpoint").read_text(encoding="utf-8")
    size, root = lines.split("\n")[1:3]
    return int(size), root


def test_a_sign_that_appends_to_the_log_is_pushed_with_its_checkpoint(
    primary: tuple[AuthoritativeServer, Workspace, Path, Path],
) -> None:
    server, ws, key_file, anchor = primary
    assert _push(ws, server, key_file, anchor).returncode == EXIT_OK
    size, _ = _served_checkpoint(server)
    ws.ok("rotate", "~blake", "--zone", ZONE, "--now", str(ws.now), SIMULATED_TIME_FLAG)
    ws.ok("sign", "--now", str(ws.now), SIMULATED_TIME_FLAG)
    assert _built_checkpoint(ws)[0] > size  # the sign appended blake's new epoch
    code, planned = _plan(ws, server, key_file)
    assert code == EXIT_DRIFT
    assert [(c["owner"], c["action"]) for c in planned["changes"]] == [
        (LOG_OWNER, "update"),
        ("_alter.blake.example.com.", "update"),
    ]
    pushed = _push(ws, server, key_file, anchor, "--json")
    assert pushed.returncode == EXIT_OK, pushed.stdout + pushed.stderr
    proof = json.loads(pushed.stdout)["proof"]["zones"][0]["checkpoint"]
    assert (proof["owner"], proof["ok"], proof["dnssec"]) == (LOG_OWNER, True, "secure")
    assert _served_checkpoint(server) == _built_checkpoint(ws)
    assert _plan(ws, server, key_file)[1]["pending"] is False
    _foreign_intact(server)


def test_deleting_most_records_needs_force(
    primary: tuple[AuthoritativeServer, Workspace, Path, Path],
) -> None:
    server, ws, key_file, anchor = primary
    assert _push(ws, server, key_file, anchor).returncode == EXIT_OK
    definition = ws.root / "zones" / f"{ZONE}.yaml"
    text = definition.read_text(encoding="utf-8")
    kept = text.split("  - ~drew\n")[0] + "\n"  # drop ~drew, ~deploy.bot and ~cc-opus-4-7
    definition.write_text(kept, encoding="utf-8")
    ws.ok("sign", "--now", str(ws.now), SIMULATED_TIME_FLAG)
    code, plan = _plan(ws, server, key_file)
    assert (code, plan["counts"]["delete"]) == (EXIT_DRIFT, 3)
    refused = _push(ws, server, key_file, anchor)
    assert refused.returncode == EXIT_USAGE, refused.stderr
    assert "--force" in refused.stderr
    assert _plan(ws, server, key_file)[1]["counts"]["delete"] == 3  # nothing was pushed
    forced = _push(ws, server, key_file, anchor, "--force")
    assert forced.returncode == EXIT_OK, forced.stdout + forced.stderr
    assert _plan(ws, server, key_file)[0] == EXIT_OK
    _foreign_intact(server)


@pytest.mark.slow  # SIGKILLs push part-way, on named and on knotd
def test_a_push_cut_short_is_finished_by_the_next_one(
    primary: tuple[AuthoritativeServer, Workspace, Path, Path],
) -> None:
    server, ws, key_file, anchor = primary
    spec = load_zone(ws.root / "zones" / f"{ZONE}.yaml")
    key = publishing.read_tsig_key(key_file)
    plan = publishing.plan(spec, out=ws.root / "build", server=server.address, tsig=key)
    # Half the push reaches the server (one UPDATE per owner), then the server dies.
    half = publishing.Plan(plan.zone, plan.server, plan.changes[:2], plan.served, plan.enumeration)
    assert publishing.apply(half, server.address, key, batch_octets=1) == 2
    address = server.server_spec
    server.kill()
    failed = _push(ws, address, key_file, anchor)
    assert failed.returncode == EXIT_NETWORK, failed.stderr
    assert len([line for line in failed.stderr.splitlines() if line.strip()]) == 1
    server.start()  # restarts from its journal, on the same port
    code, rest = _plan(ws, server, key_file)
    assert (code, rest["counts"]) == (EXIT_DRIFT, {"add": 4, "update": 0, "delete": 0})
    assert rest["served_records"] == 2  # both owners pushed before the crash survived
    assert _push(ws, server, key_file, anchor).returncode == EXIT_OK
    assert _plan(ws, server, key_file)[0] == EXIT_OK
    _foreign_intact(server)


def test_a_server_that_does_not_sign_needs_allow_insecure(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws", int(time.time()))
    ws.ok("sign", "--create-keys", "--now", str(ws.now))
    key, key_file = make_tsig_key(tmp_path, "alter-push")
    zone_file = tmp_path / "server.zone"
    zone_file.write_text(SERVER_ZONE, encoding="utf-8")
    with Named(tmp_path / "server", ZONE, zone_file, tsig=key, allow_update=True) as server:
        spec = server.server_spec
        only = ("--ns", spec)
        refused = ws.run("push", ZONE, "--server", spec, "--tsig-key", str(key_file), *only)
        assert refused.returncode == EXIT_USAGE, refused.stdout + refused.stderr
        assert "--allow-insecure" in refused.stderr
        assert _plan(ws, server, key_file)[1]["counts"]["add"] == 6  # nothing was pushed
        pushed = ws.run(
            "push", ZONE, "--server", spec, "--tsig-key", str(key_file), "--allow-insecure", *only
        )
        assert pushed.returncode == EXIT_OK, pushed.stdout + pushed.stderr
        assert "5/5 handles verified" in pushed.stdout
        assert "(insecure)" in pushed.stdout
        assert _plan(ws, server, key_file)[0] == EXIT_OK


_READS: list[str] = []  # opens of an envelopes document while a test listens
_LISTENING: list[bool] = []


def _count_envelope_reads(event: str, args: tuple[Any, ...]) -> None:
    if _LISTENING and event == "open" and str(args[0]).endswith(f"{ZONE}.envelopes.json"):
        _READS.append(str(args[0]))


def test_a_push_reads_the_envelopes_document_once(
    primary: tuple[AuthoritativeServer, Workspace, Path, Path],
) -> None:
    # The proof after the updates expects what the plan was made of: the document (two
    # seconds to read and parse at 100,000 handles) is not read a second time.
    server, ws, key_file, anchor = primary
    if not _LISTENING and not _READS:
        sys.addaudithook(_count_envelope_reads)  # hooks stay; it listens only in this test
    _READS.clear()
    _LISTENING.append(True)
    try:
        report = publishing.push(
            ws.root / "zones" / f"{ZONE}.yaml",
            out=ws.root / "build",
            server=server.address,
            tsig=publishing.read_tsig_key(key_file),
            now=ws.now,
            trust_anchors=anchor,
            ns=[server.address],
        )
    finally:
        _LISTENING.clear()
    assert report.proof.ok
    (proof,) = report.proof.proofs
    spec = load_zone(ws.root / "zones" / f"{ZONE}.yaml")
    assert sorted(result.handle for result in proof.results) == sorted(
        handle.handle.ref for handle in spec.handles
    )
    assert len(_READS) == 1, _READS
