"""verify.dane: a loopback TLS endpoint (Python ssl in a thread, certificates made
here) against TLSA records: the published key matches, another certificate does not,
the RFC 7671 rules (DANE-EE ignores names and dates; unusable records), cross-checked
with ldns-dane."""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from alter_publish.dns.validation import DNSSECStatus
from alter_publish.format.tlsa import TLSAData, data_for_certificate, tlsa_owner
from alter_publish.verify.dane import (
    DaneVerdict,
    TLSAAnswer,
    check_endpoint,
    match_certificate,
    verify_endpoint,
)
from tests.tlsfixtures import Certificate, make_certificate, tls_server

HOST = "mcp.example.com"
TIMEOUT = 5.0


def _record(cert: Certificate, usage: int = 3, selector: int = 1, matching: int = 1) -> TLSAData:
    return TLSAData(usage, selector, matching, data_for_certificate(cert.der, selector, matching))


def _secure(port: int, *records: TLSAData) -> TLSAAnswer:
    return TLSAAnswer(tlsa_owner(HOST, port), DNSSECStatus.SECURE, records)


@pytest.fixture
def published(tmp_path: Path) -> Certificate:
    return make_certificate(tmp_path, "published", HOST)


@pytest.fixture
def other(tmp_path: Path) -> Certificate:
    return make_certificate(tmp_path, "other", HOST)


@pytest.mark.parametrize(
    ("selector", "matching"),
    [(1, 1), (1, 2), (1, 0), (0, 1), (0, 2), (0, 0)],
    ids=["3-1-1", "3-1-2", "3-1-0", "3-0-1", "3-0-2", "3-0-0"],
)
def test_the_published_key_matches_at_the_endpoint(
    published: Certificate, selector: int, matching: int
) -> None:
    record = _record(published, 3, selector, matching)
    with tls_server(published) as server:
        verdict = verify_endpoint(
            HOST, server.port, _secure(server.port, record), timeout=TIMEOUT, address=server.host
        )
    assert verdict.category == "match", verdict.detail
    assert verdict.ok
    assert not verdict.blocks_dispatch
    assert verdict.matched == record
    assert server.names == [HOST]  # SNI is the host


def test_another_certificate_is_a_mismatch(published: Certificate, other: Certificate) -> None:
    with tls_server(other) as server:
        verdict = verify_endpoint(
            HOST,
            server.port,
            _secure(server.port, _record(published)),
            timeout=TIMEOUT,
            address=server.host,
        )
    assert verdict.category == "mismatch"
    assert verdict.blocks_dispatch


def test_dane_ee_ignores_the_name_and_the_dates(tmp_path: Path) -> None:
    expired = make_certificate(tmp_path, "expired", "not-the-host.example", days=1)
    with tls_server(expired) as server:
        verdict = verify_endpoint(
            HOST,
            server.port,
            _secure(server.port, _record(expired)),
            timeout=TIMEOUT,
            address=server.host,
        )
    assert verdict.category == "match", verdict.detail


def test_unusable_records_are_unsupported_and_do_not_excuse_a_mismatch(
    published: Certificate, other: Certificate
) -> None:
    dane_ta = _record(published, usage=2)
    assert match_certificate(published.der, [dane_ta])[0] == "unsupported"
    assert match_certificate(other.der, [dane_ta, _record(published)])[0] == "mismatch"
    assert match_certificate(published.der, [dane_ta, _record(published)])[0] == "match"
    short = TLSAData(3, 1, 1, b"\x00" * 31)  # a SHA-256 of the wrong length: unusable
    assert match_certificate(published.der, [short])[0] == "unsupported"


def test_an_endpoint_that_does_not_answer_is_unreachable(published: Certificate) -> None:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]
    verdict = verify_endpoint(
        HOST, port, _secure(port, _record(published)), timeout=TIMEOUT, address="127.0.0.1"
    )
    assert verdict.category == "unreachable"
    assert verdict.blocks_dispatch


@pytest.mark.parametrize(
    ("status", "records", "category", "blocks"),
    [
        (DNSSECStatus.INSECURE, True, "insecure-tlsa", False),
        (DNSSECStatus.BOGUS, True, "bogus-tlsa", True),
        (DNSSECStatus.SECURE, False, "no-tlsa", False),
    ],
    ids=["insecure", "bogus", "secure-denial"],
)
def test_without_a_secure_rrset_nothing_is_connected_to(
    published: Certificate,
    status: DNSSECStatus,
    records: bool,
    category: str,
    blocks: bool,
) -> None:
    with tls_server(published) as server:
        answer = TLSAAnswer(
            tlsa_owner(HOST, server.port),
            status,
            (_record(published),) if records else (),
            "why",
        )
        verdict = verify_endpoint(HOST, server.port, answer, timeout=TIMEOUT, address=server.host)
    assert verdict.category == category
    assert verdict.blocks_dispatch is blocks
    assert server.names == []  # no handshake


class _Fixed:
    """A DaneLookup holding one answer (the DNS side is tested on real servers in
    tests/integration/test_world_dane.py)."""

    def __init__(self, answer: TLSAAnswer, address: str) -> None:
        self.answer, self.address = answer, address
        self.asked: list[tuple[str, int]] = []

    def tlsa(self, host: str, port: int) -> TLSAAnswer:
        self.asked.append((host, port))
        return self.answer

    def addresses(self, host: str) -> tuple[str, ...]:
        return (self.address,)


def test_check_endpoint_takes_the_port_from_the_uri_and_never_shows_the_path(
    published: Certificate, other: Certificate
) -> None:
    with tls_server(other) as server:
        lookup = _Fixed(_secure(server.port, _record(published)), server.host)
        url = f"https://{HOST.upper()}:{server.port}/secret-path?q=secret#frag"
        verdict: DaneVerdict = check_endpoint(url, lookup, TIMEOUT)
    assert lookup.asked == [(HOST, server.port)]
    assert verdict.category == "mismatch"
    assert "secret" not in str(verdict.to_mapping())
    assert check_endpoint("http://mcp.example.com/x", lookup).category == "unsupported"
    assert check_endpoint("https://192.0.2.1/x", lookup).category == "no-tlsa"


def test_ldns_dane_computes_the_same_record_from_the_endpoint(
    published: Certificate, tmp_path: Path
) -> None:
    ldns_dane = shutil.which("ldns-dane")
    if ldns_dane is None:
        pytest.skip("ldns-dane is not installed (Debian package ldnsutils)")
    with tls_server(published) as server:
        created = subprocess.run(
            [ldns_dane, "-n", "-a", server.host, "create", HOST, str(server.port), "3", "1", "1"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert created.returncode == 0, created.stderr
        fields = created.stdout.split()
        assert fields[-4:-1] == ["3", "1", "1"], created.stdout
        assert fields[-1].upper() == _record(published).data.hex().upper()
        # and ldns-dane verifies the endpoint with the record as sign computes it
        tlsa_file = tmp_path / "tlsa.txt"
        tlsa_file.write_text(
            f"{tlsa_owner(HOST, server.port)} 3600 IN TLSA {_record(published).to_text()}\n"
        )
        verified = subprocess.run(
            [ldns_dane, "-n", "-a", server.host, "-t", str(tlsa_file), "verify"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    assert verified.returncode == 0, verified.stdout + verified.stderr
