"""`minimize.minimize_table` for small tables, compiled with numba: Moore's rounds, their
check, the quotient and its breadth-first renumbering in one call.

The Python path makes about fifteen numpy calls per round and as many around the rounds; on
the few-hundred-state tables of an ordinary schema that overhead is most of what minimisation
costs. Here each round is one pass over the transitions and one sort.

Same result, same accounting. The rounds are the Python rounds word for word: a state's word
is the wrapping sum of `(block + 2) * multiplier` over itself and its transitions
(`grouping.multipliers`), blocks are renumbered by the rank of their word, and the rounds stop
when the number of blocks stops growing; so they take as many rounds, hash collisions
included, and the budget is charged the same amounts in the same order (`minimize`
replays them: the distinct-column saving, the transitions, one per round). The check and
what follows do not depend on how blocks are numbered: the coarsest partition is unique and
the renumbering breadth-first from the start state makes the table canonical, so the
representatives and the quotient's numbering are free here.

The kernel takes only the common case: a table below `minimize.CHAIN_CHECK_STATES` states
whose rounds settle within `MOORE_ROUNDS` and pass the check. Anything else (`UNSETTLED`)
is left to the Python path from the start, with nothing charged, so it charges and refines as
it always does. It runs only where numba is already loaded (`jit.enabled()`).
"""

from __future__ import annotations

import functools

import numpy as np

SETTLED, UNSETTLED = 0, 1


def _moore_rounds(next_table, accepting, weights, max_rounds, block):
    """Moore's rounds from acceptance (int64 `block[:n]` is written; `block[n]` is -1):
    (SETTLED or UNSETTLED, rounds run, entries charged: states plus transitions)."""
    n, k = next_table.shape
    offsets = np.zeros(n + 1, dtype=np.int64)
    for s in range(n):
        count = 0
        for c in range(k):
            if next_table[s, c] >= 0:
                count += 1
        offsets[s + 1] = offsets[s] + count
    targets = np.empty(offsets[n], dtype=np.int64)
    factors = np.empty(offsets[n], dtype=np.uint64)
    at = 0
    for s in range(n):
        for c in range(k):
            t = next_table[s, c]
            if t >= 0:
                targets[at] = t
                factors[at] = weights[c]
                at += 1
    own = weights[k]
    seen_false, seen_true = False, False
    for s in range(n):
        block[s] = 1 if accepting[s] else 0
        if accepting[s]:
            seen_true = True
        else:
            seen_false = True
    block[n] = -1
    count = int(seen_false) + int(seen_true)
    words = np.empty(n, dtype=np.uint64)
    labels = np.empty(n, dtype=np.int64)
    rounds = 0
    while rounds < max_rounds:
        rounds += 1
        for s in range(n):
            word = np.uint64(block[s] + 2) * own
            for e in range(offsets[s], offsets[s + 1]):
                word += np.uint64(block[targets[e]] + 2) * factors[e]
            words[s] = word
        order = np.argsort(words)
        label = 0
        for i in range(n):
            if i == 0 or words[order[i]] != words[order[i - 1]]:
                label += 1
            labels[order[i]] = label
        if label == count:
            return SETTLED, rounds, n + offsets[n]
        for s in range(n):
            block[s] = labels[s]
        count = label
    return UNSETTLED, rounds, n + offsets[n]


def _whole(narrow, full, accepting, weights, max_rounds):
    """(status, rounds, entries charged, next, accepting) of the minimal table of `full`
    (int32, its distinct columns `narrow`), breadth-first numbered; empty arrays unless
    SETTLED and the partition passed the check."""
    n, k = narrow.shape
    block = np.empty(n + 1, dtype=np.int64)
    status, rounds, charged = _moore_rounds(narrow, accepting, weights, max_rounds, block)
    none_next = np.empty((0, full.shape[1]), dtype=np.int32)
    none_accepting = np.empty(0, dtype=np.bool_)
    if status != SETTLED:
        return status, rounds, charged, none_next, none_accepting
    # the check: every state agrees with the first of its block on acceptance and on the
    # block of each transition (-1 for none)
    leader = np.full(n + 1, -1, dtype=np.int64)  # block value (at most n) -> its first state
    ids = np.empty(n + 1, dtype=np.int64)  # block value -> dense id, by first state
    first_of = np.empty(n, dtype=np.int64)  # dense id -> its first state
    m = 0
    for s in range(n):
        if leader[block[s]] < 0:
            leader[block[s]] = s
            ids[block[s]] = m
            first_of[m] = s
            m += 1
    for s in range(n):
        lead = leader[block[s]]
        if accepting[s] != accepting[lead]:
            return UNSETTLED, rounds, charged, none_next, none_accepting
        for c in range(k):
            a, b = narrow[s, c], narrow[lead, c]
            if (block[a] if a >= 0 else -1) != (block[b] if b >= 0 else -1):
                return UNSETTLED, rounds, charged, none_next, none_accepting
    group = np.empty(n, dtype=np.int64)  # state -> dense block id
    for s in range(n):
        group[s] = ids[block[s]]
    # breadth-first from the start state's block, each block's targets in column order
    width = full.shape[1]
    new_id = np.full(m, -1, dtype=np.int64)
    queue = np.empty(m, dtype=np.int64)
    queue[0] = group[0]
    new_id[group[0]] = 0
    size = 1
    head = 0
    while head < size:
        s = first_of[queue[head]]
        head += 1
        for c in range(width):
            t = full[s, c]
            if t >= 0:
                g = group[t]
                if new_id[g] < 0:
                    new_id[g] = size
                    queue[size] = g
                    size += 1
    out = np.full((size, width), -1, dtype=np.int32)
    out_accepting = np.empty(size, dtype=np.bool_)
    for i in range(size):
        s = first_of[queue[i]]
        out_accepting[i] = accepting[s]
        for c in range(width):
            t = full[s, c]
            if t >= 0:
                out[i, c] = new_id[group[t]]
    return SETTLED, rounds, charged, out, out_accepting


@functools.cache
def _compiled():
    from numba import njit

    options = {"cache": True, "nogil": True}
    globals()["_moore_rounds"] = njit(**options)(_moore_rounds)
    return njit(**options)(_whole)


def minimize(narrow: np.ndarray, full: np.ndarray, accepting: np.ndarray, weights: np.ndarray,
             max_rounds: int) -> tuple:  # fmt: skip
    """`_whole` compiled (the first call compiles it or loads it from numba's cache)."""
    return _compiled()(narrow, full, accepting, weights, max_rounds)
