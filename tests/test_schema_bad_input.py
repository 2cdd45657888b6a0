"""trj-1 bad inputs: each is refused with its own stable code, never a crash or RecursionError."""

from __future__ import annotations

import pytest

import trgc
from trgc.errors import TrgcError
from trgc.limits import DEFAULT_LIMITS


def code_of(schema, **options) -> TrgcError:
    with pytest.raises(TrgcError) as info:
        trgc.compile_schema(schema, **options)
    return info.value


def test_invalid_json_has_line_and_column():
    err = code_of('{\n  "type": "string",\n  "minLength": }')
    assert err.code == "E_SCHEMA_JSON"
    assert (err.span.line, err.span.column) == (3, 16)
    assert code_of(b'{"type": "\xff"}').code == "E_SCHEMA_JSON"
    assert code_of('{"type": "number", "maximum": NaN}').code == "E_SCHEMA_JSON"


@pytest.mark.parametrize("text", ["42", "[]", '"string"', "null"])
def test_non_object_schema(text):
    assert code_of(text).code == "E_SCHEMA_NOT_OBJECT"


def test_non_object_subschema_names_its_pointer():
    err = code_of({"type": "object", "properties": {"a": 3}})
    assert err.code == "E_SCHEMA_NOT_OBJECT" and err.pointer == "/properties/a"


def test_duplicate_keys_in_schema_text():
    err = code_of('{"type": "string", "type": "integer"}')
    assert err.code == "E_SCHEMA_DUPLICATE_KEY" and "type" in err.message


@pytest.mark.parametrize("ref", ["http://example.com/s.json", "other.json#/$defs/a", "urn:x:y"])
def test_remote_ref(ref):
    err = code_of({"properties": {"a": {"$ref": ref}}})
    assert err.code == "E_REMOTE_REF" and err.pointer == "/properties/a/$ref"


def test_unresolved_local_ref():
    assert code_of({"$ref": "#/$defs/missing"}).code == "E_REF_UNRESOLVED"


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
        {"allOf": [{"$ref": "#"}], "type": "object"},
    ],
)
def test_ref_without_progress(schema):
    assert code_of(schema).code == "E_REF_NO_PROGRESS"


def test_enum_with_duplicates():
    err = code_of({"enum": ["a", 1, "a"]})
    assert err.code == "E_SCHEMA_INVALID" and err.pointer == "/enum"
    assert code_of({"enum": [1, 1.0]}).code == "E_SCHEMA_INVALID"  # equal numbers in JSON Schema


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "minLength": 5, "maxLength": 4},
        {"enum": []},
        {"type": "integer", "minimum": 10, "maximum": 9},
        {"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 2},
        {"type": "integer", "minimum": 2**60},
        {"type": "array", "minItems": 3, "maxItems": 2},
        {"type": "array", "prefixItems": [{"type": "integer"}], "items": False, "minItems": 2},
        {"type": "object", "properties": {"a": False}, "required": ["a"]},
        {"type": "object", "additionalProperties": False, "required": ["x"]},
        {"enum": ["a"], "type": "integer"},
        {"allOf": [{"type": "string"}, {"type": "integer"}]},
        False,
    ],
)
def test_unsatisfiable(schema):
    assert code_of(schema).code == "E_UNSATISFIABLE"


def test_huge_max_length_hits_the_repetition_limit():
    err = code_of({"type": "string", "maxLength": 10**9})
    assert err.code == "E_LIMIT_REPETITION" and err.exit_status == 3
    assert code_of({"type": "array", "minItems": 2**20 + 1}).code == "E_LIMIT_REPETITION"


def test_deep_nesting_text_and_value_without_recursion_error():
    depth = 50_000
    text = '{"items":' * depth + "{}" + "}" * depth
    assert code_of(text).code == "E_LIMIT_NESTING"
    value: dict = {}
    for _ in range(depth):
        value = {"type": "array", "items": value}
    assert code_of(value).code == "E_LIMIT_NESTING"


def test_nesting_within_the_limit_compiles_iteratively():
    limits = DEFAULT_LIMITS.with_overrides({"nesting": 5_000})
    value: dict = {"type": "integer"}
    for _ in range(1_500):  # deeper than Python's default recursion limit
        value = {"type": "object", "properties": {"a": value}, "required": ["a"]}
    art = trgc.compile_schema(value, limits=limits, whitespace="compact")
    text = '{"a":' * 1_500 + "7" + "}" * 1_500
    assert trgc.check(art, text.encode()).accepted


def test_bad_keyword_values():
    for schema in (
        {"type": "strin"},
        {"type": []},
        {"required": "a"},
        {"type": "string", "minLength": -1},
        {"type": "integer", "minimum": "3"},
        {"anyOf": []},
        {"properties": []},
    ):
        assert code_of(schema).code == "E_SCHEMA_INVALID", schema


def test_bad_separators_option():
    assert code_of({"type": "null"}, separators="spacious").code == "E_USAGE"
