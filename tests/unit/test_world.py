"""check's judgement of what a parent serves, its exit codes, and IPv6 from a host
without it (verify/world.py, pipeline/worldcheck.py)."""

from __future__ import annotations

import dns.dnssec
import dns.dnssectypes
import dns.message
import dns.name
import dns.rdatatype
import dns.rrset
import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.dns.hints import RootHints
from alter_publish.dns.server import ZoneServer
from alter_publish.errors import EXIT_DRIFT, EXIT_OK, EXIT_VERIFICATION, ResolveError
from alter_publish.pipeline.worldcheck import WorldReport
from alter_publish.verify.delegation import _ds_findings
from alter_publish.verify.world import Expected, Finding, Located, Prober, locate
from tests.ports import free_port

APEX = dns.name.from_text("example.com.")
WHERE = "ns1.nic.com. (192.0.2.1)"


def _ksk() -> dns.rdtypes.ANY.DNSKEY.DNSKEY:
    key = Ed25519PrivateKey.generate().public_key()
    return dns.dnssec.make_dnskey(key, dns.dnssectypes.Algorithm.ED25519, flags=257)


CURRENT, NEW, RETIRED, STRANGER = _ksk(), _ksk(), _ksk(), _ksk()


def _ds(key: dns.rdtypes.ANY.DNSKEY.DNSKEY, digest: str = "SHA256") -> str:
    return dns.dnssec.make_ds(APEX, key, digest).to_text()


def _reply(*ds: str) -> dns.message.Message:
    reply = dns.message.make_response(dns.message.make_query(APEX, dns.rdatatype.DS))
    if ds:
        reply.answer.append(dns.rrset.from_text(APEX, 3600, "IN", "DS", *ds))
    return reply


def _expected(*ksks: dns.rdtypes.ANY.DNSKEY.DNSKEY) -> Expected:
    return Expected(
        serial=1,
        ds=frozenset(_ds(key).upper() for key in ksks),
        ksks=ksks,
        retired=(RETIRED,),
        ns=("ns1.example.com.",),
        glue={},
    )


@pytest.mark.parametrize(
    ("served", "ksks", "codes"),
    [
        pytest.param((_ds(CURRENT),), (CURRENT,), [], id="good"),
        pytest.param((_ds(CURRENT, "SHA384"),), (CURRENT,), [], id="sha384-of-the-ksk"),
        pytest.param((), (CURRENT,), ["ds-missing"], id="missing"),
        pytest.param((_ds(STRANGER),), (CURRENT,), ["ds-mismatch"], id="mismatch"),
        pytest.param((_ds(RETIRED),), (CURRENT,), ["ds-retired"], id="retired-only"),
        pytest.param((_ds(CURRENT), _ds(RETIRED)), (CURRENT,), ["ds-stale"], id="stale"),
        pytest.param((_ds(CURRENT), _ds(STRANGER)), (CURRENT,), ["ds-extra"], id="extra"),
        pytest.param((_ds(CURRENT),), (CURRENT, NEW), ["ds-not-built"], id="new-ds-not-yet"),
    ],
)
def test_a_parent_ds_set_is_judged_key_by_key(
    served: tuple[str, ...], ksks: tuple[dns.rdtypes.ANY.DNSKEY.DNSKEY, ...], codes: list[str]
) -> None:
    findings = _ds_findings(_reply(*served), APEX, _expected(*ksks), signed=True, where=WHERE)
    assert [finding.code for finding in findings] == codes
    assert all(finding.server == WHERE for finding in findings)


def test_a_ds_for_an_unsigned_zone_is_an_error() -> None:
    findings = _ds_findings(_reply(_ds(CURRENT)), APEX, _expected(), signed=False, where=WHERE)
    assert [finding.code for finding in findings] == ["ds-unsigned-zone"]
    assert _ds_findings(_reply(), APEX, _expected(), signed=False, where=WHERE) == []


@pytest.mark.parametrize(
    ("codes", "exit_code"),
    [
        ([], EXIT_OK),
        (["nsec-walkable", "ds-stale"], EXIT_OK),
        (["serial-behind", "resolver-stale"], EXIT_DRIFT),
        (["serial-behind", "lame"], EXIT_VERIFICATION),
    ],
)
def test_exit_codes_follow_the_worst_severity(codes: list[str], exit_code: int) -> None:
    report = WorldReport(
        "example.com", 1, Located("com.", (), ()), tuple(Finding(code, "x") for code in codes)
    )
    assert report.exit_code == exit_code


def test_ipv6_is_given_up_once_with_one_warning() -> None:
    """From a host where IPv6 does not work, the first IPv6 address costs the timeout,
    the others nothing, and one warning says they were not checked."""
    prober = Prober(timeout=0.2)
    for _ in range(3):
        with pytest.raises(ResolveError):
            prober.ask("2001:db8::53", APEX, dns.rdatatype.SOA)
    assert [finding.code for finding in prober.findings()] == ["ipv6-unreachable"]


_ROOT_OF_SUB = """\
. 300 IN SOA a.root. hostmaster.root. 1 7200 3600 1209600 300
. 300 IN NS a.root.
a.root. 300 IN A 127.0.0.1
com. 300 IN NS ns.com.
ns.com. 300 IN A 127.0.0.2
"""
_COM_WITH_SUB = """\
com. 300 IN SOA ns.com. hostmaster.com. 1 7200 3600 1209600 300
com. 300 IN NS ns.com.
ns.com. 300 IN A 127.0.0.2
sub.com. 300 IN NS ns.com.
"""
_SUB = """\
sub.com. 300 IN SOA ns.com. hostmaster.com. 1 7200 3600 1209600 300
sub.com. 300 IN NS ns.com.
zone.sub.com. 300 IN NS ns.zone.sub.com.
ns.zone.sub.com. 300 IN A 192.0.2.53
"""


def test_the_parent_is_named_when_one_server_set_serves_it_and_its_parent() -> None:
    # ns.com. serves com. and sub.com.: the referral to zone.sub.com. comes from servers
    # com. referred to, but the delegation is in sub.com. (it was reported as com.).
    zones = [
        dns.zone.from_text(text, origin=origin, relativize=False)
        for origin, text in ((".", _ROOT_OF_SUB), ("com.", _COM_WITH_SUB), ("sub.com.", _SUB))
    ]
    port = free_port("127.0.0.1", "127.0.0.2")
    with (
        ZoneServer([zones[0]], address="127.0.0.1", port=port),
        ZoneServer(zones[1:], address="127.0.0.2", port=port),
    ):
        hints = RootHints(((dns.name.from_text("a.root."), ("127.0.0.1",)),))
        located = locate("zone.sub.com.", (), {}, hints, Prober(timeout=1.0, port=port))
    assert located.parent == "sub.com."
    assert [server.name for server in located.parent_servers] == ["ns.com."]
    assert [server.name for server in located.servers] == ["ns.zone.sub.com."]
