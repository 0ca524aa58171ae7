"""``log prove``: one envelope's c2sp.org/tlog-proof, checked before it is shown.

The current envelope's proof is the one ``<out>/<zone>.envelopes.json`` carries (in the
checkpoint of the run that logged it); an older epoch's latest envelope is found in the
IdentityLog and its proof made from the tiles under ``<out>/<zone>/log`` into the latest
checkpoint there. Either way the proof is verified against its signed checkpoint with
the log's verifier key before it is returned.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alter_publish.definition.model import ZoneSpec
from alter_publish.errors import RenderError, UsageError, VerificationError
from alter_publish.format.envelope import Envelope, parse_record_or_none
from alter_publish.format.handles import parse_handle
from alter_publish.format.identitylog import LogEntry, leaf_hash, log_path_for, read_log
from alter_publish.format.note import Verifier
from alter_publish.format.tiles import TreeHashes
from alter_publish.format.tlog import TlogProof, inclusion_proof, verify_inclusion
from alter_publish.pipeline.paths import CHECKPOINT_FILE, current_outputs, log_dir
from alter_publish.verify.logaudit import read_checkpoint_file, signed_checkpoint, stored_tiles


@dataclass(frozen=True, slots=True)
class EnvelopeProof:
    """A verified tlog-proof of one envelope's log entry."""

    handle: str
    owner: str
    epoch: int
    index: int
    size: int  # the size of the checkpoint the proof leads to
    source: str  # "envelopes" (the document sign wrote) or "tiles" (made from them)
    proof: str  # the c2sp.org/tlog-proof text

    def to_mapping(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "handle": self.handle,
            "owner": self.owner,
            "epoch": self.epoch,
            "index": self.index,
            "checkpoint_size": self.size,
            "source": self.source,
            "tlog_proof": self.proof,
        }


def _current(spec: ZoneSpec, out: Path, ref: str) -> tuple[str, str] | None:
    """The handle's envelope text and tlog-proof in the envelopes document (None: none).

    Raises:
        RenderError: the document is missing or unreadable.
    """
    path = current_outputs(out, spec.origin)[1]
    try:
        document = json.loads(path.read_bytes())
        items = document["handles"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RenderError(
            f"no envelopes document ({exc}); run 'alter-publish sign' first", where=str(path)
        ) from exc
    for item in items:
        if item.get("handle") == ref and isinstance(item.get("tlog_proof"), str):
            return str(item["text"]), str(item["tlog_proof"])
    return None


def _from_tiles(spec: ZoneSpec, out: Path, verifier: Verifier, entry: LogEntry, index: int) -> str:
    """A tlog-proof of entry ``index`` into the latest checkpoint, made from the tiles.

    Raises:
        VerificationError: the checkpoint is unreadable, badly signed, or older than the
            entry; a tile is missing (``dropped-entry``).
    """
    directory = log_dir(out, spec.origin)
    where = str(directory / CHECKPOINT_FILE)
    try:
        note = read_checkpoint_file(directory / CHECKPOINT_FILE)
    except (OSError, UnicodeDecodeError) as exc:
        raise VerificationError(f"cannot read: {exc}", where=where, category="malformed") from exc
    checkpoint = signed_checkpoint(note, verifier, where)
    if index >= checkpoint.size:
        raise VerificationError(
            f"entry {index} is not in the checkpoint of size {checkpoint.size}",
            where=where,
            category="not-included",
        )
    tree = TreeHashes(checkpoint.size, stored_tiles(directory))
    try:
        hashes = inclusion_proof(tree.subtree, index, checkpoint.size)
    except (OSError, ValueError) as exc:
        raise VerificationError(
            f"cannot read the tiles: {exc}", where=str(directory), category="dropped-entry"
        ) from exc
    return TlogProof(index, tuple(hashes), note).to_text()


def check_envelope_proof(text: str, entry: bytes, verifier: Verifier, where: str) -> TlogProof:
    """Check a tlog-proof of ``entry``: its checkpoint's signature, then inclusion.

    Raises:
        VerificationError: ``malformed``, ``bad-signature`` or ``not-included``.
    """
    proof = TlogProof.parse(text)
    checkpoint = signed_checkpoint(proof.checkpoint, verifier, where)
    try:
        verify_inclusion(
            leaf_hash(entry), proof.index, checkpoint.size, proof.hashes, checkpoint.root
        )
    except VerificationError as exc:
        category = "not-included" if exc.category == "tampered-entry" else exc.category
        raise VerificationError(exc.what, where=where, category=category) from exc
    return proof


def prove_envelope(
    spec: ZoneSpec, out: Path, verifier: Verifier, handle: str, epoch: int | None = None
) -> EnvelopeProof:
    """The tlog-proof of ``handle``'s envelope (the current one, or the latest of
    ``epoch``), verified.

    Raises:
        UsageError: the handle is not in the zone.
        RenderError: the envelopes document is missing.
        VerificationError: no such envelope in the log (``not-found``), or the proof
            does not verify (its category).
    """
    ref = parse_handle(handle).ref
    handle_spec = spec.find(ref)
    if handle_spec is None:
        raise UsageError(f"{ref} is not in the zone", where=str(spec.path))
    owner = handle_spec.owner
    current = _current(spec, out, ref)
    envelope = parse_record_or_none(current[0]) if current else None
    if current is not None and isinstance(envelope, Envelope) and epoch in (None, envelope.epoch):
        entry = LogEntry(owner, current[0]).to_bytes()
        proof = check_envelope_proof(current[1], entry, verifier, ref)
        size = _size(proof, verifier, ref)
        return EnvelopeProof(ref, owner, envelope.epoch, proof.index, size, "envelopes", current[1])
    log = read_log(log_path_for(spec.path))
    found = [
        (index, item, record)
        for index, item in enumerate(log.entries)
        if item.owner == owner
        and isinstance(record := parse_record_or_none(item.text), Envelope)
        and record.handle.ref == ref
        and (epoch is None or record.epoch == epoch)
    ]
    if not found:
        what = f"no envelope of epoch {epoch}" if epoch is not None else "no envelope"
        raise VerificationError(f"{what} in the log", where=ref, category="not-found")
    index, item, record = found[-1]
    text = _from_tiles(spec, out, verifier, item, index)
    proof = check_envelope_proof(text, item.to_bytes(), verifier, ref)
    return EnvelopeProof(
        ref, owner, record.epoch, index, _size(proof, verifier, ref), "tiles", text
    )


def _size(proof: TlogProof, verifier: Verifier, where: str) -> int:
    return signed_checkpoint(proof.checkpoint, verifier, where).size
