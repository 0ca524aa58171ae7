"""``verify`` checks the zone's published transparency log: the ``_alter-log`` record
must be the log-signed checkpoint of ``build/<zone>/log/checkpoint`` (witness
cosignatures after it are fine), signed by the zone's log key, and the tiles must give
that checkpoint. A checkpoint file that is not the record's (an older one, honestly
signed) and a changed tile each fail with their category."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from alter_publish.errors import EXIT_VERIFICATION
from alter_publish.format.note import COSIGNATURE_V1_TYPE, Note, Signer
from alter_publish.pipeline.paths import checkpoints_path_for
from alter_publish.pipeline.transparency import read_history
from tests.integration.test_golden_outputs import NOW, _workspace
from tests.integration.test_transparency import _cli, _sign

ZONE = "example.com"


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A zone signed twice (the log grew): its workspace."""
    root = tmp_path_factory.mktemp("verify-log")
    definition = _workspace(root, ZONE)
    _sign(root, definition, NOW, "--create-keys")
    definition.write_text(
        definition.read_text(encoding="utf-8") + "  - handle: ~erin\n", encoding="utf-8"
    )
    _sign(root, definition, NOW + 100, "--create-keys")
    return root


def _verify(root: Path) -> tuple[int, list[str]]:
    done = _cli(
        root,
        "verify",
        f"zones/{ZONE}.yaml",
        "--keys",
        "keys",
        "--out",
        "build",
        "--now",
        str(NOW + 200),
    )
    errors = [line for line in done.stderr.splitlines() if "WARNING" not in line]
    assert "Traceback" not in done.stderr
    return done.returncode, errors


@pytest.mark.parametrize(
    "case", ["honest", "cosigned", "no-private-key", "older-checkpoint", "changed-tile"]
)
def test_verify_checks_the_published_log(signed: Path, tmp_path: Path, case: str) -> None:
    root = tmp_path / "ws"
    shutil.copytree(signed, root, symlinks=True)
    log = root / "build" / ZONE / "log"
    checkpoint = log / "checkpoint"
    if case == "cosigned":  # a witness's cosignature after the log's: still the record's
        witness = Signer("witness.example/w1", bytes(32), COSIGNATURE_V1_TYPE)
        note = Note.parse(checkpoint.read_text(encoding="utf-8"))
        checkpoint.write_text(note.cosigned_by(witness, NOW).to_text(), encoding="utf-8")
    elif case == "older-checkpoint":  # the first run's checkpoint, signed by the log key
        history = read_history(checkpoints_path_for(root / "zones" / f"{ZONE}.yaml"))
        assert len(history.notes) == 2
        checkpoint.write_text(history.notes[0], encoding="utf-8")
    elif case == "no-private-key":  # verify reads the public key file, not the secret
        (root / "keys" / ZONE / "_log" / "current.pem").write_bytes(b"not a key\n")
    elif case == "changed-tile":
        tile = sorted((log / "tile" / "0").glob("**/*.p/*"))[-1]
        data = bytearray(tile.read_bytes())
        data[0] ^= 1
        tile.write_bytes(bytes(data))
    code, errors = _verify(root)
    if case in ("honest", "cosigned", "no-private-key"):
        assert code == 0, errors
        return
    assert code == EXIT_VERIFICATION, errors
    assert len(errors) == 1, errors
    expected = {"older-checkpoint": "checkpoint-mismatch", "changed-tile": "bad-tile"}
    assert f"{expected[case]}:" in errors[0], errors
