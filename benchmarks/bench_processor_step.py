"""The vLLM processor's own cost per decode step, outside vLLM: `ConstrainedBatch.apply`.

End-to-end tokens/s (bench_vllm.py) on a shared 2-core machine moves by ±10% between rounds,
more than the processor costs; this isolates it. A batch of `--batch` rows over SmolLM2's
token table (the converted folder's, as the processor builds it), cycling through the three
schemas of tests/data/vllm/requests.json, each row teacher-forced through a valid document of
its schema tokenised with the `tokenizers` library, as vLLM would append sampled tokens to the
rows' output lists. Timed per step: catching every row up with its new token, filling all
masks and applying them to a `(batch, 49152)` float32 logits tensor. The first step of a fresh
batch (compile, binding, first masks) is reported apart as time to first mask. Pass 1 meets
every configuration for the first time (cold masks: trie walks); pass 2 runs the same documents
as new requests of the same engine (shared constraint and mask caches), the steady state of a
server that sees a schema again.

Run: .venv/bin/python benchmarks/bench_processor_step.py [--batch 12] [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from bench_masks import stats

import trgc
from trgc.integrations.batch import ConstrainedBatch
from trgc.integrations.smollm2 import hf_model_dir

ROOT = Path(__file__).resolve().parents[1]
SPEC = json.loads((ROOT / "tests/data/vllm/requests.json").read_text())
DOCUMENTS = {
    "person": {"name": "Ada Lovelace", "born": 1815, "occupation": "mathematician"},
    "weather": {"city": "Paris", "unit": "celsius", "days": 3},
    "answer": {"answer": "yes", "confidence": 95},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=12)
    parser.add_argument("--threads", type=int, default=None, help="fill threads (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    import tokenizers

    folder = hf_model_dir()
    table = trgc.load_tokenizer(folder)
    hf = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    names = list(SPEC["schemas"])
    sequences = []
    for row in range(args.batch):
        text = json.dumps(DOCUMENTS[names[row % len(names)]], separators=(",", ":"))
        sequences.append([*hf.encode(text, add_special_tokens=False).ids, *table.eos_ids[:1]])
    logits = torch.from_numpy(
        np.random.default_rng(0).normal(size=(args.batch, table.vocab_size)).astype(np.float32)
    )
    start = time.perf_counter()
    batch = ConstrainedBatch(
        table, max_rows=args.batch, width=table.vocab_size, engine="bench", threads=args.threads
    )
    passes = []
    for number in range(2):
        begin = time.perf_counter()
        outputs: list[list[int]] = [[] for _ in range(args.batch)]
        for row in range(args.batch):
            batch.add(row, {"schema": SPEC["schemas"][names[row % len(names)]]}, outputs[row])
        batch.apply(logits.clone())
        first = time.perf_counter() - (start if number == 0 else begin)
        times = []
        for step in range(min(len(s) for s in sequences) - 1):
            for row, seq in enumerate(sequences):
                outputs[row].append(seq[step])
            work = logits.clone()
            begin = time.perf_counter()
            batch.apply(work)
            times.append(time.perf_counter() - begin)
        passes.append({"first_mask_s": round(first, 3), "step": stats(times)})
    report = {"batch": args.batch, "passes": passes}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for number, p in enumerate(passes, start=1):
        s = p["step"]
        print(
            f"pass {number}, batch {args.batch}: first mask {p['first_mask_s']:.2f} s; per step "
            f"mean {s['mean_ms']:.2f} ms, p50 {s['p50_ms']:.2f}, p99 {s['p99_ms']:.2f}, "
            f"max {s['max_ms']:.2f} over {s['n']} steps"
        )


if __name__ == "__main__":
    main()
