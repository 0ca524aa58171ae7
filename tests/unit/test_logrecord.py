"""The ``_alter-log`` checkpoint TXT record (format/logrecord.py) against its vectors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dns.rdata
import dns.rdataclass
import dns.rdatatype
import pytest
from hypothesis import given
from hypothesis import strategies as st

from alter_publish.dns.records import HandleRecord
from alter_publish.errors import VerificationError
from alter_publish.format.logrecord import (
    checkpoint_record,
    checkpoint_strings,
    find_checkpoint_record,
    log_record_owner,
    parse_checkpoint_record,
)
from alter_publish.format.note import Note, Signer, Verifier
from alter_publish.format.tlog import Checkpoint
from alter_publish.keys.logkey import log_origin

VECTORS = Path(__file__).parents[1] / "data" / "logrecord" / "vectors.json"
DOC: dict[str, Any] = json.loads(VECTORS.read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", DOC["cases"], ids=[case["name"] for case in DOC["cases"]])
def test_vector_produced_and_parsed(case: dict[str, Any]) -> None:
    expected = case["expected"]
    origin = log_origin(case["zone"])
    signer = Signer(origin, bytes.fromhex(case["seed_hex"]))
    checkpoint = Checkpoint(origin, case["size"], bytes.fromhex(case["root_hex"]))
    note = Note(checkpoint.to_text()).signed_by(signer).to_text()
    assert note == expected["note"]
    assert signer.verifier.to_text() == expected["vkey"]
    assert log_record_owner(case["zone"]) == expected["owner"]
    assert checkpoint_record(note) == expected["text"]
    assert list(checkpoint_strings(note)) == expected["txt_strings"]
    assert all(len(part.encode()) <= 255 for part in expected["txt_strings"])
    record = HandleRecord.make(expected["owner"], 3600, (expected["text"],))
    assert record.rdata[0] == expected["rdata"]
    # Parsed back from the zone-file rdata, as a resolver's answer gives it.
    rdata = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.TXT, expected["rdata"])
    joined = b"".join(rdata.strings).decode("ascii")  # type: ignore[attr-defined]  # TXT rdata
    parsed = find_checkpoint_record(["v=alter1; other", joined], "test")
    assert parsed == note
    verified = Note.parse(parsed)
    verified.verify(Verifier.parse(expected["vkey"]))
    assert Checkpoint.parse(verified.text) == checkpoint


@pytest.mark.parametrize("case", DOC["invalid"], ids=lambda case: case["text"][:20])
def test_invalid_vectors(case: dict[str, str]) -> None:
    with pytest.raises(VerificationError) as caught:
        parse_checkpoint_record(case["text"])
    assert caught.value.category == case["category"]


def test_none_or_two_records() -> None:
    with pytest.raises(VerificationError) as caught:
        find_checkpoint_record(["v=alter1; x"], "here")
    assert caught.value.category == "not-found"
    record = DOC["cases"][0]["expected"]["text"]
    with pytest.raises(VerificationError) as caught:
        find_checkpoint_record([record, record + "x"], "here")
    assert caught.value.category == "malformed"


@given(st.text(min_size=1))
def test_round_trip(note: str) -> None:
    assert parse_checkpoint_record(checkpoint_record(note)) == note
    assert "".join(checkpoint_strings(note)) == checkpoint_record(note)
