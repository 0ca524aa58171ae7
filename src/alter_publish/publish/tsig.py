"""TSIG keys as BIND's ``tsig-keygen`` writes them (for ``plan``, ``push`` and transfers)."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from pathlib import Path

import dns.exception
import dns.name
import dns.tsig

from alter_publish.errors import UsageError

TSIG_ALGORITHMS = ("hmac-sha256", "hmac-sha384", "hmac-sha512", "hmac-sha224", "hmac-sha1")
_KEY_FILE = re.compile(
    r'key\s+"?(?P<name>[^"\s{]+)"?\s*\{(?P<body>[^}]*)\}\s*;', re.IGNORECASE | re.DOTALL
)
_KEY_FIELD = re.compile(r'(?P<field>algorithm|secret)\s+"?(?P<value>[^";\s]+)"?\s*;', re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class TsigKey:
    """A TSIG key as ``tsig-keygen`` writes it. Its repr never shows the secret."""

    name: str
    algorithm: str
    secret: bytes = field(repr=False)

    @property
    def keyring(self) -> dict[dns.name.Name, dns.tsig.Key]:
        """A dnspython keyring holding only this key."""
        name = dns.name.from_text(self.name)
        return {name: dns.tsig.Key(name, self.secret, self.algorithm)}

    @property
    def keyname(self) -> dns.name.Name:
        """The key's name."""
        return dns.name.from_text(self.name)


def read_tsig_key(path: Path) -> TsigKey:
    """Read a BIND key file (``key "name" { algorithm hmac-sha256; secret "..."; };``).

    Raises:
        UsageError: unreadable, not a key file, an unknown algorithm or a bad secret
            (never quoting the secret).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read TSIG key file: {exc}", where=str(path)) from exc
    clauses = list(_KEY_FILE.finditer(text))
    if not clauses:
        raise UsageError('not a BIND key file (key "name" { ... };)', where=str(path))
    if len(clauses) > 1:
        raise UsageError(
            f"holds {len(clauses)} keys; give a file with only the key for this zone",
            where=str(path),
        )
    match = clauses[0]
    body = match.group("body")
    fields = {m.group("field").lower(): m.group("value") for m in _KEY_FIELD.finditer(body)}
    if "algorithm" not in fields or "secret" not in fields:
        raise UsageError("the key needs an algorithm and a secret", where=str(path))
    algorithm = fields["algorithm"].lower()
    if algorithm.rstrip(".") not in TSIG_ALGORITHMS:
        raise UsageError(
            f"unsupported TSIG algorithm {algorithm!r} (use {', '.join(TSIG_ALGORITHMS)})",
            where=str(path),
        )
    try:
        secret = base64.b64decode(fields["secret"], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise UsageError("the TSIG secret is not base64", where=str(path)) from exc
    try:
        name = dns.name.from_text(match.group("name")).to_text()
    except dns.exception.DNSException as exc:
        raise UsageError("the TSIG key name is not a domain name", where=str(path)) from exc
    return TsigKey(name, algorithm, secret)
