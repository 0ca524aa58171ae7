"""``alter-publish log verify`` and ``log consistency`` catch each kind of tampering with
its category: a changed entry, a dropped entry, a forked history, a checkpoint signed by
another key, a rolled-back checkpoint."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from alter_publish.errors import EXIT_USAGE, EXIT_VERIFICATION, UsageError
from alter_publish.format.note import COSIGNATURE_V1_TYPE, Note, Signer, Verifier
from alter_publish.format.tiles import TreeHashes
from alter_publish.format.tlog import Checkpoint, TlogProof
from alter_publish.keys.logkey import LogKeyStore
from alter_publish.verify.logaudit import audit_log
from tests.cli.workspace import NOW, ZONE, Workspace, assert_one_error_line, simulated

ORIGIN = "example.com/alter-log"
SIGNER = Signer(ORIGIN, bytes(range(32)))
VKEY = SIGNER.verifier.to_text()


def _entries(count: int, tag: str = "") -> list[bytes]:
    return [f"_alter.h{at}.example.com.\x00v=alter1; n={at}{tag}".encode() for at in range(count)]


def _note(tree: TreeHashes, size: int, signer: Signer = SIGNER) -> str:
    return Note(Checkpoint(ORIGIN, size, tree.root(size)).to_text()).signed_by(signer).to_text()


def _log(root: Path, entries: list[bytes]) -> Path:
    directory = root / "log"
    tree = TreeHashes.of_entries(entries)
    for tile, data in tree.changed():
        (directory / tile.path).parent.mkdir(parents=True, exist_ok=True)
        (directory / tile.path).write_bytes(data)
    (directory / "checkpoint").write_text(_note(tree, tree.size), encoding="utf-8")
    return directory


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return _log(tmp_path, _entries(300))


def test_an_untouched_log_verifies(tmp_path: Path, log: Path) -> None:
    old = tmp_path / "old"
    old.write_text(_note(TreeHashes.of_entries(_entries(300)), 100), encoding="utf-8")
    result = Workspace(tmp_path).run(
        "log", "verify", str(log), "--key", VKEY, "--older", str(old), "--json"
    )
    assert result.returncode == 0, result.describe()
    document = json.loads(result.stdout)
    assert (document["size"], document["tiles"], document["extends"]) == (300, 3, [100])
    result = Workspace(tmp_path).run(
        "log", "consistency", str(old), str(log / "checkpoint"), "--key", VKEY, "--tiles", str(log)
    )
    assert result.returncode == 0, result.describe()


def _category(tmp_path: Path, *args: str) -> str:
    line = assert_one_error_line(Workspace(tmp_path).run(*args), EXIT_VERIFICATION)
    return line.split(": ")[1]


def test_a_changed_entry_is_tampered(tmp_path: Path, log: Path) -> None:
    bundle = log / "tile" / "entries" / "001.p/44"
    bundle.write_bytes(bundle.read_bytes().replace(b"n=299", b"n=999"))
    assert _category(tmp_path, "log", "verify", str(log), "--key", VKEY) == "tampered-entry"


def test_a_dropped_entry_is_caught(tmp_path: Path, log: Path) -> None:
    bundle = log / "tile" / "entries" / "001.p/44"
    data = bundle.read_bytes()
    last = data.rfind(b"_alter.h299") - 2  # the last entry and its length
    bundle.write_bytes(data[:last])
    assert _category(tmp_path, "log", "verify", str(log), "--key", VKEY) == "dropped-entry"
    bundle.unlink()
    assert _category(tmp_path, "log", "verify", str(log), "--key", VKEY) == "dropped-entry"


def test_a_checkpoint_signed_by_another_key(tmp_path: Path, log: Path) -> None:
    other = Signer(ORIGIN, bytes(32))
    (log / "checkpoint").write_text(
        _note(TreeHashes.of_entries(_entries(300)), 300, other), encoding="utf-8"
    )
    assert _category(tmp_path, "log", "verify", str(log), "--key", VKEY) == "bad-signature"


def test_a_forked_history(tmp_path: Path, log: Path) -> None:
    forked = TreeHashes.of_entries(_entries(300, tag="-forked"))
    same_size = tmp_path / "same-size"
    same_size.write_text(_note(forked, 300), encoding="utf-8")
    args = ("log", "verify", str(log), "--key", VKEY, "--older")
    assert _category(tmp_path, *args, str(same_size)) == "equivocation"
    smaller = tmp_path / "smaller"
    smaller.write_text(_note(forked, 200), encoding="utf-8")
    assert _category(tmp_path, *args, str(smaller)) == "fork"
    consistency = ("log", "consistency", str(smaller), str(log / "checkpoint"), "--key", VKEY)
    assert _category(tmp_path, *consistency, "--tiles", str(log)) == "fork"


def test_a_witness_key_is_refused_as_the_log_key(tmp_path: Path, log: Path) -> None:
    # A cosignature (0x04) key named like the log would verify a witness's line as if
    # it were the log's signature.
    witness = Signer(ORIGIN, bytes(range(32)), COSIGNATURE_V1_TYPE).verifier.to_text()
    result = Workspace(tmp_path).run("log", "verify", str(log), "--key", witness)
    line = assert_one_error_line(result, EXIT_USAGE)
    assert line.endswith(
        f"--key: {ORIGIN} is a witness cosignature key (type 0x04), not a log key"
    ), line
    with pytest.raises(UsageError, match="cosignature key"):
        audit_log(log, Verifier.parse(witness))


def test_a_rolled_back_checkpoint(tmp_path: Path, log: Path) -> None:
    newer = tmp_path / "newer"
    newer.write_text(_note(TreeHashes.of_entries(_entries(400)), 400), encoding="utf-8")
    args = ("log", "verify", str(log), "--key", VKEY, "--older", str(newer))
    assert _category(tmp_path, *args) == "rollback"


# --- log prove -------------------------------------------------------------------------


def _vkey(workspace: Workspace) -> str:
    store = LogKeyStore(workspace.root / "keys")
    return store.signer("example.com", create=False).verifier.to_text()


def test_log_prove_prints_the_current_and_an_older_epochs_proof(workspace: Workspace) -> None:
    result = workspace.run("log", "prove", "~blake", "--zone", "example.com", "--json")
    assert result.returncode == 0, result.describe()
    current = json.loads(result.stdout)
    assert (current["source"], current["epoch"]) == ("envelopes", 1)
    document = json.loads(workspace.envelopes_file.read_text(encoding="utf-8"))
    (line,) = [item for item in document["handles"] if item["handle"] == "~blake"]
    assert current["tlog_proof"] == line["tlog_proof"]
    text = workspace.run(
        "log", "prove", "~blake", "--zone", "example.com", "--key", _vkey(workspace)
    )
    assert text.returncode == 0, text.describe()
    assert text.stdout == line["tlog_proof"]
    # After a rotation and a sign, epoch 1's envelope is proven from the tiles into the
    # latest checkpoint.
    assert workspace.run("rotate", "~blake", "--zone", ZONE, *simulated(NOW + 60)).returncode == 0
    assert workspace.run("sign", *simulated(NOW + 60)).returncode == 0
    older = workspace.run("log", "prove", "~blake", "--zone", ZONE, "--epoch", "1", "--json")
    assert older.returncode == 0, older.describe()
    found = json.loads(older.stdout)
    assert (found["source"], found["epoch"], found["index"]) == ("tiles", 1, current["index"])
    checkpoint = (workspace.root / "build" / ZONE / "log" / "checkpoint").read_text()
    assert found["tlog_proof"].endswith("\n\n" + checkpoint)
    assert found["checkpoint_size"] > current["checkpoint_size"]


@pytest.mark.parametrize(
    ("args", "exit_code", "category"),
    [
        (("~nobody",), EXIT_USAGE, None),
        (("~blake", "--epoch", "9"), EXIT_VERIFICATION, "not-found"),
        (("~blake", "--key", VKEY), EXIT_VERIFICATION, "bad-signature"),
    ],
    ids=["not-in-zone", "no-such-epoch", "another-key"],
)
def test_log_prove_failures(
    workspace: Workspace, args: tuple[str, ...], exit_code: int, category: str | None
) -> None:
    result = workspace.run("log", "prove", *args, "--zone", ZONE)
    line = assert_one_error_line(result, exit_code)
    if category is not None:
        assert category in line


def test_log_prove_refuses_a_tampered_proof(workspace: Workspace) -> None:
    path = workspace.envelopes_file.resolve()
    document = json.loads(path.read_text(encoding="utf-8"))
    (line,) = [item for item in document["handles"] if item["handle"] == "~blake"]
    proof = TlogProof.parse(line["tlog_proof"])
    line["tlog_proof"] = dataclasses.replace(proof, index=proof.index + 1).to_text()
    path.write_text(json.dumps(document), encoding="utf-8")
    result = workspace.run("log", "prove", "~blake", "--zone", ZONE)
    assert "not-included" in assert_one_error_line(result, EXIT_VERIFICATION)


@pytest.mark.parametrize("target", ["/dev/zero", "huge", "short", "flipped"])
def test_a_mirror_s_bad_tile_is_a_bad_tile(tmp_path: Path, log: Path, target: str) -> None:
    # A tile linked to /dev/zero (or a huge file) was read whole into memory; a bad tile
    # beside intact entries was the log's ``tampered-entry``.
    tile = log / "tile" / "0" / "001.p" / "44"
    data = tile.read_bytes()
    tile.unlink()
    if target == "huge":
        tile.write_bytes(bytes(44 * 32 + 1))
    elif target == "short":
        tile.write_bytes(data[:-1])
    elif target == "flipped":
        tile.write_bytes(bytes([data[0] ^ 1]) + data[1:])
    else:
        tile.symlink_to(target)
    line = assert_one_error_line(
        Workspace(tmp_path).run("log", "verify", str(log), "--key", VKEY), EXIT_VERIFICATION
    )
    assert line.startswith(f"{tile}: bad-tile: "), line


def test_a_checkpoint_linked_to_dev_zero_is_refused(tmp_path: Path, log: Path) -> None:
    (log / "checkpoint").unlink()
    (log / "checkpoint").symlink_to("/dev/zero")
    line = assert_one_error_line(
        Workspace(tmp_path).run("log", "verify", str(log), "--key", VKEY), EXIT_VERIFICATION
    )
    assert "malformed" in line, line
