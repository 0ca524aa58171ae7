"""Handles (``~blake``), their tiers and owner names; ``alter:`` URIs (spec 1 and 2)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from enum import StrEnum

from alter_publish.errors import HandleError, URIError

OWNER_PREFIX = "_alter"
LABEL_MAX_OCTETS = 63
OWNER_MAX_OCTETS = 253
INSTRUMENT_PREFIX = "cc-"
BOT_SUFFIX = ".bot"

_LABEL = re.compile(r"[a-z0-9-]{1,63}")
#: A whole handle name whose every label is a :data:`_LABEL` (one match, not one a label).
_NAME = re.compile(r"[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63})*")
_SOVEREIGN = re.compile(r"[a-z][a-z0-9.-]*")
_PCT = r"%[0-9A-Fa-f]{2}"
_PCHAR = r"[A-Za-z0-9\-._~!$&'()*+,;=:@]|" + _PCT
_SEGMENT = re.compile(rf"(?:{_PCHAR})+")
_QUERY = re.compile(rf"(?:{_PCHAR}|[/?])*")
_SCHEME = "alter:"
#: What stands for the surface path, query and fragment in anything shown (draft 7.3).
REDACTED = "[...]"
SHOWN_MAX_CHARS = 80
#: Bidirectional formatting characters, which RFC 3987 section 4.1 forbids in IRIs.
_BIDI_FORMATTING = frozenset((0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)))


class Tier(StrEnum):
    """The tier a handle belongs to, from its lexical form."""

    SOVEREIGN = "sovereign"
    BOT = "bot"
    INSTRUMENT = "instrument"


#: The members as plain names: an enum member looked up on its class costs ten times
#: more, and a definition of 100,000 handles looks them up half a million times.
_SOVEREIGN_TIER, _BOT_TIER, _INSTRUMENT_TIER = Tier.SOVEREIGN, Tier.BOT, Tier.INSTRUMENT


@dataclass(frozen=True, slots=True)
class Handle:
    """A parsed, canonical (lowercase) handle.

    Attributes:
        name: the handle name without ``~``, lowercase.
        tier: its tier.
    """

    name: str
    tier: Tier

    @property
    def ref(self) -> str:
        """The canonical handle-ref, ``~`` included."""
        return "~" + self.name

    @property
    def is_domain(self) -> bool:
        """True for a sovereign handle naming a domain (``~example.com``)."""
        return self.tier is _SOVEREIGN_TIER and "." in self.name

    def domain(self, substrate: str | None) -> str:
        """The publishing domain (no trailing dot).

        Raises:
            HandleError: the handle needs a substrate and none was given.
        """
        if self.is_domain:
            return self.name
        if not substrate:
            raise HandleError("needs a substrate zone to find its domain", where=self.ref)
        return f"{self.name}.{normalize_domain(substrate)}"

    def owner(self, substrate: str | None) -> str:
        """The absolute lowercase owner name ``_alter.<domain>.`` of this handle's record.

        Raises:
            HandleError: no substrate for a non-domain handle, or the name is too long.
        """
        owner = f"{OWNER_PREFIX}.{self.domain(substrate)}"
        if len(owner) > OWNER_MAX_OCTETS:
            raise HandleError(
                f"owner name is {len(owner)} characters, over {OWNER_MAX_OCTETS}", where=self.ref
            )
        return owner + "."

    def __str__(self) -> str:
        return self.ref


def normalize_domain(text: str) -> str:
    """Lowercase a domain and drop one trailing dot (``Example.COM.`` -> ``example.com``)."""
    text = text.strip().lower()
    return text[:-1] if text.endswith(".") else text


def _tier_of(name: str) -> Tier | None:
    if name.startswith(INSTRUMENT_PREFIX):
        return _INSTRUMENT_TIER if len(name) > len(INSTRUMENT_PREFIX) else None
    if name.endswith(BOT_SUFFIX) and _SOVEREIGN.fullmatch(name[: -len(BOT_SUFFIX)]):
        return _BOT_TIER
    if _SOVEREIGN.fullmatch(name):
        return _SOVEREIGN_TIER
    return None


def parse_handle(text: str) -> Handle:
    """Parse a handle-ref such as ``~Blake`` into its canonical form and tier.

    Raises:
        HandleError: (category ``malformed-handle``) the text is not a handle.
    """
    name = text[1:].lower()
    if text.startswith("~") and text.isascii() and _NAME.fullmatch(name):
        tier = _tier_of(name)
        if tier is not None:
            return Handle(name=name, tier=tier)
    raise _malformed(text, name)


def _malformed(text: str, name: str) -> HandleError:
    """Why ``text`` (``name``: its name, lower-cased) is not a handle."""
    where = repr(text) if len(text) <= 80 else repr(text[:77] + "...")
    if not text.startswith("~"):
        return HandleError("a handle starts with '~'", where=where)
    if not text.isascii():
        return HandleError("a handle is ASCII only", where=where)
    if not name:
        return HandleError("empty handle name", where=where)
    for label in name.split("."):
        if not _LABEL.fullmatch(label):
            return HandleError(
                f"label {label!r} is not 1..{LABEL_MAX_OCTETS} characters of a-z, 0-9, '-'",
                where=where,
            )
    return HandleError("does not match any tier's grammar", where=where)


@dataclass(frozen=True, slots=True)
class AlterURI:
    """A parsed ``alter:`` URI.

    Attributes:
        handle: the handle it refers to.
        path: surface path segments, percent-encoding kept as written (IRI converted).
        query: the query without ``?``, or None when absent.
        fragment: the fragment without ``#``, or None when absent.
    """

    handle: Handle
    path: tuple[str, ...] = ()
    query: str | None = None
    fragment: str | None = None

    def to_text(self) -> str:
        """The canonical URI text (lowercase scheme and handle)."""
        text = _SCHEME + self.handle.ref
        if self.path:
            text += "/" + "/".join(self.path)
        if self.query is not None:
            text += "?" + self.query
        if self.fragment is not None:
            text += "#" + self.fragment
        return text

    def __str__(self) -> str:
        return self.to_text()


def shown(text: str) -> str:
    """What of a URI or IRI text may appear in messages: everything up to its surface
    path, query or fragment (``alter:~blake/inbox?x=1`` -> ``'alter:~blake[...]'``)."""
    start = text.find(":") + 1
    cut = min((i for i in (text.find(c, start) for c in "/?#") if i >= 0), default=-1)
    head = text if cut < 0 else text[:cut]
    if len(head) > SHOWN_MAX_CHARS:
        head = head[: SHOWN_MAX_CHARS - 3] + "..."
    return repr(head if cut < 0 else head + REDACTED)


def _refused_character(ch: str, *, query: bool) -> str | None:
    """Why RFC 3987 refuses ``ch`` in an IRI (None when it is allowed): a surrogate (the
    text was not valid UTF-8), a bidirectional formatting character (section 4.1), a
    noncharacter, or a private-use character outside the query (section 2.2)."""
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:
        return "not valid UTF-8"
    if code in _BIDI_FORMATTING:
        return f"a bidirectional formatting character (U+{code:04X})"
    if (code & 0xFFFE) == 0xFFFE or 0xFDD0 <= code <= 0xFDEF:
        return f"a noncharacter (U+{code:04X})"
    if not query and unicodedata.category(ch) == "Co":
        return f"a private-use character (U+{code:04X}) outside the query"
    return None


def _iri_to_uri(text: str, part: str, where: str) -> str:
    """RFC 3987 section 3.1: percent-encode the UTF-8 of every non-ASCII character.

    Raises:
        URIError: a character RFC 3987 does not allow (:func:`_refused_character`).
    """
    if text.isascii():
        return text
    for ch in text:
        why = None if ch.isascii() else _refused_character(ch, query=part == "query")
        if why is not None:
            raise URIError(f"bad {part}: {why}", where=where)
    return "".join(
        ch if ch.isascii() else "".join(f"%{byte:02X}" for byte in ch.encode("utf-8"))
        for ch in text
    )


def parse_uri(text: str) -> AlterURI:
    """Parse an ``alter:`` URI (or IRI) into handle, path, query and fragment.

    Errors name the URI by :func:`shown`: its surface path, query and fragment never
    appear in them (draft section 7.3), only which part is wrong and where.

    Raises:
        URIError: (category ``malformed-uri``) the text is not an alter: URI.
    """
    where = shown(text)
    if text[: len(_SCHEME)].lower() != _SCHEME:
        raise URIError("does not start with 'alter:'", where=where)
    rest = text[len(_SCHEME) :]
    if not rest.startswith("~"):
        raise URIError("'alter:' must be followed directly by a ~handle", where=where)
    rest, has_fragment, fragment = rest.partition("#")
    rest, has_query, query = rest.partition("?")
    handle_text, has_path, path_text = rest.partition("/")
    try:
        handle = parse_handle(handle_text)
    except HandleError as exc:
        raise URIError(f"bad handle: {exc.what}", where=where) from exc
    segments: tuple[str, ...] = ()
    if has_path:
        segments = tuple(_iri_to_uri(path_text, "path", where).split("/"))
        for number, segment in enumerate(segments, start=1):
            if not _SEGMENT.fullmatch(segment):
                raise URIError(f"bad path segment {number}: {_problem(segment)}", where=where)
    query_value = _iri_to_uri(query, "query", where) if has_query else None
    fragment_value = _iri_to_uri(fragment, "fragment", where) if has_fragment else None
    for part, value in (("query", query_value), ("fragment", fragment_value)):
        if value is not None and not _QUERY.fullmatch(value):
            raise URIError(f"bad {part}: {_problem(value)}", where=where)
    return AlterURI(handle=handle, path=segments, query=query_value, fragment=fragment_value)


def _problem(part: str) -> str:
    """What is wrong with a path segment, query or fragment, without quoting it."""
    if not part:
        return "empty"
    position = next(
        (
            index
            for index in range(len(part))
            if not _QUERY.fullmatch(part[index])
            and not (part[index] == "%" and re.fullmatch(_PCT, part[index : index + 3]))
        ),
        None,
    )
    if position is None:
        return "'/' or '?' where a segment does not allow it"
    if part[position] == "%":
        return f"character {position + 1} is '%' without two hex digits"
    return f"character {position + 1} is not allowed (percent-encode it)"


def parse_reference(text: str) -> AlterURI:
    """Parse either an ``alter:`` URI or a bare ``~handle`` into an :class:`AlterURI`.

    Raises:
        URIError: a URI that is malformed.
        HandleError: a bare handle that is malformed.
    """
    if text.startswith("~"):
        return AlterURI(handle=parse_handle(text))
    return parse_uri(text)
