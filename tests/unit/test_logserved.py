"""``check``'s comparison of a served ``_alter-log`` record with the built checkpoint
(verify/logserved.py), on DNS messages made here."""

from __future__ import annotations

import dns.message
import dns.rdata
import dns.rrset

from alter_publish.format.logrecord import checkpoint_strings
from alter_publish.format.note import COSIGNATURE_V1_TYPE, Note, Signer
from alter_publish.format.tlog import Checkpoint
from alter_publish.verify.logserved import log_signed_note, served_log_problem

OWNER = "_alter-log.example.com."
LOG = Signer("example.com/alter-log", bytes(range(32)))


def _note(size: int) -> str:
    return Note(Checkpoint(LOG.name, size, bytes(32)).to_text()).signed_by(LOG).to_text()


def _reply(*notes: str, text: str | None = None) -> dns.message.Message:
    query = dns.message.make_query(OWNER, "TXT")
    reply = dns.message.make_response(query)
    texts = [" ".join(f'"{part}"' for part in checkpoint_strings(note)) for note in notes]
    texts += [] if text is None else [text]
    if texts:
        rdatas = [dns.rdata.from_text("IN", "TXT", value) for value in texts]
        reply.answer.append(dns.rrset.from_rdata_list(OWNER, 300, rdatas))
    return reply


def test_the_built_checkpoint_without_its_cosignatures_is_what_is_served() -> None:
    witness = Signer("witness.example/w1", bytes(32), COSIGNATURE_V1_TYPE)
    built = Note.parse(_note(5)).cosigned_by(witness, 1767225600).to_text()
    expected = log_signed_note(built, LOG.name)
    assert expected == _note(5)
    assert served_log_problem(_reply(_note(5)), OWNER, expected) is None


def test_each_other_record_is_named() -> None:
    expected = _note(5)
    older = served_log_problem(_reply(_note(4)), OWNER, expected)
    assert older == (
        f"{OWNER}: serves the checkpoint of size 4; sign wrote the checkpoint of size 5"
    )
    missing = served_log_problem(_reply(), OWNER, expected)
    assert missing is not None
    assert "not-found" in missing
    two = served_log_problem(_reply(_note(4), _note(5)), OWNER, expected)
    assert two is not None
    assert "malformed" in two
    bad = served_log_problem(_reply(text='"v=alter-log1; n=!!"'), OWNER, expected)
    assert bad is not None
    assert "malformed" in bad
