"""A definition read with its plain entries apart (:func:`load_definition_text`) is read
exactly as the YAML parser reads the whole text (``load_yaml_text``, the oracle): the
same nodes at the same positions, or the same error. Hypothesis writes definitions of
plain entries among others that try to reach across the lines left blank: quoted text
and flow collections over several lines, block scalars that keep their line breaks,
comments, blank lines, deeper lines, keys after the list.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alter_publish.definition import entries
from alter_publish.definition.entries import _plain_entries_apart, load_definition_text
from alter_publish.definition.loader import load_yaml_text
from alter_publish.errors import DefinitionError

FILE = "zones/example.com.yaml"
HEAD = "zone: example.com\nns: [ns1.example.com.]\nhandles:\n"

#: Entries that are not plain, some of them reaching over the next lines.
OTHERS = [
    "  - {handle: ~svc1.bot, resolver: 'https://example.com/1'}",
    "  - handle: ~cc-agent-2\n    lifetime: 30d",
    "  - ~user3  # a comment",
    "  - ~user4\n    # a comment below",
    '  - "~user5',  # a quoted scalar that runs on
    "  - {handle: ~user6,",  # a flow mapping that runs on
    "  - handle: ~user7\n    resolver: |+\n      kept",  # a block scalar keeping breaks
    "  - handle: ~user8\n    resolver: >\n      https://example.com/8",
    "  - '~user9'",
    "  - ~user10 ~more",
    "  -   ~user11",
    "  - ~",
    "  - [~user12]",
    "  - !!str ~user13",
    "  - ~user14:",
    "  - ~user15\n",
    "",
    "  # a comment line",
    '  "}',
    '  "',
    "  }",
    "   - ~deeper",
    "ttl: 1h",
]
TAILS = [
    "",
    "ttl: 1h\n",
    "dnssec: {enabled: true}\n",
    "  oops: 1\n",
    " x: 1\n",
    "handles: []\n",
    '  "\n',
    "  }\n",
]


def _read(text: str) -> object:
    """The tree, or the error, as the whole text's parser gives it."""
    try:
        return load_yaml_text(text, FILE)
    except DefinitionError as exc:
        return ("error", str(exc), exc.reasons)


def _read_fast(text: str) -> object:
    try:
        return load_definition_text(text, FILE)
    except DefinitionError as exc:
        return ("error", str(exc), exc.reasons)


@pytest.fixture(autouse=True)
def _few_entries_are_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entries, "FAST_ENTRIES_MIN", 1)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.integers(0, 99).map(lambda n: f"  - ~user{n}"),
            st.sampled_from(OTHERS),
        ),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(TAILS),
)
def test_a_definition_reads_as_the_whole_text_reads(lines: list[str], tail: str) -> None:
    text = HEAD + "\n".join(lines) + "\n" + tail
    whole = _read(text)
    fast = _plain_entries_apart(text, FILE)  # None: it declined (then the whole is parsed)
    assert fast is None or fast == whole
    assert _read_fast(text) == whole


def test_plain_entries_are_read_apart_and_give_the_same_nodes() -> None:
    lines = [f"  - ~user{n}" for n in range(300)]
    lines[7] = "  - {handle: ~svc7.bot, resolver: 'https://example.com/7'}"
    lines[8] = "  - handle: ~cc-agent-8\n    lifetime: 30d\n  # about the next one"
    text = HEAD + "\n".join(lines) + "\nttl: 1h\n"
    fast = _plain_entries_apart(text, FILE)
    assert fast is not None  # the faster way was taken
    assert fast == load_yaml_text(text, FILE)
    first = fast.value["handles"].value[0]
    assert (first.value, str(first.mark)) == ("~user0", f"{FILE}:4:5")


@pytest.mark.parametrize(
    "entry",
    [
        '  - "~user5',  # its text runs over the next entry's line
        "  - handle: ~user7\n    resolver: |+\n      kept",
        "  - {handle: ~user6,",
    ],
    ids=["quoted", "block-scalar", "flow"],
)
def test_an_entry_that_reaches_over_the_next_lines_makes_a_whole_parse(entry: str) -> None:
    closing = '  "\n' if entry.startswith('  - "') else "  }\n" if "{" in entry else "ttl: 1h\n"
    text = HEAD + "  - ~user1\n" + entry + "\n  - ~user2\n  - ~user3\n" + closing
    assert _plain_entries_apart(text, FILE) is None
    assert _read_fast(text) == _read(text)


@pytest.mark.parametrize(
    "head",
    [
        'note: "x\nhandles:\n- ~a\n- ~b\n"\nhandles :\n',
        "note: [x,\nhandles:\n- ~a\n- ~b\n]\nhandles :\n",
    ],
    ids=["quoted", "flow"],
)
def test_a_handles_line_inside_a_value_above_the_real_key_makes_a_whole_parse(head: str) -> None:
    text = "zone: example.com\n" + head
    assert _plain_entries_apart(text, FILE) is None
    assert _read_fast(text) == _read(text)
