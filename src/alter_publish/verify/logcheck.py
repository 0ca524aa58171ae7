"""``resolve --log``: check a verified envelope against its zone's signed transparency log.

The checkpoint comes from a tile directory (``<dir>/checkpoint``) or from DNS (the
``_alter-log.<zone>.`` record, DNSSEC-validated like the envelope); the proofs are made
from the tiles (``<dir>``, or ``--log-tiles`` with DNS) and checked against the signed
roots, so the tiles need not be trusted. An envelope carries ``log=SIZE:ROOT``: its
entry is number SIZE, and the tree before it had ROOT; both must hold in the checkpoint.
With a pin store, the latest checkpoint seen per log is remembered, and each new one
must extend it.

Categories: ``not-included`` (the envelope's entry, or its ``log=`` tree, is not in the
checkpoint), ``fork`` (``log=`` or the pinned checkpoint is not a prefix of it),
``equivocation`` (two roots for one size), ``rollback`` (smaller than the pinned one),
``bad-signature``, ``malformed``, ``dropped-entry`` (a tile needed is missing),
``bad-tile`` (a tile needed is cut short, oversized, not a regular file, or holds hashes
that do not lead to the signed root: the tiles, not the log, are at fault; checked
whenever a proof fails, so ``not-included`` and ``fork`` are the signed log's),
``insecure``/``bogus`` (the DNS checkpoint is not validated), and with a witness policy
(c2sp.org/tlog-policy) ``quorum-not-met``: the checkpoint's valid cosignatures fall
short of the policy's quorum. A checkpoint refused for any reason is never pinned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from alter_publish.dns.anchors import TrustAnchor
from alter_publish.dns.hints import RootHints
from alter_publish.dns.validation import DNSSECStatus
from alter_publish.errors import VerificationError
from alter_publish.format.envelope import Envelope
from alter_publish.format.identitylog import leaf_hash
from alter_publish.format.logrecord import find_checkpoint_record, log_record_owner
from alter_publish.format.note import Note, Verifier
from alter_publish.format.policy import Policy
from alter_publish.format.tiles import TreeHashes
from alter_publish.format.tlog import (
    Checkpoint,
    consistency_proof,
    inclusion_proof,
    verify_consistency,
    verify_inclusion,
)
from alter_publish.keys.logkey import LOG_ORIGIN_SUFFIX
from alter_publish.verify.logaudit import (
    CHECKPOINT_FILE,
    check_extends,
    check_tiles,
    read_checkpoint_file,
    signed_checkpoint,
    stored_tiles,
)
from alter_publish.verify.resolve import StubResolver

LOG_FROM_DNS = "dns"


@dataclass(frozen=True, slots=True)
class LogSource:
    """Where ``resolve --log`` reads the log: ``checkpoint`` (a directory, or
    :data:`LOG_FROM_DNS`), the tile directory, the log's verifier key, and the witness
    policy whose quorum the checkpoint's cosignatures must meet (None: no policy)."""

    checkpoint: str
    tiles: Path
    verifier: Verifier
    policy: Policy | None = None


@dataclass(frozen=True, slots=True)
class LogCheck:
    """An envelope found in a signed checkpoint."""

    origin: str
    size: int
    index: int
    source: str
    pin: str | None = None  # ``pinned``, ``advanced``, ``unchanged`` (None: no pin store)


def _fail(what: str, where: str, category: str) -> VerificationError:
    return VerificationError(what, where=where, category=category)


def fetch_checkpoint(
    source: LogSource,
    server: tuple[str, int],
    *,
    now: int,
    anchors: Sequence[TrustAnchor],
    allow_insecure: bool,
    timeout: float,
    root_hints: RootHints | None,
) -> tuple[str, str]:
    """The signed checkpoint note and where it was read.

    Raises:
        VerificationError: unreadable (``malformed``), not found in DNS (``not-found``),
            or not DNSSEC-validated there (``insecure``/``bogus``).
        ResolveError: the server did not answer usably.
    """
    if source.checkpoint != LOG_FROM_DNS:
        path = Path(source.checkpoint) / CHECKPOINT_FILE
        try:
            return read_checkpoint_file(path), str(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise _fail(f"cannot read: {exc}", str(path), "malformed") from exc
    owner = log_record_owner(source.verifier.name.removesuffix(LOG_ORIGIN_SUFFIX))
    with StubResolver(server, now, anchors, timeout, root_hints) as stub:
        answer = stub.query_txt(owner)
    if answer.dnssec is DNSSECStatus.BOGUS or (
        answer.dnssec is not DNSSECStatus.SECURE and not allow_insecure
    ):
        category = "bogus" if answer.dnssec is DNSSECStatus.BOGUS else "insecure"
        raise _fail(f"checkpoint record not DNSSEC-validated ({answer.reason})", owner, category)
    return find_checkpoint_record(answer.texts, owner), owner


def check_envelope_in_log(
    envelope: Envelope, owner: str, checkpoint: Checkpoint, tiles: Path, where: str
) -> None:
    """Check that ``envelope`` (at ``owner``) is entry ``log_size`` of ``checkpoint`` and
    that its ``log=`` tree is a prefix of it, with proofs made from ``tiles``.

    Raises:
        VerificationError: ``not-included``, ``fork``, ``dropped-entry``, or ``bad-tile``
            (a tile of ``tiles`` that does not agree with the signed root: the proof's
            failure is the mirror's, not the log's).
    """
    index, size = envelope.log_size, checkpoint.size
    if index >= size:
        raise _fail(f"entry {index} is beyond the checkpoint of size {size}", where, "not-included")
    tree = TreeHashes(size, stored_tiles(tiles))
    entry = b"%s\x00%s" % (owner.encode("ascii"), envelope.to_text().encode("ascii"))
    try:
        path = inclusion_proof(tree.subtree, index, size)
        old = consistency_proof(tree.subtree, index, size) if index else []
    except (OSError, ValueError) as exc:
        raise _fail(f"cannot read the tiles: {exc}", str(tiles), "dropped-entry") from exc
    try:
        verify_inclusion(leaf_hash(entry), index, size, path, checkpoint.root)
    except VerificationError as exc:
        check_tiles(tree, checkpoint.root, tiles)
        what = f"the envelope is not entry {index} of the checkpoint of size {size}"
        raise _fail(what, where, "not-included") from exc
    try:
        verify_consistency(index, size, envelope.log_root, checkpoint.root, old)
    except VerificationError as exc:
        check_tiles(tree, checkpoint.root, tiles)
        what = f"the envelope's log={index}:<root> is not a prefix of the checkpoint"
        raise _fail(what, where, "fork") from exc


def check_log(
    envelope: Envelope,
    owner: str,
    source: LogSource,
    note: tuple[str, str],
    pinned: Checkpoint | None,
) -> tuple[Checkpoint, str | None]:
    """The checkpoint ``note`` (its text, where read) checked: signature, the policy's
    quorum of cosignatures (with ``source.policy``), the envelope's inclusion, and (with
    ``pinned``, the last one remembered) that it extends that one.

    Returns:
        The checkpoint and the pin change (``pinned``, ``advanced``, ``unchanged``;
        None: nothing pinned is passed and nothing to change).

    Raises:
        VerificationError: with its category (see the module).
    """
    text, where = note
    checkpoint = signed_checkpoint(text, source.verifier, where)
    if source.policy is not None:
        source.policy.check(Note.parse(text), where)
    if pinned is not None and pinned.size > checkpoint.size:
        # A rollback needs no tiles: the signed sizes say it.
        check_extends(pinned, checkpoint, TreeHashes(), where)
    check_envelope_in_log(envelope, owner, checkpoint, source.tiles, where)
    if pinned is None:
        return checkpoint, "pinned"
    if (pinned.size, pinned.root) == (checkpoint.size, checkpoint.root):
        return checkpoint, "unchanged"
    tree = TreeHashes(checkpoint.size, stored_tiles(source.tiles))
    try:
        check_extends(pinned, checkpoint, tree, where)
    except (OSError, ValueError) as exc:
        raise _fail(f"cannot read the tiles: {exc}", str(source.tiles), "dropped-entry") from exc
    except VerificationError as exc:
        if exc.category == "fork":
            check_tiles(tree, checkpoint.root, source.tiles)
        raise
    return checkpoint, "advanced"
