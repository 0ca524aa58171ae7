"""Names in wire form for the wire engine: owners checked into the zone, labels, order.

Every name is kept as its lower-cased uncompressed wire, e.g.
``b"\\x05blake\\x07example\\x03com\\x00"``.
"""

from __future__ import annotations

from typing import Final

import dns.name

from alter_publish.dns.wire import LABEL_MAX_OCTETS, NAME_MAX_OCTETS
from alter_publish.errors import UnsupportedZoneError

__all__ = [
    "canonical_key",
    "hash_label_value",
    "is_in_zone",
    "label_starts",
    "name_text",
    "origin_to_wire",
    "owner_to_wire",
]

_ROOT: Final = b"\x00"
#: The length octet of each possible label, indexed by length.
_LENGTH_OCTETS: Final = tuple(bytes((length,)) for length in range(LABEL_MAX_OCTETS + 1))
#: NSEC3 hashes are SHA-1 digests: 32 base32hex digits in an owner label.
_NSEC3_LABEL_OCTETS: Final = 32
_BASE32: Final = 32


def origin_to_wire(origin: tuple[bytes, ...]) -> tuple[bytes, str]:
    """The origin's lower-cased wire and its text (for messages).

    Raises:
        UnsupportedZoneError: the origin is not a valid absolute name.
    """
    try:
        text = dns.name.Name(origin).to_text()
    except Exception as exc:
        raise UnsupportedZoneError(f"bad origin {origin!r}: {exc}", where="zone") from exc
    if not origin or origin[-1] != b"":
        raise UnsupportedZoneError("origin must end with the root label", where=text)
    return b"".join(bytes((len(label),)) + label.lower() for label in origin), text


def owner_to_wire(
    owner: tuple[bytes, ...], origin: tuple[bytes, ...], origin_wire: bytes, where: str
) -> bytes:
    """The lower-cased wire of an owner name in the zone (``origin``: lower-cased labels).

    Raises:
        UnsupportedZoneError: bad labels, a wildcard, or a name outside the zone.
    """
    cut = len(owner) - len(origin)
    if cut < 0 or (
        owner[cut:] != origin and tuple(label.lower() for label in owner[cut:]) != origin
    ):
        raise UnsupportedZoneError(f"owner {owner!r} is outside the zone", where=where)
    prefix = owner[:cut]
    if b"" in prefix:
        raise UnsupportedZoneError(f"empty label in owner {owner!r}", where=where)
    try:
        parts = [part for label in prefix for part in (_LENGTH_OCTETS[len(label)], label)]
    except IndexError:
        raise UnsupportedZoneError(f"label too long in owner {owner!r}", where=where) from None
    parts.append(origin_wire)
    wire = b"".join(parts)
    if len(wire) > NAME_MAX_OCTETS:
        raise UnsupportedZoneError(f"owner {owner!r} is too long", where=where)
    if prefix[:1] == (b"*",):
        raise UnsupportedZoneError(
            "wildcards are not served by the wire engine", where=name_text(wire.lower())
        )
    return wire if wire.islower() else wire.lower()


def hash_label_value(wire: bytes, where: str) -> int:
    """The integer a hashed owner's base32hex label spells (see ``WireZone._hash``).

    Raises:
        UnsupportedZoneError: the label is not 32 base32hex digits.
    """
    label = wire[1 : 1 + wire[0]]
    try:
        if len(label) != _NSEC3_LABEL_OCTETS or not label.isalnum():
            raise ValueError(label)
        return int(label, _BASE32)
    except ValueError:
        raise UnsupportedZoneError(
            "NSEC3 owner label is not a base32hex SHA-1 hash", where=name_text(wire)
        ) from None


def label_starts(name: bytes) -> list[int]:
    """The offset of each (non-root) label of a name wire."""
    starts, pos = [], 0
    while name[pos]:
        starts.append(pos)
        pos += name[pos] + 1
    return starts


def is_in_zone(name: bytes, starts: list[int], origin: bytes) -> bool:
    """Whether ``name`` (a lower-cased wire, its labels at ``starts``) is ``origin`` or below it."""
    cut = len(name) - len(origin)
    return name.endswith(origin) and (cut == 0 or cut in starts or origin == _ROOT)


def canonical_key(name: bytes) -> tuple[bytes, ...]:
    """Sort key of a lower-cased name wire in canonical order (RFC 4034 6.1)."""
    labels = []
    pos = 0
    length = name[0]
    while length:
        labels.append(name[pos + 1 : pos + 1 + length])
        pos += length + 1
        length = name[pos]
    labels.reverse()
    return tuple(labels)


def name_text(wire: bytes) -> str:
    """A lower-cased name wire as text, for messages."""
    labels = [wire[pos + 1 : pos + 1 + wire[pos]] for pos in label_starts(wire)]
    return dns.name.Name([*labels, b""]).to_text()
