"""The key store's journal: which handles' keys the store wrote since a run took its
key ``stat`` lines, and when it cannot tell (then a run takes every line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from alter_publish.errors import KeyStoreError
from alter_publish.format.handles import parse_handle
from alter_publish.keys import journal
from alter_publish.keys.journal import NO_JOURNAL, Mark, changes_since, journal_mark, note
from alter_publish.keys.store import KeyStore

ZONE = "a.example"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / ZONE).mkdir(mode=0o700)
    return tmp_path


def test_no_journal_names_nothing_until_one_is_made(root: Path) -> None:
    assert journal_mark(root, ZONE) == NO_JOURNAL
    assert changes_since(root, ZONE, NO_JOURNAL) == (NO_JOURNAL, frozenset())
    note(root, ZONE, "alice")
    mark, names = changes_since(root, ZONE, NO_JOURNAL)  # made since: read whole
    assert names == frozenset({"alice"})
    assert mark == journal_mark(root, ZONE) != NO_JOURNAL
    assert (root / ZONE / ".changes").stat().st_mode & 0o777 == 0o600


def test_only_what_was_appended_since_a_mark_is_named(root: Path) -> None:
    note(root, ZONE, "alice")
    mark = journal_mark(root, ZONE)
    assert changes_since(root, ZONE, mark) == (mark, frozenset())
    note(root, ZONE, "bob")
    note(root, ZONE, "carol")
    note(root, ZONE, "bob")
    later, names = changes_since(root, ZONE, mark)
    assert names == frozenset({"bob", "carol"})
    assert later.journal == mark.journal
    assert later.size > mark.size
    assert Mark.from_text(later.to_text()) == later
    assert Mark.from_text(NO_JOURNAL.to_text()) == NO_JOURNAL


@pytest.mark.parametrize(
    "damage",
    ["removed", "replaced", "shortened", "header"],
)
def test_a_journal_that_cannot_tell_says_so(root: Path, damage: str) -> None:
    """Restored from a backup, replaced, cut short: every handle's lines are taken."""
    note(root, ZONE, "alice")
    note(root, ZONE, "bob")
    mark = journal_mark(root, ZONE)
    path = root / ZONE / ".changes"
    if damage == "removed":
        path.unlink()
    elif damage == "replaced":
        path.unlink()
        note(root, ZONE, "alice")
        note(root, ZONE, "bob")
        note(root, ZONE, "carol")  # longer than the mark, but another journal
    elif damage == "shortened":
        path.write_bytes(path.read_bytes()[: mark.size - 4])
    else:
        path.write_bytes(b"x" + path.read_bytes()[1:])
    assert changes_since(root, ZONE, mark)[1] is None


@pytest.mark.parametrize("text", ["", "x:1", "a" * 32 + ":", "a" * 32 + ":-1", 7])
def test_a_damaged_mark_does_not_read(text: object) -> None:
    with pytest.raises(ValueError, match="mark"):
        Mark.from_text(text)


def test_the_store_names_a_handle_before_and_after_writing_its_key(root: Path) -> None:
    store = KeyStore(root)
    handle = parse_handle("~alice")
    mark = journal_mark(root, ZONE)
    store.generate(ZONE, handle, 1)
    assert changes_since(root, ZONE, mark)[1] == frozenset({"alice"})
    lines = (root / ZONE / ".changes").read_text().splitlines()
    assert lines[1:] == ["alice", "alice"]


def test_a_key_write_cut_short_is_named_already(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a run killed between the journal and the key leaves it: the next run looks."""
    store = KeyStore(root)
    handle = parse_handle("~alice")

    def cut(*args: object, **kwargs: object) -> bool:
        raise KeyStoreError("cut short", where="test")

    monkeypatch.setattr("alter_publish.keys.store.atomic_write_bytes", cut)
    with pytest.raises(KeyStoreError, match="cut short"):
        store.generate(ZONE, handle, 1)
    assert changes_since(root, ZONE, NO_JOURNAL)[1] == frozenset({"alice"})
    assert store.epochs(ZONE, handle) == ()


def test_a_journal_that_cannot_be_written_is_a_key_store_error(root: Path) -> None:
    (root / ZONE / ".changes").mkdir()
    with pytest.raises(KeyStoreError, match="key journal"):
        journal.note(root, ZONE, "alice")


def test_a_line_being_appended_is_read_whole_by_the_next_run(root: Path) -> None:
    """A mark never lands inside a line: the half read now is named whole later."""
    note(root, ZONE, "alice")
    mark = journal_mark(root, ZONE)
    path = root / ZONE / ".changes"
    with path.open("ab") as handle:
        handle.write(b"bo")  # an append caught halfway
    assert journal_mark(root, ZONE) == mark
    later, names = changes_since(root, ZONE, mark)
    assert (later, names) == (mark, frozenset())
    with path.open("ab") as handle:
        handle.write(b"b\n")
    assert changes_since(root, ZONE, later)[1] == frozenset({"bob"})


def test_a_journal_that_is_not_one_is_made_anew_by_the_next_write(root: Path) -> None:
    """Else it would tell nothing ever after, and every run would take every line."""
    path = root / ZONE / ".changes"
    path.write_bytes(b"not a journal\nalice\n")
    assert changes_since(root, ZONE, NO_JOURNAL)[1] is None
    note(root, ZONE, "bob")
    mark, names = changes_since(root, ZONE, NO_JOURNAL)
    assert names == frozenset({"bob"})
    assert mark != NO_JOURNAL
