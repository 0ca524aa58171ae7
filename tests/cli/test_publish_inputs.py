"""``plan``, ``push``, ``export`` and ``verify --server`` on the command line.

Bad inputs follow the contract of test_bad_inputs.py: the documented exit code, one
``alter-publish: error:`` line on stderr naming what is wrong, no traceback, and the
workspace left byte-for-byte as it was. Inputs that are wrong before any server is
asked must not send a single packet: their ``--server`` is a trap (a UDP socket and
a TCP listener on one loopback port that never answer) checked after the run.

The happy paths run ``plan`` against the embedded server serving the rendered zone
(it refuses zone transfers, so the records are read by queries). Pushing to real
primaries (BIND, Knot) is in tests/integration/test_push.py.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.rdtypes.ANY.TXT
import dns.zone
import pytest

from alter_publish.dns.server import ZoneServer
from alter_publish.errors import (
    EXIT_DRIFT,
    EXIT_NETWORK,
    EXIT_OK,
    EXIT_OUTPUT,
    EXIT_USAGE,
)
from alter_publish.format.envelope import split_txt
from alter_publish.pipeline import read_zone_file
from tests.cli.workspace import (
    NOW,
    ZONE,
    Workspace,
    assert_one_error_line,
    assert_unchanged,
)

OTHER_ZONE = "example.org"
DREW_OWNER = f"_alter.drew.{ZONE}."
ENVELOPES_FILE = f"build/{ZONE}.envelopes.json"
KEY_FILE = "push.key"
TSIG_SECRET_B64 = base64.b64encode(bytes(range(32))).decode("ascii")
NOT_BASE64 = "c2VjcmV0*not*base64*c2VjcmV0"
HANDLES = 5  # in zones/example.com.yaml


def _key_file(*, algorithm: str = "hmac-sha256", secret: str = TSIG_SECRET_B64) -> bytes:
    """A TSIG key file as ``tsig-keygen`` writes it."""
    return f'key "alter-push" {{\n\talgorithm {algorithm};\n\tsecret "{secret}";\n}};\n'.encode()


# --- a server that must not be asked, and a port where nothing listens -------------------


@dataclass(frozen=True, slots=True)
class Trap:
    """A UDP socket and a TCP listener on one loopback port; neither ever answers."""

    udp: socket.socket
    tcp: socket.socket

    @property
    def server(self) -> str:
        """``HOST:PORT`` for ``--server``."""
        host, port = self.udp.getsockname()[:2]
        return f"{host}:{port}"

    def touched(self) -> list[str]:
        """Which of the two sockets a client reached."""
        found: list[str] = []
        with contextlib.suppress(BlockingIOError):
            self.udp.recv(65535)
            found.append("udp")
        with contextlib.suppress(BlockingIOError):
            conn, _ = self.tcp.accept()
            conn.close()
            found.append("tcp")
        return found


def _bind_pair() -> tuple[socket.socket, socket.socket]:
    """A UDP socket and a listening TCP socket bound to the same free loopback port."""
    for _ in range(8):
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            tcp.bind(udp.getsockname())
        except OSError:
            tcp.close()
            udp.close()
            continue
        tcp.listen(1)
        return udp, tcp
    pytest.fail("no free UDP+TCP port pair on 127.0.0.1")


@pytest.fixture
def trap() -> Iterator[Trap]:
    udp, tcp = _bind_pair()
    udp.setblocking(False)
    tcp.setblocking(False)
    try:
        yield Trap(udp, tcp)
    finally:
        udp.close()
        tcp.close()


@pytest.fixture
def dead_server() -> str:
    """``HOST:PORT`` of a loopback port where nothing listens (UDP or TCP)."""
    udp, tcp = _bind_pair()
    host, port = udp.getsockname()[:2]
    udp.close()
    tcp.close()
    return f"{host}:{port}"


# --- bad inputs ------------------------------------------------------------------------------

Setup = Callable[[Workspace, str], tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Case:
    """One bad input: set it up (given ``--server``), expect one error line.

    ``absent`` must appear nowhere on stdout or stderr (TSIG secrets).
    """

    id: str
    setup: Setup
    exit_code: int
    contains: tuple[str, ...]
    absent: tuple[str, ...] = ()

    def param(self) -> object:
        return pytest.param(self, id=self.id)


def _args(*args: str) -> Setup:
    """The command, with ``{server}`` in any argument replaced by the server."""

    def setup(_: Workspace, server: str) -> tuple[str, ...]:
        return tuple(arg.format(server=server) for arg in args)

    return setup


def _with_file(name: str, data: bytes, then: Setup) -> Setup:
    def setup(ws: Workspace, server: str) -> tuple[str, ...]:
        (ws.root / name).write_bytes(data)
        return then(ws, server)

    return setup


def _with_envelopes(change: Callable[[dict[str, object]], None], then: Setup) -> Setup:
    def setup(ws: Workspace, server: str) -> tuple[str, ...]:
        doc = json.loads(ws.envelopes_file.read_text(encoding="utf-8"))
        change(doc)
        ws.envelopes_file.write_text(json.dumps(doc), encoding="utf-8")
        return then(ws, server)

    return setup


def _other_zone(doc: dict[str, object]) -> None:
    doc["zone"] = OTHER_ZONE


PLAN = ("plan", ZONE, "--server", "{server}")
PUSH = ("push", ZONE, "--server", "{server}", "--tsig-key", KEY_FILE)
WITH_KEY = _key_file()

CASES = [
    Case(
        "plan-unknown-zone",
        _args("plan", OTHER_ZONE, "--server", "{server}"),
        EXIT_USAGE,
        (OTHER_ZONE, f"zones/{OTHER_ZONE}.yaml"),
    ),
    Case(
        "plan-server-not-hostport",
        _args("plan", ZONE, "--server", "nonsense"),
        EXIT_USAGE,
        ("--server 'nonsense'", "HOST:PORT"),
    ),
    Case(
        "plan-server-port-zero",
        _args("plan", ZONE, "--server", "127.0.0.1:0"),
        EXIT_USAGE,
        ("--server '127.0.0.1:0'", "HOST:PORT"),
    ),
    Case(
        "plan-tsig-key-missing",
        _args(*PLAN, "--tsig-key", "missing.key"),
        EXIT_USAGE,
        ("missing.key", "cannot read TSIG key file"),
    ),
    Case(
        "plan-tsig-key-not-a-key-file",
        _with_file(
            KEY_FILE,
            b'options { directory "/var/named"; };\n',
            _args(*PLAN, "--tsig-key", KEY_FILE),
        ),
        EXIT_USAGE,
        (KEY_FILE, "not a BIND key file"),
    ),
    Case(
        "plan-tsig-key-without-clause",
        _with_file(
            KEY_FILE,
            f'algorithm hmac-sha256; secret "{TSIG_SECRET_B64}";\n'.encode(),
            _args(*PLAN, "--tsig-key", KEY_FILE),
        ),
        EXIT_USAGE,
        (KEY_FILE, "not a BIND key file"),
        absent=(TSIG_SECRET_B64,),
    ),
    Case(
        "plan-tsig-secret-not-base64",
        _with_file(
            KEY_FILE,
            _key_file(secret=NOT_BASE64),
            _args(*PLAN, "--tsig-key", KEY_FILE),
        ),
        EXIT_USAGE,
        (KEY_FILE, "not base64"),
        absent=(NOT_BASE64, "c2VjcmV0"),
    ),
    Case(
        "plan-tsig-algorithm-hmac-md4",
        _with_file(KEY_FILE, _key_file(algorithm="hmac-md4"), _args(*PLAN, "--tsig-key", KEY_FILE)),
        EXIT_USAGE,
        (KEY_FILE, "hmac-md4", "hmac-sha256"),
        absent=(TSIG_SECRET_B64,),
    ),
    Case(
        "plan-envelopes-not-json",
        _with_file(ENVELOPES_FILE, b"{", _args(*PLAN)),
        EXIT_OUTPUT,
        (ENVELOPES_FILE, "not an envelopes document"),
    ),
    Case(
        "push-without-tsig-key",
        _args("push", ZONE, "--server", "{server}"),
        EXIT_USAGE,
        ("--tsig-key",),
    ),
    Case(
        "push-max-delete-2",
        _with_file(KEY_FILE, WITH_KEY, _args(*PUSH, "--max-delete", "2")),
        EXIT_USAGE,
        ("--max-delete",),
        absent=(TSIG_SECRET_B64,),
    ),
    Case(
        "push-unknown-zone",
        _with_file(
            KEY_FILE,
            WITH_KEY,
            _args("push", OTHER_ZONE, "--server", "{server}", "--tsig-key", KEY_FILE),
        ),
        EXIT_USAGE,
        (OTHER_ZONE, "no zone definition"),
    ),
    Case(
        "push-tsig-key-not-a-key-file",
        _with_file(KEY_FILE, b"secret\n", _args(*PUSH)),
        EXIT_USAGE,
        (KEY_FILE, "not a BIND key file"),
    ),
    Case(
        "push-server-not-hostport",
        _with_file(KEY_FILE, WITH_KEY, _args(*PUSH[:2], "--server", "nonsense", *PUSH[4:])),
        EXIT_USAGE,
        ("--server 'nonsense'", "HOST:PORT"),
    ),
    Case(
        "export-unknown-zone",
        _args("export", OTHER_ZONE, "--format", "octodns"),
        EXIT_USAGE,
        (OTHER_ZONE, "no zone definition"),
    ),
    Case(
        "export-envelopes-of-another-zone",
        _with_envelopes(_other_zone, _args("export", ZONE, "--format", "bind-include")),
        EXIT_OUTPUT,
        (ENVELOPES_FILE, f"is for zone '{OTHER_ZONE}'"),
    ),
    Case(
        "export-output-below-a-file",
        _args("export", ZONE, "--format", "well-known", "--output", f"zones/{ZONE}.yaml/x.json"),
        EXIT_OUTPUT,
        (f"zones/{ZONE}.yaml/x.json", "cannot write"),
    ),
    Case(
        "verify-server-not-hostport",
        _args("verify", "--server", "nonsense", "--now", str(NOW)),
        EXIT_USAGE,
        ("--server 'nonsense'", "HOST:PORT"),
    ),
    Case(
        "verify-server-port-out-of-range",
        _args("verify", "--server", "127.0.0.1:65536", "--now", str(NOW)),
        EXIT_USAGE,
        ("--server '127.0.0.1:65536'", "HOST:PORT"),
    ),
]


def _assert_case(case: Case, ws: Workspace, server: str) -> None:
    args = case.setup(ws, server)
    before = ws.snapshot()

    result = ws.run(*args)

    line = assert_one_error_line(result, case.exit_code)
    for fragment in case.contains:
        assert fragment in line, result.describe()
    for secret in case.absent:
        assert secret not in result.stdout + result.stderr, result.describe()
    assert_unchanged(before, ws.snapshot())


@pytest.mark.parametrize("case", [case.param() for case in CASES])
def test_bad_publish_input_gives_one_line_and_asks_no_server(
    case: Case, workspace: Workspace, trap: Trap
) -> None:
    _assert_case(case, workspace, trap.server)

    assert trap.touched() == [], "the command asked the server before refusing its input"


def test_plan_from_outputs_signed_here_with_a_broken_checkpoint_asks_no_server(
    workspace: Workspace, trap: Trap
) -> None:
    # Signed in place, the record of the run holds, so plan would transfer the zone while
    # it reads the outputs; the log's checkpoint file, which the record does not cover,
    # is read before that.
    signed = workspace.run("sign", "--now", str(NOW), "--allow-simulated-time")
    assert signed.returncode == EXIT_OK, signed.describe()
    checkpoint = workspace.root / "build" / ZONE / "log" / "checkpoint"
    checkpoint.write_text("not a checkpoint\n", encoding="utf-8")
    result = workspace.run("plan", ZONE, "--server", trap.server)
    line = assert_one_error_line(result, EXIT_OUTPUT)
    assert "checkpoint" in line, result.describe()
    assert trap.touched() == [], "plan asked the server before refusing its outputs"


def test_push_allow_insecure_with_broken_outputs_asks_no_server(
    workspace: Workspace, trap: Trap
) -> None:
    # Without --allow-insecure, push asks the server for the zone's DNSKEY before anything
    # else, then transfers the zone while it reads the outputs; with it, it reads first.
    (workspace.root / KEY_FILE).write_bytes(WITH_KEY)
    (workspace.root / ENVELOPES_FILE).write_bytes(b"{")
    push = (*PUSH[:3], trap.server, *PUSH[4:], "--allow-insecure")
    result = workspace.run(*push, "--now", str(NOW), "--allow-simulated-time")
    assert result.returncode == EXIT_OUTPUT, result.describe()
    assert f"error: {ENVELOPES_FILE}: not an envelopes document" in result.stderr
    assert trap.touched() == [], "push asked the server before refusing its outputs"


# Nothing answers on UDP, so each of these waits for the query timeout (1 s here).
NETWORK_CASES = [
    Case(
        "plan-nothing-listens",
        _args(*PLAN, "--timeout", "1"),
        EXIT_NETWORK,
        ("{server}", "no answer from {server}"),
    ),
    Case(
        "push-nothing-listens",
        _with_file(
            KEY_FILE,
            WITH_KEY,
            _args(*PUSH, "--trust-anchor", "build/example.com.ds", "--timeout", "1"),
        ),
        EXIT_NETWORK,
        ("{server}", "no answer from {server}"),
        absent=(TSIG_SECRET_B64,),
    ),
]


@pytest.mark.parametrize("case", [case.param() for case in NETWORK_CASES])
def test_plan_and_push_to_a_port_where_nothing_listens(
    case: Case, workspace: Workspace, dead_server: str
) -> None:
    contains = tuple(fragment.format(server=dead_server) for fragment in case.contains)
    _assert_case(
        Case(case.id, case.setup, case.exit_code, contains, case.absent), workspace, dead_server
    )


def test_verify_server_where_nothing_listens_is_a_network_error(
    workspace: Workspace, dead_server: str
) -> None:
    before = workspace.snapshot()

    result = workspace.run("verify", "--server", dead_server, "--now", str(NOW))

    line = assert_one_error_line(result, EXIT_NETWORK)
    assert line.startswith(f"{dead_server}: no usable answer to SOA {ZONE}."), result.describe()
    assert_unchanged(before, workspace.snapshot())


# --- plan against the embedded server ----------------------------------------------------------


@contextlib.contextmanager
def _serving(zone: dns.zone.Zone) -> Iterator[str]:
    """Serve ``zone`` on loopback; yields ``HOST:PORT``."""
    with ZoneServer([zone]) as server:
        host, port = server.address
        yield f"{host}:{port}"


def _rendered(ws: Workspace) -> dns.zone.Zone:
    return read_zone_file(ws.zone_file, ZONE)


def test_plan_against_the_rendered_zone_has_nothing_to_do(workspace: Workspace) -> None:
    before = workspace.snapshot()

    with _serving(_rendered(workspace)) as server:
        result = workspace.run("plan", ZONE, "--server", server)

    assert (result.returncode, result.stderr) == (EXIT_OK, ""), result.describe()
    assert result.stdout == (
        f"{ZONE}: nothing to do on {server} "
        f"({HANDLES + 1} managed records served, read by queries)\n"  # and the log's record
    ), result.describe()
    assert_unchanged(before, workspace.snapshot())


def test_plan_lists_the_one_owner_whose_text_changed(workspace: Workspace) -> None:
    zone = _rendered(workspace)
    rdataset = zone.find_rdataset(DREW_OWNER, dns.rdatatype.TXT)
    (rdata,) = rdataset
    assert isinstance(rdata, dns.rdtypes.ANY.TXT.TXT)
    text = b"".join(rdata.strings).decode("ascii")
    altered = text.replace("; e=1;", "; e=7;")
    assert altered != text
    changed = dns.rdtypes.ANY.TXT.TXT(dns.rdataclass.IN, dns.rdatatype.TXT, split_txt(altered))
    zone.replace_rdataset(DREW_OWNER, dns.rdataset.from_rdata(rdataset.ttl, changed))
    before = workspace.snapshot()

    with _serving(zone) as server:
        result = workspace.run("plan", ZONE, "--server", server)

    line = assert_one_error_line(result, EXIT_DRIFT)
    assert line == f"{ZONE}: 1 owner name(s) differ; run push", result.describe()
    assert result.stdout.splitlines() == [
        f"~ {DREW_OWNER} (update: 1 -> 1 record(s))",
        f"{ZONE}: 0 add, 1 update, 0 delete on {server} "
        f"({HANDLES + 1} managed records served, read by queries)",
    ], result.describe()
    assert_unchanged(before, workspace.snapshot())


def test_plan_without_build_says_run_sign(workspace: Workspace) -> None:
    zone = _rendered(workspace)
    shutil.rmtree(workspace.root / "build")
    before = workspace.snapshot()

    with _serving(zone) as server:
        result = workspace.run("plan", ZONE, "--server", server)

    line = assert_one_error_line(result, EXIT_OUTPUT)
    assert ENVELOPES_FILE in line, result.describe()
    assert "run 'alter-publish sign' first" in line, result.describe()
    assert_unchanged(before, workspace.snapshot())
