"""``check``'s look at a zone's published transparency log: the ``_alter-log.<zone>.``
record a name server serves must be the log-signed checkpoint of
``<out>/<zone>/log/checkpoint`` (what ``sign`` wrote: the same body and the same
signature lines by the log's origin; the file's witness cosignatures, added after the
zone was signed, are not in the record). Finding code ``log-checkpoint-differs``.
"""

from __future__ import annotations

import dns.message
import dns.name
import dns.rdatatype

from alter_publish.errors import VerificationError
from alter_publish.format.logrecord import find_checkpoint_record
from alter_publish.format.note import Note
from alter_publish.format.tlog import Checkpoint

#: The finding code of a served checkpoint record that is not the one ``sign`` wrote.
LOG_CHECKPOINT_DIFFERS = "log-checkpoint-differs"


def log_signed_note(published: str, origin: str) -> str:
    """The checkpoint note ``published`` (a log directory's ``checkpoint``, perhaps
    cosigned) with only the signature lines of the log's ``origin``: what the zone's
    record holds.

    Raises:
        VerificationError: ``malformed``: not a signed note.
    """
    note = Note.parse(published)
    own = tuple(line for line in note.signatures if line.name == origin)
    return Note(note.text, own).to_text()


def _describe(note: str) -> str:
    try:
        checkpoint = Checkpoint.parse(Note.parse(note).text)
    except VerificationError:
        return "a note that is not a checkpoint"
    return f"the checkpoint of size {checkpoint.size}"


def served_log_problem(reply: dns.message.Message, owner: str, expected: str) -> str | None:
    """What is wrong with the checkpoint record in ``reply`` (an answer for ``owner``
    TXT), given the log-signed note ``expected``; None when it is that note.
    """
    name = dns.name.from_text(owner)
    texts = [
        b"".join(rdata.strings).decode("utf-8", "replace")
        for rrset in reply.answer
        if rrset.name == name and rrset.rdtype == dns.rdatatype.TXT
        for rdata in rrset
    ]
    try:
        served = find_checkpoint_record(texts, owner)
    except VerificationError as exc:
        return f"{owner}: {exc.category}: {exc.what}; sign wrote {_describe(expected)}"
    try:
        same = Note.parse(served).to_text() == expected
    except VerificationError as exc:
        return f"{owner}: serves a record whose note is malformed: {exc.what}"
    if same:
        return None
    return f"{owner}: serves {_describe(served)}; sign wrote {_describe(expected)}"
