"""Conflicts certain before any machine is built: the shared rules a retry would inline.

A shared rule is a machine of its own, called where it is referenced. When one alternative
of a choice calls it and another alternative of the same choice can begin with a byte that
it can begin with, both actions leave the same DFA state on that byte: the predictive check
always reports the overlap and the driver retries with the rule inlined
(`machines.build_tables`). Found here from the AST, such rules are inlined from the first
attempt, which no longer builds every machine only to throw them away (a schema whose
`anyOf` names two object definitions paid a whole failed attempt).

Only certain overlaps count. The first bytes used are a subset of each side's true FIRST
set: only nodes whose language is certainly non-empty contribute (an `AND` or `NOT` never
does), a recursive reference being followed contributes nothing, a class only its ASCII
part and the lead bytes of its ends. Choices are those a machine's NFA meets (reached from
the start rule without passing an `AND` or `NOT` operand, where nothing is called). So a
rule inlined here is one the retries would have inlined: the attempts left are the same
and so is every byte of the artifact (`tests/test_automata_foresight.py`).
"""

from __future__ import annotations

from trgc.automata.nfa import is_plain
from trgc.grammar.ast import Grammar, Kind
from trgc.limits import Budget

_NOTHING: frozenset[int] = frozenset()


def certain_conflicts(
    grammar: Grammar,
    rule_index: dict[str, int],
    start: str,
    shared: frozenset[str],
    called: frozenset[str],
    budget: Budget,
) -> frozenset[str]:
    """The rules of `shared` that an alternative of a choice calls first where another
    alternative can certainly begin with a byte the rule certainly begins with. `called`
    names every rule compiled as a machine of its own (the shared and the recursive ones):
    the others are inlined where referenced."""
    if not shared:
        return _NOTHING
    nodes = grammar.nodes
    reached = [i for i in _reached(grammar, rule_index, start, budget) if nodes[i].kind == Kind.ALT]
    calls = {
        i: [_leading(grammar, rule_index, shared, called, c) for c in nodes[i].children]
        for i in reached
    }
    choices = [i for i in reached if any(calls[i])]
    if not choices:
        return _NOTHING
    first = _First(grammar, rule_index, budget)
    found: set[str] = set()
    for i in choices:
        children = nodes[i].children
        heads = [first.of(c) for c in children]
        for k, names in enumerate(calls[i]):
            others = frozenset().union(*(heads[j] for j in range(len(children)) if j != k))
            for name in names:
                if first.of(grammar.rules[rule_index[name]].body) & others:
                    found.add(name)
    return frozenset(found)


def _leading(
    grammar: Grammar,
    rule_index: dict[str, int],
    shared: frozenset[str],
    called: frozenset[str],
    root: int,
) -> set[str]:
    """The shared rules node `root` calls before reading anything: through the first item of
    a sequence, every alternative, the body of a repetition that is neither counted nor
    copied, and inlined rules."""
    nodes, rules = grammar.nodes, grammar.rules
    names: set[str] = set()
    seen = {root}
    todo = [root]
    while todo:
        node = nodes[todo.pop()]
        nexts: tuple[int, ...] = ()
        if node.kind == Kind.REF:
            if node.payload in shared:
                names.add(node.payload)
            elif node.payload not in called:
                nexts = (rules[rule_index[node.payload]].body,)
        elif node.kind == Kind.SEQ:
            nexts = node.children[:1]
        elif node.kind == Kind.ALT or (
            node.kind == Kind.REPEAT and is_plain(*node.payload[:2]) and not node.payload[2:3]
        ):
            nexts = node.children
        for c in nexts:
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return names


def _reached(grammar: Grammar, rule_index: dict[str, int], start: str, budget: Budget) -> list[int]:
    """The nodes reached from the start rule's body, through references, outside AND and
    NOT operands (ascending)."""
    nodes, rules = grammar.nodes, grammar.rules
    seen = {rules[rule_index[start]].body}
    todo = list(seen)
    while todo:
        node = nodes[todo.pop()]
        if node.kind in (Kind.AND, Kind.NOT):
            continue
        nexts = node.children
        if node.kind == Kind.REF:
            nexts = (rules[rule_index[node.payload]].body,)
        for c in nexts:
            if c not in seen:
                seen.add(c)
                todo.append(c)
    budget.charge(len(seen), "machine planning")
    return sorted(seen)


class _First:
    """Per node: is its language certainly non-empty, and a subset of its first bytes
    (empty unless it is), memoised; computed without recursion (a grammar nests deeply)."""

    def __init__(self, grammar: Grammar, rule_index: dict[str, int], budget: Budget) -> None:
        self.grammar = grammar
        self.rule_index = rule_index
        self.budget = budget
        self.known: dict[int, tuple[bool, frozenset[int]]] = {}

    def of(self, node_id: int) -> frozenset[int]:
        return self._solve(node_id)[1]

    def _solve(self, root: int) -> tuple[bool, frozenset[int]]:
        nodes, rules, known = self.grammar.nodes, self.grammar.rules, self.known
        open_: set[int] = set()  # on the stack: a reference back to one contributes nothing
        stack = [root]
        while stack:
            i = stack[-1]
            if i in known:
                stack.pop()
                continue
            node = nodes[i]
            parts = node.children
            if node.kind == Kind.REF:
                parts = (rules[self.rule_index[node.payload]].body,)
            waiting = [c for c in parts if c not in known and c not in open_]
            if waiting and i not in open_ and node.kind not in (Kind.AND, Kind.NOT):
                open_.add(i)
                stack.extend(waiting)
                continue
            stack.pop()
            open_.discard(i)
            known[i] = self._combine(node, [known.get(c, (False, _NOTHING)) for c in parts])
            self.budget.charge(1, "machine planning")
        return known[root]

    @staticmethod
    def _combine(node, parts: list[tuple[bool, frozenset[int]]]) -> tuple[bool, frozenset[int]]:
        kind = node.kind
        if kind in (Kind.EMPTY, Kind.SPECIAL):
            return True, _NOTHING
        if kind == Kind.LITERAL:
            return True, frozenset((node.payload[0],))
        if kind == Kind.CLASS:
            return bool(node.payload), _class_heads(node.payload)
        if kind == Kind.REF:
            return parts[0]
        if kind == Kind.SEQ:
            if not all(ok for ok, _ in parts):
                return False, _NOTHING
            return True, parts[0][1] if parts else _NOTHING
        if kind == Kind.ALT:
            heads = [h for ok, h in parts if ok]
            return bool(heads), frozenset().union(*heads)
        if kind == Kind.REPEAT:
            low, high = node.payload[0], node.payload[1]
            ok, heads = parts[0]
            if high == 0:
                return True, _NOTHING
            return (low == 0 or ok), heads if ok else _NOTHING
        return False, _NOTHING  # AND, NOT


def _class_heads(ranges: tuple[tuple[int, int], ...]) -> frozenset[int]:
    """First bytes certainly in a class's UTF-8: every ASCII one, and the lead bytes of
    each range's two ends."""
    out: set[int] = set()
    for lo, hi in ranges:
        out.update(range(lo, min(hi, 0x7F) + 1))
        out.add(chr(lo).encode()[0])
        out.add(chr(hi).encode()[0])
    return frozenset(out)
