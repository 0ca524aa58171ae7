"""TTLs that outlive their signatures (``check``'s ``ttl-beyond-signature``), asked at
every address of every name server of the zone.

A cache may keep an RRset for its TTL; when that reaches past the expiration of the
RRSIG it was served with (``now + TTL > expiration``), a cache that does not cap the
TTL (RFC 4035 5.3.3 says a validator must) hands out data a validator then finds
expired: the zone was not re-signed in time, or a TTL is longer than the signatures
last. DNSViz reports the same (``TTL_BEYOND_EXPIRATION``).

Asked, for each address: the apex SOA, DNSKEY and NS sets and every handle's alter1 TXT
set (with spread renewals each owner's signatures have their own window). Expired
signatures are left to ``signatures-expired`` and the proof's ``records-differ``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype

from alter_publish.definition.model import ZoneSpec
from alter_publish.definition.values import format_span, format_utc
from alter_publish.errors import ResolveError
from alter_publish.verify.world import Finding, Located, Prober

#: The apex rrsets asked at every address besides the handles' TXT sets.
_APEX_TYPES = (dns.rdatatype.SOA, dns.rdatatype.DNSKEY, dns.rdatatype.NS)


#: Findings of ``check_servers`` after which an address is not asked again here.
_SKIP_CODES = frozenset({"unreachable", "lame"})


def check_ttls(
    spec: ZoneSpec,
    located: Located,
    prober: Prober,
    *,
    now: int,
    servers: Sequence[Finding] = (),
) -> list[Finding]:
    """``ttl-beyond-signature`` for each signed RRset, at each address of each of the
    zone's name servers, whose TTL reaches past its latest RRSIG's expiration at ``now``.

    An address ``servers`` (``check_servers``' findings) reports unreachable or lame is
    not asked again (each would wait out the timeout once more); one that stops
    answering here is left at that.
    """
    skip = {finding.server for finding in servers if finding.code in _SKIP_CODES}
    if not spec.dnssec.enabled:
        return []
    apex = dns.name.from_text(spec.origin)
    questions = [(apex, rdtype) for rdtype in _APEX_TYPES]
    questions += [(dns.name.from_text(h.owner), dns.rdatatype.TXT) for h in spec.handles]
    findings: list[Finding] = []
    for server in located.servers:
        for address in server.addresses:
            where = f"{server.name} ({address})"
            if where in skip:
                continue
            for name, rdtype in questions:
                try:
                    reply = prober.ask(address, name, rdtype)
                except ResolveError:
                    break
                if reply.rcode() != dns.rcode.NOERROR or not reply.flags & dns.flags.AA:
                    continue
                findings += [Finding("ttl-beyond-signature", m, where) for m in _beyond(reply, now)]
    return findings


def _beyond(reply: dns.message.Message, now: int) -> Iterator[str]:
    """One message per answer RRset whose TTL outlives its latest unexpired RRSIG."""
    for rrset in reply.answer:
        if rrset.rdtype == dns.rdatatype.RRSIG:
            continue
        expirations = [
            rdata.expiration
            for sigs in reply.answer
            if sigs.rdtype == dns.rdatatype.RRSIG and sigs.name == rrset.name
            for rdata in sigs
            if rdata.type_covered == rrset.rdtype
        ]
        if not expirations or max(expirations) <= now:
            continue
        expiration = max(expirations)
        if now + rrset.ttl > expiration:
            kind = dns.rdatatype.to_text(rrset.rdtype)
            yield (
                f"{rrset.name} {kind} has TTL {rrset.ttl} s, but its signature expires in "
                f"{format_span(expiration - now)} ({format_utc(expiration)}): a cache may "
                "keep it past that; re-sign sooner (dnssec.refresh) or lower the TTL"
            )
