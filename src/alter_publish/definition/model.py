"""Zone definitions as frozen dataclasses; ``from_node`` gathers every problem at once."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dns.name

from alter_publish.definition.entries import load_definition_text
from alter_publish.definition.loader import Mark, Node, load_yaml, load_yaml_text
from alter_publish.definition.logspec import LogSpec, read_log_spec
from alter_publish.definition.tls import (
    TLSASet,
    TLSEndpoint,
    TLSSpec,
    read_endpoints,
    read_tls_node,
    resolver_endpoint,
    tlsa_sets,
)
from alter_publish.definition.values import (
    NEVER,
    format_duration,
    nsec3_iterations,
    nsec3_salt,
    parse_duration,
    resolver_problem,
)
from alter_publish.definition.values import NSEC3_ITERATIONS_MAX as NSEC3_ITERATIONS_MAX
from alter_publish.definition.values import NSEC3_SALT_MAX_OCTETS as NSEC3_SALT_MAX_OCTETS
from alter_publish.errors import DefinitionError, HandleError
from alter_publish.format.envelope import RESERVED_TAGS, TAG_NAME, TAG_VALUE, Tags
from alter_publish.format.handles import Handle, normalize_domain, parse_handle

TTL_MAX_SECONDS = 2**31 - 1
SOA_TIMER_MAX_SECONDS = 2**31 - 1
DEFAULT_TTL_SECONDS = 3600
DEFAULT_LIFETIME_SECONDS = 30 * 86400
DEFAULT_RENEW_BEFORE_SECONDS = 7 * 86400
DEFAULT_SOA_REFRESH_SECONDS = 7200
DEFAULT_SOA_RETRY_SECONDS = 3600
DEFAULT_SOA_EXPIRE_SECONDS = 1209600
DEFAULT_SOA_MINIMUM_SECONDS = 300
DEFAULT_SIGNATURE_VALIDITY_SECONDS = 14 * 86400
DEFAULT_SIGNATURE_REFRESH_SECONDS = 5 * 86400
DEFAULT_PROPAGATION_DELAY_SECONDS = 3600
DEFAULT_PARENT_DS_TTL_SECONDS = 86400
DEFAULT_PARENT_PROPAGATION_DELAY_SECONDS = 3600
SIGNATURE_VALIDITY_MIN_SECONDS = 2 * 3600
SIGNATURE_VALIDITY_MAX_SECONDS = 3660 * 86400  # BIND's limit; RRSIG times wrap at 2**32

_HOSTNAME = re.compile(r"(?:[a-z0-9_-]{1,63}\.)+")

ZONE_FIELDS = frozenset(
    {"zone", "ttl", "soa", "ns", "hosts", "envelopes", "dnssec", "handles", "tls", "log"}
)
DNSSEC_FIELDS = frozenset(
    {"enabled", "denial", "nsec3", "signature_validity", "refresh", "rollover"}
)
ROLLOVER_FIELDS = frozenset({"propagation_delay", "parent_ds_ttl", "parent_propagation_delay"})
NSEC3_FIELDS = frozenset({"iterations", "salt"})
DENIAL_METHODS = ("nsec", "nsec3")
SOA_FIELDS = frozenset({"mname", "rname", "refresh", "retry", "expire", "minimum"})
ENVELOPE_FIELDS = frozenset({"lifetime", "renew_before"})
HANDLE_FIELDS = frozenset({"handle", "resolver", "lifetime", "ttl", "tags", "tls"})


class _Problems:
    """Collects ``file:line:col: what`` lines; ``raise_if_any`` raises them all at once."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, mark: Mark, what: str) -> None:
        self.lines.append(f"{mark}: {what}")

    def raise_if_any(self) -> None:
        if not self.lines:
            return
        first = self.lines[0]
        more = len(self.lines) - 1
        raise DefinitionError(
            f"{first} (+{more} more problem{'s' if more > 1 else ''})" if more else first,
            reasons=tuple(self.lines),
        )


@dataclass(frozen=True, slots=True)
class SOASpec:
    """The zone's SOA fields except the serial, which ``sign`` computes."""

    mname: str
    rname: str
    refresh: int = DEFAULT_SOA_REFRESH_SECONDS
    retry: int = DEFAULT_SOA_RETRY_SECONDS
    expire: int = DEFAULT_SOA_EXPIRE_SECONDS
    minimum: int = DEFAULT_SOA_MINIMUM_SECONDS


@dataclass(frozen=True, slots=True)
class DNSSECSpec:
    """How the zone is DNSSEC-signed (Ed25519, algorithm 15).

    Attributes:
        enabled: False publishes the zone unsigned (every run warns).
        denial: ``nsec`` or ``nsec3`` (RFC 5155, no opt-out).
        nsec3_iterations: extra hash iterations; RFC 9276 says 0.
        nsec3_salt: hex salt, ``""`` for none; RFC 9276 says none.
        signature_validity: seconds from signing to RRSIG expiration.
        refresh: RRSIGs are re-made when their expiration is this close.
        propagation_delay: time for a signed zone to reach every secondary (RFC 7583 Dprp).
        parent_ds_ttl: the TTL the parent zone gives our DS (RFC 7583 TTLds).
        parent_propagation_delay: time for a DS change to reach the parent's servers
            once the parent has published it (RFC 7583 DprpP).
    """

    enabled: bool = True
    denial: str = "nsec"
    nsec3_iterations: int = 0
    nsec3_salt: str = ""
    signature_validity: int = DEFAULT_SIGNATURE_VALIDITY_SECONDS
    refresh: int = DEFAULT_SIGNATURE_REFRESH_SECONDS
    propagation_delay: int = DEFAULT_PROPAGATION_DELAY_SECONDS
    parent_ds_ttl: int = DEFAULT_PARENT_DS_TTL_SECONDS
    parent_propagation_delay: int = DEFAULT_PARENT_PROPAGATION_DELAY_SECONDS

    def warnings(self) -> tuple[str, ...]:
        """Settings that weaken the zone, said on every run."""
        if not self.enabled:
            return (
                "DNSSEC is OFF: records are published unsigned and every resolver sees "
                "them as 'insecure' (set dnssec.enabled: true)",
            )
        found: list[str] = []
        if self.denial == "nsec3" and self.nsec3_iterations:
            found.append(
                f"NSEC3 iterations {self.nsec3_iterations}: RFC 9276 asks for 0 "
                "(extra iterations cost resolvers, not attackers)"
            )
        if self.denial == "nsec3" and self.nsec3_salt:
            found.append("NSEC3 salt set: RFC 9276 asks for no salt ('-')")
        return tuple(found)

    def to_mapping(self) -> dict[str, Any]:
        """YAML-ready form (the inverse of reading the ``dnssec`` section)."""
        return {
            "enabled": self.enabled,
            "denial": self.denial,
            "nsec3": {"iterations": self.nsec3_iterations, "salt": self.nsec3_salt or "-"},
            "signature_validity": self.signature_validity,
            "refresh": self.refresh,
            "rollover": {
                "propagation_delay": self.propagation_delay,
                "parent_ds_ttl": self.parent_ds_ttl,
                "parent_propagation_delay": self.parent_propagation_delay,
            },
        }

    def signing_mapping(self) -> dict[str, Any]:
        """The settings that decide the signed output (rollover timing does not)."""
        mapping = self.to_mapping()
        del mapping["rollover"]
        return mapping


@dataclass(frozen=True, slots=True)
class HandleSpec:
    """One handle the zone publishes.

    Attributes:
        handle: the parsed handle.
        owner: absolute owner name of its record.
        resolver: surface resolver URI (``r=``) or None.
        lifetime: seconds from signing to ``x=``, or None for no expiry.
        ttl: TTL of its TXT record.
        extra_tags: further tags, in the order written.
        where: ``file:line:col`` of its entry.
        tls: the resolver endpoint's certificate or key (its TLSA record), or None.
    """

    handle: Handle
    owner: str
    resolver: str | None
    lifetime: int | None
    ttl: int
    extra_tags: Tags
    where: str = field(compare=False)
    tls: TLSSpec | None = None

    def envelope_tags(self) -> Tags:
        """The tags after ``rc=``: ``r=`` first (if any), then the extras."""
        resolver: Tags = (("r", self.resolver),) if self.resolver else ()
        return resolver + self.extra_tags


@dataclass(frozen=True, slots=True)
class ZoneSpec:
    """A zone definition: apex, SOA, NS, glue and handles."""

    path: Path
    origin: str
    ttl: int
    soa: SOASpec
    ns: tuple[str, ...]
    hosts: tuple[tuple[str, tuple[str, ...]], ...]
    lifetime: int | None
    renew_before: int
    handles: tuple[HandleSpec, ...]
    dnssec: DNSSECSpec = DNSSECSpec()
    #: The zone-level ``tls:`` entries (resolver endpoints' certificates or keys).
    endpoints: tuple[TLSEndpoint, ...] = ()
    log: LogSpec = field(default_factory=LogSpec)  # ``log:`` witnesses (definition/logspec.py)

    def tlsa_sets(self) -> tuple[TLSASet, ...]:
        """The TLSA rrset of every endpoint a ``tls`` names, sorted by owner."""
        named = ((h.resolver, h.tls) for h in self.handles if h.resolver and h.tls)
        return tlsa_sets(self.origin, self.endpoints, named)

    @property
    def name(self) -> str:
        """The zone name without trailing dot (``example.com``)."""
        return self.origin

    def find(self, ref: str) -> HandleSpec | None:
        """The entry for a handle-ref (any case), or None."""
        wanted = ref.lower()
        return next((h for h in self.handles if h.handle.ref == wanted), None)

    def renew_window(self, lifetime: int) -> int:
        """Seconds before expiry at which an envelope is re-signed."""
        return min(self.renew_before, lifetime // 2)

    def to_mapping(self) -> dict[str, Any]:
        """The definition as plain YAML-ready data (the inverse of ``from_node``)."""
        handles: list[Any] = []
        for spec in self.handles:
            entry: dict[str, Any] = {"handle": spec.handle.ref}
            if spec.resolver:
                entry["resolver"] = spec.resolver
            if spec.lifetime != self.lifetime:
                entry["lifetime"] = NEVER if spec.lifetime is None else spec.lifetime
            if spec.ttl != self.ttl:
                entry["ttl"] = spec.ttl
            if spec.extra_tags:
                entry["tags"] = dict(spec.extra_tags)
            if spec.tls is not None:
                entry["tls"] = spec.tls.to_mapping()
            handles.append(entry)
        tls = {e.key: e.tls.to_mapping() for e in self.endpoints}
        head = ({"tls": tls} if tls else {}) | self.log.to_mapping()
        return head | {
            "zone": self.origin,
            "ttl": self.ttl,
            "soa": {
                "mname": self.soa.mname,
                "rname": self.soa.rname,
                "refresh": self.soa.refresh,
                "retry": self.soa.retry,
                "expire": self.soa.expire,
                "minimum": self.soa.minimum,
            },
            "ns": list(self.ns),
            "hosts": {name: list(addresses) for name, addresses in self.hosts},
            "envelopes": {
                "lifetime": NEVER if self.lifetime is None else self.lifetime,
                "renew_before": self.renew_before,
            },
            "dnssec": self.dnssec.to_mapping(),
            "handles": handles,
        }

    def warnings(self) -> tuple[str, ...]:
        """What every run should say about this zone's weakened settings, and each TLSA
        record it cannot publish (its host is outside the zone)."""
        outside = tuple(s.outside_warning(self.ttl) for s in self.tlsa_sets() if not s.inside)
        return tuple(f"{self.path}: {warning}" for warning in (*self.dnssec.warnings(), *outside))

    @classmethod
    def from_node(cls, node: Node, path: Path) -> ZoneSpec:
        """Build and check a zone definition, reporting every problem at once.

        Raises:
            DefinitionError: one or more problems, each ``file:line:col: what`` in ``reasons``.
        """
        return _ZoneReader(node, path).read()


def _keys_of(node: Node) -> frozenset[str]:
    """The keys of a mapping node (an empty set for anything else, which ``mapping`` reports)."""
    return frozenset(node.value) if node.is_mapping else frozenset()


def load_zone(path: Path) -> ZoneSpec:
    """Load and check ``zones/<zone>.yaml``.

    Raises:
        DefinitionError: unreadable, not YAML, or any problem in the definition.
    """
    return ZoneSpec.from_node(load_yaml(path), path)


def load_zone_text(text: str, path: Path) -> ZoneSpec:
    """:func:`load_zone` for the text of ``path``.

    Raises:
        DefinitionError: not YAML, or any problem in the definition.
    """
    return ZoneSpec.from_node(load_definition_text(text, str(path)), path)


def load_handle_entries(text: str, path: Path, zone: ZoneSpec) -> tuple[HandleSpec, ...]:
    """The entries of the ``handles:`` list in ``text`` (a YAML mapping with just that
    list, positioned as in ``path``), read with ``zone``'s defaults. Cross-entry checks
    (duplicates) are the caller's.

    Raises:
        DefinitionError: not YAML, or a problem in an entry.
    """
    node = load_yaml_text(text, str(path))
    reader = _ZoneReader(node, path)
    entries = node.value.get("handles") if node.is_mapping else None
    if entries is None or not entries.is_sequence:
        raise DefinitionError("not a list of handle entries", where=str(node.mark))
    specs = [reader.handle(entry, zone.origin, zone.ttl, zone.lifetime) for entry in entries.value]
    reader.problems.raise_if_any()
    return tuple(spec for spec in specs if spec is not None)


class _ZoneReader:
    """Walks the node tree once, collecting problems instead of stopping at the first."""

    def __init__(self, node: Node, path: Path) -> None:
        self.node = node
        self.path = path
        self.problems = _Problems()

    def mapping(self, node: Node, fields: frozenset[str], what: str) -> dict[str, Node]:
        if not node.is_mapping:
            self.problems.add(node.mark, f"{what} must be a mapping")
            return {}
        values: dict[str, Node] = node.value
        for key in values:
            if key not in fields:
                self.problems.add(
                    node.key_marks[key],
                    f"unknown field {key!r} in {what} (allowed: {', '.join(sorted(fields))})",
                )
        return values

    def checked(
        self, node: Node | None, convert: Callable[[Any], Any], what: str, default: Any
    ) -> Any:
        if node is None:
            return default
        try:
            return convert(node.value)
        except ValueError as exc:
            self.problems.add(node.mark, f"bad {what} {node.value!r}: {exc}")
            return default

    def ttl(self, node: Node | None, what: str, default: int) -> int:
        def convert(value: Any) -> int:
            seconds = parse_duration(value)
            if seconds > TTL_MAX_SECONDS:
                raise ValueError(f"over {TTL_MAX_SECONDS}")
            return seconds

        result: int = self.checked(node, convert, what, default)
        return result

    def lifetime(self, node: Node | None, default: int | None) -> int | None:
        def convert(value: Any) -> int | None:
            if value is None or (isinstance(value, str) and value.strip().lower() == NEVER):
                return None
            seconds = parse_duration(value)
            if seconds <= 0:
                raise ValueError("must be positive (or 'never')")
            return seconds

        result: int | None = self.checked(node, convert, "lifetime", default)
        return result

    def dns_name(self, node: Node, origin: str, what: str) -> str | None:
        if not isinstance(node.value, str) or not node.value.strip():
            self.problems.add(node.mark, f"{what} must be a domain name")
            return None
        text = node.value.strip().lower()
        if text == "@":
            return origin + "."
        if not text.endswith("."):
            text = f"{text}.{origin}." if "." not in text else text + "."
        if not _HOSTNAME.fullmatch(text):
            self.problems.add(
                node.mark, f"bad {what} {node.value!r}: labels are a-z, 0-9, '-', '_'"
            )
            return None
        try:
            dns.name.from_text(text)
        except dns.exception.DNSException as exc:
            self.problems.add(node.mark, f"bad {what} {node.value!r}: {exc}")
            return None
        return text

    def origin(self, top: dict[str, Node]) -> str:
        stem = self.path.name.removesuffix(".yaml").removesuffix(".yml").lower()
        node = top.get("zone")
        if node is None:
            self.problems.add(self.node.mark, "missing required field 'zone'")
            return stem
        if not isinstance(node.value, str) or not node.value.strip():
            self.problems.add(node.mark, "zone must be a domain name like example.com")
            return stem
        origin = normalize_domain(node.value)
        if not origin:
            self.problems.add(node.mark, "zone must not be the root")
            return stem
        try:
            name = dns.name.from_text(origin + ".")
        except dns.exception.DNSException as exc:
            self.problems.add(node.mark, f"bad zone {node.value!r}: {exc}")
            return stem
        if len(name.labels) < 2:
            self.problems.add(node.mark, "zone must not be the root")
        elif origin != stem:
            self.problems.add(
                node.mark, f"zone {origin!r} does not match file name {self.path.name!r}"
            )
        return origin

    def handle(self, entry: Node, origin: str, ttl: int, lifetime: int | None) -> HandleSpec | None:
        fields: dict[str, Node]
        if isinstance(entry.value, str):
            fields = {"handle": entry}
        else:
            fields = self.mapping(entry, HANDLE_FIELDS, "handle entry")
        handle_node = fields.get("handle")
        if handle_node is None:
            if entry.is_mapping:
                self.problems.add(entry.mark, "handle entry has no 'handle' field")
            return None
        if not isinstance(handle_node.value, str):
            self.problems.add(
                handle_node.mark, f"handle {handle_node.value!r} is not text like ~blake"
            )
            return None
        try:
            handle = parse_handle(handle_node.value.strip())
            owner = handle.owner(origin)
        except HandleError as exc:
            self.problems.add(handle_node.mark, f"handle {handle_node.value!r}: {exc.what}")
            return None
        if not (owner == f"_alter.{origin}." or owner.endswith(f".{origin}.")):
            self.problems.add(
                handle_node.mark, f"handle {handle.ref}: owner {owner} is outside zone {origin}"
            )
            return None
        resolver = None
        if (node := fields.get("resolver")) is not None:
            problem = resolver_problem(node.value)
            if problem is None:
                resolver = str(node.value)
            else:
                self.problems.add(
                    node.mark, f"handle {handle.ref!r}: resolver {node.value!r}: {problem}"
                )
        tls = None
        if (node := fields.get("tls")) is not None:
            tls = self.tls(node, handle.ref, resolver, fields.get("resolver"))
        extra: list[tuple[str, str]] = []
        if (node := fields.get("tags")) is not None:
            for name, value_node in self.mapping(node, _keys_of(node), "tags").items():
                value = value_node.value
                text = str(value).lower() if isinstance(value, bool) else str(value)
                mark = node.key_marks[name]
                if not TAG_NAME.fullmatch(name):
                    self.problems.add(mark, f"tag name {name!r} is not [a-z][a-z0-9_]*")
                elif name in RESERVED_TAGS:
                    self.problems.add(mark, f"tag {name!r} is reserved (set by alter-publish)")
                elif (
                    value is None or isinstance(value, dict | list) or not TAG_VALUE.fullmatch(text)
                ):
                    self.problems.add(
                        value_node.mark,
                        f"tag {name}: value must be printable ASCII without ';' or spaces",
                    )
                else:
                    extra.append((name, text))
        return HandleSpec(
            handle=handle,
            owner=owner,
            resolver=resolver,
            lifetime=self.lifetime(fields.get("lifetime"), lifetime),
            ttl=self.ttl(fields.get("ttl"), "ttl", ttl),
            extra_tags=tuple(extra),
            where=str(handle_node.mark),
            tls=tls,
        )

    def tls(self, node: Node, ref: str, resolver: str | None, at: Node | None) -> TLSSpec | None:
        endpoint = resolver_endpoint(resolver) if resolver else "tls needs a resolver"
        if isinstance(endpoint, str):
            if resolver or at is None:  # a bad resolver is said once, at the resolver
                self.problems.add(node.mark, f"handle {ref!r}: {endpoint}")
            return None
        return read_tls_node(node, self.path.parent, self.problems.add)

    def dnssec(self, node: Node | None) -> DNSSECSpec:
        if node is None:
            return DNSSECSpec()
        if isinstance(node.value, bool):
            return DNSSECSpec(enabled=node.value)
        fields = self.mapping(node, DNSSEC_FIELDS, "dnssec")
        enabled = True
        if (enabled_node := fields.get("enabled")) is not None:
            if isinstance(enabled_node.value, bool):
                enabled = enabled_node.value
            else:
                self.problems.add(enabled_node.mark, "dnssec enabled must be true or false")
        denial = "nsec"
        if (denial_node := fields.get("denial")) is not None:
            value = denial_node.value
            text = value.strip().lower() if isinstance(value, str) else None
            if text in DENIAL_METHODS:
                denial = str(text)
            else:
                shown = f" {value!r}" if isinstance(value, str | int | float) else ""
                self.problems.add(
                    denial_node.mark,
                    f"bad dnssec denial{shown}: use {' or '.join(DENIAL_METHODS)}",
                )
        iterations, salt = 0, ""
        if "nsec3" in fields:
            nsec3 = self.mapping(fields["nsec3"], NSEC3_FIELDS, "dnssec nsec3")
            iterations = self.checked(
                nsec3.get("iterations"), nsec3_iterations, "nsec3 iterations", 0
            )
            salt = self.checked(nsec3.get("salt"), nsec3_salt, "nsec3 salt", "")
        validity = self.ttl(
            fields.get("signature_validity"),
            "signature_validity",
            DEFAULT_SIGNATURE_VALIDITY_SECONDS,
        )
        refresh = self.ttl(fields.get("refresh"), "refresh", DEFAULT_SIGNATURE_REFRESH_SECONDS)
        if validity > SIGNATURE_VALIDITY_MAX_SECONDS:
            self.problems.add(
                (fields.get("signature_validity") or node).mark,
                f"signature_validity must be at most "
                f"{format_duration(SIGNATURE_VALIDITY_MAX_SECONDS)}",
            )
        elif validity < SIGNATURE_VALIDITY_MIN_SECONDS:
            self.problems.add(
                (fields.get("signature_validity") or node).mark,
                f"signature_validity must be at least "
                f"{format_duration(SIGNATURE_VALIDITY_MIN_SECONDS)}",
            )
        elif not 0 < refresh < validity:
            self.problems.add(
                (fields.get("refresh") or node).mark,
                f"refresh must be above 0 and below signature_validity "
                f"({format_duration(validity)})",
            )
        rollover = (
            self.mapping(fields["rollover"], ROLLOVER_FIELDS, "dnssec rollover")
            if "rollover" in fields
            else {}
        )
        return DNSSECSpec(
            enabled=enabled,
            denial=denial,
            nsec3_iterations=iterations,
            nsec3_salt=salt,
            signature_validity=validity,
            refresh=refresh,
            propagation_delay=self.ttl(
                rollover.get("propagation_delay"),
                "propagation_delay",
                DEFAULT_PROPAGATION_DELAY_SECONDS,
            ),
            parent_ds_ttl=self.ttl(
                rollover.get("parent_ds_ttl"), "parent_ds_ttl", DEFAULT_PARENT_DS_TTL_SECONDS
            ),
            parent_propagation_delay=self.ttl(
                rollover.get("parent_propagation_delay"),
                "parent_propagation_delay",
                DEFAULT_PARENT_PROPAGATION_DELAY_SECONDS,
            ),
        )

    def read(self) -> ZoneSpec:
        if not self.node.is_mapping:
            self.problems.add(self.node.mark, "a zone definition must be a mapping of fields")
            self.problems.raise_if_any()
        top = self.mapping(self.node, ZONE_FIELDS, "zone definition")
        origin = self.origin(top)
        ttl = self.ttl(top.get("ttl"), "ttl", DEFAULT_TTL_SECONDS)

        ns: list[str] = []
        ns_node = top.get("ns")
        if ns_node is None:
            self.problems.add(self.node.mark, "missing required field 'ns' (list of name servers)")
        elif not ns_node.is_sequence or not ns_node.value:
            self.problems.add(ns_node.mark, "ns must be a non-empty list of name server names")
        else:
            for item in ns_node.value:
                if (name := self.dns_name(item, origin, "name server")) is not None:
                    ns.append(name)

        soa_fields = self.mapping(top["soa"], SOA_FIELDS, "soa") if "soa" in top else {}
        mname = ns[0] if ns else f"ns1.{origin}."
        if "mname" in soa_fields:
            mname = self.dns_name(soa_fields["mname"], origin, "soa mname") or mname
        rname = f"hostmaster.{origin}."
        if "rname" in soa_fields:
            rname = self.dns_name(soa_fields["rname"], origin, "soa rname") or rname
        timers = {
            key: self.ttl(soa_fields.get(key), f"soa {key}", default)
            for key, default in (
                ("refresh", DEFAULT_SOA_REFRESH_SECONDS),
                ("retry", DEFAULT_SOA_RETRY_SECONDS),
                ("expire", DEFAULT_SOA_EXPIRE_SECONDS),
                ("minimum", DEFAULT_SOA_MINIMUM_SECONDS),
            )
        }
        soa = SOASpec(mname=mname, rname=rname, **timers)

        hosts: list[tuple[str, tuple[str, ...]]] = []
        if "hosts" in top:
            hosts_node = top["hosts"]
            for key, addresses in self.mapping(hosts_node, _keys_of(hosts_node), "hosts").items():
                name = self.dns_name(Node(key, hosts_node.key_marks[key]), origin, "host")
                items = addresses.value if addresses.is_sequence else [addresses]
                parsed: list[str] = []
                for item in items:
                    try:
                        parsed.append(str(ipaddress.ip_address(str(item.value))))
                    except ValueError:
                        self.problems.add(
                            item.mark, f"host {key}: {item.value!r} is not an IP address"
                        )
                if name is None:
                    continue
                if not (name == origin + "." or name.endswith("." + origin + ".")):
                    self.problems.add(
                        hosts_node.key_marks[key], f"host {name} is outside zone {origin}"
                    )
                    continue
                hosts.append((name, tuple(parsed)))

        env = top.get("envelopes")
        env_fields = {} if env is None else self.mapping(env, ENVELOPE_FIELDS, "envelopes")
        lifetime = self.lifetime(env_fields.get("lifetime"), DEFAULT_LIFETIME_SECONDS)
        renew_before = self.ttl(
            env_fields.get("renew_before"), "renew_before", DEFAULT_RENEW_BEFORE_SECONDS
        )

        dnssec = self.dnssec(top.get("dnssec"))
        tls = top.get("tls")
        endpoints = () if tls is None else read_endpoints(tls, self.path.parent, self.problems.add)
        log = read_log_spec(top.get("log"), self.path.parent, self.problems.add)

        handles: list[HandleSpec] = []
        seen: dict[str, str] = {}
        handles_node = top.get("handles")
        if handles_node is None:
            self.problems.add(self.node.mark, "missing required field 'handles' (list of ~handles)")
        elif handles_node.value is not None and not handles_node.is_sequence:
            self.problems.add(handles_node.mark, "handles must be a list")
        else:
            for entry in handles_node.value or ():
                spec = self.handle(entry, origin, ttl, lifetime)
                if spec is None:
                    continue
                if spec.handle.ref in seen:
                    self.problems.add(
                        entry.mark,
                        f"duplicate handle {spec.handle.ref} (first at {seen[spec.handle.ref]})",
                    )
                    continue
                seen[spec.handle.ref] = spec.where
                handles.append(spec)
        self.problems.raise_if_any()
        return ZoneSpec(
            path=self.path,
            origin=origin,
            ttl=ttl,
            soa=soa,
            ns=tuple(ns),
            hosts=tuple(hosts),
            lifetime=lifetime,
            renew_before=renew_before,
            handles=tuple(handles),
            dnssec=dnssec,
            endpoints=endpoints,
            log=log,
        )
