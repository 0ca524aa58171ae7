"""The parent's side of what the world sees (``check``, ``dnssec step --ds-published``):
the DS set and the delegation (NS, glue) every parent name server serves for the zone,
judged key by key against the zone's KSKs."""

from __future__ import annotations

from collections.abc import Sequence

import dns.dnssec
import dns.exception
import dns.message
import dns.name
import dns.rdatatype
from dns.rdtypes.ANY.DNSKEY import DNSKEY
from dns.rdtypes.ANY.DS import DS

from alter_publish.errors import ResolveError
from alter_publish.verify.world import (
    Expected,
    Finding,
    Located,
    Prober,
    SkippedError,
    answer_of,
    ds_text,
)


def check_parent(
    zone: str, located: Located, expected: Expected, prober: Prober, *, signed: bool
) -> list[Finding]:
    """Ask every address of every parent name server for the zone's DS and delegation."""
    findings: list[Finding] = []
    apex = dns.name.from_text(zone)
    for server in located.parent_servers:
        if not server.addresses:
            findings.append(Finding("parent-unreachable", "no address found", server.name))
        for address in server.addresses:
            where = f"{server.name} ({address})"
            try:
                ds_reply = prober.ask(address, apex, dns.rdatatype.DS)
                ns_reply = prober.ask(address, apex, dns.rdatatype.NS)
            except SkippedError:
                continue
            except ResolveError as exc:
                findings.append(Finding("parent-unreachable", exc.what, where))
                continue
            findings += _ds_findings(ds_reply, apex, expected, signed=signed, where=where)
            findings += _delegation_findings(ns_reply, apex, expected, where=where)
    return findings


def _ds_findings(
    reply: dns.message.Message, apex: dns.name.Name, expected: Expected, *, signed: bool, where: str
) -> list[Finding]:
    """The DS set a parent server serves, judged key by key (any digest type: a registry
    may keep SHA-384 where the build's file has SHA-256)."""
    rrset = answer_of(reply, apex, dns.rdatatype.DS)
    served: list[DS] = list(rrset) if rrset is not None else []
    if not signed:
        if not served:
            return []
        texts = ", ".join(ds_text(ds) for ds in served)
        return [
            Finding(
                "ds-unsigned-zone",
                f"serves DS {texts} for an unsigned zone: validating resolvers answer SERVFAIL",
                where,
            )
        ]
    if not served:
        return [
            Finding(
                "ds-missing",
                "serves no DS: the zone is insecure for every validating resolver",
                where,
            )
        ]
    current = [ds for ds in served if _matches(apex, expected.ksks, ds)]
    findings = [
        _other_ds(apex, ds, expected, current=bool(current), where=where)
        for ds in served
        if ds not in current
    ]
    if not current and not findings:
        findings.append(Finding("ds-mismatch", "serves no DS of the zone's KSKs", where))
    lacking = [key for key in expected.ksks if not any(_ds_of(apex, key, ds) for ds in served)]
    if current and lacking:
        tags = ", ".join(f"ksk-{dns.dnssec.key_id(key)}" for key in lacking)
        findings.append(
            Finding(
                "ds-not-built",
                f"serves no DS of {tags} (in the build's DS file): a KSK rollover's new DS "
                "not at the parent yet?",
                where,
            )
        )
    return findings


def _other_ds(
    apex: dns.name.Name, ds: DS, expected: Expected, *, current: bool, where: str
) -> Finding:
    """The finding for a served DS that matches no KSK the parent should vouch for."""
    text = ds_text(ds)
    if _matches(apex, expected.retired, ds):
        if current:
            return Finding("ds-stale", f"still serves DS {text} of a retired KSK", where)
        return Finding("ds-retired", f"serves only DS {text} of a retired KSK", where)
    if current:
        return Finding("ds-extra", f"also serves DS {text}, which matches no KSK", where)
    return Finding(
        "ds-mismatch",
        f"serves DS {text}, which matches no KSK of the zone "
        f"(expected {' / '.join(sorted(expected.ds))})",
        where,
    )


def _matches(apex: dns.name.Name, keys: Sequence[DNSKEY], ds: DS) -> bool:
    return any(_ds_of(apex, key, ds) for key in keys)


def _delegation_findings(
    reply: dns.message.Message, apex: dns.name.Name, expected: Expected, *, where: str
) -> list[Finding]:
    """The parent's NS set (a referral: authority section) and its glue, against the
    zone's own."""
    rrsets = [*reply.answer, *reply.authority]
    ns = next((r for r in rrsets if r.name == apex and r.rdtype == dns.rdatatype.NS), None)
    if ns is None:
        return [Finding("ns-mismatch", "gives no NS records for the zone", where)]
    names = sorted(rdata.target.to_text().lower() for rdata in ns)
    findings: list[Finding] = []
    if names != sorted(name.lower() for name in expected.ns):
        findings.append(
            Finding(
                "ns-mismatch",
                f"delegates to {', '.join(names)}; the zone says {', '.join(sorted(expected.ns))}",
                where,
            )
        )
    glue: dict[str, set[str]] = {}
    for rrset in reply.additional:
        if rrset.rdtype in (dns.rdatatype.A, dns.rdatatype.AAAA):
            glue.setdefault(rrset.name.to_text().lower(), set()).update(r.address for r in rrset)
    for name, addresses in sorted(glue.items()):
        own = expected.glue.get(name)
        if own is not None and set(own) != addresses:
            findings.append(
                Finding(
                    "glue-mismatch",
                    f"glue for {name} is {', '.join(sorted(addresses))}; "
                    f"the zone says {', '.join(sorted(own))}",
                    where,
                )
            )
    return findings


def parent_missing_ds(
    zone: str, located: Located, dnskeys: Sequence[DNSKEY], prober: Prober
) -> list[str]:
    """The parent servers (``name (address)``) that do not serve a DS for each of
    ``dnskeys`` (any digest type, recomputed from the key), or give no answer; IPv6
    addresses are left out when IPv6 does not work from here."""
    apex = dns.name.from_text(zone)
    return [
        where
        for where, served in _parent_ds_sets(apex, located, prober)
        if served is None or not all(any(_ds_of(apex, key, ds) for ds in served) for key in dnskeys)
    ]


def parent_serving_ds(
    zone: str, located: Located, dnskeys: Sequence[DNSKEY], prober: Prober
) -> list[str]:
    """The parent servers (``name (address)``) that still serve a DS of any of
    ``dnskeys`` (a KSK whose DS was withdrawn), or give no answer (they may still serve
    it); IPv6 addresses are left out when IPv6 does not work from here."""
    apex = dns.name.from_text(zone)
    return [
        where
        for where, served in _parent_ds_sets(apex, located, prober)
        if served is None or any(_matches(apex, dnskeys, ds) for ds in served)
    ]


def _parent_ds_sets(
    apex: dns.name.Name, located: Located, prober: Prober
) -> list[tuple[str, list[DS] | None]]:
    """Each parent server address (``name (address)``) with the DS set it serves for
    ``apex``; None where it gave no answer or has no address."""
    found: list[tuple[str, list[DS] | None]] = []
    for server in located.parent_servers:
        if not server.addresses:
            found.append((f"{server.name} (no address found)", None))
        for address in server.addresses:
            where = f"{server.name} ({address})"
            try:
                reply = prober.ask(address, apex, dns.rdatatype.DS)
            except SkippedError:
                continue
            except ResolveError:
                found.append((where, None))
                continue
            rrset = answer_of(reply, apex, dns.rdatatype.DS)
            found.append((where, list(rrset) if rrset is not None else []))
    return found


def _ds_of(apex: dns.name.Name, dnskey: DNSKEY, ds: DS) -> bool:
    """True when ``ds`` is a DS of ``dnskey`` (its digest type recomputed)."""
    try:
        return bool(dns.dnssec.make_ds(apex, dnskey, ds.digest_type) == ds)
    except (dns.exception.DNSException, ValueError):
        return False
