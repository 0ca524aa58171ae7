"""``alter-publish log verify`` and ``log consistency`` catch each kind of tampering with
its category: a changed entry, a dropped entry, a forked history, a checkpoint signed by
another key, a rolled-back checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from alter_publish.errors import EXIT_VERIFICATION
from alter_publish.format.note import Note, Signer
from alter_publish.format.tiles import TreeHashes
from alter_publish.format.tlog import Checkpoint
from tests.cli.workspace import Workspace, assert_one_error_line

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


def test_a_rolled_back_checkpoint(tmp_path: Path, log: Path) -> None:
    newer = tmp_path / "newer"
    newer.write_text(_note(TreeHashes.of_entries(_entries(400)), 400), encoding="utf-8")
    args = ("log", "verify", str(log), "--key", VKEY, "--older", str(newer))
    assert _category(tmp_path, *args) == "rollback"
