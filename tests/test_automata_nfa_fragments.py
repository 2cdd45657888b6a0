"""Stamped subtrees built once per compilation attempt (`nfa.Fragment`): a subtree the lowering
stamped from a template (`Grammar.stamped`: a string body's unit, a date, a number) is built
the first time and shifted for every other copy. The NFA of every machine, what it hid,
charged, used and met, every table, the stats and every refusal at a states or operations
limit are what the plain build gives, which builds every copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schema_helpers import BENCH_SUBSETS, CORPORA
from trgc.automata import machines
from trgc.automata import nfa as nfa_module
from trgc.errors import TrgcError
from trgc.grammar.analysis import analyze
from trgc.grammar.ast import Grammar, Kind, Rule
from trgc.grammar.schema import lower_schema
from trgc.limits import DEFAULT_LIMITS, Budget

BENCH = CORPORA / "jsonschemabench"
SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
SHIFTED = nfa_module._Builder._shifted  # the real one, before a test replaces it

# many copies of the stamped templates, counted and not, beside a pattern, an integer range
# (suffix marks inside: built, not shifted) and an IPv6 address (a counted repetition inside:
# built, not shifted)
PATTERNED = {
    "type": "object",
    "properties": {
        **{f"s{i}": {"type": "string"} for i in range(6)},
        **{f"d{i}": {"type": "string", "format": "date-time"} for i in range(4)},
        **{f"n{i}": {"type": "number"} for i in range(3)},
        **{f"a{i}": {"type": "string", "format": "ipv6"} for i in range(2)},
        **{f"u{i}": {"type": "string", "format": "uuid"} for i in range(2)},
        **{f"i{i}": {"type": "integer", "minimum": 0, "maximum": 150} for i in range(3)},
        "short": {"type": "string", "maxLength": 12},
        "tags": {"type": "array", "items": {"type": "string", "format": "date"}, "maxItems": 4},
        "code": {"type": "string", "pattern": "^[a-z]+-[0-9]+$", "maxLength": 20},
        "either": {"anyOf": [{"type": "string", "format": "date"}, {"type": "number"}]},
    },
    "required": ["s0", "d0"],
}
# a lighter one for the sweeps of limits
SWEPT = {
    "type": "object",
    "properties": {
        **{f"d{i}": {"type": "string", "format": "date"} for i in range(3)},
        **{f"n{i}": {"type": "number"} for i in range(2)},
        "short": {"type": "string", "maxLength": 12},
        "either": {"anyOf": [{"type": "string", "format": "date"}, {"type": "integer"}]},
    },
    "required": ["d0"],
}


def _plain(monkeypatch) -> None:
    """The plain build: no stamped subtree is kept nor shifted."""
    monkeypatch.setattr(nfa_module._Builder, "_shifted", lambda self, node, region, stack: None)


def _build(schema, monkeypatch, limits=DEFAULT_LIMITS):
    """Every NFA built (in order, with what its builder reported and charged), then the tables
    and the stats, or the refusal and the operations charged when it came. `schema` is a
    JSON Schema or a function making a `Grammar`."""
    built = []
    real = machines.build_nfa

    def recording(grammar, info, alphabet, rule, *, limits, budget, **options):
        before = budget.used
        nfa, specials, calls, depends = real(
            grammar, info, alphabet, rule, limits=limits, budget=budget, **options
        )
        rows = (list(map(tuple, nfa.eps)), list(map(tuple, nfa.edges)))
        built.append((rule, rows, nfa.start, nfa.final, nfa.hidden, specials, calls, depends,
                       before, budget.used))  # fmt: skip
        return nfa, specials, calls, depends

    monkeypatch.setattr(machines, "build_nfa", recording)
    try:
        budget = Budget(limits.operations)
        if callable(schema):
            grammar = schema()
        else:
            grammar = lower_schema(
                json.loads(json.dumps(schema)), separators="compact", limits=limits
            )
        tables = machines.build_tables(
            grammar, analyze(grammar, budget=budget), limits=limits, budget=budget
        )
    except TrgcError as error:
        return built, ("refused", error.code, str(error), budget.used)
    finally:
        monkeypatch.setattr(machines, "build_nfa", real)
    return built, (
        "built",
        [
            (m.name, m.next.tolist(), m.accepting.tolist(), m.calls.tolist(), m.kind)
            for m in tables.machines
        ],  # fmt: skip
        tables.byte_class.tolist(),
        dict(tables.stats),
    )


def _both(schema, monkeypatch, limits=DEFAULT_LIMITS):
    shifted = _build(schema, monkeypatch, limits)
    with monkeypatch.context() as plain:
        _plain(plain)
        return shifted, _build(schema, plain, limits)


def _count_shifts(monkeypatch) -> list[int]:
    """The states of every shifted copy, counted while the real `_shifted` runs."""
    shifts: list[int] = []

    def counting(self, node_id, region, stack):
        found = SHIFTED(self, node_id, region, stack)
        if found is not None:
            shifts.append(len(self.fragments[self.grammar.stamped[node_id][0]].eps))
        return found

    monkeypatch.setattr(nfa_module._Builder, "_shifted", counting)
    return shifts


def test_shifted_copies_are_the_plain_build(monkeypatch):
    shifts = _count_shifts(monkeypatch)
    shifted, plain = _both(PATTERNED, monkeypatch)
    assert shifted[1][0] == "built"
    assert shifted == plain
    # most copies were shifted, not built: the string unit, the dates, the numbers
    assert len(shifts) >= 10
    assert sum(shifts) >= 300


def test_a_retry_builds_every_copy(monkeypatch):
    """In a retry (a counted repetition copied after a conflict) one copy may be copied and
    another counted: no fragment is kept there, and the tables are still the plain ones."""
    schema = {"type": "array", "items": {"anyOf": [
        {"type": "string", "maxLength": 80}, {"type": "string", "format": "date"}]}}  # fmt: skip
    kept = []
    real = machines._attempt

    def attempt(grammar, info, *rest):
        kept.append(bool(info.expand))
        return real(grammar, info, *rest)

    monkeypatch.setattr(machines, "_attempt", attempt)
    shifted, plain = _both(schema, monkeypatch)
    assert shifted == plain
    assert True in kept  # the retry did run


def test_refusals_come_where_the_plain_build_gives_them(monkeypatch):
    """Every states and operations limit around the ones the schema needs: the same tables or
    the same refusal (code and message), whether copies are shifted or built."""
    built, (_, *_, stats) = _build(SWEPT, monkeypatch)
    # the operations before and after the largest NFA build (the start machine's), then
    # every tenth of the whole compile
    *_, before, after = max(built, key=lambda b: b[-1] - b[-2])
    window = range(before, after + 2, max(1, (after - before) // 150))
    operations, states = stats["operations"], stats["states"]
    tried = set()
    for limit in [*window, *range(20, operations, operations // 10), operations]:
        limits = DEFAULT_LIMITS.with_overrides({"operations": limit})
        shifted, plain = _both(SWEPT, monkeypatch, limits)
        assert shifted == plain, limit
        tried.add(_ending(shifted[1]))
    # every states limit whose NFA bound (`NFA_STATE_FACTOR` times it) falls within the start
    # machine's NFA, then coarser ones
    start = next(b for b in built if b[0] == "root")
    in_place = len(start[1][0]) + start[4]
    near = range(1, in_place // nfa_module.NFA_STATE_FACTOR + 2)
    for limit in [*near, *range(max(1, states // 8), 2 * states, max(1, states // 8))]:
        limits = DEFAULT_LIMITS.with_overrides({"states": limit})
        shifted, plain = _both(SWEPT, monkeypatch, limits)
        assert shifted == plain, limit
        tried.add(_ending(shifted[1]))
    assert {"built", "E_LIMIT_STATES", "E_LIMIT_OPERATIONS in NFA construction"} <= tried


def _ending(outcome: tuple) -> str:
    if outcome[0] == "built":
        return "built"
    code, message, _ = outcome[1:]
    return f"{code} in NFA construction" if "NFA construction" in message else code


def _two_copies(key: str, make) -> tuple[Grammar, list[int], list[int]]:
    """A grammar holding two stamped copies (template `key`) of `make(grammar, member)`
    over a literal `member` made first; their roots and members."""
    grammar = Grammar(start="root")
    roots, members = [], []
    for _ in range(2):
        first = len(grammar.nodes)
        members.append(grammar.add(Kind.LITERAL, 1, 1, (), b"member"))
        roots.append(make(grammar, members[-1]))
        grammar.stamped[roots[-1]] = (key, first, len(grammar.nodes) - first)
    return grammar, roots, members


def _join_copies(marked_second: bool) -> Grammar:
    """Two stamped copies (one template key) of `(c (, m)?) | m`, a join whose member `m`
    is one node under two parents, so its build hides the states of a second `m`; then the
    second copy's member again, as the alternative beside it. With `marked_second` that
    member is marked a suffix in the second copy only: its second entry reuses the fragment
    built inside the copy, which a shifted copy would not have registered."""

    def join(grammar: Grammar, member: int) -> int:
        chain = grammar.add(Kind.LITERAL, 1, 1, (), b"c")
        comma = grammar.add(Kind.LITERAL, 1, 1, (), b",")
        tail = grammar.add(Kind.SEQ, 1, 1, (comma, member))
        optional = grammar.add(Kind.REPEAT, 1, 1, (tail,), (0, 1))
        head = grammar.add(Kind.SEQ, 1, 1, (chain, optional))
        return grammar.add(Kind.ALT, 1, 1, (head, member))

    grammar, roots, members = _two_copies("join", join)
    if marked_second:
        grammar.suffixes.add(members[1])
    second = grammar.add(Kind.ALT, 1, 1, (roots[1], members[1]))
    body = grammar.add(Kind.SEQ, 1, 1, (roots[0], second))
    grammar.rules.append(Rule("root", body, 1, 1))
    return grammar


def _hand_made(make, monkeypatch) -> tuple[int, int]:
    """The grammar `make()` makes, built with copies shifted and with every copy built: the
    same; (copies shifted, states the start machine's NFA hid)."""
    shifts = _count_shifts(monkeypatch)
    shifted, plain = _both(make, monkeypatch)
    assert shifted[1][0] == "built"
    assert shifted == plain
    start = next(b for b in shifted[0] if b[0] == "root")
    return len(shifts), start[4]


@pytest.mark.parametrize("marked_second", [False, True])
def test_joins_and_marks_inside_a_copy(marked_second, monkeypatch):
    shifts, hidden = _hand_made(lambda: _join_copies(marked_second), monkeypatch)
    assert hidden > 0  # the joins' (and the suffix's when marked)
    assert shifts == (0 if marked_second else 1)


def _suffix_copies(outside_first: bool = False) -> Grammar:
    """Two stamped copies of `a m | m` with `m` marked a suffix in both: `m` is built once
    per copy, in the region the copy is entered in, and reused by the second alternative.
    The second copy is then entered twice in one region beside its `m`: the first entry
    builds its `m` there (shifted, it must too), the second and `m` itself reuse it. With
    `outside_first` the first copy's `m` is built before it, beside it: the first copy reuses
    it, so it is no template for the second, which builds its own."""

    def either(grammar: Grammar, member: int) -> int:
        grammar.suffixes.add(member)
        head = grammar.add(Kind.LITERAL, 1, 1, (), b"a")
        both = grammar.add(Kind.SEQ, 1, 1, (head, member))
        return grammar.add(Kind.ALT, 1, 1, (both, member))

    grammar, roots, members = _two_copies("suffix", either)
    again = grammar.add(Kind.ALT, 1, 1, (roots[1], roots[1], members[1]))
    first = grammar.add(Kind.ALT, 1, 1, (members[0], roots[0])) if outside_first else roots[0]
    body = grammar.add(Kind.SEQ, 1, 1, (first, again))
    grammar.rules.append(Rule("root", body, 1, 1))
    return grammar


@pytest.mark.parametrize("outside_first", [False, True])
def test_suffixes_inside_a_copy(outside_first, monkeypatch):
    shifts, hidden = _hand_made(lambda: _suffix_copies(outside_first), monkeypatch)
    # the second copy's second entry is built: its suffix is there
    assert shifts == (0 if outside_first else 1)
    assert hidden >= 4 * len(b"member")  # four reuses of a member, hidden


def test_the_state_limit_inside_a_copy(monkeypatch):
    """A schema's lowering refuses a states limit before any NFA is built (it projects the
    states), so the builder's own limit is swept on the hand-made copies: every bound from
    the first copy to past the whole NFA, the same refusal (its count of states) or NFA."""
    outcomes = set()
    for limit in range(1, 60):
        limits = DEFAULT_LIMITS.with_overrides({"states": limit})
        shifted, plain = _both(lambda: _join_copies(False), monkeypatch, limits)
        assert shifted == plain, limit
        outcomes.add(shifted[1][0] if shifted[1][0] == "built" else shifted[1][2])
    assert "built" in outcomes
    assert sum("NFA states" in outcome for outcome in outcomes) >= 3


@pytest.mark.parametrize("path", sorted(SCHEMAS.glob("*.json")), ids=lambda p: p.name)
def test_shipped_schemas(path, monkeypatch):
    shifted, plain = _both(json.loads(path.read_text()), monkeypatch)
    assert shifted == plain


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
def test_corpus_schemas(monkeypatch):
    """The first 20 schemas of every subset (refused ones too: the same refusal)."""
    shifts = _count_shifts(monkeypatch)
    shifted_in = set()
    for subset in BENCH_SUBSETS:
        for path in sorted((BENCH / subset).glob("*.json"))[:20]:
            before = len(shifts)
            shifted, plain = _both(json.loads(path.read_text()), monkeypatch)
            assert shifted == plain, f"{subset}/{path.name}"
            if len(shifts) > before:
                shifted_in.add(subset)
    assert len(shifted_in) >= 5, shifted_in
