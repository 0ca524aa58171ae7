"""``verify``'s check of a zone's published transparency log: the ``_alter-log.<zone>.``
record in the zone file is the log-signed checkpoint of ``<out>/<zone>/log/checkpoint``
(the same body and the same signature lines named by the log's origin: the log key's,
and the retired key's on a rotated key's first checkpoint; the file may add witness
cosignatures, which come after the zone is signed) or an older checkpoint of the same
log (a sign stopped between writing the log and switching the outputs), signed by the
zone's log key, and
the log directory's tiles and entry bundles give that checkpoint
(:func:`alter_publish.verify.logaudit.audit_log`).
"""

from __future__ import annotations

from pathlib import Path

import dns.rdatatype
import dns.zone

from alter_publish.errors import RenderError, VerificationError
from alter_publish.format.logrecord import find_checkpoint_record, log_record_owner
from alter_publish.format.note import Note, Verifier
from alter_publish.keys.logkey import log_origin
from alter_publish.pipeline.paths import CHECKPOINT_FILE, log_dir
from alter_publish.verify.logaudit import (
    LogAudit,
    audit_log,
    read_checkpoint_file,
    root_at,
    signed_checkpoint,
)
from alter_publish.verify.logserved import log_signed_note

#: The category of a zone whose ``_alter-log`` record is not its published checkpoint.
CHECKPOINT_MISMATCH_CATEGORY = "checkpoint-mismatch"


def _record_texts(zone: dns.zone.Zone, owner: str) -> list[str]:
    rdataset = zone.get_rdataset(owner, dns.rdatatype.TXT)
    if rdataset is None:
        return []
    return [b"".join(rdata.strings).decode("utf-8", "replace") for rdata in rdataset]


def check_published_log(
    zone: dns.zone.Zone, origin: str, out: Path, verifier: Verifier | None
) -> LogAudit | None:
    """Check the zone's ``_alter-log`` record against ``<out>/<origin>/log`` (see the
    module); None when the zone publishes neither.

    Raises:
        VerificationError: ``checkpoint-mismatch`` (the record is not the file's
            log-signed checkpoint, or one of them is missing), ``bad-signature`` (not
            signed by the zone's log key, or no log key), or an audit category
            (``tampered-entry``, ``dropped-entry``, ``malformed``).
    """
    owner = log_record_owner(origin)
    directory = log_dir(out, origin)
    path = directory / CHECKPOINT_FILE
    texts = _record_texts(zone, owner)
    if not texts and not path.exists():
        return None
    if verifier is None:
        raise VerificationError(
            "the zone has no log key to check its checkpoint with",
            where=owner,
            category="bad-signature",
        )
    if not path.exists():
        raise VerificationError(
            f"the zone publishes a checkpoint but {path} is missing",
            where=owner,
            category=CHECKPOINT_MISMATCH_CATEGORY,
        )
    if not texts:
        raise VerificationError(
            "no checkpoint record", where=owner, category=CHECKPOINT_MISMATCH_CATEGORY
        )
    record = find_checkpoint_record(texts, owner)
    shown = signed_checkpoint(record, verifier, owner)
    audit = audit_log(directory, verifier)
    if log_signed_note(read_checkpoint_file(path), verifier.name) == Note.parse(record).to_text():
        return audit
    # An older checkpoint of the same log is a zone from before a sign that was stopped
    # after writing the log and before switching the outputs: consistent, and the next
    # sign publishes the newer one.
    older = shown.size < audit.checkpoint.size
    if not (older and root_at(directory, shown.size) == shown.root):
        raise VerificationError(
            f"the record is not the log-signed checkpoint of {path}",
            where=owner,
            category=CHECKPOINT_MISMATCH_CATEGORY,
        )
    return audit


def published_log_note(out: Path, origin: str) -> str | None:
    """The log-signed checkpoint ``<out>/<origin>/log/checkpoint`` holds (without its
    witness cosignatures): what the zone's ``_alter-log`` record should hold; None when
    the zone publishes no log.

    Raises:
        RenderError: the file is unreadable or not a signed note.
    """
    path = log_dir(out, origin) / CHECKPOINT_FILE
    if not path.exists():
        return None
    try:
        return log_signed_note(read_checkpoint_file(path), log_origin(origin))
    except (OSError, UnicodeDecodeError) as exc:
        raise RenderError(f"cannot read: {exc}", where=str(path)) from exc
    except VerificationError as exc:
        raise RenderError(f"not a signed checkpoint: {exc.what}", where=str(path)) from exc
