"""Runs one vLLM job for tests/test_integrations_vllm.py inside the vLLM virtualenv.

Reads a JSON job from stdin: {"model": folder, "processor": bool, "engine": {LLM options},
"requests": [{"prompt": text, "max_tokens": n, "trgc": {...} | null}]}; prompts go through the
model's chat template, decoding is greedy. Prints one JSON document: per request the output
token ids, text and finish reason, plus load and generation seconds, written to the job's
"result" path (vLLM logs to stdout).
vLLM spawns its engine process, hence the `__main__` guard.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> None:
    job = json.load(sys.stdin)
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ["HF_HUB_OFFLINE"] = "1"
    from vllm import LLM, SamplingParams

    kwargs = dict(job.get("engine", {}))
    if job["processor"]:
        from trgc.integrations.vllm import TrgcLogitsProcessor

        kwargs["logits_processors"] = [TrgcLogitsProcessor]
    start = time.perf_counter()
    llm = LLM(
        model=job["model"],
        dtype="float32",
        max_model_len=512,
        enforce_eager=True,
        seed=0,
        **kwargs,
    )
    loaded = time.perf_counter()
    tokenizer = llm.get_tokenizer()
    prompts, params = [], []
    for request in job["requests"]:
        messages = [{"role": "user", "content": request["prompt"]}]
        prompts.append(
            tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        )
        extra = {"trgc": request["trgc"]} if request.get("trgc") else None
        params.append(
            SamplingParams(temperature=0.0, max_tokens=request["max_tokens"], extra_args=extra)
        )
    rejected = []
    for bad in job.get("invalid", []):
        try:
            llm.generate(["x"], SamplingParams(max_tokens=2, extra_args={"trgc": bad}))
        except Exception as exc:  # vLLM's validation error type varies between versions
            rejected.append(f"{type(exc).__name__}: {exc}")
        else:
            rejected.append(None)
    begin = time.perf_counter()
    outputs = llm.generate(prompts, params, use_tqdm=False)
    done = time.perf_counter()
    result = {
        "load_seconds": loaded - start,
        "generate_seconds": done - begin,
        "rejected": rejected,
        "outputs": [
            {
                "token_ids": list(out.outputs[0].token_ids),
                "text": out.outputs[0].text,
                "finish_reason": out.outputs[0].finish_reason,
            }
            for out in outputs
        ],
    }
    del llm
    with open(job["result"], "w", encoding="utf-8") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main()
