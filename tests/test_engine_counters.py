"""Masks at counted repetitions: kernel, matcher (cold and precomputed) against the reference.

A token consumes at most `L` bytes (the longest token), so a mask depends on a counter only
through its value clipped to `L` (docs/mask-engine.md, "Counters"). These tests force the
counter to 0, 1, `L - 1`, `L`, `L + 1`, `n - 1` and `n` (and around the minimum) on real
vocabularies, and walk every example schema and long-bound schemas with the reference oracle
at every step.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

import trgc
from engine_fixtures import make_tokenizer
from trgc.engine import kernel, reference
from trgc.engine.binding import bind
from trgc.engine.bits import unpack
from trgc.engine.config import START, frames, step_bytes
from trgc.engine.matcher import Matcher
from trgc.engine.precompute import precompute

ROOT = Path(__file__).resolve().parents[1]
TABLES = ("gpt2", "llama3", "qwen3")
N = 300  # maxLength
LOW = 150  # minLength


def _all_ways(art, tok, config, masks) -> list[np.ndarray]:
    """The mask at `config` from the kernel, a cold matcher and a precomputed matcher."""
    b = bind(art, tok)
    cold, warm = Matcher(art, tok), Matcher(art, tok, precomputed=masks)
    cold._history = [config]
    warm._history = [config]
    return [
        kernel.allowed_mask(b, config),
        unpack(cold._words(), b.vocab_size),
        unpack(warm._words(), b.vocab_size),
    ]


@pytest.fixture(scope="module", params=TABLES)
def table(request):
    return trgc.load_tokenizer(ROOT / "tokenizers" / f"{request.param}.trt")


@pytest.mark.slow
def test_string_masks_at_every_interesting_counter_value(table):
    art = trgc.compile_schema({"type": "string", "minLength": LOW, "maxLength": N})
    b = bind(art, table)
    longest = b.trie_depth
    masks = precompute(art, table)
    counts = {0, 1, longest - 1, longest, longest + 1, LOW - 1, LOW, LOW + 1, N - 1, N}
    if b.vocab_size < 60_000:  # GPT-2: every bounded slice's edge
        counts |= set(range(N - 34, N + 1))
    for k in sorted(counts):
        config = step_bytes(b.tables, START, b'"' + b"a" * k)
        assert config is not None, k
        expected = reference.allowed_mask(b, config)
        ways = zip(
            ("kernel", "cold", "precomputed"), _all_ways(art, table, config, masks), strict=True
        )
        for way, got in ways:
            extra = np.flatnonzero(got & ~expected)[:3].tolist()
            missing = np.flatnonzero(expected & ~got)[:3].tolist()
            assert not extra and not missing, (k, way, frames(b.tables, config), extra, missing)
        # the closing quote only once the minimum is met
        assert (k >= LOW) == bool(expected[_token(table, b'"')]), k


def _token(tok, data: bytes) -> int:
    for i in range(tok.vocab_size):
        if tok.token_bytes(i) == data:
            return i
    raise AssertionError(data)


@pytest.mark.slow
def test_counter_inside_recursion_masks(table):
    art = trgc.compile_grammar('%trg 1\n%max_depth 8\ns ::= "[" ( s | "x" ){0,200} "]" ;\n')
    b = bind(art, table)
    masks = precompute(art, table)
    for prefix in (b"[", b"[" + b"x" * 127, b"[[" + b"x" * 199, b"[[[" + b"x" * 73 + b"]"):
        config = step_bytes(b.tables, START, prefix)
        expected = reference.allowed_mask(b, config)
        for got in _all_ways(art, table, config, masks):
            assert (got == expected).all(), prefix


def _walk_and_compare(art, tok, rng: random.Random, steps: int, forced: list[int] | None = None):
    """Advance a matcher (random allowed tokens, or `forced`), comparing its mask with the
    reference at every step; returns the number of steps compared."""
    b = bind(art, tok)
    m = Matcher(art, tok)
    done = 0
    for i in range(steps if forced is None else len(forced)):
        expected = reference.allowed_mask(b, m.config)
        got = m.allowed_tokens()
        assert (got == expected).all(), (i, frames(b.tables, m.config))
        done += 1
        if forced is not None:
            token = forced[i]
        else:
            allowed = np.flatnonzero(expected)
            if not allowed.size:
                break
            token = int(rng.choice(allowed.tolist()))
        if token in b.eos_ids.tolist():
            break
        m.advance(token)
    return done


LONG_BOUNDS = [
    {"type": "string", "minLength": 2, "maxLength": 40},
    {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 99}, "maxItems": 12},
    {
        "type": "object",
        "properties": {
            "a": {"type": "string", "maxLength": 5},
            "b": {"type": "array", "items": {"type": "string", "maxLength": 3}, "minItems": 2},
        },
        "required": ["b"],
    },
    # patterns under a maxLength above 64: each product a machine of its own, called
    {
        "type": "object",
        "properties": {
            "u": {"type": "string", "pattern": "^https?://[a-z.]+$", "maxLength": 80},
            "v": {"type": "string", "pattern": "^[a-z]+@[a-z]+$", "maxLength": 70},
        },
        "required": ["u", "v"],
    },
]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "schemas").glob("*.json")))
def test_example_schema_walks_agree_with_the_reference(name):
    tok = trgc.load_tokenizer(ROOT / "tokenizers" / "gpt2.trt")
    art = trgc.compile_schema(json.loads((ROOT / "schemas" / name).read_text()))
    assert _walk_and_compare(art, tok, random.Random(name), 40) > 5


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(LONG_BOUNDS)))
def test_long_bound_schema_walks_agree_with_the_reference(index):
    tok = trgc.load_tokenizer(ROOT / "tokenizers" / "gpt2.trt")
    art = trgc.compile_schema(LONG_BOUNDS[index])
    assert _walk_and_compare(art, tok, random.Random(index), 60) > 5


def test_tokens_too_long_for_clipped_counters_are_refused():
    tok = make_tokenizer([b"a", b"b" * 40_000, None], specials={"<eos>": 2}, eos=(2,))
    art = trgc.compile_grammar("%trg 1\ns ::= [ab]* ;\n")
    with pytest.raises(trgc.TrgcError) as err:
        bind(art, tok)
    assert err.value.code == "E_TOKEN_TOO_LONG"
