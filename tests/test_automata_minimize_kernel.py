"""The compiled minimisation (`automata/minimize_kernel.py`) against the Python path of
`minimize.minimize_table`: the same table, acceptance and segments, the same budget used and
the same refusal (code and message), on random tables (long chains among them, which the
kernel leaves to the Python path) and on every minimisation of real schemas and grammars."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trgc
import trgc.automata.boolean as boolean
import trgc.automata.machines as machines
import trgc.automata.minimize as minimize
from schema_helpers import BENCH_SUBSETS, CORPORA, compile_ignoring_refusals
from trgc.automata import jit, minimize_kernel
from trgc.automata.dfa import Table
from trgc.errors import TrgcError
from trgc.limits import Budget

SCHEMAS = sorted((Path(__file__).parents[1] / "schemas").glob("*.json"))
GRAMMARS = sorted((Path(__file__).parents[1] / "grammars").glob("*.trg"))
BENCH = CORPORA / "jsonschemabench"
MINIMIZE_TABLE = minimize.minimize_table  # the real one, before any test replaces it


def _outcome(table: Table, kernel: bool, budget: int, monkeypatch) -> tuple:
    """Everything `minimize_table` gives or raises, with the kernels on or off."""
    monkeypatch.setattr(jit, "FORCE", kernel)
    spent = Budget(budget)
    spent.used = 5  # charged before, by other stages
    try:
        found = minimize.minimize_table(table, spent)
    except TrgcError as exc:
        result: tuple = (exc.code, str(exc))
    else:
        result = (found.next.tolist(), found.accepting.tolist(), found.seg_lo.tolist(),
                  found.seg_hi.tolist(), found.next.dtype, found.accepting.dtype)  # fmt: skip
    return result, spent.used


def random_table(rng: random.Random, n: int, k: int) -> Table:
    """A table of `n` states (all reachable from 0 through a spanning chain of random
    columns) over `k` segments, with random further transitions and acceptance; few
    distinct targets so that many states are equivalent."""
    nxt = np.full((n, k), -1, dtype=np.int32)
    for s in range(1, n):
        nxt[rng.randrange(s), rng.randrange(k)] = s
    density = rng.random()
    for s in range(n):
        for c in range(k):
            if nxt[s, c] < 0 and rng.random() < density:
                nxt[s, c] = rng.randrange(n) if rng.random() < 0.5 else rng.randrange(min(n, 3))
    if rng.random() < 0.3:  # a duplicated column (the distinct-column saving)
        nxt[:, rng.randrange(k)] = nxt[:, rng.randrange(k)]
    accepting = np.array([rng.random() < 0.4 for _ in range(n)], dtype=bool)
    accepting[rng.randrange(n)] = True
    lo = np.arange(k, dtype=np.int64) * 2
    return Table(nxt, accepting, lo, lo + 1)


@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 60), k=st.integers(1, 6))
def test_the_kernel_is_the_python_minimisation(seed, n, k):
    rng = random.Random(seed)
    table = random_table(rng, n, k)
    budget = rng.randint(1, 400) if rng.random() < 0.4 else 10**9
    with pytest.MonkeyPatch.context() as monkeypatch:
        python = _outcome(table, False, budget, monkeypatch)
        assert _outcome(table, True, budget, monkeypatch) == python


def test_random_cases_reach_both_paths_and_the_budget():
    """The random tables above reach what they should: minimal tables the kernel settles,
    tables it leaves to the Python path (a cycle longer than `MOORE_ROUNDS`), and the budget
    refused at each kind of charge."""
    statuses, refusals = set(), set()
    rng = random.Random(11)
    with pytest.MonkeyPatch.context() as monkeypatch:
        for _ in range(400):
            table = random_table(rng, rng.randint(1, 60), rng.randint(1, 6))
            statuses.add(_kernel_status(table))
            budget = rng.randint(1, 200)
            result, used = _outcome(table, True, budget, monkeypatch)
            if result[0] == "E_LIMIT_OPERATIONS":
                refusals.add(min(used - 5, 3))  # at the saving/entries charge, or a round
            assert _outcome(table, False, budget, monkeypatch) == (result, used)
        ring = _chain(120, cyclic=True)  # one round per state: they cannot settle in 48
        statuses.add(_kernel_status(ring))
        assert _outcome(ring, True, 10**9, monkeypatch) == _outcome(ring, False, 10**9,
                                                                    monkeypatch)  # fmt: skip
    assert statuses == {minimize_kernel.SETTLED, minimize_kernel.UNSETTLED}
    assert len(refusals) >= 2


def test_hash_collisions_are_caught_by_the_check(monkeypatch):
    """With multipliers that make most words collide, the rounds merge states that differ:
    the check must see it, and the kernel then leaves the table to the Python path (whose
    Hopcroft refinement gives the true minimal table), so both agree again."""
    monkeypatch.setattr(minimize, "multipliers", lambda width: np.ones(width, dtype=np.uint64))
    rng = random.Random(5)
    unsettled = 0
    for _ in range(200):
        table = random_table(rng, rng.randint(2, 40), rng.randint(1, 4))
        unsettled += _kernel_status(table) == minimize_kernel.UNSETTLED
        assert _outcome(table, True, 10**9, monkeypatch) == _outcome(table, False, 10**9,
                                                                     monkeypatch)  # fmt: skip
    assert unsettled > 20


def _chain(n: int, cyclic: bool = False) -> Table:
    """0 -> 1 -> ... -> n-1 (-> 0 if `cyclic`) on one segment, the last state accepting:
    nothing to merge."""
    nxt = np.full((n, 1), -1, dtype=np.int32)
    nxt[:-1, 0] = np.arange(1, n, dtype=np.int32)
    if cyclic:
        nxt[-1, 0] = 0
    accepting = np.zeros(n, dtype=bool)
    accepting[-1] = True
    return Table(nxt, accepting, np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))


def test_finite_states_are_classified_before_the_rounds(monkeypatch):
    """A chain of 120 states has 120 levels of finite states: classified exactly first, so
    one round confirms the partition (the rounds alone would need one per state, more than
    `MOORE_ROUNDS`), in the kernel and in the Python path alike, with the same charges."""
    chain = _chain(120)
    kept = minimize.distinct_columns(chain.next)
    narrow = np.ascontiguousarray(chain.next[:, kept])
    status, rounds, leveled, entries, *_ = minimize_kernel.minimize(
        narrow, chain.next, chain.accepting, minimize.multipliers(narrow.shape[1] + 1),
        minimize.MOORE_ROUNDS,
    )  # fmt: skip
    assert (status, rounds) == (minimize_kernel.SETTLED, 1)
    assert leveled == entries == 120 + 119  # states and transitions, once each
    rounds_run = []
    real_moore = minimize._moore
    monkeypatch.setattr(jit, "FORCE", False)
    monkeypatch.setattr(minimize, "_moore", lambda *a: rounds_run.append(1) or real_moore(*a))
    assert _outcome(chain, False, 10**9, monkeypatch) == _outcome(chain, True, 10**9,
                                                                  monkeypatch)  # fmt: skip
    assert rounds_run == [1]  # the Python path: one call of the rounds, which settled


def _kernel_status(table: Table) -> int:
    kept = minimize.distinct_columns(table.next)
    narrow = np.ascontiguousarray(table.next[:, kept])
    return minimize_kernel.minimize(narrow, table.next, table.accepting,
                                    minimize.multipliers(narrow.shape[1] + 1),
                                    minimize.MOORE_ROUNDS)[0]  # fmt: skip


def _every_minimisation(monkeypatch, raw: bytes, compile_source=None) -> int:
    """Compile `raw` (a schema, or what `compile_source` compiles) with every minimisation
    made both ways and compared (machines, their trimmed tables and product operands); the
    number compared."""
    real = MINIMIZE_TABLE
    compared = []

    def both(table, budget):
        before = budget.used
        monkeypatch.setattr(jit, "FORCE", False)
        python = _attempt(real, table, budget)
        after, budget.used = budget.used, before
        monkeypatch.setattr(jit, "FORCE", True)
        kernel = _attempt(real, table, budget)
        assert budget.used == after
        assert kernel[1] == python[1]
        compared.append(table.n_states)
        if python[0] is not None:
            raise python[0]
        return python[2]

    for module in (machines, minimize, boolean):  # minimal_table's too, through minimize
        monkeypatch.setattr(module, "minimize_table", both)
    compile_ignoring_refusals(raw, compile_source)  # refusals are compared in `both`
    return len(compared)


def _attempt(real, table, budget):
    try:
        found = real(table, budget)
    except TrgcError as exc:
        return exc, (exc.code, str(exc)), None
    key = (found.next.tolist(), found.accepting.tolist(), found.seg_lo.tolist(),
           found.seg_hi.tolist(), found.next.dtype)  # fmt: skip
    return None, key, found


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_every_minimisation_of_the_shipped_schemas(monkeypatch, path):
    assert _every_minimisation(monkeypatch, path.read_bytes()) >= 1


@pytest.mark.parametrize("path", GRAMMARS, ids=lambda p: p.name)
def test_every_minimisation_of_the_shipped_grammars(monkeypatch, path):
    assert _every_minimisation(monkeypatch, path.read_bytes(), trgc.compile_grammar) >= 1


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
@pytest.mark.parametrize("subset", BENCH_SUBSETS)
def test_every_minimisation_of_real_schemas(monkeypatch, subset):
    """Fifteen schemas of each subset, every minimisation both ways."""
    paths = sorted((BENCH / subset).glob("*.json"))[:15]
    assert sum(_every_minimisation(monkeypatch, p.read_bytes()) for p in paths) > 0


def _cycle_chain(n: int, k: int, rng: random.Random) -> Table:
    """A chain 0 -> ... -> n-1 whose last state loops back to a random earlier one, with a
    few random side transitions: every state reaches a cycle (none is finite), so the rounds
    need about one round per state and only Hopcroft's refinement settles it."""
    nxt = np.full((n, k), -1, dtype=np.int32)
    nxt[:-1, 0] = np.arange(1, n, dtype=np.int32)
    nxt[-1, 0] = rng.randrange(n)
    for _ in range(n // 20):
        nxt[rng.randrange(n), rng.randrange(1, k)] = rng.randrange(n)
    accepting = np.zeros(n, dtype=bool)
    accepting[rng.sample(range(n), min(n, 3))] = True
    lo = np.arange(k, dtype=np.int64) * 2
    return Table(nxt, accepting, lo, lo + 1)


def _large_table(rng: random.Random) -> Table:
    """A table of 512 states or more (`CHAIN_CHECK_STATES`): random, a finite chain longer
    than `MOORE_ROUNDS` with random tables above it, or a chain reaching a cycle."""
    n = rng.randint(minimize.CHAIN_CHECK_STATES, 1500)
    shape = rng.choice(("random", "chain", "cycle"))
    if shape == "cycle":
        return _cycle_chain(n, rng.randint(2, 4), rng)
    table = random_table(rng, n, rng.randint(1, 5))
    if shape == "chain":  # the last third becomes a finite chain, entered from the rest
        nxt = table.next.copy()
        tail = n - n // 3
        nxt[tail:] = -1
        nxt[tail:-1, 0] = np.arange(tail + 1, n, dtype=np.int32)
        nxt[:tail][nxt[:tail] >= tail] = tail
        table = table.with_next(nxt, table.accepting)
    return table


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_large_tables_take_the_compiled_steps(seed):
    """Above `CHAIN_CHECK_STATES` the Python path runs with its finite levels, their classes,
    the rounds, the quotient and the distinct columns compiled: the same table, budget used
    and refusals as with every step in Python."""
    rng = random.Random(seed)
    table = _large_table(rng)
    budget = rng.randint(1, 6000) if rng.random() < 0.3 else 10**9
    with pytest.MonkeyPatch.context() as monkeypatch:
        python = _outcome(table, False, budget, monkeypatch)
        assert _outcome(table, True, budget, monkeypatch) == python


def _steps(table: Table, kernel: bool, monkeypatch) -> tuple:
    """The Python path's steps one by one (distinct columns, finite levels, their classes,
    the rounds from there), with the kernels on or off: what each gives and charges."""
    monkeypatch.setattr(jit, "FORCE", kernel)
    budget = Budget(10**9)
    kept = minimize.distinct_columns(table.next)
    narrow = table.with_next(np.ascontiguousarray(table.next[:, kept]))
    levels = minimize._finite_levels(narrow, budget)
    if isinstance(levels, list):
        flat = [list(level) for level in levels]
    else:
        bounds = levels.bounds.tolist()
        flat = [levels.states[a:b].tolist() for a, b in itertools.pairwise(bounds)]
    charged = [budget.used]
    block = np.empty(table.n_states + 1, dtype=np.int64)
    block[-1] = -1
    minimize._finite_classes(narrow, block, budget, levels)
    classes = block.tolist()
    settled = minimize._moore(narrow, block, budget)
    charged.append(budget.used)
    return kept.tolist(), kept.dtype, flat, classes, settled, block.tolist(), charged


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 200), k=st.integers(1, 6),
       collide=st.booleans())  # fmt: skip
def test_each_compiled_step_is_its_python_step(seed, n, k, collide):
    """Step by step, word for word: the same kept columns, levels in the same order, classes
    numbered alike, rounds ending on the same blocks, the same charges. The blocks must be
    equal (not only the partition) because Hopcroft's refinement, which may follow, charges
    in an order that depends on how blocks are numbered. With `collide`, every multiplier is
    1, so the kernels' hashes of columns and of class keys collide often and only their full
    comparisons keep them right."""
    rng = random.Random(seed)
    table = _cycle_chain(n, k + 1, rng) if rng.random() < 0.3 else random_table(rng, n, k)
    if rng.random() < 0.3:  # finite chains hanging below the rest
        nxt = table.next.copy()
        nxt[n // 2 :][nxt[n // 2 :] < n // 2] = -1
        table = table.with_next(nxt, table.accepting)
    with pytest.MonkeyPatch.context() as monkeypatch:
        if collide:
            monkeypatch.setattr(minimize, "multipliers", lambda w: np.ones(w, dtype=np.uint64))
        assert _steps(table, True, monkeypatch) == _steps(table, False, monkeypatch)


def test_the_large_cases_reach_every_path(monkeypatch):
    """The large tables above reach each ending of the Python path: rounds that settle after
    the finite states' classes, and rounds that do not, repaired by Hopcroft; their rounds
    and Hopcroft's refinement are the compiled ones wherever the kernels run."""
    endings = []
    real_hopcroft = minimize_kernel.hopcroft
    monkeypatch.setattr(minimize_kernel, "hopcroft", lambda *a: endings.append("hopcroft")
                        or real_hopcroft(*a))  # fmt: skip
    monkeypatch.setattr(minimize, "_hopcroft", None)  # the Python refinement must not run
    compiled = []
    real_rounds = minimize_kernel.rounds
    monkeypatch.setattr(minimize_kernel, "rounds", lambda table, *a: compiled.append(
        table.shape[0]) or real_rounds(table, *a))  # fmt: skip
    monkeypatch.setattr(jit, "FORCE", True)
    rng = random.Random(3)
    for _ in range(30):
        before = len(endings)
        minimize.minimize_table(_large_table(rng), Budget(10**9))
        if len(endings) == before:
            endings.append("settled")
    assert set(endings) == {"hopcroft", "settled"}
    assert len(compiled) == 30 and min(compiled) >= minimize.CHAIN_CHECK_STATES


def _refined(table: Table, initial: np.ndarray, kernel: bool, limit: int) -> tuple:
    """Hopcroft's refinement of `table` from the blocks `initial`, Python or compiled: the
    blocks it ends on, the budget used and the refusal (the compiled steps' sum is charged at
    once, as `minimize_table` charges it)."""
    block = initial.copy()
    budget = Budget(limit)
    budget.used = 3  # charged before, by other stages
    try:
        if kernel:
            spent = minimize_kernel.hopcroft(table.next, block, limit - budget.used)
            budget.charge(spent, "minimisation")
        else:
            minimize._hopcroft(table, block, budget)
    except TrgcError as exc:
        return exc.code, str(exc), budget.used
    return block.tolist(), budget.used


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), k=st.integers(1, 5),
       blocks=st.integers(1, 4), small=st.booleans())  # fmt: skip
def test_compiled_hopcroft_is_the_python_one_step_for_step(seed, n, k, blocks, small):
    """From any starting partition (not only {accepting, rejecting}), the compiled refinement
    ends on the same block numbers as the Python one and charges the same, so a budget that
    runs out runs out at the same operation: the charges of both depend only on the table."""
    rng = random.Random(seed)
    table = _cycle_chain(n, k + 1, rng) if rng.random() < 0.5 else random_table(rng, n, k)
    initial = np.full(n + 1, -1, dtype=np.int64)
    initial[:n] = [rng.randrange(blocks) for _ in range(n)]
    limit = rng.randint(1, 4 * n * (k + 1)) if small else 10**9
    assert _refined(table, initial, True, limit) == _refined(table, initial, False, limit)


def test_compiled_hopcroft_gives_the_coarsest_partition():
    """Hopcroft's refinement from {accepting, rejecting} alone (no rounds before it) on chains
    reaching a cycle: the partition is the coarsest stable one, which the rounds also reach
    when given as many rounds as states."""
    rng = random.Random(11)
    for _ in range(40):
        table = _cycle_chain(rng.randint(2, 400), rng.randint(2, 4), rng)
        n = table.n_states
        block = np.full(n + 1, -1, dtype=np.int64)
        block[:n] = table.accepting
        minimize_kernel.hopcroft(table.next, block, 10**9)
        rounds = np.full(n + 1, -1, dtype=np.int64)
        rounds[:n] = table.accepting
        weights = minimize.multipliers(table.next.shape[1] + 1)
        status, _, _ = minimize_kernel.rounds(table.next, table.accepting, weights, n + 2, rounds)
        assert status == minimize_kernel.SETTLED
        assert _partition(block[:n]) == _partition(rounds[:n])


def _partition(block: np.ndarray) -> set[frozenset[int]]:
    groups: dict[int, set[int]] = {}
    for s, b in enumerate(block.tolist()):
        groups.setdefault(b, set()).add(s)
    return {frozenset(g) for g in groups.values()}


# a loop of a long literal: its states are told apart only by their distance to the one
# accepting state, more rounds than MOORE_ROUNDS, so Hopcroft's refinement finishes it
_LONG_LOOP = "(" + "ab" * 35 + "|c)+"
HOPCROFT_SOURCES = [
    ("grammar", f'%trg 1\n%start s\ns ::= ("{"ab" * 40}" | "c")+ ;\n'),
    (
        "schema",
        json.dumps(
            {
                "type": "object",
                "required": ["code"],
                "properties": {"code": {"type": "string", "pattern": f"^{_LONG_LOOP}$"}},
            }
        ),
    ),
]


@pytest.mark.parametrize(("kind", "source"), HOPCROFT_SOURCES, ids=[k for k, _ in HOPCROFT_SOURCES])
def test_compiled_hopcroft_on_a_grammar_and_a_schema(monkeypatch, kind, source):
    """A grammar and a schema whose minimisation needs Hopcroft's refinement: every
    minimisation made both ways is the same, and the compiled refinement is among them."""
    refined = []
    real = minimize_kernel.hopcroft
    monkeypatch.setattr(minimize_kernel, "hopcroft", lambda *a: refined.append(1) or real(*a))
    compile_source = trgc.compile_grammar if kind == "grammar" else None
    assert _every_minimisation(monkeypatch, source.encode(), compile_source) >= 1
    assert refined
