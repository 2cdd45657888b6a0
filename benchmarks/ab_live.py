"""trgc's live masks, one source tree against another, alternated one schema at a time.

Machine speed here drifts by 10-25% between runs minutes apart, more than most engine changes
move the masks; a change is measured against its base in the same minutes instead. Two worker
processes (`PYTHONPATH=<tree>/src`, this interpreter) each load the tokenizer, sample
bench_live's schemas and forced instances (the same seed, so the same cases), run its warm-up,
then replay the cases on the driver's request, one schema at a time, A then B or B then A
alternately; both are replaced every round. Each case is `bench_live.run_case` with trgc as
bench_live drives it (`compile_schema` + `Matcher.fill_bitmask`, no precompute, one shared
`MaskCache`).

Run: .venv/bin/python benchmarks/ab_live.py BASE_TREE NEW_TREE [--tokenizer llama3]
     [--schemas 120] [--rounds 2] [--cpu N] [--json]

Prints, per tree, masks timed, mask mean / p50 / p90 / p99 / max, compile and time-to-first-mask
p50, and the median over schemas of NEW's mask time / BASE's (below 1: NEW is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_live import stats  # noqa: E402  (numpy and the standard library only)

WORKER = r"""
import json, sys
sys.path.insert(0, {benchmarks!r})
import bench_live
import trgc
raw, table, hf = bench_live.load_vocab({tokenizer!r})
cases = bench_live.prepare(bench_live.sample({schemas}, {seed}), table, hf)
engine = bench_live.TrgcEngine(table)
bench_live.warm_up(engine, hf)
print(len(cases), flush=True)
for line in sys.stdin:
    r = bench_live.run_case(engine, cases[int(line)])
    print(json.dumps({{k: r.get(k) for k in ("status", "mask_s", "compile_s", "first_mask_s")}}),
          flush=True)
"""


def start(tree: Path, args) -> subprocess.Popen:
    code = WORKER.format(benchmarks=str(HERE), tokenizer=args.tokenizer, schemas=args.schemas,
                         seed=args.seed)  # fmt: skip
    cpu = args.cpu
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={"PYTHONPATH": str(tree / "src"), "PATH": "/usr/bin:/bin"},
        preexec_fn=None if cpu is None else lambda: os.sched_setaffinity(0, {cpu}),
    )


def run(args) -> dict[str, list[dict]]:
    trees = {"base": args.base, "new": args.new}
    results: dict[str, list[dict]] = {"base": [], "new": []}
    for rnd in range(args.rounds):
        workers = {name: start(tree, args) for name, tree in trees.items()}
        n_cases = [int(w.stdout.readline()) for w in workers.values()][0]
        for i in range(n_cases):
            order = ("base", "new") if (i + rnd) % 2 == 0 else ("new", "base")
            for name in order:
                worker = workers[name]
                worker.stdin.write(f"{i}\n")
                worker.stdin.flush()
                results[name].append(json.loads(worker.stdout.readline()))
            sys.stderr.write(f"\rround {rnd + 1}/{args.rounds}: {i + 1}/{n_cases} schemas")
        for worker in workers.values():
            worker.stdin.close()
            worker.wait()
        sys.stderr.write("\n")
    return results


def summary(rows: list[dict]) -> dict[str, float]:
    """One tree's masks, compiles and first masks, as bench_live reports them (`stats`)."""
    ran = [r for r in rows if r["status"] != "unsupported"]
    masks = stats([x for r in ran for x in r["mask_s"]])
    return {
        "masks": masks["n"],
        **{f"{k}_us": 1e3 * masks[f"{k}_ms"] for k in ("mean", "p50", "p90", "p99", "max")},
        "compile_p50_ms": stats([r["compile_s"] for r in ran])["p50_ms"],
        "first_mask_p50_ms": stats([r["first_mask_s"] for r in ran])["p50_ms"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path, help="source tree of the base (holds src/trgc)")
    parser.add_argument("new", type=Path, help="source tree of the change")
    parser.add_argument("--tokenizer", choices=["llama3", "qwen3"], default="llama3")
    parser.add_argument("--schemas", type=int, default=120, help="schemas in the sample")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, workers replaced each")
    parser.add_argument("--cpu", type=int, default=None,
                        help="run both workers on this CPU (on a VM, the two vCPUs differ by "
                             "10%% or more; they never run at once, so one CPU costs nothing)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    for tree in (args.base, args.new):
        if not (tree / "src" / "trgc").is_dir():
            parser.error(f"{tree}: no src/trgc there")
    results = run(args)
    base, new = summary(results["base"]), summary(results["new"])
    ratios = [
        sum(b["mask_s"]) / sum(a["mask_s"])
        for a, b in zip(results["base"], results["new"], strict=True)
        if a["status"] != "unsupported" and a["mask_s"] and b["mask_s"]
    ]
    out = {"base": base, "new": new, "median_ratio": statistics.median(ratios),
           "schemas_compared": len(ratios)}  # fmt: skip
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print("| | base | new | new / base |\n|---|---:|---:|---:|")
    for key in base:
        print(f"| {key} | {base[key]:,.1f} | {new[key]:,.1f} | {new[key] / base[key]:.3f} |")
    print(f"median over {len(ratios)} schemas of new / base mask time: {out['median_ratio']:.3f}")


if __name__ == "__main__":
    main()
