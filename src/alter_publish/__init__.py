"""alter-publish: sign, render and prove alter1 identity records for the zones you own.

The public API is what ``__all__`` lists; everything else may change.
"""

from __future__ import annotations

from alter_publish.errors import (
    AlterError,
    DefinitionError,
    HandleError,
    KeyStoreError,
    PublishError,
    RenderError,
    ResolveError,
    RolloverError,
    ServeError,
    SigningError,
    URIError,
    UsageError,
    VerificationError,
)
from alter_publish.format.envelope import Envelope, Revocation, parse_record, verify_record
from alter_publish.format.handles import AlterURI, Handle, Tier, parse_handle, parse_uri
from alter_publish.format.identitylog import merkle_root
from alter_publish.version import __version__

__all__ = [
    "AlterError",
    "AlterURI",
    "DefinitionError",
    "Envelope",
    "Handle",
    "HandleError",
    "KeyStoreError",
    "PublishError",
    "RenderError",
    "ResolveError",
    "Revocation",
    "RolloverError",
    "ServeError",
    "SigningError",
    "Tier",
    "URIError",
    "UsageError",
    "VerificationError",
    "__version__",
    "merkle_root",
    "parse_handle",
    "parse_record",
    "parse_uri",
    "verify_record",
]
