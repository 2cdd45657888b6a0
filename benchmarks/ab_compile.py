"""trgc's JSON Schema compile, one source tree against another, alternated one schema at a time.

Machine speed here drifts by 10-50% between runs minutes apart (the same `person.json` compile
measured 4.4 and 7.7 ms median an hour apart), more than most compiler changes move the
compile; `bench_compile_schemas.py`'s p90 moved by 8% between two runs of one tree. A change is
measured against its base in the same moments instead: two worker processes (this
interpreter, `PYTHONPATH=<tree>/src`, numba loaded as `bench_compile_schemas --kernel` does)
compile the first `--per-subset` schemas of every JSONSchemaBench subset the way that benchmark
does (`compile_schema(raw, separators="compact")`), one schema at a time, A then B or B then A
alternately. Each worker compiles a schema once untimed, then `--reps` times timed by its
process CPU clock; the schema's time is the fastest.

Run: .venv/bin/python benchmarks/ab_compile.py BASE_TREE NEW_TREE [--per-subset 150]
     [--reps 2] [--json]

Prints, per tree, the schemas compiled and p50 / p90 / max / sum, the same over the p80-p97
band of the base's times (the schemas whose compile sets the p90), and the median over schemas
of NEW's time / BASE's (below 1: NEW is faster). A schema either tree refuses is left out.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT.parent / "shared" / "corpora" / "jsonschemabench"

WORKER = r"""
import sys, time
import numba  # noqa: F401  (the compiler's kernels run, as in bench_compile_schemas --kernel)
from trgc import TrgcError, compile_schema
compile_schema('{"type": "string", "maxLength": 8}', separators="compact")  # warm imports
reps = int(sys.argv[1])
print("ready", flush=True)
for line in sys.stdin:
    raw = open(line.rstrip("\n"), "rb").read()
    try:
        compile_schema(raw, separators="compact")
    except TrgcError:
        print("refused", flush=True)
        continue
    best = float("inf")
    for _ in range(reps):
        start = time.process_time()
        compile_schema(raw, separators="compact")
        best = min(best, time.process_time() - start)
    print(best, flush=True)
"""


class Worker:
    """One tree's compiler in a process of its own, fed schema paths on stdin."""

    def __init__(self, tree: Path, reps: int) -> None:
        env = {**os.environ, "PYTHONPATH": str(tree / "src")}
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(reps)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        if self._read() != "ready":
            raise SystemExit(f"the worker of {tree} did not start (is {tree}/src/trgc there?)")

    def _read(self) -> str:
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit("a worker ended early")
        return line.strip()

    def compile(self, path: Path) -> float | None:
        self.process.stdin.write(f"{path}\n")
        self.process.stdin.flush()
        answer = self._read()
        return None if answer == "refused" else float(answer)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def quantiles(seconds: list[float]) -> dict:
    ordered = sorted(seconds)
    at = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e3  # noqa: E731
    return {"n": len(ordered), "p50_ms": at(0.5), "p90_ms": at(0.9), "max_ms": ordered[-1] * 1e3,
            "sum_s": sum(ordered)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path, help="source tree of the base (holds src/trgc)")
    parser.add_argument("new", type=Path, help="source tree of the change")
    parser.add_argument("--per-subset", type=int, default=150, help="schemas per subset")
    parser.add_argument("--reps", type=int, default=2, help="timed compiles per schema")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    if not BENCH.is_dir():
        raise SystemExit(f"the JSONSchemaBench corpus is missing: {BENCH}")
    paths = []
    for subset in sorted(p for p in BENCH.iterdir() if p.is_dir()):
        paths.extend(sorted(subset.glob("*.json"))[: args.per_subset])
    base, new = Worker(args.base, args.reps), Worker(args.new, args.reps)
    times: dict[str, tuple[float, float]] = {}
    for index, path in enumerate(paths):
        order = (base, new) if index % 2 == 0 else (new, base)
        found = {id(worker): worker.compile(path) for worker in order}
        if found[id(base)] is not None and found[id(new)] is not None:
            times[f"{path.parent.name}/{path.name}"] = (found[id(base)], found[id(new)])
        if (index + 1) % 250 == 0:
            print(f"{index + 1}/{len(paths)} schemas", file=sys.stderr, flush=True)
    base.close()
    new.close()
    names = sorted(times, key=lambda name: times[name][0])
    band = names[int(0.8 * len(names)) : int(0.97 * len(names))]
    doc = {
        "schemas": len(paths),
        "compiled_by_both": len(names),
        "base": quantiles([times[n][0] for n in names]),
        "new": quantiles([times[n][1] for n in names]),
        "band_base": quantiles([times[n][0] for n in band]),
        "band_new": quantiles([times[n][1] for n in band]),
        "median_ratio": statistics.median(times[n][1] / times[n][0] for n in names),
    }
    if args.json:
        print(json.dumps(doc, indent=1))
        return
    print(f"{doc['compiled_by_both']} of {doc['schemas']} schemas compiled by both trees, the "
          f"fastest of {args.reps} per schema (process CPU time)")  # fmt: skip
    for label, key in (("all", ""), ("p80-p97 band of base", "band_")):
        for tree in ("base", "new"):
            q = doc[key + tree]
            print(f"  {label:22} {tree:4}: p50 {q['p50_ms']:.2f}  p90 {q['p90_ms']:.2f}  "
                  f"max {q['max_ms']:.0f} ms  sum {q['sum_s']:.2f} s")  # fmt: skip
    print(f"  new / base: sum {doc['new']['sum_s'] / doc['base']['sum_s']:.3f}, band "
          f"{doc['band_new']['sum_s'] / doc['band_base']['sum_s']:.3f}, median per-schema "
          f"ratio {doc['median_ratio']:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
