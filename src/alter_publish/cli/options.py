"""The options and arguments commands share, and the few edge parsers behind them.

Parsing stays here, at the edge: a command turns its options into values with these
helpers, then calls one library function.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Annotated

import typer

from alter_publish.definition.workspace import find_definition, workspace_for
from alter_publish.dns.hints import RootHints, default_root_hints, read_root_hints
from alter_publish.errors import UsageError
from alter_publish.format.envelope import CLOCK_SKEW_SECONDS
from alter_publish.keys.pem import passphrase_from_env
from alter_publish.keys.store import KeyStore
from alter_publish.pipeline.clock import SIMULATED_TIME_FLAG, check_now

NowOption = Annotated[
    int | None,
    typer.Option("--now", help="Unix time to act at (default: the system clock).", min=0),
]
SimulatedTimeOption = Annotated[
    bool,
    typer.Option(
        SIMULATED_TIME_FLAG,
        help=f"Write at a --now more than {CLOCK_SKEW_SECONDS}s from the system clock, or with "
        "a clock before this release (tests, rehearsals): outputs may not be valid now.",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
OutOption = Annotated[
    Path | None,
    typer.Option("--out", help="Output directory (default: build/ of the zone's workspace)."),
]
KeysOption = Annotated[
    Path | None,
    typer.Option("--keys", help="Key store directory (default: keys/ of the zone's workspace)."),
]
TrustAnchorOption = Annotated[
    Path | None,
    typer.Option(
        "--trust-anchor",
        help="File of DS or DNSKEY records to validate DNSSEC to (e.g. build/<zone>.ds).",
    ),
]
RootHintsOption = Annotated[
    Path | None,
    typer.Option(
        "--root-hints",
        help="Root name servers (named.root syntax) to walk the chain of trust from, when "
        "--server is neither a recursive resolver nor serves the trust anchor's zone "
        "(default: IANA's, shipped with alter-publish).",
    ),
]
ZonesDirOption = Annotated[
    Path | None,
    typer.Option(
        "--zones",
        help="Where zone definitions live (default: zones/ here or in the nearest parent "
        "directory that has the zone's definition).",
    ),
]
ZoneNameOption = Annotated[
    str,
    typer.Option(
        "--zone",
        help="The zone: a name (example.com, found as zones/<name>.yaml) or its definition file.",
    ),
]
ZonesArgument = Annotated[
    list[Path] | None,
    typer.Argument(
        help="Zone definitions or zone names (default: zones/*.yaml, here or in the nearest "
        "parent directory having any).",
        show_default=False,
    ),
]
ZoneArgument = Annotated[
    str, typer.Argument(help="The zone: a name (example.com) or its definition file.")
]
HandleArgument = Annotated[str, typer.Argument(help="The handle, e.g. ~blake.")]
ServerOption = Annotated[
    str, typer.Option("--server", help="HOST:PORT of the zone's primary name server.")
]
TsigKeyOption = Annotated[
    Path | None,
    typer.Option("--tsig-key", help="TSIG key file in BIND format (as tsig-keygen writes it)."),
]
PublishTimeoutOption = Annotated[
    float,
    typer.Option("--timeout", help="Seconds to wait for each answer from the server.", min=0.1),
]
TtlOption = Annotated[int, typer.Option("--ttl", help="TTL printed on the DS.", min=0)]


def clock_now(value: int | None) -> int:
    """The time a command that only reads acts at: ``--now``, else the system clock."""
    return int(time.time()) if value is None else value


def write_now(value: int | None, allow_simulated: bool) -> int:
    """The time a command that writes acts at; refuses one the clock does not vouch for.

    Raises:
        UsageError: ``--now`` is far from the system clock without the simulated-time flag.
    """
    return check_now(value, int(time.time()), allow_simulated=allow_simulated)


def keystore(root: Path) -> KeyStore:
    """The key store at ``root``, unlocked with the passphrase of the environment, if any."""
    return KeyStore(root=root, passphrase=passphrase_from_env(os.environ))


def root_hints_from(path: Path | None) -> RootHints:
    """The root hints in ``path``, or the IANA ones shipped with alter-publish.

    Raises:
        UsageError: the file is missing or not valid.
    """
    return read_root_hints(path) if path is not None else default_root_hints()


def parse_hostport(text: str) -> tuple[str, int]:
    """``--server HOST:PORT`` as an address and port (a host name is looked up here).

    Raises:
        UsageError: not HOST:PORT, or the host cannot be found.
    """
    host, colon, port = text.rpartition(":")
    host = host.strip("[]")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--server {text!r} is not HOST:PORT")
    try:  # dnspython queries need an address: look a host name up here, at the edge
        address = socket.getaddrinfo(host, int(port), proto=socket.IPPROTO_UDP)[0][4][0]
    except (OSError, UnicodeError) as exc:
        raise UsageError(f"--server {text!r}: cannot find host {host!r} ({exc})") from exc
    return str(address), int(port)


def definition_and_keys(
    zone: str, zones_dir: Path | None, keys: Path | None
) -> tuple[Path, KeyStore]:
    """The zone's definition file (``--zone`` as a name or a path) and the key store of
    its workspace (``--keys`` when given)."""
    definition = find_definition(zone, zones_dir)
    return definition, keystore(workspace_for([definition]).keys(keys))
