"""The messages of the witness protocol (c2sp.org/tlog-witness) and cosigned
checkpoints, on no I/O.

An ``add-checkpoint`` request body is ``old <size>``, zero to 63 consistency proof
lines (standard base64 hashes), an empty line, then the signed checkpoint. A witness
answers 200 with its cosignature lines (note signature lines, ``cosignature/v1``), or
409 with its latest cosigned size (``text/x.tlog.size``: a decimal and a newline).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

from alter_publish.errors import VerificationError
from alter_publish.format.note import Note, NoteSignature, Verifier
from alter_publish.format.tlog import HASH_OCTETS, parse_decimal

ADD_CHECKPOINT_PATH = "/add-checkpoint"
SIZE_CONTENT_TYPE = "text/x.tlog.size"
PROOF_LINES_MAX = 63


def _malformed(what: str, where: str) -> VerificationError:
    return VerificationError(what, where=where, category="malformed")


def parse_size(text: str, where: str) -> int:
    """A tree size written in decimal with no leading zero.

    Raises:
        VerificationError: ``malformed``.
    """
    return parse_decimal(text, where)


@dataclass(frozen=True, slots=True)
class AddCheckpoint:
    """An ``add-checkpoint`` request: the old size, the consistency proof from it, and
    the checkpoint (a signed note, verbatim)."""

    old: int
    proof: tuple[bytes, ...]
    checkpoint: str

    def to_text(self) -> str:
        """The request body."""
        lines = [f"old {self.old}", *(base64.b64encode(h).decode() for h in self.proof)]
        return "".join(f"{line}\n" for line in lines) + "\n" + self.checkpoint

    @classmethod
    def parse(cls, body: str) -> AddCheckpoint:
        """A request body as written by :meth:`to_text`.

        Raises:
            VerificationError: ``malformed``.
        """
        where = "add-checkpoint"
        head, blank, checkpoint = body.partition("\n\n")
        lines = head.split("\n")
        if not blank or not lines[0].startswith("old "):
            raise _malformed("does not start 'old <size>' and a blank line", where)
        old = parse_size(lines[0][4:], where)
        if len(lines) - 1 > PROOF_LINES_MAX:
            raise _malformed(f"more than {PROOF_LINES_MAX} proof lines", where)
        proof: list[bytes] = []
        for line in lines[1:]:
            try:
                digest = base64.b64decode(line.encode("ascii"), validate=True)
            except (ValueError, UnicodeEncodeError) as exc:
                raise _malformed("a proof line is not base64", where) from exc
            if len(digest) != HASH_OCTETS:
                raise _malformed("a proof line is not a 32-octet hash", where)
            proof.append(digest)
        return cls(old, tuple(proof), checkpoint)


def parse_cosignatures(note: Note, response: str) -> tuple[NoteSignature, ...]:
    """The signature lines of a witness's 200 response, read as signatures on ``note``.

    Raises:
        VerificationError: ``malformed``: not signature lines.
    """
    if not response.endswith("\n") or not response.strip():
        raise _malformed("not signature lines", "witness response")
    return Note.parse(note.text + "\n" + response).signatures


def with_cosignatures(
    note: Note, cosignatures: Sequence[NoteSignature], witnesses: Sequence[Verifier]
) -> Note:
    """``note`` with the ``cosignatures`` that verify under one of ``witnesses`` (each
    replacing that witness's earlier line; others are dropped), keeping every other line.
    """
    fresh: list[NoteSignature] = []
    replaced: set[tuple[str, bytes]] = set()
    for witness in witnesses:
        candidate = Note(note.text, tuple(cosignatures))
        try:
            line = candidate.verify(witness)
        except VerificationError:
            continue
        fresh.append(line)
        replaced.add((witness.name, witness.key_id))
    kept = tuple(sig for sig in note.signatures if (sig.name, sig.key_id) not in replaced)
    return Note(note.text, kept + tuple(fresh))
