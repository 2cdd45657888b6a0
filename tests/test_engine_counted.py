"""Counted frames with few iterations left (`trgc.engine.counted`): entries derived from the same
frame unclipped equal plain walks, and a matcher derives them."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import trgc
from engine_fixtures import ROOT, make_tokenizer, matches_reference
from test_engine_slices import COUNTED_STRINGS
from trgc.engine import counted, framecache, kernel, precompute
from trgc.engine.binding import bind
from trgc.engine.config import START, frame_key, step_bytes, unclip
from trgc.engine.kernel import Scratch, walk_trie
from trgc.engine.matcher import Matcher
from trgc.engine.precompute import FrameEntry, reachable_keys

SLUG = {  # a counted string no slice fits: every character a count of its own below L
    "type": "object",
    "properties": {
        "version": {"type": "string"},
        "slug": {"type": "string", "minLength": 4, "maxLength": 63, "pattern": "^[0-9a-z-]*$"},
    },
    "required": ["version", "slug"],
}
SCHEMAS = {
    "slug": SLUG,
    "top-level": {"type": "string", "pattern": "^[a-z ]+$", "maxLength": 40},
    "items": {"type": "array", "items": {"type": "integer"}, "maxItems": 30},
    "strings": COUNTED_STRINGS,
    # a token may open nested arrays (rule frames): the height comes from short tokens too
    "nested": {"type": "array", "maxItems": 20,
               "items": {"anyOf": [{"type": "integer"}, {"$ref": "#"}]}},
}  # fmt: skip


GRAMMARS = {  # trg-1 counted repetitions, inside recursion for the second
    "tags": '%trg 1\n%start s\ns ::= "<" [a-z-]{0,60} ">" ;\n',
    "nested": '%trg 1\n%start s\ns ::= "[" ( [a-z ]{1,40} | s ) ( "," s )* "]" ;\n',
}


def _artifact(name: str):
    if name in GRAMMARS:
        return trgc.compile_grammar(GRAMMARS[name])
    return trgc.compile_schema(SCHEMAS[name], separators="compact")


@functools.cache
def byte_table():
    """Single bytes, and words of up to 12 bytes (so `left` below the longest token counts)."""
    pieces = [bytes([b]) for b in range(256)]
    pieces += [b"abc", b"abcdef-gh", b"a-b-c-d-e-f", b'xy"', b'xy",', b'"}', b"12345678901",
               b" ab", b"[[", b"[[[", b",[[", b"1,[[2"]  # fmt: skip
    return make_tokenizer([*pieces, None], specials={"<eos>": len(pieces)}, eos=(len(pieces),))


def _walked(b, key: int, scratch) -> FrameEntry:
    words = np.zeros(b.n_words, dtype=np.uint32)
    roots, height = walk_trie(b, (key,), words, scratch,
                              frame_mode=bool(b.tables.has_caller[unclip(key)[0]]))  # fmt: skip
    return FrameEntry(words, roots.astype(np.int32), height)


@pytest.mark.parametrize("vocab", ["tokenizers/llama3/tokenizer.json.zst", "bytes"])
@pytest.mark.parametrize("name", [*SCHEMAS, *(f"grammar:{g}" for g in GRAMMARS)])
def test_derived_entries_equal_plain_walks(vocab, name):
    """Every reachable counted frame key that `counted.derivable` takes: its entry derived from
    the unclipped frame's (walked) equals its own plain walk, open roots included; its height
    bounds the walk's."""
    tok = byte_table() if vocab == "bytes" else trgc.load_tokenizer(ROOT / vocab)
    b = bind(_artifact(name.removeprefix("grammar:")), tok)
    scratch = Scratch(b)
    compared = 0
    for key in reachable_keys(b.tables, b.trie_depth):
        if not counted.derivable(b, key):
            continue
        base = _walked(b, counted.base_key(b, key), scratch)
        got = counted.derive(b, base, key, scratch)
        plain = _walked(b, key, scratch)
        assert (got.accept == plain.accept).all(), key
        assert got.open_roots.tolist() == plain.open_roots.tolist(), key
        assert got.height >= plain.height, key
        compared += 1
    assert compared > 0


def test_a_counted_pattern_string_derives_its_entries(monkeypatch):
    """Inside a counted string with a pattern, each character's frame has a count of its own: the
    matcher derives its entry from the unclipped frame's, walked once, instead of walking it
    again, and the masks are the reference's. The tokenizer's tables for it are made with the
    matcher's first mask."""
    tok = trgc.load_tokenizer(ROOT / "tokenizers/llama3/tokenizer.json.zst")
    m = Matcher(trgc.compile_schema(SLUG, separators="compact"), tok)
    b = m._binding
    shared = b.vocab._lazy  # the tokenizer's tables: made with the first mask, not in the string
    for name in ("counted.deep", "counted.lengths"):
        shared.pop(name, None)
    m.allowed_tokens()
    assert "counted.deep" in shared and "counted.lengths" in shared
    made = {"derived": 0, "walked": 0}
    derive, frame_entry = counted.derive, precompute.frame_entry

    def counting(kind, real):
        def call(*args):
            made[kind] += 1
            return real(*args)

        return call

    monkeypatch.setattr(framecache, "derive", counting("derived", derive))
    monkeypatch.setattr(precompute, "frame_entry", counting("walked", frame_entry))
    rng = np.random.default_rng(7)
    text = b'{"version":"1","slug":"'
    bases = set()
    for more in (b"ex", b"exam", b"example", b"example-sl", b"example-slug-2"):
        config = step_bytes(b.tables, START, text + more)
        m._history = [config]
        key = frame_key(config[-1], b.trie_depth)
        assert counted.derivable(b, key), more
        bases.add(counted.base_key(b, key))
        matches_reference(b, config, m.allowed_tokens(), rng, whole=False)
    # one walk per unclipped frame (`minLength` still counts in the first two: two of them)
    assert made["derived"] == 5 and made["walked"] == len(bases) == 2


def test_a_counted_grammar_repetition_masks_equal_the_reference():
    """A trg-1 `[a-z-]{0,60}` inside tags: the matcher's masks along a long tag (every count
    below `L` derived, or walked where the trie below is too large) are the bare kernel's full
    walk on every token and the reference's on a sample."""
    tok = trgc.load_tokenizer(ROOT / "tokenizers/llama3/tokenizer.json.zst")
    m = Matcher(_artifact("tags"), tok)
    b = m._binding
    rng = np.random.default_rng(9)
    derived = 0
    for n in range(0, 60, 7):
        config = step_bytes(b.tables, START, b"<" + b"ab-c"[: n % 4] + b"x" * n)
        m._history = [config]
        derived += counted.derivable(b, frame_key(config[-1], b.trie_depth))
        mask = m.allowed_tokens()
        assert (mask == kernel.allowed_mask(b, config)).all(), n  # a whole walk, every token
        matches_reference(b, config, mask, rng, whole=False)
    assert derived > 4
