"""A mapped file answers the bytes methods a patch uses exactly as the bytes would, and
its spans are written (by the kernel's copy, or from their bytes) where they belong."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from alter_publish.definition.state import zone_sha256, zone_sha256_soon
from alter_publish.fileio import (
    KERNEL_COPY_MIN_OCTETS,
    Chunk,
    FileSpan,
    atomic_write_chunks,
    chunks_differ,
)
from alter_publish.mapped import MAX_LIVE_MAPPINGS, MappedFile, read_mapped
from alter_publish.pipeline.incremental import apply_edits

TEXT = b"a 3600 IN TXT x\nb 3600 IN RRSIG TXT y\nb 3600 IN NSEC3 z\n"


def _mapped(tmp_path: Path, data: bytes) -> MappedFile:
    path = tmp_path / "zone"
    path.write_bytes(data)
    mapped = read_mapped(path)
    assert isinstance(mapped, MappedFile)
    return mapped


def test_the_bytes_methods_agree_with_bytes(tmp_path: Path) -> None:
    mapped = _mapped(tmp_path, TEXT)
    assert len(mapped) == len(TEXT)
    assert mapped[2:6] == TEXT[2:6]
    assert mapped.index(b"\n", 3) == TEXT.index(b"\n", 3)
    assert mapped.find(b"RRSIG") == TEXT.find(b"RRSIG")
    assert mapped.rfind(b"\n", 0, 20) == TEXT.rfind(b"\n", 0, 20)
    assert mapped.startswith(b"b 3600", 16)
    assert not mapped.startswith(b"a", 16)
    assert mapped.count(b" IN ", 0, 40) == TEXT.count(b" IN ", 0, 40)
    assert bytes(memoryview(mapped)) == TEXT


def test_in_looks_for_the_whole_subsequence_as_for_bytes(tmp_path: Path) -> None:
    mapped = _mapped(tmp_path, TEXT)
    assert b"IN NSEC3" in mapped  # a bare mmap only looks for one byte
    assert b"IN NSEC4" not in mapped


def test_index_raises_as_bytes_does_when_not_found(tmp_path: Path) -> None:
    mapped = _mapped(tmp_path, TEXT)
    with pytest.raises(ValueError, match="not found"):
        mapped.index(b"nowhere")


def test_an_empty_file_reads_as_empty_bytes(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    path.write_bytes(b"")
    assert read_mapped(path) == b""


@given(st.binary(min_size=1, max_size=200), st.binary(min_size=1, max_size=4), st.integers(0, 210))
def test_find_index_startswith_count_agree(data: bytes, sub: bytes, at: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        mapped = _mapped(Path(directory), data)
        assert mapped.find(sub, at) == data.find(sub, at)
        assert mapped.startswith(sub, at) == data.startswith(sub, at)
        assert mapped.count(sub, at) == data.count(sub, at)
        assert (sub in mapped) == (sub in data)
        expected = data.find(sub, at)
        if expected >= 0:
            assert mapped.index(sub, at) == expected


def test_live_mappings_are_capped_so_many_zones_keep_descriptors(tmp_path: Path) -> None:
    # A run keeps each patched zone's mappings until it commits, and each holds a file
    # descriptor: 500 patched zones ran out of them. Beyond the cap a file is read.
    path = tmp_path / "zone"
    path.write_bytes(TEXT)
    held = [read_mapped(path) for _ in range(MAX_LIVE_MAPPINGS + 10)]
    mapped = [data for data in held if isinstance(data, MappedFile)]
    assert len(mapped) <= MAX_LIVE_MAPPINGS
    assert all(data[:] == TEXT for data in held)
    for data in mapped:
        data.close()
    del held, mapped
    assert isinstance(read_mapped(path), MappedFile)  # released mappings free their places


def test_spans_of_a_mapped_file_are_written_in_place_among_other_chunks(tmp_path: Path) -> None:
    # The kernel's copy goes to the descriptor's position: what the writer buffered
    # before a span must be out first, and what follows must land after it.
    source = tmp_path / "old.zone"
    data = bytes(range(256)) * 4096 + b"tail"
    source.write_bytes(data)
    mapped = read_mapped(source)
    assert isinstance(mapped, MappedFile)
    edits = [(10, 20, b"one"), (300_000, 300_001, b""), (len(data) - 2, len(data), b"TAIL")]
    chunks = apply_edits(mapped, edits)
    assert any(isinstance(chunk, FileSpan) for chunk in chunks)
    target = tmp_path / "new.zone"
    assert atomic_write_chunks(target, chunks, compare=False)
    expected = b"".join(apply_edits(data, edits))
    assert target.read_bytes() == expected
    assert zone_sha256(chunks) == hashlib.sha256(expected).hexdigest()
    assert zone_sha256_soon(chunks)() == hashlib.sha256(expected).hexdigest()
    assert not chunks_differ(target, chunks)


def test_a_span_the_kernel_cannot_copy_is_written_from_its_bytes(tmp_path: Path) -> None:
    # A pipe is no file copy_file_range reads: the span's bytes are written instead.
    read_end, write_end = os.pipe()
    try:
        data = bytes(range(256)) * 1024
        assert len(data) - 4 >= KERNEL_COPY_MIN_OCTETS  # long enough to be copied
        target = tmp_path / "out"
        chunks: list[Chunk] = [b"head ", FileSpan(read_end, 0, memoryview(data)[2:-2]), b" tail"]
        assert atomic_write_chunks(target, chunks, compare=False)
        assert target.read_bytes() == b"head " + data[2:-2] + b" tail"
    finally:
        os.close(read_end)
        os.close(write_end)
