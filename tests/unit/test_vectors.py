"""Every case of the alter1 vectors, through the public API only."""

from __future__ import annotations

import filecmp
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import alter_publish
from alter_publish import AlterError, parse_handle, parse_uri, verify_record
from alter_publish.format.envelope import (
    CONTEXT_CONTINUITY,
    CONTEXT_ENVELOPE,
    Revocation,
    sign_envelope,
    signing_input,
)
from tests.vectors import SHARED_VECTORS_DIR, VECTORS_DIR, case_id, load


def test_copy_matches_shared_vectors() -> None:
    if not SHARED_VECTORS_DIR.is_dir():
        pytest.skip(f"{SHARED_VECTORS_DIR} not present (clone without ../shared)")
    names = sorted(p.name for p in SHARED_VECTORS_DIR.iterdir())
    assert sorted(p.name for p in VECTORS_DIR.iterdir()) == names
    match, mismatch, errors = filecmp.cmpfiles(
        SHARED_VECTORS_DIR, VECTORS_DIR, names, shallow=False
    )
    assert (mismatch, errors) == ([], [])
    assert match == names


@pytest.mark.parametrize("case", load("handles.json"), ids=case_id)
def test_handle_vector(case: dict[str, Any]) -> None:
    if not case["valid"]:
        with pytest.raises(AlterError) as info:
            parse_handle(case["input"])
        assert info.value.category == case["error"]
        return
    handle = parse_handle(case["input"])
    assert handle.ref == case["canonical"]
    assert handle.tier == case["tier"]
    assert handle.owner("example.com") == case["owner_in_example_com"]


@pytest.mark.parametrize("case", load("uris.json"), ids=case_id)
def test_uri_vector(case: dict[str, Any]) -> None:
    if not case["valid"]:
        with pytest.raises(AlterError) as info:
            parse_uri(case["input"])
        assert info.value.category == case["error"]
        return
    uri = parse_uri(case["input"])
    assert uri.handle.ref == case["handle"]
    assert uri.handle.tier == case["tier"]
    assert list(uri.path) == case["path"]
    assert uri.query == case["query"]
    assert uri.fragment == case["fragment"]


def _key(seed_hex: str | None) -> Ed25519PrivateKey | None:
    if seed_hex is None:
        return None
    return Ed25519PrivateKey.from_private_bytes(bytes.fromhex(seed_hex))


@pytest.mark.parametrize("case", load("envelopes.json"), ids=case_id)
def test_envelope_vector_producer_output(case: dict[str, Any]) -> None:
    inputs, expected = case["inputs"], case["expected"]
    handle = parse_handle(inputs["handle"])
    owner = handle.owner(inputs["substrate"])
    key = _key(inputs["private_key_seed_hex"])
    assert key is not None
    secret = bytes.fromhex(inputs["revocation_secret_hex"])
    envelope = sign_envelope(
        handle=handle,
        owner=owner,
        epoch=inputs["epoch"],
        private_key=key,
        signed_at=inputs["t"],
        expires_at=inputs["x"],
        log_size=inputs["log_size"],
        log_root=bytes.fromhex(inputs["log_root_hex"]),
        revocation_secret=secret,
        extra_tags=[tuple(tag) for tag in inputs["extra_tags"]],
        previous_key=_key(inputs["previous_private_key_seed_hex"]),
    )
    assert owner == expected["owner"]
    assert envelope.to_text() == expected["text"]
    assert list(envelope.txt_strings()) == expected["txt_strings"]
    sig_input = signing_input(CONTEXT_ENVELOPE, owner, envelope.signed_tags("sig"))
    assert sig_input.hex() == expected["signing_input_hex"]
    if expected["continuity_input_hex"] is None:
        assert envelope.psig is None
    else:
        psig_input = signing_input(CONTEXT_CONTINUITY, owner, envelope.signed_tags("psig"))
        assert psig_input.hex() == expected["continuity_input_hex"]
    revocation = Revocation(handle=handle, epoch=inputs["epoch"], secret=secret)
    assert revocation.to_text() == expected["revocation_text"]
    assert revocation.revokes(envelope)
    verified = verify_record(
        expected["text"],
        owner=owner,
        substrate=inputs["substrate"],
        now=inputs["t"],
        revocations=(),
    )
    assert verified == envelope


@pytest.mark.parametrize("case", load("records.json"), ids=case_id)
def test_record_vector(case: dict[str, Any]) -> None:
    pinned = case["pinned"]
    pin = None if pinned is None else (pinned["epoch"], bytes.fromhex(pinned["public_key_hex"]))
    kwargs: dict[str, Any] = {
        "owner": case["owner"],
        "substrate": case["substrate"],
        "now": case["now"],
        "pinned": pin,
        "revocations": tuple(case["revocations"]),
    }
    if case["expect"] == "accept":
        envelope = verify_record(case["text"], **kwargs)
        assert envelope.handle.owner(case["substrate"]) == case["owner"]
        return
    with pytest.raises(alter_publish.VerificationError) as info:
        verify_record(case["text"], **kwargs)
    assert info.value.category == case["expect"]
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("case", load("merkle.json"), ids=case_id)
def test_merkle_vector(case: dict[str, Any]) -> None:
    assert alter_publish.merkle_root(case["entries_utf8"]).hex() == case["root_hex"]
