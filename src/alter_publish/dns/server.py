"""Embedded loopback authoritative DNS server (UDP and TCP on one port).

:class:`ZoneServer` is the transport: it indexes its zones once into a
:class:`~alter_publish.dns.zoneindex.ZoneIndex` and answers every query through a
:class:`~alter_publish.dns.zoneindex.ResponseCache` over the pure
:func:`~alter_publish.dns.zoneindex.answer`, where all of the DNS logic lives
(lookups, referrals, NSEC and NSEC3 denial proofs, truncation). Any other
:class:`Answerer` can take the cache's place (the wire-level
:class:`~alter_publish.dns.wirezone.WireZone` for large zones). The server
only moves bytes: one thread runs a plain ``recvfrom`` loop for UDP, and one
thread runs :class:`~alter_publish.dns.tcpservice.TcpService`, which shares the TCP
connection slots under :class:`~alter_publish.dns.tcpservice.TcpLimits` (a deadline
per message, an idle limit that shrinks as the slots fill, the longest-waiting
connection evicted for a new one) so that slow clients cannot starve it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Sequence
from types import TracebackType
from typing import Final

import dns.zone

from alter_publish.dns.answerers import Answerer
from alter_publish.dns.tcpservice import TcpLimits, TcpService
from alter_publish.dns.wire import DNS_MESSAGE_MAX_OCTETS
from alter_publish.dns.zoneindex import ResponseCache, ZoneIndex
from alter_publish.errors import ServeError

__all__ = [
    "UDP_PAYLOAD_MAX_OCTETS",
    "TcpLimits",
    "ZoneServer",
]

logger = logging.getLogger(__name__)

#: The largest UDP response the server sends, whatever the client offers.
UDP_PAYLOAD_MAX_OCTETS: Final = 4096
#: listen() backlog of the TCP socket.
TCP_BACKLOG: Final = 128
#: How many UDP+TCP port pairs to try when the OS picks the port.
BIND_ATTEMPTS: Final = 8
#: Receive buffer asked for on the UDP socket (bursts from load generators).
UDP_RECV_BUFFER_OCTETS: Final = 1 << 20
#: How long stop() waits for each serving thread to finish.
THREAD_JOIN_SECONDS: Final = 2.0
#: How often wait() wakes up (so that KeyboardInterrupt is seen promptly).
WAIT_POLL_SECONDS: Final = 0.5


class ZoneServer:
    """Authoritative server for one or more dns.zone.Zone objects, UDP and TCP on the same port.

    Use as a context manager (``with ZoneServer(zones) as server:``), or call
    :meth:`start` and :meth:`stop`. The zones are indexed once, when the
    server is created; later changes to the zone objects are not seen. Given an
    ``answerer`` (:func:`~alter_publish.dns.answerers.answerer_for`), the server
    answers through it instead; :meth:`load_answerer` swaps it while the server runs.
    """

    def __init__(
        self,
        zones: Sequence[dns.zone.Zone] = (),
        *,
        address: str = "127.0.0.1",
        port: int = 0,
        answerer: Answerer | None = None,
        tcp_limits: TcpLimits | None = None,
    ) -> None:
        """Index the zones; nothing is bound until :meth:`start`.

        Args:
            zones: the zones to serve; origins must be distinct.
            address: the IP address (or host name) to bind.
            port: the UDP and TCP port; 0 lets the OS pick a free one.
            answerer: answers every query instead of the indexed ``zones``
                (which may then be empty; :attr:`index` still holds them).
            tcp_limits: TCP connection slots and deadlines (default: :class:`TcpLimits`).

        Raises:
            ServeError: a zone has no origin or SOA, or two zones share an origin.
        """
        self._cache = ResponseCache(ZoneIndex.build(zones))
        self._answerer: Answerer = self._cache if answerer is None else answerer
        self._host = address
        self._port = port
        self._lock = threading.Lock()
        self._udp: socket.socket | None = None
        self._tcp: socket.socket | None = None
        self._bound: tuple[str, int] | None = None
        self._threads: list[threading.Thread] = []
        self._tcp_limits = TcpLimits() if tcp_limits is None else tcp_limits
        self._tcp_service: TcpService | None = None
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()

    @property
    def index(self) -> ZoneIndex:
        """The lookup structure the server answers from."""
        return self._cache.index

    def load_answerer(self, answerer: Answerer) -> None:
        """Answer through ``answerer`` from now on (queries in flight finish on the old one)."""
        self._answerer = answerer

    def _respond(self, wire: bytes, max_udp: int | None) -> bytes | None:
        return self._answerer.answer(wire, max_udp)

    @property
    def address(self) -> tuple[str, int]:
        """The ``(host, port)`` the server is (or was last) bound to.

        Raises:
            ServeError: the server was never started.
        """
        if self._bound is None:
            raise ServeError("server not started", where=self._where(self._port))
        return self._bound

    def _where(self, port: int) -> str:
        return f"{self._host}:{port}"

    def start(self) -> None:
        """Bind UDP, then TCP on the same port, and serve in daemon threads.

        Raises:
            ServeError: the server is already running, the address does not
                resolve, or a socket cannot be bound.
        """
        with self._lock:
            if not self._stopped.is_set():
                raise ServeError("server already running", where=self._where(self._port))
            udp, tcp = self._bind()
            host, port = udp.getsockname()[:2]
            self._udp, self._tcp = udp, tcp
            self._bound = (str(host), int(port))
            self._stopping.clear()
            self._stopped.clear()
            service = TcpService(tcp, self._respond, self._tcp_limits)
            self._tcp_service = service
            self._threads = [
                threading.Thread(
                    target=self._serve_udp, args=(udp,), name=f"dns-udp-{port}", daemon=True
                ),
                threading.Thread(target=service.run, name=f"dns-tcp-{port}", daemon=True),
            ]
            for thread in self._threads:
                thread.start()
            logger.debug("serving %d zone(s) on %s:%d", len(self.index.zones), host, port)

    def _bind(self) -> tuple[socket.socket, socket.socket]:
        try:
            infos = socket.getaddrinfo(
                self._host, self._port, type=socket.SOCK_DGRAM, flags=socket.AI_PASSIVE
            )
        except (OSError, UnicodeError) as exc:
            raise ServeError(
                f"cannot resolve bind address: {exc}", where=self._where(self._port)
            ) from exc
        family, _, _, _, sockaddr = infos[0]
        attempts = BIND_ATTEMPTS if self._port == 0 else 1
        for attempt in range(attempts):
            udp = socket.socket(family, socket.SOCK_DGRAM)
            try:
                with contextlib.suppress(OSError):
                    udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, UDP_RECV_BUFFER_OCTETS)
                udp.bind(sockaddr)
            except OSError as exc:
                udp.close()
                raise ServeError(
                    f"cannot bind UDP socket: {exc.strerror or exc}",
                    where=self._where(self._port),
                ) from exc
            port = int(udp.getsockname()[1])
            tcp = socket.socket(family, socket.SOCK_STREAM)
            try:
                tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                tcp.bind((sockaddr[0], port, *sockaddr[2:]))
                tcp.listen(TCP_BACKLOG)
            except OSError as exc:
                tcp.close()
                udp.close()
                if attempt + 1 < attempts:
                    logger.debug("TCP port %d taken, trying another", port)
                    continue
                raise ServeError(
                    f"cannot bind TCP socket: {exc.strerror or exc}", where=self._where(port)
                ) from exc
            return udp, tcp
        raise ServeError("no free port pair found", where=self._where(self._port))

    def stop(self) -> None:
        """Close the sockets and join the serving threads. Idempotent."""
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopping.set()
            udp, tcp, bound = self._udp, self._tcp, self._bound
            if udp is None or tcp is None or bound is None:  # pragma: no cover - not started
                self._stopped.set()
                return
            wake_host = _wake_host(bound[0], udp.family)
            # Wake the UDP loop: a datagram to ourselves, and shutdown() for good measure.
            with (
                contextlib.suppress(OSError),
                socket.socket(udp.family, socket.SOCK_DGRAM) as waker,
            ):
                waker.sendto(b"", (wake_host, bound[1]))
            with contextlib.suppress(OSError):
                udp.shutdown(socket.SHUT_RDWR)
            # The TCP loop closes every connection and returns.
            if self._tcp_service is not None:
                self._tcp_service.wake()
            for thread in self._threads:
                thread.join(THREAD_JOIN_SECONDS)
            udp.close()
            tcp.close()
            self._udp = self._tcp = None
            self._tcp_service = None
            self._threads = []
            self._stopped.set()
            logger.debug("stopped serving on %s:%d", *bound)

    def wait(self) -> None:
        """Block until :meth:`stop` is called from another thread.

        Returns at once if the server is not running. A KeyboardInterrupt in
        the waiting thread propagates (the caller then calls :meth:`stop`).
        """
        while not self._stopped.wait(WAIT_POLL_SECONDS):
            continue

    def __enter__(self) -> ZoneServer:
        """Start the server.

        Raises:
            ServeError: see :meth:`start`.
        """
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop the server."""
        self.stop()

    # -- serving threads ----------------------------------------------------

    def _serve_udp(self, sock: socket.socket) -> None:
        respond = self._respond
        stopping = self._stopping
        recvfrom = sock.recvfrom
        sendto = sock.sendto
        while True:
            try:
                wire, peer = recvfrom(DNS_MESSAGE_MAX_OCTETS)
            except OSError:
                if stopping.is_set() or sock.fileno() < 0:
                    return
                logger.debug("UDP receive failed", exc_info=True)
                continue
            if stopping.is_set():
                return
            try:
                reply = respond(wire, UDP_PAYLOAD_MAX_OCTETS)
                if reply is not None:
                    sendto(reply, peer)
            except Exception:  # keep serving whatever happens to one packet
                logger.debug("UDP reply to %s failed", peer, exc_info=True)


def _wake_host(host: str, family: int) -> str:
    """The address to reach a socket bound to ``host`` (wildcards -> loopback)."""
    if host in ("0.0.0.0", ""):  # noqa: S104 - comparing, not binding
        return "127.0.0.1"
    if family == socket.AF_INET6 and host == "::":
        return "::1"
    return host
