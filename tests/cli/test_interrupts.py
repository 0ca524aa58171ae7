"""Interrupted runs are harmless: Ctrl-C or SIGTERM at any moment leaves the keys, the
log, the state and the outputs as they were or complete, never a state the next
command refuses; the CLI says ``alter-publish: interrupted`` once and exits 130.

The planted tests build, byte for byte, what a run cut short left before key epochs
were committed by one rename (a revocation secret and a temporary key file, no key).
The signal tests send real signals to a real ``sign`` and its worker processes.
"""

from __future__ import annotations

import base64
import contextlib
import gc
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from alter_publish.errors import EXIT_INTERRUPTED, EXIT_KEY, EXIT_OK
from alter_publish.format.envelope import b64url, revocation_commitment
from tests.cli.conftest import SOURCE_DEFINITION
from tests.cli.workspace import (
    CLI_TIMEOUT_SECONDS,
    NOW,
    PASSPHRASE_ENVS,
    ZONE,
    Result,
    Workspace,
    assert_one_error_line,
    assert_unchanged,
    simulated,
)

INTERRUPTED_LINE = "alter-publish: interrupted"
LATER = NOW + 24 * 3600
SECRET_OCTETS = 32
#: A key file cut short: what ``.<epoch>.pem.<random>.tmp`` held when the run stopped.
#: (Not a key: the first 21 base64 characters of any Ed25519 PKCS#8 PEM, cut short.)
PARTIAL_PEM = b"-----BEGIN " + b"PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI"


def _now(moment: int) -> tuple[str, str]:
    return ("--now", str(moment))


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(0o600)


def _plant_half_made(key_dir: Path, epoch: int) -> bytes:
    """What Ctrl-C left of ``epoch`` before the fix: its secret and a temporary key file."""
    secret = os.urandom(SECRET_OCTETS)
    _write_private(key_dir / f"{epoch}.secret", (b64url(secret) + "\n").encode())
    _write_private(key_dir / f".{epoch}.pem.k3q9xw_2.tmp", PARTIAL_PEM)
    return secret


def _names(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


def _ok(result: Result) -> Result:
    assert result.returncode == EXIT_OK, result.describe()
    assert "Traceback" not in result.stderr, result.describe()
    return result


@pytest.fixture
def fresh(tmp_path: Path) -> Workspace:
    """A workspace with the example.com definition and no keys yet."""
    workspace = Workspace(tmp_path / "fresh")
    (workspace.root / "zones").mkdir(parents=True)
    shutil.copyfile(SOURCE_DEFINITION, workspace.definition)
    return workspace


def test_sign_create_keys_finishes_over_a_half_made_first_key(fresh: Workspace) -> None:
    planted = _plant_half_made(fresh.key_dir("blake"), 1)
    status = _ok(fresh.run("keys", "status", *_now(NOW)))
    (blake_next,) = [line for line in status.stdout.splitlines() if "~blake: expires" in line]
    assert "exists already" not in status.stdout
    assert "cut short" in blake_next, status.describe()
    assert "sign --create-keys" in blake_next, status.describe()
    assert "1:?:unfinished" in status.stdout, status.describe()

    _ok(fresh.run("sign", "--create-keys", *simulated(NOW)))
    assert _names(fresh.key_dir("blake")) == ["1.pem", "1.secret"]
    secret_text = (fresh.key_dir("blake") / "1.secret").read_text().strip()
    assert secret_text != b64url(planted)  # the leftover was discarded, not published
    _ok(fresh.run("verify", *_now(NOW)))
    status = _ok(fresh.run("keys", "status", *_now(NOW)))
    assert "unfinished" not in status.stdout
    assert "cut short" not in status.stdout


def test_keygen_finishes_over_a_half_made_first_key(fresh: Workspace) -> None:
    _plant_half_made(fresh.key_dir("blake"), 1)
    _ok(fresh.run("keygen", "~blake", "--zone", ZONE))
    assert _names(fresh.key_dir("blake")) == ["1.pem", "1.secret"]
    _ok(fresh.run("sign", *simulated(NOW), "--create-keys"))
    _ok(fresh.run("verify", *_now(NOW)))


def test_a_half_made_rotation_epoch_is_made_anew_by_the_next_rotate(
    workspace: Workspace,
) -> None:
    key_dir = workspace.key_dir("blake")
    published = (key_dir / "1.pem").read_bytes()
    _plant_half_made(key_dir, 2)
    # Epoch 1 stays published and signed meanwhile.
    _ok(workspace.run("sign", *simulated(LATER)))
    status = _ok(workspace.run("keys", "status", *_now(LATER)))
    assert "2:?:unfinished" in status.stdout, status.describe()
    assert "the next rotate discards" in status.stdout, status.describe()

    _ok(workspace.run("rotate", "~blake", "--zone", ZONE, *simulated(LATER)))
    assert _names(key_dir) == ["1.pem", "1.secret", "2.json", "2.pem", "2.secret"]
    assert (key_dir / "1.pem").read_bytes() == published
    _ok(workspace.run("sign", *simulated(LATER)))
    _ok(workspace.run("verify", *_now(LATER)))
    assert "e=2" in _published_record(workspace, "blake"), "epoch 2 not published"
    status = _ok(workspace.run("keys", "status", *_now(LATER)))
    assert "unfinished" not in status.stdout


def test_a_half_made_rotation_with_an_offline_secret_is_made_anew(workspace: Workspace) -> None:
    """``rotate --secret-out F`` cut short left F and ``2.rc``: the same command works again."""
    key_dir = workspace.key_dir("blake")
    offline = workspace.root / "offline" / "blake-2.secret"
    secret = os.urandom(SECRET_OCTETS)
    _write_private(offline, (b64url(secret) + "\n").encode())
    (key_dir / "2.rc").write_text(b64url(revocation_commitment(secret)) + "\n")
    _write_private(key_dir / ".2.pem.0a1b2c3d.tmp", PARTIAL_PEM)
    args = ("rotate", "~blake", "--zone", ZONE, "--secret-out", "offline/blake-2.secret")
    _ok(workspace.run(*args, *simulated(LATER)))
    new_secret = base64.urlsafe_b64decode(offline.read_text().strip() + "=")
    assert new_secret != secret
    rc = (key_dir / "2.rc").read_text().strip()
    assert rc == b64url(revocation_commitment(new_secret))
    assert _names(key_dir) == ["1.pem", "1.secret", "2.json", "2.pem", "2.rc"]
    _ok(workspace.run("sign", *simulated(LATER)))
    _ok(workspace.run("verify", *_now(LATER)))


def test_an_offline_secret_of_another_epoch_is_still_refused(workspace: Workspace) -> None:
    """Only the secret of the unfinished epoch itself may be replaced."""
    key_dir = workspace.key_dir("blake")
    (key_dir / "2.rc").write_text(b64url(revocation_commitment(os.urandom(32))) + "\n")
    _write_private(workspace.root / "taken.secret", (b64url(os.urandom(32)) + "\n").encode())
    before = workspace.snapshot()
    result = workspace.run(
        "rotate", "~blake", "--zone", ZONE, "--secret-out", "taken.secret", *simulated(LATER)
    )
    assert "exists already" in assert_one_error_line(result, EXIT_KEY)
    assert_unchanged(before, workspace.snapshot())


def test_sign_create_keys_never_replaces_a_published_key(workspace: Workspace) -> None:
    """A published handle whose key is gone is not a half-made epoch: its secret stays."""
    key_dir = workspace.key_dir("blake")
    (key_dir / "1.pem").unlink()
    before = workspace.snapshot()
    result = workspace.run("sign", "--create-keys", *simulated(LATER))
    line = assert_one_error_line(result, EXIT_KEY)
    assert "~blake" in line, result.describe()
    assert "--lost" in line, result.describe()
    assert_unchanged(before, workspace.snapshot())


def _published_record(workspace: Workspace, name: str) -> str:
    owner = f"_alter.{name}.{ZONE}."
    for line in workspace.zone_file.read_text().splitlines():
        if line.startswith(owner) and " TXT " in line:
            return line
    raise AssertionError(f"no TXT record for {owner}")


# --- real signals ------------------------------------------------------------------------

#: Enough handles that key loading, signing and the proof run in worker processes
#: (parallel.PARALLEL_MIN_ITEMS) and that each stage lasts long enough to be hit.
SIGNAL_HANDLES = 4000
#: Handles given keys beforehand (quickly, without fsync): --create-keys makes the rest.
PREMADE_KEYS = 3000
SIGNAL_ZONE = "big.example"
POLL_SECONDS = 0.02
NO_ENCRYPTION = serialization.NoEncryption()


def _big_workspace(root: Path) -> Workspace:
    lines = [
        f"zone: {SIGNAL_ZONE}",
        "ttl: 1h",
        f"ns: [ns1.{SIGNAL_ZONE}.]",
        "hosts: {ns1: [192.0.2.1]}",
        "envelopes: {lifetime: 1d, renew_before: 12h}",
        "dnssec: {enabled: true, denial: nsec}",
        "handles:",
        f"  - handle: ~{SIGNAL_ZONE}",
        *(f"  - ~user{n}" for n in range(1, SIGNAL_HANDLES)),
    ]
    definition = root / "zones" / f"{SIGNAL_ZONE}.yaml"
    definition.parent.mkdir(parents=True)
    definition.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for n in range(1, PREMADE_KEYS + 1):
        pem = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, NO_ENCRYPTION
        )
        key_dir = root / "keys" / SIGNAL_ZONE / f"user{n}"
        _write_private(key_dir / "1.pem", pem)
        _write_private(key_dir / "1.secret", (b64url(os.urandom(SECRET_OCTETS)) + "\n").encode())
    return Workspace(root)


def _interrupt(
    workspace: Workspace, args: tuple[str, ...], when: Callable[[int], bool], signum: int
) -> Result:
    """Run the CLI as a terminal would (its own process group: Ctrl-C reaches every
    process in it), send ``signum`` to the group once ``when(pid)`` holds."""
    environ = {k: v for k, v in os.environ.items() if k not in PASSPHRASE_ENVS}
    process = subprocess.Popen(
        [sys.executable, "-c", "from alter_publish.cli import main; main()", *args],
        cwd=workspace.root,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # As a terminal's shell starts a foreground job: SIGINT not ignored, whatever this
        # process inherited (a CI started in the background without job control ignores it).
        preexec_fn=_sigint_default,
    )
    try:
        deadline = time.monotonic() + CLI_TIMEOUT_SECONDS
        while not when(process.pid):
            assert process.poll() is None, "the run ended before the moment came"
            assert time.monotonic() < deadline, "the moment never came"
            time.sleep(POLL_SECONDS)
        os.killpg(process.pid, signum)
        stdout, stderr = process.communicate(timeout=CLI_TIMEOUT_SECONDS)
    finally:
        for pid in (*_children(process.pid), process.pid):  # a hung run, and its workers
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.communicate()
    return Result(args, process.returncode, stdout, stderr)


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _children(pid: int) -> list[int]:
    try:
        return [
            int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        ]
    except OSError:
        return []


def _assert_interrupted(result: Result) -> None:
    assert result.returncode == EXIT_INTERRUPTED, result.describe()
    assert result.stderr == INTERRUPTED_LINE + "\n", result.describe()


def _handle_dirs(workspace: Workspace) -> list[Path]:
    zone_keys = workspace.root / "keys" / SIGNAL_ZONE
    if not zone_keys.is_dir():
        return []
    # Not _dnssec, nor the key store's journal (.changes) and its temporary files.
    return [path for path in zone_keys.iterdir() if path.name[0] not in "_."]


def _keys_made(workspace: Workspace, count: int) -> Callable[[int], bool]:
    return lambda pid: len(_handle_dirs(workspace)) >= count


def _proving(pid: int) -> bool:
    """The proof stage has begun: ``sign`` started its fresh-interpreter workers."""
    for child in _children(pid):
        try:
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def _assert_whole_epochs(workspace: Workspace) -> None:
    """Every handle directory holds a whole epoch 1 and nothing else (no temp files)."""
    for directory in _handle_dirs(workspace):
        assert _names(directory) == ["1.pem", "1.secret"], directory


# Not marked slow (about 30 s): in two CI runs it saw the run finish (exit 0) after its
# Ctrl-C. The likely cause, a Ctrl-C discarded while workers started (SIGINT ignored
# process-wide, taken by another thread), is fixed and pinned by
# tests/unit/test_interrupts_threads.py; this stays in the default run meanwhile.
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_ctrl_c_and_sigterm_leave_nothing_the_next_run_refuses(tmp_path: Path) -> None:
    workspace = _big_workspace(tmp_path / "big")
    sign = ("sign", "--create-keys", "--jobs", "2")

    # Ctrl-C while the keys are made, then SIGTERM a little later in the next run.
    made = PREMADE_KEYS + 100
    result = _interrupt(
        workspace, (*sign, *simulated(NOW)), _keys_made(workspace, made), signal.SIGINT
    )
    _assert_interrupted(result)
    _assert_whole_epochs(workspace)
    assert not (workspace.root / "build").exists()
    made = len(_handle_dirs(workspace))
    result = _interrupt(
        workspace, (*sign, *simulated(NOW)), _keys_made(workspace, made + 100), signal.SIGTERM
    )
    _assert_interrupted(result)
    _assert_whole_epochs(workspace)

    _ok(workspace.run(*sign, *simulated(NOW)))
    _ok(workspace.run("verify", *_now(NOW)))

    # Ctrl-C while a day later's run re-signs and proves: everything stays as it was.
    before = workspace.snapshot()
    result = _interrupt(workspace, (*sign, *simulated(LATER)), _proving, signal.SIGINT)
    _assert_interrupted(result)
    assert_unchanged(before, workspace.snapshot())
    _ok(workspace.run(*sign, *simulated(LATER)))
    _ok(workspace.run("verify", *_now(LATER)))


def test_main_in_process_leaves_the_callers_signal_handlers() -> None:
    """Tests and embedders call main() in their own process: their handlers stay as they were
    (an ignored SIGINT would be inherited by every child process started afterwards)."""
    from alter_publish.cli import main

    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    with pytest.raises(SystemExit):
        main(["--version"])
    assert {signum: signal.getsignal(signum) for signum in before} == before


def test_main_runs_with_the_commands_gc_thresholds_and_restores_the_callers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command's millions of long-lived objects are not walked every 700 allocations;
    an embedder's thresholds are theirs again afterwards."""
    from alter_publish.cli import app, main

    seen: list[tuple[int, ...]] = []
    monkeypatch.setattr(app, "_main", lambda argv: seen.append(gc.get_threshold()))
    before = gc.get_threshold()
    main(["--version"])
    assert seen == [app.GC_THRESHOLDS]
    assert gc.get_threshold() == before != app.GC_THRESHOLDS
