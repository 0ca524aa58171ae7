"""definition.tls: a resolver endpoint's certificate or key read into its TLSA record,
checked against openssl; every problem one line with file:line:col."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from alter_publish.definition.model import ZoneSpec, load_zone
from alter_publish.errors import DefinitionError
from alter_publish.format.tlsa import TLSAData
from tests.tlsfixtures import make_certificate

HEAD = "zone: example.com\nns: [ns1]\n"


def _zone(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "zones" / "example.com.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEAD + body, encoding="utf-8")
    return path


def _openssl_spki_sha256(cert: Path) -> str:
    """``openssl x509 -pubkey | openssl pkey -pubin -outform DER | sha256``: the 3 1 1 data."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed (Debian package openssl)")
    pem = subprocess.run(
        [openssl, "x509", "-pubkey", "-noout", "-in", str(cert)],
        capture_output=True,
        check=True,
    ).stdout
    der = subprocess.run(
        [openssl, "pkey", "-pubin", "-outform", "DER"], input=pem, capture_output=True, check=True
    ).stdout
    return hashlib.sha256(der).hexdigest().upper()


def test_a_handles_cert_gives_3_1_1_as_openssl_computes_it(tmp_path: Path) -> None:
    cert = make_certificate(tmp_path / "zones" / "certs", "mcp", "mcp.example.com")
    spec = load_zone(
        _zone(
            tmp_path,
            "handles:\n"
            "  - handle: ~blake\n"
            "    resolver: https://mcp.example.com/blake\n"
            "    tls: {cert: certs/mcp.pem}\n",
        )
    )
    (found,) = spec.tlsa_sets()
    assert found.owner == "_443._tcp.mcp.example.com."
    assert found.inside
    (record,) = found.records
    assert (record.usage, record.selector, record.matching) == (3, 1, 1)
    assert record.data.hex().upper() == _openssl_spki_sha256(cert.cert)
    assert spec.warnings() == ()


def test_the_public_key_file_and_the_cert_give_the_same_record(tmp_path: Path) -> None:
    make_certificate(tmp_path / "zones", "mcp", "mcp.example.com")
    spec = load_zone(
        _zone(
            tmp_path,
            "tls:\n"
            "  mcp.example.com: {public_key: mcp.pub}\n"
            "  'mcp.example.com:8443': {cert: mcp.pem, selector: 0, matching: 2}\n"
            "handles:\n"
            "  - handle: ~blake\n"
            "    resolver: https://mcp.example.com/blake\n"
            "    tls: {cert: mcp.pem}\n",
        )
    )
    first, second = spec.tlsa_sets()
    assert first.owner == "_443._tcp.mcp.example.com."
    assert len(first.records) == 1  # the key and the certificate: one record
    assert second.owner == "_8443._tcp.mcp.example.com."
    (full,) = second.records
    assert (full.selector, full.matching, len(full.data)) == (0, 2, 64)


def test_the_port_comes_from_the_resolver_and_outside_hosts_are_a_warning(
    tmp_path: Path,
) -> None:
    make_certificate(tmp_path / "zones", "api", "api.example.net")
    spec = load_zone(
        _zone(
            tmp_path,
            "handles:\n"
            "  - handle: ~blake\n"
            "    resolver: https://api.example.net:8443/blake\n"
            "    tls: {cert: api.pem}\n",
        )
    )
    (found,) = spec.tlsa_sets()
    assert found.owner == "_8443._tcp.api.example.net."
    assert not found.inside
    (warning,) = spec.warnings()
    assert "outside the zone" in warning
    assert f"_8443._tcp.api.example.net. 3600 IN TLSA {found.records[0].to_text()}" in warning


def test_to_mapping_round_trips_tls(tmp_path: Path) -> None:
    make_certificate(tmp_path / "zones", "mcp", "mcp.example.com")
    spec = load_zone(
        _zone(
            tmp_path,
            "tls:\n"
            "  'mcp.example.com:8443': {cert: mcp.pem, usage: 2, matching: 0}\n"
            "handles:\n"
            "  - handle: ~blake\n"
            "    resolver: https://mcp.example.com/blake\n"
            "    tls: {public_key: mcp.pub}\n",
        )
    )
    path = tmp_path / "zones" / "example.com.yaml"
    path.write_text(yaml.safe_dump(spec.to_mapping()), encoding="utf-8")
    again = load_zone(path)
    assert again == spec
    assert isinstance(again.tlsa_sets()[0].records[0], TLSAData)


@pytest.mark.parametrize(
    ("body", "where", "what"),
    [
        pytest.param(
            "  - handle: ~blake\n    resolver: https://mcp.example.com/\n"
            "    tls: {cert: missing.pem}\n",
            "6:17",
            "tls cert: cannot read",
            id="missing-file",
        ),
        pytest.param(
            "  - handle: ~blake\n    resolver: https://mcp.example.com/\n"
            "    tls: {cert: example.com.yaml}\n",
            "6:17",
            "is not an X.509 certificate",
            id="not-a-cert",
        ),
        pytest.param(
            "  - handle: ~blake\n    resolver: https://mcp.example.com/\n"
            "    tls: {cert: mcp.pem, usage: 4}\n",
            "6:33",
            "bad tls usage 4",
            id="bad-usage",
        ),
        pytest.param(
            "  - handle: ~blake\n    resolver: https://mcp.example.com/\n"
            "    tls: {public_key: mcp.pub, selector: 0}\n",
            "6:23",
            "selector 0 (the whole certificate) needs 'cert'",
            id="key-with-selector-0",
        ),
        pytest.param(
            "  - handle: ~blake\n    tls: {cert: mcp.pem}\n",
            "5:10",
            "tls needs a resolver",
            id="no-resolver",
        ),
        pytest.param(
            "  - handle: ~blake\n    resolver: http://mcp.example.com/\n    tls: {cert: mcp.pem}\n",
            "6:10",
            "tls needs an https resolver",
            id="http-resolver",
        ),
        pytest.param(
            "  - handle: ~blake\n    resolver: https://192.0.2.1/\n    tls: {cert: mcp.pem}\n",
            "6:10",
            "is an IP address",
            id="ip-host",
        ),
        pytest.param(
            "  - handle: ~blake\n    resolver: https://mcp.example.com/\n"
            "    tls: {cert: mcp.pem, pin: x}\n",
            "6:26",
            "unknown field 'pin' in tls",
            id="unknown-field",
        ),
    ],
)
def test_each_problem_is_one_line_with_file_line_col(
    tmp_path: Path, body: str, where: str, what: str
) -> None:
    make_certificate(tmp_path / "zones", "mcp", "mcp.example.com")
    path = _zone(tmp_path, "handles:\n" + body)
    with pytest.raises(DefinitionError) as info:
        load_zone(path)
    error = info.value
    assert str(error).count("\n") == 0
    assert str(error).startswith(f"{path}:{where}: "), str(error)
    assert what in str(error)


def test_a_zone_level_endpoint_must_be_a_host(tmp_path: Path) -> None:
    path = _zone(tmp_path, "tls:\n  'mcp.example.com:99999': {cert: x.pem}\nhandles: []\n")
    with pytest.raises(DefinitionError) as info:
        load_zone(path)
    assert str(info.value).startswith(f"{path}:4:3: tls endpoint 'mcp.example.com:99999': port")


def test_zone_without_tls_has_no_sets(tmp_path: Path) -> None:
    spec: ZoneSpec = load_zone(_zone(tmp_path, "handles: [~blake]\n"))
    assert spec.tlsa_sets() == ()
    assert "tls" not in spec.to_mapping()
