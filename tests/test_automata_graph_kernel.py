"""The compiled searches of `automata/graph_kernel.py` against the Python searches of
`graph.coreachable`, `graph.bfs_order` and the table layout's `machines._scan`, on random
graphs (self-loops, cycles, unreachable parts, duplicate edges, no goal at all, calls) and on
every search a compilation of real schemas and grammars makes (the productivity analysis,
every renumbering, every layout)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trgc
import trgc.automata.graph as graph
import trgc.automata.machines as machines
import trgc.automata.minimize as minimize
import trgc.automata.predictive as predictive
from schema_helpers import BENCH_SUBSETS, CORPORA, compile_ignoring_refusals
from trgc.automata import jit
from trgc.automata.predictive import Resolved
from trgc.limits import Budget

SCHEMAS = sorted((Path(__file__).parents[1] / "schemas").glob("*.json"))
GRAMMARS = sorted((Path(__file__).parents[1] / "grammars").glob("*.trg"))
BENCH = CORPORA / "jsonschemabench"
COREACHABLE = graph.coreachable  # the real ones, before any test replaces them
BFS_ORDER = graph.bfs_order
SCAN = machines._scan


def _both(monkeypatch, next_table: np.ndarray, goal: np.ndarray) -> np.ndarray:
    return _compared(monkeypatch, COREACHABLE, np.bool_, next_table, goal)


def _compared(monkeypatch, search, dtype, *args) -> np.ndarray:
    """`search(*args)` with the kernels off and on: the same answer, of `dtype`; the kernel
    setting is left as it was."""
    before = jit.FORCE
    monkeypatch.setattr(jit, "FORCE", False)
    python = search(*args)
    monkeypatch.setattr(jit, "FORCE", True)
    kernel = search(*args)
    monkeypatch.setattr(jit, "FORCE", before)
    assert kernel.dtype == python.dtype == dtype
    assert kernel.tolist() == python.tolist()
    return python


@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 50), k=st.integers(1, 6))
def test_the_kernel_is_the_python_search(seed, n, k):
    rng = random.Random(seed)
    density, goals = rng.random(), rng.random() * 0.3
    next_table = np.array([[rng.randrange(n) if rng.random() < density else -1 for _ in range(k)]
                           for _ in range(n)], dtype=rng.choice([np.int32, np.int64]))  # fmt: skip
    goal = np.array([rng.random() < goals for _ in range(n)], dtype=bool)
    with pytest.MonkeyPatch.context() as monkeypatch:
        _both(monkeypatch, next_table, goal)


@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 50), k=st.integers(1, 6))
def test_the_compiled_breadth_first_order_is_the_python_one(seed, n, k):
    rng = random.Random(seed)
    density = rng.random()
    next_table = np.array([[rng.randrange(n) if rng.random() < density else -1 for _ in range(k)]
                           for _ in range(n)], dtype=rng.choice([np.int32, np.int64]))  # fmt: skip
    with pytest.MonkeyPatch.context() as monkeypatch:
        order = _compared(monkeypatch, BFS_ORDER, np.int64, next_table, rng.randrange(n))
    assert len(set(order.tolist())) == order.size


def _scan_compared(monkeypatch, r: Resolved, scan, same, per_state: int) -> tuple:
    """`machines._scan` with the kernels off and on: the same breadth-first order, callees in
    the same order of first call, the same actions and the same charge."""
    found = []
    for kernel in (False, True):
        monkeypatch.setattr(jit, "FORCE", kernel)
        budget = Budget(10**9)
        queue, called, actions = SCAN(r, scan, same, budget, per_state)
        found.append((list(queue), list(dict.fromkeys(called)), actions, budget.used))
    assert found[0] == found[1]
    return found[0]


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), k=st.integers(1, 6))
def test_the_compiled_layout_scan_is_the_python_one(seed, n, k):
    rng = random.Random(seed)
    names = ["a", "b", "c"][: rng.randint(1, 3)]
    calls = [(rng.choice(names), rng.randrange(n)) for _ in range(rng.randint(0, 5))]
    density = rng.random()

    def cell() -> int:
        if rng.random() > density:
            return -1
        if calls and rng.random() < 0.3:
            return -2 - rng.randrange(len(calls))
        return rng.randrange(n)

    table = np.array([[cell() for _ in range(k)] for _ in range(n)], dtype=np.int32)
    r = Resolved(table, calls, np.zeros(n, dtype=bool))
    scan = np.array(sorted(rng.sample(range(k), rng.randint(1, k))), dtype=np.int64)
    same = {name: rng.choice(names) for name in names}
    with pytest.MonkeyPatch.context() as monkeypatch:
        queue, *_ = _scan_compared(monkeypatch, r, scan, same, rng.randint(1, 9))
    assert queue[0] == 0 and len(set(queue)) == len(queue)


def test_a_long_chain_back_to_its_start():
    """Every state of a 3,000-state chain reaches its last one (a worklist as deep as the
    graph), and nothing past a missing edge does."""
    n = 3000
    next_table = np.full((n, 2), -1, dtype=np.int32)
    next_table[:-1, 0] = np.arange(1, n)
    next_table[1000, 0] = -1  # states 0..1000 no longer reach the goal
    goal = np.zeros(n, dtype=bool)
    goal[-1] = True
    with pytest.MonkeyPatch.context() as monkeypatch:
        live = _both(monkeypatch, next_table, goal)
    assert not live[:1001].any() and live[1001:].all()


def _every_search(monkeypatch, raw: bytes, compile_source=None) -> int:
    """Compile `raw` (a schema, or what `compile_source` compiles) on the Python path, with
    every co-reachability search of the productivity analysis, every breadth-first
    renumbering and every layout scan made both ways and compared; the number of each
    compared (the least)."""
    compared = {"coreachable": 0, "bfs_order": 0, "layout": 0}

    def scan_both(r, scan, same, budget, per_state):
        compared["layout"] += 1
        _scan_compared(monkeypatch, r, scan, same, per_state)
        monkeypatch.setattr(jit, "FORCE", False)
        return SCAN(r, scan, same, budget, per_state)

    def both(next_table, goal):
        compared["coreachable"] += 1
        return _both(monkeypatch, next_table, goal)

    def bfs_both(next_table, start=0):
        compared["bfs_order"] += 1
        return _compared(monkeypatch, BFS_ORDER, np.int64, next_table, start)

    monkeypatch.setattr(jit, "FORCE", False)  # the renumberings the kernels would replace
    monkeypatch.setattr(predictive, "coreachable", both)
    monkeypatch.setattr(minimize, "bfs_order", bfs_both)
    monkeypatch.setattr(machines, "_scan", scan_both)
    compile_ignoring_refusals(raw, compile_source)
    return min(compared.values())


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_every_search_of_the_shipped_schemas(monkeypatch, path):
    assert _every_search(monkeypatch, path.read_bytes()) >= 1


@pytest.mark.parametrize("path", GRAMMARS, ids=lambda p: p.name)
def test_every_search_of_the_shipped_grammars(monkeypatch, path):
    assert _every_search(monkeypatch, path.read_bytes(), trgc.compile_grammar) >= 1


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
@pytest.mark.parametrize("subset", BENCH_SUBSETS)
def test_every_search_of_real_schemas(monkeypatch, subset):
    """Fifteen schemas of each subset."""
    paths = sorted((BENCH / subset).glob("*.json"))[:15]
    assert sum(_every_search(monkeypatch, p.read_bytes()) for p in paths) > 0
