"""The dense-table automata stages against plain references: row grouping, subset construction
over segments, minimisation (Moore rounds, the exact check, the Hopcroft fallback) and the
per-compilation memo of machines with the same body (same bytes, same operations, same
limit errors as building each)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import trgc.automata.minimize as minimize_module
from trgc import TrgcError, compile_schema
from trgc.automata.dfa import Counter, Dfa, Table, determinize_table
from trgc.automata.grouping import group_rows
from trgc.automata.minimize import minimize_table
from trgc.automata.nfa import Nfa
from trgc.automata.reuse import MachineMemo
from trgc.limits import Budget, Limits

# --- grouping ----------------------------------------------------------------------------


def _labels_by_first(rows: list[tuple]) -> list[int]:
    seen: dict[tuple, int] = {}
    return [seen.setdefault(r, len(seen)) for r in rows]


@pytest.mark.parametrize("seed", range(5))
def test_group_rows_labels_equal_rows_alike_in_order_of_first(seed):
    rng = random.Random(seed)
    matrix = np.array(
        [[rng.choice((-1, 0, 1, 2**31 - 1)) for _ in range(5)] for _ in range(300)],
        dtype=np.int64,
    )
    labels, first = group_rows(matrix)
    expected = _labels_by_first([tuple(r) for r in matrix.tolist()])
    assert labels.tolist() == expected
    assert first.tolist() == [expected.index(k) for k in range(max(expected) + 1)]


def test_group_rows_survives_colliding_words(monkeypatch):
    import trgc.automata.grouping as grouping

    # every row hashes to the same word: only the exact fallback can tell them apart
    monkeypatch.setattr(grouping, "multipliers", lambda w: np.zeros(w, dtype=np.uint64))
    matrix = np.array([[1, 2], [2, 1], [1, 2], [0, 0]], dtype=np.int64)
    labels, first = group_rows(matrix)
    assert labels.tolist() == [0, 1, 0, 2] and first.tolist() == [0, 1, 3]


# --- subset construction -----------------------------------------------------------------


def _random_nfa(rng: random.Random, n: int, atoms: int) -> Nfa:
    eps = [[rng.randrange(n) for _ in range(rng.randint(0, 2))] for _ in range(n)]
    edges = []
    for _ in range(n):
        mine = []
        for _ in range(rng.randint(0, 3)):
            lo = rng.randrange(atoms)
            mine.append((lo, rng.randint(lo, atoms - 1), rng.randrange(n)))
        edges.append(mine)
    return Nfa.of_targets(eps, edges, 0, n - 1)


def _reference_subsets(nfa: Nfa, budget: Budget) -> Dfa:
    """Textbook subset construction over single atoms, charged per atom of every edge of
    every subset and per state an epsilon search visits (the documented charges)."""
    eps, edges = nfa.absolute()
    important = [bool(edges[q]) or q == nfa.final for q in range(nfa.n_states)]
    searched: set[int] = set()

    def closure(raw: frozenset[int]) -> frozenset[int]:
        seen, todo = set(raw), list(raw)
        while todo:
            for t in eps[todo.pop()]:
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        if len(raw) > 1 or not raw <= searched:
            budget.charge(len(seen))
            searched.update(raw if len(raw) == 1 else ())
        return frozenset(q for q in seen if important[q])

    start = closure(frozenset((nfa.start,)))
    ids, subsets, delta, accepting = {start: 0}, [start], [], []
    for subset in subsets:
        accepting.append(nfa.final in subset)
        moves: dict[int, set[int]] = {}
        for q in subset:
            for lo, hi, t in edges[q]:
                budget.charge(hi - lo + 1)
                for a in range(lo, hi + 1):
                    moves.setdefault(a, set()).add(t)
        row, memo = {}, {}
        for a in sorted(moves):
            raw = frozenset(moves[a])
            if raw not in memo:
                closed = closure(raw)
                if closed not in ids:
                    ids[closed] = len(subsets)
                    subsets.append(closed)
                memo[raw] = ids[closed]
            row[a] = memo[raw]
        delta.append(row)
    return Dfa(delta, accepting)


@pytest.mark.parametrize("seed", range(40))
def test_segment_subset_construction_is_the_atom_level_one(seed):
    rng = random.Random(seed)
    nfa = _random_nfa(rng, rng.randint(2, 12), rng.randint(1, 9))
    mine, theirs = Budget(10**9), Budget(10**9)
    counter = Counter()
    table = determinize_table(nfa, rule="r", limits=Limits(), budget=mine, counter=counter)
    expected = _reference_subsets(nfa, theirs)
    assert table.rows() == expected.delta
    assert table.accepting.tolist() == expected.accepting
    assert (counter.states, counter.transitions) == (expected.n_states, expected.n_transitions)
    assert mine.used == theirs.used


# --- minimisation ------------------------------------------------------------------------


def _reference_minimum(dfa: Dfa) -> Dfa:
    """Moore's algorithm over atom rows, then breadth-first numbering, atoms ascending."""
    block = [int(a) for a in dfa.accepting]
    while True:
        keys = [
            (block[s], tuple((a, block[t]) for a, t in sorted(row.items())))
            for s, row in enumerate(dfa.delta)
        ]
        number: dict[tuple, int] = {}
        new = [number.setdefault(k, len(number)) for k in keys]
        if len(number) == len(set(block)):
            break
        block = new
    order, queue = {block[0]: 0}, [0]
    for s in queue:
        for _, t in sorted(dfa.delta[s].items()):
            if block[t] not in order:
                order[block[t]] = len(queue)
                queue.append(t)
    return Dfa(
        [{a: order[block[t]] for a, t in sorted(dfa.delta[s].items())} for s in queue],
        [dfa.accepting[s] for s in queue],
    )


def _random_dfas(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        n, atoms = rng.randint(1, 14), rng.randint(1, 4)
        delta = [
            {a: rng.randrange(n) for a in range(atoms) if rng.random() < 0.6} for _ in range(n)
        ]
        yield _reachable(Dfa(delta, [rng.random() < 0.4 for _ in range(n)]))
    # chains of one symbol: Moore needs a round per state, so these reach the fallback
    for n in (5, 60, 130):
        yield Dfa([{0: s + 1} for s in range(n)] + [{}], [False] * n + [True])
        yield Dfa(
            [{0: s + 1, 1: 0} for s in range(n)] + [{0: n}], [s % 3 == 0 for s in range(n + 1)]
        )


def _reachable(dfa: Dfa) -> Dfa:
    order, queue = {0: 0}, [0]
    for s in queue:
        for _, t in sorted(dfa.delta[s].items()):
            if t not in order:
                order[t] = len(queue)
                queue.append(t)
    return Dfa(
        [{a: order[t] for a, t in sorted(dfa.delta[s].items())} for s in queue],
        [dfa.accepting[s] for s in queue],
    )


def _minimum(dfa: Dfa) -> Dfa:
    return minimize_table(Table.from_dfa(dfa), Budget(10**9)).to_dfa()


@pytest.mark.parametrize("seed", range(4))
def test_minimize_table_is_moore_minimisation(seed):
    for dfa in _random_dfas(seed, 400):
        assert _minimum(dfa) == _reference_minimum(dfa)


def test_minimize_table_hopcroft_fallback(monkeypatch):
    monkeypatch.setattr(minimize_module, "MOORE_ROUNDS", 1)
    for dfa in _random_dfas(11, 300):
        assert _minimum(dfa) == _reference_minimum(dfa)


def test_minimize_table_colliding_hashes_are_caught(monkeypatch):
    # every signature hashes alike, so the rounds merge everything: the exact check must
    # notice and the fallback refine from a partition split by acceptance again
    monkeypatch.setattr(minimize_module, "multipliers", lambda w: np.ones(w, dtype=np.uint64))
    for dfa in _random_dfas(12, 300):
        assert _minimum(dfa) == _reference_minimum(dfa)


# --- the memo of machines with the same body -------------------------------------------------

STRINGS = {
    "type": "object",
    "properties": {f"k{i}": {"type": "string", "maxLength": 10 + i} for i in range(6)},
    "required": [f"k{i}" for i in range(6)],
}


def _without_memo(monkeypatch) -> None:
    monkeypatch.setattr(MachineMemo, "reuse", lambda self, root: None)


def _outcome(schema, limits=None):
    try:
        artifact = compile_schema(schema, limits=limits)
    except TrgcError as error:
        return (error.code, error.message)
    return artifact.sha256


def test_memo_hits_and_changes_neither_bytes_nor_operations(monkeypatch):
    built = []
    original = MachineMemo.keep

    def keep(self, *args, **kwargs):
        built.append(args[0])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(MachineMemo, "keep", keep)
    artifact = compile_schema(STRINGS)
    with_memo = len(built)
    assert artifact.metadata["stats"]["machines"] >= 2
    built.clear()
    _without_memo(monkeypatch)
    plain = compile_schema(STRINGS)
    assert len(built) > with_memo  # the six string bodies were built once with the memo
    assert artifact.to_bytes() == plain.to_bytes()


def test_memo_charges_what_building_costs(monkeypatch):
    from trgc.compiler import build

    used = {}
    original = build.Budget

    class Spy(original):
        def __init__(self, limit):
            super().__init__(limit)
            used.setdefault("budgets", []).append(self)

    monkeypatch.setattr(build, "Budget", Spy)
    compile_schema(STRINGS)
    with_memo = used["budgets"][-1].used
    _without_memo(monkeypatch)
    compile_schema(STRINGS)
    assert used["budgets"][-1].used == with_memo


@pytest.mark.parametrize("name", ["operations", "states", "transitions"])
def test_memo_limit_errors_are_those_of_building(monkeypatch, name):
    # the smallest limit that still compiles, found by bisection, is the same with and
    # without the memo, and one below it the same error is raised
    def smallest(limit_name):
        lo, hi = 0, 10**8
        while lo < hi:
            mid = (lo + hi) // 2
            if isinstance(_outcome(STRINGS, Limits(**{limit_name: mid})), str):
                hi = mid
            else:
                lo = mid + 1
        return lo

    edge = smallest(name)
    below = _outcome(STRINGS, Limits(**{name: edge - 1}))
    assert isinstance(_outcome(STRINGS, Limits(**{name: edge})), str)
    assert isinstance(below, tuple) and below[0] == f"E_LIMIT_{name.upper()}"
    _without_memo(monkeypatch)
    assert smallest(name) == edge
    assert _outcome(STRINGS, Limits(**{name: edge - 1})) == below
