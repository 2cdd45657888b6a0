"""Alternations of literals (`automata.nfa`, `_Builder._trie`): an enum, a oneOf of consts or a
keyword list is built as a trie, one NFA state per distinct prefix, instead of a chain of
states per literal. The language, and so the artifact, is the one the chains give."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trgc.artifact.check import check
from trgc.artifact.model import Artifact
from trgc.automata import machines, nfa
from trgc.compiler.build import compile_ast
from trgc.grammar.ast import Grammar, Rule
from trgc.grammar.schema.nodes import Builder


def _alternation(words: list[str]) -> Grammar:
    grammar = Grammar(source_kind="trj", start="root", max_depth=8)
    b = Builder(grammar)
    grammar.rules.append(Rule("root", b.alt(*(b.lit(w) for w in words)), 0, 0, pointer=""))
    return grammar


def _compiled(words: list[str], *, trie: bool) -> tuple[bytes, int]:
    """(artifact bytes, NFA states) of the alternation of `words`, with or without tries."""
    states: list[int] = []
    build = nfa.build_nfa

    def counting(*args, **kwargs):
        out = build(*args, **kwargs)
        states.append(out[0].n_states)
        return out

    with pytest.MonkeyPatch.context() as m:
        m.setattr(machines, "build_nfa", counting)
        if not trie:
            m.setattr(nfa._Builder, "_literal_words", lambda self, node: None)
        data = compile_ast(_alternation(words)).to_bytes()
    return data, sum(states)


def test_one_state_per_prefix_and_one_exit():
    words = ["abc", "abd", "ab", "x"]
    trie, trie_states = _compiled(words, trie=True)
    chains, chain_states = _compiled(words, trie=False)
    assert trie_states == 7  # "", a, ab, abc, abd, x and the exit
    assert chain_states == 4 + 4 + 3 + 2 + 2  # a chain per literal, an entry and an exit
    assert trie == chains


def test_consts_share_their_prefixes():
    words = [f'"x{i}"' for i in range(2000)]
    _, trie_states = _compiled(words, trie=True)
    _, chain_states = _compiled(words, trie=False)
    prefixes = {w[:i] for w in words for i in range(len(w) + 1)}
    assert trie_states == len(prefixes) + 1 == 4004
    assert chain_states == sum(len(w) + 1 for w in words) + 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text("ab", min_size=1, max_size=4), min_size=2, max_size=8))
def test_the_language_is_the_chains_language(words):
    trie, _ = _compiled(words, trie=True)
    chains, _ = _compiled(words, trie=False)
    assert trie == chains
    artifact = Artifact.from_bytes(trie)
    for n in range(6):
        for letters in itertools.product("ab", repeat=n):
            text = "".join(letters)
            assert check(artifact, text.encode()).accepted == (text in words), text


@pytest.mark.parametrize("words", [["a", "b"], ["ab", "ab"], ["abc", "a"]])
def test_small_alternations(words):
    trie, _ = _compiled(words, trie=True)
    assert trie == _compiled(words, trie=False)[0]
