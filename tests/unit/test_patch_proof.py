"""A patch's loopback proof serves its changed lines as ``serve`` reads a zone file:
fast into the wire engine, anything else through dnspython, with the same answers."""

from __future__ import annotations

import dns.message
import dns.rdatatype
import pytest

from alter_publish.dns.wirezone import WireZone
from alter_publish.dns.zoneindex import ZoneIndex, answer
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.pipeline.patchbase import proof_answerer
from tests.unit.test_wirezone import summary
from tests.unit.test_zonelines import FALLBACKS, ORIGIN, signed_text


def _same_answers(text: str) -> bool:
    served = proof_answerer(text, ORIGIN, "test.zone")
    zone = parse_zone_text(text, ORIGIN, where="test")
    index = ZoneIndex.build([zone])
    assert zone.origin is not None
    for number, name in enumerate(zone.nodes):
        if number % 7:
            continue  # a sample of the owners: the reader's own tests ask them all
        for rdtype in (dns.rdatatype.TXT, dns.rdatatype.A):
            query = dns.message.make_query(name.derelativize(zone.origin), rdtype, want_dnssec=True)
            wire = query.to_wire()
            if summary(served.answer(wire, 65535)) != summary(answer(index, wire, max_udp=65535)):
                return False
    return True


@pytest.mark.parametrize("denial", ["nsec", "nsec3"])
def test_signed_lines_are_served_by_the_wire_engine_read_fast(denial: str) -> None:
    text = signed_text(denial)
    assert isinstance(proof_answerer(text, ORIGIN, "test.zone"), WireZone)
    assert _same_answers(text)


@pytest.mark.parametrize("name", ["no-ttl-directive", "cname"])
def test_lines_outside_the_fast_reader_are_parsed_by_dnspython(name: str) -> None:
    assert _same_answers(FALLBACKS[name])
