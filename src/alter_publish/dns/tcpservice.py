"""The TCP side of the loopback server: connection slots slow clients cannot starve.

One thread runs a ``selectors`` loop over the listening socket and every connection
(no thread per connection). Three limits, after the authoritative servers that
faced the same attack (docs: README, ``serve``):

* **a deadline per message** (Knot's ``tcp-io-timeout``, 500 ms): from the first byte
  of a query's length prefix to its last byte, and from the first byte of a reply
  to its last; a client that trickles a message, however regularly, is dropped;
* **an idle limit between messages** (Knot's ``tcp-idle-timeout``, 10 s), shrunk as
  the slots fill the way unbound shrinks its ``tcp-idle-timeout``: to 1 % of it when
  fewer than half the slots are free, 0.2 % below 35 % and 0 below 20 %, never under
  :data:`IDLE_FLOOR_SECONDS`;
* **eviction when full**: a connection that arrives when every slot is taken takes the
  slot of the connection that has waited longest (mid-message, mid-reply or idle),
  so a new query is answered while slow clients keep reconnecting. A new connection
  that has sent nothing yet is not evicted before it has had :data:`IDLE_FLOOR_SECONDS`
  to send its first query (the eviction would otherwise take it, unanswered, when a
  few more arrive before its query does); while no slot may be evicted, new
  connections wait in the kernel's listen queue.

Memory is bounded by the slots: a connection holds only the bytes it has sent (a
0xffff prefix reserves nothing; reads go through one shared scratch buffer) and at
most one message in and one reply out, so the whole service holds at most
``max_connections x 2 x 65,537`` bytes of messages. Each connection's kernel send
buffer is capped (:data:`SEND_BUFFER_OCTETS`), so a client that sends queries but
never reads the replies is stalled, and dropped, after a few hundred replies rather
than after the megabytes an autotuned buffer would take.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import selectors
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from alter_publish.dns.wire import DNS_MESSAGE_MAX_OCTETS
from alter_publish.errors import ServeError

__all__ = [
    "TCP_CONNECTIONS_MAX",
    "TCP_IDLE_TIMEOUT_SECONDS",
    "TCP_IO_TIMEOUT_SECONDS",
    "TcpLimits",
    "TcpService",
]

logger = logging.getLogger(__name__)

#: Connection slots (the server's limit before this module; Knot's default is 1/5 of
#: its open-file limit).
TCP_CONNECTIONS_MAX: Final = 64
#: Deadline for one whole message in or out (Knot's ``tcp-io-timeout`` default).
TCP_IO_TIMEOUT_SECONDS: Final = 0.5
#: Idle limit between messages while at least half the slots are free (Knot's
#: ``tcp-idle-timeout`` default; NSD's ``tcp-timeout`` is 120 s, unbound's 30 s).
TCP_IDLE_TIMEOUT_SECONDS: Final = 10.0
#: The shortest idle limit, whatever the share of free slots (unbound's floor): a new
#: connection always has this long to start its first query.
IDLE_FLOOR_SECONDS: Final = 0.2
#: (share of free slots below which, idle limit as a share of the configured one),
#: most free first, as unbound's ``tcp-idle-timeout``.
IDLE_SHRINK_STEPS: Final = ((0.5, 0.01), (0.35, 0.002), (0.2, 0.0))
#: Bounds of the limits (the options of ``serve`` have the same).
CONNECTIONS_RANGE: Final = (1, 4096)
IO_TIMEOUT_RANGE_SECONDS: Final = (0.01, 60.0)
IDLE_TIMEOUT_RANGE_SECONDS: Final = (0.1, 3600.0)
#: New connections taken per wakeup, and messages read from one connection per wakeup:
#: reading queries already in goes before accepting (and evicting for) more.
ACCEPTS_PER_WAKEUP: Final = 8
#: How long accepting waits when the process is out of file descriptors and holds no
#: connection to drop (the listener stays readable: without a pause the loop spins).
FD_EXHAUSTED_PAUSE_SECONDS: Final = 0.1
MESSAGES_PER_WAKEUP: Final = 8
#: Kernel send buffer of each connection (Linux doubles it): room for the largest
#: reply, and a bound on the replies a client that never reads can make the server
#: compute before its reply stalls and the ``tcp-io-timeout`` drops it.
SEND_BUFFER_OCTETS: Final = 64 * 1024
#: Longest sleep of the loop when no deadline is nearer.
LOOP_WAKE_SECONDS: Final = 1.0
#: A DNS message over TCP: a two-octet length, then the message.
LENGTH_PREFIX_OCTETS: Final = 2

#: Answers one query, wire to wire (``None`` for TCP: no UDP size limit).
Respond = Callable[[bytes, int | None], bytes | None]


@dataclass(frozen=True, slots=True)
class TcpLimits:
    """How the TCP service shares its slots: how many, and how long each may be held."""

    max_connections: int = TCP_CONNECTIONS_MAX
    io_timeout_seconds: float = TCP_IO_TIMEOUT_SECONDS
    idle_timeout_seconds: float = TCP_IDLE_TIMEOUT_SECONDS

    def __post_init__(self) -> None:
        """Check every limit against its range, all at once.

        Raises:
            ServeError: a limit out of its range (every one named).
        """
        problems = [
            f"{name} {value} is not in {low}..{high}"
            for name, value, (low, high) in (
                ("max_connections", self.max_connections, CONNECTIONS_RANGE),
                ("io_timeout_seconds", self.io_timeout_seconds, IO_TIMEOUT_RANGE_SECONDS),
                ("idle_timeout_seconds", self.idle_timeout_seconds, IDLE_TIMEOUT_RANGE_SECONDS),
            )
            if not low <= value <= high
        ]
        if problems:
            raise ServeError("; ".join(problems), where="tcp limits")

    def idle_limit(self, busy: int) -> float:
        """The idle limit in seconds while ``busy`` of the slots are taken.

        The configured limit while at least half the slots are free, then shrunk step by
        step (:data:`IDLE_SHRINK_STEPS`), never below :data:`IDLE_FLOOR_SECONDS` (nor
        above the configured limit).
        """
        free = (self.max_connections - busy) / self.max_connections
        share = 1.0
        for below, scale in IDLE_SHRINK_STEPS:
            if free < below:
                share = scale
        floor = min(IDLE_FLOOR_SECONDS, self.idle_timeout_seconds)
        return max(self.idle_timeout_seconds * share, floor)


class _Connection:
    """One client's slot: what it has sent of its current message, what it is owed."""

    __slots__ = (
        "events",
        "expected",
        "inbox",
        "message_started",
        "outbox",
        "protected_until",
        "sock",
        "waiting_since",
    )

    def __init__(self, sock: socket.socket, now: float, grace: float) -> None:
        self.sock = sock
        #: Until when eviction passes it over: a new connection's time to send its
        #: first byte (0 once one came).
        self.protected_until = now + grace
        #: Bytes of the current message (prefix included) received so far.
        self.inbox = bytearray()
        #: Length of the current message with its prefix (2 until the prefix is in).
        self.expected = LENGTH_PREFIX_OCTETS
        #: When the first byte of the current message came (None between messages).
        self.message_started: float | None = None
        #: What is left to send of the reply (None when nothing is owed).
        self.outbox: memoryview | None = None
        #: When the connection was opened, its reply begun, or its reply sent.
        self.waiting_since = now
        #: What the selector watches it for: reading, or writing while a reply is owed.
        self.events = selectors.EVENT_READ

    def stalled_since(self) -> float:
        """When what the connection does now began: a reply, a message, or idling."""
        if self.outbox is None and self.message_started is not None:
            return self.message_started
        return self.waiting_since

    def deadline(self, io_timeout: float, idle_limit: float) -> float:
        """When the connection is dropped unless it finishes what it does now."""
        busy = self.outbox is not None or self.message_started is not None
        return self.stalled_since() + (io_timeout if busy else idle_limit)


class TcpService:
    """Serves length-prefixed DNS queries on a listening socket until :meth:`wake` ends it.

    Runs in the thread that calls :meth:`run`; every other method is for that thread,
    except :meth:`wake`.
    """

    def __init__(self, listener: socket.socket, respond: Respond, limits: TcpLimits) -> None:
        """Take over ``listener`` (made non-blocking); nothing runs until :meth:`run`."""
        self._listener = listener
        self._respond = respond
        self._limits = limits
        self._selector = selectors.DefaultSelector()
        self._waker, self._wake_end = socket.socketpair()
        self._conns: dict[socket.socket, _Connection] = {}
        self._scratch = memoryview(bytearray(LENGTH_PREFIX_OCTETS + DNS_MESSAGE_MAX_OCTETS))
        self._done = False
        #: While no slot may be evicted, the listener is not watched (new connections
        #: wait in its queue).
        self._accept_paused = False
        self._grace = min(IDLE_FLOOR_SECONDS, limits.idle_timeout_seconds)

    def wake(self) -> None:
        """Make :meth:`run` close every connection and return (from any thread)."""
        self._done = True
        with contextlib.suppress(OSError):
            self._waker.send(b"\x00")

    def run(self) -> None:
        """Accept, read, answer and drop connections until :meth:`wake`."""
        self._listener.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._wake_end.setblocking(False)
        self._selector.register(self._wake_end, selectors.EVENT_READ)
        try:
            timeout = LOOP_WAKE_SECONDS
            while not self._done:
                events = self._selector.select(timeout)
                now = time.monotonic()
                accept = False
                for key, mask in events:
                    if isinstance(key.data, _Connection):
                        self._serve(key.data, mask, now)
                    elif key.fileobj is self._listener:
                        accept = True
                if accept and not self._done:
                    self._accept(now)
                now = time.monotonic()
                timeout = min(self._expire(now), self._resume_accepting(now))
        finally:
            for sock in list(self._conns):
                self._drop(sock, "server stopping")
            self._selector.close()
            self._waker.close()
            self._wake_end.close()

    # -- connections ----------------------------------------------------------

    def _accept(self, now: float) -> None:
        for _ in range(ACCEPTS_PER_WAKEUP):
            full = len(self._conns) >= self._limits.max_connections
            if full and self._pause_accepting(now):
                return
            try:
                sock, _ = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                logger.debug("TCP accept failed: %s", exc)
                if exc.errno in (errno.EMFILE, errno.ENFILE):
                    if self._conns:
                        self._drop(self._victim(), "out of file descriptors")
                    else:  # the listener stays readable: do not spin on it
                        time.sleep(FD_EXHAUSTED_PAUSE_SECONDS)
                return
            if len(self._conns) >= self._limits.max_connections:
                self._drop(self._victim(), "evicted: every slot taken")
            sock.setblocking(False)
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_OCTETS)
            conn = _Connection(sock, now, self._grace)
            self._conns[sock] = conn
            self._selector.register(sock, selectors.EVENT_READ, conn)

    def _evictable_after(self) -> float:
        """When a slot may first be evicted (monotonic): at once unless all are new."""
        return min(conn.protected_until for conn in self._conns.values())

    def _pause_accepting(self, now: float) -> bool:
        """Stop watching the listener if no slot may be evicted yet; True if paused."""
        if self._evictable_after() <= now:
            return False
        self._accept_paused = True
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(self._listener)
        return True

    def _resume_accepting(self, now: float) -> float:
        """Watch the listener again once a slot is free or evictable; seconds to wait."""
        if not self._accept_paused:
            return LOOP_WAKE_SECONDS
        if len(self._conns) >= self._limits.max_connections:
            until = self._evictable_after()
            if until > now:
                return until - now
        self._accept_paused = False
        self._selector.register(self._listener, selectors.EVENT_READ)
        return LOOP_WAKE_SECONDS

    def _victim(self) -> socket.socket:
        """The connection that has waited longest, mid-message, mid-reply or idle.

        A new connection still in its time to send a first byte is passed over (when
        every one is, the one whose time ends first).
        """
        now = time.monotonic()
        evictable = [c for c in self._conns.values() if c.protected_until <= now]
        if not evictable:
            return min(self._conns.values(), key=lambda conn: conn.protected_until).sock
        return min(evictable, key=_Connection.stalled_since).sock

    def _drop(self, sock: socket.socket, why: str) -> None:
        logger.debug("TCP connection dropped: %s", why)
        del self._conns[sock]
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(sock)
        sock.close()

    def _expire(self, now: float) -> float:
        """Drop every connection past its deadline; seconds until the next deadline."""
        io_timeout = self._limits.io_timeout_seconds
        idle_limit = self._limits.idle_limit(len(self._conns))
        nearest = now + LOOP_WAKE_SECONDS
        for conn in list(self._conns.values()):
            deadline = conn.deadline(io_timeout, idle_limit)
            if deadline <= now:
                self._drop(conn.sock, "deadline passed")
            else:
                nearest = min(nearest, deadline)
        return max(0.0, nearest - now)

    def _serve(self, conn: _Connection, mask: int, now: float) -> None:
        try:
            keep = self._write(conn, now) if mask & selectors.EVENT_WRITE else self._read(conn, now)
        except Exception:  # resets, a bad answerer, anything: this connection only
            logger.debug("TCP connection failed", exc_info=True)
            keep = False
        if not keep:
            self._drop(conn.sock, "closed, failed or sent garbage")
            return
        events = selectors.EVENT_READ if conn.outbox is None else selectors.EVENT_WRITE
        if events != conn.events:  # read no more until the reply is sent
            conn.events = events
            self._selector.modify(conn.sock, events, conn)

    def _read(self, conn: _Connection, now: float) -> bool:
        """Read what the client sent, answering each whole query; False to hang up."""
        for _ in range(MESSAGES_PER_WAKEUP):
            want = conn.expected - len(conn.inbox)
            try:
                count = conn.sock.recv_into(self._scratch, want)
            except BlockingIOError:
                return True
            if count == 0:
                return False
            if not conn.inbox:
                conn.message_started = now
                conn.protected_until = 0.0
            conn.inbox += self._scratch[:count]
            if len(conn.inbox) < conn.expected:
                continue
            if conn.expected == LENGTH_PREFIX_OCTETS:
                (length,) = struct.unpack("!H", conn.inbox)
                if length == 0:
                    return False
                conn.expected += length
                continue
            wire = bytes(conn.inbox[LENGTH_PREFIX_OCTETS:])
            conn.inbox = bytearray()
            conn.expected = LENGTH_PREFIX_OCTETS
            conn.message_started = None
            conn.waiting_since = now
            reply = self._respond(wire, None)
            if reply is None:  # garbage or a response: hang up
                return False
            conn.outbox = memoryview(struct.pack("!H", len(reply)) + reply)
            self._write(conn, now)
            if conn.outbox is not None:  # the rest when the client reads
                return True
        return True

    def _write(self, conn: _Connection, now: float) -> bool:
        """Send what the connection is owed (True: keep the connection)."""
        outbox = conn.outbox
        if outbox is None:  # pragma: no cover - only registered for writing when owed
            return True
        try:
            sent = conn.sock.send(outbox)
        except BlockingIOError:
            sent = 0
        if sent < len(outbox):
            conn.outbox = outbox[sent:]
        else:
            conn.outbox = None
            conn.waiting_since = now
        return True
