"""The chain of trust from a root anchor, on a loopback hierarchy (see chainzones.py).

Root, ``com.`` and ``example.com.`` are signed here and served by alter-publish's
server on 127.0.20.1-3 (and all three on 127.0.20.4), on one high port. The resolver
is given the test root's DS as its only trust anchor.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import dns.message
import dns.name
import dns.rdatatype
import dns.rrset
import pytest

from alter_publish.dns.chain import ChainWalker, names_between
from alter_publish.dns.iterate import IterativeAsker, ServerAsker, ask_server
from alter_publish.dns.validation import DNSSECStatus
from alter_publish.errors import EXIT_USAGE, EXIT_VERIFICATION
from alter_publish.verify.resolve import Answer, StubResolver
from tests.integration.chainzones import (
    ABSENT_OWNER,
    ALL_ADDRESS,
    EXAMPLE,
    EXAMPLE_ADDRESS,
    OWNER,
    Flaw,
    Hierarchy,
    build_hierarchy,
    serving,
)

TIMEOUT = 1.0
SECURE, INSECURE, BOGUS = DNSSECStatus.SECURE, DNSSECStatus.INSECURE, DNSSECStatus.BOGUS


def _now() -> int:
    return int(time.time())


def _ask(hierarchy: Hierarchy, port: int, address: str, owner: str = OWNER) -> Answer:
    """``owner`` TXT from ``address``, validated from the test root (hints on ``port``)."""
    with StubResolver(
        (address, port),
        _now(),
        (hierarchy.root_anchor,),
        TIMEOUT,
        root_hints=hierarchy.hints,
        hints_port=port,
    ) as stub:
        return stub.query_txt(owner)


@pytest.mark.parametrize(
    ("address", "flaw"),
    [
        pytest.param(EXAMPLE_ADDRESS, Flaw.NONE, id="iterative"),
        pytest.param(EXAMPLE_ADDRESS, Flaw.NO_GLUE, id="iterative-ns-without-glue"),
        pytest.param(ALL_ADDRESS, Flaw.NONE, id="one-server"),
    ],
)
def test_secure_from_the_root_anchor(address: str, flaw: Flaw) -> None:
    # The old validator checked the answer against the anchor's own zone: "TXT at
    # _alter.blake.example.com. signed by example.com., not by the zone .".
    hierarchy = build_hierarchy(_now(), flaw)
    with serving(hierarchy) as port:
        answer = _ask(hierarchy, port, address)
    assert (answer.dnssec, answer.reason) == (SECURE, "")
    assert answer.texts == ("v=alter1 blake",)


def test_one_server_needs_no_hints() -> None:
    # A server authoritative for every zone on the path is asked for each DS and DNSKEY.
    hierarchy = build_hierarchy(_now())
    with (
        serving(hierarchy) as port,
        StubResolver((ALL_ADDRESS, port), _now(), (hierarchy.root_anchor,), TIMEOUT) as stub,
    ):
        answer = stub.query_txt(OWNER)
    assert (answer.dnssec, answer.reason) == (SECURE, "")


def test_denial_is_secure_from_the_root() -> None:
    hierarchy = build_hierarchy(_now())
    with serving(hierarchy) as port:
        answer = _ask(hierarchy, port, EXAMPLE_ADDRESS, ABSENT_OWNER)
    assert (answer.rcode, answer.dnssec, answer.reason) == ("NXDOMAIN", SECURE, "")


@pytest.mark.parametrize("address", [EXAMPLE_ADDRESS, ALL_ADDRESS], ids=["iterative", "one-server"])
def test_wrong_ds_at_the_parent_is_bogus_naming_the_link(address: str) -> None:
    hierarchy = build_hierarchy(_now(), Flaw.WRONG_DS)
    with serving(hierarchy) as port:
        answer = _ask(hierarchy, port, address)
    assert answer.dnssec is BOGUS
    assert answer.reason == (
        "com. DS for example.com.: no DS matches a KSK of example.com. DNSKEY"
        f" (tags {hierarchy.example_ksk.tag})"
    )


@pytest.mark.parametrize("address", [EXAMPLE_ADDRESS, ALL_ADDRESS], ids=["iterative", "one-server"])
def test_missing_ds_is_an_insecure_delegation(address: str) -> None:
    # The zone still signs its answers, but the parent proves (NSEC: NS, no DS) that
    # the delegation is insecure: nobody validating from the root can call it secure.
    hierarchy = build_hierarchy(_now(), Flaw.NO_DS)
    with serving(hierarchy) as port:
        answer = _ask(hierarchy, port, address)
    assert answer.dnssec is INSECURE
    assert answer.reason == (
        "com. DS for example.com.: insecure delegation (com. proves there is no DS)"
    )


def test_expired_signature_on_the_answer_is_bogus() -> None:
    hierarchy = build_hierarchy(_now(), Flaw.EXPIRED_ANSWER)
    with serving(hierarchy) as port:
        answer = _ask(hierarchy, port, EXAMPLE_ADDRESS)
    assert answer.dnssec is BOGUS
    assert answer.reason.startswith(f"RRSIG over TXT at {OWNER} expired at ")


@pytest.mark.parametrize("flaw", [Flaw.NONE, Flaw.NO_GLUE], ids=["glue", "no-glue"])
def test_walker_traces_every_link(flaw: Flaw) -> None:
    hierarchy = build_hierarchy(_now(), flaw)
    with serving(hierarchy) as port:
        asker = IterativeAsker(hierarchy.hints, TIMEOUT, port)
        trust = ChainWalker(asker, (hierarchy.root_anchor,), _now()).trust_for(
            dns.name.from_text(OWNER)
        )
        assert asker.servers(EXAMPLE) == (EXAMPLE_ADDRESS,)
    assert (trust.zone, trust.status) == (EXAMPLE, SECURE)
    assert trust.anchor is not None
    assert trust.anchor.source == "com. DS for example.com."
    assert trust.trace == (
        ". DNSKEY: secure (trust anchor)",
        ". DS for com.: cut",
        "com. DNSKEY: secure",
        "com. DS for example.com.: cut",
        "example.com. DNSKEY: secure",
        "example.com. DS for blake.example.com.: not a cut",
        "example.com. DS for _alter.blake.example.com.: not a cut",
    )


def test_walker_from_a_zone_anchor_asks_only_that_zone() -> None:
    hierarchy = build_hierarchy(_now())
    with serving(hierarchy) as port:
        asker = ServerAsker((EXAMPLE_ADDRESS, port), recursive=False, timeout=TIMEOUT)
        walker = ChainWalker(asker, (hierarchy.example_anchor,), _now())
        trust = walker.trust_for(dns.name.from_text(OWNER))
    assert (trust.zone, trust.status) == (EXAMPLE, SECURE)


def test_resolver_picks_how_to_walk() -> None:
    hierarchy = build_hierarchy(_now())
    anchors = (hierarchy.root_anchor,)
    with serving(hierarchy) as port:
        with StubResolver((EXAMPLE_ADDRESS, port), _now(), anchors, TIMEOUT) as stub:
            assert isinstance(stub.chain(hierarchy.root_anchor).asker, ServerAsker)
        with StubResolver(
            (EXAMPLE_ADDRESS, port), _now(), anchors, TIMEOUT, hierarchy.hints, port
        ) as stub:
            assert isinstance(stub.chain(hierarchy.root_anchor).asker, IterativeAsker)
        with StubResolver((ALL_ADDRESS, port), _now(), anchors, TIMEOUT, hierarchy.hints) as stub:
            asker = stub.chain(hierarchy.root_anchor).asker
            assert isinstance(asker, ServerAsker)
            assert not asker.recursive


def test_names_between() -> None:
    names = names_between(dns.name.root, dns.name.from_text("a.b.c."))
    assert [name.to_text() for name in names] == ["c.", "b.c.", "a.b.c."]
    assert names_between(EXAMPLE, EXAMPLE) == []


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "alter_publish", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_resolve_command_names_the_broken_link(tmp_path: Path) -> None:
    hierarchy = build_hierarchy(_now(), Flaw.WRONG_DS)
    anchor = tmp_path / "root.ds"
    anchor.write_text(hierarchy.root_anchor_text, encoding="utf-8")
    with serving(hierarchy) as port:
        result = _cli(
            "resolve",
            "~blake",
            "--substrate",
            "example.com",
            "--server",
            f"{ALL_ADDRESS}:{port}",
            "--trust-anchor",
            str(anchor),
        )
    assert result.returncode == EXIT_VERIFICATION, result.stderr
    assert result.stderr.strip().endswith(
        "bogus: DNSSEC validation failed: com. DS for example.com.: no DS matches a KSK"
        f" of example.com. DNSKEY (tags {hierarchy.example_ksk.tag})"
    )


def test_resolve_validates_from_the_shipped_root_anchors_by_default(tmp_path: Path) -> None:
    """Without --trust-anchor, ``resolve`` validates from IANA's root anchors (issue 15:
    they ship as the default): this test root's keys are not IANA's, so the answer is
    bogus at the root; with the test root's anchor given it is secure (the test zone's
    TXT is no alter1 envelope: ``not-found`` then). It used to validate to nothing:
    ``insecure``."""
    hierarchy = build_hierarchy(_now())
    anchor = tmp_path / "root.ds"
    anchor.write_text(hierarchy.root_anchor_text, encoding="utf-8")
    resolve = ("resolve", "~blake", "--substrate", "example.com", "--json")
    with serving(hierarchy) as port:
        server = ("--server", f"{ALL_ADDRESS}:{port}")
        shipped = _cli(*resolve, *server)
        given = _cli(*resolve, *server, "--trust-anchor", str(anchor))
    assert json.loads(given.stdout)["dnssec"] == "secure", given.stdout
    assert json.loads(shipped.stdout)["dnssec"] == "bogus", shipped.stdout
    assert shipped.returncode == EXIT_VERIFICATION, shipped.stderr
    line = shipped.stderr.strip()
    assert ": ~blake: bogus: DNSSEC validation failed: " in line, line
    assert "no DNSKEY at . matches the trust anchor" in line, line


def test_resolve_command_rejects_bad_root_hints(tmp_path: Path) -> None:
    hints = tmp_path / "named.root"
    hints.write_text(". NS a.root.\n", encoding="utf-8")  # no address
    result = _cli(
        "resolve",
        "~blake",
        "--substrate",
        "example.com",
        "--server",
        "127.0.0.1:9",
        "--root-hints",
        str(hints),
    )
    assert result.returncode == EXIT_USAGE, result.stderr
    assert result.stderr.count("\n") == 1
    assert "no root server with an address" in result.stderr


def _edited(response: dns.message.Message, signer: dns.name.Name | None) -> dns.message.Message:
    """``response`` with every RRSIG dropped (``signer`` None) or re-labelled as ``signer``'s."""
    edited = dns.message.from_wire(response.to_wire())
    for section in (edited.answer, edited.authority):
        for rrset in [r for r in section if r.rdtype == dns.rdatatype.RRSIG]:
            section.remove(rrset)
            if signer is not None:
                section.append(
                    dns.rrset.from_rdata_list(
                        rrset.name, rrset.ttl, [rdata.replace(signer=signer) for rdata in rrset]
                    )
                )
    return edited


@pytest.mark.parametrize(
    ("signer", "reason"),
    [
        pytest.param(None, f"TXT at {OWNER} has no RRSIG", id="stripped"),
        pytest.param(
            "blake.example.com.",
            "answer signed by blake.example.com., not a zone cut"
            " (the chain from . ends at example.com.)",
            id="signer-below-the-zone",
        ),
    ],
)
def test_edited_answers_are_bogus_never_insecure(signer: str | None, reason: str) -> None:
    hierarchy = build_hierarchy(_now())
    name = dns.name.from_text(OWNER)
    with serving(hierarchy) as port:
        response = ask_server((ALL_ADDRESS, port), name, dns.rdatatype.TXT, timeout=TIMEOUT)
        with StubResolver((ALL_ADDRESS, port), _now(), (hierarchy.root_anchor,), TIMEOUT) as stub:
            assert stub.validate(response, name).status is SECURE
            forged = _edited(response, None if signer is None else dns.name.from_text(signer))
            validation = stub.validate(forged, name)
    assert (validation.status, validation.reason) == (BOGUS, reason)
