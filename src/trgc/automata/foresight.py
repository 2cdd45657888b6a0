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

from trgc.automata.fold import fold
from trgc.automata.nfa import is_plain
from trgc.grammar.ast import (
    K_ALT,
    K_AND,
    K_CLASS,
    K_EMPTY,
    K_LITERAL,
    K_NOT,
    K_REF,
    K_REPEAT,
    K_SEQ,
    K_SPECIAL,
    Grammar,
)
from trgc.limits import Budget

_NOTHING: frozenset = frozenset()
_READS = frozenset((K_LITERAL, K_CLASS, K_EMPTY, K_SPECIAL, K_AND, K_NOT))


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
    leading = _Leading(grammar, rule_index, budget, shared, called)
    choices = []  # (choice, the shared rules each alternative calls first)
    for i, node in enumerate(nodes):
        if node.kind == K_ALT:
            calls = [_NOTHING if _reads(nodes, c) else leading.of(c) for c in node.children]
            if any(calls):
                choices.append((i, calls))
    budget.charge(len(nodes), "machine planning")
    if not choices:
        return _NOTHING
    first = _First(grammar, rule_index, budget)
    found: dict[str, list[int]] = {}  # rule -> the choices where it conflicts
    for i, calls in choices:
        children = nodes[i].children
        heads = [first.of(c) for c in children]
        for k, names in enumerate(calls):
            others = frozenset().union(*(heads[j] for j in range(len(children)) if j != k))
            for name in names:
                if first.of(grammar.rules[rule_index[name]].body) & others:
                    found.setdefault(name, []).append(i)
    if not found:
        return _NOTHING
    # only choices a machine meets count (the arena may hold nodes no rule reaches)
    reached = _reached(grammar, rule_index, start, budget)
    return frozenset(name for name, at in found.items() if any(i in reached for i in at))


def _reached(grammar: Grammar, rule_index: dict[str, int], start: str, budget: Budget) -> set[int]:
    """The nodes reached from the start rule's body, through references, outside AND and
    NOT operands."""
    nodes, rules = grammar.nodes, grammar.rules
    seen = {rules[rule_index[start]].body}
    todo = list(seen)
    while todo:
        node = nodes[todo.pop()]
        if node.kind in (K_AND, K_NOT):
            continue
        nexts = node.children
        if node.kind == K_REF:
            nexts = (rules[rule_index[node.payload]].body,)
        for c in nexts:
            if c not in seen:
                seen.add(c)
                todo.append(c)
    budget.charge(len(seen), "machine planning")
    return seen


class _Pass:
    """A value per node (`fold`, with the subclass's `_parts` and `_combine`), memoised
    across requests; each node solved is charged one operation."""

    def __init__(self, grammar: Grammar, rule_index: dict[str, int], budget: Budget) -> None:
        self.grammar, self.rule_index, self.budget = grammar, rule_index, budget
        self.known: dict = {}

    def _value(self, node_id: int, unknown):
        before = len(self.known)
        value = fold(node_id, self._parts, self._combine, self.known, unknown)
        self.budget.charge(len(self.known) - before, "machine planning")
        return value

    def _body(self, name: str) -> int:
        """The body of rule `name`: a reference's one part."""
        return self.grammar.rules[self.rule_index[name]].body


class _Leading(_Pass):
    """The shared rules a node calls before reading anything: through the first item of a
    sequence, every alternative, the body of a repetition that is neither counted nor
    copied, and inlined rules (never into another machine)."""

    def __init__(self, grammar, rule_index, budget, shared, called) -> None:
        super().__init__(grammar, rule_index, budget)
        self.shared, self.called = shared, called

    def of(self, node_id: int) -> frozenset[str]:
        return self._value(node_id, _NOTHING)

    def _parts(self, node_id: int) -> tuple[int, ...]:
        node = self.grammar.nodes[node_id]
        kind = node.kind
        if kind == K_REF:
            return () if node.payload in self.called else (self._body(node.payload),)
        if kind == K_SEQ:
            return node.children[:1]
        if kind == K_ALT or (kind == K_REPEAT and _plain(node)):
            return node.children
        return ()

    def _combine(self, node_id: int, parts: list) -> frozenset[str]:
        node = self.grammar.nodes[node_id]
        if node.kind == K_REF and node.payload in self.shared:
            return frozenset((node.payload,))
        return frozenset().union(*parts) if parts else _NOTHING


def _reads(nodes: list, node_id: int) -> bool:
    """Does the node certainly read a byte (or match nothing) before it could call? Its
    first item, followed down sequences, is a literal, a class, ε or a product (the common
    alternative, an object member, is answered here without solving)."""
    head = nodes[node_id]
    while head.kind == K_SEQ and head.children:
        head = nodes[head.children[0]]
    return head.kind in _READS


def _plain(node) -> bool:
    """A repetition built in place (`x?`, `x*`, `x+`), not a counted machine."""
    return is_plain(*node.payload[:2]) and not node.payload[2:3]


class _First(_Pass):
    """Per node: is its language certainly non-empty, and a subset of its first bytes
    (empty unless it is). An AND or NOT operand is never entered."""

    def of(self, node_id: int) -> frozenset[int]:
        return self._value(node_id, (False, _NOTHING))[1]

    def _parts(self, node_id: int) -> tuple[int, ...]:
        node = self.grammar.nodes[node_id]
        if node.kind in (K_AND, K_NOT):
            return ()
        return (self._body(node.payload),) if node.kind == K_REF else node.children

    def _combine(self, node_id: int, parts: list) -> tuple[bool, frozenset[int]]:
        node = self.grammar.nodes[node_id]
        kind = node.kind
        if kind in (K_EMPTY, K_SPECIAL):
            return True, _NOTHING
        if kind == K_LITERAL:
            return True, frozenset((node.payload[0],))
        if kind == K_CLASS:
            return bool(node.payload), _class_heads(node.payload)
        if kind == K_REF:
            return parts[0]
        if kind == K_SEQ:
            if not all(ok for ok, _ in parts):
                return False, _NOTHING
            return True, parts[0][1] if parts else _NOTHING
        if kind == K_ALT:
            heads = [h for ok, h in parts if ok]
            return bool(heads), frozenset().union(*heads)
        if kind == K_REPEAT:
            low, high = node.payload[0], node.payload[1]
            ok, heads = parts[0]  # type: ignore[misc]
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
