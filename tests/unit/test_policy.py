"""Witness policies (c2sp.org/tlog-policy): parsing with line-numbered errors, the
quorum over groups, and the witness protocol's messages and cosigned checkpoints."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from alter_publish.errors import UsageError, VerificationError
from alter_publish.format.note import COSIGNATURE_V1_TYPE, Note, Signer
from alter_publish.format.policy import Policy
from alter_publish.format.tlog import Checkpoint
from alter_publish.format.witness import AddCheckpoint, parse_cosignatures, with_cosignatures

LOG = Signer("example.com/alter-log", bytes(range(32)))
WITNESSES = {
    name: Signer(f"witness.example/{name}", bytes([at]) * 32, COSIGNATURE_V1_TYPE)
    for at, name in enumerate(("X1", "X2", "X3", "Y1", "Y2", "Y3"), start=1)
}
NOW = 1767225600


def _vkey(name: str) -> str:
    return WITNESSES[name].verifier.to_text()


EXAMPLE = f"""# the example of c2sp.org/tlog-policy
log {LOG.verifier.to_text()} https://log.example/

witness X1 {_vkey("X1")}
witness X2 {_vkey("X2")}\thttp://127.0.0.1:8080
witness X3 {_vkey("X3")}
group X-witnesses 2 X1 X2 X3
  witness Y1 {_vkey("Y1")}
witness Y2 {_vkey("Y2")}
witness Y3 {_vkey("Y3")}
group Y-witnesses any Y1 Y2 Y3

group X-and-Y all X-witnesses Y-witnesses
quorum X-and-Y
"""


def _note(*cosigners: str, size: int = 5) -> Note:
    note = Note(Checkpoint(LOG.name, size, bytes(32)).to_text()).signed_by(LOG)
    for name in cosigners:
        note = note.cosigned_by(WITNESSES[name], NOW)
    return note


def test_the_spec_example_parses() -> None:
    policy = Policy.parse(EXAMPLE)
    assert policy.log_for(LOG.name) == LOG.verifier
    assert policy.logs[0].url == "https://log.example/"
    assert [w.name for w in policy.witnesses] == ["X1", "X2", "X3", "Y1", "Y2", "Y3"]
    assert policy.witnesses[1].url == "http://127.0.0.1:8080"
    assert [(g.name, g.threshold) for g in policy.groups] == [
        ("X-witnesses", 2),
        ("Y-witnesses", 1),
        ("X-and-Y", 2),
    ]
    assert Policy.parse(policy.to_text()) == policy


@pytest.mark.parametrize(
    ("cosigners", "met"),
    [
        pytest.param((), False, id="nobody"),
        pytest.param(("X1", "X2", "Y3"), True, id="two-x-one-y"),
        pytest.param(("X1", "Y1", "Y2", "Y3"), False, id="one-x"),
        pytest.param(("X1", "X2", "X3"), False, id="no-y"),
        pytest.param(("X1", "X2", "X3", "Y1", "Y2", "Y3"), True, id="everyone"),
    ],
)
def test_the_quorum_over_nested_groups(cosigners: tuple[str, ...], met: bool) -> None:
    policy = Policy.parse(EXAMPLE)
    note = _note(*cosigners)
    assert policy.cosigners(note) == cosigners
    assert policy.satisfied_by(cosigners) is met
    if met:
        assert policy.check(note, "cp") == cosigners
    else:
        with pytest.raises(VerificationError) as caught:
            policy.check(note, "cp")
        assert caught.value.category == "quorum-not-met"


def test_a_cosignature_that_does_not_verify_does_not_count() -> None:
    policy = Policy.parse(EXAMPLE)
    good = _note("X1", "X2", "Y1")
    other = _note(size=6)  # the same witnesses' lines moved onto another checkpoint
    moved = Note(other.text, (other.signatures[0], *good.signatures[1:]))
    assert policy.cosigners(moved) == ()
    impostor = Signer(WITNESSES["X1"].name, bytes(32), COSIGNATURE_V1_TYPE)
    assert policy.cosigners(_note().cosigned_by(impostor, NOW)) == ()


def test_quorum_none_and_a_single_witness() -> None:
    assert Policy.parse("quorum none\n").satisfied_by(())
    single = Policy.parse(f"witness W {_vkey('X1')}\nquorum W")
    assert single.check(_note("X1"), "cp") == ("W",)
    assert not single.satisfied_by(())


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        pytest.param("", 1, "no quorum line", id="empty"),
        pytest.param("quorum W\n", 1, "not defined on an earlier line", id="quorum-undefined"),
        pytest.param(
            f"quorum none\nwitness W {_vkey('X1')}\nquorum W\n", 3, "a second quorum", id="two"
        ),
        pytest.param("frobnicate x\nquorum none\n", 1, "unknown keyword", id="keyword"),
        pytest.param(f"witness W {LOG.verifier.to_text()}\n", 1, "type 0x04", id="log-as-wit"),
        pytest.param(f"log {_vkey('X1')}\n", 1, "type 0x01", id="witness-key-as-log"),
        pytest.param("witness W abc+00000000+AAAA\n", 1, "bad witness key", id="bad-vkey"),
        pytest.param(
            f"witness W {_vkey('X1')}\nwitness V {_vkey('X1')}\n",
            2,
            "duplicate witness key",
            id="dup-key",
        ),
        pytest.param(
            f"witness W {_vkey('X1')}\nwitness W {_vkey('X2')}\n", 2, "already defined", id="dup"
        ),
        pytest.param(f"witness none {_vkey('X1')}\n", 1, "already defined", id="none-name"),
        pytest.param(
            f"witness W {_vkey('X1')}\ngroup G 2 W\n", 2, "not any, all or 1..1", id="k-big"
        ),
        pytest.param(f"witness W {_vkey('X1')}\ngroup G 0 W\n", 2, "not any, all", id="k-zero"),
        pytest.param(
            f"witness W {_vkey('X1')}\ngroup G any W W\n", 2, "listed twice", id="member-twice"
        ),
        pytest.param("group G any none\n", 1, "not defined", id="none-member"),
        pytest.param("group G any later\n", 1, "not defined", id="forward-ref"),
        pytest.param("quorum none\n\x01\n", 2, "control character", id="control"),
        pytest.param("log\n", 1, "expected 'log <vkey> [<url>]'", id="log-args"),
        # Items are split on ASCII space and tab only (the spec's grammar), never on
        # Unicode white space such as NO-BREAK SPACE or IDEOGRAPHIC SPACE.
        pytest.param("quorum\u00a0none\n", 1, "unknown keyword", id="nbsp-keyword"),
        pytest.param(
            f"witness W\u3000{_vkey('X1')}\nquorum W\n",
            1,
            "expected 'witness <name> <vkey> [<url>]'",
            id="ideographic-space",
        ),
        pytest.param(f"witness W {_vkey('X1')}\nquorum W\u2003\n", 2, "not defined", id="em-space"),
    ],
)
def test_errors_name_the_line(text: str, line: int, what: str) -> None:
    with pytest.raises(UsageError) as caught:
        Policy.parse(text, "policy.txt")
    assert str(caught.value).startswith(f"policy.txt:{line}: ")
    assert what in str(caught.value)


hashes = st.lists(st.binary(min_size=32, max_size=32), max_size=63).map(tuple)


@given(st.integers(min_value=0, max_value=2**63), hashes)
def test_add_checkpoint_round_trips(old: int, proof: tuple[bytes, ...]) -> None:
    request = AddCheckpoint(old, proof, _note("X1").to_text())
    assert AddCheckpoint.parse(request.to_text()) == request


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("old 01\n\ncp", id="leading-zero"),
        pytest.param("old 1\nAAAA\n\ncp", id="short-hash"),
        pytest.param("old 1\ncp", id="no-blank"),
        pytest.param("new 1\n\ncp", id="not-old"),
        pytest.param("old 1\n" + ("A" * 43 + "=\n") * 64 + "\ncp", id="64-lines"),
    ],
)
def test_malformed_add_checkpoint(body: str) -> None:
    with pytest.raises(VerificationError) as caught:
        AddCheckpoint.parse(body)
    assert caught.value.category == "malformed"


def test_cosignatures_are_merged_once_per_witness() -> None:
    note = _note("X1")
    response = Note(note.text).cosigned_by(WITNESSES["X1"], NOW + 60).signatures[0].to_line()
    response += Note(note.text).cosigned_by(WITNESSES["X2"], NOW).signatures[0].to_line()
    response += _note(size=9).cosigned_by(WITNESSES["X3"], NOW).signatures[-1].to_line()
    lines = parse_cosignatures(note, response)
    keys = [WITNESSES[name].verifier for name in ("X1", "X2", "X3")]
    merged = with_cosignatures(note, lines, keys)
    assert [sig.name for sig in merged.signatures] == [LOG.name, *(k.name for k in keys[:2])]
    assert merged.signatures[1:] == lines[:2]  # X1's newer line replaced the old one
    assert Note.parse(merged.to_text()) == merged
