"""Acceptance test of DNSSEC signing: independent validators agree with our resolver.

The example zone is signed by ``alter_publish.pipeline.sign`` (NSEC and NSEC3
variants) at the real time, taken here: delv and dnssec-verify validate only
against the real clock. Then:

1. the good zone is accepted by every validator: the zone-file checkers
   (ldns-verify-zone, dnssec-verify) and, against our loopback server, delv,
   unbound and our own resolver, for every handle and for a missing one;
2. tampered copies of it are rejected by every validator: our resolver says
   ``bogus`` (never ``secure``), unbound SERVFAIL, delv bogus, and the
   zone-file checkers fail wherever the tamper is visible in a zone file.

:func:`test_validators_agree` is the agreement table: one test per (denial,
tamper, validator), with an untampered control row that every validator must
call secure.
"""

from __future__ import annotations

import base64
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import dns.dnssec
import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.rdtypes.ANY.DS
import dns.rdtypes.ANY.NSEC
import dns.rdtypes.ANY.NSEC3
import dns.rdtypes.ANY.NSEC3PARAM
import dns.rdtypes.ANY.TXT
import dns.zone
import pytest

from alter_publish.dns.anchors import TrustAnchor, read_trust_anchors
from alter_publish.dns.server import ZoneServer
from alter_publish.format.handles import parse_handle
from alter_publish.keys.store import KeyStore
from alter_publish.pipeline import ZoneResult, read_zone_file, sign
from alter_publish.verify.resolve import Resolution, resolve
from tests.conftest import EXAMPLE_ZONE
from tests.integration.dnssec_tools import (
    ToolResult,
    Unbound,
    UnboundAnswer,
    delv,
    dnssec_verify,
    ldns_verify_zone,
)

ZONE: Final = "example.com"
ORIGIN: Final = dns.name.from_text(f"{ZONE}.")
DENIALS: Final = ("nsec", "nsec3")
#: The handles of zones/example.com.yaml, in the order the proof reports them.
HANDLES: Final = ("~example.com", "~blake", "~drew", "~deploy.bot", "~cc-opus-4-7")
#: The handle every tamper targets.
TARGET: Final = "~blake"
TARGET_OWNER: Final = dns.name.from_text("_alter.blake.example.com.")
#: A handle the zone does not publish.
MISSING: Final = "~nobody"
MISSING_OWNER: Final = "_alter.nobody.example.com."
DAY_SECONDS: Final = 86400
#: zones/example.com.yaml: ``signature_validity: 14d``.
SIGNATURE_VALIDITY_SECONDS: Final = 14 * DAY_SECONDS
#: The expired tamper signs this long before the real time: past the 14-day validity.
EXPIRED_SIGNING_AGE_SECONDS: Final = 20 * DAY_SECONDS
#: DNSSEC record types, removed by the ``unsigned`` tamper.
DNSSEC_TYPES: Final = frozenset(
    {
        dns.rdatatype.RRSIG,
        dns.rdatatype.NSEC,
        dns.rdatatype.NSEC3,
        dns.rdatatype.NSEC3PARAM,
        dns.rdatatype.DNSKEY,
    }
)
IN: Final = dns.rdataclass.IN

Verdict = Literal["secure", "insecure", "bogus"]
Validator = Literal["ours", "delv", "unbound", "ldns-verify-zone", "dnssec-verify"]
VALIDATORS: Final[tuple[Validator, ...]] = (
    "ours",
    "delv",
    "unbound",
    "ldns-verify-zone",
    "dnssec-verify",
)
#: The rows of the agreement table; ``untampered`` is the control row.
TAMPERS: Final = (
    "untampered",
    "txt-byte",
    "expired",
    "wrong-ds",
    "missing-rrsig",
    "unsigned",
    "forged-denial",
)
#: (tamper, validator) pairs that cannot apply, and why.
NOT_APPLICABLE: Final[dict[tuple[str, Validator], str]] = {
    # The zone file is untouched; dnssec-verify takes no trust anchor, so a
    # wrong DS is invisible to it (it accepts the zone, rightly).
    ("wrong-ds", "dnssec-verify"): "n/a: dnssec-verify takes no trust anchor (zone untouched)",
}


# --------------------------------------------------------------------------
# The signed workspace
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SignedWorkspace:
    """The example zone signed by ``sign`` into ``root/build``."""

    root: Path
    denial: str
    now: int
    result: ZoneResult

    @property
    def zone_file(self) -> Path:
        return self.root / "build" / f"{ZONE}.zone"

    @property
    def ds_file(self) -> Path:
        return self.root / "build" / f"{ZONE}.ds"

    @property
    def ds_records(self) -> tuple[str, ...]:
        """The DS records as written, ``example.com. 3600 IN DS <rdata>``."""
        return tuple(line for line in self.ds_file.read_text().splitlines() if line.strip())

    def zone(self) -> dns.zone.Zone:
        """A fresh copy of the signed zone, read back from the zone file."""
        return read_zone_file(self.zone_file, ZONE)


def sign_workspace(root: Path, denial: str, now: int) -> SignedWorkspace:
    """Copy zones/example.com.yaml to ``root``, set its denial and sign it at ``now``."""
    (root / "zones").mkdir(parents=True)
    definition = root / "zones" / f"{ZONE}.yaml"
    shutil.copy(EXAMPLE_ZONE, definition)
    text = definition.read_text()
    assert text.count("denial: nsec3 ") == 1, "zones/example.com.yaml changed its dnssec block"
    definition.write_text(text.replace("denial: nsec3 ", f"denial: {denial} "))
    report = sign(
        [definition], out=root / "build", keys=KeyStore(root / "keys"), now=now, create_keys=True
    )
    (result,) = report.zones
    assert report.ok, result.proof
    assert result.dnssec is not None
    assert result.dnssec["denial"] == denial
    return SignedWorkspace(root, denial, now, result)


def ds_rdata(record: str) -> str:
    """The rdata of ``example.com. 3600 IN DS <rdata>``."""
    owner, ttl, rdclass, rdtype, rdata = record.split(maxsplit=4)
    assert (owner, rdclass, rdtype) == (f"{ZONE}.", "IN", "DS"), record
    assert ttl.isdigit(), record
    return rdata


def wrong_ds_record(record: str) -> str:
    """``record`` with one hex digit of its digest changed."""
    owner_ttl_class_type, rdata = record.rsplit(" DS ", 1)
    ds = dns.rdata.from_text(IN, dns.rdatatype.DS, rdata)
    assert isinstance(ds, dns.rdtypes.ANY.DS.DS)
    digest = ds.digest.hex()
    changed = ("1" if digest[0] == "0" else "0") + digest[1:]
    fields = f"{ds.key_tag} {int(ds.algorithm)} {ds.digest_type} {changed}"
    return f"{owner_ttl_class_type} DS {fields}"


class Workspaces:
    """The signed workspace of each denial, signed on first use and then shared.

    The time is taken here, at the edge: delv and dnssec-verify have no time option.
    """

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self._factory = factory
        self._signed: dict[str, SignedWorkspace] = {}

    def get(self, denial: str) -> SignedWorkspace:
        if denial not in self._signed:
            root = self._factory.mktemp(f"signed-{denial}")
            self._signed[denial] = sign_workspace(root, denial, int(time.time()))
        return self._signed[denial]


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory: pytest.TempPathFactory) -> Workspaces:
    # Not parametrized, so that pytest's test order never makes it sign twice.
    return Workspaces(tmp_path_factory)


@pytest.fixture(scope="module", params=DENIALS)
def signed(request: pytest.FixtureRequest, workspaces: Workspaces) -> SignedWorkspace:
    """The example zone with NSEC or NSEC3 denial, signed at the real time."""
    denial: str = request.param
    return workspaces.get(denial)


# --------------------------------------------------------------------------
# Tampers: each edits a fresh copy of the signed zone in place
# --------------------------------------------------------------------------


def _node_rdataset(
    zone: dns.zone.Zone,
    name: dns.name.Name,
    rdtype: dns.rdatatype.RdataType,
    covers: dns.rdatatype.RdataType = dns.rdatatype.NONE,
) -> dns.rdataset.Rdataset:
    rdataset = zone.get_rdataset(name, rdtype, covers)
    assert rdataset is not None, f"no {rdtype.name} at {name}"
    return rdataset


def change_txt_byte(zone: dns.zone.Zone) -> None:
    """Change one byte (inside sig=) of the target's TXT; its RRSIG stays."""
    txt = _node_rdataset(zone, TARGET_OWNER, dns.rdatatype.TXT)
    assert _node_rdataset(zone, TARGET_OWNER, dns.rdatatype.RRSIG, dns.rdatatype.TXT)
    (rdata,) = txt
    assert isinstance(rdata, dns.rdtypes.ANY.TXT.TXT)
    strings = list(rdata.strings)
    last = strings[-1]
    middle = len(last) // 2
    strings[-1] = (
        last[:middle] + (b"A" if last[middle : middle + 1] != b"A" else b"B") + last[middle + 1 :]
    )
    zone.replace_rdataset(
        TARGET_OWNER, dns.rdataset.from_rdata(txt.ttl, rdata.replace(strings=strings))
    )


def drop_txt_rrsig(zone: dns.zone.Zone) -> None:
    """Delete the RRSIG(TXT) rdataset at the target."""
    _node_rdataset(zone, TARGET_OWNER, dns.rdatatype.RRSIG, dns.rdatatype.TXT)
    zone.delete_rdataset(TARGET_OWNER, dns.rdatatype.RRSIG, dns.rdatatype.TXT)


def strip_dnssec(zone: dns.zone.Zone) -> None:
    """Remove every RRSIG, NSEC, NSEC3, NSEC3PARAM and DNSKEY (and nodes left empty)."""
    for name, node in list(zone.nodes.items()):
        for rdataset in list(node.rdatasets):
            if rdataset.rdtype in DNSSEC_TYPES:
                node.delete_rdataset(IN, rdataset.rdtype, rdataset.covers)
        if not node.rdatasets:
            zone.delete_node(name)


def _nsec3_owner(zone: dns.zone.Zone, name: dns.name.Name) -> dns.name.Name:
    (param,) = _node_rdataset(zone, ORIGIN, dns.rdatatype.NSEC3PARAM)
    assert isinstance(param, dns.rdtypes.ANY.NSEC3PARAM.NSEC3PARAM)
    hashed = dns.dnssec.nsec3_hash(name, param.salt, param.iterations, param.algorithm)
    return dns.name.Name((hashed.lower().encode("ascii"), *ORIGIN.labels))


def forge_denial(zone: dns.zone.Zone) -> None:
    """Remove the target and make the previous NSEC/NSEC3 skip it, keeping that old RRSIG.

    NSEC: the target's node (TXT, NSEC and their RRSIGs) goes; the NSEC whose
    next name was the target now points at the target's next name.
    NSEC3: the target's node and its NSEC3 (with RRSIG) go; the NSEC3 whose
    next hash was the target's now holds the target's next hash. The NSEC3 of
    the empty non-terminal ``blake.example.com.`` stays: ldns-verify-zone then
    rejects the file before it checks signatures ("original of NSEC3 hashed
    name could not be found"), while dnssec-verify reports the forged NSEC3's
    RRSIG; resolvers see the closest encloser ``blake.example.com.`` and the
    forged NSEC3 covering ``_alter.blake.example.com.``.
    """
    denial_type = dns.rdatatype.NSEC
    removed = TARGET_OWNER
    if zone.get_rdataset(ORIGIN, dns.rdatatype.NSEC3PARAM) is not None:
        denial_type = dns.rdatatype.NSEC3
        removed = _nsec3_owner(zone, TARGET_OWNER)
    (gone,) = _node_rdataset(zone, removed, denial_type)
    assert isinstance(gone, dns.rdtypes.ANY.NSEC.NSEC | dns.rdtypes.ANY.NSEC3.NSEC3)
    zone.delete_node(TARGET_OWNER)
    if removed != TARGET_OWNER:
        zone.delete_node(removed)
    pointing_at_removed = (
        removed if denial_type == dns.rdatatype.NSEC else base64.b32hexdecode(removed[0].upper())
    )
    previous = [
        (name, rdataset, rdata)
        for name, rdataset in zone.iterate_rdatasets(denial_type)
        for rdata in rdataset
        if isinstance(rdata, dns.rdtypes.ANY.NSEC.NSEC | dns.rdtypes.ANY.NSEC3.NSEC3)
        and rdata.next == pointing_at_removed
    ]
    assert len(previous) == 1, previous
    ((name, rdataset, rdata),) = previous
    forged = dns.rdataset.from_rdata(rdataset.ttl, rdata.replace(next=gone.next))
    zone.replace_rdataset(name, forged)
    assert zone.get_rdataset(name, dns.rdatatype.RRSIG, denial_type) is not None


ZoneEdit = Callable[[dns.zone.Zone], None]
ZONE_EDITS: Final[dict[str, ZoneEdit]] = {
    "txt-byte": change_txt_byte,
    "missing-rrsig": drop_txt_rrsig,
    "unsigned": strip_dnssec,
    "forged-denial": forge_denial,
}


@dataclass(frozen=True)
class Case:
    """What one row of the table serves, and the anchors the validators hold.

    Attributes:
        tamper: the row's id.
        zone_file: the zone as the zone-file checkers see it; also what is served.
        anchor_file: DS records for ``ldns-verify-zone -k``.
        anchor_records: the same DS records, ``example.com. <ttl> IN DS <rdata>``.
        now: the time our resolver validates at (the real time of signing).
    """

    tamper: str
    zone_file: Path
    anchor_file: Path
    anchor_records: tuple[str, ...]
    now: int

    @property
    def anchors(self) -> tuple[TrustAnchor, ...]:
        return read_trust_anchors(self.anchor_file)

    @property
    def anchor_ds(self) -> tuple[str, ...]:
        return tuple(ds_rdata(record) for record in self.anchor_records)


def build_case(tamper: str, signed: SignedWorkspace, workdir: Path) -> Case:
    """Write the zone and anchor files of ``tamper``, starting from ``signed``."""
    workdir.mkdir(parents=True)
    zone_file, anchor_file = signed.zone_file, signed.ds_file
    records = signed.ds_records
    if tamper == "expired":
        expired = sign_workspace(
            workdir / "expired", signed.denial, signed.now - EXPIRED_SIGNING_AGE_SECONDS
        )
        window = expired.result.dnssec
        assert window is not None
        # Every RRSIG expired before the real time: the zone's window is the newest any
        # owner's can be (spread renewals: docs/dnssec.md), at most now + validity.
        assert window["expiration"] <= expired.now + SIGNATURE_VALIDITY_SECONDS
        assert window["expiration"] < signed.now
        zone_file, anchor_file, records = expired.zone_file, expired.ds_file, expired.ds_records
    elif tamper == "wrong-ds":
        records = tuple(wrong_ds_record(record) for record in records)
        anchor_file = workdir / "wrong.ds"
        anchor_file.write_text("".join(record + "\n" for record in records))
    elif tamper in ZONE_EDITS:
        zone = signed.zone()
        ZONE_EDITS[tamper](zone)
        zone_file = workdir / f"{ZONE}.zone"
        zone_file.write_text(zone.to_text(relativize=False))
    else:
        assert tamper == "untampered", tamper
    return Case(tamper, zone_file, anchor_file, records, signed.now)


# --------------------------------------------------------------------------
# Serving a case
# --------------------------------------------------------------------------


class Served:
    """A case's zone file, re-read and served on loopback; unbound started on demand."""

    def __init__(self, case: Case, workdir: Path, stack: ExitStack) -> None:
        self.case = case
        self.zone = read_zone_file(case.zone_file, ZONE)
        self.address = stack.enter_context(ZoneServer([self.zone])).address
        self._workdir = workdir
        self._stack = stack
        self._unbound: Unbound | None = None

    def unbound(self) -> Unbound:
        """A fresh unbound for this case (unbound caches), validating at the real clock.

        Raises:
            pytest.skip.Exception: unbound is not installed.
        """
        if self._unbound is None:
            unbound = Unbound(
                self._workdir / "unbound",
                zone=f"{ZONE}.",
                upstream=self.address,
                trust_anchors=self.case.anchor_records,
            )
            self._unbound = self._stack.enter_context(unbound)
        return self._unbound

    def resolve(self, handle: str) -> Resolution:
        """Our resolver, at the case's (real) time, with the case's anchors."""
        return resolve(
            parse_handle(handle),
            server=self.address,
            substrate=ZONE,
            now=self.case.now,
            anchors=self.case.anchors,
        )

    def txt(self, owner: str) -> dns.rdtypes.ANY.TXT.TXT:
        """The single TXT rdata at ``owner``, as served."""
        (rdata,) = _node_rdataset(self.zone, dns.name.from_text(owner), dns.rdatatype.TXT)
        assert isinstance(rdata, dns.rdtypes.ANY.TXT.TXT)
        return rdata

    def txt_text(self, owner: str) -> str:
        """The presentation form of the TXT at ``owner`` (quoted strings), as served."""
        return self.txt(owner).to_text()

    def txt_joined(self, owner: str) -> str:
        """The TXT at ``owner`` with its strings joined: the alter1 record text."""
        return b"".join(self.txt(owner).strings).decode("ascii")


def serve(case: Case, workdir: Path) -> Iterator[Served]:
    """Serve ``case`` until the generator is closed (the fixture's teardown)."""
    with ExitStack() as stack:
        yield Served(case, workdir, stack)


@pytest.fixture(scope="module")
def good(signed: SignedWorkspace, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The signed zone as written, served, with the DS that ``sign`` wrote."""
    workdir = tmp_path_factory.mktemp(f"good-{signed.denial}")
    yield from serve(build_case("untampered", signed, workdir / "case"), workdir)


@pytest.fixture(scope="module")
def case(
    request: pytest.FixtureRequest,
    workspaces: Workspaces,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Served]:
    """One row of the agreement table, served (indirect parameter: ``(denial, tamper)``)."""
    denial, tamper = request.param
    workdir = tmp_path_factory.mktemp(f"{denial}-{tamper}")
    yield from serve(build_case(tamper, workspaces.get(denial), workdir / "case"), workdir)


# --------------------------------------------------------------------------
# Verdicts
# --------------------------------------------------------------------------


def unbound_verdict(answer: UnboundAnswer) -> Verdict:
    if answer.rcode == "SERVFAIL":
        return "bogus"
    return "secure" if answer.ad else "insecure"


def checker_verdict(result: ToolResult) -> Verdict:
    """A zone-file checker's exit status: accepted reads as secure, rejected as bogus."""
    return "secure" if result.ok else "bogus"


def verdict(served: Served, validator: Validator, handle: str) -> tuple[Verdict, str]:
    """Ask ``validator`` about ``handle``'s TXT (or the whole zone file); verdict and output."""
    case = served.case
    owner = parse_handle(handle).owner(ZONE)
    if validator == "ours":
        resolution = served.resolve(handle)
        return resolution.dnssec.value, repr(resolution)
    if validator == "delv":
        result = delv(
            served.address, owner, "TXT", anchor_zone=f"{ZONE}.", anchor_ds=case.anchor_ds
        )
        return result.status, result.output
    if validator == "unbound":
        unbound = served.unbound()
        answer = unbound.query(owner, "TXT")
        return unbound_verdict(answer), f"{answer}\n{unbound.log_tail()}"
    if validator == "ldns-verify-zone":
        result_file = ldns_verify_zone(
            case.zone_file, trust_anchor_file=case.anchor_file, at=case.now
        )
        return checker_verdict(result_file), result_file.output
    # dnssec-verify validates at the real clock only.
    result_file = dnssec_verify(case.zone_file, f"{ZONE}.")
    return checker_verdict(result_file), result_file.output


# --------------------------------------------------------------------------
# 1. The good zone: everyone agrees it is good
# --------------------------------------------------------------------------


def test_sign_proves_every_handle_secure(signed: SignedWorkspace) -> None:
    proof = signed.result.proof
    assert proof is not None
    assert proof.ok, proof
    assert [(r.handle, r.category, r.dnssec) for r in proof.results] == [
        (handle, None, "secure") for handle in HANDLES
    ]
    assert proof.denial is not None
    assert (proof.denial.category, proof.denial.dnssec) == (None, "secure")


def test_ldns_verify_zone_accepts_the_signed_zone(signed: SignedWorkspace) -> None:
    result = ldns_verify_zone(signed.zone_file, trust_anchor_file=signed.ds_file, at=signed.now)

    assert result.ok, result.output
    assert "Zone is verified and complete" in result.output


def test_dnssec_verify_accepts_the_signed_zone(signed: SignedWorkspace) -> None:
    result = dnssec_verify(signed.zone_file, f"{ZONE}.", at=signed.now)

    assert result.ok, result.output
    assert "Zone fully signed" in result.output


@pytest.mark.parametrize("handle", HANDLES)
def test_our_resolver_finds_every_handle_secure(good: Served, handle: str) -> None:
    resolution = good.resolve(handle)

    assert (resolution.dnssec.value, resolution.category) == ("secure", None), resolution
    assert resolution.ok
    assert resolution.envelope is not None
    assert resolution.envelope.to_text() == good.txt_joined(resolution.owner), resolution


@pytest.mark.parametrize("handle", HANDLES)
def test_delv_finds_every_handle_secure(good: Served, handle: str) -> None:
    owner = parse_handle(handle).owner(ZONE)
    result = delv(good.address, owner, "TXT", anchor_zone=f"{ZONE}.", anchor_ds=good.case.anchor_ds)

    assert result.status == "secure", result.output
    assert not result.negative, result.output
    assert good.txt_text(owner) in result.output


@pytest.mark.parametrize("handle", HANDLES)
def test_unbound_finds_every_handle_secure(good: Served, handle: str) -> None:
    owner = parse_handle(handle).owner(ZONE)
    unbound = good.unbound()
    answer = unbound.query(owner, "TXT")

    expected = ("NOERROR", True, (good.txt_text(owner),))
    assert (answer.rcode, answer.ad, answer.texts) == expected, unbound.log_tail()


def test_our_resolver_validates_the_missing_handle_as_not_found(good: Served) -> None:
    resolution = good.resolve(MISSING)

    assert resolution.owner == MISSING_OWNER
    assert (resolution.dnssec.value, resolution.category) == ("secure", "not-found"), resolution
    assert resolution.envelope is None


def test_delv_validates_the_missing_handle_as_nxdomain(good: Served) -> None:
    result = delv(
        good.address, MISSING_OWNER, "TXT", anchor_zone=f"{ZONE}.", anchor_ds=good.case.anchor_ds
    )

    assert result.status == "secure", result.output
    assert result.negative, result.output
    assert "NXDOMAIN" in result.output


def test_unbound_validates_the_missing_handle_as_nxdomain(good: Served) -> None:
    unbound = good.unbound()
    answer = unbound.query(MISSING_OWNER, "TXT")

    assert (answer.rcode, answer.ad, answer.texts) == ("NXDOMAIN", True, ()), unbound.log_tail()


# --------------------------------------------------------------------------
# 2. The agreement table: every tamper is bogus to every validator
# --------------------------------------------------------------------------


# Stacked (not one list of pairs) so that each tamper's case fixture, with its
# server and unbound, is built once and shared by the validators' tests.
# Ids read ``<denial>-<tamper>-<validator>``, e.g. ``nsec3-wrong-ds-unbound``.
@pytest.mark.parametrize("validator", VALIDATORS)
@pytest.mark.parametrize(
    "case",
    [
        pytest.param((denial, tamper), id=f"{denial}-{tamper}")
        for denial in DENIALS
        for tamper in TAMPERS
    ],
    indirect=True,
)
def test_validators_agree(case: Served, validator: Validator) -> None:
    """``_alter.blake.example.com. TXT`` (or the zone file): secure untampered, else bogus."""
    tamper = case.case.tamper
    not_applicable = NOT_APPLICABLE.get((tamper, validator))
    if not_applicable is not None:
        pytest.skip(not_applicable)
    expected: Verdict = "secure" if tamper == "untampered" else "bogus"

    found, output = verdict(case, validator, TARGET)

    assert found == expected, f"{case.case.tamper}: {validator} says {found}:\n{output}"
