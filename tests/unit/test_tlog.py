"""Signed notes, checkpoints, RFC 9162 proofs, tiles and tlog-proof text (format/)."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from alter_publish.errors import VerificationError
from alter_publish.format.identitylog import EMPTY_ROOT, leaf_hash, merkle_root, node_hash
from alter_publish.format.note import (
    COSIGNATURE_V1_TYPE,
    Note,
    NoteSignature,
    Signer,
    Verifier,
    cosignature_time,
)
from alter_publish.format.tiles import (
    ENTRIES,
    ENTRIES_PER_TILE_PROOF,
    FEW_PROOFS,
    Tile,
    TreeHashes,
    decode_entries,
    encode_index,
    tiles_for_size,
)
from alter_publish.format.tlog import (
    Checkpoint,
    TlogProof,
    consistency_proof,
    inclusion_proof,
    parse_decimal,
    range_hash,
    verify_consistency,
    verify_inclusion,
)
from alter_publish.format.witness import parse_size
from alter_publish.pipeline.transparency import History, Publication

SEED = bytes(range(32))


def _entries(count: int) -> list[bytes]:
    return [f"_alter.h{at}.example.com.\x00v=alter1; n={at}".encode() for at in range(count)]


def _naive_root(entries: list[bytes]) -> bytes:
    if not entries:
        return hashlib.sha256(b"").digest()
    if len(entries) == 1:
        return leaf_hash(entries[0])
    split = 1 << ((len(entries) - 1).bit_length() - 1)
    return node_hash(_naive_root(entries[:split]), _naive_root(entries[split:]))


def test_key_id_and_vkey_round_trip() -> None:
    signer = Signer("example.com/alter-log", SEED)
    vkey = signer.verifier.to_text()
    name, hash_hex, key_b64 = vkey.split("+", 2)
    public = base64.b64decode(key_b64)
    assert name == "example.com/alter-log"
    assert public[0] == 1
    expected = hashlib.sha256(name.encode() + b"\n\x01" + public[1:]).digest()[:4]
    assert hash_hex == expected.hex()
    assert Verifier.parse(vkey) == signer.verifier
    assert Signer.parse(signer.to_text()) == signer


def test_vkey_with_wrong_hash_is_malformed() -> None:
    vkey = Signer("log", SEED).verifier.to_text()
    name, _, key = vkey.split("+", 2)
    with pytest.raises(VerificationError) as caught:
        Verifier.parse(f"{name}+00000000+{key}")
    assert caught.value.category == "malformed"


def test_note_sign_parse_verify() -> None:
    signer = Signer("example.com/alter-log", SEED)
    note = Note("example.com/alter-log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n")
    signed = note.signed_by(signer)
    text = signed.to_text()
    assert text.count("\n\n") == 1
    assert "\n\u2014 example.com/alter-log " in text
    parsed = Note.parse(text)
    assert parsed == signed
    parsed.verify(signer.verifier)
    other = Signer("example.com/alter-log", bytes(32))
    with pytest.raises(VerificationError) as caught:
        parsed.verify(other.verifier)
    assert caught.value.category == "bad-signature"
    tampered = Note.parse(text.replace("\n0\n", "\n1\n"))
    with pytest.raises(VerificationError) as caught:
        tampered.verify(signer.verifier)
    assert caught.value.category == "bad-signature"


def test_two_signature_lines_by_one_key_are_malformed() -> None:
    """C2SP signed-note: one key, one line. A repeated line (identical, or another
    signature under the same name and key ID, as a first bad one before a good one)
    is refused rather than one of them silently chosen."""
    signer = Signer("example.com/alter-log", SEED)
    signed = Note(Checkpoint("example.com/alter-log", 0, bytes(32)).to_text()).signed_by(signer)
    line = signed.signatures[0]
    forged = NoteSignature(line.name, line.key_id, bytes(64))
    for lines in ((line, line), (forged, line)):
        with pytest.raises(VerificationError, match="two signature lines") as caught:
            Note.parse(Note(signed.text, lines).to_text())
        assert caught.value.category == "malformed"
    other = Signer("example.com/alter-log", bytes(32))
    both = Note.parse(signed.signed_by(other).to_text())
    both.verify(signer.verifier)
    both.verify(other.verifier)


def test_cosignature_verifies_and_carries_time() -> None:
    log = Signer("example.com/alter-log", SEED)
    witness = Signer("witness.example/w1", bytes(range(1, 33)), COSIGNATURE_V1_TYPE)
    note = Note(Checkpoint("example.com/alter-log", 3, bytes(32)).to_text()).signed_by(log)
    cosigned = Note.parse(note.cosigned_by(witness, 1767225600).to_text())
    found = cosigned.verify(witness.verifier)
    assert cosignature_time(found) == 1767225600
    assert witness.verifier.key_id != Verifier(witness.name, witness.key.public).key_id
    cosigned.verify(log.verifier)


def test_checkpoint_round_trip_and_rejects() -> None:
    checkpoint = Checkpoint("example.com/alter-log", 12, bytes(range(32)), ("ext line",))
    assert Checkpoint.parse(checkpoint.to_text()) == checkpoint
    for bad in ("o\n01\nAAAA\n", "o\n1\n", "o\n1\nAAAA\n", "o\n-1\n" + "A" * 43 + "=\n"):
        with pytest.raises(VerificationError):
            Checkpoint.parse(bad)


@pytest.mark.parametrize("count", [1, 2, 3, 7, 8, 255, 256, 257, 511, 513, 1000])
def test_tree_hashes_root_matches_rfc9162(count: int) -> None:
    entries = _entries(count)
    tree = TreeHashes.of_entries(entries)
    assert tree.root() == merkle_root(entries) == _naive_root(entries)
    for size in {1, count // 2 or 1, count}:
        assert tree.root(size) == _naive_root(entries[:size])


@pytest.mark.parametrize("count", [1, 2, 5, 8, 9, 300, 600])
def test_every_inclusion_proof_verifies(count: int) -> None:
    entries = _entries(count)
    tree = TreeHashes.of_entries(entries)
    for size in range(1, count + 1, max(1, count // 13)):
        root = tree.root(size)
        for index in range(0, size, max(1, size // 7)):
            proof = inclusion_proof(tree.subtree, index, size)
            verify_inclusion(leaf_hash(entries[index]), index, size, proof, root)
            with pytest.raises(VerificationError):
                verify_inclusion(leaf_hash(b"other"), index, size, proof, root)


@pytest.mark.parametrize("count", [2, 8, 9, 300, 600])
def test_every_consistency_proof_verifies(count: int) -> None:
    tree = TreeHashes.of_entries(_entries(count))
    sizes = sorted({1, 2, count // 3 or 1, count // 2, count - 1, count} - {0})
    for old in sizes:
        for new in sizes:
            if old > new:
                continue
            proof = consistency_proof(tree.subtree, old, new)
            verify_consistency(old, new, tree.root(old), tree.root(new), proof)
            if old != new:
                with pytest.raises(VerificationError) as caught:
                    verify_consistency(old, new, tree.root(old), bytes(32), proof)
                assert caught.value.category == "fork"


def test_consistency_categories() -> None:
    with pytest.raises(VerificationError) as caught:
        verify_consistency(5, 4, bytes(32), bytes(32), [])
    assert caught.value.category == "rollback"
    with pytest.raises(VerificationError) as caught:
        verify_consistency(4, 4, bytes(32), b"\x01" * 32, [])
    assert caught.value.category == "equivocation"
    verify_consistency(0, 4, EMPTY_ROOT, bytes(32), [])
    for new in (0, 4):  # a tree of size 0 has one root: SHA-256 of the empty string
        with pytest.raises(VerificationError, match="empty tree") as caught:
            verify_consistency(0, new, bytes(32), bytes(32), [])
        assert caught.value.category == "fork"


def test_tile_paths() -> None:
    assert encode_index(1234067) == "x001/x234/067"
    assert encode_index(5) == "005"
    assert Tile(0, 1234067).path == "tile/0/x001/x234/067"
    assert Tile(2, 3, 17).path == "tile/2/003.p/17"
    assert Tile(ENTRIES, 0, 5).path == "tile/entries/000.p/5"
    for tile in (Tile(0, 1234067), Tile(2, 3, 17), Tile(ENTRIES, 1000, 1)):
        assert Tile.parse(tile.path) == tile
    for bad in ("tile/0/12", "tile/0/005.p/0", "tile/0/005.p/256", "tile/64x/001", "tile/0/5"):
        with pytest.raises(ValueError, match="not a tile"):
            Tile.parse(bad)


def test_tiles_for_size_as_the_spec_counts() -> None:
    tiles = tiles_for_size(70_000)
    level0 = [tile for tile in tiles if tile.level == 0]
    assert sum(tile.width == 256 for tile in level0) == 273
    assert [tile.width for tile in level0 if tile.width != 256] == [112]
    assert [(t.level, t.width) for t in tiles if t.level > 0] == [(1, 256), (1, 17), (2, 1)]
    assert [(t.level, t.width) for t in tiles_for_size(256)] == [(0, 256), (1, 1)]


def test_resumed_tree_writes_the_same_tiles() -> None:
    entries = _entries(700)
    whole = TreeHashes.of_entries(entries)
    stored = {tile.path: data for tile, data in TreeHashes.of_entries(entries[:300]).changed()}
    resumed = TreeHashes(300, lambda tile: stored[tile.path])
    resumed.extend(entries[300:])
    assert resumed.root() == whole.root()
    every = dict(whole.changed())
    for tile, data in resumed.changed():
        assert every[tile] == data
    assert {t.path for t, _ in resumed.changed()} >= {"tile/0/001", "tile/0/002.p/188"}
    bundle = every[Tile(ENTRIES, 2, 188)]
    assert decode_entries(bundle) == entries[512:]


def test_resume_from_a_short_tile_fails() -> None:
    stored = {tile.path: data for tile, data in TreeHashes.of_entries(_entries(10)).changed()}
    stored["tile/0/000.p/10"] = stored["tile/0/000.p/10"][:-1]
    resumed = TreeHashes(10, lambda tile: stored[tile.path])
    with pytest.raises(ValueError, match="cut short"):
        resumed.append(b"x")


def test_tlog_proof_round_trip() -> None:
    entries = _entries(9)
    tree = TreeHashes.of_entries(entries)
    signer = Signer("example.com/alter-log", SEED)
    note = Note(Checkpoint("example.com/alter-log", 9, tree.root()).to_text()).signed_by(signer)
    proof = TlogProof(4, tuple(inclusion_proof(tree.subtree, 4, 9)), note.to_text())
    text = proof.to_text()
    assert text.startswith("c2sp.org/tlog-proof@v1\nindex 4\n")
    assert TlogProof.parse(text) == proof
    with_extra = TlogProof(4, proof.hashes, note.to_text(), b"hi")
    assert TlogProof.parse(with_extra.to_text()) == with_extra
    checkpoint = Checkpoint.parse(TlogProof.parse(text).note().text)
    verify_inclusion(leaf_hash(entries[4]), 4, checkpoint.size, proof.hashes, checkpoint.root)


@given(st.lists(st.binary(max_size=40), min_size=1, max_size=40), st.data())
def test_proofs_property(entries: list[bytes], data: st.DataObject) -> None:
    tree = TreeHashes.of_entries(entries)
    size = data.draw(st.integers(1, len(entries)))
    index = data.draw(st.integers(0, size - 1))
    old = data.draw(st.integers(1, size))
    assert range_hash(tree.subtree, 0, size) == _naive_root(entries[:size])
    proof = inclusion_proof(tree.subtree, index, size)
    verify_inclusion(leaf_hash(entries[index]), index, size, proof, tree.root(size))
    consistency = consistency_proof(tree.subtree, old, size)
    verify_consistency(old, size, tree.root(old), tree.root(size), consistency)


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8, 13, 256, 257, 600])
def test_fast_inclusion_proof_is_rfc9162_path(count: int) -> None:
    tree = TreeHashes.of_entries(_entries(count))
    for size in range(1, count + 1, max(1, count // 17)):
        for index in range(0, size, max(1, size // 11)):
            assert tree.inclusion_proof(index, size) == inclusion_proof(tree.subtree, index, size)


def test_proof_for_matches_tlog_proof_text(tmp_path: Path) -> None:
    entries = _entries(40)
    tree = TreeHashes.of_entries(entries)
    signer = Signer("example.com/alter-log", SEED)
    note = Note(Checkpoint("example.com/alter-log", 40, tree.root()).to_text()).signed_by(signer)
    history = History(tmp_path / "h", b"", (), ())
    publication = Publication(tmp_path, tree, history, note.to_text())
    text = publication.proof_for(7, entries[7])
    expected = TlogProof(7, tuple(inclusion_proof(tree.subtree, 7, 40)), note.to_text())
    assert text == expected.to_text()
    assert publication.proof_for(7, entries[8]) is None


@pytest.mark.parametrize(
    "size", ["9" * 5000, str(2**64), "18446744073709551616", "007", "1e3", "\u0661"]
)
def test_a_size_that_is_not_a_uint64_is_malformed_not_a_crash(size: str) -> None:
    # 5,000 digits made int() raise ValueError past the checks: exit 70 in `log verify`,
    # a dead handler thread in the witness.
    body = f"example.com/alter-log\n{size}\n{base64.b64encode(bytes(32)).decode()}\n"
    with pytest.raises(VerificationError) as caught:
        Checkpoint.parse(body)
    assert caught.value.category == "malformed"
    with pytest.raises(VerificationError):
        parse_size(size, "add-checkpoint")


def test_the_largest_uint64_size_parses() -> None:
    assert parse_decimal(str(2**64 - 1), "checkpoint") == 2**64 - 1


@pytest.mark.parametrize("count", [1, 9, 300, 600])
def test_tree_inclusion_proofs_match_the_reference_before_and_after_the_switch(
    count: int,
) -> None:
    """The first FEW_PROOFS come from the tiles, the rest from every level: the same."""
    tree = TreeHashes.of_entries(_entries(count))
    pairs = [(index, size) for size in range(1, count + 1) for index in range(0, size, 37)]
    pairs = (pairs * (FEW_PROOFS // len(pairs) + 2))[: FEW_PROOFS + 40]
    for index, size in pairs:
        assert tree.inclusion_proof(index, size) == inclusion_proof(tree.subtree, index, size)


def test_a_days_renewals_take_their_paths_from_the_tiles() -> None:
    """Proofs of the newest entries (a day's renewals) up to one per ENTRIES_PER_TILE_PROOF
    entries of the tree come from the tiles (their paths are shared), the rest from every
    level: the same hashes as the reference either way."""
    count = 4096
    tree = TreeHashes.of_entries(_entries(count))
    few = count // ENTRIES_PER_TILE_PROOF
    assert few > FEW_PROOFS
    for index in range(count - few, count):
        assert tree.inclusion_proof(index, count) == inclusion_proof(tree.subtree, index, count)
    assert tree._levels is None
    for index in range(0, count, 7):
        assert tree.inclusion_proof(index, count) == inclusion_proof(tree.subtree, index, count)
    assert tree._levels is not None
