"""Witnesses from ``sign``: a definition with ``log: {policy: FILE}`` submits each new
checkpoint to the policy's witnesses (real ``log witness`` processes) after the zone is
committed; ``build/<zone>/log/checkpoint`` carries their cosignatures (Go's ``note.Open``
verifies them, ``log verify --policy`` accepts them), the ``_alter-log`` record stays the
log-signed checkpoint, an unchanged run keeps the cosignatures offline, a witness that is
down is a warning, and ``require_quorum: true`` makes a quorum not met exit 1."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from alter_publish import pipeline
from alter_publish.errors import EXIT_VERIFICATION
from alter_publish.format.logrecord import find_checkpoint_record, log_record_owner
from alter_publish.keys.logkey import LogKeyStore
from tests.integration.golog import build_tlogcheck
from tests.integration.test_golden_outputs import NOW, _workspace
from tests.integration.test_transparency import _cli
from tests.integration.test_witness import PROGRAM, _keygen, _start, _stop

ZONE = "example.com"


def _sign(root: Path, definition: Path, now: int, *extra: str) -> subprocess.CompletedProcess[str]:
    return _cli(
        root,
        *("sign", str(definition), "--keys", str(root / "keys"), "--out", str(root / "build")),
        *("--now", str(now), "--allow-simulated-time", "--jobs", "2", *extra),
    )


def _record_note(root: Path) -> str:
    """The checkpoint note the signed zone publishes at ``_alter-log.<zone>.``."""
    zone = pipeline.read_zone_file(root / "build" / f"{ZONE}.zone", ZONE)
    owner = log_record_owner(ZONE)
    rdataset = zone.find_rdataset(owner, "TXT")
    texts = [b"".join(rdata.strings).decode() for rdata in rdataset]
    return find_checkpoint_record(texts, owner)


def test_sign_collects_cosignatures_from_witness_processes(tmp_path: Path) -> None:
    definition = _workspace(tmp_path, ZONE)
    first = _sign(tmp_path, definition, NOW, "--create-keys")
    assert first.returncode == 0, first.stderr
    vkey = LogKeyStore(tmp_path / "keys").signer(ZONE, create=False).verifier.to_text()
    key1, vkey1 = _keygen(tmp_path, "witness.example/w1")
    key2, vkey2 = _keygen(tmp_path, "witness.example/w2")
    w1 = _start(key1, vkey1, tmp_path / "state1", log=vkey)
    w2 = _start(key2, vkey2, tmp_path / "state2", now=NOW + 5, log=vkey)
    try:
        policy = tmp_path / "zones" / "witnesses.policy"
        policy.write_text(
            f"log {vkey}\nwitness w1 {vkey1} {w1.url}\nwitness w2 {vkey2} {w2.url}\n"
            "group both all w1 w2\nquorum both\n",
            encoding="utf-8",
        )
        text = definition.read_text(encoding="utf-8")
        definition.write_text("log:\n  policy: witnesses.policy\n" + text, encoding="utf-8")
        done = _sign(tmp_path, definition, NOW + 60, "--json")
        assert done.returncode == 0, done.stderr
        cosign = json.loads(done.stdout)["cosign"]
        assert [(c["zone"], c["cosigners"], c["quorum_met"]) for c in cosign] == [
            (ZONE, ["w1", "w2"], True)
        ]
        log = tmp_path / "build" / ZONE / "log"
        checkpoint = (log / "checkpoint").read_text(encoding="utf-8")
        verified = _cli(tmp_path, "log", "verify", str(log), "--policy", str(policy), "--json")
        assert verified.returncode == 0, verified.stderr
        assert json.loads(verified.stdout)["cosigners"] == ["w1", "w2"]
        # The DNS record is the log-signed checkpoint; the file adds the cosignatures.
        note = _record_note(tmp_path)
        assert checkpoint.startswith(note)
        assert checkpoint.count("\n\u2014 ") == 3
        binary = build_tlogcheck(tmp_path, PROGRAM)
        go = subprocess.run(
            [str(binary), str(log / "checkpoint"), vkey, vkey1, vkey2],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert go.stdout.split("\n")[:3] == [
            "ok",
            f"witness.example/w1 {NOW}",
            f"witness.example/w2 {NOW + 5}",
        ], go.stdout + go.stderr

        # An unchanged run keeps the cosigned checkpoint and asks no witness.
        again = _sign(tmp_path, definition, NOW + 120)
        assert again.returncode == 0, again.stderr
        assert (log / "checkpoint").read_text(encoding="utf-8") == checkpoint
        assert "cosigned by" not in again.stdout

        # A witness that is down: a warning, the run succeeds with w1's cosignature.
        _stop(w2)
        definition.write_text(
            definition.read_text(encoding="utf-8") + "  - handle: ~erin\n", encoding="utf-8"
        )
        down = _sign(tmp_path, definition, NOW + 180, "--create-keys")
        assert down.returncode == 0, down.stderr
        assert "witness w2: unreachable" in down.stderr
        assert "quorum-not-met" in down.stderr
        assert f"{ZONE}: checkpoint cosigned by w1" in down.stdout
        grown = (log / "checkpoint").read_text(encoding="utf-8")
        assert grown.startswith(_record_note(tmp_path))
        assert grown != checkpoint
        assert grown.count("\n\u2014 ") == 2

        # require_quorum: the same shortfall fails the run, in one error line.
        strict = definition.read_text(encoding="utf-8").replace(
            "policy: witnesses.policy\n", "policy: witnesses.policy\n  require_quorum: true\n"
        )
        definition.write_text(strict + "  - handle: ~fern\n", encoding="utf-8")
        failed = _sign(tmp_path, definition, NOW + 240, "--create-keys")
        assert failed.returncode == EXIT_VERIFICATION, failed.stderr
        errors = [line for line in failed.stderr.splitlines() if "WARNING" not in line]
        assert len(errors) == 1, failed.stderr
        assert "quorum-not-met" in errors[0]
        assert (log / "checkpoint").read_text(encoding="utf-8").startswith(_record_note(tmp_path))
    finally:
        _stop(w1)
        if w2.process.poll() is None:
            _stop(w2)
