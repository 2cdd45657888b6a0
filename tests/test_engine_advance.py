"""The matcher's advance: `config.shift_bytes` (the top frame shifts every byte) against the
reference `config.step_bytes`, on a real vocabulary, at every configuration of seeded walks."""

from __future__ import annotations

import random
from collections import Counter

import pytest

import trgc
from engine_fixtures import ROOT
from trgc.engine.config import shift_bytes, step_bytes

GPT2 = ROOT / "tokenizers/gpt2.trt"

NESTED = '%trg 1\n%max_depth 4\ns ::= "(" s ")" | "x" ;\n'
COUNTED = '%trg 1\n%max_depth 8\ns ::= "[" ( s | "x" ){0,200} "]" ;\n'
PAIRS = '%trg 1\ns ::= "ab"{2,50} ;\n'  # "b" after "a" shifts a frame that carries counters


@pytest.fixture(scope="module")
def table():
    return trgc.load_tokenizer(GPT2)


def _artifacts():
    person = (ROOT / "schemas/person.json").read_bytes()
    return {
        "person": lambda: trgc.compile_schema(person, separators="compact"),
        "nested": lambda: trgc.compile_grammar(NESTED),
        "counted": lambda: trgc.compile_grammar(COUNTED),
        "pairs": lambda: trgc.compile_grammar(PAIRS),
    }


@pytest.mark.parametrize("name", sorted(_artifacts()))
def test_shifts_equal_the_reference_step(table, name):
    artifact = _artifacts()[name]()
    rng = random.Random(name)
    matcher = trgc.Matcher(artifact, table)
    tables = matcher._binding.tables
    every = [t for t in range(table.vocab_size) if table.token_bytes(t)]
    outcomes: Counter[str] = Counter()
    for _ in range(40):
        config = matcher.config
        allowed = matcher.allowed_tokens().nonzero()[0].tolist()
        tried = rng.sample(allowed, min(60, len(allowed))) + rng.sample(every, 300)
        for token in tried:
            data = table.token_bytes(token)
            if not data:
                continue
            fast = shift_bytes(tables, config, data)
            if fast is False:
                outcomes["fallback"] += 1
                continue
            outcomes["refused" if fast is None else "shifted"] += 1
            assert fast == step_bytes(tables, config, data), (name, config, data)
        moves = [t for t in allowed if t not in matcher._eos]
        if not moves:
            break
        matcher.advance(rng.choice(moves))
    assert outcomes["shifted"] and outcomes["refused"] and outcomes["fallback"], outcomes


def test_a_shift_past_max_depth_is_refused_as_the_reference_refuses_it(table):
    """In `s ::= "(" s ")" | "x"` with `max_depth` 1, "(" at the start is a shift into a state
    that needs one more rule frame: the fast path refuses it by its viability check, as `step`
    does, and still shifts "x"."""
    grammar = NESTED.replace("%max_depth 4", "%max_depth 1")
    matcher = trgc.Matcher(trgc.compile_grammar(grammar), table)
    tables = matcher._binding.tables
    config = matcher.config
    assert tables.next[config[-1], tables.byte_class[ord("(")]] >= 0  # a shift, not a call
    assert step_bytes(tables, config, b"(") is None
    assert shift_bytes(tables, config, b"(") is None
    assert shift_bytes(tables, config, b"x") == step_bytes(tables, config, b"x") is not None
    opening = next(t for t in range(table.vocab_size) if table.token_bytes(t) == b"(")
    assert not matcher.is_allowed(opening)
