"""``serve``: zone files loaded for the embedded name server, the big ones fast.

One zone file that alter-publish wrote is read by :mod:`alter_publish.dns.zonelines`
(its handle, RRSIG and NSEC/NSEC3 lines converted to wire form directly, the rest by
dnspython) into the wire engine: at 100,000 handles the server answers seconds after
it starts instead of after dnspython's minute-long parse. Anything else (several
files, a file outside what that reader takes, a zone the wire engine does not
serve) is parsed whole by dnspython and served by :func:`answerer_for`, as before.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import dns.zone

from alter_publish.dns.answerers import Answerer, answerer_for
from alter_publish.dns.wirezone import WireZone
from alter_publish.dns.zonefile import origin_of
from alter_publish.dns.zonelines import read_zone_records
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.errors import RenderError, UnsupportedZoneError
from alter_publish.pipeline.zonefiles import read_zone_file, read_zone_text

#: How a zone file was loaded: read fast into the wire engine, or parsed by dnspython.
LOADED_FAST = "fast"
LOADED_DNSPYTHON = "dnspython"


@dataclass(frozen=True, slots=True)
class ServedZones:
    """What ``serve`` serves: the engine, the zones' origins, and how they were loaded."""

    answerer: Answerer
    origins: tuple[str, ...]
    loaded: str


def load_served_zones(paths: Sequence[Path]) -> ServedZones:
    """Load zone files for :class:`~alter_publish.dns.server.ZoneServer`.

    Raises:
        RenderError: a file is missing, unreadable or not a valid zone (names the line).
        ServeError: the zones cannot be served together (two share an origin, ...).
    """
    # Millions of small objects are made here and live as long as the server: the
    # collector walking them as they are made costs a third of the load time.
    gc.disable()
    try:
        return _load(paths)
    finally:
        gc.freeze()
        gc.enable()


def _load(paths: Sequence[Path]) -> ServedZones:
    if len(paths) == 1:
        path = paths[0]
        origin, name = origin_of(path), str(path)
        text = read_zone_text(path, name)
        fast = _fast_zone(text, origin, name)
        if fast is not None:
            return ServedZones(fast, (fast.origin_name.to_text(),), LOADED_FAST)
        zones = [parse_zone_text(text, origin, where=name)]
    else:
        zones = [read_zone_file(path, origin_of(path)) for path in paths]
    origins = tuple(str(zone.origin) for zone in zones)
    return ServedZones(answerer_for(zones), origins, LOADED_DNSPYTHON)


def _fast_zone(text: str, origin: str, name: str) -> WireZone | None:
    """The wire engine over ``text`` read by ``dns.zonelines``; None when that reader or
    the engine declines, or the other lines do not parse (the whole-file parse then
    names the problem as it always has)."""

    def parse(head: str, line_of: Callable[[int], int]) -> dns.zone.Zone:
        return parse_zone_text(head, origin, where=name, line_of=line_of)

    try:
        records = read_zone_records(text, origin, parse)
        if records is None:
            return None
        return WireZone.from_records(records.origin, records.plain, records.sigs)
    except (RenderError, UnsupportedZoneError):
        return None
