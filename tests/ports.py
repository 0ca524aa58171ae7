"""A loopback port for tests that start servers on a fixed port."""

from __future__ import annotations

import socket


def free_port(*addresses: str) -> int:
    """A port free for UDP and TCP on each of ``addresses`` (127.0.0.1 when none) as it is
    chosen: a UDP port the kernel picked, tried with both protocols on every address (a
    UDP probe alone once handed out a port whose TCP side another socket held)."""
    hosts = addresses or ("127.0.0.1",)
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind((hosts[0], 0))
            port = int(probe.getsockname()[1])
        if all(port_free(host, port) for host in hosts):
            return port
    raise RuntimeError(f"no port free for UDP and TCP on {', '.join(hosts)}")


def port_free(host: str, port: int) -> bool:
    """Whether ``port`` on ``host`` can be bound for UDP and for TCP now (as a server
    binds them: with ``SO_REUSEADDR``)."""
    for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
        with socket.socket(socket.AF_INET, kind) as trial:
            trial.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                trial.bind((host, port))
            except OSError:
                return False
    return True
