"""The log formats checked by an independent implementation: Go's
golang.org/x/mod/sumdb/note opens our signed checkpoints, and golang.org/x/mod/sumdb/tlog
checks our tiles, inclusion proofs and consistency proofs (see ``golog``)."""

from __future__ import annotations

import base64
from pathlib import Path

from alter_publish.format.note import Note, Signer
from alter_publish.format.tiles import TreeHashes
from alter_publish.format.tlog import Checkpoint, consistency_proof, inclusion_proof
from tests.integration.golog import go_check_dir, go_check_proofs

ORIGIN = "example.com/alter-log"
SIZES = (1, 2, 3, 255, 256, 257, 300, 511, 512, 700)


def _entries(count: int) -> list[bytes]:
    return [f"_alter.h{at}.example.com.\x00v=alter1; n={at}".encode() for at in range(count)]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _checkpoint(tree: TreeHashes, size: int, signer: Signer) -> str:
    return Note(Checkpoint(ORIGIN, size, tree.root(size)).to_text()).signed_by(signer).to_text()


def test_go_checks_proofs_and_checkpoints(tlogcheck: Path) -> None:
    signer = Signer(ORIGIN, bytes(range(32)))
    entries = _entries(max(SIZES))
    tree = TreeHashes.of_entries(entries)
    notes = {size: _checkpoint(tree, size, signer) for size in SIZES}
    records = [
        {
            "index": index,
            "entry": _b64(entries[index]),
            "proof": [_b64(h) for h in inclusion_proof(tree.subtree, index, size)],
            "checkpoint": notes[size],
        }
        for size in SIZES
        for index in sorted({0, size // 2, size - 1})
    ]
    trees = [
        {
            "old": notes[old],
            "new": notes[new],
            "proof": [_b64(h) for h in consistency_proof(tree.subtree, old, new)],
        }
        for old in SIZES
        for new in SIZES
        if old < new
    ]
    vkey = signer.verifier.to_text()
    assert go_check_proofs(tlogcheck, vkey, {"records": records, "trees": trees}) == "ok"
    other = Signer(ORIGIN, bytes(32)).verifier.to_text()
    assert "note.Open" in go_check_proofs(tlogcheck, other, {"records": records[:1], "trees": []})
    records[3]["index"] = int(str(records[3]["index"])) + 1
    assert go_check_proofs(tlogcheck, vkey, {"records": records, "trees": []}) != "ok"


def test_go_reads_our_tiles_after_each_append(tlogcheck: Path, tmp_path: Path) -> None:
    signer = Signer(ORIGIN, bytes(range(32)))
    vkey = signer.verifier.to_text()
    entries = _entries(max(SIZES))
    olds: list[Path] = []
    stored: dict[str, bytes] = {}
    size = 0
    for new in SIZES:
        tree = TreeHashes(size, lambda tile: stored[tile.path])
        tree.extend(entries[size:new])
        for tile, data in tree.changed():
            stored[tile.path] = data
            path = tmp_path / "log" / tile.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        note = _checkpoint(tree, new, signer)
        (tmp_path / "log" / "checkpoint").write_text(note, encoding="utf-8")
        assert go_check_dir(tlogcheck, tmp_path / "log", vkey, *olds) == "ok", new
        olds.append(tmp_path / f"checkpoint.{new}")
        olds[-1].write_text(note, encoding="utf-8")
        size = new
    level0 = tmp_path / "log" / "tile" / "0" / "001"
    level0.write_bytes(level0.read_bytes()[:-1] + b"\x00")
    assert go_check_dir(tlogcheck, tmp_path / "log", vkey) != "ok"
