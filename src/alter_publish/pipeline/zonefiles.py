"""The zone files ``sign`` wrote, read back (by ``serve`` and ``verify``): their text and
their parse, with errors that say what to run. Apart from :mod:`.verification` so that
``serve`` starts without importing the proof."""

from __future__ import annotations

from pathlib import Path

import dns.zone

from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.errors import RenderError


def read_zone_file(path: Path, origin: str, where: Path | None = None) -> dns.zone.Zone:
    """Read and parse a rendered zone file (named ``where`` in errors, if given).

    Raises:
        RenderError: missing, unreadable or not a valid zone (names the line).
    """
    name = str(where or path)
    return parse_zone_text(read_zone_text(path, name), origin, where=name)


def read_zone_text(path: Path, name: str) -> str:
    """The text of a zone file (named ``name`` in errors).

    Raises:
        RenderError: missing or unreadable.
    """
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise RenderError("not found; run 'alter-publish sign' first", where=name) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise RenderError(f"cannot read: {exc}", where=name) from exc
