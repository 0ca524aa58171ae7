"""The wire engine's messages: the parsed query, the result, EDNS options, the response.

:class:`~alter_publish.dns.wirezone.WireZone` parses a query's header, question
and OPT record by hand into a :class:`Query`, looks the answer up into a
:class:`Result` and joins the response from bytes with :func:`render`, setting TC
and emptying the sections when it does not fit (as the dnspython engine does).
"""

from __future__ import annotations

from typing import Final, NamedTuple

import dns.edns

from alter_publish.dns.wire import (
    AA,
    DNS_MESSAGE_MAX_OCTETS,
    DO,
    EDNS_PAYLOAD_OCTETS,
    HEADER,
    HEADER_OCTETS,
    OPCODE_MASK,
    OPT,
    OPT_FIXED_OCTETS,
    QR,
    RD,
    RR_FIXED,
    TC,
    TYPE_CLASS,
    UDP_CLASSIC_MAX_OCTETS,
)

__all__ = ["EMPTY", "PADDING_BLOCK_OCTETS", "Block", "Query", "Result", "render", "scan_options"]

#: Responses to padded queries are padded to a multiple of this (RFC 8467, as dnspython does).
PADDING_BLOCK_OCTETS: Final = 468
_COOKIE: Final = int(dns.edns.OptionType.COOKIE)
_PADDING: Final = int(dns.edns.OptionType.PADDING)
#: COOKIE option lengths dnspython accepts: a client cookie, plus 8-32 octets of server cookie.
_COOKIE_OCTETS: Final = frozenset({8, *range(16, 41)})
_OPTION_HEADER_OCTETS: Final = 4
_ROOT: Final = b"\x00"

#: Pre-joined resource records and how many there are.
Block = tuple[bytes, int]
EMPTY: Final[Block] = (b"", 0)


class Query(NamedTuple):
    """What the answer depends on, parsed from one query.

    A NamedTuple rather than a frozen dataclass: one is made per query, and
    making a frozen dataclass costs several times as much.
    """

    msg_id: int
    flags: int
    question: bytes  # the question section to echo, as wire
    qdcount: int
    edns: int  # EDNS version, -1 without OPT
    payload: int
    ednsflags: int
    pad: bool  # the query carried a PADDING option


class Result(NamedTuple):
    """The content of one response (a NamedTuple, as :class:`Query`)."""

    rcode: int
    authoritative: bool = False
    dnssec: bool = False
    answer: Block = EMPTY
    authority: Block = EMPTY
    echo_question: bool = True


def scan_options(wire: bytes, start: int, end: int) -> bool | None:
    """Check EDNS options the way dnspython would parse them.

    Returns:
        Whether a PADDING option is present, or ``None`` when an option is
        malformed or of a type dnspython parses itself (then dnspython decides).
    """
    pad = False
    pos = start
    while pos < end:
        if pos + _OPTION_HEADER_OCTETS > end:
            return None
        code, length = TYPE_CLASS.unpack_from(wire, pos)
        pos += _OPTION_HEADER_OCTETS + length
        if pos > end:
            return None
        if code == _PADDING:
            pad = True
        elif code == _COOKIE:
            if length not in _COOKIE_OCTETS:
                return None
        elif not _generic_option(code):
            return None
    return pad


_GENERIC_OPTIONS: dict[int, bool] = {}


def _generic_option(code: int) -> bool:
    """Whether dnspython keeps an option of this type as opaque bytes."""
    generic = _GENERIC_OPTIONS.get(code)
    if generic is None:
        option_class = dns.edns.get_option_class(dns.edns.OptionType.make(code))
        generic = option_class is dns.edns.GenericOption
        _GENERIC_OPTIONS[code] = generic
    return generic


def render(query: Query, result: Result, max_udp: int | None) -> bytes:
    """Assemble the response, with TC and empty sections when it does not fit."""
    if max_udp is None:  # wire.udp_limit, inline: this runs for every query
        limit = DNS_MESSAGE_MAX_OCTETS
    elif query.edns >= 0:
        limit = max(UDP_CLASSIC_MAX_OCTETS, min(query.payload, max_udp))
    else:
        limit = UDP_CLASSIC_MAX_OCTETS
    question, qdcount = (query.question, query.qdcount) if result.echo_question else (b"", 0)
    answer, authority = result.answer, result.authority
    flags = QR | (query.flags & (OPCODE_MASK | RD)) | (result.rcode & 0xF)
    if result.authoritative:
        flags |= AA
    opt_octets = 0
    if query.edns >= 0:
        opt_octets = OPT_FIXED_OCTETS + (_OPTION_HEADER_OCTETS if query.pad else 0)
    size = HEADER_OCTETS + len(question) + len(answer[0]) + len(authority[0]) + opt_octets
    if size > limit or (query.pad and padded(size) > limit):
        flags |= TC
        answer = authority = EMPTY
        size = HEADER_OCTETS + len(question) + opt_octets
    header = HEADER.pack(
        query.msg_id,
        flags,
        qdcount,
        answer[1],
        authority[1],
        1 if query.edns >= 0 else 0,
    )
    if query.edns < 0:
        return b"".join((header, question, answer[0], authority[0]))
    ednsflags = ((result.rcode >> 4) << 24) | (DO if result.dnssec else 0)
    options = b""
    if query.pad:
        padding = padded(size) - size
        options = TYPE_CLASS.pack(_PADDING, padding) + bytes(padding)
    opt = _ROOT + RR_FIXED.pack(OPT, EDNS_PAYLOAD_OCTETS, ednsflags, len(options)) + options
    return b"".join((header, question, answer[0], authority[0], opt))


def padded(size: int) -> int:
    """``size`` rounded up to a multiple of the padding block."""
    return -(-size // PADDING_BLOCK_OCTETS) * PADDING_BLOCK_OCTETS
