"""The arena-indexed grammar AST shared by the trg-1 parser and the trj-1 (JSON Schema) lowering.

Nodes live in one flat list and refer to each other by index, so that no stage needs Python
recursion proportional to the input's nesting. Every node carries the 1-based line and column
of the source construct it came from (for JSON Schema lowering: line 0 and a JSON pointer in
`Rule.pointer` instead).

`AND` and `NOT` are the exact boolean combinators of the JSON Schema lowering: an `AND` is
compiled by an automata product (`trgc.automata.boolean`), and a `NOT` is only meaningful as
one of its operands, where the other operands supply the universe it is complemented in. The
`AND` payload names the schema construct it came from (a JSON pointer), for error messages.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from enum import IntEnum
from typing import NamedTuple


class Kind(IntEnum):
    """Node kinds. The payload each kind carries is listed beside it."""

    EMPTY = 0  # matches the empty string; no payload
    LITERAL = 1  # payload: bytes (valid UTF-8, non-empty)
    CLASS = (
        2  # payload: tuple[(lo, hi), ...] of Unicode scalar ranges, sorted, disjoint, no surrogates
    )
    SPECIAL = 3  # payload: str, the special token's name
    REF = 4  # payload: str, the referenced rule's name
    SEQ = 5  # children: the items in order
    ALT = 6  # children: the alternatives in order
    REPEAT = 7  # children: (item,); payload: (min, max) with max None for unbounded, or
    # (min, max, True) for a bound that must compile to a counter (JSON Schema's counted keywords)
    AND = 8  # children: the operands; the intersection of their languages; payload: str origin
    NOT = 9  # children: (item,); every byte string not in the item's language; only an AND operand


# The kinds as plain ints, for the passes that compare a node's kind once or more per node:
# reading a member off the enum class costs about four times comparing ints (50 vs 12 ns).
K_EMPTY, K_LITERAL, K_CLASS, K_SPECIAL, K_REF, K_SEQ, K_ALT, K_REPEAT, K_AND, K_NOT = map(
    int,
    (
        Kind.EMPTY,
        Kind.LITERAL,
        Kind.CLASS,
        Kind.SPECIAL,
        Kind.REF,
        Kind.SEQ,
        Kind.ALT,
        Kind.REPEAT,
        Kind.AND,
        Kind.NOT,
    ),
)


class Node(NamedTuple):
    """One AST node (a named tuple: the lowering appends thousands, and a tuple is made in
    half the time of a frozen dataclass). Nodes are immutable and only appended, so a node
    names only nodes made before it: children precede their parent in the arena, and a pass
    in ascending index order meets every child first (`automata.reuse.StructureKeys`)."""

    kind: Kind
    line: int
    column: int
    children: tuple[int, ...] = ()
    payload: object = None


@dataclass(frozen=True)
class Rule:
    name: str
    body: int  # node index
    line: int
    column: int
    pointer: str | None = None  # JSON pointer when the rule came from a JSON Schema
    shared: bool = False  # compile as its own machine, called where referenced, never inlined


def offsets_within(ascending: list[int], first: int, size: int) -> tuple[int, ...]:
    """The nodes of `ascending` (node indices, sorted) in `first .. first + size - 1`, numbered
    from `first`: what sets one copy of a stamped subtree apart from another (its suffix
    marks, the repetitions a machine plan counts or copies there)."""
    lo = bisect_left(ascending, first)
    hi = bisect_left(ascending, first + size, lo)
    return tuple([n - first for n in ascending[lo:hi]])


@dataclass
class Grammar:
    """A whole grammar: the node arena, the rules in source order, and the directives."""

    nodes: list[Node] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    start: str | None = None
    max_depth: int | None = None
    source_kind: str = "trg"  # "trg" or "trj"
    source_sha256: str = ""
    options: dict[str, object] = field(
        default_factory=dict
    )  # lowering options recorded in metadata
    # nodes the lowering placed at the end of several branches (the arena is a DAG there):
    # the NFA builder builds each once where those ends meet (`automata.nfa`, "Suffixes")
    suffixes: set[int] = field(default_factory=set)
    # subtrees the lowering stamped from one template (`schema.nodes.Builder.stamp`): root ->
    # (template key, first node, nodes); two with one key are equal node for node at the same
    # offsets (suffix marks added after stamping aside: compare `offsets_within` them), so the
    # NFA builder builds one and shifts its states for the others
    stamped: dict[int, tuple[object, int, int]] = field(default_factory=dict)

    def add(
        self,
        kind: Kind,
        line: int,
        column: int,
        children: tuple[int, ...] = (),
        payload: object = None,
    ) -> int:
        """Append a node and return its index."""
        self.nodes.append(Node(kind, line, column, children, payload))
        return len(self.nodes) - 1

    def rule_index(self) -> dict[str, int]:
        """Rule name -> position in `rules` (the first definition wins; duplicates are an analysis error)."""
        index: dict[str, int] = {}
        for i, rule in enumerate(self.rules):
            index.setdefault(rule.name, i)
        return index
