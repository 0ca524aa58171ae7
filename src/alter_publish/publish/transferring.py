"""A zone transfer read by a child process while the run reads its own outputs.

``plan`` and ``push`` read two things before they compare: what ``sign`` wrote (the
envelopes document and the log, about two seconds at 100,000 handles) and what the
server serves (an AXFR, about one second). Each holds the interpreter's lock, so a
thread would not overlap them: the transfer runs in a forked child, which sends back
the TXT records it selected as plain tuples, and the parent goes on meanwhile.

What a transfer showed is kept as a :class:`Snapshot`; after a push's updates, an
incremental transfer (IXFR) from its serial brings it up to date in milliseconds, where
a second whole transfer of 100,000 names took two seconds.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import dns.exception
import dns.name

from alter_publish.dns.transfer import Selector, TxtChanges, transfer_txt, transfer_txt_changes
from alter_publish.errors import ResolveError
from alter_publish.interrupts import quiet_worker, starting_workers
from alter_publish.publish.managed import Records, owned, owned_checker

#: One TXT record as the child sends it: owner (lower-case text), TTL, character-strings.
TxtRow = tuple[str, int, tuple[bytes, ...]]
#: A whole transfer: the zone's serial and its TXT records, in transfer order.
Transferred = tuple[int, list[TxtRow]]
#: The TXT records served at one owner name: (TTL, character-strings) each.
Served = Sequence[tuple[int, tuple[bytes, ...]]]

#: What ends a transfer the way a server that offers none does (the caller then asks
#: for each owner name instead).
TRANSFER_FAILURES = (ResolveError, dns.exception.DNSException, OSError, EOFError)


@dataclass(frozen=True, slots=True)
class TransferRequest:
    """An AXFR of ``zone`` from ``server`` keeping the TXT records whose owner ``select``
    accepts (TSIG-signed with ``keyring``/``keyname`` when given; ``timeout`` bounds each
    read, four times it the whole transfer)."""

    zone: str
    server: tuple[str, int]
    select: Selector
    keyring: Any | None
    keyname: dns.name.Name | None
    timeout: float

    def rows(self) -> Transferred:
        """The zone's serial and its records, in transfer order (here and now).

        Raises:
            ResolveError, dns.exception.DNSException, OSError, EOFError: as
                :func:`transfer_txt` (:data:`TRANSFER_FAILURES`).
        """
        serial, records = transfer_txt(
            dns.name.from_text(self.zone),
            self.server,
            self.select,
            keyring=self.keyring,
            keyname=self.keyname,
            timeout=self.timeout,
            lifetime=self.timeout * 4,
        )
        return serial, [(record.owner, record.ttl, record.strings) for record in records]

    def changes(self, since: int) -> TxtChanges:
        """The records changed since serial ``since`` (an IXFR, here and now).

        Raises:
            ResolveError, dns.exception.DNSException, OSError, EOFError: as
                :func:`transfer_txt_changes` (:data:`TRANSFER_FAILURES`).
        """
        return transfer_txt_changes(
            dns.name.from_text(self.zone),
            self.server,
            self.select,
            since,
            keyring=self.keyring,
            keyname=self.keyname,
            timeout=self.timeout,
            lifetime=self.timeout * 4,
        )


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a zone transfer showed: the zone's serial, the TXT records served at each
    selected owner name, and ours among them (:func:`~.managed.owned`)."""

    serial: int
    rows: Mapping[str, Served]
    served: Mapping[str, Records]

    @classmethod
    def of(cls, zone: str, serial: int, rows: Iterable[TxtRow]) -> Snapshot:
        """The snapshot of a whole transfer of ``zone``."""
        by_owner: dict[str, list[tuple[int, tuple[bytes, ...]]]] = {}
        for owner, ttl, strings in rows:
            by_owner.setdefault(owner, []).append((ttl, strings))
        ours = owned_checker(zone)
        served: dict[str, Records] = {}
        for owner, here in by_owner.items():
            if (records := owned(owner, here, ours(owner))) is not None:
                served[owner] = records
        return cls(serial, by_owner, served)

    def updated(self, zone: str, changes: TxtChanges) -> tuple[Snapshot, frozenset[str]]:
        """This snapshot with an incremental transfer's ``changes`` applied (each in
        turn: a deletion takes the record with those strings away, an addition replaces
        it), and the owner names they touched."""
        rows, touched = dict(self.rows), set()
        for added, record in changes.changes:
            here = [row for row in rows.get(record.owner, ()) if row[1] != record.strings]
            if added:
                here.append((record.ttl, record.strings))
            rows[record.owner] = here
            touched.add(record.owner)
        served = dict(self.served)
        ours = owned_checker(zone)
        for owner in touched:
            found = owned(owner, rows[owner], ours(owner))
            if not rows[owner]:
                del rows[owner]
            if found is None:
                served.pop(owner, None)
            else:
                served[owner] = found
        return Snapshot(changes.serial, rows, served), frozenset(touched)


class Transfer:
    """A :class:`TransferRequest` under way in a child process; :meth:`rows` waits for
    it. Use it as a context manager: a child still running at the end is stopped."""

    def __init__(self, request: TransferRequest) -> None:
        context = multiprocessing.get_context("fork")
        self._receive, send = context.Pipe(duplex=False)
        arguments = (send, self._receive, request)
        self._child = context.Process(target=_read, args=arguments, daemon=True)
        try:
            with starting_workers():  # deaf to a Ctrl-C until it leaves our process group
                self._child.start()
        finally:
            send.close()
        self._rows: Transferred | None = None
        self._received = False
        self._closed = False

    def rows(self) -> Transferred | None:
        """The serial and the TXT records the transfer held, in transfer order; None
        when it failed as
        :data:`TRANSFER_FAILURES` say (refused, timed out, cut short, a bad TSIG).

        Raises:
            RuntimeError: the child failed otherwise (a defect; its error, in one line).
        """
        if not self._received:
            self._received = True
            try:
                outcome, value = self._receive.recv()
            except (EOFError, OSError):
                outcome, value = "failed", None  # the child died: as if the server cut it
            self.close()
            if outcome == "error":
                raise RuntimeError(f"zone transfer: {value}")
            self._rows = value if outcome == "ok" else None
        return self._rows

    def close(self) -> None:
        """Stop the child unless its result was taken (it may be blocked sending one
        nobody reads), and reap it."""
        if self._closed:
            return
        self._closed = True
        if not self._received:
            self._child.terminate()
        self._receive.close()
        self._child.join()

    def __enter__(self) -> Transfer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _read(
    send: multiprocessing.connection.Connection,
    receive: multiprocessing.connection.Connection,
    request: TransferRequest,
) -> None:
    """In the child: transfer, send ``("ok", rows)``, ``("failed", None)`` or
    ``("error", text)``, and end without the parent's exit handlers. The parent's end of
    the pipe is closed here first: a parent gone makes the send fail, not wait."""
    receive.close()
    quiet_worker()
    try:
        outcome: tuple[str, object] = ("ok", request.rows())
    except TRANSFER_FAILURES:
        outcome = ("failed", None)
    except Exception as exc:
        outcome = ("error", f"{type(exc).__name__}: {' '.join(str(exc).split())}")
    try:
        send.send(outcome)
    finally:
        send.close()
        os._exit(0)
