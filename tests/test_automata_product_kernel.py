"""The compiled product walk (`automata/product_kernel.py`) against the Python walk of
`boolean._walk`: the same table and acceptance, the same budget used and the same refusal
(code and message), on random operands (complemented ones, any lead, arrays that must grow)
and on every product of schemas that intersect a pattern with other constraints."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trgc.automata.boolean as boolean
from schema_helpers import BENCH_SUBSETS, CORPORA, compile_ignoring_refusals
from trgc.automata import jit, product_kernel
from trgc.errors import TrgcError
from trgc.limits import Budget, Limits

BENCH = CORPORA / "jsonschemabench"
WALK = boolean._walk  # the real one, before any test replaces it


def _operand(rng: random.Random, n: int, k: int, negated: bool) -> tuple[np.ndarray, np.ndarray]:
    """Class rows and acceptance as `boolean._class_rows` and `_accepts` make them: `n`
    states and a sink row, missing transitions NONE (or the sink, complemented)."""
    rows = np.full((n + 1, k), -1, dtype=np.int64)
    density = rng.random()
    for s in range(n):
        for c in range(k):
            if rng.random() < density:
                rows[s, c] = rng.randrange(n) if rng.random() < 0.7 else rng.randrange(min(n, 2))
    accepts = np.array([rng.random() < 0.4 for _ in range(n + 1)], dtype=bool)
    if negated:
        rows[rows < 0] = n
        accepts[n] = True
    else:
        accepts[n] = False
    return rows, accepts


def _outcome(operands, lead, lead_atoms, budget: int, states: int, kernel: bool, monkeypatch):
    monkeypatch.setattr(jit, "FORCE", kernel)
    spent = Budget(budget)
    spent.used = 7  # charged before, by other stages
    rows, accepts = [o[0] for o in operands], [o[1] for o in operands]
    try:
        table, accepting = WALK(rows, accepts, lead, lead_atoms, limits=Limits(states=states),
                                budget=spent, what="the product automaton of test")  # fmt: skip
    except TrgcError as exc:
        return (exc.code, str(exc)), spent.used
    return (table.tolist(), accepting.tolist(), table.dtype, accepting.dtype), spent.used


@settings(max_examples=500, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), operands=st.integers(2, 4), k=st.integers(1, 5),
       room=st.sampled_from((1, product_kernel.FIRST_ROOM)))  # fmt: skip
def test_the_kernel_is_the_python_walk(seed, operands, k, room):
    rng = random.Random(seed)
    negated = [rng.random() < 0.3 for _ in range(operands)]
    negated[rng.randrange(operands)] = False  # an AND has a positive operand
    built = [_operand(rng, rng.randint(1, 25), k, neg) for neg in negated]
    lead = negated.index(False)
    n_lead = built[lead][0].shape[0] - 1
    lead_atoms = np.array([rng.randint(0, 4) for _ in range(n_lead)], dtype=np.int64)
    budget = rng.randint(1, 400) if rng.random() < 0.3 else 10**9
    states = rng.randint(1, 150) if rng.random() < 0.3 else 10**6
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(product_kernel, "FIRST_ROOM", room)
        python = _outcome(built, lead, lead_atoms, budget, states, False, monkeypatch)
        assert _outcome(built, lead, lead_atoms, budget, states, True, monkeypatch) == python


def test_random_walks_reach_every_ending(monkeypatch):
    """The random operands above reach what they should: products walked to the end, the
    budget refused and the states limit refused, each both ways alike."""
    endings = set()
    rng = random.Random(4)
    for _ in range(300):
        k = rng.randint(1, 4)
        built = [_operand(rng, rng.randint(1, 25), k, False) for _ in range(rng.randint(2, 3))]
        lead_atoms = np.ones(built[0][0].shape[0] - 1, dtype=np.int64)
        budget = rng.randint(1, 60) if rng.random() < 0.3 else 10**9
        states = rng.randint(1, 20) if rng.random() < 0.3 else 10**6
        kernel = _outcome(built, 0, lead_atoms, budget, states, True, monkeypatch)
        assert kernel == _outcome(built, 0, lead_atoms, budget, states, False, monkeypatch)
        code = kernel[0][0]
        endings.add(code if isinstance(code, str) else "walked")
    assert endings == {"walked", "E_LIMIT_OPERATIONS", "E_LIMIT_STATES"}


def _every_product(monkeypatch, raw: bytes) -> list[int]:
    """Compile schema `raw` with every product walked both ways and compared; the number of
    operands of each product compared."""
    compared = []

    def both(rows, accepts, lead, lead_atoms, *, limits, budget, what):
        results = []
        before = budget.used
        for kernel in (False, True):
            budget.used = before
            monkeypatch.setattr(jit, "FORCE", kernel)
            try:
                table, accepting = WALK(rows, accepts, lead, lead_atoms, limits=limits,
                                        budget=budget, what=what)  # fmt: skip
            except TrgcError as exc:
                results.append(((exc.code, str(exc)), budget.used, exc))
            else:
                key = (table.tolist(), accepting.tolist(), table.dtype)
                results.append((key, budget.used, (table, accepting)))
        assert results[0][:2] == results[1][:2]
        compared.append(len(rows))
        if isinstance(results[0][2], TrgcError):
            raise results[0][2]
        return results[0][2]

    monkeypatch.setattr(boolean, "_walk", both)
    compile_ignoring_refusals(raw)
    return compared


PATTERNED = (
    {"type": "string", "pattern": "^[a-z]+@[a-z]+(\\.[a-z]+)*\\.uk", "maxLength": 60},
    {"type": "string", "pattern": "^(ab|cd)+x", "minLength": 3, "maxLength": 20},
    {"type": "string", "format": "email", "maxLength": 40},
    {"type": "string", "pattern": "a", "maxLength": 5, "not": {"const": "xa"}},
    {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[A-Z]{2}[0-9]+$",
                                             "maxLength": 12}}, "required": ["id"]},
)  # fmt: skip


@pytest.mark.parametrize("schema", PATTERNED, ids=range(len(PATTERNED)))
def test_every_product_of_patterned_schemas(monkeypatch, schema):
    assert _every_product(monkeypatch, json.dumps(schema).encode())


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
def test_every_product_of_real_schemas(monkeypatch):
    """Twenty schemas of each subset, every product both ways: two operands and more."""
    operands = []
    for subset in BENCH_SUBSETS:
        for path in sorted((BENCH / subset).glob("*.json"))[:20]:
            operands.extend(_every_product(monkeypatch, path.read_bytes()))
    assert len(operands) >= 10 and min(operands) == 2 and max(operands) > 2


def test_products_take_the_kernel_where_numba_runs(monkeypatch):
    """With the kernels on, `_walk` is the compiled walk (not only equal to it)."""
    calls = []
    real = product_kernel.walk
    monkeypatch.setattr(product_kernel, "walk", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(jit, "FORCE", True)
    rng = random.Random(9)
    built = [_operand(rng, 10, 3, False) for _ in range(3)]
    WALK([b[0] for b in built], [b[1] for b in built], 0, np.ones(10, dtype=np.int64),
         limits=Limits(), budget=Budget(10**9), what="x")  # fmt: skip
    assert calls == [1]
