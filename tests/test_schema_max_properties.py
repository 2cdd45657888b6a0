"""maxProperties beside declared and additional members: a counter beyond the declared
members (Lowering._capped_members), so the bound may reach the repetition limit, exact
against jsonschema on every object of a pool, at the bound and one past it."""

from __future__ import annotations

import itertools
import json

import jsonschema
import pytest

import trgc
from schema_helpers import compiled
from test_schema_soundness import check_samples

DECLARED = {"a": {"type": "integer"}, "b": {"type": "string"}}
EXTRA = {"type": "string", "maxLength": 2}


def _schema(hi: int, **more) -> dict:
    return {
        "type": "object",
        "properties": DECLARED,
        "additionalProperties": EXTRA,
        "maxProperties": hi,
        **more,
    }


def _pool() -> list[dict]:
    """Objects in declared order: any subset of a, b, then 0..7 additional members, some
    with a value outside the additional members' schema."""
    out = []
    for a, b in itertools.product([None, 1, "x"], [None, "s"]):
        head = {k: v for k, v in (("a", a), ("b", b)) if v is not None}
        for extras in range(8):
            out.append({**head, **{f"x{i}": "v" for i in range(extras)}})
        out.append({**head, "x0": "too long"})
    return out


SCHEMAS = [
    _schema(3),
    _schema(4),
    _schema(6),
    _schema(5, required=["a"]),
    _schema(4, minProperties=1),
    _schema(4, required=["a", "b"], minProperties=2),
]


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_every_pool_object_is_decided_as_jsonschema_decides(index):
    schema = SCHEMAS[index]
    art = compiled(schema)
    validator = jsonschema.Draft202012Validator(schema)
    outcomes = set()
    for value in _pool():
        text = json.dumps(value, separators=(",", ":")).encode()
        valid = validator.is_valid(value)
        assert trgc.check(art, text).accepted == valid, text
        outcomes.add(valid)
    assert outcomes == {True, False}


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_samples_are_valid(index):
    schema = SCHEMAS[index]
    assert check_samples(schema, compiled(schema), seed=200 + index, count=60) > 0


def _members(n: int, declared: bool) -> bytes:
    head = {"a": 1, "b": "s"} if declared else {}
    extras = {f"k{i}": "v" for i in range(n - len(head))}
    return json.dumps({**head, **extras}, separators=(",", ":")).encode()


@pytest.mark.parametrize("declared", [True, False])
def test_the_counted_bound_is_exact_at_two_thousand(declared):
    art = trgc.compile_schema(_schema(2000), separators="compact")
    assert trgc.check(art, _members(2000, declared)).accepted
    assert not trgc.check(art, _members(2001, declared)).accepted


def test_a_million_beside_declared_members_compiles():
    """Was E_LIMIT_STATES (a product of one state per count): now a counter."""
    art = trgc.compile_schema(_schema(10**6), separators="compact")
    assert trgc.check(art, _members(300, True)).accepted
    assert not trgc.check(art, b'{"a":1,"k0":"too long"}').accepted


def test_a_lower_bound_above_one_keeps_the_product_and_says_why_it_is_too_large():
    with pytest.raises(trgc.TrgcError) as info:
        trgc.compile_schema(_schema(10**6, minProperties=2))
    error = info.value
    assert error.code == "E_LIMIT_STATES"
    assert error.pointer == "/maxProperties"
    assert "minProperties" in error.message and "minProperties at most 1" in error.hint


@pytest.mark.parametrize(
    ("schema", "options"),
    [
        (
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}},
                "patternProperties": {"^x": {"type": "integer"}},
                "additionalProperties": False,
                "maxProperties": 3,
            },
            {},
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "null"}},
                "maxProperties": 3,
            },
            {"open_objects": True},
        ),
    ],
)
def test_pattern_and_open_members_are_counted_too(schema, options):
    art = trgc.compile_schema(schema, separators="compact", **options)
    validator = jsonschema.Draft202012Validator(schema)
    docs = [
        {},
        {"a": 1},
        {"a": 1, "x1": 2, "x2": 3},
        {"a": 1, "x1": 2, "x2": 3, "x3": 4},
        {"x1": 2, "x2": 3, "x3": 4},
        {"x1": 2, "x2": 3, "x3": 4, "x4": 1},
        {"a": 1, "b": None, "x1": 1},
        {"a": 1, "b": None, "x1": 1, "x2": 1},
    ]
    for value in docs:
        text = json.dumps(value, separators=(",", ":")).encode()
        assert trgc.check(art, text).accepted == validator.is_valid(value), text
