"""Random recursive grammars: whenever they compile, the tables accept exactly what an Earley
parser (lark) accepts. Grammars that are not predictive must be rejected, never mis-parsed.

Grammars have the shape `r0 ::= B0 | "(" E0 ")" ; r1 ::= B1 | "[" E1 "]" ;` with reference-
free `B` and `E` that may call either rule, so that recursion is guarded and productive and
many samples are predictive machines with calls. Inputs are every short string over the
alphabet plus strings derived from the grammar itself (positives).
"""

from __future__ import annotations

import itertools
import random

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_automata_support import compile_source, walk
from trgc.errors import TrgcError

ALPHABET = "ab(),[]"
BRACKETS = {"r0": ("(", ")"), "r1": ("[", "]")}


def _tree(with_refs: bool):
    leaves = [st.sampled_from("ab,").map(lambda c: ("lit", c))]
    if with_refs:
        leaves.append(st.sampled_from(["r0", "r1"]).map(lambda r: ("ref", r)))
    leaf = st.one_of(*leaves)

    def extend(children):
        return st.one_of(
            st.lists(children, min_size=2, max_size=3).map(lambda xs: ("seq", xs)),
            st.lists(children, min_size=2, max_size=3).map(lambda xs: ("alt", xs)),
            st.tuples(children, st.sampled_from([(0, 1), (0, None), (1, None), (1, 2)])).map(
                lambda p: ("rep", p[0], *p[1])
            ),
        )

    return st.recursive(leaf, extend, max_leaves=4)


def _trg(node) -> str:
    kind = node[0]
    if kind == "lit":
        return f'"{node[1]}"'
    if kind == "ref":
        return node[1]
    if kind == "seq":
        return " ".join(f"({_trg(x)})" for x in node[1])
    if kind == "alt":
        return " | ".join(f"({_trg(x)})" for x in node[1])
    low, high = node[2], node[3]
    suffix = {(0, 1): "?", (0, None): "*", (1, None): "+"}.get((low, high), f"{{{low},{high}}}")
    return f"({_trg(node[1])}){suffix}"


def _lark(node) -> str:
    kind = node[0]
    if kind == "rep" and (node[2], node[3]) == (1, 2):
        return f"({_lark(node[1])}) ~ 1..2"
    if kind == "seq":
        return " ".join(f"({_lark(x)})" for x in node[1])
    if kind == "alt":
        return " | ".join(f"({_lark(x)})" for x in node[1])
    if kind == "rep":
        suffix = {(0, 1): "?", (0, None): "*", (1, None): "+"}[(node[2], node[3])]
        return f"({_lark(node[1])}){suffix}"
    return _trg(node)


def _sample(rules: dict, node, rng: random.Random, depth: int, out: list[str]) -> None:
    """Append one random word of `node` to `out` (refs beyond depth 4 take the base branch)."""
    stack = [(node, depth)]
    while stack:
        item, d = stack.pop()
        kind = item[0]
        if kind == "lit":
            out.append(item[1])
        elif kind == "ref":
            base, rec = rules[item[1]]
            if d >= 4 or rng.random() < 0.4:
                stack.append((base, d + 1))
            else:
                open_, close = BRACKETS[item[1]]
                stack.extend([(("lit", close), d), (rec, d + 1), (("lit", open_), d)])
        elif kind == "seq":
            stack.extend((x, d) for x in reversed(item[1]))
        elif kind == "alt":
            stack.append((rng.choice(item[1]), d))
        else:
            high = item[3] if item[3] is not None else item[2] + 2
            stack.extend((item[1], d) for _ in range(rng.randint(item[2], high)))


def _body():
    """A recursive branch body, half the time ending in a call."""
    ref = st.sampled_from(["r0", "r1"]).map(lambda r: ("ref", r))
    return st.one_of(_tree(True), st.tuples(_tree(True), ref).map(lambda p: ("seq", [p[0], p[1]])))


SHORT_INPUTS = ["".join(p) for n in range(0, 3) for p in itertools.product(ALPHABET, repeat=n)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(b0=_tree(False), e0=_body(), b1=_tree(False), e1=_body(), seed=st.integers(0, 2**16))
def test_compiled_tables_agree_with_earley(b0, e0, b1, e1, seed):
    source = (
        f'r0 ::= {_trg(b0)} | "(" ({_trg(e0)}) ")" ;\nr1 ::= {_trg(b1)} | "[" ({_trg(e1)}) "]" ;'
    )
    try:
        tables = compile_source(source)
    except TrgcError as err:
        # not predictive: rejected, never given a tie-breaking meaning
        assert err.code == "E_PREDICTIVE_CONFLICT", err
        return
    grammar = f'start: r0\nr0: {_lark(b0)} | "(" ({_lark(e0)}) ")"\nr1: {_lark(b1)} | "[" ({_lark(e1)}) "]"\n'
    parser = lark.Lark(grammar, parser="earley", lexer="dynamic")
    rng = random.Random(seed)
    rules = {"r0": (b0, e0), "r1": (b1, e1)}
    positives = []
    for _ in range(20):
        out: list[str] = []
        _sample(rules, ("ref", "r0"), rng, 0, out)
        positives.append("".join(out))
    mutated = [
        p[:i] + rng.choice(ALPHABET) + p[i + 1 :]
        for p in positives
        if p
        for i in [rng.randrange(len(p))]
    ]
    for text in SHORT_INPUTS + positives + mutated:
        try:
            parser.parse(text)
            expected = True
        except lark.exceptions.LarkError:
            expected = False
        assert walk(tables, text.encode(), max_depth=10_000) == expected, (source, text)
    for text in positives:
        assert walk(tables, text.encode(), max_depth=10_000), (source, text)


@pytest.mark.parametrize(
    "source",
    [
        'r0 ::= "(" r0* ")" | "a" ;',
        'r0 ::= "(" (r0 ("," r0)*)? ")" | "a" | "b" ;',
        'r0 ::= "a" r1 ;\nr1 ::= "(" r0 ")" | "b" | "(" "b" "b" ")" ;',
    ],
)
def test_known_predictive_grammars(source):
    tables = compile_source(source)
    assert tables.machines[0].name == "r0"
