"""``verify``'s whole-zone check: every record of a signed zone file is what ``sign`` made.

The loopback proof asks for each handle's record; a hand edit anywhere else in the
file (an A record, a TTL, a record added or removed) answers no question it asks.
:func:`check_zone` reads the whole zone, as ``ldns-verify-zone`` and ``dnssec-verify``
do, and raises on the first record (in canonical order) that fails:

1. the DNSKEY rrset is signed by one of its own KSKs (SEP flag); that the KSK is the
   one the zone's DS names is the proof's check;
2. every authoritative rrset (at a delegation only DS and NSEC) has an RRSIG that
   validates with those keys at ``now`` (:class:`~alter_publish.dns.validation.RRsetValidator`,
   the validator the proof uses), its TTL is the original TTL the RRSIG signs, and no
   RRSIG is left over an rrset that is gone;
3. the NSEC or NSEC3 records are exactly those the signer
   (:func:`~alter_publish.dns.dnssec.denial_chain`) makes for the zone's names and types:
   a record added or removed changes a type bitmap or the chain.

Unsigned zones have none of this; ``verify`` compares the file's digest with the one
``sign`` recorded (see :mod:`alter_publish.pipeline.verification`) for every zone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, NoReturn, cast

import dns.message
import dns.name
import dns.node
import dns.rdata
import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.rdtypes.ANY.DNSKEY
import dns.rdtypes.ANY.NSEC
import dns.rdtypes.ANY.NSEC3
import dns.rdtypes.ANY.RRSIG
import dns.rdtypes.dnskeybase
import dns.rrset
import dns.zone

from alter_publish.definition.model import DNSSECSpec
from alter_publish.dns.anchors import TrustAnchor
from alter_publish.dns.denial import denial_chain
from alter_publish.dns.records import Labels, RRs, ZoneRecords, canonical_key, name_text
from alter_publish.dns.validation import DNSSECStatus, RRsetValidator, validate_dnskeys
from alter_publish.errors import SigningError, VerificationError

__all__ = ["RECORD_TEXT_MAX_CHARS", "ZONE_CHECK_CATEGORY", "check_zone"]

#: The verification category of a zone file that is not the zone ``sign`` proved (an
#: RRSIG that does not validate has the validator's: ``bogus``).
ZONE_CHECK_CATEGORY: Final = "zone-changed"
#: Record texts in messages are cut to this length (handle TXT records are long).
RECORD_TEXT_MAX_CHARS: Final = 120

_IN: Final = dns.rdataclass.IN
_NS: Final = dns.rdatatype.NS
_DS: Final = dns.rdatatype.DS
_RRSIG: Final = dns.rdatatype.RRSIG
_NSEC: Final = dns.rdatatype.NSEC
_NSEC3: Final = dns.rdatatype.NSEC3
_NSEC3PARAM: Final = dns.rdatatype.NSEC3PARAM
_DNSKEY: Final = dns.rdatatype.DNSKEY
_DENIAL: Final = frozenset({_NSEC, _NSEC3, _NSEC3PARAM})
_SEP: Final = int(dns.rdtypes.dnskeybase.Flag.SEP)
_ZONE_KEY: Final = int(dns.rdtypes.dnskeybase.Flag.ZONE)

_Nodes = Sequence[tuple[dns.name.Name, dns.node.Node]]


def check_zone(
    zone: dns.zone.Zone,
    *,
    dnssec: DNSSECSpec,
    now: int,
    where: str,
) -> None:
    """Check every signature and the denial chain of a signed zone read from a file.

    Args:
        zone: the zone as parsed (absolute names).
        dnssec: the zone's DNSSEC settings (denial, NSEC3 parameters); nothing is
            checked when signing is off.
        now: the time the signatures must be valid at.
        where: the zone file, for messages.

    Raises:
        VerificationError: names the first record that is not as ``sign`` made it.
    """
    if not dnssec.enabled:
        return
    origin = zone.origin
    assert origin is not None  # noqa: S101 (parse_zone_text sets the origin)
    nodes = sorted(zone.nodes.items(), key=lambda item: item[0])  # canonical order
    validator = _zone_keys(zone, origin, now, where)
    cuts = frozenset(
        name for name, node in nodes if name != origin and node.get_rdataset(_IN, _NS) is not None
    )
    for name, node in nodes:
        if not _occluded(name, origin, cuts):
            _check_signatures(validator, name, node, delegation=name in cuts, where=where)
    _check_denial(nodes, origin, dnssec, where)


def _fail(where: str, record: str, problem: str, category: str = ZONE_CHECK_CATEGORY) -> NoReturn:
    raise VerificationError(f"{record}: {problem}", where=where, category=category)


def _record(name: dns.name.Name, rdataset: dns.rdataset.Rdataset) -> str:
    """The first record of an rrset as a master-file line (cut short), noting the rest."""
    rdtype = dns.rdatatype.to_text(rdataset.rdtype)
    first = next(iter(rdataset), None)
    text = f"{name} {rdataset.ttl} IN {rdtype}"
    if first is not None:
        text += f" {first.to_text()}"
    if len(text) > RECORD_TEXT_MAX_CHARS:
        text = text[: RECORD_TEXT_MAX_CHARS - 3] + "..."
    if len(rdataset) > 1:
        text += f" (and {len(rdataset) - 1} more {rdtype})"
    return text


def _occluded(name: dns.name.Name, origin: dns.name.Name, cuts: frozenset[dns.name.Name]) -> bool:
    """True for names below a delegation (glue): not authoritative, never signed."""
    if not cuts:
        return False
    parent = name
    while parent != origin and len(parent) > len(origin):
        parent = parent.parent()
        if parent in cuts:
            return True
    return False


def _zone_keys(zone: dns.zone.Zone, origin: dns.name.Name, now: int, where: str) -> RRsetValidator:
    """The validator of the zone's keys, once its DNSKEY rrset is found signed by a KSK."""
    dnskeys = zone.get_rrset(origin, _DNSKEY)
    if dnskeys is None:
        _fail(where, f"{origin} DNSKEY", "missing: the zone is signed")
    rrsigs = zone.get_rrset(origin, _RRSIG, _DNSKEY)
    ksks = tuple(
        cast("dns.rdtypes.ANY.DNSKEY.DNSKEY", key)
        for key in dnskeys
        if key.flags & _SEP and key.flags & _ZONE_KEY
    )
    anchor = TrustAnchor(origin, (), ksks)  # the KSKs as they are: DS vs KSK is the proof's
    response = dns.message.Message()
    response.answer = [dnskeys] if rrsigs is None else [dnskeys, rrsigs]
    verdict, _ = validate_dnskeys(response, anchor, now=now)
    if verdict.status is not DNSSECStatus.SECURE:
        _fail(where, _record(origin, dnskeys), verdict.reason, verdict.status)
    return RRsetValidator.make(origin, dnskeys, now=now)


def _check_signatures(
    validator: RRsetValidator,
    name: dns.name.Name,
    node: dns.node.Node,
    *,
    delegation: bool,
    where: str,
) -> None:
    """Every rrset at ``name`` that must be signed is, with its TTL; no RRSIG is stray."""
    sigs = {rds.covers: rds for rds in node.rdatasets if rds.rdtype == _RRSIG}
    for rdataset in node.rdatasets:
        rdtype = int(rdataset.rdtype)
        if rdtype == _RRSIG or (delegation and rdtype not in (_DS, _NSEC)):
            continue
        sig_set = sigs.get(rdtype)
        if sig_set is not None:
            for rdata in sig_set:
                original = cast("dns.rdtypes.ANY.RRSIG.RRSIG", rdata).original_ttl
                if original != rdataset.ttl:
                    _fail(
                        where,
                        _record(name, rdataset),
                        f"TTL {rdataset.ttl} is not {original}, the original TTL its RRSIG signs",
                    )
            if sig_set.ttl != rdataset.ttl:
                _fail(
                    where,
                    _record(name, sig_set),
                    f"TTL {sig_set.ttl} is not the TTL {rdataset.ttl} of the rrset it covers",
                )
        verdict = validator.validate(name, rdataset, sig_set)
        if verdict.status is not DNSSECStatus.SECURE:
            _fail(where, _record(name, rdataset), verdict.reason, verdict.status)
    for covered, sig_set in sigs.items():
        if node.get_rdataset(_IN, covered) is None:
            _fail(
                where,
                f"{name} IN {dns.rdatatype.to_text(covered)}",
                f"not in the zone, but an RRSIG over it is ({_record(name, sig_set)})",
            )


# --- the denial chain ---------------------------------------------------------------


def _labels(name: dns.name.Name) -> Labels:
    return tuple(label.lower() for label in name.labels)


def _split(
    nodes: _Nodes, origin: dns.name.Name, dnssec: DNSSECSpec
) -> tuple[ZoneRecords, dict[Labels, tuple[dns.name.Name, dns.rdataset.Rdataset]]]:
    """The zone without its signatures and denial records (as the signer was given it,
    with the DNSKEY rrset), and its denial rrsets by owner."""
    depth = len(origin) + 1
    owners: dict[Labels, tuple[RRs, ...]] = {}
    names: dict[Labels, str] = {}
    denial: dict[Labels, tuple[dns.name.Name, dns.rdataset.Rdataset]] = {}
    for name, node in nodes:
        labels = _labels(name)
        rrsets = []
        for rdataset in node.rdatasets:
            rdtype = int(rdataset.rdtype)
            if rdtype in _DENIAL:
                denial[labels] = (name, rdataset)
            elif rdtype != _RRSIG:
                wires = tuple(rdata.to_digestable(origin) for rdata in rdataset)
                rrsets.append(RRs(rdtype, rdataset.ttl, wires))
        hashed = (
            dnssec.denial == "nsec3"
            and len(name) == depth
            and node.get_rdataset(_IN, _NSEC3) is not None
        )
        if rrsets or not (hashed or labels in denial):
            owners[labels] = tuple(rrsets)
            names[labels] = name.to_text()
    return ZoneRecords(_labels(origin), owners, names), denial


def _types(rdata: dns.rdata.Rdata) -> frozenset[int]:
    windows = cast("dns.rdtypes.ANY.NSEC.NSEC | dns.rdtypes.ANY.NSEC3.NSEC3", rdata).windows
    return frozenset(
        window * 256 + index * 8 + bit
        for window, bitmap in windows
        for index, octet in enumerate(bitmap)
        for bit in range(8)
        if octet & (0x80 >> bit)
    )


def _type_text(rdtype: int) -> str:
    return dns.rdatatype.to_text(dns.rdatatype.RdataType.make(rdtype))


def _check_denial(nodes: _Nodes, origin: dns.name.Name, dnssec: DNSSECSpec, where: str) -> None:
    """The zone's NSEC/NSEC3 records are exactly those its names and types make."""
    records, actual = _split(nodes, origin, dnssec)
    try:
        chain = denial_chain(records, dnssec)
    except SigningError as exc:
        _fail(where, f"{origin} SOA", exc.what)
    by_labels = _by_labels(nodes)
    kind = "NSEC3" if dnssec.denial == "nsec3" else "NSEC"
    for labels in sorted(chain.records.keys() | actual.keys(), key=canonical_key):
        expected = chain.records.get(labels)
        found = actual.get(labels)
        source = chain.sources.get(labels, labels)
        if found is None:
            assert expected is not None  # noqa: S101 (one of the two is there)
            node_name = name_text(source)
            _fail(
                where,
                node_name,
                f"has no {_type_text(expected.rdtype)} (the {kind} chain skips it)",
            )
        owner, rdataset = found
        if expected is None:
            problem = (
                "no name of the zone hashes to it (a name was removed?)"
                if rdataset.rdtype == _NSEC3
                else f"not in the {kind} chain the zone's names make (a name was removed?)"
            )
            _fail(where, _record(owner, rdataset), problem)
        if rdataset.rdtype != expected.rdtype:
            _fail(where, _record(owner, rdataset), f"the zone is signed with {kind}")
        if rdataset.ttl != expected.ttl:
            _fail(
                where,
                _record(owner, rdataset),
                f"TTL {rdataset.ttl} is not the zone's negative TTL {expected.ttl}",
            )
        if {rdata.to_digestable(origin) for rdata in rdataset} != set(expected.wires):
            _mismatch(where, owner, rdataset, expected, by_labels.get(source), source)


def _by_labels(nodes: _Nodes) -> Mapping[Labels, tuple[dns.name.Name, dns.node.Node]]:
    return {_labels(name): (name, node) for name, node in nodes}


def _mismatch(
    where: str,
    owner: dns.name.Name,
    rdataset: dns.rdataset.Rdataset,
    expected: RRs,
    source: tuple[dns.name.Name, dns.node.Node] | None,
    source_labels: Labels,
) -> NoReturn:
    """Say how a denial record differs from the one the zone makes, naming the record
    added or removed where the type bitmap shows it."""
    record = _record(owner, rdataset)
    wire = expected.wires[0]
    made = dns.rdata.from_wire(
        _IN, dns.rdatatype.RdataType.make(expected.rdtype), wire, 0, len(wire)
    )
    if expected.rdtype == _NSEC3PARAM or len(rdataset) != 1:
        _fail(where, record, f"not the {_type_text(expected.rdtype)} the zone makes ({made})")
    found = next(iter(rdataset))
    kind = _type_text(expected.rdtype)
    have, want = _types(found), _types(made)
    for rdtype in sorted(want - have):
        at = (
            source[1].get_rdataset(_IN, dns.rdatatype.RdataType.make(rdtype))
            if source is not None
            else None
        )
        name = source[0] if source is not None else dns.name.Name(source_labels)
        added = _record(name, at) if at is not None else f"{name} {_type_text(rdtype)}"
        _fail(where, added, f"not in the {kind} type bitmap at {owner} (added?)")
    for rdtype in sorted(have - want):
        name = source[0] if source is not None else dns.name.Name(source_labels)
        _fail(
            where,
            f"{name} IN {_type_text(rdtype)}",
            f"in the {kind} type bitmap at {owner} but not in the zone (removed?)",
        )
    if isinstance(made, dns.rdtypes.ANY.NSEC.NSEC):
        _fail(where, record, f"next name should be {made.next} (a name was added or removed?)")
    _fail(where, record, f"not the {kind} the zone makes ({made})")
