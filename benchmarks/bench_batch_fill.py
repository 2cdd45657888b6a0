"""Batch bitmask fill: `trgc.torch.fill_next_token_bitmask` on one thread against all cores.

A serving engine fills the masks of its whole batch before every forward pass. Here a batch of
B matchers over `grammars/json.trg` and the Llama-3 vocabulary is put into mid-document states:
matcher k is teacher-forced through a random prefix (seeded) of real JSON document k
(JSONSchemaBench instances, tokenised with the `tokenizers` library, as in bench_masks.py).
Then, for S steps, every matcher advances by its document's next token and the whole batch's
masks are filled into one `(B, ceil(V/32))` int32 tensor; the fill is what is timed. Matchers
share one `MaskCache`, as the vLLM processor's do. Each thread count runs the same states from
a fresh cache, so cold misses (trie walks, which release the GIL) and warm hits (a dictionary
lookup and a copy, which do not) are in both runs alike.

`--cache-bytes 0` disables the mask cache: every row's mask is a trie walk, the compute-bound
case where the threads' share of the work is largest.

Run: .venv/bin/python benchmarks/bench_batch_fill.py [--batch 16 64] [--steps 32]
     [--cache-bytes 0] [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from bench_masks import VOCABS, load_documents, stats, tokenize

import trgc
from trgc.engine.cache import MaskCache
from trgc.tokenizer.sources import read_source
from trgc.torch import allocate_token_bitmask, available_cores, fill_next_token_bitmask

ROOT = Path(__file__).resolve().parents[1]


def batch_states(art, table, sequences, batch: int, steps: int, seed: int, cache_bytes=None):
    """(matchers at their mid-document start, per matcher the next `steps` tokens)."""
    rng = np.random.default_rng(seed)
    long_enough = [s for s in sequences if len(s) > steps + 4]
    chosen = [long_enough[i] for i in rng.choice(len(long_enough), size=batch, replace=False)]
    cache = MaskCache() if cache_bytes is None else MaskCache(cache_bytes)
    matchers, futures = [], []
    for seq in chosen:
        start = int(rng.integers(2, len(seq) - steps))
        m = trgc.Matcher(art, table, cache=cache)
        for t in seq[:start]:
            m.advance(t)
        matchers.append(m)
        futures.append(seq[start : start + steps])
    return matchers, futures


def run(art, table, sequences, batch, steps, threads, seed, cache_bytes=None) -> dict:
    matchers, futures = batch_states(art, table, sequences, batch, steps, seed, cache_bytes)
    mask = allocate_token_bitmask(batch, table.vocab_size)
    times = []
    for step in range(steps):
        start = time.perf_counter()
        fill_next_token_bitmask(matchers, mask, threads=threads)
        times.append(time.perf_counter() - start)
        for m, future in zip(matchers, futures, strict=True):
            m.advance(future[step])
    return {"threads": threads, **stats(times), "sum_ms": round(sum(times) * 1e3, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--subset", default="Glaiveai2K")
    parser.add_argument("--repeats", type=int, default=3, help="runs per setting (seeds)")
    parser.add_argument(
        "--cache-bytes",
        type=int,
        help="MaskCache budget (0: every mask computed, the compute-bound case)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()

    raw = read_source(VOCABS["llama3"])
    table = trgc.load_tokenizer(ROOT / "tokenizers/llama3.trt")
    art = trgc.compile_grammar((ROOT / "grammars/json.trg").read_text())
    sequences = tokenize(raw, load_documents(args.subset, args.docs), table)
    cores = available_cores()
    warm = batch_states(art, table, sequences, 4, 4, 99)[0]  # numba kernels compiled/loaded
    fill_next_token_bitmask(warm, allocate_token_bitmask(4, table.vocab_size), threads=2)
    results = []
    for batch in args.batch:
        for threads in sorted({1, cores}):
            runs = [
                run(art, table, sequences, batch, args.steps, threads, seed, args.cache_bytes)
                for seed in range(args.repeats)
            ]
            best = min(runs, key=lambda r: r["sum_ms"])
            results.append({"batch": batch, **best, "runs_sum_ms": [r["sum_ms"] for r in runs]})
    report = {
        "vocab": "llama3",
        "grammar": "json.trg",
        "cores": cores,
        "cache_bytes": args.cache_bytes,
        "results": results,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    budget = "default" if args.cache_bytes is None else f"{args.cache_bytes} bytes"
    print(
        f"Llama-3 ({table.vocab_size} ids), json.trg, {cores} cores, {args.steps} steps, "
        f"mask cache {budget}"
    )
    for r in results:
        print(
            f"batch {r['batch']:3d} threads {r['threads']}: mean {r['mean_ms']:.3f} ms/step, "
            f"p50 {r['p50_ms']:.3f}, p99 {r['p99_ms']:.3f}, max {r['max_ms']:.3f} "
            f"(best of {len(r['runs_sum_ms'])}: {r['sum_ms']:.1f} ms total)"
        )


if __name__ == "__main__":
    main()
