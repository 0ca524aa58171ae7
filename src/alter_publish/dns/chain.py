"""The chain of trust from the closest trust anchor down to a zone (RFC 4035 section 5).

:class:`ChainWalker` starts at the configured anchor closest above a name, validates
that zone's DNSKEY rrset against it, and walks down one label at a time. At each name
it asks the current zone's servers (through an :class:`~alter_publish.dns.iterate.Asker`)
for the DS rrset, validated with the current zone's keys:

* a DS rrset: a secure zone cut. The child's DNSKEY rrset must be signed by a key
  that one of those DS records matches; the walk continues in the child.
* a DS denial (NSEC/NSEC3) whose bitmap lists NS: an insecure delegation, so the
  name and everything below it is ``insecure``.
* a DS denial without NS: no cut here; NXDOMAIN: nothing below exists.
* anything that does not validate: ``bogus``, naming the link that broke as
  ``delv +vtrace`` does (``com. DS for example.com.: ...``).

The walk's result, a :class:`ZoneTrust`, carries the validated DS of the deepest zone as
a derived :class:`~alter_publish.dns.anchors.TrustAnchor`: a caller validates the
DNSKEY rrset that *its* server serves against it, then answers with those keys
(:func:`alter_publish.dns.validation.validate_response`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import dns.rrset

from alter_publish.dns.anchors import TrustAnchor, anchor_for
from alter_publish.dns.iterate import Asker
from alter_publish.dns.validation import (
    DNSSECStatus,
    proves_delegation,
    validate_dnskeys,
    validate_response,
)

__all__ = ["ChainWalker", "ZoneTrust", "names_between"]


@dataclass(frozen=True, slots=True)
class ZoneTrust:
    """What the chain of trust says about the zone a name is in.

    Attributes:
        zone: the deepest zone the walk reached (secure), or where it stopped.
        status: secure, insecure (an insecure delegation, or no anchor) or bogus.
        reason: empty when secure; otherwise the link that is insecure or broke.
        anchor: when secure, what vouches for ``zone``'s keys: the configured anchor,
            or the DS rrset validated at the parent (``source`` names that link).
        trace: one line per link checked, in order (as ``delv +vtrace``).
    """

    zone: dns.name.Name
    status: DNSSECStatus
    reason: str
    anchor: TrustAnchor | None = None
    trace: tuple[str, ...] = ()


def names_between(zone: dns.name.Name, name: dns.name.Name) -> list[dns.name.Name]:
    """The names below ``zone`` down to ``name`` (inclusive), top first."""
    return [dns.name.Name(name.labels[-depth:]) for depth in range(len(zone) + 1, len(name) + 1)]


class _Kind(Enum):
    CUT = "cut"
    NOT_CUT = "not a cut"
    NO_NAME = "does not exist"
    INSECURE = "insecure"
    BOGUS = "bogus"


@dataclass(frozen=True, slots=True)
class _Step:
    """What the parent says about one name below it."""

    kind: _Kind
    reason: str = ""
    anchor: TrustAnchor | None = None


@dataclass
class ChainWalker:
    """Walks the chain of trust through ``asker`` at time ``now``, caching each link.

    Raises nothing for bad data (it comes back as ``bogus``); network failures raise
    :class:`~alter_publish.errors.ResolveError` from the asker.
    """

    asker: Asker
    anchors: tuple[TrustAnchor, ...]
    now: int
    _keys: dict[dns.name.Name, tuple[str, dns.rrset.RRset | None]] = field(
        default_factory=dict, repr=False
    )
    _steps: dict[dns.name.Name, _Step] = field(default_factory=dict, repr=False)

    def trust_for(self, name: dns.name.Name) -> ZoneTrust:
        """Walk from the closest anchor above ``name`` down to ``name`` (or the
        deepest zone cut above it).

        Raises:
            ResolveError: a server on the path did not answer usably.
        """
        anchor = anchor_for(self.anchors, name)
        if anchor is None:
            return ZoneTrust(name, DNSSECStatus.INSECURE, "no trust anchor covers this name")
        zone, current = anchor.zone, anchor
        trace: list[str] = []
        broken, keys = self._zone_keys(current)
        if keys is None:
            return ZoneTrust(zone, DNSSECStatus.BOGUS, broken, trace=(broken,))
        trace.append(f"{zone} DNSKEY: secure (trust anchor)")
        for child in names_between(zone, name):
            step = self._step(zone, keys, child)
            trace.append(f"{zone} DS for {child}: {step.kind.value} {step.reason}".rstrip())
            if step.kind is _Kind.NO_NAME:
                break
            if step.kind in (_Kind.INSECURE, _Kind.BOGUS):
                status = DNSSECStatus(step.kind.value)
                return ZoneTrust(child, status, step.reason, trace=tuple(trace))
            if step.kind is _Kind.CUT and step.anchor is not None:
                broken, child_keys = self._zone_keys(step.anchor)
                if child_keys is None:
                    trace.append(broken)
                    return ZoneTrust(child, DNSSECStatus.BOGUS, broken, trace=tuple(trace))
                zone, current, keys = child, step.anchor, child_keys
                trace.append(f"{zone} DNSKEY: secure")
        return ZoneTrust(zone, DNSSECStatus.SECURE, "", current, tuple(trace))

    def _zone_keys(self, anchor: TrustAnchor) -> tuple[str, dns.rrset.RRset | None]:
        """``anchor.zone``'s DNSKEY rrset validated against ``anchor`` (or why not)."""
        cached = self._keys.get(anchor.zone)
        if cached is None:
            response = self.asker.ask(anchor.zone, anchor.zone, dns.rdatatype.DNSKEY)
            validation, keys = validate_dnskeys(response, anchor, now=self.now)
            cached = (validation.reason, keys)
            self._keys[anchor.zone] = cached
        return cached

    def _step(self, zone: dns.name.Name, keys: dns.rrset.RRset, child: dns.name.Name) -> _Step:
        cached = self._steps.get(child)
        if cached is None:
            response = self.asker.ask(zone, child, dns.rdatatype.DS)
            cached = self._judge(response, zone, keys, child)
            if cached.kind is _Kind.CUT:
                self.asker.enter(zone, child)
            self._steps[child] = cached
        return cached

    def _judge(
        self,
        response: dns.message.Message,
        zone: dns.name.Name,
        keys: dns.rrset.RRset,
        child: dns.name.Name,
    ) -> _Step:
        """What the answer to ``child`` DS from ``zone`` proves."""
        link = f"{zone} DS for {child}"
        validation = validate_response(
            response, child, dns.rdatatype.DS, zone=zone, dnskeys=keys, now=self.now
        )
        if validation.status is DNSSECStatus.BOGUS:
            return _Step(_Kind.BOGUS, f"{link}: {validation.reason}")
        if validation.status is DNSSECStatus.INSECURE:
            return _Step(_Kind.INSECURE, f"{link}: {validation.reason}")
        ds = _ds_rrset(response, child)
        if ds is not None:
            return _Step(_Kind.CUT, anchor=TrustAnchor(child, tuple(ds), (), source=link))
        if response.rcode() == dns.rcode.NXDOMAIN:
            return _Step(_Kind.NO_NAME)
        if proves_delegation(response, child, zone):
            return _Step(
                _Kind.INSECURE,
                f"{link}: insecure delegation ({zone} proves there is no DS)",
            )
        return _Step(_Kind.NOT_CUT)


def _ds_rrset(response: dns.message.Message, child: dns.name.Name) -> dns.rrset.RRset | None:
    for rrset in response.answer:
        if rrset.name == child and rrset.rdtype == dns.rdatatype.DS and len(rrset):
            return rrset
    return None
