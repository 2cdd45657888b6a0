"""Token-byte table and trie: assembly rules, canonical codec, identity, trie layout."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_tokenizer_support import SYNTH, check_trie, table
from trgc.errors import TrgcError
from trgc.tokenizer import (
    KIND_BYTE,
    KIND_NORMAL,
    KIND_SPECIAL,
    KIND_UNUSED,
    TokenTable,
    build_table,
    load_tokenizer,
)
from trgc.tokenizer.table import make_table
from trgc.tokenizer.trie import build_trie


def small_table(pieces, kinds, special=None, added=None, eos=()):
    return make_table(
        pieces,
        np.array(kinds, dtype=np.uint8),
        special_tokens=special or {},
        added_tokens=added or {},
        eos_ids=eos,
        metadata={"family": "test"},
    )


def test_synthetic_bytelevel_kinds_and_merged_json_pieces():
    tab = table("json-bytelevel")
    assert tab.vocab_size == 276
    assert tab.counts() == {"normal": 275, "byte": 0, "special": 1, "unused": 0}
    assert tab.special_tokens == {"<|endoftext|>": 273}
    assert tab.added_tokens == {"<|endoftext|>": 273, "<tool_call>": 274, "</tool_call>": 275}
    assert tab.eos_ids == (273,)
    assert tab.token_bytes(273) == b""
    assert tab.token_bytes(274) == b"<tool_call>"  # added, not special: keeps its bytes
    assert [tab.token_bytes(i) for i in range(256)] == [bytes([b]) for b in range(256)]
    merged = {tab.token_bytes(i) for i in range(256, 273)}
    assert {b'{"', b'":', b"{}", b'"}', b'","', b' "', b"\xe4\xb8"} <= merged


def test_synthetic_sentencepiece_style_bytes():
    tab = table("sp-bytefallback")
    assert tab.special_tokens == {"<unk>": 0, "<s>": 1, "</s>": 2}
    assert tab.eos_ids == (2,)
    assert all(
        tab.kinds[3 + b] == KIND_BYTE and tab.token_bytes(3 + b) == bytes([b]) for b in range(256)
    )
    pieces = {tab.token_bytes(i): i for i in range(259, tab.vocab_size)}
    assert b" " in pieces and b" the" in pieces and b"  " in pieces and "世界".encode() in pieces
    assert tab.metadata["reports"]["duplicate_groups"] > 0  # e.g. "a" and <0x61>


def test_reports_duplicates_non_utf8_empty():
    tab = small_table(
        [b"a", b"a", b"\xe4", b"", None, None],
        [KIND_NORMAL, KIND_NORMAL, KIND_NORMAL, KIND_NORMAL, KIND_SPECIAL, KIND_UNUSED],
        special={"<s>": 4},
    )
    rep = tab.metadata["reports"]
    assert rep["duplicates"] == [[0, 1]]
    assert rep["non_utf8_count"] == 1 and rep["non_utf8_sample"] == [2]
    assert rep["empty"] == [3]
    assert tab.offsets.tolist() == [0, 1, 2, 3, 3, 3, 3]


def test_codec_round_trip_is_byte_identical(tmp_path):
    tab = table("json-bytelevel")
    blob = tab.to_bytes()
    again = TokenTable.from_bytes(blob)
    assert again.to_bytes() == blob and again.sha256 == tab.sha256
    path = tmp_path / "t.trt"
    tab.save(path)
    loaded = load_tokenizer(path)
    assert loaded.sha256 == tab.sha256
    assert np.array_equal(loaded.kinds, tab.kinds) and np.array_equal(loaded.offsets, tab.offsets)
    assert loaded.special_tokens == tab.special_tokens and loaded.added_tokens == tab.added_tokens
    assert loaded.metadata == tab.metadata and loaded.eos_ids == tab.eos_ids
    assert [p.name for p in tmp_path.iterdir()] == ["t.trt"]


def test_codec_exact_bytes_of_a_tiny_table():
    tab = small_table(
        [b"a", None, b"\xff"],
        [KIND_NORMAL, KIND_SPECIAL, KIND_BYTE],
        special={"<e>": 1},
        added={"<e>": 1},
        eos=(1,),
    )
    blob = tab.to_bytes()
    header = b'{"added_tokens":{"<e>":1},"eos_ids":[1],"metadata":{"family":"test","reports":{"duplicate_groups":0,"duplicates":[],"empty":[],"empty_count":0,"non_utf8_count":1,"non_utf8_sample":[2]}},"special_tokens":{"<e>":1}}'
    expected = (
        b"TRGCTOK\x00"
        + (1).to_bytes(4, "little")
        + len(header).to_bytes(8, "little")
        + header
        + (3).to_bytes(8, "little")
        + (2).to_bytes(8, "little")
        + bytes([0, 2, 1])
        + b"\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00"
        + b"a\xff"
    )
    assert blob[:-32] == expected
    import hashlib

    assert tab.sha256 == "sha256:" + hashlib.sha256(expected).hexdigest()


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda b: b"XXXXXXXX" + b[8:], "E_TOKENIZER_TABLE_MAGIC"),
        (lambda b: b[:8] + (2).to_bytes(4, "little") + b[12:], "E_TOKENIZER_TABLE_VERSION"),
        (lambda b: b[: len(b) // 2], "E_TOKENIZER_TABLE_TRUNCATED"),
        (lambda b: b[:10], "E_TOKENIZER_TABLE_TRUNCATED"),
        (lambda b: b[:-40] + bytes([b[-40] ^ 1]) + b[-39:], "E_TOKENIZER_TABLE_CORRUPT"),
        (lambda b: b + b"\x00", "E_TOKENIZER_TABLE_CORRUPT"),
    ],
)
def test_codec_rejects_damaged_tables(tmp_path, mutate, code):
    blob = mutate(table("json-bytelevel").to_bytes())
    with pytest.raises(TrgcError) as err:
        TokenTable.from_bytes(blob)
    assert err.value.code == code
    path = tmp_path / "bad.trt"
    path.write_bytes(blob)
    with pytest.raises(TrgcError) as err:
        load_tokenizer(path)
    assert err.value.code == code


def test_damaged_zstd_container(tmp_path):
    tab = table("json-bytelevel")
    path = tmp_path / "t.trt"
    tab.save(path)
    raw = path.read_bytes()
    (tmp_path / "cut.trt").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(TrgcError) as err:
        load_tokenizer(tmp_path / "cut.trt")
    assert err.value.code == "E_TOKENIZER_TABLE_TRUNCATED"
    flipped = bytearray(raw)
    flipped[len(raw) // 2] ^= 0x55
    (tmp_path / "flip.trt").write_bytes(bytes(flipped))
    with pytest.raises(TrgcError) as err:
        load_tokenizer(tmp_path / "flip.trt")
    assert err.value.code in ("E_TOKENIZER_TABLE_CORRUPT", "E_TOKENIZER_TABLE_TRUNCATED")


def test_save_failure_leaves_nothing(tmp_path, monkeypatch):
    tab = table("json-bytelevel")
    import os

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(TrgcError) as err:
        tab.save(tmp_path / "t.trt")
    assert err.value.code == "E_IO"
    assert list(tmp_path.iterdir()) == []


def test_rebuild_gives_same_identity():
    a = build_table(SYNTH / "json-bytelevel")
    b = build_table(SYNTH / "json-bytelevel")
    assert a.sha256 == b.sha256 and a.to_bytes() == b.to_bytes()


def test_trie_on_tiny_table_exact_layout():
    tab = small_table(
        [b"ab", b"a", b"b", b"ac", None, b"ab"],
        [KIND_NORMAL] * 4 + [KIND_SPECIAL, KIND_NORMAL],
        special={"<s>": 4},
    )
    trie = build_trie(tab)
    # preorder: root, a, ab, ac, b
    assert trie.node_byte.tolist() == [0, ord("a"), ord("b"), ord("c"), ord("b")]
    assert trie.node_depth.tolist() == [0, 1, 2, 2, 1]
    assert trie.subtree_end.tolist() == [5, 4, 3, 4, 5]
    assert trie.parent.tolist() == [-1, 0, 1, 1, 0]
    assert [trie.tokens_at(n).tolist() for n in range(5)] == [[], [1], [0, 5], [3], [2]]
    assert trie.child_byte.tolist() == [ord("a"), ord("b"), ord("b"), ord("c")]
    assert trie.find(b"ab") == 2 and trie.find(b"abc") == -1 and trie.find(b"") == 0
    check_trie(tab)


def test_trie_invariants_synthetic():
    for name in ("json-bytelevel", "sp-bytefallback"):
        check_trie(table(name))


def test_trie_is_cached_on_the_table():
    tab = table("json-bytelevel")
    assert tab.trie is tab.trie


def test_table_arrays_are_read_only():
    tab = table("json-bytelevel")
    with pytest.raises(ValueError):
        tab.kinds[0] = 3


def test_byte_level_alphabet_round_trip():
    from trgc.tokenizer.bytelevel import (
        byte_to_char,
        decode_byte_level,
        decode_byte_level_many,
        encode_byte_level,
    )

    alphabet = byte_to_char()
    assert len(set(alphabet)) == 256 and alphabet[ord(" ")] == "Ġ" and alphabet[ord("\n")] == "Ċ"
    assert max(map(ord, alphabet)) == 0x143
    every = bytes(range(256))
    assert decode_byte_level(encode_byte_level(every)) == every
    samples = [bytes([b, (b * 7) % 256, 255 - b]) for b in range(256)]
    assert decode_byte_level_many([encode_byte_level(s) for s in samples]) == samples
    with pytest.raises(TrgcError) as err:
        decode_byte_level_many(["ab", "c d"], ids=[1, 2])
    assert err.value.code == "E_TOKENIZER_BYTE_LEVEL" and "id 2" in err.value.message


def naive_trie_nodes(pieces: list[bytes]) -> list[bytes]:
    """Every distinct non-empty prefix plus the root, in lexicographic (= preorder) order."""
    prefixes = {p[:k] for p in pieces for k in range(1, len(p) + 1)}
    return [b"", *sorted(prefixes)]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.lists(
        st.binary(min_size=0, max_size=6).map(lambda b: bytes(x % 4 for x in b)),
        min_size=1,
        max_size=40,
    )
)
def test_trie_matches_a_naive_construction(pieces):
    kinds = [KIND_NORMAL] * len(pieces)
    tab = small_table(pieces, kinds)
    trie = build_trie(tab)
    nodes = naive_trie_nodes(pieces)
    assert trie.n_nodes == len(nodes)
    assert trie.node_depth.tolist() == [len(p) for p in nodes]
    assert trie.node_byte.tolist() == [p[-1] if p else 0 for p in nodes]
    index = {p: n for n, p in enumerate(nodes)}
    assert trie.parent.tolist() == [-1] + [index[p[:-1]] for p in nodes[1:]]
    assert trie.subtree_end.tolist() == [
        next((m for m in range(n + 1, len(nodes)) if not nodes[m].startswith(p)), len(nodes))
        for n, p in enumerate(nodes)
    ]
    for n, p in enumerate(nodes):
        assert trie.tokens_at(n).tolist() == [i for i, q in enumerate(pieces) if q == p and q]
    check_trie(tab)
