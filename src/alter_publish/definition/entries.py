"""A definition cut around its ``handles:`` list, entry by entry.

``sign`` patches a large zone from the entries that changed (``pipeline.incremental``)
and reads a whole definition faster (:func:`load_definition_text`): a list of 100,000
plain entries (``- ~blake``) is not handed to the YAML parser line by line, each of
them a scalar node to resolve, construct and position; only what else the definition
holds is. The nodes are the very ones the parser gives (``tests/unit/test_entries.py``
compares both ways); where that cannot be shown, the whole text is parsed.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import yaml

from alter_publish.definition.loader import Mark, Node, compose_text, load_yaml_text

_HANDLES_KEY = re.compile(r"^handles:[ ]*(?:#.*)?$", re.MULTILINE)
# Blank and comment lines, then the first entry: ``<indent>-``.
_FIRST_ENTRY = re.compile(r"((?: *(?:#.*)?\n)*)( *)-(?: |$)", re.MULTILINE)
# An anchor (&a) or alias (*a) can tie one entry to another: then entries are not
# independent and only a full parse is right. (Quoted text may trip this: harmless.)
_ANCHOR_OR_ALIAS = re.compile(r"(?:^|[\s\[{,:-])[&*]\S")
# Line breaks YAML knows besides \n, and tabs: then the line split below may disagree
# with the YAML parser, so it declines.
_ODD_TEXT = re.compile("[\r\t\x0b\x0c\x1c-\x1e\x85\u2028\u2029\ufeff]")


@dataclass(frozen=True, slots=True)
class Entries:
    """A definition cut around its handle entries.

    Attributes:
        header: the definition with ``handles: []`` in place of the entries.
        texts: each entry's lines as written (comment and blank lines after it included).
        offsets: where each entry starts in the definition text.
        text: the definition text.
    """

    header: str
    texts: tuple[str, ...]
    offsets: tuple[int, ...]
    text: str = field(repr=False)
    key_at: int = 0  # where the ``handles:`` key line starts in ``text``

    def document(self, indexes: Sequence[int]) -> str:
        """A YAML document of just the entries ``indexes`` (ascending), each on the line
        it stands on in the definition (so errors name the right line)."""
        key_line = self.text.count("\n", 0, self.offsets[0]) - 1  # lines above ``handles:``
        parts = ["\n" * key_line, "handles:\n"]
        line = key_line + 1  # lines written so far
        at, counted = key_line + 1, self.offsets[0]  # the line ``counted`` starts on
        for index in indexes:
            # Counted on from the entry before (ascending): thousands of entries due at
            # once each counting from the top would read the text thousands of times.
            at += self.text.count("\n", counted, self.offsets[index])
            counted = self.offsets[index]
            parts.append("\n" * (at - line))
            entry = self.texts[index]
            parts.append(entry + "\n")
            line = at + entry.count("\n") + 1
        return "".join(parts)


def split_entries(text: str) -> Entries | None:
    """Cut ``text`` around the block-style list under a top-level ``handles:`` key.

    Returns:
        The parts, or None when the definition is not plainly laid out that way (a
        flow list, anchors or aliases among the entries, tabs, unusual line breaks):
        then only a full parse is safe.
    """
    if _odd_text(text):
        return None
    # A quick count first: the key's pattern, tried at every line of 100,000, is slow.
    many = text.count("handles:") > 1
    if many and len(_HANDLES_KEY.findall(text)) != 1:
        return None
    key = _HANDLES_KEY.search(text)
    if key is None:
        return None
    start = key.end() + 1
    first = _FIRST_ENTRY.match(text, start)
    if first is None:
        return None
    indent = " " * len(first.group(2))
    # The list ends at the first line that is not an entry at this indent, a line
    # indented deeper, a comment or blank.
    after = re.compile(rf"\n(?!{indent}-(?: |$)|{indent} | *(?:#|$))", re.MULTILINE)
    ending = after.search(text, first.start(2) - 1 if first.start(2) else 0)
    end = ending.start() + 1 if ending else len(text)
    block = text[first.start(2) : end]
    if ("&" in block or "*" in block) and _ANCHOR_OR_ALIAS.search(block):
        return None
    splitter = re.compile(rf"\n(?={indent}-(?: |$))", re.MULTILINE)
    texts = splitter.split(block.removesuffix("\n"))
    # Each entry starts one past the end of the one before (the line break between).
    lengths = map((1).__add__, map(len, texts[:-1]))
    offsets = itertools.accumulate(lengths, initial=first.start(2))
    header = text[: key.start()] + "handles: []\n" + text[end:]
    return Entries(header, tuple(texts), tuple(offsets), text, key.start())


#: The characters of :data:`_ODD_TEXT` in ASCII (looked for one by one in ASCII text:
#: each ``in`` is a fast search, the pattern a slow one over a large definition).
_ODD_ASCII = "\r\t\x0b\x0c\x1c\x1d\x1e"


def _odd_text(text: str) -> bool:
    """Whether ``text`` holds a character of :data:`_ODD_TEXT`."""
    if text.isascii():
        return any(char in text for char in _ODD_ASCII)
    return _ODD_TEXT.search(text) is not None


# --- the whole definition, faster --------------------------------------------------------

#: Below this many entries the whole text is parsed: there is little to save.
FAST_ENTRIES_MIN = 256
#: An entry that is a plain handle on its own line, ``- ~blake``: a plain YAML scalar
#: whose first character, ``~``, no YAML type but null claims (and null is ``~`` alone),
#: so its value is its text.
_PLAIN_ENTRY = re.compile(r" *- (~[A-Za-z0-9._-]+)")


def load_definition_text(text: str, file: str) -> Node:
    """:func:`~alter_publish.definition.loader.load_yaml_text`, faster for a long list
    of plain handle entries: the YAML parser reads the definition with each plain entry's
    line left blank, and each plain entry's node is made from its line. That is only
    done when it gives what parsing the whole text gives: the entries are independent
    (:func:`split_entries`), and every other entry's values end on its own lines (no
    quoted text, flow collection or block scalar runs into the lines left blank); else,
    and for any problem (then named as for the whole text), the whole text is parsed.

    Raises:
        DefinitionError: as ``load_yaml_text``.
    """
    return _plain_entries_apart(text, file) or load_yaml_text(text, file)


def _plain_entries_apart(text: str, file: str) -> Node | None:
    """The tree of ``text`` read with its plain entries apart; None when that cannot be
    shown to be the tree of the whole text, or the text has a problem."""
    entries = split_entries(text)
    if entries is None or len(entries.texts) < FAST_ENTRIES_MIN:
        return None
    start = entries.offsets[0]
    first = text.count("\n", 0, start)  # the first entry's line, from 0
    plain: list[re.Match[str] | None] = []
    lines: list[tuple[int, int]] = []  # each entry's first and last line
    kept: list[str] = []
    line = first
    for entry in entries.texts:
        match = _PLAIN_ENTRY.fullmatch(entry)
        breaks = 0 if match else entry.count("\n")
        plain.append(match)
        lines.append((line, line + breaks))
        kept.append("" if match else entry)
        line += breaks + 1
    end = start + sum(map(len, entries.texts)) + len(entries.texts) - 1
    composed = compose_text(text[:start] + "\n".join(kept) + text[end:], file)
    if composed is None:
        return None
    try:
        others = [span for span, match in zip(lines, plain, strict=True) if match is None]
        key_line = text.count("\n", 0, entries.key_at)
        nodes = _entry_nodes(composed.root, len(others), key_line)
        if nodes is None or not all(
            node.start_mark.line == span[0] and _ends_by(node, span[1])
            for node, span in zip(nodes, others, strict=True)
        ):
            return None
        top = composed.build(composed.root)
        if composed.problems:
            return None
    except (yaml.YAMLError, RecursionError):
        return None
    finally:
        composed.close()
    built = iter(top.value["handles"].value or ())
    items = [
        next(built) if match is None else Node(match[1], Mark(file, at + 1, match.start(1) + 1))
        for match, (at, _) in zip(plain, lines, strict=True)
    ]
    indent = len(entries.texts[0]) - len(entries.texts[0].lstrip(" "))
    handles = Node(items, Mark(file, first + 1, indent + 1))
    return Node({**top.value, "handles": handles}, top.mark, top.key_marks)


def _entry_nodes(root: yaml.Node, count: int, key_line: int) -> Sequence[yaml.Node] | None:
    """The ``handles`` list's nodes: ``count`` of them (None if not), or, when every
    entry is plain, its null value; None too unless the top-level ``handles`` key is
    the one found at the start of line ``key_line`` (not, say, text in a quoted value
    above the real key)."""
    if not isinstance(root, yaml.MappingNode):
        return None
    keyed = [(key, value) for key, value in root.value if key.value == "handles"]
    if len(keyed) != 1 or (keyed[0][0].start_mark.line, keyed[0][0].start_mark.column) != (
        key_line,
        0,
    ):
        return None
    values = [keyed[0][1]]
    (value,) = values
    if isinstance(value, yaml.SequenceNode) and len(value.value) == count and count:
        return list(value.value)
    plain_null = value.tag == "tag:yaml.org,2002:null" and value.value == ""
    return [] if count == 0 and isinstance(value, yaml.ScalarNode) and plain_null else None


def _ends_by(node: yaml.Node, last: int) -> bool:
    """Whether every scalar and flow collection of ``node`` ends by line ``last`` and none
    is a block scalar (whose kept line breaks would take in the lines left blank)."""
    if isinstance(node, yaml.ScalarNode):
        return node.style not in ("|", ">") and node.end_mark.line <= last
    if getattr(node, "flow_style", False) and node.end_mark.line > last:
        return False
    children: list[yaml.Node] = (
        [item for pair in node.value for item in pair]
        if isinstance(node, yaml.MappingNode)
        else list(node.value)
    )
    return all(_ends_by(child, last) for child in children)
