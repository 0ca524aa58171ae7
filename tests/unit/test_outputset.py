"""The output set: generations switched by one symlink, read as one set, adopted from
the flat layout of older releases and from a copy without links."""

from __future__ import annotations

import shutil
from pathlib import Path

from alter_publish.fileio import write_compared
from alter_publish.outputset import (
    CURRENT,
    OutputSet,
    remove_retired,
    retired_generations,
    sweep_stores,
)

NAMES = ("z.zone", "z.envelopes.json", "z.ds")


def _set(out: Path) -> OutputSet:
    return OutputSet(out, "z", NAMES)


def _publish(outputs: OutputSet, contents: dict[str, bytes | None]) -> None:
    """One run: write what changed, keep the rest (None: leave the file out)."""
    staging = outputs.stage()
    for name in NAMES:
        data = contents.get(name)
        if data is None:
            continue
        if not write_compared(staging.path(name), (data,), staging.previous_path(name)):
            staging.keep(name)
    staging.switch()


def _seen(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in NAMES if (out / name).exists()}


def test_each_switch_shows_the_whole_new_set_through_the_stable_paths(tmp_path: Path) -> None:
    outputs = _set(tmp_path)
    _publish(outputs, {"z.zone": b"zone 1", "z.envelopes.json": b"env 1", "z.ds": b"ds"})
    _publish(outputs, {"z.zone": b"zone 2", "z.envelopes.json": b"env 2", "z.ds": b"ds"})
    assert _seen(tmp_path) == {"z.zone": b"zone 2", "z.envelopes.json": b"env 2", "z.ds": b"ds"}
    assert all((tmp_path / name).is_symlink() for name in NAMES)
    current = outputs.current()
    assert current.name == "g2"
    # unchanged files are the previous generation's, linked
    assert (current / "z.ds").stat().st_ino == (outputs.store / "g1" / "z.ds").stat().st_ino


def test_the_previous_generation_is_kept_and_older_ones_go(tmp_path: Path) -> None:
    outputs = _set(tmp_path)
    for run in range(1, 5):
        _publish(outputs, {"z.zone": f"zone {run}".encode()})
    # Older ones are retired at each switch (a rename), not removed there: staging the
    # next generation leaves them too; remove_retired (the next run, meanwhile) does.
    retired = ["g1.retired", "g2.retired"]
    assert sorted(p.name for p in outputs.store.iterdir()) == [CURRENT, *retired, "g3", "g4"]
    assert outputs.current().name == "g4"
    found = retired_generations(tmp_path)
    assert found == [outputs.store / name for name in retired]
    assert remove_retired(found) == found
    assert sorted(p.name for p in outputs.store.iterdir()) == [CURRENT, "g3", "g4"]
    assert retired_generations(tmp_path) == []


def test_retired_generations_are_left_to_remove_retired(tmp_path: Path) -> None:
    outputs = _set(tmp_path)
    for run in range(1, 4):
        _publish(outputs, {"z.zone": f"zone {run}".encode()})
    assert sweep_stores(tmp_path) == []  # what interrupted runs left: not these
    staging = outputs.stage()  # nor when the next generation starts
    assert (outputs.store / "g1.retired" / "z.zone").read_bytes() == b"zone 1"
    staging.abandon()


def test_retired_entries_of_any_kind_are_removed_and_only_those_reported(tmp_path: Path) -> None:
    outputs = _set(tmp_path)
    _publish(outputs, {"z.zone": b"zone 1"})
    (outputs.store / "g7.retired").write_bytes(b"a file, by hand")
    (outputs.store / "g8.retired").symlink_to("g1")
    (outputs.store / "x.retired").mkdir()  # not a generation's name: not ours
    found = retired_generations(tmp_path)
    assert [path.name for path in found] == ["g7.retired", "g8.retired"]
    assert remove_retired([*found, outputs.store / "g9.retired"]) == found
    assert outputs.current().name == "g1"
    assert (outputs.store / "x.retired").is_dir()
    assert retired_generations(tmp_path / "missing") == []


def test_a_file_the_new_set_lacks_loses_its_link_after_the_switch(tmp_path: Path) -> None:
    outputs = _set(tmp_path)
    _publish(outputs, {"z.zone": b"signed", "z.ds": b"ds"})
    _publish(outputs, {"z.zone": b"unsigned", "z.ds": None})
    assert not (tmp_path / "z.ds").is_symlink()
    assert not (tmp_path / "z.ds").exists()


def test_flat_outputs_of_an_older_release_are_adopted_as_they_were(tmp_path: Path) -> None:
    for name in NAMES:
        (tmp_path / name).write_bytes(f"old {name}".encode())
    outputs = _set(tmp_path)
    staging = outputs.stage()  # adoption happens here, before anything new is written
    assert _seen(tmp_path) == {name: f"old {name}".encode() for name in NAMES}
    assert all((tmp_path / name).is_symlink() for name in NAMES)
    assert outputs.current().name == "g1"
    staging.abandon()
    assert outputs.current().name == "g1"
    assert not staging.directory.exists()


def test_a_store_copied_without_its_links_is_adopted(tmp_path: Path) -> None:
    first = tmp_path / "a"
    outputs = _set(first)
    _publish(outputs, {"z.zone": b"zone 1", "z.envelopes.json": b"env 1"})
    copy = tmp_path / "b"
    shutil.copytree(first, copy)  # follows links: `current` becomes a directory
    copied = _set(copy)
    assert not (copied.store / CURRENT).is_symlink()
    _publish(copied, {"z.zone": b"zone 2", "z.envelopes.json": b"env 1"})
    assert _seen(copy) == {"z.zone": b"zone 2", "z.envelopes.json": b"env 1"}
    assert (copied.store / CURRENT).is_symlink()


def test_readers_read_what_users_see(tmp_path: Path) -> None:
    """Our links: from the current generation, resolved once; a file put in place of a
    link by hand: that file; a link removed: missing."""
    outputs = _set(tmp_path)
    _publish(outputs, {"z.zone": b"zone", "z.envelopes.json": b"env", "z.ds": b"ds"})
    (tmp_path / "z.envelopes.json").unlink()
    (tmp_path / "z.envelopes.json").write_bytes(b"by hand")
    (tmp_path / "z.ds").unlink()
    zone, envelopes, ds = outputs.readable()
    assert zone == outputs.current() / "z.zone"
    assert envelopes.read_bytes() == b"by hand"
    assert not ds.exists()
    assert outputs.ensure_links() == [str(tmp_path / "z.envelopes.json"), str(tmp_path / "z.ds")]
    assert _seen(tmp_path) == {"z.zone": b"zone", "z.envelopes.json": b"env", "z.ds": b"ds"}


def test_leftovers_in_the_store_are_swept_when_a_run_stages(tmp_path: Path) -> None:
    outputs = _set(tmp_path)
    _publish(outputs, {"z.zone": b"zone"})
    (outputs.store / "g7.staging").mkdir()
    (outputs.store / "g7.staging" / "z.zone").write_bytes(b"half")
    (outputs.store / ".current.123.link").symlink_to("g1")
    staging = outputs.stage()
    assert sorted(p.name for p in outputs.store.iterdir()) == [CURRENT, "g1", "g2.staging"]
    staging.abandon()


def test_a_kill_while_adopting_flat_files_is_taken_up_by_the_next_run(tmp_path: Path) -> None:
    """Killed after the adopted generation was renamed into place, before ``current``
    named it: the next run makes it current and carries on (it used to fail for good)."""
    for name in NAMES:
        (tmp_path / name).write_bytes(f"old {name}".encode())
    outputs = _set(tmp_path)
    adopted = outputs.store / "g1"
    adopted.mkdir(parents=True)
    for name in NAMES:
        (adopted / name).hardlink_to(tmp_path / name)
    staging = outputs.stage()
    assert outputs.current() == adopted
    assert _seen(tmp_path) == {name: f"old {name}".encode() for name in NAMES}
    staging.abandon()


def test_a_kill_while_adopting_a_copied_current_is_taken_up(tmp_path: Path) -> None:
    outputs = _set(tmp_path)
    _publish(outputs, {"z.zone": b"zone 1", "z.envelopes.json": b"env 1"})
    (outputs.store / CURRENT).unlink()  # killed between the rename and the new link
    _publish(outputs, {"z.zone": b"zone 2", "z.envelopes.json": b"env 1"})
    assert _seen(tmp_path) == {"z.zone": b"zone 2", "z.envelopes.json": b"env 1"}


def test_a_file_put_in_place_of_a_link_is_kept_not_rolled_back(tmp_path: Path) -> None:
    """A newer file written over a link (an older release, a hand copy) is what readers
    see; preparing the next generation keeps it, with the set's other files."""
    outputs = _set(tmp_path)
    _publish(outputs, {"z.zone": b"zone 1", "z.envelopes.json": b"env 1"})
    (tmp_path / "z.zone").unlink()
    (tmp_path / "z.zone").write_bytes(b"zone by hand")
    staging = outputs.stage()
    staging.abandon()
    assert _seen(tmp_path) == {"z.zone": b"zone by hand", "z.envelopes.json": b"env 1"}
    assert (tmp_path / "z.zone").is_symlink()
