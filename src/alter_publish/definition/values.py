"""Values of a zone definition: durations, times in UTC, resolver URIs, NSEC3 settings."""

from __future__ import annotations

import re
import time
import urllib.parse
from typing import Any

NEVER = "never"
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"(?:\d+[smhdw])+")
_DURATION_PART = re.compile(r"(\d+)([smhdw])")
_URI_CHARACTERS = re.compile(r"[\x21-\x3a\x3c-\x7e]+")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_RESOLVER_HOST = re.compile(
    r"(?=.{1,253}\.?$)(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)*"
    r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.?"
)
NSEC3_ITERATIONS_MAX = 150  # RFC 9276 3.2: validators may treat more as insecure (unbound does)
NSEC3_SALT_MAX_OCTETS = 255
_HEX = re.compile(r"(?:[0-9a-f]{2})*")
#: What a definition's ``resolver:`` may use (spec section 4 allows any URI in ``r=``).
RESOLVER_SCHEMES = ("https", "http")


def resolver_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a definition's ``resolver:`` (``r=``), or None.

    Spec section 4 lets ``r=`` be any ASCII URI without ``;`` or spaces (and a verifier
    accepts that); what this tool publishes is stricter: an absolute ``http`` or
    ``https`` URI with a host, so that a client can use it.
    """
    if not isinstance(value, str) or not value:
        return "is not text like https://mcp.example.com/api"
    if not value.isascii() or not _URI_CHARACTERS.fullmatch(value):
        return "must be ASCII without ';', spaces or control characters"
    scheme, colon, _ = value.partition(":")
    if not colon or not _SCHEME.fullmatch(scheme) or "." in scheme:
        return f"has no scheme: write https://{value.removeprefix('//')}"
    if scheme.lower() not in RESOLVER_SCHEMES:
        return f"scheme {scheme!r} is not http or https"
    try:  # urlsplit checks a bracketed host at once, and the port when it is read
        parts = urllib.parse.urlsplit(value)
        parts.port  # noqa: B018
    except ValueError as exc:
        return f"bad host or port ({exc})"
    if not value[len(scheme) + 1 :].startswith("//") or not parts.hostname:
        return "has no host: write it like https://mcp.example.com/api"
    if "@" in parts.netloc:
        return "must not carry a user name or password"
    host = parts.hostname
    if not parts.netloc.startswith("[") and not _RESOLVER_HOST.fullmatch(host):
        return f"host {host!r} is not a domain name or IPv4 address"
    return None


def parse_duration(value: Any) -> int:
    """Seconds from an int or a string like ``30d``, ``1h30m``, ``3600``.

    Raises:
        ValueError: not a non-negative duration.
    """
    if isinstance(value, bool):
        raise ValueError("not a duration")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("negative")
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text.isdigit():
            return int(text)
        if _DURATION.fullmatch(text):
            return sum(int(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(text))
    raise ValueError("not a duration (seconds, or like 30d, 12h, 1h30m)")


def format_duration(seconds: int) -> str:
    """The shortest exact ``30d``-style text for a number of seconds."""
    if seconds == 0:
        return "0s"
    for unit in ("w", "d", "h", "m"):
        if seconds % _UNIT_SECONDS[unit] == 0:
            return f"{seconds // _UNIT_SECONDS[unit]}{unit}"
    return f"{seconds}s"


def format_span(seconds: int) -> str:
    """A human span like ``2d3h20m`` (whole minutes, rounded up; ``0m`` for none)."""
    minutes = -(-max(seconds, 0) // 60)
    days, minutes = divmod(minutes, 1440)
    hours, minutes = divmod(minutes, 60)
    parts = [f"{n}{unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "m")) if n]
    return "".join(parts) or "0m"


def format_utc(seconds: int) -> str:
    """Unix seconds as an RFC 3339 UTC time, like ``2026-01-01T00:00:00Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def nsec3_iterations(value: Any) -> int:
    """A ``dnssec.nsec3.iterations`` value.

    Raises:
        ValueError: not a whole number up to :data:`NSEC3_ITERATIONS_MAX`.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("must be a whole number, 0 per RFC 9276")
    if value > NSEC3_ITERATIONS_MAX:
        raise ValueError(
            f"over {NSEC3_ITERATIONS_MAX}: validators treat such zones as insecure (RFC 9276)"
        )
    return value


def nsec3_salt(value: Any) -> str:
    """A ``dnssec.nsec3.salt`` value as lowercase hex (``""`` for none).

    Raises:
        ValueError: not quoted hex text or ``-``.
    """
    if value is not None and not isinstance(value, str):
        # YAML reads 0012 as the number 10: a salt must be written as text to mean what it says
        raise ValueError("write the salt as quoted text, e.g. \"a1b2\", or '-' for none")
    text = "" if value is None else value.strip().lower()
    if text in ("", "-"):
        return ""
    if not _HEX.fullmatch(text) or len(text) // 2 > NSEC3_SALT_MAX_OCTETS:
        raise ValueError(f"must be hex (up to {NSEC3_SALT_MAX_OCTETS} octets) or '-' for none")
    return text
