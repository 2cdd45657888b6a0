"""The lowering's node builder: a stamped subtree (`Builder.stamp`: the string body's unit,
an integer range, an unbounded number) is exactly what building it again gives: the same
arena and suffix marks, the same projected states, and at the state bound the same refusal."""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trgc.errors import TrgcError
from trgc.grammar.ast import Grammar
from trgc.grammar.charclass import normalize
from trgc.grammar.schema import lower_schema, nodes
from trgc.grammar.schema.keywords import SUPPORTED_FORMATS
from trgc.grammar.schema.nodes import Builder
from trgc.grammar.schema.strings import RAW_RANGES, canonical_char, canonical_string, unit
from trgc.limits import DEFAULT_LIMITS

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "meta": {"type": "object", "additionalProperties": {"type": "string"}},
        "kind": {"anyOf": [{"type": "string", "minLength": 2}, {"type": "integer"}]},
        "count": {"type": "integer"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "ages": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 150}},
        "x": {"type": "number"},
        "y": {"type": "number"},
    },
    "required": ["name"],
}


def _plain_stamp(self: Builder, key: str, build) -> int:
    return build(self)


def _lower(states: int | None = None):
    limits = DEFAULT_LIMITS if states is None else DEFAULT_LIMITS.with_overrides({"states": states})
    try:
        grammar = lower_schema(json.loads(json.dumps(SCHEMA)), limits=limits)
    except TrgcError as error:
        return ("refused", error.code, error.message)
    return ("lowered", grammar.nodes, grammar.rules, sorted(grammar.suffixes))


def test_stamped_units_build_the_same_arena(monkeypatch):
    stamped = _lower()
    monkeypatch.setattr(Builder, "stamp", _plain_stamp)
    plain = _lower()
    assert stamped[0] == "lowered"
    assert stamped == plain
    # the schema has several strings, integers and numbers, so some were copies, not builds
    raw = normalize(list(RAW_RANGES))
    assert sum(1 for node in stamped[1] if node.payload == raw) >= 5
    assert len(stamped[3]) >= 2  # the default integer's shared suffixes, marked in each copy
    copied = []
    real = Builder.stamp
    monkeypatch.setattr(Builder, "stamp", lambda self, key, build: (copied.append(key) or
                                                                    real(self, key, build)))  # fmt: skip
    _lower()
    assert copied.count("number") == 2
    assert copied.count(("integer", 0, 150)) == 2
    assert copied.count(("integer", -(2**53 - 1), 2**53 - 1)) == 2


def test_the_state_bound_refuses_where_a_plain_build_does(monkeypatch):
    """Every bound from far below to past what the schema needs (the first lowering is at
    about 420): a copy never passes a bound that building the unit node by node hits."""
    stamped = {states: _lower(states) for states in range(20, 440)}
    monkeypatch.setattr(Builder, "stamp", _plain_stamp)
    assert {"refused", "lowered"} == {outcome[0] for outcome in stamped.values()}
    for states, outcome in stamped.items():
        assert outcome == _lower(states), states


def _with_empties(b: Builder) -> int:
    """A subtree whose last `seq` drops an empty: its running state total peaks above its net."""
    return b.seq(b.alt(b.lit("abc"), b.rep(b.chars("xy"), 0, 3)), b.empty())


def _build_many(builder: Builder, stamp: bool) -> tuple:
    made = []
    try:
        for _ in range(6):
            made.append(builder.stamp("t", _with_empties) if stamp else _with_empties(builder))
            made.append(builder.stamp("unit", unit) if stamp else unit(builder))
    except TrgcError as error:
        return ("refused", error.message, made)
    return ("built", made, builder.grammar.nodes, builder._cost, builder.states)


def test_a_stamp_is_a_build_in_nodes_costs_states_and_refusals():
    for states in [None, *range(1, 120)]:
        stamped = _build_many(Builder(Grammar(), states), stamp=True)
        plain = _build_many(Builder(Grammar(), states), stamp=False)
        assert stamped == plain, states


def test_templates_outlive_one_lowering(monkeypatch):
    """A stamped subtree is built once per process: a second lowering copies every one from
    the process's templates (no build function runs) and gives the same arena as the first,
    which built them from an empty store."""
    monkeypatch.setattr(nodes, "_templates", {})
    first = _lower()
    assert len(nodes._templates) >= 4  # the string unit, two integer ranges, the number
    built = []
    real = Builder.stamp

    def spied(self, key, build):  # the build function under its own name, so its key holds
        return real(self, key, functools.wraps(build)(lambda b: built.append(key) or build(b)))

    monkeypatch.setattr(Builder, "stamp", spied)
    second = _lower()
    assert second == first
    assert built == []
    monkeypatch.setattr(nodes, "_templates", {})
    assert _lower() == first
    assert len(built) >= 4  # the spy sees builds


def test_formats_are_stamped_like_a_build(monkeypatch):
    """Every supported format's shape, twice in one schema and again in a second lowering,
    gives the arena of a plain build."""
    schema = {
        "type": "object",
        "properties": {
            f"{fmt}{i}": {"type": "string", "format": fmt}
            for fmt in sorted(SUPPORTED_FORMATS)
            for i in range(2)
        },
    }

    def lowered():
        grammar = lower_schema(json.loads(json.dumps(schema)), limits=DEFAULT_LIMITS)
        return grammar.nodes, grammar.rules, sorted(grammar.suffixes)

    monkeypatch.setattr(nodes, "_templates", {})
    stamped = [lowered(), lowered()]
    assert {("strings", fmt) for fmt in SUPPORTED_FORMATS} <= {
        (key[0].rsplit(".", 1)[-1], key[2]) for key in nodes._templates
    }
    monkeypatch.setattr(Builder, "stamp", _plain_stamp)
    assert stamped == [lowered(), lowered()]


def test_the_template_store_is_bounded(monkeypatch):
    monkeypatch.setattr(nodes, "_templates", {})
    b = Builder(Grammar())
    for i in range(nodes.TEMPLATES_MAX + 40):
        b.stamp(i, lambda b: b.lit("x"))
    assert len(nodes._templates) == nodes.TEMPLATES_MAX
    assert min(key[2] for key in nodes._templates) == 40  # the oldest went first


def test_a_stamp_may_not_use_an_outside_node():
    b = Builder(Grammar())
    outside = b.lit("a")
    with pytest.raises(TrgcError) as caught:
        b.stamp("outside", lambda b: b.seq(outside, b.lit("b")))
    assert caught.value.code == "E_INTERNAL"


@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF)))
def test_canonical_string_spells_each_character_as_canonical_char(text):
    """Member names (`canonical_string`, one `json.dumps` call) and the characters of patterns
    and excluded sets (`canonical_char`) are spelled alike, so a declared name cannot reappear
    under another spelling."""
    assert canonical_string(text) == '"' + "".join(map(canonical_char, text)) + '"'
