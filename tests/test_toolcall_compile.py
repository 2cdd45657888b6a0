"""compile_toolcall: tool-list input shapes and their error codes, metadata and identity, the
free-text language (against a plain `marker not in text` oracle) and determinism."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trgc
from toolcall_helpers import ROOT, TOOLS_JSON
from trgc.errors import TrgcError
from trgc.limits import Limits

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def code_of(tools, **kwargs) -> str:
    with pytest.raises(TrgcError) as info:
        trgc.compile_toolcall(tools, **kwargs)
    return info.value.code


def test_both_entry_shapes_compile_to_the_same_artifact():
    wrapped = [
        {"type": "function", "function": {"name": "w", "description": "d", "parameters": WEATHER}}
    ]
    bare = [{"name": "w", "description": "other text", "parameters": WEATHER, "strict": True}]
    a = trgc.compile_toolcall(wrapped, family="qwen")
    assert (
        a.sha256 == trgc.compile_toolcall(bare, family="qwen").sha256
    )  # descriptions don't matter
    assert a.sha256 == trgc.compile_toolcall(json.dumps(wrapped), family="qwen").sha256
    assert a.sha256 == trgc.compile_toolcall(json.dumps(wrapped).encode(), family="qwen").sha256


def test_metadata_names_family_markers_and_tools():
    a = trgc.compile_toolcall(TOOLS_JSON.read_bytes(), family="deepseek")
    options = a.metadata["options"]
    assert options["family"] == "deepseek"
    assert options["tools"] == ["get_weather", "get", "now"]
    assert options["open_marker"] == "<｜tool▁calls▁begin｜>"
    assert options["markers"][0] == options["open_marker"] and len(options["markers"]) == 5
    assert options["separators"] == "pretty" and options["format"] == "trgc-toolcall-1"
    assert a.metadata["source_sha256"].startswith("sha256:")
    assert set(a.specials) == set(options["markers"])
    ids = {
        trgc.compile_toolcall(TOOLS_JSON.read_bytes(), family=f).sha256
        for f in ("qwen", "llama3", "deepseek")
    }
    ids.add(
        trgc.compile_toolcall(TOOLS_JSON.read_bytes(), family="qwen", separators="compact").sha256
    )
    assert len(ids) == 4


@pytest.mark.parametrize(
    ("tools", "code"),
    [
        ("[", "E_TOOLCALL_JSON"),
        ('[{"name": "a", "name": "b"}]', "E_TOOLCALL_JSON"),
        (b"[\xff]", "E_TOOLCALL_JSON"),
        ("[]", "E_TOOLCALL_NO_TOOLS"),
        ('{"name": "a"}', "E_TOOLCALL_NO_TOOLS"),
        ([], "E_TOOLCALL_NO_TOOLS"),
        ([{"name": "a"}, {"name": "a"}], "E_TOOLCALL_DUPLICATE_NAME"),
        ([{"name": "has space"}], "E_TOOLCALL_NAME"),
        ([{"name": 'q"uote'}], "E_TOOLCALL_NAME"),
        ([{"name": "x" * 65}], "E_TOOLCALL_NAME"),
        ([{"name": ""}], "E_TOOLCALL_NAME"),
        ([{"description": "no name"}], "E_TOOLCALL_FIELD"),
        ([{"name": "a", "params": {}}], "E_TOOLCALL_FIELD"),
        ([{"type": "function", "function": {"name": "a"}, "extra": 1}], "E_TOOLCALL_FIELD"),
        ([{"type": "tool", "function": {"name": "a"}}], "E_TOOLCALL_FIELD"),
        ([{"type": "function", "function": "a"}], "E_TOOLCALL_FIELD"),
        ([{"name": "a", "description": 3}], "E_TOOLCALL_FIELD"),
        ([{"name": "a", "strict": "yes"}], "E_TOOLCALL_FIELD"),
        (["a"], "E_TOOLCALL_FIELD"),
        ([{"name": "a", "parameters": {"type": "string"}}], "E_TOOLCALL_PARAMETERS"),
        ([{"name": "a", "parameters": True}], "E_TOOLCALL_PARAMETERS"),
        (
            [{"name": "a", "parameters": {"type": "object", "$dynamicRef": "#a"}}],
            "E_UNSUPPORTED_KEYWORD",
        ),
    ],
)
def test_bad_tool_lists_have_codes(tools, code):
    assert code_of(tools, family="qwen") == code


def test_unknown_family():
    assert code_of([{"name": "a"}], family="gemma") == "E_TOOLCALL_FAMILY"


def test_schema_errors_point_into_the_tool_list():
    tools = [
        {"name": "a"},
        {
            "type": "function",
            "function": {
                "name": "b",
                "parameters": {"type": "object", "properties": {"x": {"type": "strin"}}},
            },
        },
    ]
    with pytest.raises(TrgcError) as info:
        trgc.compile_toolcall(tools, family="qwen", source="tools.json")
    assert info.value.code == "E_SCHEMA_INVALID"
    assert info.value.pointer == "/1/function/parameters/properties/x/type"
    assert info.value.details["tool"] == "b" and info.value.source == "tools.json"


def test_limits_apply():
    with pytest.raises(TrgcError) as info:
        trgc.compile_toolcall(TOOLS_JSON.read_bytes(), limits=Limits(input_bytes=10))
    assert info.value.code == "E_LIMIT_INPUT_BYTES"
    with pytest.raises(TrgcError) as info:
        trgc.compile_toolcall("[" * 200 + "]" * 200, limits=Limits(nesting=50))
    assert info.value.code == "E_LIMIT_NESTING"


def test_recursive_parameters_and_open_values_compile():
    tree = {
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/n"}, "meta": {}},
        "$defs": {
            "n": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/n"}}},
            }
        },
    }
    tools = [
        {"name": "a", "parameters": tree},
        {"name": "b", "parameters": {"type": "object", "properties": {"v": {}}}},
    ]
    a = trgc.compile_toolcall(tools, family="qwen")
    machines = a.metadata["machines"]
    assert machines[0] == "start" and "a.s_n" in machines
    assert machines.count("json_value") == 1  # one shared any-value rule for every tool


# the byte-level language of a turn without specials = the free text
ALPHABET = st.sampled_from(list("<tool_call>|pythn{} é\n"))


@settings(max_examples=300, deadline=None)
@given(st.lists(ALPHABET, max_size=30).map("".join))
def test_free_text_is_exactly_the_text_without_the_open_marker(text):
    arts = _free_text_artifacts()
    data = text.encode()
    assert trgc.check(arts["qwen"], data).accepted == ("<tool_call>" not in text)
    llama_ok = "<|python_tag|>" not in text and not text.startswith("{")
    assert trgc.check(arts["llama3"], data).accepted == llama_ok


_ARTS: dict = {}


def _free_text_artifacts() -> dict:
    if not _ARTS:
        for family in ("qwen", "llama3"):
            _ARTS[family] = trgc.compile_toolcall([{"name": "a"}], family=family)
    return _ARTS


def test_free_text_near_misses():
    arts = _free_text_artifacts()
    for text in ["<tool_call", "<<tool_call>", "<tool_<tool_call>", "x<tool_call>y", "<tool_cal<"]:
        assert trgc.check(arts["qwen"], text.encode()).accepted == ("<tool_call>" not in text), text


def test_identity_does_not_depend_on_the_hash_seed():
    code = "import trgc, sys; print(trgc.compile_toolcall(open(sys.argv[1], 'rb').read(), family='qwen').sha256)"
    seen = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", code, str(TOOLS_JSON)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            cwd=ROOT,
        )
        seen.add(out.stdout.strip())
    assert len(seen) == 1 and seen.pop().startswith("sha256:")


UNSUPPORTED = {  # $dynamicRef is a keyword trj-1 knows and cannot enforce
    "type": "object",
    "properties": {"q": {"type": "string", "pattern": "^[a-z]+$"}, "r": {"$dynamicRef": "#m"}},
}


def _tools_with_an_unsupported_schema() -> list:
    return [
        {"name": "weather", "parameters": WEATHER},
        {"name": "search", "parameters": UNSUPPORTED},
    ]


def test_one_unsupported_schema_fails_the_list_and_the_hint_names_the_fallback():
    with pytest.raises(TrgcError) as info:
        trgc.compile_toolcall(_tools_with_an_unsupported_schema(), family="qwen")
    assert info.value.code == "E_UNSUPPORTED_KEYWORD"
    assert info.value.pointer.startswith("/1/parameters")
    assert "--unconstrained-arguments search" in info.value.hint


def test_unconstrained_arguments_are_any_object_inside_the_envelope_and_recorded():
    art = trgc.compile_toolcall(
        _tools_with_an_unsupported_schema(), family="qwen", unconstrained_arguments=("search",)
    )
    assert art.metadata["options"]["unconstrained_arguments"] == ["search"]
    from toolcall_helpers import marker_id, synthetic_table

    table = synthetic_table()

    def run(name: str, arguments: str) -> bool:
        """Walk the qwen envelope byte by byte (ids 0-255 are the bytes) through a Matcher."""
        matcher = trgc.Matcher(art, table)
        body = (
            "\n"
            + json.dumps({"name": name}).removesuffix("}")
            + ', "arguments": '
            + arguments
            + "}\n"
        ).encode()
        for token in [marker_id(table, "<tool_call>"), *body, marker_id(table, "</tool_call>")]:
            if not matcher.allowed_tokens()[token]:
                return False
            matcher.advance(token)
        return matcher.is_accepting()

    assert run("search", '{"anything": [1, {"q": null}], "x-y": true}')
    assert run("search", "{}")
    assert not run("search", "[]")  # still a JSON object
    assert not run("search", '{"a": 1')  # and still complete
    assert run("weather", '{"city": "Oslo"}')
    assert not run("weather", '{"city": 1}')  # the other tools stay constrained
    assert not run("weather", '{"town": "Oslo"}')


def test_unconstrained_arguments_change_the_identity_and_unknown_names_are_refused():
    tools = [{"name": "weather", "parameters": WEATHER}]
    plain = trgc.compile_toolcall(tools, family="qwen")
    assert "unconstrained_arguments" not in plain.metadata["options"]
    free = trgc.compile_toolcall(tools, family="qwen", unconstrained_arguments=("weather",))
    assert free.sha256 != plain.sha256
    assert code_of(tools, family="qwen", unconstrained_arguments=("nope",)) == (
        "E_TOOLCALL_UNCONSTRAINED"
    )
