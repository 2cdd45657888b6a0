"""`graph.coreachable`, `graph.bfs_order` and the table layout's scan (`machines._scan`)
compiled with numba, for where the compiler's kernels run.

The productivity analysis (`predictive.trim_unproductive`) asks for the co-reachable states
of every machine, again whenever the set of productive callees grows: seven searches for
`person.json`'s six machines, each a few numpy calls and a Python loop over the predecessor
lists (about 50 us on a 231-state machine, 0.3 of its 0.5 ms). Here a search is one pass that
counts predecessors, one that files them and one worklist loop. The answer is a set of states,
the same however it is searched, and nothing is charged inside it, so there is nothing else to
keep equal. It runs only where numba is already loaded (`jit.enabled()`).
"""

from __future__ import annotations

import functools

import numpy as np


def _coreachable(next_table, goal):
    """bool[n]: the states from which a state with `goal` set is reachable."""
    n, k = next_table.shape
    offsets = np.zeros(n + 1, dtype=np.int64)
    for s in range(n):
        for c in range(k):
            t = next_table[s, c]
            if t >= 0:
                offsets[t + 1] += 1
    for t in range(n):
        offsets[t + 1] += offsets[t]
    fill = offsets[:n].copy()
    preds = np.empty(offsets[n], dtype=np.int64)
    for s in range(n):
        for c in range(k):
            t = next_table[s, c]
            if t >= 0:
                preds[fill[t]] = s
                fill[t] += 1
    live = np.zeros(n, dtype=np.bool_)
    todo = np.empty(n, dtype=np.int64)
    size = 0
    for s in range(n):
        if goal[s]:
            live[s] = True
            todo[size] = s
            size += 1
    while size:
        size -= 1
        t = todo[size]
        for e in range(offsets[t], offsets[t + 1]):
            s = preds[e]
            if not live[s]:
                live[s] = True
                todo[size] = s
                size += 1
    return live


def _bfs_order(next_table, start):
    """int64[]: the states reachable from `start`, breadth-first, each state's targets in
    column order."""
    n, k = next_table.shape
    seen = np.zeros(n, dtype=np.bool_)
    queue = np.empty(n, dtype=np.int64)
    seen[start] = True
    queue[0] = start
    size = 1
    head = 0
    while head < size:
        s = queue[head]
        head += 1
        for c in range(k):
            t = next_table[s, c]
            if t >= 0 and not seen[t]:
                seen[t] = True
                queue[size] = t
                size += 1
    return queue[:size].copy()


def _layout_scan(sub, returns):
    """`machines._scan` on a machine's table over the scanned columns (`sub`: a state, -1 for
    none, or -2 - i for call `i`, which goes on to its return state `returns[i]`): (the
    states reached breadth-first, each row in column order; the calls met, each once, in
    order of first meeting; the actions in the reached states)."""
    n, k = sub.shape
    seen = np.zeros(n, dtype=np.bool_)
    queue = np.empty(n, dtype=np.int64)
    met = np.zeros(returns.size, dtype=np.bool_)
    calls = np.empty(returns.size, dtype=np.int64)
    n_calls = 0
    actions = 0
    seen[0] = True
    queue[0] = 0
    size = 1
    head = 0
    while head < size:
        s = queue[head]
        head += 1
        for c in range(k):
            action = sub[s, c]
            if action == -1:
                continue
            actions += 1
            if action >= 0:
                target = action
            else:
                call = -2 - action
                if not met[call]:
                    met[call] = True
                    calls[n_calls] = call
                    n_calls += 1
                target = returns[call]
            if not seen[target]:
                seen[target] = True
                queue[size] = target
                size += 1
    return queue[:size].copy(), calls[:n_calls].copy(), actions


@functools.cache
def _compiled() -> dict:
    from numba import njit

    options = {"cache": True, "nogil": True}
    return {f.__name__: njit(**options)(f) for f in (_coreachable, _bfs_order, _layout_scan)}


def coreachable(next_table: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """`_coreachable` compiled (the first call compiles it or loads it from numba's cache)."""
    return _compiled()["_coreachable"](next_table, goal)


def bfs_order(next_table: np.ndarray, start: int) -> np.ndarray:
    """`_bfs_order` compiled."""
    return _compiled()["_bfs_order"](next_table, start)


def layout_scan(sub: np.ndarray, returns: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """`_layout_scan` compiled."""
    queue, calls, actions = _compiled()["_layout_scan"](sub, returns)
    return queue, calls, int(actions)
