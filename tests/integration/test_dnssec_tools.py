"""Self-tests of the validator harness: independent tools accept a zone signed
with dnspython (not our signer) and reject broken copies of it.

ldns-verify-zone and unbound validate at a given time, so they check zones
signed at the fixed NOW. dnssec-verify and delv validate at the real clock,
so their tests sign with ``int(time.time())``, taken here, at the edge.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import dns.dnssec
import dns.dnssectypes
import dns.name
import dns.rdtypes.ANY.DNSKEY
import dns.rdtypes.ANY.DS
import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519

from alter_publish.dns.server import ZoneServer
from tests.conftest import NOW
from tests.integration.dnssec_tools import (
    Unbound,
    delv,
    dnssec_verify,
    ldns_verify_zone,
)

ORIGIN: Final = dns.name.from_text("example.com.")
BLAKE: Final = "_alter.blake.example.com."
BLAKE_TXT: Final = '"v=alter1; h=~blake; k=ed25519; sig=c2lnbmF0dXJl"'
ZONE_TEXT: Final = f"""\
$ORIGIN example.com.
@ 3600 IN SOA ns1 hostmaster 1 7200 3600 1209600 300
@ 3600 IN NS ns1
ns1 3600 IN A 192.0.2.53
_alter 300 IN TXT "v=alter1; k=ed25519; p=cHVibGljLWtleQ"
_alter.blake 300 IN TXT {BLAKE_TXT}
"""
#: An unsigned child zone, delegated without DS from the signed parent.
CHILD_TEXT: Final = """\
$ORIGIN unsigned.example.com.
@ 3600 IN SOA ns1 hostmaster 1 7200 3600 1209600 300
@ 3600 IN NS ns1
ns1 3600 IN A 192.0.2.54
_alter 300 IN TXT "v=alter1; unsigned"
"""
DELEGATION_TEXT: Final = """\
unsigned 3600 IN NS ns1.unsigned
ns1.unsigned 3600 IN A 192.0.2.54
"""
SIGNATURE_LIFETIME_SECONDS: Final = 14 * 86400
#: Signatures start this long before the signing time (clock skew of validators).
INCEPTION_BACKDATE_SECONDS: Final = 3600
DAY_SECONDS: Final = 86400


@dataclass(frozen=True)
class SignedZone:
    """A zone signed by dnspython with a fresh Ed25519 KSK and ZSK, NSEC."""

    zone: dns.zone.Zone
    ksk: dns.rdtypes.ANY.DNSKEY.DNSKEY
    ds: dns.rdtypes.ANY.DS.DS

    @property
    def ds_text(self) -> str:
        return self.ds.to_text()

    @property
    def anchor_record(self) -> str:
        return f"{ORIGIN} DS {self.ds_text}"

    @property
    def text(self) -> str:
        return self.zone.to_text(relativize=False)

    def write(self, path: Path, text: str | None = None) -> Path:
        path.write_text(self.text if text is None else text, encoding="utf-8")
        return path


def sign_example_zone(now: int, extra: str = "") -> SignedZone:
    """Sign ZONE_TEXT (plus ``extra`` records) with signatures valid from ``now``."""
    zone = dns.zone.from_text(ZONE_TEXT + extra, origin=ORIGIN, relativize=False)
    ksk_private = ed25519.Ed25519PrivateKey.generate()
    zsk_private = ed25519.Ed25519PrivateKey.generate()
    ksk = dns.dnssec.make_dnskey(ksk_private.public_key(), dns.dnssectypes.Algorithm.ED25519, 257)
    zsk = dns.dnssec.make_dnskey(zsk_private.public_key(), dns.dnssectypes.Algorithm.ED25519, 256)
    dns.dnssec.sign_zone(
        zone,
        keys=[(ksk_private, ksk), (zsk_private, zsk)],
        inception=now - INCEPTION_BACKDATE_SECONDS,
        expiration=now + SIGNATURE_LIFETIME_SECONDS,
    )
    return SignedZone(zone, ksk, dns.dnssec.make_ds(ORIGIN, ksk, "SHA256"))


def parse_zone(text: str, origin: dns.name.Name = ORIGIN) -> dns.zone.Zone:
    return dns.zone.from_text(text, origin=origin, relativize=False)


def unchanged(text: str) -> str:
    return text


def tamper_txt(text: str) -> str:
    """Change one byte of the blake TXT, keeping its old RRSIG."""
    assert text.count(BLAKE_TXT) == 1
    return text.replace(BLAKE_TXT, BLAKE_TXT.replace("~blake", "~blakf"))


def drop_blake_rrsig(text: str) -> str:
    """Remove the RRSIG over the blake TXT."""
    lines = text.splitlines(keepends=True)
    kept = [line for line in lines if not (line.startswith(f"{BLAKE} ") and " RRSIG TXT " in line)]
    assert len(kept) == len(lines) - 1
    return "".join(kept)


def wrong_ds(signed: SignedZone) -> str:
    """The zone's DS with the digest's first byte flipped."""
    digest = bytes([signed.ds.digest[0] ^ 0xFF]) + signed.ds.digest[1:]
    return f"{signed.ds.key_tag} {int(signed.ds.algorithm)} {signed.ds.digest_type} {digest.hex()}"


Mutation = Callable[[str], str]


# --------------------------------------------------------------------------
# ldns-verify-zone: validates at NOW with -t
# --------------------------------------------------------------------------


def test_ldns_verify_zone_accepts_zone_at_its_signing_time(tmp_path: Path) -> None:
    signed = sign_example_zone(NOW)
    zone_file = signed.write(tmp_path / "example.com.zone")
    anchor_file = tmp_path / "example.com.ds"
    anchor_file.write_text(signed.anchor_record + "\n", encoding="utf-8")

    result = ldns_verify_zone(zone_file, trust_anchor_file=anchor_file, at=NOW)

    assert result.ok, result.output
    assert "Zone is verified and complete" in result.output


@pytest.mark.parametrize(
    ("mutate", "at", "message"),
    [
        pytest.param(tamper_txt, NOW, "Bogus DNSSEC signature", id="tampered-txt"),
        pytest.param(drop_blake_rrsig, NOW, "no signatures for", id="missing-rrsig"),
        pytest.param(
            unchanged, NOW + SIGNATURE_LIFETIME_SECONDS + 1, "signature has expired", id="expired"
        ),
        pytest.param(
            unchanged,
            NOW - INCEPTION_BACKDATE_SECONDS - 1,
            "signature not incepted yet",
            id="not-yet-valid",
        ),
    ],
)
def test_ldns_verify_zone_rejects(tmp_path: Path, mutate: Mutation, at: int, message: str) -> None:
    signed = sign_example_zone(NOW)
    zone_file = signed.write(tmp_path / "example.com.zone", mutate(signed.text))

    result = ldns_verify_zone(zone_file, at=at)

    assert not result.ok, result.output
    assert message in result.output


def test_ldns_verify_zone_rejects_wrong_trust_anchor(tmp_path: Path) -> None:
    signed = sign_example_zone(NOW)
    zone_file = signed.write(tmp_path / "example.com.zone")
    anchor_file = tmp_path / "example.com.ds"
    anchor_file.write_text(f"{ORIGIN} DS {wrong_ds(signed)}\n", encoding="utf-8")

    result = ldns_verify_zone(zone_file, trust_anchor_file=anchor_file, at=NOW)

    assert not result.ok, result.output


def test_ldns_verify_zone_uses_the_real_clock_without_at(tmp_path: Path) -> None:
    zone_file = sign_example_zone(NOW).write(tmp_path / "example.com.zone")

    assert not ldns_verify_zone(zone_file).ok  # NOW + 14 days is long past


# --------------------------------------------------------------------------
# dnssec-verify: validates at the real clock only
# --------------------------------------------------------------------------


def test_dnssec_verify_accepts_zone_signed_now(tmp_path: Path) -> None:
    now = int(time.time())
    zone_file = sign_example_zone(now).write(tmp_path / "example.com.zone")

    result = dnssec_verify(zone_file, "example.com.", at=now)

    assert result.ok, result.output
    assert "Zone fully signed" in result.output


@pytest.mark.parametrize(
    ("mutate", "signed_days_ago"),
    [
        pytest.param(tamper_txt, 0, id="tampered-txt"),
        pytest.param(drop_blake_rrsig, 0, id="missing-rrsig"),
        pytest.param(unchanged, 30, id="expired"),
        pytest.param(unchanged, -1, id="not-yet-valid"),
    ],
)
def test_dnssec_verify_rejects(tmp_path: Path, mutate: Mutation, signed_days_ago: int) -> None:
    signed = sign_example_zone(int(time.time()) - signed_days_ago * DAY_SECONDS)
    zone_file = signed.write(tmp_path / "example.com.zone", mutate(signed.text))

    result = dnssec_verify(zone_file, "example.com.")

    assert not result.ok, result.output


def test_dnssec_verify_refuses_a_time_it_cannot_validate_at(tmp_path: Path) -> None:
    zone_file = sign_example_zone(NOW).write(tmp_path / "example.com.zone")

    with pytest.raises(ValueError, match="real clock"):
        dnssec_verify(zone_file, "example.com.", at=NOW)


# --------------------------------------------------------------------------
# delv and unbound against our loopback server
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def signed_now() -> SignedZone:
    """The example zone signed with the real time (delv cannot be given a time)."""
    return sign_example_zone(int(time.time()))


@pytest.fixture(scope="module")
def served_now(signed_now: SignedZone) -> Iterator[tuple[str, int]]:
    with ZoneServer([signed_now.zone]) as server:
        yield server.address


@pytest.fixture(scope="module")
def unbound_now(
    tmp_path_factory: pytest.TempPathFactory,
    signed_now: SignedZone,
    served_now: tuple[str, int],
) -> Iterator[Unbound]:
    with Unbound(
        tmp_path_factory.mktemp("unbound"),
        zone="example.com.",
        upstream=served_now,
        trust_anchors=[signed_now.anchor_record],
    ) as unbound:
        yield unbound


def test_delv_reports_secure_txt(signed_now: SignedZone, served_now: tuple[str, int]) -> None:
    result = delv(
        served_now, BLAKE, "TXT", anchor_zone="example.com.", anchor_ds=[signed_now.ds_text]
    )

    assert result.status == "secure", result.output
    assert BLAKE_TXT in result.output
    assert not result.negative


def test_delv_reports_secure_nxdomain(signed_now: SignedZone, served_now: tuple[str, int]) -> None:
    result = delv(
        served_now,
        "_alter.nobody.example.com.",
        "TXT",
        anchor_zone="example.com.",
        anchor_ds=[signed_now.ds_text],
    )

    assert result.status == "secure", result.output
    assert result.negative
    assert "NXDOMAIN" in result.output


def test_delv_reports_bogus_with_wrong_ds(
    signed_now: SignedZone, served_now: tuple[str, int]
) -> None:
    result = delv(
        served_now, BLAKE, "TXT", anchor_zone="example.com.", anchor_ds=[wrong_ds(signed_now)]
    )

    assert result.status == "bogus", result.output


def test_delv_reports_bogus_for_tampered_txt(signed_now: SignedZone) -> None:
    tampered = parse_zone(tamper_txt(signed_now.text))
    with ZoneServer([tampered]) as server:
        result = delv(
            server.address,
            BLAKE,
            "TXT",
            anchor_zone="example.com.",
            anchor_ds=[signed_now.ds_text],
        )

    assert result.status == "bogus", result.output


def test_delv_reports_insecure_below_unsigned_delegation() -> None:
    parent = sign_example_zone(int(time.time()), extra=DELEGATION_TEXT)
    child = parse_zone(CHILD_TEXT, dns.name.from_text("unsigned.example.com."))
    with ZoneServer([parent.zone, child]) as server:
        result = delv(
            server.address,
            "_alter.unsigned.example.com.",
            "TXT",
            anchor_zone="example.com.",
            anchor_ds=[parent.ds_text],
        )

    assert result.status == "insecure", result.output


def test_unbound_validates_good_txt(unbound_now: Unbound) -> None:
    answer = unbound_now.query(BLAKE, "TXT")

    assert (answer.rcode, answer.ad, answer.texts) == ("NOERROR", True, (BLAKE_TXT,))


def test_unbound_validates_nxdomain(unbound_now: Unbound) -> None:
    answer = unbound_now.query("_alter.nobody.example.com.", "TXT")

    assert (answer.rcode, answer.ad) == ("NXDOMAIN", True)


def test_unbound_refuses_names_outside_the_zone(unbound_now: Unbound) -> None:
    answer = unbound_now.query("example.org.", "A")  # answered locally, never sent out

    assert answer.rcode == "REFUSED"


def test_unbound_servfails_tampered_txt(tmp_path: Path, signed_now: SignedZone) -> None:
    tampered = parse_zone(tamper_txt(signed_now.text))
    with (
        ZoneServer([tampered]) as server,
        Unbound(
            tmp_path,
            zone="example.com.",
            upstream=server.address,
            trust_anchors=[signed_now.anchor_record],
        ) as unbound,
    ):
        answer = unbound.query(BLAKE, "TXT")
        good = unbound.query("_alter.example.com.", "TXT")

    assert (answer.rcode, answer.ad, answer.texts) == ("SERVFAIL", False, ())
    assert (good.rcode, good.ad) == ("NOERROR", True)


@pytest.mark.parametrize(
    ("at", "rcode", "ad"),
    [
        pytest.param(NOW, "NOERROR", True, id="at-signing-time"),
        pytest.param(None, "SERVFAIL", False, id="real-clock"),
    ],
)
def test_unbound_validates_at_the_given_time(
    tmp_path: Path, at: int | None, rcode: str, ad: bool
) -> None:
    signed = sign_example_zone(NOW)
    with (
        ZoneServer([signed.zone]) as server,
        Unbound(
            tmp_path,
            zone="example.com.",
            upstream=server.address,
            trust_anchors=[signed.anchor_record],
            at=at,
        ) as unbound,
    ):
        answer = unbound.query(BLAKE, "TXT")

    assert (answer.rcode, answer.ad) == (rcode, ad), unbound.log_tail()
