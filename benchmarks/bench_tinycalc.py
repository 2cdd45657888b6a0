"""tinycalc-1 and tool-envelope throughput.

    .venv/bin/python benchmarks/bench_tinycalc.py [--runs N]

Median and p90 wall time per call (imports warm) for: a short expression, a 4,096-byte
expression at the input limit, an expression at the 10,000-operation limit, 256 nested
parentheses, the refusal of a 1 MB expression, and a full `tool run` of the report's
example request (strict JSON, validation, evaluation, both records).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from trgc.errors import TrgcError
from trgc.tools.envelope import run_request
from trgc.tools.tinycalc import evaluate

ROOT = Path(__file__).resolve().parents[1]


def _time(func, runs: int) -> tuple[float, float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        samples.append(time.perf_counter() - start)
    samples.sort()
    return statistics.median(samples), samples[int(0.9 * (len(samples) - 1))]


def _refused(expression: str) -> None:
    try:
        evaluate(expression)
    except TrgcError:
        return
    raise AssertionError("expected a limit error")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    request = (ROOT / "tests" / "data" / "tools" / "calc_request.json").read_bytes()
    long_expression = ("1.5 * 2 - 0.25 / 3 + " * 200)[:4090] + "1"
    long_expression = long_expression.rstrip("+-*/ ") + " + 1"
    megabyte = "1+" * 500_000 + "1"
    cases = [
        ("(2 + 3) * -4.5", lambda: evaluate("(2 + 3) * -4.5")),
        (f"{len(long_expression):,}-byte expression", lambda: evaluate(long_expression)),
        ("10,000 operations", lambda: evaluate("+".join(["1.000000001^64"] * 150) + "+1" * 251)),
        ("256 nested parentheses", lambda: evaluate("(" * 256 + "1" + ")" * 256)),
        ("1 MB expression refused", lambda: _refused(megabyte)),
        ("tool run calc_request.json", lambda: run_request(request)),
    ]
    print(f"{'case':<32} {'median':>10} {'p90':>10}")
    for name, func in cases:
        median, p90 = _time(func, args.runs)
        print(f"{name:<32} {median * 1e6:>8.1f}µs {p90 * 1e6:>8.1f}µs")


if __name__ == "__main__":
    main()
