"""The owners of a signed zone file whose RRSIGs fall due when the zone window moves.

Each owner's RRSIGs take its renewal slot's window (:func:`.dnssec.owner_window`, see
docs/dnssec.md 'Spread renewals'): when the zone window moves on from ``previous`` to
``window`` (a few slots later), exactly the owners whose slot started in between get
new RRSIGs, and their old ones all carry the window that started one cycle before
that slot. So the owners due are found by searching the DNSSEC section's bytes for
those windows' times (a scan in C, no signing, no parse of the zone), and each is
checked against its slot. :func:`due_rrsets` gives the rrsets to sign again in place
(:func:`.chainpatch.patch_chain`, ``resign``).

Anything not as the signer writes it raises ``ValueError``: the caller signs in full.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import dns.rdata
import dns.rdataclass
import dns.rdatatype

from alter_publish.definition.model import DNSSECSpec
from alter_publish.definition.state import SignatureWindow, renewal_slots
from alter_publish.dns.chainpatch import Block, SignedSection, owner_labels, type_text
from alter_publish.dns.ownerwindows import OwnerWindows
from alter_publish.dns.records import RRs
from alter_publish.dns.zonelines import rdata_wire

Labels = tuple[bytes, ...]

_IN = dns.rdataclass.IN
#: The types whose records the DNSSEC section itself holds (the rest are rendered).
SECTION_TYPES = frozenset(
    int(dns.rdatatype.from_text(kind))
    for kind in ("NSEC", "NSEC3", "NSEC3PARAM", "DNSKEY", "CDS", "CDNSKEY")
)


def sigtime(seconds: int) -> str:
    """An RRSIG time as master-file text (YYYYMMDDHHmmSS, UTC)."""
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(seconds))


@dataclass(frozen=True, slots=True)
class DueOwner:
    """One owner whose RRSIGs fall due: its block and the types they cover."""

    block: Block
    covered: tuple[int, ...]


def old_windows(
    previous: SignatureWindow, window: SignatureWindow, spec: DNSSECSpec
) -> dict[bytes, SignatureWindow]:
    """Per slot started after ``previous`` up to ``window`` (zone windows), the times
    (``" <expiration> <inception> "``) its owners' RRSIGs carry now, and the window
    they take instead.

    Raises:
        ValueError: the windows are not a few slots apart.
    """
    slots, length = renewal_slots(spec.signature_validity - spec.refresh)
    cycle = slots * length
    start, stop = previous.inception, window.inception
    if slots < 2 or not 0 <= stop - start < cycle or (stop - start) % length:
        raise ValueError("the zone window moved by more than a cycle")
    found: dict[bytes, SignatureWindow] = {}
    for inception in range(start + length, stop + 1, length):
        old = SignatureWindow(inception - cycle, inception - cycle + window.expiration - stop)
        new = SignatureWindow(inception, inception + window.expiration - stop)
        found[f" {sigtime(old.expiration)} {sigtime(old.inception)} ".encode()] = new
    return found


def _block_around(section: SignedSection, at: int) -> Block:
    """The block holding the line that starts at ``at``."""
    data = section.data
    owner = data[at : data.index(b" ", at)]
    prefix = owner + b" "
    start = at
    while start > section.start:
        before = max(data.rfind(b"\n", section.start, start - 1) + 1, section.start)
        if not data.startswith(prefix, before):
            break
        start = before
    end = data.index(b"\n", at) + 1
    while end < section.end and data.startswith(prefix, end):
        end = data.index(b"\n", end) + 1
    return Block(start, end, owner_labels(owner), owner)


def due_owners(
    section: SignedSection,
    previous: SignatureWindow,
    window: SignatureWindow,
    spec: DNSSECSpec,
    span: tuple[int, int] | None = None,
) -> Iterator[DueOwner]:
    """Every owner of ``section`` whose RRSIGs fall due as the zone window moves from
    ``previous`` to ``window``, in file order per slot; with ``span`` (``(low, high)``),
    those whose block starts there (parts of a section looked at apart find each owner
    once).

    Raises:
        ValueError: an owner found is not in the slot its times say, or not as written.
    """
    data = section.data
    low, high = span or (section.start, section.end)
    windows = OwnerWindows(window, spec)
    for times, new in old_windows(previous, window, spec).items():
        at = data.find(times, low, section.end)
        while at >= 0:
            line = max(data.rfind(b"\n", section.start, at) + 1, section.start)
            block = _block_around(section, line)
            if block.start >= high:
                break
            at = data.find(times, block.end, section.end)
            if block.start < low:
                continue  # a block of the part before
            if windows(block.labels) != new:
                raise ValueError("an RRSIG not in its owner's slot")
            text = data[block.start : block.end]
            covered = tuple(
                _covered_type(fields[4])
                for row in text.splitlines()
                if (fields := row.split(b" ", 5))[3] == b"RRSIG"
            )
            if text.count(times) != len(covered):
                raise ValueError("an owner's RRSIGs in more than one window")
            yield DueOwner(block, tuple(dict.fromkeys(covered)))


@functools.cache
def _covered_type(text: bytes) -> int:
    """The type an RRSIG line names as covered (``TXT``, ``NSEC3``, ...)."""
    return int(dns.rdatatype.from_text(text.decode("ascii")))


def section_rrs(block_text: str, rdtype: int) -> RRs:
    """The rrset of type ``rdtype`` a block of the DNSSEC section holds.

    Raises:
        ValueError: it holds none.
    """
    kind = type_text(rdtype)
    marker = f" IN {kind} "
    rows = [row for row in block_text.splitlines() if marker in row]
    if not rows:
        raise ValueError(f"no {kind} records to sign")
    ttl = int(rows[0].split()[1])
    texts = tuple(row.split(marker, 1)[1] for row in rows)
    wires = tuple(
        rdata_wire(kind, text) or dns.rdata.from_text(_IN, kind, text).to_digestable()
        for text in texts
    )
    return RRs(rdtype, ttl, wires, texts)


def due_rrsets(
    section: SignedSection,
    owners: Iterator[DueOwner],
    rendered: Callable[[Block], Mapping[int, RRs] | None],
    skip: Mapping[tuple[Labels, int], object],
) -> list[tuple[Labels, RRs, Block]]:
    """The rrsets of ``owners`` to sign again: those of the DNSSEC section from their
    block, the rest from ``rendered`` (by type, for the block's owner; None: an owner
    whose rrsets are not to be signed here), none in ``skip`` (signed anyway).

    Raises:
        ValueError: an rrset is not found.
    """
    found: list[tuple[Labels, RRs, Block]] = []
    for due in owners:
        block = due.block
        text = section.text(block)
        others: Mapping[int, RRs] | None = None
        for rdtype in due.covered:
            if (block.labels, rdtype) in skip:
                continue
            if rdtype in SECTION_TYPES:
                found.append((block.labels, section_rrs(text, rdtype), block))
                continue
            if others is None:
                others = rendered(block)
                if others is None:
                    break
            rrs = others.get(rdtype)
            if rrs is None:
                raise ValueError("an rrset to sign again not found")
            found.append((block.labels, rrs, block))
    return found


def txt_rrsets(text: str) -> dict[Labels, RRs] | None:
    """The TXT rrsets of rendered lines (``<owner> <ttl> IN TXT <rdata>``, comments),
    read without dnspython; None when any line is not of that form (then: dnspython)."""
    found: dict[Labels, RRs] = {}
    for line in text.splitlines():
        if not line or line.startswith(";"):
            continue
        fields = line.split(" ", 4)
        if len(fields) != 5 or fields[2:4] != ["IN", "TXT"] or not fields[1].isdigit():
            return None
        wire = rdata_wire("TXT", fields[4])
        try:
            labels = owner_labels(fields[0].encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            return None
        if wire is None or fields[0].lower() != fields[0]:
            return None
        old = found.get(labels)
        if old is not None and (old.ttl != int(fields[1]) or wire in old.wires):
            return None
        wires = (*old.wires, wire) if old else (wire,)
        texts = (*old.texts, fields[4]) if old else (fields[4],)
        found[labels] = RRs(16, int(fields[1]), wires, texts)
    return found
