"""Compile-time benchmark: `grammars/json.trg` and a generated 500-rule grammar.

    .venv/bin/python benchmarks/bench_compile.py [--runs N]

For each grammar: median and p90 wall time of `compile_grammar` from source text (each run
starts from the text, nothing is cached between runs; imports are warm), one truly cold run
in a fresh interpreter (imports included), peak traced memory of one compile (tracemalloc),
and the artifact's size and state count. Prints a table; the report's target for ordinary
grammars is under 50 ms.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def synthetic_grammar(n_keys: int = 494) -> str:
    """A record of named fields with 500 rules in all: `n_keys` key rules (inlined into one
    DFA, sharing long common prefixes) plus 6 shared rules, recursive through `object`."""
    lines = ["%trg 1", "%start object", "%max_depth 16"]
    lines.append('object ::= "{" ( field ( "," field )* )? "}" ;')
    lines.append('field ::= key ":" value ;')
    lines.append("key ::= " + " | ".join(f"k{i}" for i in range(n_keys)) + " ;")
    for i in range(n_keys):
        lines.append(f'k{i} ::= "\\"field_{i}\\"" ;')
    lines.append('value ::= number | string | "true" | "false" | "null" | object ;')
    lines.append('number ::= "-"? ( "0" | [1-9] [0-9]* ) ;')
    lines.append('string ::= "\\"" [a-zA-Z0-9 ]* "\\"" ;')
    return "\n".join(lines) + "\n"


def _cold_run(text: str) -> float:
    code = (
        "import sys, time\n"
        "t = time.perf_counter()\n"
        "from trgc.compiler.build import compile_grammar\n"
        "compile_grammar(sys.stdin.read())\n"
        "print(time.perf_counter() - t)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], input=text, capture_output=True, text=True, check=True
    )
    return float(result.stdout)


def measure(name: str, text: str, runs: int) -> dict:
    from trgc.artifact.codec import to_file_bytes
    from trgc.compiler.build import compile_grammar

    artifact = compile_grammar(text)  # warm-up, and the artifact described in the table
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        compile_grammar(text)
        times.append(time.perf_counter() - start)
    times.sort()
    tracemalloc.start()
    compile_grammar(text)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "grammar": name,
        "rules": text.count("::="),
        "source_bytes": len(text.encode("utf-8")),
        "median_ms": statistics.median(times) * 1000,
        "p90_ms": times[min(len(times) - 1, int(0.9 * len(times)))] * 1000,
        "cold_ms": _cold_run(text) * 1000,
        "peak_mib": peak / 2**20,
        "states": sum(m.n_states for m in artifact.machines),
        "machines": len(artifact.machines),
        "canonical_bytes": len(artifact.to_bytes()),
        "file_bytes": len(to_file_bytes(artifact)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="timed runs per grammar (default 30)")
    args = parser.parse_args(argv)
    rows = [
        measure(
            "grammars/json.trg",
            (ROOT / "grammars" / "json.trg").read_text(encoding="utf-8"),
            args.runs,
        ),
        measure("synthetic-500", synthetic_grammar(), args.runs),
    ]
    header = f"{'grammar':<20} {'rules':>5} {'median ms':>10} {'p90 ms':>8} {'cold ms':>8} {'peak MiB':>9} {'states':>7} {'mach':>5} {'canon B':>8} {'file B':>7}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['grammar']:<20} {r['rules']:>5} {r['median_ms']:>10.1f} {r['p90_ms']:>8.1f} {r['cold_ms']:>8.1f} "
            f"{r['peak_mib']:>9.2f} {r['states']:>7} {r['machines']:>5} {r['canonical_bytes']:>8} {r['file_bytes']:>7}"
        )
    print(f"python {sys.version.split()[0]}, {args.runs} runs per grammar")
    return 0


if __name__ == "__main__":
    sys.exit(main())
