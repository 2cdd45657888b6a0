"""Slice tails (`trgc.engine.tails`): the tail trie and its skip against a brute-force reading
of the tokens, the frames after a member, and frame entries equal to plain walks where the
tails are walked (including open tails, which stand for trie nodes)."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest

import trgc
from engine_fixtures import ROOT, entry_matches_walk, make_tokenizer, matches_reference
from test_engine_scale import longest_match
from trgc.engine import kernel, matcher, precompute
from trgc.engine.binding import bind
from trgc.engine.cache import MaskCache
from trgc.engine.config import START, STATE_MASK, frame_key, step_bytes
from trgc.engine.kernel import Scratch, walk_trie
from trgc.engine.matcher import Matcher
from trgc.engine.precompute import frame_entry, reachable_keys
from trgc.engine.slices import STRING, WORD, default_slices, first_call, is_safe
from trgc.engine.slices import STRING_DOT as DOT
from trgc.engine.tails import after_members
from trgc.grammar.schema.canonical import canonical_instance

TOKENS = [
    b"abc", b'ab"', b'ab",', b'"', b'",', b'"}', b'x"}]', b"x\xe1", b"\xe1", b"\xe1\xbb",
    b"\xe1\xbb\x85", b"ab\\n", b"\\", b"\n", b"x\n", b"a\xe2\x80\xa8", b"\xe2\x80\xa8b", b"b",
]  # fmt: skip


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
        entry_matches_walk(b, key, scratch)
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
    assert (body & STATE_MASK) not in precompute.slice_plan(b)  # the plan leaves it to a search
    for key in reachable_keys(b.tables, b.trie_depth):
        entry = frame_entry(b, key, scratch)
        plain = np.zeros(b.n_words, dtype=np.uint32)
        roots, height = walk_trie(b, (key,), plain, scratch, frame_mode=False)
        assert (entry.accept == plain).all() and entry.open_roots.tolist() == roots.tolist()
        assert entry.height >= height


PLAN_SCHEMAS = {
    "plain": {"type": "object", "properties": {"a": {"type": "string"}, "b": {
        "type": "array", "items": {"type": "string"}}}, "required": ["a"]},
    # names sharing a prefix, other names allowed: a member ends in one of several states
    "names": {"type": "object", "properties": {"name": {"type": "string"},
              "nation": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
    "dot": {"type": "string", "pattern": ".+"},
    "nested": NESTED,
    # string bodies called under `minLength`: a counter that can run out within a token, and
    # members that end with one iteration still needed or none
    "short": {"type": "object", "properties": {"a": {"type": "string", "minLength": 1,
              "maxLength": 20}, "b": {"type": "string", "minLength": 2}}, "required": ["a"]},
}  # fmt: skip
PLAN_GRAMMARS = ("json", "csv", "sexpr", "toolcall")


def _plan_artifact(name: str):
    if name in PLAN_SCHEMAS:
        return trgc.compile_schema(PLAN_SCHEMAS[name], separators="compact")
    if name.endswith(".json"):
        return trgc.compile_schema((ROOT / "schemas" / name).read_bytes())
    return trgc.compile_grammar((ROOT / "grammars" / f"{name}.trg").read_text(encoding="utf-8"))


def _bounded_call(b, g: int) -> bool:
    """Whether frame `g` takes the string slice's members by a call whose counter can run out
    within a token (`maxLength` below the longest token): searched frame by frame."""
    t = b.tables
    k = first_call(t, g, default_slices()[STRING].dfa)
    return k is not None and bool(t.is_repeat[t.calls[k, 0]]) and t.call_entry[k, 0] < b.trie_depth


def _check_plan(b) -> tuple[int, int, int]:
    """Every frame `slice_plan` decides gets the answer of its own search, and every frame
    without counters, or counted with the longest token's iterations left and none needed,
    whose search finds the string slice with tails is decided, unless by a call whose counter
    can run out within a token; (decided with tails by shifts, with tails by a call, without
    tails)."""
    plan = precompute.slice_plan(b)
    maybe = precompute.slice_candidates(b)
    for g in np.flatnonzero(maybe.any(axis=0)).tolist():
        key = g | (b.trie_depth << 32) if b.tables.is_repeat[g] else g
        searched = precompute._searched_slice(b, key)
        if key in plan:
            assert plan[key] == searched, key
        else:
            assert not (searched[0] == STRING and searched[2] and not _bounded_call(b, g)), key
    words = maybe[WORD] & ~maybe[:WORD].any(axis=0)  # the word slice's part of the plan
    assert {key & STATE_MASK for key in plan} <= set(np.flatnonzero(maybe[STRING] | words).tolist())
    shifts = sum(after is not None and len(after) == 1 for _, _, after in plan.values())
    called = sum(after is not None and len(after) == 2 for _, _, after in plan.values())
    return shifts, called, len(plan) - shifts - called


@pytest.mark.parametrize("vocab", ["tokenizers/llama3/tokenizer.json.zst", "bytes"])
@pytest.mark.parametrize(
    "name", [*PLAN_SCHEMAS, *PLAN_GRAMMARS, "person.json", "tool_args.json", "tree.json"]
)
def test_the_slice_plan_equals_each_frames_search(vocab, name):
    """`slice_plan` (every frame without counters at once, `slices.plain_frames`) against
    `_searched_slice` (one frame at a time, the searches `is_safe` and `after_members`)."""
    tok = byte_table() if vocab == "bytes" else trgc.load_tokenizer(ROOT / vocab)
    try:
        b = bind(_plan_artifact(name), tok)
    except trgc.TrgcError as err:
        assert err.code == "E_SPECIAL_TOKEN_MISSING"
        return
    tails, called, plain = _check_plan(b)
    if name in ("plain", "nested", "json"):
        assert tails > 0
    if name == "nested":
        assert called > 0  # `minLength: 1` without a bound below the longest token
        # and that body after its first character: counted, iterations enough, none needed
        assert any(key > STATE_MASK for key in precompute.slice_plan(b))
    if name == "short":  # `maxLength: 20`: below Llama-3's longest token, not the bytes'
        bounded = any(_bounded_call(b, g) for g in range(b.tables.next.shape[0]))
        assert (bounded, called) == ((True, 0) if vocab != "bytes" else (False, 1))
    if name == "names":
        assert plain > 0  # "na" may go on as "name", "nation" or another name


def test_the_slice_plan_equals_each_frames_search_on_jsonschemabench():
    """The same on the first 25 schemas of every JSONSchemaBench subset that trgc compiles."""
    from test_engine_scale import BENCH

    if not BENCH.is_dir():
        pytest.skip(f"the JSONSchemaBench corpus is missing: {BENCH}")
    tok = trgc.load_tokenizer(ROOT / "tokenizers/llama3/tokenizer.json.zst")
    decided = [0, 0, 0]
    for subset in sorted(p for p in BENCH.iterdir() if p.is_dir()):
        for path in sorted(subset.glob("*.json"))[:25]:
            try:
                art = trgc.compile_schema(path.read_bytes(), separators="compact")
            except trgc.TrgcError:
                continue
            for i, n in enumerate(_check_plan(bind(art, tok))):
                decided[i] += n
    assert decided[0] > 200 and decided[1] > 20 and decided[2] > 0, decided


def test_a_matcher_makes_the_slice_plan_with_its_first_mask(monkeypatch):
    """The plan is made with a matcher's first mask, and a string body's first mask then
    searches nothing, also where the frame calls the body's repeat machine (`minLength`) and
    inside that machine: made there instead, the plan or the searches cost 100-600 us, once
    per artifact, and 30-140 us per such frame, in masks of their own. (The first mask makes
    no string body's entry here: each body's first mask makes it.)"""
    monkeypatch.setattr(matcher, "FIRST_ENTRIES", 0)
    tok = trgc.load_tokenizer(ROOT / "tokenizers/llama3/tokenizer.json.zst")
    searched = []
    real = precompute._searched_slice
    monkeypatch.setattr(precompute, "_searched_slice", lambda *a: searched.append(a) or real(*a))
    rng = np.random.default_rng(3)
    texts = {"plain": (b'{"a":"x', b'{"a":"x","b":["y'),
             "nested": (b'[{"name":"', b'[{"name":"Ada', b'[{"name":"A","note":"')}  # fmt: skip
    for name, prefixes in texts.items():
        m = Matcher(_plan_artifact(name), tok)
        assert "slice_plan" not in m._binding._lazy
        m.allowed_tokens()
        assert "slice_plan" in m._binding._lazy
        for text in prefixes:
            config = step_bytes(m._binding.tables, START, text)
            m._history = [config]
            matches_reference(m._binding, config, m.allowed_tokens(), rng, whole=False)
            assert m.last_source == "walk", text
    assert not searched


def test_trie_nodes_are_kept_per_set_of_tail_nodes(monkeypatch):
    """`Tails.trie_nodes` keeps its answers per set of open tail nodes: every set, asked in
    any order and again, gets the answer made for it alone (a set and its prefix included),
    read-only, and a kept set is not made twice; with no room nothing is kept."""
    tok = trgc.load_tokenizer(ROOT / "tokenizers/llama3/tokenizer.json.zst")
    b = bind(trgc.compile_schema({"type": "string"}), tok)
    tails = dataclasses.replace(b.slices().raw.tails(STRING), placed=MaskCache(8 << 20))
    below = tails.token_start[tails.subtree_end] - tails.token_start[:-1]
    with_tokens = np.flatnonzero(below > 0)
    rng = np.random.default_rng(0)
    sets = [np.sort(rng.choice(with_tokens, size=n, replace=False)).astype(np.int32)
            for n in (1, 2, 3, 5)]  # fmt: skip
    sets.append(sets[1][:1].copy())  # a prefix of another set
    fresh = [tails._trie_nodes(s, b.vocab).tolist() for s in sets]
    assert fresh[1] != fresh[4]
    made = []
    real = type(tails)._trie_nodes
    monkeypatch.setattr(type(tails), "_trie_nodes", lambda *a: made.append(1) or real(*a))
    for order in (sets, sets[::-1]):
        for s in order:
            found = tails.trie_nodes(s, b.vocab)
            assert not found.flags.writeable
            assert found.tolist() == fresh[next(i for i, t in enumerate(sets) if t is s)]
    assert len(made) == len(sets) and len(tails.placed) == len(sets)
    bare = dataclasses.replace(tails, placed=MaskCache(0))
    for s, expected in zip(sets, fresh, strict=True):
        assert bare.trie_nodes(s, b.vocab).tolist() == expected
    assert len(bare.placed) == 0


def test_string_bodies_of_two_artifacts_share_their_tail_places(monkeypatch):
    """Live: the second artifact's string bodies open the tails the first's did, and read
    their trie nodes kept instead of making them (120-300 us each in a first mask); every
    mask equals the reference's on a sample."""
    tok = trgc.load_tokenizer(ROOT / "tokenizers/llama3/tokenizer.json.zst")
    tails = bind(trgc.compile_schema({"type": "string"}), tok).slices().raw.tails(STRING)
    tails.placed.clear()  # the tokenizer's, shared by every test of the process
    made = []
    real = type(tails)._trie_nodes
    monkeypatch.setattr(type(tails), "_trie_nodes", lambda *a: made.append(1) or real(*a))
    rng = np.random.default_rng(5)
    counts = []
    for name in ("name", "title"):
        schema = {"type": "object", "properties": {name: {"type": "string", "minLength": 1}},
                  "required": [name]}  # fmt: skip
        m = Matcher(trgc.compile_schema(schema, separators="compact"), tok)
        for text in (b'{"%s":"' % name.encode(), b'{"%s":"ab' % name.encode()):
            config = step_bytes(m._binding.tables, START, text)
            m._history = [config]
            matches_reference(m._binding, config, m.allowed_tokens(), rng, whole=False)
        counts.append(len(made))
    assert counts[0] > 0 and counts[1] == counts[0], counts


@pytest.mark.parametrize(
    ("grammar", "doc"),
    [("json", b'{"name":"Ada Lovelace","tags":["x","y\\n",""],"n":1}'),
     ("sexpr", b'(define "hello world" "a\\"b" 12)')],
)  # fmt: skip
def test_a_grammars_string_masks_equal_the_full_walk(grammar, doc):
    """A trg-1 grammar's strings are decided by the slice plan and walked by tails: at every
    byte of a document through them, a matcher's mask equals the bare kernel's full walk, and
    the reference's on a sample (seeded walks of the grammars seldom stay inside a string)."""
    tok = trgc.load_tokenizer(ROOT / "tokenizers/llama3/tokenizer.json.zst")
    m = Matcher(_plan_artifact(grammar), tok)
    b = m._binding
    assert any(after is not None for _, _, after in precompute.slice_plan(b).values())
    rng = np.random.default_rng(11)
    for end in range(1, len(doc) + 1):
        config = step_bytes(b.tables, START, doc[:end])
        m._history = [config]
        mask = m.allowed_tokens()
        assert (mask == kernel.allowed_mask(b, config)).all(), doc[:end]
        matches_reference(b, config, mask, rng, whole=False)
