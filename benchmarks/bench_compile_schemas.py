"""JSON Schema compile speed (issue 13, "Measure"): person.json, JSONSchemaBench beside the peers,
a maxLength sweep and `trgc --help` start-up.

    .venv/bin/python benchmarks/bench_compile_schemas.py [--per-subset 150] [--runs 30]
        [--no-peers] [--order passes|interleaved] [--tokenizer llama3] [--skip SECTION ...]
        [--json]

Sections (each can be skipped with `--skip person|corpus|sweep|help`):

  * person: `schemas/person.json` compiled by `trgc.compile_schema` (default options): its
    states, transitions and canonical size, the median and min of `--runs` in-process compiles
    (each from the text; nothing is cached between runs, imports are warm), and the median wall
    time of 5 whole `trgc compile schemas/person.json -o FILE` processes.
    Targets: <= 300 states, <= 5 ms in-process, <= 0.4 s whole process.
  * corpus: the first `--per-subset` schemas (by name) of every JSONSchemaBench subset, each
    compiled once by trgc the way `trgc coverage` does (`separators="compact"`, closed
    objects), then, in the same process and on the same schema, by llguidance
    (`LLMatcher.grammar_from_json_schema` without flexible whitespace, then `LLMatcher` with
    the `--tokenizer` vocabulary: llguidance builds its parser there, so both count as its
    compile) and XGrammar (`GrammarCompiler(max_threads=1, cache_enabled=False)
    .compile_json_schema(any_whitespace=False, separators=(",", ":"))`, which also builds its
    per-vocabulary token mask cache, so it does more than the others). Reported: p50 / p90 /
    max over the schemas each engine compiled, the same over the schemas all of them compiled,
    trgc's ratios to each peer there, and the slowest trgc schemas.
    Targets: trgc p50 <= 5 ms, p90 <= 20 ms, max <= 1 s.
  * sweep: `{"type": "object", "properties": {"s": {"type": "string", "maxLength": n}},
    "required": ["s"]}` for n = 10 .. 10^6: states, canonical size and median compile time
    (all should be flat in n).
    A peer runs in a worker process of its own (the parent waits for it) and is cut off after
    `--peer-timeout` seconds on one schema (XGrammar spends minutes on a few), counted apart.
    `--order passes` (the default) runs each engine over every schema back to back, trgc
    first; `--order interleaved` runs every engine on each schema in turn. Interleaved, each
    engine's process waits idle while the others compile, and on the build machine a process
    that has just slept runs its next few milliseconds far slower (a compile after a 20 ms
    sleep: trgc's p50 4.9 -> 8.6-9.2 ms; after 20 ms of spinning: 5.7 ms), so interleaved
    times measure wake-ups as much as the engines.
  * help: median wall time of 5 `trgc --help` processes (target <= 0.15 s). For start-up
    on its own (more runs, p90, CPU time beside wall, the python floor, the packages each
    command loads) see `benchmarks/bench_startup.py`.

`--kernel` imports numba before anything is timed, as a process that computes masks has: the
subset construction and minimisation then run compiled (`trgc.automata.jit`); their first
use, loading numba's cache, is outside the timing (`KERNEL_WARMUP`). Without it numba is never
loaded, as in `trgc compile`.

`--clock cpu` times trgc's in-process compiles with the process CPU clock instead of the wall
clock (on a shared machine under load, wall times mostly measure the scheduler; peers and
whole processes are always wall time).

Peers are skipped when their packages are not installed (`pip install -e '.[bench]'` after the
pinned CPU torch). The machine's load average is printed with the results: on the shared
2-core machine every number moves with it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
BENCH = SHARED / "corpora" / "jsonschemabench"
TOKENIZERS = {
    name: SHARED / f"tokenizers/{name}/tokenizer.json.zst" for name in ("llama3", "qwen3")
}
TRGC = Path(sys.executable).with_name("trgc")
SWEEP = (10, 100, 1_000, 10_000, 100_000, 1_000_000)
SECTIONS = ("person", "corpus", "sweep", "help")
# Compiled before anything is timed with `--kernel`: the first loads the subset construction's
# kernel and the small tables' minimisation, the second (a product of a pattern and a counted
# length, thousands of states) the large tables' minimisation steps and the graph kernels.
# Without it the first corpus schema with a large table paid their loading (its 460-500 ms
# compile measured about 1 s). Of the sample's 781 compiles only one then loads another kernel
# (`minimize_kernel._rounds`, a rare fallback).
KERNEL_WARMUP = (
    {"type": "string", "maxLength": 8},
    {"type": "string", "pattern": "^[a-z]+@[a-z]+(\\.[a-z]+)*\\.uk", "maxLength": 600},
)


def progress(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def quantiles(seconds: list[float]) -> dict | None:
    """n, p50, p90, max and sum in ms (the nearest-rank percentiles `trgc coverage` reports)."""
    if not seconds:
        return None
    ordered = sorted(seconds)

    def rank(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e3

    return {"n": len(ordered), "p50_ms": rank(0.5), "p90_ms": rank(0.9),
            "max_ms": ordered[-1] * 1e3, "sum_ms": sum(ordered) * 1e3}  # fmt: skip


def wall(argv: list[str], runs: int = 5) -> float:
    """Median wall seconds of `runs` processes (output discarded, exit status checked), with
    trgc's bytecode compiled first (`bench_startup.stale_modules`): an installed wheel has
    it, and a checkout run with PYTHONDONTWRITEBYTECODE=1 (this machine's shell) recompiled
    every module in every process (`trgc compile` 0.48-0.53 s instead of 0.16-0.22 s)."""
    from bench_startup import stale_modules

    stale_modules()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


CLOCK = time.perf_counter  # `--clock cpu`: time.process_time


def compile_times(text: str, runs: int, **options) -> tuple[float, float]:
    """(median, min) seconds of `runs` in-process compiles of `text`."""
    from trgc import compile_schema

    compile_schema(text, **options)  # imports and lazy tables, outside the timing
    times = []
    for _ in range(runs):
        start = CLOCK()
        compile_schema(text, **options)
        times.append(CLOCK() - start)
    return statistics.median(times), min(times)


# -- sections ------------------------------------------------------------------------------


def person(runs: int) -> dict:
    from trgc import compile_schema

    path = ROOT / "schemas" / "person.json"
    text = path.read_text(encoding="utf-8")
    artifact = compile_schema(text)
    median, best = compile_times(text, runs)
    with tempfile.TemporaryDirectory() as tmp:
        process = wall([str(TRGC), "compile", str(path), "-o", str(Path(tmp) / "person.trga")])
    stats = artifact.metadata["stats"]
    return {"states": stats["states"], "transitions": stats["transitions"],
            "machines": stats["machines"], "canonical_bytes": len(artifact.to_bytes()),
            "median_ms": median * 1e3, "min_ms": best * 1e3, "process_s": process}  # fmt: skip


class Llguidance:
    name = "llguidance"

    def __init__(self, tokenizer_json: bytes) -> None:
        import llguidance

        self.llg = llguidance
        with tempfile.NamedTemporaryFile(suffix=".json") as handle:
            handle.write(tokenizer_json)
            handle.flush()
            self.tok = llguidance.LLTokenizer(handle.name)

    def compile(self, raw: bytes) -> None:
        grammar = self.llg.LLMatcher.grammar_from_json_schema(
            raw.decode("utf-8"), defaults={"whitespace_flexible": False}
        )
        matcher = self.llg.LLMatcher(self.tok, grammar, log_level=0)
        if matcher.is_error():
            raise ValueError(matcher.get_error())


class Xgrammar:
    name = "xgrammar"

    def __init__(self, table) -> None:
        import xgrammar

        vocab = [table.token_bytes(i) for i in range(table.vocab_size)]
        info = xgrammar.TokenizerInfo(
            vocab, xgrammar.VocabType.RAW, vocab_size=table.vocab_size,
            stop_token_ids=list(table.eos_ids),
        )  # fmt: skip
        self.compiler = xgrammar.GrammarCompiler(info, max_threads=1, cache_enabled=False)

    def compile(self, raw: bytes) -> None:
        self.compiler.compile_json_schema(
            raw.decode("utf-8"), any_whitespace=False, separators=(",", ":"), strict_mode=True
        )


ENGINES = {"llguidance": Llguidance, "xgrammar": Xgrammar}


def make_engine(name: str, tokenizer: str):
    import zstandard

    import trgc

    path = TOKENIZERS[tokenizer]
    if name == "xgrammar":
        return Xgrammar(trgc.load_tokenizer(path))
    raw = zstandard.ZstdDecompressor().decompress(path.read_bytes(), max_output_size=1 << 30)
    return Llguidance(raw)


def worker(name: str, tokenizer: str) -> int:
    """`--worker ENGINE`: compile the schema file named on each stdin line, answer one JSON
    line {"s": seconds} or {"error": text} (the peer's C++ logging goes to stderr)."""
    engine = make_engine(name, tokenizer)
    engine.compile(b'{"type": "string"}')
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        raw = Path(line.rstrip("\n")).read_bytes()
        start = time.perf_counter()
        try:
            engine.compile(raw)
            answer = {"s": time.perf_counter() - start}
        except Exception as exc:  # each peer's own refusals, whatever their type  # noqa: BLE001
            answer = {"error": f"{type(exc).__name__}: {str(exc)[:80]}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


class Peer:
    """A peer engine in a process of its own, so that one schema it spends minutes on is cut
    off at `timeout` seconds (counted as a refusal) instead of stalling the run. The parent
    waits while the peer compiles: the engines never compete for the CPU."""

    def __init__(self, name: str, tokenizer: str, timeout: float) -> None:
        self.name, self.tokenizer, self.timeout = name, tokenizer, timeout
        self.process: subprocess.Popen | None = None
        self.timeouts = 0

    def _start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--worker", self.name, "--tokenizer", self.tokenizer],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        if self._read(600.0) != "ready":
            raise RuntimeError(f"{self.name} worker did not start")

    def _read(self, timeout: float) -> str | None:
        import select

        assert self.process is not None and self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            return None
        return self.process.stdout.readline().rstrip("\n")

    def compile(self, path: Path) -> float | None:
        """Seconds the peer took, or None when it refused the schema or ran out of time."""
        if self.process is None:
            self._start()
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(f"{path}\n")
        self.process.stdin.flush()
        line = self._read(self.timeout)
        if line is None:
            self.timeouts += 1
            self.close()
            return None
        answer = json.loads(line)
        return answer.get("s")

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


def peers(tokenizer: str, timeout: float) -> tuple[list[Peer], dict[str, str]]:
    """The installed peer engines, and why the others are missing."""
    import importlib.util

    found, missing = [], {}
    for name in ENGINES:
        if importlib.util.find_spec(name) is None:
            missing[name] = "not installed"
        else:
            found.append(Peer(name, tokenizer, timeout))
    return found, missing


def corpus(
    per_subset: int | None, use_peers: bool, tokenizer: str, timeout: float, order: str
) -> dict:
    from trgc import TrgcError, compile_schema

    engines, missing = peers(tokenizer, timeout) if use_peers else ([], {"peers": "--no-peers"})
    paths = []
    for subset in sorted(p for p in BENCH.iterdir() if p.is_dir()):
        paths.extend(sorted(subset.glob("*.json"))[:per_subset])
    compile_schema('{"type": "string"}', separators="compact")  # warm imports
    refused: dict[str, int] = {}

    def trgc_compile(path: Path) -> float | None:
        raw = path.read_bytes()
        start = CLOCK()
        try:
            compile_schema(raw, separators="compact")
        except TrgcError as error:
            refused[error.code] = refused.get(error.code, 0) + 1
            return None
        return CLOCK() - start

    runners = {"trgc": trgc_compile} | {e.name: e.compile for e in engines}
    times: dict[str, dict[str, float]] = {name: {} for name in runners}
    if order == "passes":  # each engine over every schema, back to back
        steps = [(name, path) for name in runners for path in paths]
    else:  # every engine on each schema in turn
        steps = [(name, path) for path in paths for name in runners]
    started = time.perf_counter()
    for index, (name, path) in enumerate(steps):
        seconds = runners[name](path)
        if seconds is not None:
            times[name][f"{path.parent.name}/{path.name}"] = seconds
        if (index + 1) % 500 == 0:
            progress(
                f"corpus: {index + 1}/{len(steps)} compiles ({order}), "
                f"{time.perf_counter() - started:.0f} s"
            )
    for engine in engines:
        engine.close()
        if engine.timeouts:
            missing[f"{engine.name} timeouts"] = f"{engine.timeouts} schemas over {timeout:g} s"
    common = sorted(set.intersection(*(set(t) for t in times.values())))
    out: dict = {"schemas": len(paths), "per_subset": per_subset, "missing_peers": missing,
                 "order": order,
                 "trgc_refused": dict(sorted(refused.items())), "common": len(common),
                 "own": {e: quantiles(list(t.values())) for e, t in times.items()},
                 "on_common": {e: quantiles([t[n] for n in common]) for e, t in times.items()}}  # fmt: skip
    ratios = {}
    for engine in engines:
        mine, theirs = out["on_common"]["trgc"], out["on_common"][engine.name]
        if mine is None or theirs is None:
            continue
        per_schema = sorted(times["trgc"][n] / times[engine.name][n] for n in common)
        ratios[f"trgc / {engine.name}"] = {
            "p50": mine["p50_ms"] / theirs["p50_ms"],
            "p90": mine["p90_ms"] / theirs["p90_ms"],
            "max": mine["max_ms"] / theirs["max_ms"],
            "sum": mine["sum_ms"] / theirs["sum_ms"],
            "median per-schema ratio": statistics.median(per_schema),
        }
    out["ratios"] = ratios
    slowest = sorted(times["trgc"].items(), key=lambda kv: -kv[1])[:5]
    out["slowest_trgc"] = [{"schema": n, "ms": s * 1e3} for n, s in slowest]
    return out


def sweep(runs: int) -> list[dict]:
    from trgc import compile_schema

    rows = []
    for n in SWEEP:
        schema = {"type": "object", "properties": {"s": {"type": "string", "maxLength": n}},
                  "required": ["s"]}  # fmt: skip
        text = json.dumps(schema)
        artifact = compile_schema(text)
        median, _ = compile_times(text, runs)
        rows.append({"maxLength": n, "states": artifact.metadata["stats"]["states"],
                     "canonical_bytes": len(artifact.to_bytes()), "median_ms": median * 1e3})  # fmt: skip
    return rows


def help_wall() -> dict:
    return {"median_s": wall([str(TRGC), "--help"])}


# -- output --------------------------------------------------------------------------------


def fmt(q: dict | None) -> str:
    if q is None:
        return "-"
    return f"p50 {q['p50_ms']:.1f}  p90 {q['p90_ms']:.1f}  max {q['max_ms']:.0f} ms  (n={q['n']})"


def render(doc: dict) -> None:
    print(
        f"load average {doc['load']}, python {doc['python']}, trgc timed by the {doc['clock']} clock,"
        f" subset construction {'compiled (numba loaded)' if doc['kernel'] else 'in Python'}"
    )
    if "person" in doc:
        p = doc["person"]
        print(
            f"\nperson.json: {p['states']} states, {p['transitions']} transitions, "
            f"{p['machines']} machines, {p['canonical_bytes']:,} canonical bytes"
        )
        print(
            f"  in-process compile median {p['median_ms']:.2f} ms (min {p['min_ms']:.2f}), "
            f"whole `trgc compile` process {p['process_s']:.3f} s"
        )
    if "corpus" in doc:
        c = doc["corpus"]
        print(
            f"\nJSONSchemaBench, first {c['per_subset']} per subset: {c['schemas']} schemas "
            f"({c['order']}), "
            f"trgc refused {sum(c['trgc_refused'].values())} {c['trgc_refused']}"
        )
        for engine, q in c["own"].items():
            print(f"  {engine:<11} own:    {fmt(q)}")
        print(f"  on the {c['common']} schemas every engine compiled:")
        for engine, q in c["on_common"].items():
            print(f"  {engine:<11} common: {fmt(q)}")
        for pair, r in c["ratios"].items():
            print(f"  {pair}: " + ", ".join(f"{k} {v:.2f}x" for k, v in r.items()))
        for name, why in c["missing_peers"].items():
            print(f"  {name}: {why}")
        print(
            "  slowest trgc: "
            + ", ".join(f"{s['schema']} {s['ms']:.0f} ms" for s in c["slowest_trgc"])
        )
    if "sweep" in doc:
        print("\nmaxLength sweep:")
        for row in doc["sweep"]:
            print(
                f"  {row['maxLength']:>9,}: {row['states']:>4} states, "
                f"{row['canonical_bytes']:>6,} bytes, {row['median_ms']:.2f} ms"
            )
    if "help" in doc:
        print(f"\ntrgc --help: {doc['help']['median_s']:.3f} s wall (median of 5)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--per-subset", type=int, default=150, help="schemas per subset (default 150)"
    )
    parser.add_argument(
        "--runs", type=int, default=30, help="in-process runs per timing (default 30)"
    )
    parser.add_argument("--no-peers", action="store_true", help="trgc alone in the corpus section")
    parser.add_argument("--order", choices=("passes", "interleaved"), default="passes",
                        help="corpus: passes runs each engine over every schema back to back "
                        "(default); interleaved runs every engine on each schema in turn")  # fmt: skip
    parser.add_argument("--tokenizer", choices=sorted(TOKENIZERS), default="llama3",
                        help="the peers' vocabulary (default llama3)")  # fmt: skip
    parser.add_argument(
        "--skip", choices=SECTIONS, action="append", default=[], help="skip a section"
    )
    parser.add_argument("--peer-timeout", type=float, default=20.0,
                        help="seconds a peer may spend on one schema (default 20)")  # fmt: skip
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="clock of trgc's in-process timings (default wall)")  # fmt: skip
    parser.add_argument("--kernel", action="store_true",
                        help="load numba first: the compiled subset construction runs")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--worker", choices=sorted(ENGINES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.tokenizer)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.kernel:
        import numba  # noqa: F401  (what a process that masks has loaded)

        from trgc import compile_schema

        for schema in KERNEL_WARMUP:  # numba loads each kernel from its cache at first use
            compile_schema(schema)
    from trgc.automata import jit

    doc: dict = {"load": list(os.getloadavg()), "python": sys.version.split()[0],
                 "clock": args.clock, "kernel": jit.enabled()}  # fmt: skip
    if "person" not in args.skip:
        doc["person"] = person(args.runs)
    if "sweep" not in args.skip:
        doc["sweep"] = sweep(max(3, args.runs // 3))
    if "help" not in args.skip:
        doc["help"] = help_wall()
    if "corpus" not in args.skip:
        doc["corpus"] = corpus(
            args.per_subset, not args.no_peers, args.tokenizer, args.peer_timeout, args.order
        )
    doc["load_after"] = list(os.getloadavg())
    if args.json:
        print(json.dumps(doc, indent=2, sort_keys=True))
    else:
        render(doc)
        print(f"load average at the end {doc['load_after']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
