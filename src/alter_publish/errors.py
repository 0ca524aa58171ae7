"""The one exception tree of alter-publish.

Every error a user can cause is an :class:`AlterError`. ``str(error)`` is one
line, ``where: what``; ``category`` is the spec's error category where one
applies (``bad-signature``, ``expired``, ...) and ``exit_code`` is the
documented process exit code the CLI uses for it.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_VERIFICATION = 1
EXIT_USAGE = 2
EXIT_DEFINITION = 3
EXIT_KEY = 4
EXIT_OUTPUT = 5
EXIT_NETWORK = 6
EXIT_DRIFT = 7  # not an error: --check (or plan) found changes to make
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM (128 + SIGINT, as shells report it)

#: Categories of spec section 6 and 7, in the order the checks run.
VERIFICATION_CATEGORIES = (
    "malformed",
    "unsupported",
    "handle-mismatch",
    "bad-signature",
    "revoked",
    "not-yet-valid",
    "expired",
    "rollback",
    "key-mismatch",
    "no-continuity",
    "bad-continuity",
    "conflict",
    "not-found",
    "insecure",
    "bogus",
)

#: Why ``open`` does not dispatch a handle that verified (alter URI draft 4.4 step 5).
DISPATCH_CATEGORIES = (
    "no-resolver",
    "bad-resolver",
    "unsafe-path",
    "refused",
    "opener-failed",
)


class AlterError(Exception):
    """Base of every error alter-publish raises on purpose.

    Attributes:
        where: the file:line:col, handle, owner name or record the error is about.
        what: what is wrong, one line.
        category: the spec category (or a stage name for non-spec errors).
        reasons: every individual problem when several were collected.
    """

    category: str = "error"
    exit_code: int = EXIT_INTERNAL

    def __init__(
        self,
        what: str,
        *,
        where: str | None = None,
        category: str | None = None,
        reasons: tuple[str, ...] = (),
    ) -> None:
        self.what = " ".join(what.split())
        self.where = where
        if category is not None:
            self.category = category
        self.reasons = reasons
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.where}: {self.what}" if self.where else self.what


class UsageError(AlterError):
    """A bad command-line argument or option value."""

    category = "usage"
    exit_code = EXIT_USAGE


class HandleError(UsageError):
    """A handle that does not follow the handle grammar (spec section 1)."""

    category = "malformed-handle"


class URIError(UsageError):
    """An alter: URI that does not follow the URI grammar (spec section 2)."""

    category = "malformed-uri"


class DefinitionError(AlterError):
    """A zone definition (YAML) with one or more problems; ``reasons`` lists every one."""

    category = "definition"
    exit_code = EXIT_DEFINITION

    def __init__(
        self, what: str, *, where: str | None = None, reasons: tuple[str, ...] = ()
    ) -> None:
        super().__init__(what, where=where, reasons=reasons)
        if not self.reasons:
            self.reasons = (str(self),)


class KeyStoreError(AlterError):
    """A key that is missing, unreadable, unsafe or undecryptable."""

    category = "key"
    exit_code = EXIT_KEY


class RolloverError(KeyStoreError):
    """A rollover step that is not allowed now (too early, none running, or the wrong one)."""

    category = "rollover"


class SigningError(AlterError):
    """Building or signing an envelope failed."""

    category = "signing"
    exit_code = EXIT_DEFINITION


class RenderError(AlterError):
    """Rendering, parsing back or writing a zone or output file failed."""

    category = "render"
    exit_code = EXIT_OUTPUT


class ServeError(AlterError):
    """The embedded server could not start or answer."""

    category = "serve"
    exit_code = EXIT_NETWORK


class UnsupportedZoneError(AlterError):
    """A zone the wire engine (``dns.wirezone.WireZone``) does not serve.

    Internal: it tells ``dns.answerers`` to serve the zone with the dnspython engine
    instead, and never reaches the user; one that did would be a bug (exit 70).
    """

    category = "unsupported-zone"
    exit_code = EXIT_INTERNAL


class ResolveError(AlterError):
    """A DNS query failed at the transport level (timeout, refused, bad answer)."""

    category = "network"
    exit_code = EXIT_NETWORK


class PublishError(AlterError):
    """The server refused or failed an update (or a query the plan needs)."""

    category = "publish"
    exit_code = EXIT_NETWORK


class VerificationError(AlterError):
    """A record or handle failed verification; ``category`` says how (spec 6 and 7)."""

    category = "malformed"
    exit_code = EXIT_VERIFICATION


class DispatchError(AlterError):
    """A verified handle that ``open`` does not dispatch: no usable resolver (``r=``), a
    surface path that would leave it, a dispatch guard's refusal, or an opener that failed.

    ``category`` is one of :data:`DISPATCH_CATEGORIES`. Like every error of ``open``, its
    text names the handle, never the surface path, query or fragment.
    """

    category = "no-resolver"
    exit_code = EXIT_VERIFICATION


class HandlerError(AlterError):
    """Registering the ``alter:`` handler failed: an xdg tool missing or failing, or a
    desktop entry or registration file that cannot be written."""

    category = "handler"
    exit_code = EXIT_OUTPUT
