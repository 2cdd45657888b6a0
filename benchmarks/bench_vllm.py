"""vLLM output tokens per second: unconstrained, trgc, and vLLM's own xgrammar and guidance.

The same batch in every arm: the six schema prompts of tests/data/vllm/requests.json (three
JSON Schemas), repeated `--repeat` times, decoded greedily with SmolLM2-135M-Instruct
(`trgc.integrations.smollm2.hf_model_dir()`), `max_tokens` 160. Arms:

  * `unconstrained`: no constraint, no processor;
  * `trgc`: `TrgcLogitsProcessor`, each request's schema in `extra_args["trgc"]`;
  * `xgrammar`, `guidance`: `StructuredOutputsParams(json=schema)` with the engine's backend set
    to that library, compact JSON (`disable_any_whitespace`, as trgc's default separators).

vLLM runs one structured-output backend per engine, so every arm is its own engine, started in a
subprocess of this script (run it with the vLLM virtualenv's python). Each arm decodes the batch
once to warm up (grammar compilation, numba caches, the mask cache all count as warm-up) and
then `--rounds` times; the best round's output tokens / wall seconds is reported, with the
overhead against `unconstrained`. Engine load times are printed but not part of any rate.

Run: .venv-vllm/bin/python benchmarks/bench_vllm.py [--repeat 2] [--rounds 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = json.loads((ROOT / "tests/data/vllm/requests.json").read_text())
ARMS = ("unconstrained", "trgc", "xgrammar", "guidance")
MAX_TOKENS = 160


def arm_main(arm: str, model: str, repeat: int, rounds: int, out: Path) -> None:
    """One arm in this process: load the engine, warm up, time `rounds` decodes."""
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ["HF_HUB_OFFLINE"] = "1"
    from vllm import LLM, SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    kwargs: dict = {}
    if arm == "trgc":
        from trgc.integrations.vllm import TrgcLogitsProcessor

        kwargs["logits_processors"] = [TrgcLogitsProcessor]
    elif arm in ("xgrammar", "guidance"):
        kwargs["structured_outputs_config"] = {"backend": arm, "disable_any_whitespace": True}
    start = time.perf_counter()
    llm = LLM(model=model, dtype="float32", max_model_len=512, enforce_eager=True, seed=0, **kwargs)
    load = time.perf_counter() - start
    tokenizer = llm.get_tokenizer()
    prompts, params = [], []
    for request in [r for r in SPEC["requests"] if "schema" in r] * repeat:
        schema = SPEC["schemas"][request["schema"]]
        messages = [{"role": "user", "content": request["prompt"]}]
        prompts.append(
            tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        )
        extra = {"max_tokens": MAX_TOKENS, "temperature": 0.0}
        if arm == "trgc":
            extra["extra_args"] = {"trgc": {"schema": schema}}
        elif arm != "unconstrained":
            extra["structured_outputs"] = StructuredOutputsParams(json=schema)
        params.append(SamplingParams(**extra))
    llm.generate(prompts, params, use_tqdm=False)  # warm-up
    timed = []
    for _ in range(rounds):
        begin = time.perf_counter()
        outputs = llm.generate(prompts, params, use_tqdm=False)
        seconds = time.perf_counter() - begin
        tokens = sum(len(o.outputs[0].token_ids) for o in outputs)
        timed.append({"seconds": seconds, "tokens": tokens, "tokens_per_s": tokens / seconds})
    best = max(timed, key=lambda r: r["tokens_per_s"])
    finished = sum(o.outputs[0].finish_reason == "stop" for o in outputs)
    out.write_text(
        json.dumps(
            {
                "arm": arm,
                "load_s": load,
                "requests": len(prompts),
                "stopped": finished,
                **best,
                "rounds": timed,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    parser.add_argument("--repeat", type=int, default=2, help="copies of the six schema prompts")
    parser.add_argument("--rounds", type=int, default=2, help="timed decodes per arm")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--arm", help=argparse.SUPPRESS)  # internal: run one arm here
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.arm:
        arm_main(args.arm, args.model, args.repeat, args.rounds, Path(args.out))
        return
    from trgc.integrations.smollm2 import hf_model_dir

    model = str(hf_model_dir())
    results = []
    with tempfile.TemporaryDirectory(prefix="trgc-bench-vllm-") as tmp:
        for arm in args.arms:
            out = Path(tmp) / f"{arm}.json"
            cmd = [
                sys.executable,
                __file__,
                "--arm",
                arm,
                "--model",
                model,
                "--out",
                str(out),
                "--repeat",
                str(args.repeat),
                "--rounds",
                str(args.rounds),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"arm {arm} failed:\n{proc.stderr[-3000:]}")
            results.append(json.loads(out.read_text()))
    base = next((r for r in results if r["arm"] == "unconstrained"), None)
    for r in results:
        if base is not None:
            r["overhead_pct"] = 100.0 * (base["tokens_per_s"] / r["tokens_per_s"] - 1.0)
    if args.json:
        print(json.dumps({"model": "SmolLM2-135M-Instruct", "results": results}, indent=2))
        return
    for r in results:
        extra = f", overhead {r['overhead_pct']:+.1f}%" if "overhead_pct" in r else ""
        print(
            f"{r['arm']:13s} {r['tokens_per_s']:7.1f} tokens/s ({r['tokens']} tokens in "
            f"{r['seconds']:.2f} s, {r['stopped']}/{r['requests']} ended with EOS; "
            f"engine load {r['load_s']:.0f} s){extra}"
        )


if __name__ == "__main__":
    main()
