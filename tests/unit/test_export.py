"""Exports of what ``sign`` proved: BIND $INCLUDE lines, octoDNS YAML, the well-known JSON.

The shipped example zone is signed once per module with the real pipeline; then
``~blake`` is rotated as compromised and the zone signed again, so a revocation
record sits beside its new envelope. Every format must carry exactly the record
texts of ``build/example.com.envelopes.json``.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dns.name
import dns.rdataclass
import dns.rdatatype
import dns.zone
import dns.zonefile
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from alter_publish import pipeline
from alter_publish.definition.model import ZoneSpec, load_zone
from alter_publish.errors import EXIT_OUTPUT, RenderError
from alter_publish.format.envelope import split_txt
from alter_publish.format.identitylog import leaf_hash
from alter_publish.format.tlog import Checkpoint, TlogProof, verify_inclusion
from alter_publish.keys.lifecycle import RotationMode, rotate
from alter_publish.pipeline import output_paths
from alter_publish.publish.export import (
    WELL_KNOWN_FORMAT,
    ExportFormat,
    ExportRecord,
    ZoneExport,
    default_export_path,
    export_zone,
    load_export,
    natural_key,
    octodns_escape,
    octodns_unescape,
    relative_name,
    render_export,
    render_octodns,
    write_export,
)
from tests.conftest import EXAMPLE_ZONE, NOW, Workspace

ZONE = "example.com"
BLAKE_OWNER = "_alter.blake.example.com."
MINUTE = 60
RUN_SIGN = "run 'alter-publish sign' first"
UNESCAPED_SEMICOLON = re.compile(r"(?<!\\);")
PRINTABLE_NO_BACKSLASH = st.characters(
    min_codepoint=0x20, max_codepoint=0x7E, exclude_characters="\\"
)
SOA_NS = (
    "$ORIGIN example.com.\n"
    "@ 3600 IN SOA ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 300\n"
    "@ 3600 IN NS ns1.example.com.\n"
)


@dataclasses.dataclass(frozen=True)
class Signed:
    """The example zone signed twice, ~blake revoked in between (read-only for tests)."""

    ws: Workspace
    spec: ZoneSpec
    document: dict[str, Any]

    def texts(self) -> dict[str, list[str]]:
        """Owner -> record texts (envelope, then revocations) as the document says."""
        return {
            item["owner"]: [item["text"], *item.get("revocations", [])]
            for item in self.document["handles"]
        }


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    ws = Workspace(tmp_path_factory.mktemp("export"))
    (ws.root / "zones").mkdir()
    shutil.copy(EXAMPLE_ZONE, ws.zone_file)
    first = pipeline.sign([ws.zone_file], out=ws.out, keys=ws.keys, now=NOW, create_keys=True)
    assert first.ok
    spec = load_zone(ws.zone_file)
    rotate(spec, "~blake", keys=ws.keys, now=NOW + MINUTE, mode=RotationMode.COMPROMISED)
    second = pipeline.sign([ws.zone_file], out=ws.out, keys=ws.keys, now=NOW + MINUTE)
    assert second.ok
    document = json.loads(ws.envelopes.read_text(encoding="utf-8"))
    return Signed(ws, spec, document)


@pytest.fixture
def out_copy(signed: Signed, tmp_path: Path) -> Path:
    """A build directory holding a copy of the envelopes document, free to corrupt."""
    out = tmp_path / "build"
    out.mkdir()
    shutil.copy(signed.ws.envelopes, output_paths(out, ZONE)[1])
    return out


def _write_document(out: Path, document: Any) -> None:
    output_paths(out, ZONE)[1].write_text(json.dumps(document), encoding="utf-8")


# --- what every format carries ---------------------------------------------------------


def _bind_texts(text: str) -> dict[str, list[str]]:
    return {
        rrset.name.to_text(): sorted(b"".join(rdata.strings).decode("ascii") for rdata in rrset)
        for rrset in dns.zonefile.read_rrsets(text, rdclass=None)
    }


def _octodns_texts(text: str) -> dict[str, list[str]]:
    loaded = yaml.safe_load(text)
    return {
        f"{name}.{ZONE}.": sorted(octodns_unescape(value) for value in data["values"])
        for name, data in loaded.items()
    }


def _well_known_texts(text: str) -> dict[str, list[str]]:
    return {record["owner"]: sorted(record["texts"]) for record in json.loads(text)["records"]}


TEXTS_OF: dict[ExportFormat, Callable[[str], dict[str, list[str]]]] = {
    ExportFormat.BIND_INCLUDE: _bind_texts,
    ExportFormat.OCTODNS: _octodns_texts,
    ExportFormat.WELL_KNOWN: _well_known_texts,
}


def test_the_fixture_has_a_revocation(signed: Signed) -> None:
    texts = signed.texts()[BLAKE_OWNER]
    assert len(texts) == 2
    assert "; e=2; " in texts[0]
    assert texts[1].startswith("v=alter1; h=~blake; e=1; rev=")


def test_load_export_is_the_envelopes_document_with_the_definitions_ttls(signed: Signed) -> None:
    export = load_export(signed.spec, signed.ws.out)
    assert (export.zone, export.serial) == (ZONE, signed.document["serial"])
    assert [r.handle for r in export.records] == [h.handle.ref for h in signed.spec.handles]
    assert [r.handle for r in export.records] == [i["handle"] for i in signed.document["handles"]]
    assert {r.owner: list(r.texts) for r in export.records} == signed.texts()
    assert [r.ttl for r in export.records] == [h.ttl for h in signed.spec.handles]
    blake = next(r for r in export.records if r.owner == BLAKE_OWNER)
    assert blake.texts == (blake.envelope, *blake.revocations)
    assert len(blake.revocations) == 1


@pytest.mark.parametrize("fmt", list(ExportFormat), ids=str)
def test_every_format_carries_exactly_the_signed_texts(signed: Signed, fmt: ExportFormat) -> None:
    text = render_export(load_export(signed.spec, signed.ws.out), signed.spec, fmt)
    wanted = {owner: sorted(texts) for owner, texts in signed.texts().items()}
    assert TEXTS_OF[fmt](text) == wanted
    assert any("; rev=" in t for texts in TEXTS_OF[fmt](text).values() for t in texts)


# --- bind-include ----------------------------------------------------------------------


def _rendered(signed: Signed, fmt: ExportFormat) -> str:
    return render_export(load_export(signed.spec, signed.ws.out), signed.spec, fmt)


def test_bind_include_lines_are_absolute_with_ttl_class_and_split_strings(signed: Signed) -> None:
    text = _rendered(signed, ExportFormat.BIND_INCLUDE)
    records = [line for line in text.splitlines() if line and not line.startswith(";")]
    expected_lines = sum(len(texts) for texts in signed.texts().values())
    assert len(records) == expected_lines
    ttl = {h.owner: h.ttl for h in signed.spec.handles}
    for line in records:
        owner, line_ttl, rdclass, rdtype, _ = line.split(" ", 4)
        assert owner.endswith(f".{ZONE}.")
        assert (int(line_ttl), rdclass, rdtype) == (ttl[owner], "IN", "TXT")
    for rrset in dns.zonefile.read_rrsets(text, rdclass=None):
        assert rrset.rdclass == dns.rdataclass.IN
        assert rrset.ttl == ttl[rrset.name.to_text()]
        for rdata in rrset:
            joined = b"".join(rdata.strings).decode("ascii")
            assert rdata.strings == tuple(s.encode("ascii") for s in split_txt(joined))
    lengths = [len(r.strings[0]) for rr in dns.zonefile.read_rrsets(text, rdclass=None) for r in rr]
    assert 255 in lengths  # long envelopes really were split at 255 octets


def test_bind_include_via_dollar_include_gives_the_signed_zones_txt(
    signed: Signed, tmp_path: Path
) -> None:
    result = export_zone(
        signed.spec,
        ExportFormat.BIND_INCLUDE,
        out=signed.ws.out,
        output=tmp_path / "example.com.alter.include",
    )
    master = tmp_path / "example.com.zone"
    master.write_text(SOA_NS + f"$INCLUDE {result.path}\n", encoding="utf-8")
    included = dns.zone.from_file(
        str(master), origin=f"{ZONE}.", relativize=False, allow_include=True
    )
    served = dns.zone.from_text(
        signed.ws.rendered.read_text(encoding="utf-8"), origin=f"{ZONE}.", relativize=False
    )
    for handle in signed.spec.handles:
        name = dns.name.from_text(handle.owner)
        ours = included.get_rdataset(name, dns.rdatatype.TXT)
        theirs = served.get_rdataset(name, dns.rdatatype.TXT)
        assert ours is not None
        assert theirs is not None
        assert (ours, ours.ttl) == (theirs, theirs.ttl)
    assert len(included.get_rdataset(BLAKE_OWNER, dns.rdatatype.TXT) or ()) == 2


# --- octodns -------------------------------------------------------------------------


def test_octodns_follows_its_documented_rules(signed: Signed) -> None:
    text = _rendered(signed, ExportFormat.OCTODNS)
    loaded = yaml.safe_load(text)
    names = list(loaded)
    assert sorted(names) == sorted(h.owner.removesuffix(f".{ZONE}.") for h in signed.spec.handles)
    assert "_alter" in names
    assert "_alter.blake" in names
    assert "_alter.deploy.bot" in names
    assert names == sorted(names, key=natural_key)
    assert names == sorted(names)  # no digits decide the order here: plain sort agrees
    ttl = {h.owner.removesuffix(f".{ZONE}."): h.ttl for h in signed.spec.handles}
    for name, data in loaded.items():
        assert not name.endswith(".")
        assert list(data) == ["ttl", "type", "values"]  # octoDNS wants every mapping sorted
        assert (data["type"], data["ttl"]) == ("TXT", ttl[name])
        for value in data["values"]:
            assert ";" in value
            assert not UNESCAPED_SEMICOLON.search(value)
            assert not re.search(r"\w;", value)  # octoDNS's own unescaped-';' check
            assert f"- {value}\n" in text  # one line: YAML did not fold the value
    assert loaded["_alter.blake"]["values"] == [
        octodns_escape(t) for t in signed.texts()[BLAKE_OWNER]
    ]


def test_octodns_accepts_the_export_when_installed(signed: Signed) -> None:
    octodns_record = pytest.importorskip("octodns.record")
    octodns_yaml = pytest.importorskip("octodns.yaml")
    octodns_zone = pytest.importorskip("octodns.zone")
    text = _rendered(signed, ExportFormat.OCTODNS)
    loaded = octodns_yaml.safe_load(text)  # enforces octoDNS's key order
    zone = octodns_zone.Zone(f"{ZONE}.", [])
    for name, data in loaded.items():
        record = octodns_record.Record.new(zone, name, data)
        assert record.fqdn == f"{name}.{ZONE}."
        assert [str(v) for v in record.values] == sorted(data["values"])


def _synthetic(*names: str, text: str = "v=alter1; h=~x; e=1; rev=AA") -> ZoneExport:
    return ZoneExport(
        zone=ZONE,
        serial=7,
        records=tuple(
            ExportRecord(handle=f"~{n}", owner=f"_alter.{n}.{ZONE}.", ttl=300, envelope=text)
            for n in names
        ),
    )


def test_octodns_orders_names_naturally_as_its_loader_requires() -> None:
    loaded = yaml.safe_load(render_octodns(_synthetic("agent10", "agent9", "agent2.bot")))
    assert list(loaded) == ["_alter.agent2.bot", "_alter.agent9", "_alter.agent10"]


def test_octodns_refuses_a_backslash_it_cannot_carry() -> None:
    export = _synthetic("blake", text="v=alter1; h=~blake; e=1; model=a\\b; sig=AA")
    with pytest.raises(RenderError) as caught:
        render_octodns(export)
    assert (caught.value.category, caught.value.where) == ("render", "_alter.blake.example.com.")


@given(st.text(alphabet=PRINTABLE_NO_BACKSLASH))
def test_octodns_escape_round_trips(text: str) -> None:
    value = octodns_escape(text)
    assert octodns_unescape(value) == text
    assert not UNESCAPED_SEMICOLON.search(value)
    assert value.count(";") == text.count(";")


# --- well-known ----------------------------------------------------------------------


def test_well_known_document(signed: Signed) -> None:
    text = _rendered(signed, ExportFormat.WELL_KNOWN)
    doc = json.loads(text)
    assert text == json.dumps(doc, indent=2, sort_keys=True) + "\n"
    assert (doc["format"], doc["zone"], doc["serial"]) == (
        WELL_KNOWN_FORMAT,
        ZONE,
        signed.document["serial"],
    )
    assert [r["handle"] for r in doc["records"]] == [h.handle.ref for h in signed.spec.handles]
    for record, handle in zip(doc["records"], signed.spec.handles, strict=True):
        assert sorted(record) == ["handle", "owner", "texts", "tlog_proof", "ttl"]
        assert (record["owner"], record["ttl"]) == (handle.owner, handle.ttl)
        assert record["texts"] == signed.texts()[handle.owner]  # envelope first, in order
    # Each record carries its envelope's tlog-proof, which leads to its signed checkpoint.
    proofs = {item["handle"]: item["tlog_proof"] for item in signed.document["handles"]}
    for record in doc["records"]:
        assert record["tlog_proof"] == proofs[record["handle"]]
        proof = TlogProof.parse(record["tlog_proof"])
        checkpoint = Checkpoint.parse(proof.note().text)
        entry = f"{record['owner']}\x00{record['texts'][0]}".encode()
        verify_inclusion(
            leaf_hash(entry), proof.index, checkpoint.size, proof.hashes, checkpoint.root
        )


def test_a_tlog_proof_that_is_not_one_is_refused(signed: Signed, out_copy: Path) -> None:
    document = copy.deepcopy(signed.document)
    document["handles"][0]["tlog_proof"] = "not a proof"
    _write_document(out_copy, document)
    with pytest.raises(RenderError, match="tlog_proof is not"):
        load_export(signed.spec, out_copy)


# --- writing -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "relative"),
    [
        (ExportFormat.BIND_INCLUDE, "example.com.alter.include"),
        (ExportFormat.OCTODNS, "octodns/example.com.yaml"),
        (ExportFormat.WELL_KNOWN, "example.com/.well-known/alter-envelope.json"),
    ],
    ids=str,
)
def test_export_zone_writes_the_default_path_once(
    signed: Signed, out_copy: Path, fmt: ExportFormat, relative: str
) -> None:
    assert default_export_path(out_copy, ZONE, fmt) == out_copy / relative
    result = export_zone(signed.spec, fmt, out=out_copy)
    assert (result.path, result.written, result.format) == (out_copy / relative, True, fmt)
    assert result.path.read_text(encoding="utf-8") == _rendered(signed, fmt)
    assert result.path.stat().st_mode & 0o777 == 0o644
    assert result.records == sum(len(t) for t in signed.texts().values())
    assert not export_zone(signed.spec, fmt, out=out_copy).written


def test_export_zone_writes_output_when_given(signed: Signed, out_copy: Path) -> None:
    target = out_copy / "elsewhere" / "alter.yaml"
    result = export_zone(signed.spec, ExportFormat.OCTODNS, out=out_copy, output=target)
    assert result.path == target
    assert yaml.safe_load(target.read_text(encoding="utf-8"))
    assert not (out_copy / "octodns").exists()


def test_write_export_replaces_changed_content(tmp_path: Path) -> None:
    path = tmp_path / "a" / "f.txt"
    assert write_export(path, "one\n")
    assert not write_export(path, "one\n")
    assert write_export(path, "two\n")
    assert path.read_text(encoding="utf-8") == "two\n"
    assert [p.name for p in path.parent.iterdir()] == ["f.txt"]  # no temp files left


# --- bad inputs ----------------------------------------------------------------------


def test_missing_envelopes_file_says_to_sign(signed: Signed, tmp_path: Path) -> None:
    out = tmp_path / "build"
    with pytest.raises(RenderError) as caught:
        export_zone(signed.spec, ExportFormat.WELL_KNOWN, out=out)
    error = caught.value
    assert (error.category, error.exit_code) == ("render", EXIT_OUTPUT)
    assert error.where == str(output_paths(out, ZONE)[1])
    assert RUN_SIGN in error.what
    assert not out.exists()


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[]",
        json.dumps({"format": "something/else", "zone": ZONE, "serial": 1, "handles": []}),
        json.dumps({"format": "alter-publish/envelopes/1", "zone": ZONE, "handles": []}),
        json.dumps(
            {"format": "alter-publish/envelopes/1", "zone": ZONE, "serial": 1, "handles": {}}
        ),
    ],
    ids=["not-json", "not-object", "wrong-format", "no-serial", "handles-not-list"],
)
def test_corrupt_envelopes_file_says_to_sign(signed: Signed, out_copy: Path, content: str) -> None:
    output_paths(out_copy, ZONE)[1].write_text(content, encoding="utf-8")
    with pytest.raises(RenderError) as caught:
        load_export(signed.spec, out_copy)
    assert caught.value.where == str(output_paths(out_copy, ZONE)[1])
    assert RUN_SIGN in caught.value.what
    assert "\n" not in str(caught.value)


def test_document_of_another_zone_is_refused(signed: Signed, out_copy: Path) -> None:
    _write_document(out_copy, signed.document | {"zone": "example.org"})
    with pytest.raises(RenderError) as caught:
        load_export(signed.spec, out_copy)
    assert caught.value.what == "is for zone 'example.org', not 'example.com'"


def test_a_handle_missing_from_the_document_is_named(signed: Signed, out_copy: Path) -> None:
    handles = [i for i in signed.document["handles"] if i["handle"] != "~drew"]
    _write_document(out_copy, signed.document | {"handles": handles})
    with pytest.raises(RenderError) as caught:
        load_export(signed.spec, out_copy)
    where = str(output_paths(out_copy, ZONE)[1])
    assert caught.value.reasons == (f"{where}: ~drew: not in the document; {RUN_SIGN}",)
    assert str(caught.value) == caught.value.reasons[0]


def test_every_missing_handle_is_listed(signed: Signed, out_copy: Path) -> None:
    _write_document(out_copy, signed.document | {"handles": signed.document["handles"][:3]})
    with pytest.raises(RenderError) as caught:
        load_export(signed.spec, out_copy)
    assert [r.split(": ")[1] for r in caught.value.reasons] == ["~deploy.bot", "~cc-opus-4-7"]
    assert caught.value.what.endswith("(+1 more problem)")


def test_a_handle_not_in_the_definition_is_refused(signed: Signed) -> None:
    fewer = dataclasses.replace(
        signed.spec, handles=tuple(h for h in signed.spec.handles if h.handle.ref != "~blake")
    )
    with pytest.raises(RenderError) as caught:
        load_export(fewer, signed.ws.out)
    assert caught.value.what.startswith("~blake: not in the definition")


def _tampered(signed: Signed, ref: str, **fields: Any) -> dict[str, Any]:
    handles = [i | fields if i["handle"] == ref else i for i in signed.document["handles"]]
    return signed.document | {"handles": handles}


@pytest.mark.parametrize(
    ("ref", "field", "value", "reason"),
    [
        ("~blake", "owner", "_alter.drew.example.com.", "~blake: owner"),
        ("~blake", "text", "v=alter1; h=~blake; e=1; rev=x", "~blake: text is not"),
        ("~drew", "text", None, "~drew: no record text"),
        ("~drew", "txt_strings", ["v=alter1"], "~drew: txt_strings do not match"),
        ("~drew", "revocations", ["v=alter1; h=~drew; e=1; rev=AA"], "~drew: revocations[0] is"),
        ("~drew", "revocations", "v=alter1", "~drew: revocations is not a list"),
    ],
    ids=["owner", "revocation-as-envelope", "no-text", "strings", "malformed-revocation", "type"],
)
def test_a_tampered_handle_entry_is_refused(
    signed: Signed, out_copy: Path, ref: str, field: str, value: Any, reason: str
) -> None:
    _write_document(out_copy, _tampered(signed, ref, **{field: value}))
    with pytest.raises(RenderError) as caught:
        load_export(signed.spec, out_copy)
    assert caught.value.what.startswith(reason)


def test_the_envelope_of_another_handle_is_refused(signed: Signed, out_copy: Path) -> None:
    drew = next(i for i in signed.document["handles"] if i["handle"] == "~drew")
    _write_document(out_copy, _tampered(signed, "~blake", text=drew["text"]))
    with pytest.raises(RenderError) as caught:
        load_export(signed.spec, out_copy)
    assert caught.value.reasons[0].endswith("~blake: text is not an envelope for ~blake")


def test_the_revocation_of_another_handle_is_refused(signed: Signed, out_copy: Path) -> None:
    blake_revocation = signed.texts()[BLAKE_OWNER][1]
    _write_document(out_copy, _tampered(signed, "~drew", revocations=[blake_revocation]))
    with pytest.raises(RenderError) as caught:
        load_export(signed.spec, out_copy)
    assert caught.value.what == "~drew: revocations[0] is not a revocation for ~drew"


def test_render_refuses_records_of_another_zone(signed: Signed) -> None:
    export = dataclasses.replace(load_export(signed.spec, signed.ws.out), zone="example.org")
    with pytest.raises(RenderError):
        render_export(export, signed.spec, ExportFormat.BIND_INCLUDE)


@pytest.mark.parametrize("owner", ["example.com.", "_alter.example.org."], ids=["apex", "outside"])
def test_relative_name_refuses_names_not_below_the_zone(owner: str) -> None:
    with pytest.raises(RenderError):
        relative_name(owner, ZONE)
