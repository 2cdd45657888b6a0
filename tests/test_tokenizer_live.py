"""trgc.load_tokenizer on live objects (tokenizers, transformers, tiktoken): the same table and
identity as from the same files; wrong types are coded errors, never AttributeError."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import zstandard

import trgc
from trgc.errors import TrgcError
from trgc.tokenizer.live import rank_file_text, same_content
from trgc.tokenizer.sources import read_source
from trgc.tokenizer.tiktoken_format import parse_ranks

ROOT = Path(__file__).resolve().parents[1]
QWEN3 = ROOT / "tokenizers" / "qwen3"
O200K = ROOT / "tokenizers" / "openai-tiktoken" / "o200k_base.tiktoken.zst"
SIDECAR = ROOT / "tokenizers" / "openai-tiktoken" / "special_tokens.json"
LIST = '%trg 1\n%start s\ns ::= "[" ( "x" ( "," "x" )* )? "]" ;\n'


@pytest.fixture(scope="module")
def qwen3_folder(tmp_path_factory) -> Path:
    """Qwen3's tokenizer.json (uncompressed, as transformers reads it) and its config."""
    folder = tmp_path_factory.mktemp("qwen3")
    raw = zstandard.ZstdDecompressor().decompress(
        (QWEN3 / "tokenizer.json.zst").read_bytes(), max_output_size=1 << 28
    )
    (folder / "tokenizer.json").write_bytes(raw)
    (folder / "tokenizer_config.json").write_bytes((QWEN3 / "tokenizer_config.json").read_bytes())
    return folder


def test_tokenizers_object_has_the_files_identity(qwen3_folder, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    alone = tmp_path / "tokenizer.json"  # no config beside it: the object has none either
    alone.write_bytes((qwen3_folder / "tokenizer.json").read_bytes())
    from_file = trgc.load_tokenizer(alone)
    live = trgc.load_tokenizer(tokenizers.Tokenizer.from_file(str(alone)))
    assert live.sha256 == from_file.sha256
    padded = trgc.load_tokenizer(tokenizers.Tokenizer.from_file(str(alone)), vocab_size=151936)
    assert padded.vocab_size == 151936 and padded.kind_name(151935) == "unused"


def test_transformers_tokenizer_has_the_folders_identity(qwen3_folder):
    transformers = pytest.importorskip("transformers")
    tok = transformers.AutoTokenizer.from_pretrained(str(qwen3_folder), local_files_only=True)
    from_folder = trgc.load_tokenizer(qwen3_folder)
    assert trgc.load_tokenizer(tok).sha256 == from_folder.sha256
    assert trgc.load_tokenizer(tok, vocab_size=151936).sha256 == (
        trgc.load_tokenizer(qwen3_folder, vocab_size=151936).sha256
    )
    tok.add_tokens(["<trgc_new_token>"])  # changed in memory: no longer the folder's table
    changed = trgc.load_tokenizer(tok)
    assert changed.sha256 != from_folder.sha256
    assert changed.added_tokens["<trgc_new_token>"] == from_folder.vocab_size
    assert not same_content(changed, from_folder)


def test_transformers_tokenizer_without_a_folder_reads_its_backend(qwen3_folder, tmp_path):
    transformers = pytest.importorskip("transformers")
    tok = transformers.AutoTokenizer.from_pretrained(str(qwen3_folder), local_files_only=True)
    tok.name_or_path = str(tmp_path / "gone")  # e.g. converted from a GGUF in memory
    live = trgc.load_tokenizer(tok)
    assert same_content(live, trgc.load_tokenizer(qwen3_folder))
    assert live.eos_ids == (live.special_tokens["<|im_end|>"],)


def o200k_encoding():
    tiktoken = pytest.importorskip("tiktoken")
    ranks = parse_ranks(read_source(O200K), str(O200K))
    entry = json.loads(SIDECAR.read_text())["o200k_base"]
    return tiktoken.Encoding(
        name="o200k_base",
        pat_str=entry["pat_str"],
        mergeable_ranks={piece: rank for rank, piece in ranks.items()},
        special_tokens=entry["special_tokens"],
    )


def test_tiktoken_encoding_has_the_files_identity_with_its_sidecar():
    enc = o200k_encoding()
    from_file = trgc.load_tokenizer(O200K)
    assert rank_file_text(enc._mergeable_ranks) == read_source(O200K)
    assert trgc.load_tokenizer(enc, specials=SIDECAR).sha256 == from_file.sha256
    bare = trgc.load_tokenizer(enc)  # no sidecar recorded: same content, other provenance
    assert same_content(bare, from_file) and bare.sha256 != from_file.sha256
    ids = enc.encode("Grammar-constrained decoding, 東京 😀")
    assert (
        b"".join(bare.token_bytes(i) for i in ids)
        == "Grammar-constrained decoding, 東京 😀".encode()
    )


def test_tiktoken_sidecar_that_disagrees_is_refused(tmp_path):
    enc = o200k_encoding()
    side = tmp_path / "special_tokens.json"
    side.write_text(json.dumps({"o200k_base": {"special_tokens": {"<|endoftext|>": 5}}}))
    with pytest.raises(TrgcError) as err:
        trgc.load_tokenizer(enc, specials=side)
    assert err.value.code == "E_TOKENIZER_OBJECT"


@pytest.mark.parametrize("bad", [42, object(), {"vocab": {}}, np.zeros(3)])
def test_wrong_types_are_coded_errors(bad):
    with pytest.raises(TrgcError) as err:
        trgc.load_tokenizer(bad)
    assert err.value.code == "E_ARGUMENT_TYPE"
    art = trgc.compile_grammar(LIST)
    with pytest.raises(TrgcError) as err:
        trgc.Matcher(art, bad)
    assert err.value.code == "E_ARGUMENT_TYPE" and "tokenizer" in err.value.message
    with pytest.raises(TrgcError) as err:
        trgc.Matcher(bad, ROOT / "tokenizers" / "gpt2.trt")
    assert err.value.code == "E_ARGUMENT_TYPE" and "artifact" in err.value.message


def test_matcher_takes_paths_and_live_objects(tmp_path, qwen3_folder):
    tokenizers = pytest.importorskip("tokenizers")
    art = trgc.compile_grammar(LIST)
    art.save(tmp_path / "list.trga")
    by_path = trgc.Matcher(str(tmp_path / "list.trga"), str(ROOT / "tokenizers" / "gpt2.trt"))
    by_object = trgc.Matcher(art, trgc.load_tokenizer(ROOT / "tokenizers" / "gpt2.trt"))
    assert by_path.tokenizer_sha256 == by_object.tokenizer_sha256
    assert (by_path.allowed_tokens() == by_object.allowed_tokens()).all()
    live = tokenizers.Tokenizer.from_file(str(qwen3_folder / "tokenizer.json"))
    assert trgc.Matcher(art, live).vocab_size == live.get_vocab_size(with_added_tokens=True)
    with pytest.raises(TrgcError) as err:
        trgc.Matcher(tmp_path / "missing.trga", live)
    assert err.value.code == "E_IO"
