"""Exact boolean combinators (`not`, `if`/`then`/`else`, `dependentSchemas`, overlapping
`oneOf`): agreement with jsonschema on chosen instances, soundness on seeded walks, and the
spelling closure a complement needs."""

from __future__ import annotations

import pytest

import trgc
from schema_helpers import accepts, agree, compiled, oracle
from test_schema_soundness import check_samples
from trgc.errors import TrgcError

OBJ = {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}}

CASES: list[tuple[dict, list[str]]] = [
    # (schema, instances: each must be accepted exactly when jsonschema says valid)
    ({"type": "string", "not": {"const": "a"}}, ['"a"', '"b"', '""', '"ab"', "1"]),
    ({"type": "string", "not": {"enum": ["x", "yy"]}}, ['"x"', '"yy"', '"y"', '"xyy"']),
    ({"type": "string", "not": {"minLength": 3}}, ['"ab"', '"abc"', '""', '"\u00e9\u00e9\u00e9"']),
    ({"type": "string", "not": {"pattern": "^a"}}, ['"abc"', '"ba"', '""', '"A"']),
    ({"type": "string", "not": {"pattern": "^\\d+$"}}, ['"12"', '"1a"', '"\u0663"', '""']),
    ({"not": {"type": "null"}}, ["null", "1", '"x"', "[]", "{}", '{"q":[1]}', "false"]),
    ({"not": {"type": ["string", "number"]}}, ["1", '"x"', "null", "true", "[1]"]),
    ({"not": {}}, []),
    ({"type": "integer", "not": {"minimum": 5}}, ["4", "5", "6", "-7"]),
    ({"type": "integer", "not": {"enum": [1, 2]}}, ["1", "2", "3", "0"]),
    ({"type": "number", "not": {"type": "integer"}}, ["1.5", "1", "0", "-0.5", "2.25"]),
    (
        {"type": "number", "not": {"minimum": 0, "maximum": 1}},
        ["-1", "0", "0.5", "1", "1.5", "2"],
    ),
    (
        {"type": "number", "not": {"const": 0.00001}},
        ["0.00001", "0.00002", "0.0001", "1"],
    ),
    ({"enum": [1, 2, "x", None], "not": {"enum": [2, None]}}, ["1", "2", '"x"', "null"]),
    ({"type": "boolean", "not": {"const": True}}, ["true", "false"]),
    (
        {"type": "object", "properties": OBJ, "not": {"required": ["a", "b"]}},
        ["{}", '{"a":1}', '{"b":"x"}', '{"a":1,"b":"x"}', '{"a":1,"b":"x","c":true}'],
    ),
    (
        {"type": "object", "properties": OBJ, "not": {"minProperties": 2}},
        ["{}", '{"a":1}', '{"a":1,"b":"x"}', '{"c":false}'],
    ),
    (
        {"type": "object", "properties": OBJ, "not": {"properties": {"a": {"maximum": 3}}}},
        ["{}", '{"a":1}', '{"a":4}', '{"a":9,"b":"x"}'],
    ),
    (
        {
            "type": "object",
            "properties": {"kind": {"enum": ["x", "y"]}, "n": {"type": "integer"}},
            "if": {"properties": {"kind": {"const": "x"}}},
            "then": {"required": ["n"]},
            "else": {"properties": {"n": {"maximum": 3}}},
        },
        [
            "{}",
            '{"kind":"x"}',
            '{"kind":"x","n":9}',
            '{"kind":"y"}',
            '{"kind":"y","n":2}',
            '{"kind":"y","n":9}',
            '{"n":5}',
        ],
    ),
    (
        {
            "type": "string",
            "if": {"maxLength": 2},
            "then": {"pattern": "^a"},
            "else": {"pattern": "b$"},
        },
        ['"a"', '"ax"', '"x"', '"xyb"', '"xyz"', '"ab"'],
    ),
    (
        {
            "type": "object",
            "properties": OBJ,
            "dependentSchemas": {
                "a": {"required": ["b"]},
                "c": {"properties": {"b": {"maxLength": 1}}},
            },
        },
        [
            "{}",
            '{"a":1}',
            '{"a":1,"b":"x"}',
            '{"b":"xy","c":true}',
            '{"b":"x","c":true}',
            '{"c":true}',
        ],
    ),
    (
        {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]},
        ["-1", "1.5", "1", "0", "-2.5"],
    ),
    (
        {"oneOf": [{"type": "string", "maxLength": 3}, {"type": "string", "pattern": "^a"}]},
        ['"abc"', '"abcd"', '"xyz"', '"xyzw"', '"a"'],
    ),
    (
        {
            "type": "object",
            "properties": OBJ,
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
        },
        ["{}", '{"a":1}', '{"b":"x"}', '{"a":1,"b":"x"}', '{"a":1,"c":true}'],
    ),
]


@pytest.mark.parametrize("index", range(len(CASES)))
def test_combinators_agree_with_jsonschema(index):
    schema, instances = CASES[index]
    if schema == {"not": {}}:
        with pytest.raises(TrgcError) as info:
            compiled(schema)
        assert info.value.code == "E_UNSATISFIABLE"
        return
    for text in instances:
        assert agree(schema, text), (schema, text, oracle(schema, text))


@pytest.mark.parametrize("index", [i for i, (s, _) in enumerate(CASES) if s != {"not": {}}])
def test_walks_through_combinators_are_valid(index):
    schema = CASES[index][0]
    assert check_samples(schema, compiled(schema), seed=100 + index, count=60) > 0


def test_a_complement_is_spelling_closed():
    """The complement keeps to canonical spellings, so no other spelling of an excluded value
    slips through (an escape, a trailing zero, an exponent)."""
    assert not accepts({"type": "string", "not": {"const": "a"}}, '"\\u0061"')
    assert not accepts({"type": "string", "not": {"pattern": "^a"}}, '"\\u0061b"')
    number = {"type": "number", "not": {"const": 1.5}}
    for text in ("1.5", "1.50", "15e-1", "0.15e1"):
        assert not accepts(number, text), text
    assert not accepts({"type": "number", "not": {"type": "integer"}}, "1.0")
    # the widest reading of \d: an Arabic-Indic digit may be a digit for a validator
    assert not accepts({"type": "string", "not": {"pattern": "^\\d$"}}, '"\u0663"')
    assert accepts({"type": "string", "not": {"pattern": "^\\d$"}}, '"x"')


def test_refused_negations_name_their_reason():
    for schema, code, keyword in (
        ({"type": "string", "not": {"format": "date"}}, "E_UNSUPPORTED_KEYWORD", "format"),
        ({"type": "array", "not": {"minItems": 2}}, "E_UNSUPPORTED_KEYWORD", "not"),
        (
            {"type": "object", "not": {"additionalProperties": False}},
            "E_UNSUPPORTED_KEYWORD",
            "additionalProperties",
        ),
    ):
        with pytest.raises(TrgcError) as info:
            trgc.compile_schema(schema)
        assert info.value.code == code and info.value.details.get("keyword") == keyword, schema


def test_a_complement_of_a_recursive_value_is_refused():
    schema = {
        "$defs": {"t": {"type": "array", "items": {"$ref": "#/$defs/t"}}},
        "type": "object",
        "properties": {"x": {"type": "string"}, "t": {"$ref": "#/$defs/t"}},
        "not": {"properties": {"x": {"const": "a"}}},
    }
    art = trgc.compile_schema(schema, whitespace="compact")  # the negation: only the string member
    assert trgc.check(art, b'{"x":"b","t":[[]]}').accepted
    assert not trgc.check(art, b'{"x":"a"}').accepted
