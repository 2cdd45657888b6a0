"""A small builder over the arena AST used by the trj-1 lowering, with a projected state bound.

Every call appends fresh nodes. The lowering shares a node between two parents in one place
only: a join (`lower._member_body`, `automata.nfa`), where a member that may come first or
after a comma is one node under both; everywhere else the arena is a tree. JSON Schema nodes carry
line 0 / column 0; the JSON pointer of their origin is kept on the rules instead.

Each node also carries a lower bound on the NFA states its subtree needs: what the Thompson
construction (`trgc.automata.nfa`) reserves for it — a literal of n bytes n + 1, a class or a
special at least 2, an empty 1, an alternation 2 plus its branches, a sequence the sum of its
parts, `x{m,n}` n copies of x plus 2 when the compiler copies it (at most `EXPAND_STATES` copied
states), else 2 for the call to its repeat machine — where a reference counts 2 (its body is
counted in its own rule). The builder keeps the running sum over everything built for the current rule and
refuses (`E_LIMIT_STATES`) as soon as it passes the NFA ceiling of one machine, so a schema whose
automaton cannot fit is stopped after work proportional to the limit, not to the schema.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import NamedTuple

from trgc.errors import TrgcError
from trgc.grammar.ast import K_EMPTY, K_LITERAL, K_REF, K_REPEAT, Grammar, Kind, Node
from trgc.grammar.charclass import normalize

# automata.nfa.NFA_STATE_FACTOR: one machine's NFA may hold this many times the states limit
NFA_STATE_FACTOR = 4
# automata.nfa.EXPAND_STATES: a repetition whose copies would need more NFA states is counted
EXPAND_STATES = 64
# the NFA states a node of these kinds adds itself (ALT, CLASS, SPECIAL, REF: 2)
_OWN_STATES = {Kind.EMPTY: 1, Kind.SEQ: 0}


class Template(NamedTuple):
    """A stamped subtree as its first build made it, free of any arena: its nodes with
    children numbered from the template's first node, their costs, the positions of the
    suffix marks, the root's position, and the net and peak states its build added."""

    nodes: tuple[Node, ...]
    costs: tuple[int, ...]
    suffixes: tuple[int, ...]
    root: int
    states: int
    gross: int


# Templates shared by every builder of the process, (build function, key) -> Template: a
# server lowering schema after schema builds the default integer, the string unit, a date
# once. Bounded (the oldest is dropped past TEMPLATES_MAX: integer ranges are unbounded in
# number); a template is immutable once stored, and the lock only orders the writers.
TEMPLATES_MAX = 256
_templates: dict[tuple[str, str, Hashable], Template] = {}
_templates_lock = threading.Lock()


def _store(key: tuple[str, str, Hashable], template: Template) -> None:
    with _templates_lock:
        while len(_templates) >= TEMPLATES_MAX:
            del _templates[next(iter(_templates))]
        _templates[key] = template


class Builder:
    """Append-only node constructors over one `Grammar` arena."""

    __slots__ = (
        "grammar",
        "max_states",
        "states",
        "rule",
        "_cost",
        "_shapes",
        "_shape_numbers",
        "_template_shapes",
    )

    def __init__(self, grammar: Grammar, states_limit: int | None = None) -> None:
        self.grammar = grammar
        self.max_states = None if states_limit is None else NFA_STATE_FACTOR * states_limit
        self.states = 0  # NFA states needed, at least, by everything built for `rule`
        self.rule = "root"
        self._cost: dict[int, int] = {}  # node -> NFA states its subtree needs at least
        self._shapes: dict[int, int] = {}  # node -> its `shape`
        self._shape_numbers: dict[tuple, int] = {}
        self._template_shapes: dict[tuple, int] = {}  # `_stamp_key` -> its `shape`

    def begin_rule(self, name: str) -> None:
        """Start counting the nodes of rule `name` (each rule is bounded on its own)."""
        self.rule = name
        self.states = 0

    def check_room(self, states: int, what: str) -> None:
        """Refuse, before building it, a part that alone needs `states` more NFA states."""
        if self.max_states is not None and self.states + states > self.max_states:
            raise TrgcError(
                "E_LIMIT_STATES",
                f"{what}: the automaton of rule {self.rule} would need at least "
                f"{self.states + states:,} NFA states, more than {NFA_STATE_FACTOR} x the states "
                f"limit of {self.max_states // NFA_STATE_FACTOR:,}",
                hint="simplify the schema or raise it with --limit states=N",
            )

    def _add(self, kind: Kind, own: int, children: tuple[int, ...] = (), payload=None) -> int:
        """Append a node whose own NFA cost is `own` (on top of its children's). Made for
        every node of the lowering (hundreds per schema), so `check_room` and `Grammar.add`
        are inlined: a call each was a fifth of the lowering's time."""
        limit = self.max_states
        if limit is not None and self.states + own > limit:
            self.check_room(own, "the grammar built from the schema")
        nodes = self.grammar.nodes
        nodes.append(Node(kind, 0, 0, children, payload))
        node = len(nodes) - 1
        self.states += own
        cost = self._cost
        for child in children:
            own += cost.get(child, 2)
        cost[node] = own
        return node

    def stamp(self, key: Hashable, build: Callable[[Builder], int]) -> int:
        """A fresh copy of the subtree `build(self)` makes, built once per process (`Template`,
        keyed by `build`'s module and name and `key`) and then appended as a whole: the same
        nodes, in the same order, with the same costs and suffix marks as a new build (so the
        arena, and the artifact, are what calling `build` would give). `build` must be
        deterministic, depend on nothing but `key`, and use no node made outside it (a string
        body's unit: the lowering makes one per string) and no rule reference (a walk for
        references skips stamped subtrees). A copy past the state bound is built node by
        node, so the refusal is the one the plain build gives."""
        name = (build.__module__, build.__qualname__, key)
        found = _templates.get(name)
        if found is None or (
            self.max_states is not None and self.states + found.gross > self.max_states
        ):
            states, first = self.states, len(self.grammar.nodes)
            root = build(self)
            if found is None:
                _store(name, self._template(first, root, self.states - states))
                self.grammar.stamped[root] = (name, first, len(self.grammar.nodes) - first)
            return root
        nodes = self.grammar.nodes
        offset = len(nodes)
        append = nodes.append
        for node in found.nodes:  # a leaf is the template's own (immutable) node
            if node.children:
                kind, line, column, children, payload = node
                node = Node(kind, line, column, tuple([c + offset for c in children]), payload)
            append(node)
        self._cost.update(zip(range(offset, offset + len(found.costs)), found.costs, strict=True))
        self.grammar.suffixes.update([i + offset for i in found.suffixes])
        self.states += found.states
        self.grammar.stamped[found.root + offset] = (name, offset, len(found.nodes))
        return found.root + offset

    def _template(self, first: int, root: int, states: int) -> Template:
        """The nodes built from `first` on, with root `root` and net `states`, as a template."""
        nodes, cost, suffixes = self.grammar.nodes, self._cost, self.grammar.suffixes
        end = len(nodes)
        if any(c < first for node in nodes[first:end] for c in node.children):
            raise TrgcError("E_INTERNAL", "a stamped subtree uses a node made outside it")
        if any(node.kind == K_REF for node in nodes[first:end]):  # the lowering skips stamps
            raise TrgcError("E_INTERNAL", "a stamped subtree references a rule")
        return Template(
            tuple(
                Node(kind, line, column, tuple(c - first for c in children), payload)
                for kind, line, column, children, payload in nodes[first:end]
            ),
            tuple(cost[i] for i in range(first, end)),
            tuple(i - first for i in range(first, end) if i in suffixes),
            root - first,
            states,
            self._gross(first, end),
        )

    def _gross(self, first: int, end: int) -> int:
        """The states nodes `first..end` added one by one, before `seq` gave back the empties
        it dropped: no running total of their build went higher above where it started."""
        nodes, cost = self.grammar.nodes, self._cost
        return sum(
            cost[i] - sum(cost.get(c, 2) for c in nodes[i].children) for i in range(first, end)
        )

    def shape(self, root: int) -> int:
        """A number equal for two subtrees exactly when they are equal node for node (kind,
        payload, children in order, suffix marks), computed once per node. Children precede
        their parent in the arena, so the subtree is numbered in ascending order."""
        shapes = self._shapes
        found = shapes.get(root)
        if found is not None:
            return found
        nodes, suffixes, numbers = self.grammar.nodes, self.grammar.suffixes, self._shape_numbers
        stamped, by_template = self.grammar.stamped, self._template_shapes
        # the subtree's nodes without a shape, each once (marked -1 when first met); a copy
        # of a template already numbered with the same suffix marks takes its number whole
        # (copies are equal node for node, marks added after stamping aside)
        pending = [root]
        shapes[root] = -1
        for node_id in pending:
            for child in nodes[node_id].children:
                if child not in shapes:
                    if child in stamped:
                        known = by_template.get(self._stamp_key(stamped[child]))
                        if known is not None:
                            shapes[child] = known
                            continue
                    shapes[child] = -1
                    pending.append(child)
        pending.sort()
        for node_id in pending:
            kind, _, _, children, payload = nodes[node_id]
            key = (kind, payload, tuple([shapes[c] for c in children]), node_id in suffixes)
            shapes[node_id] = numbers.setdefault(key, len(numbers))
            if node_id in stamped:
                by_template.setdefault(self._stamp_key(stamped[node_id]), shapes[node_id])
        return shapes[root]

    def _stamp_key(self, template: tuple[object, int, int]) -> tuple:
        """A stamped copy's template key and suffix marks (numbered from its first node): two
        copies with equal ones have equal shapes."""
        key, first, size = template
        marks = self.grammar.suffixes.intersection(range(first, first + size))
        return key, tuple(sorted([m - first for m in marks]))

    def node(self, kind: Kind, children: tuple[int, ...], payload=None) -> int:
        """A node of any kind (used to copy a subtree), costed like the named constructors."""
        if kind == K_LITERAL:
            return self._add(kind, len(payload) + 1, payload=payload)
        if kind == K_REPEAT:
            low, high, *counted = payload
            if high == 0:
                return self._add(kind, 1, children, payload)
            copies = (high if high is not None else max(low, 1)) - 1
            copied = copies * self._cost.get(children[0], 2)
            # a counted repetition is a call to a repeat machine (its body is counted once,
            # above); the compiler counts instead of copying past EXPAND_STATES copied states
            own = 2 if counted or copied > EXPAND_STATES else copied + 2
            return self._add(kind, own, children, payload)
        return self._add(kind, _OWN_STATES.get(kind, 2), children, payload)

    def suffix(self, node: int) -> int:
        """`node`, marked as placed at the end of several branches (`Grammar.suffixes`)."""
        self.grammar.suffixes.add(node)
        return node

    def empty(self) -> int:
        return self.node(Kind.EMPTY, ())

    def lit(self, data: bytes | str) -> int:
        raw = data.encode("utf-8") if isinstance(data, str) else data
        if not raw:
            return self.empty()
        return self.node(Kind.LITERAL, (), raw)

    def cls(self, ranges: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> int:
        """A class over Unicode scalars; ranges are normalised (sorted, merged, surrogates cut)."""
        return self.node(Kind.CLASS, (), normalize(ranges))

    def chars(self, text: str) -> int:
        """A class of the given characters."""
        return self.cls([(ord(c), ord(c)) for c in text])

    def seq(self, *items: int) -> int:
        nodes = self.grammar.nodes
        parts = [i for i in items if nodes[i].kind != K_EMPTY]
        self.states -= len(items) - len(parts)  # the dropped empties are never compiled
        if not parts:
            return self.empty()
        if len(parts) == 1:
            return parts[0]
        return self.node(Kind.SEQ, tuple(parts))

    def alt(self, *items: int) -> int:
        if len(items) == 1:
            return items[0]
        return self.node(Kind.ALT, tuple(items))

    def rep(self, item: int, lo: int, hi: int | None, *, counted: bool = False) -> int:
        """`item{lo,hi}`; `counted` makes it a counter whatever the bounds (the counted JSON
        Schema keywords), so an artifact's shape never depends on such a bound's value."""
        if hi is not None and hi == 0:
            return self.empty()
        if lo == 1 and hi == 1 and not counted:
            return item
        payload = (lo, hi, True) if counted else (lo, hi)
        return self.node(Kind.REPEAT, (item,), payload)

    def opt(self, item: int) -> int:
        return self.rep(item, 0, 1)

    def and_(self, *items: int, origin: str = "") -> int:
        """The intersection of the items' languages (a `NOT` item is complemented within the
        others); compiled by an automata product, so the items must stay regular."""
        if len(items) == 1:
            return items[0]
        return self.node(Kind.AND, tuple(items), origin)

    def not_(self, item: int) -> int:
        """Every byte string outside the item's language: only meaningful as an `and_` operand."""
        return self.node(Kind.NOT, (item,))

    def ref(self, name: str, inlines: int | None = None) -> int:
        """A reference to rule `name`; `inlines` is the body node of a non-recursive rule the
        compiler will copy in here, so the reference costs what that body costs."""
        if inlines is None:
            return self.node(Kind.REF, (), name)
        return self._add(Kind.REF, self._cost.get(inlines, 2), payload=name)
