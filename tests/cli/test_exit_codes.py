"""Every command exits with the code README "Exit codes" documents for what went wrong.

Per command, where it applies: a name server that does not answer (6), a usage
mistake (2) and a broken zone definition (3). Each case runs the real command in a
copy of the signed workspace and expects one error line and no traceback.
"""

from __future__ import annotations

import socket

import pytest

from alter_publish.errors import EXIT_DEFINITION, EXIT_NETWORK, EXIT_USAGE
from tests.cli.workspace import NOW, ZONE, Workspace, assert_one_error_line, simulated

TSIG_KEY = (
    'key "alter-push" {\n\talgorithm hmac-sha256;\n'
    '\tsecret "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI=";\n};\n'
)
AT = ("--now", str(NOW))  # read-only commands
WRITE_AT = simulated()  # commands that write
FAST = ("--timeout", "0.2")
DS = ("--trust-anchor", f"build/{ZONE}.ds")

NETWORK = [
    pytest.param(("verify", *AT, "--server", "{server}"), id="verify"),
    pytest.param(
        ("resolve", "~blake", "--substrate", ZONE, "--server", "{server}", *FAST), id="resolve"
    ),
    pytest.param(("plan", ZONE, "--server", "{server}", *FAST), id="plan"),
    pytest.param(
        ("push", ZONE, "--server", "{server}", "--tsig-key", "tsig.key", *DS, *WRITE_AT, *FAST),
        id="push",
    ),
    pytest.param(("check", ZONE, "--primary", "{server}", *AT, *FAST), id="check-primary"),
]

USAGE = [
    pytest.param(("sign", *WRITE_AT, "--jobs", "0"), id="sign"),
    pytest.param(("verify", *AT, "--server", "nowhere"), id="verify"),
    pytest.param(("resolve", "~Bl ake", "--server", "127.0.0.1:53"), id="resolve"),
    pytest.param(("verify-record", "v=alter1"), id="verify-record"),
    pytest.param(("serve",), id="serve"),
    pytest.param(("keygen", "~Bl ake", "--zone", ZONE), id="keygen"),
    pytest.param(("init", "--zone", "bad zone!", "elsewhere"), id="init"),
    pytest.param(
        ("rotate", "~drew", "--zone", ZONE, "--compromised", "--lost", *WRITE_AT), id="rotate"
    ),
    pytest.param(("revoke", "~drew", "--zone", ZONE, "--epoch", "0", *WRITE_AT), id="revoke"),
    pytest.param(("plan", ZONE, "--server", "nowhere"), id="plan"),
    pytest.param(("push", ZONE, "--server", "127.0.0.1:53"), id="push"),
    pytest.param(("check", ZONE, "--primary", "nowhere"), id="check-primary"),
    pytest.param(("export", ZONE, "--format", "zonefile"), id="export"),
    pytest.param(("keys", "status", "--now", "-1"), id="keys-status"),
    pytest.param(("dnssec", "keygen", "bad zone!"), id="dnssec-keygen"),
    pytest.param(("dnssec", "ds", ZONE, "--ttl", "-1"), id="dnssec-ds"),
    pytest.param(("dnssec", "status"), id="dnssec-status"),
    pytest.param(("dnssec", "rollover", ZONE, "csk", *WRITE_AT), id="dnssec-rollover"),
    pytest.param(("dnssec", "step", ZONE, "--now", "soon"), id="dnssec-step"),
]

DEFINITION = [
    pytest.param(("sign", *WRITE_AT), id="sign"),
    pytest.param(("verify", *AT), id="verify"),
    pytest.param(("verify", *AT, "--server", "{server}"), id="verify-server"),
    pytest.param(("plan", ZONE, "--server", "{server}", *FAST), id="plan"),
    pytest.param(
        ("push", ZONE, "--server", "{server}", "--tsig-key", "tsig.key", *DS, *WRITE_AT, *FAST),
        id="push",
    ),
    pytest.param(("export", ZONE, "--format", "bind-include"), id="export"),
    pytest.param(("keys", "status", *AT), id="keys-status"),
    pytest.param(("rotate", "~drew", "--zone", ZONE, *WRITE_AT), id="rotate"),
    pytest.param(("revoke", "~drew", "--zone", ZONE, "--epoch", "1", *WRITE_AT), id="revoke"),
    pytest.param(("dnssec", "status", ZONE), id="dnssec-status"),
    pytest.param(("dnssec", "rollover", ZONE, "zsk", *WRITE_AT), id="dnssec-rollover"),
    pytest.param(("dnssec", "step", ZONE, *WRITE_AT), id="dnssec-step"),
]


@pytest.fixture
def silent_server() -> str:
    """HOST:PORT where nothing listens (a port just bound and let go)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"127.0.0.1:{port}"


@pytest.mark.parametrize("args", NETWORK)
def test_a_server_that_does_not_answer_is_exit_6(
    workspace: Workspace, silent_server: str, args: tuple[str, ...]
) -> None:
    (workspace.root / "tsig.key").write_text(TSIG_KEY, encoding="utf-8")
    result = workspace.run(*(arg.replace("{server}", silent_server) for arg in args))

    line = assert_one_error_line(result, EXIT_NETWORK)
    assert silent_server in line


def test_a_server_that_cannot_bind_is_exit_6(workspace: Workspace) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = str(taken.getsockname()[1])
        result = workspace.run("serve", f"build/{ZONE}.zone", "--port", port)

    line = assert_one_error_line(result, EXIT_NETWORK)
    assert f"127.0.0.1:{port}" in line


@pytest.mark.parametrize("args", USAGE)
def test_a_usage_mistake_is_exit_2(workspace: Workspace, args: tuple[str, ...]) -> None:
    result = workspace.run(*args)

    assert_one_error_line(result, EXIT_USAGE)


@pytest.mark.parametrize("args", DEFINITION)
def test_a_broken_definition_is_exit_3(
    workspace: Workspace, silent_server: str, args: tuple[str, ...]
) -> None:
    (workspace.root / "tsig.key").write_text(TSIG_KEY, encoding="utf-8")
    text = workspace.definition.read_text(encoding="utf-8")
    broken = text.replace("resolver: https://mcp.example.com/blake", "resolver: 'https://'")
    workspace.definition.write_text(broken, encoding="utf-8")

    result = workspace.run(*(arg.replace("{server}", silent_server) for arg in args))

    line = assert_one_error_line(result, EXIT_DEFINITION)
    assert line.startswith(f"zones/{ZONE}.yaml:39:15: handle '~blake': resolver 'https://': ")
