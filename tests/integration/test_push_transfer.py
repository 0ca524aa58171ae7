"""``plan`` reads a real server's AXFR at the wire level (:mod:`alter_publish.dns.transfer`).

Against Knot and BIND signing the zone themselves (inline signing, TSIG): the fast
reader finds exactly the TXT records dnspython's own transfer reader finds (the
reference beside it), refuses a transfer signed with another key, and after one
handle is edited and signed ``plan`` lists exactly that owner and the log's
checkpoint record (the sign appended to the log) as its changes; ``push`` then proves
that one handle (and the checkpoint record), or every one with ``--prove-all``.
"""

from __future__ import annotations

import base64
from pathlib import Path

import dns.name
import dns.tsig
import pytest

from alter_publish.dns.transfer import transfer_txt, transfer_txt_reference
from alter_publish.errors import EXIT_DRIFT, EXIT_OK, ResolveError
from alter_publish.publish import push as publishing
from tests.integration.servers import AuthoritativeServer
from tests.integration.test_push import Workspace, _plan, _push, primary

__all__ = ["primary"]  # the fixture, shared with test_push.py

ORIGIN = dns.name.from_text("example.com.")
CHANGED_OWNER = "_alter.drew.example.com."
LOG_OWNER = "_alter-log.example.com."
LIMIT_SECONDS = 20.0


def _alter(owner: bytes) -> bool:
    return owner.startswith(b"\x06_alter")


def _both_readers(
    server: AuthoritativeServer, key: publishing.TsigKey
) -> tuple[list[tuple[str, int, tuple[bytes, ...]]], list[tuple[str, int, tuple[bytes, ...]]]]:
    host, port = server.server_spec.rsplit(":", 1)
    found = []
    for read in (transfer_txt, transfer_txt_reference):
        _, records = read(
            ORIGIN,
            (host, int(port)),
            _alter,
            keyring=key.keyring,
            keyname=key.keyname,
            timeout=5.0,
            lifetime=LIMIT_SECONDS,
        )
        found.append(sorted((r.owner, r.ttl, r.strings) for r in records))
    return found[0], found[1]


def test_the_wire_reader_agrees_with_dnspython_and_checks_the_tsig(
    primary: tuple[AuthoritativeServer, Workspace, Path, Path],
) -> None:
    server, ws, key_file, anchor = primary
    assert _push(ws, server, key_file, anchor).returncode == EXIT_OK
    key = publishing.read_tsig_key(key_file)
    fast, reference = _both_readers(server, key)
    assert fast == reference
    owners = {owner for owner, _, _ in fast}
    assert CHANGED_OWNER in owners
    assert "_alter.blake.example.com." in owners  # ours and the foreign text at the same owner
    assert len(fast) == 7  # 5 envelopes + 2 foreign TXT records at _alter owners

    wrong = {key.keyname: dns.tsig.Key(key.keyname, bytes(32), key.algorithm)}
    host, port = server.server_spec.rsplit(":", 1)
    with pytest.raises(ResolveError):
        transfer_txt(
            ORIGIN,
            (host, int(port)),
            _alter,
            keyring=wrong,
            keyname=key.keyname,
            timeout=5.0,
            lifetime=LIMIT_SECONDS,
        )
    secret = base64.b64encode(key.secret).decode()
    assert secret not in repr(key)


def test_plan_lists_exactly_the_one_change_and_push_proves_it(
    primary: tuple[AuthoritativeServer, Workspace, Path, Path],
) -> None:
    server, ws, key_file, anchor = primary
    assert _push(ws, server, key_file, anchor).returncode == EXIT_OK
    definition = ws.root / "zones" / "example.com.yaml"
    text = definition.read_text(encoding="utf-8")
    assert "  - ~drew\n" in text
    definition.write_text(
        text.replace("  - ~drew\n", "  - {handle: ~drew, resolver: 'https://drew.example/'}\n"),
        encoding="utf-8",
    )
    ws.ok("sign", "--now", str(ws.now + 60), "--allow-simulated-time")

    code, planned = _plan(ws, server, key_file)
    assert code == EXIT_DRIFT
    assert planned["enumeration"] == "axfr"
    assert planned["counts"] == {"add": 0, "update": 2, "delete": 0}
    log, change = planned["changes"]  # in canonical order
    assert (log["owner"], change["owner"]) == (LOG_OWNER, CHANGED_OWNER)
    assert "drew.example" in "".join(change["after"]["texts"])
    assert "drew.example" not in "".join(change["before"]["texts"])

    pushed = _push(ws, server, key_file, anchor)
    assert pushed.returncode == EXIT_OK, pushed.stdout + pushed.stderr
    assert "1/1 handles verified" in pushed.stdout  # only the changed handle
    code, again = _plan(ws, server, key_file)
    assert (code, again["pending"]) == (EXIT_OK, False)
    every = _push(ws, server, key_file, anchor, "--prove-all")
    assert every.returncode == EXIT_OK, every.stdout + every.stderr
    assert "5/5 handles verified" in every.stdout
