"""Real vocabularies: sizes, special ids and token bytes agree with the reference libraries,
probe round trips have zero mismatches, merged JSON pieces exist, trie invariants hold."""

from __future__ import annotations

import pytest

from test_tokenizer_support import PROBE, REAL, SIDECARS, check_trie, real_path, table
from trgc.tokenizer import KIND_BYTE, KIND_SPECIAL, KIND_UNUSED
from trgc.tokenizer.verify import verify_table

# name -> (vocab size, {special name: id}, EOS ids)
EXPECTED = {
    "qwen3": (
        151669,
        {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645},
        (151645,),
    ),
    "qwen2": (
        151646,
        {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645},
        (151645,),
    ),
    "llama3-tiktoken": (
        128256,
        {"<|begin_of_text|>": 128000, "<|python_tag|>": 128010, "<|eot_id|>": 128009},
        (128001, 128008, 128009),
    ),
    "llama3-hf": (128256, {"<|begin_of_text|>": 128000, "<|eot_id|>": 128009}, (128001, 128009)),
    "gpt2-encoder": (50257, {"<|endoftext|>": 50256}, (50256,)),
    "gpt2-hf": (50257, {"<|endoftext|>": 50256}, (50256,)),
    "gpt2-tiktoken": (50257, {"<|endoftext|>": 50256}, (50256,)),
    "deepseek-v3": (
        128815,
        {"<｜begin▁of▁sentence｜>": 0, "<｜end▁of▁sentence｜>": 1, "<|EOT|>": 128805},
        (1,),
    ),
    "llama2": (32000, {"<unk>": 0, "<s>": 1, "</s>": 2}, (2,)),
    "mistral-v1": (32000, {"<unk>": 0, "<s>": 1, "</s>": 2}, (2,)),
    "mistral-v3": (32768, {"[INST]": 3, "[/INST]": 4, "[TOOL_CALLS]": 5}, (2,)),
    "o200k": (200019, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}, (199999,)),
    "cl100k": (100277, {"<|endoftext|>": 100257, "<|endofprompt|>": 100276}, (100257,)),
}

# merged JSON structural tokens and their ids in the `tokenizers` library
MERGED = {
    "qwen3": {
        b'{"': 4913,
        b'":': 788,
        b"{}": 6257,
        b'"}': 9207,
        b"},": 2137,
        b' {"': 5212,
        b'","': 2198,
    },
    "llama3-tiktoken": {b'{"': 5018, b'":': 794, b"{}": 6390, b'"}': 9388, b' {"': 5324},
    "deepseek-v3": {b'{"': 24313, b'":': 3362, b"{}": 25902, b'"}': 62773},
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sizes_specials_eos(name):
    size, specials, eos = EXPECTED[name]
    tab = table(name)
    assert tab.vocab_size == size
    for special, i in specials.items():
        assert tab.special_tokens[special] == i
        assert tab.kinds[i] == KIND_SPECIAL and tab.token_bytes(i) == b""
    assert tab.eos_ids == eos


@pytest.mark.parametrize("name", sorted(REAL))
def test_probe_round_trip_and_structure_match_reference_library(name):
    """Zero mismatches on the probe corpus; vocab size and special ids agree with the library."""
    report = verify_table(
        real_path(name), table(name), PROBE.read_text(encoding="utf-8"), specials=SIDECARS.get(name)
    )
    assert report.problems == []
    assert report.mismatches == []
    assert report.documents > 20 and report.tokens > 1000


@pytest.mark.parametrize("name", sorted(MERGED))
def test_known_merged_structural_tokens(name):
    tab = table(name)
    for piece, i in MERGED[name].items():
        assert tab.token_bytes(i) == piece
        assert i in tab.trie.tokens_at(tab.trie.find(piece)).tolist()


def test_qwen_added_tokens_keep_bytes_or_are_special():
    tab = table("qwen3")
    assert tab.added_tokens["<tool_call>"] == 151657 and tab.token_bytes(151657) == b"<tool_call>"
    assert tab.added_tokens["<think>"] == 151667 and tab.kinds[151667] != KIND_SPECIAL
    assert tab.added_tokens["<|im_end|>"] == 151645 and tab.kinds[151645] == KIND_SPECIAL


def test_sentencepiece_byte_fallback_and_space_marker():
    tab = table("llama2")
    assert all(
        tab.kinds[3 + b] == KIND_BYTE and tab.token_bytes(3 + b) == bytes([b]) for b in range(256)
    )
    assert tab.token_bytes(29871) == b" "  # the piece "▁"
    mistral = table("mistral-v3")
    assert mistral.counts()["special"] == 751  # 750 control pieces and <unk>
    assert mistral.added_tokens["[REFERENCE_DOC_0]"] == 770  # USER_DEFINED: text with bytes


def test_tiktoken_gaps_are_unused():
    tab = table("o200k")
    assert tab.kinds[199998] == KIND_UNUSED and tab.kinds[200000] == KIND_UNUSED
    assert tab.counts()["unused"] == 19


def test_deepseek_model_entries_for_specials_are_overridden():
    tab = table("deepseek-v3")
    assert [tab.kinds[i] for i in range(3)] == [KIND_SPECIAL] * 3
    assert (
        tab.added_tokens["<｜tool▁sep｜>"] == 128814
        and tab.token_bytes(128814) == "<｜tool▁sep｜>".encode()
    )


def test_gpt2_endoftext_in_encoder_json_is_special():
    tab = table("gpt2-encoder")
    assert tab.metadata["unreachable_entries_as_special"] == ["<|endoftext|>"]
    assert tab.special_tokens == {"<|endoftext|>": 50256}


def test_same_vocabulary_same_bytes_across_formats():
    """Three formats of GPT-2 and two of Llama 3 agree on every token's bytes."""
    for group in (("gpt2-encoder", "gpt2-hf", "gpt2-tiktoken"), ("llama3-tiktoken", "llama3-hf")):
        first = table(group[0])
        for other in group[1:]:
            tab = table(other)
            assert (tab.kinds == first.kinds).all()
            assert (tab.offsets == first.offsets).all() and (tab.data == first.data).all()


@pytest.mark.parametrize("name", ["qwen3", "llama3-tiktoken", "deepseek-v3", "mistral-v3", "o200k"])
def test_trie_invariants_on_real_vocabularies(name):
    tab = table(name)
    check_trie(tab)
    stats = tab.trie.stats()
    assert stats["root_children"] == 256 and stats["tokens"] == tab.trie.token_ids.shape[0]
