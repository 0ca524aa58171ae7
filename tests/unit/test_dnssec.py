"""The zone signer: canonical signing input, RRSIGs, NSEC/NSEC3 chains, DS, determinism."""

from __future__ import annotations

import base64
import multiprocessing
from collections.abc import Iterator

import dns.dnssec
import dns.name
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.NSEC
import dns.rdtypes.ANY.NSEC3
import dns.rrset
import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

from alter_publish.definition.model import DNSSECSpec
from alter_publish.dns.denial import b32hex_label, hashed_owner_texts
from alter_publish.dns.dnssec import (
    INCEPTION_BACKDATE_SECONDS,
    SignatureWindow,
    choose_window,
    ds_records,
    owner_window,
    sign_records,
)
from alter_publish.dns.ownerwindows import OwnerWindows
from alter_publish.dns.records import from_zone, labels_of, name_text
from alter_publish.dns.zonekeys import ZoneKey, ZoneKeyRole
from alter_publish.errors import SigningError
from alter_publish.parallel import CHUNK_ITEMS, PARALLEL_MIN_ITEMS

NOW = 1767225600
ORIGIN = dns.name.from_text("example.com.")
ZONE_TEXT = """\
$ORIGIN example.com.
$TTL 3600
@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300
@ IN NS ns1
ns1 IN A 192.0.2.53
_alter IN TXT "v=alter1; a"
_alter.blake IN TXT "v=alter1; b"
_alter.deploy.bot IN TXT "v=alter1; c"
sub IN NS ns.sub
ns.sub IN A 192.0.2.1
"""
IN = dns.rdataclass.IN


def _keys() -> tuple[ZoneKey, ...]:
    return (
        ZoneKey("example.com", ZoneKeyRole.KSK, NOW, Ed25519PrivateKey.generate()),
        ZoneKey("example.com", ZoneKeyRole.ZSK, NOW, Ed25519PrivateKey.generate()),
    )


KEYS = _keys()
WINDOW = SignatureWindow.fresh(NOW, 14 * 86400)


def _signed(denial: str, keys: tuple[ZoneKey, ...] = KEYS) -> tuple[dns.zone.Zone, str]:
    """The example zone signed, as a consumer reads the written text back."""
    zone = dns.zone.from_text(ZONE_TEXT, origin=ORIGIN, relativize=False)
    result = sign_records(
        from_zone(zone), keys=keys, spec=DNSSECSpec(denial=denial), window=WINDOW, dnskey_ttl=3600
    )
    text = ZONE_TEXT + result.records_text
    return dns.zone.from_text(text, origin=ORIGIN, relativize=False), result.records_text


def _rrsets(zone: dns.zone.Zone) -> Iterator[tuple[dns.name.Name, dns.rdatatype.RdataType]]:
    for name, node in zone.nodes.items():
        for rdataset in node.rdatasets:
            if rdataset.rdtype != dns.rdatatype.RRSIG:
                yield name, rdataset.rdtype


@pytest.mark.parametrize("denial", ["nsec", "nsec3"])
def test_every_authoritative_rrset_validates_with_dnspython(denial: str) -> None:
    zone, _ = _signed(denial)
    keyset = {ORIGIN: zone.nodes[ORIGIN].get_rdataset(IN, dns.rdatatype.DNSKEY)}
    unsigned = []
    for name, rdtype in _rrsets(zone):
        rdataset = zone.nodes[name].get_rdataset(IN, rdtype)
        sigs = zone.nodes[name].get_rdataset(IN, dns.rdatatype.RRSIG, rdtype)
        if sigs is None:
            unsigned.append((name.to_text(), dns.rdatatype.to_text(rdtype)))
            continue
        assert rdataset is not None
        dns.dnssec.validate((name, rdataset), (name, sigs), keyset, ORIGIN, now=NOW)  # type: ignore[arg-type]  # (dnspython accepts Rdataset in the mapping)
    # Only the delegation's NS and the glue below it stay unsigned (RFC 4035 2.2).
    assert sorted(unsigned) == [("ns.sub.example.com.", "A"), ("sub.example.com.", "NS")]


def test_nsec3_records_validate_at_their_hashed_owners() -> None:
    zone, _ = _signed("nsec3")
    keyset = {ORIGIN: zone.nodes[ORIGIN].get_rdataset(IN, dns.rdatatype.DNSKEY)}
    checked = 0
    for name, node in zone.nodes.items():
        rdataset = node.get_rdataset(IN, dns.rdatatype.NSEC3)
        if rdataset is None:
            continue
        sigs = node.get_rdataset(IN, dns.rdatatype.RRSIG, dns.rdatatype.NSEC3)
        assert sigs is not None, name
        dns.dnssec.validate((name, rdataset), (name, sigs), keyset, ORIGIN, now=NOW)  # type: ignore[arg-type]  # (dnspython accepts Rdataset in the mapping)
        checked += 1
    assert checked == 9


def test_ksk_signs_dnskey_and_zsk_signs_the_rest() -> None:
    zone, _ = _signed("nsec")
    ksk, zsk = (key.tag for key in KEYS)
    for name, rdtype in _rrsets(zone):
        sigs = zone.nodes[name].get_rdataset(IN, dns.rdatatype.RRSIG, rdtype)
        if sigs is None:
            continue
        tags = {sig.key_tag for sig in sigs}
        assert tags == ({ksk} if rdtype == dns.rdatatype.DNSKEY else {zsk})


def test_nsec_chain_is_closed_and_in_canonical_order() -> None:
    zone, _ = _signed("nsec")
    owners = sorted(
        name for name, node in zone.nodes.items() if node.get_rdataset(IN, dns.rdatatype.NSEC)
    )
    nexts = []
    for owner in owners:
        rdataset = zone.nodes[owner].get_rdataset(IN, dns.rdatatype.NSEC)
        assert rdataset is not None
        assert rdataset.ttl == 300  # min(SOA minimum, SOA TTL), RFC 9077
        nexts.append(rdataset[0].next)
    assert nexts == [*owners[1:], owners[0]]
    assert dns.name.from_text("ns.sub.example.com.") not in owners  # glue is not in the chain
    assert dns.name.from_text("blake.example.com.") not in owners  # nor empty non-terminals


def test_nsec3_chain_covers_names_and_empty_non_terminals() -> None:
    zone, _ = _signed("nsec3")
    param = zone.nodes[ORIGIN].get_rdataset(IN, dns.rdatatype.NSEC3PARAM)
    assert param is not None
    assert (param[0].iterations, param[0].salt, param[0].flags) == (0, b"", 0)
    chain: dict[str, dns.rdtypes.ANY.NSEC3.NSEC3] = {}
    for name, node in zone.nodes.items():
        rdataset = node.get_rdataset(IN, dns.rdatatype.NSEC3)
        if rdataset is not None:
            chain[name.labels[0].decode()] = rdataset[0]
    expected_names = [
        "example.com.",
        "_alter.example.com.",
        "blake.example.com.",  # empty non-terminal
        "_alter.blake.example.com.",
        "bot.example.com.",  # empty non-terminal
        "deploy.bot.example.com.",  # empty non-terminal
        "_alter.deploy.bot.example.com.",
        "ns1.example.com.",
        "sub.example.com.",  # insecure delegation, no opt-out
    ]
    hashes = {dns.dnssec.nsec3_hash(name, b"", 0, 1).lower(): name for name in expected_names}
    assert set(chain) == set(hashes)
    ordered = sorted(chain)
    for index, label in enumerate(ordered):
        following = base64.b32hexencode(chain[label].next).decode().lower()
        assert following == ordered[(index + 1) % len(ordered)]
    ent = chain[dns.dnssec.nsec3_hash("blake.example.com.", b"", 0, 1).lower()]
    assert ent.windows == ()  # an empty non-terminal has an empty type bitmap


SECURE_DELEGATION = """\
$ORIGIN {origin}
$TTL 3600
@ IN SOA ns1 hostmaster 1 7200 3600 1209600 300
@ IN NS ns1
ns1 IN A 192.0.2.53
_alter.blake IN TXT "v=alter1; b"
secure IN NS ns.secure
secure IN DS 12345 15 2 {digest}
ns.secure IN A 192.0.2.2
plain IN NS ns.plain
ns.plain IN A 192.0.2.3
"""


@pytest.mark.parametrize(
    "origin",
    [
        pytest.param("example.com.", id="plain"),
        pytest.param("a\\ b.example.", id="escaped"),
        pytest.param(".", id="root"),
    ],
)
def test_nsec3_with_salt_and_iterations_at_any_origin_reads_back_as_dnspython_hashes(
    origin: str,
) -> None:
    """Each NSEC3 sits at dnspython's hash of its name (salt and iterations applied, an
    origin that needs escaping written as dnspython writes it), its next hash is the
    following owner's, and a delegation's bitmap holds RRSIG only when it has a DS."""
    apex = dns.name.from_text(origin)
    text = SECURE_DELEGATION.format(origin=origin, digest="ab" * 32)
    zone = dns.zone.from_text(text, origin=apex, relativize=False)
    keys = tuple(ZoneKey(origin, key.role, NOW, key.private_key) for key in KEYS)
    spec = DNSSECSpec(denial="nsec3", nsec3_salt="c0ffee", nsec3_iterations=2)
    result = sign_records(from_zone(zone), keys=keys, spec=spec, window=WINDOW, dnskey_ttl=3600)
    signed = dns.zone.from_text(text + result.records_text, origin=apex, relativize=False)
    chain = {
        name: rdataset[0]
        for name, node in signed.nodes.items()
        if (rdataset := node.get_rdataset(IN, dns.rdatatype.NSEC3)) is not None
    }
    relative = ["", "_alter.blake", "blake", "ns1", "secure", "plain"]
    names = [dns.name.from_text(name, origin=apex) if name else apex for name in relative]
    hashes = {
        dns.name.from_text(dns.dnssec.nsec3_hash(name, "c0ffee", 2, 1), origin=apex): name
        for name in names
    }
    assert set(chain) == set(hashes)
    ordered = sorted(chain)
    for index, owner in enumerate(ordered):
        assert (chain[owner].salt, chain[owner].iterations) == (bytes.fromhex("c0ffee"), 2)
        following = base64.b32hexencode(chain[owner].next).decode().lower()
        assert following == ordered[(index + 1) % len(ordered)].labels[0].decode()
    # NSEC3 text: algorithm, flags, iterations, salt, next hashed owner, then the types.
    types = {
        hashes[owner].relativize(apex).to_text(): set(rdata.to_text().split()[5:])
        for owner, rdata in chain.items()
    }
    assert types["secure"] == {"NS", "DS", "RRSIG"}
    assert types["plain"] == {"NS"}
    assert types["blake"] == set()
    assert types["_alter.blake"] == {"TXT", "RRSIG"}
    (param,) = [line for line in result.records_text.splitlines() if " IN NSEC3PARAM " in line]
    assert param.endswith(" IN NSEC3PARAM 1 0 2 c0ffee")  # as written, not only as read


def test_each_owners_block_is_its_lines_and_the_blocks_tile_the_text() -> None:
    zone = dns.zone.from_text(ZONE_TEXT, origin=ORIGIN, relativize=False)
    records = from_zone(zone)
    result = sign_records(
        records, keys=KEYS, spec=DNSSECSpec(denial="nsec3"), window=WINDOW, dnskey_ttl=3600
    )
    text = "".join(result.records_parts)
    at = 0
    for labels, (start, end) in sorted(result.blocks.items(), key=lambda item: item[1]):
        assert start == at
        owner = dns.name.Name(labels).to_text()
        block = text[start:end].splitlines(keepends=True)  # none: glue, which is not signed
        assert all(line.startswith(f"{owner} ") and line.endswith("\n") for line in block)
        at = end
    assert at == len(text)


@pytest.mark.parametrize("origin", [".", "example.com.", "a\\ b.example.", "x\\.y.example."])
def test_hashed_owner_texts_are_name_texts(origin: str) -> None:
    apex = labels_of(origin)
    owners = [(b32hex_label(bytes([n]) * 20).encode(), *apex) for n in range(3)]
    assert dict(hashed_owner_texts(owners, name_text(apex))) == {
        owner: name_text(owner) for owner in owners
    }


@given(st.one_of(st.binary(min_size=20, max_size=20), st.binary(max_size=40)))  # SHA-1: 20
def test_b32hex_label_is_rfc4648_base32hex_in_lower_case(digest: bytes) -> None:
    expected = base64.b32hexencode(digest).decode("ascii").lower().rstrip("=")
    assert b32hex_label(digest) == expected


def test_deterministic_and_text_is_canonically_ordered() -> None:
    _, first = _signed("nsec3")
    _, second = _signed("nsec3")
    assert first == second
    owners = [dns.name.from_text(line.split()[0]) for line in first.splitlines()]
    assert owners == sorted(owners)


def test_ds_is_sha256_of_the_ksk() -> None:
    lines = ds_records(ORIGIN, KEYS, 3600)
    assert len(lines) == 1
    owner, ttl, klass, rdtype, tag, algorithm, digest_type, _ = lines[0].split()
    assert (owner, ttl, klass, rdtype) == ("example.com.", "3600", "IN", "DS")
    assert (int(tag), algorithm, digest_type) == (KEYS[0].tag, "15", "2")


def test_the_unsigned_zone_is_only_read() -> None:
    zone = dns.zone.from_text(ZONE_TEXT, origin=ORIGIN, relativize=False)
    before = zone.to_text()
    sign_records(
        from_zone(zone), keys=KEYS, spec=DNSSECSpec(denial="nsec3"), window=WINDOW, dnskey_ttl=3600
    )
    assert zone.to_text() == before


def test_refuses_a_zone_that_holds_dnssec_records_already() -> None:
    zone, _ = _signed("nsec")
    with pytest.raises(SigningError, match="already holds"):
        sign_records(from_zone(zone), keys=KEYS, spec=DNSSECSpec(), window=WINDOW, dnskey_ttl=3600)


def test_needs_both_roles() -> None:
    zone = dns.zone.from_text(ZONE_TEXT, origin=ORIGIN, relativize=False)
    with pytest.raises(SigningError, match="active KSK and one active ZSK"):
        sign_records(
            from_zone(zone), keys=KEYS[:1], spec=DNSSECSpec(), window=WINDOW, dnskey_ttl=3600
        )


SPREAD_SPEC = DNSSECSpec(signature_validity=14 * 86400, refresh=5 * 86400)
SPREAD_OWNERS = [(f"_alter.user{n}".encode(), b"example", b"com", b"") for n in range(2000)]


@pytest.mark.parametrize("later", [0, 3600, 86399, 86400, 9 * 86400, 40 * 86400 + 7])
def test_owner_windows_are_never_due_when_made(later: int) -> None:
    """Whatever the time, an owner's window has more than ``refresh`` left and the
    zone's validity; its inception is at most one cycle (9 days here) back."""
    spec = SPREAD_SPEC
    now = NOW + later
    zone = choose_window(now, spec)
    for owner in SPREAD_OWNERS[:200]:
        window = owner_window(owner, zone, spec)
        assert window.reusable(now, spec)
        assert window.expiration - now > spec.refresh
        assert now - window.inception <= 9 * 86400 + INCEPTION_BACKDATE_SECONDS
        assert window.inception <= zone.inception


def test_a_day_renews_one_slot_of_owners() -> None:
    """Each day about 1/9 of the owners (validity 14d - refresh 5d = 9 daily slots) get
    a new window; over 9 days every owner does, once."""
    spec = SPREAD_SPEC
    before = {o: owner_window(o, choose_window(NOW, spec), spec) for o in SPREAD_OWNERS}
    renewed_per_day = []
    for day in range(1, 10):
        zone = choose_window(NOW + day * 86400, spec)
        after = {o: owner_window(o, zone, spec) for o in SPREAD_OWNERS}
        renewed_per_day.append(sum(after[o] != before[o] for o in SPREAD_OWNERS))
        before = after
    assert sum(renewed_per_day) == len(SPREAD_OWNERS)
    assert all(150 < count < 300 for count in renewed_per_day), renewed_per_day


@pytest.mark.parametrize(
    ("validity", "refresh"),
    [(14 * 86400, 5 * 86400), (2 * 86400, 86400), (30 * 86400, 86400), (86400 + 7, 3600)],
)
@pytest.mark.parametrize("later", [0, 86399, 86400, 5 * 86400 + 1])
def test_owner_windows_are_owner_window(validity: int, refresh: int, later: int) -> None:
    """The per-slot table a signing uses gives each owner the window it is defined by."""
    spec = DNSSECSpec(signature_validity=validity, refresh=refresh)
    zone = choose_window(NOW + later, spec)
    windows = OwnerWindows(zone, spec)
    found = [windows(owner) for owner in SPREAD_OWNERS[:300]]
    assert found == [owner_window(owner, zone, spec) for owner in SPREAD_OWNERS[:300]]
    assert len(set(found)) == min(windows.slots, 300)


def test_zone_window_holds_for_a_day() -> None:
    spec = SPREAD_SPEC
    day = NOW - NOW % 86400
    assert choose_window(day, spec) == choose_window(day + 86399, spec)
    assert choose_window(day + 86400, spec) != choose_window(day, spec)
    assert choose_window(day, spec) == SignatureWindow.fresh(day, spec.signature_validity)


def test_short_validity_is_not_spread() -> None:
    spec = DNSSECSpec(signature_validity=2 * 86400, refresh=86400)
    zone = choose_window(NOW, spec)
    assert {owner_window(o, zone, spec) for o in SPREAD_OWNERS[:50]} == {zone}


def _big_zone(names: int) -> dns.zone.Zone:
    lines = [ZONE_TEXT] + [f'_alter.u{n} IN TXT "v=alter1; u{n}"\n' for n in range(names)]
    return dns.zone.from_text("".join(lines), origin=ORIGIN, relativize=False)


class _ChildrenSeen:
    """A progress that notes, at the first chunk signed, each live worker's command line."""

    def __init__(self) -> None:
        self.command_lines: list[bytes] = []

    def start(self, stage: str, total: int) -> None:
        """Ignored."""

    def advance(self, count: int) -> None:
        """Note the workers' command lines once."""
        if not self.command_lines:
            for child in multiprocessing.active_children():
                with open(f"/proc/{child.pid}/cmdline", "rb") as cmdline:  # noqa: PTH123
                    self.command_lines.append(cmdline.read())

    def done(self) -> None:
        """Ignored."""


def test_two_workers_sign_the_bytes_one_does_from_new_interpreters() -> None:
    # Enough rrsets for a pool (PARALLEL_MIN_ITEMS jobs). Forked workers kept the signer's
    # pages and copied those it went on touching (~220 MB each at 100,000 handles): the
    # workers are new interpreters, given their inputs with each task.
    records = from_zone(_big_zone(PARALLEL_MIN_ITEMS))
    spec = DNSSECSpec(denial="nsec3")
    seen = _ChildrenSeen()
    two = sign_records(
        records, keys=KEYS, spec=spec, window=WINDOW, dnskey_ttl=3600, jobs=2, progress=seen
    )
    one = sign_records(records, keys=KEYS, spec=spec, window=WINDOW, dnskey_ttl=3600, jobs=1)
    assert two.signatures == one.signatures > PARALLEL_MIN_ITEMS
    assert two.records_text == one.records_text
    assert two.rrsets == one.rrsets
    assert len(seen.command_lines) == 2
    with open("/proc/self/cmdline", "rb") as mine:  # noqa: PTH123
        own = mine.read()
    for command_line in seen.command_lines:
        assert command_line != own
        assert b"multiprocessing" in command_line


def test_an_owners_rrsigs_that_straddle_two_spans_of_work_are_its_own() -> None:
    # Three rrsets an owner: some owner's RRSIGs are made in two spans (CHUNK_ITEMS jobs
    # each), and its lines are taken from both workers' texts.
    extra = "".join(
        f'h{n} IN TXT "{n}"\nh{n} IN A 192.0.2.1\nh{n} IN AAAA 2001:db8::1\n'
        for n in range(CHUNK_ITEMS // 2)
    )
    zone = dns.zone.from_text(ZONE_TEXT + extra, origin=ORIGIN, relativize=False)
    result = sign_records(
        from_zone(zone), keys=KEYS, spec=DNSSECSpec(denial="nsec3"), window=WINDOW, dnskey_ttl=3600
    )
    assert result.signatures > 2 * CHUNK_ITEMS
    text = ZONE_TEXT + extra + result.records_text
    assert text.count(" IN RRSIG ") == result.signatures
    signed = dns.zone.from_text(text, origin=ORIGIN, relativize=False)
    keyset = {ORIGIN: signed.nodes[ORIGIN].get_rdataset(IN, dns.rdatatype.DNSKEY)}
    checked = 0
    for name, rdtype in _rrsets(signed):
        sigs = signed.nodes[name].get_rdataset(IN, dns.rdatatype.RRSIG, rdtype)
        if sigs is not None:
            rdataset = signed.nodes[name].get_rdataset(IN, rdtype)
            dns.dnssec.validate((name, rdataset), (name, sigs), keyset, ORIGIN, now=NOW)  # type: ignore[arg-type]  # (dnspython accepts Rdataset in the mapping)
            checked += len(sigs)
    assert checked == result.signatures
    for owner, (start, end) in result.blocks.items():
        lines = result.records_text[start:end].splitlines()
        assert {line.split()[0] for line in lines} <= {name_text(owner)}
