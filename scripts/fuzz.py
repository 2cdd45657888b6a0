"""The long fuzzing campaign: every input kind of tests/fuzz_targets.py for a CPU budget each.

    python scripts/fuzz.py                       # one CPU-hour per kind (the issue's target)
    python scripts/fuzz.py --cpu-seconds 60 --kinds trg,schema
    make fuzz                                    # the same, at nice 19 under a memory ceiling

Each kind runs Hypothesis with fresh random examples in rounds until its CPU time is spent.
A failing example (an exception other than a stable `TrgcError`, an example past its CPU
guard, memory past the ceiling) is a finding: its shrunk form and traceback are written to
`build/fuzz/findings/`, and Hypothesis keeps it in `build/fuzz/examples` so the next run tries
it first. The summary (examples, CPU seconds, outcomes by code, findings) goes to
`build/fuzz/report.json` and stdout. Exit 1 when there was a finding.
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
sys.path.insert(0, str(ROOT / "tests"))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis.database import DirectoryBasedExampleDatabase  # noqa: E402

import fuzz_targets  # noqa: E402

ROUND_EXAMPLES = 200


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def campaign(kind: str, budget: float, out: Path) -> dict:
    strategy, target = fuzz_targets.KINDS[kind]
    fuzz_targets.OUTCOMES.clear()
    findings: list[str] = []
    database = DirectoryBasedExampleDatabase(str(out / "examples"))
    start = cpu_seconds()
    rounds = 0
    while cpu_seconds() - start < budget:
        rounds += 1

        @settings(
            max_examples=ROUND_EXAMPLES,
            deadline=None,
            database=database,
            suppress_health_check=list(HealthCheck),
            print_blob=True,
        )
        @given(strategy)
        def run(case) -> None:
            target(case)

        try:
            run()
        except BaseException as error:  # noqa: BLE001 - every failure is a finding to keep
            if isinstance(error, KeyboardInterrupt):
                raise
            report = out / "findings" / f"{kind}-{len(findings) + 1}.txt"
            report.parent.mkdir(parents=True, exist_ok=True)
            report.write_text("".join(traceback.format_exception(error)), encoding="utf-8")
            findings.append(str(report))
            print(f"  finding in {kind}: {type(error).__name__}: {str(error)[:200]}", flush=True)
    used = cpu_seconds() - start
    return {
        "kind": kind,
        "cpu_seconds": round(used, 1),
        "rounds": rounds,
        "examples": rounds * ROUND_EXAMPLES,
        "outcomes": dict(fuzz_targets.OUTCOMES.most_common()),
        "findings": findings,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu-seconds", type=float, default=3600.0, help="CPU budget per kind")
    parser.add_argument("--kinds", default=",".join(fuzz_targets.KINDS), help="comma-separated")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "fuzz")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for kind in args.kinds.split(","):
        began = time.strftime("%H:%M:%S")
        print(f"{began} {kind}: {args.cpu_seconds:.0f} CPU seconds", flush=True)
        result = campaign(kind, args.cpu_seconds, args.out)
        results.append(result)
        print(
            f"  {result['examples']:,} examples in {result['cpu_seconds']} CPU s, "
            f"{len(result['findings'])} findings",
            flush=True,
        )
    report = {"results": results, "findings": sum(len(r["findings"]) for r in results)}
    (args.out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if report["findings"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
