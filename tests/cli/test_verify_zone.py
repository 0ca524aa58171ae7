"""``verify`` checks the whole zone file, not only the handles' records (issue 13, defect 4).

A signed example.com (NSEC3, as shipped, and NSEC) is edited by hand the ways a zone
owner might: an A record, a TTL, a record added or removed, the NSEC/NSEC3 chain, the
SOA. Each edit makes ``verify`` exit 1 with one line naming the record; the untouched
zone passes. ``ldns-verify-zone`` is the oracle where it judges the edit (it does not
compare TTLs with the RRSIG's original TTL, nor look for a record whose RRSIG and
type bitmap entry are left behind): it must reject what ``verify`` rejects.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from alter_publish.definition.state import SerialState, state_path_for
from alter_publish.errors import EXIT_VERIFICATION
from tests.cli.workspace import NOW, ZONE, Workspace, assert_one_error_line, simulated
from tests.integration.dnssec_tools import ldns_verify_zone

SOURCE_DEFINITION = Path(__file__).resolve().parents[2] / "zones" / f"{ZONE}.yaml"
VERIFY = ("verify", "--now", str(NOW))
WHERE = f"build/{ZONE}.zone: "
CHANGED = f"{WHERE}zone-changed: "
BOGUS = f"{WHERE}bogus: "
NS1_A = f"ns1.{ZONE}. 3600 IN A 192.0.2.53"


@pytest.fixture(scope="module", params=["nsec3", "nsec"])
def signed_zone(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Workspace:
    """example.com signed with the shipped definition, its denial set to ``param``."""
    denial = str(request.param)
    workspace = Workspace(tmp_path_factory.mktemp(denial) / "ws")
    (workspace.root / "zones").mkdir(parents=True)
    text = SOURCE_DEFINITION.read_text(encoding="utf-8")
    assert "denial: nsec3" in text
    workspace.definition.write_text(text.replace("denial: nsec3", f"denial: {denial}"))
    result = workspace.run("sign", "--create-keys", *simulated())
    assert result.returncode == 0, result.describe()
    return workspace


@pytest.fixture
def zone_copy(signed_zone: Workspace, tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    shutil.copytree(signed_zone.root, root, symlinks=True)
    return Workspace(root)


def _denial(text: str) -> str:
    return "NSEC3" if " IN NSEC3 " in text else "NSEC"


def _replace(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert text.count(old) == 1, old
        return text.replace(old, new)

    return edit


def _drop_lines(pattern: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        kept, count = re.subn(pattern, "", text, flags=re.MULTILINE)
        assert count, pattern
        return kept

    return edit


def _bump_serial(text: str) -> str:
    return re.sub(
        r"^(\s+)(\d+)( ; serial)$",
        lambda m: f"{m[1]}{int(m[2]) + 1}{m[3]}",
        text,
        count=1,
        flags=re.MULTILINE,
    )


def _break_next(text: str) -> str:
    """Change where the first NSEC/NSEC3 record points (the chain's link)."""
    if _denial(text) == "NSEC3":
        return re.sub(
            r"( IN NSEC3 1 0 0 - )(\w)",
            lambda m: m[1] + ("0" if m[2] != "0" else "1"),
            text,
            count=1,
        )
    return re.sub(r"( IN NSEC )(\S+)", rf"\1www.{ZONE}.", text, count=1)


def _drop_first_link(text: str) -> str:
    """Remove the first NSEC/NSEC3 record and its RRSIG: a name the chain skips."""
    kind = _denial(text)
    match = re.search(rf"^(\S+) \d+ IN {kind} .*\n", text, flags=re.MULTILINE)
    assert match is not None
    owner = re.escape(match[1])
    return _drop_lines(rf"^{owner} \d+ IN (RRSIG )?{kind} .*\n")(text)


@dataclass(frozen=True, slots=True)
class Edit:
    """A hand edit, what the error line must say, and whether ldns judges it."""

    change: Callable[[str], str]
    says: tuple[str, ...]
    ldns_rejects: bool


EDITS = {
    "a-record-edited": Edit(
        _replace(NS1_A, f"ns1.{ZONE}. 3600 IN A 192.0.2.9"),
        (f"{BOGUS}ns1.{ZONE}. 3600 IN A 192.0.2.9: ", "does not verify"),
        ldns_rejects=True,
    ),
    "ttl-raised": Edit(
        _replace(NS1_A, f"ns1.{ZONE}. 7200 IN A 192.0.2.53"),
        (f"{CHANGED}ns1.{ZONE}. 7200 IN A 192.0.2.53: TTL 7200 is not 3600",),
        ldns_rejects=False,
    ),
    "ttl-lowered": Edit(
        _replace(NS1_A, f"ns1.{ZONE}. 60 IN A 192.0.2.53"),
        (f"{CHANGED}ns1.{ZONE}. 60 IN A 192.0.2.53: TTL 60 is not 3600",),
        ldns_rejects=False,
    ),
    "record-added-new-name": Edit(
        _replace(NS1_A, f"{NS1_A}\nwww.{ZONE}. 3600 IN A 192.0.2.80"),
        (f"{BOGUS}www.{ZONE}. 3600 IN A 192.0.2.80: ", "has no RRSIG"),
        ldns_rejects=True,
    ),
    "record-added-existing-name": Edit(
        _replace(NS1_A, f'{NS1_A}\nns1.{ZONE}. 3600 IN TXT "hello"'),
        (f'{BOGUS}ns1.{ZONE}. 3600 IN TXT "hello": ', "has no RRSIG"),
        ldns_rejects=True,
    ),
    "record-removed": Edit(
        _replace(NS1_A + "\n", ""),
        (f"{CHANGED}ns1.{ZONE}. IN A: not in the zone, but an RRSIG over it is",),
        ldns_rejects=False,
    ),
    "record-and-rrsig-removed": Edit(
        _drop_lines(rf"^ns1\.{ZONE}\. 3600 IN (RRSIG )?A .*\n"),
        (f"{CHANGED}ns1.{ZONE}. IN A: in the NSEC", "type bitmap", "but not in the zone"),
        ldns_rejects=False,
    ),
    "chain-link-redirected": Edit(
        _break_next, (BOGUS, " IN NSEC", "does not verify"), ldns_rejects=True
    ),
    "chain-link-removed": Edit(
        _drop_first_link, (CHANGED, "has no NSEC", "chain skips it"), ldns_rejects=True
    ),
    "soa-serial-edited": Edit(
        _bump_serial, (f"{BOGUS}{ZONE}. 3600 IN SOA ", "does not verify"), ldns_rejects=True
    ),
    "soa-ttl-edited": Edit(
        _replace("@ 3600 IN SOA ", "@ 7200 IN SOA "),
        (f"{CHANGED}{ZONE}. 7200 IN SOA ", "TTL 7200 is not 3600"),
        ldns_rejects=False,
    ),
    "comment-edited": Edit(
        _replace("; DNSSEC (alter-publish)", "; DNSSEC (edited by hand)"),
        (f"{CHANGED}not the zone file sign wrote", "every record verifies"),
        ldns_rejects=False,
    ),
}


@pytest.mark.parametrize("case", EDITS.values(), ids=EDITS.keys())
def test_verify_names_the_record_edited_by_hand(case: Edit, zone_copy: Workspace) -> None:
    text = zone_copy.zone_file.read_text(encoding="utf-8")
    zone_copy.zone_file.write_text(case.change(text), encoding="utf-8")

    line = assert_one_error_line(zone_copy.run(*VERIFY), EXIT_VERIFICATION)

    full = f"alter-publish: error: {line}"
    for part in case.says:
        assert part in full, full
    if case.ldns_rejects:
        oracle = ldns_verify_zone(
            zone_copy.zone_file, trust_anchor_file=zone_copy.root / "build" / f"{ZONE}.ds", at=NOW
        )
        assert not oracle.ok, oracle.output


def test_untouched_zone_passes_and_ldns_agrees(zone_copy: Workspace) -> None:
    result = zone_copy.run(*VERIFY)

    assert result.returncode == 0, result.describe()
    assert "5/5 handles verified" in result.stdout
    oracle = ldns_verify_zone(
        zone_copy.zone_file, trust_anchor_file=zone_copy.root / "build" / f"{ZONE}.ds", at=NOW
    )
    assert oracle.ok, oracle.output


def test_unsigned_zone_edit_fails_on_the_digest(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws")
    (workspace.root / "zones").mkdir(parents=True)
    text = SOURCE_DEFINITION.read_text(encoding="utf-8")
    assert "  enabled: true" in text
    workspace.definition.write_text(text.replace("  enabled: true", "  enabled: false"))
    signed = workspace.run("sign", "--create-keys", *simulated())
    assert signed.returncode == 0, signed.describe()
    assert workspace.run(*VERIFY).returncode == 0
    zone = workspace.zone_file.read_text(encoding="utf-8")
    workspace.zone_file.write_text(_replace(NS1_A, f"ns1.{ZONE}. 3600 IN A 192.0.2.9")(zone))

    line = assert_one_error_line(workspace.run(*VERIFY), EXIT_VERIFICATION)

    assert line.startswith(f"{CHANGED}not the zone file sign wrote"), line
    assert "unsigned" in line


def test_sign_records_the_zone_file_digest_and_it_round_trips(signed_zone: Workspace) -> None:
    state_path = state_path_for(signed_zone.definition)
    state = SerialState.read(state_path)

    assert state is not None
    assert state.zone_sha256 == hashlib.sha256(signed_zone.zone_file.read_bytes()).hexdigest()
    assert state.to_text() == state_path.read_text(encoding="utf-8")
    assert SerialState.read(state_path) == state


def test_verify_says_when_no_digest_was_recorded(zone_copy: Workspace) -> None:
    """Without the state file the records are still checked, but verify says the file was
    not compared with what sign wrote (it used to pass without a word)."""
    state = state_path_for(zone_copy.definition)
    state.unlink()
    result = zone_copy.run(*VERIFY)
    assert result.returncode == 0, result.describe()
    warnings = [line for line in result.stderr_lines if "WARNING" in line]
    assert len(warnings) == 1, result.describe()
    assert str(state.relative_to(zone_copy.root)) in warnings[0]
    assert "SHA-256" in warnings[0]
