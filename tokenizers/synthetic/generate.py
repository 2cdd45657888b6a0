"""Write the small synthetic tokenizers used by fast tests (run: python tokenizers/synthetic/generate.py).

Both are real Hugging Face `tokenizer.json` files that the `tokenizers` library loads:
  * `json-bytelevel/`: byte-level BPE, all 256 bytes plus merged JSON structural pieces
    (`{"`, `":`, `{}`, `"}`, `",`, `","`, ` "`) and a few words; `<|endoftext|>` special,
    `<tool_call>` / `</tool_call>` added but not special (they keep their bytes).
  * `sp-bytefallback/`: SentencePiece-style BPE (Llama 2 layout): `▁` for space, `<0xNN>` byte
    fallback pieces, `<unk>`, `<s>`, `</s>` special.
The output is deterministic (sorted keys, fixed order), so regenerating gives identical files.
"""

from __future__ import annotations

import json
from pathlib import Path

from trgc.tokenizer.bytelevel import byte_to_char

HERE = Path(__file__).resolve().parent


def byte_level() -> dict:
    alphabet = byte_to_char()
    vocab = {alphabet[b]: b for b in range(256)}
    merges: list[tuple[bytes, bytes]] = [
        (b"{", b'"'),
        (b'"', b":"),
        (b"{", b"}"),
        (b'"', b"}"),
        (b'"', b","),
        (b'",', b'"'),
        (b" ", b'"'),
        (b"t", b"h"),
        (b"th", b"e"),
        (b" ", b"the"),
        (b"n", b"a"),
        (b"na", b"m"),
        (b"nam", b"e"),
        (b"\n", b"\n"),
        (b" ", b" "),
        (b"  ", b"  "),
        (b"\xe4", b"\xb8"),
    ]
    for left, right in merges:
        vocab["".join(alphabet[b] for b in left + right)] = len(vocab)
    added = [
        (len(vocab), "<|endoftext|>", True),
        (len(vocab) + 1, "<tool_call>", False),
        (len(vocab) + 2, "</tool_call>", False),
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": i,
                "content": c,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": s,
            }
            for i, c, s in added
        ],
        "normalizer": None,
        "pre_tokenizer": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": True,
            "use_regex": True,
        },
        "post_processor": None,
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": True,
            "use_regex": True,
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [
                ["".join(alphabet[b] for b in a), "".join(alphabet[b] for b in c)]
                for a, c in merges
            ],
        },
    }


def sentencepiece_style() -> dict:
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece in ["▁", *"abcdefghijklmnopqrstuvwxyz", "{", '"', "}", ":", ",", "世", "界", "é"]:
        vocab[piece] = len(vocab)
    merges = [
        ("▁", "t"),
        ("h", "e"),
        ("▁t", "he"),
        ("{", '"'),
        ('"', ":"),
        ("{", "}"),
        ("▁", "▁"),
        ("世", "界"),
    ]
    for left, right in merges:
        vocab[left + right] = len(vocab)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": i,
                "content": c,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for c, i in [("<unk>", 0), ("<s>", 1), ("</s>", 2)]
        ],
        "normalizer": {
            "type": "Sequence",
            "normalizers": [
                {"type": "Prepend", "prepend": "▁"},
                {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
            ],
        },
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0},
            ],
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": "<unk>",
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [list(m) for m in merges],
        },
    }


def main() -> None:
    for folder, doc, config in (
        ("json-bytelevel", byte_level(), {"eos_token": "<|endoftext|>"}),
        ("sp-bytefallback", sentencepiece_style(), {"eos_token": "</s>", "bos_token": "<s>"}),
    ):
        out = HERE / folder
        out.mkdir(exist_ok=True)
        (out / "tokenizer.json").write_text(
            json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
        )
        (out / "tokenizer_config.json").write_text(
            json.dumps(config, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )


if __name__ == "__main__":
    main()
