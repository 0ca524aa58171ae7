"""The hand-over of a verified ``alter:`` URI to the platform's URL opener (draft 4.4,
its last step), after :func:`~alter_publish.verify.dispatch.verify_for_dispatch`.

The opener runs as an argv list, never a shell: ``xdg-open`` (Linux, the BSDs), ``open``
(macOS), and on Windows ``os.startfile``, the ShellExecute that ``start`` calls, without
cmd.exe parsing ``&`` or ``^`` in the URL. Its output is discarded: it would repeat the
URL, whose surface path must not reach logs (draft 7.3).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Final

from alter_publish.errors import DispatchError
from alter_publish.format.handles import AlterURI
from alter_publish.verify.dispatch import (
    Dispatch,
    OpenSettings,
    dane_guard,
    verify_for_dispatch,
)

__all__ = ["OPENERS", "launch", "open_uri", "opener_argv"]

#: The platform openers by ``sys.platform`` prefix (Windows: ``os.startfile``, the
#: ShellExecute that ``start`` calls, without cmd.exe parsing ``&`` or ``^`` in the URL).
OPENERS: Final = {
    "linux": "xdg-open",
    "freebsd": "xdg-open",
    "openbsd": "xdg-open",
    "darwin": "open",
}


def open_uri(uri: AlterURI, settings: OpenSettings, *, launch_it: bool) -> Dispatch:
    """Resolve, validate and verify ``uri``, then (``launch_it``) check the resolver
    endpoint's DANE and hand the target to the platform opener; without ``launch_it``
    nothing connects to the endpoint and the caller prints the target.

    Raises:
        VerificationError: the handle did not verify (its spec category).
        DispatchError: no usable ``r=``, an unsafe path, DANE refused the endpoint, or
            the opener failed.
        HandleError: a non-domain handle without a substrate.
        ResolveError: no name server answered usably.
        UsageError: the pin store is unreadable.
        RenderError: the pin store cannot be written.
    """
    guards = (dane_guard,) if launch_it else ()
    dispatch = verify_for_dispatch(uri, settings, guards)
    if launch_it:
        launch(dispatch.url, where=uri.handle.ref)
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
