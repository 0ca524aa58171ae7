"""Real authoritative servers serve what alter-publish signed, and the proof holds on them.

The example zone is signed once, at the real time (taken here), by the CLI.
Then, for each of BIND (``named``), Knot DNS (``knotd``) and NSD:

1. the pre-signed ``build/example.com.zone`` is served as it is: every
   handle's ``_alter`` TXT is the text in ``build/example.com.envelopes.json``,
   and the DNSKEYs and RRSIGs are the zone file's (nothing re-signed);
2. ``alter-publish verify --server`` proves it against the server (exit 0),
   and fails (exit 1) on a copy with one character of one envelope changed.

Then the harness itself, which the push feature relies on: TSIG keys parse
and round-trip, transfers and dynamic updates need the right TSIG key, an
update to an inline-signing BIND or Knot is served signed and survives a
crash (SIGKILL, restart), and the proof passes on an inline-signed zone with
the server's own DS as the trust anchor.

Every test skips with the Debian package to install when its daemon is missing.
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import dns.dnssec
import dns.message
import dns.name
import dns.node
import dns.query
import dns.rcode
import dns.rdataset
import dns.rdatatype
import dns.rdtypes.ANY.TXT
import dns.rrset
import dns.tsig
import dns.update
import dns.xfr
import dns.zone
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import EXAMPLE_ZONE
from tests.integration.servers import (
    AuthoritativeServer,
    Knot,
    Named,
    Nsd,
    TsigKey,
    make_tsig_key,
    read_tsig_key,
)

ZONE: Final = "example.com"
ORIGIN: Final = dns.name.from_text(f"{ZONE}.")
#: The handles of zones/example.com.yaml.
HANDLE_COUNT: Final = 5
#: The handle whose envelope the tampered copy changes.
TAMPERED_OWNER: Final = "_alter.blake.example.com."
#: Every server kind, by daemon name (the test ids).
SERVERS: Final[dict[str, type[AuthoritativeServer]]] = {
    "named": Named,
    "knotd": Knot,
    "nsd": Nsd,
}
#: The kinds that sign zones themselves and accept dynamic updates.
SIGNING_SERVERS: Final[dict[str, type[Named] | type[Knot]]] = {"named": Named, "knotd": Knot}
#: What one CLI run may take.
CLI_TIMEOUT_SECONDS: Final = 120
QUERY_TIMEOUT_SECONDS: Final = 5.0
EXIT_OK: Final = 0
EXIT_VERIFICATION: Final = 1
KEY_NAME: Final = "alter-push"
#: A well-formed TSIG secret (32 bytes, base64) that no server is configured with.
OTHER_SECRET: Final = base64.b64encode(bytes(range(32))).decode("ascii")


# --------------------------------------------------------------------------
# The signed workspace
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SignedWorkspace:
    """zones/example.com.yaml signed by ``alter-publish sign`` at ``now`` into ``root/build``."""

    root: Path
    now: int

    @property
    def zone_file(self) -> Path:
        return self.root / "build" / f"{ZONE}.zone"

    @property
    def envelopes_file(self) -> Path:
        return self.root / "build" / f"{ZONE}.envelopes.json"

    def envelope_texts(self) -> dict[str, str]:
        """``{owner: record text}`` of every handle, as ``sign`` wrote them."""
        document = json.loads(self.envelopes_file.read_text(encoding="utf-8"))
        texts = {str(entry["owner"]): str(entry["text"]) for entry in document["handles"]}
        assert len(texts) == HANDLE_COUNT, texts
        return texts

    def zone(self) -> dns.zone.Zone:
        return dns.zone.from_file(str(self.zone_file), origin=ORIGIN, relativize=False)


def alter_publish(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user runs it, in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "alter_publish", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=CLI_TIMEOUT_SECONDS,
    )


def verify_on(
    signed: SignedWorkspace, server: AuthoritativeServer, *more: str
) -> subprocess.CompletedProcess[str]:
    """``alter-publish verify zones/example.com.yaml --server HOST:PORT --now NOW [more]``."""
    return alter_publish(
        signed.root,
        "verify",
        f"zones/{ZONE}.yaml",
        "--server",
        server.server_spec,
        "--now",
        str(signed.now),
        *more,
    )


def _output(completed: subprocess.CompletedProcess[str]) -> str:
    return f"exit status {completed.returncode}\n{completed.stdout}{completed.stderr}"


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> SignedWorkspace:
    """The example zone signed at the real time: the servers' own RRSIGs use the real clock."""
    root = tmp_path_factory.mktemp("signed")
    (root / "zones").mkdir()
    shutil.copy(EXAMPLE_ZONE, root / "zones" / f"{ZONE}.yaml")
    now = int(time.time())
    completed = alter_publish(
        root, "sign", f"zones/{ZONE}.yaml", "--create-keys", "--now", str(now)
    )
    assert completed.returncode == EXIT_OK, _output(completed)
    return SignedWorkspace(root, now)


@pytest.fixture(scope="module", params=sorted(SERVERS))
def served(
    request: pytest.FixtureRequest,
    signed: SignedWorkspace,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[AuthoritativeServer]:
    """Each kind of server serving the pre-signed zone, shared by the tests of that kind."""
    kind: str = request.param
    with SERVERS[kind](tmp_path_factory.mktemp(kind), ZONE, signed.zone_file) as server:
        yield server


# --------------------------------------------------------------------------
# Pre-signed zones, served as they are
# --------------------------------------------------------------------------


def _txt_texts(rrset: dns.rrset.RRset) -> set[str]:
    texts = set()
    for rdata in rrset:
        assert isinstance(rdata, dns.rdtypes.ANY.TXT.TXT)
        texts.add(b"".join(rdata.strings).decode("utf-8"))
    return texts


def _zone_rdataset(
    zone: dns.zone.Zone,
    name: str | dns.name.Name,
    rdtype: dns.rdatatype.RdataType,
    covers: dns.rdatatype.RdataType = dns.rdatatype.NONE,
) -> dns.rdataset.Rdataset:
    rdataset = zone.get_rdataset(name, rdtype, covers)
    assert rdataset is not None, f"the zone file has no {rdtype.name} at {name}"
    return rdataset


def _answer(
    response: dns.message.Message,
    name: dns.name.Name,
    rdtype: dns.rdatatype.RdataType,
    covers: dns.rdatatype.RdataType = dns.rdatatype.NONE,
) -> dns.rrset.RRset:
    for rrset in response.answer:
        if (rrset.name, rrset.rdtype, rrset.covers) == (name, rdtype, covers):
            return rrset
    raise AssertionError(f"no {rdtype.name} ({covers.name}) at {name} in:\n{response}")


def test_serves_every_envelope_as_signed(
    served: AuthoritativeServer, signed: SignedWorkspace
) -> None:
    for owner, text in signed.envelope_texts().items():
        response = served.query(owner, "TXT")
        assert response.rcode() == dns.rcode.NOERROR, response
        txt = _answer(response, dns.name.from_text(owner), dns.rdatatype.TXT)
        assert _txt_texts(txt) == {text}, owner


def test_serves_the_zone_files_keys_and_signatures(
    served: AuthoritativeServer, signed: SignedWorkspace
) -> None:
    zone = signed.zone()
    response = served.query(ORIGIN, "DNSKEY")
    dnskeys = _answer(response, ORIGIN, dns.rdatatype.DNSKEY)
    expected = _zone_rdataset(zone, ORIGIN, dns.rdatatype.DNSKEY)
    assert set(dnskeys) == set(expected)
    assert dnskeys.ttl == expected.ttl
    served_sigs = _answer(response, ORIGIN, dns.rdatatype.RRSIG, dns.rdatatype.DNSKEY)
    assert set(served_sigs) == set(
        _zone_rdataset(zone, ORIGIN, dns.rdatatype.RRSIG, dns.rdatatype.DNSKEY)
    )
    for owner in signed.envelope_texts():
        txt_sigs = _answer(
            served.query(owner, "TXT"),
            dns.name.from_text(owner),
            dns.rdatatype.RRSIG,
            dns.rdatatype.TXT,
        )
        expected_sigs = _zone_rdataset(zone, owner, dns.rdatatype.RRSIG, dns.rdatatype.TXT)
        assert set(txt_sigs) == set(expected_sigs), f"{owner}: re-signed by {served.DAEMON}"


def test_verify_proves_the_served_zone(
    served: AuthoritativeServer, signed: SignedWorkspace
) -> None:
    completed = verify_on(signed, served)
    assert completed.returncode == EXIT_OK, _output(completed)
    assert f"{HANDLE_COUNT}/{HANDLE_COUNT} handles verified" in completed.stdout


def tamper_one_character(text: str, owner: str) -> str:
    """Change the first character after ``sig=`` in the TXT record of ``owner``."""
    lines = text.splitlines(keepends=True)
    (index,) = (
        i for i, line in enumerate(lines) if line.startswith(f"{owner} ") and " IN TXT " in line
    )
    line = lines[index]
    at = line.index("sig=") + len("sig=")
    changed = "A" if line[at] != "A" else "B"
    lines[index] = line[:at] + changed + line[at + 1 :]
    return "".join(lines)


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_verify_fails_on_a_tampered_envelope(
    kind: str, signed: SignedWorkspace, tmp_path: Path
) -> None:
    text = signed.zone_file.read_text(encoding="utf-8")
    tampered = tamper_one_character(text, TAMPERED_OWNER)
    assert sum(a != b for a, b in zip(text, tampered, strict=True)) == 1
    tampered_file = tmp_path / f"{ZONE}.tampered.zone"
    tampered_file.write_text(tampered, encoding="utf-8")
    with SERVERS[kind](tmp_path / kind, ZONE, tampered_file) as server:
        txt = _answer(
            server.query(TAMPERED_OWNER, "TXT"),
            dns.name.from_text(TAMPERED_OWNER),
            dns.rdatatype.TXT,
        )
        assert _txt_texts(txt) != {signed.envelope_texts()[TAMPERED_OWNER]}
        completed = verify_on(signed, server)
    assert completed.returncode == EXIT_VERIFICATION, _output(completed)
    assert "Traceback" not in completed.stderr
    assert f"{HANDLE_COUNT - 1}/{HANDLE_COUNT} handles verified" in completed.stdout
    (failure,) = (line for line in completed.stderr.splitlines() if TAMPERED_OWNER in line)
    assert ": bogus:" in failure, failure


# --------------------------------------------------------------------------
# The harness: TSIG keys
# --------------------------------------------------------------------------


def test_tsig_key_from_tsig_keygen_parses_and_round_trips(tmp_path: Path) -> None:
    key, path = make_tsig_key(tmp_path, KEY_NAME)
    assert (key.name, key.algorithm) == (KEY_NAME, "hmac-sha256")
    assert path.stat().st_mode & 0o777 == 0o600
    assert read_tsig_key(path) == key
    assert TsigKey.parse(key.to_text()) == key
    (tsig,) = key.keyring().values()
    assert len(tsig.secret) == 32  # HMAC-SHA256: tsig-keygen makes a 256-bit secret


@pytest.mark.parametrize(
    "secret",
    [
        pytest.param(OTHER_SECRET, id="plain"),
        pytest.param("K4X4bMNrbDrcxNOD3HDNa+SW1/ivvi3//nCNcXVk6Qg=", id="slashes-in-secret"),
        pytest.param(base64.b64encode(b"\xff" * 32).decode("ascii"), id="all-slashes"),
    ],
)
def test_tsig_key_parse_takes_comments_and_canonicalises_the_name(secret: str) -> None:
    text = (
        "# made by hand\n"
        'key "Alter-Push." { /* for the push test */\n'
        "    algorithm HMAC-SHA256; // the default\n"
        f'    secret "{secret}";\n'
        "};\n"
    )
    assert TsigKey.parse(text) == TsigKey(KEY_NAME, "hmac-sha256", secret)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param('key "k" { algorithm hmac-sha256; };', id="no-secret"),
        pytest.param('key "k" { algorithm hmac-sha256; secret "%%%"; };', id="secret-not-base64"),
        pytest.param(
            'key "a" { algorithm hmac-sha256; secret "YQ=="; };\n'
            'key "b" { algorithm hmac-sha256; secret "Yg=="; };',
            id="two-keys",
        ),
    ],
)
def test_tsig_key_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError, match=r"key|secret"):
        TsigKey.parse(text)


_LABEL: Final = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True)


@given(
    labels=st.lists(_LABEL, min_size=1, max_size=4),
    algorithm=st.sampled_from(["hmac-sha1", "hmac-sha256", "hmac-sha384", "hmac-sha512"]),
    secret=st.binary(min_size=1, max_size=64),
)
def test_tsig_key_to_text_parse_round_trips(
    labels: list[str], algorithm: str, secret: bytes
) -> None:
    key = TsigKey(".".join(labels), algorithm, base64.b64encode(secret).decode("ascii"))
    assert TsigKey.parse(key.to_text()) == key


def test_updates_need_a_tsig_key(signed: SignedWorkspace, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="TSIG"):
        Named(tmp_path, ZONE, signed.zone_file, allow_update=True)


# --------------------------------------------------------------------------
# The harness: transfers, updates, crashes, inline signing
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "allow_update", "inline_signing"),
    [
        pytest.param("named", False, False, id="named"),
        pytest.param("named", True, True, id="named-update-signing"),
        pytest.param("knotd", False, False, id="knotd"),
        pytest.param("knotd", True, True, id="knotd-update-signing"),
        pytest.param("nsd", False, False, id="nsd"),
    ],
)
def test_vendor_checker_accepts_the_configuration(
    kind: str, allow_update: bool, inline_signing: bool, signed: SignedWorkspace, tmp_path: Path
) -> None:
    key, _ = make_tsig_key(tmp_path, KEY_NAME)
    server: AuthoritativeServer
    if kind == "nsd":
        server = Nsd(tmp_path / kind, ZONE, signed.zone_file, tsig=key)
    else:
        server = SIGNING_SERVERS[kind](
            tmp_path / kind,
            ZONE,
            signed.zone_file,
            tsig=key,
            allow_update=allow_update,
            inline_signing=inline_signing,
        )
    checked = server.check_config()
    assert checked.ok, checked.output
    assert not server.running


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_zone_transfer_needs_the_tsig_key(
    kind: str, signed: SignedWorkspace, tmp_path: Path
) -> None:
    key, _ = make_tsig_key(tmp_path, KEY_NAME)
    with SERVERS[kind](tmp_path / kind, ZONE, signed.zone_file, tsig=key) as server:
        host, port = server.address
        unsigned = dns.query.tcp(
            dns.message.make_query(ORIGIN, "AXFR"), host, QUERY_TIMEOUT_SECONDS, port
        )
        assert unsigned.rcode() in (dns.rcode.REFUSED, dns.rcode.NOTAUTH)
        assert not unsigned.answer
        copy = dns.zone.Zone(ORIGIN, relativize=False)
        transfer, _ = dns.xfr.make_query(copy, keyring=key.keyring())
        dns.query.inbound_xfr(host, copy, transfer, port=port, timeout=QUERY_TIMEOUT_SECONDS)
    zone = signed.zone()
    assert set(copy.nodes) == set(zone.nodes)
    for name in (ORIGIN, dns.name.from_text(TAMPERED_OWNER)):
        for rdtype in (dns.rdatatype.SOA, dns.rdatatype.DNSKEY, dns.rdatatype.TXT):
            assert copy.get_rdataset(name, rdtype) == zone.get_rdataset(name, rdtype)


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_kill_frees_the_port_and_restart_takes_it_again(
    kind: str, signed: SignedWorkspace, tmp_path: Path
) -> None:
    with SERVERS[kind](tmp_path / kind, ZONE, signed.zone_file) as server:
        serial = server.soa_serial()
        address = server.address
        server.kill()
        assert not server.running
        with (
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
            socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp,
        ):
            udp.bind(address)  # no process of the group holds the port any more
            tcp.bind(address)
        server.start()
        assert server.address == address
        assert server.soa_serial() == serial


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_reload_serves_the_changed_zone_copy(
    kind: str, signed: SignedWorkspace, tmp_path: Path
) -> None:
    with SERVERS[kind](tmp_path / kind, ZONE, signed.zone_file) as server:
        serial = server.soa_serial()
        text = server.zone_copy.read_text(encoding="utf-8")
        assert text.count(f"{serial} ; serial") == 1
        server.zone_copy.write_text(text.replace(f"{serial} ; serial", f"{serial + 1} ; serial"))
        server.reload(serial=serial + 1)


def _update(
    server: AuthoritativeServer, owner: str, text: str, key: TsigKey | None
) -> dns.message.Message:
    update = dns.update.UpdateMessage(ORIGIN, keyring=key.keyring() if key else None)
    update.replace(owner, 300, "TXT", f'"{text}"')
    host, port = server.address
    return dns.query.tcp(update, host, QUERY_TIMEOUT_SECONDS, port)


def _assert_signed_by_server(server: AuthoritativeServer, owner: str, text: str) -> None:
    """``owner`` has the TXT ``text``, and it and the DNSKEYs validate to the server's own DS."""
    name = dns.name.from_text(owner)
    response = server.query(name, "TXT")
    txt = _answer(response, name, dns.rdatatype.TXT)
    assert _txt_texts(txt) == {text}
    keys = server.query(ORIGIN, "DNSKEY")
    dnskeys = _answer(keys, ORIGIN, dns.rdatatype.DNSKEY)
    keyring: dict[dns.name.Name, dns.node.Node | dns.rdataset.Rdataset] = {ORIGIN: dnskeys}
    dns.dnssec.validate(
        dnskeys, _answer(keys, ORIGIN, dns.rdatatype.RRSIG, dns.rdatatype.DNSKEY), keyring
    )
    dns.dnssec.validate(txt, _answer(response, name, dns.rdatatype.RRSIG, txt.rdtype), keyring)
    anchors = {line.split(" DS ", 1)[1] for line in server.trust_anchor_ds()}
    made = {dns.dnssec.make_ds(ORIGIN, key, "SHA256").to_text() for key in dnskeys}
    assert anchors
    assert anchors <= made


@pytest.mark.parametrize("kind", sorted(SIGNING_SERVERS))
def test_update_needs_the_tsig_key_is_signed_and_survives_a_crash(
    kind: str, signed: SignedWorkspace, tmp_path: Path
) -> None:
    key, _ = make_tsig_key(tmp_path, KEY_NAME)
    wrong = TsigKey(key.name, key.algorithm, OTHER_SECRET)
    owner = f"_alter.pushed.{ZONE}."
    server = SIGNING_SERVERS[kind](
        tmp_path / kind,
        ZONE,
        signed.zone_file,
        tsig=key,
        allow_update=True,
        inline_signing=True,
    )
    with server:
        unsigned = _update(server, owner, "unsigned", None)
        assert unsigned.rcode() in (dns.rcode.REFUSED, dns.rcode.NOTAUTH)
        with pytest.raises(dns.tsig.PeerBadSignature):
            _update(server, owner, "wrong key", wrong)
        assert server.query(owner, "TXT").rcode() == dns.rcode.NXDOMAIN
        before = server.soa_serial()
        accepted = _update(server, owner, "pushed", key)
        assert accepted.rcode() == dns.rcode.NOERROR
        _assert_signed_by_server(server, owner, "pushed")
        assert server.soa_serial() > before
        server.kill()
        server.start()
        _assert_signed_by_server(server, owner, "pushed")


@pytest.mark.parametrize("kind", sorted(SIGNING_SERVERS))
def test_verify_proves_an_inline_signed_zone_to_the_servers_ds(
    kind: str, signed: SignedWorkspace, tmp_path: Path
) -> None:
    server = SIGNING_SERVERS[kind](tmp_path / kind, ZONE, signed.zone_file, inline_signing=True)
    with server:
        dnskeys = server.dnskeys()
        assert not set(dnskeys) & set(
            _zone_rdataset(signed.zone(), ORIGIN, dns.rdatatype.DNSKEY)
        ), "the server must sign with its own keys, not serve ours"
        anchor = server.write_trust_anchor(tmp_path / "server.ds")
        proven = verify_on(signed, server, "--trust-anchor", str(anchor))
        ours = verify_on(signed, server)
    assert proven.returncode == EXIT_OK, _output(proven)
    assert f"{HANDLE_COUNT}/{HANDLE_COUNT} handles verified" in proven.stdout
    assert ours.returncode == EXIT_VERIFICATION, _output(ours)
    failures = [line for line in ours.stderr.splitlines() if line.startswith("_alter.")]
    assert len(failures) > HANDLE_COUNT - 1, ours.stderr
    assert all(": bogus:" in line for line in failures), ours.stderr
