"""The pin-store policy of resolving: pin on a DNSSEC-validated answer, never on another.

The example zone is signed for real (Ed25519 handle and zone keys), served on a
loopback server and resolved with its DS as the trust anchor.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from alter_publish import pipeline
from alter_publish.dns.anchors import TrustAnchor, read_trust_anchors
from alter_publish.dns.server import ZoneServer
from alter_publish.dns.validation import DNSSECStatus
from alter_publish.format.handles import parse_handle
from alter_publish.keys.store import KeyStore
from alter_publish.verify.pinning import PIN_NOT_UPDATED_INSECURE, resolve_pinned
from alter_publish.verify.pins import PINS_FORMAT, PinStore
from tests.conftest import EXAMPLE_ZONE, NOW

BLAKE = parse_handle("~blake")
OWNER = "_alter.blake.example.com."
SUBSTRATE = "example.com"


@dataclass(frozen=True)
class Served:
    """The signed example zone on a loopback server, and its trust anchors."""

    address: tuple[str, int]
    anchors: tuple[TrustAnchor, ...]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("pinning")
    (root / "zones").mkdir()
    zone_file = root / "zones" / "example.com.yaml"
    shutil.copy(EXAMPLE_ZONE, zone_file)
    out = root / "build"
    report = pipeline.sign(
        [zone_file], out=out, keys=KeyStore(root / "keys"), now=NOW, create_keys=True
    )
    assert report.committed
    zone = pipeline.read_zone_file(out / "example.com.zone", SUBSTRATE)
    with ZoneServer([zone]) as server:
        yield Served(server.address, read_trust_anchors(out / "example.com.ds"))


def test_without_a_store_nothing_is_pinned(served: Served) -> None:
    outcome = resolve_pinned(
        BLAKE,
        server=served.address,
        substrate=SUBSTRATE,
        now=NOW,
        pin_store=None,
        anchors=served.anchors,
    )
    assert (outcome.resolution.ok, outcome.pin) == (True, None)


def test_a_validated_answer_pins_then_finds_the_pin_unchanged(
    served: Served, tmp_path: Path
) -> None:
    store = tmp_path / "pins.json"
    first = resolve_pinned(
        BLAKE,
        server=served.address,
        substrate=SUBSTRATE,
        now=NOW,
        pin_store=store,
        anchors=served.anchors,
    )
    envelope = first.resolution.envelope
    assert first.resolution.dnssec is DNSSECStatus.SECURE
    assert first.pin == "pinned"
    assert envelope is not None
    assert PinStore.read(store).pinned(OWNER) == (envelope.epoch, envelope.public_key)
    written = store.read_bytes()

    again = resolve_pinned(
        BLAKE,
        server=served.address,
        substrate=SUBSTRATE,
        now=NOW + 60,
        pin_store=store,
        anchors=served.anchors,
    )
    assert again.pin == "unchanged"
    assert store.read_bytes() == written


def test_an_answer_not_validated_never_plants_a_pin(served: Served, tmp_path: Path) -> None:
    store = tmp_path / "pins.json"
    outcome = resolve_pinned(
        BLAKE,
        server=served.address,
        substrate=SUBSTRATE,
        now=NOW,
        pin_store=store,
        allow_insecure=True,
    )
    assert outcome.resolution.ok
    assert outcome.resolution.dnssec is DNSSECStatus.INSECURE
    assert outcome.pin == PIN_NOT_UPDATED_INSECURE
    assert not store.exists()


def test_a_pin_to_another_key_is_enforced_and_kept(served: Served, tmp_path: Path) -> None:
    store = tmp_path / "pins.json"
    pin = {"handle": "~blake", "epoch": 1, "p": "A" * 43, "first_seen": NOW, "updated": NOW}
    store.write_text(json.dumps({"format": PINS_FORMAT, "pins": {OWNER: pin}}))
    before = store.read_bytes()
    outcome = resolve_pinned(
        BLAKE,
        server=served.address,
        substrate=SUBSTRATE,
        now=NOW,
        pin_store=store,
        anchors=served.anchors,
    )
    assert (outcome.resolution.category, outcome.pin) == ("key-mismatch", None)
    assert store.read_bytes() == before


def test_a_failed_resolution_leaves_the_store_alone(served: Served, tmp_path: Path) -> None:
    store = tmp_path / "pins.json"
    outcome = resolve_pinned(
        parse_handle("~nobody"),
        server=served.address,
        substrate=SUBSTRATE,
        now=NOW,
        pin_store=store,
        anchors=served.anchors,
    )
    assert (outcome.resolution.category, outcome.pin) == ("not-found", None)
    assert not store.exists()
