"""vLLM end to end (slow: two engine loads of SmolLM2 on the CPU, a few minutes on 2 cores).

vLLM lives in its own virtualenv (`make .venv-vllm/.installed`, which `make test` builds): it
pins older xgrammar, llguidance, numba and transformers than `.venv` has. The vLLM part runs
there through `tests/vllm_runner.py`; everything that judges its output runs here.

One batch of ten concurrent greedy requests: three JSON Schemas (two prompts each), a trg-1
grammar (two prompts) and two unconstrained prompts. Every constrained output must end with EOS,
be in its constraint's language (`trgc.check`) and, for schemas, validate with jsonschema; its
audit record must check against the output token ids; the unconstrained outputs must equal a
second run of the same prompts on an engine without the processor. A constraint that does not
compile must be refused by vLLM's request validation.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import trgc

pytestmark = pytest.mark.slow

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")
jsonschema = pytest.importorskip("jsonschema")

from trgc.integrations import smollm2  # noqa: E402
from trgc.integrations.audit import check_audit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
RUNNER = ROOT / "tests" / "vllm_runner.py"
SPEC = json.loads((ROOT / "tests" / "data" / "vllm" / "requests.json").read_text())
MAX_TOKENS = 160  # every constraint's language is bounded well below this
TIMEOUT = 1500


def _vllm_python() -> Path:
    if not VLLM_PYTHON.is_file():
        if os.environ.get("CI"):
            pytest.fail("the vLLM virtualenv is missing: make .venv-vllm/.installed")
        pytest.skip("the vLLM virtualenv is missing: make .venv-vllm/.installed")
    return VLLM_PYTHON


def run(job: dict, tmp: Path, name: str, cache: Path) -> dict:
    job = {**job, "result": str(tmp / f"{name}.json")}
    env = {**os.environ, "TRGC_CACHE_DIR": str(cache), "VLLM_CPU_KVCACHE_SPACE": "1"}
    proc = subprocess.run(
        [str(_vllm_python()), str(RUNNER)],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(Path(job["result"]).read_text())


def constraint(request: dict, audit: Path) -> dict | None:
    if "schema" in request:
        return {"schema": SPEC["schemas"][request["schema"]], "audit": str(audit)}
    if request.get("grammar"):
        return {"grammar": SPEC["grammar"], "audit": str(audit)}
    return None


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    _vllm_python()
    model = smollm2.hf_model_dir()  # the user cache: converted once per machine
    tmp = tmp_path_factory.mktemp("vllm")
    cache = tmp / "cache"  # artifacts, tables and nothing else of the user's
    requests = [
        {
            "prompt": r["prompt"],
            "max_tokens": MAX_TOKENS,
            "trgc": constraint(r, tmp / f"audit-{k}.jsonl"),
        }
        for k, r in enumerate(SPEC["requests"])
    ]
    invalid = [
        {"schema": {"type": "object", "frobnicate": 1}},
        {"grammar": "%trg 1\n%start s\ns ::= undefined ;\n"},
        {"schema": {}, "grammar": "x"},
    ]
    constrained = run(
        {"model": str(model), "processor": True, "requests": requests, "invalid": invalid},
        tmp,
        "constrained",
        cache,
    )
    plain = [r for r in requests if r["trgc"] is None]
    baseline = run(
        {"model": str(model), "processor": False, "requests": plain}, tmp, "plain", cache
    )
    return requests, constrained, baseline, cache


def test_constrained_outputs_are_complete_and_valid(runs):
    requests, result, _, _ = runs
    outputs = result["outputs"]
    assert len(outputs) == len(requests) >= 8
    for spec, request, out in zip(SPEC["requests"], requests, outputs, strict=True):
        if request["trgc"] is None:
            continue
        assert out["finish_reason"] == "stop", (request["prompt"], out)
        assert out["token_ids"][-1] == 2  # <|im_end|>, the model's EOS
        if "schema" in spec:
            schema = SPEC["schemas"][spec["schema"]]
            jsonschema.validate(json.loads(out["text"]), schema)
            artifact = trgc.compile_schema(schema)
        else:
            artifact = trgc.compile_grammar(SPEC["grammar"])
        assert trgc.check(artifact, out["text"].encode("utf-8")).accepted, out["text"]


def test_audit_records_check_against_the_outputs(runs):
    requests, result, _, cache = runs
    os.environ["TRGC_CACHE_DIR"] = str(cache)
    try:
        for request, out in zip(requests, result["outputs"], strict=True):
            if request["trgc"] is None:
                continue
            report = check_audit(request["trgc"]["audit"], tokens=out["token_ids"])
            assert report.ok and report.steps == len(out["token_ids"]), report.to_dict()
    finally:
        del os.environ["TRGC_CACHE_DIR"]


def test_unconstrained_requests_equal_a_run_without_the_processor(runs):
    requests, result, baseline, _ = runs
    ours = [out for r, out in zip(requests, result["outputs"], strict=True) if r["trgc"] is None]
    assert [o["token_ids"] for o in ours] == [o["token_ids"] for o in baseline["outputs"]]
    assert all(o["token_ids"] for o in ours)


def test_constraints_that_do_not_compile_are_refused(runs):
    rejected = runs[1]["rejected"]
    assert len(rejected) == 3 and all(rejected), rejected
    assert "E_UNSUPPORTED_KEYWORD" in rejected[0]
    assert "trgc: E_" in rejected[1]
    assert "E_VLLM_REQUEST" in rejected[2]
