"""allOf over branches with different anyOf / oneOf / if-then-else / dependentSchemas (and
`$ref`s that resolve to them), compiled by distribution (trgc.grammar.schema.products).

Soundness: seeded walks over each artifact are valid for jsonschema, and every candidate of a
pool of instances that jsonschema rejects is rejected; completeness: hand-picked valid
instances are accepted; the product's size is checked before anything is built.
"""

from __future__ import annotations

import itertools
import json

import jsonschema
import pytest

import trgc
from schema_helpers import CORPORA, compiled
from test_schema_soundness import check_samples
from trgc.evaluation.coverage import read_instances, run_schema

NUMBERS = [-2, 0, 1, 3, 4, 7, 12, 2.5]
STRINGS = ["", "a", "ab", "abc", "abcd", "x1"]
SCALARS = [None, True, False, *NUMBERS, *STRINGS]


def _objects() -> list[dict]:
    """Objects over the member names the cases use, with values from a small pool."""
    names = ["kind", "a", "b", "n"]
    values = ["x", "y", 1, 5, None, "long text"]
    out: list[dict] = [{}]
    for size in (1, 2, 3):
        for keys in itertools.combinations(names, size):
            for vals in itertools.product(values[:3] if size > 1 else values, repeat=size):
                out.append(dict(zip(keys, vals, strict=True)))
    return out


POOL = SCALARS + _objects() + [[], [1], ["a", 2]]

CASES = [
    # two anyOf, one per branch
    (
        {
            "allOf": [
                {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                {"anyOf": [{"minimum": 3}, {"maxLength": 2}]},
            ]
        },
        ["3", "7", '"a"', '""', "1"],
    ),
    # an overlapping oneOf beside another oneOf: exactly one of each one's branches holds
    (
        {
            "allOf": [
                {"oneOf": [{"type": "integer", "maximum": 5}, {"type": "integer", "minimum": 3}]},
                {"oneOf": [{"type": "integer", "minimum": 1}, {"type": "string"}]},
            ]
        },
        ["1", "7", "2"],
    ),
    # two if/then/else
    (
        {
            "allOf": [
                {"if": {"type": "integer"}, "then": {"minimum": 3}, "else": {"type": "string"}},
                {"if": {"type": "string"}, "then": {"maxLength": 2}, "else": {"maximum": 7}},
            ]
        },
        ["3", "7", '"ab"', '""'],
    ),
    # different $refs that resolve to anyOfs (the JSONSchemaBench shape)
    (
        {
            "$defs": {
                "a": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "b": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 4}]},
            },
            "allOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}],
        },
        ["null", "4", "12"],
    ),
    # objects: a discriminated oneOf beside an anyOf over members, in a $ref
    (
        {
            "$defs": {
                "kinds": {
                    "oneOf": [
                        {
                            "properties": {
                                "kind": {"const": "x"},
                                "a": {"type": "integer"},
                                "b": {"type": "integer", "maximum": 3},
                            },
                            "required": ["kind", "a"],
                        },
                        {
                            "properties": {
                                "kind": {"const": "y"},
                                "a": {"type": "integer", "minimum": 2},
                                "b": {"type": "integer"},
                            },
                            "required": ["kind"],
                        },
                    ]
                }
            },
            "type": "object",
            "allOf": [
                {"$ref": "#/$defs/kinds"},
                {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
            ],
        },
        ['{"kind":"x","a":1}', '{"kind":"y","b":5}', '{"kind":"y","a":5}'],
    ),
    # three combinators of one kind, and an if beside them
    (
        {
            "type": "integer",
            "allOf": [
                {"anyOf": [{"maximum": 3}, {"minimum": 7}]},
                {"anyOf": [{"minimum": 0}, {"maximum": -2}]},
                {"anyOf": [{"maximum": 1}, {"minimum": 4}]},
                {"if": {"minimum": 10}, "then": {"maximum": 12}},
            ],
        },
        ["0", "1", "7", "12", "-2"],
    ),
    # an if and its then both references: two $refs met in one merge
    (
        {
            "$defs": {
                "a": {"properties": {"kind": {"const": "x"}}, "required": ["kind"]},
                "b": {"properties": {"n": {"type": "integer", "maximum": 3}}},
            },
            "type": "object",
            "properties": {"kind": {"enum": ["x", "y"]}, "n": {"type": "integer"}},
            "if": {"$ref": "#/$defs/a"},
            "then": {"$ref": "#/$defs/b"},
        },
        ["{}", '{"kind":"y","n":5}', '{"n":5}'],
    ),
    # dependentSchemas in two branches
    (
        {
            "type": "object",
            "properties": {"a": {}, "b": {}, "n": {"type": "integer"}},
            "allOf": [
                {"dependentSchemas": {"a": {"required": ["n"]}}},
                {"dependentSchemas": {"b": {"properties": {"n": {"minimum": 3}}}}},
            ],
        },
        ["{}", '{"a":1,"n":1}', '{"b":1,"n":5}', '{"a":"x","b":"y","n":5}'],
    ),
]


def _valid(schema, value) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


@pytest.mark.parametrize("index", range(len(CASES)))
def test_valid_instances_are_accepted(index):
    schema, texts = CASES[index]
    art = compiled(schema)
    for text in texts:
        assert _valid(schema, json.loads(text)), text  # the case itself is right
        assert trgc.check(art, text.encode()).accepted, text


@pytest.mark.parametrize("index", range(len(CASES)))
def test_no_invalid_instance_is_accepted(index):
    schema, _ = CASES[index]
    art = compiled(schema)
    rejected = 0
    for value in POOL:
        if _valid(schema, value):
            continue
        text = json.dumps(value, separators=(",", ":"))
        assert not trgc.check(art, text.encode()).accepted, text
        rejected += 1
    assert rejected > 10


@pytest.mark.parametrize("index", range(len(CASES)))
def test_samples_are_valid(index):
    schema, _ = CASES[index]
    assert check_samples(schema, compiled(schema), seed=100 + index, count=60) > 0


@pytest.mark.parametrize("order", [1, -1])
def test_an_instance_valid_under_two_oneof_branches_is_refused(order):
    """Whether the oneOf is the combinator kept or the one held back and moved in later."""
    schema = {"allOf": CASES[1][0]["allOf"][::order]}
    art = compiled(schema)
    assert not _valid(schema, 4)
    assert not trgc.check(art, b"4").accepted  # 3 <= 4 <= 5: both branches
    assert trgc.check(art, b"2").accepted and trgc.check(art, b"6").accepted


def test_a_large_product_is_a_limit_error_before_it_is_built():
    schema = {
        "type": "integer",
        "allOf": [{"anyOf": [{"minimum": i}, {"maximum": -i}]} for i in range(1, 25)],
    }
    with pytest.raises(trgc.TrgcError) as info:
        trgc.compile_schema(schema)
    assert info.value.code == "E_LIMIT_OPERATIONS"
    assert "16,777,216 terms" in info.value.message  # 2^24, projected, not built


def test_a_small_limit_refuses_a_small_product():
    schema, _ = CASES[5]
    with pytest.raises(trgc.TrgcError) as info:
        trgc.compile_schema(schema, limits=trgc.Limits(operations=200))
    assert info.value.code == "E_LIMIT_OPERATIONS"


def test_a_negated_product_is_unsupported():
    schema = {
        "not": {
            "allOf": [
                {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                {"anyOf": [{"minimum": 3}, {"maxLength": 2}]},
            ]
        }
    }
    with pytest.raises(trgc.TrgcError) as info:
        trgc.compile_schema(schema)
    assert info.value.code == "E_UNSUPPORTED_KEYWORD"
    assert info.value.details["keyword"] == "allOf"


def test_equal_combinators_are_merged_once():
    """The same anyOf reached through many branches is one combinator, not a product (30
    copies would be 2^30 terms, far over the operations limit)."""
    shared = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    art = trgc.compile_schema({"allOf": [shared] * 30})
    assert trgc.check(art, b"1").accepted
    assert not trgc.check(art, b"null").accepted


BENCH = CORPORA / "jsonschemabench"
UNLOCKED = [  # E_UNSUPPORTED_KEYWORD (allOf) before distribution
    ("Github_medium", "01fc1272744e5bee.json"),
    ("JsonSchemaStore", "05ee6c7fb6b382fa.json"),
]


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
@pytest.mark.parametrize(("subset", "name"), UNLOCKED)
def test_real_schemas_unlocked_by_distribution_pass_their_instances(subset, name):
    instances = read_instances(CORPORA / "jsonschemabench-instances" / f"{subset}.jsonl.gz")
    result = run_schema(
        subset, BENCH / subset / name, instances[name], separators="compact", limits=None
    )
    assert result.outcome == "compiled"
    assert result.passes and not result.wrongly_accepted
