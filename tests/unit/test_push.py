"""Tests for publish.push: TSIG key files, record ownership, plans and UPDATE messages.

No daemons: where a server is needed, the embedded :class:`ZoneServer` serves the
example zone signed by the real pipeline. It refuses zone transfers, so
``served_records`` falls back to asking each owner name. The transfer path is seen
through a one-shot loopback AXFR responder; BIND and Knot are in
tests/integration/test_push.py.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.rdtypes.ANY.TXT
import dns.rrset
import dns.tsig
import dns.update
import dns.zone
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish import pipeline
from alter_publish.definition.model import ZoneSpec, load_zone
from alter_publish.dns.server import ZoneServer
from alter_publish.dns.transfer import TransferredTxt, TxtChanges
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.errors import EXIT_NETWORK, EXIT_USAGE, PublishError, RenderError, UsageError
from alter_publish.format.envelope import Revocation, sign_envelope, split_txt
from alter_publish.format.handles import parse_handle
from alter_publish.format.identitylog import read_log
from alter_publish.format.logrecord import checkpoint_record, parse_checkpoint_record
from alter_publish.format.note import Note
from alter_publish.format.tlog import Checkpoint
from alter_publish.keys.lifecycle import rotate
from alter_publish.pipeline.unchanged import outputs_as_proven
from alter_publish.publish import managed
from alter_publish.publish import push as publishing
from alter_publish.publish.desired import desired_records, read_desired
from alter_publish.publish.transferring import Snapshot
from tests.conftest import EXAMPLE_ZONE, NOW, Workspace

ZONE = "example.com"
APEX_OWNER = f"_alter.{ZONE}."
BLAKE_OWNER = f"_alter.blake.{ZONE}."
DREW_OWNER = f"_alter.drew.{ZONE}."
BOT_OWNER = f"_alter.deploy.bot.{ZONE}."
OPUS_OWNER = f"_alter.cc-opus-4-7.{ZONE}."
#: The example zone's owners in DNSSEC canonical order (RFC 4034 6.1), not string order.
CANONICAL_OWNERS = [APEX_OWNER, BLAKE_OWNER, BOT_OWNER, OPUS_OWNER, DREW_OWNER]
LOG_OWNER = f"_alter-log.{ZONE}."
HOUR_SECONDS = 3600
TXT_STRING_MAX_OCTETS = 255
TSIG_SECRET = bytes(range(32))
TSIG_SECRET_B64 = base64.b64encode(TSIG_SECRET).decode("ascii")
TSIG_NAME = "alter-push"
TRANSFER_WAIT_SECONDS = 5.0
SOA_NS = (
    "@ 3600 IN SOA ns1.{zone}. hostmaster.{zone}. 1 7200 3600 1209600 300\n"
    "@ 3600 IN NS ns1.{zone}.\n"
)


def _key_file_text(
    *, name: str = TSIG_NAME, algorithm: str = "hmac-sha256", secret: str = TSIG_SECRET_B64
) -> str:
    """A key file as ``tsig-keygen`` writes it."""
    return f'key "{name}" {{\n\talgorithm {algorithm};\n\tsecret "{secret}";\n}};\n'


def _txt(text: str) -> dns.rdtypes.ANY.TXT.TXT:
    return dns.rdtypes.ANY.TXT.TXT(dns.rdataclass.IN, dns.rdatatype.TXT, list(split_txt(text)))


def _strings(text: str) -> tuple[bytes, ...]:
    return tuple(part.encode("ascii") for part in split_txt(text))


def _joined(rdata: dns.rdata.Rdata) -> str:
    assert isinstance(rdata, dns.rdtypes.ANY.TXT.TXT)
    return b"".join(rdata.strings).decode("ascii")


def _owned(handle: str, detail: str = "sig=AAAA") -> str:
    """An alter1 text this tool owns (it has ``h=``)."""
    return f"v=alter1; h={handle}; e=1; {detail}"


def _records(owner: str, *texts: str, ttl: int = HOUR_SECONDS) -> managed.Records:
    return managed.Records(owner, ttl, texts, tuple(tuple(_txt(text).strings) for text in texts))


# --- TSIG key files -----------------------------------------------------------------------


@pytest.mark.parametrize("algorithm", publishing.TSIG_ALGORITHMS)
def test_a_tsig_keygen_file_parses(tmp_path: Path, algorithm: str) -> None:
    path = tmp_path / "push.key"
    path.write_text(_key_file_text(algorithm=algorithm), encoding="ascii")

    key = publishing.read_tsig_key(path)

    assert (key.name, key.algorithm, key.secret) == (f"{TSIG_NAME}.", algorithm, TSIG_SECRET)
    assert key.keyname == dns.name.from_text(TSIG_NAME)
    (ring_key,) = key.keyring.values()
    assert ring_key.secret == TSIG_SECRET
    assert ring_key.algorithm == dns.name.from_text(algorithm)


def test_a_key_file_in_other_spelling_parses(tmp_path: Path) -> None:
    """Unquoted name, upper-case keywords, everything on one line."""
    path = tmp_path / "push.key"
    path.write_text(
        f'KEY push.example. {{ ALGORITHM HMAC-SHA512; SECRET "{TSIG_SECRET_B64}"; }};',
        encoding="ascii",
    )

    key = publishing.read_tsig_key(path)

    assert (key.name, key.algorithm, key.secret) == ("push.example.", "hmac-sha512", TSIG_SECRET)


def test_the_repr_of_a_key_never_shows_the_secret(tmp_path: Path) -> None:
    path = tmp_path / "push.key"
    path.write_text(_key_file_text(), encoding="ascii")

    key = publishing.read_tsig_key(path)

    for shown in (repr(key), str(key), repr([key])):
        assert TSIG_SECRET_B64 not in shown
        assert repr(TSIG_SECRET) not in shown
        assert "secret" not in shown
        assert TSIG_NAME in shown


@dataclass(frozen=True, slots=True)
class BadKeyFile:
    """A key file that must be refused; ``content`` None means the path is a directory."""

    id: str
    content: bytes | None
    fragment: str

    def param(self) -> object:
        return pytest.param(self, id=self.id)


NOT_BASE64 = "c2VjcmV0*not*base64*c2VjcmV0"
BAD_KEY_FILES = [
    BadKeyFile(
        "no-key-clause",
        f'algorithm hmac-sha256;\nsecret "{TSIG_SECRET_B64}";\n'.encode(),
        "not a BIND key file",
    ),
    BadKeyFile(
        "unclosed-key-clause",
        f'key "{TSIG_NAME}" {{ algorithm hmac-sha256; secret "{TSIG_SECRET_B64}";\n'.encode(),
        "not a BIND key file",
    ),
    BadKeyFile(
        "missing-secret",
        f'key "{TSIG_NAME}" {{ algorithm hmac-sha256; }};\n'.encode(),
        "needs an algorithm and a secret",
    ),
    BadKeyFile(
        "missing-algorithm",
        f'key "{TSIG_NAME}" {{ secret "{TSIG_SECRET_B64}"; }};\n'.encode(),
        "needs an algorithm and a secret",
    ),
    BadKeyFile(
        "secret-not-base64",
        _key_file_text(secret=NOT_BASE64).encode(),
        "not base64",
    ),
    BadKeyFile(
        "secret-bad-padding",
        _key_file_text(secret=TSIG_SECRET_B64.rstrip("=")).encode(),
        "not base64",
    ),
    BadKeyFile(
        "algorithm-hmac-md4",
        _key_file_text(algorithm="hmac-md4").encode(),
        "unsupported TSIG algorithm 'hmac-md4'",
    ),
    BadKeyFile(
        "not-utf-8",
        b'key "x" { algorithm hmac-sha256; secret "\xff\xfe"; };\n',
        "cannot read TSIG key file",
    ),
    BadKeyFile("a-directory", None, "cannot read TSIG key file"),
]


@pytest.mark.parametrize("bad", [bad.param() for bad in BAD_KEY_FILES])
def test_a_bad_key_file_is_a_usage_error_naming_the_file_not_the_secret(
    tmp_path: Path, bad: BadKeyFile
) -> None:
    path = tmp_path / "push.key"
    if bad.content is None:
        path.mkdir()
    else:
        path.write_bytes(bad.content)

    with pytest.raises(UsageError) as raised:
        publishing.read_tsig_key(path)

    message = str(raised.value)
    assert raised.value.exit_code == EXIT_USAGE
    assert raised.value.where == str(path)
    assert message.startswith(f"{path}: ")
    assert bad.fragment in message
    assert "\n" not in message
    for secret in (TSIG_SECRET_B64, NOT_BASE64, "c2VjcmV0"):
        assert secret not in message


def test_a_missing_key_file_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "absent.key"

    with pytest.raises(UsageError) as raised:
        publishing.read_tsig_key(path)

    assert raised.value.where == str(path)
    assert "cannot read TSIG key file" in str(raised.value)


def test_a_file_with_two_keys_never_mixes_them(tmp_path: Path) -> None:
    other_secret = bytes(range(100, 164))
    path = tmp_path / "keys.conf"
    path.write_text(
        _key_file_text(name="first", algorithm="hmac-sha256")
        + _key_file_text(
            name="second",
            algorithm="hmac-sha512",
            secret=base64.b64encode(other_secret).decode("ascii"),
        ),
        encoding="ascii",
    )

    try:
        key = publishing.read_tsig_key(path)
    except UsageError:
        return  # refusing a file of several keys is fine too
    assert (key.name, key.algorithm, key.secret) in (
        ("first.", "hmac-sha256", TSIG_SECRET),
        ("second.", "hmac-sha512", other_secret),
    )


# --- what is ours --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("v=alter1; h=~blake; e=1; k=ed25519; p=AAAA; sig=BBBB", id="envelope"),
        pytest.param("v=alter1; h=~blake; e=1; rev=CCCC", id="revocation"),
        pytest.param("v=alter1;h=~blake;e=1", id="no-spaces"),
        pytest.param("v=alter1 ; h = ~example.com; e=2", id="spaces-around"),
    ],
)
def test_owns_alter1_records_with_a_handle(text: str) -> None:
    assert managed.owns(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("v=alter1; org=x", id="alter1-without-h"),
        pytest.param("hello world", id="plain-txt"),
        pytest.param("v=spf1 include:_spf.example.com ~all", id="spf"),
        pytest.param("v=alter1; org=x h=~blake", id="h-inside-a-value"),
        pytest.param("v=alter1; r=https://example.com/?h=~blake", id="h-in-a-url"),
        pytest.param("v=alter1; note=ch=1", id="h-ends-another-name"),
        pytest.param("v=alter10; h=~blake", id="other-version"),
        pytest.param("note: v=alter1; h=~blake", id="not-at-the-start"),
        pytest.param("", id="empty"),
    ],
)
def test_does_not_own_other_texts(text: str) -> None:
    assert not managed.owns(text)


# --- plans ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spec() -> ZoneSpec:
    return load_zone(EXAMPLE_ZONE)


def _plan(
    spec: ZoneSpec,
    desired: Mapping[str, managed.Records],
    served: Mapping[str, managed.Records],
) -> publishing.Plan:
    return publishing.make_plan(spec, desired, served, server="127.0.0.1:53", enumeration="queries")


def _by_owner(*records: managed.Records) -> dict[str, managed.Records]:
    return {r.owner: r for r in records}


def test_an_owner_only_we_want_is_an_add(spec: ZoneSpec) -> None:
    want = _records(BLAKE_OWNER, _owned("~blake"))

    result = _plan(spec, _by_owner(want), {})

    assert [(c.owner, c.action, c.before, c.after) for c in result.changes] == [
        (BLAKE_OWNER, "add", None, want)
    ]
    assert (result.pending, result.served, result.deletes) == (True, 0, 0)
    assert result.counts() == {"add": 1, "update": 0, "delete": 0}


def test_an_owner_only_served_is_a_delete(spec: ZoneSpec) -> None:
    have = _records(BLAKE_OWNER, _owned("~blake"), _owned("~blake", "rev=AAAA"))

    result = _plan(spec, {}, _by_owner(have))

    assert [(c.owner, c.action, c.before, c.after) for c in result.changes] == [
        (BLAKE_OWNER, "delete", have, None)
    ]
    assert (result.served, result.deletes) == (2, 2)
    assert result.counts() == {"add": 0, "update": 0, "delete": 1}


def test_other_texts_are_an_update(spec: ZoneSpec) -> None:
    have = _records(BLAKE_OWNER, _owned("~blake", "sig=OLD"))
    want = _records(BLAKE_OWNER, _owned("~blake", "sig=NEW"))

    result = _plan(spec, _by_owner(want), _by_owner(have))

    assert [(c.owner, c.action, c.before, c.after) for c in result.changes] == [
        (BLAKE_OWNER, "update", have, want)
    ]
    assert result.deletes == 0  # a replaced envelope is no deletion


def test_a_ttl_only_change_is_an_update_replacing_every_record(spec: ZoneSpec) -> None:
    texts = (_owned("~blake"), _owned("~blake", "rev=AAAA"))
    have = _records(BLAKE_OWNER, *texts, ttl=HOUR_SECONDS)
    want = _records(BLAKE_OWNER, *texts, ttl=2 * HOUR_SECONDS)

    result = _plan(spec, _by_owner(want), _by_owner(have))

    assert [(c.action, c.after) for c in result.changes] == [("update", want)]
    assert result.deletes == 0  # re-added with the new TTL, nothing removed


def test_the_same_texts_in_another_order_are_no_change(spec: ZoneSpec) -> None:
    first, second = _owned("~blake"), _owned("~blake", "rev=AAAA")
    want = _records(BLAKE_OWNER, first, second)
    have = _records(BLAKE_OWNER, second, first)

    result = _plan(spec, _by_owner(want), _by_owner(have))

    assert result.changes == ()
    assert (result.pending, result.served, result.deletes) == (False, 2, 0)
    assert result.counts() == {"add": 0, "update": 0, "delete": 0}


def test_changes_come_in_canonical_owner_order(spec: ZoneSpec) -> None:
    shuffled = [DREW_OWNER, APEX_OWNER, OPUS_OWNER, BLAKE_OWNER, BOT_OWNER]
    desired = {owner: _records(owner, _owned("~x")) for owner in shuffled}

    result = _plan(spec, desired, {})

    assert [c.owner for c in result.changes] == CANONICAL_OWNERS
    assert sorted(CANONICAL_OWNERS) != CANONICAL_OWNERS, "string order would pass by luck"


def test_change_deletes_counts_replaced_and_removed_records() -> None:
    a, b, c = _owned("~blake", "sig=A"), _owned("~blake", "sig=B"), _owned("~blake", "sig=C")
    two = _records(BLAKE_OWNER, a, b)

    def deletes(action: str, before: managed.Records | None, after: managed.Records | None) -> int:
        return publishing.Change(BLAKE_OWNER, action, before, after).deletes

    assert deletes("add", None, two) == 0
    assert deletes("update", two, _records(BLAKE_OWNER, a, c)) == 0  # replaced, not deleted
    assert deletes("update", _records(BLAKE_OWNER, a), two) == 0
    assert deletes("update", two, _records(BLAKE_OWNER, a, b, ttl=2 * HOUR_SECONDS)) == 0
    assert deletes("delete", two, None) == 2


def test_plan_deletes_sums_its_changes(spec: ZoneSpec) -> None:
    a, b, c = _owned("~x", "sig=A"), _owned("~x", "sig=B"), _owned("~x", "sig=C")
    served = _by_owner(
        _records(BLAKE_OWNER, a, b),  # update replacing 1 of 2
        _records(DREW_OWNER, a, b),  # delete of 2
        _records(BOT_OWNER, a, ttl=2 * HOUR_SECONDS),  # TTL-only: 1 replaced
        _records(OPUS_OWNER, a),  # unchanged
    )
    desired = _by_owner(
        _records(BLAKE_OWNER, a, c),
        _records(BOT_OWNER, a),
        _records(OPUS_OWNER, a),
        _records(APEX_OWNER, c),  # add
    )

    result = _plan(spec, desired, served)

    assert [(ch.owner, ch.action, ch.deletes) for ch in result.changes] == [
        (APEX_OWNER, "add", 0),
        (BLAKE_OWNER, "update", 0),
        (BOT_OWNER, "update", 0),
        (DREW_OWNER, "delete", 2),
    ]
    assert (result.deletes, result.served) == (2, 6)
    doc = result.to_mapping()
    assert (doc["deletes"], doc["served_records"], doc["pending"]) == (2, 6, True)
    assert doc["counts"] == {"add": 1, "update": 2, "delete": 1}
    assert doc["changes"][0] == {
        "owner": APEX_OWNER,
        "action": "add",
        "before": None,
        "after": {"ttl": HOUR_SECONDS, "texts": [c]},
    }
    assert json.loads(json.dumps(doc)) == doc


def _four_served_deleting(spec: ZoneSpec, count: int) -> publishing.Plan:
    """Four of our records served, one per owner; the plan deletes ``count`` owners."""
    owners = [BLAKE_OWNER, DREW_OWNER, BOT_OWNER, OPUS_OWNER]
    served = {owner: _records(owner, _owned("~x")) for owner in owners}
    desired = {owner: served[owner] for owner in owners[count:]}
    result = _plan(spec, desired, served)
    assert (result.served, result.deletes) == (4, count)
    return result


@pytest.mark.parametrize(
    ("count", "max_share"),
    [
        pytest.param(1, 0.25, id="at-the-share"),
        pytest.param(1, 0.5, id="below-the-share"),
        pytest.param(0, 0.0, id="nothing-deleted-share-zero"),
        pytest.param(4, 1.0, id="everything-at-share-one"),
    ],
)
def test_check_deletes_allows_up_to_the_share(spec: ZoneSpec, count: int, max_share: float) -> None:
    publishing.check_deletes(_four_served_deleting(spec, count), max_share, force=False)


@pytest.mark.parametrize(
    ("count", "max_share"),
    [
        pytest.param(2, 0.25, id="over-the-default"),
        pytest.param(1, 0.2, id="just-over"),
        pytest.param(1, 0.0, id="any-at-share-zero"),
    ],
)
def test_check_deletes_refuses_over_the_share_unless_forced(
    spec: ZoneSpec, count: int, max_share: float
) -> None:
    result = _four_served_deleting(spec, count)

    with pytest.raises(UsageError) as raised:
        publishing.check_deletes(result, max_share, force=False)

    assert raised.value.where == ZONE
    assert raised.value.exit_code == EXIT_USAGE
    assert f"{count} of the 4" in str(raised.value)
    assert "--force" in str(raised.value)
    publishing.check_deletes(result, max_share, force=True)


def test_the_default_share_refuses_two_of_four(spec: ZoneSpec) -> None:
    with pytest.raises(UsageError):
        publishing.check_deletes(
            _four_served_deleting(spec, 2), publishing.DEFAULT_MAX_DELETE_SHARE, force=False
        )


# --- a signed zone on the loopback server -------------------------------------------------


@dataclass(frozen=True, slots=True)
class Signed:
    """The example zone signed by the real pipeline into a tmp workspace."""

    ws: Workspace
    spec: ZoneSpec

    def zone(self) -> dns.zone.Zone:
        """A fresh parse of the rendered zone (free to change before serving)."""
        return pipeline.read_zone_file(self.ws.rendered, ZONE)

    def texts(self) -> dict[str, list[str]]:
        """Owner -> sorted texts, as the envelopes document says, and the log's checkpoint
        record as the rendered zone holds it."""
        doc = json.loads(self.ws.envelopes.read_text(encoding="utf-8"))
        (log,) = [_joined(r) for r in self.zone().find_rdataset(LOG_OWNER, dns.rdatatype.TXT)]
        assert log.startswith("v=alter-log1; n=")
        return {
            item["owner"]: sorted([item["text"], *item.get("revocations", [])])
            for item in doc["handles"]
        } | {LOG_OWNER: [log]}


@pytest.fixture
def signed(workspace: Workspace) -> Signed:
    report = pipeline.sign(
        [workspace.zone_file], out=workspace.out, keys=workspace.keys, now=NOW, create_keys=True
    )
    assert report.ok
    return Signed(workspace, load_zone(workspace.zone_file))


@contextlib.contextmanager
def _serving(*zones: dns.zone.Zone) -> Iterator[tuple[str, int]]:
    with ZoneServer(list(zones)) as server:
        yield server.address


def _served_texts(served: Mapping[str, managed.Records]) -> dict[str, list[str]]:
    return {owner: sorted(records.texts) for owner, records in served.items()}


def _add_txt(zone: dns.zone.Zone, owner: str, *texts: str) -> None:
    rdataset = zone.find_rdataset(owner, dns.rdatatype.TXT, create=True)
    for text in texts:
        rdataset.add(_txt(text), HOUR_SECONDS)


FOREIGN_AT_BLAKE = ("not ours", "v=alter1; org=example")


def test_served_records_by_queries_are_the_signed_texts(signed: Signed) -> None:
    with _serving(signed.zone()) as address:
        served, how = publishing.served_records(signed.spec, address, tsig=None)

    assert how == "queries"
    assert _served_texts(served) == signed.texts()
    assert list(served) == [*(h.owner for h in signed.spec.handles), LOG_OWNER]
    assert served[LOG_OWNER].ttl == signed.spec.ttl
    for handle_spec in signed.spec.handles:
        records = served[handle_spec.owner]
        assert records.owner == handle_spec.owner
        assert records.ttl == handle_spec.ttl
        assert sorted(_joined(r) for r in records.rdatas()) == sorted(records.texts)


def test_served_records_leave_out_foreign_txt_at_our_owners(signed: Signed) -> None:
    zone = signed.zone()
    _add_txt(zone, BLAKE_OWNER, *FOREIGN_AT_BLAKE)
    _add_txt(zone, APEX_OWNER, "v=spf1 -all")

    with _serving(zone) as address:
        served, _ = publishing.served_records(signed.spec, address, tsig=None)

    assert _served_texts(served) == signed.texts()
    for owner, records in served.items():
        ours = managed.owns_log if owner == LOG_OWNER else managed.owns
        assert all(ours(_joined(rdata)) for rdata in records.rdatas())


@pytest.mark.parametrize("with_tsig", [False, True], ids=["no-tsig", "tsig"])
def test_plan_against_a_server_serving_what_sign_wrote_has_nothing_to_do(
    signed: Signed, with_tsig: bool
) -> None:
    tsig = publishing.TsigKey(f"{TSIG_NAME}.", "hmac-sha256", TSIG_SECRET) if with_tsig else None
    zone = signed.zone()
    _add_txt(zone, BLAKE_OWNER, *FOREIGN_AT_BLAKE)

    with _serving(zone) as address:
        result = publishing.plan(signed.spec, out=signed.ws.out, server=address, tsig=tsig)

    assert result.changes == ()
    assert not result.pending
    assert (result.served, result.enumeration) == (6, "queries")
    assert result.server == f"{address[0]}:{address[1]}"
    assert desired_records(signed.spec, signed.ws.out).keys() == set(signed.texts())


def test_plan_sees_a_missing_owner_and_a_changed_text(signed: Signed) -> None:
    zone = signed.zone()
    zone.delete_rdataset(DREW_OWNER, dns.rdatatype.TXT)
    blake = zone.find_rdataset(BLAKE_OWNER, dns.rdatatype.TXT)
    (old,) = [_joined(rdata) for rdata in blake]
    planted = old.replace("; e=1;", "; e=9;")
    assert planted != old
    zone.replace_rdataset(BLAKE_OWNER, dns.rdataset.from_rdata(HOUR_SECONDS, _txt(planted)))

    with _serving(zone) as address:
        result = publishing.plan(signed.spec, out=signed.ws.out, server=address, tsig=None)

    assert [(c.owner, c.action) for c in result.changes] == [
        (BLAKE_OWNER, "update"),
        (DREW_OWNER, "add"),
    ]
    update = result.changes[0]
    assert update.before is not None
    assert update.after is not None
    assert (update.before.texts, update.after.texts) == ((planted,), (old,))
    assert (result.served, result.deletes) == (5, 0)


def test_a_server_not_authoritative_for_the_zone_is_a_publish_error(signed: Signed) -> None:
    other = parse_zone_text(
        "$ORIGIN example.org.\n" + SOA_NS.format(zone="example.org"), "example.org", where="-"
    )

    with _serving(other) as address, pytest.raises(PublishError) as raised:
        publishing.served_records(signed.spec, address, tsig=None)

    assert raised.value.exit_code == EXIT_NETWORK
    assert raised.value.where == f"{address[0]}:{address[1]}"


def test_server_signs_tells_a_signed_zone_from_an_unsigned_one(signed: Signed) -> None:
    unsigned = parse_zone_text(f"$ORIGIN {ZONE}.\n" + SOA_NS.format(zone=ZONE), ZONE, where="-")
    with _serving(signed.zone()) as address:
        assert publishing.server_signs(signed.spec, address)
    with _serving(unsigned) as address:
        assert not publishing.server_signs(signed.spec, address)


# --- zone transfers (a one-shot loopback AXFR responder) -----------------------------------


def _read_exact(conn: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = conn.recv(count - len(data))
        if not chunk:
            raise ConnectionError("peer closed")
        data += chunk
    return data


def _zone_rrsets(
    zone: dns.zone.Zone, rename: Callable[[dns.name.Name], dns.name.Name] = lambda n: n
) -> list[dns.rrset.RRset]:
    """The zone as an AXFR answer: SOA, everything else (owners through ``rename``), SOA."""
    soa: dns.rrset.RRset | None = None
    others: list[dns.rrset.RRset] = []
    assert zone.origin is not None
    for name, rdataset in zone.iterate_rdatasets():
        owner = name.derelativize(zone.origin)
        rrset = dns.rrset.RRset(
            owner if rdataset.rdtype == dns.rdatatype.SOA else rename(owner),
            rdataset.rdclass,
            rdataset.rdtype,
            rdataset.covers,
        )
        for rdata in rdataset:
            rrset.add(rdata, rdataset.ttl)
        if rdataset.rdtype == dns.rdatatype.SOA:
            soa = rrset
        else:
            others.append(rrset)
    assert soa is not None
    return [soa, *others, soa]


@contextlib.contextmanager
def _transfer_server(
    rrsets: Sequence[dns.rrset.RRset], per_message: int = 0
) -> Iterator[tuple[str, int]]:
    """Answer the first TCP query on a loopback port with ``rrsets`` in one message (or
    ``per_message`` rrsets a message)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(TRANSFER_WAIT_SECONDS)

    def answer() -> None:
        with contextlib.suppress(OSError, dns.exception.DNSException):
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(TRANSFER_WAIT_SECONDS)
                (length,) = struct.unpack("!H", _read_exact(conn, 2))
                query = dns.message.from_wire(_read_exact(conn, length))
                step = per_message or len(rrsets)
                for start in range(0, len(rrsets), step):
                    response = dns.message.make_response(query)
                    response.flags |= dns.flags.AA
                    response.answer.extend(rrsets[start : start + step])
                    wire = response.to_wire()
                    conn.sendall(struct.pack("!H", len(wire)) + wire)

    thread = threading.Thread(target=answer, name="axfr-once", daemon=True)
    thread.start()
    try:
        host, port = listener.getsockname()[:2]
        yield str(host), int(port)
    finally:
        thread.join(TRANSFER_WAIT_SECONDS)
        listener.close()


def test_a_transfer_also_sees_owners_we_no_longer_list(signed: Signed) -> None:
    zone = signed.zone()
    _add_txt(zone, BLAKE_OWNER, *FOREIGN_AT_BLAKE)
    _add_txt(zone, f"_alter.old.{ZONE}.", _owned("~old"), "not ours")
    _add_txt(zone, f"www.{ZONE}.", _owned("~www"))  # ours in form, but not at an _alter owner

    with _transfer_server(_zone_rrsets(zone)) as address:
        result = publishing.plan(signed.spec, out=signed.ws.out, server=address, tsig=None)

    assert result.enumeration == "axfr"
    assert [(c.owner, c.action) for c in result.changes] == [(f"_alter.old.{ZONE}.", "delete")]
    (gone,) = result.changes
    assert gone.before is not None
    assert gone.before.texts == (_owned("~old"),)
    assert [_joined(r) for r in gone.before.rdatas()] == [_owned("~old")]
    assert (result.served, result.deletes) == (7, 1)


@pytest.mark.parametrize("by", ["queries", "axfr"])
def test_a_transfer_read_in_a_child_gives_what_one_read_here_gives(signed: Signed, by: str) -> None:
    # push starts the transfer before it reads the outputs; a server that offers none
    # (the embedded one) is asked by queries, as when the transfer is read here.
    zone = signed.zone()
    _add_txt(zone, f"_alter.old.{ZONE}.", _owned("~old"))
    found = []
    for child in (True, False):
        serving = _transfer_server(_zone_rrsets(zone)) if by == "axfr" else _serving(zone)
        with serving as address:
            if child:
                with publishing.start_transfer(signed.spec, address, None) as transfer:
                    found.append(
                        publishing.served_records(
                            signed.spec, address, tsig=None, transfer=transfer
                        )
                    )
            else:
                found.append(publishing.served_records(signed.spec, address, tsig=None))
    assert found[0] == found[1]
    served, how = found[0]
    assert how == by
    assert (f"_alter.old.{ZONE}." in served) == (by == "axfr")


def _corrupt_envelopes(ws: Workspace) -> None:
    ws.envelopes.write_text("not json\n", encoding="utf-8")


def _edit_definition(ws: Workspace) -> None:
    ws.zone_file.write_text(ws.zone_file.read_text() + "# a comment\n", encoding="utf-8")


def _grow_log(ws: Workspace) -> None:
    log = ws.root / "zones" / "example.com.log"
    log.write_bytes(log.read_bytes() + log.read_bytes().splitlines(keepends=True)[-1])


@pytest.mark.parametrize("change", [_corrupt_envelopes, _edit_definition, _grow_log])
def test_plan_transfers_early_only_from_outputs_as_sign_left_them(
    signed: Signed, change: Callable[[Workspace], None]
) -> None:
    # plan starts the zone transfer while it reads the outputs only when its record
    # says they can be read: a broken or stale output sends the server nothing first.
    ws = signed.ws
    assert outputs_as_proven(ws.zone_file, out=ws.out, keys=ws.keys)
    change(ws)
    assert not outputs_as_proven(ws.zone_file, out=ws.out, keys=ws.keys)


def test_a_transfer_block_left_early_stops_its_child(signed: Signed) -> None:
    # The outputs failed to read while the child held a result bigger than the pipe: it
    # waits to send it, so leaving the block must stop it, not wait for it.
    zone = signed.zone()
    for n in range(3000):
        _add_txt(zone, f"_alter.x{n}.{ZONE}.", _owned(f"~x{n}", "sig=" + "A" * 60))
    left = threading.Event()

    def leave_early() -> None:
        with (
            _transfer_server(_zone_rrsets(zone), per_message=500) as address,
            contextlib.suppress(RenderError),
            publishing.start_transfer(signed.spec, address, None),
        ):
            time.sleep(1.0)  # the child has read the transfer and blocks sending it
            raise RenderError("cannot read", where="build/example.com.envelopes.json")
        left.set()

    threading.Thread(target=leave_early, name="leave-early", daemon=True).start()
    assert left.wait(20), "leaving the transfer block waited for its child"


def test_a_plan_that_transfers_while_it_reads_plans_the_same(signed: Signed) -> None:
    zone = signed.zone()
    _add_txt(zone, f"_alter.old.{ZONE}.", _owned("~old"))
    ws, plans = signed.ws, []
    for keys in (ws.keys, None):
        with _transfer_server(_zone_rrsets(zone)) as address:
            result = publishing.plan(signed.spec, out=ws.out, server=address, tsig=None, keys=keys)
            plans.append(dataclasses.replace(result, server=""))
    assert plans[0] == plans[1]
    assert plans[0].enumeration == "axfr"
    assert [(c.owner, c.action) for c in plans[0].changes] == [(f"_alter.old.{ZONE}.", "delete")]


# --- the log's checkpoint record (_alter-log) ------------------------------------------------


def _served_log(zone: dns.zone.Zone) -> str:
    (text,) = [_joined(r) for r in zone.find_rdataset(LOG_OWNER, dns.rdatatype.TXT)]
    return text


def _with_size(record: str, size: int) -> str:
    """The checkpoint record ``record`` with its tree size changed (signatures kept:
    plan and push never check them, the proof after a push does)."""
    note = Note.parse(parse_checkpoint_record(record))
    checkpoint = Checkpoint.parse(note.text)
    text = dataclasses.replace(checkpoint, size=size).to_text()
    return checkpoint_record(Note(text, note.signatures).to_text())


def _size(record: str) -> int:
    return Checkpoint.parse(Note.parse(parse_checkpoint_record(record)).text).size


def _serving_log(signed: Signed, text: str) -> dns.zone.Zone:
    zone = signed.zone()
    zone.replace_rdataset(LOG_OWNER, dns.rdataset.from_rdata(HOUR_SECONDS, _txt(text)))
    return zone


def test_an_older_served_checkpoint_is_an_update_without_deletions(signed: Signed) -> None:
    current = _served_log(signed.zone())
    older = _with_size(current, _size(current) - 1)

    with _serving(_serving_log(signed, older)) as address:
        result = publishing.plan(signed.spec, out=signed.ws.out, server=address, tsig=None)

    (change,) = result.changes
    assert (change.owner, change.action, change.deletes) == (LOG_OWNER, "update", 0)
    assert change.before is not None
    assert change.after is not None
    assert (change.before.texts, change.after.texts) == ((older,), (current,))
    assert change.after.ttl == signed.spec.ttl
    publishing.check_deletes(result, publishing.DEFAULT_MAX_DELETE_SHARE, force=False)


def test_a_newer_served_checkpoint_is_a_rollback_that_needs_force(signed: Signed) -> None:
    current = _served_log(signed.zone())
    size = _size(current)
    newer = _with_size(current, size + 3)

    with _serving(_serving_log(signed, newer)) as address:
        result = publishing.plan(signed.spec, out=signed.ws.out, server=address, tsig=None)

    assert [(c.owner, c.action) for c in result.changes] == [(LOG_OWNER, "update")]
    with pytest.raises(UsageError) as raised:
        publishing.check_deletes(result, 1.0, force=False)
    assert raised.value.exit_code == EXIT_USAGE
    assert f"checkpoint of size {size + 3} with size {size}" in str(raised.value)
    publishing.check_deletes(result, 1.0, force=True)


def test_a_zone_that_stops_having_a_log_deletes_the_record(signed: Signed) -> None:
    (signed.ws.out / ZONE / "log" / "checkpoint").unlink()

    with _serving(signed.zone()) as address:
        result = publishing.plan(signed.spec, out=signed.ws.out, server=address, tsig=None)

    assert [(c.owner, c.action, c.deletes) for c in result.changes] == [(LOG_OWNER, "delete", 1)]
    assert LOG_OWNER not in desired_records(signed.spec, signed.ws.out)


@pytest.mark.parametrize("by", ["queries", "axfr"])
def test_only_the_checkpoint_record_at_the_log_owner_is_ours(signed: Signed, by: str) -> None:
    zone = signed.zone()
    log = _served_log(zone)
    _add_txt(zone, LOG_OWNER, "not ours", "v=alter1; h=~blake; e=1; sig=AAAA")
    _add_txt(zone, BLAKE_OWNER, log)  # a checkpoint record, but at a handle's owner

    serving = _transfer_server(_zone_rrsets(zone)) if by == "axfr" else _serving(zone)
    with serving as address:
        result = publishing.plan(signed.spec, out=signed.ws.out, server=address, tsig=None)

    assert result.enumeration == by
    assert (result.changes, result.served) == ((), 6)


def _recased(text: str) -> Callable[[dns.name.Name], dns.name.Name]:
    wanted = dns.name.from_text(text)

    def rename(name: dns.name.Name) -> dns.name.Name:
        return wanted if name == wanted else name  # Name equality ignores case

    return rename


@pytest.mark.parametrize(
    "spelling", ["_alter.Blake.example.com.", "_ALTER.blake.example.com."], ids=["host", "label"]
)
def test_a_transfer_matches_owner_names_ignoring_case(signed: Signed, spelling: str) -> None:
    with _transfer_server(_zone_rrsets(signed.zone(), _recased(spelling))) as address:
        result = publishing.plan(signed.spec, out=signed.ws.out, server=address, tsig=None)

    assert result.enumeration == "axfr"
    assert not result.pending, [c.to_mapping() for c in result.changes]


# --- UPDATE messages -------------------------------------------------------------------------


def test_batches_split_by_size(signed: Signed) -> None:
    result = _plan(signed.spec, desired_records(signed.spec, signed.ws.out), {})
    assert len(result.changes) == len(CANONICAL_OWNERS) + 1  # and the log's record

    assert list(publishing._batches(result, 1)) == [[c] for c in result.changes]
    assert list(publishing._batches(result, publishing.UPDATE_OCTETS_TARGET)) == [
        list(result.changes)
    ]
    assert list(publishing._batches(_plan(signed.spec, {}, {}), 1)) == []


def _section(
    message: dns.update.UpdateMessage, deleting: dns.rdataclass.RdataClass | None
) -> dict[str, list[Any]]:
    """Owner -> sorted [(ttl, TXT strings)] of the update section's rrsets that are adds
    (``deleting`` None), rdata deletes (NONE) or rrset deletes (ANY)."""
    found: dict[str, list[Any]] = {}
    for rrset in message.update:
        assert (rrset.rdtype, rrset.rdclass) == (dns.rdatatype.TXT, dns.rdataclass.IN)
        if rrset.deleting == deleting:
            found.setdefault(rrset.name.to_text(), []).extend(
                (rrset.ttl, tuple(rdata.strings)) for rdata in rrset
            )
    return {owner: sorted(items) for owner, items in found.items()}


def test_an_update_deletes_exactly_the_served_rdatas_and_adds_the_desired_texts(
    signed: Signed,
) -> None:
    zone = signed.zone()
    _add_txt(zone, BLAKE_OWNER, *FOREIGN_AT_BLAKE)
    with _serving(zone) as address:
        served, _ = publishing.served_records(signed.spec, address, tsig=None)
    (old,) = served[BLAKE_OWNER].texts
    long_text = _owned("~blake", "sig=" + "A" * 300)
    desired = {BLAKE_OWNER: _records(BLAKE_OWNER, old, long_text, ttl=2 * HOUR_SECONDS)}
    result = _plan(signed.spec, desired, {BLAKE_OWNER: served[BLAKE_OWNER]})
    key = publishing.TsigKey(f"{TSIG_NAME}.", "hmac-sha256", TSIG_SECRET)

    message = publishing._update_message(ZONE, result.changes, key)

    (zone_rrset,) = message.zone
    assert (zone_rrset.name, zone_rrset.rdtype) == (dns.name.from_text(ZONE), dns.rdatatype.SOA)
    assert _section(message, dns.rdataclass.NONE) == {
        BLAKE_OWNER: [(0, _strings(old))]  # not the foreign texts at the same owner
    }
    assert _section(message, dns.rdataclass.ANY) == {}
    strings = tuple(s.encode() for s in (long_text[:255], long_text[255:]))
    assert all(len(s) <= TXT_STRING_MAX_OCTETS for s in strings)
    assert _section(message, None) == {
        BLAKE_OWNER: sorted([(2 * HOUR_SECONDS, _strings(old)), (2 * HOUR_SECONDS, strings)])
    }
    # Signed with the key: it verifies with our secret and not with another.
    parsed = dns.message.from_wire(message.to_wire(), keyring=key.keyring)
    assert parsed.had_tsig
    assert parsed.keyname == key.keyname
    other = {key.keyname: dns.tsig.Key(key.keyname, bytes(32), key.algorithm)}
    with pytest.raises(dns.tsig.BadSignature):
        dns.message.from_wire(message.to_wire(), keyring=other)


def test_apply_reports_a_refused_update_with_what_was_applied(signed: Signed) -> None:
    result = _plan(signed.spec, desired_records(signed.spec, signed.ws.out), {})
    key = publishing.TsigKey(f"{TSIG_NAME}.", "hmac-sha256", TSIG_SECRET)

    # The embedded server answers UPDATE unsigned (NOTIMP): the first message fails.
    with _serving(signed.zone()) as address, pytest.raises(PublishError) as raised:
        publishing.apply(result, address, key)

    assert raised.value.where == f"{address[0]}:{address[1]}"
    assert "update 1" in str(raised.value)
    assert "after 0 applied" in str(raised.value)


def test_apply_of_an_empty_plan_sends_nothing(spec: ZoneSpec) -> None:
    key = publishing.TsigKey(f"{TSIG_NAME}.", "hmac-sha256", TSIG_SECRET)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as trap:
        trap.bind(("127.0.0.1", 0))
        trap.listen(1)
        trap.setblocking(False)
        host, port = trap.getsockname()[:2]

        assert publishing.apply(_plan(spec, {}, {}), (str(host), int(port)), key) == 0

        with pytest.raises(BlockingIOError):
            trap.accept()


# --- moving a handle backwards -------------------------------------------------------------


def _envelope_text(epoch: int, key: Ed25519PrivateKey) -> str:
    return sign_envelope(
        handle=parse_handle("~blake"),
        owner=BLAKE_OWNER,
        epoch=epoch,
        private_key=key,
        signed_at=1_767_225_600,
        expires_at=None,
        log_size=0,
        log_root=b"\0" * 32,
        revocation_secret=bytes([epoch]) * 32,
    ).to_text()


def test_a_plan_that_rolls_a_handle_back_is_refused_unless_forced(spec: ZoneSpec) -> None:
    one, two = (
        _envelope_text(1, Ed25519PrivateKey.generate()),
        _envelope_text(2, Ed25519PrivateKey.generate()),
    )
    revocation = Revocation(parse_handle("~blake"), 1, bytes([1]) * 32).to_text()
    served = _by_owner(_records(BLAKE_OWNER, two, revocation))
    older = _plan(spec, _by_owner(_records(BLAKE_OWNER, one)), served)
    with pytest.raises(UsageError, match="revocation of epoch 1"):
        publishing.check_deletes(older, 1.0, force=False)
    publishing.check_deletes(older, 1.0, force=True)
    unrevoked = _plan(spec, _by_owner(_records(BLAKE_OWNER, two)), served)
    with pytest.raises(UsageError, match="would stop serving the revocation"):
        publishing.check_deletes(unrevoked, 1.0, force=False)
    backwards = _plan(
        spec, _by_owner(_records(BLAKE_OWNER, one)), _by_owner(_records(BLAKE_OWNER, two))
    )
    with pytest.raises(UsageError, match="served epoch 2 with epoch 1"):
        publishing.check_deletes(backwards, 1.0, force=False)
    renewal = _plan(
        spec,
        _by_owner(_records(BLAKE_OWNER, _envelope_text(2, Ed25519PrivateKey.generate()))),
        _by_owner(_records(BLAKE_OWNER, two)),
    )
    publishing.check_deletes(renewal, 0.0, force=False)  # a renewal deletes nothing


def test_an_output_older_than_the_log_is_refused(workspace: Workspace) -> None:
    """Pushing an old build/ again would un-publish a rotation: the log says so first."""
    assert pipeline.sign(
        [workspace.zone_file], out=workspace.out, keys=workspace.keys, now=NOW, create_keys=True
    ).committed
    old = workspace.envelopes.read_bytes()
    spec = load_zone(workspace.zone_file)
    rotate(spec, "~blake", keys=workspace.keys, now=NOW + 60)
    assert pipeline.sign(
        [workspace.zone_file], out=workspace.out, keys=workspace.keys, now=NOW + 60
    ).committed
    assert desired_records(spec, workspace.out)  # current: fine
    workspace.envelopes.write_bytes(old)
    with pytest.raises(RenderError, match="stale"):
        desired_records(spec, workspace.out)


# --- the plan after the updates: the server's differences since (IXFR) -----------------


def test_a_snapshot_takes_an_incremental_transfer_in_turn() -> None:
    old, new, gone = _owned("~blake", "sig=1"), _owned("~blake", "sig=2"), _owned("~old")
    old_owner = f"_alter.old.{ZONE}."
    rows = [
        (BLAKE_OWNER, HOUR_SECONDS, _strings(old)),
        (BLAKE_OWNER, HOUR_SECONDS, _strings("not ours")),
        (old_owner, HOUR_SECONDS, _strings(gone)),
    ]
    before = Snapshot.of(ZONE, 7, rows)
    assert sorted(before.served) == [BLAKE_OWNER, old_owner]
    changes = TxtChanges(
        9,
        None,
        (
            (False, TransferredTxt(BLAKE_OWNER, HOUR_SECONDS, _strings(old))),
            (True, TransferredTxt(BLAKE_OWNER, 60, _strings(new))),
            (False, TransferredTxt(old_owner, HOUR_SECONDS, _strings(gone))),
        ),
    )
    after, touched = before.updated(ZONE, changes)
    assert (after.serial, touched) == (9, frozenset({BLAKE_OWNER, old_owner}))
    assert list(after.served) == [BLAKE_OWNER]
    assert (after.served[BLAKE_OWNER].ttl, after.served[BLAKE_OWNER].texts) == (60, (new,))
    assert after.rows[BLAKE_OWNER] == [(HOUR_SECONDS, _strings("not ours")), (60, _strings(new))]
    assert old_owner not in after.rows
    assert before.served[BLAKE_OWNER].texts == (old,)  # the snapshot before is unchanged


def _with_serial(soa: dns.rrset.RRset, serial: int) -> dns.rrset.RRset:
    (rdata,) = soa
    changed = dns.rrset.RRset(soa.name, soa.rdclass, soa.rdtype)
    changed.add(rdata.replace(serial=serial), soa.ttl)
    return changed


def test_the_plan_after_the_updates_reads_the_differences_since(signed: Signed) -> None:
    zone = signed.zone()
    rrsets = _zone_rrsets(zone)
    with _transfer_server(rrsets) as address:
        before = publishing.plan(signed.spec, out=signed.ws.out, server=address, tsig=None)
    assert (before.enumeration, before.pending) == ("axfr", False)
    assert before.snapshot is not None
    served = zone.find_rdataset(BLAKE_OWNER, dns.rdatatype.TXT)
    old_soa, serial = rrsets[0], before.snapshot.serial
    # The server then serves another text at blake's owner: one update to plan.
    deleted = dns.rrset.from_rdata_list(BLAKE_OWNER, HOUR_SECONDS, list(served))
    added = dns.rrset.from_text(BLAKE_OWNER, HOUR_SECONDS, "IN", "TXT", '"v=alter1; h=~blake"')
    new_soa = _with_serial(old_soa, serial + 1)
    answer = [new_soa, _with_serial(old_soa, serial), deleted, new_soa, added, new_soa]
    desired = desired_records(signed.spec, signed.ws.out)
    with _transfer_server(answer) as address:
        after = publishing.replan(
            signed.spec, before, desired, out=signed.ws.out, server=address, tsig=None
        )
    assert after.enumeration == "ixfr"
    assert [(c.owner, c.action) for c in after.changes] == [(BLAKE_OWNER, "update")]
    assert after.served == before.served
    assert after.snapshot is not None
    assert after.snapshot.serial == serial + 1


def test_the_plan_after_the_updates_asks_again_without_a_transfer(signed: Signed) -> None:
    with _serving(signed.zone()) as address:  # offers no transfer: queries
        before = publishing.plan(signed.spec, out=signed.ws.out, server=address, tsig=None)
        desired = desired_records(signed.spec, signed.ws.out)
        after = publishing.replan(
            signed.spec, before, desired, out=signed.ws.out, server=address, tsig=None
        )
    assert (before.snapshot, before.enumeration) == (None, "queries")
    assert (after.enumeration, after.pending, after.served) == ("queries", False, before.served)


def test_a_proven_read_reads_the_whole_log_once_for_every_proof(
    signed: Signed, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[Path] = []

    def counted(path: Path) -> Any:
        reads.append(path)
        return read_log(path)

    monkeypatch.setattr("alter_publish.publish.desired.read_log", counted)
    wanted = read_desired(signed.spec, signed.ws.out, proven=True)
    assert reads == []  # proven: the log is not read to plan
    first, second = wanted.expectations(), wanted.expectations()  # the primary, a copy
    assert first == second
    assert len(first) == len(signed.spec.handles)
    assert len(reads) == 1
