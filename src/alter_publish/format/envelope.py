"""alter1 records: tag lists, canonical signing input, sign, parse, verify (spec 3-6)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from alter_publish.errors import HandleError, VerificationError
from alter_publish.format import ed25519
from alter_publish.format.ed25519 import SigningKey
from alter_publish.format.handles import Handle, parse_handle

VERSION = "alter1"
KEY_TYPE = "ed25519"
CONTEXT_ENVELOPE = b"alter1-envelope"
CONTEXT_CONTINUITY = b"alter1-continuity"
CLOCK_SKEW_SECONDS = 300
EPOCH_MAX = 9_999_999_999
PUBLIC_KEY_OCTETS = 32
SIGNATURE_OCTETS = 64
DIGEST_OCTETS = 32
SECRET_OCTETS = 32
TXT_STRING_MAX_OCTETS = 255
KEY_ID_OCTETS = 8
#: Tags the producer writes itself; a zone definition may not set them as extras.
RESERVED_TAGS = frozenset(
    {"v", "h", "e", "k", "p", "t", "x", "log", "rc", "r", "psig", "sig", "rev"}
)

TAG_NAME = re.compile(r"[a-z][a-z0-9_]*")
TAG_VALUE = re.compile(r"[\x21-\x3a\x3c-\x7e]+")
_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_B64URL = re.compile(r"[A-Za-z0-9_-]*")
_PRINTABLE = re.compile(r"[\x20-\x7e]*")

Tags = tuple[tuple[str, str], ...]


class RecordKind(StrEnum):
    """What an alter1 record is, from its tags (spec 3)."""

    ENVELOPE = "envelope"
    REVOCATION = "revocation"
    OTHER = "other"


def b64url(data: bytes) -> str:
    """Base64url without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str, octets: int, *, tag: str) -> bytes:
    """Decode canonical unpadded base64url of exactly ``octets`` bytes.

    Raises:
        VerificationError: (``malformed``) padding, wrong alphabet, non-canonical or wrong length.
    """
    if not _B64URL.fullmatch(text):
        raise VerificationError(f"{tag}= is not unpadded base64url")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise VerificationError(f"{tag}= is not base64url") from exc
    if b64url(data) != text:
        raise VerificationError(f"{tag}= is not canonical base64url")
    if len(data) != octets:
        raise VerificationError(f"{tag}= decodes to {len(data)} bytes, want {octets}")
    return data


def key_id(public_key: bytes) -> str:
    """A short display id for a public key: hex of the first 8 bytes of its SHA-256."""
    return hashlib.sha256(public_key).digest()[:KEY_ID_OCTETS].hex()


def revocation_commitment(secret: bytes) -> bytes:
    """SHA-256 of a revocation secret, the value of ``rc=``."""
    return hashlib.sha256(secret).digest()


def public_bytes(key: Ed25519PrivateKey | Ed25519PublicKey) -> bytes:
    """The raw 32-byte Ed25519 public key."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return public.public_bytes_raw()


def tags_to_text(tags: Iterable[tuple[str, str]]) -> str:
    """Producer form: ``name=value`` joined with ``"; "``."""
    return "; ".join(f"{name}={value}" for name, value in tags)


def split_txt(text: str) -> tuple[str, ...]:
    """Split record text into consecutive character-strings of at most 255 octets."""
    step = TXT_STRING_MAX_OCTETS
    return tuple(text[i : i + step] for i in range(0, len(text), step)) or ("",)


def signing_input(context: bytes, owner: str, tags: Sequence[tuple[str, str]]) -> bytes:
    """``CONTEXT 0x00 owner 0x00 join(";", name=value...)`` for the tags before a signature."""
    body = ";".join(f"{name}={value}" for name, value in tags)
    return b"%s\x00%s\x00%s" % (context, owner.encode("ascii"), body.encode("ascii"))


def parse_tags(text: str) -> Tags:
    """Parse record text into its tag list (spec 3 syntax only).

    Raises:
        VerificationError: (``malformed``) non-printable text, empty or duplicate tags, bad names.
    """
    if not _PRINTABLE.fullmatch(text):
        raise VerificationError("record text is not printable ASCII")
    parts = text.split(";")
    if len(parts) > 1 and not parts[-1].strip(" "):
        parts.pop()
    tags: list[tuple[str, str]] = []
    seen: set[str] = set()
    for part in parts:
        name, equals, value = part.partition("=")
        name, value = name.strip(" "), value.strip(" ")
        if not equals or not name:
            raise VerificationError(f"empty or bad tag {part.strip(' ')!r}")
        if not TAG_NAME.fullmatch(name):
            raise VerificationError(f"bad tag name {name!r}")
        if not TAG_VALUE.fullmatch(value):
            raise VerificationError(f"bad value for tag {name}=")
        if name in seen:
            raise VerificationError(f"duplicate tag {name}=")
        seen.add(name)
        tags.append((name, value))
    return tuple(tags)


def classify(tags: Tags) -> RecordKind:
    """Envelope, revocation or other (an alter1 record this verifier ignores).

    Raises:
        VerificationError: ``malformed`` when the first tag is not ``v``, ``unsupported``
            for another version.
    """
    if not tags or tags[0][0] != "v":
        raise VerificationError("first tag is not v=: not an alter record")
    if tags[0][1] != VERSION:
        raise VerificationError(f"version v={tags[0][1]} is not supported", category="unsupported")
    names = {name for name, _ in tags}
    if "h" not in names:
        return RecordKind.OTHER
    return RecordKind.REVOCATION if "rev" in names else RecordKind.ENVELOPE


def _decimal(value: str, tag: str, *, low: int = 0, high: int | None = None) -> int:
    if not _DECIMAL.fullmatch(value):
        raise VerificationError(f"{tag}= is not a decimal without leading zeros")
    number = int(value)
    if number < low or (high is not None and number > high):
        raise VerificationError(f"{tag}={value} is out of range")
    return number


def _handle_tag(value: str) -> Handle:
    try:
        handle = parse_handle(value)
    except HandleError as exc:
        raise VerificationError(f"h= is not a handle: {exc.what}") from exc
    if handle.ref != value:
        raise VerificationError(f"h={value} is not canonical (want {handle.ref})")
    return handle


@dataclass(frozen=True, slots=True)
class Envelope:
    """A syntactically valid alter1 envelope; ``tags`` are exactly as published."""

    handle: Handle
    epoch: int
    public_key: bytes
    signed_at: int
    expires_at: int | None
    log_size: int
    log_root: bytes
    revocation_commitment: bytes
    resolver: str | None
    psig: bytes | None
    sig: bytes
    tags: Tags
    #: ``to_text()``, made once (a zone renders each envelope several times).
    text: str = field(default="", compare=False, repr=False)

    @property
    def key_id(self) -> str:
        """Short display id of ``public_key``."""
        return key_id(self.public_key)

    def to_text(self) -> str:
        """The producer form of the record text."""
        return self.text or tags_to_text(self.tags)

    def txt_strings(self) -> tuple[str, ...]:
        """The record text split into TXT character-strings."""
        return split_txt(self.to_text())

    def to_mapping(self) -> dict[str, str | int | bool | None]:
        """The envelope's meaning as JSON-ready fields (the text itself is ``to_text()``)."""
        return {
            "handle": self.handle.ref,
            "tier": str(self.handle.tier),
            "epoch": self.epoch,
            "key_id": self.key_id,
            "public_key": b64url(self.public_key),
            "signed_at": self.signed_at,
            "expires_at": self.expires_at,
            "resolver": self.resolver,
            "log_size": self.log_size,
            "log_root": b64url(self.log_root),
            "continuity": self.psig is not None,
        }

    def signed_tags(self, tag: str) -> Tags:
        """The tags that precede signature tag ``tag`` (``sig`` or ``psig``)."""
        index = [name for name, _ in self.tags].index(tag)
        return self.tags[:index]

    @classmethod
    def from_tags(cls, tags: Tags, *, text: str | None = None) -> Envelope:
        """Check an envelope's required tags and values (spec 4). ``text``, the record
        text the tags were parsed from, is kept as ``to_text()`` when it is the producer
        form (one string, not two, for each of a big log's envelopes).

        Raises:
            VerificationError: ``malformed`` or ``unsupported`` (unknown ``k``).
        """
        values = dict(tags)
        missing = [n for n in ("h", "e", "k", "p", "t", "log", "rc", "sig") if n not in values]
        if missing:
            raise VerificationError(f"missing required tag(s): {', '.join(missing)}")
        if tags[-1][0] != "sig":
            raise VerificationError("sig= is not the last tag")
        if "psig" in values and tags[-2][0] != "psig":
            raise VerificationError("psig= does not immediately precede sig=")
        if values["k"] != KEY_TYPE:
            raise VerificationError(
                f"key type k={values['k']} is not supported", category="unsupported"
            )
        handle = _handle_tag(values["h"])
        epoch = _decimal(values["e"], "e", low=1, high=EPOCH_MAX)
        public_key = b64url_decode(values["p"], PUBLIC_KEY_OCTETS, tag="p")
        signed_at = _decimal(values["t"], "t")
        expires_at = None
        if "x" in values:
            expires_at = _decimal(values["x"], "x")
            if expires_at <= signed_at:
                raise VerificationError("x= is not after t=")
        size_text, colon, root_text = values["log"].partition(":")
        if not colon:
            raise VerificationError("log= is not SIZE:ROOT")
        log_size = _decimal(size_text, "log size")
        log_root = b64url_decode(root_text, DIGEST_OCTETS, tag="log root")
        rc = b64url_decode(values["rc"], DIGEST_OCTETS, tag="rc")
        psig = (
            b64url_decode(values["psig"], SIGNATURE_OCTETS, tag="psig")
            if "psig" in values
            else None
        )
        sig = b64url_decode(values["sig"], SIGNATURE_OCTETS, tag="sig")
        return cls(
            handle=handle,
            epoch=epoch,
            public_key=public_key,
            signed_at=signed_at,
            expires_at=expires_at,
            log_size=log_size,
            log_root=log_root,
            revocation_commitment=rc,
            resolver=values.get("r"),
            psig=psig,
            sig=sig,
            tags=tags,
            text=text if text == (made := tags_to_text(tags)) else made,
        )


@dataclass(frozen=True, slots=True)
class Revocation:
    """An alter1 revocation record (spec 5)."""

    handle: Handle
    epoch: int
    secret: bytes

    @property
    def tags(self) -> Tags:
        """The four tags, in the required order."""
        return (
            ("v", VERSION),
            ("h", self.handle.ref),
            ("e", str(self.epoch)),
            ("rev", b64url(self.secret)),
        )

    def to_text(self) -> str:
        """The producer form of the record text."""
        return tags_to_text(self.tags)

    def revokes(self, envelope: Envelope) -> bool:
        """True when this revocation matches ``envelope``'s handle, epoch and ``rc``."""
        return (
            self.handle == envelope.handle
            and self.epoch == envelope.epoch
            and revocation_commitment(self.secret) == envelope.revocation_commitment
        )

    @classmethod
    def from_tags(cls, tags: Tags) -> Revocation:
        """Check a revocation's exact tag list.

        Raises:
            VerificationError: (``malformed``) anything but v, h, e, rev in that order.
        """
        if [name for name, _ in tags] != ["v", "h", "e", "rev"]:
            raise VerificationError("a revocation has exactly the tags v, h, e, rev in order")
        values = dict(tags)
        return cls(
            handle=_handle_tag(values["h"]),
            epoch=_decimal(values["e"], "e", low=1, high=EPOCH_MAX),
            secret=b64url_decode(values["rev"], SECRET_OCTETS, tag="rev"),
        )


Record = Envelope | Revocation | None


def parse_record(text: str) -> Record:
    """Parse one record text: an :class:`Envelope`, a :class:`Revocation`, or None (other).

    Raises:
        VerificationError: ``malformed`` or ``unsupported``.
    """
    tags = parse_tags(text)
    kind = classify(tags)
    if kind is RecordKind.ENVELOPE:
        return Envelope.from_tags(tags, text=text)
    if kind is RecordKind.REVOCATION:
        return Revocation.from_tags(tags)
    return None


def parse_record_or_none(text: str) -> Record:
    """:func:`parse_record`, but None for a malformed or unsupported text too."""
    try:
        return parse_record(text)
    except VerificationError:
        return None


def parse_envelope(text: str) -> Envelope:
    """Parse record text that must be an envelope.

    Raises:
        VerificationError: ``malformed`` (including a revocation or other record),
            ``unsupported``.
    """
    record = parse_record(text)
    if not isinstance(record, Envelope):
        kind = "a revocation" if isinstance(record, Revocation) else "an alter1 record without h="
        raise VerificationError(f"not an envelope: {kind}")
    return record


def parse_revocations(texts: Iterable[str]) -> tuple[Revocation, ...]:
    """Parse the revocation records among ``texts``, ignoring everything else."""
    found: list[Revocation] = []
    for text in texts:
        try:
            record = parse_record(text)
        except VerificationError:
            continue
        if isinstance(record, Revocation):
            found.append(record)
    return tuple(found)


def _verifies(public_key: bytes, signature: bytes, message: bytes) -> bool:
    return ed25519.verify(public_key, signature, message)


def _canonical_owner(owner: str) -> str:
    owner = owner.strip().lower()
    return owner if owner.endswith(".") else owner + "."


def verify_envelope(
    envelope: Envelope,
    *,
    owner: str,
    substrate: str | None,
    now: int,
    pinned: tuple[int, bytes] | None = None,
    revocations: Iterable[Revocation] = (),
) -> Envelope:
    """Run spec section 6 steps 2-6 on a parsed envelope found at ``owner``.

    Raises:
        VerificationError: with the category of the first failing step.
    """
    owner = _canonical_owner(owner)
    where = owner
    try:
        expected_owner = envelope.handle.owner(substrate)
    except HandleError as exc:
        raise VerificationError(exc.what, where=where, category="handle-mismatch") from exc
    if expected_owner != owner:
        raise VerificationError(
            f"h={envelope.handle.ref} belongs at {expected_owner}",
            where=where,
            category="handle-mismatch",
        )
    message = signing_input(CONTEXT_ENVELOPE, owner, envelope.signed_tags("sig"))
    if not _verifies(envelope.public_key, envelope.sig, message):
        raise VerificationError(
            f"sig does not verify with p={b64url(envelope.public_key)[:12]}...",
            where=where,
            category="bad-signature",
        )
    for revocation in revocations:
        if revocation.revokes(envelope):
            raise VerificationError(
                f"epoch {envelope.epoch} of {envelope.handle.ref} is revoked",
                where=where,
                category="revoked",
            )
    if envelope.signed_at - now > CLOCK_SKEW_SECONDS:
        raise VerificationError(
            f"t={envelope.signed_at} is in the future (now {now})",
            where=where,
            category="not-yet-valid",
        )
    if envelope.expires_at is not None and now - envelope.expires_at > CLOCK_SKEW_SECONDS:
        raise VerificationError(
            f"expired at x={envelope.expires_at} (now {now})", where=where, category="expired"
        )
    if pinned is not None:
        _check_pin(envelope, owner, pinned)
    return envelope


def _check_pin(envelope: Envelope, owner: str, pinned: tuple[int, bytes]) -> None:
    pinned_epoch, pinned_key = pinned
    where = owner
    if envelope.epoch < pinned_epoch:
        raise VerificationError(
            f"epoch {envelope.epoch} is older than pinned epoch {pinned_epoch}",
            where=where,
            category="rollback",
        )
    if envelope.epoch == pinned_epoch:
        if envelope.public_key != pinned_key:
            raise VerificationError(
                f"epoch {envelope.epoch} key {envelope.key_id} is not the pinned key "
                f"{key_id(pinned_key)}",
                where=where,
                category="key-mismatch",
            )
        return
    if envelope.epoch > pinned_epoch + 1:
        raise VerificationError(
            f"epoch {envelope.epoch} skips epochs after pinned epoch {pinned_epoch}",
            where=where,
            category="no-continuity",
        )
    if envelope.psig is None:
        raise VerificationError(
            f"epoch {envelope.epoch} has no psig= from pinned epoch {pinned_epoch}",
            where=where,
            category="no-continuity",
        )
    message = signing_input(CONTEXT_CONTINUITY, owner, envelope.signed_tags("psig"))
    if not _verifies(pinned_key, envelope.psig, message):
        raise VerificationError(
            f"psig does not verify with the pinned epoch {pinned_epoch} key",
            where=where,
            category="bad-continuity",
        )


def verify_record(
    text: str,
    *,
    owner: str,
    substrate: str | None,
    now: int,
    pinned: tuple[int, bytes] | None = None,
    revocations: Iterable[str | Revocation] = (),
) -> Envelope:
    """Verify one record text found at ``owner`` (spec section 6, in order).

    Args:
        text: the record text (TXT strings concatenated).
        owner: the owner name it was found at.
        substrate: the substrate zone for bare, bot and instrument handles.
        now: the current Unix time.
        pinned: ``(epoch, public_key_bytes)`` the verifier pinned for this handle.
        revocations: revocation record texts (or parsed revocations) published at ``owner``.

    Returns:
        The verified envelope.

    Raises:
        VerificationError: with the spec category of the first failing step.
    """
    owner = _canonical_owner(owner)
    try:
        envelope = parse_envelope(text)
    except VerificationError as exc:
        raise VerificationError(exc.what, where=owner, category=exc.category) from exc
    parsed = tuple(r for r in revocations if isinstance(r, Revocation))
    parsed += parse_revocations(r for r in revocations if isinstance(r, str))
    return verify_envelope(
        envelope, owner=owner, substrate=substrate, now=now, pinned=pinned, revocations=parsed
    )


def sign_envelope(
    *,
    handle: Handle,
    owner: str,
    epoch: int,
    private_key: Ed25519PrivateKey | SigningKey,
    signed_at: int,
    expires_at: int | None,
    log_size: int,
    log_root: bytes,
    revocation_secret: bytes | None = None,
    extra_tags: Sequence[tuple[str, str]] = (),
    previous_key: Ed25519PrivateKey | None = None,
    commitment: bytes | None = None,
) -> Envelope:
    """Build and sign an envelope in producer order (spec 4).

    ``rc`` is the SHA-256 of ``revocation_secret``, or ``commitment`` as given when the
    secret is kept offline. ``extra_tags`` (``r`` first, if any) follow ``rc``; ``psig``
    is made with ``previous_key`` when given.

    Returns:
        The signed envelope; ``to_text()`` is its record text.

    Raises:
        VerificationError: the inputs make an invalid envelope (bad epoch, x <= t, bad tag).
    """
    if not 1 <= epoch <= EPOCH_MAX:
        raise VerificationError(f"e={epoch} is out of range")
    if expires_at is not None and expires_at <= signed_at:
        raise VerificationError("x= is not after t=")
    public_key = (
        private_key.public if isinstance(private_key, SigningKey) else public_bytes(private_key)
    )
    tags: list[tuple[str, str]] = [
        ("v", VERSION),
        ("h", handle.ref),
        ("e", str(epoch)),
        ("k", KEY_TYPE),
        ("p", b64url(public_key)),
        ("t", str(signed_at)),
    ]
    if expires_at is not None:
        tags.append(("x", str(expires_at)))
    tags.append(("log", f"{log_size}:{b64url(log_root)}"))
    if (revocation_secret is None) == (commitment is None):
        raise ValueError("give exactly one of revocation_secret and commitment")
    if revocation_secret is not None:
        commitment = revocation_commitment(revocation_secret)
    assert commitment is not None  # noqa: S101 (narrowing: checked just above)
    tags.append(("rc", b64url(commitment)))
    tags.extend(extra_tags)
    psig = (
        previous_key.sign(signing_input(CONTEXT_CONTINUITY, owner, tags)) if previous_key else None
    )
    if psig is not None:
        tags.append(("psig", b64url(psig)))
    sig = private_key.sign(signing_input(CONTEXT_ENVELOPE, owner, tags))
    tags.append(("sig", b64url(sig)))
    # Built from the values, not parsed back: the model checked the extra tags, and the
    # loopback proof parses and verifies every published text with the full verifier.
    return Envelope(
        handle=handle,
        epoch=epoch,
        public_key=public_key,
        signed_at=signed_at,
        expires_at=expires_at,
        log_size=log_size,
        log_root=log_root,
        revocation_commitment=commitment,
        resolver=next((value for name, value in extra_tags if name == "r"), None),
        psig=psig,
        sig=sig,
        tags=tuple(tags),
        text=tags_to_text(tags),
    )
