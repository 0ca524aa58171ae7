"""C2SP signed notes (c2sp.org/signed-note) with Ed25519 keys, and the timestamped
cosignatures of c2sp.org/tlog-cosignature (``cosignature/v1``), on no I/O.

A note is UTF-8 text ending in a newline, a blank line, then one line per signature::

    — <key name> base64(key ID || signature)

The key ID is the first 4 octets of SHA-256(name || 0x0A || type || public key), with
type 0x01 for a plain Ed25519 signature over the text and 0x04 for a cosignature (whose
signature is a big-endian 64-bit timestamp then Ed25519 over
``cosignature/v1\\ntime <timestamp>\\n`` and the text).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from dataclasses import dataclass, field

from alter_publish.errors import VerificationError
from alter_publish.format.ed25519 import (
    PUBLIC_KEY_OCTETS,
    SEED_OCTETS,
    SIGNATURE_OCTETS,
    SigningKey,
    verify,
)

#: Signature types (the algorithm byte of a key ID and of an encoded key).
ED25519_TYPE = 0x01
COSIGNATURE_V1_TYPE = 0x04
SIGNATURE_PREFIX = "\u2014 "
KEY_ID_OCTETS = 4
TIMESTAMP_OCTETS = 8
#: Signatures a note may carry (as Go's ``note.Open`` allows).
MAX_SIGNATURES = 100
COSIGNATURE_HEADER = "cosignature/v1\n"
_PRIVATE_PREFIX = "PRIVATE+KEY+"


def _b64decode(text: str, where: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise VerificationError("not standard base64", where=where, category="malformed") from exc


def check_key_name(name: str) -> str:
    """``name`` when it is a valid key name (non-empty, no space, no ``+``).

    Raises:
        VerificationError: ``malformed``.
    """
    if not name or "+" in name or any(ch.isspace() for ch in name) or not name.isprintable():
        raise VerificationError(f"bad key name {name!r}", category="malformed")
    return name


def key_id(name: str, algorithm: int, public: bytes) -> bytes:
    """The 4-octet key ID of ``public`` under ``name`` for signature type ``algorithm``."""
    digest = hashlib.sha256(name.encode() + b"\n" + bytes([algorithm]) + public).digest()
    return digest[:KEY_ID_OCTETS]


@dataclass(frozen=True, slots=True)
class Verifier:
    """A note verifier key: ``name+hex(key ID)+base64(type || public key)``."""

    name: str
    public: bytes
    algorithm: int = ED25519_TYPE

    @property
    def key_id(self) -> bytes:
        """The 4-octet key ID."""
        return key_id(self.name, self.algorithm, self.public)

    def to_text(self) -> str:
        """The vkey form."""
        encoded = base64.b64encode(bytes([self.algorithm]) + self.public).decode()
        return f"{self.name}+{self.key_id.hex()}+{encoded}"

    @classmethod
    def parse(cls, text: str) -> Verifier:
        """A verifier key as written by :meth:`to_text` (type 0x01 or 0x04).

        Raises:
            VerificationError: ``malformed``: not a vkey, an unknown type, or its hash
                does not match.
        """
        where = "verifier key"
        name, plus, rest = text.strip().partition("+")
        hash_hex, plus2, key_b64 = rest.partition("+")
        if not plus or not plus2 or len(hash_hex) != 2 * KEY_ID_OCTETS:
            raise VerificationError("not 'name+hex+base64'", where=where, category="malformed")
        check_key_name(name)
        raw = _b64decode(key_b64, where)
        if len(raw) != 1 + PUBLIC_KEY_OCTETS or raw[0] not in (ED25519_TYPE, COSIGNATURE_V1_TYPE):
            raise VerificationError("not an Ed25519 key", where=where, category="malformed")
        verifier = cls(name, raw[1:], raw[0])
        if verifier.key_id.hex() != hash_hex.lower():
            raise VerificationError("key hash does not match", where=where, category="malformed")
        return verifier


@dataclass(frozen=True, slots=True)
class Signer:
    """A note signer: a key name and an Ed25519 seed (never printed)."""

    name: str
    seed: bytes = field(repr=False)
    algorithm: int = ED25519_TYPE

    @property
    def key(self) -> SigningKey:
        """The libsodium signing key."""
        return SigningKey.from_seed(self.seed)

    @property
    def verifier(self) -> Verifier:
        """The matching verifier key."""
        return Verifier(self.name, self.key.public, self.algorithm)

    def to_text(self) -> str:
        """The signer key form ``PRIVATE+KEY+name+hex+base64(type || seed)``."""
        encoded = base64.b64encode(bytes([self.algorithm]) + self.seed).decode()
        return f"{_PRIVATE_PREFIX}{self.name}+{self.verifier.key_id.hex()}+{encoded}"

    @classmethod
    def parse(cls, text: str) -> Signer:
        """A signer key as written by :meth:`to_text`.

        Raises:
            VerificationError: ``malformed``.
        """
        where = "signer key"
        if not text.startswith(_PRIVATE_PREFIX):
            raise VerificationError("not a signer key", where=where, category="malformed")
        name, _, rest = text.strip()[len(_PRIVATE_PREFIX) :].partition("+")
        hash_hex, _, key_b64 = rest.partition("+")
        check_key_name(name)
        raw = _b64decode(key_b64, where)
        if len(raw) != 1 + SEED_OCTETS or raw[0] not in (ED25519_TYPE, COSIGNATURE_V1_TYPE):
            raise VerificationError("not an Ed25519 key", where=where, category="malformed")
        signer = cls(name, raw[1:], raw[0])
        if signer.verifier.key_id.hex() != hash_hex.lower():
            raise VerificationError("key hash does not match", where=where, category="malformed")
        return signer


@dataclass(frozen=True, slots=True)
class NoteSignature:
    """One signature line: the key name, key ID and signature octets (after the ID)."""

    name: str
    key_id: bytes
    signature: bytes

    def to_line(self) -> str:
        """``— name base64(key ID || signature)`` and a newline."""
        encoded = base64.b64encode(self.key_id + self.signature).decode()
        return f"{SIGNATURE_PREFIX}{self.name} {encoded}\n"


@dataclass(frozen=True, slots=True)
class Note:
    """A signed note: its text (ending in a newline) and its signature lines, in order."""

    text: str
    signatures: tuple[NoteSignature, ...] = ()

    def to_text(self) -> str:
        """The note as published: text, a blank line, the signature lines."""
        return self.text + "\n" + "".join(sig.to_line() for sig in self.signatures)

    def signed_by(self, signer: Signer) -> Note:
        """This note with ``signer``'s Ed25519 signature over the text appended."""
        signature = signer.key.sign(self.text.encode())
        line = NoteSignature(signer.name, signer.verifier.key_id, signature)
        return Note(self.text, (*self.signatures, line))

    def cosigned_by(self, signer: Signer, timestamp: int) -> Note:
        """This note with a ``cosignature/v1`` from ``signer`` at ``timestamp`` appended."""
        message = cosignature_message(self.text, timestamp)
        signature = struct.pack(">Q", timestamp) + signer.key.sign(message)
        cosigner = Verifier(signer.name, signer.key.public, COSIGNATURE_V1_TYPE)
        line = NoteSignature(signer.name, cosigner.key_id, signature)
        return Note(self.text, (*self.signatures, line))

    def matching(self, verifier: Verifier) -> NoteSignature | None:
        """The signature line of ``verifier``'s name and key ID, if any."""
        return next(
            (
                sig
                for sig in self.signatures
                if sig.name == verifier.name and sig.key_id == verifier.key_id
            ),
            None,
        )

    def verify(self, verifier: Verifier) -> NoteSignature:
        """The signature line of ``verifier``, checked.

        Raises:
            VerificationError: ``bad-signature``: no signature by that key, or it does
                not verify.
        """
        found = self.matching(verifier)
        if found is None:
            raise VerificationError(
                f"no signature by {verifier.name}+{verifier.key_id.hex()}",
                where="note",
                category="bad-signature",
            )
        if verifier.algorithm == COSIGNATURE_V1_TYPE:
            ok = len(found.signature) == TIMESTAMP_OCTETS + SIGNATURE_OCTETS and verify(
                verifier.public,
                found.signature[TIMESTAMP_OCTETS:],
                cosignature_message(self.text, cosignature_time(found)),
            )
        else:
            ok = verify(verifier.public, found.signature, self.text.encode())
        if not ok:
            raise VerificationError(
                f"signature by {verifier.name} does not verify",
                where="note",
                category="bad-signature",
            )
        return found

    @classmethod
    def parse(cls, data: str) -> Note:
        """A signed note as published (text, blank line, at least one signature line, no
        two by one key: one key name and key ID).

        Go's ``note.Open`` skips a repeated line by a known key and lets the first one
        decide; refusing the note instead leaves no doubt about which line counts.

        Raises:
            VerificationError: ``malformed``.
        """
        where = "note"
        split = data.rfind("\n\n")
        if split < 0 or not data.endswith("\n"):
            raise VerificationError("no signature block", where=where, category="malformed")
        text, block = data[: split + 1], data[split + 2 :]
        if any(ch < " " and ch != "\n" for ch in data) or "\ufffd" in data:
            raise VerificationError("control character in note", where=where, category="malformed")
        lines = block.splitlines()
        if not lines or len(lines) > MAX_SIGNATURES:
            raise VerificationError("no signature lines", where=where, category="malformed")
        signatures: list[NoteSignature] = []
        seen: set[tuple[str, bytes]] = set()
        for line in lines:
            name, space, encoded = line.removeprefix(SIGNATURE_PREFIX).partition(" ")
            if not line.startswith(SIGNATURE_PREFIX) or not space:
                raise VerificationError("bad signature line", where=where, category="malformed")
            raw = _b64decode(encoded, where)
            if len(raw) <= KEY_ID_OCTETS:
                raise VerificationError("signature too short", where=where, category="malformed")
            check_key_name(name)
            if (name, raw[:KEY_ID_OCTETS]) in seen:
                what = f"two signature lines by {name}+{raw[:KEY_ID_OCTETS].hex()}"
                raise VerificationError(what, where=where, category="malformed")
            seen.add((name, raw[:KEY_ID_OCTETS]))
            signatures.append(NoteSignature(name, raw[:KEY_ID_OCTETS], raw[KEY_ID_OCTETS:]))
        return cls(text, tuple(signatures))


def cosignature_message(text: str, timestamp: int) -> bytes:
    """What a ``cosignature/v1`` signs: header, time line, then the note text."""
    return f"{COSIGNATURE_HEADER}time {timestamp}\n{text}".encode()


def cosignature_time(signature: NoteSignature) -> int:
    """The timestamp of a cosignature line.

    Raises:
        VerificationError: ``malformed``: too short to hold one.
    """
    if len(signature.signature) < TIMESTAMP_OCTETS:
        raise VerificationError("cosignature too short", where="note", category="malformed")
    value: int = struct.unpack(">Q", signature.signature[:TIMESTAMP_OCTETS])[0]
    return value
