"""``serve``: the embedded authoritative name server over zone files.

Apart from ``resolve`` so that starting it imports only what serving needs: a server
of a 100,000-handle zone should answer seconds after it starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from alter_publish import pipeline
from alter_publish.dns.server import ZoneServer
from alter_publish.dns.tcpservice import (
    CONNECTIONS_RANGE,
    IDLE_TIMEOUT_RANGE_SECONDS,
    IO_TIMEOUT_RANGE_SECONDS,
    TCP_CONNECTIONS_MAX,
    TCP_IDLE_TIMEOUT_SECONDS,
    TCP_IO_TIMEOUT_SECONDS,
    TcpLimits,
)

MILLISECONDS_PER_SECOND = 1000
TCP_IO_TIMEOUT_MILLISECONDS = round(TCP_IO_TIMEOUT_SECONDS * MILLISECONDS_PER_SECOND)
TcpMaxConnectionsOption = Annotated[
    int,
    typer.Option(
        "--tcp-max-connections",
        help="TCP connections served at once; when all are taken, a new one replaces "
        "the connection that has waited longest.",
        min=CONNECTIONS_RANGE[0],
        max=CONNECTIONS_RANGE[1],
    ),
]
TcpIoTimeoutOption = Annotated[
    int,
    typer.Option(
        "--tcp-io-timeout",
        help="Milliseconds a client has to send one whole query, and to read one whole "
        "reply, over TCP (Knot's tcp-io-timeout).",
        min=round(IO_TIMEOUT_RANGE_SECONDS[0] * MILLISECONDS_PER_SECOND),
        max=round(IO_TIMEOUT_RANGE_SECONDS[1] * MILLISECONDS_PER_SECOND),
    ),
]
TcpIdleTimeoutOption = Annotated[
    float,
    typer.Option(
        "--tcp-idle-timeout",
        help="Seconds a TCP connection may wait between queries while half the slots are "
        "free; shorter as they fill (Knot's tcp-idle-timeout, unbound's shrinking).",
        min=IDLE_TIMEOUT_RANGE_SECONDS[0],
        max=IDLE_TIMEOUT_RANGE_SECONDS[1],
    ),
]


def serve(
    zone_files: Annotated[list[Path], typer.Argument(help="Zone files to serve.")],
    address: Annotated[str, typer.Option("--address", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port (0: any free port).", min=0, max=65535)
    ] = 0,
    tcp_max_connections: TcpMaxConnectionsOption = TCP_CONNECTIONS_MAX,
    tcp_io_timeout: TcpIoTimeoutOption = TCP_IO_TIMEOUT_MILLISECONDS,
    tcp_idle_timeout: TcpIdleTimeoutOption = TCP_IDLE_TIMEOUT_SECONDS,
) -> None:
    """Serve zone files with the embedded authoritative server (UDP and TCP) until Ctrl-C."""
    limits = TcpLimits(
        max_connections=tcp_max_connections,
        io_timeout_seconds=tcp_io_timeout / MILLISECONDS_PER_SECOND,
        idle_timeout_seconds=tcp_idle_timeout,
    )
    served = pipeline.load_served_zones(zone_files)
    with ZoneServer(
        answerer=served.answerer, address=address, port=port, tcp_limits=limits
    ) as server:
        host, bound = server.address
        names = ", ".join(served.origins)
        typer.echo(f"serving {names} on {host}:{bound} (udp+tcp); Ctrl-C to stop", err=True)
        try:
            server.wait()
        except KeyboardInterrupt:
            typer.echo("stopped", err=True)
