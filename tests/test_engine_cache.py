"""Precomputed frame masks and the `.trm` cache file: exactness, round trip, refusal."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import zstandard

from engine_fixtures import json_like, regular, structural_table, tool_call
from trgc.engine import reference, trm
from trgc.engine.binding import bind
from trgc.engine.bits import unpack
from trgc.engine.config import START, frame_key, step_bytes
from trgc.engine.matcher import Matcher
from trgc.engine.precompute import FrameMasks, combine, precompute
from trgc.errors import TrgcError
from trgc.limits import Limits

TOK = structural_table()


def _configs(art, seed: int, n: int = 40):
    rng = np.random.default_rng(seed)
    b = bind(art, TOK)
    out = [START]
    config = START
    for _ in range(n):
        mask = reference.allowed_mask(b, config) & b.byte_token
        if not mask.any():
            config = START
            continue
        config = step_bytes(b.tables, config, b.token_bytes(int(rng.choice(np.flatnonzero(mask)))))
        out.append(config)
    return out


@pytest.mark.parametrize("make", [json_like, tool_call, regular])
def test_precomputed_masks_equal_reference(make):
    art = make()
    masks = precompute(art, TOK)
    for config in _configs(art, 3):
        m = Matcher(art, TOK, precomputed=masks)
        m._history = [config]
        expected = reference.allowed_mask(bind(art, TOK), config)
        assert (m.allowed_tokens() == expected).all(), config
        assert m.last_source != "walk", config  # every entry came from the precomputed ones


@pytest.mark.parametrize("make", [json_like, tool_call, regular])
def test_direct_rows_are_the_whole_mask_exactly(make):
    """Where `DirectRows` hands out the precomputed row itself, it equals the reference mask
    (EOS and special tokens included), and `fill_bitmask` writes it unchanged."""
    art = make()
    masks = precompute(art, TOK)
    b = bind(art, TOK)
    used = 0
    buffer = np.zeros((2, b.n_words), dtype=np.int32)
    walker, rng, configs = Matcher(art, TOK), np.random.default_rng(5), []
    for _ in range(120):  # every kind of token (special ones too), restarting at EOS
        allowed = np.flatnonzero(reference.allowed_mask(b, walker.config))
        token = int(rng.choice(allowed)) if allowed.size else int(b.eos_ids[0])
        if token in b.eos_ids.tolist():
            walker.reset()
        else:
            walker.advance(token)
        configs.append(walker.config)
    for config in configs:
        m = Matcher(art, TOK, precomputed=masks)
        m._history = [config]
        words = m._words()
        expected = reference.allowed_mask(b, config)
        assert (unpack(words, b.vocab_size) == expected).all(), config
        found = m._direct.rows.get(frame_key(config[-1], b.trie_depth))
        if found is not None and words is found[0]:
            used += 1
            assert not b.tables.accepting[config[-1]] and not words.flags.writeable
        m.fill_bitmask(buffer, 1)
        assert (unpack(buffer[1].view(np.uint32), b.vocab_size) == expected).all()
    assert used  # the fast path ran


def test_precompute_near_depth_limit_falls_back_exactly():
    art = json_like(max_depth=3)
    masks = precompute(art, TOK)
    b = bind(art, TOK)
    config = step_bytes(b.tables, START, b"[[")
    entry = masks.entry_of(frame_key(config[-1], b.trie_depth))
    assert len(config) == 2 and entry.height + 1 > 3  # '[[' needs room
    assert combine(b, entry, config, None) is None
    m = Matcher(art, TOK, precomputed=masks)
    m._history = [config]
    assert (m.allowed_tokens() == reference.allowed_mask(b, config)).all()


def test_regular_grammar_has_no_open_tokens_and_dedups():
    masks = precompute(regular(), TOK)
    assert masks.open_roots.size == 0 and (masks.open_start == 0).all()
    # states 2 ('d' seen) and 3 (after C3) differ; accepting end state 4 allows nothing
    assert masks.masks.shape[0] == len({m.tobytes() for m in masks.masks})
    assert masks.accept_id[4] == 0


def test_trm_round_trip_and_identical_rebuild(tmp_path):
    art = tool_call()
    masks = precompute(art, TOK)
    path = tmp_path / "c.trm"
    ident = trm.save_masks(masks, path)
    again = precompute(tool_call(), TOK)
    assert trm.identity(again) == ident  # identical hash on rebuild
    loaded = trm.load_masks(path, binding=bind(art, TOK))
    assert trm.to_bytes(loaded) == trm.to_bytes(masks)
    data = zstandard.ZstdDecompressor().decompress(path.read_bytes())
    assert "sha256:" + hashlib.sha256(data).hexdigest() == ident
    assert data[:8] == b"TRGCTRM\0" and data[8:12] == b"\x02\0\0\0"
    m = Matcher(art, TOK, precomputed=loaded)
    assert m.allowed_tokens().any()
    assert not list(tmp_path.glob(".*tmp*"))


def test_trm_fixture_bytes_are_pinned():
    masks = FrameMasks(
        key=("sha256:" + "a" * 64, "sha256:" + "b" * 64, "0.1.0", "trgc-specials-1", "sha256:c"),
        vocab_size=33,
        max_depth=4,
        n_states=2,
        longest=3,
        entry_key=np.array([[0, 0, 0], [1, 3, 1]], dtype=np.int64),
        accept_id=np.array([1, 0], dtype=np.int32),
        height=np.array([1, 2], dtype=np.int32),
        open_start=np.array([0, 0, 2], dtype=np.int32),
        open_roots=np.array([5, 9], dtype=np.int32),
        masks=np.array([[0, 0], [5, 1]], dtype=np.uint32),
    )
    data = trm.to_bytes(masks)
    assert hashlib.sha256(data).hexdigest() == PINNED
    header_len = int.from_bytes(data[12:16], "little")
    tail = data[16 + header_len + (-(16 + header_len) % 8) : -32]
    assert data[16 : 16 + header_len] == (
        b'{"artifact":"sha256:' + b"a" * 64 + b'","compiler":"0.1.0","format":"trgc-masks-2",'
        b'"longest":3,"max_depth":4,"n_entries":2,"n_masks":2,"n_roots":2,"n_states":2,'
        b'"n_words":2,"policy":"trgc-specials-1","tokenizer":"sha256:' + b"b" * 64 + b'",'
        b'"trie":"sha256:c","vocab_size":33}'
    )
    assert tail.hex() == (
        "0000000000000000" "0000000000000000" "0000000000000000"  # entry 0: state 0
        "0100000000000000" "0300000000000000" "0100000000000000"  # entry 1: state 1, left 3, needed 1
        "01000000" "00000000"  # accept_id
        "01000000" "02000000"  # height
        "00000000" "00000000" "02000000"  # open_start
        "05000000" "09000000"  # open_roots
        "00000000" "00000000" "05000000" "01000000"  # masks
    )  # fmt: skip
    assert trm.to_bytes(trm.from_bytes(data)) == data


PINNED = "d2ef52f79dab7a0449efca14f11399aac1305a1e10de3f225cc48e2d8a9d7fe5"


def _refused(call) -> str:
    with pytest.raises(TrgcError) as err:
        call()
    assert err.value.code == "E_CACHE_MISMATCH"
    return err.value.message


def test_trm_refuses_other_artifact_tokenizer_and_compiler(tmp_path):
    masks = precompute(json_like(), TOK)
    path = tmp_path / "c.trm"
    trm.save_masks(masks, path)
    other = bind(regular(), TOK)
    assert "artifact" in _refused(lambda: trm.load_masks(path, binding=other))
    assert "artifact" in _refused(lambda: Matcher(regular(), TOK, precomputed=masks))
    key = bind(json_like(), TOK).file_key
    assert "tokenizer" in _refused(lambda: masks.require_key((key[0], "sha256:0", *key[2:])))
    assert "compiler" in _refused(lambda: masks.require_key((*key[:2], "9.9", *key[3:])))
    assert "policy" in _refused(lambda: masks.require_key((*key[:3], "specials-0", key[4])))
    assert "trie" in _refused(lambda: masks.require_key((*key[:4], "sha256:1")))


def test_trm_refuses_corruption(tmp_path):
    masks = precompute(json_like(), TOK)
    data = trm.to_bytes(masks)
    flipped = bytearray(data)
    flipped[-40] ^= 1
    assert "digest" in _refused(lambda: trm.from_bytes(bytes(flipped)))
    assert "magic" in _refused(lambda: trm.from_bytes(b"XXXX" + data[4:]))
    assert "magic" in _refused(lambda: trm.from_bytes(b""))
    truncated = data[:-100]
    assert "digest" in _refused(lambda: trm.from_bytes(truncated))
    body = bytearray(data[:-32])
    body[8] = 3  # version 3
    assert "version" in _refused(
        lambda: trm.from_bytes(bytes(body) + hashlib.sha256(bytes(body)).digest())
    )
    path = tmp_path / "bad.trm"
    path.write_bytes(b"\x28\xb5\x2f\xfd garbage")
    assert "zstd" in _refused(lambda: trm.load_masks(path))


def test_precompute_respects_cache_bytes_limit():
    with pytest.raises(TrgcError) as err:
        precompute(json_like(), TOK, limits=Limits(cache_bytes=64))
    assert err.value.code == "E_LIMIT_CACHE_BYTES"


def test_matcher_refuses_masks_whose_indices_do_not_fit():
    from dataclasses import replace

    art = json_like()
    masks = precompute(art, TOK)
    n_nodes = bind(art, TOK).node_byte.shape[0]
    bad_roots = replace(masks, open_roots=np.full_like(masks.open_roots, n_nodes))
    assert masks.open_roots.size
    assert "sizes" in _refused(lambda: Matcher(art, TOK, precomputed=bad_roots))
    fewer = replace(masks, accept_id=masks.accept_id[:-1], height=masks.height[:-1])
    assert "sizes" in _refused(lambda: Matcher(art, TOK, precomputed=fewer))


def test_suffix_classes_share_walks_exactly():
    import trgc
    from engine_fixtures import ROOT
    from trgc.engine.kernel import Scratch
    from trgc.engine.precompute import frame_entry, suffix_classes

    tok = trgc.load_tokenizer(ROOT / "tokenizers" / "synthetic" / "json-bytelevel")
    for source in (
        '%trg 1\n%start s\ns ::= "\\"" [a-z ]{0,60} "\\"" ;\n',
        (ROOT / "grammars" / "json.trg").read_text(encoding="utf-8"),
    ):
        art = trgc.compile_grammar(source)
        b = bind(art, tok)
        classes = suffix_classes(b.tables, b.trie_depth)
        masks = precompute(art, tok)
        scratch = Scratch(b)
        for key in masks.index():
            alone = frame_entry(b, key, scratch)
            shared = masks.entry_of(key)
            assert (alone.accept == shared.accept).all() and alone.height == shared.height
            assert (alone.open_roots == shared.open_roots).all()
        if "{0,60}" in source:  # a counter: one entry per clipped value, not one per count
            repeat_states = int(b.tables.is_repeat.sum())
            assert repeat_states and classes.max() + 1 <= masks.n_states
            assert masks.n_entries <= masks.n_states + repeat_states
