"""Model plumbing without a real model: GGUF token tables (tiny files written here), table
verification against the tokenizers library, model resolution, dependency errors, CLI usage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import trgc
from trgc.cli.app import app
from trgc.errors import TrgcError
from trgc.integrations import smollm2
from trgc.integrations.deps import require
from trgc.tokenizer.table import make_table

gguf = pytest.importorskip("gguf")
tokenizers = pytest.importorskip("tokenizers")

ROOT = Path(__file__).resolve().parents[1]
SYNTHETIC = ROOT / "tokenizers" / "synthetic" / "json-bytelevel"
PROBE = (ROOT / "src" / "trgc" / "tokenizer" / "probe.txt").read_text(encoding="utf-8")


def _write_gguf(path: Path, tokens: list[str], types: list[int], model: str = "gpt2") -> Path:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tokenizer_model(model)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_eos_token_id(0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_gguf_table_reads_exact_bytes_specials_and_added_tokens(tmp_path):
    from trgc.integrations.gguf_table import table_from_gguf

    path = _write_gguf(
        tmp_path / "m.gguf",
        ["<|endoftext|>", "a", "Ġb", "Ã©", "ĉĊ", "<extra>"],
        [3, 1, 1, 1, 1, 4],
    )
    table = table_from_gguf(path)
    assert [table.token_bytes(i) for i in range(6)] == [
        b"",
        b"a",
        b" b",
        "é".encode(),
        b"\t\n",
        b"<extra>",
    ]
    assert table.special_tokens == {"<|endoftext|>": 0}
    assert table.added_tokens == {"<extra>": 5}
    assert table.eos_ids == (0,)
    assert table.metadata["source_format"] == "gguf"
    assert table_from_gguf(path).sha256 == table.sha256  # deterministic


def test_gguf_table_refuses_other_models_and_token_types(tmp_path):
    from trgc.integrations.gguf_table import table_from_gguf

    with pytest.raises(TrgcError) as info:
        table_from_gguf(_write_gguf(tmp_path / "spm.gguf", ["<s>", "▁a"], [3, 1], model="llama"))
    assert info.value.code == "E_TOKENIZER_MODEL_TYPE"
    with pytest.raises(TrgcError) as info:
        table_from_gguf(_write_gguf(tmp_path / "byte.gguf", ["<s>", "<0x41>"], [3, 6]))
    assert info.value.code == "E_TOKENIZER_MODEL_TYPE"
    with pytest.raises(TrgcError) as info:
        table_from_gguf(_write_gguf(tmp_path / "bad.gguf", ["<s>", "a\u0800"], [3, 1]))
    assert info.value.code == "E_TOKENIZER_BYTE_LEVEL"
    (tmp_path / "junk.gguf").write_bytes(b"not a gguf file at all")
    with pytest.raises(TrgcError) as info:
        table_from_gguf(tmp_path / "junk.gguf")
    assert info.value.code == "E_TOKENIZER_FORMAT"


class _HFLike:
    """What verify_against_hf needs of a transformers tokenizer: its tokenizers backend."""

    def __init__(self, path: Path) -> None:
        self.backend_tokenizer = tokenizers.Tokenizer.from_file(str(path))


def test_verify_against_hf_accepts_the_right_table_and_refuses_a_tampered_one(tmp_path):
    hf = _HFLike(SYNTHETIC / "tokenizer.json")
    # the table built from the same serialisation the check writes (as for a GGUF model)
    (tmp_path / "tokenizer.json").write_text(hf.backend_tokenizer.to_str(), encoding="utf-8")
    table = trgc.load_tokenizer(tmp_path / "tokenizer.json")
    smollm2.verify_against_hf(table, hf, PROBE)
    pieces = [table.token_bytes(i) or None for i in range(table.vocab_size)]
    a, b = (i for i in range(table.vocab_size) if pieces[i] in (b"e", b"t"))
    pieces[a], pieces[b] = pieces[b], pieces[a]
    tampered = make_table(
        pieces,
        np.asarray(table.kinds),
        special_tokens=table.special_tokens,
        added_tokens=table.added_tokens,
        eos_ids=table.eos_ids,
        metadata={},
    )
    with pytest.raises(TrgcError) as info:
        smollm2.verify_against_hf(tampered, hf, PROBE)
    assert info.value.code == "E_MODEL_TOKENIZER_VERIFY"
    with pytest.raises(TrgcError) as info:
        smollm2.verify_against_hf(table, object(), PROBE)
    assert info.value.code == "E_MODEL_TOKENIZER_VERIFY"


def test_resolve_model_and_missing_dependencies(tmp_path, monkeypatch):
    with pytest.raises(TrgcError) as info:
        smollm2.resolve_model(str(tmp_path / "nowhere"))
    assert info.value.code == "E_MODEL_NOT_FOUND"
    (tmp_path / "folder").mkdir()
    with pytest.raises(TrgcError) as info:
        smollm2.resolve_model(str(tmp_path / "folder"))  # no config.json
    assert info.value.code == "E_MODEL_NOT_FOUND"
    gguf_file = _write_gguf(tmp_path / "x.gguf", ["<s>", "a"], [3, 1])
    assert smollm2.resolve_model(str(gguf_file)) == gguf_file
    with pytest.raises(TrgcError) as info:
        require("trgc_no_such_module", "this test")
    assert info.value.code == "E_INTEGRATION_DEPENDENCY"
    monkeypatch.setattr(smollm2, "SMOLLM2_PACKAGE", "trgc_no_such_package")
    with pytest.raises(TrgcError) as info:
        smollm2.smollm2_gguf()
    assert info.value.code == "E_INTEGRATION_DEPENDENCY"


def test_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TRGC_CACHE_DIR", str(tmp_path / "c"))
    assert smollm2.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("TRGC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert smollm2.cache_dir() == tmp_path / "x" / "trgc"


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def test_weights_hash_is_computed_once_and_cached(tmp_path, monkeypatch):
    from trgc.integrations import weights

    monkeypatch.setenv("TRGC_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "m.gguf"
    model.write_bytes(b"weights" * 1000)
    assert weights.weights_sha256(model) == "sha256:" + _sha256(b"weights" * 1000)
    hashed: list[Path] = []
    real = weights._sha256_file
    monkeypatch.setattr(weights, "_sha256_file", lambda p: hashed.append(p) or real(p))
    assert weights.weights_sha256(model) == "sha256:" + _sha256(b"weights" * 1000)
    assert hashed == []  # the second time comes from the cache
    model.write_bytes(b"other weights")  # rewritten in place: a new key, hashed again
    assert weights.weights_sha256(model) == "sha256:" + _sha256(b"other weights")
    assert hashed == [model]


def test_weights_hash_of_a_folder_covers_every_weight_file(tmp_path, monkeypatch):
    import json

    from trgc.integrations import weights

    monkeypatch.setenv("TRGC_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    folder.mkdir()
    with pytest.raises(TrgcError) as info:
        weights.weights_sha256(folder)
    assert info.value.code == "E_MODEL_NOT_FOUND"
    (folder / "a.safetensors").write_bytes(b"A")
    (folder / "b.safetensors").write_bytes(b"B")
    (folder / "config.json").write_bytes(b"{}")
    document = {"a.safetensors": _sha256(b"A"), "b.safetensors": _sha256(b"B")}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    assert weights.weights_sha256(folder) == "sha256:" + _sha256(text.encode())
    (folder / "b.safetensors").write_bytes(b"B2")
    assert weights.weights_sha256(folder) != "sha256:" + _sha256(text.encode())


def test_prompt_policy_hash_covers_template_and_system_message():
    from trgc.integrations.model_logits import prompt_policy_sha256

    class Tok:
        def __init__(self, template):
            self.chat_template = template

    base = prompt_policy_sha256(Tok("{{ messages }}"), system=None)
    assert base == prompt_policy_sha256(Tok("{{ messages }}"), system=None)
    assert base != prompt_policy_sha256(Tok("{{ messages }}!"), system=None)
    assert base != prompt_policy_sha256(Tok("{{ messages }}"), system="be brief")
    assert base != prompt_policy_sha256(Tok(None), system=None)
    assert base.startswith("sha256:") and len(base) == 7 + 64


def test_generate_cli_model_usage_errors(tmp_path):
    art = tmp_path / "a.trga"
    runner = CliRunner()
    assert (
        runner.invoke(
            app,
            [
                "compile",
                str(SYNTHETIC.parent.parent.parent / "grammars" / "json.trg"),
                "-o",
                str(art),
            ],
        ).exit_code
        == 0
    )
    result = runner.invoke(app, ["generate", str(art), "--model", "smollm2"])
    assert result.exit_code == 2 and "E_USAGE" in result.output
    result = runner.invoke(
        app, ["generate", str(art), "--model", "smollm2", "--prompt", "x", "--logits", "random:1"]
    )
    assert result.exit_code == 2 and "E_USAGE" in result.output
    result = runner.invoke(app, ["generate", str(art)])
    assert result.exit_code == 2 and "E_USAGE" in result.output
    result = runner.invoke(
        app, ["generate", str(art), "--model", str(tmp_path / "none.gguf"), "--prompt", "x"]
    )
    assert result.exit_code == 2 and "E_MODEL_NOT_FOUND" in result.output


def test_import_trgc_and_cli_help_stay_free_of_torch():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from trgc.cli.app import app\n"
        "assert CliRunner().invoke(app, ['--help']).exit_code == 0\n"
        "assert CliRunner().invoke(app, ['quality', '--help']).exit_code == 0\n"
        "print([m for m in ('torch', 'transformers', 'gguf', 'matplotlib') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.fixture()
def tiny_model_folder(tmp_path, monkeypatch):
    """A local Hugging Face folder: random-weight tiny Llama + the synthetic byte-level tokenizer."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TRGC_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "tiny"
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(SYNTHETIC / "tokenizer.json"), eos_token="<|endoftext|>"
    )
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=280,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=256,
        eos_token_id=273,
        bos_token_id=273,
        pad_token_id=273,
    )
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    return folder


def test_generate_with_a_local_model_folder_traces_and_replays(tiny_model_folder, tmp_path):
    from trgc.artifact.codec import save_artifact
    from trgc.decode.sampler import SamplerSettings
    from trgc.decode.session import replay_file
    from trgc.integrations.generate import generate_with_model

    loaded = smollm2.load_model(str(tiny_model_folder), probe=PROBE)
    assert loaded.name.startswith("hf:tiny:sha256:") and loaded.table_path.is_file()
    art = tmp_path / "json.trga"
    save_artifact(trgc.compile_grammar((ROOT / "grammars" / "json.trg").read_text()), art)
    for temperature, seed in [(0.0, 0), (1.0, 3)]:
        trace = tmp_path / f"run-{seed}.jsonl"
        streamed: list[bytes] = []
        result = generate_with_model(
            art,
            loaded,
            "hello",
            settings=SamplerSettings(temperature=temperature),
            seed=seed,
            max_tokens=12,
            trace_path=trace,
            on_bytes=streamed.append,
        )
        assert b"".join(streamed) == result.output
        assert trgc.check(trgc.load_artifact(art), result.output, prefix=True).accepted
        assert replay_file(trace).identical
    other = tmp_path / "other.trt"
    trgc.load_tokenizer(ROOT / "tokenizers" / "gpt2.trt").save(other)
    with pytest.raises(TrgcError) as info:
        generate_with_model(
            art,
            loaded,
            "hello",
            settings=SamplerSettings(),
            seed=0,
            max_tokens=2,
            tokenizer_path=other,
        )
    assert info.value.code == "E_TOKENIZER_IDENTITY_MISMATCH"
    generate_with_model(  # the model's own table is accepted
        art,
        loaded,
        "hello",
        settings=SamplerSettings(),
        seed=0,
        max_tokens=2,
        tokenizer_path=loaded.table_path,
    )


def test_generate_and_replay_cli_with_a_model_folder(tiny_model_folder, tmp_path):
    import json

    runner = CliRunner()
    art = tmp_path / "json.trga"
    assert (
        runner.invoke(
            app, ["compile", str(ROOT / "grammars" / "json.trg"), "-o", str(art)]
        ).exit_code
        == 0
    )
    trace = tmp_path / "run.jsonl"
    args = ["generate", str(art), "--model", str(tiny_model_folder), "--prompt", "hi"]
    result = runner.invoke(app, [*args, "--max-tokens", "6", "--trace", str(trace), "--json"])
    doc = json.loads(result.stdout)
    assert result.exit_code == (0 if doc["completed"] else 4), result.output
    assert doc["steps"] >= 1 and doc["trace"] == str(trace)
    header = json.loads(trace.read_text().splitlines()[0])
    assert (
        header["logits"].startswith("model:hf:tiny:") and "hi" not in header["logits"].split(";")[1]
    )
    from trgc.integrations.model_logits import prompt_policy_sha256
    from trgc.integrations.smollm2 import load_hf_tokenizer

    weights = {"model.safetensors": _sha256((tiny_model_folder / "model.safetensors").read_bytes())}
    text = json.dumps(weights, sort_keys=True, separators=(",", ":"))
    composition = header["composition"]
    assert composition["model"] == {
        "name": header["logits"].split(";")[0].removeprefix("model:"),
        "weights_sha256": "sha256:" + _sha256(text.encode()),
    }
    policy = prompt_policy_sha256(load_hf_tokenizer(tiny_model_folder), system=None)
    assert composition["prompt_policy_sha256"] == policy
    assert isinstance(header["timings"]["model_load_us"], int)
    assert doc["run"]["composition"] == composition
    replayed = runner.invoke(app, ["replay", str(trace), "--json"])
    assert replayed.exit_code == 0 and json.loads(replayed.stdout)["identical"] is True


def test_quality_cli_with_a_model_folder(tiny_model_folder, tmp_path):
    import json

    quality = ROOT / "benchmarks" / "quality"
    lines = [
        {
            "id": "p",
            "kind": "plain",
            "prompt": "hi",
            "max_tokens": 4,
            "gold": {"contains_any": ["x"]},
        },
        {
            "id": "c",
            "kind": "extraction",
            "prompt": "city",
            "max_tokens": 6,
            "schema": str(quality / "schemas" / "city.json"),
            "gold": {"city": "Paris"},
        },
        {
            "id": "a",
            "kind": "arithmetic",
            "prompt": "sum",
            "max_tokens": 4,
            "schema": str(quality / "schemas" / "answer.json"),
            "tool_prompt": "expr",
            "tool_grammar": str(quality / "grammars" / "tinycalc-line.trg"),
            "gold": "2",
        },
    ]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    out = tmp_path / "q.md"
    args = [
        "quality",
        "--tasks",
        str(tasks),
        "--output",
        str(out),
        "--model",
        str(tiny_model_folder),
    ]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert sorted(doc["arms"]) == ["constrained", "tool", "unconstrained"]
    assert doc["facts"]["runs"] == 9 and doc["facts"]["decodes"] == 3 + 2 + 1
    assert doc["plot"] == str(out.with_suffix(".png")) and out.with_suffix(".png").is_file()
    assert "# trgc quality experiment" in out.read_text(encoding="utf-8")
    bad = CliRunner().invoke(app, [*args, "--arms", "nope"])
    assert bad.exit_code == 2 and "E_USAGE" in bad.output
