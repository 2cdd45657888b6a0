"""A machine whose whole body is one AND node takes the product as built (`dfa.adopt_table`).

The JSON Schema lowering makes a `pattern` under a `maxLength` above 64 a shared rule of its
own (the product is about the pattern's states times the length): called where the string
is, and compiled without the subset construction and minimisation that would only give the
product back. The references are the same compiler with the shortcut switched off (the
spliced product determinised and minimised as any NFA) and, for the language, the strings
each side of the bounds.
"""

from __future__ import annotations

import random

import pytest

import trgc
from test_automata_fastpaths import _alphabet, random_nfa
from trgc.automata import boolean, machines
from trgc.automata.dfa import Counter, Table, adopt_table, determinize_table
from trgc.automata.nfa import Nfa
from trgc.errors import TrgcError
from trgc.limits import DEFAULT_LIMITS, Budget

URL = {"type": "string", "pattern": "^https?://[a-z.]+$", "maxLength": 80}
MAIL = {"type": "string", "pattern": "^[a-z]+@[a-z]+$", "minLength": 5, "maxLength": 70}
SCHEMAS = [
    URL,
    {"type": "object", "properties": {"u": URL, "m": MAIL}, "required": ["u"]},
    # three equal products: three shared rules, one machine once `_same_machines` merges them
    {"type": "array", "items": [URL, URL, URL]} | {"minItems": 3},
    {"type": "object", "properties": {"u": URL | {"format": "uri"}}},
]


def accepts(artifact: trgc.Artifact, text: str) -> bool:
    return trgc.check(artifact, text.encode()).accepted


def _compile(monkeypatch, schema, *, adopt: bool, limits=DEFAULT_LIMITS):
    """(artifact bytes or refusal code, subset constructions run)."""
    runs: list[str] = []
    real_build, real_subset = machines.build_nfa, machines.determinize_table

    def build(*args, **kwargs):
        out = real_build(*args, **kwargs)
        if not adopt:
            out[0].table = None
        return out

    def subset(nfa_, **kwargs):
        runs.append(kwargs["rule"])
        return real_subset(nfa_, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(machines, "build_nfa", build)
        m.setattr(machines, "determinize_table", subset)
        try:
            data = trgc.compile_schema(schema, whitespace="compact", limits=limits).to_bytes()
        except TrgcError as error:
            return error.code, runs
    return data, runs


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_a_product_machine_is_taken_as_built(monkeypatch, index):
    taken, runs = _compile(monkeypatch, SCHEMAS[index], adopt=True)
    built, all_runs = _compile(monkeypatch, SCHEMAS[index], adopt=False)
    assert isinstance(taken, bytes)
    assert taken == built
    assert not any(r.startswith("shared_") for r in runs)  # no subset construction for them
    assert any(r.startswith("shared_") for r in all_runs)


def test_limits_refuse_a_product_machine_as_its_subset_construction_does(monkeypatch):
    """The limits count every subset construction's states and transitions together, and a
    product's operands' on their own: the grids cross the point where the first is passed
    (the URL's tiled length operand, `chains.py`: 1,680 states, 16,910 transitions)."""
    schema = SCHEMAS[1]
    outcomes = []
    grid = [{"states": s} for s in range(1500, 1900, 25)]
    grid += [{"transitions": t} for t in range(15_000, 19_000, 200)]
    for override in grid:
        limits = DEFAULT_LIMITS.with_overrides(override)
        taken, _ = _compile(monkeypatch, schema, adopt=True, limits=limits)
        built, _ = _compile(monkeypatch, schema, adopt=False, limits=limits)
        assert (taken if isinstance(taken, str) else "ok") == (
            built if isinstance(built, str) else "ok"
        ), override
        outcomes.append(built if isinstance(built, str) else "ok")
    assert outcomes.count("E_LIMIT_STATES") >= 4 and outcomes.count("E_LIMIT_TRANSITIONS") >= 4
    assert "ok" in outcomes


def test_a_long_pattern_string_is_a_machine_with_the_same_strings():
    artifact = trgc.compile_schema(SCHEMAS[1], whitespace="compact")
    names = artifact.metadata["machines"]
    assert sum(n.startswith("shared_") for n in names) == 2
    host = "a" * 72  # "https://" + 72 = 80 characters
    assert accepts(artifact, '{"u":"https://' + host + '"}')
    assert not accepts(artifact, '{"u":"https://' + host + 'a"}')
    assert accepts(artifact, '{"u":"http://a.b","m":"ab@cd"}')
    assert not accepts(artifact, '{"u":"http://a.b","m":"a@cd"}')  # minLength 5
    assert not accepts(artifact, '{"u":"ftp://a.b"}')
    assert not accepts(artifact, '{"u":"http://A"}')
    m = "a" * 34 + "@" + "b" * 35
    assert accepts(artifact, '{"u":"http://x","m":"' + m + '"}')
    assert not accepts(artifact, '{"u":"http://x","m":"' + m + 'b"}')


def test_equal_product_machines_are_one():
    artifact = trgc.compile_schema(SCHEMAS[2], whitespace="compact")
    names = artifact.metadata["machines"]
    assert sum(n.startswith("shared_") for n in names) == 1  # one URL machine, called thrice


def test_a_short_pattern_string_stays_in_place():
    short = {"type": "object", "properties": {"u": URL | {"maxLength": 64}}}
    names = trgc.compile_schema(short).metadata["machines"]
    assert names == ["root"]


def _spliced(table: Table) -> Nfa:
    """The NFA `nfa._Builder._splice` makes of a table: its states, one edge per segment with
    a transition, and an epsilon from each accepting state to a final state after them."""
    n = table.n_states
    edges = [
        tuple(
            (int(lo), int(hi), int(t))
            for lo, hi, t in zip(table.seg_lo, table.seg_hi, table.next[s], strict=True)
            if t >= 0
        )
        for s in range(n)
    ]
    eps = [(n,) if a else () for a in table.accepting.tolist()]
    return Nfa.of_targets([*eps, ()], [*edges, ()], 0, n)


def _same_accounting(table: Table, rng: random.Random) -> None:
    """Adopting `table` and the subset construction of its spliced NFA leave the same running
    totals, or refuse alike (code and message), from any totals before under any limits."""
    atoms = int(((table.next >= 0) @ (table.seg_hi - table.seg_lo + 1)).sum())
    for _ in range(12):
        before = (rng.randrange(0, 40), rng.randrange(0, 400))
        limits = DEFAULT_LIMITS.with_overrides(
            {
                "states": before[0] + rng.randrange(0, table.n_states + 3),
                "transitions": before[1] + rng.randrange(0, atoms + 3),
            }
        )
        outcomes = []
        for take in (adopt_table, None):
            counter = Counter(*before)
            try:
                if take is None:
                    determinize_table(
                        _spliced(table), rule="r", limits=limits, budget=Budget(10**9),
                        counter=counter,
                    )  # fmt: skip
                else:
                    take(table, rule="r", limits=limits, counter=counter)
                outcomes.append((counter.states, counter.transitions))
            except TrgcError as error:
                outcomes.append((error.code, error.message))
        assert outcomes[0] == outcomes[1], (before, limits.states, limits.transitions)


@pytest.mark.parametrize("seed", range(30))
def test_adopting_a_table_counts_as_its_subset_construction(seed):
    rng = random.Random(seed)
    operands = [(random_nfa(rng, size=12), False), (random_nfa(rng, size=12), rng.random() < 0.4)]
    table = boolean.product(
        operands, _alphabet(), what="t", limits=DEFAULT_LIMITS, budget=Budget(10**9)
    )
    _same_accounting(table, rng)


def test_adopting_a_schema_product_counts_as_its_subset_construction(monkeypatch):
    """The products of `SCHEMAS[1]`, whose segments span many atoms (`[a-z]`)."""
    tables: list[Table] = []
    real_build = machines.build_nfa

    def build(*args, **kwargs):
        out = real_build(*args, **kwargs)
        if out[0].table is not None:
            tables.append(out[0].table)
        return out

    monkeypatch.setattr(machines, "build_nfa", build)
    trgc.compile_schema(SCHEMAS[1], whitespace="compact")
    assert len(tables) == 2 and all((t.seg_hi > t.seg_lo).any() for t in tables)
    for i, table in enumerate(tables):
        _same_accounting(table, random.Random(i))
