"""Which engine answers a zone's queries: the wire engine when it can, else dnspython's.

:class:`~alter_publish.dns.wirezone.WireZone` answers one zone from bytes, with no
per-query parsing; it refuses zones it does not serve (delegations, CNAMEs, several
zones, ...) with :class:`~alter_publish.errors.UnsupportedZoneError`, and those are
served by :class:`~alter_publish.dns.zoneindex.ZoneIndex` behind a
:class:`~alter_publish.dns.zoneindex.ResponseCache`. The choice is made here only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import dns.zone

from alter_publish.dns.records import Labels, SignedRRs
from alter_publish.dns.wirezone import WireZone
from alter_publish.dns.zoneindex import ResponseCache, ZoneIndex
from alter_publish.errors import UnsupportedZoneError

if TYPE_CHECKING:  # serve starts without the definition's model (and YAML)
    from alter_publish.definition.model import DNSSECSpec

__all__ = ["Answerer", "answerer_for", "answerer_for_rrsets"]


class Answerer(Protocol):
    """What answers DNS queries wire to wire, as :func:`~alter_publish.dns.zoneindex.answer`."""

    def answer(self, wire: bytes, max_udp: int | None) -> bytes | None:
        """Answer one query (``max_udp`` ``None`` for TCP); ``None`` sends nothing. Never raises."""
        ...


def answerer_for(zones: Sequence[dns.zone.Zone]) -> Answerer:
    """The engine for ``zones``: :class:`WireZone` for one zone it serves, else the
    dnspython :class:`ZoneIndex`.

    Raises:
        ServeError: a zone has no origin or SOA, or two zones share an origin.
    """
    if len(zones) == 1:
        try:
            return WireZone.from_zone(zones[0])
        except UnsupportedZoneError:
            pass  # served by the dnspython engine below
    return ResponseCache(ZoneIndex.build(zones))


def answerer_for_rrsets(
    origin: Labels,
    rrsets: Sequence[SignedRRs],
    dnssec: DNSSECSpec,
    zone: Callable[[], dns.zone.Zone],
) -> Answerer:
    """:func:`answerer_for` the zone the signer made: :class:`WireZone` built from its
    rrsets in wire form, or, when it does not serve them, the dnspython engine over
    ``zone()`` (parsed only then).

    Raises:
        ServeError: the zone has no origin or SOA.
        RenderError: ``zone()`` raised it (the zone text does not parse).
    """
    try:
        return WireZone.build(
            origin,
            rrsets,
            denial=dnssec.denial if dnssec.enabled else None,
            nsec3_salt=bytes.fromhex(dnssec.nsec3_salt),
            nsec3_iterations=dnssec.nsec3_iterations,
        )
    except UnsupportedZoneError:
        return ResponseCache(ZoneIndex.build([zone()]))
