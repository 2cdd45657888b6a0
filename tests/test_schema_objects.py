"""Object keywords beyond properties: minProperties / maxProperties / dependentRequired
(presence products), draft-07 dependencies, patternProperties and propertyNames (key regions):
agreement with jsonschema, soundness on seeded walks, and completeness on valid instances."""

from __future__ import annotations

import json

import pytest

import trgc
from schema_helpers import accepts, agree, compiled
from test_schema_soundness import check_samples
from trgc.errors import TrgcError
from trgc.limits import Limits

P3 = {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}}

CASES: list[tuple[dict, dict, list[str]]] = [
    # (schema, compile options, instances)
    (
        {"type": "object", "properties": P3, "minProperties": 2},
        {},
        ["{}", '{"a":1}', '{"a":1,"b":"x"}', '{"b":"x","c":true}', '{"a":1,"b":"x","c":true}'],
    ),
    (
        {"type": "object", "properties": P3, "maxProperties": 1, "required": ["a"]},
        {},
        ['{"a":1}', '{"a":1,"b":"x"}', "{}"],
    ),
    (
        {"type": "object", "properties": P3, "minProperties": 2, "maxProperties": 2},
        {"open_objects": True},
        ['{"a":1}', '{"a":1,"zz":0}', '{"a":1,"b":"x","zz":0}', '{"a":1,"b":"x"}'],
    ),
    (
        {"type": "object", "properties": P3, "dependentRequired": {"a": ["b", "c"]}},
        {},
        ["{}", '{"a":1}', '{"a":1,"b":"x"}', '{"a":1,"b":"x","c":true}', '{"b":"x"}'],
    ),
    (
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": P3,
            "dependencies": {"c": ["a"], "b": {"properties": {"a": {"minimum": 5}}}},
        },
        {},
        ['{"c":true}', '{"a":1,"c":true}', '{"a":1,"b":"x"}', '{"a":7,"b":"x"}', '{"b":"x"}'],
    ),
    (
        {
            "type": "object",
            "properties": {"id": {"type": "integer"}},
            "patternProperties": {"^x-": {"type": "string"}, "^x-n": {"maxLength": 2}},
            "additionalProperties": False,
        },
        {},
        [
            '{"id":1}',
            '{"id":1,"x-a":"q"}',
            '{"id":1,"x-a":1}',
            '{"x-n":"ab"}',
            '{"x-n":"abc"}',
            '{"y":1}',
        ],
    ),
    (
        {
            "type": "object",
            "properties": {"x-id": {"type": "string"}},
            "patternProperties": {"^x-": {"minLength": 2}},
        },
        {},
        ['{"x-id":"ab"}', '{"x-id":"a"}'],
    ),
    (
        {
            "type": "object",
            "patternProperties": {"^[a-z]+$": {"type": "integer"}},
            "additionalProperties": {"type": "string"},
        },
        {},
        ['{"abc":1}', '{"abc":"x"}', '{"A1":"x"}', '{"A1":1}', "{}"],
    ),
    (
        {
            "type": "object",
            "properties": {"ok": {"type": "integer"}, "BAD": {"type": "integer"}},
            "propertyNames": {"pattern": "^[a-z]+$", "maxLength": 3},
            "additionalProperties": {"type": "integer"},
        },
        {},
        ['{"ok":1}', '{"BAD":1}', '{"ok":1,"abc":2}', '{"ok":1,"abcd":2}', '{"ok":1,"AB":2}'],
    ),
    (
        {"type": "object", "propertyNames": {"enum": ["p", "q"]}, "additionalProperties": True},
        {"open_objects": True},
        ['{"p":1}', '{"q":[1]}', '{"r":1}', '{"p":1,"q":2}'],
    ),
]


@pytest.mark.parametrize("index", range(len(CASES)))
def test_object_keywords_agree_with_jsonschema(index):
    schema, options, instances = CASES[index]
    for text in instances:
        assert agree(schema, text, **options), (schema, text)


@pytest.mark.parametrize("index", range(len(CASES)))
def test_walks_through_object_keywords_are_valid(index):
    schema, options, _ = CASES[index]
    art = trgc.compile_schema(schema, **options)
    assert check_samples(schema, art, seed=300 + index, count=50) > 0


def test_presence_needs_no_recursion_free_values():
    """The presence product keeps calls: a recursive member value is fine."""
    schema = {
        "$defs": {"t": {"type": "array", "items": {"$ref": "#/$defs/t"}}},
        "type": "object",
        "properties": {"t": {"$ref": "#/$defs/t"}, "n": {"type": "integer"}},
        "minProperties": 1,
    }
    assert accepts(schema, '{"t":[[],[[]]]}') and accepts(schema, '{"n":1}')
    assert not accepts(schema, "{}")


def test_additional_members_count_once_towards_min_properties():
    """Two additional members might repeat a name ({"zz":0,"zz":1} has one member once parsed),
    which no finite automaton can rule out: they count once, so the bound stays sound."""
    schema = {"type": "object", "properties": P3, "minProperties": 2}
    assert accepts(schema, '{"a":1,"zz":0}', open_objects=True)
    assert not accepts(schema, '{"zz":0,"yy":1}', open_objects=True)
    assert not accepts(schema, '{"zz":0,"zz":1}', open_objects=True)


def test_unsatisfiable_presence_is_reported():
    with pytest.raises(TrgcError) as info:
        compiled({"type": "object", "properties": P3, "minProperties": 4})
    assert info.value.code == "E_UNSATISFIABLE"
    with pytest.raises(TrgcError) as info:
        compiled({"type": "object", "minProperties": 1, "maxProperties": 0})
    assert info.value.code == "E_UNSATISFIABLE"


def test_too_many_patterns_are_refused():
    many = {f"^{c}": {"type": "integer"} for c in "abcde"}
    with pytest.raises(TrgcError) as info:
        compiled({"type": "object", "patternProperties": many})
    assert info.value.code == "E_UNSUPPORTED_KEYWORD"
    assert info.value.details["keyword"] == "patternProperties"


UNEVALUATED: list[tuple[dict, list[str]]] = [
    (
        {
            "properties": {"a": {"type": "integer"}},
            "allOf": [{"properties": {"b": {"type": "string"}}}],
            "unevaluatedProperties": False,
        },
        ['{"a":1}', '{"a":1,"b":"x"}', '{"b":"x"}'],
    ),
    (
        {
            "type": "object",
            "properties": {"kind": {"const": "x"}},
            "if": {"properties": {"kind": {"const": "x"}}, "required": ["kind"]},
            "then": {"properties": {"n": {"type": "integer"}}},
            "unevaluatedProperties": {"type": "string"},
        },
        ['{"kind":"x","n":1}', "{}", '{"kind":"x"}'],
    ),
]


@pytest.mark.parametrize("index", range(len(UNEVALUATED)))
def test_unevaluated_properties_over_the_merged_members(index):
    schema, instances = UNEVALUATED[index]
    for text in instances:
        assert agree(schema, text), (schema, text)
    assert check_samples(schema, compiled(schema), seed=700 + index, count=40) > 0


def test_unevaluated_properties_inside_a_merged_branch_is_refused():
    """A branch's unevaluatedProperties only sees that branch: merging would be unsound."""
    for schema in (
        {
            "$defs": {"A": {"unevaluatedProperties": False}},
            "properties": {"p": {}},
            "$ref": "#/$defs/A",
        },
        {
            "allOf": [{"properties": {"p": {}}, "unevaluatedProperties": False}],
            "properties": {"q": {}},
        },
        {
            "properties": {"foo": {"properties": {"bar": {}}, "unevaluatedProperties": False}},
            "anyOf": [{"properties": {"foo": {"properties": {"faz": {}}}}}],
        },
    ):
        with pytest.raises(TrgcError) as info:
            trgc.compile_schema(schema)
        assert info.value.details.get("keyword") == "unevaluatedProperties", schema


MAPS: list[tuple[dict, list[str]]] = [
    (
        {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 3},
        ["{}", '{"a":1}', '{"a":1,"b":2,"c":3}', '{"a":1,"b":2,"c":3,"d":4}', '{"a":"x"}'],
    ),
    (
        {
            "type": "object",
            "patternProperties": {"^x-": {"type": "string"}},
            "additionalProperties": False,
            "minProperties": 1,
            "maxProperties": 2,
        },
        ["{}", '{"x-a":"q"}', '{"x-a":"q","x-b":"r"}', '{"x-a":"q","x-b":"r","x-c":"s"}'],
    ),
]


@pytest.mark.parametrize("index", range(len(MAPS)))
def test_counted_maps_agree_with_jsonschema(index):
    """Objects of additional members only: the member count is a counter, not a product."""
    schema, instances = MAPS[index]
    for text in instances:
        assert agree(schema, text), (schema, text)
    assert check_samples(schema, compiled(schema), seed=800 + index, count=50) > 0


def test_max_properties_up_to_the_repetition_limit():
    """maxProperties 10^6 over a map compiles to the same tables as maxProperties 10 (the
    bound is a counter in the frame), and the bound is exact."""

    def shape(n: int) -> tuple[int, int]:
        art = compiled(
            {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": n}
        )
        return art.metadata["stats"]["states"], len(art.to_bytes())

    assert shape(10) == shape(1000) == shape(10**6)
    schema = {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 10**6}
    many = "{" + ",".join(f'"k{i}":{i}' for i in range(2000)) + "}"
    assert accepts(schema, many) and not accepts(schema, '{"k":"x"}')
    with pytest.raises(TrgcError) as info:
        compiled({**schema, "maxProperties": 2**20 + 1})
    assert info.value.code == "E_LIMIT_REPETITION"


def test_min_properties_over_additional_members_only_is_refused():
    """Two additional members may repeat a name ({"k":1,"k":2} is one member once parsed):
    a lower bound above one over them is refused, by keyword, not called unsatisfiable."""
    for lo in (2, 10**6):
        with pytest.raises(TrgcError) as info:
            compiled(
                {"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": lo}
            )
        assert info.value.code == "E_UNSUPPORTED_KEYWORD"
        assert info.value.details["keyword"] == "minProperties"
        assert info.value.pointer == "/minProperties"


def test_the_undeclared_name_automaton_is_one_product_not_a_copy_per_trie_node():
    """An open object's additional member names (none of the 32 declared ones) are the product
    of a string automaton and the names' trie: it compiles within 800,000 charged operations
    (it needed 1-2 million when every trie node carried its own copy of the string body), and
    exactly: declared names go to their members, every other name is an additional member."""
    schema = {"type": "object", "properties": {f"member{i}": {"type": "string"} for i in range(32)}}
    artifact = trgc.compile_schema(
        json.dumps(schema),
        separators="compact",
        open_objects=True,
        limits=Limits(operations=800_000),
    )
    for text, ok in [
        ('{"member3":"x","member31":"y"}', True),
        ('{"member3":"x","member":1,"member310":[]}', True),
        ('{"member3":"x","member3":"y"}', False),
        ('{"member3":1}', False),
        ('{"x":1,"member3":"x"}', False),  # additional members come after the declared ones
        ('{"\\u00e9":null}', False),  # not canonical: é is written as itself
        ('{"é":null}', True),
    ]:
        assert trgc.check(artifact, text.encode()).accepted is ok, text
