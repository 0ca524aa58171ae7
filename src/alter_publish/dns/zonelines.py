"""Zone files as alter-publish writes them, read without dnspython's per-record parse.

A signed zone of 100,000 handles is about 700,000 lines, nearly all of four kinds:
``<owner> <ttl> IN TXT|RRSIG|NSEC|NSEC3 <rdata>`` with an absolute owner made of
letters, digits, ``-`` and ``_``, an explicit TTL and class, and the rdata as
dnspython prints it. dnspython's zone reader takes over a minute for those; this
module converts exactly those lines to wire form itself (a few microseconds each)
and gives every other line (the SOA, NS, hosts, directives, comments, anything a
customized template adds) to dnspython, on the lines where they stand.

It is a fast path beside the reference, never a second opinion: whenever a line
looks like one of the four kinds but is not exactly as this module reads it, or
the file does anything that could make the two readings differ (a record line
that leaves the owner out after a fast line, no ``$TTL`` before the first fast
line, an rrset spread over lines with different TTLs or holding the same record
twice, an rrset in both parts), :func:`read_zone_records` returns ``None`` and the
caller parses the whole file with dnspython, as before. The tests hold both
readings equal on every record of signed zones (``tests/unit/test_zonelines.py``).
"""

from __future__ import annotations

import binascii
import calendar
import functools
import re
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import dns.name
import dns.rdatatype
import dns.rdtypes.util
import dns.zone

from alter_publish.dns.records import Labels, paren_depth

#: (owner labels, lower case, root last; type) -> (TTL, each rdata's wire form).
RecordMap = dict[tuple[Labels, int], tuple[int, tuple[bytes, ...]]]

_RRSIG = int(dns.rdatatype.RRSIG)
_TXT = int(dns.rdatatype.TXT)
_NSEC = int(dns.rdatatype.NSEC)
_NSEC3 = int(dns.rdatatype.NSEC3)
_TTL_MAX = 2**31 - 1
_FAST = re.compile(r"((?:[A-Za-z0-9_-]{1,63}\.)+) ([0-9]{1,10}) IN (TXT|RRSIG|NSEC3|NSEC) ([^\n]*)")
_TXT_RDATA = re.compile(r'"(?:[^"\\]|\\.)*"(?: "(?:[^"\\]|\\.)*")*')
_TXT_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(rb"\\([0-9]{3}|[^0-9])")
_ESCAPED = re.compile(rb"(?:[^\\]|\\[0-9]{3}|\\[^0-9])*", re.DOTALL)
_PLAIN_RDATA = re.compile(r'[^"\\;()]*')
_PLAIN_NAME = re.compile(r"(?:[A-Za-z0-9_-]{1,63}\.)+")
_BASE32HEX = re.compile(r"[0-9A-Va-v]+")
_RRSIG_FIXED = struct.Struct("!HBBIIIH")
_NSEC3_FIXED = struct.Struct("!BBHB")


@dataclass(frozen=True, slots=True)
class ZoneRecords:
    """A zone file's records, as :meth:`WireZone.from_records` takes them.

    Attributes:
        origin: the zone's origin.
        plain: every rrset but the RRSIGs.
        sigs: the RRSIG rrsets, keyed by the type they cover.
    """

    origin: dns.name.Name
    plain: RecordMap
    sigs: RecordMap


def read_zone_records(
    text: str, origin: str, parse: Callable[[str, Callable[[int], int]], dns.zone.Zone]
) -> ZoneRecords | None:
    """The records of zone text for ``origin``: the fast lines read here, the rest by
    ``parse`` (dnspython, given the other lines' text and a map from its line numbers
    to the file's, so that errors name the file's lines).

    Returns:
        The records, or None when the text is outside what this module reads exactly
        (then parse the whole text with dnspython).

    Raises:
        Whatever ``parse`` raises for the other lines.
    """
    suffix = "." + origin.lower().rstrip(".") + "."
    plain: RecordMap = {}
    sigs: RecordMap = {}
    head: list[str] = []
    head_lines: list[int] = []
    try:
        if not _read_lines(text, suffix, (plain, sigs), (head, head_lines)):
            return None
    except ValueError:  # a line not read exactly as dnspython would
        return None
    zone = parse(
        "\n".join(head), lambda line: head_lines[line - 1] if 0 < line <= len(head) else line
    )
    if zone.origin is None:
        return None
    for rel_name, rdataset in zone.iterate_rdatasets():
        if rdataset.rdtype in (dns.rdatatype.CNAME, dns.rdatatype.DNAME):
            return None  # served by the dnspython engine, which needs the whole zone
        owner = tuple(label.lower() for label in rel_name.derelativize(zone.origin).labels)
        rdatas = tuple(rdata.to_wire(origin=zone.origin) or b"" for rdata in rdataset)
        if rdataset.rdtype == dns.rdatatype.RRSIG:
            target, key = sigs, (owner, int(rdataset.covers))
        else:
            target, key = plain, (owner, int(rdataset.rdtype))
        if key in target:
            return None  # an rrset in both parts: its order would be dnspython's to say
        target[key] = (rdataset.ttl, rdatas)
    return ZoneRecords(zone.origin, plain, sigs)


def _read_lines(
    text: str,
    suffix: str,
    records: tuple[RecordMap, RecordMap],
    head: tuple[list[str], list[int]],
) -> bool:
    """Read the fast lines of ``text`` into ``records`` (plain, RRSIGs); every other line
    and its number into ``head``. False when the file is outside the fast subset.

    Raises:
        ValueError: a fast-looking line this module does not read exactly.
    """
    plain, sigs = records
    lines, numbers = head
    depth = 0
    ttl_known = last_fast = False
    last_owner_text, owner = (
        "",
        cast(Labels, ()),
    )  # the owner of the line before: RRSIGs follow theirs
    ttls: dict[str, int] = {}  # TTL text -> value (a zone uses a few)
    # (UTF-8: an origin taken from an odd file name still reads; only ASCII owners match)
    apex, cut = tuple(suffix[1:].encode().split(b".")), len(suffix)
    readers = _READERS
    for number, line in enumerate(text.split("\n"), start=1):
        if line[:1] == ";":
            continue  # a comment line: nothing for dnspython to read
        fields = line.split(" ", 4) if depth == 0 else []
        reader = readers.get(fields[3]) if len(fields) == 5 and fields[2] == "IN" else None
        if reader is None:
            if depth == 0:
                stripped = line.lstrip(" \t")
                if not stripped or stripped[0] == ";":
                    continue
                if line[0] in " \t" and last_fast:
                    return False  # owner left out: it would be the fast line's
                last_fast = False
                ttl_known = ttl_known or stripped[:4].upper() == "$TTL"
            depth = paren_depth(line, depth)
            lines.append(line)
            numbers.append(number)
            continue
        if not ttl_known:
            return False  # the fast lines' TTLs could become the default
        last_fast = True
        owner_text, ttl_text, _, _, rdata = fields
        if owner_text != last_owner_text:
            owner_lower = owner_text.lower()
            if _PLAIN_NAME.fullmatch(owner_text) is None:
                return False
            if owner_lower.endswith(suffix):  # the origin's labels shared, not made anew
                owner = (*owner_lower[:-cut].encode("ascii").split(b"."), *apex)
            elif owner_lower == suffix[1:]:
                owner = apex
            else:
                return False
            last_owner_text = owner_text
        ttl = ttls.get(ttl_text)
        if ttl is None:
            if not (ttl_text.isascii() and ttl_text.isdigit()) or len(ttl_text) > 10:
                return False
            ttl = int(ttl_text)
            if ttl > _TTL_MAX:
                return False
            ttls[ttl_text] = ttl
        rdtype, wire = reader(rdata)
        target = sigs if reader is _rrsig else plain
        key = (owner, rdtype)
        found = target.get(key)
        if found is None:
            target[key] = (ttl, (wire,))
        elif found[0] != ttl or wire in found[1]:
            return False  # dnspython merges these its own way
        else:
            target[key] = (ttl, (*found[1], wire))
    return True


def _unescape(raw: bytes) -> bytes:
    def one(match: re.Match[bytes]) -> bytes:
        token = match.group(1)
        if token.isdigit():
            value = int(token)
            if value > 255:
                raise ValueError("not read here")
            return bytes((value,))
        return token

    return _ESCAPE.sub(one, raw) if b"\\" in raw else raw


def _txt(rdata: str) -> tuple[int, bytes]:
    if rdata[:1] == '"' and rdata[-1:] == '"' and "\\" not in rdata:
        strings = rdata[1:-1].split('" "')
        if len(rdata) > 1 and not any('"' in string for string in strings):
            parts = [string.encode("utf-8") for string in strings]
            if all(len(part) <= 255 for part in parts):
                return _TXT, b"".join(bytes((len(part),)) + part for part in parts)
    if _TXT_RDATA.fullmatch(rdata) is None:
        raise ValueError("not read here")
    parts = []
    for found in _TXT_STRING.finditer(rdata):
        raw = found.group(1).encode("utf-8")
        if b"\\" in raw:
            if _ESCAPED.fullmatch(raw) is None:
                raise ValueError(rdata)  # a backslash and one or two digits: dnspython's error
            raw = _unescape(raw)
        if len(raw) > 255:
            raise ValueError("not read here")
        parts.append(bytes((len(raw),)) + raw)
    return _TXT, b"".join(parts)


def _plain(rdata: str) -> list[str]:
    if _PLAIN_RDATA.fullmatch(rdata) is None:
        raise ValueError("not read here")
    return rdata.split()


def _name_wire(text: str) -> bytes:
    if _PLAIN_NAME.fullmatch(text) is None:
        raise ValueError("not read here")
    return (
        b"".join(bytes((len(label),)) + label.encode("ascii") for label in text[:-1].split("."))
        + b"\0"
    )


@functools.lru_cache(maxsize=256)
def _rdtype(text: str) -> int:
    try:
        return int(dns.rdatatype.from_text(text))
    except (dns.rdatatype.UnknownRdatatype, ValueError) as exc:
        raise ValueError(text) from exc


@functools.lru_cache(maxsize=4096)
def _sigtime(text: str) -> int:
    if not text.isdigit():
        raise ValueError("not read here")
    if len(text) == 14:
        try:
            return calendar.timegm(time.strptime(text, "%Y%m%d%H%M%S"))
        except ValueError as exc:
            raise ValueError(text) from exc
    value = int(text)
    if value >= 2**32:
        raise ValueError("not read here")
    return value


def _number(text: str, limit: int) -> int:
    if not text.isdigit():
        raise ValueError("not read here")
    value = int(text)
    if value > limit:
        raise ValueError("not read here")
    return value


@functools.lru_cache(maxsize=1024)
def _bitmap(types: tuple[str, ...]) -> bytes:
    rdtypes = [dns.rdatatype.RdataType.make(_rdtype(text)) for text in types]
    windows = dns.rdtypes.util.Bitmap.from_rdtypes(rdtypes).windows
    return b"".join(bytes((window, len(bits))) + bits for window, bits in windows)


def _rrsig(rdata: str) -> tuple[int, bytes]:
    prefix, _, signature = rdata.rpartition(" ")
    covered, fixed = _rrsig_fixed(prefix)
    if not signature:
        raise ValueError(rdata)
    try:  # validate: only the base64 alphabet (no quotes, parentheses or comments); what
        # base64.b64decode(validate=True) does, without its wrappers
        raw = binascii.a2b_base64(signature, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(rdata) from exc
    return covered, fixed + raw


@functools.lru_cache(maxsize=4096)
def _rrsig_fixed(prefix: str) -> tuple[int, bytes]:
    """An RRSIG's type covered and its rdata up to the signature, from the text before
    the signature (a few distinct ones per zone: cached)."""
    fields = _plain(prefix)
    if len(fields) != 8 or " ".join(fields) != prefix:
        raise ValueError(prefix)  # a signature written in several pieces, or odd spacing
    covered = _rdtype(fields[0])
    fixed = _RRSIG_FIXED.pack(
        covered,
        _number(fields[1], 255),
        _number(fields[2], 255),
        _number(fields[3], 2**32 - 1),
        _sigtime(fields[4]),
        _sigtime(fields[5]),
        _number(fields[6], 65535),
    )
    return covered, fixed + _name_wire(fields[7])


def _nsec(rdata: str) -> tuple[int, bytes]:
    fields = _plain(rdata)
    if not fields:
        raise ValueError("not read here")
    return _NSEC, _name_wire(fields[0]) + _bitmap(tuple(fields[1:]))


def _nsec3(rdata: str) -> tuple[int, bytes]:
    fields = rdata.split(" ", 5)
    if len(fields) < 5:
        raise ValueError(rdata)
    hashed = fields[4]
    if len(hashed) % 8 or _BASE32HEX.fullmatch(hashed) is None:
        raise ValueError(rdata)
    following = int(hashed, 32).to_bytes(len(hashed) * 5 // 8, "big")  # base32hex digits
    types = _bitmap_text(fields[5] if len(fields) == 6 else "")
    return _NSEC3, _nsec3_fixed(*fields[:4]) + bytes((len(following),)) + following + types


@functools.lru_cache(maxsize=64)
def _nsec3_fixed(algorithm: str, flags: str, iterations: str, salt_text: str) -> bytes:
    try:
        salt = b"" if salt_text == "-" else bytes.fromhex(salt_text)
    except ValueError as exc:
        raise ValueError(salt_text) from exc
    if len(salt) > 255 or (salt and (len(salt_text) % 2 or not salt_text.isalnum())):
        raise ValueError(salt_text)
    fixed = _NSEC3_FIXED.pack(
        _number(algorithm, 255), _number(flags, 255), _number(iterations, 65535), len(salt)
    )
    return fixed + salt


@functools.lru_cache(maxsize=1024)
def _bitmap_text(types: str) -> bytes:
    return _bitmap(tuple(_plain(types)))


def rdata_wire(kind: str, rdata: str) -> bytes | None:
    """The wire form (canonical: no names in it) of one TXT or NSEC3 rdata as this
    module reads it; None for any other type or text it does not read (then: dnspython).
    """
    reader = {"TXT": _txt, "NSEC3": _nsec3}.get(kind)
    if reader is None:
        return None
    try:
        return reader(rdata)[1]
    except ValueError:
        return None


_READERS: dict[str, Callable[[str], tuple[int, bytes]]] = {
    "RRSIG": _rrsig,
    "TXT": _txt,
    "NSEC": _nsec,
    "NSEC3": _nsec3,
}
