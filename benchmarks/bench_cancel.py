"""How long Ctrl-C takes to be acknowledged by `trgc generate` (the report asks for 16 ms).

    .venv/bin/python benchmarks/bench_cancel.py [--artifact A] [--tokenizer T] [--trials N]

Each trial starts `trgc generate` in a subprocess with EOS banned (so it never stops by
itself), waits for its first output byte, sleeps a random 0-300 ms (seeded) so the signal
lands anywhere in a step, sends SIGINT and measures the time until the process reports its
cancellation record on stderr (`stop: cancelled`), and until it exits. Defaults: the JSON
grammar over the Qwen3 table, where an uncached mask is the slowest step. Prints the worst,
median and each trial's acknowledgement time; the acknowledgement includes publishing the
trace (it is written before the stop line), not the interpreter's exit.
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
TRGC = [sys.executable, "-c", "import sys; from trgc.cli.app import main; sys.argv = ['trgc'] + sys.argv[1:]; main()"]


def _eos_bans(tokenizer: Path) -> list[str]:
    import trgc

    table = trgc.load_tokenizer(tokenizer)
    return [x for eos in table.eos_ids for x in ("--ban", str(eos))]


def trial(artifact: Path, tokenizer: Path, bans: list[str], delay: float, tmp: Path) -> tuple[float, float]:
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
    acknowledged = None
    for line in proc.stderr:
        if line.startswith(b"stop: cancelled"):
            acknowledged = time.perf_counter() - sent
    proc.wait()
    exited = time.perf_counter() - sent
    if proc.returncode != 130 or acknowledged is None:
        raise SystemExit(f"expected a cancellation (exit 130), got exit {proc.returncode}")
    return acknowledged, exited


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--artifact", type=Path, default=None, help="default: grammars/json.trg compiled")
    parser.add_argument("--tokenizer", type=Path, default=ROOT / "tokenizers" / "qwen3.trt")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    with tempfile.TemporaryDirectory(prefix="trgc-cancel-") as name:
        tmp = Path(name)
        artifact = options.artifact
        if artifact is None:
            import trgc
            from trgc.artifact.codec import save_artifact

            artifact = tmp / "json.trga"
            save_artifact(trgc.compile_grammar((ROOT / "grammars" / "json.trg").read_text()), artifact)
        bans = _eos_bans(options.tokenizer)
        acks, exits = [], []
        for _ in range(options.trials):
            ack, exited = trial(artifact, options.tokenizer, bans, rng.uniform(0.0, 0.3), tmp)
            acks.append(ack)
            exits.append(exited)
    print(f"{options.trials} trials, {artifact.name} over {options.tokenizer.name}")
    print(f"acknowledged: worst {max(acks) * 1000:.1f} ms, median {statistics.median(acks) * 1000:.1f} ms")
    print(f"exited:       worst {max(exits) * 1000:.1f} ms, median {statistics.median(exits) * 1000:.1f} ms")
    print("each (ms): " + ", ".join(f"{a * 1000:.1f}" for a in acks))


if __name__ == "__main__":
    main()
