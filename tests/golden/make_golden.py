"""Regenerate the golden decoding traces (run: .venv/bin/python tests/golden/make_golden.py).

Inputs, all committed beside this script so that the goldens are self-contained:
  * `json.trga`            grammars/json.trg compiled by trgc
  * `json-bytelevel.trt`   the token table of tokenizers/synthetic/json-bytelevel
  * `steps.npy`            hand-made logits with NaN, -inf and a +inf at step 6
Every case is one `trgc generate` run; CI replays each trace (tests/test_replay_golden.py)
and re-runs each case, so any change of masks, sampler, RNG or trace format fails.
Regenerate only for an intended behaviour change, and say so in the commit; when the artifact
or token-table format changes, delete `json.trga` / `json-bytelevel.trt` first so that they are
rebuilt.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ARTIFACT = HERE / "json.trga"
TOKENIZER = HERE / "json-bytelevel.trt"
NPY = HERE / "steps.npy"

CASES: dict[str, dict] = {
    "sampled": {
        "logits": "random:1",
        "seed": 1,
        "max_tokens": 64,
        "settings": {"temperature": 0.8, "top_p": 0.95},
    },
    "greedy": {"logits": "random:2", "seed": 2, "max_tokens": 64, "settings": {"temperature": 0.0}},
    "filters": {
        "logits": "random:3",
        "seed": 3,
        "max_tokens": 48,
        "settings": {
            "top_k": 5,
            "min_p": 0.05,
            "repetition_penalty": 1.2,
            "frequency_penalty": 0.1,
            "presence_penalty": 0.2,
            "banned_ids": [34],
        },
    },
    "hot": {"logits": "random:7", "seed": 7, "max_tokens": 96, "settings": {"temperature": 1.7}},
    "max-tokens": {"logits": "random:4", "seed": 4, "max_tokens": 6, "settings": {}},
    "cancelled": {
        "logits": "random:1",
        "seed": 9,
        "max_tokens": 64,
        "settings": {},
        "cancel_after": 5,
    },
    "nan-inf": {"logits": "npy", "seed": 5, "max_tokens": 20, "settings": {"temperature": 0.9}},
}


def make_inputs() -> None:
    """Compile the grammar, build the table and the logits file (only when missing)."""
    import trgc
    from trgc.artifact.codec import save_artifact

    if not ARTIFACT.exists():
        save_artifact(
            trgc.compile_grammar(
                (ROOT / "grammars" / "json.trg").read_text(), source="grammars/json.trg"
            ),
            ARTIFACT,
        )
    if not TOKENIZER.exists():
        trgc.load_tokenizer(ROOT / "tokenizers" / "synthetic" / "json-bytelevel").save(TOKENIZER)
    if not NPY.exists():
        vocab = trgc.load_tokenizer(TOKENIZER).vocab_size
        rng = np.random.default_rng(20261130)
        logits = rng.normal(0.0, 2.0, (20, vocab))
        logits[0, ::7] = np.nan
        logits[2, ::3] = -np.inf
        logits[4, :] = np.nan
        logits[4, ord("1")] = 3.0
        logits[6, 0] = np.inf
        np.save(NPY, logits)


def run_case(name: str, out_dir: Path):
    """Run one case, writing `<out_dir>/<name>.jsonl` and its sidecar; returns the result."""
    from trgc.decode.generate import decode
    from trgc.decode.logits import NpyLogits, parse_logits_spec
    from trgc.decode.sampler import SamplerSettings
    from trgc.decode.session import open_inputs

    case = CASES[name]
    inputs = open_inputs(ARTIFACT, TOKENIZER)
    vocab = inputs.tokenizer.vocab_size
    source = (
        NpyLogits(NPY, vocab)
        if case["logits"] == "npy"
        else parse_logits_spec(case["logits"], vocab)
    )
    settings = dict(case["settings"])
    settings["banned_ids"] = tuple(settings.get("banned_ids", ()))
    done = [0]  # steps completed

    def on_step(steps: int) -> None:
        done[0] = steps

    def cancelled() -> bool:
        # by steps, not by polls: the mask engine also polls at its checkpoints, as many times
        # as it computes (a warm mask cache computes nothing), so a poll count would make the
        # golden depend on which tests ran before
        return "cancel_after" in case and done[0] >= case["cancel_after"]

    return decode(
        inputs.matcher(),
        inputs.tokenizer,
        source,
        settings=SamplerSettings(**settings),
        seed=case["seed"],
        max_tokens=case["max_tokens"],
        trace_path=out_dir / f"{name}.jsonl",
        identity=inputs.identity(),
        logits_description="npy:steps.npy" if case["logits"] == "npy" else source.description,
        on_step=on_step,
        cancelled=cancelled,
    )


def main() -> int:
    make_inputs()
    for name in CASES:
        result = run_case(name, HERE)
        print(f"{name}: {result.stop}, {result.end['steps']} steps, {len(result.output)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
