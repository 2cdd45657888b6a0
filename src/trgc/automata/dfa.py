"""Subset construction: NFA over atoms -> DFA over atoms (calls are ordinary symbols here).

A DFA state is the set of *important* NFA states (those with a labelled edge, or the final
state) in the epsilon closure; two closures with the same important states behave the same.
States are numbered in discovery order of a FIFO walk from the start, atoms ascending, so
the result is deterministic. Every new state and transition is checked against the limits
(a running total shared by all machines, in `Counter`) *before* it is created, and every
step is charged to the budget, so exponential blow-ups fail fast with `E_LIMIT_STATES`.
"""

from __future__ import annotations

from dataclasses import dataclass

from trgc.automata.nfa import Nfa
from trgc.limits import Budget, Limits, check_limit


@dataclass
class Dfa:
    """`delta[s]` maps atom -> target state; state 0 is the start."""

    delta: list[dict[int, int]]
    accepting: list[bool]

    @property
    def n_states(self) -> int:
        return len(self.delta)

    @property
    def n_transitions(self) -> int:
        return sum(len(d) for d in self.delta)


@dataclass
class Counter:
    """Running totals across machines, checked against `limits.states` / `limits.transitions`."""

    states: int = 0
    transitions: int = 0


def _closure(nfa: Nfa, sources, important: list[bool], budget: Budget) -> frozenset[int]:
    """Important states epsilon-reachable from `sources` (one search, each state visited once)."""
    seen = set(sources)
    todo = list(seen)
    out = []
    eps = nfa.eps
    while todo:
        p = todo.pop()
        if important[p]:
            out.append(p)
        for t in eps[p]:
            if t not in seen:
                seen.add(t)
                todo.append(t)
    budget.charge(len(seen), "epsilon closure")
    return frozenset(out)


def determinize(nfa: Nfa, *, rule: str, limits: Limits, budget: Budget, counter: Counter) -> Dfa:
    """The DFA of `nfa` by subset construction (reachable states only)."""
    important = [bool(nfa.edges[q]) or q == nfa.final for q in range(nfa.n_states)]
    single: dict[int, frozenset[int]] = {}  # closures of one state, the common case

    def closure(raw: frozenset[int]) -> frozenset[int]:
        if len(raw) != 1:
            return _closure(nfa, raw, important, budget)
        (q,) = raw
        found = single.get(q)
        if found is None:
            found = single[q] = _closure(nfa, raw, important, budget)
        return found

    what = f"the automaton of rule {rule}"
    start = closure(frozenset((nfa.start,)))
    ids: dict[frozenset[int], int] = {start: 0}
    subsets = [start]
    delta: list[dict[int, int]] = []
    accepting: list[bool] = []
    check_limit("states", counter.states + 1, limits.states, what)
    counter.states += 1
    index = 0
    while index < len(subsets):
        subset = subsets[index]
        index += 1
        accepting.append(nfa.final in subset)
        moves: dict[int, set[int]] = {}
        for q in subset:
            for lo, hi, t in nfa.edges[q]:
                budget.charge(hi - lo + 1, "subset construction")
                for a in range(lo, hi + 1):
                    targets = moves.get(a)
                    if targets is None:
                        moves[a] = {t}
                    else:
                        targets.add(t)
        row: dict[int, int] = {}
        memo: dict[frozenset[int], int] = {}
        for a in sorted(moves):
            raw = frozenset(moves[a])
            target = memo.get(raw)
            if target is None:
                closed = closure(raw)
                target = ids.get(closed)
                if target is None:
                    check_limit("states", counter.states + 1, limits.states, what)
                    counter.states += 1
                    target = ids[closed] = len(subsets)
                    subsets.append(closed)
                memo[raw] = target
            row[a] = target
        check_limit("transitions", counter.transitions + len(row), limits.transitions, what)
        counter.transitions += len(row)
        delta.append(row)
    return Dfa(delta, accepting)
