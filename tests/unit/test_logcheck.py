"""``resolve --log``'s check of one envelope against a signed log whose tiles come from
an untrusted mirror (verify/logcheck.py), on files: no DNS."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.errors import VerificationError
from alter_publish.fileio import atomic_write_bytes
from alter_publish.format.envelope import Envelope, sign_envelope
from alter_publish.format.handles import parse_handle
from alter_publish.format.identitylog import EMPTY_ROOT
from alter_publish.format.tiles import TreeHashes
from alter_publish.format.tlog import Checkpoint
from alter_publish.verify.logcheck import check_envelope_in_log

NOW = 1_767_225_600
ZONE = "example.com"
ORIGIN = f"{ZONE}/alter-log"


def _envelope(name: str, log_size: int, log_root: bytes) -> tuple[str, Envelope]:
    handle = parse_handle(f"~{name}")
    owner = handle.owner(ZONE)
    envelope = sign_envelope(
        handle=handle,
        owner=owner,
        epoch=1,
        private_key=Ed25519PrivateKey.from_private_bytes(bytes(32)),
        signed_at=NOW,
        expires_at=None,
        log_size=log_size,
        log_root=log_root,
        revocation_secret=bytes(range(32)),
    )
    return owner, envelope


def _entry(owner: str, envelope: Envelope) -> bytes:
    return owner.encode() + b"\x00" + envelope.to_text().encode()


def _publish(directory: Path, entries: list[bytes]) -> Checkpoint:
    tree = TreeHashes.of_entries(entries)
    for tile, data in tree.changed():
        atomic_write_bytes(directory / tile.path, data)
    return Checkpoint(ORIGIN, tree.size, tree.root())


def test_an_entry_0_whose_log_root_is_not_the_empty_root_is_a_fork(tmp_path: Path) -> None:
    """``log=0:ROOT`` names the empty tree: ROOT must be SHA-256 of the empty string,
    even when the log (signed by its owner) holds the envelope as its first entry."""
    owner, honest = _envelope("blake", 0, EMPTY_ROOT)
    checkpoint = _publish(tmp_path / "honest", [_entry(owner, honest)])
    check_envelope_in_log(honest, owner, checkpoint, tmp_path / "honest", "cp")
    owner, bogus = _envelope("blake", 0, bytes(32))
    checkpoint = _publish(tmp_path / "bogus", [_entry(owner, bogus)])
    with pytest.raises(VerificationError) as caught:
        check_envelope_in_log(bogus, owner, checkpoint, tmp_path / "bogus", "cp")
    assert caught.value.category == "fork"
    assert "log=0:<root>" in str(caught.value)
