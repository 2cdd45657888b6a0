"""Array keywords beyond items: contains / minContains / maxContains and uniqueItems over a
finite element domain: agreement with jsonschema, soundness on seeded walks, the refusals."""

from __future__ import annotations

import pytest

import trgc
from schema_helpers import agree, compiled
from test_schema_soundness import check_samples
from trgc.errors import TrgcError

INTS = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}}

CASES: list[tuple[dict, list[str]]] = [
    ({**INTS, "contains": {"minimum": 5}}, ["[]", "[5]", "[1,7]", "[6,1,2]", "[1,2]"]),
    (
        {**INTS, "contains": {"minimum": 5}, "minContains": 2},
        ["[5,6]", "[1,7,3,9]", "[5]", "[1,2,5]"],
    ),
    (
        {**INTS, "contains": {"minimum": 5}, "maxContains": 1},
        ["[5]", "[1,7]", "[5,6]", "[7,1,9]", "[1]"],
    ),
    ({**INTS, "contains": {"minimum": 5}, "minContains": 0}, ["[]", "[1]", "[6]"]),
    (
        {**INTS, "contains": {"const": 3}, "minContains": 1, "maxContains": 2, "maxItems": 4},
        ["[3]", "[3,3]", "[3,3,3]", "[1,3,2,3]", "[1,2]"],
    ),
    (
        {
            "type": "array",
            "prefixItems": [{"type": "string"}],
            "items": INTS["items"],
            "contains": {"type": "string"},
        },
        ['["a",1]', "[1]", '["a"]'],
    ),
    (
        {"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": True},
        ["[]", '["a"]', '["a","c","b"]', '["a","a"]', '["b","c","b"]'],
    ),
    (
        {"type": "array", "items": {"type": "boolean"}, "uniqueItems": True},
        ["[true,false]", "[true,true]", "[false,true,false]"],
    ),
    (
        {"type": "array", "items": {"enum": [1, 1.5, None]}, "uniqueItems": True, "minItems": 2},
        ["[1,null]", "[1,1]", "[1.5,1,null]", "[1]"],
    ),
    (
        {
            "type": "array",
            "items": {"type": "integer", "maximum": 9},
            "uniqueItems": True,
            "maxItems": 1,
        },
        ["[]", "[1]", "[1,2]"],
    ),
]


@pytest.mark.parametrize("index", range(len(CASES)))
def test_array_keywords_agree_with_jsonschema(index):
    schema, instances = CASES[index]
    for text in instances:
        assert agree(schema, text), (schema, text)


@pytest.mark.parametrize("index", range(len(CASES)))
def test_walks_through_array_keywords_are_valid(index):
    schema = CASES[index][0]
    assert check_samples(schema, compiled(schema), seed=500 + index, count=50) > 0


def test_unique_items_needs_a_finite_small_domain():
    with pytest.raises(TrgcError) as info:
        trgc.compile_schema({"type": "array", "items": {"type": "integer"}, "uniqueItems": True})
    assert info.value.code == "E_UNIQUE_ITEMS" and info.value.pointer == "/uniqueItems"
    big = {"type": "array", "items": {"enum": list(range(13))}, "uniqueItems": True}
    with pytest.raises(TrgcError) as info:
        trgc.compile_schema(big)
    assert info.value.code == "E_UNIQUE_ITEMS" and "13" in info.value.message


def test_max_contains_needs_a_computable_negation():
    schema = {
        "type": "array",
        "items": {"type": "array"},
        "contains": {"minItems": 1},
        "maxContains": 1,
    }
    with pytest.raises(TrgcError) as info:
        trgc.compile_schema(schema)
    assert info.value.code == "E_UNSUPPORTED_KEYWORD"


def test_unevaluated_items_after_prefix_items_and_contains():
    schema = {
        "type": "array",
        "prefixItems": [{"type": "string"}],
        "contains": {"type": "boolean"},
        "unevaluatedItems": {"type": "integer"},
    }
    for text in ('["a",true]', '["a",1,true,2]', '["a",1]', '["a",true,"b"]', '["a",null,true]'):
        assert agree(schema, text), text
    assert check_samples(schema, compiled(schema), seed=900, count=40) > 0
