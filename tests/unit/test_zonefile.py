"""A zone file's origin, read before the file is parsed."""

from __future__ import annotations

from pathlib import Path

import pytest

from alter_publish.dns.zonefile import origin_of


@pytest.mark.parametrize(
    ("name", "text", "origin"),
    [
        pytest.param("x.zone", "$ORIGIN Example.COM.\n@ SOA ...\n", "example.com", id="origin"),
        pytest.param("x.zone", "; a comment\n$origin a.example.\n", "a.example", id="lowercase"),
        pytest.param("b.example.zone", "@ 300 IN NS ns1\n", "b.example", id="file-name"),
        pytest.param("c.example", "$ORIGIN\n", "c.example", id="origin-without-name"),
        pytest.param("d.example.zone", b"\xff\xfe", "d.example", id="not-utf8"),
    ],
)
def test_origin_of(tmp_path: Path, name: str, text: str | bytes, origin: str) -> None:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    assert origin_of(path) == origin


def test_a_missing_file_is_named_by_its_file_name(tmp_path: Path) -> None:
    assert origin_of(tmp_path / "gone.example.zone") == "gone.example"
