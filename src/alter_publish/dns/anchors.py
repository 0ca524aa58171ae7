"""Trust anchors: the DS and DNSKEY records the resolver trusts, one anchor per zone.

:func:`read_trust_anchors` reads a file of DS and DNSKEY records in
master-file syntax and :func:`parse_trust_anchors` turns its text into one
:class:`TrustAnchor` per owner name; :func:`anchor_for` picks the anchor for
a name. Checking a zone's DNSKEY rrset against its anchor is
:func:`alter_publish.dns.validation.validate_dnskeys`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, cast

import dns.exception
import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.DNSKEY
import dns.rdtypes.ANY.DS
import dns.rdtypes.dnskeybase
import dns.ttl

from alter_publish.errors import UsageError

__all__ = [
    "TrustAnchor",
    "anchor_for",
    "parse_trust_anchors",
    "read_trust_anchors",
]

_ZONE_KEY: Final = int(dns.rdtypes.dnskeybase.Flag.ZONE)
_ANCHOR_TYPES: Final = frozenset({int(dns.rdatatype.DS), int(dns.rdatatype.DNSKEY)})

# Rdata classes, for annotations and isinstance checks.
DS = dns.rdtypes.ANY.DS.DS
DNSKEY = dns.rdtypes.ANY.DNSKEY.DNSKEY


@dataclass(frozen=True, slots=True)
class TrustAnchor:
    """The DS and DNSKEY records configured as trusted for one zone.

    Attributes:
        zone: the zone apex, absolute.
        ds: DS records for the zone's key-signing keys.
        dnskeys: DNSKEY records trusted as they are.
        source: empty for a configured anchor; for one the chain of trust derived
            from the parent, the link that vouches for it (``com. DS for example.com.``).
    """

    zone: dns.name.Name
    ds: tuple[dns.rdtypes.ANY.DS.DS, ...]
    dnskeys: tuple[dns.rdtypes.ANY.DNSKEY.DNSKEY, ...]
    source: str = ""


def parse_trust_anchors(text: str, *, where: str) -> tuple[TrustAnchor, ...]:
    """Parse DS and DNSKEY records in master-file syntax into trust anchors.

    Owners must be absolute (or relative to a preceding ``$ORIGIN``); TTL and
    class are optional; ``$TTL`` is accepted and ignored; records may span
    lines inside parentheses; ``;`` starts a comment.

    Args:
        text: the file's contents.
        where: the file name, used in error messages.

    Returns:
        One anchor per owner name, sorted by name.

    Raises:
        UsageError: a line is not a DS or DNSKEY record with an absolute owner
            and good rdata, or the text holds no record at all.
    """
    found: dict[dns.name.Name, tuple[list[DS], list[DNSKEY]]] = {}
    origin: dns.name.Name | None = None
    for line, record in _records(text, where):
        here = f"{where}:{line}"
        keyword, _, rest = record.partition(" ")
        if keyword.upper() == "$TTL":
            continue
        if keyword.upper() == "$ORIGIN":
            origin = _owner(rest.strip(), None, here)
            continue
        owner, rdata = _parse_record(record, origin, here)
        ds, dnskeys = found.setdefault(owner, ([], []))
        if isinstance(rdata, DS):
            ds.append(rdata)
        else:
            dnskeys.append(cast("DNSKEY", rdata))
    if not found:
        raise UsageError("no DS or DNSKEY records in trust anchor file", where=where)
    return tuple(
        TrustAnchor(zone, tuple(found[zone][0]), tuple(found[zone][1])) for zone in sorted(found)
    )


def read_trust_anchors(path: Path, where: Path | None = None) -> tuple[TrustAnchor, ...]:
    """Read and parse a trust anchor file (see :func:`parse_trust_anchors`).

    Args:
        path: the file.
        where: its name in errors (default ``path``).

    Returns:
        The anchors, sorted by zone.

    Raises:
        UsageError: the file is missing, unreadable, not UTF-8 or not valid.
    """
    text = read_utf8(path, "trust anchors", where=str(where or path))
    return parse_trust_anchors(text, where=str(where or path))


def read_utf8(path: Path, what: str, *, where: str) -> str:
    """A small input file the user named (trust anchors, root hints), as text.

    Raises:
        UsageError: it is missing, unreadable or not UTF-8 (``cannot read WHAT: why``).
    """
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"cannot read {what}: {why}", where=where) from exc


def anchor_for(anchors: Sequence[TrustAnchor], name: dns.name.Name) -> TrustAnchor | None:
    """Return the anchor with the deepest zone at or above ``name``, or None."""
    covering = [anchor for anchor in anchors if name.is_subdomain(anchor.zone)]
    return max(covering, key=lambda anchor: len(anchor.zone), default=None)


def _records(text: str, where: str) -> Iterator[tuple[int, str]]:
    """Yield ``(first line number, record text)`` with comments and parentheses removed."""
    pending: list[str] = []
    start = depth = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(";", 1)[0]
        if not pending:
            if not line.strip():
                continue
            start = number
        pending.append(line)
        depth += line.count("(") - line.count(")")
        if depth < 0:
            raise UsageError("unbalanced parentheses", where=f"{where}:{start}")
        if depth == 0:
            yield start, " ".join(" ".join(pending).replace("(", " ").replace(")", " ").split())
            pending, depth = [], 0
    if pending:
        raise UsageError("unbalanced parentheses", where=f"{where}:{start}")


def _owner(text: str, origin: dns.name.Name | None, here: str) -> dns.name.Name:
    try:
        name = dns.name.from_text(text, origin=origin)
    except dns.exception.DNSException as exc:
        raise UsageError(f"bad owner name {text!r}: {exc}", where=here) from exc
    if not name.is_absolute():
        raise UsageError(f"owner name {text!r} is relative; end it with '.'", where=here)
    return name


def _parse_record(
    record: str, origin: dns.name.Name | None, here: str
) -> tuple[dns.name.Name, dns.rdata.Rdata]:
    fields = record.split()
    owner = _owner(fields[0], origin, here)
    index = 1
    while index < min(len(fields), 3) and _is_ttl_or_class(fields[index]):
        index += 1
    type_text = fields[index] if index < len(fields) else ""
    try:
        rdtype: dns.rdatatype.RdataType | None = dns.rdatatype.from_text(type_text)
    except dns.exception.DNSException:
        rdtype = None
    if rdtype not in _ANCHOR_TYPES:
        raise UsageError(f"expected a DS or DNSKEY record, got {type_text!r}", where=here)
    rest = record.split(None, index + 1)[index + 1] if len(fields) > index + 1 else ""
    try:
        rdata = dns.rdata.from_text(dns.rdataclass.IN, rdtype, rest, origin, relativize=False)
    except (dns.exception.DNSException, ValueError) as exc:
        raise UsageError(f"bad {type_text.upper()} rdata: {exc}", where=here) from exc
    if isinstance(rdata, DNSKEY) and not rdata.flags & _ZONE_KEY:
        raise UsageError("DNSKEY without the zone-key flag cannot be an anchor", where=here)
    return owner, rdata


def _is_ttl_or_class(text: str) -> bool:
    if text.upper() == "IN":
        return True
    try:
        dns.ttl.from_text(text)
    except dns.exception.DNSException:
        return False
    return True
