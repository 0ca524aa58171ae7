"""The pieces of ``sign``: render, commit (the write order) and the reuse strategies.

Real workspaces in tmp_path (the shipped example zone, real keys), no mocks.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dns.rdatatype
import pytest

from alter_publish import parallel
from alter_publish.definition.model import load_zone
from alter_publish.definition.state import SerialState, state_path_for, zone_sha256_soon
from alter_publish.dns.zonetext import parse_zone_text
from alter_publish.errors import AlterError, DefinitionError, RenderError
from alter_publish.fileio import write_temporary
from alter_publish.format.ed25519 import SigningKey
from alter_publish.format.identitylog import log_path_for, read_log
from alter_publish.keys.lifecycle import LogIndex
from alter_publish.keys.store import KeyStore
from alter_publish.mapped import MappedFile
from alter_publish.outputset import Staging
from alter_publish.pipeline import commit as commit_module
from alter_publish.pipeline import default_templates_dir, output_paths, sign
from alter_publish.pipeline import memory as memory_module
from alter_publish.pipeline import patch as patch_module
from alter_publish.pipeline.build import find_layout, render
from alter_publish.pipeline.chain import LoadedKey, decide
from alter_publish.pipeline.commit import Chunks, Text, Writes, commit
from alter_publish.pipeline.context import RunContext, ZoneStart
from alter_publish.pipeline.fingerprint import fingerprint_path
from alter_publish.pipeline.full import Loaded, Planned, full
from alter_publish.pipeline.incremental import apply_edits
from alter_publish.pipeline.memory import patch_record_later
from alter_publish.pipeline.patch import Patched, patched
from alter_publish.pipeline.patchbase import patch_base
from alter_publish.pipeline.patchmemo import memo_after
from alter_publish.pipeline.plan import plan_zone
from alter_publish.pipeline.reports import Stopwatch
from alter_publish.pipeline.unchanged import Unchanged, unchanged
from alter_publish.pipeline.verification import expectations_for, read_expected
from alter_publish.threads import soon
from alter_publish.verify import proof
from tests.conftest import NOW, Workspace

ZONE = "example.com"
MINUTE = 60
DAY = 86_400


def _ctx(
    ws: Workspace,
    now: int = NOW,
    *,
    create_keys: bool = False,
    verify: bool = True,
    check: bool = False,
    incremental: bool = True,
) -> RunContext:
    return RunContext(
        out=ws.out,
        keys=ws.keys,
        templates=default_templates_dir(),
        now=now,
        create_keys=create_keys,
        verify=verify,
        check=check,
        incremental=incremental,
    )


def _signed(ws: Workspace) -> Workspace:
    """The example zone signed once (keys created): the last proven run."""
    report = sign([ws.zone_file], out=ws.out, keys=ws.keys, now=NOW, create_keys=True)
    assert report.ok
    return ws


def _outputs(ws: Workspace) -> dict[str, bytes]:
    return {
        str(path.relative_to(ws.root)): path.read_bytes()
        for path in sorted(ws.root.rglob("*"))
        if path.is_file() and "keys" not in path.parts
    }


def _edit_drew_back(ws: Workspace) -> None:
    text = ws.zone_file.read_text()
    edited = "  - {handle: ~drew, resolver: 'https://example.com/d'}\n"
    assert edited in text
    ws.zone_file.write_text(text.replace(edited, "  - ~drew\n"))


def _edit_drew(ws: Workspace) -> None:
    text = ws.zone_file.read_text()
    assert "  - ~drew\n" in text
    ws.zone_file.write_text(
        text.replace("  - ~drew\n", "  - {handle: ~drew, resolver: 'https://example.com/d'}\n")
    )


def _drew_edited(workspace: Workspace) -> tuple[Workspace, RunContext]:
    """The example zone signed, then ``~drew`` edited: a patch's context a minute later."""
    ws = _signed(workspace)
    _edit_drew(ws)
    return ws, _ctx(ws, now=NOW + MINUTE)


# --- render ------------------------------------------------------------------------


def test_render_gives_zone_text_with_every_handle_and_the_serial(workspace: Workspace) -> None:
    ctx = _ctx(workspace, create_keys=True)
    spec = load_zone(workspace.zone_file)
    plan = plan_zone(ctx, spec, Stopwatch())
    rendered = render(ctx, spec, plan.signed, None, None, ())
    assert rendered.serial == NOW  # no state yet: the serial is the time
    zone = parse_zone_text(rendered.text, ZONE, where="test")
    soa = zone.find_rdataset("@", dns.rdatatype.SOA)[0]
    assert soa.serial == NOW
    for item in plan.signed:
        txt = zone.find_rdataset(item.spec.owner, dns.rdatatype.TXT)
        assert b"".join(txt[0].strings).decode() == item.envelope.to_text()


def test_render_digest_is_the_content_not_the_serial(workspace: Workspace) -> None:
    ctx = _ctx(workspace, create_keys=True)
    spec = load_zone(workspace.zone_file)
    signed = plan_zone(ctx, spec, Stopwatch()).signed
    first = render(ctx, spec, signed, None, None, ())
    later = render(dataclasses.replace(ctx, now=NOW + MINUTE), spec, signed, None, None, ())
    assert (first.serial, later.serial) == (NOW, NOW + MINUTE)
    assert first.digest == later.digest
    kept = SerialState(serial=first.serial, digest=first.digest)
    assert render(ctx, spec, signed, kept, None, ()).serial == first.serial  # same content


def test_render_layout_points_at_each_handles_lines(workspace: Workspace) -> None:
    ctx = _ctx(workspace, create_keys=True)
    spec = load_zone(workspace.zone_file)
    signed = plan_zone(ctx, spec, Stopwatch()).signed
    rendered = render(ctx, spec, signed, None, None, ())
    layout = rendered.layout
    assert layout is not None
    data = rendered.text.encode()
    assert data[layout.serial_at :].startswith(str(NOW).encode())
    assert len(layout.segments) == len(signed) + 1
    for item, start, end in zip(signed, layout.segments, layout.segments[1:], strict=False):
        assert item.spec.owner.encode() in data[start:end]
    assert find_layout(rendered.text, -1, ()) is None  # no serial found: not as shipped


# --- commit ------------------------------------------------------------------------


def _writes(ws: Workspace, events: list[tuple[str, bool]], ds: bytes | None) -> Writes:
    zone_file, _ = output_paths(ws.out, ZONE)

    def append_log() -> None:
        events.append(("log", state_path_for(ws.zone_file).exists() or zone_file.exists()))

    return Writes(
        definition=ws.zone_file,
        zone=ZONE,
        log_path=ws.log,
        append_log=append_log,
        state=SerialState(serial=7, digest="d"),
        zone_file=Text(("zone 1\n", "zone 2\n")),
        envelopes_file=Text(('{"handles": []}\n',)),
        ds=ds,
    )


def test_commit_writes_the_log_first_then_state_then_outputs(workspace: Workspace) -> None:
    events: list[tuple[str, bool]] = []
    written = commit(_ctx(workspace), _writes(workspace, events, b"ds\n"))
    assert events == [("log", False)]  # the log before any other file
    zone_file, envelopes_file = output_paths(workspace.out, ZONE)
    state = state_path_for(workspace.zone_file)
    ds_file = workspace.out / f"{ZONE}.ds"
    assert written == [str(p) for p in (workspace.log, state, zone_file, envelopes_file, ds_file)]
    assert zone_file.read_text() == "zone 1\nzone 2\n"
    assert SerialState.read(state) == SerialState(serial=7, digest="d")
    assert commit(_ctx(workspace), dataclasses.replace(_writes(workspace, [], b"ds\n"))) == [
        str(workspace.log)  # the same bytes again: only the (appended) log is written
    ]


def _meeting(name: str, met: threading.Event, other: threading.Event) -> Iterator[bytes]:
    """A file's bytes that are written only once the other file's writing has begun."""
    met.set()
    if not other.wait(timeout=10):
        raise AssertionError(f"{name} was written alone: the files are written one by one")
    yield f"{name}\n".encode()


def test_commit_writes_a_patchs_output_files_side_by_side(workspace: Workspace) -> None:
    zone_started, envelopes_started = threading.Event(), threading.Event()
    writes = dataclasses.replace(
        _writes(workspace, [], None),
        zone_file=Chunks(_meeting("zone", zone_started, envelopes_started)),
        envelopes_file=Chunks(_meeting("envelopes", envelopes_started, zone_started)),
    )
    commit(_ctx(workspace), writes)
    zone_file, envelopes_file = output_paths(workspace.out, ZONE)
    assert (zone_file.read_text(), envelopes_file.read_text()) == ("zone\n", "envelopes\n")


def test_text_is_rendered_in_the_callers_thread(workspace: Workspace) -> None:
    where: list[str] = []

    def rendered(name: str) -> Iterator[str]:
        where.append(threading.current_thread().name)
        yield f"{name}\n"

    writes = dataclasses.replace(
        _writes(workspace, [], None),
        zone_file=Text(rendered("zone")),
        envelopes_file=Text(rendered("envelopes")),
    )
    commit(_ctx(workspace), writes)
    assert where == [threading.main_thread().name] * 2


def test_one_files_failed_write_leaves_the_whole_previous_set(workspace: Workspace) -> None:
    commit(_ctx(workspace), _writes(workspace, [], b"ds\n"))
    zone_file, envelopes_file = output_paths(workspace.out, ZONE)
    before = (zone_file.read_text(), envelopes_file.read_text())

    def failing() -> Iterator[str]:
        yield "half a zone\n"
        raise RenderError("the template failed", where="zone.j2")

    writes = dataclasses.replace(
        _writes(workspace, [], b"ds\n"),
        zone_file=Text(failing()),
        envelopes_file=Text(('{"handles": ["new"]}\n',)),
    )
    with pytest.raises(RenderError, match="the template failed"):
        commit(_ctx(workspace), writes)
    assert (zone_file.read_text(), envelopes_file.read_text()) == before
    assert [p.name for p in workspace.out.rglob("*.tmp")] == []
    assert not [t for t in threading.enumerate() if t.name.startswith("write ")]


def test_the_work_given_to_do_meanwhile_is_done_while_the_outputs_are_written(
    workspace: Workspace,
) -> None:
    done_meanwhile, zone_started = threading.Event(), threading.Event()
    writes = dataclasses.replace(
        _writes(workspace, [], None),
        zone_file=Chunks(_meeting("zone", zone_started, done_meanwhile)),
    )
    commit(_ctx(workspace), writes, meanwhile=done_meanwhile.set)
    zone_file, _ = output_paths(workspace.out, ZONE)
    assert zone_file.read_text() == "zone\n"


def test_work_done_meanwhile_that_fails_switches_no_output(workspace: Workspace) -> None:
    commit(_ctx(workspace), _writes(workspace, [], b"ds\n"))
    zone_file, _ = output_paths(workspace.out, ZONE)

    def failing() -> None:
        raise RenderError("the record failed", where="memo")

    writes = dataclasses.replace(_writes(workspace, [], b"ds\n"), zone_file=Text(("new\n",)))
    with pytest.raises(RenderError, match="the record failed"):
        commit(_ctx(workspace), writes, meanwhile=failing)
    assert zone_file.read_text() == "zone 1\nzone 2\n"
    assert not [t for t in threading.enumerate() if t.name.startswith("write ")]


def test_a_check_run_writes_nothing_but_says_what_it_would(workspace: Workspace) -> None:
    events: list[tuple[str, bool]] = []
    written = commit(_ctx(workspace, check=True), _writes(workspace, events, b"ds\n"))
    assert events == []
    assert len(written) == 5
    assert not workspace.out.exists()
    assert not state_path_for(workspace.zone_file).exists()


@pytest.mark.parametrize("check", [False, True], ids=["write", "check"])
def test_commit_removes_a_stale_ds_of_an_unsigned_zone(workspace: Workspace, check: bool) -> None:
    ds_file = workspace.out / f"{ZONE}.ds"
    ds_file.parent.mkdir()
    ds_file.write_text("stale\n")
    written = commit(_ctx(workspace, check=check), _writes(workspace, [], b""))
    said = "would be removed" if check else "removed"
    assert written[-1] == f"{ds_file} ({said}: the zone is unsigned)"
    assert ds_file.exists() == check


def test_nothing_is_written_when_a_proof_failed(workspace: Workspace) -> None:
    ctx = _ctx(workspace, create_keys=True)
    run = full(ctx, ZoneStart.read(ctx, workspace.zone_file)).prove(ctx)
    assert isinstance(run, Planned)
    assert run.proven
    result = run.commit(ctx, False)  # another zone's proof failed
    assert result.written == ()
    assert not workspace.out.exists()
    assert not workspace.log.exists()


# --- strategies --------------------------------------------------------------------


def test_without_a_record_only_the_full_run_applies(workspace: Workspace) -> None:
    ctx = _ctx(workspace)
    start = ZoneStart.read(ctx, workspace.zone_file)
    assert start.record is None
    assert unchanged(ctx, start) is None
    assert patched(ctx, start) is None
    assert isinstance(full(ctx, start), Loaded)


def test_unchanged_when_nothing_changed(workspace: Workspace) -> None:
    ws = _signed(workspace)
    before = _outputs(ws)
    ctx = _ctx(ws, now=NOW + MINUTE)
    run = unchanged(ctx, ZoneStart.read(ctx, ws.zone_file))
    assert isinstance(run, Unchanged)
    result = run.commit(ctx, True)
    assert result.unchanged
    assert (result.signed, result.written) == (0, ())
    assert _outputs(ws) == before


@pytest.mark.parametrize(
    "change",
    ["definition", "output", "options", "incremental-off"],
)
def test_unchanged_returns_none_when_an_input_changed(workspace: Workspace, change: str) -> None:
    ws = _signed(workspace)
    ctx = _ctx(ws, now=NOW + MINUTE)
    if change == "definition":
        _edit_drew(ws)
    elif change == "output":
        ws.rendered.write_text(ws.rendered.read_text() + "; edited\n")
    elif change == "options":
        ctx = _ctx(ws, now=NOW + MINUTE, verify=False)  # other options: another fingerprint
    else:
        ctx = _ctx(ws, now=NOW + MINUTE, incremental=False)
    assert unchanged(ctx, ZoneStart.read(ctx, ws.zone_file)) is None


def test_unchanged_returns_none_once_something_falls_due(workspace: Workspace) -> None:
    ws = _signed(workspace)
    ctx = _ctx(ws, now=NOW + 40 * 86400)  # envelopes and RRSIGs due for renewal
    assert unchanged(ctx, ZoneStart.read(ctx, ws.zone_file)) is None
    assert ctx.digests == {}  # the time alone decided: no input was hashed


def test_unchanged_hashes_the_inputs_inside_its_span(workspace: Workspace) -> None:
    ws = _signed(workspace)
    ctx = _ctx(ws, now=NOW + MINUTE)
    assert unchanged(ctx, ZoneStart.read(ctx, ws.zone_file)) is not None
    assert ctx.digests  # the definition, log and state were compared by content


def test_unchanged_says_no_to_an_edited_definition_before_hashing_anything_else(
    workspace: Workspace,
) -> None:
    ws, ctx = _drew_edited(workspace)
    start = ZoneStart.read(ctx, ws.zone_file)
    assert start.record is not None
    assert start.record.source_sha256
    assert unchanged(ctx, start) is None
    assert [key[0] for key in ctx.digests] == [str(ws.zone_file)]  # no log, state, keys


def test_patched_takes_just_the_handle_edited(workspace: Workspace) -> None:
    ws, ctx = _drew_edited(workspace)
    start = ZoneStart.read(ctx, ws.zone_file)
    assert unchanged(ctx, start) is None
    run = patched(ctx, start)
    assert isinstance(run, Patched)
    assert run.proven
    result = run.commit(ctx, True)
    assert result.patched == ("~drew",)
    assert "https://example.com/d" in ws.rendered.read_text()


def test_a_patchs_record_that_could_not_be_made_ready_is_made_after_its_outputs(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, ctx = _drew_edited(workspace)
    run = patched(ctx, ZoneStart.read(ctx, ws.zone_file))
    assert isinstance(run, Patched)
    made = patch_record_later
    calls: list[bool] = []

    def fails_once(*args: Any) -> Any:
        calls.append(True)
        if len(calls) == 1:  # while the outputs are written
            raise RenderError("not ready", where="memo")
        return made(*args)

    monkeypatch.setattr(patch_module, "patch_record_later", fails_once)
    run.commit(ctx, True)
    assert len(calls) == 2  # failed meanwhile, then made after the switch
    later = _ctx(ws, now=NOW + MINUTE)
    assert unchanged(later, ZoneStart.read(later, ws.zone_file)) is not None


def _writers() -> list[str]:
    names = ("write ", "place ", "zone-", "record")
    return [thread.name for thread in threading.enumerate() if thread.name.startswith(names)]


def _temporary(ws: Workspace) -> list[str]:
    return sorted(path.name for path in ws.root.rglob("*.tmp"))


def _staging(ws: Workspace) -> list[str]:
    return sorted(path.name for path in ws.out.glob(".*.outputs/*.staging"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names open files by /proc")
def test_a_patch_copies_its_files_before_it_commits_and_switches_after_the_state(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The zone file and envelopes are copied into the next generation once the patch is
    # proven, beside its memo, and synced as soon as copied, before the log and state
    # are (whose fsyncs would wait for their write-back); the set is switched to them
    # once the log and state are on disk.
    ws, ctx = _drew_edited(workspace)
    events: list[str] = []
    copy, made, durable, switch = (
        write_temporary,
        memo_after,
        commit_module._durable,
        Staging.switch,
    )

    def copies(path: Path, *args: Any, **kwargs: Any) -> Path:
        temporary = copy(path, *args, **kwargs)
        events.append(f"copied {path.name}")
        return temporary

    def memo(*args: Any) -> Any:
        events.append("memo")
        return made(*args)

    def synced(*args: Any) -> None:
        durable(*args)
        events.append("log and state synced")

    def switches(staging: Staging) -> None:
        events.append("switch")
        switch(staging)

    names: list[str] = []
    fsync = os.fsync

    def named(fd: int) -> None:
        names.append(Path(f"/proc/self/fd/{fd}").readlink().name)
        fsync(fd)

    monkeypatch.setattr(commit_module, "write_temporary", copies)
    monkeypatch.setattr(patch_module, "memo_after", memo)
    monkeypatch.setattr(commit_module, "_durable", synced)
    monkeypatch.setattr(Staging, "switch", switches)
    monkeypatch.setattr(os, "fsync", named)
    run = patched(ctx, ZoneStart.read(ctx, ws.zone_file))
    assert isinstance(run, Patched)
    assert _staging(ws) == ["g2.staging"]
    assert run.files.started is not None
    run.files.started.copied()  # the copies, done: synced already, before any commit
    assert sorted(n.split(".tmp")[0].rsplit(".", 1)[0] for n in names) == [
        ".example.com.envelopes.json",
        ".example.com.zone",
    ]
    assert run.commit(ctx, True).patched == ("~drew",)
    copied = sorted(event for event in events if event.startswith("copied"))
    assert copied == ["copied example.com.envelopes.json", "copied example.com.zone"]
    assert events.index("log and state synced") > max(map(events.index, copied))
    assert events.index("switch") > events.index("log and state synced")
    order = [name.split(".tmp")[0].rsplit(".", 1)[0] for name in names]
    assert order.index(".example.com.log") < order.index(".example.com.state.json")
    copy_names = (".example.com.zone", ".example.com.envelopes.json")
    assert max(order.index(name) for name in copy_names) < order.index(".example.com.log")
    assert not _writers()
    assert not _staging(ws)


def test_a_patchs_record_is_written_while_the_outputs_are_synced_but_for_its_digests(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fingerprint (4 MB at 100,000 handles) and memo (17 MB) are written and synced
    # in threads started while the outputs are copied; after the switch only their
    # digests go in.
    ws = _signed(workspace)
    _edit_drew(ws)
    events: list[str] = []
    started, switch = soon, Staging.switch

    def starts(work: Any, name: str, **kwargs: Any) -> Any:
        events.append(name)
        return started(work, name, **kwargs)

    def switches(staging: Staging) -> None:
        events.append("switch")
        switch(staging)

    monkeypatch.setattr(memory_module, "soon", starts)
    monkeypatch.setattr(Staging, "switch", switches)
    ctx = _ctx(ws, now=NOW + MINUTE)
    run = patched(ctx, ZoneStart.read(ctx, ws.zone_file))
    assert isinstance(run, Patched)
    assert run.commit(ctx, True).patched == ("~drew",)
    assert events == [
        "record .example.com.yaml.fingerprint.json",
        "record .example.com.yaml.memo.json",
        "record digest",  # the log's, once it is written
        "switch",
    ]
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("record")]
    later = _ctx(ws, now=NOW + 2 * MINUTE)
    assert unchanged(later, ZoneStart.read(later, ws.zone_file)) is not None
    _edit_drew_back(ws)
    run = patched(later, ZoneStart.read(later, ws.zone_file))  # the memo holds: patched again
    assert isinstance(run, Patched)


def test_a_patch_whose_text_comes_back_as_the_last_runs_declines(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The serial moves on as soon as a line changed, while the text's digest is made in
    # a thread; were that digest the state's after all, the serial should not have moved.
    ws, ctx = _drew_edited(workspace)
    state = SerialState.read(state_path_for(ws.zone_file))
    assert state is not None
    soon_made = zone_sha256_soon

    def as_before(parts: Any, name: str = "zone-sha256", **options: Any) -> Any:
        made = soon_made(parts, name, **options)
        return (lambda: (made(), state.digest)[1]) if name == "zone-draft-sha256" else made

    monkeypatch.setattr(patch_module, "zone_sha256_soon", as_before)
    assert patched(ctx, ZoneStart.read(ctx, ws.zone_file)) is None
    assert not _writers()
    assert not _staging(ws)


@pytest.mark.parametrize("fails", ["state", "switch"])
def test_a_patch_whose_commit_fails_once_its_record_is_hashing_leaves_no_record(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, fails: str
) -> None:
    ws, ctx = _drew_edited(workspace)
    run = patched(ctx, ZoneStart.read(ctx, ws.zone_file))
    assert isinstance(run, Patched)

    def breaks(*args: Any) -> None:
        raise RenderError("cannot write: no room", where="there")

    if fails == "state":
        monkeypatch.setattr(commit_module, "_durable", breaks)
    else:
        monkeypatch.setattr(Staging, "switch", breaks)
    with pytest.raises(RenderError, match="no room"):
        run.commit(ctx, True)
    assert not _writers()
    assert not _staging(ws)
    assert _temporary(ws) == []


def test_a_record_kept_before_the_definitions_digest_was_still_holds(
    workspace: Workspace,
) -> None:
    ws = _signed(workspace)
    path = fingerprint_path(ws.out, ws.zone_file)
    doc = json.loads(path.read_text())
    del doc["source_sha256"]  # as an older release wrote it
    path.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n")
    ctx = _ctx(ws, now=NOW + MINUTE)
    start = ZoneStart.read(ctx, ws.zone_file)
    assert start.record is not None
    assert start.record.source_sha256 == ""
    assert unchanged(ctx, start) is not None
    _edit_drew(ws)
    later = _ctx(ws, now=NOW + MINUTE)
    assert unchanged(later, ZoneStart.read(later, ws.zone_file)) is None


def test_a_patch_that_stops_while_its_text_is_hashed_waits_for_the_thread(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, ctx = _drew_edited(workspace)
    gate = threading.Event()
    hashed = zone_sha256_soon

    def slow(parts: Any, name: str = "zone-sha256", **options: Any) -> Any:
        def later() -> str:
            gate.wait(5)
            return hashed(parts, name, thread=False)()

        return soon(later, name)

    applied: list[int] = []
    apply = apply_edits

    def breaks(data: Any, edits: Any) -> Any:
        applied.append(1)
        if len(applied) == 2:  # the head's edits, once the text's digest is under way
            threading.Timer(0.2, gate.set).start()
            raise ValueError("edits overlap or run backwards")
        return apply(data, edits)

    monkeypatch.setattr(patch_module, "zone_sha256_soon", slow)
    monkeypatch.setattr(patch_module, "apply_edits", breaks)
    assert patched(ctx, ZoneStart.read(ctx, ws.zone_file)) is None  # a full run instead
    assert not _writers()


@pytest.mark.parametrize("workers_from", [10, parallel.PARALLEL_MIN_ITEMS])
def test_a_patch_hashes_its_text_in_a_thread_only_when_it_forks_no_workers(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, workers_from: int
) -> None:
    # Workers are forked with no thread running (parallel.py): a patch big enough to
    # fork for its signatures hashes its text at once.
    ws, ctx = _drew_edited(workspace)
    threaded: list[bool] = []
    made = zone_sha256_soon

    def notes(parts: Any, name: str = "zone-sha256", **options: Any) -> Any:
        if name == "zone-draft-sha256":
            threaded.append(options.get("thread", True))
        return made(parts, name, **options)

    monkeypatch.setattr(patch_module, "zone_sha256_soon", notes)
    monkeypatch.setattr(patch_module, "PARALLEL_MIN_ITEMS", workers_from)
    run = patched(ctx, ZoneStart.read(ctx, ws.zone_file))
    assert isinstance(run, Patched)
    run.commit(ctx, False)
    assert threaded == [workers_from == parallel.PARALLEL_MIN_ITEMS]


def test_a_patch_with_no_thread_to_spare_copies_and_commits_in_the_callers(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _signed(workspace)
    _edit_drew(ws)
    start = threading.Thread.start

    def refuses(thread: threading.Thread) -> None:
        if thread.name.startswith(("write ", "place ")):
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", refuses)
    ctx = _ctx(ws, now=NOW + MINUTE)
    run = patched(ctx, ZoneStart.read(ctx, ws.zone_file))
    assert isinstance(run, Patched)
    assert run.commit(ctx, True).patched == ("~drew",)
    assert "https://example.com/d" in ws.rendered.read_text()
    assert not _staging(ws)


@pytest.mark.parametrize("end", ["not committed", "memo fails", "log fails"])
def test_a_patch_that_does_not_commit_drops_the_files_it_copied(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, end: str
) -> None:
    ws = _signed(workspace)
    before = _outputs(ws)
    _edit_drew(ws)
    ctx = _ctx(ws, now=NOW + MINUTE)

    def fails(*args: Any) -> Any:
        raise RenderError("cannot write: no room", where="memo")

    if end == "memo fails":
        monkeypatch.setattr(patch_module, "memo_after", fails)
        with pytest.raises(RenderError, match="no room"):
            patched(ctx, ZoneStart.read(ctx, ws.zone_file))
    else:
        run = patched(ctx, ZoneStart.read(ctx, ws.zone_file))
        assert isinstance(run, Patched)
        assert _staging(ws) == ["g2.staging"]
        if end == "log fails":
            monkeypatch.setattr(patch_module, "append_lines", fails)
            with pytest.raises(RenderError, match="no room"):
                run.commit(ctx, True)
        else:
            run.commit(ctx, False)  # another zone's proof failed
    assert not _writers()
    assert not _staging(ws)
    assert {name: data for name, data in _outputs(ws).items() if "zones/" not in name} == {
        name: data for name, data in before.items() if "zones/" not in name
    }


@pytest.mark.parametrize("fails", ["strategy", "proof"])
def test_a_run_that_fails_after_a_patch_started_drops_its_files(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, fails: str
) -> None:
    ws = _signed(workspace)
    _edit_drew(ws)
    other = ws.root / "zones" / "other.example.yaml"
    if fails == "strategy":
        other.write_text("zone: other.example\nhandles: [~a, ~a]\n")
        expected: type[AlterError] = DefinitionError
    else:
        other.write_text("zone: other.example\nns: [ns1.other.example.]\nhandles: [~a]\n")

        def breaks(*args: Any) -> Any:
            raise RenderError("template broken", where="zone.j2")

        monkeypatch.setattr(Loaded, "prove", breaks)
        expected = RenderError
    with pytest.raises(expected):
        sign([ws.zone_file, other], out=ws.out, keys=ws.keys, now=NOW + MINUTE, create_keys=True)
    assert not _writers()
    assert not _staging(ws)
    assert "https://example.com/d" not in ws.rendered.read_text()


def test_a_patch_counts_no_line_of_the_log_the_base_digest_hashed(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The memo's tree counted the lines of the log its run wrote, and the base digest
    # hashed the log: counting them again (35 MB at 100,000 handles) is not needed.
    ws = _signed(workspace)
    _edit_drew(ws)

    count = MappedFile.count

    def counts(self: MappedFile, sub: bytes, *args: Any) -> int:
        assert sub != b"\n", "the log's lines were counted"
        return count(self, sub, *args)

    monkeypatch.setattr(MappedFile, "count", counts)
    ctx = _ctx(ws, now=NOW + MINUTE)
    run = patched(ctx, ZoneStart.read(ctx, ws.zone_file))
    assert isinstance(run, Patched)
    assert run.commit(ctx, True).patched == ("~drew",)


def test_a_log_changed_after_it_was_hashed_is_counted_and_the_patch_declines(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _signed(workspace)
    _edit_drew(ws)
    based = patch_base

    def then_append(*args: Any) -> Any:
        found = based(*args)
        with ws.log.open("a") as log:  # a line the memo's tree does not hold
            log.write("_alter.x.example.com. v=alter1; h=~x\n")
        return found

    monkeypatch.setattr(patch_module, "patch_base", then_append)
    ctx = _ctx(ws, now=NOW + MINUTE)
    assert patched(ctx, ZoneStart.read(ctx, ws.zone_file)) is None
    assert not _writers()


def test_a_patch_proves_on_forked_workers(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A patch's process is small: its proof forks its workers (milliseconds) instead of
    # starting fresh interpreters (half a second each), or proving on one core.
    ws = _signed(workspace)
    _edit_drew(ws)
    made: list[tuple[int, bool]] = []

    class Recorded(parallel.Workers):
        def __init__(self, jobs: int, shared: object = None, **options: Any) -> None:
            made.append((jobs, bool(options.get("fresh"))))
            super().__init__(jobs, shared, **options)

    monkeypatch.setattr(parallel, "PARALLEL_MIN_ITEMS", 1)  # forks even for a few handles
    monkeypatch.setattr(proof, "Workers", Recorded)
    ctx = dataclasses.replace(_ctx(ws, now=NOW + MINUTE), jobs=2)
    run = patched(ctx, ZoneStart.read(ctx, ws.zone_file))
    assert isinstance(run, Patched)
    assert run.proven
    assert made == [(2, False)]
    assert run.commit(ctx, True).patched == ("~drew",)


def test_patched_declines_without_a_proof_or_when_nothing_changed(workspace: Workspace) -> None:
    ws = _signed(workspace)
    ctx = _ctx(ws, now=NOW + MINUTE)
    assert patched(ctx, ZoneStart.read(ctx, ws.zone_file)) is None  # nothing to patch
    _edit_drew(ws)
    unproven = _ctx(ws, now=NOW + MINUTE, verify=False)
    assert patched(unproven, ZoneStart.read(unproven, ws.zone_file)) is None


def test_run_context_options_name_what_decides_the_outputs(tmp_path: Path) -> None:
    ctx = RunContext(
        out=tmp_path / "out", keys=KeyStore(tmp_path / "keys"), templates=tmp_path, now=NOW
    )
    assert ctx.options == f"{(tmp_path / 'out').resolve()} {tmp_path.resolve()} verify=True"
    assert ctx.digests == {}


# --- full runs at scale: what a plan holds ------------------------------------------


def test_a_full_plan_holds_no_tlog_proofs_but_the_envelopes_file_has_each(
    workspace: Workspace,
) -> None:
    # ~1.7 KB a handle held through the proof otherwise: made as the file is written.
    ws = _signed(workspace)
    spec = load_zone(ws.zone_file)
    plan = plan_zone(_ctx(ws, NOW + 31 * DAY), spec, Stopwatch())
    assert plan.signed
    assert all(item.tlog_proof is None for item in plan.signed)
    _, envelopes_file = output_paths(ws.out, ZONE)
    listed = json.loads(envelopes_file.read_bytes())["handles"]
    assert len(listed) == len(plan.signed)
    assert all(item["tlog_proof"].startswith("c2sp.org/tlog-proof") for item in listed)


def test_key_loaders_decide_as_the_chain_would(workspace: Workspace) -> None:
    ws = _signed(workspace)
    spec = load_zone(ws.zone_file)
    log = read_log(log_path_for(spec.path))
    index = LogIndex(log)
    item = spec.handles[1]
    epoch, seed, commitment = ws.keys.current_material(ZONE, item.handle)
    key = LoadedKey(item.handle, epoch, SigningKey.from_seed(seed).public, commitment, seed)
    assert decide(spec, item, key, index, NOW) is None  # reused: the chain parses it
    reason, detail, renewal = decide(spec, item, key, index, NOW + 31 * DAY) or ("", "", False)
    assert (reason, renewal) == ("renewal-due", True)
    assert detail.startswith("expired ")


def test_a_narrowed_proof_reads_only_its_handles_entries(workspace: Workspace) -> None:
    # push proves the handles it changed: only their envelopes are parsed (at 100,000
    # handles, parsing every one took seconds); a full read still reports a broken one.
    ws = _signed(workspace)
    spec = load_zone(ws.zone_file)
    _, envelopes = output_paths(ws.out, ZONE)
    document = json.loads(envelopes.read_text())
    first, *others = document["handles"]
    assert others
    others[0]["text"] = "v=alter1; broken"
    broken = ws.root / "broken.envelopes.json"
    broken.write_text(json.dumps(document))
    wanted = dataclasses.replace(
        spec, handles=tuple(h for h in spec.handles if h.handle.ref == first["handle"])
    )
    found = expectations_for(wanted, broken, narrowed=True)
    assert list(found) == [first["handle"]]
    assert list(read_expected(broken, only={first["handle"]})) == [first["handle"]]
    with pytest.raises(RenderError, match="not an envelopes document"):
        expectations_for(wanted, broken)
