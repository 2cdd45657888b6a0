"""Options and named files that still ended in E_INTERNAL (exit 70) when issue 17's cases were
re-run on the merged main, each now a stable code with exit 2 or 3:

* `--limit states=N` (or a `--limits-file` value) of 2^63 or more compiled into an artifact
  its own validator refuses ("encoded artifact fails its own validation");
* `--logits npy:/dev/zero` read the device up to the 4 GiB logits cap before looking at it
  (MemoryError, exit 70, under a smaller address space), and np.load took the zeros for a
  pickle; a stream with a real .npy header followed by endless zeros ran out of memory.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import trgc
from bounded import MiB, run_trgc
from trgc.atomic import read_bytes
from trgc.cli.app import app
from trgc.limits import MAX_LIMIT, file_cap

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
runner = CliRunner()
GRAMMAR = '%trg 1\n%start a\na ::= "x" [0-9]{1,3} ;\n'


def json_error(result, status: int) -> dict:
    assert "Traceback" not in result.output + result.stderr
    assert result.exit_code == status, result.output + result.stderr
    return json.loads(result.stderr)["error"]


@pytest.fixture
def grammar(tmp_path) -> Path:
    path = tmp_path / "g.trg"
    path.write_text(GRAMMAR, encoding="utf-8")
    return path


@pytest.mark.parametrize("value", [MAX_LIMIT + 1, 10**30])
def test_a_limit_an_artifact_cannot_record_is_a_usage_error(tmp_path, grammar, value):
    out = tmp_path / "g.trga"
    result = runner.invoke(app, ["compile", str(grammar), "--limit", f"states={value}", "--json"])
    error = json_error(result, 2)
    assert error["code"] == "E_USAGE" and "2^63 - 1" in error["message"]
    limits = tmp_path / "limits.toml"
    limits.write_text(f"[limits]\nstates = {value}\n", encoding="utf-8")
    result = runner.invoke(app, ["compile", str(grammar), "--limits-file", str(limits), "--json"])
    assert json_error(result, 2)["code"] == "E_USAGE"
    assert not out.exists()


def test_the_largest_limit_compiles_and_loads(tmp_path, grammar):
    out = tmp_path / "g.trga"
    args = ["compile", str(grammar), "--limit", f"states={MAX_LIMIT}", "-o", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    assert trgc.load_artifact(out).metadata["limits"]["states"] == MAX_LIMIT


def _generate(tmp_path: Path, logits: str, stdin=b"") -> object:
    args = ["generate", str(GOLDEN / "json.trga"), "-t", str(GOLDEN / "json-bytelevel.trt")]
    return run_trgc(
        [*args, "--logits", logits, "--max-tokens", "3", "--json"],
        cpu_seconds=60,
        memory=384 * MiB,
        stdin=stdin,
        cwd=tmp_path,
    )


def test_npy_logits_from_a_device_are_refused_after_a_few_bytes(tmp_path):
    outcome = _generate(tmp_path, "npy:/dev/zero")
    assert outcome.returncode == 2, outcome.stderr.decode()
    error = json.loads(outcome.stderr)["error"]
    assert error["code"] == "E_LOGITS_SOURCE" and "magic" in error["message"]
    assert b"Traceback" not in outcome.stderr


def test_an_endless_npy_stream_is_a_limit_not_an_internal_error(tmp_path):
    header = tmp_path / "head.npy"
    np.save(header, np.zeros((1, 4), dtype=np.float32))
    with subprocess.Popen(
        ["sh", "-c", f"cat {header} /dev/zero"], stdout=subprocess.PIPE
    ) as producer:
        outcome = _generate(tmp_path, "npy:/dev/stdin", stdin=producer.stdout.fileno())
        producer.kill()
    assert outcome.returncode == 3, outcome.stderr.decode()
    error = json.loads(outcome.stderr)["error"]
    assert error["code"] == "E_LIMIT_INPUT_BYTES" and "memory" in error["message"]


def test_npy_logits_through_a_pipe_still_work(tmp_path):
    steps = (GOLDEN / "steps.npy").read_bytes()
    outcome = _generate(tmp_path, "npy:/dev/stdin", stdin=steps)
    assert outcome.returncode in (0, 4), outcome.stderr.decode()  # 4: stopped at --max-tokens
    assert json.loads(outcome.stdout)["steps"] == 3


def test_read_bytes_with_a_magic_returns_only_the_refusing_prefix():
    data = read_bytes("/dev/zero", file_cap("logits"), magic=b"\x93NUMPY")
    assert 0 < len(data) <= 1 << 20 and not data.strip(b"\0")


@pytest.mark.parametrize("trace", [False, True])
def test_max_tokens_a_trace_cannot_record_is_refused_before_generating(tmp_path, trace):
    """`--max-tokens 2**63` ran without --trace and, with it, ended in E_TRACE_FORMAT about a
    header field the user never wrote; now both are the sampler settings' code, up front."""
    args = ["generate", str(GOLDEN / "json.trga"), "-t", str(GOLDEN / "json-bytelevel.trt")]
    args += ["--max-tokens", str(2**63), "--json"]
    if trace:
        args += ["--trace", str(tmp_path / "run.jsonl")]
    error = json_error(runner.invoke(app, args), 2)
    assert error["code"] == "E_SAMPLER_SETTINGS" and "2**63" in error["message"]
    assert list(tmp_path.iterdir()) == []
