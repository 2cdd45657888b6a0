"""Helpers for the automata tests: parse a trg-1 source, a minimal analysis, a table walker.

The analysis here computes only what `build_tables` reads (rule index, nullable, recursive)
so that these tests do not depend on the grammar-analysis stage; `walk` is a plain
interpreter of the table semantics documented in `trgc.artifact.model`.
"""

from __future__ import annotations

from dataclasses import dataclass

from trgc.automata.machines import REPEAT, RULE, Tables, build_tables
from trgc.grammar.ast import Grammar, Kind
from trgc.grammar.parser import parse_grammar
from trgc.limits import Budget, Limits


@dataclass
class MiniAnalysis:
    rule_index: dict[str, int]
    nullable: list[bool]
    recursive: list[bool]


def _refs(grammar: Grammar, root: int) -> set[str]:
    out, todo = set(), [root]
    while todo:
        node = grammar.nodes[todo.pop()]
        if node.kind == Kind.REF:
            out.add(node.payload)
        todo.extend(node.children)
    return out


def _nullable_node(grammar: Grammar, index: int, rules_nullable: dict[str, bool]) -> bool:
    node = grammar.nodes[index]
    kind = node.kind
    if kind == Kind.EMPTY:
        return True
    if kind in (Kind.LITERAL, Kind.CLASS, Kind.SPECIAL):
        return False
    if kind == Kind.REF:
        return rules_nullable[node.payload]
    if kind == Kind.SEQ:
        return all(_nullable_node(grammar, c, rules_nullable) for c in node.children)
    if kind == Kind.ALT:
        return any(_nullable_node(grammar, c, rules_nullable) for c in node.children)
    return node.payload[0] == 0 or _nullable_node(grammar, node.children[0], rules_nullable)


def mini_analysis(grammar: Grammar) -> MiniAnalysis:
    index = grammar.rule_index()
    refs = {r.name: _refs(grammar, r.body) for r in grammar.rules}
    recursive = []
    for r in grammar.rules:
        seen, todo = set(), list(refs[r.name])
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(refs[name])
        recursive.append(r.name in seen)
    nullable = dict.fromkeys(index, False)
    changed = True
    while changed:
        changed = False
        for r in grammar.rules:
            if not nullable[r.name] and _nullable_node(grammar, r.body, nullable):
                nullable[r.name] = changed = True
    return MiniAnalysis(index, [nullable[r.name] for r in grammar.rules], recursive)


def compile_source(
    body: str, *, limits: Limits | None = None, budget: Budget | None = None
) -> Tables:
    """Compile a trg-1 source (the `%trg 1` line is added) to tables."""
    limits = limits or Limits()
    grammar = parse_grammar("%trg 1\n" + body, limits=limits)
    budget = budget or Budget(limits.operations)
    return build_tables(grammar, mini_analysis(grammar), limits=limits, budget=budget)


def symbols_of(tables: Tables, pieces) -> list[int]:
    """Table symbols of a sequence of pieces: bytes are bytes, a str is a special token's name."""
    out: list[int] = []
    for piece in pieces:
        if isinstance(piece, str):
            out.append(tables.n_classes + tables.specials.index(piece))
        else:
            out.extend(int(tables.byte_class[b]) for b in piece)
    return out


def walk(tables: Tables, *pieces, max_depth: int = 64) -> bool:
    """Does the table semantics (trgc.artifact.model) accept the pieces in order?

    Frames are (machine, state, left, needed); a call to a repeat machine pushes the counters
    its call edge's bounds give, the frame restarts at the end of an iteration on a symbol its
    state 0 handles while `left` > 0, and returns only once `needed` is 0; only rule machines
    count toward `max_depth`. Unbounded repetitions keep `left` at infinity."""
    stack = [(0, 0, 0, 0)]
    depth = 1
    for sym in symbols_of(tables, pieces):
        while True:
            m, s, left, needed = stack[-1]
            machine = tables.machines[m]
            action = int(machine.next[s, sym])
            if action >= 0:
                stack[-1] = (m, action, left, needed)
                break
            if action == -1:
                if not machine.accepting[s]:
                    return False
                if machine.kind == REPEAT:
                    if left > 0 and machine.next[0, sym] != -1:
                        stack[-1] = (m, 0, left - 1, max(needed - 1, 0))
                        continue
                    if needed:
                        return False
                if len(stack) == 1:
                    return False
                stack.pop()
                depth -= machine.kind == RULE
                continue
            k = -2 - action
            callee, ret = (int(v) for v in machine.calls[k])
            low, high = (int(v) for v in machine.call_bounds[k])
            stack[-1] = (m, ret, left, needed)
            if tables.machines[callee].kind == RULE:
                if depth >= max_depth:
                    return False
                depth += 1
            counters = (float("inf") if high == 0 else high - 1, low - 1) if low else (0, 0)
            stack.append((callee, 0, *counters))
    return all(bool(tables.machines[m].accepting[s]) and not needed for m, s, _, needed in stack)
