"""Ed25519 for the hot loops, on libsodium (PyNaCl); keys stay with ``cryptography``.

At 100,000 handles ``sign`` makes 300,000 signatures and its proof checks 200,000.
On this project's machines libsodium verifies in ~70 µs where OpenSSL (through
``cryptography``) takes ~135, and it signs from a 64-byte secret key (seed and
public key) in ~27 µs, where ``cryptography`` re-derives the public key from the
seed (~40 µs) before each new key's first signature (~41 µs). Ed25519 is
deterministic: both libraries make the same signature bytes for the same key and
message (tested), so outputs do not depend on which one signed.

Verification keeps OpenSSL's verdict exactly: libsodium's checks are a superset
of OpenSSL's (canonical S, valid points, and more), so what it accepts OpenSSL
accepts too; whatever it rejects is asked of OpenSSL before it counts as bad.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import nacl.bindings
import nacl.exceptions
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

SEED_OCTETS = 32
PUBLIC_KEY_OCTETS = 32
SIGNATURE_OCTETS = 64


@dataclass(frozen=True, slots=True)
class SigningKey:
    """A private key ready to sign: libsodium's seed-and-public-key form. Never printed."""

    public: bytes
    secret: bytes = field(repr=False)

    @classmethod
    def from_seed(cls, seed: bytes, public: bytes | None = None) -> SigningKey:
        """The key of a 32-byte seed; ``public`` (when known) spares deriving it.

        Raises:
            ValueError: a seed or public key of the wrong length.
        """
        if len(seed) != SEED_OCTETS:
            raise ValueError("an Ed25519 seed is 32 bytes")
        if public is None:
            public, secret = nacl.bindings.crypto_sign_seed_keypair(seed)
            return cls(public, secret)
        if len(public) != PUBLIC_KEY_OCTETS:
            raise ValueError("an Ed25519 public key is 32 bytes")
        return cls(public, seed + public)

    def sign(self, message: bytes) -> bytes:
        """The 64-byte signature of ``message``."""
        signed: bytes = nacl.bindings.crypto_sign(message, self.secret)
        return signed[:SIGNATURE_OCTETS]


def verify(public: bytes, signature: bytes, message: bytes) -> bool:
    """True when ``signature`` is ``public``'s over ``message`` (OpenSSL's verdict)."""
    if len(public) != PUBLIC_KEY_OCTETS or len(signature) != SIGNATURE_OCTETS:
        return False
    try:
        nacl.bindings.crypto_sign_open(signature + message, public)
    except (nacl.exceptions.BadSignatureError, nacl.exceptions.ValueError):
        pass  # stricter than OpenSSL in corner cases: let OpenSSL decide
    else:
        return True
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True
