"""Spec section 7 selection, and resolving over a real loopback server."""

from __future__ import annotations

import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.dns.server import ZoneServer
from alter_publish.format.envelope import Envelope, Revocation, sign_envelope
from alter_publish.format.handles import parse_handle
from alter_publish.format.identitylog import EMPTY_ROOT
from alter_publish.pipeline.render import txt_rdata_text
from alter_publish.verify.resolve import DNSSECStatus, resolve, select_envelope

NOW = 1_767_225_600
BLAKE = parse_handle("~blake")
OWNER = BLAKE.owner("example.com")
SECRET = bytes(range(32))


def _envelope(epoch: int, key: Ed25519PrivateKey | None = None, **changes: int) -> Envelope:
    return sign_envelope(
        handle=BLAKE,
        owner=OWNER,
        epoch=epoch,
        private_key=key or Ed25519PrivateKey.generate(),
        signed_at=changes.get("t", NOW),
        expires_at=changes.get("x", NOW + 86400),
        log_size=0,
        log_root=EMPTY_ROOT,
        revocation_secret=SECRET,
    )


def _select(*texts: str) -> tuple[Envelope | None, str | None]:
    envelope, category, _, _ = select_envelope(
        BLAKE, OWNER, texts, substrate="example.com", now=NOW
    )
    return envelope, category


def test_highest_valid_epoch_wins() -> None:
    one, two = _envelope(1), _envelope(2)
    assert _select(one.to_text(), two.to_text()) == (two, None)


def test_same_epoch_two_keys_is_a_conflict() -> None:
    assert _select(_envelope(3).to_text(), _envelope(3).to_text())[1] == "conflict"


def test_nothing_for_the_handle_is_not_found() -> None:
    assert _select("v=spf1 -all", "v=alter1; org=example")[1] == "not-found"


def test_failure_of_the_highest_epoch_is_reported() -> None:
    expired = _envelope(5, t=NOW - 10 * 86400, x=NOW - 86400)
    bad = _envelope(2).to_text().replace("e=2;", "e=2; zz=1;")
    assert _select(bad, expired.to_text())[1] == "expired"


def test_revocation_beside_the_envelope_applies() -> None:
    envelope = _envelope(1)
    revocation = Revocation(handle=BLAKE, epoch=1, secret=SECRET).to_text()
    assert _select(envelope.to_text(), revocation)[1] == "revoked"


def test_unparseable_record_naming_the_handle_is_malformed() -> None:
    assert _select("v=alter1; h=~blake; e=1;; junk")[1] == "malformed"


@pytest.mark.parametrize("allow", [True, False], ids=["allow-insecure", "require-secure"])
def test_resolve_over_loopback(allow: bool) -> None:
    envelope = _envelope(1)
    text = (
        "$ORIGIN example.com.\n@ 300 IN SOA ns1 hostmaster 1 2 3 4 5\n@ 300 IN NS ns1\n"
        f"{OWNER} 300 IN TXT {txt_rdata_text(envelope.txt_strings())}\n"
    )
    zone = dns.zone.from_text(text, relativize=False)
    with ZoneServer([zone]) as server:
        result = resolve(
            BLAKE, server=server.address, substrate="example.com", now=NOW, allow_insecure=allow
        )
        missing = resolve(
            parse_handle("~nobody"),
            server=server.address,
            substrate="example.com",
            now=NOW,
            allow_insecure=True,
        )
    assert result.dnssec is DNSSECStatus.INSECURE
    if allow:
        assert result.ok
        assert result.envelope == envelope
    else:
        assert result.category == "insecure"
    assert missing.category == "not-found"
