"""The compiled subset construction (`automata/subset_kernel.py`) against the Python loop of
`dfa.determinize_table`: the same table, acceptance and segments, the same running totals and
budget, and the same refusal (code and message) at every limit, on random NFAs and on every
machine of real schemas; with arrays that start one item large, so that every growth and
every undone row is exercised. And the rule for when it runs: only where numba is loaded."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trgc
import trgc.automata.machines as machines
import trgc.automata.minimize as minimize
from schema_helpers import BENCH_SUBSETS, CORPORA, compile_ignoring_refusals
from test_automata_fastpaths import random_nfa
from test_layers import _printed
from trgc.automata import dfa, jit, subset_kernel
from trgc.automata.dfa import Counter
from trgc.automata.nfa import Nfa
from trgc.errors import TrgcError
from trgc.limits import Budget, Limits

SCHEMAS = sorted((Path(__file__).parents[1] / "schemas").glob("*.json"))
GRAMMARS = sorted((Path(__file__).parents[1] / "grammars").glob("*.trg"))
BENCH = CORPORA / "jsonschemabench"


def _outcome(nfa: Nfa, kernel: bool, limits: Limits, budget: int, monkeypatch) -> tuple:
    """Everything `determinize_table` gives or raises, with the kernel on or off."""
    monkeypatch.setattr(jit, "FORCE", kernel)
    spent, counter = Budget(budget), Counter(3, 7)  # totals carried in from other machines
    try:
        table = dfa.determinize_table(nfa, rule="r", limits=limits, budget=spent, counter=counter)
    except TrgcError as exc:
        result: tuple = (exc.code, str(exc))
    else:
        result = (table.next.tolist(), table.accepting.tolist(), table.seg_lo.tolist(),
                  table.seg_hi.tolist(), table.next.dtype, table.seg_lo.dtype)  # fmt: skip
    return result, spent.used, counter.states, counter.transitions


@pytest.mark.parametrize("room", [1, 256])
@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(1, 14), atoms=st.integers(1, 12))
def test_the_kernel_is_the_python_construction(room, seed, size, atoms):
    with pytest.MonkeyPatch.context() as monkeypatch:
        _compare_on_random(monkeypatch, room, seed, size, atoms)


def _compare_on_random(monkeypatch, room: int, seed: int, size: int, atoms: int) -> None:
    rng = random.Random(seed)
    nfa = random_nfa(rng, n_atoms=atoms, size=size)
    # limits that often refuse part way: states, transitions, the budget, or none
    limits = Limits().with_overrides(
        {"states": rng.randint(4, 12), "transitions": rng.randint(8, 60)}
        if rng.random() < 0.5
        else {}
    )
    budget = rng.randint(1, 150) if rng.random() < 0.4 else 10**9
    monkeypatch.setattr(subset_kernel, "FIRST_ROOM", room)
    python = _outcome(nfa, False, limits, budget, monkeypatch)
    assert _outcome(nfa, True, limits, budget, monkeypatch) == python


def test_every_refusal_is_met_by_both():
    """The random cases above do reach each kind of refusal (else they would prove little)."""
    codes = set()
    rng = random.Random(7)
    with pytest.MonkeyPatch.context() as monkeypatch:
        for _ in range(300):
            nfa = random_nfa(rng, n_atoms=8, size=rng.randint(4, 14))
            limits = Limits().with_overrides(
                {"states": rng.randint(4, 12), "transitions": rng.randint(8, 60)}
            )
            budget = rng.randint(1, 150)
            python = _outcome(nfa, False, limits, budget, monkeypatch)
            assert _outcome(nfa, True, limits, budget, monkeypatch) == python
            if isinstance(python[0][0], str):
                codes.add(python[0])
    assert {code for code, _ in codes} == {
        "E_LIMIT_STATES", "E_LIMIT_TRANSITIONS", "E_LIMIT_OPERATIONS"
    }  # fmt: skip
    assert any("subset construction needed" in message for _, message in codes)
    assert any("epsilon closure needed" in message for _, message in codes)


def test_a_large_enum_row_of_thousands_of_targets():
    """One row whose pieces are sets of thousands of NFA states (the first bytes of a large
    enum): the sort and sweep paths for long rows."""
    n = 3000
    rng = random.Random(3)
    eps = [()] * (n + 2)
    edges = [tuple((b, b, 1 + i) for i, b in enumerate(rng.randrange(6) for _ in range(n)))]
    edges += [((rng.randrange(6), 5, n + 1),) for _ in range(n)] + [(), ()]
    nfa = Nfa.of_targets(eps, edges, 0, n + 1)
    with pytest.MonkeyPatch.context() as monkeypatch:
        python = _outcome(nfa, False, Limits(), 10**9, monkeypatch)
        assert _outcome(nfa, True, Limits(), 10**9, monkeypatch) == python
        monkeypatch.setattr(subset_kernel, "FIRST_ROOM", 1)
        assert _outcome(nfa, True, Limits(), 10**9, monkeypatch) == python


def _every_construction(monkeypatch, raw: bytes, compile_source=None) -> int:
    """Compile `raw` (a schema, or what `compile_source` compiles) with every subset
    construction made both ways and compared (each machine,
    product operand and piece); the number compared."""
    real = dfa.determinize_table
    compared = []

    def both(nfa, *, rule, limits, budget, counter):
        before = (budget.used, counter.states, counter.transitions)
        monkeypatch.setattr(jit, "FORCE", False)
        python = _attempt(real, nfa, rule, limits, budget, counter)
        after = (budget.used, counter.states, counter.transitions)
        budget.used, counter.states, counter.transitions = before
        monkeypatch.setattr(jit, "FORCE", True)
        kernel = _attempt(real, nfa, rule, limits, budget, counter)
        assert (budget.used, counter.states, counter.transitions) == after
        assert kernel[1] == python[1]
        compared.append(rule)
        if python[0] is not None:
            raise python[0]
        return python[2]

    for module in (machines, minimize):
        monkeypatch.setattr(module, "determinize_table", both)
    compile_ignoring_refusals(raw, compile_source)  # refusals are compared in `both`
    return len(compared)


def _attempt(real, nfa, rule, limits, budget, counter):
    try:
        table = real(nfa, rule=rule, limits=limits, budget=budget, counter=counter)
    except TrgcError as exc:
        return exc, (exc.code, str(exc)), None
    key = (table.next.tolist(), table.accepting.tolist(), table.seg_lo.tolist(),
           table.seg_hi.tolist())  # fmt: skip
    return None, key, table


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_every_machine_of_the_shipped_schemas(monkeypatch, path):
    monkeypatch.setattr(subset_kernel, "FIRST_ROOM", 1)
    assert _every_construction(monkeypatch, path.read_bytes()) >= 1


@pytest.mark.parametrize("path", GRAMMARS, ids=lambda p: p.name)
def test_every_machine_of_the_shipped_grammars(monkeypatch, path):
    monkeypatch.setattr(subset_kernel, "FIRST_ROOM", 1)
    assert _every_construction(monkeypatch, path.read_bytes(), trgc.compile_grammar) >= 1


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
@pytest.mark.parametrize("subset", BENCH_SUBSETS)
def test_every_machine_of_real_schemas(monkeypatch, subset):
    """Fifteen schemas of each subset (every machine, product operand and piece), the arrays
    one item large at first."""
    monkeypatch.setattr(subset_kernel, "FIRST_ROOM", 1)
    paths = sorted((BENCH / subset).glob("*.json"))[:15]
    assert sum(_every_construction(monkeypatch, p.read_bytes()) for p in paths) > 0


def test_schemas_compile_to_the_same_bytes_either_way(monkeypatch):
    for path in SCHEMAS:
        monkeypatch.setattr(jit, "FORCE", False)
        python = trgc.compile_schema(path.read_bytes()).to_bytes()
        monkeypatch.setattr(jit, "FORCE", True)
        assert trgc.compile_schema(path.read_bytes()).to_bytes() == python, path.name


def test_the_kernel_runs_only_where_numba_is_loaded():
    """A compile never imports numba for it (a `trgc compile` process stays light); once
    numba is loaded (a process that masks), compiles use the kernel."""
    code = (
        "import sys, trgc\n"
        "from trgc.automata import jit\n"
        f"trgc.compile_schema(open({str(SCHEMAS[0])!r}).read())\n"
        "before = ('numba' in sys.modules, jit.enabled())\n"
        "import numba\n"
        "print(before, jit.enabled())\n"
    )
    assert _printed(code) == "(False, False) True"
