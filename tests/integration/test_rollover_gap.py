"""Full ZSK and KSK rollovers through simulated time, with no validation gap at any step.

Each rollover is driven through the library the CLI uses (``keyops.dnssec_rollover``
and ``keyops.dnssec_step`` at the times the previous step names), and ``sign``
publishes every state. At every step a validator that holds the previous step's
cached data must still validate the current answers:

* our validator, for every mix of the previous and current DS set, DNSKEY rrset
  and TXT/denial answers;
* unbound, with a real cache: a parent zone ``com.`` served beside the child
  holds the DS, unbound fills its cache from the previous step, the servers
  switch to the current step, and fresh names must come back with AD set.

Negative controls skip a step and must show the gap, so the check can fail.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import dns.message
import dns.name
import dns.query
import dns.rdatatype
import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish import pipeline
from alter_publish.definition.model import DNSSECSpec, load_zone
from alter_publish.dns.anchors import parse_trust_anchors
from alter_publish.dns.answerers import answerer_for
from alter_publish.dns.dnssec import SignatureWindow, ds_line, sign_records
from alter_publish.dns.records import from_zone
from alter_publish.dns.server import ZoneServer
from alter_publish.dns.validation import DNSSECStatus, validate_dnskeys, validate_response
from alter_publish.dns.zonekeys import ZoneKey, ZoneKeyRole, ZoneKeyState
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.keys import commands as keyops
from alter_publish.verify.proof import ABSENT_PROBE
from tests.conftest import NOW, Workspace
from tests.integration.dnssec_tools import Unbound, require_tool

ORIGIN = dns.name.from_text("example.com.")
PARENT = "com."
QUERY_TIMEOUT_SECONDS = 2.0
#: What the parent serves: DS of keys in these states (a submitted DS is not there yet; a
#: withdrawn one still is, until the registrar acts and ``--ds-published`` confirms it).
PARENT_DS_STATES = (
    ZoneKeyState.DS_PUBLISHED,
    ZoneKeyState.ACTIVE,
    ZoneKeyState.RETIRED,
    ZoneKeyState.DS_WITHDRAWN,
)


@dataclass(frozen=True)
class Published:
    """One published state of the rollover."""

    label: str
    at: int
    zone: dns.zone.Zone
    parent_ds: tuple[str, ...]  # master-file DS lines the parent serves


def _publish(ws: Workspace, label: str, at: int) -> Published:
    report = pipeline.sign([ws.zone_file], out=ws.out, keys=ws.keys, now=at, create_keys=at == NOW)
    assert report.committed, [p.to_mapping() for z in report.zones if (p := z.proof)]
    zone = pipeline.read_zone_file(ws.rendered, "example.com")
    keys = ws.keys.zones.load("example.com")
    parent_ds = tuple(
        ds_line(ORIGIN, key, 86400)
        for key in keys
        if key.role is ZoneKeyRole.KSK and key.state in PARENT_DS_STATES
    )
    return Published(label, at, zone, parent_ds)


Rollover = Callable[[Workspace], list[Published]]


def _zsk_rollover(ws: Workspace) -> list[Published]:
    zone = str(ws.zone_file)
    steps = [_publish(ws, "start", NOW)]
    at = NOW + 86400
    result = keyops.dnssec_rollover(zone, ZoneKeyRole.ZSK, keys=ws.keys, now=at)
    steps.append(_publish(ws, "new ZSK published", at))
    for label in ("new ZSK active, old retired", "old ZSK removed"):
        assert result.next_step is not None
        assert result.next_step.not_before is not None
        at = result.next_step.not_before
        result = keyops.dnssec_step(zone, keys=ws.keys, now=at)
        steps.append(_publish(ws, label, at))
    assert result.next_step is None
    return steps


def _ksk_rollover(ws: Workspace) -> list[Published]:
    zone = str(ws.zone_file)
    steps = [_publish(ws, "start", NOW)]
    at = NOW + 86400
    result = keyops.dnssec_rollover(zone, ZoneKeyRole.KSK, keys=ws.keys, now=at)
    assert len(result.ds_submit) == 2
    steps.append(_publish(ws, "new KSK, DS submitted", at))
    at += 3 * 3600  # the registrar took three hours
    result = keyops.dnssec_step(zone, keys=ws.keys, now=at, ds_published=True)
    steps.append(_publish(ws, "parent serves both DS", at))
    for label in ("new KSK active, old retired", "old KSK's DS withdrawn (parent: both)"):
        assert result.next_step is not None
        assert result.next_step.not_before is not None
        at = result.next_step.not_before
        result = keyops.dnssec_step(zone, keys=ws.keys, now=at)
        steps.append(_publish(ws, label, at))
    assert len(result.ds_remove) == 1
    at += 3 * 3600  # the registrar took three hours
    result = keyops.dnssec_step(zone, keys=ws.keys, now=at, ds_published=True)
    steps.append(_publish(ws, "old KSK removed, parent serves the new DS only", at))
    assert result.next_step is None
    return steps


# --- our validator over every mix of cached and current data ------------------------------


@dataclass(frozen=True)
class Answers:
    """What a step's server says: the DNSKEY response and TXT/denial responses."""

    dnskey: dns.message.Message
    txt: tuple[tuple[dns.name.Name, dns.message.Message], ...]


def _ask(
    address: tuple[str, int], name: dns.name.Name, rdtype: dns.rdatatype.RdataType
) -> dns.message.Message:
    query = dns.message.make_query(name, rdtype, want_dnssec=True)
    host, port = address
    return dns.query.tcp(query, host, port=port, timeout=QUERY_TIMEOUT_SECONDS)


def _owners(ws: Workspace) -> list[dns.name.Name]:
    spec = load_zone(ws.zone_file)
    names = [handle.owner for handle in spec.handles] + [ABSENT_PROBE.owner("example.com")]
    return [dns.name.from_text(name) for name in names]


def _answers(step: Published, owners: Sequence[dns.name.Name]) -> Answers:
    with ZoneServer([step.zone]) as server:
        dnskey = _ask(server.address, ORIGIN, dns.rdatatype.DNSKEY)
        txt = tuple((name, _ask(server.address, name, dns.rdatatype.TXT)) for name in owners)
    return Answers(dnskey, txt)


def _problems(
    ds: Sequence[str], answers_keys: Answers, answers_txt: Answers, now: int
) -> list[str]:
    (anchor,) = parse_trust_anchors("".join(line + "\n" for line in ds), where="parent DS")
    validation, dnskeys = validate_dnskeys(answers_keys.dnskey, anchor, now=now)
    if dnskeys is None:
        return [f"DNSKEY: {validation.status}: {validation.reason}"]
    found = []
    for name, response in answers_txt.txt:
        verdict = validate_response(
            response, name, dns.rdatatype.TXT, zone=ORIGIN, dnskeys=dnskeys, now=now
        )
        if verdict.status is not DNSSECStatus.SECURE:
            found.append(f"{name}: {verdict.status}: {verdict.reason}")
    return found


def _mixes(
    previous: Published, current: Published, before: Answers, after: Answers
) -> Iterator[tuple[str, list[str]]]:
    """Every mix of (DS, DNSKEY, answers) from the previous and the current step."""
    choices = (("previous", previous, before), ("current", current, after))
    for (ds_from, ds_step, _), (keys_from, _, keys), (txt_from, _, txt) in itertools.product(
        choices, repeat=3
    ):
        label = f"DS {ds_from}, DNSKEY {keys_from}, answers {txt_from}"
        yield label, _problems(ds_step.parent_ds, keys, txt, current.at)


@pytest.mark.parametrize("rollover", [_zsk_rollover, _ksk_rollover], ids=["zsk", "ksk"])
def test_every_step_validates_with_the_previous_steps_cached_data(
    workspace: Workspace, rollover: Rollover
) -> None:
    steps = rollover(workspace)
    owners = _owners(workspace)
    answers = [_answers(step, owners) for step in steps]
    gaps = [
        f"{previous.label} -> {current.label}: {label}: {problems}"
        for (previous, before), (current, after) in itertools.pairwise(
            zip(steps, answers, strict=True)
        )
        for label, problems in _mixes(previous, current, before, after)
        if problems
    ]
    assert gaps == []


def test_skipping_a_zsk_step_shows_a_gap(workspace: Workspace) -> None:
    """Negative control: DNSKEY cached before pre-publication cannot check the new ZSK."""
    steps = _zsk_rollover(workspace)
    owners = _owners(workspace)
    start, active = _answers(steps[0], owners), _answers(steps[2], owners)
    problems = _problems(steps[2].parent_ds, start, active, steps[2].at)
    assert len(problems) == len(owners)
    assert all("bogus" in problem for problem in problems)


def test_skipping_a_ksk_step_shows_a_gap(workspace: Workspace) -> None:
    """Negative control: a DS set cached before the new DS cannot anchor the new KSK."""
    steps = _ksk_rollover(workspace)
    owners = _owners(workspace)
    swapped = _answers(steps[3], owners)
    problems = _problems(steps[1].parent_ds, swapped, swapped, steps[3].at)
    assert problems
    assert problems[0].startswith("DNSKEY: bogus")


def test_timing_follows_rfc_7583(workspace: Workspace) -> None:
    steps = _zsk_rollover(workspace)
    spec: DNSSECSpec = load_zone(workspace.zone_file).dnssec
    ttl = 3600  # the example zone's TTL: DNSKEY and every signed rrset
    assert steps[2].at - steps[1].at == spec.propagation_delay + ttl
    assert steps[3].at - steps[2].at == spec.propagation_delay + min(ttl, spec.signature_validity)


# --- unbound with a real cache ----------------------------------------------------------


def _parent_keys() -> tuple[ZoneKey, ...]:
    return (
        ZoneKey("com", ZoneKeyRole.KSK, NOW, Ed25519PrivateKey.generate()),
        ZoneKey("com", ZoneKeyRole.ZSK, NOW, Ed25519PrivateKey.generate()),
    )


def _parent_zone(keys: Sequence[ZoneKey], ds: Sequence[str], at: int) -> dns.zone.Zone:
    """``com.``: delegates example.com to our child server and serves its DS."""
    text = "\n".join(
        [
            f"{PARENT} 3600 IN SOA ns.{PARENT} hostmaster.{PARENT} {at} 7200 3600 1209600 300",
            f"{PARENT} 3600 IN NS ns.{PARENT}",
            f"ns.{PARENT} 3600 IN A 127.0.0.1",
            "example.com. 3600 IN NS ns1.example.com.",
            "ns1.example.com. 3600 IN A 192.0.2.53",
            *ds,
            "",
        ]
    )
    unsigned = parse_zone_text(text, "com", where="parent")
    window = SignatureWindow.fresh(at, 14 * 86400)
    signed = sign_records(
        from_zone(unsigned), keys=keys, spec=DNSSECSpec(), window=window, dnskey_ttl=3600
    )
    return parse_zone_text(text + signed.records_text, "com", where="parent")


def _unbound_transition(
    tmp: Path,
    previous: Published,
    current: Published,
    owners: Sequence[dns.name.Name],
    *,
    cache_dnskey: bool,
) -> list[str]:
    """Fill unbound's cache at ``previous``, switch to ``current``, ask fresh names.

    Returns:
        The names that did not come back validated (AD), with unbound's rcode.
    """
    parent_keys = _parent_keys()
    anchor = ds_line(dns.name.from_text(PARENT), parent_keys[0], 3600)
    child = ZoneServer([previous.zone])
    parent = ZoneServer([_parent_zone(parent_keys, previous.parent_ds, previous.at)])
    with child, parent:
        unbound = Unbound(
            tmp,
            zone="example.com.",
            upstream=child.address,
            trust_anchors=[anchor],
            at=current.at,
            more_stubs=[(PARENT, parent.address)],
        )
        with unbound:
            filled = [unbound.query("example.com.", "DS")]
            if cache_dnskey:
                filled.append(unbound.query(owners[0].to_text(), "TXT"))
            assert all(answer.ad for answer in filled), filled
            child.load_answerer(answerer_for([current.zone]))
            parent_zone = _parent_zone(parent_keys, current.parent_ds, current.at)
            parent.load_answerer(answerer_for([parent_zone]))
            failed = []
            for name in owners[1:]:
                answer = unbound.query(name.to_text(), "TXT")
                if not answer.ad or answer.rcode not in ("NOERROR", "NXDOMAIN"):
                    failed.append(f"{name} {answer.rcode} ad={answer.ad}")
            return failed


@pytest.mark.parametrize("rollover", [_zsk_rollover, _ksk_rollover], ids=["zsk", "ksk"])
def test_unbound_sees_no_gap_at_any_step(
    workspace: Workspace, tmp_path: Path, rollover: Rollover
) -> None:
    require_tool("unbound")
    steps = rollover(workspace)
    owners = _owners(workspace)
    gaps = []
    for number, (previous, current) in enumerate(itertools.pairwise(steps)):
        for cache_dnskey in (False, True):
            failed = _unbound_transition(
                tmp_path / f"unbound-{number}-{cache_dnskey}",
                previous,
                current,
                owners,
                cache_dnskey=cache_dnskey,
            )
            if failed:
                cached = "DS+DNSKEY" if cache_dnskey else "DS"
                gaps.append(f"{previous.label} -> {current.label} ({cached} cached): {failed}")
    assert gaps == []


def test_unbound_shows_the_gap_when_a_zsk_step_is_skipped(
    workspace: Workspace, tmp_path: Path
) -> None:
    """Negative control: with the start's DNSKEY cached, answers by the new ZSK fail."""
    require_tool("unbound")
    steps = _zsk_rollover(workspace)
    owners = _owners(workspace)
    failed = _unbound_transition(tmp_path, steps[0], steps[2], owners, cache_dnskey=True)
    assert len(failed) == len(owners) - 1
