"""How often frame residuals are shared across schemas, and what describing one costs.

For a seeded sample of JSONSchemaBench schemas (those trgc compiles), every frame key a
configuration can hold (`reachable_keys(near=False)`) is described without a size bound
(`residual.describe`); then, for several bounds on the residual's states, it prints how many
keys fall within the bound and how many of those have a residual that another schema of the
sample has too (an entry another artifact would share). Then the median and p90 time of
`describe` with the engine's bound (`RESIDUAL_STATES`), for residuals within it and for the
attempts it stops early.

Run: .venv/bin/python benchmarks/bench_residuals.py [--tokenizer llama3] [--schemas 80]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_live  # noqa: E402  (the live benchmark's sample and tokenizers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", choices=sorted(bench_live.TOKENIZERS), default="llama3")
    parser.add_argument("--schemas", type=int, default=80)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import trgc
    from trgc.engine.binding import bind
    from trgc.engine.precompute import reachable_keys
    from trgc.engine.residual import RESIDUAL_STATES, ResidualTables, describe

    table = trgc.load_tokenizer(bench_live.TOKENIZERS[args.tokenizer])
    bindings = []
    for subset, name, _ in bench_live.sample(args.schemas, args.seed):
        schema = json.loads((bench_live.BENCH / subset / name).read_text(encoding="utf-8"))
        try:
            bindings.append(bind(trgc.compile_schema(schema, separators="compact"), table))
        except trgc.TrgcError:
            continue
    rows = []  # (artifact, residual hash, residual states)
    for b in bindings:
        for key in reachable_keys(b.tables, b.trie_depth, near=False):
            text = describe(b, key, budget=1 << 62)
            rows.append((b.key[0], hashlib.sha256(text).hexdigest(),
                         int(ResidualTables.of(b).desc[0])))  # fmt: skip
    print(f"{args.tokenizer}: {len(bindings)} schemas compiled of {args.schemas} sampled, "
          f"{len(rows):,} frame keys")  # fmt: skip
    for bound in (16, 32, 64, 128, 256, None):
        owners: dict[str, set[str]] = defaultdict(set)
        within = [(a, r) for a, r, m in rows if bound is None or m <= bound]
        for a, r in within:
            owners[r].add(a)
        shared = sum(len(owners[r]) > 1 for _, r in within)
        label = "no bound" if bound is None else f"<= {bound} states"
        print(f"  {label:>15}: {len(within):6,} keys, {shared:6,} with a residual another "
              f"schema has ({shared / max(len(rows), 1):.1%} of all keys)")  # fmt: skip
    inside, stopped = [], []
    for b in bindings:
        for key in reachable_keys(b.tables, b.trie_depth, near=False)[::5]:
            begin = time.perf_counter()
            found = describe(b, key, budget=RESIDUAL_STATES)
            (stopped if found is None else inside).append(time.perf_counter() - begin)
    for label, times in (("described", inside), ("stopped at the bound", stopped)):
        a = np.asarray(times) * 1e6
        if a.size:
            print(f"describe, {label}: {a.size} calls, median {np.median(a):.0f} us, "
                  f"p90 {np.percentile(a, 90):.0f} us")  # fmt: skip


if __name__ == "__main__":
    main()
