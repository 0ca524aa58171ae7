"""A Ctrl-C that arrives while forked workers start is held, then delivered: never lost.

``starting_workers`` blocks SIGINT in the calling thread. It used to set SIGINT's
disposition to ignore as well, which is process-wide: a SIGINT then taken by another
thread of the run that does not block it (a server or progress thread) was discarded,
and a ``sign`` told to stop went on to the end (seen in CI: exit 0 after a Ctrl-C).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from alter_publish.interrupts import starting_workers
from alter_publish.pipeline.signing import _remove_quietly


def _ctrl_c_while_workers_start() -> None:
    with starting_workers():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # the other thread had its chance to take it
    time.sleep(0.2)  # delivered when the block ends, at the latest here


def test_a_ctrl_c_while_workers_start_reaches_the_main_thread_with_other_threads_alive() -> None:
    # Python's own Ctrl-C handler, whatever this process inherited (a CI started in the
    # background without job control starts with SIGINT ignored).
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    done = threading.Event()
    other = threading.Thread(target=done.wait, args=(5,), daemon=True)  # SIGINT unblocked
    other.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            _ctrl_c_while_workers_start()
    finally:
        done.set()
        other.join()
        signal.signal(signal.SIGINT, inherited)


def test_the_thread_removing_retired_generations_leaves_interrupts_to_the_main_one(
    tmp_path: Path,
) -> None:
    # It runs while workers start: a Ctrl-C it took then would be lost (see above).
    retired = tmp_path / "g1.retired"
    retired.mkdir()
    masks: list[set[int | signal.Signals]] = []

    def remove() -> None:
        assert _remove_quietly([retired]) == [retired]
        masks.append(signal.pthread_sigmask(signal.SIG_BLOCK, []))

    thread = threading.Thread(target=remove)
    thread.start()
    thread.join()
    assert masks
    assert {signal.SIGINT, signal.SIGTERM} <= masks[0]
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
