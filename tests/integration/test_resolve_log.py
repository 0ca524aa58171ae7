"""``resolve --log [DIR|dns] --log-key VKEY --pin-store P`` against a zone served on
loopback: the envelope is found in the signed log, the checkpoint comes from the tile
directory or from DNS (validated), and each kind of log tampering is caught with its
category: a changed entry, a dropped entry, a forked history (equivocation, fork), a
checkpoint signed by another key, a rolled-back checkpoint."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from alter_publish import pipeline
from alter_publish.dns.server import ZoneServer
from alter_publish.errors import EXIT_VERIFICATION
from alter_publish.format.identitylog import log_path_for, read_log
from alter_publish.format.note import Note, Signer
from alter_publish.format.tiles import TreeHashes, tiles_for_size
from alter_publish.format.tlog import Checkpoint, TlogProof
from alter_publish.keys.logkey import LogKeyStore, log_origin
from tests.cli.workspace import Workspace
from tests.integration.test_golden_outputs import NOW, _workspace
from tests.integration.test_transparency import _sign
from tests.integration.test_witness import _keygen, _start, _stop

ZONE = "example.com"


@dataclass(frozen=True)
class Served:
    root: Path
    server: str
    handle: str  # the handle whose envelope is entry 0 of the log
    signer: Signer
    entries: list[bytes]
    log: Path  # the honest tile directory


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("resolve-log")
    definition = _workspace(root, ZONE)
    _sign(root, definition, NOW, "--create-keys")
    document = json.loads((root / "build" / f"{ZONE}.envelopes.json").read_text())
    first = min(document["handles"], key=lambda item: TlogProof.parse(item["tlog_proof"]).index)
    assert TlogProof.parse(first["tlog_proof"]).index == 0
    entries = [entry.to_bytes() for entry in read_log(log_path_for(definition)).entries]
    assert len(entries) >= 3
    zone = pipeline.read_zone_file(root / "build" / f"{ZONE}.zone", ZONE)
    signer = LogKeyStore(root / "keys").signer(ZONE, create=False)
    with ZoneServer([zone]) as server:
        host, port = server.address
        yield Served(
            root, f"{host}:{port}", first["handle"], signer, entries, root / "build" / ZONE / "log"
        )


def _resolve(served: Served, log: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "alter_publish",
            "resolve",
            served.handle,
            "--server",
            served.server,
            "--substrate",
            ZONE,
            "--trust-anchor",
            str(served.root / "build" / f"{ZONE}.ds"),
            "--now",
            str(NOW + 60),
            "--allow-simulated-time",
            "--log",
            log,
            "--log-key",
            served.signer.verifier.to_text(),
            *extra,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _forged(directory: Path, entries: list[bytes], signer: Signer, size: int | None = None) -> Path:
    """A log directory of ``entries`` with a checkpoint of ``size`` signed by ``signer``."""
    tree = TreeHashes.of_entries(entries)
    for tile, data in tree.changed():
        (directory / tile.path).parent.mkdir(parents=True, exist_ok=True)
        (directory / tile.path).write_bytes(data)
    size = tree.size if size is None else size
    checkpoint = Checkpoint(log_origin(ZONE), size, tree.root(size))
    note = Note(checkpoint.to_text()).signed_by(signer).to_text()
    (directory / "checkpoint").write_text(note, encoding="utf-8")
    return directory


def _pins(tmp_path: Path, served: Served) -> Path:
    """A pin store that has seen the honest log's checkpoint."""
    pins = tmp_path / "pins.json"
    done = _resolve(served, str(served.log), "--pin-store", str(pins), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["log"]["pin"] == "pinned"
    return pins


def test_the_envelope_is_in_the_signed_log_from_tiles_and_from_dns(
    served: Served, tmp_path: Path
) -> None:
    pins = _pins(tmp_path, served)
    again = _resolve(served, str(served.log), "--pin-store", str(pins), "--json")
    assert again.returncode == 0, again.stderr
    found = json.loads(again.stdout)["log"]
    assert (found["index"], found["checkpoint_size"], found["pin"]) == (
        0,
        len(served.entries),
        "unchanged",
    )
    from_dns = _resolve(served, "dns", "--log-tiles", str(served.log), "--pin-store", str(pins))
    assert from_dns.returncode == 0, from_dns.stderr
    assert f"log:         entry 0 in {ZONE}/alter-log" in from_dns.stdout
    refused = _resolve(served, "dns")
    assert refused.returncode == 2
    assert "--log-tiles" in refused.stderr


def _changed(entries: list[bytes], at: int) -> list[bytes]:
    return [*entries[:at], entries[at] + b" changed", *entries[at + 1 :]]


@pytest.mark.parametrize(
    "case",
    ["changed-entry", "dropped-entry", "equivocation", "fork", "another-key", "rollback"],
)
def test_each_tampering_is_caught_with_its_category(
    served: Served, tmp_path: Path, case: str
) -> None:
    pins = _pins(tmp_path, served)
    entries, signer, last = served.entries, served.signer, len(served.entries) - 1
    forged = tmp_path / "forged"
    expected = {
        "changed-entry": "not-included",
        "dropped-entry": "not-included",
        "equivocation": "equivocation",
        "fork": "fork",
        "another-key": "bad-signature",
        "rollback": "rollback",
    }[case]
    if case == "changed-entry":  # the log holds another text for the envelope's entry
        _forged(forged, _changed(entries, 0), signer)
    elif case == "dropped-entry":  # the envelope's entry is gone; the log grew since
        _forged(forged, [*entries[1:], b"later", b"later still"], signer)
    elif case == "equivocation":  # the same size, another root
        _forged(forged, _changed(entries, last), signer)
    elif case == "fork":  # a longer log that rewrote an earlier entry
        _forged(forged, [*_changed(entries, last), b"one more"], signer)
    elif case == "another-key":
        _forged(forged, entries, Signer(signer.name, bytes(32)))
    else:  # an older checkpoint of the honest log, after a newer one was seen
        _forged(forged, entries, signer, size=last)
    before = pins.read_bytes()
    result = _resolve(served, str(forged), "--pin-store", str(pins))
    assert result.returncode == EXIT_VERIFICATION, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"{expected}:" in lines[0]
    assert "Traceback" not in result.stderr
    assert pins.read_bytes() == before  # nothing pinned from a refused checkpoint
    shutil.rmtree(forged)


def test_a_policy_quorum_is_required_and_only_met_checkpoints_are_pinned(
    served: Served, tmp_path: Path
) -> None:
    """``--policy``: a checkpoint without the quorum's cosignatures is ``quorum-not-met``
    (one line, exit 1) and is not pinned; once a real witness process cosigned it, it
    resolves and is pinned."""
    key, vkey = _keygen(tmp_path, "witness.example/w1")
    witness = _start(key, vkey, tmp_path / "state", log=served.signer.verifier.to_text())
    try:
        policy = tmp_path / "policy"
        policy.write_text(
            f"log {served.signer.verifier.to_text()}\nwitness w1 {vkey} {witness.url}\nquorum w1\n",
            encoding="utf-8",
        )
        log = tmp_path / "log"
        shutil.copytree(served.log, log)
        pins = tmp_path / "pins.json"
        refused = _resolve(served, str(log), "--policy", str(policy), "--pin-store", str(pins))
        assert refused.returncode == EXIT_VERIFICATION, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "quorum-not-met:" in refused.stderr
        assert not pins.exists()  # nothing pinned from a checkpoint short of the quorum
        dns = _resolve(served, "dns", "--log-tiles", str(log), "--policy", str(policy))
        assert dns.returncode == 2, dns.stderr
        cosign = Workspace(tmp_path).run("log", "cosign", str(log), "--policy", str(policy))
        assert cosign.returncode == 0, cosign.describe()
        done = _resolve(served, str(log), "--policy", str(policy), "--pin-store", str(pins))
        assert done.returncode == 0, done.stderr
        assert "checkpoint pinned" in done.stdout
    finally:
        _stop(witness)


def test_a_bad_mirror_tile_is_a_bad_tile_not_the_log_s(served: Served, tmp_path: Path) -> None:
    """``--log-tiles MIRROR`` whose tile the proof needs is bad: the tiles are checked
    against the signed root, and the tile (not the log) is blamed; it was the log's
    ``not-included``."""
    mirror = tmp_path / "mirror"
    shutil.copytree(served.log, mirror)
    tile = mirror / next(t for t in tiles_for_size(len(served.entries)) if t.level == 0).path
    data = bytearray(tile.read_bytes())
    data[32] ^= 1  # entry 1's leaf hash: entry 0's proof starts with it
    tile.write_bytes(bytes(data))
    result = _resolve(served, "dns", "--log-tiles", str(mirror))
    assert result.returncode == EXIT_VERIFICATION, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"{tile}: bad-tile: " in lines[0], lines
