"""Root hints and the IANA root trust anchors shipped as package data."""

from __future__ import annotations

from pathlib import Path

import dns.name
import pytest

from alter_publish.dns.hints import (
    default_root_anchors,
    default_root_hints,
    parse_root_hints,
    read_root_hints,
)
from alter_publish.errors import UsageError


def test_default_anchors_are_the_iana_root_ksks() -> None:
    (anchor,) = default_root_anchors()
    assert anchor.zone == dns.name.root
    assert {(ds.key_tag, ds.algorithm, ds.digest_type) for ds in anchor.ds} == {
        (20326, 8, 2),
        (38696, 8, 2),
    }
    digests = {ds.key_tag: bytes(ds.digest).hex().upper() for ds in anchor.ds}
    assert digests[20326] == "E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D"
    assert digests[38696] == "683D2D0ACB8C9B712A1948B27F741219298D0A450D612C483AF444A4C0FB2B16"


def test_default_hints_are_the_thirteen_root_servers() -> None:
    hints = default_root_hints()
    names = [name.to_text().lower() for name, _ in hints.servers]
    assert names == [f"{letter}.root-servers.net." for letter in "abcdefghijklm"]
    assert hints.servers[0][1] == ("198.41.0.4", "2001:503:ba3e::2:30")
    assert hints.addresses[0] == "198.41.0.4"
    assert ":" not in hints.addresses[12]  # IPv4 first
    assert ":" in hints.addresses[13]


def test_hints_without_ttls_and_with_servers_lacking_addresses() -> None:
    hints = parse_root_hints(". NS a.root.\n. NS b.root.\na.root. A 127.0.20.1\n", where="hints")
    assert hints.servers == ((dns.name.from_text("a.root."), ("127.0.20.1",)),)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(". NS a.root.\n", "no root server with an address", id="no-address"),
        pytest.param("a.root. A 127.0.20.1\n", "no root server with an address", id="no-ns"),
        pytest.param(". NS\n", "bad root hints", id="syntax"),
    ],
)
def test_bad_hints(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_root_hints(text, where="hints")


def test_missing_hints_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read root hints"):
        read_root_hints(tmp_path / "absent")
