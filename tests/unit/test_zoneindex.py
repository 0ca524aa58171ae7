"""Tests for alter_publish.dns.zoneindex: NSEC3 denial proofs (RFC 5155 section 7.2).

The NSEC3 zone is built here by hand (dnspython 2.9 cannot sign with NSEC3):
one NSEC3 per authoritative name and per empty non-terminal, each rrset
signed with a fresh Ed25519 key, so that every proof in a response can be
checked with ``dns.dnssec.validate``. Which NSEC3 matches or covers a name is
checked with a hash computed here from hashlib, independently of both
``dns.dnssec.nsec3_hash`` and the server's index.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

import dns.dnssec
import dns.dnssectypes
import dns.flags
import dns.message
import dns.name
import dns.node
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.rdtypes.ANY.DNSKEY
import dns.rdtypes.ANY.NSEC3
import dns.rrset
import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519

from alter_publish.dns.zoneindex import IndexedZone, ZoneIndex, answer
from alter_publish.errors import ServeError

ORIGIN = dns.name.from_text("example.com.")
SOA_NEGATIVE_TTL = 300
VALIDATION_NOW = 1_700_000_000
EDNS_PAYLOAD_OCTETS = 1232

NSEC3_ZONE = f"""
$TTL 3600
@                 IN SOA ns1 hostmaster 2024010101 7200 3600 1209600 {SOA_NEGATIVE_TTL}
@                 IN NS  ns1
ns1               IN A   127.0.0.1
_alter            IN TXT "v=alter1; zone"
_alter.blake      IN TXT "v=alter1; blake"
_alter.erin       IN TXT "v=alter1; erin"
_alter.deploy.bot IN TXT "v=alter1; deploy.bot"
sub               IN NS  ns.sub
ns.sub            IN A   192.0.2.53
"""

#: Every name that must get an NSEC3: owners and empty non-terminals, not the glue.
CHAIN_NAMES = (
    "example.com.",
    "ns1.example.com.",
    "_alter.example.com.",
    "_alter.blake.example.com.",
    "blake.example.com.",
    "_alter.erin.example.com.",
    "erin.example.com.",
    "_alter.deploy.bot.example.com.",
    "deploy.bot.example.com.",
    "bot.example.com.",
    "sub.example.com.",
)


@dataclass(frozen=True, slots=True)
class Nsec3Params:
    """How to build the test chain."""

    iterations: int = 0
    salt: bytes = b""
    lowercase_owners: bool = False


@dataclass(frozen=True, slots=True)
class SignedZone:
    """An NSEC3-signed zone, its index and the key to validate it with."""

    zone: dns.zone.Zone
    index: ZoneIndex
    dnskeys: dns.rrset.RRset
    params: Nsec3Params


def independent_hash(name: str | dns.name.Name, params: Nsec3Params) -> str:
    """RFC 5155 section 5, from hashlib: base32hex(SHA-1^(1+iterations)(wire || salt))."""
    labels = (name if isinstance(name, dns.name.Name) else dns.name.from_text(name)).labels
    wire = b"".join(bytes([len(label)]) + label.lower() for label in labels)
    digest = hashlib.sha1(wire + params.salt, usedforsecurity=False).digest()
    for _ in range(params.iterations):
        digest = hashlib.sha1(digest + params.salt, usedforsecurity=False).digest()
    return base64.b32hexencode(digest).decode("ascii")


def make_nsec3_zone(params: Nsec3Params | None = None) -> SignedZone:
    """Sign NSEC3_ZONE with NSEC3 (hash 1, flags 0) and a fresh Ed25519 key."""
    params = params or Nsec3Params()
    key = ed25519.Ed25519PrivateKey.generate()
    dnskey = dns.dnssec.make_dnskey(key.public_key(), dns.dnssectypes.Algorithm.ED25519)
    salt_text = params.salt.hex() or "-"
    rrsets = [
        dns.rrset.from_rdata_list(name.derelativize(ORIGIN), rdataset.ttl, list(rdataset))
        for name, rdataset in dns.zone.from_text(
            NSEC3_ZONE, ORIGIN, relativize=False
        ).iterate_rdatasets()
    ]
    rrsets.append(dns.rrset.from_rdata(ORIGIN, 3600, dnskey))
    rrsets.append(
        dns.rrset.from_text(ORIGIN, 0, "IN", "NSEC3PARAM", f"1 0 {params.iterations} {salt_text}")
    )
    cuts = {rrset.name for rrset in rrsets if rrset.rdtype == dns.rdatatype.NS} - {ORIGIN}
    authoritative = [  # glue below a cut is neither signed nor in the chain
        rrset
        for rrset in rrsets
        if not any(rrset.name.is_subdomain(cut) and rrset.name != cut for cut in cuts)
    ]
    signed = [rrset for rrset in authoritative if rrset.name not in cuts]  # nor NS at a cut
    types: dict[dns.name.Name, set[str]] = {}
    for rrset in authoritative:
        name = rrset.name
        types.setdefault(name, set()).add(dns.rdatatype.to_text(rrset.rdtype))
        if name not in cuts:
            types[name].add("RRSIG")
        while name != ORIGIN:  # empty non-terminals get an NSEC3 with no types
            name = name.parent()
            types.setdefault(name, set())
    chain = sorted((independent_hash(name, params), name) for name in types)
    nsec3s = []
    for position, (digest, name) in enumerate(chain):
        next_digest = chain[(position + 1) % len(chain)][0]
        label = digest.lower() if params.lowercase_owners else digest
        rdata = f"1 0 {params.iterations} {salt_text} {next_digest} {' '.join(sorted(types[name]))}"
        nsec3s.append(
            dns.rrset.from_text(
                dns.name.Name((label.encode("ascii"), *ORIGIN.labels)),
                SOA_NEGATIVE_TTL,
                "IN",
                "NSEC3",
                rdata.strip(),
            )
        )
    signed.extend(nsec3s)
    sigs = [
        dns.rrset.from_rdata(
            rrset.name,
            rrset.ttl,
            dns.dnssec.sign(rrset, key, ORIGIN, dnskey, inception=0, expiration=2**31 - 1),
        )
        for rrset in signed
    ]
    absolute = dns.zone.Zone(ORIGIN, relativize=False)
    with absolute.writer() as txn:
        for rrset in [*rrsets, *nsec3s, *sigs]:
            txn.add(rrset)
    zone = dns.zone.from_text(absolute.to_text(), ORIGIN)  # as the pipeline reads zone files
    return SignedZone(
        zone=zone,
        index=ZoneIndex.build([zone]),
        dnskeys=dns.rrset.from_rdata(ORIGIN, 3600, dnskey),
        params=params,
    )


CHAIN_VARIANTS = [
    pytest.param(Nsec3Params(), id="iterations-0-no-salt"),
    pytest.param(Nsec3Params(iterations=5, salt=bytes.fromhex("aabbccdd")), id="salted-iterated"),
    pytest.param(Nsec3Params(lowercase_owners=True), id="lowercase-owner-labels"),
]


@pytest.fixture(scope="module", params=CHAIN_VARIANTS)
def signed(request: pytest.FixtureRequest) -> SignedZone:
    params: Nsec3Params = request.param
    return make_nsec3_zone(params)


@pytest.fixture(scope="module")
def plain_chain() -> SignedZone:
    return make_nsec3_zone()


def ask(
    index: ZoneIndex, qname: str | dns.name.Name, qtype: str, *, dnssec: bool = True
) -> dns.message.Message:
    message = dns.message.make_query(
        qname, qtype, use_edns=0, payload=EDNS_PAYLOAD_OCTETS, want_dnssec=dnssec
    )
    reply = answer(index, message.to_wire(), max_udp=None)
    assert reply is not None
    return dns.message.from_wire(reply)


def types_in(section: list[dns.rrset.RRset]) -> list[str]:
    return [dns.rdatatype.to_text(rrset.rdtype) for rrset in section]


def nsec3s_in(section: list[dns.rrset.RRset]) -> list[dns.rrset.RRset]:
    return [rrset for rrset in section if rrset.rdtype == dns.rdatatype.NSEC3]


def owner_hash(nsec3: dns.rrset.RRset) -> str:
    return nsec3.name.labels[0].decode("ascii").upper()


def next_hash(nsec3: dns.rrset.RRset) -> str:
    rdata = nsec3[0]
    assert isinstance(rdata, dns.rdtypes.ANY.NSEC3.NSEC3)
    return base64.b32hexencode(rdata.next).decode("ascii")


def matches(nsec3: dns.rrset.RRset, digest: str) -> bool:
    return owner_hash(nsec3) == digest


def covers(nsec3: dns.rrset.RRset, digest: str) -> bool:
    """Owner < hash < next, where the last NSEC3 (next <= owner) wraps to the first."""
    owner, following = owner_hash(nsec3), next_hash(nsec3)
    if owner < following:
        return owner < digest < following
    return digest > owner or digest < following


def keyring(signed: SignedZone) -> dict[dns.name.Name, dns.node.Node | dns.rdataset.Rdataset]:
    return {ORIGIN: signed.dnskeys}


def assert_signed(
    response: dns.message.Message, rrset: dns.rrset.RRset, signed: SignedZone
) -> None:
    """``rrset`` is followed in its section by an RRSIG over it that validates."""
    section = response.answer if rrset in response.answer else response.authority
    sig = response.find_rrset(
        section, rrset.name, dns.rdataclass.IN, dns.rdatatype.RRSIG, rrset.rdtype
    )
    dns.dnssec.validate(rrset, sig, keyring(signed), now=VALIDATION_NOW)


def assert_negative_soa(response: dns.message.Message, signed: SignedZone) -> None:
    soa = response.find_rrset(response.authority, ORIGIN, dns.rdataclass.IN, dns.rdatatype.SOA)
    assert soa.ttl == SOA_NEGATIVE_TTL
    assert_signed(response, soa, signed)


def assert_proof(
    response: dns.message.Message,
    signed: SignedZone,
    *,
    matched: list[str | dns.name.Name],
    covered: list[str | dns.name.Name],
) -> None:
    """The NSEC3s in the authority section are exactly those that match or cover the names.

    Each name in ``matched`` has one NSEC3 whose owner is its hash, each in
    ``covered`` one that covers its hash; every NSEC3 present plays one of
    these parts, none is there twice, and each has a valid RRSIG.
    """
    nsec3s = nsec3s_in(response.authority)
    owners = [nsec3.name for nsec3 in nsec3s]
    assert len(owners) == len(set(owners)), "duplicate NSEC3"
    needed = [(matches, independent_hash(name, signed.params)) for name in matched] + [
        (covers, independent_hash(name, signed.params)) for name in covered
    ]
    for test, digest in needed:
        assert [nsec3.name for nsec3 in nsec3s if test(nsec3, digest)] != [], (test, digest)
    for nsec3 in nsec3s:
        assert any(test(nsec3, digest) for test, digest in needed), nsec3.name
        assert_signed(response, nsec3, signed)
    assert types_in(response.authority).count("RRSIG") == len(nsec3s) + 1  # + the SOA's


# --------------------------------------------------------------------------
# NXDOMAIN (RFC 5155 7.2.2)
# --------------------------------------------------------------------------


def test_nxdomain_carries_three_nsec3s(plain_chain: SignedZone) -> None:
    response = ask(plain_chain.index, "_alter.nobody.example.com.", "TXT")
    assert response.rcode() == dns.rcode.NXDOMAIN
    assert response.flags & dns.flags.AA
    assert response.answer == []
    assert types_in(response.authority) == ["SOA", "RRSIG"] + ["NSEC3", "RRSIG"] * 3
    assert_negative_soa(response, plain_chain)
    closest_encloser, next_closer, wildcard = nsec3s_in(response.authority)
    assert matches(closest_encloser, independent_hash("example.com.", plain_chain.params))
    assert covers(next_closer, independent_hash("nobody.example.com.", plain_chain.params))
    assert covers(wildcard, independent_hash("*.example.com.", plain_chain.params))
    assert_proof(
        response,
        plain_chain,
        matched=["example.com."],
        covered=["nobody.example.com.", "*.example.com."],
    )


@pytest.mark.parametrize(
    ("qname", "closest_encloser", "next_closer"),
    [
        pytest.param(
            "_alter.nobody.example.com.", "example.com.", "nobody.example.com.", id="below-apex"
        ),
        pytest.param("nobody.example.com.", "example.com.", "nobody.example.com.", id="at-apex"),
        pytest.param(
            "x.blake.example.com.", "blake.example.com.", "x.blake.example.com.", id="below-ent"
        ),
        pytest.param(
            "a.b.deploy.bot.example.com.",
            "deploy.bot.example.com.",
            "b.deploy.bot.example.com.",
            id="deep-below-ent",
        ),
        pytest.param(
            "x._alter.blake.example.com.",
            "_alter.blake.example.com.",
            "x._alter.blake.example.com.",
            id="below-leaf",
        ),
    ],
)
def test_nxdomain_proves_closest_encloser_and_no_wildcard(
    signed: SignedZone, qname: str, closest_encloser: str, next_closer: str
) -> None:
    response = ask(signed.index, qname, "TXT")
    assert response.rcode() == dns.rcode.NXDOMAIN
    assert response.flags & dns.flags.AA
    assert response.answer == []
    assert "NSEC" not in types_in(response.authority)
    assert_negative_soa(response, signed)
    assert_proof(
        response,
        signed,
        matched=[closest_encloser],
        covered=[next_closer, f"*.{closest_encloser}"],
    )


def test_nxdomain_after_cname_proves_the_target() -> None:
    zone = make_nsec3_zone().zone
    with zone.writer() as txn:
        txn.add(dns.rrset.from_text("dangling.example.com.", 3600, "IN", "CNAME", "gone"))
    index = ZoneIndex.build([zone])
    response = ask(index, "dangling.example.com.", "A", dnssec=False)
    assert response.rcode() == dns.rcode.NXDOMAIN
    assert types_in(response.answer) == ["CNAME"]
    with_do = ask(index, "dangling.example.com.", "A")
    target_hash = independent_hash("gone.example.com.", Nsec3Params())
    assert any(covers(nsec3, target_hash) for nsec3 in nsec3s_in(with_do.authority))


# --------------------------------------------------------------------------
# NODATA (7.2.3, 7.2.4) and referrals (7.2.7)
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("qname", "qtype"),
    [
        pytest.param("ns1.example.com.", "TXT", id="wrong-type"),
        pytest.param("example.com.", "TXT", id="apex"),
        pytest.param("_alter.blake.example.com.", "A", id="leaf"),
        pytest.param("blake.example.com.", "TXT", id="empty-non-terminal"),
        pytest.param("bot.example.com.", "TXT", id="empty-non-terminal-two-below"),
        pytest.param("deploy.bot.example.com.", "TXT", id="empty-non-terminal-one-below"),
        pytest.param("sub.example.com.", "DS", id="ds-at-unsigned-delegation"),
        pytest.param("ns1.example.com.", "NSEC3", id="nsec3-at-regular-name"),
    ],
)
def test_nodata_carries_matching_nsec3(signed: SignedZone, qname: str, qtype: str) -> None:
    response = ask(signed.index, qname, qtype)
    assert response.rcode() == dns.rcode.NOERROR
    assert response.flags & dns.flags.AA
    assert response.answer == []
    assert_negative_soa(response, signed)
    (nsec3,) = nsec3s_in(response.authority)
    assert matches(nsec3, independent_hash(qname, signed.params))
    assert_proof(response, signed, matched=[qname], covered=[])


@pytest.mark.parametrize(
    "qname",
    [
        pytest.param("sub.example.com.", id="at-cut"),
        pytest.param("a.sub.example.com.", id="below-cut"),
        pytest.param("ns.sub.example.com.", id="glue"),
    ],
)
def test_referral_to_unsigned_delegation_carries_matching_nsec3(
    signed: SignedZone, qname: str
) -> None:
    response = ask(signed.index, qname, "A")
    assert response.rcode() == dns.rcode.NOERROR
    assert not response.flags & dns.flags.AA
    assert response.answer == []
    assert types_in(response.authority) == ["NS", "NSEC3", "RRSIG"]
    ns, nsec3, _ = response.authority
    assert ns.name == dns.name.from_text("sub.example.com.")
    assert matches(nsec3, independent_hash("sub.example.com.", signed.params))
    assert_signed(response, nsec3, signed)
    assert types_in(response.additional) == ["A"]


def test_referral_to_signed_delegation_carries_ds(plain_chain: SignedZone) -> None:
    zone = plain_chain.zone
    dnskey = plain_chain.dnskeys[0]
    assert isinstance(dnskey, dns.rdtypes.ANY.DNSKEY.DNSKEY)
    ds = dns.dnssec.make_ds("sub.example.com.", dnskey, "SHA256")
    signed_zone = dns.zone.Zone(ORIGIN)
    with signed_zone.writer() as txn:
        for name, rdataset in zone.iterate_rdatasets():
            txn.add(name, rdataset)
        txn.add(dns.rrset.from_rdata("sub.example.com.", 3600, ds))
    response = ask(ZoneIndex.build([signed_zone]), "a.sub.example.com.", "A")
    assert types_in(response.authority) == ["NS", "DS"]  # the test did not sign the DS


# --------------------------------------------------------------------------
# Hashed owner names (7.2.8)
# --------------------------------------------------------------------------


def hashed_owner(signed: SignedZone, name: str) -> dns.name.Name:
    label = independent_hash(name, signed.params)
    if signed.params.lowercase_owners:
        label = label.lower()
    return dns.name.Name((label.encode("ascii"), *ORIGIN.labels))


@pytest.mark.parametrize(
    ("qtype", "dnssec", "expected"),
    [
        pytest.param("NSEC3", True, ["NSEC3", "RRSIG"], id="nsec3-with-do"),
        pytest.param("NSEC3", False, ["NSEC3"], id="nsec3-without-do"),
        pytest.param("ANY", True, ["NSEC3", "RRSIG"], id="any-with-do"),
        pytest.param("ANY", False, ["NSEC3"], id="any-without-do"),
    ],
)
def test_hashed_owner_answers_its_nsec3(
    signed: SignedZone, qtype: str, dnssec: bool, expected: list[str]
) -> None:
    owner = hashed_owner(signed, "ns1.example.com.")
    response = ask(signed.index, owner, qtype, dnssec=dnssec)
    assert response.rcode() == dns.rcode.NOERROR
    assert response.flags & dns.flags.AA
    assert sorted(types_in(response.answer)) == sorted(expected)
    assert response.answer[0].name == owner
    assert response.authority == []


@pytest.mark.parametrize(
    ("below", "qtype"),
    [
        pytest.param("", "A", id="a"),
        pytest.param("", "TXT", id="txt"),
        pytest.param("", "RRSIG", id="rrsig"),
        pytest.param("x", "NSEC3", id="below-hashed-owner"),
    ],
)
def test_hashed_owner_does_not_exist_otherwise(signed: SignedZone, below: str, qtype: str) -> None:
    owner = hashed_owner(signed, "ns1.example.com.")
    qname = dns.name.from_text(below, owner) if below else owner
    response = ask(signed.index, qname, qtype)
    assert response.rcode() == dns.rcode.NXDOMAIN
    assert response.answer == []
    assert_negative_soa(response, signed)
    next_closer = dns.name.Name(qname.labels[-(len(ORIGIN) + 1) :])
    assert_proof(
        response, signed, matched=["example.com."], covered=[next_closer, "*.example.com."]
    )


# --------------------------------------------------------------------------
# Without DO, positive answers, the index
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("qname", "qtype", "rcode", "authority"),
    [
        pytest.param(
            "_alter.nobody.example.com.", "TXT", dns.rcode.NXDOMAIN, ["SOA"], id="nxdomain"
        ),
        pytest.param("ns1.example.com.", "TXT", dns.rcode.NOERROR, ["SOA"], id="nodata"),
        pytest.param("blake.example.com.", "TXT", dns.rcode.NOERROR, ["SOA"], id="nodata-ent"),
        pytest.param("sub.example.com.", "DS", dns.rcode.NOERROR, ["SOA"], id="nodata-ds"),
        pytest.param("a.sub.example.com.", "A", dns.rcode.NOERROR, ["NS"], id="referral"),
    ],
)
def test_no_nsec3_without_do(
    plain_chain: SignedZone, qname: str, qtype: str, rcode: dns.rcode.Rcode, authority: list[str]
) -> None:
    response = ask(plain_chain.index, qname, qtype, dnssec=False)
    assert response.rcode() == rcode
    assert types_in(response.authority) == authority
    assert not response.ednsflags & dns.flags.DO


def test_positive_answer_has_rrsig_and_no_nsec3(signed: SignedZone) -> None:
    response = ask(signed.index, "_alter.blake.example.com.", "TXT")
    assert response.rcode() == dns.rcode.NOERROR
    assert types_in(response.answer) == ["TXT", "RRSIG"]
    assert_signed(response, response.answer[0], signed)
    assert response.authority == []


def test_index_holds_the_sorted_chain(signed: SignedZone) -> None:
    zone = signed.index.zones[ORIGIN]
    chain = zone.nsec3
    assert chain is not None
    assert (chain.algorithm, chain.iterations, chain.salt) == (
        1,
        signed.params.iterations,
        signed.params.salt,
    )
    expected = sorted(independent_hash(name, signed.params) for name in CHAIN_NAMES)
    assert list(chain.hashes) == expected
    assert [owner.labels[0].decode("ascii").upper() for owner in chain.owners] == expected
    assert chain.hashed_owners == frozenset(chain.owners)
    assert not chain.hashed_owners & zone.names
    assert dns.name.from_text("bot.example.com.") in zone.names
    for name in (*CHAIN_NAMES, "*.example.com.", "never.example.com."):
        digest = chain.hash_name(dns.name.from_text(name))
        assert digest == independent_hash(name, signed.params)


def test_nsec_zone_has_no_chain() -> None:
    zone = dns.zone.from_text(NSEC3_ZONE, ORIGIN)
    assert IndexedZone.build(zone).nsec3 is None


# --------------------------------------------------------------------------
# NSEC3PARAM choices and errors
# --------------------------------------------------------------------------


def with_params(signed: SignedZone, params: list[str]) -> dns.zone.Zone:
    """A copy of the signed zone whose apex NSEC3PARAM rrset is ``params``."""
    zone = dns.zone.Zone(ORIGIN)
    with zone.writer() as txn:
        for name, rdataset in signed.zone.iterate_rdatasets():
            if rdataset.rdtype != dns.rdatatype.NSEC3PARAM:
                txn.add(name, rdataset)
        if params:
            txn.add(dns.rrset.from_text_list(ORIGIN, 0, "IN", "NSEC3PARAM", params))
    return zone


def test_nsec3param_with_a_chain_is_chosen(plain_chain: SignedZone) -> None:
    zone = with_params(plain_chain, ["1 0 7 ff", "1 1 0 -", "1 0 0 -"])
    chain = IndexedZone.build(zone).nsec3
    assert chain is not None
    assert (chain.iterations, chain.salt) == (0, b"")


def test_nsec3_without_nsec3param_are_plain_data(plain_chain: SignedZone) -> None:
    zone = with_params(plain_chain, [])
    indexed = IndexedZone.build(zone)
    assert indexed.nsec3 is None
    owner = hashed_owner(plain_chain, "ns1.example.com.")
    assert owner in indexed.names
    response = ask(ZoneIndex.build([zone]), owner, "A")
    assert response.rcode() == dns.rcode.NOERROR  # NODATA, as before NSEC3 support


@pytest.mark.parametrize(
    ("params", "message"),
    [
        pytest.param(
            ["1 0 3 aabb"], "no NSEC3 records have the parameters", id="no-matching-chain"
        ),
        pytest.param(["1 1 0 -"], "no NSEC3 records have the parameters", id="only-nonzero-flags"),
    ],
)
def test_unusable_nsec3param_is_a_serve_error(
    plain_chain: SignedZone, params: list[str], message: str
) -> None:
    with pytest.raises(ServeError, match=message) as caught:
        ZoneIndex.build([with_params(plain_chain, params)])
    assert caught.value.where == "example.com."
    assert caught.value.category == "serve"


def test_unknown_hash_algorithm_is_a_serve_error() -> None:
    text = (
        f"@ 3600 IN SOA ns1 hostmaster 1 7200 3600 1209600 {SOA_NEGATIVE_TTL}\n"
        "@ 3600 IN NS ns1\n"
        "@ 0 IN NSEC3PARAM 2 0 0 -\n"
        f"{'0' * 32} 300 IN NSEC3 2 0 0 - {'0' * 32} NS SOA NSEC3PARAM\n"
    )
    with pytest.raises(ServeError, match="unsupported NSEC3 hash algorithm 2"):
        IndexedZone.build(dns.zone.from_text(text, ORIGIN))
