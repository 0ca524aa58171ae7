"""DNS wire constants and helpers, once: sizes, header bits, and the shared reply shapes.

Rdata types, classes and header flags come from dnspython; the ``int`` forms here are
for hot loops that compare them against numbers read from wire bytes.
"""

from __future__ import annotations

import struct
from typing import Final

import dns.flags
import dns.rdataclass
import dns.rdatatype

__all__ = [
    "DNS_MESSAGE_MAX_OCTETS",
    "EDNS_PAYLOAD_OCTETS",
    "HEADER_OCTETS",
    "LABEL_MAX_OCTETS",
    "NAME_MAX_OCTETS",
    "UDP_CLASSIC_MAX_OCTETS",
    "header_reply",
    "udp_limit",
]

#: The EDNS0 payload size queries and responses advertise (DNS flag day 2020).
EDNS_PAYLOAD_OCTETS: Final = 1232
#: The UDP response limit for clients without EDNS (RFC 1035).
UDP_CLASSIC_MAX_OCTETS: Final = 512
#: The largest DNS message (a TCP response, a UDP datagram read) there is.
DNS_MESSAGE_MAX_OCTETS: Final = 65535
#: Size of the fixed DNS header.
HEADER_OCTETS: Final = 12
#: The longest label and the longest name, in octets (RFC 1035 section 2.3.4).
LABEL_MAX_OCTETS: Final = 63
NAME_MAX_OCTETS: Final = 255

HEADER: Final = struct.Struct("!HHHHHH")  # id, flags, QD, AN, NS, AR counts
RR_FIXED: Final = struct.Struct("!HHIH")  # type, class, TTL, rdata length
TYPE_CLASS: Final = struct.Struct("!HH")  # also: option code, option length
OPT_FIXED_OCTETS: Final = 11  # an OPT record's root owner, type, class, TTL, rdata length

QR: Final = int(dns.flags.QR)
AA: Final = int(dns.flags.AA)
TC: Final = int(dns.flags.TC)
RD: Final = int(dns.flags.RD)
DO: Final = int(dns.flags.DO)
OPCODE_MASK: Final = 0x7800

IN: Final = int(dns.rdataclass.IN)
SOA: Final = int(dns.rdatatype.SOA)
NS: Final = int(dns.rdatatype.NS)
CNAME: Final = int(dns.rdatatype.CNAME)
DNAME: Final = int(dns.rdatatype.DNAME)
TXT: Final = int(dns.rdatatype.TXT)
OPT: Final = int(dns.rdatatype.OPT)
DS: Final = int(dns.rdatatype.DS)
RRSIG: Final = int(dns.rdatatype.RRSIG)
NSEC: Final = int(dns.rdatatype.NSEC)
DNSKEY: Final = int(dns.rdatatype.DNSKEY)
NSEC3: Final = int(dns.rdatatype.NSEC3)
NSEC3PARAM: Final = int(dns.rdatatype.NSEC3PARAM)
ANY: Final = int(dns.rdatatype.ANY)
TRANSFER_TYPES: Final = frozenset({int(dns.rdatatype.AXFR), int(dns.rdatatype.IXFR)})
#: Query types answered at a hashed NSEC3 owner name; it does not exist for any other.
HASHED_OWNER_TYPES: Final = frozenset({NSEC3, ANY})


def header_reply(wire: bytes, rcode: int) -> bytes | None:
    """A header-only response to ``wire`` echoing its id, opcode and RD; None to drop it
    (too short for a header, or a response itself)."""
    if len(wire) < HEADER_OCTETS:
        return None
    msg_id, flags = struct.unpack_from("!HH", wire)
    if flags & QR:
        return None
    reply_flags = QR | (flags & (OPCODE_MASK | RD)) | (int(rcode) & 0xF)
    return HEADER.pack(msg_id, reply_flags, 0, 0, 0, 0)


def udp_limit(edns: int, payload: int, max_udp: int | None) -> int:
    """The largest response to send: a TCP message when ``max_udp`` is None, else what
    the query's EDNS payload (``edns`` < 0: no EDNS) and the server both allow."""
    if max_udp is None:
        return DNS_MESSAGE_MAX_OCTETS
    if edns >= 0:
        return max(UDP_CLASSIC_MAX_OCTETS, min(payload, max_udp))
    return UDP_CLASSIC_MAX_OCTETS
