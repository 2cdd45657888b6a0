"""A value per AST node computed from its parts' values, memoised, without recursion.

Grammars nest deeper than Python's recursion limit, so the passes that need a bottom-up value
per node (a node's certain first bytes, the shared rules it calls first) walk an explicit
stack in post-order. Each pass says what a node's parts are
(its children, an inlined rule's body, nothing) and how their values combine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

V = TypeVar("V")


def fold(
    root: int,
    parts: Callable[[int], Sequence[int]],
    combine: Callable[[int, list[V]], V],
    known: dict[int, V],
    unknown: V,
) -> V:
    """The value of `root`, filling `known` with the value of every node met. A part met again
    while its own value is being computed (a cycle through a recursive reference) counts as
    `unknown` there."""
    open_: set[int] = set()
    stack = [root]
    while stack:
        node_id = stack[-1]
        if node_id in known:
            stack.pop()
            continue
        inside = parts(node_id)
        waiting = [c for c in inside if c not in known and c not in open_]
        if waiting and node_id not in open_:
            open_.add(node_id)
            stack.extend(waiting)
            continue
        stack.pop()
        open_.discard(node_id)
        known[node_id] = combine(node_id, [known.get(c, unknown) for c in inside])
    return known[root]
