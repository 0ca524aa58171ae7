"""Tests for alter_publish.dns.fastcheck, with the full validator as the oracle.

A small zone is signed with :func:`alter_publish.dns.dnssec.sign_records` (real Ed25519 keys)
and served by :class:`alter_publish.dns.server.ZoneServer` on 127.0.0.1. The fast path
must give the texts the :class:`~alter_publish.verify.resolve.StubResolver` gives for every
secure positive answer, None for everything else, and never accept what the full path
(dnspython parsing, ``is_response``, :func:`validate_response`) refuses.

Tampered replies are built by taking a real reply apart into its resource records,
editing one part, and putting it back together by hand, so that every byte is under
the test's control (compression included).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import dns.dnssec
import dns.dnssectypes
import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.DNSKEY
import dns.rdtypes.ANY.RRSIG
import dns.rrset
import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alter_publish.definition.model import DNSSECSpec
from alter_publish.dns.anchors import parse_trust_anchors
from alter_publish.dns.client import QUERY_TRIES
from alter_publish.dns.dnssec import SignatureWindow, sign_records
from alter_publish.dns.fastcheck import (
    ZoneKeys,
    _read_name,
    exchange_many,
    owner_labels,
    query_wire,
    secure_txt,
)
from alter_publish.dns.records import from_zone
from alter_publish.dns.server import ZoneServer
from alter_publish.dns.validation import DNSSECStatus, validate_response
from alter_publish.dns.wire import EDNS_PAYLOAD_OCTETS
from alter_publish.dns.zonekeys import ZoneKey, ZoneKeyRole
from alter_publish.dns.zonetext import txt_text
from alter_publish.errors import ResolveError, ServeError
from alter_publish.verify.resolve import Answer, StubResolver

NOW = 1_767_225_600  # 2026-01-01T00:00:00Z
ORIGIN = dns.name.from_text("example.com.")
WINDOW = SignatureWindow.fresh(NOW, 14 * 86400)
IN = dns.rdataclass.IN
TXT = dns.rdatatype.TXT
RRSIG = dns.rdatatype.RRSIG
TIMEOUT_SECONDS = 2.0

ZONE_TEXT = f"""\
$ORIGIN example.com.
$TTL 3600
@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300
@ IN NS ns1
ns1 IN A 192.0.2.53
_alter IN TXT "v=alter1; apex"
_alter.blake IN TXT "v=alter1; h=~blake; e=1"
_alter.multi IN TXT "first part " "second part"
_alter.multi IN TXT "another record"
_alter.deploy.bot IN TXT "v=alter1; deploy.bot"
_alter.bytes IN TXT "\\128\\255\\000x;"
_alter.empty IN TXT ""
_alter.long IN TXT "{"a" * 255}" "{"b" * 255}" "{"c" * 100}"
_alter.MiXeD 600 IN TXT "mixed case owner"
_alter.alias IN CNAME _alter.blake
*.wild IN TXT "v=alter1; wild"
"""

#: Owners whose answer is one signed TXT rrset: the fast path must prove them.
SECURE_OWNERS = (
    "_alter.example.com.",
    "_alter.blake.example.com.",
    "_alter.multi.example.com.",
    "_alter.deploy.bot.example.com.",
    "_alter.bytes.example.com.",
    "_alter.empty.example.com.",
    "_alter.long.example.com.",
    "_alter.mixed.example.com.",
)
#: Owners the full validator proves but the fast path leaves to it.
FALLBACK_OWNERS = (
    "_alter.alias.example.com.",  # CNAME in the answer
    "_alter.nobody.example.com.",  # NXDOMAIN
    "ns1.example.com.",  # NODATA
)
OWNERS = SECURE_OWNERS + FALLBACK_OWNERS


# --------------------------------------------------------------------------
# The signed zone, its keys, and what the server and the full path say
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class World:
    """One signed zone and everything learnt from serving it once."""

    zone: dns.zone.Zone
    ksk: ZoneKey
    zsk: ZoneKey
    dnskeys: dns.rrset.RRset
    keys: ZoneKeys
    replies: dict[str, bytes]
    answers: dict[str, Answer]


def _signed_zone(denial: str) -> tuple[dns.zone.Zone, ZoneKey, ZoneKey, str]:
    ksk = ZoneKey("example.com", ZoneKeyRole.KSK, NOW, Ed25519PrivateKey.generate())
    zsk = ZoneKey("example.com", ZoneKeyRole.ZSK, NOW, Ed25519PrivateKey.generate())
    unsigned = dns.zone.from_text(ZONE_TEXT, origin=ORIGIN, relativize=False)
    signed = sign_records(
        from_zone(unsigned),
        keys=(ksk, zsk),
        spec=DNSSECSpec(denial=denial),
        window=WINDOW,
        dnskey_ttl=3600,
    )
    text = ZONE_TEXT + signed.records_text
    return dns.zone.from_text(text, origin=ORIGIN, relativize=False), ksk, zsk, signed.ds_text


@functools.cache
def world(denial: str = "nsec") -> World:
    zone, ksk, zsk, ds_text = _signed_zone(denial)
    (anchor,) = parse_trust_anchors(ds_text, where="test")
    with ZoneServer([zone]) as server:
        with StubResolver(server.address, NOW, (anchor,), TIMEOUT_SECONDS) as stub:
            validation, dnskeys = stub.zone_keys(anchor)
            answers = stub.query_txt_many(OWNERS)
        replies = exchange_many(
            server.address, [owner_labels(owner) for owner in OWNERS], timeout=TIMEOUT_SECONDS
        )
    assert validation.status is DNSSECStatus.SECURE, validation
    assert dnskeys is not None
    found: dict[str, Answer] = {}
    for owner, answer in zip(OWNERS, answers, strict=True):
        assert isinstance(answer, Answer), answer
        found[owner] = answer
    got: dict[str, bytes] = {}
    for owner, reply in zip(OWNERS, replies, strict=True):
        assert reply is not None, owner
        got[owner] = reply
    return World(zone, ksk, zsk, dnskeys, ZoneKeys.from_dnskeys(ORIGIN, dnskeys), got, found)


def full_path(
    wire: bytes, owner: str, now: int = NOW, signed: World | None = None
) -> tuple[str, ...] | None:
    """What the resolver's UDP path makes of a reply: its texts if secure, else None.

    The steps of ``StubResolver.exchange_many`` and ``_answer``: dnspython parses the
    reply (no trailing octets), it must be the response to the question, not
    truncated, NOERROR or NXDOMAIN, and validate secure.
    """
    name = dns.name.from_text(owner)
    try:
        response = dns.message.from_wire(wire, ignore_trailing=False)
    except dns.exception.DNSException:
        return None
    query = dns.message.make_query(name, TXT, want_dnssec=True)
    query.id = response.id
    if not query.is_response(response) or response.flags & dns.flags.TC:
        return None
    if response.rcode() not in (dns.rcode.NOERROR, dns.rcode.NXDOMAIN):
        return None
    validation = validate_response(
        response, name, TXT, zone=ORIGIN, dnskeys=(signed or world()).dnskeys, now=now
    )
    if validation.status is not DNSSECStatus.SECURE:
        return None
    return tuple(
        txt_text(rdata.strings)
        for rrset in response.answer
        if rrset.name == name and rrset.rdtype == TXT and rrset.rdclass == IN
        for rdata in rrset
    )


def name_wire(name: str | dns.name.Name) -> bytes:
    """The uncompressed wire form of an absolute name."""
    wire = (dns.name.from_text(name) if isinstance(name, str) else name).to_wire()
    assert wire is not None
    return wire


def rdata_wire(rdata: dns.rdata.Rdata) -> bytes:
    """The wire form of an rdata (names uncompressed)."""
    wire = rdata.to_wire()
    assert wire is not None
    return wire


def fast(
    wire: bytes, owner: str, now: int = NOW, keys: ZoneKeys | None = None
) -> tuple[str, ...] | None:
    return secure_txt(wire, owner_labels(owner), keys or world().keys, now)


# --------------------------------------------------------------------------
# The fast path agrees with the full one on real answers
# --------------------------------------------------------------------------


@pytest.mark.parametrize("denial", ["nsec", "nsec3"])
@pytest.mark.parametrize("owner", SECURE_OWNERS)
def test_secure_answers_give_the_full_paths_texts(denial: str, owner: str) -> None:
    answer = world(denial).answers[owner]
    assert answer.dnssec is DNSSECStatus.SECURE, answer.reason
    reply = world(denial).replies[owner]
    got = secure_txt(reply, owner_labels(owner), world(denial).keys, NOW)
    assert got
    # The server's order of rdatas within an rrset varies between its answers: the same
    # texts, in the order of this very reply.
    assert sorted(got) == sorted(answer.texts)
    assert got == full_path(reply, owner, signed=world(denial))


def test_texts_are_joined_strings_decoded_latin1() -> None:
    replies = world().replies
    assert sorted(fast(replies[MULTI], MULTI) or ()) == ["another record", "first part second part"]
    assert fast(replies["_alter.bytes.example.com."], "_alter.bytes.example.com.") == (
        "\x80\xff\x00x;",
    )
    assert fast(replies["_alter.empty.example.com."], "_alter.empty.example.com.") == ("",)
    long_text = "a" * 255 + "b" * 255 + "c" * 100
    assert fast(replies["_alter.long.example.com."], "_alter.long.example.com.") == (long_text,)


@pytest.mark.parametrize("owner", FALLBACK_OWNERS)
def test_other_answers_are_left_to_the_full_validator(owner: str) -> None:
    answer = world().answers[owner]
    assert answer.dnssec is DNSSECStatus.SECURE, answer.reason  # the full path proves them
    assert fast(world().replies[owner], owner) is None


def test_a_reply_for_another_owner_is_refused() -> None:
    reply = world().replies["_alter.blake.example.com."]
    assert fast(reply, "_alter.example.com.") is None


def test_keys_of_another_zone_prove_nothing() -> None:
    other = Ed25519PrivateKey.generate()
    dnskey = dns.dnssec.make_dnskey(other.public_key(), dns.dnssectypes.Algorithm.ED25519, 256)
    keys = ZoneKeys.from_dnskeys(ORIGIN, [dnskey])
    reply = world().replies["_alter.blake.example.com."]
    assert fast(reply, "_alter.blake.example.com.", keys=keys) is None
    net = ZoneKeys(owner_labels("example.net."), world().keys.keys)
    assert fast(reply, "_alter.blake.example.com.", keys=net) is None


@pytest.mark.parametrize(
    ("now", "valid"),
    [
        (WINDOW.inception, True),
        (WINDOW.expiration, True),
        (WINDOW.inception - 1, False),
        (WINDOW.expiration + 1, False),
    ],
    ids=["at-inception", "at-expiration", "not-yet-valid", "expired"],
)
def test_signature_window_bounds_match_the_full_path(now: int, valid: bool) -> None:
    owner = "_alter.blake.example.com."
    reply = world().replies[owner]
    expected = ("v=alter1; h=~blake; e=1",) if valid else None
    assert fast(reply, owner, now=now) == expected
    assert full_path(reply, owner, now=now) == expected


# --------------------------------------------------------------------------
# A reply taken apart, to tamper with
# --------------------------------------------------------------------------

POINTER = b"\xc0\x0c"  # the owner, compressed to the question's name
OPT = 41


@dataclass(frozen=True)
class RR:
    """One resource record as it goes on the wire."""

    owner: bytes
    rdtype: int
    rdclass: int
    ttl: int
    rdata: bytes

    def to_wire(self) -> bytes:
        fixed = self.rdtype.to_bytes(2, "big") + self.rdclass.to_bytes(2, "big")
        size = len(self.rdata).to_bytes(2, "big")
        return self.owner + fixed + self.ttl.to_bytes(4, "big") + size + self.rdata


@dataclass(frozen=True)
class Reply:
    """A DNS message as header fields and records; ``to_wire`` puts it together."""

    query_id: int
    flags: int
    question: bytes
    answer: tuple[RR, ...]
    authority: tuple[RR, ...] = ()
    additional: tuple[RR, ...] = ()
    trailing: bytes = b""

    @classmethod
    def take_apart(cls, wire: bytes) -> Reply:
        message = dns.message.from_wire(wire)
        question = message.question[0]
        answer = tuple(
            RR(POINTER, rrset.rdtype, rrset.rdclass, rrset.ttl, rdata.to_wire())
            for rrset in message.answer
            for rdata in rrset
        )
        opt = RR(b"\x00", OPT, EDNS_PAYLOAD_OCTETS, int(message.ednsflags), b"")
        question_wire = name_wire(question.name) + TXT.to_bytes(2, "big") + b"\x00\x01"
        return cls(message.id, int(message.flags), question_wire, answer, (), (opt,))

    def to_wire(self) -> bytes:
        counts = (1, len(self.answer), len(self.authority), len(self.additional))
        header = b"".join(
            value.to_bytes(2, "big") for value in (self.query_id, self.flags, *counts)
        )
        records = (*self.answer, *self.authority, *self.additional)
        return header + self.question + b"".join(rr.to_wire() for rr in records) + self.trailing

    def rrsig(self) -> tuple[int, dns.rdtypes.ANY.RRSIG.RRSIG]:
        """The index in the answer and the rdata of the (first) RRSIG."""
        for index, rr in enumerate(self.answer):
            if rr.rdtype == RRSIG:
                rdata = dns.rdata.from_wire(IN, RRSIG, rr.rdata, 0, len(rr.rdata))
                assert isinstance(rdata, dns.rdtypes.ANY.RRSIG.RRSIG)
                return index, rdata
        raise AssertionError("no RRSIG")

    def with_answer(self, index: int, **changes: object) -> Reply:
        answer = list(self.answer)
        answer[index] = dataclasses.replace(answer[index], **changes)  # type: ignore[arg-type]  # (test edits of any field)
        return dataclasses.replace(self, answer=tuple(answer))

    def with_rrsig(self, **changes: object) -> Reply:
        index, rdata = self.rrsig()
        return self.with_answer(index, rdata=rdata.replace(**changes).to_wire())


BLAKE = "_alter.blake.example.com."
MULTI = "_alter.multi.example.com."


def blake() -> Reply:
    return Reply.take_apart(world().replies[BLAKE])


def test_taking_a_reply_apart_and_back_gives_its_bytes() -> None:
    for owner in SECURE_OWNERS:
        assert Reply.take_apart(world().replies[owner]).to_wire() == world().replies[owner]


def _flip(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1 :]


def _signature_bit(reply: Reply) -> Reply:
    index, _ = reply.rrsig()
    return reply.with_answer(index, rdata=_flip(reply.answer[index].rdata, -1))


def _txt_bit(reply: Reply) -> Reply:
    return reply.with_answer(0, rdata=_flip(reply.answer[0].rdata, 3))


def _other_txt_rdata(reply: Reply) -> Reply:
    extra = RR(POINTER, TXT, IN, 3600, b"\x05extra")
    return dataclasses.replace(reply, answer=(extra, *reply.answer))


def _key_tag(reply: Reply) -> Reply:
    return reply.with_rrsig(key_tag=(reply.rrsig()[1].key_tag + 1) % 65536)


def _algorithm(reply: Reply) -> Reply:
    return reply.with_rrsig(algorithm=dns.dnssectypes.Algorithm.ECDSAP256SHA256)


def _signer(reply: Reply) -> Reply:
    return reply.with_rrsig(signer=dns.name.from_text("example.net."))


def _signer_parent(reply: Reply) -> Reply:
    return reply.with_rrsig(signer=dns.name.from_text("com."))


def _labels_more(reply: Reply) -> Reply:
    return reply.with_rrsig(labels=reply.rrsig()[1].labels + 1)


def _labels_fewer(reply: Reply) -> Reply:
    return reply.with_rrsig(labels=reply.rrsig()[1].labels - 1)


def _original_ttl(reply: Reply) -> Reply:
    return reply.with_rrsig(original_ttl=reply.rrsig()[1].original_ttl + 1)


def _covers_a(reply: Reply) -> Reply:
    return reply.with_rrsig(type_covered=dns.rdatatype.A)


def _into_question(reply: Reply, suffix: bytes) -> bytes:
    """A compression pointer to ``suffix`` (a name's wire form) in the question."""
    return (0xC000 | 12 + reply.question.index(suffix)).to_bytes(2, "big")


APEX = name_wire(ORIGIN)


def _signer_compressed(reply: Reply) -> Reply:
    index, _ = reply.rrsig()
    rdata = reply.answer[index].rdata
    compressed = rdata[:18] + _into_question(reply, APEX) + rdata[18 + len(APEX) :]
    return reply.with_answer(index, rdata=compressed)


def _signer_overruns(reply: Reply) -> Reply:
    index, _ = reply.rrsig()
    return reply.with_answer(index, rdata=reply.answer[index].rdata[:24])


def _without_rrsig(reply: Reply) -> Reply:
    return dataclasses.replace(reply, answer=reply.answer[:1])


def _without_txt(reply: Reply) -> Reply:
    return dataclasses.replace(reply, answer=reply.answer[1:])


def _extra_a_at_owner(reply: Reply) -> Reply:
    extra = RR(POINTER, dns.rdatatype.A, IN, 3600, b"\xc0\x00\x02\x01")
    return dataclasses.replace(reply, answer=(*reply.answer, extra))


def _extra_cname(reply: Reply) -> Reply:
    target = name_wire("_alter.example.com.")
    extra = RR(POINTER, dns.rdatatype.CNAME, IN, 3600, target)
    return dataclasses.replace(reply, answer=(extra, *reply.answer))


def _txt_elsewhere(reply: Reply) -> Reply:
    other = RR(b"\x01x\xc0\x0c", TXT, IN, 3600, reply.answer[0].rdata)
    return dataclasses.replace(reply, answer=(*reply.answer, other))


def _txt_class_ch(reply: Reply) -> Reply:
    return reply.with_answer(0, rdclass=dns.rdataclass.CH)


def _empty_txt_rdata(reply: Reply) -> Reply:
    return dataclasses.replace(reply, answer=(RR(POINTER, TXT, IN, 3600, b""), *reply.answer))


def _bad_txt_string(reply: Reply) -> Reply:
    rdata = reply.answer[0].rdata
    return reply.with_answer(0, rdata=bytes([len(rdata)]) + rdata[1:])


def _authority_ns(reply: Reply) -> Reply:
    apex = _into_question(reply, APEX)
    ns = RR(apex, dns.rdatatype.NS, IN, 3600, b"\x03ns1" + apex)
    return dataclasses.replace(reply, authority=(ns,))


def _flags(mask: int, value: int) -> Callable[[Reply], Reply]:
    def change(reply: Reply) -> Reply:
        return dataclasses.replace(reply, flags=(reply.flags & ~mask) | value)

    return change


def _extended_rcode(reply: Reply) -> Reply:
    opt = dataclasses.replace(reply.additional[0], ttl=reply.additional[0].ttl | 0x01000000)
    return dataclasses.replace(reply, additional=(opt,))


def _opt_option(reply: Reply) -> Reply:
    opt = dataclasses.replace(reply.additional[0], rdata=b"\x00\x0a\x00\x08" + bytes(8))
    return dataclasses.replace(reply, additional=(opt,))


def _second_opt(reply: Reply) -> Reply:
    return dataclasses.replace(reply, additional=reply.additional * 2)


def _glue_in_additional(reply: Reply) -> Reply:
    glue = RR(b"\x03ns1" + _into_question(reply, APEX), dns.rdatatype.A, IN, 3600, bytes(4))
    return dataclasses.replace(reply, additional=(*reply.additional, glue))


def _wrong_question(reply: Reply) -> Reply:
    question = name_wire("_alter.erin.example.com.") + b"\x00\x10\x00\x01"
    return dataclasses.replace(reply, question=question)


def _question_type_a(reply: Reply) -> Reply:
    return dataclasses.replace(reply, question=reply.question[:-4] + b"\x00\x01\x00\x01")


def _pointer_loop(reply: Reply) -> Reply:
    here = 12 + len(reply.question)  # where the first answer's owner name starts
    return reply.with_answer(0, owner=(0xC000 | here).to_bytes(2, "big"))


def _pointer_loop_two(reply: Reply) -> Reply:
    here = 12 + len(reply.question)  # "x" then a pointer back to the label before it
    return reply.with_answer(0, owner=b"\x01x" + (0xC000 | here).to_bytes(2, "big"))


def _pointer_forward(reply: Reply) -> Reply:
    return reply.with_answer(0, owner=(0xC000 | len(reply.to_wire()) - 20).to_bytes(2, "big"))


def _pointer_outside(reply: Reply) -> Reply:
    return reply.with_answer(0, owner=b"\xff\xff")


def _trailing(reply: Reply) -> Reply:
    return dataclasses.replace(reply, trailing=b"\x00")


def _trailing_two(reply: Reply) -> Reply:
    return dataclasses.replace(reply, trailing=b"\x00\x00")


Tamper = Callable[[Reply], Reply]

#: (tamper, whether the full path refuses it too). Those it accepts are shapes the fast
#: path leaves to it (it may never be more lenient, only stricter).
TAMPERS: dict[str, tuple[Tamper, bool]] = {
    "signature-bit": (_signature_bit, True),
    "txt-rdata-bit": (_txt_bit, True),
    "txt-rdata-added": (_other_txt_rdata, True),
    "key-tag": (_key_tag, True),
    "algorithm": (_algorithm, True),
    "signer-other-zone": (_signer, True),
    "signer-parent": (_signer_parent, True),
    "labels-more": (_labels_more, True),
    "labels-fewer": (_labels_fewer, True),
    "original-ttl": (_original_ttl, True),
    "rrsig-covers-a": (_covers_a, True),
    "signer-compressed": (_signer_compressed, True),
    "signer-overruns-rdata": (_signer_overruns, True),
    "no-rrsig": (_without_rrsig, True),
    "no-txt": (_without_txt, True),
    "txt-class-ch": (_txt_class_ch, True),
    "empty-txt-rdata": (_empty_txt_rdata, True),
    "bad-txt-string-length": (_bad_txt_string, True),
    "extra-a-at-owner": (_extra_a_at_owner, False),
    "extra-cname-at-owner": (_extra_cname, False),
    "extra-txt-elsewhere": (_txt_elsewhere, False),
    "authority-ns": (_authority_ns, False),
    "tc-set": (_flags(0x0200, 0x0200), True),
    "rcode-nxdomain": (_flags(0x000F, dns.rcode.NXDOMAIN), True),
    "rcode-servfail": (_flags(0x000F, dns.rcode.SERVFAIL), True),
    "opcode-notify": (_flags(0x7800, 4 << 11), True),
    "not-a-response": (_flags(0x8000, 0), True),
    "extended-rcode": (_extended_rcode, True),
    "opt-with-option": (_opt_option, False),
    "two-opts": (_second_opt, True),
    "glue-in-additional": (_glue_in_additional, False),
    "wrong-question": (_wrong_question, True),
    "question-type-a": (_question_type_a, True),
    "pointer-loop": (_pointer_loop, True),
    "pointer-loop-two": (_pointer_loop_two, True),
    "pointer-forward": (_pointer_forward, True),
    "pointer-outside": (_pointer_outside, True),
    "trailing-octet": (_trailing, True),
    "trailing-octets": (_trailing_two, True),
}


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_tampered_replies_are_refused(name: str) -> None:
    tamper, full_refuses = TAMPERS[name]
    wire = tamper(blake()).to_wire()
    assert wire != world().replies[BLAKE]
    assert fast(wire, BLAKE) is None
    if full_refuses:
        assert full_path(wire, BLAKE) is None


@pytest.mark.parametrize("cut", range(1, 60), ids=lambda cut: f"minus-{cut}")
def test_truncated_packets_are_refused(cut: int) -> None:
    wire = world().replies[BLAKE][:-cut]
    assert fast(wire, BLAKE) is None
    assert full_path(wire, BLAKE) is None


def test_every_prefix_is_refused() -> None:
    wire = world().replies[MULTI]
    for size in range(len(wire)):
        assert fast(wire[:size], MULTI) is None


def _uppercase_owner(reply: Reply) -> Reply:
    owner = name_wire(BLAKE.upper())
    return dataclasses.replace(
        reply, answer=tuple(dataclasses.replace(rr, owner=owner) for rr in reply.answer)
    )


def _uppercase_question(reply: Reply) -> Reply:
    return dataclasses.replace(reply, question=reply.question.upper())


def _uppercase_signer(reply: Reply) -> Reply:
    return reply.with_rrsig(signer=dns.name.from_text("EXAMPLE.Com."))


def _owner_pointer_into_question(reply: Reply) -> Reply:
    owner = b"\x06_alter" + _into_question(reply, name_wire("blake.example.com."))
    return dataclasses.replace(
        reply, answer=tuple(dataclasses.replace(rr, owner=owner) for rr in reply.answer)
    )


def _rrsig_first(reply: Reply) -> Reply:
    return dataclasses.replace(reply, answer=reply.answer[::-1])


def _duplicate_txt(reply: Reply) -> Reply:
    return dataclasses.replace(reply, answer=(reply.answer[0], *reply.answer))


def _bad_rrsig_then_good(reply: Reply) -> Reply:
    bad = _signature_bit(reply).answer[1]
    return dataclasses.replace(reply, answer=(reply.answer[0], bad, reply.answer[1]))


def _without_opt(reply: Reply) -> Reply:
    return dataclasses.replace(reply, additional=())


def _other_ttls(reply: Reply) -> Reply:
    return dataclasses.replace(
        reply, answer=tuple(dataclasses.replace(rr, ttl=7) for rr in reply.answer)
    )


def _other_id_and_flags(reply: Reply) -> Reply:
    # AA, RD, RA, AD and CD are not looked at; the id was matched by the exchange.
    return dataclasses.replace(reply, query_id=reply.query_id ^ 0xFFFF, flags=reply.flags | 0x05B0)


def _ksk_signed(reply: Reply) -> Reply:
    ksk = world().ksk
    rrset = dns.rrset.from_text_list(BLAKE, 3600, IN, TXT, ['"v=alter1; h=~blake; e=1"'])
    rrsig = dns.dnssec.sign(
        rrset,
        ksk.private_key,
        ORIGIN,
        ksk.dnskey,
        inception=WINDOW.inception,
        expiration=WINDOW.expiration,
    )
    return reply.with_answer(1, rdata=rrsig.to_wire())


#: Changes that keep the answer secure: both paths must accept, with the same texts.
HARMLESS: dict[str, Tamper] = {
    "uppercase-owner-uncompressed": _uppercase_owner,
    "uppercase-question": _uppercase_question,
    "uppercase-signer": _uppercase_signer,
    "owner-pointer-into-question": _owner_pointer_into_question,
    "rrsig-before-txt": _rrsig_first,
    "duplicate-txt-rdata": _duplicate_txt,
    "bad-rrsig-then-good": _bad_rrsig_then_good,
    "no-opt": _without_opt,
    "other-ttls": _other_ttls,
    "other-id-and-flags": _other_id_and_flags,
    "signed-by-the-ksk": _ksk_signed,
}


@pytest.mark.parametrize("name", sorted(HARMLESS))
def test_harmless_variations_are_accepted_by_both(name: str) -> None:
    wire = HARMLESS[name](blake()).to_wire()
    expected = ("v=alter1; h=~blake; e=1",)
    assert full_path(wire, BLAKE) == expected
    assert fast(wire, BLAKE) == expected


def test_a_wildcard_rrsig_beside_a_good_one_is_left_to_the_full_validator() -> None:
    reply = blake()
    wildcard = _labels_fewer(reply).answer[1]
    wire = dataclasses.replace(reply, answer=(*reply.answer, wildcard)).to_wire()
    assert fast(wire, BLAKE) is None


def test_a_wildcard_expansion_is_left_to_the_full_validator() -> None:
    # What a server that synthesizes from *.wild sends for x.wild (ours does not).
    zsk = world().zsk
    wildcard = dns.rrset.from_text_list("*.wild.example.com.", 300, IN, TXT, ['"v=alter1 wild"'])
    rrsig = dns.dnssec.sign(
        wildcard,
        zsk.private_key,
        ORIGIN,
        zsk.dnskey,
        inception=WINDOW.inception,
        expiration=WINDOW.expiration,
    )
    owner = dns.name.from_text("x.wild.example.com.")
    expanded = dns.rrset.from_rdata_list(owner, 300, list(wildcard))
    sigs = dns.rrset.from_rdata(owner, 300, rrsig)
    dns.dnssec.validate(expanded, sigs, {ORIGIN: world().dnskeys}, now=NOW)
    answer = (
        RR(POINTER, TXT, IN, 300, rdata_wire(wildcard[0])),
        RR(POINTER, RRSIG, IN, 300, rdata_wire(rrsig)),
    )
    question = name_wire(owner) + b"\x00\x10\x00\x01"
    wire = Reply(1, 0x8400, question, answer).to_wire()
    assert fast(wire, owner.to_text()) is None
    assert full_path(wire, owner.to_text()) is None  # no proof that x.wild does not exist


# --------------------------------------------------------------------------
# Never raises, never more lenient
# --------------------------------------------------------------------------


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wire=st.binary(max_size=700))
def test_random_bytes_never_raise(wire: bytes) -> None:
    assert secure_txt(wire, owner_labels(BLAKE), world().keys, NOW) is None


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tail=st.binary(max_size=500))
def test_a_real_question_with_random_records_never_raises(tail: bytes) -> None:
    wire = world().replies[BLAKE]
    head = wire[:2] + b"\x84\x00\x00\x01" + wire[6:12] + blake().question
    assert secure_txt(head + tail, owner_labels(BLAKE), world().keys, NOW) is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    owner=st.sampled_from(SECURE_OWNERS),
    edits=st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 255)), max_size=4),
    cut=st.integers(0, 3),
)
def test_mutated_replies_are_never_accepted_beyond_the_full_path(
    owner: str, edits: list[tuple[int, int]], cut: int
) -> None:
    wire = bytearray(world().replies[owner])
    for index, value in edits:
        wire[index % len(wire)] = value
    mutated = bytes(wire[: len(wire) - cut])
    got = fast(mutated, owner)
    if got is not None:
        assert full_path(mutated, owner) == got


# --------------------------------------------------------------------------
# Names: the decompressor follows pointers exactly as dnspython does
# --------------------------------------------------------------------------


def _dnspython_name(message: bytes, position: int) -> tuple[bytes, int] | None:
    try:
        name, used = dns.name.from_wire(message, position)
    except dns.exception.DNSException:
        return None
    return name_wire(name.canonicalize()), position + used


_NAME_PIECES = st.one_of(
    st.binary(min_size=1, max_size=8).map(lambda label: bytes([len(label)]) + label),
    st.integers(0, 40).map(lambda target: bytes([0xC0, target])),
    st.just(b"\x00"),
    st.sampled_from([b"\x40", b"\x80", b"\x3f", b"\x05aBcDe"]),
)


@settings(max_examples=1000, deadline=None)
@given(pieces=st.lists(_NAME_PIECES, max_size=12), position=st.integers(0, 40))
def test_names_are_read_as_dnspython_reads_them(pieces: list[bytes], position: int) -> None:
    message = b"".join(pieces)
    assert _read_name(message, position) == _dnspython_name(message, position)


def test_long_names_and_pointer_chains_are_bounded() -> None:
    label = b"\x3f" + b"a" * 63
    four = label * 4 + b"\x00"  # 257 octets: too long
    assert _read_name(four, 0) is None
    assert _dnspython_name(four, 0) is None
    three = label * 3 + b"\x3d" + b"a" * 61 + b"\x00"  # 255 octets: the longest name
    assert _read_name(three, 0) == _dnspython_name(three, 0)
    chain = b"\x00" + b"".join(bytes([0xC0, 2 * hop]) for hop in range(20))
    for start in range(1, len(chain), 2):
        assert _read_name(chain, start) == _dnspython_name(chain, start)


# --------------------------------------------------------------------------
# Zone keys, owner names, queries
# --------------------------------------------------------------------------


def test_zone_keys_keep_the_keys_the_full_validator_would_try() -> None:
    def dnskey(flags: int, protocol: int = 3) -> dns.rdtypes.ANY.DNSKEY.DNSKEY:
        public = Ed25519PrivateKey.generate().public_key()
        key = dns.dnssec.make_dnskey(public, dns.dnssectypes.Algorithm.ED25519, flags)
        replaced = key.replace(protocol=protocol)
        assert isinstance(replaced, dns.rdtypes.ANY.DNSKEY.DNSKEY)
        return replaced

    zsk, ksk = dnskey(256), dnskey(257)
    dropped = [dnskey(0), dnskey(256 | 128), dnskey(256, protocol=2)]
    ecdsa = dns.dnssec.make_dnskey(
        ec.generate_private_key(ec.SECP256R1()).public_key(),
        dns.dnssectypes.Algorithm.ECDSAP256SHA256,
        256,
    )
    keys = ZoneKeys.from_dnskeys(dns.name.from_text("Example.COM."), [zsk, ksk, ecdsa, *dropped])
    assert keys.origin == (b"example", b"com", b"")
    assert {tag: len(found) for tag, found in keys.keys.items()} == {
        dns.dnssec.key_id(zsk): 1,
        dns.dnssec.key_id(ksk): 1,
    }
    assert world().keys.keys.keys() == {world().ksk.tag, world().zsk.tag}


def test_zone_keys_need_an_absolute_origin() -> None:
    with pytest.raises(ValueError, match="not absolute"):
        ZoneKeys.from_dnskeys(dns.name.from_text("example", origin=None), [])
    with pytest.raises(ValueError, match="not an absolute name"):
        ZoneKeys((b"example", b"com"), {})


def test_zone_keys_are_read_only() -> None:
    keys = ZoneKeys((b"Example", b"com", b""), {})
    assert keys.origin == (b"example", b"com", b"")
    with pytest.raises(TypeError):
        keys.keys[1] = ()  # type: ignore[index]  # (checking it is immutable at run time)


@pytest.mark.parametrize(
    "owner",
    [
        "_alter.blake.example.com.",
        "_Alter.BLAKE.Example.com.",
        ".",
        "a\\.b.example.com.",
        "\\065.x.",
    ],
)
def test_owner_labels_are_dnspythons_canonical_labels(owner: str) -> None:
    assert owner_labels(owner) == dns.name.from_text(owner).canonicalize().labels


@pytest.mark.parametrize("owner", ["relative.name", "a..b.", "x" * 64 + ".com.", ""])
def test_owner_labels_refuse_what_is_no_absolute_name(owner: str) -> None:
    with pytest.raises(ValueError, match=r"absolute|domain name"):
        owner_labels(owner)


@settings(max_examples=200, deadline=None)
@given(labels=st.lists(st.from_regex(r"[A-Za-z0-9_*-]{1,20}", fullmatch=True), max_size=6))
def test_owner_labels_match_dnspython(labels: list[str]) -> None:
    owner = ".".join(labels) + "."
    assert owner_labels(owner) == dns.name.from_text(owner).canonicalize().labels


def test_query_wire_asks_txt_with_do_and_no_recursion() -> None:
    wire = query_wire(owner_labels(BLAKE), 0xBEEF)
    query = dns.message.from_wire(wire, ignore_trailing=False)
    assert query.id == 0xBEEF
    assert query.flags == 0
    assert query.question[0].name == dns.name.from_text(BLAKE)
    assert (query.question[0].rdtype, query.question[0].rdclass) == (TXT, IN)
    assert query.edns == 0
    assert query.payload == EDNS_PAYLOAD_OCTETS
    assert query.ednsflags == dns.flags.DO
    assert not query.options


@pytest.mark.parametrize(
    ("owner", "query_id"),
    [((b"example", b"com"), 1), ((b"", b""), 1), ((b"x" * 64, b""), 1), ((b"com", b""), 65536)],
    ids=["relative", "empty-label", "long-label", "id-too-big"],
)
def test_query_wire_refuses_bad_input(owner: tuple[bytes, ...], query_id: int) -> None:
    with pytest.raises(ValueError, match=r"name|16-bit"):
        query_wire(owner, query_id)


# --------------------------------------------------------------------------
# The pipelined exchange
# --------------------------------------------------------------------------

MANY = 64 * 3 + 5  # several windows, the last one partial


def _many_zone() -> dns.zone.Zone:
    lines = ["$TTL 300", "@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300", "@ IN NS ns1"]
    lines += [f'h{n} IN TXT "record {n}"' for n in range(MANY)]
    return dns.zone.from_text("\n".join(lines), origin="example.com.", relativize=False)


def _question(wire: bytes) -> dns.name.Name:
    return dns.message.from_wire(wire).question[0].name


def test_replies_come_back_in_query_order_from_a_real_server() -> None:
    owners = [owner_labels(f"h{n}.example.com.") for n in range(MANY)]
    owners.insert(7, owner_labels("nothing.example.com."))  # NXDOMAIN, still a reply
    with ZoneServer([_many_zone()]) as server:
        replies = exchange_many(server.address, owners, timeout=TIMEOUT_SECONDS, window=16)
    assert len(replies) == len(owners)
    for owner, reply in zip(owners, replies, strict=True):
        assert reply is not None
        assert _question(reply) == dns.name.Name(owner)
    nxdomain = replies[7]
    assert nxdomain is not None
    assert dns.message.from_wire(nxdomain).rcode() == dns.rcode.NXDOMAIN


def test_nothing_to_ask_and_bad_windows() -> None:
    assert exchange_many(("127.0.0.1", 9), [], timeout=0.1) == []
    with pytest.raises(ValueError, match="window"):
        exchange_many(("127.0.0.1", 9), [owner_labels(BLAKE)], timeout=0.1, window=0)
    with pytest.raises(ValueError, match="timeout"):
        exchange_many(("127.0.0.1", 9), [owner_labels(BLAKE)], timeout=0.0)


def test_the_ipv6_loopback_is_used_for_an_ipv6_server() -> None:
    server = ZoneServer([_many_zone()], address="::1")
    try:
        server.start()
    except ServeError as exc:
        pytest.skip(f"no IPv6 loopback: {exc}")
    try:
        (reply,) = exchange_many(server.address, [owner_labels("h1.example.com.")], timeout=2.0)
    finally:
        server.stop()
    assert reply is not None
    assert _question(reply) == dns.name.from_text("h1.example.com.")


@dataclass
class FakeServer:
    """A UDP server on 127.0.0.1 that answers through ``reply`` (wire in, datagrams out)."""

    address: tuple[str, int]
    copies: list[int]


@contextlib.contextmanager
def _fake_server(reply: Callable[[bytes, int], list[bytes]]) -> Iterator[FakeServer]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.05)
    seen: dict[bytes, int] = {}
    fake = FakeServer(sock.getsockname(), [])
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                wire, client = sock.recvfrom(65535)
            except TimeoutError:
                continue
            seen[wire] = seen.get(wire, 0) + 1
            fake.copies.append(seen[wire])
            for datagram in reply(wire, seen[wire]):
                sock.sendto(datagram, client)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        stop.set()
        thread.join()
        sock.close()


def _response(wire: bytes) -> dns.message.Message:
    response = dns.message.make_response(dns.message.from_wire(wire))
    response.set_rcode(dns.rcode.NXDOMAIN)
    return response


@pytest.fixture
def lossy_server() -> Iterator[FakeServer]:
    """Drops the first copy of every query and answers the second."""

    def reply(wire: bytes, copy: int) -> list[bytes]:
        return [_response(wire).to_wire()] if copy >= QUERY_TRIES else []

    with _fake_server(reply) as fake:
        yield fake


@pytest.fixture
def decoy_server() -> Iterator[FakeServer]:
    """Before each real answer: a wrong question, a wrong id, and a non-response."""

    def reply(wire: bytes, copy: int) -> list[bytes]:
        right = _response(wire)
        other_question = dns.message.make_query("h9.example.com.", TXT)
        other_question.id = right.id
        wrong_question = _response(other_question.to_wire())
        wrong_id = _response(wire)
        wrong_id.id ^= 0x5A5A
        return [
            wrong_question.to_wire(),
            wrong_id.to_wire(),
            wire,  # the query itself: QR=0
            b"\x00",
            right.to_wire(),
        ]

    with _fake_server(reply) as fake:
        yield fake


def test_unanswered_queries_are_sent_again_once(lossy_server: FakeServer) -> None:
    owners = [owner_labels(f"h{n}.example.com.") for n in range(10)]
    replies = exchange_many(lossy_server.address, owners, timeout=0.2)
    for owner, reply in zip(owners, replies, strict=True):
        assert reply is not None
        assert _question(reply) == dns.name.Name(owner)
    assert sorted(lossy_server.copies) == [1] * 10 + [2] * 10


def test_replies_are_matched_by_id_and_question(decoy_server: FakeServer) -> None:
    owners = [owner_labels(f"h{n}.example.com.") for n in range(5)]
    replies = exchange_many(decoy_server.address, owners, timeout=TIMEOUT_SECONDS)
    for owner, reply in zip(owners, replies, strict=True):
        assert reply is not None
        response = dns.message.from_wire(reply)
        assert response.flags & dns.flags.QR
        assert response.question[0].name == dns.name.Name(owner)
    assert decoy_server.copies == [1] * 5


def test_the_question_is_matched_case_insensitively() -> None:
    def reply(wire: bytes, copy: int) -> list[bytes]:
        response = _response(wire).to_wire()
        return [response[:12] + response[12:].upper()]

    with _fake_server(reply) as server:
        (got,) = exchange_many(server.address, [owner_labels(BLAKE)], timeout=TIMEOUT_SECONDS)
    assert got is not None
    assert _question(got) == dns.name.from_text(BLAKE)


def test_a_dead_port_gives_none_after_the_timeouts() -> None:
    dead = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dead.bind(("127.0.0.1", 0))
    address = dead.getsockname()
    dead.close()  # nobody listens there now: ICMP port unreachable, or nothing
    start = time.monotonic()
    replies = exchange_many(address, [owner_labels(BLAKE)] * 3, timeout=0.1)
    elapsed = time.monotonic() - start
    assert replies == [None, None, None]
    assert QUERY_TRIES * 0.1 <= elapsed < QUERY_TRIES * 0.1 + 1.0


def test_a_silent_server_gives_none_after_the_timeouts() -> None:
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    try:
        replies = exchange_many(silent.getsockname(), [owner_labels(BLAKE)] * 2, timeout=0.1)
    finally:
        silent.close()
    assert replies == [None, None]


@pytest.mark.parametrize("host", ["192.0.2.1", "2001:db8::1", "localhost", "999.1.1.1"])
def test_only_loopback_ip_addresses_are_asked(host: str) -> None:
    with pytest.raises(ResolveError, match=r"loopback|IP address"):
        exchange_many((host, 53), [owner_labels(BLAKE)], timeout=0.1)


def test_the_loopback_proof_round_trip() -> None:
    """Exchange and check together, as the proof runs them."""
    keys, owners = world().keys, [owner_labels(owner) for owner in SECURE_OWNERS]
    zone = world().zone
    with ZoneServer([zone]) as server:
        replies = exchange_many(server.address, owners, timeout=TIMEOUT_SECONDS)
    for owner, reply in zip(SECURE_OWNERS, replies, strict=True):
        assert reply is not None
        got = secure_txt(reply, owner_labels(owner), keys, NOW)
        assert got is not None
        assert sorted(got) == sorted(world().answers[owner].texts)
