"""`trgc generate`, `trgc replay`, `trgc trace stats` through the CLI: exit codes and JSON shapes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

import trgc
from trgc.artifact.codec import save_artifact
from trgc.cli.app import app

GOLDEN = Path(__file__).resolve().parent / "golden"
ARTIFACT = GOLDEN / "json.trga"
TOKENIZER = GOLDEN / "json-bytelevel.trt"
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def copy_golden(tmp_path: Path, name: str) -> Path:
    for file in ("json.trga", "json-bytelevel.trt", f"{name}.jsonl", f"{name}.jsonl.logits.zst"):
        shutil.copy(GOLDEN / file, tmp_path / file)
    return tmp_path / f"{name}.jsonl"


def error_code(result) -> str:
    return json.loads(result.stderr.strip().splitlines()[-1])["error"]["code"]


def test_generate_json_document_and_replay(tmp_path):
    trace = tmp_path / "run.jsonl"
    result = invoke(
        "generate",
        ARTIFACT,
        "-t",
        TOKENIZER,
        "--logits",
        "random:3",
        "--temperature",
        "0.9",
        "--top-p",
        "0.9",
        "--seed",
        "3",
        "--trace",
        trace,
        "--json",
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc) == {
        "stop",
        "claim",
        "run",
        "completed",
        "accepting",
        "failure_code",
        "config",
        "steps",
        "tokens",
        "nan_logits",
        "intervention",
        "output_hex",
        "output_utf8",
        "output_sha256",
        "trace",
    }
    assert doc["output_utf8"].encode() == bytes.fromhex(doc["output_hex"])
    assert (
        trgc.check(trgc.load_artifact(ARTIFACT), bytes.fromhex(doc["output_hex"])).accepted
        == doc["completed"]
    )
    result = invoke("replay", trace, "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == {
        "identical": True,
        "steps": doc["steps"],
        "divergence": None,
        "informative": {"trgc_version": trgc.__version__},
    }
    result = invoke("replay", trace)
    assert result.exit_code == 0 and "identical" in result.stdout


def test_generate_streams_exactly_the_output(tmp_path):
    result = invoke(
        "generate",
        ARTIFACT,
        "-t",
        TOKENIZER,
        "--logits",
        "random:8",
        "--seed",
        "8",
        "--max-tokens",
        "40",
    )
    assert result.exit_code == 0
    doc = json.loads(
        invoke(
            "generate",
            ARTIFACT,
            "-t",
            TOKENIZER,
            "--logits",
            "random:8",
            "--seed",
            "8",
            "--max-tokens",
            "40",
            "--json",
        ).stdout
    )
    assert result.stdout == doc["output_utf8"]
    assert "stop:" in result.stderr


def test_replay_divergence_exit_1_names_step_and_field(tmp_path):
    trace = copy_golden(tmp_path, "sampled")
    lines = trace.read_text().splitlines()
    step = json.loads(lines[3])
    step["draw"] += 1
    lines[3] = json.dumps(step, sort_keys=True, separators=(",", ":"))
    trace.write_text("\n".join(lines) + "\n")
    result = invoke("replay", trace, "--json")
    assert result.exit_code == 1
    divergence = json.loads(result.stdout)["divergence"]
    assert (divergence["step"], divergence["field"], divergence["expected"], divergence["got"]) == (
        2,
        "draw",
        step["draw"],
        step["draw"] - 1,
    )
    result = invoke("replay", trace)
    assert result.exit_code == 1 and "step 2, field draw" in result.stdout


def test_replay_refuses_other_artifact(tmp_path):
    trace = copy_golden(tmp_path, "sampled")
    other = tmp_path / "csv.trga"
    save_artifact(
        trgc.compile_grammar(
            Path(__file__).resolve().parents[1].joinpath("grammars", "csv.trg").read_text()
        ),
        other,
    )
    result = invoke("replay", trace, "--artifact", other, "--json")
    assert result.exit_code == 2 and error_code(result) == "E_COMPOSITION_MISMATCH"


def test_replay_refuses_changed_sidecar_and_truncated_trace(tmp_path):
    trace = copy_golden(tmp_path, "greedy")
    sidecar = tmp_path / "greedy.jsonl.logits.zst"
    data = bytearray(sidecar.read_bytes())
    data[len(data) // 2] ^= 0x01
    sidecar.write_bytes(bytes(data))
    result = invoke("replay", trace, "--json")
    assert result.exit_code == 2 and error_code(result) == "E_SIDECAR_HASH"
    shutil.copy(GOLDEN / "greedy.jsonl.logits.zst", sidecar)
    lines = trace.read_text().splitlines(keepends=True)
    trace.write_text("".join(lines[:10]))
    result = invoke("replay", trace, "--json")
    assert result.exit_code == 2 and error_code(result) == "E_TRACE_TRUNCATED"
    assert "after step 8" in json.loads(result.stderr)["error"]["message"]


def test_replay_malformed_trace_exit_2(tmp_path):
    trace = copy_golden(tmp_path, "hot")
    text = trace.read_text().replace('"protocol":"trgc-trace-1"', '"protocol":"trgc-trace-9"')
    trace.write_text(text)
    result = invoke("replay", trace, "--json")
    assert result.exit_code == 2 and error_code(result) == "E_TRACE_FORMAT"


def test_generate_failure_stop_exit_2_with_code(tmp_path):
    trace = tmp_path / "inf.jsonl"
    result = invoke(
        "generate",
        ARTIFACT,
        "-t",
        TOKENIZER,
        "--logits",
        f"npy:{GOLDEN / 'steps.npy'}",
        "--seed",
        "5",
        "--temperature",
        "0.9",
        "--trace",
        trace,
        "--json",
    )
    assert result.exit_code == 2 and error_code(result) == "E_LOGIT_POSITIVE_INFINITY"
    assert result.stdout == ""  # one document: the error, carrying the result
    details = json.loads(result.stderr)["error"]["details"]
    assert details["result"]["stop"] == details["stop"] == "logit_positive_infinity"
    assert details["result"]["trace"] == str(trace)
    assert invoke("replay", trace).exit_code == 0
    result = invoke("generate", ARTIFACT, "-t", TOKENIZER, "--logits", "normal:3", "--json")
    assert result.exit_code == 2 and error_code(result) == "E_LOGITS_SOURCE"
    result = invoke("generate", ARTIFACT, "-t", TOKENIZER, "--top-p", "0", "--json")
    assert result.exit_code == 2 and error_code(result) == "E_SAMPLER_SETTINGS"
    np.save(tmp_path / "short.npy", np.zeros((1, trgc.load_tokenizer(TOKENIZER).vocab_size)))
    result = invoke(
        "generate",
        ARTIFACT,
        "-t",
        TOKENIZER,
        "--logits",
        f"npy:{tmp_path / 'short.npy'}",
        "--trace",
        tmp_path / "x.jsonl",
        "--json",
    )
    assert result.exit_code == 2 and error_code(result) == "E_LOGITS_EXHAUSTED"
    assert not (tmp_path / "x.jsonl").exists() and not (tmp_path / "x.jsonl.logits.zst").exists()


def test_trace_stats_json_has_no_text():
    result = invoke("trace", "stats", *sorted(GOLDEN.glob("*.jsonl")), "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert set(doc) == {
        "runs",
        "steps",
        "completed",
        "stop_reasons",
        "allowed_set_size",
        "mask_us",
        "sample_us",
        "chosen_rank",
        "cache_hit_rate",
        "cache_observed_steps",
        "nan_logits",
        "intervention",
    }
    assert doc["runs"] == 7 and doc["stop_reasons"]["cancelled"] == 1
    assert set(doc["allowed_set_size"]) == {"count", "min", "p50", "p90", "p99", "max", "mean"}
    assert doc["intervention"]["overall"] > 0
    flat = result.stdout
    for trace in GOLDEN.glob("*.jsonl"):
        t = json.loads(trace.read_text().splitlines()[-1])
        assert t["output_sha256"] not in flat and trace.name not in flat and "sha256" not in flat
        if t["partial_hex"]:
            assert t["partial_hex"] not in flat
    human = invoke("trace", "stats", *sorted(GOLDEN.glob("*.jsonl")))
    assert human.exit_code == 0 and "allowed_set_size" in human.stdout


def test_ctrl_c_writes_cancellation_record(tmp_path):
    grammar = tmp_path / "a.trga"
    save_artifact(trgc.compile_grammar('%trg 1\n%start s\ns ::= "a"+ ;\n'), grammar)
    table = trgc.load_tokenizer(TOKENIZER)
    trace = tmp_path / "c.jsonl"
    code = "import sys; from trgc.cli.app import main; sys.argv = ['trgc'] + sys.argv[1:]; main()"
    args = [
        "generate",
        grammar,
        "-t",
        TOKENIZER,
        "--logits",
        "random:1",
        "--max-tokens",
        "1000000",
        "--trace",
        trace,
    ]
    args += [x for eos in table.eos_ids for x in ("--ban", str(eos))]  # never stops by itself
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout.read(1) == b"a"
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err.decode()
    assert b"stop: cancelled: generation cancelled with partial raw output" in err
    # acknowledged once, when the signal arrives, before the trace is published and the stop line
    acknowledgement = b"cancelling: generation stops at its next step; the partial run is kept\n"
    assert err.count(acknowledgement) == 1
    assert err.index(acknowledgement) < err.index(b"stop: cancelled")
    header = json.loads(trace.read_text().splitlines()[0])
    assert f"artifact {header['artifact']['sha256']}, tokenizer ".encode() in err
    assert b"raw partial bytes 6161" in err
    assert set((b"a" + out).decode()) == {"a"}
    end = json.loads(trace.read_text().splitlines()[-1])
    assert end["stop"] == "cancelled" and end["completed"] is False and end["accepting"] is True
    assert bytes.fromhex(end["partial_hex"]) == b"a" * end["output_bytes"] and end["steps"] > 1
    assert invoke("replay", trace).exit_code == 0


def test_generate_refuses_a_missing_trace_directory_before_generating(tmp_path):
    trace = tmp_path / "absent" / "run.jsonl"
    result = invoke(
        "generate", str(ARTIFACT), "--tokenizer", str(TOKENIZER), "--trace", str(trace), "--json"
    )
    assert result.exit_code == 2 and result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "E_IO" and error["source"] == str(trace)
    assert not trace.parent.exists()
