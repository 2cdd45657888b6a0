"""SmolLM2-135M-Instruct end to end (slow: loads the real model, about a minute on 2 cores).

The token table read from the GGUF metadata agrees with the tokenizers library on the probe
corpus; a schema-constrained generation through trgc's sampler validates against the schema
with jsonschema and its trace replays bit for bit without the model; the logits processor
keeps Hugging Face's own generate inside the schema's language.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import trgc

pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("gguf")

from trgc.decode.sampler import SamplerSettings  # noqa: E402
from trgc.integrations import smollm2  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROBE = (ROOT / "src" / "trgc" / "tokenizer" / "probe.txt").read_text(encoding="utf-8")
SCHEMA_PATH = ROOT / "benchmarks" / "quality" / "schemas" / "person.json"
PROMPT = "Ada Lovelace, born in 1815, was an English mathematician. Reply with only a JSON object with the keys name, born and occupation."


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("TRGC_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))  # build + verify afresh
    try:
        yield smollm2.load_model("smollm2", probe=PROBE)
    finally:
        mp.undo()


def test_gguf_table_is_the_verified_49152_token_byte_level_bpe(loaded):
    table = loaded.table
    assert table.vocab_size == 49152
    assert table.counts() == {"normal": 49135, "byte": 0, "special": 17, "unused": 0}
    assert table.special_tokens["<|im_end|>"] == 2 and table.eos_ids == (2,)
    assert loaded.table_path.is_file()
    assert trgc.load_tokenizer(loaded.table_path).sha256 == table.sha256
    smollm2.verify_against_hf(table, loaded.hf_tokenizer, PROBE)
    ids = loaded.hf_tokenizer('Grüße, 東京! 👍 {"a": 1}', add_special_tokens=False)["input_ids"]
    assert b"".join(table.token_bytes(i) for i in ids) == 'Grüße, 東京! 👍 {"a": 1}'.encode()


@pytest.mark.parametrize(("temperature", "seed"), [(0.0, 0), (0.8, 7)])
def test_constrained_generation_validates_and_replays(loaded, tmp_path, temperature, seed):
    from trgc.artifact.codec import save_artifact
    from trgc.decode.session import replay_file
    from trgc.integrations.generate import generate_with_model

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    artifact = tmp_path / "person.trga"
    save_artifact(trgc.compile_schema(schema), artifact)
    trace = tmp_path / "run.jsonl"
    result = generate_with_model(
        artifact,
        loaded,
        PROMPT,
        settings=SamplerSettings(temperature=temperature),
        seed=seed,
        max_tokens=64,
        trace_path=trace,
    )
    assert result.completed, result.end
    value = json.loads(result.output)
    jsonschema.validate(value, schema)
    assert trgc.check(trgc.compile_schema(schema), result.output).accepted
    header = json.loads(trace.read_text().splitlines()[0])
    assert header["logits"].startswith("model:gguf:sha256:")
    assert "Lovelace" not in header["logits"]  # the prompt is hashed, never stored
    report = replay_file(trace)
    assert report.identical, report.divergence
    assert report.steps == result.end["steps"]


def test_logits_processor_keeps_hf_generate_in_the_language(loaded):
    from trgc.integrations.model_logits import encode_prompt
    from trgc.integrations.transformers import TrgcLogitsProcessor

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    artifact = trgc.compile_schema(schema)
    matcher = trgc.Matcher(artifact, loaded.table)
    processor = TrgcLogitsProcessor(matcher, loaded.table)
    prompt = torch.tensor([encode_prompt(loaded.hf_tokenizer, PROMPT)])
    out = loaded.model.generate(
        prompt,
        attention_mask=torch.ones_like(prompt),
        logits_processor=transformers.LogitsProcessorList([processor]),
        max_new_tokens=64,
        do_sample=False,
        eos_token_id=2,
        pad_token_id=2,
    )
    ids = out[0, prompt.shape[1] :].tolist()
    assert ids[-1] == 2, "the constrained generation finishes within 64 tokens"
    data = b"".join(loaded.table.token_bytes(i) for i in ids[:-1])
    jsonschema.validate(json.loads(data), schema)
    processor.sync(out)
    assert matcher.is_terminated()
