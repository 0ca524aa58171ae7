"""definition.model: zone definitions, every problem with its file:line:col, round trips."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alter_publish.definition.model import (
    DEFAULT_LIFETIME_SECONDS,
    DEFAULT_RENEW_BEFORE_SECONDS,
    DEFAULT_SOA_EXPIRE_SECONDS,
    DEFAULT_SOA_MINIMUM_SECONDS,
    DEFAULT_SOA_REFRESH_SECONDS,
    DEFAULT_SOA_RETRY_SECONDS,
    DEFAULT_TTL_SECONDS,
    TTL_MAX_SECONDS,
    SOASpec,
    ZoneSpec,
    load_zone,
)
from alter_publish.definition.values import format_duration, parse_duration
from alter_publish.errors import EXIT_DEFINITION, DefinitionError, HandleError
from alter_publish.format.handles import Tier, parse_handle

EXAMPLE_ZONE = Path(__file__).resolve().parents[2] / "zones" / "example.com.yaml"
ZONE_FILE = "example.com.yaml"
# Two lines every error case starts with; the case's own text begins on line 3.
HEADER = "zone: example.com\nns: [ns1]\n"
DAY = 86400


def write(tmp_path: Path, text: str, name: str = ZONE_FILE) -> Path:
    """Write a zone definition to ``tmp_path/name`` and return its path."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_text(tmp_path: Path, text: str, name: str = ZONE_FILE) -> ZoneSpec:
    """Load a zone definition written from ``text``."""
    return load_zone(write(tmp_path, text, name))


def definition_error(path: Path) -> DefinitionError:
    """The DefinitionError loading ``path`` raises."""
    with pytest.raises(DefinitionError) as info:
        load_zone(path)
    return info.value


def positions(error: DefinitionError, path: Path) -> list[tuple[int, int]]:
    """(line, column) of every reason, checking each names ``path``."""
    found: list[tuple[int, int]] = []
    for reason in error.reasons:
        assert reason.startswith(f"{path}:"), reason
        line, column, _ = reason[len(str(path)) + 1 :].split(":", 2)
        found.append((int(line), int(column)))
    return found


def without_positions(spec: ZoneSpec) -> ZoneSpec:
    """``spec`` with ``path`` and every handle's ``where`` blanked, for comparisons."""
    handles = tuple(dataclasses.replace(h, where="") for h in spec.handles)
    return dataclasses.replace(spec, path=Path(), handles=handles)


def dump_and_reload(spec: ZoneSpec, directory: Path) -> ZoneSpec:
    """Write ``spec.to_mapping()`` with yaml.safe_dump to ``directory`` and load it again."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{spec.origin}.yaml"
    path.write_text(yaml.safe_dump(spec.to_mapping(), sort_keys=False), encoding="utf-8")
    return load_zone(path)


# --- the shipped example ------------------------------------------------------------


def test_example_zone_loads() -> None:
    spec = load_zone(EXAMPLE_ZONE)

    assert spec.path == EXAMPLE_ZONE
    assert spec.origin == spec.name == "example.com"
    assert spec.ttl == 3600
    assert spec.soa == SOASpec(
        mname="ns1.example.com.",
        rname="hostmaster.example.com.",
        refresh=7200,
        retry=3600,
        expire=14 * DAY,
        minimum=300,
    )
    assert spec.ns == ("ns1.example.com.", "ns2.example.net.")
    assert spec.hosts == (("ns1.example.com.", ("192.0.2.53", "2001:db8::53")),)
    assert spec.lifetime == 30 * DAY
    assert spec.renew_before == 7 * DAY
    assert [
        (h.handle.ref, h.handle.tier, h.owner, h.resolver, h.lifetime, h.ttl, h.extra_tags)
        for h in spec.handles
    ] == [
        (
            "~example.com",
            Tier.SOVEREIGN,
            "_alter.example.com.",
            "https://mcp.example.com/api/v1/mcp",
            30 * DAY,
            3600,
            (),
        ),
        (
            "~blake",
            Tier.SOVEREIGN,
            "_alter.blake.example.com.",
            "https://mcp.example.com/blake",
            30 * DAY,
            3600,
            (),
        ),
        ("~drew", Tier.SOVEREIGN, "_alter.drew.example.com.", None, 30 * DAY, 3600, ()),
        ("~deploy.bot", Tier.BOT, "_alter.deploy.bot.example.com.", None, 7 * DAY, 3600, ()),
        (
            "~cc-opus-4-7",
            Tier.INSTRUMENT,
            "_alter.cc-opus-4-7.example.com.",
            None,
            DAY,
            3600,
            (("model", "claude-opus-4-7"),),
        ),
    ]
    assert all(h.where.startswith(f"{EXAMPLE_ZONE}:") for h in spec.handles)


def test_example_zone_find_is_case_insensitive() -> None:
    spec = load_zone(EXAMPLE_ZONE)

    found = spec.find("~Deploy.BOT")

    assert found is not None
    assert found.owner == "_alter.deploy.bot.example.com."
    assert spec.find("~nobody") is None


def test_example_zone_renewal_windows() -> None:
    spec = load_zone(EXAMPLE_ZONE)

    assert [spec.renew_window(h.lifetime or 0) for h in spec.handles] == [
        7 * DAY,
        7 * DAY,
        7 * DAY,
        DAY * 7 // 2,
        DAY // 2,
    ]


# --- defaults, names, handle entries ----------------------------------------------------


def test_minimal_definition_gets_the_defaults(tmp_path: Path) -> None:
    spec = load_text(tmp_path, "zone: example.com\nns: [ns1, ns2.example.net.]\nhandles:\n")

    assert spec.ttl == DEFAULT_TTL_SECONDS
    assert spec.soa == SOASpec(
        mname="ns1.example.com.",
        rname="hostmaster.example.com.",
        refresh=DEFAULT_SOA_REFRESH_SECONDS,
        retry=DEFAULT_SOA_RETRY_SECONDS,
        expire=DEFAULT_SOA_EXPIRE_SECONDS,
        minimum=DEFAULT_SOA_MINIMUM_SECONDS,
    )
    assert spec.hosts == ()
    assert spec.lifetime == DEFAULT_LIFETIME_SECONDS
    assert spec.renew_before == DEFAULT_RENEW_BEFORE_SECONDS
    assert spec.handles == ()


@pytest.mark.parametrize(
    ("written", "absolute"),
    [
        pytest.param("ns1", "ns1.example.com.", id="no-dot-is-relative"),
        pytest.param("ns2.example.net", "ns2.example.net.", id="dot-without-trailing-is-absolute"),
        pytest.param("www.sub", "www.sub.", id="two-labels-are-absolute"),
        pytest.param("ns2.example.net.", "ns2.example.net.", id="trailing-dot-is-absolute"),
        pytest.param("'@'", "example.com.", id="at-is-the-apex"),
        pytest.param("NS1.Example.COM.", "ns1.example.com.", id="lowercased"),
    ],
)
def test_name_server_names(tmp_path: Path, written: str, absolute: str) -> None:
    spec = load_text(tmp_path, f"zone: example.com\nns: [{written}]\nhandles: []\n")

    assert spec.ns == (absolute,)
    assert spec.soa.mname == absolute


def test_soa_and_host_names_follow_the_same_rules(tmp_path: Path) -> None:
    spec = load_text(
        tmp_path,
        "zone: example.com\nns: [ns1]\n"
        "soa: {mname: primary, rname: dns.example.net}\n"
        "hosts:\n  '@': 192.0.2.80\n  www: [192.0.2.80, '2001:DB8::0:80']\n"
        "  mail.example.com.: []\n"
        "handles: []\n",
    )

    assert (spec.soa.mname, spec.soa.rname) == ("primary.example.com.", "dns.example.net.")
    assert spec.hosts == (
        ("example.com.", ("192.0.2.80",)),
        ("www.example.com.", ("192.0.2.80", "2001:db8::80")),
        ("mail.example.com.", ()),
    )


def test_zone_name_is_normalised(tmp_path: Path) -> None:
    spec = load_text(tmp_path, "zone: Example.COM.\nns: [ns1]\nhandles: []\n")

    assert spec.origin == "example.com"


@pytest.mark.parametrize(
    "name", [pytest.param("example.com.yml", id="yml"), pytest.param("Example.COM.yaml", id="case")]
)
def test_file_name_variants_match_the_zone(tmp_path: Path, name: str) -> None:
    spec = load_text(tmp_path, "zone: example.com\nns: [ns1]\nhandles: []\n", name)

    assert spec.origin == "example.com"


def test_plain_and_mapping_entries_are_the_same_handle(tmp_path: Path) -> None:
    plain = load_text(tmp_path / "a", HEADER + "handles:\n  - ~Blake\n")
    mapping = load_text(tmp_path / "b", HEADER + "handles:\n  - handle: ~blake\n")

    assert without_positions(plain) == without_positions(mapping)
    assert plain.handles[0].where == f"{tmp_path / 'a' / ZONE_FILE}:4:5"
    assert mapping.handles[0].where == f"{tmp_path / 'b' / ZONE_FILE}:4:13"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param("https://", "has no host", id="scheme-only"),
        pytest.param("https:/x.example/a", "has no host", id="one-slash"),
        pytest.param("https://:443/a", "has no host", id="port-only"),
        pytest.param(
            "mcp.example.org/x", "has no scheme: write https://mcp.example.org/x", id="no-scheme"
        ),
        pytest.param("mcp.example.org:8443/x", "has no scheme", id="no-scheme-with-port"),
        pytest.param("urn:x:y", "scheme 'urn' is not http or https", id="urn"),
        pytest.param("ftp://x.example/", "scheme 'ftp' is not http or https", id="ftp"),
        pytest.param("https://a..b/", "host 'a..b'", id="empty-label"),
        pytest.param("https://-x.example/", "host '-x.example'", id="label-starts-with-hyphen"),
        pytest.param("https://x.example:99999/", "bad host or port", id="port-out-of-range"),
        pytest.param("https://[zz]/", "bad host or port", id="bad-ipv6"),
        pytest.param("https://u:p@x.example/", "user name or password", id="userinfo"),
        pytest.param("https://x.example/a;b", "without ';'", id="semicolon"),
        pytest.param("https://x.example/a b", "spaces", id="space"),
    ],
)
def test_resolver_must_be_an_absolute_http_uri_with_a_host(
    tmp_path: Path, value: str, problem: str
) -> None:
    path = write(tmp_path, HEADER + f"handles:\n  - handle: ~blake\n    resolver: '{value}'\n")

    error = definition_error(path)

    assert positions(error, path) == [(5, 15)]
    reason = error.reasons[0]
    assert f"{path}:5:15: handle '~blake': resolver {value!r}: " in reason
    assert problem in reason.rpartition(f"{value!r}: ")[2]


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("https://mcp.example.com/api/v1/mcp", id="vector"),
        pytest.param("http://x/", id="one-label-http"),
        pytest.param("HTTPS://MCP.Example.COM/A", id="upper-case"),
        pytest.param("https://192.0.2.1:8443/a?b=1&c=2#d", id="ipv4-port-query"),
        pytest.param("https://[2001:db8::1]/", id="ipv6"),
        pytest.param("https://mcp.example.com./x_y", id="absolute-host"),
    ],
)
def test_resolver_accepts_http_uris_with_a_host(tmp_path: Path, value: str) -> None:
    spec = load_text(tmp_path, HEADER + f"handles:\n  - handle: ~blake\n    resolver: '{value}'\n")

    assert spec.handles[0].resolver == value
    assert spec.handles[0].envelope_tags() == (("r", value),)


def test_handle_entry_overrides(tmp_path: Path) -> None:
    spec = load_text(
        tmp_path,
        HEADER + "ttl: 10m\nenvelopes: {lifetime: 1w, renew_before: 1d}\n"
        "handles:\n"
        "  - ~drew\n"
        "  - handle: ~blake\n"
        "    resolver: https://mcp.example.com/blake\n"
        "    lifetime: never\n"
        "    ttl: 30\n"
        "    tags: {team: platform, on_call: yes, shift: 3, ratio: 1.5}\n",
    )

    drew, blake = spec.handles
    assert (drew.lifetime, drew.ttl, drew.resolver, drew.extra_tags) == (7 * DAY, 600, None, ())
    assert (blake.lifetime, blake.ttl) == (None, 30)
    assert blake.extra_tags == (
        ("team", "platform"),
        ("on_call", "true"),
        ("shift", "3"),
        ("ratio", "1.5"),
    )
    assert blake.envelope_tags() == (("r", "https://mcp.example.com/blake"), *blake.extra_tags)
    assert drew.envelope_tags() == ()


@pytest.mark.parametrize(
    "written",
    [
        pytest.param("never", id="never"),
        pytest.param("NEVER", id="upper"),
        pytest.param("", id="empty"),
    ],
)
def test_never_lifetime(tmp_path: Path, written: str) -> None:
    spec = load_text(
        tmp_path, HEADER + f"envelopes:\n  lifetime: {written}\nhandles:\n  - ~a\n  - ~b\n"
    )

    assert spec.lifetime is None
    assert [h.lifetime for h in spec.handles] == [None, None]


@pytest.mark.parametrize(
    ("renew_before", "lifetime", "window"),
    [
        pytest.param("7d", "30d", 7 * DAY, id="renew-before-wins"),
        pytest.param("7d", "1d", DAY // 2, id="half-lifetime-wins"),
        pytest.param("7d", "14d", 7 * DAY, id="equal"),
        pytest.param("1h", "3s", 1, id="rounds-down"),
        pytest.param("0", "30d", 0, id="zero"),
    ],
)
def test_renew_window(tmp_path: Path, renew_before: str, lifetime: str, window: int) -> None:
    spec = load_text(
        tmp_path,
        HEADER
        + f"envelopes: {{renew_before: {renew_before}, lifetime: {lifetime}}}\nhandles: []\n",
    )

    assert spec.renew_window(parse_duration(lifetime)) == window


# --- errors: every problem with its position -------------------------------------------

# Each case is appended to HEADER (lines 1-2); `where` lists the (line, column) of every
# reason, and `token` is the offending field or value as written, found in the first reason.
PROBLEMS = [
    pytest.param("bogus: 1\nhandles: []\n", [(3, 1)], "bogus", id="unknown-top-level-field"),
    pytest.param("soa:\n  serial: 1\nhandles: []\n", [(4, 3)], "serial", id="unknown-soa-field"),
    pytest.param(
        "envelopes:\n  expiry: 1d\nhandles: []\n", [(4, 3)], "expiry", id="unknown-envelopes-field"
    ),
    pytest.param(
        "handles:\n  - handle: ~blake\n    colour: red\n",
        [(5, 5)],
        "colour",
        id="unknown-handle-field",
    ),
    pytest.param("handles:\n  - handle: ~Bl ake\n", [(4, 13)], "~Bl ake", id="bad-handle"),
    pytest.param("handles:\n  - ~a_b\n", [(4, 5)], "~a_b", id="bad-handle-plain-entry"),
    pytest.param("handles:\n  - blake\n", [(4, 5)], "blake", id="handle-without-tilde"),
    pytest.param("handles:\n  - ~cc-\n", [(4, 5)], "~cc-", id="handle-matches-no-tier"),
    pytest.param("handles:\n  - handle: 42\n", [(4, 13)], "42", id="handle-not-text"),
    pytest.param(
        "handles:\n  - ~blake\n  - handle: ~Blake\n", [(5, 5)], "~blake", id="duplicate-handle"
    ),
    pytest.param(
        "handles:\n  - ~example.org\n", [(4, 5)], "~example.org", id="handle-outside-zone"
    ),
    pytest.param(
        "handles:\n  - ~xexample.com\n", [(4, 5)], "~xexample.com", id="handle-outside-zone-suffix"
    ),
    pytest.param(
        "handles:\n  - resolver: https://x.example/\n",
        [(4, 5)],
        "handle",
        id="entry-without-handle",
    ),
    pytest.param("handles:\n  - 42\n", [(4, 5)], "handle entry", id="entry-not-a-mapping"),
    pytest.param("ttl: -5\nhandles: []\n", [(3, 6)], "-5", id="ttl-negative"),
    pytest.param("handles:\n  - handle: ~blake\n    ttl: soon\n", [(5, 10)], "soon", id="ttl-text"),
    pytest.param("ttl: 2147483648\nhandles: []\n", [(3, 6)], "2147483648", id="ttl-too-big"),
    pytest.param("ttl: 1.5\nhandles: []\n", [(3, 6)], "1.5", id="ttl-fraction"),
    pytest.param("ttl: true\nhandles: []\n", [(3, 6)], "True", id="ttl-boolean"),
    pytest.param(
        "soa:\n  refresh: 2147483648\nhandles: []\n",
        [(4, 12)],
        "2147483648",
        id="soa-timer-too-big",
    ),
    pytest.param(
        "envelopes:\n  renew_before: -1\nhandles: []\n", [(4, 17)], "-1", id="renew-before-negative"
    ),
    pytest.param("envelopes:\n  lifetime: 0\nhandles: []\n", [(4, 13)], "0", id="lifetime-zero"),
    pytest.param(
        "envelopes:\n  lifetime: -1d\nhandles: []\n", [(4, 13)], "-1d", id="lifetime-negative"
    ),
    pytest.param(
        "handles:\n  - handle: ~blake\n    lifetime: forever\n",
        [(5, 15)],
        "forever",
        id="lifetime-text",
    ),
    pytest.param(
        "handles:\n  - handle: ~blake\n    tags:\n      sig: x\n",
        [(6, 7)],
        "sig",
        id="reserved-tag",
    ),
    pytest.param(
        "handles:\n  - handle: ~blake\n    tags:\n      rev: x\n",
        [(6, 7)],
        "rev",
        id="reserved-tag-rev",
    ),
    pytest.param(
        "handles:\n  - handle: ~blake\n    tags:\n      Model: x\n",
        [(6, 7)],
        "Model",
        id="bad-tag-name",
    ),
    pytest.param(
        "handles:\n  - handle: ~blake\n    tags:\n      model: 'a b'\n",
        [(6, 14)],
        "model",
        id="tag-value-with-space",
    ),
    pytest.param(
        "handles:\n  - handle: ~blake\n    tags:\n      model: 'a;b'\n",
        [(6, 14)],
        "model",
        id="tag-value-with-semicolon",
    ),
    pytest.param(
        "handles:\n  - handle: ~blake\n    tags:\n      model: [a]\n",
        [(6, 14)],
        "model",
        id="tag-value-not-scalar",
    ),
    pytest.param(
        "handles:\n  - handle: ~blake\n    tags:\n      model:\n",
        [(6, 13)],
        "model",
        id="tag-value-empty",
    ),
    pytest.param(
        "handles:\n  - handle: ~blake\n    resolver: not a uri\n",
        [(5, 15)],
        "not a uri",
        id="bad-resolver",
    ),
    pytest.param(
        "handles:\n  - handle: ~blake\n    resolver: 'https://x.example/a;b'\n",
        [(5, 15)],
        "a;b",
        id="resolver-with-semicolon",
    ),
    pytest.param(
        "handles:\n  - handle: ~blake\n    resolver: https://exämple.com/\n",
        [(5, 15)],
        "https://ex",
        id="resolver-not-ascii",
    ),
    pytest.param(
        "hosts:\n  ns1: [192.0.2.1, 192.0.2.300]\nhandles: []\n",
        [(4, 20)],
        "192.0.2.300",
        id="bad-host-ip",
    ),
    pytest.param("hosts:\n  ns1: www\nhandles: []\n", [(4, 8)], "www", id="host-ip-is-a-name"),
    pytest.param(
        "hosts:\n  www.example.org.: [192.0.2.1]\nhandles: []\n",
        [(4, 3)],
        "www.example.org.",
        id="host-outside-zone",
    ),
    pytest.param(
        "hosts:\n  www.sub: [192.0.2.1]\nhandles: []\n",
        [(4, 3)],
        "www.sub.",
        id="host-with-dot-is-absolute",
    ),
    pytest.param("soa:\n  mname: a..b\nhandles: []\n", [(4, 10)], "a..b", id="bad-soa-name"),
    pytest.param("soa: [1]\nhandles: []\n", [(3, 6)], "soa", id="soa-not-a-mapping"),
    pytest.param("handles: {a: 1}\n", [(3, 10)], "handles", id="handles-not-a-list"),
    pytest.param("handles: []\nns: [ns2]\n", [(4, 1)], "ns", id="duplicate-yaml-key"),
]


@pytest.mark.parametrize(("text", "where", "token"), PROBLEMS)
def test_problem_position(
    tmp_path: Path, text: str, where: list[tuple[int, int]], token: str
) -> None:
    path = write(tmp_path, HEADER + text)

    error = definition_error(path)

    assert positions(error, path) == where
    assert token in error.reasons[0]
    assert str(error).startswith(error.reasons[0])
    assert error.exit_code == EXIT_DEFINITION


@pytest.mark.parametrize(
    ("text", "where"),
    [
        pytest.param("ttl: 1h\n", [(1, 1), (1, 1), (1, 1)], id="zone-ns-handles"),
        pytest.param("zone: example.com\nhandles: []\n", [(1, 1)], id="ns"),
        pytest.param("zone: example.com\nns: [ns1]\n", [(1, 1)], id="handles"),
        pytest.param("\nns: [ns1]\nhandles: []\n", [(2, 1)], id="zone-after-blank-line"),
    ],
)
def test_missing_required_fields(tmp_path: Path, text: str, where: list[tuple[int, int]]) -> None:
    path = write(tmp_path, text)

    assert positions(definition_error(path), path) == where


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("- a\n", id="sequence"),
        pytest.param("hello\n", id="scalar"),
        pytest.param("42\n", id="number"),
    ],
)
def test_document_that_is_not_a_mapping(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)

    error = definition_error(path)

    assert set(positions(error, path)) == {(1, 1)}


@pytest.mark.parametrize(
    ("text", "where"),
    [
        pytest.param("zone: example.org\nns: [ns1]\nhandles: []\n", [(1, 7)], id="other-zone"),
        pytest.param("zone: com\nns: [ns1]\nhandles: []\n", [(1, 7)], id="parent-zone"),
        pytest.param(
            "zone: '.'\nns: [ns1]\nhandles: []\n",
            [(1, 7)],
            id="root",
        ),
        pytest.param("zone: 42\nns: [ns1]\nhandles: []\n", [(1, 7)], id="not-text"),
        pytest.param("zone: example..com\nns: [ns1]\nhandles: []\n", [(1, 7)], id="empty-label"),
        pytest.param("zone: example.com\nns: []\nhandles: []\n", [(2, 5)], id="ns-empty"),
        pytest.param("zone: example.com\nns: ns1\nhandles: []\n", [(2, 5)], id="ns-not-a-list"),
        pytest.param("zone: example.com\nns: [1]\nhandles: []\n", [(2, 6)], id="ns-not-a-name"),
    ],
)
def test_zone_and_name_server_problems(
    tmp_path: Path, text: str, where: list[tuple[int, int]]
) -> None:
    path = write(tmp_path, text)

    assert positions(definition_error(path), path) == where


def test_zone_must_match_the_file_name(tmp_path: Path) -> None:
    path = write(tmp_path, "zone: example.com\nns: [ns1]\nhandles: []\n", "example.org.yaml")

    error = definition_error(path)

    assert positions(error, path) == [(1, 7)]
    assert "example.org.yaml" in error.reasons[0]


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "zone: example.com\n"  # 1
        "ttl: soon\n"  # 2: bad ttl
        "colour: red\n"  # 3: unknown field
        "ns: [ns1]\n"  # 4
        "soa:\n"  # 5
        "  serial: 7\n"  # 6: unknown soa field
        "hosts:\n"  # 7
        "  ns1: [192.0.2.999]\n"  # 8: bad IP
        "envelopes:\n"  # 9
        "  lifetime: 0\n"  # 10: bad lifetime
        "handles:\n"  # 11
        "  - ~Bl ake\n"  # 12: bad handle
        "  - ~blake\n"  # 13
        "  - handle: ~BLAKE\n"  # 14: duplicate handle
        "    tags: {sig: x}\n"  # 15: reserved tag
        "  - ~example.org\n",  # 16: outside the zone
    )

    error = definition_error(path)

    assert sorted(positions(error, path)) == [
        (2, 6),
        (3, 1),
        (6, 3),
        (8, 9),
        (10, 13),
        (12, 5),
        (14, 5),
        (15, 12),
        (16, 5),
    ]
    assert str(error).startswith(error.reasons[0])
    assert "\n" not in str(error)


@pytest.mark.parametrize(
    ("content", "where"),
    [
        pytest.param(b"zone: example.com\nfoo: bar: baz\n", (2, 9), id="yaml-syntax"),
        pytest.param(b"", (1, 1), id="empty"),
        pytest.param(b"zone: example.\xe9com\n", (1, 1), id="non-utf8"),
        pytest.param(None, (1, 1), id="missing-file"),
    ],
)
def test_file_problems_pass_through_load_zone(
    tmp_path: Path, content: bytes | None, where: tuple[int, int]
) -> None:
    path = tmp_path / ZONE_FILE
    if content is not None:
        path.write_bytes(content)

    error = definition_error(path)

    assert error.where == f"{path}:{where[0]}:{where[1]}"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        pytest.param("handles:\n  - handle: ~blake\n    tags: [a, b]\n", (5, 11), id="tags-list"),
        pytest.param("handles:\n  - handle: ~blake\n    tags: 5\n", (5, 11), id="tags-number"),
        pytest.param("hosts: [ns1]\nhandles: []\n", (3, 8), id="hosts-list"),
        pytest.param("hosts: 5\nhandles: []\n", (3, 8), id="hosts-number"),
    ],
)
def test_sections_of_the_wrong_type_are_definition_errors(
    tmp_path: Path, text: str, where: tuple[int, int]
) -> None:
    path = write(tmp_path, HEADER + text)

    assert positions(definition_error(path), path) == [where]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        pytest.param("zone: example.com\nns: ['ns 1']\nhandles: []\n", (2, 6), id="ns-space"),
        pytest.param(
            "zone: example.com\nns: [ns1]\nsoa: {rname: 'host;master'}\nhandles: []\n",
            (3, 14),
            id="rname-semicolon",
        ),
        pytest.param(
            "zone: example.com\nns: [ns1]\nhosts:\n  'ns(1': [192.0.2.1]\nhandles: []\n",
            (4, 3),
            id="host-parenthesis",
        ),
    ],
)
def test_names_that_break_zone_syntax_are_rejected(
    tmp_path: Path, text: str, where: tuple[int, int]
) -> None:
    path = write(tmp_path, text)

    assert positions(definition_error(path), path) == [where]


# --- round trip ---------------------------------------------------------------------------


def test_example_zone_round_trips(tmp_path: Path) -> None:
    spec = load_zone(EXAMPLE_ZONE)

    again = dump_and_reload(spec, tmp_path)

    assert without_positions(again) == without_positions(spec)
    assert again.path == tmp_path / ZONE_FILE


def test_round_trip_with_every_option(tmp_path: Path) -> None:
    spec = load_text(
        tmp_path / "src",
        "zone: example.com\nttl: 5m\nns: ['@', ns2.example.net]\n"
        "soa: {rname: dns.example.net., refresh: 1h30m}\n"
        "hosts:\n  '@': [192.0.2.1]\n  www: ['2001:db8::1']\n"
        "envelopes: {lifetime: never, renew_before: 0}\n"
        "handles:\n"
        "  - ~example.com\n"
        "  - handle: ~blake\n    lifetime: 90d\n    ttl: 1h\n"
        "    tags: {flag: true, count: 3, date: 2026-01-01, plain: 'null'}\n"
        "  - handle: ~cc-x\n    resolver: 'http://[2001:db8::1]:8080/x?y=1#z'\n",
    )

    again = dump_and_reload(spec, tmp_path / "out")

    assert without_positions(again) == without_positions(spec)


def test_round_trip_is_equal_except_path(tmp_path: Path) -> None:
    spec = load_zone(EXAMPLE_ZONE)

    again = dump_and_reload(spec, tmp_path)

    assert dataclasses.replace(again, path=spec.path) == spec


# --- property tests -----------------------------------------------------------------------

LABEL = st.from_regex(r"[a-z0-9-]{1,20}", fullmatch=True)
ALPHA_LABEL = st.from_regex(r"[a-z][a-z0-9-]{0,19}", fullmatch=True)


@st.composite
def dotted(draw: st.DrawFn, first: st.SearchStrategy[str], most: int = 3) -> str:
    """``first`` followed by up to ``most`` further labels, joined with dots."""
    return ".".join([draw(first), *draw(st.lists(LABEL, max_size=most))])


@st.composite
def handle_names(draw: st.DrawFn) -> tuple[str, Tier]:
    """A valid handle name (lowercase, no ~) and the tier it must have."""
    tier = draw(st.sampled_from(Tier))
    if tier is Tier.INSTRUMENT:
        rest = draw(st.from_regex(r"[a-z0-9-]{1,20}", fullmatch=True))
        return draw(dotted(st.just("cc-" + rest), most=2)), tier
    name = draw(dotted(ALPHA_LABEL).filter(lambda n: not n.startswith("cc-")))
    if tier is Tier.BOT:
        return name + ".bot", tier
    return name, Tier.SOVEREIGN if not name.endswith(".bot") else Tier.BOT


@given(st.integers(min_value=0, max_value=10**9))
def test_duration_round_trips(seconds: int) -> None:
    text = format_duration(seconds)

    assert parse_duration(text) == seconds
    assert parse_duration(text.upper()) == seconds
    assert parse_duration(str(seconds)) == seconds
    assert parse_duration(seconds) == seconds


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("30d", 30 * DAY, id="days"),
        pytest.param("1h30m", 5400, id="hours-minutes"),
        pytest.param("2w", 14 * DAY, id="weeks"),
        pytest.param(" 90S ", 90, id="spaces-and-case"),
        pytest.param("3600", 3600, id="digits"),
        pytest.param("0s", 0, id="zero"),
    ],
)
def test_duration_examples(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("", id="empty"),
        pytest.param("-5", id="negative-text"),
        pytest.param(-1, id="negative-int"),
        pytest.param("1.5h", id="fraction"),
        pytest.param("1 h", id="inner-space"),
        pytest.param("h", id="unit-only"),
        pytest.param("5y", id="unknown-unit"),
        pytest.param(True, id="boolean"),
        pytest.param(1.0, id="float"),
        pytest.param(None, id="none"),
    ],
)
def test_duration_rejects(value: Any) -> None:
    with pytest.raises(ValueError, match=r".+"):
        parse_duration(value)


@given(st.text())
def test_parse_duration_raises_only_value_error(text: str) -> None:
    try:
        seconds = parse_duration(text)
    except ValueError:
        return
    assert seconds >= 0


@given(handle_names())
def test_handle_round_trips(case: tuple[str, Tier]) -> None:
    name, tier = case

    handle = parse_handle("~" + name)

    assert (handle.name, handle.tier) == (name, tier)
    assert parse_handle(handle.ref) == handle
    assert parse_handle("~" + name.upper()) == handle
    assert handle.owner("example.com") in (
        f"_alter.{name}.",
        f"_alter.{name}.example.com.",
    )


@given(handle_names(), st.sampled_from(["_", " ", "..", "é", "~", "A_"]), st.data())
def test_handle_with_a_bad_character_is_malformed(
    case: tuple[str, Tier], bad: str, data: st.DataObject
) -> None:
    name, _ = case
    at = data.draw(st.integers(min_value=0, max_value=len(name)))

    with pytest.raises(HandleError) as info:
        parse_handle("~" + name[:at] + bad + name[at:])

    assert info.value.category == "malformed-handle"


DURATIONS = st.integers(min_value=1, max_value=TTL_MAX_SECONDS)
TAG_VALUES = st.from_regex(r"[\x21-\x3a\x3c-\x7e]{1,12}", fullmatch=True)
TAG_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda n: n not in {"v", "h", "e", "k", "p", "t", "x", "log", "rc", "r", "psig", "sig", "rev"}
)


@st.composite
def handle_entries(draw: st.DrawFn) -> dict[str, Any]:
    """A handle entry for a zone named example.com (always inside the zone)."""
    name, tier = draw(handle_names())
    if tier is Tier.SOVEREIGN and "." in name:
        name = name.split(".", 1)[0] + "-x"  # a domain handle would lie outside the zone
    entry: dict[str, Any] = {"handle": "~" + name}
    if draw(st.booleans()):
        entry["resolver"] = "https://mcp.example.com/" + draw(ALPHA_LABEL)
    if draw(st.booleans()):
        entry["lifetime"] = draw(st.one_of(st.just("never"), DURATIONS))
    if draw(st.booleans()):
        entry["ttl"] = draw(st.integers(min_value=0, max_value=TTL_MAX_SECONDS))
    tags = draw(st.dictionaries(TAG_NAMES, TAG_VALUES, max_size=3))
    if tags:
        entry["tags"] = tags
    return entry


@settings(max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ttl=st.integers(min_value=0, max_value=TTL_MAX_SECONDS),
    lifetime=st.one_of(st.just("never"), DURATIONS),
    renew_before=st.integers(min_value=0, max_value=TTL_MAX_SECONDS),
    handles=st.lists(handle_entries(), max_size=5, unique_by=lambda e: str(e["handle"])),
)
def test_generated_definitions_round_trip(
    tmp_path: Path, ttl: int, lifetime: str | int, renew_before: int, handles: list[dict[str, Any]]
) -> None:
    definition = {
        "zone": "example.com",
        "ttl": ttl,
        "ns": ["ns1"],
        "envelopes": {"lifetime": lifetime, "renew_before": renew_before},
        "handles": handles,
    }
    spec = load_text(tmp_path / "src", yaml.safe_dump(definition, sort_keys=False))

    again = dump_and_reload(spec, tmp_path / "out")

    assert without_positions(again) == without_positions(spec)
    assert [h.handle.ref for h in spec.handles] == [e["handle"] for e in handles]
