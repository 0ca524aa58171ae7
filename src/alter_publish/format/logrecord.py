"""The latest checkpoint of a zone's log as a DNS TXT record (docs/format.md section 12),
on no I/O.

The record is at ``_alter-log.<zone>.``; its text (the TXT character-strings joined) is
``v=alter-log1; n=`` then the signed checkpoint note (c2sp.org/signed-note, UTF-8) in
standard base64 with padding. The text is cut into consecutive 255-octet
character-strings, as an envelope's is. Base64 keeps the note's newlines and its em
dash out of the zone file's escapes: the rdata is plain ASCII.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable

from alter_publish.errors import VerificationError
from alter_publish.format.envelope import split_txt

LOG_RECORD_LABEL = "_alter-log"
LOG_RECORD_PREFIX = "v=alter-log1; n="
#: How every checkpoint record text starts, however its fields are spaced.
LOG_RECORD_MARK = "v=alter-log1;"


def is_checkpoint_record(text: str) -> bool:
    """Whether a TXT record text is of this format (it may still fail to parse)."""
    return text.startswith(LOG_RECORD_MARK)


def log_record_owner(zone: str) -> str:
    """The owner of a zone's checkpoint record: ``_alter-log.<zone>.`` (lowercase)."""
    return f"{LOG_RECORD_LABEL}.{zone.rstrip('.').lower()}."


def checkpoint_record(note: str) -> str:
    """The record text publishing the signed checkpoint ``note`` (its text as published)."""
    return LOG_RECORD_PREFIX + base64.b64encode(note.encode("utf-8")).decode("ascii")


def checkpoint_strings(note: str) -> tuple[str, ...]:
    """The record's TXT character-strings (255 octets each, the last shorter)."""
    return split_txt(checkpoint_record(note))


def parse_checkpoint_record(text: str, where: str = "checkpoint record") -> str:
    """The signed note a record text publishes (its signature is not checked here).

    Raises:
        VerificationError: ``malformed``: not ``v=alter-log1; n=`` and standard base64
            of UTF-8 text.
    """
    if not text.startswith(LOG_RECORD_PREFIX):
        raise VerificationError(
            f"does not start {LOG_RECORD_PREFIX!r}", where=where, category="malformed"
        )
    try:
        raw = base64.b64decode(text[len(LOG_RECORD_PREFIX) :].encode("ascii"), validate=True)
        return raw.decode("utf-8")
    except (binascii.Error, UnicodeError) as exc:
        raise VerificationError(
            "the note is not standard base64 of UTF-8 text", where=where, category="malformed"
        ) from exc


def find_checkpoint_record(texts: Iterable[str], where: str) -> str:
    """The one checkpoint note among the TXT record texts found at the owner.

    Raises:
        VerificationError: ``not-found``: no record of this format; ``malformed``: more
            than one, or one that does not parse.
    """
    found = [text for text in texts if is_checkpoint_record(text)]
    if not found:
        raise VerificationError("no checkpoint record", where=where, category="not-found")
    if len(found) > 1:
        raise VerificationError(
            f"{len(found)} checkpoint records (one is published)", where=where, category="malformed"
        )
    return parse_checkpoint_record(found[0], where)
