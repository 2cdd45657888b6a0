"""--whitespace compact|pretty|flexible: what each admits, that flexible is bounded, that the
mode is recorded, and the check hint for documents rejected only for their whitespace."""

from __future__ import annotations

import pytest

import trgc
from trgc.compiler.schema import whitespace_hint
from trgc.errors import TrgcError
from trgc.grammar.schema.whitespace import respace, written_mode

SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "array", "items": {"type": "integer"}},
        "b": {"const": {"x": [1, {}]}},
        "c": {},
    },
}


def _accepts(art, text: str) -> bool:
    return trgc.check(art, text.encode()).accepted


def test_the_default_is_pretty_and_compact_is_one_option_away():
    pretty = trgc.compile_schema(SCHEMA)
    assert pretty.metadata["options"]["whitespace"] == "pretty"
    assert _accepts(pretty, '{"a": [1, 2], "b": {"x": [1, {}]}}')
    assert not _accepts(pretty, '{"a":[1,2]}')
    compact = trgc.compile_schema(SCHEMA, whitespace="compact")
    assert _accepts(compact, '{"a":[1,2],"b":{"x":[1,{}]}}') and not _accepts(compact, '{"a": [1]}')
    assert trgc.compile_schema(SCHEMA, separators="compact").sha256 == compact.sha256


def test_flexible_admits_bounded_json_whitespace_everywhere():
    art = trgc.compile_schema(SCHEMA, whitespace="flexible", max_whitespace=3)
    assert art.metadata["options"]["max_whitespace"] == 3
    for text in (
        '{"a":[1,2]}',
        ' {\n "a" : [ 1 ,\t2 ],\r\n"b":{ "x":[1 , { } ] } } ',
        '{"c": {"q": [ ], "r" :null}}',
        "{   }",  # a run on each side of the brackets
    ):
        assert _accepts(art, text), text
    for text in ('{    "a":[]}', '{"a":[1 2]}', '{"a":[1,2]}    ', '{"a"\f:[]}'):
        assert not _accepts(art, text), text


def test_bad_modes_are_usage_errors():
    for options in ({"whitespace": "wide"}, {"whitespace": "flexible", "max_whitespace": -1}):
        with pytest.raises(TrgcError) as info:
            trgc.compile_schema(SCHEMA, **options)
        assert info.value.code == "E_USAGE"
    with pytest.raises(TrgcError) as info:
        trgc.compile_schema(SCHEMA, whitespace="pretty", separators="compact")
    assert info.value.code == "E_USAGE"


def test_respacing_keeps_strings():
    assert respace(b'{ "a , b" :\n[1,2] }', "pretty") == b'{"a , b": [1, 2]}'
    assert respace(b'"unterminated', "compact") is None
    assert written_mode(b'{"a": [1, 2]}') == ("pretty", 1)
    assert written_mode(b'{"a" :  1}') == ("flexible", 2)


def test_check_says_which_option_would_accept_a_document():
    pretty = trgc.compile_schema(SCHEMA)
    assert "--whitespace compact" in whitespace_hint(pretty, b'{"a":[1]}')
    assert "--whitespace flexible" in whitespace_hint(pretty, b'{ "a": [1] }')
    assert whitespace_hint(pretty, b'{"a": ["x"]}') is None  # wrong content, not whitespace
    assert whitespace_hint(pretty, b'{"a": [1]}') is None  # accepted anyway
    flexible = trgc.compile_schema(SCHEMA, whitespace="flexible", max_whitespace=1)
    assert "--max-whitespace 4" in whitespace_hint(flexible, b'{"a":    [1]}')
    grammar = trgc.compile_grammar('%trg 1\n%start s\ns ::= "a" ;\n')
    assert whitespace_hint(grammar, b" a") is None
