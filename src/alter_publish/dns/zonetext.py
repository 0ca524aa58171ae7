"""Zone text as dnspython reads it, and TXT record text (character-strings joined)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import dns.exception
import dns.zone

from alter_publish.errors import RenderError

_LINE = re.compile(r":(\d+):")


def txt_text(strings: Iterable[bytes]) -> str:
    """The record text of a TXT rdata: its character-strings joined (bytes kept 1:1)."""
    return b"".join(strings).decode("latin-1")


def parse_zone_text(
    text: str, origin: str, *, where: str, line_of: Callable[[int], int] | None = None
) -> dns.zone.Zone:
    """Parse zone text with dnspython (absolute names), as any consumer would.

    ``line_of`` maps a line of ``text`` to the line to name in errors (when ``text``
    is part of a larger file).

    Raises:
        RenderError: the text is not a valid zone for ``origin``; names the line.
    """
    try:
        return dns.zone.from_text(text, origin=origin + ".", relativize=False, check_origin=True)
    except dns.exception.DNSException as exc:
        message = str(exc)
        match = _LINE.search(message)
        line = int(match.group(1)) if match else 0
        location = f"{where}:{line_of(line) if line_of else line}" if match else where
        what = message.split(": ", 1)[1] if match and ": " in message else message
        raise RenderError(f"not a valid zone: {what}", where=location) from exc
