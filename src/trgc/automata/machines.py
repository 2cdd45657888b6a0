"""The automata driver: grammar + analysis -> canonical byte tables (`build_tables`).

Pipeline (docs/compilation.md): alphabet of byte atoms -> per machine (the start rule and
every recursive rule it calls) Thompson NFA with non-recursive rules inlined -> subset
construction -> minimisation -> productivity trim -> FIRST -> minimisation -> FOLLOW ->
predictive check and call resolution -> byte classes -> canonical numbering. Machines are
numbered breadth-first from the start rule (machine 0) in order of first call; states
breadth-first from state 0 with symbols ascending; call edges in order of first use. No
set or dict order reaches the output, so the tables are identical under any PYTHONHASHSEED.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from trgc.automata.alphabet import Alphabet, build_alphabet
from trgc.automata.byteclasses import byte_classes
from trgc.automata.dfa import Counter, Dfa, determinize
from trgc.automata.minimize import minimize
from trgc.automata.nfa import RuleInfo, build_nfa
from trgc.automata.predictive import (
    Resolved,
    drop_empty_calls,
    first_sets,
    follow_sets,
    resolve,
    trim_unproductive,
)
from trgc.errors import Span, TrgcError
from trgc.grammar.ast import Grammar, Rule
from trgc.limits import Budget, Limits, check_limit

NO_ACTION = -1


class AnalysisLike(Protocol):
    """The fields of `trgc.grammar.analysis.Analysis` this stage reads."""

    rule_index: dict[str, int]
    nullable: list[bool]
    recursive: list[bool]


@dataclass(frozen=True, eq=False)
class MachineTable:
    """One machine's final table; the same fields as `trgc.artifact.model.Machine`."""

    name: str
    accepting: np.ndarray  # bool[n_states]
    next: np.ndarray  # int32[n_states, n_symbols]; >= 0 shift, -1 none/return, <= -2 call -2-k
    calls: np.ndarray  # int32[n_calls, 2]: (callee machine, return state)

    @property
    def n_states(self) -> int:
        return int(self.accepting.shape[0])


@dataclass(frozen=True, eq=False)
class Tables:
    """The compiled byte automata of one grammar, ready to be wrapped into an Artifact."""

    byte_class: np.ndarray  # uint8[256]
    n_classes: int
    specials: tuple[str, ...]  # sorted special-token names
    machines: tuple[MachineTable, ...]  # machine 0 is the start rule
    machine_rules: tuple[str, ...]  # rule name of each machine
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def n_symbols(self) -> int:
        return self.n_classes + len(self.specials)


def build_tables(
    grammar: Grammar, analysis: AnalysisLike, *, limits: Limits, budget: Budget
) -> Tables:
    """Compile an analysed grammar into canonical tables (see the module docstring).

    Raises `E_LIMIT_STATES`, `E_LIMIT_TRANSITIONS`, `E_LIMIT_OPERATIONS`,
    `E_PREDICTIVE_CONFLICT` or `E_EMPTY_LANGUAGE`.
    """
    used_before = budget.used
    rule_index = dict(analysis.rule_index)
    info = RuleInfo(rule_index, tuple(analysis.recursive), tuple(analysis.nullable))
    start = grammar.start
    if start is None:
        start = grammar.rules[getattr(analysis, "start", 0)].name
    recursive_rules = tuple(
        r.name for i, r in enumerate(grammar.rules) if info.recursive[i] and rule_index[r.name] == i
    )
    alphabet = build_alphabet(grammar, recursive_rules)
    places = {name: _place(grammar.rules[i]) for name, i in rule_index.items()}

    counter = Counter()
    dfas: dict[str, Dfa] = {}
    specials_of: dict[str, frozenset[str]] = {}
    pending = [start]
    nfa_states = 0
    dfa_states = 0
    while pending:
        name = pending.pop(0)
        if name in dfas:
            continue
        nfa, specials, calls = build_nfa(
            grammar, info, alphabet, name, limits=limits, budget=budget
        )
        nfa_states += nfa.n_states
        dfa = determinize(nfa, rule=name, limits=limits, budget=budget, counter=counter)
        del nfa
        dfa_states += dfa.n_states
        dfas[name] = minimize(dfa, budget)
        specials_of[name] = specials
        pending.extend(c for c in sorted(calls) if c not in dfas)

    built = dfas
    dfas = trim_unproductive(dfas, alphabet, budget)
    if start not in dfas:
        raise TrgcError(
            "E_EMPTY_LANGUAGE",
            f"the start rule {start} matches no finite string (every path keeps calling a rule)",
            **places.get(start, {}),
            hint="give the recursion an alternative that ends",
        )
    first = first_sets(dfas, alphabet, budget)
    dfas = drop_empty_calls(dfas, first, alphabet)
    # trimming only removes edges: a machine that kept all of them is still minimal
    dfas = {
        name: dfa if dfa.n_transitions == built[name].n_transitions else minimize(dfa, budget)
        for name, dfa in sorted(dfas.items())
    }
    follow = follow_sets(dfas, start, first, alphabet, budget)
    resolved = resolve(dfas, start, first, follow, alphabet, budget, places)
    class_of_byte, representatives = byte_classes(resolved, alphabet, budget)
    tables = _canonical(
        resolved, start, alphabet, class_of_byte, representatives, specials_of, limits, budget
    )
    transitions = sum(int(np.count_nonzero(m.next != NO_ACTION)) for m in tables.machines)
    tables.stats.update(
        {
            "nfa_states": nfa_states,
            "dfa_states": dfa_states,
            "states": sum(m.n_states for m in tables.machines),
            "transitions": transitions,
            "machines": len(tables.machines),
            "classes": tables.n_classes,
            "operations": budget.used - used_before,
        }
    )
    return tables


def _place(rule: Rule) -> dict:
    """Where a rule is, as TrgcError keyword arguments: a JSON pointer for lowered schemas,
    else its line and column."""
    if rule.pointer is not None:
        return {"pointer": rule.pointer}
    return {"span": Span(rule.line, rule.column)}


def _canonical(
    resolved: dict[str, Resolved],
    start: str,
    alphabet: Alphabet,
    class_of_byte: list[int],
    representatives: list[int],
    specials_of: dict[str, frozenset[str]],
    limits: Limits,
    budget: Budget,
) -> Tables:
    """Number machines, states and calls breadth-first and fill the numpy tables."""
    machine_order = [start]
    machine_number = {start: 0}
    # every machine reachable through calls, in order of first call
    orders: dict[str, list[int]] = {}
    scan_atoms = _symbol_atoms(alphabet, representatives)
    entries = 0
    index = 0
    while index < len(machine_order):
        name = machine_order[index]
        index += 1
        rows = resolved[name].rows
        order = {0: 0}
        queue = [0]
        position = 0
        while position < len(queue):
            s = queue[position]
            position += 1
            budget.charge(len(scan_atoms), "table layout")
            for atom in scan_atoms:
                action = rows[s].get(atom)
                if action is None:
                    continue
                entries += 1
                if isinstance(action, tuple):
                    callee, target = action
                    if callee not in machine_number:
                        machine_number[callee] = len(machine_order)
                        machine_order.append(callee)
                else:
                    target = action
                if target not in order:
                    order[target] = len(queue)
                    queue.append(target)
        orders[name] = queue
    specials = tuple(sorted(set().union(*(specials_of[name] for name in machine_order))))
    symbol_atoms = list(representatives) + [alphabet.special_atom(name) for name in specials]
    n_symbols = len(symbol_atoms)
    total_states = sum(len(q) for q in orders.values())
    check_limit("states", total_states, limits.states, "the compiled tables")
    check_limit("transitions", entries, limits.transitions, "the compiled tables")
    machines = []
    for name in machine_order:
        queue = orders[name]
        new_id = {old: new for new, old in enumerate(queue)}
        rows = resolved[name].rows
        budget.charge(len(queue) * max(n_symbols, 1), "table layout")
        next_table = np.full((len(queue), n_symbols), NO_ACTION, dtype=np.int32)
        accepting = np.zeros(len(queue), dtype=bool)
        calls: dict[tuple[int, int], int] = {}
        for new, old in enumerate(queue):
            accepting[new] = resolved[name].accepting[old]
            row = rows[old]
            for sym, atom in enumerate(symbol_atoms):
                action = row.get(atom)
                if action is None:
                    continue
                if isinstance(action, tuple):
                    key = (machine_number[action[0]], new_id[action[1]])
                    k = calls.get(key)
                    if k is None:
                        k = calls[key] = len(calls)
                    next_table[new, sym] = -2 - k
                else:
                    next_table[new, sym] = new_id[action]
        call_table = np.array(list(calls), dtype=np.int32).reshape(len(calls), 2)
        machines.append(MachineTable(name, accepting, next_table, call_table))
    n_classes = len(representatives)
    return Tables(
        byte_class=np.array(class_of_byte, dtype=np.uint8),
        n_classes=n_classes,
        specials=specials,
        machines=tuple(machines),
        machine_rules=tuple(machine_order),
        stats={},
    )


def _symbol_atoms(alphabet: Alphabet, representatives: list[int]) -> list[int]:
    """One atom per final symbol before specials are filtered: class representatives, then
    every special atom."""
    return list(representatives) + list(range(alphabet.n_byte_atoms, alphabet.n_input))
