"""Traces are read strictly and identically by `replay` and `trace stats`: canonical lines only,
values in range, provenance bound into replay or reported as informative (issue 17, items 5, 6).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trgc.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
runner = CliRunner()


@pytest.fixture
def trace(tmp_path) -> Path:
    """A copy of the golden `sampled` run (random:SEED logits) with its inputs beside it."""
    for name in ("sampled.jsonl", "sampled.jsonl.logits.zst", "json.trga", "json-bytelevel.trt"):
        shutil.copy(GOLDEN / name, tmp_path / name)
    return tmp_path / "sampled.jsonl"


def run(*args: object):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def refused(path: Path) -> list[dict]:
    """Both readers refuse the file with the same error document, exit 2, no traceback."""
    errors = []
    for command in (["replay", path, "--json"], ["trace", "stats", path, "--json"]):
        result = run(*command)
        assert "Traceback" not in result.stderr
        assert result.exit_code == 2, (command, result.stdout, result.stderr)
        errors.append(json.loads(result.stderr)["error"])
    assert errors[0] == errors[1]
    return errors


def rewrite_line(path: Path, index: int, text: str) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[index] = text.encode("utf-8")
    path.write_bytes(b"\n".join(lines))


def edit(path: Path, index: int, change) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    record = json.loads(lines[index])
    change(record)
    lines[index] = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    path.write_text("\n".join(lines), encoding="utf-8")


def test_golden_trace_replays_and_is_accepted_by_both(trace):
    assert run("replay", trace).exit_code == 0
    assert run("trace", "stats", trace).exit_code == 0


@pytest.mark.parametrize(
    "mangle",
    [
        lambda line: line + "\r",  # CRLF line end
        lambda line: line.replace(",", ", ", 1),  # whitespace
        lambda line: line.replace("{", '{"type":"step",', 1),  # a repeated key
        lambda line: "{" + ",".join(reversed(line[1:-1].split(","))) + "}",  # unsorted keys
        lambda line: line.replace('"step"', '"\\u0073tep"', 1),  # an unneeded escape
        lambda line: " " + line,
    ],
)
def test_non_canonical_lines_are_refused(trace, mangle):
    line = trace.read_text(encoding="utf-8").split("\n")[2]
    rewrite_line(trace, 2, mangle(line))
    [error, _] = refused(trace)
    assert error["code"] == "E_TRACE_FORMAT" and error["line"] == 3


def test_a_blank_line_is_refused(trace):
    lines = trace.read_text(encoding="utf-8").split("\n")
    trace.write_text("\n".join([*lines[:2], "", *lines[2:]]), encoding="utf-8")
    assert refused(trace)[0]["code"] == "E_TRACE_FORMAT"


def test_deeply_nested_line_is_a_format_error_not_a_recursion_error(trace):
    rewrite_line(trace, 1, "[" * 200_000 + "]" * 200_000)
    [error, _] = refused(trace)
    assert error["code"] == "E_TRACE_FORMAT" and error["line"] == 2


@pytest.mark.parametrize(
    "change",
    [
        lambda h: h.update(max_tokens=10**30),
        lambda h: h.update(max_tokens=0),
        lambda h: h["tokenizer"].update(vocab_size=10**30),
        lambda h: h["tokenizer"].update(eos_ids=[10**30]),
        lambda h: h["tokenizer"].update(eos_ids=[3, 1]),
        lambda h: h["tokenizer"].update(eos_ids=[h["tokenizer"]["vocab_size"]]),
        lambda h: h["rng"].update(seed=2**64),
        lambda h: h["rng"].update(algorithm="mt19937"),
        lambda h: h["sampler"].update(top_k=10**30),
        lambda h: h["sampler"].update(banned_ids=[10**30]),
        lambda h: h["sampler"].update(banned_ids=[[1]]),
        lambda h: h["sampler"].update(temperature=-1),
        lambda h: h["sidecar"].update(format="trgc-logits-9"),
        lambda h: h["artifact"].update(sha256="b652c4"),
        lambda h: h.update(logits="random:18446744073709551616"),
        lambda h: h.update(logits="random:seven"),
        lambda h: h.update(logits=""),
        lambda h: h.update(trgc_version=7),
        lambda h: h.update(artifact=[]),
    ],
)
def test_header_values_out_of_range_are_refused_by_both_readers(trace, change):
    edit(trace, 0, change)
    [error, _] = refused(trace)
    assert error["code"] == "E_TRACE_FORMAT" and error["line"] == 1
    assert len(error["message"]) < 400


@pytest.mark.parametrize(
    "change",
    [
        lambda e: e.update(stop="exploded"),
        lambda e: e.update(completed=not e["completed"]),
        lambda e: e.update(failure_code="E_CONSTRAINT_EMPTY_SET"),
        lambda e: e.update(partial_hex="00"),
        lambda e: e.update(steps=e["steps"] + 1),
        lambda e: e.update(rng_draws=2**63),
    ],
)
def test_end_line_that_contradicts_itself_is_refused_by_both_readers(trace, change):
    index = len(trace.read_text(encoding="utf-8").split("\n")) - 2
    edit(trace, index, change)
    assert refused(trace)[0]["code"] == "E_TRACE_FORMAT"


def test_step_stop_reason_must_be_known(trace):
    edit(trace, 1, lambda s: s.update(stop="bored"))
    assert refused(trace)[0]["code"] == "E_TRACE_FORMAT"


def test_edited_compiler_is_a_composition_mismatch(trace):
    edit(trace, 0, lambda h: h.update(compiler=h["compiler"] + "-edited"))
    result = run("replay", trace, "--json")
    assert result.exit_code == 2
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "E_COMPOSITION_MISMATCH" and error["details"]["what"] == "compiler"


def test_edited_random_logits_seed_diverges(trace):
    header = json.loads(trace.read_text(encoding="utf-8").split("\n")[0])
    seed = int(header["logits"].removeprefix("random:"))
    edit(trace, 0, lambda h: h.update(logits=f"random:{seed + 1}"))
    result = run("replay", trace, "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["divergence"]["step"] == 0 and report["divergence"]["field"] == "logits"


def test_informative_provenance_is_shown_not_compared(trace):
    edit(trace, 0, lambda h: h.update(trgc_version="9.9.9"))
    result = run("replay", trace, "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["informative"] == {"trgc_version": "9.9.9"}
    result = run("replay", trace)
    assert result.exit_code == 0 and "trgc_version 9.9.9" in result.stderr
