"""`trgc toolcall` and `check_toolcall`: output, exit statuses, the engagement check."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import trgc
from toolcall_helpers import ROOT, TOOLS_JSON, synthetic_table
from trgc.cli.app import app
from trgc.engine.toolcall_check import check_toolcall
from trgc.errors import TrgcError
from trgc.grammar.toolcall import parse_tools
from trgc.limits import DEFAULT_LIMITS

QWEN = str(ROOT / "tokenizers" / "qwen3.trt")
LLAMA = str(ROOT / "tokenizers" / "llama3.trt")


def run(*args: str):
    return CliRunner().invoke(app, ["toolcall", *args])


def test_compile_writes_the_artifact_and_prints_its_identity(tmp_path):
    out = tmp_path / "qwen.trga"
    result = run(str(TOOLS_JSON), "--family", "qwen", "-o", str(out))
    assert result.exit_code == 0, result.output
    identity = result.output.strip()
    assert identity == trgc.compile_toolcall(TOOLS_JSON.read_bytes(), family="qwen").sha256
    assert trgc.load_artifact(out).sha256 == identity


def test_json_output_with_check():
    result = run(str(TOOLS_JSON), "--family", "llama3", "--tokenizer", LLAMA, "--check", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["family"] == "llama3" and doc["tools"] == ["get_weather", "get", "now"]
    check = doc["check"]
    assert check["ok"] and check["markers"] == [
        {"id": 128010, "kind": "special", "name": "<|python_tag|>"}
    ]
    assert check["region"] == {"allowed": 2, "eos_allowed": False, "forced": '{"name": "'}
    by_name = {t["name"]: t for t in check["tools"]}
    assert by_name["now"]["merged_empty_object_allowed"] is True
    assert by_name["get_weather"]["merged_empty_object_allowed"] is False
    assert all(t["only_open_brace"] and not t["eos_allowed"] for t in check["tools"])


def test_human_check_output():
    result = run(str(TOOLS_JSON), "--family", "qwen", "--tokenizer", QWEN, "--check")
    assert result.exit_code == 0, result.output
    assert "<tool_call> = 151657 (added)" in result.output and "check: ok" in result.output


def test_check_with_a_vocabulary_that_lacks_the_markers_exits_1():
    result = run(str(TOOLS_JSON), "--family", "qwen", "--tokenizer", LLAMA, "--check", "--json")
    assert result.exit_code == 1
    check = json.loads(result.stdout)["check"]
    assert not check["ok"] and check["problems"][0]["code"] == "E_SPECIAL_TOKEN_MISSING"


def test_binding_without_check_fails_with_the_engine_code():
    result = run(str(TOOLS_JSON), "--family", "deepseek", "--tokenizer", QWEN)
    assert result.exit_code == 2
    assert "E_SPECIAL_TOKEN_MISSING" in result.output


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--family", "qwen", "--check"], "E_USAGE"),
        (["--family", "mistral"], "E_TOOLCALL_FAMILY"),
        (["--family", "qwen", "--separators", "wide"], "E_USAGE"),
    ],
)
def test_usage_errors(args, code):
    result = run(str(TOOLS_JSON), *args, "--json")
    assert result.exit_code == 2
    assert json.loads(result.stderr)["error"]["code"] == code


def test_limits_are_options():
    result = run(str(TOOLS_JSON), "--family", "qwen", "--limit", "states=50", "--json")
    assert result.exit_code == 3
    assert json.loads(result.stderr)["error"]["code"] == "E_LIMIT_STATES"
    result = run(str(TOOLS_JSON), "--family", "qwen", "--limit", "bogus=1")
    assert "E_LIMIT_UNKNOWN" in result.output


def test_bad_tool_file(tmp_path):
    path = tmp_path / "tools.json"
    path.write_text('[{"name": "a b"}]')
    result = run(str(path), "--family", "qwen")
    assert result.exit_code == 2 and "E_TOOLCALL_NAME" in result.output
    path.write_text("[{")
    result = run(str(path), "--family", "qwen", "--json")
    assert result.exit_code == 2
    assert json.loads(result.stderr)["error"]["code"] == "E_TOOLCALL_JSON"


def test_check_finds_a_required_argument_mismatch():
    tools = json.loads(TOOLS_JSON.read_text())
    artifact = trgc.compile_toolcall(tools, family="deepseek")
    claimed = parse_tools(
        [
            {
                "name": "now",
                "parameters": {"type": "object", "properties": {"a": {}}, "required": ["a"]},
            }
        ],
        DEFAULT_LIMITS,
    )
    report = check_toolcall(artifact, synthetic_table(), claimed)
    assert [p["message"] for p in report.problems] == [
        "tool 'now': the merged {} token admits the arguments object"
    ]
    # after <｜tool▁calls▁begin｜> only <｜tool▁call▁begin｜> (a marker, so no forced bytes)
    assert report.region == {"allowed": 1, "eos_allowed": False, "forced": ""}


def test_check_refuses_other_artifacts():
    with pytest.raises(TrgcError) as info:
        check_toolcall(trgc.compile_schema({"type": "object"}), synthetic_table())
    assert info.value.code == "E_USAGE"


def test_unconstrained_arguments_on_the_command_line(tmp_path):
    tools = tmp_path / "tools.json"
    schema = {"type": "object", "properties": {"x": {"$dynamicRef": "#m"}}}
    tools.write_text(json.dumps([{"name": "now"}, {"name": "odd", "parameters": schema}]))
    refused = run(str(tools), "--family", "qwen", "--json")
    assert refused.exit_code == 2
    error = json.loads(refused.stderr)["error"]
    assert (
        error["code"] == "E_UNSUPPORTED_KEYWORD"
        and "--unconstrained-arguments odd" in error["hint"]
    )
    args = [str(tools), "--family", "qwen", "--unconstrained-arguments", "odd", "-t", QWEN]
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["unconstrained_arguments"] == ["odd"]
    human = run(*args)
    assert human.exit_code == 0
    assert "note: the arguments of odd are unconstrained" in human.stderr
    unknown = run(str(tools), "--family", "qwen", "--unconstrained-arguments", "nope", "--json")
    assert json.loads(unknown.stderr)["error"]["code"] == "E_TOOLCALL_UNCONSTRAINED"
