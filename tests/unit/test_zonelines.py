"""Tests for alter_publish.dns.zonelines and pipeline.serving: the fast zone-file reader
``serve`` loads big zones with, against dnspython's reading and the reference engine.

The oracle is dnspython: its zone parse gives the records (compared exactly, rdata wire
and order included), and :class:`~alter_publish.dns.zoneindex.ZoneIndex` over that parse
gives the answers (compared by meaning, as ``test_wirezone`` does). Files the fast
reader does not read exactly must fall back to the whole-file dnspython parse.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import dns.message
import dns.name
import dns.rdatatype
import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.definition.model import DNSSECSpec
from alter_publish.dns.dnssec import SignatureWindow, sign_records
from alter_publish.dns.records import from_zone
from alter_publish.dns.wirezone import WireZone
from alter_publish.dns.zoneindex import ZoneIndex, answer
from alter_publish.dns.zonekeys import ZoneKey, ZoneKeyRole
from alter_publish.dns.zonelines import ZoneRecords, read_zone_records
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.errors import RenderError
from alter_publish.pipeline.serving import LOADED_DNSPYTHON, LOADED_FAST, load_served_zones
from tests.unit.test_wirezone import summary

NOW = 1_767_225_600
ORIGIN = "example.com"
OWNERS = 400  # with NSEC3 and RRSIGs: about 2,500 records
KEYS = (
    ZoneKey(ORIGIN, ZoneKeyRole.KSK, NOW, Ed25519PrivateKey.generate()),
    ZoneKey(ORIGIN, ZoneKeyRole.ZSK, NOW, Ed25519PrivateKey.generate()),
)

HEAD = f"""\
; {ORIGIN}. - a zone as alter-publish writes it
$ORIGIN {ORIGIN}.
$TTL 3600
@ 3600 IN SOA ns1.{ORIGIN}. hostmaster.{ORIGIN}. (
    2026010101 ; serial
    7200 ; refresh
    3600 ; retry
    1209600 ; expire
    300 ; minimum
    )
@ 3600 IN NS ns1.{ORIGIN}.
ns1.{ORIGIN}. 3600 IN A 192.0.2.1
"""

#: TXT rdata texts exercising what the reader unescapes (dnspython prints some of them).
ODD_TXT = (
    r'"v=alter1; quote \" and backslash \\ inside"',
    r'"utf-8 \195\169 escaped" "and é written"',
    '"" "empty string first"',
    '"' + "a" * 255 + '" "second string"',
)


def unsigned_text(owners: int = OWNERS) -> str:
    lines = [HEAD]
    shapes = ("_alter.h{}", "_alter.b{}.bot", "_alter.cc-{}", "_alter.r{}.ops.bot")
    for index in range(owners):
        owner = shapes[index % len(shapes)].format(index) + f".{ORIGIN}."
        lines.append(f"; handle {index}\n")
        rdata = ODD_TXT[index % len(ODD_TXT)] if index % 50 == 0 else f'"v=alter1; i={index}"'
        lines.append(f"{owner} {300 + index % 7} IN TXT {rdata}\n")
    return "".join(lines)


@functools.cache
def signed_text(denial: str) -> str:
    text = unsigned_text()
    spec = DNSSECSpec(
        denial=denial, nsec3_iterations=2 if denial == "nsec3" else 0, nsec3_salt="ab12"
    )
    records = from_zone(parse_zone_text(text, ORIGIN, where="test"))
    window = SignatureWindow.fresh(NOW, 14 * 86400)
    signed = sign_records(records, keys=KEYS, spec=spec, window=window, dnskey_ttl=3600)
    return text + signed.records_text


def fast_records(text: str) -> ZoneRecords | None:
    def parse(head: str, line_of: Callable[[int], int]) -> dns.zone.Zone:
        return parse_zone_text(head, ORIGIN, where="test", line_of=line_of)

    return read_zone_records(text, ORIGIN, parse)


def dnspython_records(text: str) -> tuple[dict[object, object], dict[object, object]]:
    zone = parse_zone_text(text, ORIGIN, where="test")
    assert zone.origin is not None
    plain: dict[object, object] = {}
    sigs: dict[object, object] = {}
    for rel_name, rdataset in zone.iterate_rdatasets():
        owner = tuple(label.lower() for label in rel_name.derelativize(zone.origin).labels)
        rdatas = tuple(rdata.to_wire(origin=zone.origin) for rdata in rdataset)
        if rdataset.rdtype == dns.rdatatype.RRSIG:
            sigs[(owner, int(rdataset.covers))] = (rdataset.ttl, rdatas)
        else:
            plain[(owner, int(rdataset.rdtype))] = (rdataset.ttl, rdatas)
    return plain, sigs


@pytest.mark.parametrize("text_of", ["unsigned", "nsec", "nsec3"])
def test_fast_reading_is_dnspythons(text_of: str) -> None:
    text = unsigned_text() if text_of == "unsigned" else signed_text(text_of)
    records = fast_records(text)
    assert records is not None
    plain, sigs = dnspython_records(text)
    assert (records.plain, records.sigs) == (plain, sigs)
    assert len(plain) + len(sigs) > (OWNERS if text_of == "unsigned" else 3 * OWNERS)


@pytest.mark.parametrize("denial", ["nsec", "nsec3"])
def test_served_answers_match_the_reference(denial: str, tmp_path: Path) -> None:
    """Every owner, every type it has and one it has not, with and without DO."""
    path = tmp_path / f"{ORIGIN}.zone"
    path.write_text(signed_text(denial), encoding="utf-8")
    served = load_served_zones([path])
    assert served.loaded == LOADED_FAST
    assert served.origins == (f"{ORIGIN}.",)
    zone = parse_zone_text(path.read_text(encoding="utf-8"), ORIGIN, where="test")
    index = ZoneIndex.build([zone])
    problems = []
    asked = 0
    for name, node in zone.nodes.items():
        owner = name.to_text()
        types = {rdataset.rdtype for rdataset in node.rdatasets} - {dns.rdatatype.RRSIG}
        for rdtype in (*types, dns.rdatatype.A, dns.rdatatype.TXT):
            for dnssec in (False, True):
                query = dns.message.make_query(owner, rdtype, want_dnssec=dnssec)
                query.id = 4321
                wire = query.to_wire()
                asked += 1
                expected = summary(answer(index, wire, max_udp=65535))
                if summary(served.answerer.answer(wire, 65535)) != expected:
                    problems.append(f"{owner} {dns.rdatatype.to_text(rdtype)} do={dnssec}")
    assert problems == []
    assert asked > 4 * OWNERS


#: Hand-written zone files outside the fast subset: each must fall back to dnspython.
FALLBACKS = {
    "no-ttl-directive": (
        f"@ 300 IN SOA ns1 h 1 2 3 4 5\n@ 300 IN NS ns1\nns1 300 IN A 192.0.2.1\n"
        f'_alter.a.{ORIGIN}. 300 IN TXT "x"\nb IN A 192.0.2.2\n'
    ),
    "owner-left-out": (
        f"$TTL 300\n@ IN SOA ns1 h 1 2 3 4 5\n@ IN NS ns1\nns1 IN A 192.0.2.1\n"
        f'_alter.a.{ORIGIN}. 300 IN TXT "x"\n   300 IN A 192.0.2.9\n'
    ),
    "multi-line-txt": (
        f"$TTL 300\n@ IN SOA ns1 h 1 2 3 4 5\n@ IN NS ns1\nns1 IN A 192.0.2.1\n"
        f'_alter.a.{ORIGIN}. 300 IN TXT ( "one"\n  "two" )\n'
    ),
    "unquoted-txt": (
        f"$TTL 300\n@ IN SOA ns1 h 1 2 3 4 5\n@ IN NS ns1\nns1 IN A 192.0.2.1\n"
        f"_alter.a.{ORIGIN}. 300 IN TXT plain words\n"
    ),
    "ttl-mismatch": (
        f"$TTL 300\n@ IN SOA ns1 h 1 2 3 4 5\n@ IN NS ns1\nns1 IN A 192.0.2.1\n"
        f'_alter.a.{ORIGIN}. 300 IN TXT "x"\n_alter.a.{ORIGIN}. 600 IN TXT "y"\n'
    ),
    "rrset-in-both-parts": (
        f"$TTL 300\n@ IN SOA ns1 h 1 2 3 4 5\n@ IN NS ns1\nns1 IN A 192.0.2.1\n"
        f'_alter.a.{ORIGIN}. 300 IN TXT "x"\n_alter.a IN TXT "y"\n'
    ),
    "cname": (
        f"$TTL 300\n@ IN SOA ns1 h 1 2 3 4 5\n@ IN NS ns1\nns1 IN A 192.0.2.1\n"
        f'_alter.a.{ORIGIN}. 300 IN TXT "x"\nwww IN CNAME ns1\n'
    ),
}


@pytest.mark.parametrize("text", FALLBACKS.values(), ids=FALLBACKS.keys())
def test_files_outside_the_subset_fall_back(text: str, tmp_path: Path) -> None:
    path = tmp_path / f"{ORIGIN}.zone"
    path.write_text(text, encoding="utf-8")
    served = load_served_zones([path])
    assert served.loaded == LOADED_DNSPYTHON
    zone = parse_zone_text(text, ORIGIN, where="test")
    index = ZoneIndex.build([zone])
    assert zone.origin is not None
    for name in zone.nodes:
        for rdtype in ("TXT", "A"):
            wire = dns.message.make_query(name.derelativize(zone.origin), rdtype).to_wire()
            assert summary(served.answerer.answer(wire, 65535)) == summary(
                answer(index, wire, max_udp=65535)
            )


_SIGNATURE_FIELDS = "TXT 15 4 300 20260111000000 20251227230000 61033 example.com."
#: Fast-looking lines the reader must decline (the file then goes to dnspython whole).
DECLINED = {
    "owner-outside-the-zone": '_alter.a.example.org. 300 IN TXT "x"',
    "ttl-above-2-31": f'_alter.a.{ORIGIN}. 2147483648 IN TXT "x"',
    "bad-ttl-twice": f'_alter.a.{ORIGIN}. 3x0 IN TXT "x"\n_alter.b.{ORIGIN}. 3x0 IN TXT "y"',
    "padding-inside-a-signature": f"_alter.a.{ORIGIN}. 300 IN RRSIG {_SIGNATURE_FIELDS} AA==AA==",
    "garbage-after-a-signature": f"_alter.a.{ORIGIN}. 300 IN RRSIG {_SIGNATURE_FIELDS} AAAA!",
    "non-ascii-signature": f"_alter.a.{ORIGIN}. 300 IN RRSIG {_SIGNATURE_FIELDS} AAA\u00e9",
}


@pytest.mark.parametrize("line", DECLINED.values(), ids=DECLINED.keys())
def test_lines_not_read_exactly_are_declined(line: str) -> None:
    head = "$TTL 300\n@ IN SOA ns1 h 1 2 3 4 5\n@ IN NS ns1\nns1 IN A 192.0.2.1\n"
    assert fast_records(head + f'_alter.z.{ORIGIN}. 300 IN TXT "z"\n') is not None
    assert fast_records(head + line + "\n") is None


def test_upper_case_and_apex_owners_read_as_dnspython_reads_them() -> None:
    text = (
        f"$TTL 300\n@ IN SOA ns1 h 1 2 3 4 5\n@ IN NS ns1\nns1 IN A 192.0.2.1\n"
        f'{ORIGIN}. 300 IN TXT "at the apex"\n'
        f'_ALTER.Mixed.{ORIGIN.upper()}. 300 IN TXT "upper case"\n'
        f'_alter.mixed.{ORIGIN}. 300 IN TXT "the same owner"\n'
    )
    records = fast_records(text)
    assert records is not None
    assert (records.plain, records.sigs) == dnspython_records(text)
    apex = tuple(dns.name.from_text(ORIGIN).labels)
    assert len(records.plain[(apex, int(dns.rdatatype.TXT))][1]) == 1
    owner = tuple(dns.name.from_text(f"_alter.mixed.{ORIGIN}").labels)
    assert len(records.plain[(owner, int(dns.rdatatype.TXT))][1]) == 2


def test_relative_head_records_stay_fast() -> None:
    text = (
        f"$ORIGIN {ORIGIN}.\n$TTL 300\n@ IN SOA ns1 h 1 2 3 4 5\n@ IN NS ns1\n"
        f'ns1 IN A 192.0.2.1\nwww IN A 192.0.2.8\n_alter.a.{ORIGIN}. 300 IN TXT "x"\n'
    )
    records = fast_records(text)
    assert records is not None
    assert (records.plain, records.sigs) == dnspython_records(text)


def test_a_bad_line_is_named_as_dnspython_names_it(tmp_path: Path) -> None:
    text = signed_text("nsec3").replace("ns1.example.com. 3600 IN A 192.0.2.1", "ns1 IN A 1.2.3")
    path = tmp_path / f"{ORIGIN}.zone"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RenderError) as caught:
        load_served_zones([path])
    with pytest.raises(RenderError) as reference:
        parse_zone_text(text, ORIGIN, where=str(path))
    assert str(caught.value) == str(reference.value)
    assert f"{path}:13:" in str(caught.value)


def test_wire_zone_from_records_is_from_zone() -> None:
    text = signed_text("nsec3")
    records = fast_records(text)
    assert records is not None
    fast = WireZone.from_records(records.origin, records.plain, records.sigs)
    reference = WireZone.from_zone(parse_zone_text(text, ORIGIN, where="test"))
    query = dns.message.make_query(f"_alter.h4.{ORIGIN}.", "TXT", want_dnssec=True).to_wire()
    assert fast.answer(query, 4096) == reference.answer(query, 4096)
    assert fast.origin_name == dns.name.from_text(ORIGIN)
