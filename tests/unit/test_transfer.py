"""The wire-level AXFR reader (:mod:`alter_publish.dns.transfer`) refuses what it must.

Each test serves made-up transfer messages from a real loopback TCP server and reads
them with :func:`transfer_txt`: one test per reason a transfer is refused, the records
outside the zone skipped, and property tests: any bytes (random, or a valid transfer
mutated) are refused only with :class:`ResolveError`, and a valid transfer reads as
dnspython's reader (:func:`transfer_txt_reference`, the oracle) reads the same bytes.
"""

from __future__ import annotations

import itertools
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import dns.exception
import dns.message
import dns.name
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.TSIG
import dns.tsig
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alter_publish.dns.transfer import (
    TransferredTxt,
    TxtChanges,
    _Reader,
    _Tsig,
    transfer_txt,
    transfer_txt_changes,
    transfer_txt_reference,
)
from alter_publish.errors import ResolveError

ORIGIN = dns.name.from_text("example.com.")
ORIGIN_WIRE = b"\x07example\x03com\x00"
OTHER_WIRE = b"\x07example\x03org\x00"
KEYNAME = dns.name.from_text("xfr-key.")
KEYNAME_WIRE = b"\x07xfr-key\x00"
KEY = dns.tsig.Key(KEYNAME, "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA==", "hmac-sha256")
OTHER_KEY = dns.tsig.Key(KEYNAME, "b3RoZXItb3RoZXItb3RoZXItb3RoZXItb3RoZXItb3RoZXI=", "hmac-sha256")
IN = int(dns.rdataclass.IN)
QR_AA = 0x8400
#: The header (12 octets) and the question (example.com. AXFR IN) before the answers.
ANSWERS_AT = 12 + len(ORIGIN_WIRE) + 4
#: A pointer to the question's name, example.com. at offset 12.
TO_ORIGIN = b"\xc0\x0c"

#: Builds the messages a server sends from the query id and the query's TSIG MAC.
Build = Callable[[int, bytes], list[bytes]]


def _label(text: bytes) -> bytes:
    return bytes((len(text),)) + text


def record(owner: bytes, rdtype: int, rdata: bytes, *, rdclass: int = IN, ttl: int = 300) -> bytes:
    """One resource record's wire."""
    return owner + struct.pack("!HHIH", rdtype, rdclass, ttl, len(rdata)) + rdata


def soa(serial: int, *, owner: bytes = ORIGIN_WIRE, rdclass: int = IN) -> bytes:
    """An SOA record (ns.example.com. hostmaster.example.com.)."""
    rdata = _label(b"ns") + ORIGIN_WIRE + _label(b"hostmaster") + ORIGIN_WIRE
    return record(
        owner, 6, rdata + struct.pack("!IIIII", serial, 3600, 600, 86400, 300), rdclass=rdclass
    )


def txt(owner: bytes, *strings: bytes, ttl: int = 300, rdclass: int = IN) -> bytes:
    """A TXT record."""
    return record(owner, 16, b"".join(_label(s) for s in strings), ttl=ttl, rdclass=rdclass)


def message(
    ident: int,
    answers: list[bytes],
    *,
    flags: int = QR_AA,
    extra: list[bytes] | None = None,
    qtype: int = 252,
) -> bytes:
    """A response: the AXFR question (or ``qtype``'s), ``answers``, ``extra`` in the
    additional section."""
    extra = extra or []
    header = struct.pack("!HHHHHH", ident, flags, 1, len(answers), 0, len(extra))
    return header + ORIGIN_WIRE + struct.pack("!HH", qtype, IN) + b"".join(answers + extra)


def owner(*labels: bytes, zone: bytes = ORIGIN_WIRE) -> bytes:
    return b"".join(_label(label) for label in labels) + zone


def sign(
    ident: int, wires: list[bytes], signed: list[bool], request_mac: bytes, key: dns.tsig.Key = KEY
) -> list[bytes]:
    """``wires`` TSIG-signed as a server signs a transfer: the MAC of each signed message
    covers the unsigned ones before it (RFC 8945 section 5.3.1)."""
    ctx = None
    out: list[bytes] = []
    for wire, yes in zip(wires, signed, strict=True):
        if not yes:
            if ctx is not None:
                ctx.update(wire)
            out.append(wire)
            continue
        template = dns.rdtypes.ANY.TSIG.TSIG(  # type: ignore[no-untyped-call]  # dnspython untyped
            dns.rdataclass.ANY, dns.rdatatype.TSIG, key.algorithm, 0, 300, b"", ident, 0, b""
        )
        rdata, ctx = dns.tsig.sign(  # type: ignore[no-untyped-call]  # dnspython untyped
            wire, key, template, int(time.time()), request_mac, ctx, True
        )
        tsig = record(KEYNAME_WIRE, 250, rdata.to_wire(), rdclass=255, ttl=0)
        (arcount,) = struct.unpack_from("!H", wire, 10)
        out.append(wire[:10] + struct.pack("!H", arcount + 1) + wire[12:] + tsig)
    return out


@contextmanager
def serving(build: Build) -> Iterator[tuple[str, int]]:
    """A loopback TCP server answering each AXFR query with ``build``'s messages."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                size = struct.unpack("!H", conn.recv(2, socket.MSG_WAITALL))[0]
                query = dns.message.from_wire(
                    conn.recv(size, socket.MSG_WAITALL), keyring={KEYNAME: KEY}
                )
                try:
                    for wire in build(query.id, query.mac or b""):
                        conn.sendall(struct.pack("!H", len(wire)) + wire)
                except OSError:
                    pass  # the reader stopped early

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
        listener.close()
        thread.join(5)


def _all(_owner: bytes) -> bool:
    return True


def read(
    build: Build, *, tsig: bool = False, select: Callable[[bytes], bool] = _all
) -> tuple[int, list[TransferredTxt]]:
    with serving(build) as server:
        if not tsig:
            return transfer_txt(ORIGIN, server, select, timeout=5, lifetime=10)
        keyring = {KEYNAME: KEY}
        return transfer_txt(
            ORIGIN, server, select, keyring=keyring, keyname=KEYNAME, timeout=5, lifetime=10
        )


def refused(build: Build, match: str, *, tsig: bool = False) -> None:
    with pytest.raises(ResolveError, match=match):
        read(build, tsig=tsig)


ALTER = owner(b"_alter", b"blake")
GOOD_TXT = txt(ALTER, b"alter1 v=1")


def one(answers: list[bytes], **kwargs: object) -> Build:
    return lambda ident, _mac: [message(ident, answers, **kwargs)]  # type: ignore[arg-type]


# --- a valid transfer, and the records outside the zone ---------------------------------


def test_a_valid_transfer_reads_as_dnspython_reads_it() -> None:
    build = one([soa(7), GOOD_TXT, txt(owner(b"www"), b"x"), soa(7)])
    with serving(build) as server:
        ours = transfer_txt(ORIGIN, server, _all, timeout=5, lifetime=10)
        reference = transfer_txt_reference(ORIGIN, server, _all, timeout=5, lifetime=10)
    assert (
        ours
        == reference
        == (
            7,
            [
                TransferredTxt("_alter.blake.example.com.", 300, (b"alter1 v=1",)),
                TransferredTxt("www.example.com.", 300, (b"x",)),
            ],
        )
    )


def test_records_outside_the_zone_are_skipped_and_never_selected() -> None:
    seen: list[bytes] = []

    def select(wire: bytes) -> bool:
        seen.append(wire)
        return True

    outside = [
        txt(owner(b"_alter", b"x", zone=OTHER_WIRE), b"no"),
        txt(b"\x03com\x00", b"no"),
        txt(b"\x00", b"no"),
    ]
    serial, found = read(one([soa(7), *outside, GOOD_TXT, soa(7)]), select=select)
    assert (serial, [r.owner for r in found]) == (7, ["_alter.blake.example.com."])
    assert seen == [ALTER.lower()]


def test_a_signed_transfer_with_unsigned_messages_between_is_read() -> None:
    def build(ident: int, mac: bytes) -> list[bytes]:
        wires = [message(ident, [soa(7)]), message(ident, [GOOD_TXT]), message(ident, [soa(7)])]
        return sign(ident, wires, [True, False, True], mac)

    assert read(build, tsig=True)[1] == [
        TransferredTxt("_alter.blake.example.com.", 300, (b"alter1 v=1",))
    ]


# --- one test per reason a transfer is refused --------------------------------------


def test_a_compression_loop() -> None:
    # The TXT owner points at itself.
    refused(
        one(
            [
                soa(7),
                struct.pack("!H", 0xC000 | ANSWERS_AT + len(soa(7))) + GOOD_TXT[len(ALTER) :],
                soa(7),
            ]
        ),
        "loop",
    )


def test_a_compression_pointer_forward() -> None:
    # The owner points into its own TXT string, which holds a valid name: dnspython refuses it.
    name_at = ANSWERS_AT + len(soa(7)) + 2 + 10 + 1
    forward = struct.pack("!H", 0xC000 | name_at) + txt(b"", ALTER)
    refused(one([soa(7), forward, soa(7)]), "forward pointer")


def test_a_compression_pointer_out_of_the_message() -> None:
    refused(
        one([soa(7), b"\xff\xff" + GOOD_TXT[len(ALTER) :], soa(7)]), "out of its transfer message"
    )


def test_truncated_data() -> None:
    cut = ANSWERS_AT + len(soa(7)) + len(ALTER) + 5  # inside the TXT record's type, class, TTL
    refused(lambda ident, _mac: [message(ident, [soa(7), GOOD_TXT, soa(7)])[:cut]], "truncated")


def test_a_record_length_past_the_end() -> None:
    def build(ident: int, _mac: bytes) -> list[bytes]:
        long = ALTER + struct.pack("!HHIH", 16, IN, 300, 200) + b"\x05short"
        return [message(ident, [soa(7), long])]

    refused(build, "runs past its transfer message")


def test_trailing_octets() -> None:
    refused(
        lambda ident, _mac: [message(ident, [soa(7), GOOD_TXT, soa(7)]) + b"\x00"],
        "trailing octets",
    )


def test_a_tsig_record_that_is_not_last() -> None:
    def build(ident: int, mac: bytes) -> list[bytes]:
        (signed,) = sign(ident, [message(ident, [soa(7), GOOD_TXT, soa(7)])], [True], mac)
        extra = record(b"\x00", 1, b"\x7f\x00\x00\x01")
        (arcount,) = struct.unpack_from("!H", signed, 10)
        return [signed[:10] + struct.pack("!H", arcount + 1) + signed[12:] + extra]

    refused(build, "not the last record", tsig=True)


def test_an_unsigned_first_message() -> None:
    def build(ident: int, mac: bytes) -> list[bytes]:
        wires = [message(ident, [soa(7)]), message(ident, [GOOD_TXT, soa(7)])]
        return sign(ident, wires, [False, True], mac)

    refused(build, "first transfer message is not TSIG-signed", tsig=True)


def test_an_unsigned_last_message() -> None:
    def build(ident: int, mac: bytes) -> list[bytes]:
        wires = [message(ident, [soa(7)]), message(ident, [GOOD_TXT, soa(7)])]
        return sign(ident, wires, [True, False], mac)

    refused(build, "last transfer message is not TSIG-signed", tsig=True)


@pytest.mark.parametrize("middle_signed", [True, False])
def test_a_message_in_the_middle_tampered(middle_signed: bool) -> None:
    """The MAC chain: a changed middle message fails its own MAC, or (unsigned) the next one."""

    def build(ident: int, mac: bytes) -> list[bytes]:
        wires = [message(ident, [soa(7)]), message(ident, [GOOD_TXT]), message(ident, [soa(7)])]
        first, middle, last = sign(ident, wires, [True, middle_signed, True], mac)
        return [first, middle.replace(b"alter1 v=1", b"alter1 v=2"), last]

    refused(build, "fails its TSIG check", tsig=True)


def test_a_transfer_signed_with_another_key() -> None:
    def build(ident: int, mac: bytes) -> list[bytes]:
        return sign(ident, [message(ident, [soa(7), GOOD_TXT, soa(7)])], [True], mac, OTHER_KEY)

    refused(build, "fails its TSIG check", tsig=True)


def test_an_soa_of_another_zone() -> None:
    refused(one([soa(7, owner=OTHER_WIRE), GOOD_TXT, soa(7)]), "SOA record of another zone")


def test_a_serial_change_between_the_opening_and_the_closing_soa() -> None:
    refused(one([soa(7), GOOD_TXT, soa(8)]), "two SOA serials")


def test_a_wrong_message_id() -> None:
    refused(
        lambda ident, _mac: [message(ident ^ 1, [soa(7), GOOD_TXT, soa(7)])],
        "answers another query",
    )


def test_qr_clear() -> None:
    refused(one([soa(7), GOOD_TXT, soa(7)], flags=0x0400), "answers another query")


def test_an_rcode_other_than_noerror() -> None:
    refused(one([], flags=QR_AA | 5), "answered with REFUSED")


def test_no_opening_soa() -> None:
    refused(one([GOOD_TXT, soa(7)]), "does not begin with the zone's SOA")


def test_no_closing_soa() -> None:
    with pytest.raises(EOFError):
        read(one([soa(7), GOOD_TXT]))


# --- the fixes of this round: each test failed on the code before -------------------


@pytest.mark.parametrize("octet", [0x40, 0x45, 0x80, 0xBF])
@pytest.mark.parametrize("rdtype", [16, 1])
def test_a_label_length_octet_that_is_neither_a_length_nor_a_pointer(
    octet: int, rdtype: int
) -> None:
    """0x40-0xBF (extended label types) were taken as lengths, and ``.lower()`` then
    rewrote 0x41-0x5A as if they were letters."""
    bad = bytes((octet,)) + b"a" * octet + ORIGIN_WIRE
    refused(one([soa(7), record(bad, rdtype, b"\x01x"), soa(7)]), "neither a length")


@pytest.mark.parametrize("rdtype", [16, 1])
def test_a_name_over_255_octets(rdtype: int) -> None:
    long = owner(b"a" * 63, b"b" * 63, b"c" * 63, b"d" * 63)  # 256 + 13 octets
    refused(one([soa(7), record(long, rdtype, b"\x01x"), soa(7)]), "over 255 octets")


def test_a_name_of_255_octets_is_read() -> None:
    name = owner(b"a" * 63, b"b" * 63, b"c" * 63, b"d" * 49)
    assert len(name) == 255
    assert read(one([soa(7), txt(name, b"x"), soa(7)]))[1][0].owner.startswith("aaa")


def test_an_soa_too_short_for_its_fields() -> None:
    """The serial was read 20 octets before the end with no minimum: a closing SOA of
    only the five numbers (no names) was taken as the zone's SOA."""
    short = record(ORIGIN_WIRE, 6, struct.pack("!IIIII", 7, 3600, 600, 86400, 300))
    refused(one([soa(7), GOOD_TXT, short]), "too short")


def test_an_soa_of_another_class() -> None:
    refused(one([soa(7), GOOD_TXT, soa(7, rdclass=3)]), "class other than IN")


@pytest.mark.parametrize("case", ["bad rdata", "bad owner pointer"])
def test_a_malformed_tsig_record(case: str) -> None:
    """The TSIG owner and rdata were parsed by dnspython outside the try: its
    exceptions escaped instead of a ResolveError."""

    def build(ident: int, _mac: bytes) -> list[bytes]:
        if case == "bad rdata":
            tsig = record(KEYNAME_WIRE, 250, b"\x01", rdclass=255, ttl=0)
        else:
            tsig = b"\xc0\x00" + struct.pack("!HHIH", 250, 255, 0, 1) + b"\x01"
        return [message(ident, [soa(7), GOOD_TXT, soa(7)], extra=[tsig])]

    refused(build, "fails its TSIG check", tsig=True)


@pytest.mark.parametrize(("unsigned", "ok"), [(99, True), (100, False)])
def test_at_most_99_unsigned_messages_in_a_row(unsigned: int, ok: bool) -> None:
    """RFC 8945 section 5.3.1: a client must refuse more than 99 unsigned in a row."""

    def build(ident: int, mac: bytes) -> list[bytes]:
        wires = [
            message(ident, [soa(7)]),
            *[message(ident, [])] * unsigned,
            message(ident, [soa(7)]),
        ]
        return sign(ident, wires, [True] + [False] * unsigned + [True], mac)

    if ok:
        assert read(build, tsig=True)[0] == 7
    else:
        refused(build, "more than 99 unsigned", tsig=True)


@pytest.mark.parametrize(
    "question",
    [
        OTHER_WIRE + struct.pack("!HH", 252, IN),
        ORIGIN_WIRE + struct.pack("!HH", 251, IN),
        ORIGIN_WIRE + struct.pack("!HH", 252, 3),
    ],
)
def test_another_question(question: bytes) -> None:
    """dnspython refuses a response to another question; this reader skipped it."""

    def build(ident: int, _mac: bytes) -> list[bytes]:
        wire = message(ident, [soa(7), GOOD_TXT, soa(7)])
        return [wire[:12] + question + wire[ANSWERS_AT:]]

    refused(build, "another question")


def test_an_opcode_other_than_query() -> None:
    refused(one([soa(7), GOOD_TXT, soa(7)], flags=QR_AA | 0x2800), "answers another query")


def test_a_closing_soa_that_differs_from_the_opening_one() -> None:
    """Same serial, another refresh: dnspython refuses it; only the serial was compared."""
    closing = soa(7)[:-16] + struct.pack("!IIII", 1, 600, 86400, 300)
    refused(one([soa(7), GOOD_TXT, closing]), "closing SOA differs")


def test_an_soa_whose_fields_do_not_fill_its_data() -> None:
    opening = soa(7)
    rdlength_at = len(ORIGIN_WIRE) + 8
    longer = opening[:rdlength_at] + struct.pack("!H", len(opening) - rdlength_at - 2 + 1)
    longer += opening[rdlength_at + 2 :] + b"\x00"
    refused(one([longer, GOOD_TXT, soa(7)]), "do not fill its data")


def test_a_txt_record_with_no_string() -> None:
    refused(one([soa(7), record(ALTER, 16, b""), soa(7)]), "no string")


# --- properties ---------------------------------------------------------------------


@dataclass(frozen=True)
class Transfer:
    serial: int
    messages: tuple[tuple[bytes, ...], ...]  # the answers of each message


_LABELS = st.binary(min_size=1, max_size=12) | st.sampled_from(
    [b"_alter", b"WWW", b"Mixed", b"a.b", b"\\"]
)


@st.composite
def transfers(draw: st.DrawFn) -> Transfer:
    """A valid transfer: unique owners (dnspython merges a name's records into one RRset),
    in and out of the zone, compressed or not, TXT and other types and classes."""
    serial = draw(st.integers(0, 2**32 - 1))
    prefixes = draw(
        st.lists(
            st.lists(_LABELS, min_size=1, max_size=3).map(tuple),
            max_size=12,
            unique_by=lambda p: tuple(x.lower() for x in p),
        )
    )
    answers: list[bytes] = []
    for prefix in prefixes:
        zone = draw(st.sampled_from([ORIGIN_WIRE, OTHER_WIRE, b"\x07EXAMPLE\x03com\x00"]))
        labels = b"".join(_label(x) for x in prefix)
        name = labels + (TO_ORIGIN if zone == ORIGIN_WIRE and draw(st.booleans()) else zone)
        kind = draw(st.sampled_from(["txt", "txt", "chaos", "a"]))
        if kind == "a":
            answers.append(record(name, 1, bytes(draw(st.binary(min_size=4, max_size=4)))))
            continue
        strings = draw(st.lists(st.binary(max_size=40), min_size=1, max_size=3))
        answers.append(
            txt(
                name,
                *strings,
                ttl=draw(st.integers(0, 2**31 - 1)),
                rdclass=3 if kind == "chaos" else IN,
            )
        )
    answers = [soa(serial), *answers, soa(serial)]
    cuts = sorted(draw(st.sets(st.integers(1, len(answers) - 1), max_size=4)))
    bounds = [0, *cuts, len(answers)]
    return Transfer(serial, tuple(tuple(answers[a:b]) for a, b in itertools.pairwise(bounds)))


def _wires(transfer: Transfer, ident: int) -> list[bytes]:
    return [message(ident, list(answers)) for answers in transfer.messages]


def _select(wire: bytes) -> bool:
    return wire[1:2] != b"w"


def _read_directly(
    wires: list[bytes], ident: int, tsig: _Tsig | None = None
) -> tuple[int | None, list[TransferredTxt]]:
    reader = _Reader(ORIGIN_WIRE, ident, _select, tsig)
    for wire in wires:
        reader.message(wire)
        if reader.done:
            break
    reader.finish()
    return reader.serial, reader.records


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transfers())
def test_a_valid_transfer_reads_as_the_reference_reads_the_same_bytes(transfer: Transfer) -> None:
    with serving(lambda ident, _mac: _wires(transfer, ident)) as server:
        ours = transfer_txt(ORIGIN, server, _select, timeout=5, lifetime=10)
        reference = transfer_txt_reference(ORIGIN, server, _select, timeout=5, lifetime=10)
    assert ours == reference
    assert ours[0] == transfer.serial


def test_a_ttl_with_its_top_bit_set_reads_as_zero_as_the_reference_reads_it() -> None:
    # RFC 2181, section 8 (found by the mutation test below: a TTL byte set to 0x80).
    top = txt(b"\x01a" + ORIGIN_WIRE, b"x", ttl=1 << 31)
    wires = _wires(Transfer(serial=0, messages=((soa(0), top, soa(0)),)), 0x1234)
    ours = _read_directly(wires, 0x1234)
    assert [record.ttl for record in ours[1]] == [0]
    with serving(
        lambda query_id, _mac: [struct.pack("!H", query_id) + w[2:] for w in wires]
    ) as server:
        assert transfer_txt_reference(ORIGIN, server, _select, timeout=5, lifetime=10) == ours


_MUTATION = st.tuples(
    st.sampled_from(["set", "insert", "delete", "cut"]), st.integers(0, 10_000), st.integers(0, 255)
)


def _mutate(wires: list[bytes], mutations: list[tuple[str, int, int]]) -> list[bytes]:
    out = list(wires)
    for kind, at, value in mutations:
        index = at % len(out)
        wire = bytearray(out[index])
        pos = (at // len(out)) % (len(wire) + 1)
        if kind == "set" and pos < len(wire):
            wire[pos] = value
        elif kind == "insert":
            wire[pos:pos] = bytes((value,))
        elif kind == "delete":
            del wire[pos : pos + 1 + value % 4]
        elif kind == "cut":
            del wire[pos:]
        out[index] = bytes(wire)
    return out


@settings(max_examples=400, deadline=None)
@given(transfers(), st.lists(_MUTATION, min_size=1, max_size=4), st.booleans())
def test_a_mutated_transfer_is_refused_only_with_resolve_error(
    transfer: Transfer, mutations: list[tuple[str, int, int]], signed: bool
) -> None:
    ident = 0x1234
    wires = _wires(transfer, ident)
    tsig = None
    if signed:
        wires = sign(ident, wires, [True] * len(wires), b"\x01" * 32)
        tsig = _Tsig(KEY, b"\x01" * 32)
    mutated = _mutate(wires, mutations)
    try:
        ours = _read_directly(mutated, ident, tsig)
    except ResolveError:
        return
    if signed:
        return
    # Accepted: dnspython, when it accepts the same bytes, must find the same records.
    with serving(
        lambda query_id, _mac: [struct.pack("!H", query_id) + w[2:] for w in mutated]
    ) as server:
        try:
            reference = transfer_txt_reference(ORIGIN, server, _select, timeout=5, lifetime=10)
        except Exception:  # only what both readers accept is compared
            return
    assert ours == reference


@settings(max_examples=400, deadline=None)
@given(st.lists(st.binary(max_size=300), min_size=1, max_size=3), st.booleans())
def test_random_bytes_are_refused_only_with_resolve_error(
    bodies: list[bytes], signed: bool
) -> None:
    """Random messages (with the query's id and QR set, so they get past the header)."""
    ident = 0x1234
    wires = [struct.pack("!HH", ident, QR_AA) + body for body in bodies]
    tsig = _Tsig(KEY, b"\x01" * 32) if signed else None
    with pytest.raises(ResolveError):
        _read_directly(wires, ident, tsig)


# --- incremental transfers (IXFR, RFC 1995) ----------------------------------------------

IXFR = 251
BLAKE = "_alter.blake.example.com."
DREW = owner(b"_alter", b"drew")


def ixfr(since: int, messages: list[list[bytes]], *, tsig: bool = False) -> TxtChanges:
    """Serve ``messages`` (each a list of answers) as the answer to an IXFR from ``since``."""

    def build(ident: int, mac: bytes) -> list[bytes]:
        wires = [message(ident, answers, qtype=IXFR) for answers in messages]
        return sign(ident, wires, [True] * len(wires), mac) if tsig else wires

    with serving(build) as server:
        keyring = {KEYNAME: KEY} if tsig else None
        return transfer_txt_changes(
            ORIGIN,
            server,
            _all,
            since,
            keyring=keyring,
            keyname=KEYNAME if tsig else None,
            timeout=5,
            lifetime=10,
        )


def test_the_differences_of_several_versions_are_read_in_order() -> None:
    old, renewed, newest = txt(ALTER, b"epoch 1"), txt(ALTER, b"epoch 2"), txt(DREW, b"drew")
    answers = [soa(9), soa(7), old, soa(8), renewed, soa(8), soa(9), newest, soa(9)]
    got = ixfr(7, [answers[:4], answers[4:]], tsig=True)
    assert got == TxtChanges(
        9,
        None,
        (
            (False, TransferredTxt(BLAKE, 300, (b"epoch 1",))),
            (True, TransferredTxt(BLAKE, 300, (b"epoch 2",))),
            (True, TransferredTxt("_alter.drew.example.com.", 300, (b"drew",))),
        ),
    )


def test_a_difference_with_ttls_of_their_top_bit_set_reads_them_as_zero() -> None:
    # RFC 2181, section 8, for the records taken out and put in as for a whole zone.
    gone, put = txt(ALTER, b"epoch 1", ttl=1 << 31), txt(ALTER, b"epoch 2", ttl=(1 << 32) - 1)
    got = ixfr(7, [[soa(8), soa(7), gone, soa(8), put, soa(8)]])
    assert got == TxtChanges(
        8,
        None,
        (
            (False, TransferredTxt(BLAKE, 0, (b"epoch 1",))),
            (True, TransferredTxt(BLAKE, 0, (b"epoch 2",))),
        ),
    )


def test_an_unchanged_zone_answers_with_its_soa_alone() -> None:
    assert ixfr(7, [[soa(7)]]) == TxtChanges(7, None, ())


def test_a_server_without_history_sends_the_whole_zone() -> None:
    got = ixfr(7, [[soa(9), GOOD_TXT, txt(owner(b"www"), b"x"), soa(9)]])
    assert got.serial == 9
    assert got.changes == ()
    assert got.records == (
        TransferredTxt(BLAKE, 300, (b"alter1 v=1",)),
        TransferredTxt("www.example.com.", 300, (b"x",)),
    )


def test_the_whole_of_an_empty_zone() -> None:
    assert ixfr(7, [[soa(9), soa(9)]]) == TxtChanges(9, (), ())


@pytest.mark.parametrize(
    ("answers", "match"),
    [
        ([soa(9), soa(6), soa(9), soa(9)], "starts at serial 6, not 7"),
        ([soa(9), soa(7), soa(8), GOOD_TXT, soa(5), soa(9)], "do not follow on"),
        ([soa(5)], "SOA alone, of serial 5, older than 7"),
        ([soa(9), soa(7), GOOD_TXT, soa(8), GOOD_TXT, soa(9)], "ends at serial 8, not 9"),
    ],
    ids=["another-start", "versions-apart", "soa-alone-older", "stops-short"],
)
def test_differences_that_do_not_lead_from_the_serial_asked_for(
    answers: list[bytes], match: str
) -> None:
    with pytest.raises(ResolveError, match=match):
        ixfr(7, [answers])


def test_an_ixfr_answered_as_an_axfr_question() -> None:
    def build(ident: int, _mac: bytes) -> list[bytes]:
        return [message(ident, [soa(9), soa(9)])]

    with serving(build) as server, pytest.raises(ResolveError, match="another question"):
        transfer_txt_changes(ORIGIN, server, _all, 7, timeout=5, lifetime=10)


def test_an_incremental_transfer_whose_closing_soa_differs() -> None:
    closing = soa(9)[:-4] + struct.pack("!I", 301)  # another minimum
    with pytest.raises(ResolveError, match="closing SOA differs"):
        ixfr(7, [[soa(9), soa(7), soa(9), GOOD_TXT, closing]])


def test_differences_sent_one_record_a_message_are_read() -> None:
    answers = [soa(9), soa(7), txt(ALTER, b"old"), soa(9), txt(ALTER, b"new"), soa(9)]
    got = ixfr(7, [[answer] for answer in answers], tsig=True)
    assert got == TxtChanges(
        9,
        None,
        (
            (False, TransferredTxt(BLAKE, 300, (b"old",))),
            (True, TransferredTxt(BLAKE, 300, (b"new",))),
        ),
    )


def test_an_unchanged_zone_sent_whole_is_unchanged() -> None:
    assert ixfr(7, [[soa(7), GOOD_TXT, soa(7)]]) == TxtChanges(7, None, ())
