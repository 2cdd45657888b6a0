"""Time to first mask after the compile: what binding an artifact and its first mask cost, step
by step (issue "Live masks", item 4).

    .venv/bin/python benchmarks/bench_bind.py [--tokenizer llama3] [--schemas 120] [--seed 0]
        [--json]

`bench_live.py`'s time to first mask is compile + matcher + first mask, and says nothing of
the part after the compile. This compiles bench_live's sample of JSONSchemaBench schemas (the
same seed and options: `separators="compact"`, closed objects) one at a time and, right after
each compile, makes its matcher over one `MaskCache` shared by all (as a server keeps one) and
forces, one at a time and in the order the first mask needs them, the lazy steps of the
binding that the first `fill_bitmask` would otherwise take inside it:

  * matcher: `Matcher(...)` (the binding, the tokenizer's tables looked up);
  * tables: the artifact's tables over global states (`config.flatten`);
  * plain: the states whose entry is their whole mask (`precompute.plain_states`);
  * slice candidates, slice plan: which states a slice may fit, and the plan that decides
    string bodies and word loops in one compiled call (`precompute.slice_plan`);
  * counted, walk bound, runs: counted entries' tables, each state's walk bound, class runs;
  * cheap, one-frame plan: how each one-frame configuration is masked (`Matcher._cheap`,
    `Matcher._one_frame_plan`);
  * scratch, live tables, packed scratch: the kernel's buffers and packed tables;
  * fill: the first `fill_bitmask`, all of the above done.

Each step is timed once per schema (they are made once per artifact or binding); printed are
p50 and mean over the schemas, each step's share of their sum, and the compile and the
whole time to first mask for scale. The tokenizer's own tables (trie, class runs) are built by
a warm-up on a schema outside the sample, as in bench_live.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_live  # noqa: E402

STEPS = (
    "matcher", "tables", "plain", "slice candidates", "slice plan", "counted", "walk bound",
    "runs", "cheap", "one-frame plan", "scratch", "live tables", "packed scratch", "fill",
)  # fmt: skip


def bind_steps(engine, artifact) -> dict[str, float]:
    """Seconds per step of binding `artifact` and writing its first mask (`STEPS`)."""
    import trgc
    from trgc.engine import counted, framecache, precompute, runs

    timer = time.perf_counter
    began = timer()
    m = trgc.Matcher(artifact, engine.table, cache=engine.cache)
    out = {"matcher": timer() - began}
    b = m._binding
    lazy = (
        ("tables", lambda: b.tables),
        ("plain", lambda: m._plain),
        ("slice candidates", lambda: precompute.slice_candidates(b)),
        ("slice plan", lambda: precompute.slice_plan(b)),
        ("counted", lambda: counted.prepare(b)),
        ("walk bound", lambda: framecache.walk_bound(b)),
        ("runs", lambda: runs.run_states(b)),
        ("cheap", lambda: m._cheap),
        ("one-frame plan", lambda: m._one_frame_plan),
        ("scratch", lambda: m._scratch),
        ("live tables", lambda: m._scratch.live),
        ("packed scratch", lambda: m._scratch.sc),
        ("fill", lambda: m.fill_bitmask(engine.buffer, 0)),
    )
    for name, step in lazy:
        began = timer()
        step()
        out[name] = timer() - began
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", default="llama3", choices=sorted(bench_live.TOKENIZERS))
    parser.add_argument("--schemas", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    if not bench_live.BENCH.is_dir():
        print(f"bench_bind: the corpus is not at {bench_live.BENCH}", file=sys.stderr)
        return 2
    import trgc

    picked = bench_live.sample(args.schemas, args.seed)
    _, table, hf = bench_live.load_vocab(args.tokenizer)
    engine = bench_live.TrgcEngine(table)
    bench_live.warm_up(engine, hf)
    gc.collect()
    gc.freeze()
    per_step: dict[str, list[float]] = {name: [] for name in (*STEPS, "compile", "ttfm")}
    for subset, name, _ in picked:
        schema = json.loads((bench_live.BENCH / subset / name).read_text(encoding="utf-8"))
        began = time.perf_counter()
        try:
            artifact = engine.compile(schema)
        except trgc.TrgcError:
            continue
        compiled = time.perf_counter() - began
        steps = bind_steps(engine, artifact)
        for step, seconds in steps.items():
            per_step[step].append(seconds)
        per_step["compile"].append(compiled)
        per_step["ttfm"].append(compiled + sum(steps.values()))
    total = sum(sum(per_step[s]) for s in STEPS)
    rows = {
        name: {
            "p50_us": statistics.median(values) * 1e6,
            "mean_us": statistics.mean(values) * 1e6,
            "share_of_bind": sum(values) / total if name in STEPS else None,
        }
        for name, values in per_step.items()
    }
    doc = {"tokenizer": args.tokenizer, "schemas": len(per_step["compile"]), "steps": rows}
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"== {args.tokenizer}: {doc['schemas']} schemas compiled of {args.schemas} sampled")
    print("| step | p50 | mean | share of bind + first mask |")
    print("|---|---:|---:|---:|")
    for name, row in rows.items():
        share = "" if row["share_of_bind"] is None else f"{row['share_of_bind']:.1%}"
        print(f"| {name} | {row['p50_us']:,.1f} us | {row['mean_us']:,.1f} us | {share} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
