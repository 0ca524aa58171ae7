"""The log's latest checkpoint is published in the zone at ``_alter-log.<zone>.`` (one TXT
record, DNSSEC-signed, proven on loopback), and a patched run updates it to the very
bytes a full run writes."""

from __future__ import annotations

from pathlib import Path

import dns.rdataclass
import dns.rdatatype
import dns.zone
import pytest

from alter_publish.format.logrecord import find_checkpoint_record, log_record_owner
from alter_publish.format.note import Note
from alter_publish.format.tlog import Checkpoint
from alter_publish.keys.logkey import LogKeyStore
from tests.conftest import NOW
from tests.integration.test_incremental import ZONE, _edit, _same_as_full, _workspace


def _published(root: Path) -> tuple[str, bool]:
    """The checkpoint note the zone file publishes, and whether its TXT is signed."""
    zone = dns.zone.from_file(str(root / "build" / f"{ZONE}.zone"), origin=ZONE)
    owner = log_record_owner(ZONE)
    node = zone.get_node(owner)
    assert node is not None, "no _alter-log record"
    txt = node.get_rdataset(dns.rdataclass.IN, dns.rdatatype.TXT)
    assert txt is not None
    texts = [b"".join(rdata.strings).decode("ascii") for rdata in txt]
    signed = node.get_rdataset(dns.rdataclass.IN, dns.rdatatype.RRSIG, dns.rdatatype.TXT)
    return find_checkpoint_record(texts, owner), signed is not None


@pytest.mark.parametrize("denial", ["nsec", "nsec3"])
def test_the_zone_publishes_its_latest_checkpoint_and_a_patch_updates_it(
    tmp_path: Path, denial: str
) -> None:
    root = _workspace(tmp_path / "ws", 20, dnssec=f"{{enabled: true, denial: {denial}}}")
    verifier = LogKeyStore(root / "keys").signer(ZONE, create=False).verifier
    note, signed = _published(root)
    assert signed
    assert note == (root / "build" / ZONE / "log" / "checkpoint").read_text(encoding="utf-8")
    Note.parse(note).verify(verifier)
    first = Checkpoint.parse(Note.parse(note).text)
    _edit(root, "resolver: https://patch.example/apex", "resolver: https://patch.example/moved")
    report = _same_as_full(root, tmp_path, NOW + 60)
    (zone,) = report.zones
    assert zone.patched == ("~patch.example",)
    assert zone.proof is not None
    assert zone.proof.checkpoint is not None
    assert zone.proof.checkpoint.ok, zone.proof.checkpoint
    assert zone.proof.checkpoint.dnssec == "secure"
    note, signed = _published(root)
    assert signed
    assert note == (root / "build" / ZONE / "log" / "checkpoint").read_text(encoding="utf-8")
    later = Checkpoint.parse(Note.parse(note).text)
    Note.parse(note).verify(verifier)
    assert later.size == first.size + 1
