"""Slice tails (`trgc.engine.tails`): the tail trie and its skip against a brute-force reading
of the tokens, the frames after a member, and frame entries equal to plain walks where the
tails are walked (including open tails, which stand for trie nodes)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import trgc
from engine_fixtures import ROOT, make_tokenizer, matches_reference
from test_engine_scale import longest_match
from trgc.engine import kernel, precompute
from trgc.engine.binding import bind
from trgc.engine.config import START, STATE_MASK, frame_key, step_bytes
from trgc.engine.kernel import Scratch, walk_trie
from trgc.engine.matcher import Matcher
from trgc.engine.precompute import frame_entry, reachable_keys
from trgc.engine.slices import default_slices, is_safe
from trgc.engine.tails import after_members
from trgc.grammar.schema.canonical import canonical_instance

TOKENS = [
    b"abc", b'ab"', b'ab",', b'"', b'",', b'"}', b'x"}]', b"x\xe1", b"\xe1", b"\xe1\xbb",
    b"\xe1\xbb\x85", b"ab\\n", b"\\", b"\n", b"x\n", b"a\xe2\x80\xa8", b"\xe2\x80\xa8b", b"b",
]  # fmt: skip
STRING = 0  # default_slices() index of the unbounded string slice
DOT = 4  # and of the string characters a regex `.` matches


@functools.cache
def table():
    return make_tokenizer([*TOKENS, None], specials={"<eos>": len(TOKENS)}, eos=(len(TOKENS),))


@functools.cache
def byte_table():
    """Every single byte, then `TOKENS` and a few tails that close a string and an object."""
    pieces = [bytes([b]) for b in range(256)]
    pieces += [t for t in (*TOKENS, b'a"}', b'e"},', b'ce"}]', b'x"},{"') if t not in pieces]
    return make_tokenizer([*pieces, None], specials={"<eos>": len(pieces)}, eos=(len(pieces),))


def _members(dfa: np.ndarray, data: bytes) -> tuple[bool, int]:
    """(a prefix of a slice string, bytes of the longest beginning made of whole slice
    characters)."""
    state, head = 0, 0
    for i, b in enumerate(data):
        state = int(dfa[state, b])
        if state < 0:
            return False, head
        if state == 0:
            head = i + 1
    return True, head


@pytest.mark.parametrize("k", [STRING, DOT])
def test_tail_trie_and_skip_follow_the_tokens(k):
    b = bind(trgc.compile_schema({"type": "string"}), table())
    tails = b.slices().raw.tails(k)
    vocab = b.vocab
    dfa = default_slices()[k].dfa
    expected_tail, headless = {}, set()
    for t, data in enumerate(TOKENS):
        whole, head = _members(dfa, data)
        if whole:
            assert tails.head[t] == 0
        elif head:
            expected_tail[t] = data[head:]
            assert tails.head[t] == head, data
        else:
            headless.add(t)
    found = {}
    for node in range(tails.node_byte.shape[0]):
        spelt, up = b"", node
        while up > 0:
            spelt, up = bytes([tails.node_byte[up]]) + spelt, tails.parent[up]
        assert tails.node_depth[node] == len(spelt)
        assert (tails.node_tok[node] == -2) == (
            tails.token_start[node + 1] > tails.token_start[node]
        )
        for t in tails.token_ids[tails.token_start[node] : tails.token_start[node + 1]]:
            found[int(t)] = spelt
    assert found == expected_tail
    assert b'"' in expected_tail.values() and b"\n" in expected_tail.values()
    assert tails.head[TOKENS.index(b"x\xe1")] == 0  # a cut last character: a member
    for node in range(vocab.node_byte.shape[0]):
        below = range(node, vocab.subtree_end[node])
        tokens = {int(t) for i in below
                  for t in vocab.token_ids[vocab.token_start[i] : vocab.token_start[i + 1]]}  # fmt: skip
        assert bool(tails.skip[node]) == (node != 0 and not tokens & headless), node


def test_frames_after_a_member():
    art = trgc.compile_grammar((ROOT / "grammars" / "json.trg").read_text(encoding="utf-8"))
    b = bind(art, table())
    tables, dfa = b.tables, default_slices()[STRING].dfa
    in_string = frame_key(step_bytes(tables, START, b'{"a":"')[-1], b.trie_depth)
    after = after_members(tables, in_string, dfa, b.trie_depth)
    assert after is not None
    for member in (b"a", b"abc", b"\xe1\xbb\x85", b"x\xe1\xbb\x85y"):
        stepped = step_bytes(tables, START, b'{"a":"' + member)
        assert frame_key(stepped[-1], b.trie_depth) == after[-1], member
    # counted: with iterations still needed, the frames depend on how many characters came
    counted = trgc.compile_schema({"type": "string", "minLength": 3, "maxLength": 1000})
    cb = bind(counted, table())
    body = frame_key(step_bytes(cb.tables, START, b'"')[-1], cb.trie_depth)
    assert is_safe(cb.tables, body, default_slices()[STRING], cb.trie_depth) is not None
    assert after_members(cb.tables, body, dfa, cb.trie_depth) is None
    two_more = frame_key(step_bytes(cb.tables, START, b'"ab')[-1], cb.trie_depth)
    assert after_members(cb.tables, two_more, dfa, cb.trie_depth) is not None


NESTED = {  # string bodies a frame calls (minLength), in an object other frames call
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 4000},
            "note": {"type": "string"},
            "tag": {"type": "string", "pattern": "^.*$"},
        },
        "required": ["name"],
    },
}


@pytest.mark.parametrize("vocab", ["tokenizers/llama3/tokenizer.json.zst", "fixture"])
def test_entries_by_tails_equal_plain_walks(vocab, monkeypatch):
    tok = table() if vocab == "fixture" else trgc.load_tokenizer(ROOT / vocab)
    art = trgc.compile_schema(NESTED, separators="compact")
    b = bind(art, tok)
    scratch = Scratch(b)
    used = {"frames": [], "open": 0}
    walk_tails = precompute._walk_tails

    def counting(binding, key, after, k, accept, scratch, frame_mode):
        found = walk_tails(binding, key, after, k, accept, scratch, frame_mode)
        used["frames"].append(len(after))
        return found

    monkeypatch.setattr(precompute, "_walk_tails", counting)
    original = type(b.slices().raw.tails(STRING)).trie_nodes

    def mapping(self, tail_nodes, vocab):
        used["open"] += int(tail_nodes.size)
        return original(self, tail_nodes, vocab)

    monkeypatch.setattr(type(b.slices().raw.tails(STRING)), "trie_nodes", mapping)
    for key in reachable_keys(b.tables, b.trie_depth):
        entry = frame_entry(b, key, scratch)
        plain = np.zeros(b.n_words, dtype=np.uint32)
        mode = bool(b.tables.has_caller[key & STATE_MASK])
        roots, height = walk_trie(b, (key,), plain, scratch, frame_mode=mode)
        assert (entry.accept == plain).all(), key
        assert entry.open_roots.tolist() == roots.tolist() and entry.height >= height, key
    # the tails were walked from one frame and, into a called string body, from two; some
    # tails returned from the object (open), standing for trie nodes
    assert 1 in used["frames"] and 2 in used["frames"], used
    assert used["open"] > 0


NESTED_INSTANCE = [
    {"name": "Ada Lovelace", "note": 'said "hi"\n', "tag": "x"},
    {"name": "é", "tag": "a b"},
    {"name": "Grace"},
]


@pytest.mark.parametrize("vocab", ["tokenizers/llama3/tokenizer.json.zst", "bytes"])
def test_live_masks_walk_open_tails_from_the_stack(vocab, monkeypatch):
    """A matcher whose entries have open tails walks them in the tail trie from the live stack
    (`Matcher._after_member`): its masks equal a full kernel walk at every step of a forced
    instance and of a seeded walk, and the reference on samples (the whole vocabulary at some
    steps)."""
    tok = byte_table() if vocab == "bytes" else trgc.load_tokenizer(ROOT / vocab)
    art = trgc.compile_schema(NESTED, separators="compact")
    used = {"tails": 0, "called": 0}
    after_member = Matcher._after_member

    def counting(self, k, top):
        after = after_member(self, k, top)
        used["tails"] += after is not None
        used["called"] += after is not None and len(after) == 2  # into a string body
        return after

    monkeypatch.setattr(Matcher, "_after_member", counting)
    rng = np.random.default_rng(7)
    m = Matcher(art, tok)
    b = m._binding
    doc = canonical_instance(NESTED, NESTED_INSTANCE, "compact")
    forced = longest_match(tok, b.byte_token, doc)
    assert forced is not None
    walker = Matcher(art, tok)
    steps = 0
    for i in range(len(forced) + 40):
        config = walker.config
        if config is None:
            break
        m._history = [config]
        mask = m.allowed_tokens()
        assert (mask == kernel.allowed_mask(b, config)).all(), i
        matches_reference(b, config, mask, rng, whole=i % 17 == 5)
        steps += 1
        if i < len(forced):
            token = forced[i]
        else:
            choices = np.flatnonzero(mask & b.byte_token)
            if not choices.size:
                break
            token = int(rng.choice(choices))
        walker.advance(token)
    assert steps > len(forced) // 2
    assert used["tails"] > 0
    assert used["called"] > 0 or vocab != "bytes"  # Llama-3 has no `ab"}`-like token


def test_a_later_slice_with_tails_is_taken_when_the_first_has_none():
    """Under the unanchored `pattern: ".+"` U+2028 leaves a string where it was and any other
    character moves it on: the string slice is safe but its members end in two states, so
    the string-dot slice (which leaves U+2028 to the tails) is walked by tails instead."""
    tok = trgc.load_tokenizer(ROOT / "tokenizers/llama3/tokenizer.json.zst")
    art = trgc.compile_schema({"type": "string", "pattern": ".+"}, separators="compact")
    b = bind(art, tok)
    scratch = Scratch(b)
    body = frame_key(step_bytes(b.tables, START, b'"')[-1], b.trie_depth)
    assert is_safe(b.tables, body, default_slices()[STRING], b.trie_depth) is not None
    assert after_members(b.tables, body, default_slices()[STRING].dfa, b.trie_depth) is None
    k, _, after = precompute._slice_of(b, body)
    assert k == DOT and after is not None
    for key in reachable_keys(b.tables, b.trie_depth):
        entry = frame_entry(b, key, scratch)
        plain = np.zeros(b.n_words, dtype=np.uint32)
        roots, height = walk_trie(b, (key,), plain, scratch, frame_mode=False)
        assert (entry.accept == plain).all() and entry.open_roots.tolist() == roots.tolist()
        assert entry.height >= height
