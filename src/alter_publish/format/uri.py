"""Where a verified ``alter:`` URI is dispatched to, and what of a URI may be shown.

The alter URI scheme draft (section 4.4 step 5) dispatches "the surface request to the
resolver indicated by the envelope" without saying how the two combine. The rule here
(docs/open.md) is RFC 3986 section 5 reference resolution, with the resolver as a
directory:

* no surface path: the reference is the URI's ``?query`` and ``#fragment`` alone,
  resolved against ``r=`` as written (``https://mcp.example.com/blake`` + ``?x=1`` is
  ``https://mcp.example.com/blake?x=1``);
* a surface path: the base is ``r=`` with ``/`` appended to its path unless it ends in
  one, and the reference is ``./`` + the path + ``?query`` + ``#fragment``
  (``https://mcp.example.com/blake`` + ``inbox`` is ``https://mcp.example.com/blake/inbox``).

Only an absolute ``https`` resolver with a host and no user information is dispatched
to, and a surface path may not leave it: segments that are (or decode to) ``.`` or
``..``, or that decode to a ``/`` or ``\\``, are refused. The target is checked to lie
under the resolver after resolution as well.

Section 7.3 of the draft: the surface path, query and fragment may be private. Errors
raised here name the URI by :func:`shown` (scheme and handle-ref only).
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse
from dataclasses import dataclass
from typing import Final

from alter_publish.errors import DispatchError
from alter_publish.format.handles import REDACTED, AlterURI, shown

__all__ = [
    "DISPATCH_SCHEMES",
    "REDACTED",
    "UriParts",
    "dispatch_target",
    "remove_dot_segments",
    "resolve_reference",
    "shown",
    "surface_reference",
]

#: The resolver schemes ``open`` dispatches to (``http`` would carry the path in clear).
DISPATCH_SCHEMES: Final = ("https",)
#: RFC 3986 appendix B: scheme, authority, path, query, fragment.
_COMPONENTS: Final = re.compile(
    r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$"
)
_UNSAFE_SEGMENTS: Final = frozenset({".", ".."})


@dataclass(frozen=True, slots=True)
class UriParts:
    """A URI reference split per RFC 3986 appendix B (None: the component is absent)."""

    scheme: str | None
    authority: str | None
    path: str
    query: str | None
    fragment: str | None

    @classmethod
    def parse(cls, text: str) -> UriParts:
        """Split ``text`` (any string matches the appendix B expression)."""
        match = _COMPONENTS.match(text)
        if match is None:  # pragma: no cover - the expression matches every string
            raise ValueError("not a URI reference")
        scheme, authority, path, query, fragment = match.groups()
        return cls(scheme, authority, path, query, fragment)

    def to_text(self) -> str:
        """RFC 3986 section 5.3: recompose the components."""
        text = ""
        if self.scheme is not None:
            text += self.scheme + ":"
        if self.authority is not None:
            text += "//" + self.authority
        text += self.path
        if self.query is not None:
            text += "?" + self.query
        if self.fragment is not None:
            text += "#" + self.fragment
        return text


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4."""
    output: list[str] = []
    rest = path
    while rest:
        if rest.startswith("../"):
            rest = rest[3:]
        elif rest.startswith(("./", "/./")):
            rest = rest[2:]
        elif rest == "/.":
            rest = "/"
        elif rest.startswith("/../"):
            rest = rest[3:]
            if output:
                output.pop()
        elif rest == "/..":
            rest = "/"
            if output:
                output.pop()
        elif rest in (".", ".."):
            rest = ""
        else:
            end = rest.find("/", 1)
            segment, rest = (rest, "") if end < 0 else (rest[:end], rest[end:])
            output.append(segment)
    return "".join(output)


def _merge(base: UriParts, path: str) -> str:
    """RFC 3986 section 5.2.3."""
    if base.authority is not None and not base.path:
        return "/" + path
    return base.path[: base.path.rfind("/") + 1] + path


def resolve_reference(base: str, reference: str) -> str:
    """RFC 3986 section 5.2.2 (strict): the target URI of ``reference`` against ``base``.

    Raises:
        ValueError: ``base`` is not an absolute URI (it has no scheme).
    """
    b = UriParts.parse(base)
    r = UriParts.parse(reference)
    if b.scheme is None:
        raise ValueError("the base URI has no scheme")
    if r.scheme is not None:
        target = UriParts(r.scheme, r.authority, remove_dot_segments(r.path), r.query, None)
    elif r.authority is not None:
        target = UriParts(b.scheme, r.authority, remove_dot_segments(r.path), r.query, None)
    elif not r.path:
        query = r.query if r.query is not None else b.query
        target = UriParts(b.scheme, b.authority, b.path, query, None)
    elif r.path.startswith("/"):
        target = UriParts(b.scheme, b.authority, remove_dot_segments(r.path), r.query, None)
    else:
        path = remove_dot_segments(_merge(b, r.path))
        target = UriParts(b.scheme, b.authority, path, r.query, None)
    return dataclasses.replace(target, fragment=r.fragment).to_text()


def surface_reference(uri: AlterURI) -> str:
    """The relative reference a URI's surface makes: ``./`` + path, ``?query``, ``#fragment``
    (empty for a bare ``alter:~handle``)."""
    text = "./" + "/".join(uri.path) if uri.path else ""
    if uri.query is not None:
        text += "?" + uri.query
    if uri.fragment is not None:
        text += "#" + uri.fragment
    return text


def _resolver_base(resolver: str, where: str) -> UriParts:
    """The resolver as a dispatch base, checked.

    Raises:
        DispatchError: (``bad-resolver``) not an absolute https URI with a host.
    """
    if not resolver.isascii() or any(ch <= " " or ch == "\x7f" for ch in resolver):
        raise DispatchError(
            "r= is not an ASCII URI without spaces", where=where, category="bad-resolver"
        )
    parts = UriParts.parse(resolver)
    scheme = (parts.scheme or "").lower()
    if scheme not in DISPATCH_SCHEMES:
        raise DispatchError(
            f"r= scheme {scheme or '(none)'!r} is not dispatched to: only "
            f"{', '.join(DISPATCH_SCHEMES)} (the surface path must not travel in clear)",
            where=where,
            category="bad-resolver",
        )
    try:
        split = urllib.parse.urlsplit(resolver)
        host, _ = split.hostname, split.port
    except ValueError as exc:
        raise DispatchError(
            f"r= has a bad host or port ({exc})", where=where, category="bad-resolver"
        ) from exc
    if not parts.authority or not host:
        raise DispatchError("r= has no host", where=where, category="bad-resolver")
    if "@" in parts.authority:
        raise DispatchError(
            "r= carries a user name or password", where=where, category="bad-resolver"
        )
    segments = [urllib.parse.unquote(s, errors="replace") for s in parts.path.split("/")]
    if any(segment in _UNSAFE_SEGMENTS for segment in segments):
        raise DispatchError(
            "r= has a dot segment in its path: what is under it is unclear",
            where=where,
            category="bad-resolver",
        )
    return UriParts(scheme, parts.authority, parts.path, parts.query, None)


def _check_path(uri: AlterURI, where: str) -> None:
    """Refuse surface path segments that would leave the resolver.

    Raises:
        DispatchError: (``unsafe-path``) a dot segment, or an encoded ``/`` or ``\\``.
    """
    for number, segment in enumerate(uri.path, start=1):
        decoded = urllib.parse.unquote(segment, errors="replace")
        if segment in _UNSAFE_SEGMENTS or decoded in _UNSAFE_SEGMENTS:
            raise DispatchError(
                f"surface path segment {number} is a dot segment: it would leave the resolver",
                where=where,
                category="unsafe-path",
            )
        if "/" in decoded or "\\" in decoded:
            raise DispatchError(
                f"surface path segment {number} encodes '/' or '\\': it could leave the resolver",
                where=where,
                category="unsafe-path",
            )


def dispatch_target(resolver: str, uri: AlterURI) -> str:
    """The URL a verified URI dispatches to: its surface resolved against ``resolver``
    (the envelope's ``r=``), by the rule of this module's docstring.

    Raises:
        DispatchError: ``bad-resolver`` (``resolver`` is not an absolute https URI with a
            host) or ``unsafe-path`` (a surface path that would leave it).
    """
    where = uri.handle.ref
    base = _resolver_base(resolver, where)
    _check_path(uri, where)
    if uri.path:
        directory = base.path if base.path.endswith("/") else base.path + "/"
        base = UriParts(base.scheme, base.authority, directory, base.query, None)
    try:
        target = resolve_reference(base.to_text(), surface_reference(uri))
    except ValueError as exc:  # pragma: no cover - base has a scheme
        raise DispatchError(str(exc), where=where, category="bad-resolver") from exc
    prefix = UriParts(base.scheme, base.authority, base.path, None, None).to_text()
    if not target.startswith(prefix):  # pragma: no cover - guarded by _check_path
        raise DispatchError(
            "the target is not under the resolver", where=where, category="unsafe-path"
        )
    return target
