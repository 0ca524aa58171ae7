"""Key lifecycle on the command line: rotate, revoke, keys status, DNSSEC rollovers, pins.

Bad inputs follow the contract of test_bad_inputs.py: the documented exit code,
one ``alter-publish: error:`` line on stderr naming what is wrong, no traceback,
and every file in the workspace left byte-for-byte and mode-for-mode as the case
set it up. The happy paths run each step as a user would and check what the next
``sign`` publishes, with ``verify`` after every sign.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import dns.dnssec
import dns.rdtypes.ANY.DNSKEY
import dns.rdtypes.ANY.RRSIG
import dns.rdtypes.ANY.TXT
import dns.zone
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.dns.server import ZoneServer
from alter_publish.errors import (
    EXIT_DEFINITION,
    EXIT_KEY,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_VERIFICATION,
)
from alter_publish.format.envelope import b64url
from alter_publish.pipeline import read_zone_file
from tests.cli.workspace import (
    NOW,
    ZONE,
    Result,
    Workspace,
    assert_one_error_line,
    assert_unchanged,
    simulated,
)

HOUR_SECONDS = 3600
DAY_SECONDS = 24 * HOUR_SECONDS
LATER = NOW + DAY_SECONDS  # when the happy paths rotate: a day after the first sign
BLAKE = "~blake"
BLAKE_OWNER = f"_alter.blake.{ZONE}."
BLAKE_KEYS = f"keys/{ZONE}/blake"
DS_FILE = f"build/{ZONE}.ds"
REVOCATIONS_FILE = f"zones/{ZONE}.revocations.json"
PINS_FILE = "pins.json"
OTHER_ZONE = "example.org"


def _at(moment: int) -> tuple[str, str]:
    return ("--now", str(moment))


def _ok(result: Result) -> Result:
    assert result.returncode == EXIT_OK, result.describe()
    assert "Traceback" not in result.stderr, result.describe()
    return result


def _json(result: Result) -> Any:
    return json.loads(_ok(result).stdout)


def _sign_and_verify(ws: Workspace, moment: int) -> None:
    """``sign`` then ``verify`` at ``moment``; both must succeed."""
    _ok(ws.run("sign", *simulated(moment)))
    _ok(ws.run("verify", *_at(moment)))


def _zone(ws: Workspace) -> dns.zone.Zone:
    return read_zone_file(ws.zone_file, ZONE)


def _txt_texts(ws: Workspace, owner: str) -> list[str]:
    """The TXT records at ``owner`` in the rendered zone, each joined into one text."""
    rdataset = _zone(ws).get_rdataset(owner, "TXT")
    assert rdataset is not None, f"no TXT at {owner}"
    return [
        b"".join(rdata.strings).decode("ascii")
        for rdata in rdataset
        if isinstance(rdata, dns.rdtypes.ANY.TXT.TXT)
    ]


def _apex_key_tags(ws: Workspace) -> tuple[set[int], set[int]]:
    """(tags in the published DNSKEY set, tags of the RRSIGs over the SOA)."""
    zone = _zone(ws)
    dnskeys = zone.get_rdataset("@", "DNSKEY")
    soa_sigs = zone.get_rdataset("@", "RRSIG", covers="SOA")
    assert dnskeys is not None, "no DNSKEY at the apex"
    assert soa_sigs is not None, "no RRSIG over the SOA"
    return (
        {
            dns.dnssec.key_id(rdata)
            for rdata in dnskeys
            if isinstance(rdata, dns.rdtypes.ANY.DNSKEY.DNSKEY)
        },
        {rdata.key_tag for rdata in soa_sigs if isinstance(rdata, dns.rdtypes.ANY.RRSIG.RRSIG)},
    )


def _tag_of(keys: list[dict[str, Any]], role: str, state: str) -> int:
    (tag,) = [key["tag"] for key in keys if (key["role"], key["state"]) == (role, state)]
    assert isinstance(tag, int)
    return tag


# --- bad inputs --------------------------------------------------------------------------


Setup = Callable[[Workspace], tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Case:
    """One bad input: set it up (returning the command to run), expect one error line."""

    id: str
    setup: Setup
    exit_code: int
    contains: tuple[str, ...]

    def param(self) -> object:
        return pytest.param(self, id=self.id)


def _fixed(*args: str) -> Setup:
    def setup(_: Workspace) -> tuple[str, ...]:
        return args

    return setup


def _after(*steps: tuple[str, ...], then: tuple[str, ...]) -> Setup:
    """Run ``steps`` (each must succeed), then the bad command ``then``."""

    def setup(ws: Workspace) -> tuple[str, ...]:
        for step in steps:
            _ok(ws.run(*step))
        return then

    return setup


def _with_file(name: str, data: bytes, *args: str) -> Setup:
    def setup(ws: Workspace) -> tuple[str, ...]:
        (ws.root / name).write_bytes(data)
        return args

    return setup


def _secret_not_in_store(*args: str) -> Setup:
    def setup(ws: Workspace) -> tuple[str, ...]:
        (ws.root / BLAKE_KEYS / "1.secret").unlink()
        return args

    return setup


ROTATE = ("rotate", BLAKE, "--zone", ZONE, *simulated(LATER))
REVOKE = ("revoke", BLAKE, "--zone", ZONE, *simulated(LATER))
ZSK_ROLLOVER = ("dnssec", "rollover", ZONE, "zsk", *simulated(NOW))
SIGN = ("sign", *simulated(NOW))
ZSK_ROLLOVER_SIGNED = (ZSK_ROLLOVER, SIGN)

CASES = [
    Case(
        "rotate-unknown-handle",
        _fixed("rotate", "~nobody", "--zone", ZONE, *simulated(LATER)),
        EXIT_USAGE,
        ("~nobody", "is not a handle of"),
    ),
    Case(
        "rotate-malformed-handle",
        _fixed("rotate", "blake", "--zone", ZONE, *simulated(LATER)),
        EXIT_USAGE,
        ("blake", "starts with '~'"),
    ),
    Case(
        "rotate-zone-without-definition",
        _fixed("rotate", BLAKE, "--zone", OTHER_ZONE, *simulated(LATER)),
        EXIT_USAGE,
        (OTHER_ZONE, f"zones/{OTHER_ZONE}.yaml"),
    ),
    Case(
        "rotate-compromised-and-lost",
        _fixed(*ROTATE, "--compromised", "--lost"),
        EXIT_USAGE,
        ("--compromised", "--lost"),
    ),
    Case(
        "rotate-secret-out-exists",
        _with_file("offline.secret", b"keep me\n", *ROTATE, "--secret-out", "offline.secret"),
        EXIT_KEY,
        ("offline.secret", "exists already"),
    ),
    # --compromised and --lost queue a revocation: it must not be queued when the new
    # epoch cannot be written (zones/<zone>.revocations.json stays as it was).
    Case(
        "rotate-compromised-secret-out-exists",
        _with_file(
            "offline.secret",
            b"keep me\n",
            *ROTATE,
            "--compromised",
            "--secret-out",
            "offline.secret",
        ),
        EXIT_KEY,
        ("offline.secret", "exists already"),
    ),
    Case(
        "rotate-lost-secret-out-exists",
        _with_file(
            "offline.secret", b"keep me\n", *ROTATE, "--lost", "--secret-out", "offline.secret"
        ),
        EXIT_KEY,
        ("offline.secret", "exists already"),
    ),
    Case(
        "rotate-compromised-secret-not-in-store",
        _secret_not_in_store(*ROTATE, "--compromised"),
        EXIT_KEY,
        (f"{BLAKE_KEYS}/1.secret", "not in the key store", "--secret-file"),
    ),
    Case(
        "rotate-compromised-secret-file-missing",
        _fixed(*ROTATE, "--compromised", "--secret-file", "missing.secret"),
        EXIT_KEY,
        ("missing.secret", "cannot read"),
    ),
    Case(
        "rotate-lost-secret-file-missing",
        _fixed(*ROTATE, "--lost", "--secret-file", "missing.secret"),
        EXIT_KEY,
        ("missing.secret", "cannot read"),
    ),
    Case(
        "revoke-current-epoch",
        _fixed(*REVOKE),
        EXIT_USAGE,
        (BLAKE, "epoch 1 is the current key", "--compromised"),
    ),
    Case(
        "revoke-epoch-9",
        _fixed(*REVOKE, "--epoch", "9"),
        EXIT_USAGE,
        (BLAKE, "no epoch 9"),
    ),
    Case(
        "revoke-epoch-0",
        _fixed(*REVOKE, "--epoch", "0"),
        EXIT_USAGE,
        ("--epoch",),
    ),
    Case(
        "revoke-with-the-wrong-secret",
        _after(ROTATE, then=(*REVOKE, "--epoch", "1", "--secret-file", f"{BLAKE_KEYS}/2.secret")),
        EXIT_KEY,
        (f"{BLAKE_KEYS}/2.secret", "does not match", "epoch 1"),
    ),
    Case(
        "rollover-role-csk",
        _fixed("dnssec", "rollover", ZONE, "csk", *simulated(NOW)),
        EXIT_USAGE,
        ("'csk'", "zsk or ksk"),
    ),
    Case(
        "step-without-rollover",
        _fixed("dnssec", "step", ZONE, *simulated(NOW)),
        EXIT_KEY,
        (ZONE, "no rollover is running"),
    ),
    Case(
        "step-too-early",
        _after(*ZSK_ROLLOVER_SIGNED, then=("dnssec", "step", ZONE, *simulated(NOW))),
        EXIT_KEY,
        (ZONE, "too early", "not before 2026-01-01T02:00:00Z"),
    ),
    Case(
        "step-ds-published-during-zsk-rollover",
        _after(
            *ZSK_ROLLOVER_SIGNED, then=("dnssec", "step", ZONE, "--ds-published", *simulated(NOW))
        ),
        EXIT_KEY,
        (ZONE, "--ds-published", "activate ZSK"),
    ),
    Case(
        "rollover-while-one-runs",
        _after(*ZSK_ROLLOVER_SIGNED, then=("dnssec", "rollover", ZONE, "ksk", *simulated(NOW))),
        EXIT_KEY,
        (ZONE, "ZSK rollover is running"),
    ),
    Case(
        "dnssec-status-unknown-zone",
        _fixed("dnssec", "status", OTHER_ZONE),
        EXIT_USAGE,
        (OTHER_ZONE, "no zone definition"),
    ),
    Case(
        "keys-status-broken-revocations-file",
        _with_file(REVOCATIONS_FILE, b"{", "keys", "status", *_at(NOW)),
        EXIT_DEFINITION,
        (REVOCATIONS_FILE, "not a revocations file"),
    ),
    Case(
        "resolve-pin-store-json-array",
        # Port 9 (discard) never answers: a query sent anyway would fail as a timeout.
        _with_file(
            PINS_FILE,
            b"[]",
            "resolve",
            BLAKE,
            "--server",
            "127.0.0.1:9",
            "--timeout",
            "0.2",
            "--substrate",
            ZONE,
            "--pin-store",
            PINS_FILE,
        ),
        EXIT_USAGE,
        (PINS_FILE, "alter-publish/pins/1"),
    ),
]


@pytest.mark.parametrize("case", [case.param() for case in CASES])
def test_bad_lifecycle_input_gives_one_line_and_changes_nothing(
    case: Case, workspace: Workspace
) -> None:
    args = case.setup(workspace)
    before = workspace.snapshot()

    result = workspace.run(*args)

    line = assert_one_error_line(result, case.exit_code)
    for fragment in case.contains:
        assert fragment in line, result.describe()
    assert_unchanged(before, workspace.snapshot())


def test_scheduled_rotate_refuses_a_missing_secret_file(workspace: Workspace) -> None:
    before = workspace.snapshot()

    result = workspace.run(*ROTATE, "--secret-file", "missing.secret")

    assert result.returncode in (EXIT_USAGE, EXIT_KEY), result.describe()
    line = assert_one_error_line(result, result.returncode)
    assert "missing.secret" in line or "--secret-file" in line, result.describe()
    assert_unchanged(before, workspace.snapshot())


# --- rotate, keys status, revoke ------------------------------------------------------------


def _blake_status(ws: Workspace, moment: int) -> dict[str, Any]:
    doc = _json(ws.run("keys", "status", *_at(moment), "--json"))
    (zone,) = doc["zones"]
    assert zone["zone"] == ZONE
    (blake,) = [handle for handle in zone["handles"] if handle["handle"] == BLAKE]
    assert isinstance(blake, dict)
    return blake


def test_rotate_sign_then_revoke_the_old_epoch(workspace: Workspace) -> None:
    old_texts = _txt_texts(workspace, BLAKE_OWNER)

    rotated = _json(workspace.run(*ROTATE, "--json"))

    assert (rotated["handle"], rotated["previous_epoch"], rotated["epoch"]) == (BLAKE, 1, 2)
    assert (rotated["continuity"], rotated["revoked_epoch"]) == ("psig", None)
    assert rotated["revocation_secret_file"] == f"{BLAKE_KEYS}/2.secret"
    assert _txt_texts(workspace, BLAKE_OWNER) == old_texts, "rotate must leave publishing to sign"

    _sign_and_verify(workspace, LATER)
    (envelope,) = _txt_texts(workspace, BLAKE_OWNER)
    assert f"h={BLAKE}; e=2; " in envelope
    assert f"p={rotated['public_key']};" in envelope
    assert "psig=" in envelope
    status = _blake_status(workspace, LATER)
    assert [(e["epoch"], e["state"]) for e in status["epochs"]] == [(1, "retired"), (2, "active")]
    assert status["epochs"][1]["key_id"] == rotated["key_id"]
    assert status["epochs"][1]["continuity"] == "psig"

    revoked = _json(workspace.run(*REVOKE, "--epoch", "1", "--json"))
    assert revoked == {"handle": BLAKE, "epoch": 1, "queued": True}
    (entry,) = json.loads((workspace.root / REVOCATIONS_FILE).read_text())["revocations"]
    assert entry["text"].startswith(f"v=alter1; h={BLAKE}; e=1; rev=")
    assert _blake_status(workspace, LATER)["epochs"][0]["revocation"] == "pending"

    _sign_and_verify(workspace, LATER)
    texts = _txt_texts(workspace, BLAKE_OWNER)
    assert entry["text"] in texts
    assert sorted(texts) == sorted([envelope, entry["text"]])
    epochs = _blake_status(workspace, LATER)["epochs"]
    assert [(e["epoch"], e["state"], e["revocation"]) for e in epochs] == [
        (1, "revoked", "published"),
        (2, "active", None),
    ]


# --- DNSSEC status and a ZSK rollover ---------------------------------------------------------


def test_dnssec_status_of_a_freshly_signed_zone(workspace: Workspace) -> None:
    doc = _json(workspace.run("dnssec", "status", ZONE, *_at(NOW), "--json"))

    assert doc["zone"] == ZONE
    assert [(k["role"], k["state"], k["signs"]) for k in doc["keys"]] == [
        ("ksk", "active", True),
        ("zsk", "active", True),
    ]
    assert doc["next_step"] is None
    assert (doc["signed"], doc["step_due"]) == (True, False)
    assert doc["ds"] == (workspace.root / DS_FILE).read_text(encoding="ascii").splitlines()
    dnskey_tags, signer_tags = _apex_key_tags(workspace)
    assert dnskey_tags == {k["tag"] for k in doc["keys"]}
    assert signer_tags == {_tag_of(doc["keys"], "zsk", "active")}


@pytest.mark.slow  # every step of a ZSK rollover, each a CLI run
def test_a_full_zsk_rollover_on_the_command_line(workspace: Workspace) -> None:
    start = _json(workspace.run("dnssec", "status", ZONE, *_at(NOW), "--json"))
    ksk = _tag_of(start["keys"], "ksk", "active")
    old = _tag_of(start["keys"], "zsk", "active")

    begun = _json(workspace.run(*ZSK_ROLLOVER, "--json"))
    new = _tag_of(begun["keys"], "zsk", "published")
    assert new != old
    activate_at = begun["next_step"]["not_before"]
    assert activate_at >= NOW + 2 * HOUR_SECONDS
    _sign_and_verify(workspace, NOW)
    assert _apex_key_tags(workspace) == ({ksk, old, new}, {old})

    activated = _json(workspace.run("dnssec", "step", ZONE, *simulated(activate_at), "--json"))
    assert _tag_of(activated["keys"], "zsk", "active") == new
    assert _tag_of(activated["keys"], "zsk", "retired") == old
    remove_at = activated["next_step"]["not_before"]
    assert remove_at > activate_at
    _sign_and_verify(workspace, activate_at)
    assert _apex_key_tags(workspace) == ({ksk, old, new}, {new})

    removed = _json(workspace.run("dnssec", "step", ZONE, *simulated(remove_at), "--json"))
    assert removed["next_step"] is None
    assert [(k["role"], k["tag"]) for k in removed["keys"]] == [("ksk", ksk), ("zsk", new)]
    _sign_and_verify(workspace, remove_at)
    assert _apex_key_tags(workspace) == ({ksk, new}, {new})

    end = _json(workspace.run("dnssec", "status", ZONE, *_at(remove_at), "--json"))
    assert end["next_step"] is None
    assert end["signed"] is True
    assert _tag_of(end["keys"], "zsk", "active") == new
    assert _tag_of(end["keys"], "zsk", "removed") == old
    assert end["ds"] == start["ds"], "a ZSK rollover never changes the DS"


# --- resolve --pin-store against the embedded server ------------------------------------------


@contextlib.contextmanager
def _serving(ws: Workspace) -> Iterator[str]:
    """Serve the rendered zone on loopback; yields ``HOST:PORT``."""
    with ZoneServer([_zone(ws)]) as server:
        host, port = server.address
        yield f"{host}:{port}"


def _resolve_pinned(ws: Workspace, server: str, moment: int) -> Result:
    return ws.run(
        "resolve",
        BLAKE,
        "--server",
        server,
        "--substrate",
        ZONE,
        "--trust-anchor",
        DS_FILE,
        "--pin-store",
        PINS_FILE,
        *simulated(moment),
        "--json",
    )


def _pin(ws: Workspace) -> dict[str, Any]:
    doc = json.loads((ws.root / PINS_FILE).read_text(encoding="utf-8"))
    assert doc["format"] == "alter-publish/pins/1"
    assert list(doc["pins"]) == [BLAKE_OWNER]
    pin = doc["pins"][BLAKE_OWNER]
    assert isinstance(pin, dict)
    return pin


def test_resolve_pins_on_first_use_then_follows_a_rotation(workspace: Workspace) -> None:
    with _serving(workspace) as server:
        first = _json(_resolve_pinned(workspace, server, NOW))
        second = _json(_resolve_pinned(workspace, server, NOW))
    assert (first["ok"], first["dnssec"], first["epoch"], first["pin"]) == (
        True,
        "secure",
        1,
        "pinned",
    )
    assert (second["ok"], second["epoch"], second["pin"]) == (True, 1, "unchanged")
    pinned = _pin(workspace)
    assert (pinned["epoch"], pinned["p"], pinned["first_seen"]) == (1, first["public_key"], NOW)

    rotated = _json(workspace.run(*ROTATE, "--json"))
    _sign_and_verify(workspace, LATER)
    with _serving(workspace) as server:
        advanced = _json(_resolve_pinned(workspace, server, LATER))
        assert (advanced["ok"], advanced["epoch"], advanced["pin"]) == (True, 2, "advanced")
        moved = _pin(workspace)
        assert (moved["epoch"], moved["p"]) == (2, rotated["public_key"])
        assert (moved["first_seen"], moved["updated"]) == (NOW, LATER)

        other_key = Ed25519PrivateKey.generate().public_key()
        moved["p"] = b64url(
            other_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        )
        doc = {"format": "alter-publish/pins/1", "pins": {BLAKE_OWNER: moved}}
        (workspace.root / PINS_FILE).write_text(json.dumps(doc), encoding="utf-8")
        before = workspace.snapshot()

        mismatch = _resolve_pinned(workspace, server, LATER)

    line = assert_one_error_line(mismatch, EXIT_VERIFICATION)
    assert line.startswith(f"{BLAKE_OWNER}: {BLAKE}: key-mismatch: "), mismatch.describe()
    shown = json.loads(mismatch.stdout)
    assert (shown["ok"], shown["category"], shown["pin"]) == (False, "key-mismatch", None)
    assert_unchanged(before, workspace.snapshot())


def test_an_unvalidated_answer_never_plants_a_pin(workspace: Workspace) -> None:
    """With --allow-insecure and no trust anchor covering the zone, the answer could be
    spoofed: no pin. (The anchor is another zone's: without --trust-anchor resolve
    validates from the shipped root anchors, out of this loopback server's reach.)"""
    (workspace.root / "other.ds").write_text(
        f"other.test. IN DS 1 15 2 {'00' * 32}\n", encoding="ascii"
    )
    with _serving(workspace) as server:
        result = workspace.run(
            "resolve",
            BLAKE,
            "--server",
            server,
            "--substrate",
            ZONE,
            "--trust-anchor",
            "other.ds",
            "--allow-insecure",
            "--pin-store",
            PINS_FILE,
            *simulated(NOW),
            "--json",
        )
    shown = _json(result)
    assert (shown["ok"], shown["dnssec"]) == (True, "insecure")
    assert shown["pin"] == "not updated (answer not DNSSEC-validated)"
    assert not (workspace.root / PINS_FILE).exists()


def test_no_parent_check_is_only_for_ds_published(workspace: Workspace) -> None:
    """--no-parent-check skips the one step that asks the parent; given alone it would
    silently do nothing, so it is refused."""
    result = workspace.run("dnssec", "step", ZONE, "--no-parent-check", *simulated(NOW))
    line = assert_one_error_line(result, EXIT_USAGE)
    assert "--no-parent-check is for --ds-published" in line
