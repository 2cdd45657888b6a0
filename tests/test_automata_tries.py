"""Alternations of literals (`automata.nfa`, `_Builder._trie`): an enum, a oneOf of consts or a
keyword list is built as a trie, one NFA state per distinct prefix, instead of a chain of
states per literal. The language, and so the artifact, is the one the chains give."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trgc
from schema_helpers import BENCH_SUBSETS, CORPORA
from trgc.artifact.check import check
from trgc.artifact.model import Artifact
from trgc.automata import machines, nfa
from trgc.compiler.build import compile_ast
from trgc.grammar.ast import Grammar, Rule
from trgc.grammar.schema.nodes import Builder

ROOT = Path(__file__).resolve().parents[1]
BENCH = CORPORA / "jsonschemabench"


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


def _with_and_without_tries(compile_one) -> tuple[bytes | str, bytes | str]:
    """What `compile_one()` gives (artifact bytes, or the refusal's code) with tries and with
    a chain per literal."""

    def outcome() -> bytes | str:
        try:
            return compile_one().to_bytes()
        except trgc.TrgcError as error:
            return error.code

    with_tries = outcome()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(nfa._Builder, "_literal_words", lambda self, node: None)
        return with_tries, outcome()


@pytest.mark.parametrize(
    "path",
    [*sorted((ROOT / "schemas").glob("*.json")), *sorted((ROOT / "grammars").glob("*.trg"))],
    ids=lambda p: p.name,
)
def test_shipped_sources_compile_to_the_chains_artifact(path):
    """Every bundled schema and grammar (keyword lists, enums, consts) gives the same bytes."""
    if path.suffix == ".json":
        trie, chains = _with_and_without_tries(lambda: trgc.compile_schema(path.read_bytes()))
    else:
        trie, chains = _with_and_without_tries(lambda: trgc.compile_grammar(path.read_text()))
    assert isinstance(trie, bytes)
    assert trie == chains


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
def test_real_enums_compile_to_the_chains_artifact():
    """The first eight schemas of each subset that hold an enum or a const: the same
    artifact, or the same refusal, with tries and with chains."""
    compiled = 0
    for subset in BENCH_SUBSETS:
        paths = [
            p
            for p in sorted((BENCH / subset).glob("*.json"))
            if b'"enum"' in (raw := p.read_bytes()) or b'"const"' in raw
        ][:8]
        for path in paths:
            raw = path.read_bytes()
            trie, chains = _with_and_without_tries(
                lambda raw=raw: trgc.compile_schema(raw, separators="compact")
            )
            assert trie == chains, f"{subset}/{path.name}"
            compiled += isinstance(trie, bytes)
    assert compiled >= 30
