"""Golden traces (tests/golden/): replayed bit for bit, regenerated identically, env-independent."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from trgc.decode.replay import replay
from trgc.decode.session import open_inputs, replay_file
from trgc.decode.trace import MEASURED_HEADER_FIELDS, MEASURED_STEP_FIELDS, read_trace

GOLDEN = Path(__file__).resolve().parent / "golden"
_spec = importlib.util.spec_from_file_location("make_golden", GOLDEN / "make_golden.py")
make_golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_golden)
NAMES = sorted(make_golden.CASES)


def test_every_case_has_a_committed_trace():
    assert sorted(p.name.removesuffix(".jsonl") for p in GOLDEN.glob("*.jsonl")) == NAMES
    stops = {read_trace(GOLDEN / f"{n}.jsonl").end["stop"] for n in NAMES}
    assert {"eos", "max_tokens", "cancelled", "logit_positive_infinity"} <= stops


@pytest.mark.parametrize("name", NAMES)
def test_golden_trace_replays_identically(name):
    report = replay_file(GOLDEN / f"{name}.jsonl")
    assert report.identical, report.divergence
    assert report.steps == read_trace(GOLDEN / f"{name}.jsonl").end["steps"]


def _payload(path: Path) -> bytes:
    return zstandard.ZstdDecompressor().decompressobj().decompress(path.read_bytes())


def _strip(trace) -> tuple:
    """What must regenerate identically: everything but paths, measurements (timings, step
    timings, cache hits), the sidecar's compressed bytes and the tools' implementation hashes
    (which move with every edit of a tool's source; their names stay)."""
    header = json.loads(json.dumps(trace.header))
    header["artifact"]["path"] = header["tokenizer"]["path"] = None
    for name in MEASURED_HEADER_FIELDS:
        del header[name]
    for tool in header["composition"]["tools"]:
        tool["implementation_hash"] = None
    steps = [{k: v for k, v in s.items() if k not in MEASURED_STEP_FIELDS} for s in trace.steps]
    end = {k: v for k, v in trace.end.items() if k != "sidecar_sha256"}
    return header, steps, end


@pytest.mark.parametrize("name", NAMES)
def test_golden_case_regenerates_identically(tmp_path, name):
    make_golden.run_case(name, tmp_path)
    fresh, golden = read_trace(tmp_path / f"{name}.jsonl"), read_trace(GOLDEN / f"{name}.jsonl")
    assert _strip(fresh) == _strip(golden)
    assert _payload(tmp_path / f"{name}.jsonl.logits.zst") == _payload(
        GOLDEN / f"{name}.jsonl.logits.zst"
    )


def test_nan_and_cancellation_goldens_record_what_they_should():
    nan_inf = read_trace(GOLDEN / "nan-inf.jsonl")
    assert nan_inf.end["nan"] > 0 and nan_inf.end["failure_code"] == "E_LOGIT_POSITIVE_INFINITY"
    cancelled = read_trace(GOLDEN / "cancelled.jsonl")
    assert cancelled.end["completed"] is False and cancelled.end["partial_hex"] is not None
    assert cancelled.end["output_bytes"] == len(bytes.fromhex(cancelled.end["partial_hex"]))


def test_replay_is_independent_of_environment():
    """Replay in subprocesses with other hash seeds, thread counts and the JIT off: same document."""
    code = "import sys; from trgc.cli.app import main; sys.argv = ['trgc'] + sys.argv[1:]; main()"
    documents = []
    for extra in (
        {"PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"},
        {
            "PYTHONHASHSEED": "12345",
            "OMP_NUM_THREADS": "2",
            "NUMBA_NUM_THREADS": "2",
            "NUMBA_DISABLE_JIT": "1",
        },
    ):
        env = {**os.environ, **extra}
        for name in ("sampled", "filters", "nan-inf"):
            out = subprocess.run(
                [sys.executable, "-c", code, "replay", str(GOLDEN / f"{name}.jsonl"), "--json"],
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
            )
            assert out.returncode == 0, out.stderr
            documents.append((name, out.stdout))
    assert documents[:3] == documents[3:]
    assert all(json.loads(doc)["identical"] for _, doc in documents)


def test_replay_with_explicit_inputs_and_fresh_matcher():
    inputs = open_inputs(GOLDEN / "json.trga", GOLDEN / "json-bytelevel.trt")
    trace = read_trace(GOLDEN / "sampled.jsonl")
    report = replay(
        trace,
        inputs.matcher(),
        inputs.tokenizer,
        artifact_sha256=inputs.artifact.sha256,
        tokenizer_sha256=inputs.tokenizer.sha256,
        compiler=inputs.identity().compiler,
    )
    assert report.identical


@pytest.mark.parametrize("name", NAMES)
def test_golden_output_belongs_to_the_language(name):
    """Completed outputs are members; every other output is a viable prefix, never repaired."""
    import hashlib

    import trgc

    inputs = open_inputs(GOLDEN / "json.trga", GOLDEN / "json-bytelevel.trt")
    trace = read_trace(GOLDEN / f"{name}.jsonl")
    eos = set(inputs.tokenizer.eos_ids)
    output = b"".join(
        inputs.tokenizer.token_bytes(s["token"])
        for s in trace.steps
        if s["token"] is not None and s["token"] not in eos
    )
    assert hashlib.sha256(output).hexdigest() == trace.end["output_sha256"]
    assert trgc.check(inputs.artifact, output, prefix=True).accepted
    assert trgc.check(inputs.artifact, output).accepted == trace.end["accepting"]
    if trace.end["completed"]:
        assert trace.end["accepting"]
