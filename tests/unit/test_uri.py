"""alter: URIs at the edge of ``open``: IRI conversion, redaction, and the dispatch join."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from alter_publish.errors import DispatchError, URIError
from alter_publish.format.handles import parse_uri, shown
from alter_publish.format.uri import (
    dispatch_target,
    remove_dot_segments,
    resolve_reference,
    surface_reference,
)

RESOLVER = "https://mcp.example.com/blake"
RFC3986_BASE = "http://a/b/c/d;p?q"

#: RFC 3986 section 5.4.1 (normal) and 5.4.2 (abnormal, strict parser) examples.
RFC3986_EXAMPLES = [
    ("g:h", "g:h"),
    ("g", "http://a/b/c/g"),
    ("./g", "http://a/b/c/g"),
    ("g/", "http://a/b/c/g/"),
    ("/g", "http://a/g"),
    ("//g", "http://g"),
    ("?y", "http://a/b/c/d;p?y"),
    ("g?y", "http://a/b/c/g?y"),
    ("#s", "http://a/b/c/d;p?q#s"),
    ("g#s", "http://a/b/c/g#s"),
    ("g?y#s", "http://a/b/c/g?y#s"),
    (";x", "http://a/b/c/;x"),
    ("g;x", "http://a/b/c/g;x"),
    ("g;x?y#s", "http://a/b/c/g;x?y#s"),
    ("", "http://a/b/c/d;p?q"),
    (".", "http://a/b/c/"),
    ("./", "http://a/b/c/"),
    ("..", "http://a/b/"),
    ("../", "http://a/b/"),
    ("../g", "http://a/b/g"),
    ("../..", "http://a/"),
    ("../../", "http://a/"),
    ("../../g", "http://a/g"),
    ("../../../g", "http://a/g"),
    ("../../../../g", "http://a/g"),
    ("/./g", "http://a/g"),
    ("/../g", "http://a/g"),
    ("g.", "http://a/b/c/g."),
    (".g", "http://a/b/c/.g"),
    ("g..", "http://a/b/c/g.."),
    ("..g", "http://a/b/c/..g"),
    ("./../g", "http://a/b/g"),
    ("./g/.", "http://a/b/c/g/"),
    ("g/./h", "http://a/b/c/g/h"),
    ("g/../h", "http://a/b/c/h"),
    ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
    ("g;x=1/../y", "http://a/b/c/y"),
    ("g?y/./x", "http://a/b/c/g?y/./x"),
    ("g?y/../x", "http://a/b/c/g?y/../x"),
    ("g#s/./x", "http://a/b/c/g#s/./x"),
    ("g#s/../x", "http://a/b/c/g#s/../x"),
    ("http:g", "http:g"),
]


@pytest.mark.parametrize(("reference", "target"), RFC3986_EXAMPLES, ids=repr)
def test_reference_resolution_follows_rfc3986_examples(reference: str, target: str) -> None:
    assert resolve_reference(RFC3986_BASE, reference) == target


def test_remove_dot_segments_examples_of_section_5_2_4() -> None:
    assert remove_dot_segments("/a/b/c/./../../g") == "/a/g"
    assert remove_dot_segments("mid/content=5/../6") == "mid/6"


@pytest.mark.parametrize(
    ("resolver", "uri", "target"),
    [
        pytest.param(RESOLVER, "alter:~blake", RESOLVER, id="no-surface"),
        pytest.param(RESOLVER, "alter:~blake?x=1", f"{RESOLVER}?x=1", id="query-only"),
        pytest.param(f"{RESOLVER}?a=b", "alter:~blake", f"{RESOLVER}?a=b", id="base-query-kept"),
        pytest.param(f"{RESOLVER}?a=b", "alter:~blake#f", f"{RESOLVER}?a=b#f", id="fragment"),
        pytest.param(RESOLVER, "alter:~blake/inbox", f"{RESOLVER}/inbox", id="path"),
        pytest.param(f"{RESOLVER}/", "alter:~blake/inbox", f"{RESOLVER}/inbox", id="slash"),
        pytest.param(
            f"{RESOLVER}?a=b", "alter:~blake/inbox?x=1#f", f"{RESOLVER}/inbox?x=1#f", id="all"
        ),
        pytest.param("https://h", "alter:~blake/a/b", "https://h/a/b", id="empty-base-path"),
        pytest.param("https://h", "alter:~blake/a:b", "https://h/a:b", id="colon-segment"),
        pytest.param(
            "HTTPS://h:8443/x", "alter:~blake/y", "https://h:8443/x/y", id="scheme-lowercased"
        ),
        pytest.param(
            RESOLVER,
            "alter:~blake/caf\u00e9?q=\u00fc#\u00e9",
            f"{RESOLVER}/caf%C3%A9?q=%C3%BC#%C3%A9",
            id="iri-converted",
        ),
    ],
)
def test_dispatch_target_joins_the_surface_under_the_resolver(
    resolver: str, uri: str, target: str
) -> None:
    assert dispatch_target(resolver, parse_uri(uri)) == target


@pytest.mark.parametrize(
    ("resolver", "category"),
    [
        pytest.param("http://mcp.example.com/x", "bad-resolver", id="http"),
        pytest.param("javascript:alert(1)", "bad-resolver", id="javascript"),
        pytest.param("file:///etc/passwd", "bad-resolver", id="file"),
        pytest.param("https://user@mcp.example.com/", "bad-resolver", id="userinfo"),
        pytest.param("https:///x", "bad-resolver", id="no-host"),
        pytest.param("https://h:99999/", "bad-resolver", id="bad-port"),
        pytest.param("mcp.example.com/x", "bad-resolver", id="relative"),
    ],
)
def test_only_an_absolute_https_resolver_is_dispatched_to(resolver: str, category: str) -> None:
    with pytest.raises(DispatchError) as caught:
        dispatch_target(resolver, parse_uri("alter:~blake/secret-path"))
    assert caught.value.category == category
    assert "secret-path" not in str(caught.value)


@pytest.mark.parametrize(
    "uri",
    [
        "alter:~blake/../secret",
        "alter:~blake/a/./secret",
        "alter:~blake/%2e%2E/secret",
        "alter:~blake/.%2e/secret",
        "alter:~blake/a%2Fsecret",
        "alter:~blake/a%5Csecret",
    ],
)
def test_a_surface_path_may_not_leave_the_resolver(uri: str) -> None:
    with pytest.raises(DispatchError) as caught:
        dispatch_target(RESOLVER, parse_uri(uri))
    assert caught.value.category == "unsafe-path"
    assert "secret" not in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("alter:~blake/inbox?x=1#f", "'alter:~blake[...]'"),
        ("alter:~blake", "'alter:~blake'"),
        ("alter://~blake/x", "'alter:[...]'"),
        ("blake/inbox", "'blake[...]'"),
        ("alter:~blake#only", "'alter:~blake[...]'"),
    ],
)
def test_shown_keeps_the_handle_and_drops_the_surface(text: str, expected: str) -> None:
    assert shown(text) == expected


@pytest.mark.parametrize(
    "uri",
    [
        "alter://~blake/secret",
        "alter:/~blake/secret",
        "alter:~blake/se%zzcret",
        "alter:~blake/secret//x",
        "alter:~blake/secret?a b",
        "alter:~blake/secret#a b",
        "alter:~bl_ake/secret",
        "alter:~bl\u00e4ke/secret",
        "alter:blake/secret",
    ],
)
def test_uri_errors_never_quote_the_surface(uri: str) -> None:
    with pytest.raises(URIError) as caught:
        parse_uri(uri)
    assert caught.value.category == "malformed-uri"
    assert "secret" not in str(caught.value)


def _parse_error(text: str) -> str:
    """The error ``parse_uri`` raises for ``text``, or "" when it parses."""
    try:
        parse_uri(text)
    except URIError as exc:
        return str(exc)
    return ""


_SURFACE_CHARACTERS = st.characters(codec="utf-8", exclude_characters="/?#")


@given(
    segments=st.lists(st.text(_SURFACE_CHARACTERS, max_size=12), min_size=1, max_size=4),
    query=st.none() | st.text(_SURFACE_CHARACTERS, max_size=12),
)
def test_a_parse_error_never_contains_the_surface(segments: list[str], query: str | None) -> None:
    marker = "Zq9"
    text = "alter:~blake/" + "/".join(marker + s for s in segments)
    if query is not None:
        text += "?" + marker + query
    assert marker not in _parse_error(text)


@given(segment=st.text(st.characters(codec="utf-8", exclude_characters="/?#"), min_size=1))
def test_a_valid_surface_stays_under_the_resolver(segment: str) -> None:
    try:
        uri = parse_uri(f"alter:~blake/{segment}/x")
        target = dispatch_target(RESOLVER, uri)
    except (URIError, DispatchError):
        return
    assert target.startswith(RESOLVER + "/")
    assert target == f"{RESOLVER}/{uri.path[0]}/x"
    assert target.isascii()


def test_surface_reference_is_relative_to_the_resolver_directory() -> None:
    assert surface_reference(parse_uri("alter:~blake/a/b?q#f")) == "./a/b?q#f"
    assert surface_reference(parse_uri("alter:~blake")) == ""
