"""Rendered zone text -> the zone's records in canonical wire form (the signer's input).

A zone of 100,000 handles renders to 100,000 TXT lines that alter-publish wrote
itself. Parsing them back with dnspython would take most of a minute, so the
rendered text is split instead: every line that is exactly the line the
template was given for a handle record (``<owner> <ttl> IN TXT <rdata>``,
absolute owner, explicit TTL and class, the rdata text dnspython itself would
print) is taken as that record, and only what is left (the SOA, NS, hosts and
whatever a customized template adds) is parsed with dnspython. When a template
renders the handle records any other way, the split declines and the caller
parses the whole text, as before: slower, never different.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import dns.name
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.TXT
import dns.zone

Labels = tuple[bytes, ...]

#: The longest TXT character-string (RFC 1035 3.3.14).
TXT_STRING_MAX_OCTETS = 255

_TXT = int(dns.rdatatype.TXT)
_IN = dns.rdataclass.IN
# A TXT character-string dnspython prints as is between quotes: printable ASCII but " and \.
_PLAIN_STRING = re.compile(r"[ !#-\[\]-~]*")
# A name made only of letters, digits, '-' and '_' labels needs no escaping either way.
_PLAIN_NAME = re.compile(r"(?:[A-Za-z0-9_-]{1,63}\.)+")
_PLAIN_LABEL = re.compile(rb"[A-Za-z0-9_-]{1,63}")


@dataclass(frozen=True, slots=True)
class RRs:
    """One rrset: type, TTL, each rdata's canonical wire (RFC 4034 6.2) and, for the
    records alter-publish prints itself, each rdata's master-file text."""

    rdtype: int
    ttl: int
    wires: tuple[bytes, ...]
    texts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ZoneRecords:
    """Every rrset of a zone by owner (lower-case labels, root last) and owner texts."""

    origin: Labels
    owners: Mapping[Labels, tuple[RRs, ...]]
    names: Mapping[Labels, str]


@dataclass(frozen=True, slots=True)
class HandleRecord:
    """The TXT rrset of one handle: owner (absolute text), TTL, record texts, and each
    record's rdata as master-file text and as canonical wire (made once, by ``make``)."""

    owner: str
    ttl: int
    texts: tuple[str, ...]
    rdata: tuple[str, ...]
    wires: tuple[bytes, ...]

    @classmethod
    def make(cls, owner: str, ttl: int, texts: Sequence[str]) -> HandleRecord:
        """The rrset of these record texts (each cut into 255-octet character-strings)."""
        step = TXT_STRING_MAX_OCTETS
        strings = [
            tuple(text[i : i + step] for i in range(0, len(text), step)) or ("",) for text in texts
        ]
        return cls(
            owner,
            ttl,
            tuple(texts),
            tuple(txt_rdata_text(item) for item in strings),
            tuple(txt_wire(item) for item in strings),
        )

    def lines(self) -> list[str]:
        """The master-file lines the zone template is given for this rrset."""
        return [f"{self.owner} {self.ttl} IN TXT {rdata}" for rdata in self.rdata]


# --- names -----------------------------------------------------------------------


def labels_of(text: str, *, lower: bool = True) -> Labels:
    """Labels (lower-case unless ``lower`` is False) of an absolute name in master-file text."""
    if _PLAIN_NAME.fullmatch(text):
        name = text.lower() if lower else text
        return (*name.encode("ascii").split(b".")[:-1], b"")
    labels = dns.name.from_text(text).labels
    return tuple(label.lower() for label in labels) if lower else labels


#: The length octet of each label length (a name's wire form is made for every owner).
_LENGTH_OCTETS = tuple(bytes((length,)) for length in range(256))


def name_wire(labels: Labels) -> bytes:
    """Uncompressed wire form of a name given as labels (root last)."""
    return b"".join([_LENGTH_OCTETS[len(label)] + label for label in labels])


def name_text(labels: Labels) -> str:
    """Master-file text of a name given as labels (root last)."""
    if all(_PLAIN_LABEL.fullmatch(label) for label in labels[:-1]):
        return b".".join(labels).decode("ascii") if len(labels) > 1 else "."
    return dns.name.Name(labels).to_text()


def canonical_key(labels: Labels) -> Labels:
    """Sort key for RFC 4034 6.1 canonical order of lower-case label tuples."""
    return labels[::-1]


# --- TXT ---------------------------------------------------------------------------


def txt_rdata_text(strings: Sequence[str]) -> str:
    """Master-file text of a TXT rdata with these character-strings, exactly as dnspython
    prints it (plain strings quoted by hand; anything needing escapes by dnspython)."""
    if all(_PLAIN_STRING.fullmatch(string) for string in strings):
        return " ".join(f'"{string}"' for string in strings)
    rdata = dns.rdtypes.ANY.TXT.TXT(_IN, dns.rdatatype.TXT, list(strings))
    return rdata.to_text()


def txt_wire(strings: Iterable[str]) -> bytes:
    """Canonical wire form of a TXT rdata (each string length-prefixed; UTF-8, as dnspython
    encodes text)."""
    out = []
    for string in strings:
        data = string.encode("utf-8")
        out.append(bytes((len(data),)) + data)
    return b"".join(out)


# --- the split -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Split:
    """Rendered text minus the handle record lines: what is left for dnspython, with the
    original line number of each line kept (for error messages)."""

    head: str
    line_numbers: tuple[int, ...]

    def original_line(self, line: int) -> int:
        """The rendered text's line number of line ``line`` (1-based) of ``head``."""
        if 1 <= line <= len(self.line_numbers):
            return self.line_numbers[line - 1]
        return line


def paren_depth(line: str, depth: int) -> int:
    """The parenthesis depth after ``line`` (quotes, escapes and comments respected)."""
    if "(" not in line and ")" not in line:
        return depth
    quoted = escaped = False
    for char in line:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif char == ";":
            break
        elif char == "(":
            depth += 1
        elif char == ")":
            depth = max(depth - 1, 0)
    return depth


def split_rendered(text: str, records: Sequence[HandleRecord]) -> Split | None:
    """Take the handle records' lines out of rendered zone text.

    Returns:
        The rest, or None when the text does not carry every handle record line exactly
        once where it stands alone (outside parentheses, not followed by a line that
        inherits its owner) after a ``$TTL``: then only a full parse is safe.
    """
    expected: dict[str, int] = {}
    for record in records:
        for line in record.lines():
            expected[line] = expected.get(line, 0) + 1
    remaining = sum(expected.values())
    head: list[str] = []
    numbers: list[int] = []
    depth = 0
    took_previous = False
    seen_ttl = False
    for number, line in enumerate(text.split("\n"), start=1):
        count = expected.get(line)
        if count and depth == 0 and seen_ttl:
            expected[line] = count - 1
            remaining -= 1
            took_previous = True
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith(";"):
            continue  # blank or comment only: nothing for the parser (one per handle)
        if took_previous and line[:1].isspace():
            return None  # this line would have inherited the owner of the line taken out
        took_previous = False
        if line.startswith("$TTL"):
            seen_ttl = True
        head.append(line)
        numbers.append(number)
        depth = paren_depth(line, depth)
    if remaining:
        return None
    return Split("\n".join(head), tuple(numbers))


# --- records ---------------------------------------------------------------------------


def from_zone(zone: dns.zone.Zone) -> ZoneRecords:
    """The records of a parsed zone (absolute names), in canonical wire form."""
    origin = zone.origin
    assert origin is not None  # noqa: S101 (parse_zone_text sets the origin)
    owners: dict[Labels, tuple[RRs, ...]] = {}
    names: dict[Labels, str] = {}
    for name, node in zone.nodes.items():
        labels = tuple(label.lower() for label in name.labels)
        names[labels] = name.to_text()
        owners[labels] = tuple(
            RRs(
                int(rdataset.rdtype),
                rdataset.ttl,
                tuple(rdata.to_digestable(origin) for rdata in rdataset),
                tuple(rdata.to_text() for rdata in rdataset),
            )
            for rdataset in node.rdatasets
        )
    return ZoneRecords(tuple(label.lower() for label in origin.labels), owners, names)


def with_handles(head: ZoneRecords, records: Sequence[HandleRecord]) -> ZoneRecords | None:
    """``head`` plus the handles' TXT rrsets; None when a handle owner also has records in
    ``head`` (the caller then parses the whole text, which merges them as servers do)."""
    owners = dict(head.owners)
    names = dict(head.names)
    for record in records:
        labels = labels_of(record.owner)
        if labels in owners:
            return None
        owners[labels] = (RRs(_TXT, record.ttl, record.wires, record.rdata),)
        names[labels] = record.owner
    return ZoneRecords(head.origin, owners, names)


@dataclass(frozen=True, slots=True)
class SignedRRs:
    """One rrset as served (the input of the loopback server's ``wirezone.WireZone``).

    Attributes:
        owner: the owner's labels, root last: ``(b"_alter", b"blake", b"example", b"com", b"")``.
        rdtype: the type (not RRSIG: signatures go in ``sigs``).
        ttl: the TTL.
        rdatas: each record's uncompressed rdata wire, served as it is.
        sigs: the rdata wire of each RRSIG covering this rrset.
        sig_ttl: the TTL of the RRSIGs, if not ``ttl``.
    """

    owner: Labels
    rdtype: int
    ttl: int
    rdatas: tuple[bytes, ...]
    sigs: tuple[bytes, ...] = ()
    sig_ttl: int | None = None


def unsigned_rrsets(records: ZoneRecords) -> tuple[SignedRRs, ...]:
    """Every rrset of an unsigned zone as served."""
    return tuple(
        SignedRRs(owner, rrs.rdtype, rrs.ttl, rrs.wires)
        for owner, rrsets in records.owners.items()
        for rrs in rrsets
    )
