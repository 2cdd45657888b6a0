"""Bad tokenizer inputs: each is a clear, stable error code, and no output file is left behind."""

from __future__ import annotations

import base64
import json
import shutil

import pytest
import zstandard
from typer.testing import CliRunner

from test_tokenizer_support import FIXTURES, SYNTH, real_path
from trgc.cli.app import app
from trgc.errors import TrgcError
from trgc.tokenizer import build_table


def bytelevel_doc() -> dict:
    return json.loads((SYNTH / "json-bytelevel" / "tokenizer.json").read_text(encoding="utf-8"))


def write(folder, name, content):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if isinstance(content, (dict, list)):
        content = json.dumps(content, ensure_ascii=False)
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def code_of(path, **options) -> str:
    with pytest.raises(TrgcError) as err:
        build_table(path, **options)
    return err.value.code


def test_truncated_json(tmp_path):
    text = (SYNTH / "json-bytelevel" / "tokenizer.json").read_text(encoding="utf-8")
    err = pytest.raises(
        TrgcError, build_table, write(tmp_path, "tokenizer.json", text[: len(text) // 2])
    )
    assert err.value.code == "E_TOKENIZER_JSON" and "truncated" in err.value.message
    assert err.value.span.line is not None


def test_invalid_json_and_duplicate_keys(tmp_path):
    assert (
        code_of(write(tmp_path / "a", "tokenizer.json", '{"model": {"type": "BPE",}}'))
        == "E_TOKENIZER_JSON"
    )
    assert (
        code_of(write(tmp_path / "b", "tokenizer.json", '{"model": {}, "model": {}}'))
        == "E_TOKENIZER_JSON"
    )


@pytest.mark.parametrize(
    "model",
    [
        {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "a": 1}},
        {
            "type": "Unigram",
            "unk_id": 0,
            "vocab": [["<unk>", 0.0], ["▁a", -1.0]],
            "byte_fallback": False,
        },
        {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"},
    ],
)
def test_unknown_or_inexact_model_types(tmp_path, model):
    doc = bytelevel_doc()
    doc["model"] = model
    assert code_of(write(tmp_path, "tokenizer.json", doc)) == "E_TOKENIZER_MODEL_TYPE"


def test_pipeline_without_byte_mapping(tmp_path):
    doc = bytelevel_doc()
    doc["decoder"] = None
    doc["pre_tokenizer"] = {"type": "Whitespace"}
    assert code_of(write(tmp_path, "tokenizer.json", doc)) == "E_TOKENIZER_MODEL_TYPE"


def test_string_outside_byte_level_alphabet(tmp_path):
    doc = bytelevel_doc()
    doc["model"]["vocab"]["a b"] = 999
    err = pytest.raises(TrgcError, build_table, write(tmp_path, "tokenizer.json", doc))
    assert err.value.code == "E_TOKENIZER_BYTE_LEVEL" and "U+0020" in err.value.message


def test_vocabulary_id_given_twice(tmp_path):
    doc = bytelevel_doc()
    doc["model"]["vocab"]["Ġt"] = 5
    assert code_of(write(tmp_path / "a", "tokenizer.json", doc)) == "E_TOKENIZER_DUPLICATE_ID"
    doc = bytelevel_doc()
    doc["added_tokens"].append(dict(doc["added_tokens"][0], content="<other>"))
    assert code_of(write(tmp_path / "b", "tokenizer.json", doc)) == "E_TOKENIZER_DUPLICATE_ID"


def tiktoken_folder(tmp_path, lines: list[bytes], specials: dict | None = None):
    folder = tmp_path / "tk"
    write(folder, "tiny.tiktoken", b"".join(line + b"\n" for line in lines))
    write(
        folder,
        "special_tokens.json",
        {"tiny": {"pat_str": r"\S+|\s+", "special_tokens": specials or {"<|end|>": 300}}},
    )
    return folder / "tiny.tiktoken"


def base_lines() -> list[bytes]:
    return [base64.b64encode(bytes([b])) + b" %d" % b for b in range(256)]


def test_tiktoken_good_then_each_defect(tmp_path):
    good = build_table(tiktoken_folder(tmp_path, base_lines()))
    assert good.vocab_size == 301 and good.special_tokens == {"<|end|>": 300} and good.eos_ids == ()
    assert good.counts()["unused"] == 44
    bad_b64 = base_lines()
    bad_b64[7] = b"QQ=x 7"
    err = pytest.raises(TrgcError, build_table, tiktoken_folder(tmp_path, bad_b64))
    assert err.value.code == "E_TOKENIZER_BASE64" and err.value.span.line == 8
    assert code_of(tiktoken_folder(tmp_path, [*base_lines(), b"QUI="])) == "E_TOKENIZER_TIKTOKEN"
    assert (
        code_of(tiktoken_folder(tmp_path, [*base_lines(), b"QUI= 5"])) == "E_TOKENIZER_DUPLICATE_ID"
    )


def test_sidecar_naming_an_id_twice(tmp_path):
    path = tiktoken_folder(tmp_path, base_lines(), {"<|a|>": 300, "<|b|>": 300})
    err = pytest.raises(TrgcError, build_table, path)
    assert err.value.code == "E_TOKENIZER_DUPLICATE_ID" and "300" in err.value.message
    path = tiktoken_folder(tmp_path, base_lines(), {"<|a|>": 65})
    assert code_of(path) == "E_TOKENIZER_DUPLICATE_ID"  # collides with a rank


def test_missing_companion_files(tmp_path):
    path = tiktoken_folder(tmp_path, base_lines())
    (path.parent / "special_tokens.json").unlink()
    assert code_of(path) == "E_TOKENIZER_MISSING_FILE"
    write(tmp_path / "vm", "vocab.json", {"a": 0})
    assert code_of(tmp_path / "vm") == "E_TOKENIZER_MISSING_FILE"
    assert code_of(tmp_path / "vm" / "vocab.json") == "E_TOKENIZER_MISSING_FILE"


def test_corrupted_and_truncated_zstd(tmp_path):
    raw = zstandard.ZstdCompressor(level=3, write_checksum=True).compress(
        (SYNTH / "json-bytelevel" / "tokenizer.json").read_bytes()
    )
    assert build_table(write(tmp_path / "ok", "tokenizer.json.zst", raw)).vocab_size == 276
    with pytest.raises(TrgcError) as err:
        build_table(write(tmp_path / "cut", "tokenizer.json.zst", raw[: len(raw) // 2]))
    assert err.value.code == "E_TOKENIZER_ZSTD" and err.value.details["truncated"]
    flipped = bytearray(raw)
    flipped[len(raw) // 2] ^= 0xFF
    with pytest.raises(TrgcError) as err:
        build_table(write(tmp_path / "flip", "tokenizer.json.zst", bytes(flipped)))
    assert err.value.code == "E_TOKENIZER_ZSTD" and not err.value.details["truncated"]
    assert code_of(write(tmp_path / "plain", "tokenizer.json.zst", b"{}")) == "E_TOKENIZER_ZSTD"


def test_sentencepiece_defects(tmp_path):
    source = real_path("mistral-v1").read_bytes()
    assert code_of(write(tmp_path / "t", "cut.model", source[:1000])) == "E_TOKENIZER_PROTOBUF"
    from sentencepiece import sentencepiece_model_pb2 as pb

    model = pb.ModelProto()
    model.ParseFromString(source)
    model.trainer_spec.model_type = pb.TrainerSpec.UNIGRAM
    model.trainer_spec.byte_fallback = False
    assert (
        code_of(write(tmp_path / "u", "uni.model", model.SerializeToString()))
        == "E_TOKENIZER_MODEL_TYPE"
    )


def test_layout_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    assert code_of(tmp_path / "empty") == "E_TOKENIZER_FORMAT"
    assert code_of(write(tmp_path, "notes.txt", "hello")) == "E_TOKENIZER_FORMAT"
    assert code_of(write(tmp_path, "weird.model", "hello")) == "E_TOKENIZER_FORMAT"
    assert code_of(FIXTURES / "llama3") == "E_TOKENIZER_AMBIGUOUS"
    assert code_of(tmp_path / "missing") == "E_IO"


def test_eos_errors(tmp_path):
    assert code_of(SYNTH / "json-bytelevel", eos=[10_000]) == "E_TOKENIZER_EOS"
    folder = tmp_path / "cfg"
    shutil.copytree(SYNTH / "json-bytelevel", folder)
    write(folder, "tokenizer_config.json", {"eos_token": "<|nope|>"})
    assert code_of(folder) == "E_TOKENIZER_EOS"
    assert build_table(folder, eos=[5]).eos_ids == (5,)


def test_size_errors():
    assert code_of(SYNTH / "json-bytelevel", vocab_size=10) == "E_USAGE"
    assert code_of(SYNTH / "json-bytelevel", vocab_size=1 << 25) == "E_TOKENIZER_TOO_LARGE"
    padded = build_table(SYNTH / "json-bytelevel", vocab_size=300)
    assert padded.vocab_size == 300 and padded.counts()["unused"] == 24


def test_cli_build_failure_leaves_no_file(tmp_path):
    bad = write(tmp_path / "src", "tokenizer.json", '{"model": ')
    out = tmp_path / "out.trt"
    result = CliRunner().invoke(app, ["tokenizer", "build", str(bad), "-o", str(out), "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stderr)["error"]["code"] == "E_TOKENIZER_JSON"
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def sp_doc() -> dict:
    return json.loads((SYNTH / "sp-bytefallback" / "tokenizer.json").read_text(encoding="utf-8"))


def test_metaspace_layout_builds_and_verifies(tmp_path):
    """The newer HF layout (Metaspace pre-tokenizer and decoder) maps like the legacy one."""
    from trgc.tokenizer.verify import verify_table

    doc = sp_doc()
    doc["normalizer"] = None
    doc["pre_tokenizer"] = {
        "type": "Metaspace",
        "replacement": "▁",
        "prepend_scheme": "first",
        "split": False,
    }
    doc["decoder"] = {
        "type": "Metaspace",
        "replacement": "▁",
        "prepend_scheme": "first",
        "split": False,
    }
    path = write(tmp_path, "tokenizer.json", doc)
    tab = build_table(path)
    legacy = build_table(SYNTH / "sp-bytefallback")
    assert (tab.kinds == legacy.kinds).all() and tab.data.tobytes() == legacy.data.tobytes()
    assert (tab.offsets == legacy.offsets).all() and tab.special_tokens == legacy.special_tokens
    report = verify_table(path, tab, "the {} x\n  世界 é\u0301 ok")
    assert report.ok, report.to_dict()


def test_unigram_with_byte_fallback_is_accepted(tmp_path):
    doc = sp_doc()
    vocab = sorted(doc["model"]["vocab"].items(), key=lambda kv: kv[1])
    doc["model"] = {
        "type": "Unigram",
        "unk_id": 0,
        "byte_fallback": True,
        "vocab": [[piece, -1.0] for piece, _ in vocab],
    }
    tab = build_table(write(tmp_path, "tokenizer.json", doc))
    assert tab.special_tokens["<unk>"] == 0 and tab.token_bytes(3 + 0x41) == b"A"
    assert tab.metadata["source_format"] == "hf-tokenizer-json/unigram-sentencepiece"


def test_sentencepiece_style_without_byte_fallback(tmp_path):
    doc = sp_doc()
    doc["model"]["byte_fallback"] = False
    assert code_of(write(tmp_path, "tokenizer.json", doc)) == "E_TOKENIZER_MODEL_TYPE"


def test_verify_tiktoken_reads_the_sidecar_itself(tmp_path):
    """A table whose special ids disagree with the sidecar on disk is a verify problem."""
    from trgc.tokenizer.verify import verify_table

    path = tiktoken_folder(tmp_path, base_lines(), {"<|end|>": 300})
    built = build_table(path)
    assert verify_table(path, built, "plain text, ok").ok
    write(
        path.parent,
        "special_tokens.json",
        {"tiny": {"pat_str": r"\S+|\s+", "special_tokens": {"<|end|>": 301}}},
    )
    report = verify_table(path, built, "plain text, ok")
    assert not report.ok and any("<|end|>" in p for p in report.problems)


def test_cli_inspect_tiktoken_with_sidecar_option():
    result = CliRunner().invoke(
        app,
        [
            "tokenizer",
            "inspect",
            str(FIXTURES / "gpt2" / "r50k_base.tiktoken"),
            "--specials",
            str(FIXTURES / "openai-tiktoken" / "special_tokens.json"),
            "--json",
            "--no-trie",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["special_tokens"] == {"<|endoftext|>": 50256} and "trie" not in doc


def test_special_name_given_two_ids(tmp_path):
    doc = sp_doc()
    doc["added_tokens"].append({"id": 300, "content": "<unk>", "special": True})
    del doc["added_tokens"][0]  # <unk> stays a model special at id 0 (model.unk_token)
    assert code_of(write(tmp_path, "tokenizer.json", doc)) == "E_TOKENIZER_DUPLICATE_ID"


def test_reference_library_refusal_and_table_as_source(tmp_path):
    from trgc.tokenizer.verify import verify_table

    doc = bytelevel_doc()
    doc["model"]["merges"].append(["zz", "qq"])  # merge of unknown pieces: tokenizers refuses it
    path = write(tmp_path, "tokenizer.json", doc)
    tab = build_table(path)
    with pytest.raises(TrgcError) as err:
        verify_table(path, tab, "x")
    assert (
        err.value.code == "E_TOKENIZER_FORMAT" and "reference implementation" in err.value.message
    )
    assert code_of(FIXTURES / "gpt2.trt") == "E_TOKENIZER_FORMAT"
