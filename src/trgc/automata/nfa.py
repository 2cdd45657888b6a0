"""Thompson NFA of one machine, built iteratively from the AST arena.

Edges are labelled with atom ranges (`alphabet.py`): a byte range is a run of byte atoms, a
special token or a call is a single atom. References to non-recursive rules are expanded in
place (inlined); a reference to a machine (a recursive rule, or a rule the front end marked
`shared`) is one edge on the machine's call symbol, plus an epsilon bypass when it is nullable.

Fragment invariant: every fragment has one entry state and one exit state; the exit state
has no outgoing edge when the fragment is finished and is only reached once the fragment
has matched completely. Edges into an entry are always safe; epsilon *exits* are only
added from exit states or fresh states (otherwise `x{0,n}` could leave a fragment half way).

Joins: `(c (s m)?) | m` and `(c s m) | m` with the *same node* `m` in both places (the
trj-1 lowering writes an optional member so: first, or after the members before it and a
comma) build `m` once, entered from the start or after `s`, its exit the alternation's exit:
the language of two copies. A list join `x (s x)*` with one node `x` in both places (an
array's items) builds `x` once, left to the exit or through `s` back into `x`. Joins only save
work; the builder keeps the NFA states they saved in `hidden` (`Nfa.in_place`), so that the
state limit and the choice between counting and copying a repetition are those of the plain
build.

Suffixes: a node the lowering marked (`Grammar.suffixes`: the free digits that end many
branches of an integer range) is built once per *region*, the part of the tree whose ends all
lead to one exit: a node shares its parent's region when it ends the parent (the last item of
a sequence, an alternative, an inlined rule's body), and starts a new one otherwise (an item
followed by more, a repetition's body, a join's part). Entering the fragment built before in
the region adds exactly the strings of a second copy, since every path from its exit goes on
to the region's exit and nowhere else. The states saved are counted in `hidden` as well.

Stamped subtrees: the lowering stamps its common pieces from templates (a string body's unit,
a `format`, a number: `Grammar.stamped`), so two copies of one template are equal node for
node at the same offsets and build the same states, shifted. The first copy met in a
compilation attempt is built and kept (`Fragment`: its rows, the states it hid, the operations
it charged, what it met); every other copy is that fragment appended at the end of the NFA
(rows hold steps, `target - state`, not targets, so a copy is the same row tuples again:
nothing is rebuilt), charged and counted as its build would be, and the suffixes the
first built in the region it was entered in are built in the copy's. A copy is built instead
when the first build met a product, a counted repetition, a repetition outside the range or a
suffix built outside it (what those build depends on more than the subtree), when its suffix
marks are not the template's or its suffixes are already built in its region, in a retry
(where one copy may be expanded and another counted), and when the shifted copy could reach the
states limit or the budget, so that a refusal comes where and as the plain build gives it.

Bounded repetition `x{m,n}` is *counted* (docs/compilation.md, "Counters"): its body becomes a
machine of its own whose frame carries an iteration counter, and the repetition is one call
edge, so its size does not depend on `m` or `n`. Only when copying is cheaper than a frame (at
most `EXPAND_STATES` NFA states in all), or when the counted form was found to conflict, is
`x` built once and its state range copied as a template `n - 1` times, checking the state
limit before copying.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from trgc.automata.alphabet import Alphabet
from trgc.errors import Span, TrgcError
from trgc.grammar.ast import (
    K_ALT,
    K_AND,
    K_CLASS,
    K_EMPTY,
    K_LITERAL,
    K_REF,
    K_REPEAT,
    K_SEQ,
    K_SPECIAL,
    Grammar,
    Kind,
    offsets_within,
)
from trgc.limits import Budget, Limits, check_limit

if TYPE_CHECKING:
    from trgc.automata.dfa import Table
    from trgc.automata.reuse import ProductMemo

# An NFA is allowed this many times the DFA state limit (NFAs carry many epsilon states).
NFA_STATE_FACTOR = 4
# A repetition is copied instead of counted when its copies add at most this many NFA states.
EXPAND_STATES = 64
# Bounds that are plain loops or options, never counted nor copied.
PLAIN_BOUNDS = frozenset({(0, 1), (1, 1), (0, None), (1, None)})


def is_plain(low: int, high: int | None) -> bool:
    """`x?`, `x`, `x*` and `x+`: bounds that need neither copies nor a counter."""
    return (low, high) in PLAIN_BOUNDS or high == 0


def _frozen(rows: list[list]) -> list[tuple]:
    """`rows` with every row a tuple, in place: a built NFA is read only, and most of its rows
    are empty (one shared tuple) or hold one item (a third of a list's memory). `tuple` gives
    a tuple row back as it is."""
    rows[:] = map(tuple, rows)
    return rows


@dataclass
class Nfa:
    """States 0..n-1; `edges[q]` = [(atom_lo, atom_hi, step)], `eps[q]` = [step], where a
    step is the target's distance from q (`target - q`). Relative rows do not depend on where
    a fragment sits, so a copy of one (a stamped subtree, a repetition's copies) is the same
    row objects again, not rows rebuilt with moved targets; `absolute` gives targets."""

    eps: list[Sequence[int]]
    edges: list[Sequence[tuple[int, int, int]]]
    start: int
    final: int
    hidden: int = 0  # states its joins and suffixes saved (`_Builder.hidden`)
    # the minimal DFA this NFA is, spliced (a machine whose body is an AND node: its
    # subset construction and minimisation would give this table back)
    table: Table | None = None

    @property
    def n_states(self) -> int:
        return len(self.eps)

    @property
    def in_place(self) -> int:
        """The states it would have with every join and suffix built in place."""
        return len(self.eps) + self.hidden

    def absolute(self) -> tuple[list[tuple[int, ...]], list[tuple[tuple[int, int, int], ...]]]:
        """(eps, edges) with targets, not steps: `eps[q]` = (target, ...), `edges[q]` =
        ((atom_lo, atom_hi, target), ...)."""
        return (
            [tuple([q + d for d in row]) for q, row in enumerate(self.eps)],
            [tuple([(lo, hi, q + d) for lo, hi, d in row]) for q, row in enumerate(self.edges)],
        )

    def edge_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(labelled edges per state, int64[edges, 3] of (atom_lo, atom_hi, target) in row
        order): the rows flattened and their steps turned into targets, on whole arrays."""
        n = self.n_states
        counts = np.fromiter(map(len, self.edges), dtype=np.int64, count=n)
        flat = np.fromiter(chain.from_iterable(chain.from_iterable(self.edges)), dtype=np.int64)
        flat = flat.reshape(-1, 3)
        flat[:, 2] += np.repeat(np.arange(n, dtype=np.int64), counts)
        return counts, flat

    def eps_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(epsilon edges per state, int64 targets in row order), as `edge_arrays`."""
        n = self.n_states
        counts = np.fromiter(map(len, self.eps), dtype=np.int64, count=n)
        targets = np.fromiter(chain.from_iterable(self.eps), dtype=np.int64)
        targets += np.repeat(np.arange(n, dtype=np.int64), counts)
        return counts, targets

    @classmethod
    def of_targets(cls, eps: Sequence[Sequence[int]], edges: Sequence[Sequence[tuple[int, int, int]]],
                   start: int, final: int) -> Nfa:  # fmt: skip
        """The NFA whose rows `eps` and `edges` name targets (as `absolute` gives them)."""
        return cls(
            [tuple([t - q for t in row]) for q, row in enumerate(eps)],
            [tuple([(lo, hi, t - q) for lo, hi, t in row]) for q, row in enumerate(edges)],
            start,
            final,
        )


class Fragment(NamedTuple):
    """What building a stamped subtree did (`Grammar.stamped`), kept per template key for one
    compilation attempt: its states' rows (steps, as `Nfa`'s, so a copy appends the same
    tuples), its entry and exit numbered from its first state, the states it hid, the
    operations it charged, and what it met (`_Builder.met`, a repetition numbered from the
    subtree's first node)."""

    eps: list[tuple[int, ...]]
    edges: list[tuple[tuple[int, int, int], ...]]
    entry: int
    exit: int
    hidden: int
    operations: int
    met: tuple
    marks: tuple[int, ...]  # the suffix marks inside, numbered from the subtree's first node
    # the suffixes built in the region the subtree was entered in: (node from the first,
    # entry, exit, states in place, operations)
    suffixes: tuple[tuple[int, int, int, int, int], ...]


_UNSEEN = object()  # `_Builder.fragments` holds no entry for the key


class Product(NamedTuple):
    """The minimal DFA of an AND node and what its operands use."""

    table: Table
    specials: frozenset[str]
    calls: frozenset[str]
    refs: frozenset[str]


@dataclass(frozen=True)
class RuleInfo:
    """What NFA construction needs to know about the rules and the machines.

    `shared` are the non-recursive rules compiled as machines (called, not inlined);
    `repeats` maps every repetition node that may be counted to its machine's name, and
    `expand` lists the repetition nodes that must be copied instead (the counted form
    conflicted). A builder with `expand_all` inlines every non-recursive rule and copies every
    repetition (operands of automata products must be call-free).
    """

    index: dict[str, int]  # rule name -> position in grammar.rules
    recursive: tuple[bool, ...]
    nullable: tuple[bool, ...]
    shared: frozenset[str] = frozenset()
    repeats: dict[int, str] | None = None
    expand: frozenset[int] = frozenset()

    def is_machine(self, name: str) -> bool:
        """Whether a reference to rule `name` is a call (else it is inlined)."""
        return self.recursive[self.index[name]] or name in self.shared


@dataclass(frozen=True)
class Depends:
    """The rules an NFA references and the repetition nodes it meets: inlining one of those
    rules or copying one of those repetitions may change it, nothing else (beyond its own
    subtree and the byte atoms) does."""

    refs: frozenset[str]
    repeats: frozenset[int]

    def unchanged_by(self, inlined: frozenset[str], expanded: frozenset[int]) -> bool:
        return self.refs.isdisjoint(inlined) and self.repeats.isdisjoint(expanded)


class _Builder:
    def __init__(
        self,
        grammar: Grammar,
        info: RuleInfo,
        alphabet: Alphabet,
        limits: Limits,
        budget: Budget,
        rule: str,
        *,
        expand_all: bool = False,
        products: ProductMemo | None = None,
        fragments: dict[object, Fragment | None] | None = None,
    ):
        self.grammar = grammar
        self.expand_all = expand_all
        self.products = products
        # stamped subtrees built so far, by template key (`Fragment`); None: not shifted
        self.fragments = fragments
        self.info = info
        self.alphabet = alphabet
        self.budget = budget
        self.limits = limits
        self.rule = rule
        self.max_states = limits.states * NFA_STATE_FACTOR
        self.eps: list[Sequence[int]] = []
        self.edges: list[Sequence[tuple[int, int, int]]] = []
        # what the build met, in order (`_keep` reads a stamped subtree's part of it):
        # ("special", name) for a special used, ("call", name) for a machine called, ("ref",
        # name) for a rule referenced (inlined or called), a repetition node (counted or
        # copied), ("suffix", node, region, what `suffixes` holds for it) when a suffix is
        # built and ("reused", node, region) when one built before is entered again. The
        # rules and repetitions are what the NFA depends on beyond its subtree, for
        # `build_tables` to tell which machines a retry that inlines rules or copies
        # repetitions leaves unchanged (`depends`)
        self.met: list = []
        # products and counted repetitions met: a subtree whose build met one is not a
        # `Fragment` (what they build depends on more than the subtree)
        self.irregular = 0
        self._marks: list[int] | None = None  # the suffix marks, sorted (`_marks_in`)
        # NFA states the joins and suffixes saved: limits and the choice between counting and
        # copying see the NFA as if every joined node and suffix were built in place
        self.hidden = 0
        # suffixes (`Grammar.suffixes`) built so far: (node, region) -> (entry, exit, NFA
        # states in place, operations charged); a region is the part of the tree whose
        # ends lead to one exit (`build`)
        self.suffixes: dict[tuple[int, int], tuple[int, int, int, int]] = {}
        self.regions = 0
        self.spliced: Table | None = None  # the last product spliced (`build_nfa`)

    def _reserve(self, count: int, line: int, column: int) -> None:
        total = len(self.eps) + self.hidden + count
        if total > self.max_states:
            raise TrgcError(
                "E_LIMIT_STATES",
                f"the automaton of rule {self.rule} would need {total:,} NFA states, more than "
                f"{NFA_STATE_FACTOR} x the states limit of {self.max_states // NFA_STATE_FACTOR:,}",
                span=Span(line, column),
                hint="reduce repetition counts or raise it with --limit states=N",
            )
        budget = self.budget  # `Budget.charge`, inlined: a reservation per node built
        budget.used += count
        if budget.used > budget.limit:
            budget.charge(0, "NFA construction")

    def _new(self) -> int:
        self.eps.append(())
        self.edges.append(())
        return len(self.eps) - 1

    def _eps(self, q: int, target: int) -> None:
        """An epsilon edge q -> target (stored as its step, `target - q`). A row is a tuple
        (the shared empty one for a new state, or one shared by copies) until its first edge
        is added: most states never get one, and an empty list per state would double the
        NFA's memory. A list row is never shared."""
        row = self.eps[q]
        if type(row) is list:
            row.append(target - q)
        else:
            self.eps[q] = [*row, target - q]

    def _edge(self, q: int, lo: int, hi: int, target: int) -> None:
        """A labelled edge on atoms lo..hi from q to target; rows as in `_eps`."""
        row = self.edges[q]
        if type(row) is list:
            row.append((lo, hi, target - q))
        else:
            self.edges[q] = [*row, (lo, hi, target - q)]

    def _literal(self, data: bytes) -> tuple[int, int]:
        """A chain of fresh states spelling `data`: (entry, exit)."""
        atom = self.alphabet.atom_of_byte
        s = len(self.eps)
        self.eps.extend([()] * (len(data) + 1))
        self.edges.extend([((atom[b], atom[b], 1),) for b in data])
        self.edges.append(())
        return s, s + len(data)

    def _literal_words(self, node) -> list[bytes] | None:
        """The bytes of every alternative when an ALT node is two or more plain literals (an
        enum, a oneOf of consts, a keyword list), none of them a marked suffix; else None."""
        nodes, marked = self.grammar.nodes, self.grammar.suffixes
        if len(node.children) < 2:
            return None
        words = []
        for child in node.children:
            if nodes[child].kind != K_LITERAL or child in marked:
                return None
            words.append(nodes[child].payload)
        return words

    def _trie(self, words: list[bytes], node) -> tuple[int, int]:
        """The alternation of literals `words` as a trie: one state per distinct prefix (the
        root is the entry) and one exit, entered by an epsilon edge from every prefix that is
        a whole word. A chain per word would need sum(len + 1) states: 168,892 for a oneOf of
        20,000 consts ("x0" .. "x19999"), where the trie needs 42,224. Same language, so the
        same DFA after subset construction and minimisation.

        The trie is laid out (a dict per prefix, in order of first appearance) before its
        states are reserved; its size is bounded by the literals' bytes, already in memory."""
        follow: list[dict[int, int]] = [{}]
        whole = [False]
        for word in words:
            at = 0
            for byte in word:
                nxt = follow[at].get(byte)
                if nxt is None:
                    nxt = follow[at][byte] = len(follow)
                    follow.append({})
                    whole.append(False)
                at = nxt
            whole[at] = True
        self._reserve(len(follow) + 1, node.line, node.column)
        self.budget.charge(len(words), "NFA construction")  # one walk per literal
        atom = self.alphabet.atom_of_byte
        s = len(self.eps)
        e = s + len(follow)
        self.eps.extend((len(follow) - i,) if end else () for i, end in enumerate(whole))
        self.eps.append(())
        self.edges.extend(
            tuple((atom[b], atom[b], j - i) for b, j in row.items()) for i, row in enumerate(follow)
        )
        self.edges.append(())
        return s, e

    def _byte_range(self, lo: int, hi: int) -> tuple[int, int]:
        """`_class` of a class that is one range of single bytes: a fresh entry and exit, one
        edge between them."""
        atom = self.alphabet.atom_of_byte
        s = len(self.eps)
        self.eps.extend(((), ()))
        self.edges.extend((((atom[lo], atom[hi], 1),), ()))
        return s, s + 1

    def _class(self, seqs) -> tuple[int, int]:
        """A fresh entry and exit and, for each byte-range sequence of a class, a chain of
        fresh states from one to the other spelling it (allocated in sequence order)."""
        atom = self.alphabet.atom_of_byte
        eps, edges = self.eps, self.edges
        s, e = len(eps), len(eps) + 1
        eps.extend(((), ()))
        edges.extend(((), ()))
        entry: list[tuple[int, int, int]] = []
        for seq in seqs:
            last = len(seq) - 1
            lo, hi = seq[0]
            nxt = e if last == 0 else len(eps)
            entry.append((atom[lo], atom[hi], nxt - s))
            for i in range(1, last + 1):  # state nxt, appended here
                lo, hi = seq[i]
                eps.append(())
                edges.append(((atom[lo], atom[hi], e - nxt if i == last else 1),))
                nxt += 1
        edges[s] = entry
        return s, e

    def build(self, root: int) -> Nfa:
        nodes = self.grammar.nodes
        marked = self.grammar.suffixes
        results: list[tuple[int, int]] = []
        # ("enter", node, region): a node's region is its parent's when it ends its parent
        # (the last item of a sequence, any alternative, an inlined rule's body), else new
        stamped = self.grammar.stamped if self.fragments is not None else {}
        stack: list[tuple] = [("enter", root, self._region())]
        budget = self.budget
        while stack:
            item = stack.pop()
            if item[0] == "made":  # bookkeeping, not an operation: a build charges none
                self._keep(item, results[-1])
                continue
            budget.used += 1  # one operation per item (`Budget.charge`, inlined)
            if budget.used > budget.limit:
                budget.charge(0, "NFA construction")
            if item[0] == "enter":
                _, node_id, region = item
                if node_id in marked:
                    found = self._suffix(node_id, region)
                    if found is not None:
                        self.met.append(("reused", node_id, region))
                        results.append(found)
                        continue
                    mark = (len(self.eps), self.hidden, self.budget.used)
                    stack.append(("suffix", node_id, region, *mark))
                elif node_id in stamped:
                    found = self._shifted(node_id, region, stack)
                    if found is not None:
                        results.append(found)
                        continue
                node = nodes[node_id]
                kind = node.kind
                if kind == K_EMPTY or (kind in (K_SEQ, K_ALT) and not node.children):
                    self._reserve(1, node.line, node.column)
                    s = self._new()
                    results.append((s, s))
                elif kind == K_LITERAL:
                    data: bytes = node.payload
                    self._reserve(len(data) + 1, node.line, node.column)
                    results.append(self._literal(data))
                elif kind == K_CLASS:
                    seqs = self.alphabet.class_seqs[node_id]
                    if len(seqs) == 1 and len(seqs[0]) == 1:  # one byte range (most classes)
                        self._reserve(2, node.line, node.column)
                        results.append(self._byte_range(*seqs[0][0]))
                    else:
                        self._reserve(2 + sum(map(len, seqs)) - len(seqs), node.line, node.column)
                        results.append(self._class(seqs))
                elif kind == K_SPECIAL:
                    self._reserve(2, node.line, node.column)
                    s, e = self._new(), self._new()
                    a = self.alphabet.special_atom(node.payload)
                    self._edge(s, a, a, e)
                    self.met.append(("special", node.payload))
                    results.append((s, e))
                elif kind == K_REF:
                    name: str = node.payload
                    ri = self.info.index[name]
                    self.met.append(("ref", name))
                    if self.info.is_machine(name) and not (
                        self.expand_all and not self.info.recursive[ri]
                    ):
                        self._reserve(2, node.line, node.column)
                        s, e = self._new(), self._new()
                        a = self.alphabet.call_atom(name)
                        self._edge(s, a, a, e)
                        if self.info.nullable[ri]:
                            self._eps(s, e)
                        self.met.append(("call", name))
                        results.append((s, e))
                    else:
                        stack.append(("enter", self.grammar.rules[ri].body, region))
                elif kind == K_AND:
                    results.append(self._boolean(node_id, node))
                elif kind == K_ALT and (parts := self._join_parts(node)) is not None:
                    chain, separator, member, optional = parts
                    stack.append(("join", node_id, optional))
                    stack.append(("enter", member, self._region()))
                    stack.append(("mark",))
                    stack.append(("enter", separator, self._region()))
                    stack.append(("enter", chain, self._region()))
                elif kind == K_SEQ and (parts := self._list_parts(node)) is not None:
                    item, separator = parts
                    stack.append(("list", node_id))
                    stack.append(("enter", separator, self._region()))
                    stack.append(("mark",))
                    stack.append(("enter", item, self._region()))
                    stack.append(("mark",))
                elif kind == K_ALT and (words := self._literal_words(node)) is not None:
                    results.append(self._trie(words, node))
                elif kind == K_ALT:
                    stack.append((kind, node_id, len(node.children)))
                    for child in reversed(node.children):
                        stack.append(("enter", child, region))
                elif kind == K_SEQ:
                    stack.append((kind, node_id, len(node.children)))
                    *before, last = node.children
                    stack.append(("enter", last, region))
                    for child in reversed(before):
                        stack.append(("enter", child, self._region()))
                elif kind == K_REPEAT:
                    self.met.append(node_id)
                    low, high = node.payload[:2]
                    if high == 0:
                        self._reserve(1, node.line, node.column)
                        s = self._new()
                        results.append((s, s))
                    else:
                        stack.append((K_REPEAT, node_id, len(self.eps), self.hidden))
                        stack.append(("enter", node.children[0], self._region()))
                else:  # a NOT outside an AND has no universe
                    raise TrgcError("E_INTERNAL", f"AST node kind {kind!r} here")
            elif item[0] == "mark":
                results.append((len(self.eps), self.hidden))
            elif item[0] == "suffix":
                _, node_id, region, mark, hidden, used = item
                entry, exit_ = results[-1]
                states = len(self.eps) - mark + self.hidden - hidden
                built = (entry, exit_, states, self.budget.used - used)
                self.suffixes[node_id, region] = built
                self.met.append(("suffix", node_id, region, built))
            elif item[0] == "join":
                results.append(self._join(nodes[item[1]], item[2], results))
            elif item[0] == "list":
                results.append(self._list(nodes[item[1]], results))
            elif item[0] == K_SEQ:
                count = item[2]
                frags = results[-count:]
                del results[-count:]
                for (_, e1), (s2, _) in zip(frags, frags[1:], strict=False):
                    self._eps(e1, s2)
                results.append((frags[0][0], frags[-1][1]))
            elif item[0] == K_ALT:
                count = item[2]
                frags = results[-count:]
                del results[-count:]
                node = nodes[item[1]]
                self._reserve(2, node.line, node.column)
                s, e = self._new(), self._new()
                for fs, fe in frags:
                    self._eps(s, fs)
                    self._eps(fe, e)
                results.append((s, e))
            else:
                _, node_id, mark, hidden = item
                child = results.pop()
                hidden = self.hidden - hidden  # what the body's joins and suffixes saved
                name = self._counted_name(node_id, mark, hidden)
                if name is None:
                    results.append(self._repeat(nodes[node_id], mark, hidden, child))
                else:
                    self.hidden -= hidden  # the body is dropped, and what it saved with it
                    results.append(self._count(name, nodes[node_id], mark, child))
        (start, final) = results.pop()
        return Nfa(_frozen(self.eps), _frozen(self.edges), start, final, self.hidden)

    def _region(self) -> int:
        """A new region (`build`)."""
        self.regions += 1
        return self.regions

    def _suffix(self, node_id: int, region: int) -> tuple[int, int] | None:
        """The fragment of suffix `node_id` built before in `region`, entered again: the
        paths from its exit all lead to the region's exit, so a second entry into it adds
        exactly the strings of a second copy. Counted as built in place (`hidden`) and
        charged what building it was charged."""
        found = self.suffixes.get((node_id, region))
        if found is None:
            return None
        entry, exit_, states, operations = found
        self.hidden += states
        self.budget.charge(operations, "NFA construction")
        return entry, exit_

    def _join_parts(self, node) -> tuple[int, int, int, bool] | None:
        """`(chain, separator, member, optional)` when an ALT node is a join (module
        docstring): `(chain (separator member)?) | member` or `(chain separator member) |
        member` with one `member` node in both places; else None."""
        nodes = self.grammar.nodes
        if len(node.children) != 2:
            return None
        first, member = node.children
        head = nodes[first]
        if head.kind != K_SEQ or len(head.children) != 2:
            return None
        chain, tail_id = head.children
        tail = nodes[tail_id]
        optional = tail.kind == K_REPEAT and tail.payload == (0, 1)
        if optional:
            tail = nodes[tail.children[0]]
        if tail.kind != K_SEQ or len(tail.children) != 2 or tail.children[1] != member:
            return None
        return chain, tail.children[0], member, optional

    def _join(self, node, optional: bool, results: list[tuple[int, int]]) -> tuple[int, int]:
        """The fragment of a join from its parts' fragments (the last four results: chain,
        separator, the mark before the member, member): the member entered from a fresh
        start or after the separator, left to a fresh exit; the chain's exit goes to the
        separator, or also to the exit when the member is optional."""
        (chain_s, chain_e), (sep_s, sep_e), (mark, hidden), (member_s, member_e) = results[-4:]
        del results[-4:]
        # the states of the copy not built (and of the `?` around it, which has two)
        self.hidden += len(self.eps) - mark + self.hidden - hidden + (2 if optional else 0)
        self._reserve(2, node.line, node.column)
        s, e = self._new(), self._new()
        self._eps(s, chain_s)
        self._eps(s, member_s)
        self._eps(chain_e, sep_s)
        if optional:
            self._eps(chain_e, e)
        self._eps(sep_e, member_s)
        self._eps(member_e, e)
        return s, e

    def _list_parts(self, node) -> tuple[int, int] | None:
        """`(item, separator)` when a SEQ node is a list join (module docstring): `item
        (separator item)*` with one `item` node in both places; else None."""
        nodes = self.grammar.nodes
        if len(node.children) != 2:
            return None
        item, more_id = node.children
        more = nodes[more_id]
        if more.kind != K_REPEAT or more.payload != (0, None):
            return None
        step = nodes[more.children[0]]
        if step.kind != K_SEQ or len(step.children) != 2 or step.children[1] != item:
            return None
        return item, step.children[0]

    def _list(self, node, results: list[tuple[int, int]]) -> tuple[int, int]:
        """The fragment of a list join from its parts' fragments (the last four results:
        the mark before the item, the item, the mark after it, the separator): the item,
        then the exit, or the separator and the item again."""
        (mark, hidden), (item_s, item_e), (end, end_hidden), (sep_s, sep_e) = results[-4:]
        del results[-4:]
        # the item's second copy and the two states of the `*`, for the one exit made here
        self.hidden += end - mark + end_hidden - hidden + 1
        self._reserve(1, node.line, node.column)
        e = self._new()
        self._eps(item_e, e)
        self._eps(item_e, sep_s)
        self._eps(sep_e, item_s)
        return item_s, e

    def _counted_name(self, node_id: int, mark: int, hidden: int) -> str | None:
        """The machine name when repetition `node_id`, whose body was just built from state
        `mark` on (and whose joins and suffixes saved `hidden` more), is to be counted; None
        when it is copied."""
        repeats = self.info.repeats or {}
        name = repeats.get(node_id)
        if name is None or self.expand_all or node_id in self.info.expand:
            return None
        low, high, *forced = self.grammar.nodes[node_id].payload
        copies = (high if high is not None else max(low, 1)) - 1
        if forced and forced[0]:
            return name
        return name if copies * (len(self.eps) - mark + hidden) > EXPAND_STATES else None

    def _count(self, name: str, node, mark: int, child: tuple[int, int]) -> tuple[int, int]:
        """A counted repetition: the body built from `mark` on is dropped (it is built again
        as machine `name`) and replaced by one call edge, bypassed when zero iterations are
        possible (a zero minimum or a nullable body)."""
        self.irregular += 1
        nullable = self._reaches(child[0], child[1], mark)
        del self.eps[mark:]
        del self.edges[mark:]
        self._reserve(2, node.line, node.column)
        s, e = self._new(), self._new()
        a = self.alphabet.call_atom(name)
        self._edge(s, a, a, e)
        if node.payload[0] == 0 or nullable:
            self._eps(s, e)
        self.met.append(("call", name))
        return s, e

    def _reaches(self, start: int, end: int, mark: int) -> bool:
        """Is `end` epsilon-reachable from `start` (within states `mark`.. of one fragment)?"""
        seen = {start}
        todo = [start]
        while todo:
            q = todo.pop()
            if q == end:
                return True
            for d in self.eps[q]:
                t = q + d
                if t not in seen and t >= mark:
                    seen.add(t)
                    todo.append(t)
        self.budget.charge(len(seen), "NFA construction")
        return False

    def _boolean(self, node_id: int, node) -> tuple[int, int]:
        """An AND node: its product (`_product`) spliced in as a fragment: a fresh exit after
        the accepting states. A product built before in this attempt from an equal subtree
        (`ProductMemo`) is taken, charged what building it cost."""
        self.irregular += 1
        memo = self.products
        found = None if memo is None else memo.reuse(node_id)
        if found is None:
            before = self.budget.used
            found = self._product(node)
            if memo is not None:
                memo.keep(node_id, found, self.budget.used - before)
        dfa, specials, calls, refs = found
        self.met.extend([("special", name) for name in sorted(specials)])
        self.met.extend([("call", name) for name in sorted(calls)])
        self.met.extend([("ref", name) for name in sorted(refs)])
        self.spliced = dfa
        return self._splice(dfa, node)

    def _sub(self, *, expand_all: bool = False) -> _Builder:
        """A builder of its own for a part built apart (an operand of a product), over the
        same grammar, alphabet, limits, budget and products."""
        return _Builder(
            self.grammar,
            self.info,
            self.alphabet,
            self.limits,
            self.budget,
            self.rule,
            expand_all=expand_all,
            products=self.products,
        )

    def _splice(self, dfa: Table, node) -> tuple[int, int]:
        """A DFA as a fragment: its states, then a fresh exit after the accepting ones. The
        DFA's start is the entry (edges into an entry are safe; no epsilon leaves it). Each
        run of adjacent segments a row sends to one target is one edge, found on whole
        arrays (a product of a pattern with a length bound splices 17,000 states)."""
        n = dfa.n_states
        self._reserve(n + 1, node.line, node.column)
        base = len(self.eps)
        exit_ = base + n
        nxt = dfa.next
        valid = nxt >= 0
        adjacent = dfa.seg_lo[1:] == dfa.seg_hi[:-1] + 1
        # column j continues the run of column j - 1
        goes_on = np.zeros_like(valid)
        goes_on[:, 1:] = valid[:, 1:] & valid[:, :-1] & (nxt[:, 1:] == nxt[:, :-1]) & adjacent
        ends = valid.copy()
        ends[:, :-1] &= ~goes_on[:, 1:]
        state, first = np.nonzero(valid & ~goes_on)
        last = np.nonzero(ends)[1]
        runs = list(
            zip(
                dfa.seg_lo[first].tolist(),
                dfa.seg_hi[last].tolist(),
                (nxt[state, first].astype(np.int64) - state).tolist(),  # steps
                strict=True,
            )
        )
        offsets = np.concatenate([[0], np.cumsum(np.bincount(state, minlength=n))]).tolist()
        self.edges.extend([tuple(runs[offsets[s] : offsets[s + 1]]) for s in range(n)])
        self.edges.append(())
        self.eps.extend([(n - i,) if a else () for i, a in enumerate(dfa.accepting.tolist())])
        self.eps.append(())
        return base, exit_

    def _product(self, node) -> Product:
        """Each operand of an AND node (a NOT's item) built as its own call-free NFA over the
        same alphabet, and their minimal product (`boolean.product`), with the specials,
        calls and rules the operands use. An operand inlines every non-recursive rule and
        copies every repetition whatever the machine plan says, so a retry's plan (what it
        inlines or copies) never changes a product: its repetitions are not recorded in
        its `met`. A bounded repetition at an operand's top (alone or in a sequence) is
        tiled from its body's table instead of copied (`_tiled`)."""
        from trgc.automata.boolean import product

        operands = []
        specials: set[str] = set()
        calls: set[str] = set()
        refs: set[str] = set()
        what = node.payload or f"rule {self.rule}"
        for child in node.children:
            negated = self.grammar.nodes[child].kind == Kind.NOT
            inner = self.grammar.nodes[child].children[0] if negated else child
            subs: list[_Builder] = []
            operand = self._tiled(inner, subs, what)
            if operand is None:
                subs = [self._sub(expand_all=True)]  # a tiling given up: only this build counts
                operand = subs[0].build(inner)
            operands.append((operand, negated))
            for sub in subs:
                specials |= sub.names("special")
                calls |= sub.names("call")
                refs |= sub.names("ref")
        dfa = product(operands, self.alphabet, what=what, limits=self.limits, budget=self.budget)
        return Product(dfa, frozenset(specials), frozenset(calls), frozenset(refs))

    def _tiled(self, node_id: int, subs: list[_Builder], what: str) -> Table | None:
        """An operand that is a bounded repetition, or a sequence holding one, as a DFA tiled
        from its parts' minimal tables (`chains.py`) instead of an NFA of copies; None when it
        is neither or tiling is not exact. Each part is built by a builder of its own, added to
        `subs` (what they used is the operand's)."""
        from trgc.automata import chains
        from trgc.automata.minimize import minimal_table

        nodes = self.grammar.nodes
        node = nodes[node_id]
        parts = list(node.children) if node.kind == Kind.SEQ else [node_id]
        if not any(_bounded_repeat(nodes[p]) for p in parts):
            return None

        def table_of(part: int) -> Table:
            sub = self._sub(expand_all=True)
            subs.append(sub)
            return minimal_table(sub.build(part), what=what, limits=self.limits, budget=self.budget)

        tables = []
        for part in parts:
            p = nodes[part]
            if not _bounded_repeat(p):
                tables.append(table_of(part))
                continue
            low, high = p.payload[:2]
            body = table_of(p.children[0])
            where = f"the automaton of {what}"
            check_limit("states", chains.tiled_states(body, high), self.limits.states, where)
            check_limit(
                "transitions", chains.tiled_transitions(body, high), self.limits.transitions, where
            )
            table = chains.repeat(body, low, high, self.budget)
            if table is None:
                return None
            tables.append(table)
        if len(tables) == 1:
            return tables[0]
        states = sum(t.n_states for t in tables)
        check_limit("states", states, self.limits.states, f"the automaton of {what}")
        return chains.concat(tables, self.budget)

    def names(self, what: str) -> frozenset[str]:
        """The names met of one kind (`met`): "special", "call" or "ref"."""
        return frozenset([m[1] for m in self.met if type(m) is tuple and m[0] == what])

    def _shifted(self, node_id: int, region: int, stack: list[tuple]) -> tuple[int, int] | None:
        """The fragment of stamped subtree `node_id` (`Grammar.stamped`), entered in `region`,
        as a shifted copy of the `Fragment` of its template, with everything its build would
        have done besides: states hidden, operations charged, specials, calls and repetitions
        met, suffixes built in `region`. None when it is to be built: the first of its
        template (a `made` item then keeps it, `_keep`), one of a template not kept, one whose
        suffix marks differ from the template's, one whose suffixes `region` already holds,
        or one that could reach the state limit or the budget (so the refusal is the plain
        build's)."""
        key, first, size = self.grammar.stamped[node_id]
        fragment = self.fragments.get(key, _UNSEEN)
        if fragment is None:
            return None
        if fragment is _UNSEEN:
            stack.append(("made", key, first, size, len(self.eps), self.hidden, self.budget.used,
                          self.irregular, len(self.met), region, self.regions))  # fmt: skip
            return None
        base = len(self.eps)
        budget = self.budget
        if (
            base + self.hidden + len(fragment.eps) + fragment.hidden > self.max_states
            or budget.used + fragment.operations > budget.limit
            or self._marks_in(first, size) != fragment.marks
            or any((node + first, region) in self.suffixes for node, *_ in fragment.suffixes)
        ):
            return None
        budget.used += fragment.operations
        self.hidden += fragment.hidden
        self.eps.extend(fragment.eps)  # relative rows: the copy is the same tuples
        self.edges.extend(fragment.edges)
        # a repetition inside the subtree is numbered from its first node
        self.met.extend([m + first if type(m) is int else m for m in fragment.met])
        for node, entry, exit_, states, operations in fragment.suffixes:
            built = (entry + base, exit_ + base, states, operations)
            self.suffixes[node + first, region] = built
            self.met.append(("suffix", node + first, region, built))
        return fragment.entry + base, fragment.exit + base

    def _keep(self, item: tuple, built: tuple[int, int]) -> None:
        """The `Fragment` of a stamped subtree whose build (`built`, its entry and exit) just
        ended, from the `made` item pushed before it. None for its template when the build
        met a product, a counted repetition or a repetition outside the subtree, or a suffix
        outside it or not built in it: a copy then depends on more than its own nodes.
        Suffixes in the regions of the subtree's own are never entered again once it ends;
        those built in the region it was entered in are kept, to be built in the region a
        copy is entered in."""
        _, key, first, size, mark, hidden, used, irregular, met, region, regions = item
        if self.irregular != irregular:
            self.fragments[key] = None
            return
        moved: list = []
        suffixes: list[tuple[int, int, int, int, int]] = []
        for m in self.met[met:]:
            if type(m) is int:
                if not first <= m < first + size:
                    self.fragments[key] = None  # a repetition outside: not one per copy
                    return
                moved.append(m - first)
            elif m[0] in ("suffix", "reused"):
                node, at = m[1], m[2]
                if at > regions:  # a region of the subtree's own
                    continue
                if at != region or not first <= node < first + size:
                    self.fragments[key] = None
                    return
                if m[0] == "reused":  # built outside this build: its copy would not be
                    if not any(node - first == s[0] for s in suffixes):
                        self.fragments[key] = None
                        return
                    continue
                entry, exit_, states, operations = m[3]
                suffixes.append((node - first, entry - mark, exit_ - mark, states, operations))
            else:
                moved.append(m)
        self.fragments[key] = Fragment(
            list(map(tuple, self.eps[mark:])),  # a list row may still grow here: copied
            list(map(tuple, self.edges[mark:])),
            built[0] - mark,
            built[1] - mark,
            self.hidden - hidden,
            self.budget.used - used,
            tuple(moved),
            self._marks_in(first, size),
            tuple(suffixes),
        )

    def _marks_in(self, first: int, size: int) -> tuple[int, ...]:
        """The suffix marks of nodes `first .. first + size - 1`, numbered from `first`."""
        marks = self._marks
        if marks is None:
            marks = self._marks = sorted(self.grammar.suffixes)
        return offsets_within(marks, first, size)

    def _repeat(self, node, mark: int, hidden: int, child: tuple[int, int]) -> tuple[int, int]:
        """`child{low,high}` from the child's state range [mark, len) copied as a template
        (each copy saves the `hidden` states its joins and suffixes saved)."""
        low, high = node.payload[:2]
        count = high if high is not None else max(low, 1)
        size = len(self.eps) - mark
        self._reserve((count - 1) * (size + hidden) + 2, node.line, node.column)
        self.hidden += (count - 1) * hidden
        eps, edges = self.eps, self.edges
        instances = [child]
        if count > 1:  # `x?`, `x*` and `x+` copy nothing: their body is not even looked at
            # rows shared by the copies are tuples (`_eps` replaces one, never appends to it)
            template_eps = eps[mark : mark + size] = list(map(tuple, eps[mark : mark + size]))
            template_edges = edges[mark : mark + size] = list(map(tuple, edges[mark : mark + size]))
            # one operation per state and per labelled edge copied, charged a copy at a time
            per_copy = size + sum(map(len, template_edges))
            for _ in range(count - 1):
                delta = len(eps) - mark
                self.budget.charge(per_copy, "NFA construction")
                eps.extend(template_eps)  # relative rows: a copy is the same tuples
                edges.extend(template_edges)
                instances.append((child[0] + delta, child[1] + delta))
        s, e = self._new(), self._new()
        junction = s
        for i, (is_, ie) in enumerate(instances):
            if i >= low:
                self._eps(junction, e)
            self._eps(junction, is_)
            junction = ie
        self._eps(junction, e)
        if high is None:
            last_start, last_end = instances[-1]
            self._eps(last_end, last_start)
        return s, e


def build_nfa(
    grammar: Grammar,
    info: RuleInfo,
    alphabet: Alphabet,
    rule: str,
    *,
    limits: Limits,
    budget: Budget,
    root: int | None = None,
    products: ProductMemo | None = None,
    fragments: dict[object, Fragment | None] | None = None,
) -> tuple[Nfa, frozenset[str], frozenset[str], Depends]:
    """The NFA of machine `rule`: the body of that rule, or the subtree at `root` (a counted
    repetition's body), with non-recursive references inlined. `products` shares the
    automata products of AND nodes between the machines of one compilation attempt.

    Returns the NFA, the special names it uses, the machines it calls and what it depends on.
    """
    builder = _Builder(
        grammar, info, alphabet, limits, budget, rule, products=products, fragments=fragments
    )
    if root is None:
        root = grammar.rules[info.index[rule]].body
    nfa = builder.build(root)
    if grammar.nodes[root].kind == Kind.AND:
        nfa.table = builder.spliced
    repeats = frozenset([m for m in builder.met if type(m) is int])
    depends = Depends(builder.names("ref"), repeats)
    return nfa, builder.names("special"), builder.names("call"), depends


def _bounded_repeat(node) -> bool:
    """A repetition with an upper bound above 1 (what `_Builder._tiled` tiles)."""
    return node.kind == Kind.REPEAT and node.payload[1] is not None and node.payload[1] > 1
