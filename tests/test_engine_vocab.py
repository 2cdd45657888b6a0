"""Kernel == reference and soundness on every shipped grammar with real vocabularies.

Vocabularies: GPT-2 (byte-level BPE), Llama-3 (tiktoken-style BPE), Qwen3 (byte-level BPE with
`<tool_call>` as an added non-special token), Mistral v1 (SentencePiece with byte fallback),
and the small synthetic byte-level tokenizer in the repo.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trgc
from engine_fixtures import ROOT
from trgc.artifact import stepper
from trgc.engine import kernel, reference
from trgc.engine.config import START, step_bytes
from trgc.engine.matcher import Matcher
from trgc.errors import TrgcError

VOCABS = {
    "gpt2": "tokenizers/gpt2/encoder.json.zst",
    "llama3": "tokenizers/llama3/tokenizer.json.zst",
    "qwen3": "tokenizers/qwen3",
    "mistral": "tokenizers/mistral/tokenizer.model.v1",
    "synthetic": "tokenizers/synthetic/json-bytelevel",
}
GRAMMARS = sorted(p.stem for p in (ROOT / "grammars").glob("*.trg"))


@functools.cache
def tokenizer(name: str):
    return trgc.load_tokenizer(ROOT / VOCABS[name])


@functools.cache
def artifact(name: str):
    return trgc.compile_grammar((ROOT / "grammars" / f"{name}.trg").read_text(encoding="utf-8"))


def matcher_or_missing(grammar: str, vocab: str) -> Matcher | None:
    """A matcher, or None after checking that a missing special token is refused."""
    art, tok = artifact(grammar), tokenizer(vocab)
    missing = [n for n in art.specials if n not in tok.special_tokens and n not in tok.added_tokens]
    if missing:
        with pytest.raises(TrgcError) as err:
            Matcher(art, tok)
        assert err.value.code == "E_SPECIAL_TOKEN_MISSING" and missing[0] in err.value.message
        return None
    return Matcher(art, tok)


def walk(m: Matcher, seed: int, steps: int) -> list:
    """Configurations along a seeded random constrained walk (EOS never chosen)."""
    rng = np.random.default_rng(seed)
    eos = m._binding.eos_ids
    configs = [m.config]
    for _ in range(steps):
        allowed = m.allowed_tokens()
        allowed[eos] = False
        choices = np.flatnonzero(allowed)
        if choices.size == 0:
            break
        # prefer short tokens half of the time: they reach deeper and more varied states
        lengths = np.diff(m._binding.offsets)[choices]
        if rng.random() < 0.5 and (lengths <= 2).any():
            choices = choices[lengths <= 2]
        m.advance(int(rng.choice(choices)))
        configs.append(m.config)
    return configs


def assert_same(m: Matcher, config) -> None:
    b = m._binding
    expected = reference.allowed_mask(b, config)
    got = kernel.allowed_mask(b, config)
    diff = np.flatnonzero(got != expected)
    assert diff.size == 0, (config, [(int(t), b.token_bytes(int(t))) for t in diff[:5]])
    m._history = [config]
    assert (m.allowed_tokens() == expected).all(), config


@pytest.mark.parametrize("vocab", ["gpt2", "llama3", "qwen3", "mistral"])
@pytest.mark.parametrize("grammar", GRAMMARS)
def test_kernel_equals_reference_real_vocab(grammar, vocab):
    m = matcher_or_missing(grammar, vocab)
    if m is None:
        return
    configs = walk(m, seed=len(grammar) * 31 + len(vocab), steps=24)
    picks = sorted({0, len(configs) // 3, 2 * len(configs) // 3, len(configs) - 1})
    for i in picks:
        assert_same(m, configs[i])


JSON_PREFIXES = [
    b"[" * 25 + b'{"key": [1, {"deep": "inside a str',  # deep recursion, inside a string
    b'{"a": "caf\xc3',  # inside a string, between the bytes of one character
    b'{"a": [true, false, null, -12.5, "x\\u00e',  # inside a \u escape
    b"[" * 31,  # the deepest nesting json.trg allows (two frames per level, max_depth 64)
    b"[" * 30 + b"{",  # one level below: the next '[' or '{' still fits, the one after not
]


@pytest.mark.parametrize("vocab", ["llama3", "qwen3", "mistral"])
def test_kernel_equals_reference_deep_and_in_strings(vocab):
    m = matcher_or_missing("json", vocab)
    tables = m._binding.tables
    for prefix in JSON_PREFIXES:
        config = step_bytes(tables, START, prefix)
        assert config is not None, prefix
        assert_same(m, config)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31), grammar=st.sampled_from(GRAMMARS))
def test_kernel_equals_reference_along_walks_synthetic(seed, grammar):
    m = matcher_or_missing(grammar, "synthetic")
    assert m is not None
    for config in walk(m, seed, 40)[::4]:
        assert_same(m, config)


def _symbols(m: Matcher, tokens: list[int]) -> list[int]:
    b = m._binding
    out = []
    for t in tokens:
        hit = np.flatnonzero(b.special_ids == t)
        if hit.size:
            out.append(int(b.special_syms[hit[0]]))
        else:
            out.extend(int(b.tables.byte_class[x]) for x in b.token_bytes(t))
    return out


@pytest.mark.parametrize("vocab", ["synthetic", "gpt2"])
@pytest.mark.parametrize("grammar", GRAMMARS)
def test_soundness_of_random_constrained_walks(grammar, vocab):
    m = matcher_or_missing(grammar, vocab)
    if m is None:
        return
    art = artifact(grammar)
    eos = m._binding.eos_ids
    rng = np.random.default_rng(len(grammar))
    finished = 0
    for _ in range(8):
        m.reset()
        tokens: list[int] = []
        for _ in range(200):
            allowed = m.allowed_tokens()
            assert allowed[eos].any() == m.is_accepting()  # EOS offered exactly when accepting
            if m.is_accepting() and (rng.random() < 0.25 or allowed.sum() == eos.size):
                m.advance(int(eos[0]))
                break
            allowed[eos] = False
            if not allowed.any():
                break  # stuck (e.g. at max_depth): an empty set, never an invalid token
            token = int(rng.choice(np.flatnonzero(allowed)))
            m.advance(token)
            tokens.append(token)
        if not m.is_terminated():
            continue
        finished += 1
        frames = stepper.initial(art)
        for sym in _symbols(m, tokens):
            frames = stepper.step(art, frames, sym)
            assert frames is not None
        assert stepper.is_accepting(art, frames)
        if not art.specials:
            data = b"".join(m._binding.token_bytes(t) for t in tokens)
            assert trgc.check(art, data).accepted, data
    assert finished > 0


def test_forced_bytes_on_shipped_grammars():
    m = matcher_or_missing("json", "synthetic")
    tables = m._binding.tables
    for prefix, forced in (
        (b'{"a": tr', b"ue"),
        (b"[nu", b"ll"),
        (b'{"a": fals', b"e"),
        (b"[", b""),
    ):
        m._history = [step_bytes(tables, START, prefix)]
        assert m.forced_bytes() == forced, prefix
    m = matcher_or_missing("toolcall", "qwen3")
    m.advance(tokenizer("qwen3").added_tokens["<tool_call>"])
    assert m.forced_bytes() == b""  # whitespace may come first
    m._history = [step_bytes(m._binding.tables, m.config, b"{")]
    assert m.forced_bytes() == b""
    m._history = [step_bytes(m._binding.tables, m.config, b'"')]
    assert m.forced_bytes() == b'name"'


@pytest.mark.parametrize("vocab", ["llama3", "mistral"])
def test_masks_agree_with_check_prefix_near_max_depth(vocab):
    """A byte token is allowed exactly when `trgc.check(prefix + token, prefix=True)` accepts:
    the mask never leads into a configuration that cannot complete within max_depth."""
    art = artifact("json")
    m = matcher_or_missing("json", vocab)
    b = m._binding
    rng = np.random.default_rng(5)
    for prefix in (b"[" * 30 + b"{", b"[" * 30 + b'{"k": ', b"[" * 31, b'{"a": [1, {"b": "x'):
        config = step_bytes(b.tables, START, prefix)
        assert config is not None
        m._history = [config]
        allowed = m.allowed_tokens()
        assert (allowed == reference.allowed_mask(b, config)).all()
        byte_tokens = np.flatnonzero(b.byte_token)
        sample = np.concatenate(
            [np.flatnonzero(allowed & b.byte_token)[:200], rng.choice(byte_tokens, 300)]
        )
        for t in sample.tolist():
            verdict = trgc.check(art, prefix + b.token_bytes(t), prefix=True).accepted
            assert bool(allowed[t]) == verdict, (prefix, b.token_bytes(t))
