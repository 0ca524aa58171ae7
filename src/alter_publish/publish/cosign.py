"""Collecting witness cosignatures for a log's checkpoint (the client side of
c2sp.org/tlog-witness): submit ``<log>/checkpoint`` to every witness of a policy that
has a URL, with the consistency proof from the size the witness last cosigned (asked
with ``old 0`` first: a witness that knows the log answers 409 with its size), keep
the cosignatures that verify under the policy's keys, and rewrite the checkpoint with
them atomically.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path

from alter_publish.errors import VerificationError
from alter_publish.fileio import atomic_write_text
from alter_publish.format.note import Note, NoteSignature
from alter_publish.format.policy import Policy, PolicyWitness
from alter_publish.format.tiles import TreeHashes
from alter_publish.format.tlog import Checkpoint, consistency_proof
from alter_publish.format.witness import (
    ADD_CHECKPOINT_PATH,
    AddCheckpoint,
    parse_cosignatures,
    parse_size,
    with_cosignatures,
)
from alter_publish.verify.logaudit import (
    CHECKPOINT_FILE,
    policy_log_key,
    read_checkpoint_file,
    signed_checkpoint,
    stored_tiles,
)

WITNESS_TIMEOUT_SECONDS = 10.0
RESPONSE_OCTETS_MAX = 64 * 1024


@dataclass(frozen=True, slots=True)
class WitnessOutcome:
    """What one witness did: its policy name, and the problem if it gave no cosignature."""

    name: str
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class CosignReport:
    """The rewritten checkpoint's size, each witness's outcome, the valid cosigners, and
    whether they meet the policy's quorum."""

    checkpoint: Checkpoint
    outcomes: tuple[WitnessOutcome, ...]
    cosigners: tuple[str, ...]
    ok: bool


def _post(url: str, body: str, timeout: float) -> tuple[int, str]:
    request = urllib.request.Request(  # noqa: S310 (the URL is the policy's, http(s) checked)
        url.rstrip("/") + ADD_CHECKPOINT_PATH,
        data=body.encode(),
        method="POST",
        headers={"Content-Type": "text/plain; charset=utf-8"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return int(response.status), response.read(RESPONSE_OCTETS_MAX).decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(RESPONSE_OCTETS_MAX).decode("utf-8", "replace")


def _submit(
    witness: PolicyWitness, url: str, note: Note, tree: TreeHashes, timeout: float
) -> tuple[NoteSignature, ...]:
    """The cosignature lines ``witness`` (at ``url``) returns for ``note``.

    Raises:
        VerificationError: ``witness-refused`` (the witness said no), ``rollback`` (it
            cosigned a larger tree), ``malformed`` (a bad answer).
        OSError: the witness cannot be reached.
    """
    size = Checkpoint.parse(note.text).size
    old = 0
    for _attempt in range(2):
        proof = consistency_proof(tree.subtree, old, size) if 0 < old < size else []
        body = AddCheckpoint(old, tuple(proof), note.to_text()).to_text()
        status, answer = _post(url, body, timeout)
        if status == HTTPStatus.OK:
            return parse_cosignatures(note, answer)
        if status != HTTPStatus.CONFLICT or not answer.endswith("\n"):
            break
        try:
            old = parse_size(answer[:-1], witness.name)
        except VerificationError:
            break  # a conflict for another reason (another root for this size)
        if old > size:
            raise VerificationError(
                f"has cosigned size {old}, larger than {size}",
                where=witness.name,
                category="rollback",
            )
    raise VerificationError(
        f"refused: {status} {answer.strip()[:200]}", where=witness.name, category="witness-refused"
    )


def cosign_checkpoint(
    directory: Path, policy: Policy, *, timeout: float = WITNESS_TIMEOUT_SECONDS
) -> CosignReport:
    """Submit ``directory``'s checkpoint to the policy's witnesses that have a URL and
    rewrite it with the cosignatures that verify (see the module).

    Raises:
        VerificationError: ``bad-signature``: the checkpoint is not signed by the
            policy's log of its origin; ``malformed``.
        RenderError: the checkpoint cannot be rewritten.
    """
    path = directory / CHECKPOINT_FILE
    try:
        text = read_checkpoint_file(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise VerificationError(f"cannot read: {exc}", where=str(path)) from exc
    checkpoint = signed_checkpoint(text, policy_log_key(text, policy, str(path)), str(path))
    note = Note.parse(text)
    tree = TreeHashes(checkpoint.size, stored_tiles(directory))
    outcomes: list[WitnessOutcome] = []
    lines: list[NoteSignature] = []
    for witness in policy.witnesses:
        if witness.url is None:
            continue
        if not witness.url.startswith(("http://", "https://")):
            outcomes.append(WitnessOutcome(witness.name, "not an http(s) URL"))
            continue
        try:
            lines += _submit(witness, witness.url, note, tree, timeout)
        except VerificationError as exc:
            outcomes.append(WitnessOutcome(witness.name, f"{exc.category}: {exc.what}"))
            continue
        except (OSError, ValueError) as exc:
            outcomes.append(WitnessOutcome(witness.name, f"unreachable: {exc}"))
            continue
        outcomes.append(WitnessOutcome(witness.name))
    cosigned = with_cosignatures(note, lines, [witness.key for witness in policy.witnesses])
    atomic_write_text(path, cosigned.to_text())
    cosigners = policy.cosigners(cosigned)
    return CosignReport(checkpoint, tuple(outcomes), cosigners, policy.satisfied_by(cosigners))
