"""The unknown-keyword policy: errors by default, recorded annotations in annotate mode, typos
always refused, and the three constructs that would silently drop a constraint."""

from __future__ import annotations

import pytest

import trgc
from trgc.errors import TrgcError
from trgc.grammar.schema.annotations import allowed_edits, misspelt

D7 = "http://json-schema.org/draft-07/schema#"


def _error(schema, **options) -> TrgcError:
    with pytest.raises(TrgcError) as info:
        trgc.compile_schema(schema, **options)
    return info.value


def test_unknown_keyword_is_an_error_naming_the_switch():
    err = _error({"type": "string", "alias": "name"})
    assert err.code == "E_UNSUPPORTED_KEYWORD" and err.details["keyword"] == "alias"
    assert err.pointer == "/alias" and "--unknown-keywords annotate" in err.hint


def test_annotate_mode_records_sorted_names_in_the_identity():
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "weight": 3, "_format": "date"}},
        "readonly": True,
    }
    art = trgc.compile_schema(schema, unknown_keywords="annotate", whitespace="compact")
    assert art.metadata["options"]["annotations"] == ["_format", "readonly", "weight"]
    assert art.metadata["options"]["unknown_keywords"] == "annotate"
    assert trgc.check(art, b'{"a":"x"}').accepted and not trgc.check(art, b'{"a":1}').accepted
    plain = trgc.compile_schema({"type": "object", "properties": {"a": {"type": "string"}}})
    assert plain.metadata["options"]["annotations"] == []
    assert art.sha256 != plain.sha256


@pytest.mark.parametrize(
    ("name", "keyword"),
    [
        ("emum", "enum"),
        ("maxLenght", "maxLength"),
        ("requried", "required"),
        ("Required", "required"),
        ("additonalProperties", "additionalProperties"),
        ("type:", "type"),
        ("minitems", "minItems"),
    ],
)
def test_misspelt_assertions_are_errors_in_every_mode(name, keyword):
    for mode in ("error", "annotate"):
        err = _error({"type": "object", name: ["a"]}, unknown_keywords=mode)
        assert err.code == "E_SCHEMA_KEYWORD_TYPO", (name, mode)
        assert err.details["suggestion"] == keyword and keyword in err.hint


def test_names_that_are_not_typos():
    # short keywords only match a different case; a leading underscore is deliberate
    for name in ("note", "info", "min", "form", "alias", "_format", "_uniqueItems", "descripton"):
        assert misspelt(name) is None, name
    assert (
        allowed_edits("required") == 2 and allowed_edits("enum") == 1 and allowed_edits("not") == 0
    )
    art = trgc.compile_schema(
        {"type": "integer", "note": "x"}, unknown_keywords="annotate", whitespace="compact"
    )
    assert art.metadata["options"]["annotations"] == ["note"]


def test_known_but_unsupported_keyword_stays_unsupported_in_annotate_mode():
    err = _error({"$dynamicRef": "#node"}, unknown_keywords="annotate", whitespace="compact")
    assert err.code == "E_UNSUPPORTED_KEYWORD" and err.details["keyword"] == "$dynamicRef"


def test_unknown_format_is_an_error_or_an_annotation():
    schema = {"type": "string", "format": "int32"}
    err = _error(schema)
    assert err.code == "E_UNSUPPORTED_KEYWORD" and "int32" in err.message
    art = trgc.compile_schema(schema, unknown_keywords="annotate", whitespace="compact")
    assert art.metadata["options"]["annotations"] == ["format:int32"]
    assert trgc.check(art, b'"anything"').accepted and not trgc.check(art, b"1").accepted


@pytest.mark.parametrize("key", ["const", "enum"])
def test_an_annotation_beside_enum_or_const_is_an_annotation(key):
    """Real schemas put vendor names beside enums (`mergeStrategy`, `propertyOrder`, `_enum`):
    annotate mode reads them as annotations there too; the default mode still refuses them."""
    value = ["a", "b"] if key == "enum" else "a"
    schema = {key: value, "mergeStrategy": "overwrite", "_enum": ["a"]}
    err = _error(schema)
    assert err.code == "E_UNSUPPORTED_KEYWORD" and err.details["keyword"] == "mergeStrategy"
    art = trgc.compile_schema(schema, unknown_keywords="annotate", whitespace="compact")
    assert art.metadata["options"]["annotations"] == ["_enum", "mergeStrategy"]
    assert trgc.check(art, b'"a"').accepted and not trgc.check(art, b'"c"').accepted
    assert trgc.check(art, b'"b"').accepted is (key == "enum")
    beside = _error({key: value, "pattern": "^a"}, unknown_keywords="annotate")  # a matrix keyword
    assert beside.code == "E_UNSUPPORTED_KEYWORD" and beside.details["keyword"] == "pattern"


def test_vendor_keyword_holding_a_schema():
    schema = {"type": "string", "x-schema": {"type": "string", "maxLength": 2}}
    err = _error(schema)
    assert err.code == "E_UNSUPPORTED_KEYWORD" and err.pointer == "/x-schema"
    art = trgc.compile_schema(schema, unknown_keywords="annotate", whitespace="compact")
    assert art.metadata["options"]["annotations"] == ["x-schema"]
    assert trgc.check(art, b'"abcdef"').accepted  # the vendor schema is not applied
    # an x-* keyword with plain data is ignored by design, as before
    plain = trgc.compile_schema({"type": "string", "x-order": 3, "x-tags": {"a": 1}})
    assert plain.metadata["options"]["annotations"] == []


def test_draft07_ref_siblings_are_not_dropped_silently():
    schema = {
        "$schema": D7,
        "definitions": {"s": {"type": "string"}},
        "type": "object",
        "properties": {"name": {"$ref": "#/definitions/s", "maxLength": 2}},
    }
    err = _error(schema)
    assert err.code == "E_UNSUPPORTED_KEYWORD" and err.pointer == "/properties/name/maxLength"
    assert "ignore" in err.message and "draft-07" in err.message
    art = trgc.compile_schema(schema, unknown_keywords="annotate", whitespace="compact")
    assert art.metadata["options"]["annotations"] == ["$ref-sibling:maxLength"]
    # exactly as draft-07 says: the sibling is ignored
    assert trgc.check(art, b'{"name":"abcdef"}').accepted
    # 2019-09 and later apply siblings: nothing to report
    later = {**schema, "$schema": "https://json-schema.org/draft/2020-12/schema"}
    art = trgc.compile_schema(later, whitespace="compact")
    assert not trgc.check(art, b'{"name":"abcdef"}').accepted


def test_ignore_keywords_still_works_beside_annotate():
    art = trgc.compile_schema({"type": "string", "_format": "date"}, ignore_keywords=("_format",))
    assert art.metadata["options"]["annotations"] == []
    assert art.metadata["options"]["ignore_keywords"] == ["_format"]


def test_bad_mode_is_a_usage_error():
    assert _error({"type": "string"}, unknown_keywords="ignore").code == "E_USAGE"
