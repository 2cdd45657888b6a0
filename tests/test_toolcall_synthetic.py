"""Tool-call masks over a synthetic tokenizer with merged structural pieces, for every family.

The tokenizer has all 256 bytes plus `{"`, `":`, `{}`, `"}}`, `",` and friends, so these tests
check what BPE merging can break: a merged `{}` at the arguments, a `"}}` closing an object
early, a key spelled through a merged `{"`. Expected envelopes come from `toolcall_helpers`
(written out from the chat templates), not from the library's family tables.
"""

from __future__ import annotations

import numpy as np
import pytest

import trgc
from toolcall_helpers import (
    DS_CALLS_BEGIN,
    PYTHON_TAG,
    QWEN_OPEN,
    accepts,
    args_prefix,
    feed,
    marker_id,
    synthetic_table,
    token_id,
    turn,
)
from trgc.errors import TrgcError
from trgc.tokenizer.table import make_table

FAMILIES = ("qwen", "llama3", "deepseek")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"enum": ["celsius", "fahrenheit"]},
                    "days": {"type": "integer"},
                },
                "required": ["city", "unit"],
            },
        },
    },
    {
        "name": "get",
        "parameters": {
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "opts": {
                    "type": "object",
                    "properties": {"depth": {"type": "number"}},
                    "required": ["depth"],
                },
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["url"],
        },
    },
    {"name": "now", "description": "no parameters"},
]
OPEN = {"qwen": QWEN_OPEN, "llama3": PYTHON_TAG, "deepseek": DS_CALLS_BEGIN}


@pytest.fixture(scope="module")
def table():
    return synthetic_table()


@pytest.fixture(scope="module", params=FAMILIES)
def setup(request, table):
    family = request.param
    artifact = trgc.compile_toolcall(TOOLS, family=family)
    return family, trgc.Matcher(artifact, table)


def at_args(setup, table, name: str, after: str = ""):
    family, matcher = setup
    matcher.reset()
    feed(matcher, table, [*args_prefix(family, name), *([after] if after else [])])
    return matcher


def allowed(matcher, table, piece: bytes) -> bool:
    return bool(matcher.allowed_tokens()[token_id(table, piece)])


def test_whole_calls_are_accepted_byte_for_byte(setup, table):
    family, matcher = setup
    calls = [("get_weather", '{"city": "Paris", "unit": "celsius", "days": 12}')]
    assert accepts(matcher, table, turn(family, calls, text="Let me check."))
    assert accepts(matcher, table, turn(family, [("now", "{}")]))
    assert accepts(matcher, table, turn(family, []))  # plain text answers are fine
    assert accepts(matcher, table, turn(family, [], text="Sunny, 21 degrees."))
    compact = [("get_weather", '{"city":"Paris","unit":"celsius"}')]
    assert not accepts(matcher, table, turn(family, compact))  # the templates write ", " and ": "


def test_merged_empty_object_at_engagement(setup, table):
    matcher = at_args(setup, table, "get_weather")
    assert not allowed(matcher, table, b"{}")  # would drop the required city and unit
    assert allowed(matcher, table, b'{"')
    assert allowed(matcher, table, b"{")
    matcher = at_args(setup, table, "now")
    assert allowed(matcher, table, b"{}")  # no parameters: the empty object is the only value
    assert not allowed(matcher, table, b'{"')
    matcher = at_args(setup, table, "get")
    assert not allowed(matcher, table, b"{}")


def test_merged_tokens_across_the_arguments_colon(setup, table):
    """A token that starts in the envelope and ends inside the arguments (`": {"`, `": {}`,
    DeepSeek's `\n{"`) is judged on all its bytes: the constraint is engaged from its first byte."""
    family, matcher = setup
    cut = {"qwen": 3, "llama3": 3, "deepseek": 1}[family]  # leave `": ` or the last newline
    opens, empty = {"deepseek": (b'\n{"', b"\n{}")}.get(family, (b'": {"', b'": {}'))
    for name, required in (("get_weather", True), ("now", False)):
        prefix = args_prefix(family, name)
        matcher.reset()
        feed(matcher, table, [*prefix[:-1], prefix[-1][:-cut]])
        assert allowed(matcher, table, empty) is not required
        assert allowed(matcher, table, opens) is required
        assert not matcher.allowed_tokens()[list(table.eos_ids)].any()


def test_required_key_cannot_close_early(setup, table):
    matcher = at_args(setup, table, "get_weather", '{"city": "Paris')
    assert not allowed(matcher, table, b'"}}')  # closes city, then the arguments without unit
    assert not allowed(matcher, table, b'"}')
    assert allowed(matcher, table, b'",')
    assert allowed(matcher, table, b'", "')
    matcher = at_args(setup, table, "get_weather", '{"city": "Paris"')
    assert not allowed(matcher, table, b"}")
    assert not allowed(matcher, table, b"}}")


def test_foreign_key_is_rejected(setup, table):
    matcher = at_args(setup, table, "get_weather", '{"')
    ok = matcher.allowed_tokens()
    assert ok[token_id(table, b"city")] and ok[ord("c")]
    assert not ok[ord("x")] and not ok[ord("u")]  # city comes first: properties in declared order
    matcher = at_args(setup, table, "get_weather", '{"city')
    assert allowed(matcher, table, b'":')  # merged `":` right after the key
    assert not allowed(matcher, table, b"x")
    family, _ = setup
    foreign = [("get_weather", '{"city": "P", "unit": "celsius", "wind": 1}')]
    assert not accepts(setup[1], table, turn(family, foreign))


def test_enum_is_restricted(setup, table):
    matcher = at_args(setup, table, "get_weather", '{"city": "P", "unit": "')
    ok = matcher.allowed_tokens()
    assert ok[token_id(table, b"celsius")] and ok[ord("c")] and ok[ord("f")]
    assert not ok[ord("k")] and not ok[ord('"')]
    family = setup[0]
    bad = [("get_weather", '{"city": "P", "unit": "kelvin"}')]
    assert not accepts(setup[1], table, turn(family, bad))
    good = [("get_weather", '{"city": "P", "unit": "fahrenheit"}')]
    assert accepts(setup[1], table, turn(family, good))


def test_escaped_quote_in_a_string(setup, table):
    family, matcher = setup
    calls = [("get_weather", '{"city": "Pa\\"ris", "unit": "celsius"}')]
    assert accepts(matcher, table, turn(family, calls))
    matcher = at_args(setup, table, "get_weather", '{"city": "Pa\\')
    assert allowed(matcher, table, b'"}')  # an escaped quote and a brace: still inside the string
    assert allowed(matcher, table, b'"}}')
    matcher = at_args(setup, table, "get_weather", '{"city": "Pa')
    assert allowed(matcher, table, b'\\"')
    assert not allowed(matcher, table, b'"}')


def test_number(setup, table):
    family, matcher = setup
    matcher = at_args(setup, table, "get_weather", '{"city": "P", "unit": "celsius", "days": ')
    ok = matcher.allowed_tokens()
    assert ok[token_id(table, b"12")] and ok[ord("1")] and ok[ord("-")]
    assert not ok[ord('"')] and not ok[ord("x")] and not ok[ord(".")]
    feed(matcher, table, ["0"])
    assert not allowed(matcher, table, b"1")  # no leading zeros
    assert not allowed(matcher, table, b".")  # an integer
    closes_call = family in ("qwen", "llama3")  # the envelope's own `}` follows the arguments
    assert allowed(matcher, table, b"}}") is closes_call
    assert not accepts(
        matcher,
        table,
        turn(family, [("get_weather", '{"city": "P", "unit": "celsius", "days": 1.5}')]),
    )


def test_nested_object(setup, table):
    family, matcher = setup
    good = [("get", '{"url": "u", "opts": {"depth": 1.5}}')]
    assert accepts(matcher, table, turn(family, good))
    matcher = at_args(setup, table, "get", '{"url": "u", "opts": ')
    assert not allowed(matcher, table, b"{}")  # depth is required in the nested object
    assert allowed(matcher, table, b'{"')
    assert not accepts(
        matcher, table, turn(family, [("get", '{"url": "u", "opts": {"depth": 1, "x": 2}}')])
    )


def test_array(setup, table):
    family, matcher = setup
    for args in ('{"url": "u", "tags": []}', '{"url": "u", "tags": ["a", "b"]}'):
        assert accepts(matcher, table, turn(family, [("get", args)]))
    assert not accepts(matcher, table, turn(family, [("get", '{"url": "u", "tags": [1]}')]))
    matcher = at_args(setup, table, "get", '{"url": "u", "tags": ')
    assert allowed(matcher, table, b"[]") and allowed(matcher, table, b'["')


def test_eos_is_impossible_inside_the_region(setup, table):
    family, matcher = setup
    eos = list(table.eos_ids)
    pieces = turn(family, [("get", '{"url": "a\\"b", "tags": ["x"]}')])
    matcher.reset()
    assert matcher.allowed_tokens()[eos].all()  # free text: the turn may end
    steps = 0
    for piece in pieces:
        for part in [piece] if isinstance(piece, tuple) else list(piece):
            feed(matcher, table, [part])
            steps += 1
            done = matcher.is_accepting()
            assert bool(matcher.allowed_tokens()[eos].any()) is done
    assert matcher.is_accepting() and steps > 40
    matcher.advance(eos[0])
    assert matcher.is_terminated()


def test_several_calls_where_the_family_allows_them(setup, table):
    family, matcher = setup
    calls = [("now", "{}"), ("get", '{"url": "u"}')]
    if family == "llama3":
        pieces = turn(family, calls[:1]) + [("s", PYTHON_TAG)]
        assert not accepts(matcher, table, pieces)  # Llama 3.1: one call per turn
    else:
        assert accepts(matcher, table, turn(family, calls))
        assert accepts(matcher, table, turn(family, calls * 3, text="Two things."))


def test_open_marker_spelled_in_bytes_is_not_free_text(setup, table):
    family, matcher = setup
    marker = OPEN[family]
    matcher.reset()
    feed(matcher, table, ["see " + marker[:-1]])
    assert not matcher.allowed_tokens()[ord(marker[-1])]
    assert matcher.allowed_tokens()[marker_id(table, marker)]
    assert accepts(matcher, table, turn(family, [], text=marker[:-1] + " " + marker[1:]))


def test_tool_name_selects_the_argument_schema(setup, table):
    family, matcher = setup
    assert not accepts(matcher, table, turn(family, [("get", '{"city": "P", "unit": "celsius"}')]))
    assert not accepts(matcher, table, turn(family, [("nope", "{}")]))
    assert not accepts(matcher, table, turn(family, [("ge", '{"url": "u"}')]))
    matcher = at_args(setup, table, "get")
    assert allowed(matcher, table, b'{"') and not allowed(matcher, table, b"}")


def test_llama_bare_call_and_text_that_cannot_start_with_a_brace(table):
    matcher = trgc.Matcher(trgc.compile_toolcall(TOOLS, family="llama3"), table)
    bare = turn("llama3", [("now", "{}")])[1:]  # without <|python_tag|>
    assert accepts(matcher, table, bare)
    matcher.reset()
    feed(matcher, table, ["{"])
    ok = matcher.allowed_tokens()
    assert ok[ord('"')] and not ok[ord("x")] and not ok[list(table.eos_ids)].any()
    assert accepts(matcher, table, ["Hi {x}"])


def test_missing_open_marker_fails_when_the_matcher_is_made(table):
    tokens = [table.token_bytes(i) for i in range(256)] + [None]
    kinds = np.array([0] * 128 + [1] * 128 + [2], dtype=np.uint8)
    bare = make_table(
        tokens, kinds, special_tokens={"<eos>": 256}, added_tokens={}, eos_ids=(256,), metadata={}
    )
    for family in FAMILIES:
        artifact = trgc.compile_toolcall(TOOLS, family=family)
        with pytest.raises(TrgcError) as info:
            trgc.Matcher(artifact, bare)
        assert info.value.code == "E_SPECIAL_TOKEN_MISSING"


def test_compact_separators_change_the_arguments_only(table):
    matcher = trgc.Matcher(trgc.compile_toolcall(TOOLS, family="qwen", separators="compact"), table)
    compact = [("get_weather", '{"city":"P","unit":"celsius"}')]
    assert accepts(matcher, table, turn("qwen", compact))  # the envelope keeps the template's ", "
    assert not accepts(
        matcher, table, turn("qwen", [("get_weather", '{"city": "P", "unit": "celsius"}')])
    )


def test_open_objects_admit_undeclared_members_after_the_declared_ones(table):
    matcher = trgc.Matcher(
        trgc.compile_toolcall(TOOLS, family="deepseek", open_objects=True), table
    )
    extra = [("get_weather", '{"city": "P", "unit": "celsius", "wind": [1, {"a": null}]}')]
    assert accepts(matcher, table, turn("deepseek", extra))
    missing = [("get_weather", '{"city": "P", "wind": 1}')]
    assert not accepts(matcher, table, turn("deepseek", missing))  # required still required
