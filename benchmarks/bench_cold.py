"""The cold mask path against the assembly it replaced, on the same configurations.

`bench_live.py` times engines side by side on a machine whose load moves by a factor of two
within minutes; this script isolates the engine's cold path. It teacher-forces bench_live's
sampled JSONSchemaBench schemas (same sample, same tokenizer, compiled the same way), collects
every configuration reached, picks `--configs` of them at random, and times at each, in one
process, interleaved and each on a fresh matcher with an empty `MaskCache` (so nothing is
cached: the mask is computed cold), the best of `--trials`:

  * `one call`: `Matcher._compute`, the mask in one compiled call (`kernel.cold_mask`);
  * `assembled`: what the matcher did before, `framecache.entry_for` (the frame walk with the
    slices), `precompute.combine` (a copy of the accept set and a walk of the open roots through
    `kernel.walk_trie`), `kernel.add_symbol_tokens`, a full walk near `max_depth`.

Both give the same mask (checked at every configuration). Run:
  .venv/bin/python benchmarks/bench_cold.py --tokenizer llama3 --configs 1500
"""

from __future__ import annotations

import argparse
import os
import time

import bench_live
import numpy as np

import trgc
from trgc.engine import framecache, kernel
from trgc.engine.cache import MaskCache
from trgc.engine.config import frame_key, mask_key
from trgc.engine.matcher import Matcher
from trgc.engine.precompute import combine


def configurations(tokenizer: str, schemas: int, seed: int):
    """(artifact, configuration) at every step of every forced instance trgc accepts."""
    picked = bench_live.sample(schemas, seed)
    _, table, hf = bench_live.load_vocab(tokenizer)
    out = []
    for case in bench_live.prepare(picked, table, hf):
        if case["ids"] is None or case["problem"]:
            continue
        try:
            art = trgc.compile_schema(case["schema"], separators="compact")
        except trgc.TrgcError:
            continue
        m = Matcher(art, table)
        for token in case["ids"]:
            try:
                m.advance(token)
            except trgc.TrgcError:
                break
            out.append((art, m.config))
    return table, out


def assembled(m: Matcher, config) -> np.ndarray:
    b = m._binding
    key = frame_key(config[-1], b.trie_depth)
    entry, _ = framecache.entry_for(b, key, m._scratch, m._cache, None)
    words = combine(b, entry, config, m._scratch)
    if words is None:
        return kernel.mask_words(b, config, m._scratch)
    kernel.add_symbol_tokens(b, config, words)
    return words


def one_call(m: Matcher, config) -> np.ndarray:
    b = m._binding
    return m._compute(config, (*b.key, mask_key(config, b.trie_depth)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokenizer", choices=sorted(bench_live.TOKENIZERS), default="llama3")
    parser.add_argument("--schemas", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--configs", type=int, default=1500)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    table, items = configurations(args.tokenizer, args.schemas, args.seed)
    rng = np.random.default_rng(args.seed)
    pick = rng.choice(len(items), min(args.configs, len(items)), replace=False)
    paths = {"one call": one_call, "assembled": assembled}
    for art, config in items[:: max(1, len(items) // 40)]:  # compiled code and shared tables
        for path in paths.values():
            path(Matcher(art, table, cache=MaskCache()), config)
    best: dict[str, list[float]] = {name: [] for name in paths}
    perf = time.perf_counter
    for i in pick.tolist():
        art, config = items[i]
        found: dict[str, float] = {}
        masks = {}
        for trial in range(args.trials):
            order = list(paths.items()) if trial % 2 == 0 else list(paths.items())[::-1]
            for name, path in order:
                m = Matcher(art, table, cache=MaskCache())
                _ = m._scratch, m._cheap, m._frame_prefix, m._plain  # per-matcher setup
                kernel.LiveTables.of(m._binding)
                started = perf()
                masks[name] = path(m, config)
                found[name] = min(found.get(name, float("inf")), perf() - started)
        assert (masks["one call"] == masks["assembled"]).all(), config
        for name in paths:
            best[name].append(found[name] * 1e6)
    print(f"{args.tokenizer}: {len(pick)} of {len(items)} configurations, best of {args.trials}, "
          f"load {[round(x, 1) for x in os.getloadavg()]}")  # fmt: skip
    for name, values in best.items():
        a = np.array(values)
        print(f"  {name:9s} mean {a.mean():7.1f} us  p50 {np.percentile(a, 50):6.1f}  "
              f"p90 {np.percentile(a, 90):6.1f}  p99 {np.percentile(a, 99):7.1f}  "
              f"max {a.max():7.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
