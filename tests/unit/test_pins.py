"""The verifier's pin store, alone and feeding spec 6 step 6 with real Ed25519 keys."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.errors import UsageError, VerificationError
from alter_publish.format.envelope import (
    Envelope,
    Revocation,
    b64url,
    public_bytes,
    sign_envelope,
    verify_envelope,
    verify_record,
)
from alter_publish.format.handles import parse_handle
from alter_publish.verify.pins import PINS_FORMAT, Pin, PinStore
from tests.conftest import NOW

BLAKE = parse_handle("~blake")
OWNER = "_alter.blake.example.com."
SUBSTRATE = "example.com"
DAY = 86_400
#: Fixed keys so a failure reproduces; "other" never signs for ~blake.
KEYS = {
    name: Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32)
    for seed, name in enumerate(("k1", "k2", "k3", "other"), start=1)
}


def _public(name: str) -> bytes:
    return public_bytes(KEYS[name])


def _envelope(epoch: int, key: str, psig_by: str | None = None) -> Envelope:
    return sign_envelope(
        handle=BLAKE,
        owner=OWNER,
        epoch=epoch,
        private_key=KEYS[key],
        signed_at=NOW,
        expires_at=NOW + 30 * DAY,
        log_size=epoch,
        log_root=bytes([epoch]) * 32,
        revocation_secret=bytes([epoch]) * 32,
        previous_key=None if psig_by is None else KEYS[psig_by],
    )


def _outcome(check: Callable[[], Envelope]) -> str:
    try:
        check()
    except VerificationError as exc:
        return exc.category
    return "ok"


def _category(
    envelope: Envelope, pinned: tuple[int, bytes] | None, revocations: Sequence[Revocation] = ()
) -> str:
    """What verification says (``ok`` when it passes); verify_record on the text and
    verify_envelope on the parsed envelope must agree."""
    by_text = _outcome(
        lambda: verify_record(
            envelope.to_text(),
            owner=OWNER,
            substrate=SUBSTRATE,
            now=NOW,
            pinned=pinned,
            revocations=revocations,
        )
    )
    by_envelope = _outcome(
        lambda: verify_envelope(
            envelope,
            owner=OWNER,
            substrate=SUBSTRATE,
            now=NOW,
            pinned=pinned,
            revocations=revocations,
        )
    )
    assert by_text == by_envelope
    return by_text


# --- the file ----------------------------------------------------------------------------


def test_a_missing_file_is_an_empty_store(tmp_path: Path) -> None:
    store = PinStore.read(tmp_path / "pins.json")
    assert store.pins == {}
    assert store.pinned(OWNER) is None
    assert not (tmp_path / "pins.json").exists()


def test_accept_pins_keeps_then_advances(tmp_path: Path) -> None:
    store = PinStore.read(tmp_path / "pins.json")
    assert store.accept(OWNER, _envelope(1, "k1"), NOW) == "pinned"
    assert store.pinned(OWNER) == (1, _public("k1"))
    assert store.accept(OWNER, _envelope(1, "k1"), NOW + DAY) == "unchanged"
    assert store.pins[OWNER].updated == NOW
    assert store.accept(OWNER, _envelope(2, "k2", psig_by="k1"), NOW + 2 * DAY) == "advanced"
    assert store.pinned(OWNER) == (2, _public("k2"))
    assert store.pins[OWNER] == Pin("~blake", 2, _public("k2"), NOW, NOW + 2 * DAY)
    assert store.pinned("_alter.drew.example.com.") is None


def test_write_then_read_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "state" / "pins.json"
    store = PinStore(path)
    store.accept(OWNER, _envelope(2, "k2"), NOW)
    store.accept("_alter.example.com.", _envelope(1, "k1"), NOW + 1)  # h= need not match here
    store.write()
    doc = json.loads(path.read_text())
    assert doc["format"] == PINS_FORMAT
    assert doc["pins"][OWNER]["p"] == b64url(_public("k2"))
    again = PinStore.read(path)
    assert again == store
    assert again.pinned(OWNER) == (2, _public("k2"))


def _pins_doc(*, drop: str | None = None, **pin: object) -> str:
    item: dict[str, object] = {
        "handle": "~blake",
        "epoch": 1,
        "p": b64url(_public("k1")),
        "first_seen": NOW,
        "updated": NOW,
    }
    item.update(pin)
    if drop is not None:
        del item[drop]
    return json.dumps({"format": PINS_FORMAT, "pins": {OWNER: item}})


def test_a_well_formed_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    path.write_text(_pins_doc())
    assert PinStore.read(path).pinned(OWNER) == (1, _public("k1"))


BAD_PIN_FILES = {
    "not-json": "{not json",
    "not-utf8": "\udcff",
    "wrong-format": json.dumps({"format": "alter-publish/revocations/1", "pins": {}}),
    "no-format": json.dumps({"pins": {}}),
    "not-an-object": json.dumps([PINS_FORMAT]),
    "key-too-short": _pins_doc(p=b64url(bytes(31))),
    "key-padded": _pins_doc(p=b64url(_public("k1")) + "="),
    "key-not-base64url": _pins_doc(p="+" * 43),
    "epoch-not-a-number": _pins_doc(epoch="one"),
    "missing-p": _pins_doc(drop="p"),
    "missing-updated": _pins_doc(drop="updated"),
    "pin-not-an-object": json.dumps({"format": PINS_FORMAT, "pins": {OWNER: 5}}),
}


@pytest.mark.parametrize("text", BAD_PIN_FILES.values(), ids=BAD_PIN_FILES.keys())
def test_bad_files_are_usage_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "pins.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(UsageError) as excinfo:
        PinStore.read(path)
    assert excinfo.value.where == str(path)


def test_a_pins_value_that_is_not_an_object_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    path.write_text(json.dumps({"format": PINS_FORMAT, "pins": [OWNER]}))
    with pytest.raises(UsageError):
        PinStore.read(path)


# --- pins in verification (spec 6 step 6) ------------------------------------------------

# (pinned epoch, pinned key, envelope epoch, envelope key, psig by, expected category)
PIN_CASES = {
    "same-epoch-same-key": (1, "k1", 1, "k1", None, "ok"),
    "next-epoch-psig-by-pinned": (1, "k1", 2, "k2", "k1", "ok"),
    "next-epoch-without-psig": (1, "k1", 2, "k2", None, "no-continuity"),
    "next-epoch-psig-by-other": (1, "k1", 2, "k2", "other", "bad-continuity"),
    "psig-by-the-new-key-itself": (1, "k1", 2, "k2", "k2", "bad-continuity"),
    "same-epoch-other-key": (1, "k1", 1, "other", None, "key-mismatch"),
    "older-epoch": (2, "k2", 1, "k1", None, "rollback"),
    "older-epoch-same-key": (2, "k1", 1, "k1", None, "rollback"),
    "epoch-gap-even-with-psig": (1, "k1", 3, "k3", "k1", "no-continuity"),
}


@pytest.mark.parametrize(
    ("pinned_epoch", "pinned_key", "epoch", "key", "psig_by", "expected"),
    PIN_CASES.values(),
    ids=PIN_CASES.keys(),
)
def test_pins_decide_step_6(
    pinned_epoch: int, pinned_key: str, epoch: int, key: str, psig_by: str | None, expected: str
) -> None:
    envelope = _envelope(epoch, key, psig_by)
    assert _category(envelope, None) == "ok"  # steps 1-5 pass: only the pin can fail it
    assert _category(envelope, (pinned_epoch, _public(pinned_key))) == expected


def test_a_revocation_is_reported_before_the_pin() -> None:
    envelope = _envelope(1, "k1")
    revocation = Revocation(BLAKE, 1, bytes([1]) * 32)
    assert revocation.revokes(envelope)
    pinned = (2, _public("k2"))
    assert _category(envelope, pinned) == "rollback"
    assert _category(envelope, pinned, revocations=[revocation]) == "revoked"


def test_a_pin_store_follows_a_rotation_and_refuses_the_way_back(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    first, second = _envelope(1, "k1"), _envelope(2, "k2", psig_by="k1")
    stolen = _envelope(2, "other", psig_by="other")

    store = PinStore.read(path)
    verify_record(first.to_text(), owner=OWNER, substrate=SUBSTRATE, now=NOW)
    assert store.accept(OWNER, first, NOW) == "pinned"
    store.write()

    store = PinStore.read(path)
    with pytest.raises(VerificationError) as excinfo:
        verify_record(
            stolen.to_text(),
            owner=OWNER,
            substrate=SUBSTRATE,
            now=NOW,
            pinned=store.pinned(OWNER),
        )
    assert excinfo.value.category == "bad-continuity"
    verify_record(
        second.to_text(), owner=OWNER, substrate=SUBSTRATE, now=NOW, pinned=store.pinned(OWNER)
    )
    assert store.accept(OWNER, second, NOW + DAY) == "advanced"
    store.write()

    store = PinStore.read(path)
    assert store.pinned(OWNER) == (2, _public("k2"))
    with pytest.raises(VerificationError) as excinfo:
        verify_record(
            first.to_text(), owner=OWNER, substrate=SUBSTRATE, now=NOW, pinned=store.pinned(OWNER)
        )
    assert excinfo.value.category == "rollback"
