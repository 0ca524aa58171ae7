"""records: TXT text exactly as dnspython prints it, and the split of rendered zone text."""

from __future__ import annotations

import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.TXT
import dns.zone
import pytest
from hypothesis import given
from hypothesis import strategies as st

from alter_publish.dns.records import (
    HandleRecord,
    from_zone,
    labels_of,
    name_text,
    split_rendered,
    txt_rdata_text,
    txt_wire,
    with_handles,
)

_LATIN1 = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=255), max_size=255)


@given(strings=st.lists(_LATIN1, min_size=1, max_size=3))
def test_txt_text_and_wire_are_dnspythons(strings: list[str]) -> None:
    rdata = dns.rdtypes.ANY.TXT.TXT(dns.rdataclass.IN, dns.rdatatype.TXT, strings)
    assert txt_rdata_text(strings) == rdata.to_text()
    assert txt_wire(strings) == rdata.to_digestable()


@pytest.mark.parametrize(
    "name", ["_alter.blake.example.com.", "Mixed.Case.example.", "a\\.b.example.", "."]
)
def test_names_round_trip(name: str) -> None:
    expected = tuple(label.lower() for label in dns.name.from_text(name).labels)
    assert labels_of(name) == expected
    assert dns.name.from_text(name_text(labels_of(name))) == dns.name.from_text(name)


HEAD = "$ORIGIN example.com.\n$TTL 3600\n@ 3600 IN SOA ns1 host 1 2 3 4 300\n@ IN NS ns1\n"
RECORD = HandleRecord.make("_alter.blake.example.com.", 3600, ("v=alter1; h=~blake",))


def _render(*lines: str) -> str:
    return HEAD + "\n".join(lines) + "\n"


def test_record_lines_are_taken_and_the_rest_is_left() -> None:
    split = split_rendered(_render("; a comment", *RECORD.lines(), "www IN A 192.0.2.1"), [RECORD])
    assert split is not None
    assert "_alter" not in split.head
    assert "comment" not in split.head
    assert split.original_line(split.head.count("\n") + 1) == 7  # the A record's line
    zone = dns.zone.from_text(split.head, origin="example.com.", relativize=False)
    records = with_handles(from_zone(zone), [RECORD])
    assert records is not None
    assert labels_of(RECORD.owner) in records.owners


@pytest.mark.parametrize(
    "rendered",
    [
        pytest.param(_render("www IN A 192.0.2.1"), id="record-missing"),
        pytest.param(_render(RECORD.lines()[0].replace("3600", "600")), id="other-ttl"),
        pytest.param(_render(*RECORD.lines(), "  IN A 192.0.2.1"), id="next-line-inherits-owner"),
        pytest.param(_render("x IN TXT (", *RECORD.lines(), ")"), id="inside-parentheses"),
        pytest.param(HEAD.replace("$TTL 3600\n", "") + RECORD.lines()[0] + "\n", id="no-ttl"),
    ],
)
def test_anything_unusual_declines_the_split(rendered: str) -> None:
    assert split_rendered(rendered, [RECORD]) is None


def test_a_handle_owner_with_template_records_is_merged_by_a_full_parse() -> None:
    zone = dns.zone.from_text(
        _render('_alter.blake IN TXT "template"'), origin="example.com.", relativize=False
    )
    assert with_handles(from_zone(zone), [RECORD]) is None
