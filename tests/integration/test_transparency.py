"""A zone signed through several runs (adds, rotations, a revocation) publishes a log
Go's sumdb note and tlog code accept: every checkpoint, every envelope's tlog-proof, the
tiles, and consistency between every pair of published checkpoints."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from alter_publish.format.note import Note
from alter_publish.format.tiles import TreeHashes
from alter_publish.format.tlog import Checkpoint, TlogProof, consistency_proof
from alter_publish.keys.logkey import LogKeyStore
from tests.integration.golog import go_check_dir, go_check_proofs
from tests.integration.test_golden_outputs import NOW, _workspace

ZONE = "example.com"


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "alter_publish", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _sign(root: Path, definition: Path, now: int, *extra: str) -> None:
    done = _cli(
        root,
        "sign",
        str(definition),
        "--keys",
        str(root / "keys"),
        "--out",
        str(root / "build"),
        "--now",
        str(now),
        "--allow-simulated-time",
        "--jobs",
        "2",
        *extra,
    )
    assert done.returncode == 0, done.stderr


def _rotate(root: Path, handle: str, now: int, *extra: str) -> None:
    done = _cli(
        root,
        "rotate",
        handle,
        "--zone",
        str(root / "zones" / f"{ZONE}.yaml"),
        "--keys",
        str(root / "keys"),
        "--now",
        str(now),
        "--allow-simulated-time",
        "--secret-out",
        str(root / f"{handle[1:]}-{now}.secret"),
        *extra,
    )
    assert done.returncode == 0, done.stderr


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_several_runs_publish_a_log_go_accepts(tlogcheck: Path, tmp_path: Path) -> None:
    definition = _workspace(tmp_path, ZONE)
    log = tmp_path / "build" / ZONE / "log"
    published: list[Path] = []
    steps: list[Callable[[int], object]] = [
        lambda now: None,
        lambda now: _rotate(tmp_path, "~blake", now),
        lambda now: definition.write_text(
            definition.read_text(encoding="utf-8") + "  - handle: ~erin\n", encoding="utf-8"
        ),
        lambda now: _rotate(tmp_path, "~drew", now, "--compromised"),
    ]
    vkey = ""
    for number, step in enumerate(steps):
        now = NOW + 100 * number
        step(now)
        _sign(tmp_path, definition, now, "--create-keys")
        vkey = LogKeyStore(tmp_path / "keys").signer(ZONE, create=False).verifier.to_text()
        assert go_check_dir(tlogcheck, log, vkey, *published) == "ok", number
        published.append(tmp_path / f"checkpoint.{number}")
        published[-1].write_bytes((log / "checkpoint").read_bytes())
        records = []
        document = json.loads((tmp_path / "build" / f"{ZONE}.envelopes.json").read_text())
        for item in document["handles"]:
            proof = TlogProof.parse(item["tlog_proof"])
            entry = f"{item['owner']}\x00{item['text']}".encode()
            records.append(
                {
                    "index": proof.index,
                    "entry": _b64(entry),
                    "proof": [_b64(h) for h in proof.hashes],
                    "checkpoint": proof.checkpoint,
                }
            )
        assert go_check_proofs(tlogcheck, vkey, {"records": records, "trees": []}) == "ok"
    notes = [path.read_text(encoding="utf-8") for path in published]
    sizes = [Checkpoint.parse(Note.parse(note).text).size for note in notes]
    assert sizes == sorted(sizes)
    assert len(set(sizes)) == len(sizes)
    tree = TreeHashes(sizes[-1], lambda tile: (log / tile.path).read_bytes())
    trees = [
        {
            "old": notes[old],
            "new": notes[new],
            "proof": [_b64(h) for h in consistency_proof(tree.subtree, sizes[old], sizes[new])],
        }
        for old in range(len(notes))
        for new in range(old + 1, len(notes))
    ]
    assert go_check_proofs(tlogcheck, vkey, {"records": [], "trees": trees}) == "ok"
    # A full run from nothing (build/ gone) writes the same log directory and envelopes,
    # the partial tiles of every older checkpoint included (the proofs need them).
    shutil.copytree(tmp_path / "build", tmp_path / "before")
    shutil.rmtree(tmp_path / "build")
    _sign(tmp_path, definition, NOW + 100 * (len(steps) - 1), "--full")
    assert _files(tmp_path / "build" / ZONE) == _files(tmp_path / "before" / ZONE)
    envelopes = f"{ZONE}.envelopes.json"
    assert (tmp_path / "build" / envelopes).read_bytes() == (
        tmp_path / "before" / envelopes
    ).read_bytes()


def _files(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_a_log_cut_short_is_refused_not_signed_again(tmp_path: Path) -> None:
    # The log lost its last entry: signing the rest would publish a checkpoint that
    # contradicts the last one signed (a fork). It was signed, exit 0, proofs broken.
    definition = _workspace(tmp_path, ZONE)
    _sign(tmp_path, definition, NOW)
    log = tmp_path / "zones" / f"{ZONE}.log"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:-1]))
    before = _files(tmp_path / "build")
    done = _cli(
        tmp_path,
        "sign",
        str(definition),
        "--keys",
        str(tmp_path / "keys"),
        "--out",
        str(tmp_path / "build"),
        "--now",
        str(NOW + 3600),
        "--allow-simulated-time",
        "--full",
    )
    assert done.returncode != 0, done.stdout
    assert "does not extend its last signed checkpoint" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert _files(tmp_path / "build") == before
