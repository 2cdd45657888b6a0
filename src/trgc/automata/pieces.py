"""Equal subtrees of a machine built once, as one minimal DFA spliced at every occurrence.

The integer of the default range (±(2^53 − 1)) is 107 AST nodes whose NFA has 154 states
(its free digits are suffixes, `nfa.py`) and whose subset construction gives 46 before
minimisation merges them into 33: five integer members built in place cost the subset
construction five times that. `PieceMemo.plan`
picks, top down, the subtrees of a machine that build `MIN_PIECE_NODES` to
`MAX_PIECE_NODES` nodes (inlined rule bodies included) and whose structural key
(`reuse.StructureKeys`, loose) two or more distinct such nodes share; the NFA builder
(`nfa._Builder._piece`) builds the first on its own (NFA, subset construction, minimisation:
`minimize.minimal_table`) and splices its minimal DFA wherever an equal subtree occurs, as it
splices the product of an AND node. A piece is never planned
inside a piece. Smaller subtrees (a number, a string: 30 to 40 nodes) are not worth it: the
subset construction of their own costs what it saves.

Exact by construction: a minimal DFA of a subtree accepts the strings of the subtree, so the
machine's language, hence its minimal canonical table and the artifact, are what they were.
Only the work and the intermediate sizes change, and where those decide something they are
kept as they were: the NFA state limit and the choice between counting and copying a
repetition (`nfa._Builder._counted_name`) see the NFA states the subtree would have had
(`Piece.nfa_states`), not the fewer states of its spliced DFA. A piece's subset construction
is checked against `limits.states` on its own (as an operand of a product is), and every use
of a piece is charged the operations its build was charged, so the operation budget is
spent as if each occurrence were built.

The memo lives for one compilation attempt: within it an equal subtree always builds the same
automaton (the same alphabet and machine plan). Keys are the loose ones when the first build
counted none of the piece's inner repetitions, else the named ones (`reuse.MachineMemo`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from trgc.automata.dfa import Table
from trgc.automata.fold import fold
from trgc.automata.reuse import StructureKeys
from trgc.grammar.ast import Grammar, Kind
from trgc.limits import Budget

# A subtree of fewer nodes is cheaper to build again than to build apart and splice
# (measured on JSONSchemaBench: 8 made the median schema slower; 64 keeps integers and dates)
MIN_PIECE_NODES = 64
# Nor is a larger subtree planned: keying it would number every node under it (the whole
# machine, for the alternation of a 20,000-branch `oneOf`), which costs more than the rare
# repetition of so large a subtree saves.
MAX_PIECE_NODES = 4096
# Nor is anything planned in a grammar of fewer AST nodes (a median JSONSchemaBench schema has
# about 200): numbering its subtrees cost 5-7% of such a compile, more than its pieces saved
# once an integer's digits became suffixes (`nfa.py`); pieces pay in large machines.
MIN_PLAN_NODES = 1000


@dataclass(frozen=True)
class Piece:
    """A subtree's minimal DFA and what building it used and met."""

    table: Table
    specials: frozenset[str]
    calls: frozenset[str]
    refs: frozenset[str]  # rules referenced (nfa.Depends)
    repeats: frozenset[int]  # repetition nodes met (nfa.Depends)
    nfa_states: int  # NFA states the subtree has when built in place
    operations: int  # what building it was charged


class PieceMemo:
    """The pieces of one compilation attempt: which subtrees to build apart, and the built."""

    def __init__(
        self,
        grammar: Grammar,
        structure: StructureKeys,
        inlined: Callable[[str], int | None],
        budget: Budget,
        repeat_names: frozenset[str],
    ) -> None:
        self.nodes = grammar.nodes
        self.structure = structure
        self.inlined = inlined  # a rule name -> its body when a reference inlines it, else None
        self.budget = budget
        self.repeat_names = repeat_names
        self.loose: dict[int, Piece] = {}
        self.named: dict[int, Piece] = {}

    def plan(self, root: int) -> frozenset[int]:
        """The nodes of the machine built from `root` to build as pieces: top down, the first
        node on each path that builds `MIN_PIECE_NODES` to `MAX_PIECE_NODES` nodes and whose
        key two or more distinct such nodes have; none in a grammar of fewer than
        `MIN_PLAN_NODES` nodes."""
        if len(self.nodes) < MIN_PLAN_NODES:
            return frozenset()
        sizes = self._sizes(root)
        counts: dict[int, int] = {}  # key -> distinct large nodes with it
        for node_id, size in sizes.items():
            if MIN_PIECE_NODES <= size <= MAX_PIECE_NODES:
                key = self.structure.keys(node_id)[0]
                counts[key] = counts.get(key, 0) + 1
        charged = len(sizes)
        chosen: list[int] = []
        if any(count > 1 for count in counts.values()):
            stack = list(self._inside(root))
            while stack:
                node_id = stack.pop()
                charged += 1
                size = sizes[node_id]
                if size < MIN_PIECE_NODES:
                    continue
                if size <= MAX_PIECE_NODES and counts[self.structure.keys(node_id)[0]] > 1:
                    chosen.append(node_id)
                else:
                    stack.extend(self._inside(node_id))
        self.budget.charge(charged, "NFA construction")
        return frozenset(chosen)

    def _inside(self, node_id: int) -> tuple[int, ...]:
        """What the builder builds inside a node: its children, or an inlined rule's body."""
        node = self.nodes[node_id]
        if node.kind == Kind.REF:
            body = self.inlined(node.payload)
            return () if body is None else (body,)
        return node.children

    def _sizes(self, root: int) -> dict[int, int]:
        """Every node under `root` (each once) -> the nodes the builder builds for it,
        inlined rule bodies included."""
        sizes: dict[int, int] = {}
        fold(root, self._inside, lambda _, inside: 1 + sum(inside), sizes, 0)
        return sizes

    def reuse(self, node_id: int) -> Piece | None:
        """The piece built before from a subtree equal to `node_id`'s, its build's operations
        charged; None when there is none or charging could exhaust the budget (build it, so
        that `E_LIMIT_OPERATIONS` comes where and as it would)."""
        loose, named = self.structure.keys(node_id)
        found = self.loose.get(loose) or self.named.get(named)
        if found is None or self.budget.used + found.operations > self.budget.limit:
            return None
        self.budget.used += found.operations
        return found

    def keep(self, node_id: int, piece: Piece) -> None:
        """Remember the piece built from `node_id`'s subtree."""
        loose, named = self.structure.keys(node_id)
        if piece.calls & self.repeat_names:
            self.named.setdefault(named, piece)
        else:
            self.loose.setdefault(loose, piece)
