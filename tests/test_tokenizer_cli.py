"""`trgc tokenizer build | inspect | verify` through the typer app: output, JSON, exit codes."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from test_tokenizer_support import FIXTURES, PROBE, SYNTH
from trgc.cli.app import app
from trgc.tokenizer import TokenTable, load_tokenizer

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, ["tokenizer", *args])


def test_build_prints_identity_and_writes_table(tmp_path):
    out = tmp_path / "json.trt"
    result = run("build", str(SYNTH / "json-bytelevel"), "-o", str(out))
    assert result.exit_code == 0, result.output
    table = load_tokenizer(out)
    assert result.stdout.strip() == table.sha256
    result = run("build", str(SYNTH / "json-bytelevel"), "--json", "--eos", "5", "--eos", "6")
    doc = json.loads(result.stdout)
    assert doc["eos_ids"] == [5, 6] and doc["output"] is None and doc["counts"]["special"] == 1


def test_inspect_table_json():
    result = run(
        "inspect", str(FIXTURES / "qwen3.trt"), "--json", "--token", "4913", "--token", "151645"
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["vocab_size"] == 151669 and doc["counts"]["special"] == 14
    assert doc["eos"] == [{"id": 151645, "name": "<|im_end|>", "bytes": ""}]
    assert doc["trie"]["nodes"] == 333107 and doc["trie"]["max_depth"] == 128
    assert doc["reports"]["duplicate_groups"] == 0 and doc["reports"]["non_utf8_count"] == 1448
    assert doc["tokens"][0] == {
        "id": 4913,
        "kind": "normal",
        "hex": "7b22",
        "text": '{"',
        "name": None,
    }
    assert doc["tokens"][1]["kind"] == "special" and doc["tokens"][1]["name"] == "<|im_end|>"


def test_inspect_human_output():
    result = run("inspect", str(SYNTH / "sp-bytefallback"))
    assert result.exit_code == 0, result.output
    assert (
        "EOS/EOG: 2 </s>" in result.stdout
        and "trie:" in result.stdout
        and "duplicate" in result.stdout
    )


def test_verify_ok_json():
    result = run("verify", str(SYNTH / "json-bytelevel"), "--probe", str(PROBE), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["ok"] and doc["mismatches"] == [] and doc["implementation"].startswith("tokenizers")


def test_verify_reports_every_mismatch_and_exits_1(tmp_path):
    """A table whose bytes for `{"` and `":` were swapped is caught, with the ids involved."""
    good = load_tokenizer(SYNTH / "json-bytelevel")
    data = bytearray(good.data.tobytes())
    a, b = 256, 257  # '{"' and '":' (both two bytes)
    sa, sb = int(good.offsets[a]), int(good.offsets[b])
    data[sa : sa + 2], data[sb : sb + 2] = data[sb : sb + 2], data[sa : sa + 2]
    bad = TokenTable(
        kinds=good.kinds,
        lengths=np.diff(good.offsets).astype(np.uint32),
        data=np.frombuffer(bytes(data), dtype=np.uint8),
        special_tokens=good.special_tokens,
        added_tokens=good.added_tokens,
        eos_ids=good.eos_ids,
        metadata=good.metadata,
    )
    path = tmp_path / "bad.trt"
    bad.save(path)
    result = run(
        "verify",
        str(SYNTH / "json-bytelevel"),
        "--table",
        str(path),
        "--probe",
        str(PROBE),
        "--json",
    )
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert not doc["ok"] and len(doc["mismatches"]) >= 3
    assert all(m["token_id"] in (a, b) for m in doc["mismatches"])
    assert all(m["ids"] for m in doc["mismatches"])
    human = run(
        "verify", str(SYNTH / "json-bytelevel"), "--table", str(path), "--probe", str(PROBE)
    )
    assert human.exit_code == 1 and "MISMATCH" in human.stdout


def test_errors_map_to_exit_2_with_code():
    result = run("build", str(FIXTURES / "llama3"), "--json")
    assert result.exit_code == 2
    assert json.loads(result.stderr)["error"]["code"] == "E_TOKENIZER_AMBIGUOUS"
    result = run("inspect", str(FIXTURES / "gpt2.trt"), "--token", "999999")
    assert result.exit_code == 2 and "E_USAGE" in result.stderr


def test_help_texts():
    for sub in ("build", "inspect", "verify"):
        result = run(sub, "--help")
        assert result.exit_code == 0 and "--json" in result.stdout


def test_verify_notices_a_table_built_from_other_files(tmp_path):
    folder = tmp_path / "tok"
    folder.mkdir()
    source = (SYNTH / "json-bytelevel" / "tokenizer.json").read_text(encoding="utf-8")
    (folder / "tokenizer.json").write_text(source, encoding="utf-8")
    out = tmp_path / "t.trt"
    assert run("build", str(folder), "-o", str(out)).exit_code == 0
    (folder / "tokenizer.json").write_text(
        source.replace('"version": "1.0"', '"version": "1.0" '), encoding="utf-8"
    )
    result = run("verify", str(folder), "--table", str(out), "--probe", str(PROBE), "--json")
    assert result.exit_code == 1
    assert any("different tokenizer.json" in p for p in json.loads(result.stdout)["problems"])
