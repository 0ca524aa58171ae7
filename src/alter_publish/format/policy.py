"""Witness policies (c2sp.org/tlog-policy): which logs and witnesses are known and the
quorum of cosignatures a checkpoint needs, on no I/O.

A policy file is line based; items are separated by ASCII spaces or tabs (no other
white space: a NO-BREAK SPACE is part of an item); blank lines and
``#`` comments are ignored::

    log <vkey> [<url>]
    witness <name> <vkey> [<url>]
    group <name> <k|any|all> <member>...
    quorum <name|none>

Log keys are Ed25519 note keys (type 0x01), witness keys ``cosignature/v1`` keys (type
0x04). A group and the quorum may only name witnesses and groups defined on earlier
lines; each member appears once per group; two logs or two witnesses may not share a
public key; exactly one quorum line.
"""

from __future__ import annotations

from dataclasses import dataclass

from alter_publish.errors import UsageError, VerificationError
from alter_publish.format.note import COSIGNATURE_V1_TYPE, ED25519_TYPE, Note, Verifier

QUORUM_NONE = "none"
_ALLOWED_CONTROLS = {"\t", "\n"}


@dataclass(frozen=True, slots=True)
class PolicyLog:
    """A known log: its verifier key (named by its origin) and optional URL."""

    key: Verifier
    url: str | None = None


@dataclass(frozen=True, slots=True)
class PolicyWitness:
    """A known witness: its policy name, ``cosignature/v1`` key and optional URL."""

    name: str
    key: Verifier
    url: str | None = None


@dataclass(frozen=True, slots=True)
class PolicyGroup:
    """A group witnessing a checkpoint when at least ``threshold`` members do."""

    name: str
    threshold: int
    members: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Policy:
    """A parsed policy; ``quorum`` is a witness or group name, or ``none``."""

    logs: tuple[PolicyLog, ...]
    witnesses: tuple[PolicyWitness, ...]
    groups: tuple[PolicyGroup, ...]
    quorum: str

    @classmethod
    def parse(cls, text: str, source: str = "policy") -> Policy:
        """A policy from its text; ``source`` names it in errors (``source:line: what``).

        Raises:
            UsageError: the first line that breaks the syntax or a rule (see the module).
        """
        builder = _Builder(source)
        for number, line in enumerate(text.split("\n"), start=1):
            builder.line(number, line)
        return builder.finish(len(text.split("\n")))

    def to_text(self) -> str:
        """The policy as a file :meth:`parse` reads back (logs, witnesses, groups, quorum)."""
        lines = [f"log {log.key.to_text()}{_url(log.url)}" for log in self.logs]
        lines += [
            f"witness {wit.name} {wit.key.to_text()}{_url(wit.url)}" for wit in self.witnesses
        ]
        for group in self.groups:
            lines.append(f"group {group.name} {group.threshold} {' '.join(group.members)}")
        lines.append(f"quorum {self.quorum}")
        return "".join(f"{line}\n" for line in lines)

    def log_for(self, origin: str) -> Verifier | None:
        """The key of the known log whose name is ``origin``, if any."""
        return next((log.key for log in self.logs if log.key.name == origin), None)

    def cosigners(self, note: Note) -> tuple[str, ...]:
        """The names of the policy's witnesses with a valid cosignature on ``note``."""
        names: list[str] = []
        for witness in self.witnesses:
            try:
                note.verify(witness.key)
            except VerificationError:
                continue
            names.append(witness.name)
        return tuple(names)

    def satisfied_by(self, cosigners: tuple[str, ...] | frozenset[str]) -> bool:
        """True when witnesses ``cosigners`` meet the quorum."""
        if self.quorum == QUORUM_NONE:
            return True
        groups = {group.name: group for group in self.groups}
        signed = frozenset(cosigners)

        def witnessed(name: str) -> bool:
            group = groups.get(name)
            if group is None:
                return name in signed
            return sum(witnessed(member) for member in group.members) >= group.threshold

        return witnessed(self.quorum)

    def check(self, note: Note, where: str) -> tuple[str, ...]:
        """The witnesses cosigning ``note``, which must meet the quorum.

        Raises:
            VerificationError: ``quorum-not-met``.
        """
        cosigners = self.cosigners(note)
        if not self.satisfied_by(cosigners):
            found = ", ".join(cosigners) or "none"
            raise VerificationError(
                f"cosignatures do not meet quorum {self.quorum} (valid: {found})",
                where=where,
                category="quorum-not-met",
            )
        return cosigners


def _url(url: str | None) -> str:
    return "" if url is None else f" {url}"


class _Builder:
    """The parser's state: what earlier lines defined."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.logs: list[PolicyLog] = []
        self.witnesses: list[PolicyWitness] = []
        self.groups: list[PolicyGroup] = []
        self.names: set[str] = {QUORUM_NONE}
        self.quorum: str | None = None
        self.number = 0

    def fail(self, what: str) -> UsageError:
        return UsageError(what, where=f"{self.source}:{self.number}")

    def key(self, text: str, algorithm: int, what: str) -> Verifier:
        try:
            key = Verifier.parse(text)
        except VerificationError as exc:
            raise self.fail(f"bad {what} key: {exc.what}") from exc
        if key.algorithm != algorithm:
            raise self.fail(f"{what} key is not of type 0x{algorithm:02x}")
        return key

    def define(self, name: str) -> str:
        if name in self.names:
            raise self.fail(f"name {name!r} is already defined")
        self.names.add(name)
        return name

    def line(self, number: int, line: str) -> None:
        self.number = number
        if any((ch < " " and ch not in _ALLOWED_CONTROLS) or ch == "\x7f" for ch in line):
            raise self.fail("control character")
        # ASCII space and tab only: str.split() would also split on Unicode spaces.
        items = [item for item in line.replace("\t", " ").split(" ") if item]
        if not items or items[0].startswith("#"):
            return
        keyword, args = items[0], items[1:]
        handler = {
            "log": self.log,
            "witness": self.witness,
            "group": self.group,
            "quorum": self.set_quorum,
        }.get(keyword)
        if handler is None:
            raise self.fail(f"unknown keyword {keyword!r}")
        handler(args)

    def log(self, args: list[str]) -> None:
        if len(args) not in (1, 2):
            raise self.fail("expected 'log <vkey> [<url>]'")
        key = self.key(args[0], ED25519_TYPE, "log")
        if any(log.key.public == key.public for log in self.logs):
            raise self.fail("duplicate log key")
        self.logs.append(PolicyLog(key, args[1] if len(args) == 2 else None))

    def witness(self, args: list[str]) -> None:
        if len(args) not in (2, 3):
            raise self.fail("expected 'witness <name> <vkey> [<url>]'")
        key = self.key(args[1], COSIGNATURE_V1_TYPE, "witness")
        if any(wit.key.public == key.public for wit in self.witnesses):
            raise self.fail("duplicate witness key")
        name = self.define(args[0])
        self.witnesses.append(PolicyWitness(name, key, args[2] if len(args) == 3 else None))

    def group(self, args: list[str]) -> None:
        if len(args) < 3:
            raise self.fail("expected 'group <name> <k|any|all> <member>...'")
        name, count, members = args[0], args[1], tuple(args[2:])
        for member in members:
            if member not in self.names or member == QUORUM_NONE:
                raise self.fail(f"group member {member!r} is not defined on an earlier line")
        if len(set(members)) != len(members):
            raise self.fail("a group member is listed twice")
        if count == "any":
            threshold = 1
        elif count == "all":
            threshold = len(members)
        elif count.isascii() and count.isdigit() and 1 <= int(count) <= len(members):
            threshold = int(count)
        else:
            raise self.fail(f"threshold {count!r} is not any, all or 1..{len(members)}")
        self.groups.append(PolicyGroup(self.define(name), threshold, members))

    def set_quorum(self, args: list[str]) -> None:
        if len(args) != 1:
            raise self.fail("expected 'quorum <name>'")
        if self.quorum is not None:
            raise self.fail("a second quorum line")
        if args[0] not in self.names:
            raise self.fail(f"quorum {args[0]!r} is not defined on an earlier line")
        self.quorum = args[0]

    def finish(self, lines: int) -> Policy:
        if self.quorum is None:
            self.number = lines
            raise self.fail("no quorum line")
        return Policy(tuple(self.logs), tuple(self.witnesses), tuple(self.groups), self.quorum)
