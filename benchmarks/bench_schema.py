"""trj-1 benchmark: compile time and coverage over JSONSchemaBench, beside the peers' published figures.

For every schema of every subset (or the first N per subset): compile it with
`trgc.compile_schema`, record the wall time, and run the MaskBench-style instance check
(valid instances re-serialised canonically must be accepted, invalid ones rejected).
Reported: compile time median / p90 / max over compiled schemas (report target: < 50 ms for
ordinary schemas), per subset the compiled and passing percentages, and the number of
accepted invalid instances (must be 0).

Peer figures are copied from `../shared/corpora/jsonschemabench/README.md` (MaskBench
"passing" over 11,306 schemas, which include splits not in this corpus), so they are context,
not a same-machine comparison.

Run: .venv/bin/python benchmarks/bench_schema.py [--per-subset N] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trgc.evaluation.coverage import report, run_coverage

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
# MaskBench "passing" / "schemas" (maskbench/README.md, as copied in the corpus README)
PEERS_PASSING = {
    "LLGuidance": 8909,
    "XGrammar": 8122,
    "llama.cpp": 6505,
    "XGrammar.cpp": 6387,
    "Outlines": 7050,
}
PEERS_SCHEMAS = 11306


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--per-subset", type=int, default=None, help="only the first N schemas of each subset"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    bench = CORPORA / "jsonschemabench"
    results = run_coverage(bench, CORPORA / "jsonschemabench-instances", per_subset=args.per_subset)
    doc = report(results)
    doc["peers_passing_pct"] = {
        name: round(100 * n / PEERS_SCHEMAS, 1) for name, n in PEERS_PASSING.items()
    }
    total = doc["total"]
    doc["total"]["compiled_pct"] = round(100 * total["compiled"] / max(1, total["schemas"]), 1)
    doc["total"]["passing_pct_of_all"] = round(100 * total["passing"] / max(1, total["schemas"]), 1)
    if args.json:
        print(json.dumps(doc, indent=2, sort_keys=True))
        return 0
    print(
        f"{'subset':<16}{'schemas':>8}{'compiled':>10}{'%':>7}{'passing':>9}{'%all':>7}  top unsupported"
    )
    for name, s in doc["subsets"].items():
        top = ", ".join(f"{k} {v}" for k, v in list(s["unsupported_by_keyword"].items())[:3])
        print(
            f"{name:<16}{s['schemas']:>8}{s['compiled']:>10}{s['compiled_pct']:>7.1f}"
            f"{s['passing']:>9}{100 * s['passing'] / max(1, s['schemas']):>7.1f}  {top}"
        )
    print(
        f"total: {total['compiled']}/{total['schemas']} compiled ({total['compiled_pct']}%), "
        f"{total['passing']} passing ({total['passing_pct_of_all']}% of all), "
        f"{total['wrongly_accepted']} invalid instances accepted"
    )
    print(
        f"compile time: median {total['compile_ms_median']} ms, p90 {total['compile_ms_p90']} ms, max {total['compile_ms_max']} ms"
    )
    print(
        "peers (MaskBench passing, 11,306 schemas): "
        + ", ".join(f"{k} {v}%" for k, v in doc["peers_passing_pct"].items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
