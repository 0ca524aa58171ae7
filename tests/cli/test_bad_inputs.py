"""Bad input never hurts: one stderr line, a documented exit code, no traceback, no damage.

Every case runs the real ``alter-publish`` command in a subprocess inside a copy
of a workspace signed once per session, and checks that the run leaves every
file under the workspace (zones/, keys/, build/, ...) byte-for-byte and
mode-for-mode as it was after the case set up its bad input.
"""

from __future__ import annotations

import json
import os
import random
import re
import socket
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.zone
import pytest

from alter_publish.dns.server import ZoneServer
from alter_publish.errors import (
    EXIT_DEFINITION,
    EXIT_KEY,
    EXIT_OUTPUT,
    EXIT_USAGE,
    EXIT_VERIFICATION,
)
from tests.cli.workspace import (
    ERROR_PREFIX,
    NOW,
    ZONE,
    Workspace,
    assert_one_error_line,
    assert_unchanged,
    simulated,
)

PASSPHRASE = "correct horse battery staple"  # noqa: S105 (a test passphrase)
DEFINITION_ARG = f"zones/{ZONE}.yaml"
SIGN = ("sign", *simulated(), DEFINITION_ARG)
BLAKE_OWNER = f"_alter.blake.{ZONE}."


@dataclass(frozen=True, slots=True)
class Command:
    """The command a case runs, and what its error line must contain besides the static part."""

    args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    contains: tuple[str, ...] = ()
    pattern: str | None = None


Setup = Callable[[Workspace], Command]


@dataclass(frozen=True, slots=True)
class Case:
    """One bad input: set it up, run one command, expect one error line."""

    id: str
    setup: Setup
    exit_code: int
    contains: tuple[str, ...] = ()
    xfail: str | None = None

    def param(self) -> object:
        marks = [pytest.mark.xfail(strict=True, reason=self.xfail)] if self.xfail else []
        return pytest.param(self, id=self.id, marks=marks)


def _fixed(*args: str, env: dict[str, str] | None = None) -> Setup:
    def setup(_: Workspace) -> Command:
        return Command(args, env or {})

    return setup


# --- YAML (exit 3) -------------------------------------------------------------------


def _line_of(text: str, marker: str) -> int:
    """1-based number of the only line containing ``marker``."""
    hits = [n for n, line in enumerate(text.splitlines(), 1) if marker in line]
    assert len(hits) == 1, f"marker {marker!r} is on lines {hits}"
    return hits[0]


def _edit_yaml(edit: Callable[[str], str], marker: str | None) -> Setup:
    """Rewrite the definition with ``edit``; the error must point at ``marker``'s line."""

    def setup(ws: Workspace) -> Command:
        text = edit(ws.definition.read_text(encoding="utf-8"))
        assert text != ws.definition.read_text(encoding="utf-8"), "edit changed nothing"
        ws.definition.write_text(text, encoding="utf-8")
        line = r"\d+" if marker is None else str(_line_of(text, marker))
        return Command(SIGN, pattern=rf"{re.escape(DEFINITION_ARG)}:{line}:\d+: ")

    return setup


def _sub(pattern: str, replacement: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        result, count = re.subn(pattern, replacement, text, count=1, flags=re.MULTILINE)
        assert count == 1, f"{pattern!r} not found"
        return result

    return edit


def _append(extra: str) -> Callable[[str], str]:
    return lambda text: text + extra


def _replace_definition(data: bytes) -> Setup:
    def setup(ws: Workspace) -> Command:
        ws.definition.write_bytes(data)
        return Command(SIGN, contains=(f"{ZONE}.yaml:",))

    return setup


def _definition_is_directory(ws: Workspace) -> Command:
    (ws.root / "zones" / "dir.yaml").mkdir()
    return Command(("sign", *simulated(), "zones/dir.yaml"), contains=("dir.yaml:1:1:",))


def _definition_copied_to_other_name(ws: Workspace) -> Command:
    other = ws.root / "zones" / "example.org.yaml"
    other.write_bytes(ws.definition.read_bytes())
    return Command(("sign", *simulated(), "zones/example.org.yaml"))


def _definition_unreadable(ws: Workspace) -> Command:
    if os.geteuid() == 0:
        pytest.skip("root reads mode-000 files; covered by the directory and missing cases")
    ws.definition.chmod(0)
    return Command(SIGN, contains=(f"{ZONE}.yaml:1:1:", "cannot read"))


YAML_CASES = [
    Case(
        "yaml-unknown-top-level-field",
        _edit_yaml(_append("colour: blue\n"), "colour: blue"),
        EXIT_DEFINITION,
        ("unknown field 'colour'",),
    ),
    Case(
        "yaml-unknown-handle-field",
        _edit_yaml(_sub(r"^  - ~drew$", "  - handle: ~drew\n    colour: blue"), "colour: blue"),
        EXIT_DEFINITION,
        ("unknown field 'colour'",),
    ),
    Case(
        "yaml-handle-with-space",
        _edit_yaml(_sub(r"^  - ~drew$", "  - ~Bl ake"), "~Bl ake"),
        EXIT_DEFINITION,
        ("~Bl ake",),
    ),
    Case(
        "yaml-handle-with-underscore",
        _edit_yaml(_sub(r"^  - ~drew$", "  - ~bla_ke"), "~bla_ke"),
        EXIT_DEFINITION,
        ("~bla_ke",),
    ),
    Case(
        "yaml-duplicate-handle-other-case",
        _edit_yaml(_sub(r"^  - ~drew$", "  - ~drew\n  - ~Blake"), "~Blake"),
        EXIT_DEFINITION,
        ("duplicate handle ~blake",),
    ),
    Case(
        "yaml-handle-outside-zone",
        _edit_yaml(_sub(r"^  - ~drew$", "  - ~other.org"), "~other.org"),
        EXIT_DEFINITION,
        ("outside zone",),
    ),
    Case(
        "yaml-ttl-negative",
        _edit_yaml(_sub(r"^ttl: 1h", "ttl: -5"), "ttl: -5"),
        EXIT_DEFINITION,
        ("bad ttl",),
    ),
    Case(
        "yaml-ttl-not-a-number",
        _edit_yaml(_sub(r"^ttl: 1h", "ttl: abc"), "ttl: abc"),
        EXIT_DEFINITION,
        ("bad ttl",),
    ),
    Case(
        "yaml-ttl-over-2**31-1",
        _edit_yaml(_sub(r"^ttl: 1h", f"ttl: {2**31}"), f"ttl: {2**31}"),
        EXIT_DEFINITION,
        ("bad ttl", str(2**31 - 1)),
    ),
    Case(
        "yaml-unclosed-bracket",
        _edit_yaml(_sub(r'"2001:db8::53"\]', '"2001:db8::53"'), None),
        EXIT_DEFINITION,
        ("invalid YAML",),
    ),
    Case(
        "yaml-duplicate-key",
        _edit_yaml(_append("ttl: 2h   # again\n"), "# again"),
        EXIT_DEFINITION,
        ("duplicate key 'ttl'",),
    ),
    Case(
        "yaml-tab-indentation",
        _edit_yaml(_sub(r"^ttl: 1h", "\tttl: 1h"), "\tttl: 1h"),
        EXIT_DEFINITION,
        ("invalid YAML",),
    ),
    Case("yaml-empty-file", _replace_definition(b""), EXIT_DEFINITION, (":1:1:", "empty")),
    Case(
        "yaml-binary-not-utf8",
        _replace_definition(bytes(range(128, 256)) * 4),
        EXIT_DEFINITION,
        (":1:1:", "UTF-8"),
    ),
    Case(
        "yaml-scalar-document",
        _replace_definition(b"just some words\n"),
        EXIT_DEFINITION,
        ("must be a mapping",),
    ),
    Case(
        "yaml-is-directory",
        _definition_is_directory,
        EXIT_DEFINITION,
        ("cannot read file",),
    ),
    Case(
        "yaml-missing-file",
        _fixed("sign", *simulated(), "zones/missing.com.yaml"),
        EXIT_DEFINITION,
        ("missing.com.yaml:1:1:", "cannot read file"),
    ),
    Case("yaml-unreadable-file", _definition_unreadable, EXIT_DEFINITION),
    Case(
        "yaml-zone-does-not-match-file-name",
        _definition_copied_to_other_name,
        EXIT_DEFINITION,
        ("example.org.yaml:4:", "does not match file name"),
    ),
    Case(
        "yaml-ns-empty-list",
        _edit_yaml(
            _sub(r"^ns:\n  - ns1\.example\.com\.\n  - ns2\.example\.net\.$", "ns: []"), "ns: []"
        ),
        EXIT_DEFINITION,
        ("ns must be a non-empty list",),
    ),
    Case(
        "yaml-resolver-with-space",
        _edit_yaml(
            _sub(r"resolver: https://mcp\.example\.com/blake", "resolver: https://x.example/a b"),
            "https://x.example/a b",
        ),
        EXIT_DEFINITION,
        ("resolver",),
    ),
    Case(
        "yaml-reserved-tag-sig",
        _edit_yaml(_sub(r"^      model: claude-opus-4-7$", "      sig: forged"), "sig: forged"),
        EXIT_DEFINITION,
        ("tag 'sig' is reserved",),
    ),
    Case(
        "yaml-lifetime-zero",
        _edit_yaml(_sub(r"^    lifetime: 7d$", "    lifetime: 0"), "lifetime: 0"),
        EXIT_DEFINITION,
        ("bad lifetime",),
    ),
]


# --- keys (exit 4) -------------------------------------------------------------------


def _key_file_mode_0644(ws: Workspace) -> Command:
    (ws.key_dir("blake") / "1.pem").chmod(0o644)
    return Command(SIGN, contains=("blake/1.pem", "chmod 600"))


def _corrupt_pem(ws: Workspace) -> Command:
    (ws.key_dir("blake") / "1.pem").write_bytes(
        "-----{0} {1}-----\nbm90IGEga2V5\n-----END {1}-----\n".format(
            "BEGIN", "PRIVATE KEY"
        ).encode()
    )
    return Command(SIGN, contains=("blake/1.pem",))


def _garbage_secret(ws: Workspace) -> Command:
    (ws.key_dir("blake") / "1.secret").write_bytes(b"not base64url at all!\n")
    return Command(SIGN, contains=("blake/1.secret",))


def _missing_secret(ws: Workspace) -> Command:
    (ws.key_dir("blake") / "1.secret").unlink()
    return Command(SIGN, contains=("blake/1.secret", "missing"))


def _add_erin(ws: Workspace) -> None:
    with ws.definition.open("a", encoding="utf-8") as handle:
        handle.write("  - ~erin\n")


def _encrypted_erin(ws: Workspace) -> None:
    _add_erin(ws)
    made = ws.run("keygen", "~erin", "--zone", ZONE, env={"ALTER_PUBLISH_PASSPHRASE": PASSPHRASE})
    assert made.returncode == 0, made.describe()
    assert b"ENCRYPTED" in (ws.key_dir("erin") / "1.pem").read_bytes()


def _encrypted_without_passphrase(ws: Workspace) -> Command:
    _encrypted_erin(ws)
    return Command(SIGN, contains=("erin/1.pem", "encrypted"))


def _wrong_passphrase(ws: Workspace) -> Command:
    _encrypted_erin(ws)
    return Command(
        SIGN, env={"ALTER_PUBLISH_PASSPHRASE": "wrong"}, contains=("erin/1.pem", "passphrase")
    )


def _missing_key(ws: Workspace) -> Command:
    _add_erin(ws)
    return Command(SIGN, contains=("no key for ~erin",))


def _both_passphrase_sources(ws: Workspace) -> Command:
    file = ws.root / "passphrase.txt"
    file.write_text(PASSPHRASE + "\n", encoding="utf-8")
    env = {"ALTER_PUBLISH_PASSPHRASE": PASSPHRASE, "ALTER_PUBLISH_PASSPHRASE_FILE": str(file)}
    return Command(SIGN, env=env, contains=("set only one of",))


KEY_CASES = [
    Case("key-file-mode-0644", _key_file_mode_0644, EXIT_KEY),
    Case("key-corrupt-pem", _corrupt_pem, EXIT_KEY),
    Case("key-secret-garbage", _garbage_secret, EXIT_KEY),
    Case("key-secret-missing", _missing_secret, EXIT_KEY),
    Case("key-encrypted-no-passphrase", _encrypted_without_passphrase, EXIT_KEY),
    Case("key-wrong-passphrase", _wrong_passphrase, EXIT_KEY),
    Case("key-missing-without-create-keys", _missing_key, EXIT_KEY),
    Case(
        "keygen-handle-has-key",
        _fixed("keygen", "~blake", "--zone", ZONE),
        EXIT_KEY,
        ("already has a key",),
    ),
    Case("passphrase-env-and-file", _both_passphrase_sources, EXIT_KEY),
    Case(
        "passphrase-file-missing",
        _fixed(*SIGN, env={"ALTER_PUBLISH_PASSPHRASE_FILE": "no-such-passphrase-file"}),
        EXIT_KEY,
        ("no-such-passphrase-file",),
    ),
    Case(
        "passphrase-empty",
        _fixed(*SIGN, env={"ALTER_PUBLISH_PASSPHRASE": ""}),
        EXIT_KEY,
        ("empty",),
    ),
]


# --- flags and arguments (exit 2) ----------------------------------------------------

FLAG_CASES = [
    Case("flag-unknown-option", _fixed("sign", "--bogus"), EXIT_USAGE),
    Case("flag-now-negative", _fixed("sign", "--now", "-5"), EXIT_USAGE),
    Case("flag-now-not-a-number", _fixed("sign", "--now", "abc"), EXIT_USAGE),
    Case("flag-resolve-missing-server", _fixed("resolve", "~blake"), EXIT_USAGE),
    Case(
        "flag-server-not-hostport",
        _fixed("resolve", "~blake", "--server", "nonsense"),
        EXIT_USAGE,
        ("--server",),
    ),
    Case(
        "flag-server-port-out-of-range",
        _fixed("resolve", "~blake", "--server", "127.0.0.1:99999"),
        EXIT_USAGE,
        ("--server",),
    ),
    Case(
        "arg-keygen-handle-without-tilde",
        _fixed("keygen", "blake", "--zone", ZONE),
        EXIT_USAGE,
        ("'blake'",),
    ),
    Case(
        "arg-keygen-handle-outside-zone",
        _fixed("keygen", "~other.org", "--zone", ZONE),
        EXIT_USAGE,
        ("outside zone",),
    ),
    Case(
        "arg-init-zone-exists",
        _fixed("init", ".", "--zone", ZONE),
        EXIT_USAGE,
        (DEFINITION_ARG, "exists already"),
    ),
    Case(
        "arg-init-zone-not-a-domain",
        _fixed("init", ".", "--zone", "not a zone"),
        EXIT_USAGE,
        ("not a domain name",),
    ),
    Case(
        "arg-record-unbalanced-quote",
        _fixed("verify-record", '"v=alter1; h=~blake', "--owner", BLAKE_OWNER),
        EXIT_USAGE,
        ("not TXT rdata",),
    ),
]


# --- records (verify-record, exit 1) -------------------------------------------------


def _blake_text(ws: Workspace) -> str:
    document = json.loads(ws.envelopes_file.read_text(encoding="utf-8"))
    text: str = next(h["text"] for h in document["handles"] if h["handle"] == "~blake")
    return text


def _flip_sig(text: str) -> str:
    """Change one base64url character in the middle of ``sig=`` (still 64 canonical bytes)."""
    head, marker, sig = text.rpartition("sig=")
    middle = len(sig) // 2
    flipped = "B" if sig[middle] == "A" else "A"
    return head + marker + sig[:middle] + flipped + sig[middle + 1 :]


def _record(text: Callable[[Workspace], str], owner: str = BLAKE_OWNER, *extra: str) -> Setup:
    def setup(ws: Workspace) -> Command:
        args = ("verify-record", text(ws), "--owner", owner, "--now", str(NOW), *extra)
        return Command(args)

    return setup


def _const(text: str) -> Callable[[Workspace], str]:
    return lambda _: text


@dataclass(frozen=True, slots=True)
class RecordCase:
    """A bad record, the spec category it must fail with, and its case."""

    category: str
    case: Case


RECORD_CASES = [
    RecordCase(
        "bad-signature",
        Case(
            "record-sig-flipped",
            _record(lambda ws: _flip_sig(_blake_text(ws))),
            EXIT_VERIFICATION,
            (BLAKE_OWNER, "sig does not verify"),
        ),
    ),
    RecordCase(
        "handle-mismatch",
        Case(
            "record-wrong-owner",
            _record(_blake_text, f"_alter.drew.{ZONE}.", "--substrate", ZONE),
            EXIT_VERIFICATION,
            (f"_alter.drew.{ZONE}.", "belongs at"),
        ),
    ),
    RecordCase(
        "handle-mismatch",
        Case(
            "record-wrong-owner-no-substrate",
            _record(_blake_text, f"_alter.drew.{ZONE}."),
            EXIT_VERIFICATION,
            (f"_alter.drew.{ZONE}.",),
        ),
    ),
    RecordCase(
        "unsupported",
        Case(
            "record-version-alter2",
            _record(lambda ws: _blake_text(ws).replace("v=alter1", "v=alter2")),
            EXIT_VERIFICATION,
            ("alter2",),
        ),
    ),
    RecordCase(
        "malformed",
        Case("record-empty", _record(_const("")), EXIT_VERIFICATION, (BLAKE_OWNER,)),
    ),
    RecordCase(
        "malformed",
        Case(
            "record-non-ascii",
            _record(lambda ws: _blake_text(ws).replace("h=~blake", "h=~bläke")),
            EXIT_VERIFICATION,
            ("ASCII",),
        ),
    ),
    RecordCase(
        "malformed",
        Case("record-garbage-semicolons", _record(_const(";;;")), EXIT_VERIFICATION),
    ),
    RecordCase(
        "malformed",
        Case(
            "record-missing-tags",
            _record(_const("v=alter1; h=~blake")),
            EXIT_VERIFICATION,
            ("missing required tag",),
        ),
    ),
    RecordCase(
        "expired",
        Case(
            "record-expired",
            _record(_blake_text, BLAKE_OWNER, "--now", str(NOW + 365 * 86400)),
            EXIT_VERIFICATION,
            ("expired",),
        ),
    ),
]


# --- URIs (exit 2, before any network I/O) -------------------------------------------

URI_CASES = [
    pytest.param("alter://~blake", "directly by a ~handle", id="uri-authority-slashes"),
    pytest.param("alter:~blake/a%zz", "bad path segment", id="uri-bad-percent-escape"),
    pytest.param("mailto:~x", "does not start with 'alter:'", id="uri-wrong-scheme"),
    pytest.param("alter:~Bl ake", "bad handle", id="uri-handle-with-space"),
    pytest.param("~bla_ke", "~bla_ke", id="uri-bare-handle-malformed"),
]


# --- rendered output and templates (exit 5) ------------------------------------------


def _garbage_zone_file(ws: Workspace) -> Command:
    ws.zone_file.write_text("this is not a zone file\n", encoding="utf-8")
    return Command(("verify", "--now", str(NOW)), contains=(f"build/{ZONE}.zone:1:",))


def _missing_envelopes(ws: Workspace) -> Command:
    ws.envelopes_file.unlink()
    return Command(("verify", "--now", str(NOW)), contains=(f"{ZONE}.envelopes.json",))


def _garbage_envelopes(ws: Workspace) -> Command:
    ws.envelopes_file.write_text('{"handles": 5}\n', encoding="utf-8")
    return Command(("verify", "--now", str(NOW)), contains=(f"{ZONE}.envelopes.json",))


def _missing_zone_file(ws: Workspace) -> Command:
    ws.zone_file.unlink()
    return Command(("verify", "--now", str(NOW)), contains=(f"{ZONE}.zone", "not found"))


def _templates(files: dict[str, str]) -> Setup:
    def setup(ws: Workspace) -> Command:
        directory = ws.root / "my-templates"
        directory.mkdir()
        for name, text in files.items():
            (directory / name).write_text(text, encoding="utf-8")
        return Command((*SIGN, "--templates", "my-templates"))

    return setup


OUTPUT_CASES = [
    Case("output-zone-file-garbage", _garbage_zone_file, EXIT_OUTPUT, ("not a valid zone",)),
    Case("output-zone-file-missing", _missing_zone_file, EXIT_OUTPUT),
    Case("output-envelopes-missing", _missing_envelopes, EXIT_OUTPUT, ("not found",)),
    Case("output-envelopes-garbage", _garbage_envelopes, EXIT_OUTPUT),
    Case(
        "template-syntax-error",
        _templates({"zone.j2": "$ORIGIN {{ origin }}\n{% if %}\n"}),
        EXIT_OUTPUT,
        ("my-templates/zone.j2:2", "syntax error"),
    ),
    Case(
        "template-zone-j2-missing",
        _templates({}),
        EXIT_OUTPUT,
        ("my-templates", "'zone.j2' not found"),
    ),
    Case(
        "template-undefined-variable",
        _templates({"zone.j2": "{{ no_such_variable }}\n"}),
        EXIT_OUTPUT,
        ("no_such_variable",),
    ),
    Case(
        "template-renders-invalid-zone",
        _templates({"zone.j2": "$ORIGIN {{ origin }}\n@ 300 IN BOGUS x\n"}),
        EXIT_OUTPUT,
        (f"{ZONE}.zone:2:", "not a valid zone"),
    ),
]

SINGLE_LINE_CASES = [
    *YAML_CASES,
    *KEY_CASES,
    *FLAG_CASES,
    *(record.case for record in RECORD_CASES),
    *OUTPUT_CASES,
]


@pytest.mark.parametrize("case", [case.param() for case in SINGLE_LINE_CASES])
def test_bad_input_gives_one_error_line_and_touches_nothing(
    case: Case, workspace: Workspace
) -> None:
    command = case.setup(workspace)
    before = workspace.snapshot()

    result = workspace.run(*command.args, env=command.env)

    line = assert_one_error_line(result, case.exit_code)
    for fragment in (*case.contains, *command.contains):
        assert fragment in line, result.describe()
    if command.pattern is not None:
        assert re.search(command.pattern, line), result.describe()
    assert_unchanged(before, workspace.snapshot())


@pytest.mark.parametrize("record", [pytest.param(r, id=r.case.id) for r in RECORD_CASES])
def test_verify_record_error_line_names_the_category(
    record: RecordCase, signed_workspace: Workspace
) -> None:
    command = record.case.setup(signed_workspace)

    result = signed_workspace.run(*command.args)

    line = assert_one_error_line(result, EXIT_VERIFICATION)
    assert f": {record.category}:" in line or f"[{record.category}]" in line, line


@pytest.mark.parametrize(("reference", "fragment"), URI_CASES)
def test_bad_uri_fails_before_any_network_io(
    reference: str, fragment: str, workspace: Workspace
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as trap:
        trap.bind(("127.0.0.1", 0))
        port = trap.getsockname()[1]
        before = workspace.snapshot()

        result = workspace.run("resolve", reference, "--server", f"127.0.0.1:{port}")

        trap.setblocking(False)
        with pytest.raises(BlockingIOError):
            trap.recv(65535)
    line = assert_one_error_line(result, EXIT_USAGE)
    assert fragment in line, result.describe()
    assert_unchanged(before, workspace.snapshot())


def _flip_in_last_txt_string(line: str, back: int = 10) -> str:
    """Flip a base64url character ``back`` characters before the closing quote (inside sig=)."""
    end = line.rindex('"')
    assert end - line.rindex('"', 0, end) > back, "last TXT string too short"
    index = end - back
    return line[:index] + ("B" if line[index] == "A" else "A") + line[index + 1 :]


def test_verify_names_the_handle_whose_signature_was_flipped(workspace: Workspace) -> None:
    lines = workspace.zone_file.read_text(encoding="utf-8").splitlines(keepends=True)
    (index,) = [
        n for n, line in enumerate(lines) if line.startswith(BLAKE_OWNER) and " IN TXT " in line
    ]
    lines[index] = _flip_in_last_txt_string(lines[index].rstrip("\n")) + "\n"
    workspace.zone_file.write_text("".join(lines), encoding="utf-8")
    before = workspace.snapshot()

    result = workspace.run("verify", "--now", str(NOW))

    assert result.returncode == EXIT_VERIFICATION, result.describe()
    assert "Traceback" not in result.stderr, result.describe()
    lines = result.stderr_lines
    assert lines[-1].startswith(ERROR_PREFIX), result.describe()
    failing = [line for line in lines if "~blake" in line]
    assert len(failing) == 1, result.describe()
    # DNSSEC catches the changed TXT first: the RRSIG no longer matches it.
    assert "bogus" in failing[0], result.describe()
    assert not any("~drew" in line for line in lines), result.describe()
    assert_unchanged(before, workspace.snapshot())


def test_definition_with_three_problems_lists_each_with_its_position(
    workspace: Workspace,
) -> None:
    text = workspace.definition.read_text(encoding="utf-8")
    text = _sub(r"^ttl: 1h", "ttl: abc")(text)
    text = _sub(r"^  - ~drew$", "  - ~bla_ke")(text)
    text += "colour: blue\n"
    workspace.definition.write_text(text, encoding="utf-8")
    before = workspace.snapshot()

    result = workspace.run(*SIGN)

    assert result.returncode == EXIT_DEFINITION, result.describe()
    assert "Traceback" not in result.stderr, result.describe()
    lines = result.stderr_lines
    assert len(lines) == 3, result.describe()
    expected = sorted(_line_of(text, marker) for marker in ("ttl: abc", "~bla_ke", "colour:"))
    found = []
    for line in lines:
        match = re.match(rf"{re.escape(ERROR_PREFIX)}\S*{re.escape(ZONE)}\.yaml:(\d+):\d+: ", line)
        assert match, result.describe()
        found.append(int(match.group(1)))
    assert sorted(found) == expected, result.describe()
    assert_unchanged(before, workspace.snapshot())


# --- packets: the embedded server survives garbage -----------------------------------

PACKET_WAIT_SECONDS = 0.3
QUERY_TIMEOUT_SECONDS = 2.0
_HEADER = struct.Struct("!HHHHHH")


def _query_wire(name: str = BLAKE_OWNER) -> bytes:
    return dns.message.make_query(name, dns.rdatatype.TXT).to_wire()


def _question(name_wire: bytes, *, qdcount: int = 1, tail: bytes = b"\x00\x10\x00\x01") -> bytes:
    return _HEADER.pack(0x4242, 0x0100, qdcount, 0, 0, 0) + name_wire + tail


def _response_packet() -> bytes:
    wire = bytearray(_query_wire())
    wire[2] |= 0x80  # QR: a response, which a server must never answer
    return bytes(wire)


#: The rcode a reply must carry; "any" for any reply or none; None: the packet must be dropped.
Expect = dns.rcode.Rcode | Literal["any"] | None

PACKETS: dict[str, tuple[bytes, Expect]] = {
    "empty": (b"", None),
    "one-byte": (b"\x00", None),
    "eleven-bytes": (b"\x12" * 11, None),
    "header-qdcount-5-no-questions": (_HEADER.pack(0x1111, 0x0100, 5, 0, 0, 0), dns.rcode.FORMERR),
    "random-512-bytes": (random.Random(1729).randbytes(512), "any"),  # noqa: S311 (test data)
    "response-packet": (_response_packet(), None),
    "label-length-64": (_question(b"\x40" + b"a" * 64 + b"\x00"), dns.rcode.FORMERR),
    "name-over-255-octets": (_question((b"\x3f" + b"a" * 63) * 5 + b"\x00"), dns.rcode.FORMERR),
    "compression-pointer-loop": (_question(b"\xc0\x0c"), dns.rcode.FORMERR),
    "question-truncated": (_question(b"\x05_alter\x00", tail=b"\x00"), dns.rcode.FORMERR),
    "trailing-garbage": (_query_wire() + b"\xde\xad\xbe\xef", dns.rcode.FORMERR),
}


@pytest.fixture(scope="module")
def zone_server(signed_workspace: Workspace) -> Iterator[ZoneServer]:
    zone = dns.zone.from_text(
        signed_workspace.zone_file.read_text(encoding="utf-8"),
        origin=f"{ZONE}.",
        relativize=False,
    )
    with ZoneServer([zone]) as server:
        yield server


def _assert_still_answers(server: ZoneServer, *, tcp: bool = False) -> None:
    host, port = server.address
    query = dns.message.make_query(BLAKE_OWNER, dns.rdatatype.TXT)
    if tcp:
        reply = dns.query.tcp(query, host, port=port, timeout=QUERY_TIMEOUT_SECONDS)
    else:
        reply = dns.query.udp(query, host, port=port, timeout=QUERY_TIMEOUT_SECONDS)
    assert reply.rcode() == dns.rcode.NOERROR
    assert reply.flags & dns.flags.AA
    assert reply.answer, reply


@pytest.mark.parametrize(("packet", "expected"), PACKETS.values(), ids=PACKETS.keys())
def test_server_survives_malformed_udp_packet(
    zone_server: ZoneServer, packet: bytes, expected: Expect
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(PACKET_WAIT_SECONDS)
        sock.sendto(packet, zone_server.address)
        try:
            reply: bytes | None = sock.recv(65535)
        except TimeoutError:
            reply = None
    if expected is None:
        assert reply is None, f"answered a packet it must drop: {reply!r}"
    elif reply is not None or expected != "any":
        assert reply is not None, "no reply"
        message_id, flags = struct.unpack_from("!HH", reply)
        assert message_id == struct.unpack_from("!H", packet)[0]
        assert flags & 0x8000, "reply is not a response"
        if expected != "any":
            assert flags & 0xF == expected
    _assert_still_answers(zone_server)


def test_server_survives_tcp_garbage(zone_server: ZoneServer) -> None:
    rng = random.Random(4711)  # noqa: S311 (test data)
    for garbage in (
        b"\x00\x05hello",
        b"\x00\x02\x00",
        b"\xff\xff" + rng.randbytes(100),
        struct.pack("!H", 11) + b"\x00" * 11,
        struct.pack("!H", 1000) + rng.randbytes(1000),
    ):
        with socket.create_connection(zone_server.address, timeout=QUERY_TIMEOUT_SECONDS) as conn:
            conn.sendall(garbage)
            conn.shutdown(socket.SHUT_WR)
            try:
                while conn.recv(65535):
                    pass
            except (TimeoutError, ConnectionResetError):
                pass
    _assert_still_answers(zone_server, tcp=True)
    _assert_still_answers(zone_server)
