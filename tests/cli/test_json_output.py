"""``--json`` output: indented as ``json.dumps(indent=2)``; long lists an item per line."""

from __future__ import annotations

import json

from alter_publish.cli.output import json_text

ENCODE = json.JSONEncoder(sort_keys=True).encode


def test_small_documents_print_exactly_as_json_dumps_indents_them() -> None:
    doc = {"b": [1, 2, {"x": [], "w": {}}], "a": {"z": None, "y": 'é"\n', "n": 1.5}, "t": True}
    assert json_text(doc, ENCODE) == json.dumps(doc, indent=2, sort_keys=True)


def test_long_lists_print_an_item_per_line_and_read_back_the_same() -> None:
    handles = [{"handle": f"~user{n}", "ok": True, "epoch": n, "detail": None} for n in range(200)]
    doc = {"zones": [{"proof": {"handles": handles}, "zone": "a.example"}]}
    text = json_text(doc, ENCODE)
    assert json.loads(text) == doc
    lines = text.splitlines()
    assert '        "handles": [' in lines
    assert '          {"detail": null, "epoch": 7, "handle": "~user7", "ok": true},' in lines
    assert len(lines) == 200 + 11
