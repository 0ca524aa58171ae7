"""A record as pasted by hand: dig's quoted form, the owner name, the inferred substrate."""

from __future__ import annotations

import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.TXT
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

from alter_publish.errors import UsageError, VerificationError
from alter_publish.format.envelope import Envelope, sign_envelope, split_txt
from alter_publish.format.handles import Handle, parse_handle
from alter_publish.format.identitylog import EMPTY_ROOT
from alter_publish.format.recordtext import (
    infer_substrate,
    join_txt,
    record_owner,
    verify_pasted,
)
from tests.conftest import NOW

KEY = Ed25519PrivateKey.from_private_bytes(bytes([7]) * 32)


def _envelope(handle: Handle, owner: str) -> Envelope:
    return sign_envelope(
        handle=handle,
        owner=owner,
        epoch=1,
        private_key=KEY,
        signed_at=NOW,
        expires_at=NOW + 86_400,
        log_size=0,
        log_root=EMPTY_ROOT,
        revocation_secret=bytes(32),
    )


def _dig(text: str) -> str:
    """``text`` as dig prints a TXT record: quoted character-strings of at most 255 octets."""
    strings = [s.encode("latin-1") for s in split_txt(text)]
    return dns.rdtypes.ANY.TXT.TXT(dns.rdataclass.IN, dns.rdatatype.TXT, strings).to_text()


BLAKE_OWNER = "_alter.blake.example.com."
BLAKE = _envelope(parse_handle("~blake"), BLAKE_OWNER)
DOMAIN = _envelope(parse_handle("~example.com"), "_alter.example.com.")


@given(st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=700))
def test_dig_form_joins_back_to_the_record_text(text: str) -> None:
    assert join_txt(_dig(text)) == text


@pytest.mark.parametrize(
    ("pasted", "text"),
    [
        pytest.param("  v=alter1; h=~blake \n", "v=alter1; h=~blake", id="plain-stripped"),
        pytest.param('"v=alter1; " "h=~blake"', "v=alter1; h=~blake", id="two-strings"),
        pytest.param('""', "", id="empty-string"),
    ],
)
def test_join_txt(pasted: str, text: str) -> None:
    assert join_txt(pasted) == text


@pytest.mark.parametrize(
    "pasted",
    [
        pytest.param('"unterminated', id="unterminated"),
        pytest.param('"' + "x" * 256 + '"', id="string-over-255"),
        pytest.param('"a" (', id="unbalanced"),
    ],
)
def test_quoted_text_that_is_not_txt_rdata_is_a_usage_error(pasted: str) -> None:
    with pytest.raises(UsageError, match="not TXT rdata"):
        join_txt(pasted)


@pytest.mark.parametrize(
    ("given_owner", "owner"),
    [
        ("_alter.Blake.Example.COM", BLAKE_OWNER),
        (BLAKE_OWNER, BLAKE_OWNER),
    ],
    ids=["relative-mixed-case", "absolute"],
)
def test_record_owner(given_owner: str, owner: str) -> None:
    assert record_owner(given_owner) == owner


@pytest.mark.parametrize(
    ("record", "owner", "substrate"),
    [
        pytest.param(BLAKE.to_text(), BLAKE_OWNER, "example.com.", id="bare-handle"),
        pytest.param(BLAKE.to_text(), "_alter.blake.", None, id="owner-is-only-the-prefix"),
        pytest.param(BLAKE.to_text(), "_alter.drew.example.com.", None, id="other-name"),
        pytest.param(DOMAIN.to_text(), "_alter.example.com.", None, id="domain-handle"),
        pytest.param("v=alter1; h=~blake; e=x", BLAKE_OWNER, None, id="malformed"),
        pytest.param("v=spf1 -all", BLAKE_OWNER, None, id="not-alter1"),
    ],
)
def test_infer_substrate(record: str, owner: str, substrate: str | None) -> None:
    assert infer_substrate(record, owner) == substrate


def test_a_pasted_dig_record_verifies_with_the_inferred_substrate() -> None:
    envelope = verify_pasted(_dig(BLAKE.to_text()), owner=BLAKE_OWNER, substrate=None, now=NOW)
    assert envelope == BLAKE


def test_a_pasted_record_at_another_owner_fails_verification() -> None:
    with pytest.raises(VerificationError):
        verify_pasted(
            BLAKE.to_text(), owner="_alter.drew.example.com.", substrate="example.com", now=NOW
        )
