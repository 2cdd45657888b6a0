"""Fast paths of the automata stage against their plain references, on random and real input.

`boolean.product` (segment tables, column classes) must give exactly the DFA that
`reference.product` (atom dicts, one lookup per atom) gives; `grouping.sort_groups` must be
`np.unique`'s index and inverse; minimisation over the distinct columns only must give the
minimal DFA that refinement over every column gives. Random NFAs come from a seeded
generator (overlapping ranges, epsilon cycles, unreachable and dead states); the real ones
are the operands and machines of schemas that use `allOf`, `not` and long chains.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import trgc
from schema_helpers import CORPORA
from trgc.automata import boolean, jit, minimize_kernel, reference
from trgc.automata import nfa as nfa_module
from trgc.automata.alphabet import Alphabet
from trgc.automata.dfa import Counter, Table, determinize_table
from trgc.automata.grouping import _multipliers, sort_groups
from trgc.automata.minimize import _hopcroft, minimize_table, renumber_table
from trgc.automata.nfa import Nfa
from trgc.errors import TrgcError
from trgc.limits import DEFAULT_LIMITS, Budget

N_ATOMS = 4


def _alphabet(specials: int = 0, calls: int = 0) -> Alphabet:
    atom_lo = tuple(range(0, 256, 256 // N_ATOMS))[:N_ATOMS]
    atom_of_byte = tuple(max(i for i, lo in enumerate(atom_lo) if lo <= b) for b in range(256))
    return Alphabet(
        atom_of_byte,
        atom_lo,
        tuple(f"s{i}" for i in range(specials)),
        tuple(f"r{i}" for i in range(calls)),
        {},
    )


def random_nfa(rng: random.Random, n_atoms: int = N_ATOMS, size: int | None = None) -> Nfa:
    """A random NFA over atoms 0..n_atoms-1 whose language is rarely empty or tiny: a path
    from the start to the final state, loops, ranges that overlap, epsilon edges (cycles
    included), and states that are unreachable or cannot reach the final state."""
    n = size or rng.randint(2, 9)
    eps: list[list[int]] = [[] for _ in range(n)]
    edges: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]

    def span() -> tuple[int, int]:
        lo = rng.randrange(n_atoms)
        return lo, rng.randrange(lo, min(n_atoms, lo + rng.choice((1, 1, 2, n_atoms))))

    for q in range(n):
        if q + 1 < n and rng.random() < 0.8:
            edges[q].append((*span(), q + 1))
        if rng.random() < 0.4:
            edges[q].append((*span(), q))
        for _ in range(rng.randint(0, 2)):
            edges[q].append((*span(), rng.randrange(n)))
        if rng.random() < 0.3:
            eps[q].append(rng.randrange(n))
    final = n - 1 if rng.random() < 0.8 else rng.randrange(n)
    return Nfa.of_targets(eps, edges, 0, final)


def _table_rows(table: Table) -> tuple[list[dict[int, int]], list[bool]]:
    dfa = table.to_dfa()
    return dfa.delta, dfa.accepting


def _both(operands, alphabet, limits=DEFAULT_LIMITS):
    """(fast result or error, reference result or error), as comparable values."""
    out = []
    for product in (boolean.product, reference.product):
        try:
            result = product(operands, alphabet, what="t", limits=limits, budget=Budget(10**9))
        except TrgcError as error:
            out.append(("error", error.code, error.message))
            continue
        if isinstance(result, Table):
            delta, accepting = _table_rows(result)
        else:
            delta, accepting = result.delta, result.accepting
        out.append((delta, [bool(a) for a in accepting]))
    return out


@pytest.mark.parametrize("seed", range(400))
def test_the_table_product_is_the_reference_product(seed):
    rng = random.Random(seed)
    operands = [(random_nfa(rng), False)]
    for _ in range(rng.randint(1, 3)):
        operands.append((random_nfa(rng), rng.random() < 0.4))
    fast, plain = _both(operands, _alphabet())
    assert fast == plain


@pytest.mark.parametrize("seed", range(60))
def test_specials_and_calls_in_operands_are_refused_as_the_reference_refuses_them(seed):
    rng = random.Random(1000 + seed)
    alphabet = _alphabet(specials=2, calls=2)
    n_atoms = alphabet.n_atoms
    operands = [(random_nfa(rng, n_atoms), False), (random_nfa(rng, n_atoms), rng.random() < 0.5)]
    fast, plain = _both(operands, alphabet)
    assert fast == plain


def test_a_product_larger_than_the_states_limit_is_refused_at_the_same_tuple():
    rng = random.Random(7)
    operands = [(random_nfa(rng, size=40), False), (random_nfa(rng, size=40), True)]
    small = DEFAULT_LIMITS.with_overrides({"states": 3})
    fast, plain = _both(operands, _alphabet(), small)
    assert fast == plain


def test_sort_groups_is_np_unique():
    rng = np.random.default_rng(3)
    for _ in range(300):
        values = rng.integers(0, rng.integers(1, 40), size=rng.integers(1, 80))
        _, first, inverse = np.unique(values, return_index=True, return_inverse=True)
        got_first, got_inverse = sort_groups(values)
        assert got_first.tolist() == first.tolist()
        assert got_inverse.tolist() == inverse.reshape(-1).tolist()


def test_the_multipliers_are_the_splitmix64_sequence():
    mask = (1 << 64) - 1
    state, expected = 0x2545F4914F6CDD1D, []
    for _ in range(50):
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        expected.append((z ^ (z >> 31)) | 1)
    assert _multipliers(50).tolist() == expected


def _hopcroft_everywhere(table: Table) -> Table:
    """The minimal DFA by Hopcroft's refinement over every column, from {accepting, not},
    merged and renumbered breadth-first."""
    n = table.n_states
    block = np.empty(n + 1, dtype=np.int64)
    block[:n] = table.accepting
    block[n] = -1
    _hopcroft(table, block, Budget(10**9))
    _, representative, quotient = np.unique(block[:n], return_index=True, return_inverse=True)
    quotient = np.append(quotient.reshape(-1).astype(np.int32), np.int32(-1))
    rows = table.next[representative]
    merged = table.with_next(quotient[np.where(rows < 0, n, rows)], table.accepting[representative])
    return renumber_table(merged, int(quotient[0]))


@pytest.mark.parametrize("seed", range(200))
def test_minimisation_over_distinct_columns_is_minimisation_over_all(seed):
    rng = random.Random(5000 + seed)
    nfa = random_nfa(rng, n_atoms=12, size=rng.randint(3, 14))
    table = determinize_table(
        nfa, rule="t", limits=DEFAULT_LIMITS, budget=Budget(10**9), counter=Counter()
    )
    # repeat columns on purpose, so that the distinct ones are fewer
    wide = Table(
        table.next[:, np.repeat(np.arange(table.next.shape[1]), 2)],
        table.accepting,
        np.arange(2 * table.next.shape[1], dtype=np.int64),
        np.arange(2 * table.next.shape[1], dtype=np.int64),
    )
    fast = minimize_table(wide, Budget(10**9))
    plain = _hopcroft_everywhere(wide)
    assert fast.next.tolist() == plain.next.tolist()
    assert fast.accepting.tolist() == plain.accepting.tolist()


BENCH = CORPORA / "jsonschemabench"
# schemas whose lowering intersects operands (pattern with maxLength, allOf, not), small enough
# to compile twice here; the long-chain ones exercise `_finite_classes`
REAL = [
    "Github_trivial/184c3e1feb8514d7",
    "Github_trivial/1907b3d36b6a1a0c",
    "Github_trivial/0a2415253a722bcf",
    "Snowplow/02178b3a47eb67b9",
    "JsonSchemaStore/01c790cc3a38b18d",
]


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
@pytest.mark.parametrize("name", REAL)
def test_real_schemas_compile_to_the_same_bytes_with_the_reference_product(monkeypatch, name):
    raw = (BENCH / f"{name}.json").read_bytes()
    fast = trgc.compile_schema(raw, separators="compact").to_bytes()
    calls = []

    def plain(*args, **kwargs):
        calls.append(1)
        return Table.from_dfa(reference.product(*args, **kwargs))

    monkeypatch.setattr(boolean, "product", plain)
    monkeypatch.setattr(nfa_module._Builder, "_tiled", lambda *args: None)  # operands as NFAs
    assert trgc.compile_schema(raw, separators="compact").to_bytes() == fast
    assert calls  # the schema did go through a product


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
@pytest.mark.parametrize("name", REAL)
def test_real_machines_minimise_as_hopcroft_over_every_column_does(monkeypatch, name):
    import trgc.automata.machines as machines

    seen: list[Table] = []
    real_minimize = machines.minimize_table

    def keep(table: Table, budget: Budget) -> Table:
        seen.append(table)
        return real_minimize(table, budget)

    monkeypatch.setattr(machines, "minimize_table", keep)
    trgc.compile_schema((BENCH / f"{name}.json").read_bytes(), separators="compact")
    assert seen
    for table in seen:
        fast = real_minimize(table, Budget(10**9))
        plain = _hopcroft_everywhere(table)
        assert fast.next.tolist() == plain.next.tolist()
        assert fast.accepting.tolist() == plain.accepting.tolist()


def random_chain_table(rng: random.Random, states: tuple[int, int] = (60, 160)) -> Table:
    """A DFA shaped like a copied bounded repetition: a long chain from the start whose
    states repeat a short motif of columns (so that only the distance to the end tells them
    apart, and `_moore` needs about one round per state), rare forward shortcuts, a few back
    edges (cycles, so part of it is not finite), sparse acceptance and repeated columns."""
    n, k = rng.randint(*states), 3
    motif = [rng.randrange(k) for _ in range(rng.randint(1, 3))]
    table = np.full((n, k), -1, dtype=np.int32)
    for i in range(n - 1):
        table[i, motif[i % len(motif)]] = i + 1
        if rng.random() < 0.02:
            table[i, rng.randrange(k)] = rng.randint(i + 1, n - 1)
        if rng.random() < 0.01:
            table[i, rng.randrange(k)] = rng.randint(0, i)
    accepting = np.array([i == n - 1 or rng.random() < 0.01 for i in range(n)], dtype=bool)
    wide = table[:, [0, 1, 2, 1, 0]]
    segments = np.arange(5, dtype=np.int64)
    return Table(wide, accepting, segments, segments.copy())


def _count_calls(monkeypatch, module, name: str) -> list:
    """Patch `module.name` to record each call; the returned list grows by one per call."""
    calls: list = []
    real = getattr(module, name)

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_long_chains_minimise_as_hopcroft_over_every_column_does(monkeypatch):
    import trgc.automata.minimize as minimize

    monkeypatch.setattr(jit, "FORCE", False)  # the Python path, whose steps are counted
    finite_passes = _count_calls(monkeypatch, minimize, "_finite_classes")
    exact_passes = _count_calls(monkeypatch, minimize, "_hopcroft")
    rng = random.Random(11)
    for _ in range(60):
        table = random_chain_table(rng)
        fast = minimize_table(table, Budget(10**9))
        plain = _hopcroft_everywhere(table)
        assert fast.next.tolist() == plain.next.tolist()
        assert fast.accepting.tolist() == plain.accepting.tolist()
    assert len(finite_passes) == 60  # every table's finite states classified first
    # and that settled most of them: the exact classes are right, not repaired by Hopcroft's
    assert len(exact_passes) <= len(finite_passes) // 2


def test_large_tables_classify_their_finite_states_before_the_rounds(monkeypatch):
    """A table of `CHAIN_CHECK_STATES` or more (left to the Python path) classifies its finite
    states first and only then runs the rounds, so a long chain never costs a round per
    state; the result is Hopcroft's."""
    import trgc.automata.minimize as minimize

    order: list[str] = []
    for name in ("_moore", "_finite_classes", "_hopcroft"):
        real = getattr(minimize, name)
        monkeypatch.setattr(
            minimize,
            name,
            lambda *args, _real=real, _name=name: order.append(_name) or _real(*args),
        )
    rng = random.Random(5)
    chained = 0
    for _ in range(12):
        table = random_chain_table(rng, (minimize.CHAIN_CHECK_STATES, 900))
        order.clear()
        fast = minimize_table(table, Budget(10**9))
        plain = _hopcroft_everywhere(table)
        assert fast.next.tolist() == plain.next.tolist()
        assert fast.accepting.tolist() == plain.accepting.tolist()
        assert order[:2] == ["_finite_classes", "_moore"]
        chained += len(minimize._finite_levels(table, Budget(10**9))) > minimize.MOORE_ROUNDS
    assert chained >= 6  # chains the rounds alone could not have settled


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "maxLength": 60, "pattern": "^a.*b$"},
        {"type": "string", "minLength": 3, "maxLength": 80, "pattern": "^[a-z]+(-[a-z]+)*$"},
    ],
)
def test_bounded_patterns_compile_to_the_same_bytes_with_the_plain_paths(monkeypatch, schema):
    """A pattern intersected with a bounded length: a copied chain, minimised through
    `_finite_classes`; the reference product and Hopcroft alone give the same artifact."""
    import trgc.automata.minimize as minimize

    fast = trgc.compile_schema(schema, separators="compact").to_bytes()
    monkeypatch.setattr(
        boolean, "product", lambda *a, **k: Table.from_dfa(reference.product(*a, **k))
    )
    monkeypatch.setattr(nfa_module._Builder, "_tiled", lambda *args: None)  # operands as NFAs
    monkeypatch.setattr(minimize, "_moore", lambda table, block, budget: False)
    monkeypatch.setattr(minimize, "_finite_classes", lambda table, block, budget, levels=None: None)
    assert trgc.compile_schema(schema, separators="compact").to_bytes() == fast


@pytest.mark.parametrize("kernel", [False, True])
def test_finite_classes_are_the_exact_classes_of_the_finite_states(monkeypatch, kernel):
    """`_finite_classes` on its own (the rounds and Hopcroft's repair after it would hide a
    wrong class, at a cost in time only): on the finite states, two states share a class
    exactly when Hopcroft's refinement over every column puts them together; narrow levels
    (4 chains side by side) and wide ones (12), half the states
    accepting (so that acceptance alone tells states of one level apart)."""
    import trgc.automata.minimize as minimize

    monkeypatch.setattr(jit, "FORCE", kernel)
    rng = random.Random(3)
    checked = 0
    for width in (4, 4, 4, 4, 12, 12, 12, 12):
        chain = random_chain_table(rng)
        n = chain.n_states
        # `width` disjoint copies: every level holds `width` states
        accepting = np.array([rng.random() < 0.5 for _ in range(width * n)])
        rows = np.concatenate(
            [np.where(chain.next >= 0, chain.next + c * n, -1) for c in range(width)]
        )
        table = Table(rows.astype(np.int32), accepting, chain.seg_lo, chain.seg_hi)
        block = np.empty(table.n_states + 1, dtype=np.int64)
        block[-1] = -1
        minimize._finite_classes(table, block, Budget(10**9))
        exact = np.empty(table.n_states + 1, dtype=np.int64)
        exact[: table.n_states] = table.accepting
        exact[-1] = -1
        _hopcroft(table, exact, Budget(10**9))
        levels = minimize._finite_levels(table, Budget(10**9))
        if isinstance(levels, minimize_kernel.Levels):  # the kernel's: states level by level
            finite = levels.states.tolist()
        else:
            finite = [s for level in levels for s in level]
        if len(finite) < 20:
            continue  # a back edge near the end: few finite states
        checked += width
        # the same partition of the finite states: the pairs of labels are a bijection
        pairs = {(int(block[s]), int(exact[s])) for s in finite}
        assert len(pairs) == len({a for a, _ in pairs}) == len({b for _, b in pairs}), width
    assert checked >= 2 * 4 + 2 * 12  # narrow levels (below WIDE_LEVEL) and wide ones
