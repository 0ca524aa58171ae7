"""The one DNS client: questions over one UDP socket, many in flight, replies as bytes.

:func:`exchange_many` sends queries built by :func:`query_wire` (EDNS0 with a
1232-octet payload and DO=1) with up to ``window`` in flight, each with a random id
unique among them. A reply is taken for a query only when it is a response (QR=1)
with the query's id and the very question asked (name compared case-insensitively);
anything else is dropped unread. A query unanswered after ``timeout`` seconds is sent
once more; unanswered again, its result is None. Replies are handed back as they
are (truncated ones too): the callers judge them, the loopback proof's fast path by
hand (:mod:`alter_publish.dns.fastcheck`) and the stub resolver through dnspython
(:mod:`alter_publish.verify.resolve`), which asks again over TCP on truncation.
"""

from __future__ import annotations

import contextlib
import ipaddress
import secrets
import selectors
import socket
import struct
import time
from collections import deque
from collections.abc import Sequence
from typing import Final

from alter_publish.dns.wire import (
    DNS_MESSAGE_MAX_OCTETS,
    EDNS_PAYLOAD_OCTETS,
    HEADER_OCTETS,
    IN,
    OPT,
)

__all__ = [
    "PIPELINE_WINDOW",
    "QUERY_TRIES",
    "WINDOW_MAX",
    "checked_window",
    "exchange_many",
    "loopback_socket",
    "query_wire",
    "question_wire",
    "udp_socket",
]

#: Queries in flight at once by default; about 64 replies fit any socket buffer.
PIPELINE_WINDOW: Final = 64
#: The most queries in flight at once, whatever the window asked for (ids are 16 bits).
WINDOW_MAX: Final = 1 << 15
#: A query is sent at most this often before it counts as unanswered.
QUERY_TRIES: Final = 2

_QUERY_FLAGS: Final = b"\x00\x00\x00\x01\x00\x00\x00\x00\x00\x01"  # RD=0; QD=1, AR=1
_QUERY_FLAGS_RD: Final = b"\x01" + _QUERY_FLAGS[1:]  # RD=1, for recursive resolvers
_OPT_DO: Final = struct.pack("!BHHIH", 0, OPT, EDNS_PAYLOAD_OCTETS, 0x8000, 0)
_TYPE_CLASS: Final = struct.Struct("!HH")
_ONE_QUESTION: Final = b"\x00\x01"


def question_wire(name: bytes, rdtype: int) -> bytes:
    """The question section asking ``rdtype`` IN at ``name`` (uncompressed wire form)."""
    return name + _TYPE_CLASS.pack(rdtype, IN)


def query_wire(question: bytes, query_id: int, *, recursion_desired: bool = False) -> bytes:
    """A query with id ``query_id`` for ``question`` (:func:`question_wire`): RD=0 (or 1
    with ``recursion_desired``), EDNS0 with a 1232-octet payload and DO=1."""
    flags = _QUERY_FLAGS_RD if recursion_desired else _QUERY_FLAGS
    return query_id.to_bytes(2, "big") + flags + question + _OPT_DO


def udp_socket(server: tuple[str, int]) -> socket.socket:
    """A non-blocking UDP socket connected to ``server`` (the kernel then drops
    datagrams from anyone else).

    Raises:
        OSError: the socket cannot be opened or connected.
    """
    family = socket.AF_INET6 if ":" in server[0] else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        sock.connect(server)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def loopback_socket(server: tuple[str, int]) -> socket.socket:
    """:func:`udp_socket` for a server on a loopback IP address, bound to the loopback
    address of the same family (127.0.0.1 or ::1).

    Raises:
        OSError: ``server`` is no loopback IP address, or the socket cannot be set up.
    """
    host, port = server
    try:
        address = ipaddress.ip_address(host)
    except ValueError as exc:
        raise OSError(f"{host!r} is not an IP address") from exc
    if not address.is_loopback:
        raise OSError(f"{host} is not a loopback address")
    family, loopback = (
        (socket.AF_INET6, "::1") if address.version == 6 else (socket.AF_INET, "127.0.0.1")
    )
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        sock.bind((loopback, 0))
        sock.connect((host, port))
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


class _Flight:
    """One query waiting for its reply."""

    __slots__ = ("index", "query_id", "question", "tries", "wire")

    def __init__(self, index: int, query_id: int, question: bytes, recursion: bool) -> None:
        self.index = index
        self.query_id = query_id
        self.wire = query_wire(question, query_id, recursion_desired=recursion)
        self.question = question.lower()
        self.tries = 0


def checked_window(window: int, timeout: float) -> int:
    """``window`` capped at :data:`WINDOW_MAX`, once it and ``timeout`` are checked.

    Raises:
        ValueError: ``window`` is below 1 or ``timeout`` not above 0.
    """
    if window < 1:
        raise ValueError(f"window must be at least 1, not {window}")
    if not timeout > 0:
        raise ValueError(f"timeout must be above 0 seconds, not {timeout}")
    return min(window, WINDOW_MAX)  # ids must stay unique in flight, and easy to draw


def exchange_many(
    sock: socket.socket,
    questions: Sequence[bytes],
    *,
    timeout: float,
    window: int = PIPELINE_WINDOW,
    recursion_desired: bool = False,
) -> list[bytes | None]:
    """Ask each question (:func:`question_wire`) over ``sock``, a connected non-blocking
    UDP socket (:func:`udp_socket`, :func:`loopback_socket`), many in flight.

    Args:
        sock: the socket; it stays open (a caller may reuse it).
        questions: the question sections to ask.
        timeout: seconds to wait for each copy of a query.
        window: the most queries in flight at once (at most :data:`WINDOW_MAX`).
        recursion_desired: set RD (a recursive resolver answers only then).

    Returns:
        Per question, in the order given, the reply's wire bytes or None.

    Raises:
        ValueError: ``window`` is below 1 or ``timeout`` not above 0.
    """
    window = checked_window(window, timeout)
    results: list[bytes | None] = [None] * len(questions)
    if questions:
        with selectors.DefaultSelector() as selector:
            selector.register(sock, selectors.EVENT_READ)
            _pipeline(sock, selector, questions, results, (timeout, window, recursion_desired))
    return results


def _send(
    sock: socket.socket,
    flight: _Flight,
    deadlines: deque[tuple[float, _Flight, int]],
    timeout: float,
) -> None:
    flight.tries += 1
    with contextlib.suppress(OSError):  # buffer full, or an earlier ICMP error: count it lost
        sock.send(flight.wire)
    deadlines.append((time.monotonic() + timeout, flight, flight.tries))


def _pipeline(
    sock: socket.socket,
    selector: selectors.BaseSelector,
    questions: Sequence[bytes],
    results: list[bytes | None],
    settings: tuple[float, int, bool],
) -> None:
    timeout, window, recursion = settings
    pending: dict[int, _Flight] = {}
    # Every copy sent, in the order sent; with one timeout for all, also in deadline order.
    deadlines: deque[tuple[float, _Flight, int]] = deque()
    upcoming = 0
    while True:
        while upcoming < len(questions) and len(pending) < window:
            query_id = secrets.randbits(16)
            while query_id in pending:
                query_id = secrets.randbits(16)
            flight = _Flight(upcoming, query_id, questions[upcoming], recursion)
            pending[query_id] = flight
            _send(sock, flight, deadlines, timeout)
            upcoming += 1
        if not pending:
            return
        now = time.monotonic()
        while deadlines and deadlines[0][0] <= now:
            _, flight, tries = deadlines.popleft()
            if pending.get(flight.query_id) is not flight or flight.tries != tries:
                continue  # answered, or sent again since
            if tries >= QUERY_TRIES:
                del pending[flight.query_id]  # its result stays None
            else:
                _send(sock, flight, deadlines, timeout)
        if not pending:
            continue
        wait = max(0.0, deadlines[0][0] - now)
        if selector.select(wait):
            _receive(sock, pending, results)


def _receive(sock: socket.socket, pending: dict[int, _Flight], results: list[bytes | None]) -> None:
    while True:
        try:
            reply = sock.recv(DNS_MESSAGE_MAX_OCTETS)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # e.g. ICMP port unreachable: the deadlines deal with it
            return
        if len(reply) < HEADER_OCTETS or not reply[2] & 0x80:
            continue
        flight = pending.get(int.from_bytes(reply[:2], "big"))
        if flight is None:
            continue  # a late duplicate, or not ours
        question = flight.question
        end = HEADER_OCTETS + len(question)
        if reply[4:6] != _ONE_QUESTION or reply[HEADER_OCTETS:end].lower() != question:
            continue
        results[flight.index] = reply
        del pending[flight.query_id]
