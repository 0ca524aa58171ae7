"""libsodium signs the same bytes as OpenSSL and never accepts what OpenSSL rejects."""

from __future__ import annotations

import os

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

from alter_publish.format.ed25519 import SigningKey, verify

L = 2**252 + 27742317777372353535851937790883648493  # the group order


def _openssl_accepts(public: bytes, signature: bytes, message: bytes) -> bool:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


@given(seed=st.binary(min_size=32, max_size=32), message=st.binary(max_size=600))
def test_signatures_are_the_bytes_openssl_makes(seed: bytes, message: bytes) -> None:
    reference = Ed25519PrivateKey.from_private_bytes(seed)
    public = reference.public_key().public_bytes_raw()
    derived = SigningKey.from_seed(seed)
    assert derived.public == public
    assert derived.sign(message) == reference.sign(message)
    assert SigningKey.from_seed(seed, public).sign(message) == reference.sign(message)


def _signed() -> tuple[bytes, bytes, bytes]:
    key = Ed25519PrivateKey.generate()
    message = os.urandom(200)
    return key.public_key().public_bytes_raw(), key.sign(message), message


def _non_canonical_s(signature: bytes) -> bytes:
    s = int.from_bytes(signature[32:], "little") + L  # same point, S >= L
    return signature[:32] + s.to_bytes(32, "little")


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda p, s, m: (p, s, m), id="valid"),
        pytest.param(lambda p, s, m: (p, s[:-1] + bytes([s[-1] ^ 1]), m), id="flipped-S"),
        pytest.param(lambda p, s, m: (p, bytes([s[0] ^ 1]) + s[1:], m), id="flipped-R"),
        pytest.param(lambda p, s, m: (p, s, m + b"x"), id="other-message"),
        pytest.param(lambda p, s, m: (bytes([p[0] ^ 1]) + p[1:], s, m), id="other-key"),
        pytest.param(lambda p, s, m: (p, _non_canonical_s(s), m), id="S-not-reduced"),
        pytest.param(lambda p, s, m: (bytes(32), s, m), id="zero-key"),
        pytest.param(lambda p, s, m: (p, s[:63], m), id="short-signature"),
        pytest.param(lambda p, s, m: (p[:31], s, m), id="short-key"),
    ],
)
def test_verdict_is_openssls(tamper: object) -> None:
    public, signature, message = tamper(*_signed())  # type: ignore[operator]  # (table lambdas)
    assert verify(public, signature, message) == _openssl_accepts(public, signature, message)


def test_seed_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        SigningKey.from_seed(b"short")
