"""Incremental re-signing: a patched run writes the very bytes a full run writes.

Each scenario edits a workspace, copies it, signs the original (which patches the
last proven run's outputs) and the copy with ``incremental=False`` (a full run),
and compares every output file byte for byte.
"""

from __future__ import annotations

import dataclasses
import resource
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from alter_publish import pipeline
from alter_publish.definition.model import load_zone
from alter_publish.dns.chainpatch import SignedSection
from alter_publish.dns.records import labels_of
from alter_publish.dns.zonekeys import ZoneKeyRole
from alter_publish.errors import DefinitionError, RenderError
from alter_publish.keys import commands as keyops
from alter_publish.keys.lifecycle import rotate
from alter_publish.keys.store import KeyStore
from alter_publish.pipeline import SignReport, fingerprint, full, sign
from alter_publish.pipeline.incremental import Memo, memo_path
from tests.conftest import NOW

ZONE = "patch.example"
OUTPUTS = (
    f"build/{ZONE}.zone",
    f"build/{ZONE}.envelopes.json",
    f"build/{ZONE}.ds",
    f"zones/{ZONE}.log",
    f"zones/{ZONE}.state.json",
)


def _definition(handles: int, *, dnssec: str = "{enabled: true, denial: nsec}") -> str:
    lines = [
        f"zone: {ZONE}",
        "ttl: 1h",
        f"ns: [ns1.{ZONE}.]",
        "hosts: {ns1: [192.0.2.1]}",
        f"dnssec: {dnssec}",
        "handles:",
        f"  - handle: ~{ZONE}",
        "    resolver: https://patch.example/apex",
    ]
    for n in range(1, handles):
        if n % 7 == 0:
            lines.append(f"  - {{handle: ~user{n}, resolver: 'https://{ZONE}/{n}'}}")
        elif n % 5 == 0:
            lines += [f"  - handle: ~svc{n}.bot  # a bot", "    tags:", f"      team: t{n}"]
        else:
            lines.append(f"  - ~user{n}")
    lines.append("envelopes: {lifetime: 30d, renew_before: 7d}")
    return "\n".join(lines) + "\n"


def _workspace(root: Path, handles: int = 60, **kwargs: str) -> Path:
    (root / "zones").mkdir(parents=True)
    (root / "zones" / f"{ZONE}.yaml").write_text(_definition(handles, **kwargs))
    report = _sign(root, NOW, create_keys=True)
    assert report.ok
    assert report.zones[0].patched is None
    return root


def _sign(
    root: Path,
    now: int,
    *,
    incremental: bool = True,
    create_keys: bool = False,
    check: bool = False,
) -> SignReport:
    return sign(
        [root / "zones" / f"{ZONE}.yaml"],
        out=root / "build",
        keys=KeyStore(root / "keys"),
        now=now,
        create_keys=create_keys,
        incremental=incremental,
        check=check,
    )


def _edit(root: Path, old: str, new: str) -> None:
    path = root / "zones" / f"{ZONE}.yaml"
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


def _same_as_full(root: Path, tmp: Path, now: int) -> SignReport:
    """Sign ``root`` (incremental) and a copy of it (full); the outputs must be equal."""
    twin = tmp / f"twin-{now}"
    shutil.copytree(root, twin)
    patched = _sign(root, now)
    full = _sign(twin, now, incremental=False)
    assert patched.ok
    assert full.ok
    assert full.zones[0].patched is None
    for name in OUTPUTS:
        assert _read(root / name) == _read(twin / name), name
    relative = [sorted(Path(w).name for w in r.zones[0].written) for r in (patched, full)]
    assert relative[0] == relative[1]
    if patched.zones[0].patched is not None:  # the memo a patch leaves is a full run's
        memos = [
            Memo.read(memo_path(r / "build", r / "zones" / f"{ZONE}.yaml")) for r in (root, twin)
        ]
        assert memos[0] is not None
        assert memos[1] is not None
        for name in _MEMO_PLACES:
            mine, theirs = (getattr(memo, name) for memo in memos)
            if not isinstance(mine, int):
                mine, theirs = list(mine), list(theirs)
            assert mine == theirs, name
    return patched


#: What a memo says of the outputs, the same whether a patch or a full run left it.
_MEMO_PLACES = (
    "refs",
    "entries",
    "ttls",
    "dues",
    "log",
    "serial",
    "serial_at",
    "rendered_end",
    "segments",
    "blocks",
    "apex",
    "envelopes",
    "envelopes_serial_at",
)


def test_edits_are_patched_in_exactly_as_a_full_run_writes_them(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    # The first handle, one in the middle (tags edited), the last: one run.
    _edit(root, "resolver: https://patch.example/apex", "resolver: https://patch.example/moved")
    _edit(root, "      team: t25", "      team: platform\n      tier: gold")
    _edit(root, "  - ~user59\n", "  - {handle: ~user59, resolver: 'https://patch.example/last'}\n")
    report = _same_as_full(root, tmp_path, NOW + 60)
    (zone,) = report.zones
    assert zone.patched == ("~patch.example", "~svc25.bot", "~user59")
    assert zone.signed == 3
    assert zone.reused == 57
    assert zone.proof is not None
    assert [result.handle for result in zone.proof.results] == list(zone.patched)
    assert all(result.dnssec == "secure" for result in zone.proof.results)
    # A second patch starts from the first one's memo; a shorter entry moves every offset.
    _edit(root, "  - {handle: ~user59, resolver: 'https://patch.example/last'}\n", "  - ~user59\n")
    _edit(root, "  - ~user2\n", "  - {handle: ~user2, lifetime: 20d}\n")
    report = _same_as_full(root, tmp_path, NOW + 120)
    assert report.zones[0].patched == ("~user2", "~user59")


def test_a_rotated_key_is_patched_in_with_its_continuity_signature(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    spec = load_zone(root / "zones" / f"{ZONE}.yaml")
    rotate(spec, "~user3", keys=KeyStore(root / "keys"), now=NOW + 100)
    report = _same_as_full(root, tmp_path, NOW + 200)
    (zone,) = report.zones
    assert zone.patched == ("~user3",)
    assert zone.proof is not None
    assert zone.proof.results[0].epoch == 2
    assert "psig=" in (root / f"build/{ZONE}.zone").read_text()
    again = _sign(root, NOW + 300)
    assert again.zones[0].unchanged


def test_runs_look_only_at_the_keys_the_journal_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 16: no ``stat`` of every key file. A full run takes every handle's key
    lines; later runs only those of the handles the key store wrote since; with the
    journal gone, every line again (and the rotation it named is still seen)."""
    root = _workspace(tmp_path / "ws")
    taken: list[str] = []
    real = fingerprint._stat_text

    def counted(path: str, dir_fd: int | None = None) -> str:
        if dir_fd is not None:  # a handle's key: relative to the zone's key directory
            taken.append(path)
        return real(path, dir_fd)

    monkeypatch.setattr(fingerprint, "_stat_text", counted)
    assert _sign(root, NOW + 60).zones[0].unchanged
    assert taken == []
    spec = load_zone(root / "zones" / f"{ZONE}.yaml")
    rotate(spec, "~user3", keys=KeyStore(root / "keys"), now=NOW + 100)
    assert _sign(root, NOW + 200).zones[0].patched == ("~user3",)
    assert taken
    assert all("user3" in path for path in taken), taken
    taken.clear()
    assert _sign(root, NOW + 300).zones[0].unchanged
    assert taken == []
    rotate(spec, "~user4", keys=KeyStore(root / "keys"), now=NOW + 400)
    (root / "keys" / ZONE / ".changes").unlink()
    assert _sign(root, NOW + 500).zones[0].patched == ("~user4",)
    assert len(taken) >= 2 * 60


@pytest.mark.parametrize("rotated", ["~user4", "~user2"], ids=["another", "the signed one"])
def test_a_key_rotated_while_a_patch_runs_is_patched_in_by_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rotated: str
) -> None:
    """A rotation that lands after a patch took its key lines, before it recorded them
    (of another handle, or of the one it signed, after signing): the record keeps the
    journal's mark from before, so the next run looks at that key (moving the mark past
    it would make the next run say nothing changed)."""
    root = _workspace(tmp_path / "ws")
    real = fingerprint.recorded_key_lines
    target = "alter_publish.pipeline.patchbase.recorded_key_lines"

    def rotated_meanwhile(*args: Any, **kwargs: Any) -> Any:
        spec = load_zone(root / "zones" / f"{ZONE}.yaml")
        rotate(spec, rotated, keys=KeyStore(root / "keys"), now=NOW + 70)
        monkeypatch.setattr(target, real)
        return real(*args, **kwargs)

    monkeypatch.setattr(target, rotated_meanwhile)
    _edit(root, "  - ~user2\n", "  - {handle: ~user2, lifetime: 20d}\n")
    assert _sign(root, NOW + 60).zones[0].patched == ("~user2",)
    assert _sign(root, NOW + 120).zones[0].patched == (rotated,)
    assert _sign(root, NOW + 180).zones[0].unchanged


def test_keys_a_patch_made_itself_leave_the_next_run_unchanged(tmp_path: Path) -> None:
    """``--create-keys`` for an added handle: the journal names it after the patch took
    its lines, but the run signed it itself, so the record moves past it."""
    root = _workspace(tmp_path / "ws")
    _edit(root, "  - ~user2\n", "  - ~user2\n  - ~newbie\n")
    assert _sign(root, NOW + 60, create_keys=True).zones[0].patched == ("~newbie",)
    again = _sign(root, NOW + 120)
    assert again.zones[0].unchanged


@pytest.mark.parametrize("denial", ["nsec", "nsec3"])
def test_an_edit_during_a_ksk_rollover_is_patched_in_beside_the_cds(
    denial: str, tmp_path: Path
) -> None:
    """While a KSK rollover runs the apex holds CDS and CDNSKEY (signed by the KSK); a
    handle edit re-signs only the SOA there and gives a full run's bytes."""
    root = _workspace(tmp_path / "ws", dnssec=f"{{enabled: true, denial: {denial}}}")
    zones = root / "zones"
    keyops.dnssec_rollover(
        ZONE, ZoneKeyRole.KSK, keys=KeyStore(root / "keys"), now=NOW, zones_dir=zones
    )
    assert _sign(root, NOW + 30).zones[0].patched is None  # new key states: a full run
    zone_text = (root / f"build/{ZONE}.zone").read_text()
    assert " IN CDS " in zone_text
    assert " IN CDNSKEY " in zone_text
    _edit(root, "  - ~user4\n", "  - {handle: ~user4, resolver: 'https://patch.example/4'}\n")
    report = _same_as_full(root, tmp_path, NOW + 60)
    assert report.zones[0].patched == ("~user4",)


def test_an_unsigned_zone_is_patched_too(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", dnssec="{enabled: false}")
    _edit(root, "  - ~user4\n", "  - {handle: ~user4, resolver: 'https://patch.example/4'}\n")
    report = _same_as_full(root, tmp_path, NOW + 60)
    assert report.zones[0].patched == ("~user4",)


def test_an_nsec3_zone_is_patched_too(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", dnssec="{enabled: true, denial: nsec3}")
    _edit(root, "  - ~user4\n", "  - {handle: ~user4, resolver: 'https://patch.example/4'}\n")
    report = _same_as_full(root, tmp_path, NOW + 60)
    assert report.zones[0].patched == ("~user4",)


@pytest.mark.parametrize("denial", ["nsec", "nsec3"])
def test_edited_handles_blocks_are_found_from_the_memo_not_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, denial: str
) -> None:
    # The memo says where each handle's DNSSEC lines start: a patch takes that offset
    # (checked) instead of a binary search of the section for every edited handle.
    root = _workspace(tmp_path / "ws", dnssec=f"{{enabled: true, denial: {denial}}}")
    for number in (4, 17, 41):
        _edit(root, f"  - ~user{number}\n", f"  - {{handle: ~user{number}, lifetime: 20d}}\n")
    searched: list[tuple[bytes, ...]] = []
    seek = SignedSection.seek

    def counted(section: SignedSection, labels: tuple[bytes, ...]) -> int:
        searched.append(labels)
        return seek(section, labels)

    monkeypatch.setattr(SignedSection, "seek", counted)
    report = _same_as_full(root, tmp_path, NOW + 60)
    assert report.zones[0].patched == ("~user4", "~user17", "~user41")
    edited = {labels_of(f"_alter.user{number}.{ZONE}.") for number in (4, 17, 41)}
    assert labels_of(f"{ZONE}.") in searched  # the apex still is (the probe counts)
    assert not edited & set(searched)


def test_a_run_retires_old_generations_and_the_next_removes_them(tmp_path: Path) -> None:
    # Deleting a generation's files is the kernel's work (0.07 s at 100,000 handles):
    # the switch renames them away, the next run removes them in a thread as it works.
    root = _workspace(tmp_path / "ws")
    store = root / "build" / f".{ZONE}.outputs"
    seen = []
    for number in (4, 17, 41):
        resolver = f"resolver: 'https://{ZONE}/moved{number}'"
        _edit(root, f"  - ~user{number}\n", f"  - {{handle: ~user{number}, {resolver}}}\n")
        assert _sign(root, NOW + 60 * number).zones[0].patched == (f"~user{number}",)
        seen.append(sorted(path.name for path in store.iterdir()))
        assert not any(thread.name == "remove-retired" for thread in threading.enumerate())
    assert seen == [
        ["current", "g1", "g2"],
        ["current", "g1.retired", "g2", "g3"],
        ["current", "g2.retired", "g3", "g4"],
    ]


def test_a_comment_edit_rewrites_no_output(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    _edit(root, "  - handle: ~svc5.bot  # a bot\n", "  - handle: ~svc5.bot  # the build bot\n")
    report = _same_as_full(root, tmp_path, NOW + 60)
    (zone,) = report.zones
    assert zone.patched == ("~svc5.bot",)
    assert zone.signed == 0
    assert zone.written == ()


def test_check_reports_a_patch_and_writes_nothing(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    _edit(root, "  - ~user4\n", "  - {handle: ~user4, resolver: 'https://patch.example/4'}\n")
    before = {name: _read(root / name) for name in OUTPUTS}
    report = _sign(root, NOW + 60, check=True)
    assert report.ok
    assert report.drift
    assert report.zones[0].patched == ("~user4",)
    assert {name: _read(root / name) for name in OUTPUTS} == before


Change = Callable[[Path], None]


def _move_handle(root: Path) -> None:
    _edit(root, "  - ~user1\n", "")
    _edit(root, "  - ~user3\n", "  - ~user3\n  - ~user1\n")


def _change_ttl(root: Path) -> None:
    _edit(root, "  - ~user1\n", "  - {handle: ~user1, ttl: 5m}\n")


def _alias(root: Path) -> None:
    _edit(root, "  - ~user1\n", "  - &one ~user1\n")


def _zone_field(root: Path) -> None:
    _edit(root, "ttl: 1h\n", "ttl: 2h\n")


def _many(root: Path) -> None:
    for n in (1, 2, 3, 4):
        _edit(
            root, f"  - ~user{n}\n", f"  - {{handle: ~user{n}, resolver: 'https://x.example/'}}\n"
        )


@pytest.mark.parametrize(
    "change",
    [_move_handle, _change_ttl, _alias, _zone_field, _many],
    ids=["moved", "ttl", "alias", "zone-field", "too-many"],
)
def test_what_a_patch_cannot_do_exactly_runs_in_full(change: Change, tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    change(root)
    twin = tmp_path / "twin"
    shutil.copytree(root, twin)
    report = _sign(root, NOW + 60, create_keys=True)
    assert report.ok
    assert report.zones[0].patched is None
    full = _sign(twin, NOW + 60, incremental=False)
    assert full.ok
    for name in OUTPUTS:
        assert _read(root / name) == _read(twin / name), name


@pytest.mark.parametrize("entry", ["  - ~user41\n", "  - ~user1\n"], ids=["later", "earlier"])
def test_an_entry_repeated_next_to_an_edit_is_named_as_a_full_run_names_it(
    tmp_path: Path, entry: str
) -> None:
    # The entries before and after the stretch that changed are not matched one by one
    # (align_entries): a copy of one of them is taken as new, and its handle's ref, which
    # the memo keeps, sends the run in full.
    root = _workspace(tmp_path / "ws")
    _edit(
        root, "  - ~user2\n", "  - {handle: ~user2, resolver: 'https://patch.example/2'}\n" + entry
    )
    twin = tmp_path / "twin"
    shutil.copytree(root, twin)
    with pytest.raises(DefinitionError) as patched:
        _sign(root, NOW + 60)
    with pytest.raises(DefinitionError) as full:
        _sign(twin, NOW + 60, incremental=False)
    assert str(patched.value).replace(str(root), "") == str(full.value).replace(str(twin), "")
    assert entry.strip().removeprefix("- ") in str(patched.value)


def test_custom_templates_leave_no_memo(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    assert memo_path(root / "build", root / "zones" / f"{ZONE}.yaml").exists()
    templates = tmp_path / "templates"
    shutil.copytree(Path(__file__).resolve().parents[2] / "templates", templates)
    zone_template = templates / "zone.j2"
    zone_template.write_text(zone_template.read_text() + "; customized\n")
    _edit(root, "  - ~user4\n", "  - {handle: ~user4, resolver: 'https://patch.example/4'}\n")
    report = sign(
        [root / "zones" / f"{ZONE}.yaml"],
        out=root / "build",
        keys=KeyStore(root / "keys"),
        now=NOW + 60,
        templates=templates,
    )
    assert report.ok
    assert report.zones[0].patched is None
    assert not memo_path(root / "build", root / "zones" / f"{ZONE}.yaml").exists()


def test_a_renewal_falls_due_and_runs_in_full(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    _edit(root, "  - ~user4\n", "  - {handle: ~user4, resolver: 'https://patch.example/4'}\n")
    later = NOW + 24 * 86400  # within renew_before of every envelope's expiry
    report = _sign(root, later)
    assert report.ok
    assert report.zones[0].patched is None
    assert report.zones[0].signed == 60


def test_handles_sharing_an_owner_leave_no_memo(tmp_path: Path) -> None:
    # ~user1 and ~user1.patch.example both publish at _alter.user1.patch.example.: one
    # rrset of both records, which only a full run signs whole.
    root = tmp_path / "ws"
    (root / "zones").mkdir(parents=True)
    definition = _definition(20).replace("  - ~user1\n", "  - ~user1\n  - ~user1.patch.example\n")
    (root / "zones" / f"{ZONE}.yaml").write_text(definition)
    assert _sign(root, NOW, create_keys=True).ok
    assert not memo_path(root / "build", root / "zones" / f"{ZONE}.yaml").exists()
    _edit(root, "  - ~user1\n", "  - {handle: ~user1, resolver: 'https://patch.example/1'}\n")
    report = _same_as_full(root, tmp_path, NOW + 60)
    assert report.zones[0].patched is None


def test_a_log_with_crlf_line_ends_runs_in_full(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    log = root / "zones" / f"{ZONE}.log"
    log.write_bytes(log.read_bytes().replace(b"\n", b"\r\n"))
    _edit(root, "  - handle: ~svc5.bot  # a bot\n", "  - handle: ~svc5.bot  # the build bot\n")
    report = _same_as_full(root, tmp_path, NOW + 60)
    assert report.zones[0].patched is None
    assert report.zones[0].signed == 0  # the full run read the log and reused every envelope


def _swallow_next_handle(memo: Memo) -> Memo:
    segments = list(memo.segments)
    segments[5] = segments[6]  # ~user4's lines would vanish with ~svc5.bot's patch
    return dataclasses.replace(memo, segments=segments)


def _reverse_envelopes(memo: Memo) -> Memo:
    return dataclasses.replace(memo, envelopes=list(reversed(memo.envelopes)))


def _shift_block(memo: Memo) -> Memo:
    return dataclasses.replace(memo, blocks=[offset + 1 for offset in memo.blocks])


@pytest.mark.parametrize(
    "damage",
    [_swallow_next_handle, _reverse_envelopes, _shift_block],
    ids=["segment", "envelopes", "block"],
)
def test_a_memo_that_does_not_fit_the_outputs_runs_in_full(
    damage: Callable[[Memo], Memo], tmp_path: Path
) -> None:
    root = _workspace(tmp_path / "ws")
    path = memo_path(root / "build", root / "zones" / f"{ZONE}.yaml")
    memo = Memo.read(path)
    assert memo is not None
    damage(memo).write(path)
    _edit(root, "  - handle: ~svc5.bot  # a bot\n", "  - handle: ~svc5.bot\n    lifetime: 20d\n")
    report = _same_as_full(root, tmp_path, NOW + 60)
    assert report.zones[0].patched is None


def test_an_edit_made_while_a_run_goes_on_is_published_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _workspace(tmp_path / "ws")
    plan_zone = pipeline.plan_zone

    def plan_then_edit(*args: Any, **kwargs: Any) -> pipeline.ZonePlan:
        plan = plan_zone(*args, **kwargs)
        _edit(root, "  - ~user8\n", "  - {handle: ~user8, resolver: 'https://patch.example/8'}\n")
        return plan

    monkeypatch.setattr(full, "plan_zone", plan_then_edit)
    assert _sign(root, NOW + 60, incremental=False).ok
    monkeypatch.setattr(full, "plan_zone", plan_zone)
    report = _sign(root, NOW + 120)
    assert not report.zones[0].unchanged
    assert report.zones[0].patched == ("~user8",)
    assert "https://patch.example/8" in (root / f"build/{ZONE}.zone").read_text()


def test_a_patch_whose_outputs_cannot_be_written_keeps_the_set_and_the_next_run_mends_it(
    tmp_path: Path,
) -> None:
    # A generation that cannot be written: the run's one error, the set readers see
    # stays whole, and the generation is dropped.
    root = _workspace(tmp_path / "ws")
    before = {name: _read(root / name) for name in OUTPUTS[:3]}
    _edit(root, "  - ~user8\n", "  - {handle: ~user8, resolver: 'https://patch.example/8'}\n")
    small = [
        (root / name).stat().st_size for name in (f"zones/{ZONE}.log", f"zones/{ZONE}.state.json")
    ]
    large = min((root / name).stat().st_size for name in OUTPUTS[:2])
    limit = max(small) + 4096  # room for the log's new entry and the state; not for the zone
    assert limit < large
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        with pytest.raises(RenderError, match="cannot write: File too large"):
            _sign(root, NOW + 60)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert {name: _read(root / name) for name in OUTPUTS[:3]} == before
    store = root / "build" / f".{ZONE}.outputs"
    assert not [entry.name for entry in store.iterdir() if entry.name.endswith(".staging")]
    twin = tmp_path / "twin"
    shutil.copytree(root, twin)
    assert _sign(root, NOW + 120).ok  # in full: the log went ahead of the record
    assert _sign(twin, NOW + 120, incremental=False).ok
    for name in OUTPUTS:
        assert _read(root / name) == _read(twin / name), name
