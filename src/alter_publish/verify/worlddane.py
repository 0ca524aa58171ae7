"""``check`` at the resolver endpoints: DANE (RFC 6698, 7671), as the world sees it.

Each ``https`` endpoint the zone's records name: its TLSA looked up and validated from
the trust anchor, and the certificate it presents compared with it
(:mod:`alter_publish.verify.dane`), as :class:`~alter_publish.verify.world.Finding`.
"""

from __future__ import annotations

from collections.abc import Mapping

from alter_publish.definition.model import ZoneSpec
from alter_publish.definition.tls import TLSASet
from alter_publish.verify.dane import DaneLookup, DaneVerdict, check_endpoint, endpoint_of
from alter_publish.verify.world import Finding

__all__ = ["check_dane"]

#: The finding of each DANE verdict (None: nothing to say when the definition names no
#: TLS for the endpoint; see :func:`check_dane`).
_DANE_CODES: Mapping[str, str] = {
    "match": "dane-match",
    "mismatch": "dane-mismatch",
    "unreachable": "dane-unreachable",
    "bogus-tlsa": "dane-tlsa-bogus",
    "lookup-failed": "dane-lookup-failed",
    "unsupported": "dane-unsupported",
    "no-tlsa": "dane-tlsa-missing",
    "insecure-tlsa": "dane-tlsa-insecure",
}


def check_dane(spec: ZoneSpec, lookup: DaneLookup, *, timeout: float) -> list[Finding]:
    """Every ``https`` resolver endpoint the zone's records name (and each its ``tls``
    names): its TLSA looked up and validated from the trust anchor, and where there is
    a secure rrset, the certificate the endpoint presents compared with it. An endpoint
    the definition gives no ``tls`` is reported only when it has TLSA records."""
    declared = {(found.host.rstrip("."), found.port): found for found in spec.tlsa_sets()}
    endpoints = set(declared)
    for handle in spec.handles:
        endpoint = endpoint_of(handle.resolver) if handle.resolver else "none"
        if not isinstance(endpoint, str):
            endpoints.add(endpoint)
    findings: list[Finding] = []
    for host, port in sorted(endpoints):
        verdict = check_endpoint(f"https://{host}:{port}/", lookup, timeout)
        findings += _dane_findings(verdict, declared.get((host, port)))
    return findings


def _dane_findings(verdict: DaneVerdict, declared: TLSASet | None) -> list[Finding]:
    where = f"https://{verdict.host}:{verdict.port}"
    if declared is None and verdict.category in ("no-tlsa", "insecure-tlsa"):
        return []  # no usable TLSA, and the definition asks for none
    found = [Finding(_DANE_CODES[verdict.category], verdict.detail, where)]
    secure = verdict.category in ("match", "mismatch", "unreachable", "unsupported")
    if declared is not None and declared.inside and secure:
        served = set(verdict.records)
        if served != set(declared.records):
            wanted = " / ".join(record.to_text() for record in declared.records)
            shown = " / ".join(sorted(record.to_text() for record in served))
            message = f"{declared.owner} serves TLSA {shown}; the definition's tls gives {wanted}"
            found.append(Finding("dane-tlsa-differs", message, where))
    return found
