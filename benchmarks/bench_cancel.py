"""How long a cancel request takes to be acknowledged (the report asks for 16 ms).

    .venv/bin/python benchmarks/bench_cancel.py [--artifact A] [--tokenizer T] [--trials N]
    .venv/bin/python benchmarks/bench_cancel.py --engine-gaps [--tokenizer T] [--schemas N]

Default mode, end to end: each trial starts `trgc generate` in a subprocess with EOS banned
(so it never stops by itself), waits for its first output byte, sleeps a random 0-300 ms
(seeded) so the signal lands anywhere in a step, sends SIGINT and measures the time until the
process acknowledges on stderr (`cancelling: generation stops at its next step`, written by
the signal handler; the run stops at its next poll), until its cancellation record
(`stop: cancelled`, after the trace and sidecar are written and fsynced) and until it exits.
Defaults: the JSON grammar over the Qwen3 table.

`--engine-gaps`: the bound the mask engine itself puts on an acknowledgement. Every mask of a
cold run (each sampled JSONSchemaBench schema compiled, its LLM-written instance teacher-forced
through a fresh `MaskCache`, as benchmarks/bench_live.py does) is computed inside a
`cancellable` scope whose check records the time since the previous checkpoint (or since the
mask began); the last stretch runs to the mask's end. A cancel request waits at most the
longest such stretch. Prints the longest stretch, its p99 and p50 over all stretches, and the
longest whole mask for comparison.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRGC = [
    sys.executable,
    "-c",
    "import sys; from trgc.cli.app import main; sys.argv = ['trgc'] + sys.argv[1:]; main()",
]


def _eos_bans(tokenizer: Path) -> list[str]:
    import trgc

    table = trgc.load_tokenizer(tokenizer)
    return [x for eos in table.eos_ids for x in ("--ban", str(eos))]


def trial(
    artifact: Path, tokenizer: Path, bans: list[str], delay: float, tmp: Path
) -> tuple[float, float]:
    args = ["generate", str(artifact), "-t", str(tokenizer), "--max-tokens", "1000000",
            "--trace", str(tmp / "run.jsonl"), *bans]  # fmt: skip
    proc = subprocess.Popen(
        [*TRGC, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    if not proc.stdout.read(1):
        raise SystemExit(f"generate produced no output: {proc.stderr.read().decode()}")
    time.sleep(delay)
    sent = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    acknowledged = stopped = None
    for line in proc.stderr:
        if line.startswith(b"cancelling: generation stops") and acknowledged is None:
            acknowledged = time.perf_counter() - sent
        if line.startswith(b"stop: cancelled"):
            stopped = time.perf_counter() - sent
    proc.wait()
    exited = time.perf_counter() - sent
    if proc.returncode != 130 or acknowledged is None or stopped is None:
        raise SystemExit(f"expected a cancellation (exit 130), got exit {proc.returncode}")
    return acknowledged, stopped, exited


def engine_gaps(tokenizer_name: str, n_schemas: int) -> None:
    import gc

    import numpy as np

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_live  # noqa: PLC0415  (the live benchmark's inputs and engine)

    from trgc.engine.cancel import cancellable

    _, table, hf = bench_live.load_vocab(tokenizer_name)
    cases = bench_live.prepare(bench_live.sample(n_schemas, 0), table, hf)
    engine = bench_live.TrgcEngine(table)
    bench_live.warm_up(engine, hf)
    engine.cache.clear()
    gc.collect()
    gc.freeze()
    stretches: list[float] = []
    masks: list[float] = []
    perf = time.perf_counter

    def timed(fill):
        last = [perf()]

        def check() -> bool:
            now = perf()
            stretches.append(now - last[0])
            last[0] = now
            return False

        def run():
            begin = last[0] = perf()
            with cancellable(check):
                fill()
            end = perf()
            stretches.append(end - last[0])
            masks.append(end - begin)

        return run

    for case in cases:
        if case["ids"] is None or case["problem"]:
            continue
        try:
            compiled = engine.compile(case["schema"])
            fill, accept = engine.matcher(compiled)
        except Exception:  # noqa: BLE001 - unsupported schemas are skipped, as in bench_live
            continue
        run = timed(fill)
        run()
        for token in case["ids"]:
            if not accept(token):
                break
            run()
    a = np.asarray(stretches) * 1e3
    print(f"{tokenizer_name}: {len(masks)} masks over {len(cases)} sampled schemas, "
          f"{a.size} stretches between checkpoints")  # fmt: skip
    print(f"longest stretch {a.max():.2f} ms, p99 {np.percentile(a, 99):.3f} ms, "
          f"p50 {np.percentile(a, 50):.3f} ms; longest whole mask {max(masks) * 1e3:.2f} ms; "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--artifact", type=Path, default=None, help="default: grammars/json.trg compiled"
    )
    parser.add_argument("--tokenizer", type=Path, default=ROOT / "tokenizers" / "qwen3.trt")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engine-gaps", action="store_true", help="measure the longest stretch "
                        "between two checkpoints of the mask engine instead (see above)")  # fmt: skip
    parser.add_argument("--schemas", type=int, default=60, help="--engine-gaps: schemas sampled")
    options = parser.parse_args()
    if options.engine_gaps:
        name = options.tokenizer.stem if options.tokenizer.suffix == ".trt" else "qwen3"
        engine_gaps(name, options.schemas)
        return
    rng = random.Random(options.seed)
    with tempfile.TemporaryDirectory(prefix="trgc-cancel-") as name:
        tmp = Path(name)
        artifact = options.artifact
        if artifact is None:
            import trgc
            from trgc.artifact.codec import save_artifact

            artifact = tmp / "json.trga"
            save_artifact(
                trgc.compile_grammar((ROOT / "grammars" / "json.trg").read_text()), artifact
            )
        bans = _eos_bans(options.tokenizer)
        times: dict[str, list[float]] = {"acknowledged": [], "stop line": [], "exited": []}
        for _ in range(options.trials):
            delay = rng.uniform(0.0, 0.3)
            outcome = trial(artifact, options.tokenizer, bans, delay, tmp)
            for key, value in zip(times, outcome, strict=True):
                times[key].append(value)
    print(f"{options.trials} trials, {artifact.name} over {options.tokenizer.name}, "
          f"load {os.getloadavg()[0]:.1f} (target: acknowledged within 16 ms)")  # fmt: skip
    for key, values in times.items():
        ms = [v * 1000 for v in values]
        print(f"{key + ':':14}worst {max(ms):.1f} ms, median {statistics.median(ms):.1f} ms")
    print("acknowledged, each (ms): " + ", ".join(f"{v * 1000:.1f}" for v in times["acknowledged"]))


if __name__ == "__main__":
    main()
