"""Every command's `--json` document has exactly the top-level keys docs/cli-json.md lists,
and every failure is one JSON error document on stderr with nothing on stdout."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trgc.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def documented_keys() -> dict[str, list[str]]:
    table: dict[str, list[str]] = {}
    for line in (ROOT / "docs" / "cli-json.md").read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `([a-z ]+)` \| [^|]+ \| (.+) \|$", line)
        if match:
            table[match.group(1)] = re.findall(r"`([a-z_0-9]+)`", match.group(2))
    return table


def leaf_commands() -> set[str]:
    import typer.main

    names: set[str] = set()
    stack = [((), typer.main.get_command(app))]
    while stack:
        path, command = stack.pop()
        if hasattr(command, "commands"):
            stack.extend(((*path, n), c) for n, c in command.commands.items())
        else:
            names.add(" ".join(path))
    return names


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """Inputs for every command: a compiled grammar, a synthetic token table, a trace, a lock,
    and one-case stand-ins for the JSON Schema Test Suite and JSONSchemaBench layouts (the
    real corpora are exercised by test_schema_conformance / test_schema_coverage)."""
    tmp = tmp_path_factory.mktemp("cli-json")
    suite = tmp / "jsts" / "tests" / "draft2020-12"
    suite.mkdir(parents=True)
    case = {"description": "integers", "schema": {"type": "integer"},
            "tests": [{"description": "one", "data": 1, "valid": True}]}  # fmt: skip
    (suite / "type.json").write_text(json.dumps([case]), encoding="utf-8")
    (tmp / "jsts-baseline.json").write_text('{"cases": {}}', encoding="utf-8")
    (tmp / "bench" / "Tiny").mkdir(parents=True)
    (tmp / "bench" / "Tiny" / "a.json").write_text('{"type": "boolean"}', encoding="utf-8")
    shutil.copy(ROOT / "grammars" / "json.trg", tmp / "json.trg")
    assert (
        runner.invoke(
            app, ["compile", str(tmp / "json.trg"), "-o", str(tmp / "json.trga")]
        ).exit_code
        == 0
    )
    syn = ROOT / "tokenizers" / "synthetic" / "json-bytelevel"
    assert (
        runner.invoke(app, ["tokenizer", "build", str(syn), "-o", str(tmp / "syn.trt")]).exit_code
        == 0
    )
    generated = runner.invoke(
        app,
        [
            "generate",
            str(tmp / "json.trga"),
            "--tokenizer",
            str(tmp / "syn.trt"),
            "--logits",
            "random:3",
            "--max-tokens",
            "20",
            "--trace",
            str(tmp / "run.jsonl"),
        ],
    )
    assert generated.exit_code == 0, generated.output
    assert (
        runner.invoke(app, ["lock", str(tmp / "json.trg"), "--lock", str(tmp / "x.lock")]).exit_code
        == 0
    )
    write_audit(tmp)
    return tmp


def write_audit(tmp: Path) -> None:
    """An audit record of the generated trace's tokens, as the vLLM processor writes them."""
    import trgc
    from trgc.decode.trace import read_trace
    from trgc.integrations.audit import AuditWriter, mask_hash

    art = trgc.load_artifact(tmp / "json.trga")
    table = trgc.load_tokenizer(tmp / "syn.trt")
    steps = [s["token"] for s in read_trace(tmp / "run.jsonl").steps if s.get("token") is not None]
    writer = AuditWriter(
        tmp / "audit.jsonl",
        artifact=art.sha256,
        tokenizer=str(table.sha256),
        constraint="grammar",
        engine="test",
    )
    matcher = trgc.Matcher(art, table)
    for token in steps:
        writer.step(token, mask_hash(matcher.allowed_tokens_packed()), matcher.is_allowed(token))
        matcher.advance(token)
    writer.close(accepting=matcher.is_accepting(), terminated=matcher.is_terminated())


def successes(work: Path) -> dict[str, tuple[list[str], int]]:
    tools = ROOT / "tests" / "data" / "tools"
    cache = str(work / "disk-cache")
    audit = ["--artifact", str(work / "json.trga"), "--tokenizer", str(work / "syn.trt")]
    return {
        "audit": (["audit", str(work / "audit.jsonl"), *audit], 0),
        "cache clear": (["cache", "clear", "--cache-dir", cache], 0),
        "cache info": (["cache", "info", "--cache-dir", cache], 0),
        "cache prune": (["cache", "prune", "--cache-dir", cache], 0),
        "calc": (["calc", "1/3"], 0),
        "check": (["check", str(work / "json.trga"), str(work / "json.trg")], 1),
        "compile": (["compile", str(work / "json.trg")], 0),
        "conformance jsts": (
            [
                "conformance",
                "jsts",
                str(work / "jsts"),
                "--baseline",
                str(work / "jsts-baseline.json"),
                "--update",
            ],
            0,
        ),
        "coverage": (["coverage", str(work / "bench"), "--per-subset", "1"], 0),
        "diff": (["diff", str(work / "json.trga"), str(ROOT / "artifacts" / "arith.trga")], 1),
        "evidence check": (
            [
                "evidence",
                "check",
                str(tools / "extraction_ok.json"),
                "--source",
                f"doc1={tools / 'notes.txt'}",
            ],
            0,
        ),
        "generate": (
            [
                "generate",
                str(work / "json.trga"),
                "--tokenizer",
                str(work / "syn.trt"),
                "--logits",
                "random:4",
                "--max-tokens",
                "8",
            ],
            0,
        ),
        "inspect": (["inspect", str(work / "json.trga")], 0),
        "man": (["man", "compile"], 0),
        "keywords": (["keywords"], 0),
        "lock": (["lock", str(work / "json.trg"), "--lock", str(work / "y.lock")], 0),
        "masks precompute": (
            [
                "masks",
                "precompute",
                str(work / "json.trga"),
                "--tokenizer",
                str(work / "syn.trt"),
                "-o",
                str(work / "j.trm"),
            ],
            0,
        ),
        "replay": (["replay", str(work / "run.jsonl")], 0),
        "tokenizer build": (
            [
                "tokenizer",
                "build",
                str(ROOT / "tokenizers" / "synthetic" / "json-bytelevel"),
                "-o",
                str(work / "syn2.trt"),
            ],
            0,
        ),
        "tokenizer inspect": (["tokenizer", "inspect", str(work / "syn.trt")], 0),
        "tokenizer verify": (
            [
                "tokenizer",
                "verify",
                str(ROOT / "tokenizers" / "synthetic" / "json-bytelevel"),
                "--probe",
                str(ROOT / "src" / "trgc" / "tokenizer" / "probe.txt"),
            ],
            0,
        ),
        "tool list": (["tool", "list"], 0),
        "tool run": (["tool", "run", str(tools / "calc_request.json")], 0),
        "tool template": (["tool", "template", "calculator.evaluate@1.0.0"], 0),
        "toolcall": (
            [
                "toolcall",
                str(ROOT / "tests" / "data" / "toolcall" / "tools.json"),
                "--family",
                "qwen",
            ],
            0,
        ),
        "trace stats": (["trace", "stats", str(work / "run.jsonl")], 0),
        "verify": (["verify", "--lock", str(work / "x.lock")], 0),
    }


# `quality` needs a model; its --json document is checked in tests/test_integrations_models.py.
NEEDS_A_MODEL = {"quality"}


def test_the_table_covers_every_command():
    assert set(documented_keys()) == leaf_commands()


def test_every_command_prints_the_documented_document(work):
    table = documented_keys()
    cases = successes(work)
    assert set(cases) | NEEDS_A_MODEL == leaf_commands()
    for name, (args, status) in sorted(cases.items()):
        result = runner.invoke(app, [*args, "--json"])
        assert result.exit_code == status, (name, result.output)
        document = json.loads(result.stdout)
        assert sorted(document) == sorted(table[name]), name


def failures(work: Path) -> dict[str, list[str]]:
    missing = str(work / "absent")
    not_a_directory = str(work / "json.trg")
    return {
        "cache clear": ["cache", "clear", "--cache-dir", not_a_directory],
        "cache info": ["cache", "info", "--cache-dir", not_a_directory],
        "cache prune": ["cache", "prune", "--cache-dir", not_a_directory],
        "audit": ["audit", missing],
        "check": ["check", missing, "-"],
        "compile": ["compile", missing],
        "conformance jsts": ["conformance", "jsts", missing],
        "coverage": ["coverage", missing],
        "diff": ["diff", missing, missing],
        "evidence check": ["evidence", "check", missing],
        "generate": ["generate", missing, "--tokenizer", str(work / "syn.trt")],
        "inspect": ["inspect", str(work / "json.trg")],
        "man": ["man", "no-such-command"],
        "lock": ["lock", missing + ".trg", "--lock", str(work / "z.lock")],
        "masks precompute": [
            "masks",
            "precompute",
            missing,
            "--tokenizer",
            str(work / "syn.trt"),
            "-o",
            str(work / "k.trm"),
        ],
        "replay": ["replay", missing],
        "tokenizer build": ["tokenizer", "build", missing, "-o", str(work / "t.trt")],
        "tokenizer inspect": ["tokenizer", "inspect", str(work / "json.trg")],
        "tokenizer verify": ["tokenizer", "verify", missing],
        "tool run": ["tool", "run", str(work / "json.trg")],
        "tool template": ["tool", "template", "shell.exec@1.0.0"],
        "toolcall": ["toolcall", str(work / "json.trg"), "--family", "qwen"],
        "trace stats": ["trace", "stats", missing],
        "verify": ["verify", "--lock", str(work / "json.trg")],
    }


def test_failures_are_one_error_document_on_stderr(work):
    for name, args in sorted(failures(work).items()):
        result = runner.invoke(app, [*args, "--json"])
        assert result.exit_code == 2, (name, result.output)
        assert result.stdout == "", name
        error = json.loads(result.stderr)["error"]
        assert error["code"].startswith("E_") and error["message"], name
        assert "Traceback" not in result.stderr


def test_calc_failure_is_its_error_record_on_stdout():
    result = runner.invoke(app, ["calc", "1/0", "--json"])
    assert result.exit_code == 2
    record = json.loads(result.stdout)
    assert record["status"] == "error" and record["protocol"] == "tinycalc-1"
