"""Property tests: every parser and every to/from pair (hypothesis)."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from alter_publish.errors import AlterError, VerificationError
from alter_publish.format.envelope import (
    Envelope,
    parse_envelope,
    parse_record,
    parse_tags,
    sign_envelope,
    split_txt,
    tags_to_text,
)
from alter_publish.format.handles import parse_handle, parse_uri
from alter_publish.format.identitylog import (
    EMPTY_ROOT,
    MerkleTree,
    leaf_hash,
    merkle_root,
    node_hash,
)

LABEL = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)
TAG_NAME = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
TAG_VALUE = st.from_regex(r"[\x21-\x3a\x3c-\x7e]{1,40}", fullmatch=True)
SEGMENT = st.from_regex(r"[A-Za-z0-9._~!$&'()*+,;=:@-]{1,12}", fullmatch=True)


@given(st.lists(LABEL, min_size=1, max_size=3))
def test_handle_round_trip(labels: list[str]) -> None:
    try:
        handle = parse_handle("~" + ".".join(labels))
    except AlterError:
        return
    assert parse_handle(handle.ref) == handle
    assert parse_handle(handle.ref.upper()) == handle


@given(st.text(max_size=40))
def test_handle_parser_only_raises_alter_errors(text: str) -> None:
    try:
        parse_handle(text)
    except AlterError as exc:
        assert exc.category == "malformed-handle"  # noqa: PT017 (input may be valid)


@given(LABEL, st.lists(SEGMENT, max_size=3), st.none() | SEGMENT, st.none() | SEGMENT)
def test_uri_round_trip(
    name: str, path: list[str], query: str | None, fragment: str | None
) -> None:
    text = "alter:~" + name + "".join("/" + p for p in path)
    text += "" if query is None else "?" + query
    text += "" if fragment is None else "#" + fragment
    try:
        uri = parse_uri(text)
    except AlterError:
        return
    assert parse_uri(uri.to_text()) == uri


@given(st.text(max_size=60))
def test_uri_parser_only_raises_alter_errors(text: str) -> None:
    try:
        parse_uri(text)
    except AlterError as exc:
        assert exc.category == "malformed-uri"  # noqa: PT017 (input may be valid)


@given(st.lists(st.tuples(TAG_NAME, TAG_VALUE), min_size=1, max_size=8, unique_by=lambda t: t[0]))
def test_tag_list_round_trip(tags: list[tuple[str, str]]) -> None:
    assert parse_tags(tags_to_text(tags)) == tuple(tags)
    spaced = " ;  ".join(f" {n} = {v} " for n, v in tags) + " ;"
    assert parse_tags(spaced) == tuple(tags)


@given(st.text(max_size=200))
def test_record_parser_only_raises_verification_errors(text: str) -> None:
    try:
        parse_record(text)
    except VerificationError as exc:
        assert exc.category in {"malformed", "unsupported"}  # noqa: PT017 (input may be valid)


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 9_999_999_999),
    st.integers(0, 2**40),
    st.lists(
        st.tuples(st.from_regex(r"z[a-z0-9_]{0,5}", fullmatch=True), TAG_VALUE),
        max_size=3,
        unique_by=lambda t: t[0],
    ),
)
def test_envelope_text_round_trip(epoch: int, signed_at: int, extra: list[tuple[str, str]]) -> None:
    handle = parse_handle("~blake")
    envelope = sign_envelope(
        handle=handle,
        owner=handle.owner("example.com"),
        epoch=epoch,
        private_key=Ed25519PrivateKey.generate(),
        signed_at=signed_at,
        expires_at=signed_at + 1,
        log_size=epoch,
        log_root=EMPTY_ROOT,
        revocation_secret=b"\x01" * 32,
        extra_tags=extra,
    )
    assert parse_envelope(envelope.to_text()) == envelope
    assert "".join(split_txt(envelope.to_text())) == envelope.to_text()
    assert all(len(part) <= 255 for part in split_txt(envelope.to_text()))
    assert isinstance(parse_record(envelope.to_text()), Envelope)


def _reference_root(entries: list[bytes]) -> bytes:
    """RFC 9162 section 2.1.1, written recursively as the RFC states it."""
    if not entries:
        return EMPTY_ROOT
    if len(entries) == 1:
        return leaf_hash(entries[0])
    split = 1 << ((len(entries) - 1).bit_length() - 1)
    return node_hash(_reference_root(entries[:split]), _reference_root(entries[split:]))


@given(st.lists(st.binary(max_size=8), max_size=40))
def test_incremental_tree_equals_recursive_definition(entries: list[bytes]) -> None:
    tree = MerkleTree()
    for count, entry in enumerate(entries, start=1):
        tree.append(entry)
        assert tree.size == count
    assert tree.root() == _reference_root(entries) == merkle_root(entries)


@pytest.mark.parametrize(
    "text",
    ["", ";", "v=alter1;;", "=x", "v=", "V=alter1", "v=alter1; h", "v=alter1; h=~a b"],
    ids=[
        "empty",
        "semicolon",
        "double-semicolon",
        "no-name",
        "no-value",
        "upper-name",
        "no-equals",
        "space-in-value",
    ],
)
def test_syntax_errors_are_malformed(text: str) -> None:
    with pytest.raises(VerificationError) as info:
        parse_tags(text)
    assert info.value.category == "malformed"
