"""``alter-publish log witness`` on a loopback port (a real subprocess, real HTTP):
the c2sp.org/tlog-witness add-checkpoint answers for a growing log, a rollback, a fork,
a bad signature and an unknown log; the state survives a restart; ``log cosign``
collects cosignatures that Go's ``note.Open`` verifies and ``log verify --policy``
accepts, and a quorum that is not met is ``quorum-not-met``."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from alter_publish.errors import EXIT_VERIFICATION
from alter_publish.format.note import Note, Signer
from alter_publish.format.tiles import TreeHashes
from alter_publish.format.tlog import Checkpoint, consistency_proof
from alter_publish.format.witness import AddCheckpoint
from tests.cli.workspace import Workspace, assert_one_error_line
from tests.integration.golog import build_tlogcheck

ORIGIN = "example.com/alter-log"
LOG = Signer(ORIGIN, bytes(range(32)))
NOW = 1767225600
PROGRAM = Path(__file__).parent / "go" / "cosigcheck" / "main.go"


def _entries(count: int, tag: str = "") -> list[bytes]:
    return [f"_alter.h{at}.example.com.\x00v=alter1; n={at}{tag}".encode() for at in range(count)]


def _note(tree: TreeHashes, size: int, signer: Signer = LOG, origin: str = ORIGIN) -> str:
    checkpoint = Checkpoint(origin, size, tree.root(size)).to_text()
    return Note(checkpoint).signed_by(signer).to_text()


@dataclass(frozen=True, slots=True)
class Running:
    """A witness process: its URL, its verifier key text, its key file."""

    url: str
    vkey: str
    key: Path
    process: subprocess.Popen[str]


def _keygen(tmp_path: Path, name: str) -> tuple[Path, str]:
    key = tmp_path / f"{name.replace('/', '_')}.key"
    result = Workspace(tmp_path).run("log", "witness-keygen", name, "--out", str(key), "--json")
    assert result.returncode == 0, result.describe()
    assert key.stat().st_mode & 0o777 == 0o600
    return key, json.loads(result.stdout)["vkey"]


def _start(key: Path, vkey: str, state: Path, now: int = NOW, log: str | None = None) -> Running:
    log = LOG.verifier.to_text() if log is None else log
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "alter_publish", "log", "witness", "--key", str(key)),
            *("--state", str(state), "--log", log, "--now", str(now)),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    assert " on http://" in line, line
    return Running(line.split(" on ")[1].split(";")[0], vkey, key, process)


def _stop(running: Running) -> None:
    running.process.terminate()
    running.process.wait(timeout=10)
    assert running.process.stderr is not None
    running.process.stderr.close()


@pytest.fixture
def witness(tmp_path: Path) -> Iterator[Running]:
    key, vkey = _keygen(tmp_path, "witness.example/w1")
    running = _start(key, vkey, tmp_path / "state")
    try:
        yield running
    finally:
        _stop(running)


def _post(url: str, request: AddCheckpoint) -> tuple[int, str, str]:
    """Status, content type and body of an add-checkpoint."""
    http = urllib.request.Request(  # noqa: S310 (a loopback http URL)
        url + "/add-checkpoint", data=request.to_text().encode(), method="POST"
    )
    try:
        with urllib.request.urlopen(http, timeout=10) as response:  # noqa: S310
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def _check_cosignature(line: str, vkey: str, note: str) -> int:
    """Check a cosignature line from c2sp.org/tlog-cosignature alone (independent of
    alter_publish.format.note); its timestamp."""
    name, _, hash_hex_key = vkey.partition("+")
    key_hash, _, key_b64 = hash_hex_key.partition("+")
    raw_key = base64.b64decode(key_b64)
    assert raw_key[0] == 0x04
    assert hashlib.sha256(name.encode() + b"\n\x04" + raw_key[1:]).digest()[:4].hex() == key_hash
    assert line.startswith(f"\u2014 {name} ")
    assert line.endswith("\n")
    raw = base64.b64decode(line.split(" ")[2])
    assert raw[:4].hex() == key_hash
    assert len(raw) == 4 + 8 + 64
    (timestamp,) = struct.unpack(">Q", raw[4:12])
    text = note[: note.index("\n\n") + 1]
    message = f"cosignature/v1\ntime {timestamp}\n{text}".encode()
    Ed25519PublicKey.from_public_bytes(raw_key[1:]).verify(raw[12:], message)
    return int(timestamp)


def test_add_checkpoint_answers(tmp_path: Path, witness: Running) -> None:
    tree = TreeHashes.of_entries(_entries(300))
    first = _note(tree, 100)
    status, kind, body = _post(witness.url, AddCheckpoint(0, (), first))
    assert (status, kind) == (200, "text/plain; charset=utf-8"), body
    assert _check_cosignature(body, witness.vkey, first) == NOW
    state = tmp_path / "state" / "example.com%2Falter-log"
    assert state.read_text(encoding="utf-8") == first  # persisted before answering

    # The client does not know the witness's size: 409 tells it.
    second = _note(tree, 300)
    assert _post(witness.url, AddCheckpoint(0, (), second)) == (409, "text/x.tlog.size", "100\n")
    proof = tuple(consistency_proof(tree.subtree, 100, 300))
    status, _, body = _post(witness.url, AddCheckpoint(100, proof, second))
    assert status == 200, body
    _check_cosignature(body, witness.vkey, second)
    # The same checkpoint again is cosigned again; the same size with another root is not.
    assert _post(witness.url, AddCheckpoint(300, (), second))[0] == 200
    forked = TreeHashes.of_entries(_entries(400, tag="-forked"))
    assert _post(witness.url, AddCheckpoint(300, (), _note(forked, 300)))[0] == 409

    # A rollback: a smaller tree is never cosigned.
    assert _post(witness.url, AddCheckpoint(300, (), first))[0] == 400  # old above the size
    assert _post(witness.url, AddCheckpoint(100, (), first)) == (409, "text/x.tlog.size", "300\n")
    # A fork: a larger tree that does not extend the cosigned one.
    fork_proof = tuple(consistency_proof(forked.subtree, 300, 400))
    status, _, body = _post(witness.url, AddCheckpoint(300, fork_proof, _note(forked, 400)))
    assert status == 422, body
    # A checkpoint signed by another key, and one of a log the witness does not know.
    other = Signer(ORIGIN, bytes(32))
    assert _post(witness.url, AddCheckpoint(300, (), _note(tree, 300, other)))[0] == 403
    stranger = Signer("other.example/log", bytes(32))
    unknown = _note(tree, 300, stranger, origin=stranger.name)
    assert _post(witness.url, AddCheckpoint(0, (), unknown))[0] == 404
    assert state.read_text(encoding="utf-8") == second  # nothing refused was recorded


def test_concurrent_first_checkpoints_one_is_cosigned(tmp_path: Path, witness: Running) -> None:
    """Checking the old size and recording the new one are atomic: of many checkpoints
    sent at once with ``old 0``, one is cosigned and the rest get 409 with its size."""
    tree = TreeHashes.of_entries(_entries(40))
    requests = [AddCheckpoint(0, (), _note(tree, size)) for size in range(1, 41)]
    with ThreadPoolExecutor(max_workers=len(requests)) as pool:
        answers = list(pool.map(lambda request: _post(witness.url, request), requests))
    cosigned = [size for size, answer in enumerate(answers, start=1) if answer[0] == 200]
    assert len(cosigned) == 1, answers
    refused = {answer for answer in answers if answer[0] != 200}
    assert refused == {(409, "text/x.tlog.size", f"{cosigned[0]}\n")}
    state = tmp_path / "state" / "example.com%2Falter-log"
    assert Checkpoint.parse(Note.parse(state.read_text(encoding="utf-8")).text).size == cosigned[0]


def test_the_state_survives_a_restart(tmp_path: Path, witness: Running) -> None:
    tree = TreeHashes.of_entries(_entries(50))
    assert _post(witness.url, AddCheckpoint(0, (), _note(tree, 50)))[0] == 200
    _stop(witness)
    again = _start(witness.key, witness.vkey, tmp_path / "state")
    try:
        assert _post(again.url, AddCheckpoint(0, (), _note(tree, 20)))[1:] == (
            "text/x.tlog.size",
            "50\n",
        )
    finally:
        _stop(again)


def _log_dir(root: Path, entries: list[bytes]) -> Path:
    directory = root / "log"
    tree = TreeHashes.of_entries(entries)
    for tile, data in tree.changed():
        (directory / tile.path).parent.mkdir(parents=True, exist_ok=True)
        (directory / tile.path).write_bytes(data)
    (directory / "checkpoint").write_text(_note(tree, tree.size), encoding="utf-8")
    return directory


def test_cosign_collects_a_quorum_go_verifies(tmp_path: Path, witness: Running) -> None:
    key2, vkey2 = _keygen(tmp_path, "witness.example/w2")
    second = _start(key2, vkey2, tmp_path / "state2", now=NOW + 5)
    _, offline = _keygen(tmp_path, "witness.example/w3")
    try:
        policy = tmp_path / "policy"
        policy.write_text(
            f"log {LOG.verifier.to_text()}\n"
            f"witness w1 {witness.vkey} {witness.url}\n"
            f"witness w2 {vkey2} {second.url}\n"
            f"witness w3 {offline}\n"
            "group two 2 w1 w2 w3\nquorum two\n",
            encoding="utf-8",
        )
        ws = Workspace(tmp_path)
        log = _log_dir(tmp_path, _entries(100))
        assert ws.run("log", "cosign", str(log), "--policy", str(policy)).returncode == 0
        log = _log_dir(tmp_path, _entries(700))  # the log grows: each witness gets a proof
        result = ws.run("log", "cosign", str(log), "--policy", str(policy), "--json")
        assert result.returncode == 0, result.describe()
        assert json.loads(result.stdout)["cosigners"] == ["w1", "w2"]
        result = ws.run("log", "verify", str(log), "--policy", str(policy), "--json")
        assert result.returncode == 0, result.describe()
        assert json.loads(result.stdout)["cosigners"] == ["w1", "w2"]

        binary = build_tlogcheck(tmp_path, PROGRAM)
        done = subprocess.run(
            [str(binary), str(log / "checkpoint"), LOG.verifier.to_text(), witness.vkey, vkey2],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.stdout.split("\n")[:3] == [
            "ok",
            f"witness.example/w1 {NOW}",
            f"witness.example/w2 {NOW + 5}",
        ], done.stdout + done.stderr

        strict = tmp_path / "strict"
        strict.write_text(policy.read_text(encoding="utf-8").replace("2 w1", "all w1"), "utf-8")
        args = ("log", "verify", str(log), "--policy", str(strict))
        line = assert_one_error_line(ws.run(*args), EXIT_VERIFICATION)
        assert line.split(": ")[1] == "quorum-not-met"
        line = assert_one_error_line(
            ws.run("log", "cosign", str(log), "--policy", str(strict)), EXIT_VERIFICATION
        )
        assert line.split(": ")[1] == "quorum-not-met"
    finally:
        _stop(second)
