"""What ``init`` scaffolds: a zone that hides its handle names (NSEC3, RFC 9276)."""

from __future__ import annotations

from pathlib import Path

from alter_publish.definition.model import load_zone
from alter_publish.pipeline.scaffold import ZONE_SCAFFOLD


def test_a_new_zone_denies_with_nsec3_as_rfc_9276_says(tmp_path: Path) -> None:
    """NSEC lets anyone list every handle by walking the chain (check warns of it)."""
    definition = tmp_path / "zones" / "example.org.yaml"
    definition.parent.mkdir()
    definition.write_text(ZONE_SCAFFOLD.format(zone="example.org"), encoding="utf-8")
    dnssec = load_zone(definition).dnssec
    assert dnssec.denial == "nsec3"
    assert dnssec.nsec3_iterations == 0
    assert dnssec.nsec3_salt in ("", "-", b"")
