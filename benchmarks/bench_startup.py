"""Whole-process start-up of the `trgc` command (issue 13, "Measure"): wall and CPU time.

    .venv/bin/python benchmarks/bench_startup.py [--runs 15] [--json] [--imports]

Runs each case `--runs` times as a fresh process and reports the median and p90 (nearest rank)
of its wall time and of its CPU time (user + sys of the child, from `os.wait4`):

  * `trgc --help` (target <= 0.15 s wall),
  * `trgc compile schemas/person.json -o FILE` (target <= 0.4 s wall),
  * `python -c pass`, the interpreter's own floor, for scale.

On the shared 2-core machine wall time mostly measures the scheduler under load; the CPU time
is the steadier number, and the load average is printed beside both. `--imports` adds, for
each trgc case, the top-level packages it imports and how many modules of each (from
`sys.modules` after the command ran), which is where start-up time goes.

Start-up also depends on whether Python finds up-to-date bytecode: an installed wheel has it,
but an editable checkout run with PYTHONDONTWRITEBYTECODE=1 recompiles every edited module in
every process. The benchmark reports how many trgc modules were stale and compiles them once
(into `__pycache__`, which git ignores) before timing, so the numbers are those of an install.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRGC = Path(sys.executable).with_name("trgc")
TARGETS_S = {"help": 0.15, "compile": 0.4}

# Prints, on stderr, the top-level packages imported by running `trgc ARGS...` in-process.
IMPORTS_PROBE = """
import collections, sys
before = set(sys.modules)
from trgc.cli.app import main
sys.argv = ["trgc", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
counts = collections.Counter(m.split(".")[0] for m in set(sys.modules) - before)
sys.stderr.write("\\n" + " ".join(f"{k}:{v}" for k, v in counts.most_common(12)) + "\\n")
"""


def run_once(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + sys) seconds of one child process; a failing child is an error."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr = child.stderr.read().decode(errors="replace") if child.stderr else ""
    if child.stderr:
        child.stderr.close()
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}: {stderr.strip()}")
    return wall, usage.ru_utime + usage.ru_stime


def rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(argv: list[str], runs: int) -> dict:
    run_once(argv)  # warm the page cache; not counted
    walls, cpus = zip(*(run_once(argv) for _ in range(runs)), strict=True)
    return {
        "runs": runs,
        "wall_p50_s": rank(list(walls), 0.5),
        "wall_p90_s": rank(list(walls), 0.9),
        "cpu_p50_s": rank(list(cpus), 0.5),
        "cpu_p90_s": rank(list(cpus), 0.9),
    }


def imports_of(args: list[str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS_PROBE, *args], capture_output=True, text=True, check=False
    )
    return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""


def _stale(source: Path) -> bool:
    """Whether Python would recompile `source`: its timestamp pyc is missing or records
    another modification time or size (the check the import system makes)."""
    import importlib.util

    try:
        header = Path(importlib.util.cache_from_source(str(source))).read_bytes()[:16]
    except OSError:
        return True
    stat = source.stat()
    recorded = (int.from_bytes(header[8:12], "little"), int.from_bytes(header[12:16], "little"))
    return len(header) < 16 or recorded != (int(stat.st_mtime) & 0xFFFFFFFF, stat.st_size)


def stale_modules() -> int:
    """How many trgc modules lack up-to-date bytecode (then compiled, so timing sees an install)."""
    stale = sum(_stale(source) for source in (ROOT / "src" / "trgc").rglob("*.py"))
    compileall.compile_dir(ROOT / "src" / "trgc", quiet=1)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="processes per case (default 15)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--imports", action="store_true", help="list the packages each case loads")
    options = parser.parse_args(argv)
    stale = stale_modules()
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "person.trga")
        cases = {
            "python": [sys.executable, "-c", "pass"],
            "help": [str(TRGC), "--help"],
            "compile": [str(TRGC), "compile", str(ROOT / "schemas/person.json"), "-o", out],
        }
        doc: dict = {"stale_bytecode_compiled": stale, "cases": {}}
        for name, case in cases.items():
            doc["cases"][name] = measure(case, options.runs)
            if options.imports and name != "python":
                doc["cases"][name]["imports"] = imports_of(case[1:])
    doc["load_average"] = os.getloadavg()
    if options.json:
        print(json.dumps(doc, indent=2, sort_keys=True))
        return 0
    print(f"{options.runs} runs per case; {stale} stale trgc bytecode files compiled first")
    print(f"{'case':8} {'wall p50':>9} {'wall p90':>9} {'cpu p50':>8} {'cpu p90':>8}  target")
    for name, row in doc["cases"].items():
        target = f"<= {TARGETS_S[name]:.2f} s wall" if name in TARGETS_S else "(floor)"
        print(
            f"{name:8} {row['wall_p50_s']:9.3f} {row['wall_p90_s']:9.3f} "
            f"{row['cpu_p50_s']:8.3f} {row['cpu_p90_s']:8.3f}  {target}"
        )
        if "imports" in row:
            print(f"         imports {row['imports']}")
    print("load average: " + " ".join(f"{x:.2f}" for x in doc["load_average"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
