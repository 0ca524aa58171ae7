"""``open``: the alter URI scheme draft's section 4.4, in order, then the dispatch.

1. parse (the caller: :func:`~alter_publish.format.handles.parse_uri`);
2. find the handle's publishing zone: the owner name from the handle and substrate,
   and the name servers that answer for it, found from the root hints by following
   referrals (or ``--server``);
3. retrieve ``_alter.<domain>`` TXT and DNSSEC-validate it from the trust anchors (the
   shipped IANA root anchors by default: the chain is walked down from the root);
4. verify the envelope (spec sections 6 and 7, the pin store's policy if one is given);
5. only then: the target URL from the envelope's ``r=`` and the surface
   (:func:`~alter_publish.format.uri.dispatch_target`), the dispatch guards (DANE:
   :func:`dane_guard`); the hand-over to the platform opener is
   :mod:`alter_publish.publish.opener`'s.

Nothing before step 5 writes a file, logs a line or connects anywhere but the name
servers (draft 7.1); a failure at any step raises and nothing is dispatched. Errors name
the handle and owner, never the surface path, query or fragment (draft 7.3).

A :class:`DispatchGuard` is a check that runs after verification and before the
dispatch: :func:`dane_guard` compares the resolver endpoint's DNSSEC-validated TLSA with
the certificate it presents, and raises :class:`~alter_publish.errors.DispatchError`
(category ``refused``) when they differ; it is the first connection to the endpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import dns.name

from alter_publish.dns.anchors import TrustAnchor
from alter_publish.dns.hints import RootHints
from alter_publish.dns.iterate import DNS_PORT, SERVERS_TRIED_MAX, IterativeAsker
from alter_publish.errors import DispatchError, ResolveError, VerificationError
from alter_publish.format.handles import AlterURI
from alter_publish.format.uri import dispatch_target
from alter_publish.verify.dane import DaneLookup, check_endpoint, lookup_from_root, lookup_through
from alter_publish.verify.pinning import PinnedResult, resolve_pinned
from alter_publish.verify.resolve import DEFAULT_TIMEOUT_SECONDS, Resolution

__all__ = [
    "Dispatch",
    "DispatchGuard",
    "OpenSettings",
    "dane_guard",
    "verify_for_dispatch",
]


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


def dane_guard(dispatch: Dispatch, settings: OpenSettings) -> None:
    """Refuse an https resolver whose DNSSEC-validated TLSA does not match the
    certificate its endpoint presents (RFC 6698, 7671; :mod:`alter_publish.verify.dane`).

    The TLSA is looked up as the handle was: through ``--server`` (asked as a resolver,
    RD and CD set) or from the root hints. No TLSA, or an insecure one, lets the dispatch
    go on (DANE is opt-in for the zone owner); a bogus one, a failed lookup, an
    unreachable endpoint or a mismatch refuse it.

    Raises:
        DispatchError: (category ``refused``) the endpoint fails DANE.
    """
    if settings.server is not None:
        lookup: DaneLookup = lookup_through(
            settings.server,
            settings.anchors,
            now=settings.now,
            timeout=settings.timeout,
            recursive=True,
        )
    else:
        lookup = lookup_from_root(
            settings.root_hints,
            settings.anchors,
            now=settings.now,
            timeout=settings.timeout,
            port=settings.hints_port,
        )
    verdict = check_endpoint(dispatch.url, lookup, settings.timeout)
    if verdict.blocks_dispatch:
        raise DispatchError(
            f"DANE {verdict.category} at {verdict.host}:{verdict.port}: {verdict.detail}",
            where=f"{dispatch.resolution.owner}: {dispatch.uri.handle.ref}",
            category="refused",
        )
