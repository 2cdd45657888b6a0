"""The compiled co-reachability search (`automata/graph_kernel.py`) against the Python search
of `graph.coreachable`, on random graphs (self-loops, cycles, unreachable parts, duplicate
edges, no goal at all) and on every search the productivity analysis makes for real schemas."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trgc
import trgc.automata.graph as graph
import trgc.automata.predictive as predictive
from schema_helpers import BENCH_SUBSETS, CORPORA, compile_ignoring_refusals
from trgc.automata import jit

SCHEMAS = sorted((Path(__file__).parents[1] / "schemas").glob("*.json"))
GRAMMARS = sorted((Path(__file__).parents[1] / "grammars").glob("*.trg"))
BENCH = CORPORA / "jsonschemabench"
COREACHABLE = graph.coreachable  # the real one, before any test replaces it


def _both(monkeypatch, next_table: np.ndarray, goal: np.ndarray) -> np.ndarray:
    monkeypatch.setattr(jit, "FORCE", False)
    python = COREACHABLE(next_table, goal)
    monkeypatch.setattr(jit, "FORCE", True)
    kernel = COREACHABLE(next_table, goal)
    assert kernel.dtype == python.dtype == np.bool_
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
    """Compile `raw` (a schema, or what `compile_source` compiles) with every
    co-reachability search of the productivity analysis made both ways and compared; the
    number compared."""
    compared = []

    def both(next_table, goal):
        compared.append(next_table.shape[0])
        return _both(monkeypatch, next_table, goal)

    monkeypatch.setattr(predictive, "coreachable", both)
    compile_ignoring_refusals(raw, compile_source)
    return len(compared)


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
