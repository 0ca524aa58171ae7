"""answerer_for picks the engine: the wire engine for one zone it serves, else dnspython's."""

from __future__ import annotations

import dns.message
import dns.rdatatype
import dns.zone
import pytest

from alter_publish.dns.answerers import answerer_for
from alter_publish.dns.wirezone import WireZone
from alter_publish.dns.zoneindex import ResponseCache

HEAD = """\
$TTL 300
@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300
@ IN NS ns1
ns1 IN A 127.0.0.1
_alter.blake IN TXT "v=alter1"
"""


def _zone(origin: str, extra: str = "") -> dns.zone.Zone:
    return dns.zone.from_text(HEAD + extra, origin=origin)


@pytest.mark.parametrize(
    ("zones", "engine"),
    [
        pytest.param([_zone("example.com.")], WireZone, id="one-plain-zone-wire"),
        pytest.param(
            [_zone("example.com.", "www IN CNAME ns1\n")], ResponseCache, id="cname-dnspython"
        ),
        pytest.param(
            [_zone("example.com."), _zone("example.org.")], ResponseCache, id="two-zones-dnspython"
        ),
    ],
)
def test_the_engine_chosen(zones: list[dns.zone.Zone], engine: type) -> None:
    answerer = answerer_for(zones)
    assert isinstance(answerer, engine)
    query = dns.message.make_query("_alter.blake.example.com.", dns.rdatatype.TXT)
    reply = answerer.answer(query.to_wire(), None)
    assert reply is not None
    (rrset,) = dns.message.from_wire(reply).answer
    assert [rdata.to_text() for rdata in rrset] == ['"v=alter1"']
