"""A zone file on disk: its origin (what it says about itself before it is parsed), its
text, and its parse."""

from __future__ import annotations

from pathlib import Path

import dns.zone

from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.errors import RenderError
from alter_publish.format.handles import normalize_domain

#: The file name suffix a rendered zone file has (``example.com.zone``).
ZONE_FILE_SUFFIX = ".zone"


def origin_of(path: Path) -> str:
    """The origin of a zone file: its first ``$ORIGIN`` line, else its file name.

    ``x.com.zone`` (or ``x.com``) names the zone ``x.com``; an unreadable file falls back
    to its name too, for the parser to report what is wrong with it.
    """
    try:
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if line.upper().startswith("$ORIGIN"):
                    return normalize_domain(line.split()[1])
    except (OSError, UnicodeDecodeError, IndexError):
        pass
    return normalize_domain(path.name.removesuffix(ZONE_FILE_SUFFIX))


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
