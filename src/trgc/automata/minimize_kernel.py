"""`minimize.minimize_table` compiled with numba: whole for small tables, step by step for
large ones.

The Python path makes about fifteen numpy calls per round and as many around the rounds; on
the few-hundred-state tables of an ordinary schema that overhead is most of what minimisation
costs. Here each round is one pass over the transitions and one over an open-addressing
table of the round's words: no sort, so a round is linear in the table.

Same result, same accounting. The rounds are the Python rounds word for word: a state's word
is the wrapping sum of `(block + 2) * multiplier` over itself and its transitions
(`grouping.multipliers`), the states of equal words make one block, numbered as its first
state, and the rounds stop when the number of blocks stops growing; so they take as many
rounds, hash collisions included, and the budget is charged the same amounts in the same
order (`minimize` replays them: the distinct-column saving, the transitions, one per
round). The check and what follows do not depend on how blocks are numbered: the coarsest
partition is unique and the renumbering breadth-first from the start state makes the table
canonical, so the representatives and the quotient's numbering are free here.

Small tables (`minimize`, `_whole`): a table below `minimize.CHAIN_CHECK_STATES` states, its
finite states classified, whose rounds then settle within `MOORE_ROUNDS` and pass the check,
in one call. Anything else (`UNSETTLED`) is left to the Python path from the start, with
nothing charged, so it charges and refines as it always does.

Large tables keep the Python path's control flow, and its steps run here: the distinct
columns, the finite levels (Kahn's algorithm, predecessors in ascending order, as
`minimize._finite_levels` files them), their classes (numbered in order of each class's
first state, level by level, as `minimize._finite_classes` numbers them), the rounds and the
quotient. Each gives what its Python step gives, block values included: Hopcroft's
refinement, which may follow, charges in an order that depends on how blocks are numbered.
(Rounds that sorted their words, as numpy's do, took 1.4x numpy's time on the sample's tables
of 512 to 19,000 states: numba's `argsort` is the slower sort; hashed, they take a fifth of
it.) Everything here runs only where numba is already loaded (`jit.enabled()`)."""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from trgc.automata.grouping import GOLDEN

SETTLED, UNSETTLED = 0, 1


def _distinct_columns(next_table, multiplier):
    """`minimize.distinct_columns`: one column per distinct column that has a transition, the
    first of each, ascending (columns hashed in one row-major pass with `multiplier`, columns
    of equal words compared in full)."""
    n, k = next_table.shape
    words = np.zeros(k, dtype=np.uint64)
    used = np.zeros(k, dtype=np.bool_)
    for s in range(n):
        for c in range(k):
            t = next_table[s, c]
            words[c] = words[c] * multiplier + np.uint64(t + 2)
            if t >= 0:
                used[c] = True
    kept = np.empty(k, dtype=np.int64)
    m = 0
    for c in range(k):
        if not used[c]:
            continue
        repeated = False
        for j in range(m):
            d = kept[j]
            if words[d] == words[c]:
                repeated = True
                for s in range(n):
                    if next_table[s, d] != next_table[s, c]:
                        repeated = False
                        break
                if repeated:
                    break
        if not repeated:
            kept[m] = c
            m += 1
    return kept[:m]


def _rounds(next_table, accepting, weights, max_rounds, block):
    """Moore's rounds from the partition `block[:n]` (non-negative int64 values; `block[n]`
    is -1), in place, then their check: (SETTLED or UNSETTLED, rounds run, entries charged:
    states plus transitions). `minimize._moore` word for word: the same words, each block
    renumbered as its first state, so the same rounds and the same final `block`. A round
    finds the distinct words in one pass over an open-addressing table keyed by the full word
    (equal words, and only they, share a block, as after sorting them), not by a sort."""
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
    seen = np.zeros(_span(block, n), dtype=np.bool_)
    count = 0
    for s in range(n):
        if not seen[block[s]]:
            seen[block[s]] = True
            count += 1
    bits = 1
    while (1 << bits) < 2 * n:
        bits += 1
    mask = (1 << bits) - 1
    shift = np.uint64(64 - bits)
    keys = np.empty(mask + 1, dtype=np.uint64)
    leaders = np.empty(mask + 1, dtype=np.int64)  # the first state of each word, -1: free
    words = np.empty(n, dtype=np.uint64)
    labels = np.empty(n, dtype=np.int64)
    rounds = 0
    settled = False
    while rounds < max_rounds:
        rounds += 1
        for s in range(n):
            word = np.uint64(block[s] + 2) * own
            for e in range(offsets[s], offsets[s + 1]):
                word += np.uint64(block[targets[e]] + 2) * factors[e]
            words[s] = word
        leaders[:] = -1
        found = 0
        for s in range(n):
            word = words[s]
            j = np.int64((word * GOLDEN) >> shift)
            while True:
                if leaders[j] < 0:
                    keys[j] = word
                    leaders[j] = s
                    found += 1
                    break
                if keys[j] == word:
                    break
                j = (j + 1) & mask
            labels[s] = leaders[j]
        if found == count:
            settled = True
            break
        for s in range(n):
            block[s] = labels[s]
        count = found
    if not settled or not _stable(next_table, accepting, block):
        return UNSETTLED, rounds, n + offsets[n]
    return SETTLED, rounds, n + offsets[n]


def _stable(next_table, accepting, block):
    """Does every state agree with the first state of its block on acceptance and on the
    block of each transition (-1 for none)?"""
    n, k = next_table.shape
    leader = np.full(_span(block, n), -1, dtype=np.int64)
    for s in range(n):
        if leader[block[s]] < 0:
            leader[block[s]] = s
    for s in range(n):
        lead = leader[block[s]]
        if accepting[s] != accepting[lead]:
            return False
        for c in range(k):
            a, b = next_table[s, c], next_table[lead, c]
            if (block[a] if a >= 0 else -1) != (block[b] if b >= 0 else -1):
                return False
    return True


def _span(block, n):
    """One more than the largest block value of the `n` states."""
    top = 0
    for s in range(n):
        if block[s] > top:
            top = block[s]
    return top + 1


def _levels(next_table):
    """`minimize._finite_levels`: the finite states in levels of reverse topological order
    (Kahn's algorithm on distinct-successor counts, predecessors taken in ascending order), as
    (states level after level, level offsets, entries charged: states plus distinct pairs)."""
    n, k = next_table.shape
    stamp = np.full(n, -1, dtype=np.int64)
    remaining = np.zeros(n, dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    pairs = 0
    for s in range(n):
        for c in range(k):
            t = next_table[s, c]
            if t >= 0 and stamp[t] != s:
                stamp[t] = s
                remaining[s] += 1
                offsets[t + 1] += 1
                pairs += 1
    for t in range(n):
        offsets[t + 1] += offsets[t]
    fill = offsets[:n].copy()
    preds = np.empty(pairs, dtype=np.int64)
    stamp[:] = -1
    for s in range(n):
        for c in range(k):
            t = next_table[s, c]
            if t >= 0 and stamp[t] != s:
                stamp[t] = s
                preds[fill[t]] = s
                fill[t] += 1
    states = np.empty(n, dtype=np.int64)
    size = 0
    for s in range(n):
        if remaining[s] == 0:
            states[size] = s
            size += 1
    bounds = np.empty(n + 1, dtype=np.int64)
    bounds[0] = 0
    levels = 0
    begin = 0
    while size > begin:
        end = size
        levels += 1
        bounds[levels] = end
        for i in range(begin, end):
            t = states[i]
            for e in range(offsets[t], offsets[t + 1]):
                s = preds[e]
                remaining[s] -= 1
                if remaining[s] == 0:
                    states[size] = s
                    size += 1
        begin = end
    return states[:size], bounds[: levels + 1], n + pairs


def _classes(next_table, accepting, states, bounds, weights, block):
    """`minimize._finite_classes` from `_levels`: `block[:n]` is 2 + the class of each finite
    state and the acceptance of the others. A level's classes are numbered in order of their
    first state, as the Python path numbers them: each state's key (its acceptance and its
    successors' classes per column) is looked up in an open-addressing table of the level's
    representatives, by a hash with `weights` (one per column and one for acceptance), and
    compared in full."""
    n, k = next_table.shape
    label = np.full(n, -1, dtype=np.int64)
    count = 0
    for level in range(bounds.shape[0] - 1):
        begin, end = bounds[level], bounds[level + 1]
        size = 2
        while size < 2 * (end - begin):
            size *= 2
        slots = np.full(size, -1, dtype=np.int64)
        found = 0
        for i in range(begin, end):
            s = states[i]
            word = (np.uint64(accepting[s]) + np.uint64(1)) * weights[k]
            for c in range(k):
                t = next_table[s, c]
                word += np.uint64((label[t] if t >= 0 else -1) + 2) * weights[c]
            j = np.int64(word & np.uint64(size - 1))
            while True:
                r = slots[j]
                if r < 0:
                    slots[j] = s
                    label[s] = count + found
                    found += 1
                    break
                if _same_key(next_table, accepting, label, r, s):
                    label[s] = label[r]
                    break
                j = (j + 1) & (size - 1)
        count += found
    for s in range(n):
        block[s] = label[s] + 2 if label[s] >= 0 else (1 if accepting[s] else 0)


def _same_key(next_table, accepting, label, r, s):
    """Do states `r` and `s` agree on acceptance and on their successors' classes?"""
    if accepting[r] != accepting[s]:
        return False
    for c in range(next_table.shape[1]):
        a, b = next_table[r, c], next_table[s, c]
        if (label[a] if a >= 0 else -1) != (label[b] if b >= 0 else -1):
            return False
    return True


def _quotient(full, accepting, block):
    """The quotient of `full` by the partition `block[:n]`, breadth-first from the start
    state's block, each block's targets in column order: (next int32, accepting)."""
    n, width = full.shape
    group = np.empty(n, dtype=np.int64)  # state -> dense block id, by first state
    ids = np.full(_span(block, n), -1, dtype=np.int64)
    first_of = np.empty(n, dtype=np.int64)  # dense id -> its first state
    m = 0
    for s in range(n):
        if ids[block[s]] < 0:
            ids[block[s]] = m
            first_of[m] = s
            m += 1
        group[s] = ids[block[s]]
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
    return out, out_accepting


def _hopcroft(next_table, elems, initial, block, remaining):
    """`minimize._hopcroft` step for step on arrays: `elems` is the states in ascending order
    of their `initial` block value (a stable order), `block[:n]` receives the blocks. The
    charges are summed as the Python steps make them, and the refinement stops at the first
    charge that takes the sum past `remaining`: that sum (past `remaining` exactly when it
    stopped there)."""
    n, k = next_table.shape
    # predecessors by target, each target's in the order of (source, column)
    inv_start = np.zeros(n + 1, dtype=np.int64)
    for s in range(n):
        for j in range(k):
            t = next_table[s, j]
            if t >= 0:
                inv_start[t + 1] += 1
    for t in range(n):
        inv_start[t + 1] += inv_start[t]
    m = inv_start[n]
    inv_col = np.empty(m, dtype=np.int64)
    inv_src = np.empty(m, dtype=np.int64)
    fill = inv_start[:n].copy()
    for s in range(n):
        for j in range(k):
            t = next_table[s, j]
            if t >= 0:
                inv_col[fill[t]] = j
                inv_src[fill[t]] = s
                fill[t] += 1
    spent = n + m
    if spent > remaining:
        return spent
    where = np.empty(n, dtype=np.int64)
    block_of = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    end = np.empty(n, dtype=np.int64)
    blocks = 0
    for pos in range(n):
        s = elems[pos]
        if pos == 0 or initial[s] != initial[elems[pos - 1]]:
            first[blocks] = pos
            blocks += 1
        end[blocks - 1] = pos + 1
        block_of[s] = blocks - 1
        where[s] = pos
    marked = np.zeros(n, dtype=np.int64)
    in_waiting = np.zeros(n, dtype=np.bool_)
    waiting = np.empty(n, dtype=np.int64)
    for b in range(blocks):
        waiting[b] = b
        in_waiting[b] = True
    n_waiting = blocks
    per_col = np.zeros(k, dtype=np.int64)  # a splitter's sources per column
    col_at = np.zeros(k + 1, dtype=np.int64)
    cols = np.empty(k, dtype=np.int64)
    sources = np.empty(m, dtype=np.int64)
    touched = np.empty(n, dtype=np.int64)
    while n_waiting:
        n_waiting -= 1
        splitter = waiting[n_waiting]
        in_waiting[splitter] = False
        n_cols = 0
        for pos in range(first[splitter], end[splitter]):
            t = elems[pos]
            for e in range(inv_start[t], inv_start[t + 1]):
                j = inv_col[e]
                if per_col[j] == 0:
                    cols[n_cols] = j
                    n_cols += 1
                per_col[j] += 1
        cols[:n_cols].sort()
        at = 0
        for c in range(n_cols):
            j = cols[c]
            col_at[j] = at
            at += per_col[j]
            per_col[j] = 0
        for pos in range(first[splitter], end[splitter]):
            t = elems[pos]
            for e in range(inv_start[t], inv_start[t + 1]):
                j = inv_col[e]
                sources[col_at[j]] = inv_src[e]
                col_at[j] += 1
        lo = 0
        for c in range(n_cols):
            hi = col_at[cols[c]]
            spent += hi - lo
            if spent > remaining:
                return spent
            n_touched = 0
            for i in range(lo, hi):
                s = sources[i]
                b = block_of[s]
                if marked[b] == 0:
                    touched[n_touched] = b
                    n_touched += 1
                a = first[b] + marked[b]
                other = elems[a]
                p = where[s]
                elems[a] = s
                elems[p] = other
                where[s] = a
                where[other] = p
                marked[b] += 1
            for i in range(n_touched):
                y = touched[i]
                count = marked[y]
                marked[y] = 0
                if count == end[y] - first[y]:
                    continue
                z = blocks
                blocks += 1
                first[z] = first[y]
                end[z] = first[y] + count
                first[y] += count
                for a in range(first[z], end[z]):
                    block_of[elems[a]] = z
                if in_waiting[y] or count <= end[y] - first[y]:
                    in_waiting[z] = True
                    waiting[n_waiting] = z
                else:
                    in_waiting[y] = True
                    waiting[n_waiting] = y
                n_waiting += 1
            lo = hi
    block[:n] = block_of
    return spent


def _whole(narrow, full, accepting, weights, max_rounds):
    """(status, rounds, entries charged by the levels, entries charged by the rounds, next,
    accepting) of the minimal table of `full` (its distinct columns `narrow`): the finite
    states classified exactly, the rounds from there; empty arrays unless the rounds settled
    and passed the check."""
    n = narrow.shape[0]
    block = np.empty(n + 1, dtype=np.int64)
    block[n] = -1
    states, bounds, leveled = _levels(narrow)
    _classes(narrow, accepting, states, bounds, weights, block)
    status, rounds, charged = _rounds(narrow, accepting, weights, max_rounds, block)
    if status != SETTLED:
        none_next = np.empty((0, full.shape[1]), dtype=np.int32)
        return status, rounds, leveled, charged, none_next, np.empty(0, dtype=np.bool_)
    out, out_accepting = _quotient(full, accepting, block)
    return status, rounds, leveled, charged, out, out_accepting


class Levels(NamedTuple):
    """`_levels`' finite states, level after level: level `i` is `states[bounds[i]:bounds[i + 1]]`."""

    states: np.ndarray
    bounds: np.ndarray

    def __len__(self) -> int:  # the number of levels, as for the Python path's list of levels
        return self.bounds.shape[0] - 1


# the kernels, callees before callers: numba resolves a call to another kernel through the
# module's globals when it compiles the caller
_ORDER = ("_span", "_stable", "_same_key", "_distinct_columns", "_rounds", "_levels",
          "_classes", "_quotient", "_whole", "_hopcroft")  # fmt: skip


@functools.cache
def _compiled() -> dict:
    from numba import njit

    options = {"cache": True, "nogil": True}
    for name in _ORDER:
        globals()[name] = njit(**options)(globals()[name])
    return {name: globals()[name] for name in _ORDER}


def minimize(narrow: np.ndarray, full: np.ndarray, accepting: np.ndarray, weights: np.ndarray,
             max_rounds: int) -> tuple:  # fmt: skip
    """`_whole` compiled (the first call compiles the kernels or loads them from numba's
    cache)."""
    return _compiled()["_whole"](narrow, full, accepting, weights, max_rounds)


def distinct_columns(next_table: np.ndarray, multiplier: np.uint64) -> np.ndarray:
    """`_distinct_columns` compiled."""
    return _compiled()["_distinct_columns"](next_table, multiplier)


def rounds(next_table: np.ndarray, accepting: np.ndarray, weights: np.ndarray,
           max_rounds: int, block: np.ndarray) -> tuple[int, int, int]:  # fmt: skip
    """`_rounds` compiled: `block` refined in place; (status, rounds, entries charged)."""
    status, count, entries = _compiled()["_rounds"](next_table, accepting, weights, max_rounds,
                                                    block)  # fmt: skip
    return int(status), int(count), int(entries)


def levels(next_table: np.ndarray) -> tuple[Levels, int]:
    """`_levels` compiled: (the levels, entries charged)."""
    states, bounds, entries = _compiled()["_levels"](next_table)
    return Levels(states, bounds), int(entries)


def classes(next_table: np.ndarray, accepting: np.ndarray, found: Levels, weights: np.ndarray,
            block: np.ndarray) -> None:  # fmt: skip
    """`_classes` compiled: `block[:n]` written."""
    _compiled()["_classes"](next_table, accepting, found.states, found.bounds, weights, block)


def quotient(full: np.ndarray, accepting: np.ndarray, block: np.ndarray) -> tuple:
    """`_quotient` compiled: (next, accepting) of the breadth-first numbered quotient."""
    return _compiled()["_quotient"](full, accepting, block)


def hopcroft(next_table: np.ndarray, block: np.ndarray, remaining: int) -> int:
    """`_hopcroft` compiled, from the partition `block` (int64[n + 1]), refined in place: the
    operations its steps charge, summed up to the first that passes `remaining`."""
    n = next_table.shape[0]
    initial = np.ascontiguousarray(block[:n])
    elems = np.argsort(initial, kind="stable").astype(np.int64)
    return int(_compiled()["_hopcroft"](next_table, elems, initial, block, remaining))
