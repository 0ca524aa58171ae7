"""The records ``plan`` and ``push`` manage on a primary, and how they are recognised.

Two kinds, and nothing else in the zone:

* at an ``_alter`` owner name, each TXT record whose text is an alter1 record with an
  ``h=`` tag (envelopes and revocations), as ``sign`` wrote them to
  ``<out>/<zone>.envelopes.json``;
* at ``_alter-log.<zone>.``, the TXT record of the log's latest checkpoint
  (``v=alter-log1; n=...``, docs/format.md section 12): the log-signed checkpoint of
  ``<out>/<zone>/log/checkpoint`` (without the witness cosignatures added to the file
  after the zone was signed), at the zone's TTL, as ``sign`` renders it.

Other TXT records at the same names are never compared, added or deleted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.TXT

from alter_publish.definition.model import ZoneSpec
from alter_publish.dns.zonetext import txt_text
from alter_publish.errors import VerificationError
from alter_publish.format.envelope import Envelope, parse_record_or_none, split_txt
from alter_publish.format.logrecord import (
    checkpoint_record,
    is_checkpoint_record,
    log_record_owner,
    parse_checkpoint_record,
)
from alter_publish.format.note import Note
from alter_publish.format.tlog import Checkpoint
from alter_publish.pipeline.logverify import published_log_note

__all__ = [
    "Records",
    "checkpoint_rollback",
    "desired_log_records",
    "newest_epoch",
    "owned",
    "owned_at",
    "owned_checker",
    "owns",
    "owns_log",
    "selects_owner_wire",
    "txt_rdata",
]

_ALTER_LABEL = b"_alter"
_ALTER_WIRE = bytes((len(_ALTER_LABEL),)) + _ALTER_LABEL
#: Lazy, so the usual text (``h=`` first after ``v=alter1;``) matches at once: a greedy
#: ``.*`` ran to the text's end and back (0.13 s of every 100,000 texts a plan reads).
_OWNED = re.compile(r"^v=alter1\s*;(?:.*?;)??\s*h\s*=", re.DOTALL)


def owns(text: str) -> bool:
    """Whether a TXT record text at an ``_alter`` owner is ours: alter1 with ``h=``."""
    return _OWNED.match(text) is not None


def owns_log(text: str) -> bool:
    """Whether a TXT record text at ``_alter-log.<zone>.`` is ours: a checkpoint record."""
    return is_checkpoint_record(text)


def owned_checker(zone: str) -> Callable[[str], Callable[[str], bool]]:
    """For the zone's owner names (lower-case, absolute), which texts there are ours."""
    log_owner = log_record_owner(zone)
    return lambda owner: owns_log if owner == log_owner else owns


def selects_owner_wire(zone: str) -> Callable[[bytes], bool]:
    """Which lower-cased owner wires of a zone transfer can hold our records: a first
    label ``_alter``, or the zone's ``_alter-log`` name."""
    log_wire = dns.name.from_text(log_record_owner(zone)).canonicalize().to_wire()
    return lambda owner: owner.startswith(_ALTER_WIRE) or owner == log_wire


def txt_rdata(text: str) -> dns.rdata.Rdata:
    """A TXT rdata of a record text, cut into 255-octet character-strings."""
    return dns.rdtypes.ANY.TXT.TXT(dns.rdataclass.IN, dns.rdatatype.TXT, list(split_txt(text)))


@dataclass(frozen=True, slots=True)
class Records:
    """Our records at one owner name: TTL and texts, and the character-strings of each
    record as served (an update deletes exactly those)."""

    owner: str
    ttl: int
    texts: tuple[str, ...]
    served: tuple[tuple[bytes, ...], ...] = ()

    def rdatas(self) -> tuple[dns.rdata.Rdata, ...]:
        """The served records as TXT rdatas (to delete)."""
        return tuple(
            dns.rdtypes.ANY.TXT.TXT(dns.rdataclass.IN, dns.rdatatype.TXT, strings)
            for strings in self.served
        )

    def same_as(self, other: Records) -> bool:
        """Same texts (in any order) and TTL."""
        if self.ttl != other.ttl:
            return False
        return self.texts == other.texts or sorted(self.texts) == sorted(other.texts)


def desired_log_records(spec: ZoneSpec, out: Path) -> dict[str, Records]:
    """The zone's checkpoint record as ``sign`` renders it, by owner (empty: no log).

    Raises:
        RenderError: ``<out>/<zone>/log/checkpoint`` is unreadable or not a signed note.
    """
    note = published_log_note(out, spec.origin)
    if note is None:
        return {}
    owner = log_record_owner(spec.origin)
    return {owner: Records(owner, spec.ttl, (checkpoint_record(note),))}


def owned_at(owner: str, rrsets: Iterable[Any], ours: Callable[[str], bool]) -> Records | None:
    """Our records (texts ``ours`` accepts) among the TXT rrsets answered for ``owner``."""
    served: list[tuple[int, tuple[bytes, ...]]] = []
    for rrset in rrsets:
        if rrset.rdtype != dns.rdatatype.TXT or rrset.rdclass != dns.rdataclass.IN:
            continue
        served.extend((int(rrset.ttl), tuple(rdata.strings)) for rdata in rrset)
    return owned(owner, served, ours)


def owned(
    owner: str, served: Iterable[tuple[int, tuple[bytes, ...]]], ours: Callable[[str], bool]
) -> Records | None:
    """Our records (texts ``ours`` accepts) among the TXT records (TTL,
    character-strings) served at ``owner``."""
    texts: list[str] = []
    strings: list[tuple[bytes, ...]] = []
    ttl = 0
    for record_ttl, record in served:
        text = txt_text(record)
        if ours(text):
            texts.append(text)
            strings.append(record)
            ttl = record_ttl
    if not texts:
        return None
    return Records(owner, ttl, tuple(texts), tuple(strings))


def newest_epoch(texts: Iterable[str]) -> int | None:
    """The newest envelope epoch among record texts (None: no envelope)."""
    epochs = [r.epoch for text in texts if isinstance(r := parse_record_or_none(text), Envelope)]
    return max(epochs, default=None)


def _checkpoint_size(texts: Iterable[str]) -> int | None:
    """The tree size of the one checkpoint record among ``texts`` (None: none, or not
    a checkpoint: a record that does not parse is replaced, never a rollback)."""
    found = [text for text in texts if owns_log(text)]
    if len(found) != 1:
        return None
    try:
        return Checkpoint.parse(Note.parse(parse_checkpoint_record(found[0])).text).size
    except VerificationError:
        return None


def checkpoint_rollback(owner: str, before: Records, after: Records) -> str | None:
    """Why replacing the served checkpoint record ``before`` with ``after`` would move the
    log backwards (a smaller tree: an old ``build/`` pushed again), if it would."""
    served, wanted = _checkpoint_size(before.texts), _checkpoint_size(after.texts)
    if served is not None and wanted is not None and wanted < served:
        return f"{owner}: would replace the served checkpoint of size {served} with size {wanted}"
    return None
