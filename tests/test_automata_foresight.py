"""Shared rules whose call certainly conflicts are inlined before the first attempt
(`automata/foresight.py`).

That must change nothing but the attempts: the same artifact bytes, or the same refusal, as
the driver that finds the conflict by building every machine and retrying. The reference is
the driver with `certain_conflicts` switched off. The first bytes it compares must be
certain ones, or a rule would be inlined that the retries keep.
"""

from __future__ import annotations

import json

import pytest

import trgc
from schema_helpers import CORPORA
from trgc.automata import foresight, machines
from trgc.errors import TrgcError
from trgc.grammar.ast import Grammar, Kind, Rule
from trgc.limits import DEFAULT_LIMITS, Budget

BENCH = CORPORA / "jsonschemabench"
# schemas of the sample whose first attempt conflicted on a shared rule called beside an
# alternative with the same first byte (one of them is refused in the end all the same)
FORESEEN = [
    "JsonSchemaStore/05abdcbe7d56d741",
    "Github_hard/08c02158ad955dfb",
    "Github_hard/087325251ee52519",
    "Github_hard/10677ec4db05d617",
    "Github_medium/0882d4590ba5b45b",
]


def _object(*names: str) -> dict:
    return {
        "type": "object",
        "properties": {n: {"type": "string", "maxLength": 30} for n in names},
        "required": [names[0]],
    }


# two object definitions offered by one anyOf (both begin with "{") and one array beside an
# object (no byte in common), each also used alone so that it is a shared rule
CHOICES = {
    "$defs": {
        "a": _object("x", "y", "z", "w"),
        "b": _object("p", "q", "r", "s"),
        "c": {"type": "array", "items": {"type": "integer"}},
    },
    "type": "object",
    "properties": {
        "one": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}]},
        "two": {"$ref": "#/$defs/a"},
        "three": {"$ref": "#/$defs/b"},
        "four": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/c"}]},
        "five": {"$ref": "#/$defs/c"},
    },
}


def _compile(monkeypatch, raw: bytes, *, foresee: bool):
    """(artifact bytes or refusal, attempts, rules foreseen)."""
    attempts: list[int] = []
    foreseen: list[frozenset[str]] = []
    real_build, real_certain = machines.build_tables, machines.certain_conflicts

    def build(*args, **kwargs):
        try:
            tables = real_build(*args, **kwargs)
        except TrgcError:
            attempts.append(-1)
            raise
        attempts.append(tables.stats["attempts"])
        return tables

    def certain(*args):
        found = real_certain(*args) if foresee else frozenset()
        foreseen.append(found)
        return found

    monkeypatch.setattr(machines, "build_tables", build)
    monkeypatch.setattr(machines, "certain_conflicts", certain)
    try:
        out = trgc.compile_schema(raw, separators="compact").to_bytes()
    except TrgcError as error:
        out = (error.code, error.message)
    monkeypatch.undo()
    return out, attempts, foreseen


def test_two_objects_of_one_choice_are_inlined_at_once_and_nothing_else(monkeypatch):
    raw = json.dumps(CHOICES).encode()
    fast, fast_attempts, foreseen = _compile(monkeypatch, raw, foresee=True)
    plain, plain_attempts, _ = _compile(monkeypatch, raw, foresee=False)
    assert fast == plain
    assert fast_attempts == [1]
    assert plain_attempts == [2]
    # the rules of a and b; the array's, beside an object, stays shared
    assert foreseen == [frozenset({"s_a", "s_b"})]
    artifact = trgc.compile_schema(raw, separators="compact")
    assert sum(m.name.startswith("s_c") for m in artifact.machines) == 1


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
@pytest.mark.parametrize("name", FORESEEN)
def test_foreseen_conflicts_change_no_byte(monkeypatch, name):
    raw = (BENCH / f"{name}.json").read_bytes()
    fast, fast_attempts, foreseen = _compile(monkeypatch, raw, foresee=True)
    plain, plain_attempts, _ = _compile(monkeypatch, raw, foresee=False)
    assert fast == plain
    assert foreseen[0]
    if fast_attempts[0] > 0:
        assert fast_attempts[0] < plain_attempts[0]


def _heads(grammar: Grammar, node: int) -> set[int]:
    first = foresight._First(grammar, grammar.rule_index(), Budget(DEFAULT_LIMITS.operations))
    return set(first.of(node))


def test_first_bytes_are_certain_ones():
    g = Grammar()
    lit = g.add(Kind.LITERAL, 1, 1, (), b"{a")
    assert _heads(_with_rule(g, lit), lit) == {ord("{")}
    # a class: its ASCII part, and of the rest only the lead bytes of each range's ends
    cls = g.add(Kind.CLASS, 1, 1, (), ((0x30, 0x39), (0x100, 0x4FF)))
    assert _heads(_with_rule(g, cls), cls) == set(range(0x30, 0x3A)) | {0xC4, 0xD3}
    # an AND may be empty: neither it nor a sequence holding it contributes
    other = g.add(Kind.LITERAL, 1, 1, (), b"{b")
    both = g.add(Kind.AND, 1, 1, (lit, other), "test")
    seq = g.add(Kind.SEQ, 1, 1, (lit, both))
    assert _heads(_with_rule(g, seq), both) == set()
    assert _heads(_with_rule(g, seq), seq) == set()
    # ... but an alternative beside it still does
    alt = g.add(Kind.ALT, 1, 1, (seq, other))
    assert _heads(_with_rule(g, alt), alt) == {ord("{")}
    # x{0,0} is only the empty string
    never = g.add(Kind.REPEAT, 1, 1, (lit,), (0, 0))
    assert _heads(_with_rule(g, never), never) == set()


def test_a_reference_being_followed_contributes_nothing():
    # r = "[" r "]" | "x": the first bytes are "[" and "x"; following r inside itself adds
    # nothing, so the answer is a subset of them that holds the non-recursive "x"
    g = Grammar()
    ref = g.add(Kind.REF, 1, 1, (), "r")
    inner = g.add(
        Kind.SEQ,
        1,
        1,
        (g.add(Kind.LITERAL, 1, 1, (), b"["), ref, g.add(Kind.LITERAL, 1, 1, (), b"]")),
    )
    body = g.add(Kind.ALT, 1, 1, (inner, g.add(Kind.LITERAL, 1, 1, (), b"x")))
    g.rules = [Rule("r", body, 1, 1)]
    g.start = "r"
    heads = _heads(g, body)
    assert ord("x") in heads
    assert heads <= {ord("["), ord("x")}


def _with_rule(grammar: Grammar, body: int) -> Grammar:
    grammar.rules = [Rule("start", body, 1, 1)]
    grammar.start = "start"
    return grammar


def test_a_call_into_another_machine_is_not_followed(monkeypatch):
    """`r` is recursive, so a machine of its own: the choice calls `r`, not the shared `s`
    that `r` begins with. The overlap with the object beside it is a conflict of `r`, which
    no retry inlines (the schema is refused either way); `s` must not be inlined for it."""
    schema = {
        "$defs": {
            "s": _object("a", "b", "c", "d"),
            "r": {
                "anyOf": [{"$ref": "#/$defs/s"}, {"type": "array", "items": {"$ref": "#/$defs/r"}}]
            },
        },
        "type": "object",
        "properties": {
            "x": {"anyOf": [{"$ref": "#/$defs/r"}, {"type": "object"}]},
            "y": {"$ref": "#/$defs/s"},
            "z": {"$ref": "#/$defs/s"},
        },
    }
    raw = json.dumps(schema).encode()
    fast, _, foreseen = _compile(monkeypatch, raw, foresee=True)
    assert fast == _compile(monkeypatch, raw, foresee=False)[0]
    assert fast[0] == "E_PREDICTIVE_CONFLICT"
    assert foreseen == [frozenset()]
