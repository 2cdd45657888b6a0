"""User input never ends in an internal error: every hostile case of issue 17 gets a stable code,
exit status 2 or 3, and no traceback (each case here exited 70 with a traceback before)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import trgc
from trgc.cli.app import app
from trgc.errors import TrgcError

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def invoke(args: list[str], stdin: bytes | None = None):
    return runner.invoke(app, args, input=stdin, catch_exceptions=False)


def expect_error(args: list[str], code: str, status: int = 2, stdin: bytes | None = None) -> dict:
    """Run with --json; require one JSON error document with `code`, the exit status, and no
    traceback anywhere."""
    result = invoke([*args, "--json"], stdin)
    assert "Traceback" not in result.output + result.stderr
    assert result.exit_code == status, result.output + result.stderr
    assert result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["code"] == code, error
    return error


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        ('{"const": 1e400}', None),
        ('{"enum": [1e400, 2]}', None),
        ('{"const": "\\ud800"}', "/const"),
        ('{"enum": ["a", "\\udc00"]}', "/enum/1"),
        ('{"type": "object", "properties": {"\\ud800": {"type": "integer"}}}', "/properties"),
    ],
)
def test_schema_numbers_and_surrogates(tmp_path, text, pointer):
    path = tmp_path / "s.json"
    path.write_text(text, encoding="utf-8")
    error = expect_error(["compile", str(path)], "E_SCHEMA_JSON")
    assert error.get("pointer") == pointer


@pytest.mark.parametrize(
    "schema", [{"const": "\ud800"}, {"properties": {"\udfff": {}}}, {"enum": [float("inf")]}]
)
def test_schema_values_from_python(schema):
    with pytest.raises(TrgcError) as info:
        trgc.compile_schema(schema)
    assert info.value.code == "E_SCHEMA_INVALID"


@pytest.mark.parametrize(
    "schema",
    [
        {"exclusiveMinimum": True, "minimum": 1},
        {"exclusiveMaximum": True},
        {"type": "integer", "exclusiveMaximum": False, "maximum": 3},
        {"$schema": "http://json-schema.org/draft-07/schema#", "exclusiveMinimum": True},
        {"$schema": "http://json-schema.org/draft-04/schema#", "exclusiveMaximum": True},
    ],
)
def test_boolean_exclusive_bounds_outside_draft_04_are_invalid(schema):
    with pytest.raises(TrgcError) as info:
        trgc.compile_schema(schema)
    assert info.value.code == "E_SCHEMA_INVALID"
    assert info.value.pointer.startswith("/exclusiveM")


def test_draft_04_boolean_exclusive_bound_still_modifies_its_bound():
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}
    artifact = trgc.compile_schema({**draft4, "minimum": 1, "exclusiveMinimum": True})
    assert not trgc.check(artifact, b"1").accepted and trgc.check(artifact, b"2").accepted


@pytest.mark.parametrize("value", ["١٠", "１０", "-5", "+5", "1__0", "_1", "0x10", "1e3"])
def test_limit_values_are_ascii_digits(tmp_path, value):
    path = tmp_path / "g.trg"
    path.write_text('%trg 1\n%start a\na ::= "x" ;\n', encoding="utf-8")
    error = expect_error(["compile", str(path), "--limit", f"states={value}"], "E_USAGE")
    assert "ASCII digits" in error["message"]
    assert invoke(["compile", str(path), "--limit", "states=1_000"]).exit_code == 0


def test_limits_file_nested_deeply_or_mistyped(tmp_path):
    grammar = tmp_path / "g.trg"
    grammar.write_text('%trg 1\n%start a\na ::= "x" ;\n', encoding="utf-8")
    limits = tmp_path / "limits.toml"
    limits.write_text("[limits]\nstates = " + "[" * 50_000 + "]" * 50_000 + "\n")
    expect_error(["compile", str(grammar), "--limits-file", str(limits)], "E_USAGE")
    limits.write_text('[limits]\nstates = "big"\n')
    expect_error(["compile", str(grammar), "--limits-file", str(limits)], "E_USAGE")


def _lock(tmp_path: Path) -> Path:
    grammar = tmp_path / "g.trg"
    grammar.write_text('%trg 1\n%start a\na ::= "x" ;\n', encoding="utf-8")
    assert invoke(["lock", str(grammar), "--lock", str(tmp_path / "x.lock")]).exit_code == 0
    return tmp_path / "x.lock"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('compiler = "trgc', "compiler = 5 #"),
        ('source = "', "source = 5 #"),
        ('source_sha256 = "sha256:', 'source_sha256 = "md5:'),
        ("[lock.limits]", "[lock.limits]\nbogus = 1"),
        ("cache_bytes = ", 'cache_bytes = "x" #'),
        ("[entries.g]", "[entries]\ng = 5\n[entries.h]"),
        ('artifact = "', "artifact = " + "[" * 50_000 + "]" * 50_000 + " #"),
    ],
)
def test_lock_files_with_wrong_types_or_deep_nesting(tmp_path, old, new):
    lock = _lock(tmp_path)
    text = lock.read_text(encoding="utf-8")
    assert old in text
    lock.write_text(text.replace(old, new, 1), encoding="utf-8")
    expect_error(["verify", "--lock", str(lock)], "E_LOCK_INVALID")


def test_generate_with_huge_ban_or_seed(tmp_path):
    grammar = ROOT / "grammars" / "json.trg"
    assert invoke(["compile", str(grammar), "-o", str(tmp_path / "j.trga")]).exit_code == 0
    base = ["generate", str(tmp_path / "j.trga"), "-t", str(ROOT / "tokenizers" / "gpt2.trt")]
    expect_error([*base, "--ban", str(10**26)], "E_SAMPLER_SETTINGS")
    expect_error([*base, "--seed", str(2**64)], "E_SAMPLER_SETTINGS")
    expect_error([*base, "--top-k", str(10**30)], "E_SAMPLER_SETTINGS")


SYNTHETIC = ROOT / "tokenizers" / "synthetic" / "json-bytelevel"


def _tokenizer_copy(tmp_path: Path) -> Path:
    import shutil

    folder = tmp_path / "tok"
    shutil.copytree(SYNTHETIC, folder)
    return folder


@pytest.mark.parametrize("value", [5, True, ["<|endoftext|>"], {"content": 5}])
def test_config_eos_token_of_the_wrong_type(tmp_path, value):
    folder = _tokenizer_copy(tmp_path)
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": value}))
    error = expect_error(["tokenizer", "build", str(folder)], "E_TOKENIZER_FORMAT")
    assert "eos_token" in error["message"]


@pytest.mark.parametrize("merge", [7, ["{", '"', "x"], "{", '{ " x', ["{"], [1, 2]])
def test_merges_that_are_not_pairs(tmp_path, merge):
    folder = _tokenizer_copy(tmp_path)
    doc = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    doc["model"]["merges"].append(merge)
    (folder / "tokenizer.json").write_text(json.dumps(doc), encoding="utf-8")
    error = expect_error(["tokenizer", "build", str(folder)], "E_TOKENIZER_FORMAT")
    assert "merges" in error["message"]


def test_empty_tiktoken_rank_file(tmp_path):
    (tmp_path / "empty.tiktoken").write_bytes(b"")
    (tmp_path / "special_tokens.json").write_text(
        json.dumps({"special_tokens": {"<|endoftext|>": 300}})
    )
    error = expect_error(
        ["tokenizer", "build", str(tmp_path / "empty.tiktoken")], "E_TOKENIZER_TIKTOKEN"
    )
    assert "no tokens" in error["message"]


@pytest.mark.parametrize("field", ["value", "unit", "status"])
def test_evidence_fields_with_lone_surrogates(tmp_path, field):
    doc = json.loads((ROOT / "tests" / "data" / "tools" / "extraction_ok.json").read_text())
    doc["fields"]["total"][field] = "\ud800"
    path = tmp_path / "result.json"
    path.write_text(json.dumps(doc), encoding="ascii")  # json.dumps escapes it as \ud800
    error = expect_error(["evidence", "check", str(path)], "E_EVIDENCE_JSON")
    assert error["pointer"] == f"/fields/total/{field}"


def test_evidence_source_names_must_be_unique(tmp_path):
    notes = ROOT / "tests" / "data" / "tools" / "notes.txt"
    result = ROOT / "tests" / "data" / "tools" / "extraction_ok.json"
    args = ["evidence", "check", str(result), "--source", f"doc={notes}", "--source"]
    error = expect_error([*args, f"doc={notes}"], "E_EVIDENCE_SOURCE")
    assert "'doc' twice" in error["message"]


GRAMMAR = '%trg 1\n%start a\na ::= "x" ;\n'


@pytest.mark.parametrize("spelling", ["same", "dot", "link", "hardlink"])
def test_compile_refuses_to_overwrite_its_source(tmp_path, spelling):
    import os

    source = tmp_path / "g.trg"
    source.write_text(GRAMMAR, encoding="utf-8")
    output = {
        "same": source,
        "dot": tmp_path / "." / "g.trg",
        "link": tmp_path / "link.trga",
        "hardlink": tmp_path / "hard.trga",
    }[spelling]
    if spelling == "link":
        output.symlink_to(source)
    if spelling == "hardlink":
        os.link(source, output)
    error = expect_error(["compile", str(source), "-o", str(output)], "E_USAGE")
    assert "would overwrite the input" in error["message"]
    assert source.read_text(encoding="utf-8") == GRAMMAR


def test_generate_refuses_a_trace_or_sidecar_over_its_inputs(tmp_path):
    import shutil

    (tmp_path / "g.trg").write_text(GRAMMAR, encoding="utf-8")
    artifact = tmp_path / "run.jsonl.logits.zst"  # where the sidecar of trace run.jsonl goes
    assert invoke(["compile", str(tmp_path / "g.trg"), "-o", str(artifact)]).exit_code == 0
    table = tmp_path / "gpt2.trt"
    shutil.copy(ROOT / "tokenizers" / "gpt2.trt", table)
    before = artifact.read_bytes(), table.read_bytes()
    base = ["generate", str(artifact), "-t", str(table), "--max-tokens", "2"]
    for trace in (artifact, table, tmp_path / "run.jsonl"):
        error = expect_error([*base, "--trace", str(trace)], "E_USAGE")
        assert "would overwrite the input" in error["message"]
    assert (artifact.read_bytes(), table.read_bytes()) == before
    assert not (tmp_path / "run.jsonl").exists()


@pytest.mark.parametrize("command", ["masks", "tokenizer", "toolcall"])
def test_other_writers_refuse_to_overwrite_an_input(tmp_path, command):
    import shutil

    table = tmp_path / "gpt2.trt"
    shutil.copy(ROOT / "tokenizers" / "gpt2.trt", table)
    if command == "masks":
        (tmp_path / "g.trg").write_text(GRAMMAR, encoding="utf-8")
        artifact = tmp_path / "g.trga"
        assert invoke(["compile", str(tmp_path / "g.trg"), "-o", str(artifact)]).exit_code == 0
        args = ["masks", "precompute", str(artifact), "-t", str(table), "-o", str(artifact)]
        original = artifact
    elif command == "tokenizer":
        folder = _tokenizer_copy(tmp_path)
        original = folder / "tokenizer.json"
        args = ["tokenizer", "build", str(folder), "-o", str(original)]
    else:
        original = ROOT / "tests" / "data" / "toolcall" / "tools.json"
        shutil.copy(original, tmp_path / "tools.json")
        original = tmp_path / "tools.json"
        args = ["toolcall", str(original), "--family", "qwen", "-o", str(original)]
    before = original.read_bytes()
    expect_error(args, "E_USAGE")
    assert original.read_bytes() == before


def test_an_output_symlink_is_written_through(tmp_path):
    (tmp_path / "g.trg").write_text(GRAMMAR, encoding="utf-8")
    target = tmp_path / "real.trga"
    target.write_bytes(b"old")
    link = tmp_path / "link.trga"
    link.symlink_to(target.name)
    assert invoke(["compile", str(tmp_path / "g.trg"), "-o", str(link)]).exit_code == 0
    assert link.is_symlink() and target.read_bytes() != b"old"
    assert trgc.load_artifact(link).sha256 == trgc.load_artifact(target).sha256


def test_lock_entry_with_a_file_name_too_long_for_the_os(tmp_path):
    """Found by the lock fuzzer: Path.exists() raised ENAMETOOLONG (exit 70)."""
    lock = _lock(tmp_path)
    text = lock.read_text(encoding="utf-8").replace('artifact = "', 'artifact = "' + "f" * 300, 1)
    lock.write_text(text, encoding="utf-8")
    result = invoke(["verify", "--lock", str(lock), "--json"])
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    [change] = json.loads(result.stdout)["changed"]["g"]
    assert change["field"] == "artifact_file" and change["actual"] == "missing"
