"""What a zone file says about itself before it is parsed: its origin."""

from __future__ import annotations

from pathlib import Path

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
