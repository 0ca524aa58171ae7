"""Guards of the key lifecycle that a review pass found missing (each test failed before).

Rotations past an unpublished epoch, a key store behind or beside the log, TTLs
lowered in the middle of a rollover, a failed rotation, status without private
keys, and corrupt state files.
"""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from alter_publish import pipeline
from alter_publish.definition.model import load_zone
from alter_publish.definition.state import state_path_for
from alter_publish.dns.zonekeys import ZoneKeyRole
from alter_publish.errors import KeyStoreError, RenderError, UsageError
from alter_publish.format.handles import parse_handle
from alter_publish.keys import commands as keyops
from alter_publish.keys.lifecycle import RotationMode, revocations_path_for, rotate
from alter_publish.keys.pem import PASSPHRASE_ENV, passphrase_from_env
from alter_publish.keys.store import KeyStore
from tests.conftest import NOW, Workspace

DAY = 86400
BLAKE = parse_handle("~blake")


def _sign(
    ws: Workspace, now: int, *, keys: KeyStore | None = None, incremental: bool = True
) -> pipeline.SignReport:
    report = pipeline.sign(
        [ws.zone_file],
        out=ws.out,
        keys=keys or ws.keys,
        now=now,
        create_keys=now == NOW,
        incremental=incremental,
    )
    assert report.committed
    return report


def test_rotating_again_before_signing_is_refused(workspace: Workspace) -> None:
    _sign(workspace, NOW)
    spec = load_zone(workspace.zone_file)
    rotate(spec, "~blake", keys=workspace.keys, now=NOW + 60)
    for mode in RotationMode:
        with pytest.raises(UsageError, match="not published yet"):
            rotate(spec, "~blake", keys=workspace.keys, now=NOW + 120, mode=mode)
    assert workspace.keys.epochs("example.com", BLAKE) == (1, 2)
    assert not revocations_path_for(workspace.zone_file).exists()


def test_sign_refuses_an_epoch_older_than_the_log(workspace: Workspace) -> None:
    _sign(workspace, NOW)
    spec = load_zone(workspace.zone_file)
    rotate(spec, "~blake", keys=workspace.keys, now=NOW + 60)
    _sign(workspace, NOW + 60)
    for path in workspace.keys.paths("example.com", BLAKE, 2):
        path.unlink()
    before = workspace.rendered.read_bytes()
    # Removed by hand, past the key store's journal: a run that changes nothing does
    # not look (docs/keys.md, "The key journal"); one that reads every key refuses.
    assert _sign(workspace, NOW + 120).zones[0].unchanged
    with pytest.raises(KeyStoreError, match=r"log published epoch 2 .* epoch 1"):
        _sign(workspace, NOW + 120, incremental=False)
    assert workspace.rendered.read_bytes() == before


def test_sign_refuses_another_key_under_a_published_epoch(workspace: Workspace) -> None:
    _sign(workspace, NOW)
    blake = workspace.keys.handle_dir("example.com", BLAKE)
    shutil.rmtree(blake)
    workspace.keys.generate("example.com", BLAKE, 1)
    with pytest.raises(KeyStoreError, match="not the one the log published"):
        _sign(workspace, NOW + 60)


def test_a_lowered_ttl_does_not_shorten_a_rollover_wait(workspace: Workspace) -> None:
    definition = workspace.zone_file
    text = definition.read_text(encoding="utf-8")
    definition.write_text(re.sub(r"^ttl: 1h", "ttl: 1d", text, flags=re.MULTILINE))
    _sign(workspace, NOW)
    keyops.dnssec_rollover(str(definition), ZoneKeyRole.ZSK, keys=workspace.keys, now=NOW + 60)
    _sign(workspace, NOW + 60)
    definition.write_text(re.sub(r"^ttl: 1h", "ttl: 1m", text, flags=re.MULTILINE))
    _sign(workspace, NOW + 120)
    status = keyops.dnssec_status(str(definition), keys=workspace.keys)
    assert status.next_step is not None
    # Caches may hold the one-day DNSKEY set without the new ZSK until a day has passed.
    assert status.next_step.not_before == NOW + 60 + 3600 + DAY
    with pytest.raises(KeyStoreError, match="too early"):
        keyops.dnssec_step(str(definition), keys=workspace.keys, now=NOW + 120 + 3600 + 60)


def test_a_failed_compromised_rotation_queues_nothing(workspace: Workspace) -> None:
    _sign(workspace, NOW)
    spec = load_zone(workspace.zone_file)
    not_a_dir = workspace.zone_file / "blake.secret"  # its parent is a file: writing fails
    with pytest.raises(KeyStoreError):
        rotate(
            spec,
            "~blake",
            keys=workspace.keys,
            now=NOW + 60,
            mode=RotationMode.COMPROMISED,
            secret_out=not_a_dir,
        )
    assert not revocations_path_for(workspace.zone_file).exists()
    _sign(workspace, NOW + 120)  # signing is not blocked by a half-done rotation


def test_status_needs_no_private_key(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PASSPHRASE_ENV, "correct horse")

    encrypted = KeyStore(workspace.root / "keys", passphrase=passphrase_from_env(os.environ))
    _sign(workspace, NOW, keys=encrypted)
    definition = str(workspace.zone_file)
    keyops.dnssec_rollover(definition, ZoneKeyRole.ZSK, keys=encrypted, now=NOW + 60)
    _sign(workspace, NOW + 60, keys=encrypted)
    plain = KeyStore(workspace.root / "keys")  # no passphrase at all
    status = keyops.dnssec_status(definition, keys=plain)
    assert len(status.keys) == 3
    assert len(keyops.keys_status([workspace.zone_file], keys=plain, now=NOW + 60)) == 1
    for pem in (workspace.root / "keys" / "example.com" / "_dnssec").glob("*.pem"):
        pem.unlink()
    assert len(keyops.dnssec_status(definition, keys=plain).ds) == 1


@pytest.mark.parametrize(
    "zone_keys",
    [pytest.param("x", id="not-object"), pytest.param({"keys": [], "since": 1e400}, id="huge")],
)
def test_a_corrupt_state_file_is_a_one_line_error(workspace: Workspace, zone_keys: object) -> None:
    _sign(workspace, NOW)
    state_file = state_path_for(workspace.zone_file)
    doc = json.loads(state_file.read_text(encoding="utf-8"))
    doc["zone_keys"] = zone_keys
    state_file.write_text(json.dumps(doc).replace('"Infinity"', "1e400"), encoding="utf-8")
    with pytest.raises(RenderError, match="not a serial state file"):
        keyops.dnssec_status(str(workspace.zone_file), keys=workspace.keys)


def test_dnssec_commands_refuse_an_unsigned_zone(workspace: Workspace) -> None:
    text = workspace.zone_file.read_text(encoding="utf-8")
    workspace.zone_file.write_text(text.replace("  enabled: true", "  enabled: false"))
    with pytest.raises(UsageError, match="DNSSEC is off"):
        keyops.dnssec_status(str(workspace.zone_file), keys=workspace.keys)
