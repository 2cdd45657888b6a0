"""A command given another of trgc's own file kinds names what the file is and the command
that reads it (`trgc.cli.filekinds`), instead of a misleading hint about its bytes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trgc.cli.app import app
from trgc.cli.filekinds import sniff

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
runner = CliRunner()


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("kinds")
    trm = tmp / "json.trm"
    made = runner.invoke(
        app,
        ["masks", "precompute", str(GOLDEN / "json.trga"), "-t", str(GOLDEN / "json-bytelevel.trt"), "-o", str(trm)],
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    for name in ("sampled.jsonl", "sampled.jsonl.logits.zst"):
        shutil.copy(GOLDEN / name, tmp / name)
    return {
        "artifact": ROOT / "artifacts" / "json.trga",
        "token_table": ROOT / "tokenizers" / "gpt2.trt",
        "mask_cache": trm,
        "trace": tmp / "sampled.jsonl",
        "logits_sidecar": tmp / "sampled.jsonl.logits.zst",
        "lock": ROOT / "artifacts" / "trgc.lock",
        "grammar": ROOT / "grammars" / "json.trg",
    }


def test_every_kind_is_recognised_and_other_files_are_not(files, tmp_path):
    assert {kind: sniff(path) for kind, path in files.items()} == {k: k for k in files}
    assert sniff(ROOT / "schemas" / "person.json") is None
    assert sniff(ROOT / "tokenizers" / "synthetic" / "json-bytelevel" / "tokenizer.json") is None
    assert sniff(tmp_path / "absent") is None
    (tmp_path / "frame.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)  # a broken frame
    assert sniff(tmp_path / "frame.zst") is None


@pytest.mark.parametrize(
    ("args", "kind", "says"),
    [
        (["compile", "{token_table}"], "token_table", "trgc tokenizer inspect {token_table}"),
        (["inspect", "{token_table}"], "token_table", "trgc tokenizer inspect {token_table}"),
        (["inspect", "{grammar}"], "grammar", "trgc compile {grammar}"),
        (["inspect", "{lock}"], "lock", "trgc verify --lock {lock}"),
        (["check", "{trace}", "-"], "trace", "trgc replay {trace}"),
        (["tokenizer", "inspect", "{artifact}"], "artifact", "trgc inspect {artifact}"),
        (["replay", "{artifact}"], "artifact", "trgc inspect {artifact}"),
        (["trace", "stats", "{logits_sidecar}"], "logits_sidecar", "trgc replay {trace}"),
        (["compile", "{trace}"], "trace", "trgc trace stats {trace}"),
        (["compile", "{mask_cache}"], "mask_cache", "written by trgc masks precompute"),
        (["verify", "--lock", "{grammar}"], "grammar", "trgc compile {grammar}"),
        (["tool", "run", "{trace}"], "trace", "trgc replay {trace}"),
        (["generate", "{token_table}", "-t", "{token_table}"], "token_table", "--tokenizer/-t"),
    ],
)
def test_the_wrong_kind_of_file_names_the_right_command(files, args, kind, says):
    names = {k: str(v) for k, v in files.items()}
    result = runner.invoke(app, [a.format(**names) for a in args] + ["--json"], input="")
    assert result.exit_code == 2, result.output
    error = json.loads(result.stderr)["error"]
    assert error["details"]["file_kind"] == kind
    assert error["hint"].startswith(f"{names[kind]} is ")
    assert says.format(**names) in error["hint"]
    assert "save the grammar as UTF-8" not in error["hint"]


def test_a_broken_file_of_the_right_kind_keeps_its_own_diagnosis(tmp_path):
    grammar = tmp_path / "bad.trg"
    grammar.write_bytes(b"%trg 1\n%start s\ns ::= \xff ;\n")
    result = runner.invoke(app, ["compile", str(grammar), "--json"])
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "E_INVALID_UTF8" and "file_kind" not in error.get("details", {})
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"type":"header","protocol":"trgc-trace-1"}\n')
    result = runner.invoke(app, ["replay", str(trace), "--json"])
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "E_TRACE_FORMAT" and "file_kind" not in error.get("details", {})
