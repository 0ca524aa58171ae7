"""``log rotate-key ZONE``: a new log key under the same origin. Until the new key signs
a checkpoint, ``verify`` checks the published one with the retired key; the new key's
first checkpoint is signed by both keys (Go's note and tlog code accept it under either,
and under the old key it extends the old key's checkpoint), later ones by the new key
only; a second rotation before that handover is refused."""

from __future__ import annotations

import json
from pathlib import Path

from alter_publish.errors import EXIT_KEY
from alter_publish.format.note import Note, Verifier
from alter_publish.keys.logkey import LogKeyStore
from alter_publish.pipeline.paths import checkpoints_path_for
from alter_publish.pipeline.transparency import read_history
from tests.integration.golog import build_tlogcheck, go_check_dir
from tests.integration.test_golden_outputs import NOW, _workspace
from tests.integration.test_transparency import _cli, _sign

ZONE = "example.com"


def _add(definition: Path, handle: str) -> None:
    text = definition.read_text(encoding="utf-8")
    definition.write_text(text + f"  - handle: {handle}\n", encoding="utf-8")


def _verify(root: Path, now: int) -> None:
    done = _cli(root, "verify", f"zones/{ZONE}.yaml", "--now", str(now))
    assert done.returncode == 0, done.stderr


def test_rotate_key_hands_over_with_a_checkpoint_signed_by_both(tmp_path: Path) -> None:
    definition = _workspace(tmp_path, ZONE)
    log = tmp_path / "build" / ZONE / "log"
    _sign(tmp_path, definition, NOW, "--create-keys")
    first = tmp_path / "checkpoint.0"
    first.write_bytes((log / "checkpoint").read_bytes())
    old = LogKeyStore(tmp_path / "keys").signer(ZONE, create=False).verifier

    done = _cli(tmp_path, "log", "rotate-key", ZONE, "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    new = Verifier.parse(found["new"])
    assert (found["old"], new.name) == (old.to_text(), old.name)  # the origin stays
    assert new.public != old.public
    again = _cli(tmp_path, "log", "rotate-key", ZONE)
    assert again.returncode == EXIT_KEY, again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    assert "rotation is pending" in again.stderr
    _verify(tmp_path, NOW + 50)  # the published checkpoint is still the old key's

    _add(definition, "~erin")
    _sign(tmp_path, definition, NOW + 100, "--create-keys")
    handover = Note.parse((log / "checkpoint").read_text(encoding="utf-8"))
    handover.verify(new)
    handover.verify(old)
    assert len(handover.signatures) == 2
    tlogcheck = build_tlogcheck(tmp_path)
    assert go_check_dir(tlogcheck, log, new.to_text()) == "ok"
    assert go_check_dir(tlogcheck, log, old.to_text(), first) == "ok"
    assert not (LogKeyStore(tmp_path / "keys").directory(ZONE) / "handover").exists()
    history = read_history(checkpoints_path_for(definition))
    Note.parse(history.notes[0]).verify(old)  # old checkpoints stay verifiable, old key
    _verify(tmp_path, NOW + 150)

    _add(definition, "~fern")
    _sign(tmp_path, definition, NOW + 200, "--create-keys")
    latest = Note.parse((log / "checkpoint").read_text(encoding="utf-8"))
    assert len(latest.signatures) == 1
    latest.verify(new)
    _verify(tmp_path, NOW + 250)
    assert _cli(tmp_path, "log", "rotate-key", ZONE).returncode == 0  # handed over: allowed
