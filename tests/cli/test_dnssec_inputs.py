"""DNSSEC on the command line: keygen, ds, sign's warnings and DS, and bad DNSSEC inputs.

Bad inputs follow the contract of test_bad_inputs.py: the documented exit code,
one ``alter-publish: error:`` line on stderr, no traceback, and every file in
the workspace left byte-for-byte and mode-for-mode as the case set it up.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.errors import EXIT_DEFINITION, EXIT_KEY, EXIT_OK, EXIT_OUTPUT, EXIT_USAGE
from alter_publish.keys.store import KeyStore
from tests.cli.workspace import (
    NOW,
    ZONE,
    Result,
    Workspace,
    assert_one_error_line,
    assert_unchanged,
    simulated,
)

DEFINITION_ARG = f"zones/{ZONE}.yaml"
SIGN = ("sign", *simulated(), DEFINITION_ARG)
VERIFY = ("verify", "--now", str(NOW), DEFINITION_ARG)
DS_FILE = f"build/{ZONE}.ds"
WARNING_PREFIX = "alter-publish: WARNING: "
DS_PREFIX = f"{ZONE}: DS for the parent zone: "


def _line_of(text: str, marker: str) -> int:
    """1-based number of the only line containing ``marker``."""
    hits = [n for n, line in enumerate(text.splitlines(), 1) if marker in line]
    assert len(hits) == 1, f"marker {marker!r} is on lines {hits}"
    return hits[0]


def _sub(text: str, pattern: str, replacement: str) -> str:
    result, count = re.subn(pattern, replacement, text, count=1, flags=re.MULTILINE)
    assert count == 1, f"{pattern!r} not found"
    return result


def _zone_keys_dir(ws: Workspace) -> Path:
    return ws.root / "keys" / ZONE / "_dnssec"


def _ds_lines(result: Result) -> list[str]:
    """The DS records a command printed on stdout."""
    return [
        line.removeprefix(DS_PREFIX) for line in result.stdout.splitlines() if DS_PREFIX in line
    ]


# --- bad dnssec: values in the definition (exit 3) -----------------------------------


@dataclass(frozen=True, slots=True)
class YamlCase:
    """Replace ``pattern`` in the definition; the one error line points at ``marker``."""

    pattern: str
    replacement: str
    marker: str
    fragment: str


YAML_CASES = {
    "dnssec-not-a-mapping": YamlCase(
        r"^dnssec:.*\n(?:  .*\n)+", "dnssec: 1\n", "dnssec: 1", "dnssec must be a mapping"
    ),
    "dnssec-unknown-field": YamlCase(
        r"^  enabled: true$",
        "  enabled: true\n  colour: red",
        "colour: red",
        "unknown field 'colour' in dnssec",
    ),
    "dnssec-enabled-not-bool": YamlCase(
        r"^  enabled: true$",
        "  enabled: maybe",
        "enabled: maybe",
        "dnssec enabled must be true or false",
    ),
    "dnssec-denial-unknown": YamlCase(
        r"^  denial: nsec3 ", "  denial: nsec5 ", "denial: nsec5", "bad dnssec denial"
    ),
    "dnssec-nsec3-iterations-151": YamlCase(
        r"^    iterations: 0 ", "    iterations: 151 ", "iterations: 151", "bad nsec3 iterations"
    ),
    "dnssec-nsec3-salt-not-hex": YamlCase(
        r'^    salt: "-" ', "    salt: xyz ", "salt: xyz", "bad nsec3 salt"
    ),
    "dnssec-validity-below-2h": YamlCase(
        r"^  signature_validity: 14d ",
        "  signature_validity: 1h ",
        "signature_validity: 1h",
        "signature_validity must be at least 2h",
    ),
    "dnssec-refresh-zero": YamlCase(
        r"^  refresh: 5d ", "  refresh: 0 ", "refresh: 0", "refresh must be above 0"
    ),
    "dnssec-refresh-over-validity": YamlCase(
        r"^  refresh: 5d ", "  refresh: 3w ", "refresh: 3w", "refresh must be above 0"
    ),
}


@pytest.mark.parametrize("case", YAML_CASES.values(), ids=YAML_CASES.keys())
def test_bad_dnssec_value_gives_one_line_with_its_position(
    case: YamlCase, workspace: Workspace
) -> None:
    text = _sub(workspace.definition.read_text(encoding="utf-8"), case.pattern, case.replacement)
    workspace.definition.write_text(text, encoding="utf-8")
    before = workspace.snapshot()

    result = workspace.run(*SIGN)

    line = assert_one_error_line(result, EXIT_DEFINITION)
    where = rf"{re.escape(DEFINITION_ARG)}:{_line_of(text, case.marker)}:\d+: "
    assert re.match(where, line), result.describe()
    assert case.fragment in line, result.describe()
    assert_unchanged(before, workspace.snapshot())


def test_three_dnssec_problems_give_three_lines(workspace: Workspace) -> None:
    text = workspace.definition.read_text(encoding="utf-8")
    text = _sub(text, r"^  denial: nsec3 ", "  denial: nsec5 ")
    text = _sub(text, r'^    salt: "-" ', "    salt: xyz ")
    text = _sub(text, r"^  refresh: 5d ", "  refresh: 0 ")
    workspace.definition.write_text(text, encoding="utf-8")
    before = workspace.snapshot()

    result = workspace.run(*SIGN)

    assert result.returncode == EXIT_DEFINITION, result.describe()
    assert "Traceback" not in result.stderr, result.describe()
    found = []
    for line in result.stderr_lines:
        match = re.match(rf"alter-publish: error: {re.escape(DEFINITION_ARG)}:(\d+):\d+: ", line)
        assert match, result.describe()
        found.append(int(match.group(1)))
    expected = [_line_of(text, m) for m in ("denial: nsec5", "salt: xyz", "refresh: 0 ")]
    assert sorted(found) == sorted(expected), result.describe()
    assert_unchanged(before, workspace.snapshot())


# --- trust anchor files (exit 2) -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class AnchorCase:
    """A trust anchor file (None: it does not exist) and where its error must point."""

    text: str | None
    where: str
    fragment: str


ANCHOR_FILE = "anchor.ds"
ANCHOR_CASES = {
    "anchor-missing-file": AnchorCase(None, f"{ANCHOR_FILE}: ", "cannot read trust anchors"),
    "anchor-bad-ds-line": AnchorCase(
        f"; our DS\n{ZONE}. IN DS 1 15 2 not-hex\n", f"{ANCHOR_FILE}:2: ", "bad DS rdata"
    ),
    "anchor-a-record": AnchorCase(
        f"; comment\n\n{ZONE}. 300 IN A 192.0.2.1\n",
        f"{ANCHOR_FILE}:3: ",
        "expected a DS or DNSKEY record, got 'A'",
    ),
    "anchor-empty-file": AnchorCase(
        "; nothing here\n", f"{ANCHOR_FILE}: ", "no DS or DNSKEY records"
    ),
}


def _write_anchor(ws: Workspace, case: AnchorCase) -> None:
    if case.text is not None:
        (ws.root / ANCHOR_FILE).write_text(case.text, encoding="utf-8")


@pytest.mark.parametrize("case", ANCHOR_CASES.values(), ids=ANCHOR_CASES.keys())
def test_verify_with_a_bad_trust_anchor_file(case: AnchorCase, workspace: Workspace) -> None:
    _write_anchor(workspace, case)
    before = workspace.snapshot()

    result = workspace.run(*VERIFY, "--trust-anchor", ANCHOR_FILE)

    line = assert_one_error_line(result, EXIT_USAGE)
    assert line.startswith(case.where), result.describe()
    assert case.fragment in line, result.describe()
    assert_unchanged(before, workspace.snapshot())


@pytest.mark.parametrize(
    "case",
    [
        ANCHOR_CASES[name]
        for name in ("anchor-missing-file", "anchor-bad-ds-line", "anchor-a-record")
    ],
    ids=["anchor-missing-file", "anchor-bad-ds-line", "anchor-a-record"],
)
def test_resolve_with_a_bad_trust_anchor_file_fails_before_any_query(
    case: AnchorCase, workspace: Workspace
) -> None:
    _write_anchor(workspace, case)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as trap:
        trap.bind(("127.0.0.1", 0))
        port = trap.getsockname()[1]
        before = workspace.snapshot()

        result = workspace.run(
            "resolve",
            "~blake",
            "--substrate",
            ZONE,
            "--server",
            f"127.0.0.1:{port}",
            "--trust-anchor",
            ANCHOR_FILE,
        )

        trap.setblocking(False)
        with pytest.raises(BlockingIOError):
            trap.recv(65535)
    line = assert_one_error_line(result, EXIT_USAGE)
    assert line.startswith(case.where), result.describe()
    assert case.fragment in line, result.describe()
    assert_unchanged(before, workspace.snapshot())


# --- zone keys on disk (exit 4) ------------------------------------------------------


def _pem_of(ws: Workspace, role: str) -> Path:
    (path,) = _zone_keys_dir(ws).glob(f"{role}-*.pem")
    return path


def _zone_key_mode_0644(ws: Workspace) -> tuple[str, ...]:
    path = _pem_of(ws, "zsk")
    path.chmod(0o644)
    return (str(path.relative_to(ws.root)), "chmod 600")


def _zone_key_replaced(ws: Workspace) -> tuple[str, ...]:
    path = _pem_of(ws, "ksk")
    path.write_bytes(
        Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return (str(path.relative_to(ws.root)), "index says")


def _index(data: bytes) -> Callable[[Workspace], tuple[str, ...]]:
    def setup(ws: Workspace) -> tuple[str, ...]:
        (_zone_keys_dir(ws) / "keys.json").write_bytes(data)
        return (f"keys/{ZONE}/_dnssec/keys.json",)

    return setup


def _zone_keys_removed(ws: Workspace) -> tuple[str, ...]:
    shutil.rmtree(_zone_keys_dir(ws))
    return (f"alter-publish dnssec keygen {ZONE}",)


ZONE_KEY_CASES = [
    pytest.param(_zone_key_mode_0644, id="zone-key-mode-0644"),
    pytest.param(_zone_key_replaced, id="zone-key-tag-not-in-index"),
    pytest.param(_index(b"{not json"), id="zone-key-index-not-json"),
    pytest.param(_index(b"[]"), id="zone-key-index-json-array"),
    pytest.param(
        _index(b'{"format": "alter-publish/zone-keys/1", "keys": ["ksk-1.pem"]}'),
        id="zone-key-index-entry-not-an-object",
    ),
    pytest.param(
        _index(
            b'{"format": "alter-publish/zone-keys/1", "keys": '
            b'[{"role": "ksk", "tag": 1e400, "created": 0, "state": "active"}]}'
        ),
        id="zone-key-index-tag-overflows",
    ),
    pytest.param(_zone_keys_removed, id="zone-keys-missing-without-create-keys"),
]


@pytest.mark.parametrize("setup", ZONE_KEY_CASES)
def test_bad_zone_keys_stop_sign_with_one_line(
    setup: Callable[[Workspace], tuple[str, ...]], workspace: Workspace
) -> None:
    fragments = setup(workspace)
    before = workspace.snapshot()

    result = workspace.run(*SIGN)

    line = assert_one_error_line(result, EXIT_KEY)
    for fragment in fragments:
        assert fragment in line, result.describe()
    assert_unchanged(before, workspace.snapshot())


def test_lost_index_never_makes_new_keys_over_old_ones(workspace: Workspace) -> None:
    # New keys would silently change the DS the parent zone holds.
    (_zone_keys_dir(workspace) / "keys.json").unlink()
    before = workspace.snapshot()

    result = workspace.run("sign", "--create-keys", *simulated(), DEFINITION_ARG)

    line = assert_one_error_line(result, EXIT_KEY)
    assert "restore keys.json" in line, result.describe()
    assert_unchanged(before, workspace.snapshot())


def test_a_wildcard_in_a_template_is_refused_before_signing(workspace: Workspace) -> None:
    templates = workspace.root / "templates"
    shutil.copytree(Path(__file__).resolve().parents[2] / "templates", templates)
    zone_j2 = templates / "zone.j2"
    zone_j2.write_text(zone_j2.read_text() + '* {{ ttl }} IN TXT "catch-all"\n')
    before = workspace.snapshot()

    result = workspace.run(*SIGN, "--templates", "templates")

    line = assert_one_error_line(result, EXIT_OUTPUT)
    assert "wildcard owner *.example.com." in line, result.describe()
    assert_unchanged(before, workspace.snapshot())


def test_signatures_past_2106_are_refused(workspace: Workspace) -> None:
    before = workspace.snapshot()

    result = workspace.run("sign", *simulated(4294000000), DEFINITION_ARG)

    line = assert_one_error_line(result, EXIT_DEFINITION)
    assert "RRSIG can express" in line, result.describe()
    assert_unchanged(before, workspace.snapshot())


# --- dnssec keygen and dnssec ds -------------------------------------------------------


def test_dnssec_keygen_prints_the_keys_and_the_ds(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)

    result = ws.run("dnssec", "keygen", "example.org", *simulated())

    assert result.returncode == EXIT_OK, result.describe()
    assert result.stderr == "", result.describe()
    ksk, zsk = KeyStore(tmp_path / "keys").zones.load("example.org")
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        f"example.org: KSK {ksk.tag} (Ed25519, algorithm 15)",
        f"example.org: ZSK {zsk.tag} (Ed25519, algorithm 15)",
    ]
    (ds,) = [line.removeprefix("example.org: DS for the parent zone: ") for line in lines[2:]]
    assert ds.startswith(f"example.org. 3600 IN DS {ksk.tag} 15 2 ")
    assert (ksk.created, zsk.created) == (NOW, NOW)

    shown = ws.run("dnssec", "ds", "example.org", "--json")
    assert shown.returncode == EXIT_OK, shown.describe()
    assert json.loads(shown.stdout)["ds"] == [ds]

    before = ws.snapshot()
    again = ws.run("dnssec", "keygen", "example.org")
    line = assert_one_error_line(again, EXIT_KEY)
    assert line.startswith("keys/example.org/_dnssec: "), again.describe()
    assert_unchanged(before, ws.snapshot())


def test_dnssec_keygen_json_has_keys_and_ds(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)

    result = ws.run("dnssec", "keygen", "Example.ORG.", *simulated(), "--json", "--ttl", "60")

    assert result.returncode == EXIT_OK, result.describe()
    doc = json.loads(result.stdout)
    keys = KeyStore(tmp_path / "keys").zones.load("example.org")
    assert doc["zone"] == "example.org"
    assert doc["keys"] == [key.index_entry() for key in keys]
    assert [(k["role"], k["algorithm"], k["state"]) for k in doc["keys"]] == [
        ("ksk", 15, "active"),
        ("zsk", 15, "active"),
    ]
    (ds,) = doc["ds"]
    assert ds.startswith(f"example.org. 60 IN DS {keys[0].tag} 15 2 ")


@pytest.mark.parametrize("zone", ["not a zone", "com"], ids=["spaces", "one-label"])
def test_dnssec_keygen_refuses_a_bad_zone_name(zone: str, tmp_path: Path) -> None:
    ws = Workspace(tmp_path)

    result = ws.run("dnssec", "keygen", zone)

    assert_one_error_line(result, EXIT_USAGE)
    assert list(tmp_path.iterdir()) == []


def test_dnssec_ds_without_keys(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)

    result = ws.run("dnssec", "ds", "example.org")

    line = assert_one_error_line(result, EXIT_KEY)
    assert line.startswith("example.org: "), result.describe()
    assert "alter-publish dnssec keygen example.org" in line, result.describe()
    assert list(tmp_path.iterdir()) == []


# --- sign: the DS line and the warnings ------------------------------------------------


def test_sign_prints_the_ds_that_dnssec_ds_prints(workspace: Workspace) -> None:
    ds_file = (workspace.root / DS_FILE).read_text(encoding="ascii").splitlines()

    signed = workspace.run(*SIGN)
    shown = workspace.run("dnssec", "ds", ZONE)

    assert signed.returncode == EXIT_OK, signed.describe()
    assert signed.stderr == "", signed.describe()
    assert _ds_lines(signed) == ds_file
    assert shown.returncode == EXIT_OK, shown.describe()
    assert _ds_lines(shown) == ds_file
    assert f"{ZONE}: nothing changed" in signed.stdout.splitlines()


def test_sign_json_has_ds_dnssec_and_warnings(workspace: Workspace) -> None:
    result = workspace.run(*SIGN, "--json")

    assert result.returncode == EXIT_OK, result.describe()
    doc = json.loads(result.stdout)
    assert doc["warnings"] == []
    (zone,) = doc["zones"]
    assert zone["ds"] == (workspace.root / DS_FILE).read_text(encoding="ascii").splitlines()
    assert zone["dnssec"]["denial"] == "nsec3"
    assert [key["role"] for key in zone["dnssec"]["keys"]] == ["ksk", "zsk"]
    assert zone["proof"]["denial"]["dnssec"] == "secure"


def test_sign_with_dnssec_off_warns_on_every_run(workspace: Workspace) -> None:
    text = _sub(
        workspace.definition.read_text(encoding="utf-8"), r"^  enabled: true$", "  enabled: false"
    )
    workspace.definition.write_text(text, encoding="utf-8")
    assert (workspace.root / DS_FILE).is_file()

    first = workspace.run(*SIGN)
    second = workspace.run(*SIGN, "--json")

    for result in (first, second):
        assert result.returncode == EXIT_OK, result.describe()
        (warning,) = result.stderr_lines
        assert warning.startswith(f"{WARNING_PREFIX}{DEFINITION_ARG}: DNSSEC is OFF"), (
            result.describe()
        )
        assert _ds_lines(result) == [], result.describe()
    assert not (workspace.root / DS_FILE).exists()
    assert f"{DS_FILE} (removed: the zone is unsigned)" in first.stdout
    doc = json.loads(second.stdout)
    assert len(doc["warnings"]) == 1
    assert (doc["zones"][0]["ds"], doc["zones"][0]["dnssec"]) == ([], None)
