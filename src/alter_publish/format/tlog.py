"""Checkpoints (c2sp.org/tlog-checkpoint), RFC 9162 inclusion and consistency proofs,
and the proof text of c2sp.org/tlog-proof, on no I/O.

Proofs are made from a function giving the hash of any perfect, aligned subtree
(``subtree(height, index)``: the root over leaves ``index * 2**height`` to
``(index + 1) * 2**height``), which a tree in memory or a tile directory answers
(:mod:`alter_publish.format.tiles`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from alter_publish.errors import VerificationError
from alter_publish.format.identitylog import EMPTY_ROOT, node_hash
from alter_publish.format.note import Note

HASH_OCTETS = 32
PROOF_HEADER = "c2sp.org/tlog-proof@v1"

#: ``subtree(height, index)``: the hash of a perfect subtree (see the module docstring).
Subtree = Callable[[int, int], bytes]


def _malformed(what: str, where: str) -> VerificationError:
    return VerificationError(what, where=where, category="malformed")


def _b64hash(text: str, where: str) -> bytes:
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise _malformed("not a standard base64 hash", where) from exc
    if len(raw) != HASH_OCTETS:
        raise _malformed("not a 32-octet hash", where)
    return raw


#: Tree sizes and indexes are unsigned 64-bit numbers (C2SP tlog-checkpoint).
UINT64_MAX = 2**64 - 1


def parse_decimal(text: str, where: str) -> int:
    """An unsigned 64-bit number in decimal with no leading zero (a size or an index).

    Raises:
        VerificationError: ``malformed`` (the text is quoted only in part).
    """
    if (
        not text.isascii()
        or not text.isdigit()
        or (text.startswith("0") and text != "0")
        or len(text) > len(str(UINT64_MAX))
        or int(text) > UINT64_MAX
    ):
        raise _malformed(f"not an unsigned 64-bit decimal number: {text[:40]!r}", where)
    return int(text)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A checkpoint body: origin, tree size, root hash, extension lines."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def to_text(self) -> str:
        """The body, every line ended by a newline."""
        root = base64.b64encode(self.root).decode()
        lines = (self.origin, str(self.size), root, *self.extensions)
        return "".join(f"{line}\n" for line in lines)

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        """A checkpoint body (a signed note's text).

        Raises:
            VerificationError: ``malformed``.
        """
        where = "checkpoint"
        if not text.endswith("\n"):
            raise _malformed("does not end in a newline", where)
        lines = text[:-1].split("\n")
        if len(lines) < 3 or not all(lines):
            raise _malformed("not 'origin', 'size', 'root' lines", where)
        return cls(
            lines[0], parse_decimal(lines[1], where), _b64hash(lines[2], where), tuple(lines[3:])
        )


def _largest_power_below(n: int) -> int:
    """The largest power of two smaller than ``n`` (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


def range_hash(
    subtree: Subtree, start: int, end: int, cache: dict[tuple[int, int], bytes] | None = None
) -> bytes:
    """MTH(D[start:end]) for a range that starts on a boundary of its own size's
    power of two (every range a proof uses); ``cache`` keeps the ranges that are not
    perfect subtrees (proofs into one tree share them)."""
    size = end - start
    if size == 0:
        return EMPTY_ROOT
    if size & (size - 1) == 0:
        height = size.bit_length() - 1
        return subtree(height, start >> height)
    found = None if cache is None else cache.get((start, end))
    if found is None:
        split = _largest_power_below(size)
        found = node_hash(
            range_hash(subtree, start, start + split, cache),
            range_hash(subtree, start + split, end, cache),
        )
        if cache is not None:
            cache[(start, end)] = found
    return found


def inclusion_proof(
    subtree: Subtree, index: int, size: int, cache: dict[tuple[int, int], bytes] | None = None
) -> list[bytes]:
    """RFC 9162 PATH(index, D[0:size]): sibling hashes from the leaf up.

    Raises:
        ValueError: ``index`` is not below ``size``.
    """
    if not 0 <= index < size:
        raise ValueError("index outside the tree")
    proof: list[bytes] = []
    start, end = 0, size
    while end - start > 1:
        split = _largest_power_below(end - start)
        if index < start + split:
            proof.append(range_hash(subtree, start + split, end, cache))
            end = start + split
        else:
            proof.append(range_hash(subtree, start, start + split, cache))
            start += split
    proof.reverse()
    return proof


def consistency_proof(subtree: Subtree, old: int, new: int) -> list[bytes]:
    """RFC 9162 PROOF(old, D[0:new]).

    Raises:
        ValueError: not 0 < old <= new.
    """
    if not 0 < old <= new:
        raise ValueError("not 0 < old <= new")
    proof: list[bytes] = []
    start, end, complete = 0, new, True
    while True:
        if old - start == end - start:
            if not complete:
                proof.append(range_hash(subtree, start, end))
            break
        split = _largest_power_below(end - start)
        if old - start <= split:
            proof.append(range_hash(subtree, start + split, end))
            end = start + split
        else:
            proof.append(range_hash(subtree, start, start + split))
            start += split
            complete = False
    proof.reverse()
    return proof


def root_from_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes]) -> bytes:
    """The root an inclusion proof leads to (RFC 9162 2.1.3.2).

    Raises:
        VerificationError: ``malformed``: the proof has the wrong length for the tree.
    """
    if not 0 <= index < size:
        raise _malformed(f"index {index} outside a tree of {size}", "inclusion proof")
    fn, sn, digest = index, size - 1, leaf
    for sibling in proof:
        if sn == 0:
            raise _malformed("proof too long", "inclusion proof")
        if fn & 1 or fn == sn:
            digest = node_hash(sibling, digest)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            digest = node_hash(digest, sibling)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise _malformed("proof too short", "inclusion proof")
    return digest


def verify_inclusion(
    leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> None:
    """Check that ``leaf`` is at ``index`` in the tree of ``size`` and ``root``.

    Raises:
        VerificationError: ``tampered-entry``: the proof leads to another root;
            ``malformed``: it has the wrong length.
    """
    if root_from_inclusion(leaf, index, size, proof) != root:
        raise VerificationError(
            f"entry {index} is not in the tree of size {size} with that root",
            where="inclusion proof",
            category="tampered-entry",
        )


def verify_consistency(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """Check that the tree ``new``/``new_root`` extends ``old``/``old_root`` (RFC 9162
    2.1.4.2; a tree of size 0 has the empty tree's root, SHA-256 of nothing).

    Raises:
        VerificationError: ``fork``: the proof does not join the two roots, or
            ``old_root`` of size 0 is not the empty root;
            ``equivocation``: two roots for one size;
            ``rollback``: ``new`` is smaller than ``old``; ``malformed``: a bad length.
    """
    where = "consistency proof"
    if new < old:
        raise VerificationError(
            f"tree size {new} is smaller than {old}", where=where, category="rollback"
        )
    if old == 0 and old_root != EMPTY_ROOT:
        raise VerificationError(
            "the root given for tree size 0 is not the empty tree's",
            where=where,
            category="fork",
        )
    if old == new or old == 0:
        if proof:
            raise _malformed("proof should be empty", where)
        if old == new and old_root != new_root:
            raise VerificationError(
                f"two roots for tree size {old}", where=where, category="equivocation"
            )
        return
    if not proof:
        raise _malformed("empty proof", where)
    path = list(proof)
    if old & (old - 1) == 0:
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for sibling in path[1:]:
        if sn == 0:
            raise _malformed("proof too long", where)
        if fn & 1 or fn == sn:
            fr, sr = node_hash(sibling, fr), node_hash(sibling, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, sibling)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise _malformed("proof too short", where)
    if fr != old_root or sr != new_root:
        raise VerificationError(
            f"the tree of size {new} does not extend the one of size {old}",
            where=where,
            category="fork",
        )


@dataclass(frozen=True, slots=True)
class TlogProof:
    """A c2sp.org/tlog-proof: an entry's index, its inclusion proof and the signed
    checkpoint (a note, verbatim) it leads to."""

    index: int
    hashes: tuple[bytes, ...]
    checkpoint: str  # the signed note's text as published
    extra: bytes | None = None

    def to_text(self) -> str:
        """The proof text."""
        lines = [PROOF_HEADER]
        if self.extra is not None:
            lines.append("extra " + base64.b64encode(self.extra).decode())
        lines.append(f"index {self.index}")
        lines += (base64.b64encode(digest).decode() for digest in self.hashes)
        return "\n".join(lines) + "\n\n" + self.checkpoint

    @classmethod
    def parse(cls, text: str) -> TlogProof:
        """A proof as written by :meth:`to_text`.

        Raises:
            VerificationError: ``malformed``.
        """
        where = "tlog-proof"
        head, blank, checkpoint = text.partition("\n\n")
        lines = head.split("\n")
        if not blank or lines[0] != PROOF_HEADER or len(lines) < 2:
            raise _malformed(f"does not start '{PROOF_HEADER}'", where)
        extra = None
        at = 1
        if lines[1].startswith("extra "):
            try:
                extra = base64.b64decode(lines[1][6:].encode("ascii"), validate=True)
            except (binascii.Error, UnicodeEncodeError) as exc:
                raise _malformed("extra is not base64", where) from exc
            at = 2
        if at >= len(lines) or not lines[at].startswith("index "):
            raise _malformed("no 'index' line", where)
        index = parse_decimal(lines[at][6:], where)
        hashes = tuple(_b64hash(line, where) for line in lines[at + 1 :])
        return cls(index, hashes, checkpoint, extra)

    def note(self) -> Note:
        """The checkpoint as a signed note.

        Raises:
            VerificationError: ``malformed``.
        """
        return Note.parse(self.checkpoint)
