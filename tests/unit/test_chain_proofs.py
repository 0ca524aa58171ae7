"""What the chain of trust reads from a validated response: the signer, a delegation."""

from __future__ import annotations

import dns.message
import dns.name
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import pytest

from alter_publish.dns.nsec3 import NSEC3_HASH_SHA1, nsec3_hash
from alter_publish.dns.validation import proves_delegation, signer_of

CHILD = dns.name.from_text("example.com.")
SALT = "ab"
ITERATIONS = 0


def _response(*rrsets: dns.rrset.RRset) -> dns.message.Message:
    response = dns.message.make_response(dns.message.make_query(CHILD, dns.rdatatype.DS))
    response.authority.extend(rrsets)
    return response


def _nsec(owner: str, types: str) -> dns.rrset.RRset:
    return dns.rrset.from_text(owner, 300, "IN", "NSEC", f"zzz.com. {types}")


def _nsec3(name: dns.name.Name, types: str, zone: str = "com.") -> dns.rrset.RRset:
    hashed = nsec3_hash(name, bytes.fromhex(SALT), ITERATIONS, NSEC3_HASH_SHA1)
    text = f"1 0 {ITERATIONS} {SALT} {'V' * 32} {types}"
    return dns.rrset.from_text(f"{hashed.lower()}.{zone}", 300, "IN", "NSEC3", text)


@pytest.mark.parametrize(
    ("rrset", "delegation"),
    [
        pytest.param(_nsec("example.com.", "NS RRSIG NSEC"), True, id="nsec-cut"),
        pytest.param(_nsec("example.com.", "A RRSIG NSEC"), False, id="nsec-no-ns"),
        pytest.param(_nsec("example.com.", "NS SOA RRSIG NSEC"), False, id="nsec-apex"),
        pytest.param(_nsec("other.com.", "NS RRSIG NSEC"), False, id="nsec-elsewhere"),
        pytest.param(_nsec3(CHILD, "NS"), True, id="nsec3-cut"),
        pytest.param(_nsec3(CHILD, "A RRSIG"), False, id="nsec3-no-ns"),
        pytest.param(_nsec3(dns.name.from_text("other.com."), "NS"), False, id="nsec3-elsewhere"),
        # A record of another zone was never validated with the parent's keys: an
        # attacker's NSEC3 with the right hash must not prove an insecure delegation.
        pytest.param(_nsec3(CHILD, "NS", "attacker.net."), False, id="nsec3-other-zone"),
        pytest.param(_nsec3(CHILD, "NS", "example.com."), False, id="nsec3-child-zone"),
    ],
)
def test_proves_delegation(rrset: dns.rrset.RRset, delegation: bool) -> None:
    assert proves_delegation(_response(rrset), CHILD, dns.name.from_text("com.")) is delegation


def _rrsig(owner: str, signer: str) -> dns.rrset.RRset:
    text = f"TXT 15 3 300 20260201000000 20260101000000 1 {signer} AAAA"
    return dns.rrset.from_text(owner, 300, "IN", "RRSIG", text)


def test_signer_is_an_ancestor_of_the_name() -> None:
    name = dns.name.from_text("_alter.blake.example.com.")
    response = _response(_rrsig("zzz.insecure.example.com.", "insecure.example.com."))
    assert signer_of(response, name) is None
    response.authority.append(_rrsig("example.com.", "example.com."))
    assert signer_of(response, name) == CHILD
    response.answer.append(_rrsig("_alter.blake.example.com.", "com."))
    assert signer_of(response, name) == dns.name.from_text("com.")
