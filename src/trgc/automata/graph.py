"""Flat-array graph helpers for dense DFA tables: distinct edges, CSR adjacency, BFS, co-reachability.

A table `next[s, j]` (>= 0 a target, < 0 none) has many columns that lead to the same target;
the graph walks here first reduce it to its distinct (source, target) pairs in row-major order
of first use (numpy), then walk those pairs in Python: breadth-first order is sequential by
nature, and the pair lists are short (a few per state) where the tables are wide.
"""

from __future__ import annotations

import numpy as np

from trgc.automata import graph_kernel, jit
from trgc.automata.grouping import sort_groups


def edge_pairs(next_table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(source, target) of every distinct transition pair, in row-major order of first use."""
    n = next_table.shape[0]
    sources, columns = np.nonzero(next_table >= 0)
    sources = sources.astype(np.int64)
    targets = next_table[sources, columns].astype(np.int64)
    if sources.size == 0:
        return sources, targets
    first, _ = sort_groups(sources * n + targets)
    first.sort()
    return sources[first], targets[first]


def csr(keys: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """`values` grouped by `keys` in 0..n-1: (offsets[n + 1], values sorted by key, stable)."""
    order = np.argsort(keys, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=offsets[1:])
    return offsets, values[order]


def gather(offsets: np.ndarray, values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The CSR values of every key in `keys`, concatenated in that order."""
    starts = offsets[keys]
    lengths = offsets[keys + 1] - starts
    total = int(lengths.sum())
    if total == 0:
        return values[:0]
    shift = np.cumsum(lengths) - lengths
    return values[np.repeat(starts - shift, lengths) + np.arange(total, dtype=np.int64)]


def bfs_order(next_table: np.ndarray, start: int = 0) -> np.ndarray:
    """States reachable from `start`, breadth-first, each state's targets in column order
    (compiled by `graph_kernel` where the compiler's kernels run)."""
    if jit.enabled():
        return graph_kernel.bfs_order(next_table, start)
    n = next_table.shape[0]
    sources, targets = edge_pairs(next_table)
    offsets, adjacent = csr(sources, targets, n)
    off = offsets.tolist()
    adj = adjacent.tolist()
    seen = [False] * n
    seen[start] = True
    queue = [start]
    for s in queue:
        for t in adj[off[s] : off[s + 1]]:
            if not seen[t]:
                seen[t] = True
                queue.append(t)
    return np.array(queue, dtype=np.int64)


def coreachable(next_table: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """bool[n]: the states from which some state with `goal` set is reachable (compiled by
    `graph_kernel` where the compiler's kernels run)."""
    if jit.enabled():
        return graph_kernel.coreachable(next_table, goal)
    n = next_table.shape[0]
    sources, targets = edge_pairs(next_table)
    offsets, preds = csr(targets, sources, n)
    off = offsets.tolist()
    pre = preds.tolist()
    live = goal.tolist()
    todo = [s for s in range(n) if live[s]]
    while todo:
        t = todo.pop()
        for s in pre[off[t] : off[t + 1]]:
            if not live[s]:
                live[s] = True
                todo.append(s)
    return np.array(live, dtype=bool)
