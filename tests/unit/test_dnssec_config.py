"""The ``dnssec:`` section of a zone definition: defaults, checks with positions, warnings."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alter_publish.definition.model import (
    DEFAULT_SIGNATURE_REFRESH_SECONDS,
    DEFAULT_SIGNATURE_VALIDITY_SECONDS,
    NSEC3_ITERATIONS_MAX,
    NSEC3_SALT_MAX_OCTETS,
    SIGNATURE_VALIDITY_MAX_SECONDS,
    SIGNATURE_VALIDITY_MIN_SECONDS,
    TTL_MAX_SECONDS,
    DNSSECSpec,
    ZoneSpec,
    load_zone,
)
from alter_publish.errors import EXIT_DEFINITION, DefinitionError

EXAMPLE_ZONE = Path(__file__).resolve().parents[2] / "zones" / "example.com.yaml"
ZONE_FILE = "example.com.yaml"
# Three lines every case starts with; the ``dnssec:`` section begins on line 4.
HEADER = "zone: example.com\nns: [ns1]\nhandles: []\n"
DAY = 86400
HOUR = 3600


def load_text(directory: Path, text: str) -> ZoneSpec:
    """Load ``HEADER + text`` written to ``directory/example.com.yaml``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / ZONE_FILE
    path.write_text(HEADER + text, encoding="utf-8")
    return load_zone(path)


def load_error(directory: Path, text: str) -> DefinitionError:
    """The DefinitionError loading ``HEADER + text`` raises."""
    with pytest.raises(DefinitionError) as info:
        load_text(directory, text)
    return info.value


def located(error: DefinitionError, path: Path) -> list[tuple[int, int, str]]:
    """(line, column, what) of every reason; each must name ``path``."""
    found: list[tuple[int, int, str]] = []
    for reason in error.reasons:
        assert reason.startswith(f"{path}:"), reason
        line, column, what = reason[len(str(path)) + 1 :].split(":", 2)
        found.append((int(line), int(column), what.strip()))
    return found


def dump_and_reload(spec: ZoneSpec, directory: Path) -> ZoneSpec:
    """Write ``spec.to_mapping()`` with yaml.safe_dump and load it again."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / ZONE_FILE
    path.write_text(yaml.safe_dump(spec.to_mapping(), sort_keys=False), encoding="utf-8")
    return load_zone(path)


# --- defaults and accepted values ----------------------------------------------------


def test_absent_section_means_signed_with_nsec(tmp_path: Path) -> None:
    spec = load_text(tmp_path, "")
    assert spec.dnssec == DNSSECSpec()
    assert spec.dnssec == DNSSECSpec(
        enabled=True,
        denial="nsec",
        nsec3_iterations=0,
        nsec3_salt="",
        signature_validity=DEFAULT_SIGNATURE_VALIDITY_SECONDS,
        refresh=DEFAULT_SIGNATURE_REFRESH_SECONDS,
    )
    assert (DEFAULT_SIGNATURE_VALIDITY_SECONDS, DEFAULT_SIGNATURE_REFRESH_SECONDS) == (
        14 * DAY,
        5 * DAY,
    )
    assert spec.warnings() == ()


def test_example_zone_uses_nsec3_per_rfc9276() -> None:
    spec = load_zone(EXAMPLE_ZONE)
    assert spec.dnssec == DNSSECSpec(denial="nsec3", nsec3_iterations=0, nsec3_salt="")
    assert spec.warnings() == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("dnssec: false\n", DNSSECSpec(enabled=False), id="shorthand-false"),
        pytest.param("dnssec: true\n", DNSSECSpec(), id="shorthand-true"),
        pytest.param("dnssec: {}\n", DNSSECSpec(), id="empty-mapping"),
        pytest.param("dnssec:\n  enabled: false\n", DNSSECSpec(enabled=False), id="enabled-false"),
        pytest.param("dnssec:\n  denial: nsec3\n", DNSSECSpec(denial="nsec3"), id="nsec3"),
        pytest.param(
            "dnssec:\n  denial: ' NSEC3 '\n", DNSSECSpec(denial="nsec3"), id="denial-normalised"
        ),
        pytest.param(
            "dnssec:\n  denial: nsec3\n  nsec3: {iterations: 10, salt: AABB}\n",
            DNSSECSpec(denial="nsec3", nsec3_iterations=10, nsec3_salt="aabb"),
            id="nsec3-iterations-and-salt-lowercased",
        ),
        pytest.param(
            "dnssec:\n  nsec3: {salt: '-'}\n", DNSSECSpec(nsec3_salt=""), id="salt-dash-is-none"
        ),
        pytest.param("dnssec:\n  nsec3: {salt: ''}\n", DNSSECSpec(), id="salt-empty-is-none"),
        pytest.param("dnssec:\n  nsec3: {salt: null}\n", DNSSECSpec(), id="salt-null-is-none"),
        pytest.param("dnssec:\n  nsec3: {}\n", DNSSECSpec(), id="nsec3-empty"),
        pytest.param(
            f"dnssec:\n  nsec3: {{iterations: {NSEC3_ITERATIONS_MAX}}}\n",
            DNSSECSpec(nsec3_iterations=NSEC3_ITERATIONS_MAX),
            id="iterations-at-max",
        ),
        pytest.param(
            f"dnssec:\n  nsec3: {{salt: {'ab' * NSEC3_SALT_MAX_OCTETS}}}\n",
            DNSSECSpec(nsec3_salt="ab" * NSEC3_SALT_MAX_OCTETS),
            id="salt-at-max-octets",
        ),
        pytest.param(
            "dnssec:\n  signature_validity: 30d\n  refresh: 1w\n",
            DNSSECSpec(signature_validity=30 * DAY, refresh=7 * DAY),
            id="durations",
        ),
        pytest.param(
            "dnssec:\n  signature_validity: 2h\n  refresh: 1s\n",
            DNSSECSpec(signature_validity=SIGNATURE_VALIDITY_MIN_SECONDS, refresh=1),
            id="validity-at-min-refresh-1s",
        ),
        pytest.param(
            "dnssec:\n  signature_validity: 7200\n  refresh: 7199\n",
            DNSSECSpec(signature_validity=2 * HOUR, refresh=2 * HOUR - 1),
            id="plain-seconds-refresh-just-below",
        ),
    ],
)
def test_accepted_sections(tmp_path: Path, text: str, expected: DNSSECSpec) -> None:
    assert load_text(tmp_path, text).dnssec == expected


# --- problems, each with its position ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where", "fragment"),
    [
        pytest.param("dnssec:\n", (4, 8), "dnssec must be a mapping", id="section-null"),
        pytest.param("dnssec: 1\n", (4, 9), "dnssec must be a mapping", id="section-number"),
        pytest.param("dnssec: [a]\n", (4, 9), "dnssec must be a mapping", id="section-list"),
        pytest.param(
            "dnssec:\n  colour: red\n", (5, 3), "unknown field 'colour' in dnssec", id="unknown"
        ),
        pytest.param(
            "dnssec:\n  enabled: 'true'\n",
            (5, 12),
            "dnssec enabled must be true or false",
            id="enabled-string",
        ),
        pytest.param(
            "dnssec:\n  enabled: 1\n",
            (5, 12),
            "dnssec enabled must be true or false",
            id="enabled-number",
        ),
        pytest.param(
            "dnssec:\n  denial: nsec5\n", (5, 11), "bad dnssec denial 'nsec5'", id="denial-nsec5"
        ),
        pytest.param(
            "dnssec:\n  denial:\n",
            (5, 10),
            "bad dnssec denial: use nsec or nsec3",
            id="denial-null",
        ),
        pytest.param(
            "dnssec:\n  nsec3: 5\n", (5, 10), "dnssec nsec3 must be a mapping", id="nsec3-number"
        ),
        pytest.param(
            "dnssec:\n  nsec3:\n    hash: sha1\n",
            (6, 5),
            "unknown field 'hash' in dnssec nsec3",
            id="nsec3-unknown-field",
        ),
        pytest.param(
            f"dnssec:\n  nsec3:\n    iterations: {NSEC3_ITERATIONS_MAX + 1}\n",
            (6, 17),
            "bad nsec3 iterations 151",
            id="iterations-151",
        ),
        pytest.param(
            "dnssec:\n  nsec3:\n    iterations: -1\n",
            (6, 17),
            "bad nsec3 iterations -1",
            id="iterations-negative",
        ),
        pytest.param(
            "dnssec:\n  nsec3:\n    iterations: '5'\n",
            (6, 17),
            "bad nsec3 iterations '5'",
            id="iterations-string",
        ),
        pytest.param(
            "dnssec:\n  nsec3:\n    iterations: 1.5\n",
            (6, 17),
            "bad nsec3 iterations 1.5",
            id="iterations-float",
        ),
        pytest.param(
            "dnssec:\n  nsec3:\n    iterations: true\n",
            (6, 17),
            "bad nsec3 iterations True",
            id="iterations-bool",
        ),
        pytest.param(
            "dnssec:\n  nsec3:\n    salt: xyz\n", (6, 11), "bad nsec3 salt 'xyz'", id="salt-not-hex"
        ),
        pytest.param(
            "dnssec:\n  nsec3:\n    salt: abc\n", (6, 11), "bad nsec3 salt 'abc'", id="salt-odd"
        ),
        pytest.param(
            f"dnssec:\n  nsec3:\n    salt: {'ab' * (NSEC3_SALT_MAX_OCTETS + 1)}\n",
            (6, 11),
            "bad nsec3 salt",
            id="salt-256-octets",
        ),
        pytest.param(
            "dnssec:\n  signature_validity: 1h\n",
            (5, 23),
            "signature_validity must be at least 2h",
            id="validity-1h",
        ),
        pytest.param(
            "dnssec:\n  signature_validity: 7199\n",
            (5, 23),
            "signature_validity must be at least 2h",
            id="validity-just-below-2h",
        ),
        pytest.param(
            "dnssec:\n  signature_validity: soon\n",
            (5, 23),
            "bad signature_validity 'soon'",
            id="validity-not-a-duration",
        ),
        pytest.param(
            f"dnssec:\n  signature_validity: {TTL_MAX_SECONDS + 1}\n",
            (5, 23),
            "bad signature_validity",
            id="validity-over-2**31-1",
        ),
        pytest.param(
            "dnssec:\n  signature_validity: 3661d\n",
            (5, 23),
            "signature_validity must be at most 3660d",
            id="validity-above-max",
        ),
        pytest.param(
            "dnssec:\n  refresh: 0\n", (5, 12), "refresh must be above 0", id="refresh-zero"
        ),
        pytest.param(
            "dnssec:\n  refresh: 14d\n",
            (5, 12),
            "refresh must be above 0 and below signature_validity (2w)",
            id="refresh-equals-validity",
        ),
        pytest.param(
            "dnssec:\n  signature_validity: 3d\n  refresh: 4d\n",
            (6, 12),
            "refresh must be above 0 and below signature_validity (3d)",
            id="refresh-over-validity",
        ),
        pytest.param("dnssec:\n  refresh: -1\n", (5, 12), "bad refresh -1", id="refresh-negative"),
        pytest.param(
            # refresh is not written: the problem points at the section itself.
            "dnssec:\n  signature_validity: 2h\n",
            (5, 3),
            "refresh must be above 0 and below signature_validity (2h)",
            id="default-refresh-over-short-validity",
        ),
    ],
)
def test_bad_values_are_reported_with_their_position(
    tmp_path: Path, text: str, where: tuple[int, int], fragment: str
) -> None:
    error = load_error(tmp_path, text)
    assert error.category == "definition"
    assert error.exit_code == EXIT_DEFINITION
    ((line, column, what),) = located(error, tmp_path / ZONE_FILE)
    assert (line, column) == where
    assert what.startswith(fragment), what


def test_every_dnssec_problem_is_collected_with_the_others(tmp_path: Path) -> None:
    text = (
        "ttl: abc\n"  # line 4
        "dnssec:\n"
        "  enabled: maybe\n"  # 6
        "  denial: nsec5\n"  # 7
        "  nsec3:\n"
        "    iterations: 500\n"  # 9
        "    salt: zz\n"  # 10
        "  signature_validity: 1h\n"  # 11
        "  colour: red\n"  # 12
        "colour: blue\n"  # 13
    )
    error = load_error(tmp_path, text)
    found = located(error, tmp_path / ZONE_FILE)
    assert sorted(line for line, _, _ in found) == [4, 6, 7, 9, 10, 11, 12, 13]
    assert len(error.reasons) == 8
    assert str(error).startswith(error.reasons[0])
    assert str(error).endswith("(+7 more problems)")


def test_refresh_is_checked_only_when_validity_is_sound(tmp_path: Path) -> None:
    # A too-short validity is the problem; refresh against it would be a second, derived one.
    error = load_error(tmp_path, "dnssec:\n  signature_validity: 1h\n  refresh: 2h\n")
    assert [(line, column) for line, column, _ in located(error, tmp_path / ZONE_FILE)] == [(5, 23)]


def test_unquoted_numeric_salt_is_not_silently_changed(tmp_path: Path) -> None:
    # YAML 1.1 reads an unquoted 0012 as octal 10: refused, never silently the salt "10".
    error = load_error(tmp_path, "dnssec:\n  denial: nsec3\n  nsec3:\n    salt: 0012\n")
    assert "quoted text" in str(error)
    quoted = load_text(tmp_path, 'dnssec:\n  denial: nsec3\n  nsec3:\n    salt: "0012"\n')
    assert quoted.dnssec.nsec3_salt == "0012"


# --- warnings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "count", "fragments"),
    [
        pytest.param(DNSSECSpec(), 0, (), id="default"),
        pytest.param(DNSSECSpec(denial="nsec3"), 0, (), id="nsec3-rfc9276"),
        pytest.param(DNSSECSpec(enabled=False), 1, ("DNSSEC is OFF",), id="off"),
        pytest.param(
            DNSSECSpec(enabled=False, denial="nsec3", nsec3_iterations=5, nsec3_salt="ab"),
            1,
            ("DNSSEC is OFF",),
            id="off-hides-nsec3-settings",
        ),
        pytest.param(
            DNSSECSpec(denial="nsec3", nsec3_iterations=5),
            1,
            ("NSEC3 iterations 5",),
            id="nsec3-iterations",
        ),
        pytest.param(
            DNSSECSpec(denial="nsec3", nsec3_salt="ab"), 1, ("NSEC3 salt",), id="nsec3-salt"
        ),
        pytest.param(
            DNSSECSpec(denial="nsec3", nsec3_iterations=1, nsec3_salt="ab"),
            2,
            ("NSEC3 iterations 1", "NSEC3 salt"),
            id="nsec3-both",
        ),
        pytest.param(
            DNSSECSpec(denial="nsec", nsec3_iterations=5, nsec3_salt="ab"),
            0,
            (),
            id="nsec-ignores-nsec3-settings",
        ),
    ],
)
def test_dnssec_warnings(spec: DNSSECSpec, count: int, fragments: tuple[str, ...]) -> None:
    warnings = spec.warnings()
    assert len(warnings) == count
    for warning, fragment in zip(warnings, fragments, strict=True):
        assert warning.startswith(fragment), warning


@pytest.mark.parametrize(
    ("text", "count"),
    [
        pytest.param("dnssec: false\n", 1, id="off"),
        pytest.param(
            "dnssec:\n  denial: nsec3\n  nsec3: {iterations: 3, salt: beef}\n", 2, id="nsec3"
        ),
        pytest.param("dnssec:\n  denial: nsec3\n", 0, id="clean"),
    ],
)
def test_zone_warnings_name_the_definition(tmp_path: Path, text: str, count: int) -> None:
    spec = load_text(tmp_path, text)
    warnings = spec.warnings()
    assert len(warnings) == count
    assert warnings == tuple(f"{tmp_path / ZONE_FILE}: {w}" for w in spec.dnssec.warnings())


# --- round trip ----------------------------------------------------------------------


def test_to_mapping_writes_every_field() -> None:
    assert DNSSECSpec().to_mapping() == {
        "enabled": True,
        "denial": "nsec",
        "nsec3": {"iterations": 0, "salt": "-"},
        "signature_validity": 14 * DAY,
        "refresh": 5 * DAY,
        "rollover": {
            "propagation_delay": HOUR,
            "parent_ds_ttl": DAY,
            "parent_propagation_delay": HOUR,
        },
    }
    assert "rollover" not in DNSSECSpec().signing_mapping()
    spec = DNSSECSpec(denial="nsec3", nsec3_iterations=2, nsec3_salt="ab")
    assert spec.to_mapping()["nsec3"] == {"iterations": 2, "salt": "ab"}


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="absent"),
        pytest.param("dnssec: false\n", id="off"),
        pytest.param(
            "dnssec:\n  denial: nsec3\n  nsec3: {iterations: 7, salt: '00ff'}\n"
            "  signature_validity: 3d\n  refresh: 1d\n"
            "  rollover: {propagation_delay: 2h, parent_ds_ttl: 2d,\n"
            "             parent_propagation_delay: 30m}\n",
            id="nsec3-every-field",
        ),
    ],
)
def test_zone_round_trips_with_its_dnssec_section(tmp_path: Path, text: str) -> None:
    spec = load_text(tmp_path / "src", text)
    again = dump_and_reload(spec, tmp_path / "out")
    assert again.dnssec == spec.dnssec
    assert dataclasses.replace(again, path=spec.path) == spec


def test_example_zone_round_trips_with_its_dnssec_section(tmp_path: Path) -> None:
    spec = load_zone(EXAMPLE_ZONE)
    assert spec.to_mapping()["dnssec"] == {
        "enabled": True,
        "denial": "nsec3",
        "nsec3": {"iterations": 0, "salt": "-"},
        "signature_validity": 14 * DAY,
        "refresh": 5 * DAY,
        "rollover": {
            "propagation_delay": HOUR,
            "parent_ds_ttl": DAY,
            "parent_propagation_delay": HOUR,
        },
    }
    assert dump_and_reload(spec, tmp_path).dnssec == spec.dnssec


@st.composite
def dnssec_specs(draw: st.DrawFn) -> DNSSECSpec:
    """Any DNSSECSpec the loader accepts."""
    validity = draw(
        st.integers(
            min_value=SIGNATURE_VALIDITY_MIN_SECONDS, max_value=SIGNATURE_VALIDITY_MAX_SECONDS
        )
    )
    salt = draw(st.binary(max_size=NSEC3_SALT_MAX_OCTETS)).hex()
    return DNSSECSpec(
        enabled=draw(st.booleans()),
        denial=draw(st.sampled_from(["nsec", "nsec3"])),
        nsec3_iterations=draw(st.integers(min_value=0, max_value=NSEC3_ITERATIONS_MAX)),
        nsec3_salt=salt,
        signature_validity=validity,
        refresh=draw(st.integers(min_value=1, max_value=validity - 1)),
    )


@settings(max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=dnssec_specs())
def test_generated_dnssec_sections_round_trip(tmp_path: Path, spec: DNSSECSpec) -> None:
    definition: dict[str, Any] = {
        "zone": "example.com",
        "ns": ["ns1"],
        "dnssec": spec.to_mapping(),
        "handles": [],
    }
    path = tmp_path / ZONE_FILE
    path.write_text(yaml.safe_dump(definition, sort_keys=False), encoding="utf-8")
    assert load_zone(path).dnssec == spec
