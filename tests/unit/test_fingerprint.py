"""The record of a proven run: its JSON form reads back as written, and a damaged one
reads as none (then: a full run)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from alter_publish.pipeline.fingerprint import (
    DigestMemo,
    Fingerprint,
    inputs_for,
    joined_handle_keys,
    split_handle_keys,
)

HANDLE_KEYS = st.lists(st.tuples(st.text(max_size=12), st.integers(0, 2**40)), max_size=20)


def _record(handle_keys: tuple[tuple[str, int], ...]) -> Fingerprint:
    return Fingerprint(
        digest="ab" * 32,
        valid_from=10,
        valid_until=2**40,
        zone="a.example",
        zone_keys_dir="/keys/a.example/zone",
        handle_keys=handle_keys,
        summary={"serial": 7, "ds": ["a. 3600 IN DS 1 15 2 ff"]},
    )


@given(handle_keys=HANDLE_KEYS)
def test_handle_keys_split_and_join_back(handle_keys: list[tuple[str, int]]) -> None:
    assert joined_handle_keys(*split_handle_keys(handle_keys)) == tuple(handle_keys)


@pytest.mark.parametrize(
    "handle_keys",
    [(), (("/keys/a.example/alice", 1),), (("", 0), ("keys/b", 3), ("ü/\n", 2**40))],
    ids=["none", "one", "odd names"],
)
def test_a_record_reads_back_as_written(
    tmp_path: Path, handle_keys: tuple[tuple[str, int], ...]
) -> None:
    path = tmp_path / "record.json"
    _record(handle_keys).write(path)
    assert Fingerprint.read(path) == _record(handle_keys)


def test_a_record_made_before_its_digest_is_the_text_json_gives(tmp_path: Path) -> None:
    # A patch makes the record's JSON while its outputs are written; the digest comes last.
    record = _record((("keys/a.example/alice", 1), ("keys/a.example/bob", 2)))
    text = dataclasses.replace(record, digest="").text_later()(record.digest)
    doc = json.loads(text)
    assert text == json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n"
    assert doc["digest"] == record.digest
    path = tmp_path / "record.json"
    path.write_text(text)
    assert Fingerprint.read(path) == record


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text.replace('"handle_dirs":["a","b"]', '"handle_dirs":["a"]'),
        lambda text: text.replace('"handle_dirs":["a","b"]', '"handle_dirs":["a",2]'),
        lambda text: text.replace('"handle_dirs":["a","b"]', '"handle_dirs":"ab"'),
        lambda text: text.replace('"handle_epochs":"', '"handle_epochs":"!'),
        lambda text: text.replace("fingerprint/3", "fingerprint/2"),
        lambda text: text.replace('"keys_mark":"-"', '"keys_mark":"x:1"'),
    ],
    ids=[
        "fewer directories",
        "a number for a directory",
        "not a list",
        "not base64",
        "format",
        "journal mark",
    ],
)
def test_a_damaged_record_reads_as_none(tmp_path: Path, damage: object) -> None:
    path = tmp_path / "record.json"
    _record((("a", 1), ("b", 2))).write(path)
    text = path.read_text()
    damaged = damage(text)  # type: ignore[operator]
    assert damaged != text
    path.write_text(damaged)
    assert Fingerprint.read(path) is None


def test_a_digest_made_ready_early_is_of_the_files_as_they_are_when_asked(
    tmp_path: Path,
) -> None:
    log, state, zone = (tmp_path / name for name in ("log", "state", "zone"))
    for path in (log, state, zone):
        path.write_text(f"{path.name} before\n")
    digests: DigestMemo = {}
    inputs = inputs_for(
        tmp_path / "zone.yaml",
        templates=tmp_path,
        content_files=(log, state),
        zone_keys_dir=str(tmp_path / "keys"),
        handle_keys=(("/keys/a", 1),),
        outputs=(zone,),
        options="out",
        definition_text="zone: a.example\n",
        digests=digests,
    )
    later = inputs.digest_later(inputs.keys_line("k"))
    assert any(key[0] == str(log) for key in digests)  # the log hashed already
    before = inputs.digest("k")
    replaced = tmp_path / "state.new"  # the state replaced by rename, as its writer does
    replaced.write_text("state after!\n")  # the same size as before
    replaced.replace(state)
    zone.unlink()
    zone.write_text("zone after\n")  # a new file: another inode
    assert later() == inputs.digest("k")
    assert later() != before
