"""A verifier's pin store: (handle, epoch, key) kept on first use (spec 6 step 6).

The first successful resolution of a handle pins its epoch and public key. Later
resolutions are checked against the pin: a lower epoch is ``rollback``, the same
epoch with another key ``key-mismatch``, the next epoch needs ``psig`` by the
pinned key (``no-continuity``/``bad-continuity``), and a gap is ``no-continuity``.
An accepted rotation moves the pin forward. The file is JSON, written atomically::

    {"format": "alter-publish/pins/1",
     "pins": {"_alter.blake.example.com.": {"handle": "~blake", "epoch": 2,
              "p": "<base64url key>", "first_seen": 1767225600, "updated": 1767312000}},
     "checkpoints": {"example.com/alter-log": {"size": 12, "root": "<base64>"}}}

``checkpoints`` (written once ``resolve --log`` has seen one) keeps the latest signed
checkpoint of each zone's transparency log (:mod:`alter_publish.verify.logcheck`).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from alter_publish.errors import AlterError, UsageError
from alter_publish.fileio import atomic_write_bytes
from alter_publish.format.envelope import Envelope, b64url, b64url_decode
from alter_publish.format.tlog import Checkpoint

PINS_FORMAT = "alter-publish/pins/1"
_PUBLIC_KEY_OCTETS = 32


@dataclass(frozen=True, slots=True)
class Pin:
    """One pinned handle."""

    handle: str
    epoch: int
    public_key: bytes
    first_seen: int
    updated: int

    def to_mapping(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "handle": self.handle,
            "epoch": self.epoch,
            "p": b64url(self.public_key),
            "first_seen": self.first_seen,
            "updated": self.updated,
        }


@dataclass(frozen=True, slots=True)
class PinStore:
    """The pins of one file, keyed by owner name."""

    path: Path
    pins: dict[str, Pin] = field(default_factory=dict)
    #: The latest checkpoint seen per log origin.
    checkpoints: dict[str, Checkpoint] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> PinStore:
        """Read a pin store; a missing file is an empty store.

        Raises:
            UsageError: the file is unreadable or not a pin store.
        """
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls(path)
        except (OSError, ValueError) as exc:
            raise UsageError(f"not a pin store ({exc})", where=str(path)) from exc
        if not isinstance(doc, dict) or doc.get("format") != PINS_FORMAT:
            raise UsageError(f"not a pin store ({PINS_FORMAT})", where=str(path))
        found = doc.get("pins") or {}
        if not isinstance(found, dict):
            raise UsageError("'pins' must be an object", where=str(path))
        pins: dict[str, Pin] = {}
        for owner, item in found.items():
            try:
                pins[str(owner)] = Pin(
                    handle=str(item["handle"]),
                    epoch=int(item["epoch"]),
                    public_key=b64url_decode(str(item["p"]), _PUBLIC_KEY_OCTETS, tag="p"),
                    first_seen=int(item["first_seen"]),
                    updated=int(item["updated"]),
                )
            except (KeyError, TypeError, ValueError, OverflowError, AlterError) as exc:
                raise UsageError(f"bad pin for {owner}", where=str(path)) from exc
        checkpoints: dict[str, Checkpoint] = {}
        for origin, item in (doc.get("checkpoints") or {}).items():
            try:
                root = base64.b64decode(str(item["root"]), validate=True)
                checkpoints[str(origin)] = Checkpoint(str(origin), int(item["size"]), root)
            except (KeyError, TypeError, ValueError, binascii.Error) as exc:
                raise UsageError(f"bad checkpoint for {origin}", where=str(path)) from exc
        return cls(path, pins, checkpoints)

    def pinned(self, owner: str) -> tuple[int, bytes] | None:
        """``(epoch, public key)`` pinned for ``owner``, or None."""
        pin = self.pins.get(owner)
        return None if pin is None else (pin.epoch, pin.public_key)

    def accept(self, owner: str, envelope: Envelope, now: int) -> str:
        """Pin (or move the pin to) an envelope that verified against the current pin.

        Returns:
            What happened: ``pinned``, ``unchanged`` or ``advanced``.
        """
        pin = self.pins.get(owner)
        if pin is not None and (pin.epoch, pin.public_key) == (envelope.epoch, envelope.public_key):
            return "unchanged"
        first_seen = now if pin is None else pin.first_seen
        self.pins[owner] = Pin(
            envelope.handle.ref, envelope.epoch, envelope.public_key, first_seen, now
        )
        return "pinned" if pin is None else "advanced"

    def write(self) -> None:
        """Save the store atomically.

        Raises:
            RenderError: the file cannot be written.
        """
        doc = {
            "format": PINS_FORMAT,
            "pins": {owner: pin.to_mapping() for owner, pin in sorted(self.pins.items())},
        }
        if self.checkpoints:
            doc["checkpoints"] = {
                origin: {"size": item.size, "root": base64.b64encode(item.root).decode()}
                for origin, item in sorted(self.checkpoints.items())
            }
        atomic_write_bytes(self.path, (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode())
