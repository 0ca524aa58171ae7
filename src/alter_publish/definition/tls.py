"""The ``tls:`` of a definition: a resolver endpoint's certificate or public key, read
at the edge into the TLSA record ``sign`` publishes (DANE, RFC 6698 and RFC 7671).

``tls: {cert: certs/mcp.pem}`` (or ``public_key:``) next to a handle's ``resolver:``,
or under the zone's ``tls:`` keyed by ``host`` or ``host:port``; optional ``usage``,
``selector`` and ``matching`` (default ``3 1 1``: DANE-EE, the SubjectPublicKeyInfo,
SHA-256). Paths are relative to the definition file.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes

from alter_publish.definition.loader import Mark, Node
from alter_publish.format.tlsa import (
    DEFAULT_MATCHING,
    DEFAULT_SELECTOR,
    DEFAULT_USAGE,
    Selector,
    TLSAData,
    association_data,
    tlsa_owner,
)

__all__ = [
    "DEFAULT_TLS_PORT",
    "TLSASet",
    "TLSEndpoint",
    "TLSSpec",
    "endpoint_problem",
    "read_endpoints",
    "read_tls",
    "read_tls_node",
    "resolver_endpoint",
    "tlsa_sets",
]

#: Where a problem is told: ``problem(mark, what)``.
Problem = Callable[[Mark, str], None]

DEFAULT_TLS_PORT = 443
TLS_FIELDS = frozenset({"cert", "public_key", "usage", "selector", "matching"})
#: A certificate or key file larger than this is not one.
TLS_FILE_MAX_OCTETS = 1024 * 1024
_HOST = re.compile(r"(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)+")
_DIGITS = re.compile(r"[0-9]{1,5}")


@dataclass(frozen=True, slots=True)
class TLSSpec:
    """A TLS certificate or public key the definition names, and its TLSA rdata.

    Attributes:
        kind: ``cert`` or ``public_key`` (the field written).
        file: the path as written (relative to the definition's directory).
        path: the file, resolved.
        record: the TLSA rdata computed from the file.
        where: ``file:line:col`` of the ``tls`` field.
    """

    kind: str
    file: str
    path: Path
    record: TLSAData
    where: str = field(compare=False)

    def to_mapping(self) -> dict[str, Any]:
        """YAML-ready form (the defaults left out)."""
        mapping: dict[str, Any] = {self.kind: self.file}
        for name, value, default in (
            ("usage", self.record.usage, DEFAULT_USAGE),
            ("selector", self.record.selector, DEFAULT_SELECTOR),
            ("matching", self.record.matching, DEFAULT_MATCHING),
        ):
            if value != default:
                mapping[name] = value
        return mapping


@dataclass(frozen=True, slots=True)
class TLSEndpoint:
    """A zone-level ``tls:`` entry: ``host`` (absolute, lowercase) and ``port``."""

    host: str
    port: int
    tls: TLSSpec

    @property
    def key(self) -> str:
        """As written under ``tls:``: ``host`` (port 443) or ``host:port``."""
        host = self.host.rstrip(".")
        return host if self.port == DEFAULT_TLS_PORT else f"{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class TLSASet:
    """The TLSA rrset of one endpoint, from every entry that names it.

    Attributes:
        owner: ``_<port>._tcp.<host>.``.
        host: the endpoint's host (absolute).
        port: its TCP port.
        records: the rdatas, sorted, each once.
        files: the files they came from.
        inside: True when ``owner`` is in the zone (``sign`` publishes it).
    """

    owner: str
    host: str
    port: int
    records: tuple[TLSAData, ...]
    files: tuple[Path, ...]
    inside: bool

    def lines(self, ttl: int) -> tuple[str, ...]:
        """Master-file lines, one per record."""
        return tuple(f"{self.owner} {ttl} IN TLSA {record.to_text()}" for record in self.records)

    def outside_warning(self, ttl: int) -> str:
        """What ``sign`` says of a set it cannot publish: where, and the records."""
        return (
            f"TLSA for {self.host.rstrip('.')}:{self.port} is outside the zone: publish it "
            f"in the zone of {self.host} yourself: {' / '.join(self.lines(ttl))}"
        )


def endpoint_problem(key: str) -> tuple[str, int] | str:
    """``host`` or ``host:port`` as a zone-level ``tls:`` key: ``(host, port)`` with the
    host absolute and lowercase, or what is wrong with it."""
    host, colon, port_text = key.strip().lower().rpartition(":")
    if not colon:
        host, port_text = port_text, str(DEFAULT_TLS_PORT)
    if not _DIGITS.fullmatch(port_text) or not 0 < int(port_text) < 65536:
        return f"port {port_text!r} is not 1..65535"
    absolute = host if host.endswith(".") else host + "."
    if not _HOST.fullmatch(absolute) or len(absolute) > 254:
        return f"{host!r} is not a host name (TLSA lives at _<port>._tcp.<host>)"
    if absolute.rstrip(".").replace(".", "").isdigit():
        return f"{host!r} is an IP address: TLSA needs a host name"
    return absolute, int(port_text)


def _small_int(node: Node | None, name: str, allowed: tuple[int, ...], default: int) -> int | str:
    if node is None:
        return default
    value = node.value
    if isinstance(value, bool) or not isinstance(value, int) or value not in allowed:
        return f"bad tls {name} {value!r}: must be one of {', '.join(map(str, allowed))}"
    return value


def _read_file(path: Path) -> bytes | str:
    try:
        with path.open("rb") as handle:
            data = handle.read(TLS_FILE_MAX_OCTETS + 1)
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror}"
    if len(data) > TLS_FILE_MAX_OCTETS:
        return f"{path} is over {TLS_FILE_MAX_OCTETS} bytes: not a certificate or key"
    return data


def _selected(kind: str, data: bytes, path: Path, selector: int) -> bytes | str:
    """The certificate's DER (selector 0) or the SubjectPublicKeyInfo DER (selector 1)."""
    public: PublicKeyTypes
    if kind == "cert":
        from cryptography import x509  # here: 10 ms of every start, for TLSA records only

        try:
            certificate = (
                x509.load_pem_x509_certificate(data)
                if b"-----BEGIN" in data
                else x509.load_der_x509_certificate(data)
            )
        except ValueError:
            return f"{path} is not an X.509 certificate (PEM or DER)"
        if selector == Selector.CERT:
            return certificate.public_bytes(serialization.Encoding.DER)
        public = certificate.public_key()
    else:
        if selector == Selector.CERT:
            return "selector 0 (the whole certificate) needs 'cert', not 'public_key'"
        try:
            public = (
                serialization.load_pem_public_key(data)
                if b"-----BEGIN" in data
                else serialization.load_der_public_key(data)
            )
        except (ValueError, TypeError):
            return f"{path} is not a public key (PEM or DER SubjectPublicKeyInfo)"
    return public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def read_tls(node: Node, base: Path, fields: dict[str, Node]) -> TLSSpec | list[tuple[Node, str]]:
    """Read a ``tls:`` mapping (``fields``, its checked keys): the file it names, relative
    to ``base``, into the TLSA rdata; or the problems, each with the node it is at."""
    problems: list[tuple[Node, str]] = []
    named = [kind for kind in ("cert", "public_key") if kind in fields]
    if len(named) != 1:
        return [(node, "tls needs exactly one of 'cert' or 'public_key' (a PEM file)")]
    kind = named[0]
    file_node = fields[kind]
    values: list[int] = []
    for name, allowed, default in (
        ("usage", (0, 1, 2, 3), DEFAULT_USAGE),
        ("selector", (0, 1), DEFAULT_SELECTOR),
        ("matching", (0, 1, 2), DEFAULT_MATCHING),
    ):
        checked = _small_int(fields.get(name), name, allowed, int(default))
        if isinstance(checked, str):
            problems.append((fields[name], checked))
        else:
            values.append(checked)
    if not isinstance(file_node.value, str) or not file_node.value.strip():
        problems.append((file_node, f"tls {kind} must be a file path"))
    if problems:
        return problems
    usage, selector, matching = values
    written = str(file_node.value).strip()
    path = (base / written).resolve()
    data = _read_file(path)
    if isinstance(data, str):
        return [(file_node, f"tls {kind}: {data}")]
    selected = _selected(kind, data, path, selector)
    if isinstance(selected, str):
        return [(file_node, f"tls {kind}: {selected}")]
    record = TLSAData(usage, selector, matching, association_data(selected, matching))
    return TLSSpec(kind, written, path, record, str(node.mark))


def resolver_endpoint(resolver: str) -> tuple[str, int] | str:
    """The ``(host, port)`` a checked ``https`` resolver URI names (host absolute), or
    why it cannot carry ``tls``."""
    parts = urllib.parse.urlsplit(resolver)
    if parts.scheme.lower() != "https":
        return f"tls needs an https resolver, not {parts.scheme}"
    found = endpoint_problem(f"{parts.hostname or ''}:{parts.port or DEFAULT_TLS_PORT}")
    return found


def read_tls_node(node: Node, base: Path, problem: Problem) -> TLSSpec | None:
    """A ``tls:`` value (a mapping), problems told to ``problem``."""
    if not node.is_mapping:
        problem(node.mark, "tls must be a mapping like {cert: certs/mcp.pem}")
        return None
    fields: dict[str, Node] = node.value
    bad = False
    for key in fields:
        if key not in TLS_FIELDS:
            problem(
                node.key_marks[key],
                f"unknown field {key!r} in tls (allowed: {', '.join(sorted(TLS_FIELDS))})",
            )
            bad = True
    if bad:
        return None
    found = read_tls(node, base, fields)
    if isinstance(found, TLSSpec):
        return found
    for at, what in found:
        problem(at.mark, what)
    return None


def read_endpoints(node: Node, base: Path, problem: Problem) -> tuple[TLSEndpoint, ...]:
    """The zone-level ``tls:`` mapping of ``host[:port]`` to a tls value."""
    if not node.is_mapping:
        problem(node.mark, "tls must be a mapping of host (or host:port) to {cert: file}")
        return ()
    endpoints: list[TLSEndpoint] = []
    seen: dict[tuple[str, int], str] = {}
    for key, value in node.value.items():
        mark = node.key_marks[key]
        endpoint = endpoint_problem(key)
        if isinstance(endpoint, str):
            problem(mark, f"tls endpoint {key!r}: {endpoint}")
            continue
        if endpoint in seen:
            problem(mark, f"tls endpoint {key!r} written twice (first at {seen[endpoint]})")
            continue
        seen[endpoint] = str(mark)
        spec = read_tls_node(value, base, problem)
        if spec is not None:
            endpoints.append(TLSEndpoint(endpoint[0], endpoint[1], spec))
    return tuple(endpoints)


def tlsa_sets(
    origin: str,
    endpoints: Iterable[TLSEndpoint],
    resolvers: Iterable[tuple[str, TLSSpec]],
) -> tuple[TLSASet, ...]:
    """The TLSA rrset of each endpoint: the zone-level ``endpoints`` and the handles'
    ``(resolver URI, tls)``; one set per owner, sorted by owner."""
    grouped: dict[tuple[str, int], list[TLSSpec]] = {}
    for endpoint in endpoints:
        grouped.setdefault((endpoint.host, endpoint.port), []).append(endpoint.tls)
    for resolver, spec in resolvers:
        found = resolver_endpoint(resolver)
        if not isinstance(found, str):
            grouped.setdefault(found, []).append(spec)
    sets = []
    for (host, port), specs in grouped.items():
        owner = tlsa_owner(host, port)
        sets.append(
            TLSASet(
                owner=owner,
                host=host,
                port=port,
                records=tuple(sorted({spec.record for spec in specs})),
                files=tuple(sorted({spec.path for spec in specs})),
                inside=owner.endswith(f".{origin}."),
            )
        )
    return tuple(sorted(sets, key=lambda found: found.owner))
