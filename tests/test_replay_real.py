"""Generate and replay with real vocabularies (committed token tables of gpt2, llama3, qwen3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trgc.artifact.codec import save_artifact
from trgc.decode.sampler import SamplerSettings
from trgc.decode.session import generate_file, replay_file
from trgc.decode.trace import read_trace

ROOT = Path(__file__).resolve().parents[1]


CASES = [
    ("gpt2", 1, SamplerSettings(temperature=0.8, top_p=0.95)),
    ("llama3", 2, SamplerSettings(temperature=0.0)),
    ("qwen3", 3, SamplerSettings(top_k=40, min_p=0.02)),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,seed,settings", CASES, ids=[c[0] for c in CASES])
def test_real_vocabulary_generate_then_replay(tmp_path, name, seed, settings):
    import trgc

    table = ROOT / "tokenizers" / f"{name}.trt"
    if not table.exists():
        pytest.skip(f"the token table is missing: {table}")
    artifact = tmp_path / "json.trga"
    save_artifact(trgc.compile_grammar((ROOT / "grammars" / "json.trg").read_text()), artifact)
    for seed, settings in (
        (1, SamplerSettings(temperature=0.8, top_p=0.95)),
        (2, SamplerSettings(temperature=0.0)),
        (3, SamplerSettings(top_k=40, min_p=0.02)),
    ):
        trace = tmp_path / f"run{seed}.jsonl"
        result = generate_file(
            artifact,
            table,
            logits=f"random:{seed}",
            settings=settings,
            seed=seed,
            max_tokens=48,
            trace_path=trace,
        )
        assert trgc.check(trgc.load_artifact(artifact), result.output, prefix=True).accepted
        report = replay_file(trace)
        assert report.identical, report.divergence
        assert read_trace(trace).header["tokenizer"]["vocab_size"] > 50_000
