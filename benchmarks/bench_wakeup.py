"""What the moments before a compile do to its time: why `bench_compile_schemas.py` runs each
engine over every schema back to back (`--order passes`) rather than in turn.

    .venv/bin/python benchmarks/bench_wakeup.py [--per-subset 150] [--every 3] [--rounds 2] [--json]

Compiles every `--every`-th of the first `--per-subset` schemas of each JSONSchemaBench subset
that trgc compiles, in one process, once per mode and round, each compile preceded by:

  * none: nothing (back to back, as in `--order passes`);
  * sleep: `time.sleep(0.02)` (what a process waiting on a peer's worker does, `--order
    interleaved`);
  * spin: 20 ms of busy waiting (the same pause without giving up the CPU);
  * touch: a write to every 64th byte of a 64 MiB array, twice (another engine's working set
    passing through the caches).

Reports each mode's p50 / p90 / sum of wall time per round. Modes alternate within a round so
that the machine's load drifts over all of them alike.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT.parent / "shared" / "corpora" / "jsonschemabench"
MODES = ("none", "sleep", "spin", "touch")
PAUSE = 0.02


def _before(mode: str, scratch: np.ndarray) -> None:
    if mode == "sleep":
        time.sleep(PAUSE)
    elif mode == "spin":
        start = time.perf_counter()
        while time.perf_counter() - start < PAUSE:
            pass
    elif mode == "touch":
        scratch[::64] += 1
        scratch[::64] += 1


def _quantiles(seconds: list[float]) -> dict:
    ordered = sorted(seconds)
    n = len(ordered)
    return {"p50_ms": ordered[n // 2] * 1e3, "p90_ms": ordered[int(n * 0.9)] * 1e3,
            "sum_s": sum(ordered), "n": n}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-subset", type=int, default=150, help="schemas per subset")
    parser.add_argument("--every", type=int, default=3, help="keep every N-th compiled schema")
    parser.add_argument("--rounds", type=int, default=2, help="times each mode runs")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    if not BENCH.is_dir():
        print(f"the corpus is not at {BENCH}", file=sys.stderr)
        return 2
    sys.setrecursionlimit(10_000)
    import numba  # noqa: F401  (as bench_compile_schemas --kernel)

    from trgc import TrgcError, compile_schema

    compile_schema({"type": "string", "maxLength": 8})
    raws = []
    for subset in sorted(p for p in BENCH.iterdir() if p.is_dir()):
        for path in sorted(subset.glob("*.json"))[: args.per_subset]:
            raw = path.read_bytes()
            try:
                compile_schema(raw, separators="compact")
            except TrgcError:
                continue
            raws.append(raw)
    raws = raws[:: args.every]
    scratch = np.zeros(64 << 20, dtype=np.uint8)
    rounds = []
    for _ in range(args.rounds):
        row = {}
        for mode in MODES:
            seconds = []
            for raw in raws:
                _before(mode, scratch)
                start = time.perf_counter()
                compile_schema(raw, separators="compact")
                seconds.append(time.perf_counter() - start)
            row[mode] = _quantiles(seconds)
        rounds.append(row)
    if args.json:
        print(json.dumps({"schemas": len(raws), "rounds": rounds}, indent=2))
        return 0
    print(f"{len(raws)} schemas, each compile preceded by:")
    for index, row in enumerate(rounds, 1):
        for mode, q in row.items():
            print(f"  round {index} {mode:<6} p50 {q['p50_ms']:.2f} ms  p90 {q['p90_ms']:.2f} ms"
                  f"  sum {q['sum_s']:.2f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
