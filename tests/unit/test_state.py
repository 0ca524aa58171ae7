"""The zone digest made in a thread (``definition.state.zone_sha256_soon``); the thread
itself, and what happens when none can start: tests/unit/test_threads.py."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from alter_publish.definition.state import zone_sha256_soon


class _Held(list[Any]):
    """Parts whose iteration waits until ``release`` is set (at most 5 s)."""

    def __init__(self, parts: list[Any], release: threading.Event) -> None:
        super().__init__(parts)
        self.release = release

    def __iter__(self) -> Iterator[Any]:
        if not self.release.wait(timeout=5):
            raise AssertionError("the caller waited for the digest")
        return super().__iter__()


def test_the_caller_goes_on_while_the_digest_is_made() -> None:
    release = threading.Event()
    result = zone_sha256_soon(_Held(["zone text\n", memoryview(b"more\n")], release))
    release.set()  # only reached when the call returned before hashing
    assert result() == hashlib.sha256(b"zone text\nmore\n").hexdigest()


def test_what_the_thread_raised_is_raised_when_the_digest_is_asked_for() -> None:
    result = zone_sha256_soon(["a", 17])  # type: ignore[list-item]  # not a text or chunk
    with pytest.raises(TypeError):
        result()
