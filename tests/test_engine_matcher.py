"""Matcher API, reference semantics and kernel == reference on hand-built artifacts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_fixtures import (
    ROOT,
    STRUCTURAL,
    UNUSED_ID,
    json_like,
    make_tokenizer,
    matches_reference,
    regular,
    structural_table,
    tool_call,
)
from trgc.engine import kernel, matcher, reference
from trgc.engine.binding import bind
from trgc.engine.bits import n_words, pack, unpack
from trgc.engine.cache import MaskCache
from trgc.engine.config import START, step_bytes
from trgc.engine.matcher import Matcher
from trgc.errors import TrgcError

TOK = structural_table()
EOS = TOK.eos_ids[0]


def tid(text: bytes) -> int:
    return STRUCTURAL.index(text)


def allowed_set(mask: np.ndarray) -> set[bytes | str]:
    out: set[bytes | str] = set()
    for i in np.flatnonzero(mask):
        out.add(STRUCTURAL[i] if i < len(STRUCTURAL) else f"#{i}")
    return out


def test_start_masks_are_exact():
    m = Matcher(json_like(), TOK)
    assert allowed_set(m.allowed_tokens()) == {
        b"{",
        b"[",
        b'"',
        b"x",
        b'{"',
        b"{}",
        b"[]",
        b"[[",
        b'"a',
        b'""',
        b'"x',
        b"[x",
        b"[x]",
    }
    assert not m.is_accepting() and m.forced_bytes() == b""


def test_merged_structural_tokens():
    m = Matcher(json_like(), TOK)
    m.advance(tid(b'{"'))
    m.advance(tid(b"a"))
    allowed = allowed_set(m.allowed_tokens())
    # inside a member name: letters, closing quote merged with ':' and with a following value
    assert {b'":', b'":x', b'":{', b'":[', b"a", b"ab", b"zz", b'"'} <= allowed
    assert b'"}' not in allowed and b'"]' not in allowed and b"{}" not in allowed
    m.advance(tid(b'":{'))
    allowed = allowed_set(m.allowed_tokens())
    assert b"{}" not in allowed and b"}" in allowed and b'{"' not in allowed  # '{' already taken
    m.advance(tid(b"}"))
    assert allowed_set(m.allowed_tokens()) == {b"}"}  # '}}' would close more than is open
    m.advance(tid(b"}"))
    assert m.is_accepting()
    assert allowed_set(m.allowed_tokens()) == {f"#{EOS}"}
    m.advance(EOS)
    assert m.is_terminated() and m.is_accepting()
    assert not m.allowed_tokens().any()
    with pytest.raises(TrgcError) as err:
        m.advance(tid(b"x"))
    assert err.value.code == "E_TOKEN_NOT_ALLOWED"


def test_required_member_rejects_empty_object():
    # value after ':' must follow: '{}' is a complete value, but '"}' after a name is not
    m = Matcher(json_like(), TOK)
    m.advance(tid(b'{"'))
    m.advance(tid(b'"'))  # empty name
    allowed = allowed_set(m.allowed_tokens())
    assert b'"}' not in allowed and b"}" not in allowed and b":" in allowed


def test_utf8_split_tokens_follow_the_automaton():
    m = Matcher(json_like(), TOK)
    m.advance(tid(b'"'))
    allowed = allowed_set(m.allowed_tokens())
    assert {b"\xc3", b"\xc3\xa9"} <= allowed and b"\xa9" not in allowed and b"\xff" not in allowed
    m.advance(tid(b"\xc3"))
    assert allowed_set(m.allowed_tokens()) == {b"\xa9", b'\xa9"'}
    assert m.forced_bytes() == b"\xa9"
    m.advance(tid(b'\xa9"'))
    assert m.is_accepting()


def test_regular_grammar_and_forced_bytes():
    m = Matcher(regular(), TOK)
    assert m.forced_bytes() == b"a"
    m.advance(tid(b"ab"))
    assert allowed_set(m.allowed_tokens()) == {b"b", b"c", b"d"}
    m.advance(tid(b"d"))
    assert m.is_accepting() and f"#{EOS}" in allowed_set(m.allowed_tokens())


def test_special_tokens_by_name_and_added_tokens():
    art = tool_call()
    m = Matcher(art, TOK)
    added = TOK.added_tokens["<tool_call>"]
    # the added (non-special) token is the grammar symbol; the byte token spelling it is not
    assert np.flatnonzero(m.allowed_tokens()).tolist() == [added]
    with pytest.raises(TrgcError):
        m.advance(tid(b"<tool_call>"))
    m.advance(added)
    m.advance(tid(b"[x]"))
    closing = TOK.special_tokens["</tool_call>"]
    assert allowed_set(m.allowed_tokens()) == {f"#{closing}"}
    m.advance(closing)
    assert m.is_accepting()
    assert np.flatnonzero(m.allowed_tokens()).tolist() == [EOS]


def test_missing_special_token_fails_at_creation():
    bare = make_tokenizer([b"a", None], specials={"<eos>": 1}, eos=(1,))
    with pytest.raises(TrgcError) as err:
        Matcher(tool_call(), bare)
    assert err.value.code == "E_SPECIAL_TOKEN_MISSING"


def test_eos_never_offered_before_accepting_and_unused_never():
    m = Matcher(json_like(), TOK)
    assert not m.allowed_tokens()[EOS]
    with pytest.raises(TrgcError) as err:
        m.advance(EOS)
    assert err.value.code == "E_TOKEN_NOT_ALLOWED" and m.n_advanced == 0
    for bad in (-1, TOK.vocab_size, UNUSED_ID, TOK.special_tokens["<pad>"]):
        assert not m.is_allowed(bad)


def test_rollback_reset_and_config_id():
    m = Matcher(json_like(), TOK)
    start_id = m.config_id()
    m.advance(tid(b"[["))
    deep_id = m.config_id()
    m.advance(tid(b"x"))
    m.rollback(1)
    assert m.config_id() == deep_id
    m.rollback(1)
    assert m.config_id() == start_id
    with pytest.raises(TrgcError) as err:
        m.rollback(1)
    assert err.value.code == "E_ROLLBACK_TOO_FAR"
    m.advance(tid(b"x"))
    m.reset()
    assert m.config_id() == start_id and m.n_advanced == 0
    assert start_id == Matcher(json_like(), TOK).config_id()
    assert start_id.startswith("sha256:") and len(start_id) == 71


def test_packed_forms_and_fill_bitmask():
    m = Matcher(json_like(), TOK)
    mask = m.allowed_tokens()
    packed = m.allowed_tokens_packed()
    assert packed.dtype == np.int32 and packed.shape == (n_words(TOK.vocab_size),)
    assert (unpack(packed.view(np.uint32), TOK.vocab_size) == mask).all()
    for t in np.flatnonzero(mask):
        assert (int(packed[t // 32]) >> (t % 32)) & 1
    buffer = np.zeros((3, n_words(TOK.vocab_size)), dtype=np.int32)
    m.fill_bitmask(buffer, 2)
    assert (buffer[2] == packed).all() and not buffer[:2].any()
    bad = [
        np.zeros((3, n_words(TOK.vocab_size)), dtype=np.int64),
        np.zeros((3, n_words(TOK.vocab_size) - 1), dtype=np.int32),
        np.zeros((n_words(TOK.vocab_size), 3), dtype=np.int32).T,
        np.zeros(n_words(TOK.vocab_size), dtype=np.int32),
        [[0] * n_words(TOK.vocab_size)],
    ]
    for buf in bad:
        with pytest.raises(TrgcError) as err:
            m.fill_bitmask(buf)
        assert err.value.code == "E_BITMASK_BUFFER"
    with pytest.raises(TrgcError):
        m.fill_bitmask(buffer, 3)


def test_fill_bitmask_padded_vocabulary_never_allows_the_extra_ids():
    """A buffer wider than the mask (logits padded past the tokenizer) gets 0 words there,
    whatever it held before."""
    m = Matcher(json_like(), TOK)
    words = n_words(TOK.vocab_size)
    buffer = np.full((2, words + 3), -1, dtype=np.int32)
    m.fill_bitmask(buffer, 1)
    assert (buffer[1, :words] == m.allowed_tokens_packed()).all()
    assert not buffer[1, words:].any()
    assert (buffer[0] == -1).all()


def test_fill_bitmask_remembers_a_checked_buffer_safely():
    """The buffer of the last call is checked once, and only it at that row: another row,
    another buffer, a buffer made read-only since, each get the full checks and the right
    mask after every advance."""
    m = Matcher(json_like(), TOK)
    words = n_words(TOK.vocab_size)
    buffer = np.zeros((2, words), dtype=np.int32)
    m.fill_bitmask(buffer, 0)
    first = m.allowed_tokens_packed()
    assert (buffer[0] == first).all()
    token = int(np.flatnonzero(m.allowed_tokens() & m._binding.byte_token)[0])
    m.advance(token)
    m.fill_bitmask(buffer, 0)
    assert (buffer[0] == m.allowed_tokens_packed()).all() and not (buffer[0] == first).all()
    m.fill_bitmask(buffer, 1)
    assert (buffer[1] == buffer[0]).all()
    with pytest.raises(TrgcError):
        m.fill_bitmask(buffer, 2)
    other = np.zeros((1, words), dtype=np.int32)
    m.fill_bitmask(other, 0)
    assert (other[0] == buffer[0]).all()
    other.flags.writeable = False
    with pytest.raises(TrgcError) as err:
        m.fill_bitmask(other, 0)
    assert err.value.code == "E_BITMASK_BUFFER"


def test_pack_unpack_round_trip():
    rng = np.random.default_rng(7)
    for size in (1, 31, 32, 33, 100):
        mask = rng.random(size) < 0.5
        assert (unpack(pack(mask), size) == mask).all()


def test_cache_hits_and_budget(monkeypatch):
    monkeypatch.setattr(matcher, "WALKED_NODES", -1)  # every one-frame entry is kept
    cache = MaskCache(budget_bytes=10_000)
    m = Matcher(json_like(), TOK, cache=cache)
    first = m.allowed_tokens()
    assert m.last_source == "walk"
    # the start frame decides the whole mask alone: its entry is the mask (no second copy)
    assert (m.allowed_tokens() == first).all() and m.last_source == "frame"
    assert len(cache) == 1
    m._history = [step_bytes(m._binding.tables, START, b"x")]  # accepting: EOS added, cached
    m.allowed_tokens()
    assert (m.allowed_tokens() == reference.allowed_mask(m._binding, m.config)).all()
    assert m.last_source == "cache"
    other = Matcher(regular(), TOK, cache=cache)  # same cache, other artifact: no false hit
    other.allowed_tokens()
    assert other.last_source == "walk"
    tiny = MaskCache(budget_bytes=200)
    m2 = Matcher(json_like(), TOK, cache=tiny)
    for t in (b"[", b"[", b"x"):
        m2.allowed_tokens()
        m2.advance(tid(t))
    assert tiny.bytes_used <= 200 and len(tiny) == 1
    stats = m2.cache_stats()
    assert stats["entries"] == 1 and stats["budget_bytes"] == 200 and stats["misses"] >= 3
    tiny.clear()
    assert len(tiny) == 0 and tiny.bytes_used == 0


def test_small_one_frame_masks_are_walked_every_time_and_never_kept():
    """A one-frame configuration whose walk is small (`matcher.WALKED_NODES`) is walked on
    every visit, into the matcher's scratch, and nothing is kept for it; a larger one keeps its
    entry and is found again. Either way the mask is the reference's, also when the caller
    keeps the previous mask while asking for the next one."""
    cache = MaskCache()
    m = Matcher(json_like(), TOK, cache=cache)
    b = m._binding
    assert m._one_frame_plan[0] == matcher.WALKED
    first = m.allowed_tokens()
    assert m.last_source == "walk" and len(cache) == 0
    assert (m.allowed_tokens() == first).all() and m.last_source == "walk" and len(cache) == 0
    assert (first == reference.allowed_mask(b, START)).all()
    m.advance(tid(b"["))
    second = m.allowed_tokens()
    assert (second == reference.allowed_mask(b, m.config)).all()
    assert (first == reference.allowed_mask(b, START)).all() and not (first == second).all()
    kept = Matcher(json_like(), TOK, cache=cache)
    kept._one_frame_plan = [
        matcher.KEPT if p == matcher.WALKED else p for p in kept._one_frame_plan
    ]
    assert (kept.allowed_tokens() == first).all() and kept.last_source == "walk"
    assert len(cache) == 1
    assert (kept.allowed_tokens() == first).all() and kept.last_source == "frame"


def test_depth_limit_is_dead():
    art = json_like(max_depth=3)
    m = Matcher(art, TOK)
    m.advance(tid(b"[["))
    assert len(m.frames()) == 2
    allowed = allowed_set(m.allowed_tokens())
    assert b"x" in allowed and b"[" in allowed and b"[[" not in allowed
    m.advance(tid(b"["))
    assert b"[" not in allowed_set(m.allowed_tokens())


def test_tokens_into_configurations_that_cannot_complete_are_refused():
    # at depth 3 of 3 an object can close ('{}') but not take a member: its value would need a
    # fourth frame, so '{"' leads to a configuration no continuation can complete
    m = Matcher(json_like(max_depth=3), TOK)
    m.advance(tid(b"[["))
    allowed = allowed_set(m.allowed_tokens())
    assert {b"{", b"{}", b"x", b"[]"} <= allowed and b'{"' not in allowed
    m.advance(tid(b"{"))
    assert allowed_set(m.allowed_tokens()) == {b"}", b"},", b"}]"}
    assert not m.is_allowed(tid(b'"'))


def _walk_configs(art, seed: int, steps: int):
    rng = np.random.default_rng(seed)
    b = bind(art, TOK)
    config = START
    out = [config]
    for _ in range(steps):
        mask = reference.allowed_mask(b, config)
        mask[b.eos_ids] = False
        choices = np.flatnonzero(mask & b.byte_token)
        if choices.size == 0:
            break
        config = step_bytes(b.tables, config, b.token_bytes(int(rng.choice(choices))))
        out.append(config)
    return out


@settings(max_examples=30, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), which=st.sampled_from(["json", "call", "regular"]))
def test_kernel_equals_reference_on_random_walks(seed, which):
    art = {"json": json_like, "call": tool_call, "regular": regular}[which]()
    b = bind(art, TOK)
    matcher = Matcher(art, TOK)  # adaptive path: frame entries plus the live-stack remainder
    for config in _walk_configs(art, seed, 25):
        expected = reference.allowed_mask(b, config)
        assert (kernel.allowed_mask(b, config) == expected).all(), config
        matcher._history = [config]
        assert (matcher.allowed_tokens() == expected).all(), config


def test_step_bound_rejects_malformed_loops():
    # machine 0 calls machine 1 on 'x', which returns at once on 'x': a loop without input
    from engine_fixtures import make_artifact

    art = make_artifact(
        [
            {"name": "a", "n": 2, "accepting": [1], "edges": {0: {ord("x"): ("call", 1, 0)}}},
            {"name": "b", "n": 1, "accepting": [0], "edges": {}},
        ]
    )
    b = bind(art, TOK)
    assert step_bytes(b.tables, START, b"x") is None
    assert not kernel.allowed_mask(b, START)[tid(b"x")]
    assert not reference.allowed_mask(b, START).any()


def test_eos_named_by_the_grammar_is_a_symbol_first():
    from engine_fixtures import make_artifact

    # s ::= "x" special("<eos>")?   -- the EOS token is also a grammar symbol
    art = make_artifact(
        [{"name": "s", "n": 3, "accepting": [1, 2], "edges": {0: {ord("x"): 1}, 1: {"<eos>": 2}}}],
        specials=("<eos>",),
    )
    m = Matcher(art, TOK)
    assert not m.is_allowed(EOS)
    m.advance(tid(b"x"))
    assert m.allowed_tokens()[EOS]
    m.advance(EOS)  # the grammar admits it here: a step, not the end
    assert not m.is_terminated() and m.is_accepting()
    assert np.flatnonzero(m.allowed_tokens()).tolist() == [EOS]
    m.advance(EOS)  # not admitted by the grammar any more, configuration accepting: the end
    assert m.is_terminated()
    b = bind(art, TOK)
    for config in (START, step_bytes(b.tables, START, b"x")):
        assert (kernel.allowed_mask(b, config) == reference.allowed_mask(b, config)).all()


def test_a_one_frame_string_body_mask_is_its_frame_entry_without_a_configuration_key(
    monkeypatch,
):
    """A one-frame configuration whose state no cheap walk covers (a string body: its entry
    comes from `_frame`, walked by the slice's tails) is masked by its entry alone
    (`matcher.ENTRY`): no key of the configuration is made or kept, the entry is made once and
    found again on the next character, and the mask is the reference's. (The first mask makes
    no string body's entry here, so that the body's first mask makes it.)"""
    import trgc

    monkeypatch.setattr(matcher, "FIRST_ENTRIES", 0)
    tok = trgc.load_tokenizer(ROOT / "tokenizers/llama3/tokenizer.json.zst")
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    cache = MaskCache()
    m = Matcher(trgc.compile_schema(schema, separators="compact"), tok, cache=cache)
    b = m._binding
    rng = np.random.default_rng(5)
    m.allowed_tokens()
    for text, source in ((b'{"a":"x', "walk"), (b'{"a":"xy', "frame")):
        config = step_bytes(b.tables, START, text)
        m._history = [config]
        assert len(config) == 1 and m._one_frame_plan[config[0]] == matcher.ENTRY
        before = len(cache)
        mask = m.allowed_tokens()
        assert m.last_source == source, text
        assert len(cache) == before + (source == "walk")  # the entry, never the configuration
        assert cache.get((*b.key, config)) is None
        matches_reference(b, config, mask, rng, whole=False)


def test_the_first_mask_makes_the_string_bodies_entries(monkeypatch):
    """The first mask a matcher computes makes the entries of the first `FIRST_ENTRIES`
    frames its slice plan walks by tails (the string bodies here), so that a string body's
    first mask in the document finds its entry made ("frame", no walk), with the reference's
    mask; beyond `FIRST_ENTRIES`, and in a matcher whose first computed mask comes after an
    advance, a body's entry is made when it is met ("walk"). A matcher whose start mask is in
    a shared cache still makes its bodies' entries."""
    import trgc

    tok = trgc.load_tokenizer(ROOT / "tokenizers/llama3/tokenizer.json.zst")
    schema = {
        "type": "object",
        "properties": {name: {"type": "string"} for name in ("a", "b", "c")},
        "required": ["a", "b", "c"],
    }
    art = trgc.compile_schema(schema, separators="compact")
    bodies = (b'{"a":"x', b'{"a":"x","b":"y', b'{"a":"x","b":"y","c":"z')
    rng = np.random.default_rng(11)

    def first_sources(limit: int | None, advance_first: bool = False) -> list[str]:
        if limit is not None:
            monkeypatch.setattr(matcher, "FIRST_ENTRIES", limit)
        m = Matcher(art, tok, cache=MaskCache())
        b = m._binding
        if advance_first:
            m.advance(next(t for t in range(tok.vocab_size) if tok.token_bytes(t) == b"{"))
        m.allowed_tokens()
        assert advance_first or m.last_source == "walk"  # the start's own mask, walked
        sources = []
        for text in bodies:
            config = step_bytes(b.tables, START, text)
            m._history = [config]
            mask = m.allowed_tokens()
            sources.append(m.last_source)
            matches_reference(b, config, mask, rng, whole=False)
        return sources

    assert first_sources(None) == ["frame", "frame", "frame"]
    assert first_sources(1) == ["frame", "walk", "walk"]
    assert first_sources(16, advance_first=True) == ["walk", "walk", "walk"]
    monkeypatch.setattr(matcher, "WALKED_NODES", -1)  # the start's entry is kept
    cache = MaskCache()
    monkeypatch.setattr(matcher, "FIRST_ENTRIES", 0)
    Matcher(art, tok, cache=cache).allowed_tokens()
    monkeypatch.setattr(matcher, "FIRST_ENTRIES", 16)
    m = Matcher(art, tok, cache=cache)
    m.allowed_tokens()
    assert m.last_source == "frame" and len(m._entries) == 3


def test_a_one_frame_entry_keeps_max_depth():
    """Inside a string body, one token may close the string and open a recursive value: with
    `max_depth` 1 the string body's entry (`matcher.ENTRY`) leaves it out, with 2 it allows
    it; the masks are the reference's. (A frame walked alone refuses what would pass
    `max_depth`, so its height never does: `_one_frame`'s check of it is a guard.)"""
    import trgc

    long = b'","c":[{"a":"'
    pieces = [bytes([b]) for b in range(256)] + [long, None]
    tok = make_tokenizer(pieces, specials={"<eos>": len(pieces) - 1}, eos=(len(pieces) - 1,))
    schema = {"type": "object", "required": ["a"],
              "properties": {"a": {"type": "string"}, "c": {"type": "array", "items": {"$ref": "#"}}}}  # fmt: skip
    for max_depth, allowed in ((1, False), (2, True)):
        art = trgc.compile_schema(schema, separators="compact", max_depth=max_depth)
        m = Matcher(art, tok)
        b = m._binding
        config = step_bytes(b.tables, START, b'{"a":"x')
        m._history = [config]
        assert m._one_frame_plan[config[0]] == matcher.ENTRY
        mask = m.allowed_tokens()
        assert m._frame(config[0]).height <= b.tables.max_depth
        assert bool(mask[256]) == allowed, max_depth
        assert (mask == reference.allowed_mask(b, config)).all()
