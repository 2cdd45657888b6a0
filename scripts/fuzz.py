"""The long fuzzing campaign: every input kind of tests/fuzz_targets.py for a CPU budget each.

    python scripts/fuzz.py                       # one CPU-hour per kind (the issue's target)
    python scripts/fuzz.py --cpu-seconds 60 --kinds trg,schema
    make fuzz                                    # the same, at nice 19 under a memory ceiling
    python scripts/fuzz.py --kinds trace --wall-seconds 3000   # also stop at a wall-clock time

Each kind runs Hypothesis with fresh random examples in rounds until its CPU time is spent.
A failing example (an exception other than a stable `TrgcError`, an example past its CPU
guard, memory past the ceiling) is a finding: its shrunk form and traceback are written to
`build/fuzz/findings/` (once per exception type and innermost frame), and Hypothesis keeps it
in `build/fuzz/examples` so the next run tries it first; the rest of this run goes on without
it, and a kind whose same finding recurs five times stops early. The summary (examples, CPU seconds, outcomes by code, findings) goes to
`build/fuzz/report.json` (rewritten after every round, so a run stopped early still leaves
its numbers) and stdout. On a shared machine `--wall-seconds` ends each kind at that wall-clock
time even when its CPU budget is not spent; the report shows how much CPU time each kind got.
Exit 1 when there was a finding.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# this checkout's trgc, whatever the interpreter has installed (an editable install of another
# worktree would otherwise be what gets fuzzed)
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis.database import (  # noqa: E402
    DirectoryBasedExampleDatabase,
    ExampleDatabase,
    InMemoryExampleDatabase,
)

import fuzz_targets  # noqa: E402

ROUND_EXAMPLES = 200
# a failure found this many times blocks its kind (Hypothesis finds it first every round)
REPEATS_TO_STOP = 5


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def campaign(
    kind: str,
    budget: float,
    out: Path,
    *,
    deadline: float = float("inf"),
    round_examples: int = ROUND_EXAMPLES,
    progress=lambda result: None,
) -> dict:
    """Fuzz `kind` in rounds until `budget` CPU seconds are spent or the wall clock passes
    `deadline`; `progress` gets the partial result after every round."""
    strategy, target = fuzz_targets.KINDS[kind]
    fuzz_targets.OUTCOMES.clear()
    findings: list[str] = []
    seen: dict[str, int] = {}
    database: ExampleDatabase = DirectoryBasedExampleDatabase(str(out / "examples"))
    start = cpu_seconds()
    rounds = 0
    examples = 0
    while cpu_seconds() - start < budget and time.time() < deadline:
        rounds += 1

        @settings(
            max_examples=round_examples,
            deadline=None,
            database=database,
            suppress_health_check=list(HealthCheck),
            print_blob=True,
        )
        @given(strategy)
        def run(case) -> None:
            nonlocal examples
            examples += 1
            target(case)

        try:
            run()
        except BaseException as error:  # noqa: BLE001 - every failure is a finding to keep
            if isinstance(error, KeyboardInterrupt):
                raise
            key = signature(error)
            seen[key] = seen.get(key, 0) + 1
            if seen[key] == 1:
                report = out / "findings" / f"{kind}-{len(findings) + 1}.txt"
                report.parent.mkdir(parents=True, exist_ok=True)
                report.write_text("".join(traceback.format_exception(error)), encoding="utf-8")
                findings.append(str(report))
                print(
                    f"  finding in {kind}: {type(error).__name__}: {str(error)[:200]}", flush=True
                )
            # the saved example would fail first in every later round: go on without it
            database = InMemoryExampleDatabase()
            if seen[key] >= REPEATS_TO_STOP:
                print(f"  {kind}: the same finding {seen[key]} times; stopping", flush=True)
                break
        progress(_result(kind, cpu_seconds() - start, rounds, examples, findings))
    return _result(kind, cpu_seconds() - start, rounds, examples, findings)


def signature(error: BaseException) -> str:
    """What makes two failures the same finding: the exception type and the innermost frame of
    trgc (or of the targets) it came from."""
    frames = [
        f"{Path(frame.filename).name}:{frame.lineno}"
        for frame in traceback.extract_tb(error.__traceback__)
        if "/trgc/" in frame.filename or frame.filename.endswith("fuzz_targets.py")
    ]
    return f"{type(error).__name__} at {frames[-1] if frames else '?'}"


def _result(kind: str, used: float, rounds: int, examples: int, findings: list[str]) -> dict:
    """One kind's summary; `examples` counts the examples run, the shrinking of a finding's
    example included."""
    return {
        "kind": kind,
        "cpu_seconds": round(used, 1),
        "rounds": rounds,
        "examples": examples,
        "outcomes": dict(fuzz_targets.OUTCOMES.most_common()),
        "findings": list(findings),
    }


def write_report(out: Path, results: list[dict]) -> dict:
    report = {"results": results, "findings": sum(len(r["findings"]) for r in results)}
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu-seconds", type=float, default=3600.0, help="CPU budget per kind")
    parser.add_argument("--kinds", default=",".join(fuzz_targets.KINDS), help="comma-separated")
    parser.add_argument(
        "--wall-seconds",
        type=float,
        default=float("inf"),
        help="also end each kind after this many wall-clock seconds (a shared machine)",
    )
    parser.add_argument(
        "--round-examples", type=int, default=ROUND_EXAMPLES, help="examples per Hypothesis run"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "fuzz")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    import trgc

    print(f"fuzzing trgc {trgc.__version__} from {Path(trgc.__file__).parent}", flush=True)
    results: list[dict] = []
    for kind in args.kinds.split(","):
        began = time.strftime("%H:%M:%S")
        print(f"{began} {kind}: {args.cpu_seconds:.0f} CPU seconds", flush=True)
        result = campaign(
            kind,
            args.cpu_seconds,
            args.out,
            deadline=time.time() + args.wall_seconds,
            round_examples=args.round_examples,
            progress=lambda partial: write_report(args.out, [*results, partial]),
        )
        results.append(result)
        write_report(args.out, results)
        print(
            f"  {result['examples']:,} examples in {result['cpu_seconds']} CPU s, "
            f"{len(result['findings'])} findings",
            flush=True,
        )
    return 1 if write_report(args.out, results)["findings"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
