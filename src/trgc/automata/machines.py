"""The automata driver: grammar + analysis -> canonical byte tables (`build_tables`).

Pipeline (docs/compilation.md): alphabet of byte atoms -> per machine (the start rule, every
recursive rule, shared rule and counted repetition it calls) Thompson NFA with non-recursive
rules inlined -> subset construction -> minimisation -> productivity trim -> FIRST ->
minimisation -> FOLLOW -> predictive check and call resolution -> byte classes -> canonical
numbering. Machines are
numbered breadth-first from the start rule (machine 0) in order of first call; states
breadth-first from state 0 with symbols ascending; call edges in order of first use. No
set or dict order reaches the output, so the tables are identical under any PYTHONHASHSEED.

Every stage after the NFA works on dense numpy tables (`dfa.Table` over each machine's
segments, then `predictive.Resolved` over the grammar's input atoms), and machines with the
same body are built once (`reuse.py`); the operations charged are those of building each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from trgc.automata import graph_kernel, jit
from trgc.automata.alphabet import Alphabet, build_alphabet
from trgc.automata.byteclasses import byte_classes
from trgc.automata.dfa import NONE, Counter, Table, adopt_table, determinize_table
from trgc.automata.foresight import certain_conflicts
from trgc.automata.grouping import sort_groups
from trgc.automata.minimize import minimize_table
from trgc.automata.nfa import RuleInfo, build_nfa, is_plain
from trgc.automata.predictive import (
    Conflicts,
    Resolved,
    columns,
    drop_empty_calls,
    first_sets,
    follow_sets,
    resolve,
    trim_unproductive,
)
from trgc.automata.reuse import Carried, MachineMemo, ProductMemo, StructureKeys
from trgc.errors import Span, TrgcError
from trgc.grammar.ast import K_REPEAT, Grammar, Rule
from trgc.limits import Budget, Limits, check_limit

NO_ACTION = NONE
# machine kinds (the numbers of `trgc.artifact.model`)
RULE, SHARED, REPEAT = 0, 1, 2


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
    kind: int = RULE  # RULE (counts toward max_depth), SHARED or REPEAT
    call_bounds: np.ndarray | None = None  # int32[n_calls, 2]: (rep_min, rep_max) of a repeat

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
    machine_rules: tuple[str, ...]  # name of each machine
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def n_symbols(self) -> int:
        return self.n_classes + len(self.specials)


@dataclass(frozen=True)
class Spec:
    """Where a machine comes from: a rule (RULE, SHARED) or a counted repetition (REPEAT)."""

    name: str
    root: int  # the AST node its NFA is built from
    kind: int
    rule: str  # the grammar rule it is written in (error places)
    low: int = 0  # REPEAT: the bounds as written
    high: int | None = None
    node: int = -1  # REPEAT: the repetition node (its body is `root`)


def build_tables(
    grammar: Grammar, analysis: AnalysisLike, *, limits: Limits, budget: Budget
) -> Tables:
    """Compile an analysed grammar into canonical tables (see the module docstring).

    Counted repetitions and shared rules are tried as machines first; when the predictive
    check finds a conflict that involves one of them, those are expanded (copied or inlined,
    which is always exact) and the grammar is compiled again. Shared rules whose conflict is
    certain from the AST alone are inlined before the first attempt (`foresight.py`). Each
    retry expands at least one more construct, so this ends; every attempt charges the same
    operation budget.

    Raises `E_LIMIT_STATES`, `E_LIMIT_TRANSITIONS`, `E_LIMIT_OPERATIONS`,
    `E_PREDICTIVE_CONFLICT` or `E_EMPTY_LANGUAGE`.
    """
    used_before = budget.used
    rule_index = dict(analysis.rule_index)
    start = grammar.start
    if start is None:
        start = grammar.rules[getattr(analysis, "start", 0)].name
    owners = _owners(grammar, rule_index, budget)
    expand: frozenset[int] = frozenset()
    planned_with: frozenset[str] = frozenset()  # the inlined rules `planned` was made with
    planned = _specs(grammar, analysis, rule_index, start, owners, planned_with)
    # shared rules whose call certainly conflicts: inlined from the first attempt
    inline = certain_conflicts(
        grammar,
        rule_index,
        start,
        frozenset(n for n, sp in planned.items() if sp.kind == SHARED),
        frozenset(n for n, sp in planned.items() if sp.kind != REPEAT),
        budget,
    )
    carried = Carried()
    attempts = 0
    while True:
        attempts += 1
        if inline != planned_with:  # the plan depends on nothing else
            planned_with = inline
            planned = _specs(grammar, analysis, rule_index, start, owners, inline)
        specs = planned
        info = RuleInfo(
            rule_index,
            tuple(analysis.recursive),
            tuple(analysis.nullable),
            shared=frozenset(n for n, sp in specs.items() if sp.kind == SHARED),
            repeats={sp.node: n for n, sp in specs.items() if sp.kind == REPEAT},
            expand=expand,
        )
        attempt = _attempt(grammar, info, specs, start, limits, budget, carried)
        if isinstance(attempt, Tables):
            attempt.stats["operations"] = budget.used - used_before
            attempt.stats["attempts"] = attempts
            return attempt
        conflicts, places = attempt
        involved = sorted(n for n in conflicts.involved if specs[n].kind != RULE)
        if not involved:
            raise conflicts.error(places)
        expanded = frozenset(specs[n].node for n in involved if specs[n].kind == REPEAT)
        inlined = frozenset(n for n in involved if specs[n].kind == SHARED)
        carried.inlined, carried.expanded = inlined - inline, expanded - expand
        expand |= expanded
        inline |= inlined


def _owners(grammar: Grammar, rule_index: dict[str, int], budget: Budget) -> dict[int, str]:
    """The rule each repetition node is written in (the first rule whose body holds it).

    One operation is charged per node met (a node under two parents is met twice). A stamped
    subtree (`Grammar.stamped`) meets the same nodes in every copy of its template, so its
    walk is made once (`_stamp_walk`) and each copy is charged it whole, unless that could
    reach the limit: that copy is walked node by node, to be refused at the same node."""
    owners: dict[int, str] = {}
    nodes, stamped = grammar.nodes, grammar.stamped
    walks: dict[object, tuple[int, list[int]]] = {}
    for name, i in sorted(rule_index.items(), key=lambda item: item[1]):
        stack = [grammar.rules[i].body]
        while stack:
            node_id = stack.pop()
            template = stamped.get(node_id)
            if template is not None:
                key, first, _ = template
                walk = walks.get(key)
                if walk is None:
                    walk = walks[key] = _stamp_walk(nodes, node_id, first)
                met, repeats = walk
                if budget.used + met <= budget.limit:
                    budget.used += met
                    for offset in repeats:
                        owners.setdefault(first + offset, name)
                    continue
            budget.used += 1  # one operation per node (`Budget.charge`, inlined)
            if budget.used > budget.limit:
                budget.charge(0, "machine planning")
            node = nodes[node_id]
            if node.kind == K_REPEAT and node_id not in owners:
                owners[node_id] = name
            stack.extend(node.children)
    return owners


def _stamp_walk(nodes: list, root: int, first: int) -> tuple[int, list[int]]:
    """The nodes `_owners` meets under stamped subtree `root`, and the repetitions among them
    (numbered from the subtree's `first` node)."""
    met, repeats, stack = 0, [], [root]
    while stack:
        node_id = stack.pop()
        met += 1
        node = nodes[node_id]
        if node.kind == K_REPEAT:
            repeats.append(node_id - first)
        stack.extend(node.children)
    return met, repeats


def _specs(
    grammar: Grammar,
    analysis: AnalysisLike,
    rule_index: dict[str, int],
    start: str,
    owners: dict[int, str],
    inline: frozenset[str],
) -> dict[str, Spec]:
    """Every construct that may become a machine, by machine name: the start rule, the
    recursive rules, the rules marked `shared` (unless inlined after a conflict) and every
    repetition whose bounds are not plain. Repetition machines are named after their rule
    (`value{}`, then `value{}#2`, ... in arena order; the bounds are on the call edges, so the
    size of an artifact never depends on them); rule names cannot contain braces, so the names
    never collide."""
    specs: dict[str, Spec] = {}
    numbered: dict[str, int] = {}  # repetition machines named per stem so far
    for name, i in sorted(rule_index.items(), key=lambda item: item[1]):
        rule = grammar.rules[i]
        if name == start or analysis.recursive[i]:
            specs[name] = Spec(name, rule.body, RULE, name)
        elif rule.shared and name not in inline:
            specs[name] = Spec(name, rule.body, SHARED, name)
    for node_id in sorted(owners):
        low, high, *forced = grammar.nodes[node_id].payload
        if is_plain(low, high) and not (forced and forced[0] and high != 0):
            continue
        stem = f"{owners[node_id]}{{}}"
        n = numbered.get(stem, 0) + 1  # the names before are all taken: start after them
        name = stem if n == 1 else f"{stem}#{n}"
        while name in specs:
            n += 1
            name = f"{stem}#{n}"
        numbered[stem] = n
        body = grammar.nodes[node_id].children[0]
        specs[name] = Spec(name, body, REPEAT, owners[node_id], low, high, node_id)
    return specs


def _attempt(
    grammar: Grammar,
    info: RuleInfo,
    specs: dict[str, Spec],
    start: str,
    limits: Limits,
    budget: Budget,
    carried: Carried,
) -> Tables | tuple[Conflicts, dict[str, dict]]:
    """One compilation with the given machine plan: the tables, or the conflicts found.
    Machines of the previous attempt that this plan leaves unchanged are taken from
    `carried` (charged as built); this attempt's are left there for the next."""
    alphabet = build_alphabet(grammar, tuple(specs))
    places = {name: _place(grammar.rules[info.index[sp.rule]]) for name, sp in specs.items()}
    counter = Counter()
    repeats = info.repeats or {}
    structure = StructureKeys(grammar, repeats, info.expand)
    memo = MachineMemo(limits, budget, counter, frozenset(repeats.values()), structure)
    products = ProductMemo(structure, budget, carried.products_over(alphabet))
    # stamped subtrees built once per attempt (`nfa.Fragment`); not in a retry, where a copy
    # may be expanded and another counted
    fragments: dict | None = {} if not info.expand else None
    dfas: dict[str, Table] = {}
    specials_of: dict[str, frozenset[str]] = {}
    pending = [start]
    nfa_states = 0
    dfa_states = 0
    machines = {}
    while pending:
        name = pending.pop(0)
        if name in dfas:
            continue
        spec = specs[name]
        built = carried.take(name, spec.root, spec.kind, alphabet)
        if built is not None and not memo.charge(built):
            built = None
        # the start rule is one of a kind: it is built without a key
        keyed = None if name == start else spec.root
        if built is None and keyed is not None:
            built = memo.reuse(keyed)
        if built is None:
            before = memo.start()
            nfa, specials, calls, depends = build_nfa(
                grammar,
                info,
                alphabet,
                name,
                limits=limits,
                budget=budget,
                root=spec.root,
                products=products,
                fragments=fragments,
            )
            if nfa.table is not None:  # one product, already minimal
                table = adopt_table(nfa.table, rule=name, limits=limits, counter=counter)
                sizes = (nfa.in_place, table.n_states)
            else:
                table = determinize_table(
                    nfa, rule=name, limits=limits, budget=budget, counter=counter
                )
                sizes = (nfa.in_place, table.n_states)
                table = minimize_table(table, budget)
            del nfa
            built = memo.keep(keyed, before, table, specials, calls, *sizes, depends)
        machines[name] = (spec.root, spec.kind, built)
        nfa_states += built.nfa_states
        dfa_states += built.dfa_states
        dfas[name] = built.table
        specials_of[name] = built.specials
        pending.extend(c for c in sorted(built.calls) if c not in dfas)

    cols = {name: columns(table, alphabet) for name, table in dfas.items()}
    built_tables = dfas
    dfas = trim_unproductive(dfas, cols, budget)
    if start not in dfas:
        raise TrgcError(
            "E_EMPTY_LANGUAGE",
            f"the start rule {start} matches no finite string (every path keeps calling a rule)",
            **places.get(start, {}),
            hint="give the recursion an alternative that ends",
        )
    first = first_sets(dfas, cols, budget)
    dfas = drop_empty_calls(dfas, cols, first)
    # trimming only removes edges: a machine that kept all of them is still minimal
    dfas = {
        name: table
        if table is built_tables[name] or table.n_transitions == built_tables[name].n_transitions
        else minimize_table(table, budget)
        for name, table in sorted(dfas.items())
    }
    counts = {name: _counts(specs[name], table) for name, table in dfas.items()}
    follow = follow_sets(dfas, cols, start, first, alphabet.n_input, budget, counts)
    resolved = resolve(dfas, cols, start, first, follow, alphabet, budget, counts)
    if isinstance(resolved, Conflicts):
        carried.keep(alphabet, machines, products.by_node)
        return resolved, places
    class_of_byte, representatives = byte_classes(resolved, alphabet, budget)
    same = _same_machines(resolved, {n: specs[n].kind for n in resolved}, counts, budget)
    tables = _canonical(
        resolved, start, alphabet, class_of_byte, representatives, specials_of, limits, budget,
        {name: specs[name].kind for name in resolved}, counts, same,
    )  # fmt: skip
    transitions = sum(int(np.count_nonzero(m.next != NO_ACTION)) for m in tables.machines)
    tables.stats.update(
        {
            "nfa_states": nfa_states,
            "dfa_states": dfa_states,
            "states": sum(m.n_states for m in tables.machines),
            "transitions": transitions,
            "machines": len(tables.machines),
            "classes": tables.n_classes,
        }
    )
    return tables


def _counts(spec: Spec, dfa: Table) -> tuple[int, int]:
    """(rep_min, rep_max) of a machine: for a counted repetition the iterations needed once
    it is called (at least 1; 1 when the body is nullable, since `x{m,n}` is `x{0,n}` then)
    and the most (0 = unbounded); (0, 0) for rules."""
    if spec.kind != REPEAT:
        return (0, 0)
    low = 1 if bool(dfa.accepting[0]) else max(spec.low, 1)
    return (low, 0 if spec.high is None else spec.high)


def _same_machines(
    resolved: dict[str, Resolved],
    kinds: dict[str, int],
    counts: dict[str, tuple[int, int]],
    budget: Budget,
) -> dict[str, str]:
    """Each machine's representative among the machines with the same tables: the same kind,
    acceptance and actions, calls to equivalent machines with the same bounds. The coarsest
    such partition (refined from "same kind and tables, callees aside" until stable), so the
    bodies of every `maxLength` string, or of two rules written alike, are one machine. The
    representative is the first name in sorted order. A machine's shape is its resolved table
    as bytes, each call number replaced by a number for (callee's class, return state, bounds)."""
    names = sorted(resolved)
    entries = {n: int(np.count_nonzero(resolved[n].next != NONE)) for n in names}
    call_cells = {n: resolved[n].next <= -2 for n in names}

    def partition(previous: dict[str, int] | None) -> dict[str, int]:
        codes: dict[tuple, int] = {}
        ids: dict[tuple, int] = {}
        out = {}
        for n in names:
            budget.charge(1 + entries[n], "machine sharing")
            r = resolved[n]
            table = r.next
            if r.calls:
                mapped = np.array(
                    [
                        codes.setdefault(
                            (None if previous is None else previous[c], ret, counts[c]),
                            len(codes),
                        )
                        for c, ret in r.calls
                    ],
                    dtype=np.int32,
                )
                table = table.copy()
                cells = call_cells[n]
                table[cells] = -2 - mapped[-2 - table[cells]]
            key = (kinds[n], r.accepting.tobytes(), table.shape, table.tobytes())
            if previous is not None:
                key = (previous[n], key)
            out[n] = ids.setdefault(key, len(ids))
        return out

    classes = partition(None)
    while len(set(classes.values())) < len(names):  # refining only splits: singletons are final
        refined = partition(classes)
        if len(set(refined.values())) == len(set(classes.values())):
            break
        classes = refined
    first: dict[int, str] = {}
    return {n: first.setdefault(classes[n], n) for n in names}


def _place(rule: Rule) -> dict:
    """Where a rule is, as TrgcError keyword arguments: a JSON pointer for lowered schemas,
    else its line and column."""
    if rule.pointer is not None:
        return {"pointer": rule.pointer}
    return {"span": Span(rule.line, rule.column)}


def _scan(
    r: Resolved, scan: np.ndarray, same: dict[str, str], budget: Budget, what_per_state: int
) -> tuple[list[int] | np.ndarray, list[str], int]:
    """Breadth-first order of one machine's states over the `scan` columns (a call goes to
    its return state), the callees' representatives in order of first call, and the number
    of actions in the reached states. Where the compiler's kernels run, the walk is
    `graph_kernel.layout_scan` (the same order, calls and count)."""
    sub = r.next[:, scan]
    if jit.enabled():
        returns = np.array([ret for _, ret in r.calls], dtype=np.int64)
        queue, calls, reached = graph_kernel.layout_scan(sub, returns)
        budget.charge(queue.size * what_per_state, "table layout")
        return queue, [same[r.calls[i][0]] for i in calls.tolist()], reached
    n = r.n_states
    states, cols = np.nonzero(sub != NONE)
    values = sub[states, cols].astype(np.int64)
    per_state = np.bincount(states, minlength=n)
    n_calls = len(r.calls)
    # distinct (state, action) pairs in row-major order of first use
    first, _ = sort_groups(states * (n + n_calls + 2) + values + n_calls + 2)
    first.sort()
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(states[first], minlength=n), out=offsets[1:])
    off = offsets.tolist()
    actions = values[first].tolist()
    returns = [ret for _, ret in r.calls]
    callees = [same[c] for c, _ in r.calls]
    seen = [False] * n
    seen[0] = True
    queue = [0]
    called: list[str] = []
    for s in queue:
        for action in actions[off[s] : off[s + 1]]:
            if action >= 0:
                target = action
            else:
                called.append(callees[-2 - action])
                target = returns[-2 - action]
            if not seen[target]:
                seen[target] = True
                queue.append(target)
    budget.charge(len(queue) * what_per_state, "table layout")
    return queue, called, int(per_state[queue].sum())


def _canonical(
    resolved: dict[str, Resolved],
    start: str,
    alphabet: Alphabet,
    class_of_byte: list[int],
    representatives: list[int],
    specials_of: dict[str, frozenset[str]],
    limits: Limits,
    budget: Budget,
    kinds: dict[str, int],
    counts: dict[str, tuple[int, int]],
    same: dict[str, str],
) -> Tables:
    """Number machines, states and calls breadth-first and fill the numpy tables; a call goes
    to the callee's representative (`_same_machines`) and carries the callee's bounds."""
    machine_order = [start]
    machine_number = {start: 0}
    # every machine reachable through calls, in order of first call
    orders: dict[str, list[int] | np.ndarray] = {}
    scan_atoms = _symbol_atoms(alphabet, representatives)
    scan = np.array(scan_atoms, dtype=np.int64)
    entries = 0
    index = 0
    while index < len(machine_order):
        name = machine_order[index]
        index += 1
        queue, called, actions = _scan(resolved[name], scan, same, budget, len(scan_atoms))
        entries += actions
        for callee in called:
            if callee not in machine_number:
                machine_number[callee] = len(machine_order)
                machine_order.append(callee)
        orders[name] = queue
    specials = tuple(sorted(set().union(*(specials_of[name] for name in machine_order))))
    symbol_atoms = list(representatives) + [alphabet.special_atom(name) for name in specials]
    symbols = np.array(symbol_atoms, dtype=np.int64)
    n_symbols = len(symbol_atoms)
    total_states = sum(len(q) for q in orders.values())
    check_limit("states", total_states, limits.states, "the compiled tables")
    check_limit("transitions", entries, limits.transitions, "the compiled tables")
    machines = []
    for name in machine_order:
        r = resolved[name]
        queue = np.asarray(orders[name], dtype=np.int64)
        new_id = np.full(r.n_states, NO_ACTION, dtype=np.int32)
        new_id[queue] = np.arange(queue.size, dtype=np.int32)
        budget.charge(queue.size * max(n_symbols, 1), "table layout")
        rows = r.next[queue][:, symbols]
        next_table = np.full(rows.shape, NO_ACTION, dtype=np.int32)
        shifts = rows >= 0
        next_table[shifts] = new_id[rows[shifts]]
        calls: dict[tuple[int, int, int, int], int] = {}
        cells = rows <= -2
        if cells.any():
            used = (-2 - rows[cells]).astype(np.int64)  # call indices, row-major
            first, _ = sort_groups(used)
            number = np.zeros(len(r.calls), dtype=np.int32)
            for i in used[np.sort(first)].tolist():
                callee, ret = r.calls[i]
                key = (machine_number[same[callee]], int(new_id[ret]), *counts[callee])
                number[i] = calls.setdefault(key, len(calls))
            next_table[cells] = -2 - number[used]
        call_table = np.array(list(calls), dtype=np.int32).reshape(len(calls), 4)
        machines.append(
            MachineTable(
                name,
                r.accepting[queue].copy(),
                next_table,
                np.ascontiguousarray(call_table[:, :2]),
                kinds[name],
                np.ascontiguousarray(call_table[:, 2:]),
            )
        )
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
