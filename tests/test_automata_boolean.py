"""The AND / NOT product (`trgc.automata.boolean`): exact against brute force, bounded, and
refusing the operands a byte complement cannot take."""

from __future__ import annotations

import itertools
import random
import re

import pytest

import trgc
from trgc.compiler.build import compile_ast
from trgc.errors import TrgcError
from trgc.grammar.ast import Grammar, Rule
from trgc.grammar.schema.nodes import Builder
from trgc.limits import DEFAULT_LIMITS


def _grammar() -> tuple[Grammar, Builder]:
    g = Grammar(start="root")
    return g, Builder(g)


def _compile(g: Grammar, body: int, **limits):
    g.rules.insert(0, Rule("root", body, 0, 0))
    return compile_ast(g, limits=DEFAULT_LIMITS.with_overrides(limits) if limits else None)


def _random_regex(rng: random.Random, depth: int = 0) -> str:
    """A small random regex over {a, b} (Python syntax), and the same shape is built below."""
    roll = rng.random()
    if depth > 2 or roll < 0.3:
        return rng.choice(["a", "b", "[ab]"])
    if roll < 0.55:
        return "(?:" + _random_regex(rng, depth + 1) + _random_regex(rng, depth + 1) + ")"
    if roll < 0.8:
        return "(?:" + _random_regex(rng, depth + 1) + "|" + _random_regex(rng, depth + 1) + ")"
    lo = rng.randrange(0, 2)
    hi = lo + rng.randrange(0, 3)
    return "(?:" + _random_regex(rng, depth + 1) + f"){{{lo},{hi}}}"


def _build(b: Builder, regex: str) -> int:
    """Builder nodes for the regexes `_random_regex` writes (a tiny recursive-descent reader)."""
    pos = 0

    def alternation() -> int:
        nonlocal pos
        options = [sequence()]
        while pos < len(regex) and regex[pos] == "|":
            pos += 1
            options.append(sequence())
        return b.alt(*options)

    def sequence() -> int:
        nonlocal pos
        items = []
        while pos < len(regex) and regex[pos] not in "|)":
            items.append(atom())
        return b.seq(*items)

    def atom() -> int:
        nonlocal pos
        if regex.startswith("(?:", pos):
            pos += 3
            node = alternation()
            pos += 1  # ")"
        elif regex.startswith("[ab]", pos):
            pos += 4
            node = b.chars("ab")
        else:
            node = b.lit(regex[pos])
            pos += 1
        match = re.match(r"\{(\d+),(\d+)\}", regex[pos:])
        if match:
            pos += match.end()
            node = b.rep(node, int(match[1]), int(match[2]))
        return node

    return alternation()


WORDS = ["".join(w) for n in range(7) for w in itertools.product("ab", repeat=n)]


@pytest.mark.parametrize("seed", range(12))
def test_intersection_and_difference_agree_with_brute_force(seed):
    rng = random.Random(seed)
    x, y, z = (_random_regex(rng) for _ in range(3))
    g, b = _grammar()
    product = b.and_(_build(b, x), _build(b, y), b.not_(_build(b, z)), origin="/t")
    both = _compile(g, b.alt(product, b.lit("c")))  # "c" keeps the language non-empty
    for word in WORDS:
        expected = bool(
            re.fullmatch(x, word) and re.fullmatch(y, word) and not re.fullmatch(z, word)
        )
        assert trgc.check(both, word.encode()).accepted == expected, (x, y, z, word)


def test_complement_lives_in_the_other_operands_universe():
    g, b = _grammar()
    letters = b.rep(b.cls([(0x61, 0x7A)]), 0, None)
    art = _compile(g, b.and_(letters, b.not_(b.alt(b.lit("ab"), b.lit("abc"))), origin="/t"))
    for text, ok in ((b"", True), (b"ab", False), (b"abc", False), (b"abcd", True), (b"A", False)):
        assert trgc.check(art, text).accepted == ok, text


def test_the_product_is_deterministic_and_minimal():
    def build() -> trgc.Artifact:
        g, b = _grammar()
        digits = b.rep(b.cls([(0x30, 0x39)]), 1, 6)
        return _compile(g, b.and_(digits, b.not_(b.lit("0")), origin="/t"))

    one, two = build(), build()
    assert one.sha256 == two.sha256
    # [0-9]{1,6} minus "0": start, then "0" (a dead end unless more digits), 1..6 digits
    assert one.metadata["stats"]["states"] <= 8


def _recursive_grammar(negated: bool):
    g, b = _grammar()
    g.rules.append(Rule("list", b.seq(b.lit("["), b.opt(b.ref("list")), b.lit("]")), 0, 0))
    item = b.ref("list")
    operands = (b.ref("list"), b.not_(b.lit("[]"))) if negated else (item, b.ref("list"))
    return g, b.and_(*operands, origin="/properties/x/not")


def test_a_complement_beside_a_call_is_refused():
    g, body = _recursive_grammar(negated=True)
    with pytest.raises(TrgcError) as info:
        _compile(g, body)
    assert info.value.code == "E_BOOLEAN_OPERAND"
    assert "/properties/x/not" in info.value.message and "list" in info.value.message


def test_an_intersection_of_calls_is_kept():
    g, body = _recursive_grammar(negated=False)
    art = _compile(g, body)
    assert trgc.check(art, b"[[]]").accepted and not trgc.check(art, b"[[]").accepted


def test_the_product_respects_the_states_limit():
    g, b = _grammar()
    # (a|b)* with the 12th letter from the end an "a": 2^12 DFA states
    tail = b.seq(b.lit("a"), b.rep(b.chars("ab"), 11, 11))
    body = b.and_(b.rep(b.chars("ab"), 0, None), b.seq(b.rep(b.chars("ab"), 0, None), tail))
    with pytest.raises(TrgcError) as info:
        _compile(g, body, states=500)
    assert info.value.code == "E_LIMIT_STATES"


def test_a_complement_alone_has_no_universe():
    g, b = _grammar()
    with pytest.raises(TrgcError) as info:
        _compile(g, b.seq(b.lit("a"), b.not_(b.lit("b"))))
    assert info.value.code == "E_INTERNAL"
