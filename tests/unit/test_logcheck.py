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
from alter_publish.format.note import Note, Signer
from alter_publish.format.tiles import TreeHashes
from alter_publish.format.tlog import Checkpoint
from alter_publish.verify.logaudit import consistency
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


# --- a mirror's bad tile is the tiles' fault, not the log's -----------------------------

SIZE = 600  # level 0: tiles 000, 001 full, 002.p/88; level 1: 000.p/2
INDEX = 10


def _mirrored_log(directory: Path, epoch_text: str = "") -> tuple[str, Envelope, Checkpoint]:
    """A log of SIZE entries whose entry INDEX is an envelope of ``~blake``, its tiles in
    ``directory``."""
    filler = [f"_alter.h{at}.example.com.\x00v=alter1; n={at}".encode() for at in range(SIZE)]
    prefix = TreeHashes.of_entries(filler[:INDEX]).root()
    owner, envelope = _envelope("blake", INDEX, prefix)
    entries = [*filler[:INDEX], _entry(owner, envelope), *filler[INDEX + 1 :]]
    return owner, envelope, _publish(directory, entries)


def _flip(path: Path, at: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 1
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("tile", "change", "where"),
    [
        # A hash beside the envelope's leaf (its proof's first hash), in a full tile.
        ("tile/0/000", "flip-sibling", "tile/0/000"),
        # The envelope's own leaf hash.
        ("tile/0/000", "flip-leaf", "tile/0/000"),
        # The right edge: the root's own hashes (both edge tiles are named); the hash
        # flipped is the proof's (the second half of the first 512 entries).
        ("tile/1/000.p/2", "flip", "tile/0/002.p/88, tile/1/000.p/2"),
        ("tile/0/000", "truncate", "tile/0/000"),
        ("tile/0/000", "extend", "tile/0/000"),
        ("tile/0/000", "link", "tile/0/000"),
    ],
)
def test_a_bad_mirror_tile_is_a_bad_tile(
    tmp_path: Path, tile: str, change: str, where: str
) -> None:
    """It was the log's ``not-included`` (or ``dropped-entry``): the tiles are checked
    against the signed root when a proof fails, and the one at fault is named."""
    owner, envelope, checkpoint = _mirrored_log(tmp_path)
    path = tmp_path / tile
    if change == "flip-sibling":
        _flip(path, (INDEX + 1) * 32)
    elif change == "flip-leaf":
        _flip(path, INDEX * 32)
    elif change == "flip":
        _flip(path, 32)
    elif change == "truncate":
        path.write_bytes(path.read_bytes()[:-1])
    elif change == "extend":
        path.write_bytes(path.read_bytes() + b"\x00")
    else:
        path.unlink()
        path.symlink_to("/dev/zero")
    with pytest.raises(VerificationError) as caught:
        check_envelope_in_log(envelope, owner, checkpoint, tmp_path, "cp")
    assert caught.value.category == "bad-tile", caught.value
    assert where in str(caught.value)


def test_with_good_tiles_a_missing_envelope_is_still_not_included(tmp_path: Path) -> None:
    owner, _, checkpoint = _mirrored_log(tmp_path)
    _, other = _envelope("blake", INDEX, bytes(32))
    with pytest.raises(VerificationError) as caught:
        check_envelope_in_log(other, owner, checkpoint, tmp_path, "cp")
    assert caught.value.category == "not-included"
    (tmp_path / "tile/0/001").unlink()  # a tile the proof does not need
    with pytest.raises(VerificationError) as caught:
        check_envelope_in_log(other, owner, checkpoint, tmp_path, "cp")
    assert caught.value.category == "not-included"
    (tmp_path / "tile/0/000").unlink()
    with pytest.raises(VerificationError) as caught:
        check_envelope_in_log(other, owner, checkpoint, tmp_path, "cp")
    assert caught.value.category == "dropped-entry"


def test_log_consistency_blames_a_bad_tile_not_a_fork(tmp_path: Path) -> None:
    """``log consistency OLD NEW --tiles MIRROR``: a bad tile was the log's ``fork``."""
    signer = Signer(ORIGIN, bytes(range(32)))
    _, _, checkpoint = _mirrored_log(tmp_path / "log")
    entries = [f"_alter.h{at}.example.com.\x00v=alter1; n={at}".encode() for at in range(SIZE)]
    honest = TreeHashes.of_entries(entries[:INDEX])
    old = Checkpoint(ORIGIN, INDEX, honest.root())
    (tmp_path / "old").write_text(Note(old.to_text()).signed_by(signer).to_text())
    new = Note(checkpoint.to_text()).signed_by(signer).to_text()
    (tmp_path / "new").write_text(new)
    args = (tmp_path / "old", tmp_path / "new", signer.verifier)
    assert consistency(*args, tmp_path / "log") == SIZE - INDEX
    _flip(tmp_path / "log/tile/0/000", 9 * 32)  # the old tree's last leaf
    with pytest.raises(VerificationError) as caught:
        consistency(*args, tmp_path / "log")
    assert caught.value.category == "bad-tile"
    assert str(caught.value).startswith(str(tmp_path / "log/tile/0/000"))
