"""A few names added to and removed from a signed zone file: every DNSSEC line that changes.

:func:`alter_publish.dns.dnssec.sign_records` writes the DNSSEC records owner by owner
in canonical order (RFC 4034 6.1), each owner's NSEC/NSEC3 lines first, then its
RRSIGs by covered type. :class:`SignedSection` finds an owner's lines in that text by
binary search (a few dozen line reads at 100,000 names, no index to keep) and
:func:`patch_chain` works out, for names added and removed and rrsets re-signed in
place (the SOA, a handle's TXT), every block that changes: the new owners' blocks, the
NSEC or NSEC3 records of their neighbours in the chain (and, for NSEC3, of the empty
non-terminals that appear or go), each with its RRSIGs made as ``sign_records`` makes
them, so the text is the one a full signing writes. It also gathers the records a
loopback server needs to deny each removed name (RFC 4035 3.1.3, RFC 5155 7.2.2).

Anything it cannot place exactly (an escaped owner, a name that is there already, a
removed name with names below it) raises ``ValueError``: the caller signs the whole zone.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import dns.rdatatype

from alter_publish.definition.model import DNSSECSpec
from alter_publish.definition.state import SignatureWindow
from alter_publish.dns.denial import Bitmap, nsec3_digest, nsec3_owner, nsec3_rrs, nsec_rrs
from alter_publish.dns.dnssec import rrsig_lines
from alter_publish.dns.records import RRs, canonical_key, name_text
from alter_publish.dns.zonekeys import ZoneKey
from alter_publish.mapped import Bytes

Labels = tuple[bytes, ...]
#: A replacement in the file: (start, end, new bytes).
Edit = tuple[int, int, bytes]

_TXT = int(dns.rdatatype.TXT)
_RRSIG = int(dns.rdatatype.RRSIG)
_NSEC = int(dns.rdatatype.NSEC)
_NSEC3 = int(dns.rdatatype.NSEC3)
_HASH_SPACE = 1 << 160  # SHA-1 digests, compared as integers around the chain


@functools.cache
def type_text(rdtype: int) -> str:
    """A type's mnemonic (``TXT``, ``NSEC3``), looked up once per type."""
    return dns.rdatatype.to_text(dns.rdatatype.RdataType.make(rdtype))


def owner_labels(owner: bytes) -> Labels:
    """Lower-case labels (root last) of an owner as the signer writes it.

    Raises:
        ValueError: an escaped or relative owner (never written for these zones).
    """
    if b"\\" in owner or not owner.endswith(b".") or owner == b".":
        raise ValueError(f"owner {owner!r} not as written by the signer")
    return (*owner.lower()[:-1].split(b"."), b"")


def _below(name: Labels, top: Labels) -> bool:
    """``name`` is ``top`` or a name under it."""
    return len(name) >= len(top) and name[len(name) - len(top) :] == top


@dataclass(frozen=True, slots=True)
class Block:
    """One owner's lines in the DNSSEC section: where they are and the owner as written."""

    start: int
    end: int
    labels: Labels
    owner: bytes


@dataclass(frozen=True, slots=True)
class SignedSection:
    """The DNSSEC records of a signed zone file: ``data[start:end]``, owners in canonical
    order, each owner's lines together."""

    data: Bytes  # the zone file, read or mapped
    start: int
    end: int
    origin: Labels

    def _owner(self, at: int) -> bytes:
        return self.data[at : self.data.index(b" ", at)]

    def _line_end(self, at: int) -> int:
        return self.data.index(b"\n", at) + 1

    def seek(self, labels: Labels) -> int:
        """Where the first line whose owner is ``labels`` or sorts after it starts."""
        target = canonical_key(labels)
        low, high = self.start, self.end
        while low < high:
            middle = (low + high) // 2
            at = max(low, self.data.rfind(b"\n", low, middle) + 1)
            if canonical_key(owner_labels(self._owner(at))) < target:
                low = self._line_end(at)
            else:
                high = at
        return low

    def block_at(self, at: int) -> Block | None:
        """The block whose first line starts at ``at`` (None at the end)."""
        if at >= self.end:
            return None
        owner = self._owner(at)
        end = self._line_end(at)
        prefix = owner + b" "
        while end < self.end and self.data.startswith(prefix, end):
            end = self._line_end(end)
        return Block(at, end, owner_labels(owner), owner)

    def block_before(self, at: int) -> Block | None:
        """The block that ends at ``at`` (None at the start)."""
        if at <= self.start:
            return None
        start = self.data.rfind(b"\n", self.start, at - 1) + 1
        start = max(start, self.start)
        owner = self._owner(start)
        prefix = owner + b" "
        while start > self.start:
            before = max(self.data.rfind(b"\n", self.start, start - 1) + 1, self.start)
            if not self.data.startswith(prefix, before):
                break
            start = before
        return Block(start, at, owner_labels(owner), owner)

    def find(self, labels: Labels, hint: int | None = None) -> Block | None:
        """The block of ``labels``, if the section has one; ``hint``, where it may start
        (a memo's offset), is checked and taken when right, sparing the search."""
        if hint is not None and self._line_start(hint):
            with contextlib.suppress(ValueError):  # not a line as the signer writes it
                block = self.block_at(hint)
                if block is not None and block.labels == labels and self._first(block):
                    return block
        block = self.block_at(self.seek(labels))
        return block if block is not None and block.labels == labels else None

    def _line_start(self, at: int) -> bool:
        """``at`` is where one of the section's lines starts."""
        return self.start <= at < self.end and (at == self.start or self.data[at - 1 : at] == b"\n")

    def _first(self, block: Block) -> bool:
        """``block`` (starting on a line) starts with the first of its owner's lines."""
        if block.start == self.start:
            return True
        before = max(self.data.rfind(b"\n", self.start, block.start - 1) + 1, self.start)
        return not self.data.startswith(block.owner + b" ", before)

    def text(self, block: Block) -> str:
        """A block's lines."""
        return self.data[block.start : block.end].decode("ascii")


def _rows(text: str, marker: str) -> list[str]:
    return [row for row in text.splitlines(keepends=True) if marker in row]


def _record_lines(owner: str, rrs: RRs) -> str:
    kind = dns.rdatatype.to_text(dns.rdatatype.RdataType.make(rrs.rdtype))
    return "".join(f"{owner} {rrs.ttl} IN {kind} {text}\n" for text in rrs.texts)


def _replace_rows(text: str, marker: str, lines: str) -> str:
    """``text`` with the (consecutive) rows holding ``marker`` replaced by ``lines``.

    Raises:
        ValueError: no such rows, or not one after another.
    """
    rows = text.splitlines(keepends=True)
    found = [number for number, row in enumerate(rows) if marker in row]
    if not found or found != list(range(found[0], found[-1] + 1)):
        raise ValueError(f"no rows {marker!r} to replace")
    return "".join(rows[: found[0]]) + lines + "".join(rows[found[-1] + 1 :])


@dataclass(frozen=True, slots=True)
class ChainPatch:
    """Every DNSSEC line a few names added and removed change.

    Attributes:
        edits: the section's edits, ascending (insertions before a replacement at the
            same place).
        inserted: per added owner, the index in ``edits`` of its new block.
        blocks: every block that is new or changed, then the unchanged ones the
            removed names' denials need, as text (for the loopback proof).
        signatures: RRSIGs added minus RRSIGs removed.
    """

    edits: list[Edit]
    inserted: Mapping[Labels, int]
    blocks: str
    signatures: int


@dataclass(slots=True)
class _Patcher:
    section: SignedSection
    spec: DNSSECSpec
    keys: Sequence[ZoneKey]
    window: SignatureWindow
    ttl: int  # the denial records' TTL
    names: dict[Labels, str]
    added: dict[Labels, RRs]
    removed: dict[Labels, Block]
    changed: dict[int, tuple[Block, str]] = field(default_factory=dict)  # by start
    new_blocks: dict[Labels, tuple[int, str]] = field(default_factory=dict)  # at, text
    deleted: dict[int, Block] = field(default_factory=dict)
    #: rrset, marker, and its RRSIG lines when made already (None: to sign here)
    todo: list[tuple[Labels, RRs, str, str | None]] = field(default_factory=list)
    # NSEC3: hashes added (-> bitmap) and removed (-> their block)
    hashes_added: dict[bytes, Bitmap] = field(default_factory=dict)
    hashes_removed: dict[bytes, Block] = field(default_factory=dict)
    relinked: dict[Labels, Block] = field(default_factory=dict)
    hints: Mapping[Labels, int] = field(default_factory=dict)  # where blocks may start
    jobs: int = 1  # processes that sign

    # -- the blocks --------------------------------------------------------------------

    def current(self, block: Block) -> str:
        changed = self.changed.get(block.start)
        return changed[1] if changed else self.section.text(block)

    def replace(self, block: Block, marker: str, lines: str) -> None:
        self.names.setdefault(block.labels, block.owner.decode("ascii"))
        self.changed[block.start] = (block, _replace_rows(self.current(block), marker, lines))

    # -- NSEC ------------------------------------------------------------------------

    def nsec_after(self, at: int) -> tuple[Labels, str]:
        """The first name of the new chain at or after ``at`` in the old section that was
        not removed (the apex, around the end)."""
        block = self.section.block_at(at)
        while block is not None and block.labels in self.removed:
            block = self.section.block_at(block.end)
        if block is None:
            origin = self.section.origin
            return origin, self.names[origin]
        return block.labels, block.owner.decode("ascii")

    def nsec_before(self, at: int) -> Block:
        block = self.section.block_before(at)
        while block is not None and block.labels in self.removed:
            block = self.section.block_before(block.start)
        if block is None:
            raise ValueError("no NSEC before a name")
        return block

    def nsec_next(self, name: Labels, old_after: int) -> tuple[Labels, str]:
        old = self.nsec_after(old_after)
        key = canonical_key(name)
        later = [a for a in self.added if canonical_key(a) > key]
        if later:
            first = min(later, key=canonical_key)
            if old[0] == self.section.origin or canonical_key(first) < canonical_key(old[0]):
                return first, self.names[first]
        return old

    def nsec_chain(self) -> None:
        anchors: dict[Labels, Block] = {}
        for name in (*self.added, *self.removed):
            before = self.nsec_before(self.section.seek(name))
            anchors[before.labels] = before
        for name, block in anchors.items():
            types = self.nsec_types(block)
            following = self.nsec_next(name, block.end)[1]
            rrs = nsec_rrs(following, Bitmap.of(types), self.ttl)
            self.replace(block, " IN NSEC ", _record_lines(block.owner.decode("ascii"), rrs))
            self.todo.append((name, rrs, " IN RRSIG NSEC ", None))
            self.relinked[name] = block
        bitmap = Bitmap.of((_TXT, _RRSIG, _NSEC))
        for name in self.added:
            following = self.nsec_next(name, self.section.seek(name))[1]
            self.todo.append((name, nsec_rrs(following, bitmap, self.ttl), "", None))

    def nsec_types(self, block: Block) -> list[int]:
        (row,) = _rows(self.current(block), " IN NSEC ")
        return [dns.rdatatype.from_text(kind) for kind in row.split()[5:]]

    # -- NSEC3 -----------------------------------------------------------------------

    def digest(self, name: Labels) -> bytes:
        return nsec3_digest(name, bytes.fromhex(self.spec.nsec3_salt), self.spec.nsec3_iterations)

    def hashed(self, digest: bytes) -> Block | None:
        """The NSEC3 block of ``digest`` in the old section (removed or not)."""
        block = self.section.find(nsec3_owner(digest, self.section.origin))
        if block is None or " IN NSEC3 " not in self.section.text(block):
            return None
        return block

    def exists(self, name: Labels) -> bool:
        """``name`` has an NSEC3 in the new chain."""
        digest = self.digest(name)
        if digest in self.hashes_added:
            return True
        return digest not in self.hashes_removed and self.hashed(digest) is not None

    def hashed_before(self, digest: bytes) -> Block:
        """The old NSEC3 before ``digest`` (around the end), skipping removed ones."""
        section = self.section
        depth = len(section.origin) + 1
        block = section.block_before(section.seek(nsec3_owner(digest, section.origin)))
        wrapped = False
        while True:
            if block is None:
                if wrapped:
                    raise ValueError("no NSEC3 chain")
                wrapped, block = True, section.block_before(section.end)
                continue
            if (
                len(block.labels) == depth
                and self.hashed_digest(block) not in self.hashes_removed
                and " IN NSEC3 " in section.text(block)
            ):
                return block
            block = section.block_before(block.start)

    @staticmethod
    def hashed_digest(block: Block) -> bytes:
        return base64.b32hexdecode(block.labels[0].upper())

    def old_next(self, block: Block) -> bytes:
        """The next hashed owner of an old NSEC3, removed ones skipped."""
        while True:
            (row,) = _rows(self.section.text(block), " IN NSEC3 ")
            following = base64.b32hexdecode(row.split()[8].upper())
            removed = self.hashes_removed.get(following)
            if removed is None:
                return following
            block = removed

    def new_next(self, digest: bytes, old: bytes) -> bytes:
        """``digest``'s successor in the new chain (``old``: in what is left of the old)."""
        value = int.from_bytes(digest)

        def distance(other: bytes) -> int:
            return (int.from_bytes(other) - value) % _HASH_SPACE or _HASH_SPACE

        return min((old, *self.hashes_added), key=distance)

    def new_before(self, digest: bytes) -> tuple[bytes, str]:
        """The NSEC3 of the new chain that covers ``digest`` (digest, block text)."""
        old = self.hashed_before(digest)
        value = int.from_bytes(digest)

        def distance(other: bytes) -> int:
            return (value - int.from_bytes(other)) % _HASH_SPACE or _HASH_SPACE

        best = min((self.hashed_digest(old), *self.hashes_added), key=distance)
        return best, self.hashed_text(best)

    def hashed_text(self, digest: bytes) -> str:
        owner = nsec3_owner(digest, self.section.origin)
        if owner in self.new_blocks:
            return self.new_blocks[owner][1]
        block = self.hashed(digest)
        if block is None:
            raise ValueError("an NSEC3 not found")
        return self.current(block)

    def ancestors(self, name: Labels) -> Iterator[Labels]:
        depth = len(self.section.origin)
        for cut in range(1, len(name) - depth):
            yield name[cut:]

    def nsec3_hashes(self) -> None:
        """Which hashes come (names added, non-terminals above them) and go."""
        section = self.section
        for name in self.removed:
            digest = self.digest(name)
            block = self.hashed(digest)
            if block is None or _rows(section.text(block), " IN NSEC3 ")[0].split()[9:] != [
                "TXT",
                "RRSIG",
            ]:
                raise ValueError("a removed name's NSEC3 is not as signed")
            self.hashes_removed[digest] = block
        for name in self.removed:
            for above in self.ancestors(name):
                if not self.goes(above):
                    break
                digest = self.digest(above)
                block = self.hashed(digest)
                if block is None:
                    raise ValueError("an empty non-terminal without NSEC3")
                self.hashes_removed[digest] = block
        for name in self.added:
            digest = self.digest(name)
            if self.hashed(digest) is not None and digest not in self.hashes_removed:
                raise ValueError("a name added where an empty non-terminal is")
            self.hashes_added[digest] = Bitmap.of((_TXT, _RRSIG))
            for above in self.ancestors(name):
                if self.exists(above):
                    break
                self.hashes_added[self.digest(above)] = Bitmap.of(())
        if set(self.hashes_added) & set(self.hashes_removed):
            raise ValueError("a hash both added and removed")

    def goes(self, name: Labels) -> bool:
        """An empty non-terminal above a removed name has nothing left below it."""
        if any(_below(added, name) for added in self.added):
            return False
        block = self.section.block_at(self.section.seek(name))
        while block is not None and _below(block.labels, name):
            if block.labels not in self.removed:
                return False
            block = self.section.block_at(block.end)
        return True

    def nsec3_chain(self) -> None:
        origin = self.section.origin
        anchors: dict[bytes, Block] = {}
        for digest in (*self.hashes_added, *self.hashes_removed):
            before = self.hashed_before(digest)
            anchors[self.hashed_digest(before)] = before
        for digest, bitmap in self.hashes_added.items():
            old = self.old_next(self.hashed_before(digest))
            owner = nsec3_owner(digest, origin)
            self.names[owner] = name_text(owner)
            self.todo.append(
                (
                    owner,
                    nsec3_rrs(self.new_next(digest, old), bitmap, self.ttl, self.spec),
                    "",
                    None,
                )
            )
        for digest, block in anchors.items():
            if digest in self.hashes_added:
                continue
            (row,) = _rows(self.section.text(block), " IN NSEC3 ")
            kinds = [dns.rdatatype.from_text(kind) for kind in row.split()[9:]]
            following = self.new_next(digest, self.old_next(block))
            rrs = nsec3_rrs(following, Bitmap.of(kinds), self.ttl, self.spec)
            self.replace(block, " IN NSEC3 ", _record_lines(block.owner.decode("ascii"), rrs))
            self.todo.append((block.labels, rrs, " IN RRSIG NSEC3 ", None))
        for block in self.hashes_removed.values():
            self.deleted[block.start] = block

    # -- signing and the edits -------------------------------------------------------

    def sign(self) -> None:
        """Sign every rrset of ``todo``: new owners' blocks, RRSIGs replaced in others."""
        made = rrsig_lines(
            [(name, rrs) for name, rrs, _, lines in self.todo if lines is None],
            keys=self.keys,
            window=self.window,
            origin=self.section.origin,
            names=self.names,
            spread=self.spec,
            jobs=self.jobs,
        )
        signed_lines = iter(made)
        fresh: dict[Labels, list[tuple[RRs, str]]] = {}
        for name, rrs, marker, lines in self.todo:
            signed = next(signed_lines) if lines is None else lines
            if marker:
                block = self.relinked.get(name) or self.section.find(name, self.hints.get(name))
                if block is None:
                    raise ValueError("an owner to re-sign is not there")
                self.replace(block, marker, signed)
            else:
                fresh.setdefault(name, []).append((rrs, signed))
        for name, rrsets in fresh.items():
            rrsets.sort(key=lambda item: item[0].rdtype)
            owner = self.names[name]
            text = "".join(
                _record_lines(owner, rrs) for rrs, _ in rrsets if rrs.rdtype in (_NSEC, _NSEC3)
            )
            text += "".join(signed for _, signed in rrsets)
            at = self.section.seek(name)
            found = self.section.block_at(at)
            if found is not None and found.labels == name:
                raise ValueError("a name added is there already")
            self.new_blocks[name] = (at, text)

    def edits(self) -> tuple[list[Edit], dict[Labels, int]]:
        rows: list[tuple[int, int, Labels, bytes]] = [
            (at, at, canonical_key(name), text.encode("ascii"))
            for name, (at, text) in self.new_blocks.items()
        ]
        rows += ((b.start, b.end, (), text.encode("ascii")) for b, text in self.changed.values())
        rows += ((b.start, b.end, (), b"") for b in self.deleted.values())
        rows += ((b.start, b.end, (), b"") for b in self.removed.values())
        rows.sort(key=lambda row: row[:3])
        for (_, end, _, _), (start, _, _, _) in itertools.pairwise(rows):
            if start < end:
                raise ValueError("edits overlap")
        keys = {canonical_key(name): name for name in self.added}
        inserted = {
            keys[key]: index
            for index, (start, end, key, _) in enumerate(rows)
            if start == end and key in keys
        }
        return [(start, end, text) for start, end, _, text in rows], inserted


def patch_chain(
    section: SignedSection,
    *,
    spec: DNSSECSpec,
    keys: Sequence[ZoneKey],
    window: SignatureWindow,
    denial_ttl: int,
    names: Mapping[Labels, str],
    resign: Sequence[tuple[Labels, RRs]],
    added: Sequence[tuple[Labels, RRs]],
    removed: Sequence[Labels],
    blocks: Mapping[Labels, Block] | None = None,
    hints: Mapping[Labels, int] | None = None,
    jobs: int = 1,
    presigned: Mapping[int, str] | None = None,
) -> ChainPatch:
    """The edits of ``section`` that add the TXT rrsets ``added`` at new owners, remove
    the owners ``removed`` (each holding just a TXT rrset), re-sign the rrsets
    ``resign`` in place, and relink the NSEC or NSEC3 chain (``names``: each owner named
    here, and the apex, as written; ``blocks``: the blocks of owners in ``resign``
    already found, whose lines the loopback proof does not need: renewals; ``hints``:
    where other owners' blocks may start, checked before taken; ``jobs``: processes
    that sign; ``presigned``: per index into ``resign``, the RRSIG lines made already,
    by workers beside the caller's work).

    Raises:
        ValueError: the change cannot be made exactly as a full signing would make it.
    """
    patcher = _Patcher(section, spec, keys, window, denial_ttl, dict(names), dict(added), {})
    patcher.relinked.update(blocks or {})
    patcher.hints, patcher.jobs = hints or {}, jobs
    for name in removed:
        block = section.find(name)
        if block is None:
            raise ValueError("a removed name is not in the zone")
        after = section.block_at(block.end)
        if after is not None and _below(after.labels, name):
            raise ValueError("a removed name has names below it")
        patcher.removed[name] = block
    for name in patcher.added:
        if name in patcher.removed or section.find(name) is not None:
            raise ValueError("a name added is there already")
    ready = presigned or {}
    for index, (name, rrs) in enumerate(resign):
        patcher.todo.append((name, rrs, f" IN RRSIG {type_text(rrs.rdtype)} ", ready.get(index)))
    for name, rrs in patcher.added.items():
        patcher.todo.append((name, rrs, "", None))
    if spec.denial == "nsec3":
        patcher.nsec3_hashes()
        patcher.nsec3_chain()
    else:
        patcher.nsec_chain()
    patcher.sign()
    edits, inserted = patcher.edits()
    gone = sum(section.data.count(b" IN RRSIG ", start, end) for start, end, _ in edits)
    made = sum(text.count(b" IN RRSIG ") for _, _, text in edits)
    quiet = {block.start for block in (blocks or {}).values()}
    proof = [
        text.decode("ascii")
        for start, end, text in edits
        if text and (start == end or start not in quiet)
    ]
    proof += _denials(patcher)
    return ChainPatch(edits, inserted, "".join(proof), made - gone)


def _denials(patcher: _Patcher) -> list[str]:
    """The unchanged blocks a loopback server needs to deny each removed name."""
    extra: dict[str, None] = {}
    if patcher.spec.denial == "nsec3":
        for name in patcher.removed:
            encloser, closer = name, name
            while not patcher.exists(encloser):
                closer, encloser = encloser, encloser[1:]
            wildcard = (b"*", *encloser)
            extra[patcher.hashed_text(patcher.digest(encloser))] = None
            extra[patcher.new_before(patcher.digest(closer))[1]] = None
            extra[patcher.new_before(patcher.digest(wildcard))[1]] = None
        return list(extra)
    section = patcher.section
    for name in patcher.removed:
        before = patcher.nsec_before(section.seek(name))
        following = patcher.nsec_next(before.labels, before.end)[0]
        for neighbour in (before.labels, following):
            extra.update(dict.fromkeys(_nsec_block(patcher, neighbour)))
        encloser = name[1:]
        while not (_below(before.labels, encloser) or _below(following, encloser)):
            encloser = encloser[1:]
        wildcard = (b"*", *encloser)
        old = patcher.nsec_before(section.seek(wildcard))
        later = [a for a in patcher.added if canonical_key(old.labels) < canonical_key(a)]
        closest = [a for a in later if canonical_key(a) < canonical_key(wildcard)]
        cover = max(closest, key=canonical_key) if closest else old.labels
        extra.update(dict.fromkeys(_nsec_block(patcher, cover)))
    return list(extra)


def _nsec_block(patcher: _Patcher, name: Labels) -> list[str]:
    if name in patcher.new_blocks:
        return [patcher.new_blocks[name][1]]
    block = patcher.section.find(name)
    if block is None:
        raise ValueError("an NSEC owner not found")
    return [patcher.current(block)]
