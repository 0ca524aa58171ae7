"""A signed DNS hierarchy on loopback for the chain-of-trust tests: no port 53, no root.

Three zones, each signed here with dnspython (Ed25519, NSEC) and served by
alter-publish's own :class:`~alter_publish.dns.server.ZoneServer` on its own address,
all on one high port: the root ``.`` on 127.0.20.1, ``com.`` on 127.0.20.2 and
``example.com.`` on 127.0.20.3 (and all three zones together on 127.0.20.4, a server
authoritative for the whole path). :class:`Flaw` breaks one link the way operators do:
a DS typo at the parent, the DS removed, an expired signature on the answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Final

import dns.dnssec
import dns.dnssectypes
import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.rdtypes.ANY.DNSKEY
import dns.rdtypes.ANY.DS
import dns.rrset
import dns.zone
from cryptography.hazmat.primitives.asymmetric import ed25519

from alter_publish.dns.anchors import TrustAnchor
from alter_publish.dns.hints import RootHints, parse_root_hints
from alter_publish.dns.server import ZoneServer
from alter_publish.errors import ServeError

ROOT_ADDRESS: Final = "127.0.20.1"
COM_ADDRESS: Final = "127.0.20.2"
EXAMPLE_ADDRESS: Final = "127.0.20.3"
ALL_ADDRESS: Final = "127.0.20.4"
OWNER: Final = "_alter.blake.example.com."
ABSENT_OWNER: Final = "_alter.nobody.example.com."
EXAMPLE: Final = dns.name.from_text("example.com.")
HINTS_TEXT: Final = f". 3600000 NS a.root.\na.root. 3600000 A {ROOT_ADDRESS}\n"
_HOUR: Final = 3600
_DAY: Final = 86400

ROOT_TEXT: Final = f"""$TTL 300
@ SOA a.root. hostmaster.root. 1 7200 3600 1209600 300
@ NS a.root.
a.root. A {ROOT_ADDRESS}
com. NS ns.com.
ns.com. A {COM_ADDRESS}
"""
COM_TEXT: Final = f"""$TTL 300
@ SOA ns hostmaster 1 7200 3600 1209600 300
@ NS ns
ns A {COM_ADDRESS}
example NS ns.example
ns.example A {EXAMPLE_ADDRESS}
"""
EXAMPLE_TEXT: Final = f"""$TTL 300
@ SOA ns hostmaster 1 7200 3600 1209600 300
@ NS ns
ns A {EXAMPLE_ADDRESS}
_alter.blake TXT "v=alter1 blake"
"""


class Flaw(Enum):
    """What is wrong with the hierarchy (nothing, by default)."""

    NONE = "none"
    WRONG_DS = "wrong-ds"  # a typo in the DS digest at com.
    NO_DS = "no-ds"  # the DS removed at com.: example.com. is an insecure delegation
    EXPIRED_ANSWER = "expired-answer"  # the TXT rrset's RRSIG has expired
    NO_GLUE = "no-glue"  # not a flaw: example.com.'s server is named in the root zone


@dataclass(frozen=True)
class Key:
    private: ed25519.Ed25519PrivateKey
    dnskey: dns.rdtypes.ANY.DNSKEY.DNSKEY

    @classmethod
    def make(cls, seed: str, flags: int) -> Key:
        private = ed25519.Ed25519PrivateKey.from_private_bytes(
            hashlib.sha256(seed.encode()).digest()
        )
        algorithm = dns.dnssectypes.Algorithm.ED25519
        return cls(private, dns.dnssec.make_dnskey(private.public_key(), algorithm, flags))

    @property
    def tag(self) -> int:
        return dns.dnssec.key_id(self.dnskey)


def _ds(zone: str, key: Key) -> dns.rdtypes.ANY.DS.DS:
    return dns.dnssec.make_ds(zone, key.dnskey, "SHA256")


def _ds_text(ds: dns.rdtypes.ANY.DS.DS, flaw: Flaw) -> str:
    digest = bytes(ds.digest)
    if flaw is Flaw.WRONG_DS:
        digest = bytes([digest[0] ^ 0x01]) + digest[1:]
    return f"{ds.key_tag} {ds.algorithm} {ds.digest_type} {digest.hex()}"


def _signed(text: str, origin: str, keys: tuple[Key, Key], now: int) -> dns.zone.Zone:
    zone = dns.zone.from_text(text, origin=origin, relativize=False)
    dns.dnssec.sign_zone(
        zone,
        keys=[(key.private, key.dnskey) for key in keys],
        inception=now - _HOUR,
        expiration=now + _DAY,
    )
    return zone


def _expire_answer(zone: dns.zone.Zone, zsk: Key, now: int) -> None:
    """Sign the TXT at :data:`OWNER` again with a window that ended an hour ago."""
    name = dns.name.from_text(OWNER)
    node = zone.find_node(name)
    txt = node.find_rdataset(dns.rdataclass.IN, dns.rdatatype.TXT)
    rrset = dns.rrset.from_rdata_list(name, txt.ttl, list(txt))
    rrsig = dns.dnssec.sign(
        rrset, zsk.private, EXAMPLE, zsk.dnskey, inception=now - 2 * _DAY, expiration=now - _HOUR
    )
    sigs = dns.rdataset.from_rdata(txt.ttl, rrsig)
    node.replace_rdataset(sigs)


@dataclass(frozen=True)
class Hierarchy:
    """The signed zones, their keys and what a validator needs to start from."""

    root: dns.zone.Zone
    com: dns.zone.Zone
    example: dns.zone.Zone
    root_ksk: Key
    example_ksk: Key

    @property
    def root_anchor(self) -> TrustAnchor:
        return TrustAnchor(dns.name.root, (_ds(".", self.root_ksk),), ())

    @property
    def root_anchor_text(self) -> str:
        ds = _ds(".", self.root_ksk)
        return f". IN DS {_ds_text(ds, Flaw.NONE)}\n"

    @property
    def example_anchor(self) -> TrustAnchor:
        """The zone's own DS as its anchor (what ``verify --server`` uses by default)."""
        return TrustAnchor(EXAMPLE, (_ds("example.com.", self.example_ksk),), ())

    @property
    def hints(self) -> RootHints:
        return parse_root_hints(HINTS_TEXT, where="test hints")


def build_hierarchy(now: int, flaw: Flaw = Flaw.NONE) -> Hierarchy:
    """Sign ``example.com.``, then ``com.`` with its DS (as ``flaw`` says), then the root."""
    keys = {
        zone: (Key.make(f"{zone} ksk", 257), Key.make(f"{zone} zsk", 256))
        for zone in (".", "com.", "example.com.")
    }
    example = _signed(EXAMPLE_TEXT, "example.com.", keys["example.com."], now)
    if flaw is Flaw.EXPIRED_ANSWER:
        _expire_answer(example, keys["example.com."][1], now)
    com_text = COM_TEXT
    root_text = ROOT_TEXT
    if flaw is Flaw.NO_GLUE:  # com. cannot give glue for a name outside it
        com_text = com_text.replace("example NS ns.example\n", "example NS ns.hosting.\n")
        root_text += f"ns.hosting. A {EXAMPLE_ADDRESS}\n"
    if flaw is not Flaw.NO_DS:
        ds = _ds("example.com.", keys["example.com."][0])
        com_text += f"example DS {_ds_text(ds, flaw)}\n"
    com = _signed(com_text, "com.", keys["com."], now)
    root_text += f"com. DS {_ds_text(_ds('com.', keys['com.'][0]), Flaw.NONE)}\n"
    root = _signed(root_text, ".", keys["."], now)
    return Hierarchy(root, com, example, keys["."][0], keys["example.com."][0])


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind((ROOT_ADDRESS, 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def serving(hierarchy: Hierarchy) -> Iterator[int]:
    """Serve the hierarchy (one server per zone, and one with all three) on one port.

    Yields:
        The port every server listens on.
    """
    zones = (
        (ROOT_ADDRESS, [hierarchy.root]),
        (COM_ADDRESS, [hierarchy.com]),
        (EXAMPLE_ADDRESS, [hierarchy.example]),
        (ALL_ADDRESS, [hierarchy.root, hierarchy.com, hierarchy.example]),
    )
    for _ in range(5):
        port = _free_port()
        with contextlib.ExitStack() as stack:
            try:
                for address, served in zones:
                    stack.enter_context(ZoneServer(served, address=address, port=port))
            except ServeError:
                continue  # the port was taken on another address: try another
            yield port
            return
    raise RuntimeError("no port free on all of 127.0.20.1-4")
