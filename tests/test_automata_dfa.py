"""Regular grammars: determinism, minimality, byte classes, and agreement with Python's `re`."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from test_automata_support import compile_source, walk
from trgc.automata.dfa import Counter, determinize
from trgc.automata.minimize import minimize
from trgc.automata.nfa import Nfa
from trgc.limits import Budget, Limits


def test_common_prefix_is_shared():
    tables = compile_source('s ::= "ab" | "ac" ;')
    (machine,) = tables.machines
    assert machine.n_states == 3  # start, after "a", accept
    assert tables.byte_class[ord("b")] == tables.byte_class[ord("c")]
    assert walk(tables, b"ab") and walk(tables, b"ac")
    assert not walk(tables, b"a") and not walk(tables, b"ad")


def test_star_star_minimises_to_one_state():
    tables = compile_source('s ::= "a"* "a"* ;')
    (machine,) = tables.machines
    assert machine.n_states == 1
    assert bool(machine.accepting[0])
    assert int(machine.next[0, tables.byte_class[ord("a")]]) == 0


def test_counted_repetition_is_a_chain():
    tables = compile_source('s ::= "x"{2,5} ;')
    (machine,) = tables.machines
    assert machine.n_states == 6
    assert [walk(tables, b"x" * n) for n in range(8)] == [
        False,
        False,
        True,
        True,
        True,
        True,
        False,
        False,
    ]


def test_minimize_merges_equivalent_states():
    # two branches "a" then "b" built separately: the NFA-level DFA has 2 states after "a"
    nfa = Nfa.of_targets(
        eps=[[], [], [], [], [3]],
        edges=[[(0, 0, 1), (1, 1, 2)], [(2, 2, 3)], [(2, 2, 4)], [], []],
        start=0,
        final=3,
    )
    dfa = determinize(nfa, rule="t", limits=Limits(), budget=Budget(10_000), counter=Counter())
    assert dfa.n_states == 4
    small = minimize(dfa, Budget(10_000))
    assert small.n_states == 3
    assert small.delta[0] == {0: 1, 1: 1}
    assert small.accepting == [False, False, True]


def test_byte_classes_are_canonical_and_exact():
    tables = compile_source('s ::= [a-f]+ "-" [0-9a-c]* | "z" ;')
    classes = tables.byte_class.tolist()
    assert classes[0] == 0
    seen: list[int] = []
    for c in classes:
        if c not in seen:
            seen.append(c)
    assert seen == list(range(tables.n_classes))  # numbered by smallest byte
    (machine,) = tables.machines
    columns = {}
    for b in range(256):
        columns.setdefault(classes[b], machine.next[:, classes[b]].tolist())
    # distinct classes have distinct columns (the partition is the coarsest one)
    assert len({tuple(c) for c in columns.values()}) == tables.n_classes
    assert classes[ord("a")] == classes[ord("c")] != classes[ord("d")] == classes[ord("f")]


def test_tables_are_bfs_numbered():
    tables = compile_source('s ::= ("ab" | "c"+) "d"? [x-z]{2} ;')
    for machine in tables.machines:
        order = [0]
        for s in order:
            for v in machine.next[s].tolist():
                if v >= 0 and v not in order:
                    order.append(v)
        assert order == list(range(machine.n_states))


# --- random regular grammars against re.fullmatch ------------------------------------------

ATOMS = [
    ('"a"', "a"),
    ('"b"', "b"),
    ('"ab"', "ab"),
    ('"é"', "é"),
    ("[a-b]", "[a-b]"),
    ("[^a]", "[^a]"),
    ("[é-ж]", "[é-ж]"),
    ("[a\\u{1F600}]", "[a\U0001f600]"),
]


def _expressions():
    leaves = st.sampled_from(ATOMS)

    def extend(children):
        seq = st.lists(children, min_size=2, max_size=3).map(
            lambda xs: (" ".join(f"({t})" for t, _ in xs), "".join(f"(?:{r})" for _, r in xs))
        )
        alt = st.lists(children, min_size=2, max_size=3).map(
            lambda xs: (" | ".join(f"({t})" for t, _ in xs), "|".join(f"(?:{r})" for _, r in xs))
        )
        post = st.tuples(
            children, st.sampled_from(["?", "*", "+", "{2}", "{0,2}", "{1,3}", "{2,}"])
        ).map(lambda p: (f"({p[0][0]}){p[1]}", f"(?:{p[0][1]}){p[1]}"))
        return st.one_of(seq, alt, post)

    return st.recursive(leaves, extend, max_leaves=6)


PIECES = [
    b"a",
    b"b",
    b"c",
    "é".encode(),
    "ж".encode(),
    "😀".encode(),
    b"\xc3",
    b"\xa9",
    b"\xed\xa0\x80",
]


@settings(max_examples=150, deadline=None)
# a counted repetition of a nullable body: the start calls it, the return state does not
@example(expr=("((([^a]) ([^a]))?){1,3}", "(?:(?:(?:[^a])(?:[^a]))?){1,3}"), inputs=[[]])
@given(
    expr=_expressions(),
    inputs=st.lists(st.lists(st.sampled_from(PIECES), max_size=6), min_size=1, max_size=12),
)
def test_tables_agree_with_re(expr, inputs):
    trg, pattern = expr
    # also exercise inlining: the expression sits in a helper rule
    tables = compile_source(f"s ::= x ;\nx ::= {trg} ;")
    regex = re.compile(pattern, re.DOTALL)
    for pieces in inputs:
        data = b"".join(pieces)
        try:
            expected = regex.fullmatch(data.decode("utf-8")) is not None
        except UnicodeDecodeError:
            expected = False
        assert walk(tables, data) == expected, (trg, data)
    assert tables.machines[0].next.dtype == np.int32
    assert _distinguishable_states(tables.machines[0]) == tables.machines[0].n_states


def _distinguishable_states(machine) -> int:
    """Number of Moore-equivalence classes of a table (-1 = reject; a call action, -2 and
    below, is compared as it is: two states calling on different classes differ)."""
    block = [int(a) for a in machine.accepting]
    while True:
        signature = {}
        new = []
        for s in range(machine.n_states):
            key = (block[s], tuple(block[t] if t >= 0 else t for t in machine.next[s].tolist()))
            new.append(signature.setdefault(key, len(signature)))
        if len(signature) == len(set(block)):
            return len(signature)
        block = new


def test_readable_dump():
    from trgc.automata.dump import format_tables

    text = format_tables(compile_source('s ::= "<" v special("e") ;\nv ::= [a-c] | "[" v* "]" ;'))
    assert text == (
        "classes: 5  specials: 1  machines: 2\n"
        "machine 0: s (4 states)\n"
        "  s0 : [<] -> 1\n"
        "  s1 : [\\x5b] [a-c] -> call v (return 2)\n"
        '  s2 : special("e") -> 3\n'
        "  s3*: (no action)\n"
        "machine 1: v (3 states)\n"
        "  s0 : [\\x5b] -> 1 | [a-c] -> 2\n"
        "  s1 : [\\x5b] [a-c] -> call v (return 1) | [\\x5d] -> 2\n"
        "  s2*: (no action)\n"
    )
