"""A patch's daily renewal made by worker processes (one per CPU) while it signs its
envelopes and renders (:mod:`.patch`; not for ``--check``): the owners whose slot
started since the last run found in the last zone file and their RRSIGs made again,
each worker for the owners whose block starts in its part of the DNSSEC section.

On a renewal day at 100,000 handles this is about 33,000 RRSIGs and 0.7 s of finding
and reading in Python, which the main thread did after rendering; it needs nothing the
patch makes (the rrsets come from the last zone file and the memo), so it is started
as soon as the patch knows its base. What the workers made is checked where it is used
(:meth:`RenewalSoon.renewal`): the rrsets the patch signs anyway are left out, and an
rrset of the rendered head is taken only when it is the one rendered now; anything
else (a part that could not be done, a worker lost, a zone file not the one mapped)
and the patch finds and signs its renewals itself, as before: the same code, which
then says what is wrong.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from alter_publish.definition.state import renewal_slots
from alter_publish.dns.chainpatch import Block, SignedSection
from alter_publish.dns.dnssec import rrsig_lines
from alter_publish.dns.records import Labels, RRs, ZoneRecords, from_zone, labels_of
from alter_publish.dns.renewdue import SECTION_TYPES
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.mapped import Bytes, MappedFile, read_mapped
from alter_publish.parallel import PARALLEL_MIN_ITEMS, Workers, shared
from alter_publish.pipeline.patchbase import PatchBase
from alter_publish.pipeline.patchrenew import DNSSEC_HEADER, Renewal, due_found, renewal_of

__all__ = ["RenewalSoon"]

_TXT_TYPE = 16

#: Fewer RRSIGs due than this (estimated) and the patch renews them itself: starting
#: workers would cost more than they save.
MIN_RRSIGS = PARALLEL_MIN_ITEMS

#: The workers take the CPU the patch's own work leaves (its envelopes are the critical
#: path; its key loaders run as low), and the patch waits for them when it signs.
RENEWAL_NICE = 10

#: One rrset due, signed: owner, the rrset's fields (type, TTL, wires, texts), its block
#: (start, end, owner as written), RRSIGs. Plain values, as they cross the process
#: boundary: a worker's 18,500 ``RRs`` took 0.09 s to pickle there and 0.07 s to unpickle
#: here; as tuples 0.01 s each, and 0.02 s to build the ``RRs`` again.
_Made = tuple[Labels, int, int, tuple[bytes, ...], tuple[str, ...], int, int, bytes, str]


@dataclass(frozen=True, slots=True)
class _Job:
    """What the workers inherit: the patch's base, the last zone file (mapped), where its
    DNSSEC section is, its head's text and the rrsets the patch signs anyway."""

    base: PatchBase
    zone: Bytes
    section: tuple[int, int]
    head: str
    skip: frozenset[tuple[Labels, int]]

    def part(self, span: tuple[int, int]) -> list[_Made]:
        """The rrsets due of the owners whose block starts in ``span``, signed."""
        base = self.base
        records = from_zone(parse_zone_text(self.head, base.spec.origin, where="renewal"))
        section = SignedSection(self.zone, *self.section, records.origin)
        found = due_found(base, section, self.head, records.owners, self.skip, span)
        assert base.window is not None  # noqa: S101 (a renewal: the zone is signed)
        lines = rrsig_lines(
            [(labels, rrs) for labels, rrs, _ in found],
            keys=base.zone_keys,
            window=base.window,
            origin=section.origin,
            names={labels: block.owner.decode("ascii") for labels, _, block in found},
            spread=base.spec.dnssec,
        )
        return [
            (
                labels,
                rrs.rdtype,
                rrs.ttl,
                rrs.wires,
                rrs.texts,
                block.start,
                block.end,
                block.owner,
                line,
            )
            for (labels, rrs, block), line in zip(found, lines, strict=True)
        ]


def _renew_part(span: tuple[int, int]) -> list[_Made] | str:
    """A worker's part (see :meth:`_Job.part`), or why it could not be done."""
    job = shared()
    if not isinstance(job, _Job):
        return "no renewal job in this worker"
    try:
        return job.part(span)
    except Exception as exc:  # the patch does it again itself, and says what is wrong
        return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True, slots=True)
class RenewalSoon:
    """A day's renewal being made by workers (:meth:`start`), taken by :meth:`renewal`."""

    workers: Workers
    parts: Callable[[], list[list[_Made] | str] | None]
    zone: Bytes
    section_start: int

    @classmethod
    def start(cls, base: PatchBase, zone_file: Path, jobs: int) -> RenewalSoon | None:
        """Start the renewal of ``base`` from the last zone file ``zone_file`` on ``jobs``
        workers; None when there is none to make, too little to be worth the workers,
        one CPU, or the file is not as the memo says (the patch renews by itself)."""
        previous, window, spec = base.state.signatures, base.window, base.spec.dnssec
        if jobs < 2 or previous is None or window is None or previous == window:
            return None
        slots, length = renewal_slots(spec.signature_validity - spec.refresh)
        moved = (window.inception - previous.inception) / (slots * length)
        if 2 * len(base.memo.refs) * moved < MIN_RRSIGS:  # a handle's RRSIGs, NSEC3's
            return None
        try:
            zone = read_mapped(zone_file)
            header = DNSSEC_HEADER.match(zone, base.memo.rendered_end)
            head = bytes(zone[: base.memo.segments[0]]).decode()
        except (OSError, IndexError, UnicodeDecodeError):
            return None
        if header is None:
            return None
        skip = frozenset((labels_of(item.owner), _TXT_TYPE) for item in base.spec.handles)
        start, end = header.end(), len(zone)
        cuts = [start + (end - start) * part // jobs for part in range(jobs + 1)]
        try:
            workers = Workers(jobs, _Job(base, zone, (start, end), head, skip), nice=RENEWAL_NICE)
        except OSError:  # no process to fork: the patch renews by itself
            return None
        try:
            parts = workers.map_soon(_renew_part, itertools.pairwise(cuts))
        except BaseException:
            workers.close()
            raise
        return cls(workers, parts, zone, start)

    def renewal(
        self, section: SignedSection, records: ZoneRecords, skip: Sequence[tuple[Labels, RRs]]
    ) -> tuple[Renewal, Mapping[int, str]] | None:
        """What :func:`.patchrenew.renewal` gives for ``section`` (the last zone file's, as
        the patch read it), the rendered head's ``records`` and ``skip``, and per index
        into its ``resign`` the RRSIG lines made; None when the workers' cannot be used.
        Waits for the workers."""
        if not _same(section.data, self.zone) or section.start != self.section_start:
            return None
        made_parts = self.parts()
        if made_parts is None:
            return None  # a worker lost
        parts: list[list[_Made]] = []
        for part in made_parts:
            if isinstance(part, str):
                return None  # the patch finds it again, and says what is wrong
            parts.append(part)
        signed = {(labels, rrs.rdtype) for labels, rrs in skip}
        found: list[tuple[Labels, RRs, Block]] = []
        made: dict[int, str] = {}
        for part in parts:
            for labels, rdtype, ttl, wires, texts, start, end, owner, lines in part:
                if (labels, rdtype) in signed:
                    continue
                rrs = RRs(rdtype, ttl, wires, texts)
                rendered = records.owners.get(labels)
                if rendered is not None and rdtype not in SECTION_TYPES:
                    now = next((item for item in rendered if item.rdtype == rdtype), None)
                    if now != rrs:
                        return None  # the head's rrset is not the one rendered now
                made[len(found)] = lines
                found.append((labels, rrs, Block(start, end, labels, owner)))
        proven = {labels for labels, _ in skip} | {section.origin}
        return renewal_of(found, proven), made

    def close(self) -> None:
        """End the workers (what they made is dropped if not taken); again: nothing."""
        self.workers.close()


def _same(data: Bytes, mapped: Bytes) -> bool:
    """Whether ``data`` (the last zone file as the patch read it) is the file the workers
    mapped: the same size, and mapped at the same size and modification time."""
    if isinstance(data, MappedFile) and isinstance(mapped, MappedFile):
        return data.taken == mapped.taken
    return len(data) == len(mapped)
