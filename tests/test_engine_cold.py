"""The cold mask path (`kernel.cold_mask`: one compiled call per computed mask) against the
reference masker.

A matcher computes a mask the caches lack in one call of `kernel._cold`: the top frame's
entry walked in the call (`PH_FRAME`) or given, the combine with a walk of its open roots from
the live stack (`PH_ROOTS`), a full walk near `max_depth` (`PH_FULL`), the special tokens and
EOS (`PH_SYMBOLS`), or the entry's accept set alone (a direct row). Every configuration of
seeded walks and of teacher-forced valid instances is masked twice by a matcher whose cache
keeps frame entries only (so the second mask always takes the given entry), and both masks
must equal the bare kernel's full walk on the whole vocabulary and the reference masker on a
sample of tokens (on the whole vocabulary at one step of each walk): on the hand-built
fixtures (every token checked, special tokens, a stack at `max_depth`, stacks that stepping
never reaches whose lower frames cannot complete), on every shipped
grammar and schema, on JSONSchemaBench schemas with their valid instances and on recursive
schemas compiled with a small `max_depth` and forced to it, over the bundled Llama-3 table
and the GPT-2, Qwen3 and Mistral tables of `../shared` when present. Each branch of `_cold`
must have been compared at least once, on the fixtures and on every real table.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trgc
from engine_fixtures import (
    ROOT,
    json_like,
    make_artifact,
    matches_reference,
    regular,
    structural_table,
    tool_call,
)
from test_engine_scale import SHARED_TAIL, VOCABS, bench_cases, longest_match
from trgc.engine import kernel, matcher, reference
from trgc.engine.cache import MaskCache
from trgc.engine.matcher import Matcher

SHARED = ROOT.parent / "shared"
TABLES = {"llama3-bundled": ROOT / "tokenizers" / "llama3.trt"} | {
    name: SHARED / path for name, path in sorted(VOCABS.items())
}
WALK_STEPS = 12
FORCED_CASES = 3  # JSONSchemaBench schemas forced per table
BRANCHES = {"frame", "roots given", "roots walked", "full", "symbols", "direct"}


class FramesOnly(MaskCache):
    """A cache that keeps frame entries only: every mask is computed again, from its top
    frame's entry once one was walked."""

    def put(self, key: tuple, value, nbytes: int):
        return super().put(key, value, nbytes) if key[3] == "frame" else value


def cold_masks(m: Matcher, config, seen: set[str]) -> list[np.ndarray]:
    """The masks at `config` from two calls of `m` (the second with the top frame's entry
    given), noting in `seen` the branches of `_cold` they went through."""
    out = []
    m._history = [config]
    for _ in range(2):
        m.last_source = ""
        out.append(m.allowed_tokens())
        if m.last_source not in ("walk", "frame") or "_scratch" not in m.__dict__:
            continue
        phases = kernel.phases_run(m._scratch)
        computed = kernel.PH_FRAME in phases
        seen.update({"frame"} if computed else set())
        if kernel.PH_ROOTS in phases:
            seen.add("roots walked" if computed else "roots given")
        seen.update({"full"} if kernel.PH_FULL in phases else set())
        seen.update({"symbols"} if kernel.PH_SYMBOLS in phases else set())
        seen.update({"direct"} if m._scratch.sc[kernel.C_DIRECT] else set())
    return out


def check(b, config, masks, rng, whole: bool) -> None:
    bare = kernel.allowed_mask(b, config)
    for mask in masks:
        diff = np.flatnonzero(mask != bare)
        assert not diff.size, (config, [b.token_bytes(int(t)) for t in diff[:5]])
    matches_reference(b, config, bare, rng, whole)


# -- hand-built fixtures: every token, special tokens, a stack at max_depth -------------------


def keep_one_frame_entries(m: Matcher) -> None:
    """Make `m` keep the entry of every one-frame configuration it masks by `_one_frame`
    (the fixtures' walks are all small enough to be walked every time otherwise)."""
    m._one_frame_plan = [matcher.KEPT if p == matcher.WALKED else p for p in m._one_frame_plan]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1),
    which=st.sampled_from(["json", "json-shallow", "call", "regular"]),
    keep=st.booleans(),
)
def test_cold_masks_equal_the_reference_on_fixtures(seed, which, keep):
    art = {"json": json_like, "json-shallow": lambda: json_like(max_depth=2), "call": tool_call,
           "regular": regular}[which]()  # fmt: skip
    tok = structural_table()
    m = Matcher(art, tok, cache=FramesOnly())
    if keep:
        keep_one_frame_entries(m)
    walker = Matcher(art, tok)
    b = m._binding
    rng = np.random.default_rng(seed)
    seen: set[str] = set()
    for _ in range(14):
        config = walker.config
        expected = reference.allowed_mask(b, config)
        for mask in cold_masks(m, config, seen):
            assert (mask == expected).all(), (which, config)
        choices = np.flatnonzero(expected)
        if config is None or not choices.size:
            break
        walker.advance(int(rng.choice(choices)))


@st.composite
def stacks(draw, t) -> tuple[int, ...]:
    """A stack of frames shaped as stepping shapes one (the bottom frame in the start machine,
    the frames below the top return states of call edges, the frames above the bottom in called
    machines) but of any depth and any states, so it may be one that stepping never reaches."""
    machine0 = range(int(t.state_offset[1]))
    returns = sorted({int(r) for r in t.calls[:, 1]})
    called = [g for g in range(len(t.accepting)) if t.has_caller[g]]
    n = draw(st.integers(1, t.max_frames))
    if n == 1:
        return (draw(st.sampled_from(machine0)),)
    bottom = draw(st.sampled_from([g for g in returns if g in machine0]))
    middle = draw(st.lists(st.sampled_from([g for g in returns if t.has_caller[g]]),
                           min_size=n - 2, max_size=n - 2))  # fmt: skip
    return (bottom, *middle, draw(st.sampled_from(called)))


def deep_return(max_depth: int):
    """start ::= item "," pair; item ::= "x" | "[" item "]"; pair ::= "[" inner "]";
    inner ::= "x". The start's return state after `item` needs two rule frames more (pair,
    inner), so at `max_depth` 2 a stack with that frame at the bottom cannot complete whatever
    its top does."""

    def call(callee: int, ret: int, first: str) -> dict:
        return {ord(c): ("call", callee, ret) for c in first}

    return make_artifact(
        [
            {"name": "start", "n": 4, "accepting": [3],
             "edges": {0: call(1, 1, "x["), 1: {ord(","): 2}, 2: call(2, 3, "[")}},
            {"name": "item", "n": 4, "accepting": [1],
             "edges": {0: {ord("x"): 1, ord("["): 2}, 2: call(1, 3, "x["), 3: {ord("]"): 1}}},
            {"name": "pair", "n": 4, "accepting": [3],
             "edges": {0: {ord("["): 1}, 1: call(3, 2, "x"), 2: {ord("]"): 3}}},
            {"name": "inner", "n": 2, "accepting": [1], "edges": {0: {ord("x"): 1}}},
        ],
        max_depth=max_depth,
    )  # fmt: skip


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    data=st.data(),
    which=st.sampled_from(["deep-return-2", "deep-return-3", "json-shallow", "call"]),
)
def test_a_stack_stepping_never_reaches_is_masked_as_the_reference_masks_it(data, which):
    """The kernel checks the caller's frames below what a step writes (`ok_below`) rather than
    trusting that every configuration was reached by stepping: on well-shaped stacks of any
    depth, with a lower frame that cannot complete within `max_depth` among them, the bare walk
    and the matcher's cold path still equal the reference."""
    art = {"deep-return-2": lambda: deep_return(2), "deep-return-3": lambda: deep_return(3),
           "json-shallow": lambda: json_like(max_depth=2), "call": tool_call}[which]()  # fmt: skip
    tok = structural_table()
    m = Matcher(art, tok, cache=FramesOnly())
    b = m._binding
    config = data.draw(stacks(b.tables))
    expected = reference.allowed_mask(b, config)
    assert (kernel.allowed_mask(b, config) == expected).all(), config
    for mask in cold_masks(m, config, set()):
        assert (mask == expected).all(), config


def test_every_branch_is_met_on_the_fixtures():
    """The fixtures reach each branch of `_cold` (a deep stack, open roots, special tokens),
    so the property above compares all of them with the reference."""
    tok = structural_table()
    seen: set[str] = set()
    ids = {t: i for i, t in enumerate(tok.token_bytes(i) for i in range(tok.vocab_size))}
    for art, text in (
        (json_like(max_depth=2), b'[x,[],"ab",{}]'),
        (json_like(), b'[x,["ab",{"a":[x]}]]'),
        (tool_call(), None),
    ):
        m = Matcher(art, tok, cache=FramesOnly())
        walker = Matcher(art, tok)
        b = m._binding
        opening = b.special_ids[list(art.specials).index("<tool_call>")] if art.specials else 0
        steps = [ids[bytes([c])] for c in text] if text else [opening, ids[b"x"]]
        for token in steps:
            for mask in cold_masks(m, walker.config, seen):
                assert (mask == reference.allowed_mask(b, walker.config)).all()
            walker.advance(int(token))
        for mask in cold_masks(m, walker.config, seen):
            assert (mask == reference.allowed_mask(b, walker.config)).all()
    assert seen == BRANCHES, BRANCHES - seen


# -- real vocabularies: shipped grammars and schemas, JSONSchemaBench instances -------------


@functools.cache
def table(name: str):
    path = TABLES[name]
    if not path.exists():
        pytest.skip(f"{name}: the token table {path} is not present")
    return trgc.load_tokenizer(path)


@functools.cache
def cases() -> tuple[tuple[str, object, bytes | None], ...]:
    out = [(p.stem, trgc.compile_grammar(p.read_text(encoding="utf-8")), None)
           for p in sorted((ROOT / "grammars").glob("*.trg"))]  # fmt: skip
    for path in sorted((ROOT / "schemas").glob("*.json")):
        out.append((path.name, trgc.compile_schema(path.read_bytes(), separators="compact"), None))
    for name, schema, doc in SHARED_TAIL[:1] + tuple(bench_cases()[:FORCED_CASES]):
        out.append((name, trgc.compile_schema(schema, separators="compact"), doc))
    for name, schema, doc in DEEP:
        art = trgc.compile_schema(schema, separators="compact", max_depth=DEEP_MAX)
        out += [(name, art, doc), (name + "-walk", art, None)]
    return tuple(out)


# recursive schemas compiled with a small `max_depth`, forced through a document that fills the
# stack to it exactly (one level more is refused) and walked at random: masks at and next to
# `max_depth` on real vocabularies (the `full` branch)
DEEP_MAX = 3
DEEP = (
    ("nested-arrays", {"type": "array", "items": {"$ref": "#"}}, b"[[[]]]"),
    ("tree", {"$ref": "#/$defs/t", "$defs": {"t": {"type": "object", "properties": {
        "c": {"type": "array", "items": {"$ref": "#/$defs/t"}}}}}}, b'{"c":[{"c":[]}]}'),
    # a counted array (two items at least) whose items may nest: a frame that must take more
    # items before it returns needs more depth than one that may return (`NEED_MORE`)
    ("nested-pairs", {"type": "array", "minItems": 2, "maxItems": 5,
                      "items": {"anyOf": [{"$ref": "#"}, {"type": "integer"}]}},
     b"[1,2]"),
)  # fmt: skip


@pytest.mark.parametrize("name", sorted(TABLES))
def test_cold_masks_equal_the_reference_on_real_vocabularies(name):
    tok = table(name)
    rng = np.random.default_rng(sum(map(ord, name)))
    seen: set[str] = set()
    forced = 0
    for case, art, doc in cases():
        try:
            m = Matcher(art, tok, cache=FramesOnly())
        except trgc.TrgcError as err:  # toolcall.trg names specials a table may lack
            assert err.code == "E_SPECIAL_TOKEN_MISSING", (case, err.code)
            continue
        walker = Matcher(art, tok)
        b = m._binding
        steps = None if doc is None else longest_match(tok, b.byte_token, doc)
        assert doc is None or steps is not None, case
        for i in range(WALK_STEPS if steps is None else len(steps)):
            config = walker.config
            masks = cold_masks(m, config, seen)
            check(b, config, masks, rng, whole=(i == 3 and steps is None))
            if steps is not None:
                assert masks[0][steps[i]], (case, i)
                walker.advance(steps[i])
                forced += 1
                continue
            choices = np.flatnonzero(masks[0] & b.byte_token)
            if not choices.size:
                break
            lengths = np.diff(b.offsets)[choices]
            if rng.random() < 0.5 and (lengths <= 2).any():  # short tokens reach deeper states
                choices = choices[lengths <= 2]
            walker.advance(int(rng.choice(choices)))
    assert forced > 50
    assert {"frame", "roots given", "roots walked", "full", "symbols", "direct"} <= seen, seen
