"""``open``: the alter URI scheme draft's section 4.4, in order, then the dispatch.

1. parse (the caller: :func:`~alter_publish.format.handles.parse_uri`);
2. find the handle's publishing zone: the owner name from the handle and substrate,
   and the name servers that answer for it, found from the root hints by following
   referrals (or ``--server``);
3. retrieve ``_alter.<domain>`` TXT and DNSSEC-validate it from the trust anchors (the
   shipped IANA root anchors by default: the chain is walked down from the root);
4. verify the envelope (spec sections 6 and 7, the pin store's policy if one is given);
5. only then: the target URL from the envelope's ``r=`` and the surface
   (:func:`~alter_publish.format.uri.dispatch_target`), the dispatch guards, and the
   hand-over to the platform opener (:func:`launch`).

Nothing before step 5 writes a file, logs a line or connects anywhere but the name
servers (draft 7.1); a failure at any step raises and nothing is dispatched. Errors name
the handle and owner, never the surface path, query or fragment (draft 7.3).

A :class:`DispatchGuard` is a check that runs after verification and before the
dispatch (the place for DANE: a guard that compares the resolver's validated TLSA with
what its endpoint presents, and raises :class:`~alter_publish.errors.DispatchError`
with category ``refused`` when they differ).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

import dns.name

from alter_publish.dns.anchors import TrustAnchor
from alter_publish.dns.hints import RootHints
from alter_publish.dns.iterate import DNS_PORT, SERVERS_TRIED_MAX, IterativeAsker
from alter_publish.errors import DispatchError, ResolveError, VerificationError
from alter_publish.format.handles import AlterURI
from alter_publish.format.uri import dispatch_target
from alter_publish.verify.pinning import PinnedResult, resolve_pinned
from alter_publish.verify.resolve import DEFAULT_TIMEOUT_SECONDS, Resolution

__all__ = [
    "OPENERS",
    "Dispatch",
    "DispatchGuard",
    "OpenSettings",
    "launch",
    "opener_argv",
    "verify_for_dispatch",
]

#: The platform openers by ``sys.platform`` prefix (Windows: ``os.startfile``, the
#: ShellExecute that ``start`` calls, without cmd.exe parsing ``&`` or ``^`` in the URL).
OPENERS: Final = {
    "linux": "xdg-open",
    "freebsd": "xdg-open",
    "openbsd": "xdg-open",
    "darwin": "open",
}


@dataclass(frozen=True, slots=True)
class OpenSettings:
    """How ``open`` resolves: the options it shares with ``resolve``.

    Attributes:
        substrate: the substrate zone of non-domain handles.
        now: the time to validate and verify at.
        anchors: the trust anchors (the IANA root's by default).
        root_hints: where the name servers are found from (and the chain walked from).
        server: ask this name server (or recursive resolver) instead of finding the
            zone's servers from the root.
        timeout: seconds to wait for each reply.
        pin_store: the pin store to enforce and update, if any.
        hints_port: the port of every server found from the root hints (53).
    """

    substrate: str | None
    now: int
    anchors: tuple[TrustAnchor, ...]
    root_hints: RootHints
    server: tuple[str, int] | None = None
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    pin_store: Path | None = None
    hints_port: int = DNS_PORT


@dataclass(frozen=True, slots=True)
class Dispatch:
    """A verified URI and where it goes.

    Attributes:
        uri: the parsed URI.
        resolution: the successful resolution (``envelope`` set, DNSSEC secure).
        url: the target: the envelope's ``r=`` joined with the surface.
        pin: what happened to the pin store (see :class:`PinnedResult`).
        server: the name server that answered.
    """

    uri: AlterURI
    resolution: Resolution
    url: str
    pin: str | None
    server: tuple[str, int]


class DispatchGuard(Protocol):
    """A check after verification, before dispatch; it raises to refuse."""

    def __call__(self, dispatch: Dispatch, settings: OpenSettings) -> None:
        """Allow ``dispatch`` (return) or refuse it.

        Raises:
            DispatchError: (category ``refused``) the dispatch must not happen.
        """
        ...


def _resolve(uri: AlterURI, settings: OpenSettings) -> tuple[PinnedResult, tuple[str, int]]:
    """Steps 2 to 4: the answering server, the answer validated and verified.

    Raises:
        HandleError: a non-domain handle without a substrate.
        ResolveError: no name server answered usably.
        UsageError: the pin store is unreadable.
    """
    owner = uri.handle.owner(settings.substrate)
    if settings.server is not None:
        servers: Sequence[tuple[str, int]] = (settings.server,)
    else:
        asker = IterativeAsker(settings.root_hints, settings.timeout, settings.hints_port)
        _, addresses = asker.servers_for(dns.name.from_text(owner))
        servers = [(address, settings.hints_port) for address in addresses[:SERVERS_TRIED_MAX]]
    failure: ResolveError | None = None
    for server in servers:
        try:
            outcome = resolve_pinned(
                uri,
                server=server,
                substrate=settings.substrate,
                now=settings.now,
                pin_store=settings.pin_store,
                anchors=settings.anchors,
                timeout=settings.timeout,
                root_hints=settings.root_hints,
            )
        except ResolveError as exc:
            failure = exc
            continue
        return outcome, server
    raise failure or ResolveError("no name server to ask", where=owner)


def verify_for_dispatch(
    uri: AlterURI, settings: OpenSettings, guards: Sequence[DispatchGuard] = ()
) -> Dispatch:
    """Steps 2 to 5 of draft section 4.4 short of the hand-over: resolve, validate,
    verify, then compute the target and run the guards.

    Returns:
        The dispatch to make (print it, or :func:`launch` its ``url``).

    Raises:
        VerificationError: the handle did not verify (the spec's category: ``bogus``,
            ``insecure``, ``bad-signature``, ``not-found``, ...).
        DispatchError: no usable ``r=`` (``no-resolver``, ``bad-resolver``), a surface
            path that would leave it (``unsafe-path``), or a guard's ``refused``.
        HandleError: a non-domain handle without a substrate.
        ResolveError: no name server answered usably.
        UsageError: the pin store is unreadable.
        RenderError: the pin store cannot be written.
    """
    outcome, server = _resolve(uri, settings)
    result = outcome.resolution
    where = f"{result.owner}: {uri.handle.ref}"
    if not result.ok or result.envelope is None:
        raise VerificationError(result.detail, where=where, category=result.category)
    if result.envelope.resolver is None:
        raise DispatchError(
            "the envelope names no resolver (r=): nothing to dispatch to",
            where=where,
            category="no-resolver",
        )
    url = dispatch_target(result.envelope.resolver, uri)
    dispatch = Dispatch(uri=uri, resolution=result, url=url, pin=outcome.pin, server=server)
    for guard in guards:
        guard(dispatch, settings)
    return dispatch


def opener_argv(url: str, platform: str = sys.platform) -> list[str]:
    """The argv that hands ``url`` to the platform opener (never a shell).

    Raises:
        DispatchError: (``opener-failed``) no opener is known for ``platform``.
    """
    for prefix, opener in OPENERS.items():
        if platform.startswith(prefix):
            return [opener, url]
    raise DispatchError(
        f"no URL opener known for platform {platform!r}; use --print",
        category="opener-failed",
    )


def launch(url: str, *, where: str) -> None:
    """Hand ``url`` to the platform opener: ``xdg-open``, ``open``, or on Windows
    ``os.startfile`` (what ``start`` calls). The opener's output is not shown: it
    would repeat the URL.

    Raises:
        DispatchError: (``opener-failed``) the opener is missing or failed.
    """
    if sys.platform == "win32":
        try:
            os.startfile(url)  # noqa: S606 - ShellExecute of a URL, no shell parsing
        except OSError as exc:
            raise DispatchError(
                f"the URL opener failed ({exc.strerror})", where=where, category="opener-failed"
            ) from exc
        return
    argv = opener_argv(url)
    try:
        completed = subprocess.run(  # noqa: S603 - argv list, no shell
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
    except OSError as exc:
        raise DispatchError(
            f"cannot run {argv[0]} ({exc.strerror})", where=where, category="opener-failed"
        ) from exc
    if completed.returncode != 0:
        raise DispatchError(
            f"{argv[0]} exited with status {completed.returncode}",
            where=where,
            category="opener-failed",
        )
