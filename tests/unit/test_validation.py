"""Tests for alter_publish.dns.validation: real Ed25519 signatures, zones signed by dnspython.

NSEC zones are signed with ``dns.dnssec.sign_zone`` and answered by our
server's pure :func:`answer`; dnspython 2.9 cannot sign with NSEC3 yet, so the
NSEC3 chain is built and signed here, record by record, and its responses
are put together by hand. Every attack is a real response edited the way an
attacker on the path would edit it.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import dns.dnssec
import dns.dnssectypes
import dns.message
import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.DNSKEY
import dns.rdtypes.ANY.DS
import dns.rdtypes.ANY.NSEC
import dns.rdtypes.ANY.NSEC3
import dns.rdtypes.ANY.RRSIG
import dns.rdtypes.ANY.TXT
import dns.rrset
import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from hypothesis import given, settings
from hypothesis import strategies as st

from alter_publish.dns.anchors import (
    TrustAnchor,
    anchor_for,
    parse_trust_anchors,
    read_trust_anchors,
)
from alter_publish.dns.validation import (
    DNSSECStatus,
    Validation,
    validate_dnskeys,
    validate_response,
)
from alter_publish.dns.zoneindex import ZoneIndex, answer
from alter_publish.errors import UsageError

NOW = 1_767_225_600  # 2026-01-01T00:00:00Z
INCEPTION = NOW - 3600
EXPIRATION = NOW + 14 * 86400  # 2026-01-15T00:00:00Z
ZONE = dns.name.from_text("example.com.")
IN = dns.rdataclass.IN
TXT = dns.rdatatype.TXT
A = dns.rdatatype.A
NSEC = dns.rdatatype.NSEC
NSEC3 = dns.rdatatype.NSEC3
RRSIG = dns.rdatatype.RRSIG
SOA = dns.rdatatype.SOA
DNSKEY = dns.rdatatype.DNSKEY
SECURE, INSECURE, BOGUS = DNSSECStatus.SECURE, DNSSECStatus.INSECURE, DNSSECStatus.BOGUS

ZONE_TEXT = """
$TTL 3600
@                 IN SOA   ns1 hostmaster 1 7200 3600 1209600 300
@                 IN NS    ns1
ns1               IN A     192.0.2.1
_alter            IN TXT   "v=alter1 apex"
_alter.blake      IN TXT   "v=alter1 blake"
_alter.deploy.bot IN TXT   "v=alter1 deploy.bot"
*.wild            IN TXT   "v=alter1 wild"
alias             IN CNAME _alter.blake
dangling          IN CNAME nothere
outside           IN CNAME www.example.net.
"""


def n(text: str) -> dns.name.Name:
    """An absolute name from its text."""
    return dns.name.from_text(text)


@dataclass(frozen=True)
class SigningKey:
    private: ed25519.Ed25519PrivateKey
    dnskey: dns.rdtypes.ANY.DNSKEY.DNSKEY


def signing_key(seed: bytes, flags: int) -> SigningKey:
    private = ed25519.Ed25519PrivateKey.from_private_bytes(hashlib.sha256(seed).digest())
    dnskey = dns.dnssec.make_dnskey(private.public_key(), dns.dnssectypes.Algorithm.ED25519, flags)
    return SigningKey(private, dnskey)


KSK = signing_key(b"ksk", 257)
ZSK = signing_key(b"zsk", 256)
STRANGER = signing_key(b"stranger", 257)


def sign(rrset: dns.rrset.RRset, key: SigningKey) -> dns.rrset.RRset:
    rrsig = dns.dnssec.sign(
        rrset, key.private, ZONE, key.dnskey, inception=INCEPTION, expiration=EXPIRATION
    )
    return dns.rrset.from_rdata(rrset.name, rrset.ttl, rrsig)


def load_zone() -> dns.zone.Zone:
    return dns.zone.from_text(ZONE_TEXT, origin=ZONE, relativize=False)


@functools.cache
def signed_zone() -> dns.zone.Zone:
    zone = load_zone()
    keys: list[tuple[dns.dnssec.PrivateKey, dns.rdtypes.ANY.DNSKEY.DNSKEY]] = [
        (KSK.private, KSK.dnskey),
        (ZSK.private, ZSK.dnskey),
    ]
    dns.dnssec.sign_zone(zone, keys=keys, inception=INCEPTION, expiration=EXPIRATION)
    return zone


@functools.cache
def index(*, signed: bool = True) -> ZoneIndex:
    return ZoneIndex.build([signed_zone() if signed else load_zone()])


def ask(qname: str, qtype: dns.rdatatype.RdataType, *, signed: bool = True) -> dns.message.Message:
    query = dns.message.make_query(qname, qtype, want_dnssec=True)
    wire = answer(index(signed=signed), query.to_wire(), max_udp=None)
    assert wire is not None
    return dns.message.from_wire(wire)


def zone_rrset(
    owner: str, rdtype: dns.rdatatype.RdataType, covers: dns.rdatatype.RdataType | None = None
) -> dns.rrset.RRset:
    covers = dns.rdatatype.NONE if covers is None else covers
    return signed_zone().find_rrset(n(owner), rdtype, covers)


def respond(
    qname: str,
    qtype: dns.rdatatype.RdataType,
    rcode: dns.rcode.Rcode,
    answer_rrsets: list[dns.rrset.RRset],
    authority: list[dns.rrset.RRset],
) -> dns.message.Message:
    """A response put together by hand, sent through the wire format once."""
    response = dns.message.make_response(dns.message.make_query(qname, qtype, want_dnssec=True))
    response.set_rcode(rcode)
    response.answer = answer_rrsets
    response.authority = authority
    return dns.message.from_wire(response.to_wire())


def dnskeys() -> dns.rrset.RRset:
    return zone_rrset("example.com.", DNSKEY)


def check(
    response: dns.message.Message, qname: str, qtype: dns.rdatatype.RdataType, *, now: int = NOW
) -> Validation:
    return validate_response(response, n(qname), qtype, zone=ZONE, dnskeys=dnskeys(), now=now)


def assert_verdict(validation: Validation, status: DNSSECStatus, reason: str) -> None:
    assert validation.status == status, validation.reason
    assert reason in validation.reason
    assert (validation.reason == "") == (status == SECURE)


# --------------------------------------------------------------------------
# Editing responses the way an attacker would
# --------------------------------------------------------------------------


def with_txt(rrset: dns.rrset.RRset, data: bytes) -> dns.rrset.RRset:
    rdata = dns.rdtypes.ANY.TXT.TXT(IN, TXT, [data])
    return dns.rrset.from_rdata(rrset.name, rrset.ttl, rdata)


def flip_txt(response: dns.message.Message, position: int = 2, mask: int = 0x01) -> None:
    edited = []
    for rrset in response.answer:
        if rrset.rdtype == TXT:
            data = bytearray(cast("dns.rdtypes.ANY.TXT.TXT", rrset[0]).strings[0])
            data[position] ^= mask
            rrset = with_txt(rrset, bytes(data))
        edited.append(rrset)
    response.answer = edited


def drop_rrsigs(response: dns.message.Message) -> None:
    response.answer = [rrset for rrset in response.answer if rrset.rdtype != RRSIG]


def tamper_rrsig(response: dns.message.Message) -> None:
    edited = []
    for rrset in response.answer:
        if rrset.rdtype == RRSIG:
            rrsig = cast("dns.rdtypes.ANY.RRSIG.RRSIG", rrset[0])
            signature = bytes([rrsig.signature[0] ^ 0x80]) + rrsig.signature[1:]
            rrset = dns.rrset.from_rdata(rrset.name, rrset.ttl, rrsig.replace(signature=signature))
        edited.append(rrset)
    response.answer = edited


def drop_nsec(owner: str) -> Callable[[dns.message.Message], None]:
    def edit(response: dns.message.Message) -> None:
        response.authority = [
            rrset
            for rrset in response.authority
            if not (rrset.name == n(owner) and NSEC in (rrset.rdtype, rrset.covers))
        ]

    return edit


def forge_apex_nsec(response: dns.message.Message) -> None:
    """Stretch the apex NSEC over existing names, keeping its old RRSIG."""
    edited = []
    for rrset in response.authority:
        if rrset.rdtype == NSEC and rrset.name == ZONE:
            nsec = cast("dns.rdtypes.ANY.NSEC.NSEC", rrset[0])
            forged = nsec.replace(next=n("ns1.example.com."))
            rrset = dns.rrset.from_rdata(rrset.name, rrset.ttl, forged)
        edited.append(rrset)
    response.authority = edited


def keep_only_soa(response: dns.message.Message) -> None:
    response.authority = [
        rrset for rrset in response.authority if SOA in (rrset.rdtype, rrset.covers)
    ]


def claim_nxdomain(response: dns.message.Message) -> None:
    """Deny an existing name with NSECs replayed from elsewhere in the zone."""
    response.set_rcode(dns.rcode.NXDOMAIN)
    response.answer = []
    response.authority = [
        zone_rrset("example.com.", SOA),
        zone_rrset("example.com.", RRSIG, SOA),
        zone_rrset("_alter.example.com.", NSEC),
        zone_rrset("_alter.example.com.", RRSIG, NSEC),
        zone_rrset("example.com.", NSEC),
        zone_rrset("example.com.", RRSIG, NSEC),
    ]


def claim_nodata(response: dns.message.Message) -> None:
    """Strip the answer and show the name's own NSEC as if it lacked the type."""
    response.answer = []
    response.authority = [
        zone_rrset("_alter.example.com.", NSEC),
        zone_rrset("_alter.example.com.", RRSIG, NSEC),
    ]


def sign_with_stranger(response: dns.message.Message) -> None:
    txt = response.answer[0]
    response.answer = [txt, sign(txt, STRANGER)]


def no_edit(response: dns.message.Message) -> None:
    """Leave the response as the server sent it."""


# --------------------------------------------------------------------------
# Positive answers and NSEC denial, answered by our server
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("qname", "qtype"),
    [
        pytest.param("_alter.example.com.", TXT, id="txt"),
        pytest.param("_alter.blake.example.com.", TXT, id="txt-deep"),
        pytest.param("alias.example.com.", TXT, id="cname-to-txt"),
        pytest.param("_alter.x.example.com.", TXT, id="nxdomain"),
        pytest.param("dangling.example.com.", TXT, id="cname-to-nxdomain"),
        pytest.param("ns1.example.com.", TXT, id="nodata"),
        pytest.param("_alter.example.com.", A, id="nodata-other-type"),
        pytest.param("bot.example.com.", TXT, id="nodata-empty-non-terminal"),
        pytest.param("blake.example.com.", TXT, id="nodata-empty-non-terminal-2"),
    ],
)
def test_nsec_zone_answers_are_secure(qname: str, qtype: dns.rdatatype.RdataType) -> None:
    assert_verdict(check(ask(qname, qtype), qname, qtype), SECURE, "")


@pytest.mark.parametrize(
    ("qname", "edit", "now", "status", "reason"),
    [
        pytest.param(
            "_alter.example.com.", flip_txt, NOW, BOGUS, "does not verify", id="txt-rdata-changed"
        ),
        pytest.param(
            "_alter.example.com.",
            drop_rrsigs,
            NOW,
            BOGUS,
            "TXT at _alter.example.com. has no RRSIG",
            id="rrsig-removed",
        ),
        pytest.param(
            "_alter.example.com.", tamper_rrsig, NOW, BOGUS, "does not verify", id="rrsig-tampered"
        ),
        pytest.param(
            "_alter.example.com.",
            no_edit,
            EXPIRATION + 1,
            BOGUS,
            "expired at 2026-01-15T00:00:00Z",
            id="rrsig-expired",
        ),
        pytest.param(
            "_alter.example.com.",
            no_edit,
            INCEPTION - 1,
            BOGUS,
            "not valid until 2025-12-31T23:00:00Z",
            id="rrsig-not-yet-valid",
        ),
        pytest.param(
            "_alter.example.com.",
            sign_with_stranger,
            NOW,
            BOGUS,
            "not signed by a trusted key",
            id="signed-by-stranger",
        ),
        pytest.param(
            "_alter.blake.example.com.",
            claim_nxdomain,
            NOW,
            BOGUS,
            "NSEC does not deny _alter.blake.example.com.",
            id="nxdomain-for-existing-name",
        ),
        pytest.param(
            "_alter.example.com.",
            claim_nodata,
            NOW,
            BOGUS,
            "NSEC at _alter.example.com. lists TXT",
            id="nodata-for-existing-type",
        ),
        pytest.param(
            "_alter.x.example.com.",
            forge_apex_nsec,
            NOW,
            BOGUS,
            "RRSIG over NSEC at example.com. does not verify",
            id="nxdomain-forged-nsec",
        ),
        pytest.param(
            "_alter.x.example.com.",
            drop_nsec("*.wild.example.com."),  # the last NSEC, wrapping to the apex
            NOW,
            BOGUS,
            "NSEC does not deny _alter.x.example.com.",
            id="nxdomain-qname-proof-missing",
        ),
        pytest.param(
            "_alter.x.example.com.",
            drop_nsec("example.com."),
            NOW,
            BOGUS,
            "NSEC does not deny wildcard *.example.com.",
            id="nxdomain-wildcard-proof-missing",
        ),
        pytest.param(
            "_alter.x.example.com.",
            keep_only_soa,
            NOW,
            BOGUS,
            "no NSEC/NSEC3 proof for NXDOMAIN",
            id="nxdomain-no-proof",
        ),
        pytest.param(
            "ns1.example.com.",
            keep_only_soa,
            NOW,
            BOGUS,
            "no NSEC/NSEC3 proof for NODATA TXT at ns1.example.com.",
            id="nodata-no-proof",
        ),
        pytest.param(
            "outside.example.com.",
            no_edit,
            NOW,
            INSECURE,
            "CNAME chain leaves zone example.com. at www.example.net.",
            id="cname-out-of-zone",
        ),
    ],
)
def test_edited_answers_are_not_secure(
    qname: str,
    edit: Callable[[dns.message.Message], None],
    now: int,
    status: DNSSECStatus,
    reason: str,
) -> None:
    response = ask(qname, TXT)
    edit(response)
    assert_verdict(check(response, qname, TXT, now=now), status, reason)


def test_unsigned_zone_under_an_anchor_is_bogus() -> None:
    response = ask("_alter.example.com.", TXT, signed=False)
    assert_verdict(check(response, "_alter.example.com.", TXT), BOGUS, "has no RRSIG")
    negative = ask("_alter.x.example.com.", TXT, signed=False)
    assert_verdict(
        check(negative, "_alter.x.example.com.", TXT), BOGUS, "SOA at example.com. has no RRSIG"
    )


def test_unanswerable_questions_are_bogus() -> None:
    failed = respond("_alter.example.com.", TXT, dns.rcode.SERVFAIL, [], [])
    assert_verdict(check(failed, "_alter.example.com.", TXT), BOGUS, "rcode SERVFAIL")
    elsewhere = ask("_alter.example.com.", TXT)
    assert_verdict(check(elsewhere, "www.example.net.", TXT), BOGUS, "not in zone example.com.")


def wildcard_answer(owner: str) -> list[dns.rrset.RRset]:
    """The ``*.wild`` TXT rrset and its RRSIG, expanded to ``owner``."""
    txt = zone_rrset("*.wild.example.com.", TXT)
    sig = zone_rrset("*.wild.example.com.", RRSIG, TXT)
    return [
        dns.rrset.from_rdata_list(n(owner), txt.ttl, list(txt)),
        dns.rrset.from_rdata_list(n(owner), sig.ttl, list(sig)),
    ]


@pytest.mark.parametrize(
    ("with_proof", "status", "reason"),
    [
        pytest.param(True, SECURE, "", id="with-nsec"),
        pytest.param(False, BOGUS, "wildcard answer for a.wild.example.com.", id="without-nsec"),
    ],
)
def test_wildcard_expansion_needs_an_nsec_proof(
    with_proof: bool, status: DNSSECStatus, reason: str
) -> None:
    proof = [
        zone_rrset("*.wild.example.com.", NSEC),
        zone_rrset("*.wild.example.com.", RRSIG, NSEC),
    ]
    response = respond(
        "a.wild.example.com.",
        TXT,
        dns.rcode.NOERROR,
        wildcard_answer("a.wild.example.com."),
        proof if with_proof else [],
    )
    assert_verdict(check(response, "a.wild.example.com.", TXT), status, reason)


@settings(max_examples=60, deadline=None)
@given(position=st.integers(0, len("v=alter1 apex") - 1), mask=st.integers(1, 255))
def test_no_single_byte_flip_in_a_txt_validates(position: int, mask: int) -> None:
    response = ask("_alter.example.com.", TXT)
    flip_txt(response, position, mask)
    assert check(response, "_alter.example.com.", TXT).status == BOGUS


# --------------------------------------------------------------------------
# DNSKEY against the trust anchor
# --------------------------------------------------------------------------


def ds(key: SigningKey, digest: str = "SHA256") -> dns.rdtypes.ANY.DS.DS:
    return dns.dnssec.make_ds(ZONE, key.dnskey, digest, validating=True)


def ds_with(record: dns.rdtypes.ANY.DS.DS, **changes: object) -> dns.rdtypes.ANY.DS.DS:
    return cast("dns.rdtypes.ANY.DS.DS", record.replace(**changes))


def altered_digest(record: dns.rdtypes.ANY.DS.DS) -> dns.rdtypes.ANY.DS.DS:
    return ds_with(record, digest=bytes([record.digest[0] ^ 0xFF]) + record.digest[1:])


def anchor(
    ds_records: tuple[dns.rdtypes.ANY.DS.DS, ...] = (),
    keys: tuple[dns.rdtypes.ANY.DNSKEY.DNSKEY, ...] = (),
) -> TrustAnchor:
    return TrustAnchor(ZONE, ds_records, keys)


@pytest.mark.parametrize(
    "trust",
    [
        pytest.param(anchor((ds(KSK),)), id="ds-sha256"),
        pytest.param(anchor((ds(KSK, "SHA384"),)), id="ds-sha384"),
        pytest.param(anchor((ds(KSK, "SHA1"),)), id="ds-sha1-only"),
        pytest.param(anchor((altered_digest(ds(KSK, "SHA1")), ds(KSK))), id="sha1-ignored"),
        pytest.param(anchor(keys=(KSK.dnskey,)), id="dnskey"),
    ],
)
def test_dnskey_rrset_matching_the_anchor_is_secure(trust: TrustAnchor) -> None:
    validation, keys = validate_dnskeys(ask("example.com.", DNSKEY), trust, now=NOW)
    assert_verdict(validation, SECURE, "")
    assert keys is not None
    assert set(keys) == {KSK.dnskey, ZSK.dnskey}


def only_zsk_signs_dnskeys(response: dns.message.Message) -> None:
    keys = next(rrset for rrset in response.answer if rrset.rdtype == DNSKEY)
    response.answer = [keys, sign(keys, ZSK)]


@pytest.mark.parametrize(
    ("trust", "edit", "now", "status", "reason"),
    [
        pytest.param(
            anchor((altered_digest(ds(KSK)),)),
            no_edit,
            NOW,
            BOGUS,
            "no DNSKEY at example.com. matches the trust anchor's DS",
            id="wrong-ds",
        ),
        pytest.param(
            anchor((ds(STRANGER),)),
            no_edit,
            NOW,
            BOGUS,
            "matches the trust anchor's DS",
            id="ds-of-another-key",
        ),
        pytest.param(
            anchor(keys=(STRANGER.dnskey,)),
            no_edit,
            NOW,
            BOGUS,
            "matches the trust anchor's DNSKEY",
            id="dnskey-of-another-key",
        ),
        pytest.param(
            anchor((ds(ZSK),)),
            no_edit,
            NOW,
            BOGUS,
            "DNSKEY at example.com. not signed by a trusted key",
            id="ds-of-zsk",
        ),
        pytest.param(
            anchor((ds(KSK),)),
            only_zsk_signs_dnskeys,
            NOW,
            BOGUS,
            "not signed by a trusted key",
            id="signed-only-by-zsk",
        ),
        pytest.param(
            anchor((ds(KSK),)),
            drop_rrsigs,
            NOW,
            BOGUS,
            "DNSKEY at example.com. has no RRSIG",
            id="unsigned",
        ),
        pytest.param(
            anchor((ds(KSK),)),
            no_edit,
            EXPIRATION + 1,
            BOGUS,
            "RRSIG over DNSKEY at example.com. expired at 2026-01-15T00:00:00Z",
            id="expired",
        ),
        pytest.param(
            anchor((ds_with(ds(KSK), algorithm=200),)),
            no_edit,
            NOW,
            INSECURE,
            "no supported algorithm",
            id="unsupported-algorithm",
        ),
        pytest.param(
            anchor((ds_with(ds(KSK), digest_type=3),)),
            no_edit,
            NOW,
            INSECURE,
            "no supported algorithm or digest",
            id="unsupported-digest",
        ),
    ],
)
def test_dnskey_rrset_not_matching_the_anchor_is_not_secure(
    trust: TrustAnchor,
    edit: Callable[[dns.message.Message], None],
    now: int,
    status: DNSSECStatus,
    reason: str,
) -> None:
    response = ask("example.com.", DNSKEY)
    edit(response)
    validation, keys = validate_dnskeys(response, trust, now=now)
    assert_verdict(validation, status, reason)
    assert keys is None


def test_unsigned_zone_has_no_dnskeys() -> None:
    response = ask("example.com.", DNSKEY, signed=False)
    validation, keys = validate_dnskeys(response, anchor((ds(KSK),)), now=NOW)
    assert_verdict(validation, BOGUS, "no DNSKEY rrset in answer")
    assert keys is None


# --------------------------------------------------------------------------
# NSEC3, built and signed by hand
# --------------------------------------------------------------------------

NSEC3_SALT = b""


@dataclass(frozen=True)
class NSEC3Chain:
    """The zone's NSEC3 records with their RRSIGs, in hash order."""

    iterations: int
    links: tuple[tuple[str, dns.rrset.RRset, dns.rrset.RRset], ...]

    def hash(self, name: str) -> str:
        return dns.dnssec.nsec3_hash(n(name), NSEC3_SALT, self.iterations, 1)

    def matching(self, name: str) -> list[dns.rrset.RRset]:
        hashed = self.hash(name)
        return next([nsec3, sig] for owner, nsec3, sig in self.links if owner == hashed)

    def covering(self, name: str) -> list[dns.rrset.RRset]:
        hashed = self.hash(name)
        for position, (owner, nsec3, sig) in enumerate(self.links):
            following = self.links[(position + 1) % len(self.links)][0]
            inside = owner < hashed < following
            wrapped = following <= owner and (hashed > owner or hashed < following)
            if inside or wrapped:
                return [nsec3, sig]
        raise AssertionError(f"nothing covers {name}")


@functools.cache
def nsec3_chain(iterations: int = 0, flags: int = 0) -> NSEC3Chain:
    types: dict[dns.name.Name, set[dns.rdatatype.RdataType]] = {ZONE: {DNSKEY}}
    for owner, rdataset in load_zone().iterate_rdatasets():
        types.setdefault(owner, set()).add(rdataset.rdtype)
        name = owner
        while name != ZONE:  # empty non-terminals get NSEC3 records too (RFC 5155 7.1)
            name = name.parent()
            types.setdefault(name, set())
    hashes = sorted(
        (dns.dnssec.nsec3_hash(name, NSEC3_SALT, iterations, 1), name) for name in types
    )
    links = []
    for position, (hashed, name) in enumerate(hashes):
        following = hashes[(position + 1) % len(hashes)][0]
        present = types[name] | ({RRSIG} if types[name] else set())
        bitmap = " ".join(dns.rdatatype.to_text(rdtype) for rdtype in sorted(present))
        salt = NSEC3_SALT.hex() or "-"
        text = f"1 {flags} {iterations} {salt} {following} {bitmap}"
        rdata = dns.rdata.from_text(IN, NSEC3, text)
        owner = dns.name.Name((hashed.lower().encode(), *ZONE.labels))
        nsec3 = dns.rrset.from_rdata(owner, 300, rdata)
        links.append((hashed, nsec3, sign(nsec3, ZSK)))
    return NSEC3Chain(iterations, tuple(links))


def soa() -> list[dns.rrset.RRset]:
    return [zone_rrset("example.com.", SOA), zone_rrset("example.com.", RRSIG, SOA)]


def nxdomain_proof(chain: NSEC3Chain, *, skip: str = "") -> list[dns.rrset.RRset]:
    """Closest encloser example.com., next closer x.example.com., wildcard *.example.com."""
    parts = {
        "encloser": chain.matching("example.com."),
        "next-closer": chain.covering("x.example.com."),
        "wildcard": chain.covering("*.example.com."),
    }
    if skip:  # leaving one part out must not leave out another
        assert len({rrsets[0].name for rrsets in parts.values()}) == len(parts)
    proof = {rrsets[0].name: rrsets for part, rrsets in parts.items() if part != skip}
    return [rrset for rrsets in proof.values() for rrset in rrsets]


def nsec3_nxdomain(chain: NSEC3Chain, *, skip: str = "") -> dns.message.Message:
    authority = soa() + nxdomain_proof(chain, skip=skip)
    return respond("_alter.x.example.com.", TXT, dns.rcode.NXDOMAIN, [], authority)


def nsec3_nodata(name: str, chain: NSEC3Chain) -> dns.message.Message:
    return respond(name, TXT, dns.rcode.NOERROR, [], soa() + chain.matching(name))


def test_nsec3_nxdomain_is_secure() -> None:
    response = nsec3_nxdomain(nsec3_chain())
    assert_verdict(check(response, "_alter.x.example.com.", TXT), SECURE, "")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("ns1.example.com.", id="nodata"),
        pytest.param("bot.example.com.", id="empty-non-terminal"),
        pytest.param("deploy.bot.example.com.", id="empty-non-terminal-deeper"),
    ],
)
def test_nsec3_nodata_is_secure(name: str) -> None:
    assert_verdict(check(nsec3_nodata(name, nsec3_chain()), name, TXT), SECURE, "")


def test_nsec3_wildcard_expansion_needs_next_closer_cover() -> None:
    owner = "a.wild.example.com."
    chain = nsec3_chain()
    proven = respond(owner, TXT, dns.rcode.NOERROR, wildcard_answer(owner), chain.covering(owner))
    assert_verdict(check(proven, owner, TXT), SECURE, "")
    bare = respond(owner, TXT, dns.rcode.NOERROR, wildcard_answer(owner), [])
    assert_verdict(check(bare, owner, TXT), BOGUS, "wildcard answer for a.wild.example.com.")


def forged_next_hash(chain: NSEC3Chain) -> dns.message.Message:
    """The next-closer NSEC3 stretched to the end of the hash space, old RRSIG kept."""
    nsec3, sig = chain.covering("x.example.com.")
    rdata = cast("dns.rdtypes.ANY.NSEC3.NSEC3", nsec3[0])
    forged = dns.rrset.from_rdata(nsec3.name, nsec3.ttl, rdata.replace(next=b"\xff" * 20))
    authority = soa() + nxdomain_proof(chain, skip="next-closer") + [forged, sig]
    return respond("_alter.x.example.com.", TXT, dns.rcode.NXDOMAIN, [], authority)


@pytest.mark.parametrize(
    ("make", "qname", "status", "reason"),
    [
        pytest.param(
            lambda: nsec3_nxdomain(nsec3_chain(), skip="next-closer"),
            "_alter.x.example.com.",
            BOGUS,
            "no NSEC3 covers next closer name x.example.com.",
            id="next-closer-cover-missing",
        ),
        pytest.param(
            lambda: nsec3_nxdomain(nsec3_chain(), skip="wildcard"),
            "_alter.x.example.com.",
            BOGUS,
            "no NSEC3 covers wildcard *.example.com.",
            id="wildcard-cover-missing",
        ),
        pytest.param(
            lambda: nsec3_nxdomain(nsec3_chain(), skip="encloser"),
            "_alter.x.example.com.",
            BOGUS,
            "no NSEC3 proves a closest encloser",
            id="closest-encloser-missing",
        ),
        pytest.param(
            lambda: forged_next_hash(nsec3_chain()),
            "_alter.x.example.com.",
            BOGUS,
            "does not verify",
            id="next-hash-forged",
        ),
        pytest.param(
            lambda: nsec3_nodata("_alter.example.com.", nsec3_chain()),
            "_alter.example.com.",
            BOGUS,
            "NSEC3 at _alter.example.com. lists TXT",
            id="nodata-for-existing-type",
        ),
        pytest.param(
            lambda: nsec3_nodata("ns1.example.com.", nsec3_chain()),
            "_alter.x.example.com.",
            BOGUS,
            "no NSEC3 matches _alter.x.example.com.",
            id="nodata-wrong-name",
        ),
        pytest.param(
            lambda: nsec3_nxdomain(nsec3_chain(iterations=200)),
            "_alter.x.example.com.",
            INSECURE,
            "200 iterations, above 150",
            id="iterations-200",
        ),
        pytest.param(
            lambda: nsec3_nxdomain(nsec3_chain(flags=1)),
            "_alter.x.example.com.",
            INSECURE,
            "opt-out",
            id="opt-out",
        ),
    ],
)
def test_nsec3_bad_proofs_are_not_secure(
    make: Callable[[], dns.message.Message], qname: str, status: DNSSECStatus, reason: str
) -> None:
    assert_verdict(check(make(), qname, TXT), status, reason)


def test_nsec3_nxdomain_for_existing_name_is_bogus() -> None:
    chain = nsec3_chain()
    authority = soa() + chain.matching("_alter.blake.example.com.")
    response = respond("_alter.blake.example.com.", TXT, dns.rcode.NXDOMAIN, [], authority)
    verdict = check(response, "_alter.blake.example.com.", TXT)
    assert_verdict(verdict, BOGUS, "NSEC3 shows that _alter.blake.example.com. exists")


# --------------------------------------------------------------------------
# Trust anchors
# --------------------------------------------------------------------------

KSK_TEXT = KSK.dnskey.to_text()
KSK_DS_TEXT = ds(KSK).to_text()
KEY_BASE64 = base64.b64encode(KSK.dnskey.key).decode()


def test_parse_trust_anchors_groups_and_sorts_by_zone() -> None:
    text = f"""
; trust anchors for the proof
$TTL 3600
example.net.        IN DS {ds(STRANGER).to_text()}
example.com.  3600  IN DS {KSK_DS_TEXT}   ; the KSK
example.com.           DNSKEY {KSK_TEXT}
sub.example.com. 86400 IN DNSKEY 257 3 15 (
    {KEY_BASE64[:20]}
    {KEY_BASE64[20:]} )
$ORIGIN example.org.
@ IN DS {KSK_DS_TEXT}
"""
    anchors = parse_trust_anchors(text, where="anchors.txt")
    zones = [anchor.zone for anchor in anchors]
    assert zones == [
        n(z) for z in ("example.com.", "sub.example.com.", "example.net.", "example.org.")
    ]
    assert anchors[0] == TrustAnchor(ZONE, (ds(KSK),), (KSK.dnskey,))
    assert anchors[1].dnskeys == (KSK.dnskey,)
    assert anchors[2].ds == (ds(STRANGER),)


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        pytest.param("", "anchors.txt", "no DS or DNSKEY records", id="empty"),
        pytest.param("; nothing\n\n", "anchors.txt", "no DS or DNSKEY records", id="comments-only"),
        pytest.param(
            f"example.com. DS {KSK_DS_TEXT}\n\nexample.com. IN A 192.0.2.1\n",
            "anchors.txt:3",
            "expected a DS or DNSKEY record, got 'A'",
            id="other-type",
        ),
        pytest.param(
            f"example.com IN DS {KSK_DS_TEXT}", "anchors.txt:1", "is relative", id="relative-owner"
        ),
        pytest.param(
            "example.com. IN DS 12345 15 2 zz", "anchors.txt:1", "bad DS rdata", id="bad-ds-hex"
        ),
        pytest.param(
            "example.com. IN DNSKEY 257 3 15 !!!", "anchors.txt:1", "bad DNSKEY", id="bad-key"
        ),
        pytest.param(
            f"example.com. IN DNSKEY 0 3 15 {KEY_BASE64}",
            "anchors.txt:1",
            "zone-key flag",
            id="dnskey-not-a-zone-key",
        ),
        pytest.param(
            f"\nexample.com. IN DNSKEY 257 3 15 ( {KEY_BASE64}\n",
            "anchors.txt:2",
            "unbalanced parentheses",
            id="unclosed-parenthesis",
        ),
        pytest.param("example.com. 3600 IN", "anchors.txt:1", "got ''", id="no-type"),
        pytest.param(
            f"example.com. IN DS {KSK_DS_TEXT} )",
            "anchors.txt:1",
            "unbalanced parentheses",
            id="stray-parenthesis",
        ),
        pytest.param(
            f"$ORIGIN example\nwww IN DS {KSK_DS_TEXT}",
            "anchors.txt:1",
            "is relative",
            id="relative-origin",
        ),
    ],
)
def test_parse_trust_anchors_rejects_bad_lines(text: str, where: str, what: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_trust_anchors(text, where="anchors.txt")
    assert caught.value.where == where
    assert what in caught.value.what
    assert str(caught.value).startswith(f"{where}: ")


@settings(max_examples=25, deadline=None)
@given(seed=st.binary(min_size=32, max_size=32), digest=st.sampled_from(["SHA256", "SHA384"]))
def test_ds_text_round_trips_through_parse(seed: bytes, digest: str) -> None:
    private = ed25519.Ed25519PrivateKey.from_private_bytes(seed)
    key = dns.dnssec.make_dnskey(private.public_key(), dns.dnssectypes.Algorithm.ED25519, 257)
    record = dns.dnssec.make_ds(ZONE, key, digest)
    (parsed,) = parse_trust_anchors(f"example.com. IN DS {record.to_text()}", where="x")
    assert parsed == TrustAnchor(ZONE, (record,), ())


def test_read_trust_anchors(tmp_path: Path) -> None:
    path = tmp_path / "anchors.txt"
    path.write_text(f"example.com. IN DS {KSK_DS_TEXT}\n", encoding="utf-8")
    assert read_trust_anchors(path) == (TrustAnchor(ZONE, (ds(KSK),), ()),)
    with pytest.raises(UsageError, match="cannot read trust anchors") as caught:
        read_trust_anchors(tmp_path / "missing.txt")
    assert caught.value.where == str(tmp_path / "missing.txt")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("example.com.", "example.com.", id="apex"),
        pytest.param("_alter.blake.example.com.", "example.com.", id="below"),
        pytest.param("sub.example.com.", "sub.example.com.", id="deeper-apex"),
        pytest.param("_alter.x.sub.example.com.", "sub.example.com.", id="deepest-wins"),
        pytest.param("example.org.", None, id="none"),
        pytest.param("com.", None, id="above"),
    ],
)
def test_anchor_for_picks_the_deepest_zone(name: str, expected: str | None) -> None:
    anchors = (
        TrustAnchor(n("sub.example.com."), (ds(ZSK),), ()),
        TrustAnchor(ZONE, (ds(KSK),), ()),
    )
    found = anchor_for(anchors, n(name))
    assert (None if found is None else found.zone) == (None if expected is None else n(expected))


# --------------------------------------------------------------------------
# Regressions from review
# --------------------------------------------------------------------------


@pytest.mark.parametrize("section", ["answer", "authority"])
def test_records_of_another_class_make_the_response_bogus(section: str) -> None:
    # A CH-class TXT is never validated (validation looks at IN only), so a response
    # carrying one beside a genuine signed denial must not come out secure.
    response = ask("_alter.nobody.example.com.", TXT)
    forged = dns.rrset.from_text("_alter.nobody.example.com.", 3600, "CH", "TXT", '"v=alter1"')
    getattr(response, section).append(forged)
    response = dns.message.from_wire(response.to_wire())
    assert_verdict(check(response, "_alter.nobody.example.com.", TXT), BOGUS, "of class CH")


def test_wildcard_expansion_must_come_from_the_closest_encloser() -> None:
    # RFC 4035 5.3.4: b.example.com. exists, so *.example.com. cannot answer for
    # a.b.example.com.; a genuine NSEC that covers a.b.example.com. does not make it so.
    zone = dns.zone.from_text(
        "$TTL 3600\n@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300\n@ IN NS ns1\n"
        'ns1 IN A 192.0.2.1\n* IN TXT "v=alter1 wild"\nb IN TXT "v=alter1 b"\n',
        origin=ZONE,
        relativize=False,
    )
    keys: list[tuple[dns.dnssec.PrivateKey, dns.rdtypes.ANY.DNSKEY.DNSKEY]] = [
        (KSK.private, KSK.dnskey),
        (ZSK.private, ZSK.dnskey),
    ]
    dns.dnssec.sign_zone(zone, keys=keys, inception=INCEPTION, expiration=EXPIRATION)
    wild_txt = zone.find_rrset(n("*.example.com."), TXT)
    wild_sig = zone.find_rrset(n("*.example.com."), RRSIG, TXT)
    qname = "a.b.example.com."
    response = respond(
        qname,
        TXT,
        dns.rcode.NOERROR,
        [
            dns.rrset.from_rdata_list(n(qname), wild_txt.ttl, list(wild_txt)),
            dns.rrset.from_rdata_list(n(qname), wild_sig.ttl, list(wild_sig)),
        ],
        [
            zone.find_rrset(n("b.example.com."), NSEC),
            zone.find_rrset(n("b.example.com."), RRSIG, NSEC),
        ],
    )
    keyset = zone.find_rrset(ZONE, DNSKEY)
    verdict = validate_response(response, n(qname), TXT, zone=ZONE, dnskeys=keyset, now=NOW)
    assert_verdict(verdict, BOGUS, "closer encloser")
