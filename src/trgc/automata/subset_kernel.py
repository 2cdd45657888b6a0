"""The subset construction of `dfa.determinize_table`, compiled with numba.

Same input (the NFA's edges and epsilon edges, as flat arrays), same output (the same
segments, the same states in the same order, the same table) and the same accounting: the budget is charged the
same amounts in the same order, the states and transitions limits are checked at the same
points, so a refusal is the same error with the same message. The kernel cannot raise those
errors itself; it stops at the first charge or check that fails and reports it (`status`,
`value`), and `determinize` raises it through `Budget.charge` / `check_limit` as the Python
construction would have.

It runs only where numba is already loaded (`jit.enabled()`): a `trgc compile` process never
pays numba's import for it. `dfa.py`'s Python loop stays the reference, and the tests compare
the two on random NFAs and on every machine of real schemas.

Data: a DFA state is a sorted run of important NFA states in `sub_pool`; a hash table of
state ids (open addressing, `_find`) interns them. The closure of one NFA state is searched
once and kept (`_search`), with the number of states its search visited (what a request is
charged); a set's closure is the union of its members' and is charged the union of what their
searches visited, counted with a stamp per NFA state.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from trgc.automata.nfa import Nfa

# status of a run
DONE, OVER_STATES, OVER_TRANSITIONS, OVER_BUDGET_ROWS, OVER_BUDGET_CLOSURE, NEED_ROOM = range(6)
# what `_rows` found full (NEED_ROOM's value, a bit set)
GROW_POOLS, GROW_SUB_POOL, GROW_STATES, GROW_RUNS, GROW_MET = 1, 2, 4, 8, 16
# `regs`: where `_rows` resumes, the sizes so far, the budget used, the stamps' ticks
R_STATE, R_N_STATES, R_N_RUNS, R_USED, R_TICK, R_STICK, R_FILL, N_REGS = range(8)
# `counts` in and out: running totals and the budget
C_STATES, C_MAX_STATES, C_TRANSITIONS, C_MAX_TRANSITIONS, C_USED, C_LIMIT = range(6)

# states (and runs) the arrays hold before they first grow; tests make it 1
FIRST_ROOM = 256


def _grow(arr, need):
    """`arr`, or a copy at least twice as large when `need` items would not fit."""
    if need <= arr.size:
        return arr
    out = np.empty(max(need, 2 * arr.size), dtype=arr.dtype)
    for i in range(arr.size):
        out[i] = arr[i]
    return out


def _copy(dst, at, src, lo, n):
    """`dst[at:at + n] = src[lo:lo + n]` as a loop (numba's slices cost more than short runs)."""
    for i in range(n):
        dst[at + i] = src[lo + i]


def _sort(values, lo, n):
    """Sort `values[lo:lo + n]` in place (insertion sort for the short runs most are)."""
    if n > 32:
        values[lo : lo + n].sort()
        return
    for i in range(lo + 1, lo + n):
        v = values[i]
        j = i
        while j > lo and values[j - 1] > v:
            values[j] = values[j - 1]
            j -= 1
        values[j] = v


def _hash(values, lo, n):
    """FNV-1a over `values[lo:lo + n]`: the hash of a set of NFA states (sorted)."""
    h = np.uint64(14695981039346656037)
    for i in range(lo, lo + n):
        h = (h ^ np.uint64(values[i])) * np.uint64(1099511628211)
    return h


def _same(pool, lo, n, values, vlo):
    """Whether `pool[lo:lo + n]` holds `values[vlo:vlo + n]` (a loop: numba has no `all` over
    a generator)."""
    for i in range(n):  # noqa: SIM110
        if pool[lo + i] != values[vlo + i]:
            return False
    return True


def _find(table, hashes, sub_off, sub_pool, h, values, vlo, n):
    """The slot of the set `values[vlo:vlo + n]` (hash `h`) in `table`: its state's, or the
    empty slot where it goes."""
    mask = table.size - 1
    slot = np.int64(h & np.uint64(mask))
    while True:
        s = table[slot]
        if s < 0:
            return slot
        lo = sub_off[s]
        if hashes[s] == h and sub_off[s + 1] - lo == n and _same(sub_pool, lo, n, values, vlo):
            return slot
        slot = (slot + 1) & mask


def _rehash(size, hashes, n_states):
    """A hash table of `size` slots (a power of two) holding states 0..n_states - 1."""
    out = np.full(size, -1, dtype=np.int64)
    mask = out.size - 1
    for s in range(n_states):
        slot = np.int64(hashes[s] & np.uint64(mask))
        while out[slot] >= 0:
            slot = (slot + 1) & mask
        out[slot] = s
    return out


def _permute(column, order, scratch, n):
    """`column[:n] = column[order[:n]]`, through `scratch`."""
    for i in range(n):
        scratch[n + i] = column[order[i]]
    _copy(column, 0, scratch, n, n)


def _order(keys, n, out):
    """`out[:n]`: the indices of `keys[:n]` in ascending order of keys (insertion sort for the
    short rows most are, without allocating; numpy's sort for long ones)."""
    if n > 32:
        out[:n] = np.argsort(keys[:n], kind="mergesort")
        return
    for i in range(n):
        k = keys[i]
        j = i
        while j > 0 and keys[out[j - 1]] > k:
            out[j] = out[j - 1]
            j -= 1
        out[j] = i


def _search(q, eps_off, eps_to, important, stamp, regs, todo, seen_pool, seen_n, cl_pool,
            cl_off, cl_n):  # fmt: skip
    """Search the epsilon closure of q and keep it: every state visited in `seen_pool` from
    `cl_off[q]` (`seen_n[q]` of them), the important ones sorted in `cl_pool` from the same
    offset (`cl_n[q]`). The pools have room for every state from `regs[R_FILL]` on."""
    base = regs[R_FILL]
    tick = regs[R_STICK]
    n = 0
    todo[0] = q
    top = 1
    stamp[q] = tick
    while top:
        top -= 1
        x = todo[top]
        seen_pool[base + n] = x
        n += 1
        for k in range(eps_off[x], eps_off[x + 1]):
            t = eps_to[k]
            if stamp[t] != tick:
                stamp[t] = tick
                todo[top] = t
                top += 1
    k = 0
    for i in range(n):
        x = seen_pool[base + i]
        if important[x]:
            cl_pool[base + k] = x
            k += 1
    _sort(cl_pool, base, k)
    cl_off[q] = base
    cl_n[q] = k
    seen_n[q] = n
    regs[R_FILL] = base + n


def _determinize(nfa, start, final, counts, room):
    """The subset construction (see the module docstring) of the NFA `nfa` (the arrays
    `dfa._determinize_compiled` makes). `counts` holds the running totals and the budget in,
    and out. Returns (status, value, n states, accepting, runs, n runs): `runs` rows are
    (state, first segment, length, target) as `dfa.determinize_table` builds them; on a refusal
    `value` is the number the check saw (a limit) or the charge that did not fit (the budget,
    with `counts[C_USED]` as it was before that charge).

    The rows are made by `_rows`, which never reallocates (numba reference-counts an array
    variable that a loop may rebind on every trip); when an array is full it undoes the row
    it was making and returns, and this grows the array and calls it again. `room` sizes the
    arrays at first (states, runs; the tests make it 1 so that every array grows)."""
    important, e_first = nfa[2], nfa[4]
    n_nfa = important.size
    n_all = e_first.size  # a row holds at most every edge once
    regs = np.zeros(N_REGS, dtype=np.int64)
    memo = (
        np.zeros(n_nfa, dtype=np.int64),  # sstamp: states met by a single state's search
        np.empty(n_nfa + 1, dtype=np.int64),  # todo
        np.zeros(n_nfa, dtype=np.bool_),  # charged: closures of single states charged
        np.full(n_nfa, -1, dtype=np.int64),  # cl_off: where a state's closure is kept
        np.zeros(n_nfa, dtype=np.int64),  # cl_n: its important states
        np.zeros(n_nfa, dtype=np.int64),  # seen_n: the states its search visited
        np.full(n_nfa, -1, dtype=np.int64),  # single_state: the DFA state it is
    )
    pools = (np.empty(n_nfa + 1 + room, dtype=np.int64), np.empty(n_nfa + 1 + room, dtype=np.int64))
    dstates = (
        np.empty(n_nfa + 4 * room, dtype=np.int64),  # sub_pool
        np.zeros(room + 1, dtype=np.int64),  # sub_off
        np.empty(room, dtype=np.uint64),  # hashes
        np.full(2 * room, -1, dtype=np.int64),  # table
        np.zeros(room, dtype=np.bool_),  # accepting
    )
    runs = np.empty((2 * room, 4), dtype=np.int64)
    scratch = (
        np.empty(n_all + 1, dtype=np.int64),  # r_first
        np.empty(n_all + 1, dtype=np.int64),  # r_last
        np.empty(n_all + 1, dtype=np.int64),  # r_target
        np.empty(2 * n_all + 2, dtype=np.int64),  # keys
        np.empty(n_all + 1, dtype=np.int64),  # order
        np.empty(2 * n_all + 2, dtype=np.int64),  # points
        np.zeros(n_nfa, dtype=np.int64),  # active
        np.zeros(n_nfa, dtype=np.bool_),  # listed
        np.empty(n_nfa + 1, dtype=np.int64),  # alist
        np.empty(n_nfa + 1, dtype=np.int64),  # raw
        np.zeros(n_nfa, dtype=np.int64),  # stamp: states counted in a set's closure
        np.empty(n_nfa + 1, dtype=np.int64),  # cand
        np.empty(2 * n_all + 2, dtype=np.int64),  # undo_charged
        np.empty(2 * n_all + 2, dtype=np.int64),  # undo_single
    )
    met = (
        np.empty(room, dtype=np.int64),  # met_pool
        np.zeros(room + 1, dtype=np.int64),  # met_off
        np.empty(room, dtype=np.uint64),  # met_hash
        np.empty(room, dtype=np.int64),  # met_state
    )
    status, value = _start(nfa, start, regs, counts, memo, pools, dstates)
    while status == NEED_ROOM:
        status, value = _rows(nfa, final, regs, counts, memo, pools, dstates, runs, scratch, met)
        if status != NEED_ROOM:
            break
        n_states = regs[R_N_STATES]
        if value & GROW_POOLS:
            pools = (_grow(pools[0], 2 * pools[0].size), _grow(pools[1], 2 * pools[1].size))
        sub_pool, sub_off, hashes, table, accepting = dstates
        if value & GROW_SUB_POOL:
            sub_pool = _grow(sub_pool, 2 * sub_pool.size + n_nfa)
        if value & GROW_STATES:
            sub_off = _grow(sub_off, 2 * sub_off.size)
            hashes = _grow(hashes, 2 * hashes.size)
            accepting = _grow(accepting, 2 * accepting.size)
        dstates = (sub_pool, sub_off, hashes, _rehash(2 * hashes.size, hashes, n_states),
                   accepting)  # fmt: skip
        if value & GROW_RUNS:
            more = np.empty((2 * runs.shape[0], 4), dtype=np.int64)
            more[: regs[R_N_RUNS]] = runs[: regs[R_N_RUNS]]
            runs = more
        if value & GROW_MET:
            met = (_grow(met[0], 2 * met[0].size + n_nfa), _grow(met[1], 2 * met[1].size),
                   _grow(met[2], 2 * met[2].size), _grow(met[3], 2 * met[3].size))  # fmt: skip
    counts[C_USED] = regs[R_USED]
    return status, value, regs[R_N_STATES], dstates[4], runs, regs[R_N_RUNS]


def _start(nfa, start, regs, counts, memo, pools, dstates):
    """The start state: the closure of {start}, charged as a single state's first request."""
    eps_off, eps_to, important = nfa[0], nfa[1], nfa[2]
    sstamp, todo, charged, cl_off, cl_n, seen_n, single_state = memo
    cl_pool, seen_pool = pools
    sub_pool, sub_off, hashes, table, accepting = dstates
    regs[R_USED] = counts[C_USED]
    regs[R_STICK] += 1
    _search(start, eps_off, eps_to, important, sstamp, regs, todo, seen_pool, seen_n, cl_pool,
            cl_off, cl_n)  # fmt: skip
    charged[start] = True
    if regs[R_USED] + seen_n[start] > counts[C_LIMIT]:
        return OVER_BUDGET_CLOSURE, seen_n[start]
    regs[R_USED] += seen_n[start]
    if counts[C_STATES] + 1 > counts[C_MAX_STATES]:
        return OVER_STATES, counts[C_STATES] + 1
    counts[C_STATES] += 1
    size = cl_n[start]
    _copy(sub_pool, 0, cl_pool, cl_off[start], size)
    sub_off[1] = size
    h = _hash(sub_pool, 0, size)
    hashes[0] = h
    table[np.int64(h & np.uint64(table.size - 1))] = 0
    single_state[start] = 0
    regs[R_N_STATES] = 1
    return NEED_ROOM, 0


def _rows(nfa, final, regs, counts, memo, pools, dstates, runs, scratch, met):
    """Make the rows of the states from `regs[R_STATE]` on (their pieces, targets and runs),
    until every state has its row (DONE), a check refuses, or an array is full: then the row
    being made is undone (`_undo`) and NEED_ROOM says which arrays to grow."""
    eps_off, eps_to, important, e_off, e_first, e_last, e_target, widths, overlapping = nfa[:9]
    atoms_before = nfa[9]
    sstamp, todo, charged, cl_off, cl_n, seen_n, single_state = memo
    cl_pool, seen_pool = pools
    sub_pool, sub_off, hashes, table, accepting = dstates
    (r_first, r_last, r_target, keys, order, points, active, listed, alist, raw, stamp, cand,
     undo_charged, undo_single) = scratch  # fmt: skip
    met_pool, met_off, met_hash, met_state = met
    n_nfa = important.size
    n_seg = atoms_before.size - 1
    limit = counts[C_LIMIT]
    while regs[R_STATE] < regs[R_N_STATES]:
        state = regs[R_STATE]
        row_states, row_runs, row_used = regs[R_N_STATES], regs[R_N_RUNS], regs[R_USED]
        row_counted = counts[C_STATES]
        lo, hi = sub_off[state], sub_off[state + 1]
        members = hi - lo
        accepting[state] = False
        for i in range(lo, hi):
            if sub_pool[i] == final:
                accepting[state] = True
        # the row's edges, and what reading them costs
        n_edges = 0
        cost = 0
        for i in range(lo, hi):
            m = sub_pool[i]
            for k in range(e_off[m], e_off[m + 1]):
                r_first[n_edges] = e_first[k]
                r_last[n_edges] = e_last[k]
                r_target[n_edges] = e_target[k]
                n_edges += 1
            cost += widths[m]
        if n_edges == 0:
            regs[R_STATE] += 1
            continue
        if regs[R_USED] + cost > limit:
            return OVER_BUDGET_ROWS, cost
        regs[R_USED] += cost
        if members > 1:  # sorted by (first, last, target), as the Python rows are
            for i in range(n_edges):
                keys[i] = (r_first[i] * n_seg + r_last[i]) * (n_nfa + 1) + r_target[i]
            _order(keys, n_edges, order)
            _permute(r_first, order, keys, n_edges)
            _permute(r_last, order, keys, n_edges)
            _permute(r_target, order, keys, n_edges)
        swept = False
        if n_edges > 1 and (members > 1 or overlapping[sub_pool[lo]]):
            for i in range(n_edges - 1):
                if r_first[i + 1] <= r_last[i]:
                    swept = True
                    break
        n_points = 0
        if swept:  # the edges' bounds, distinct and ascending; the edges in order of ends
            for i in range(n_edges):
                points[2 * i] = r_first[i]
                points[2 * i + 1] = r_last[i] + 1
            _sort(points, 0, 2 * n_edges)
            for i in range(2 * n_edges):
                if i == 0 or points[i] != points[n_points - 1]:
                    points[n_points] = points[i]
                    n_points += 1
            _order(r_last, n_edges, order)
        # the pieces of the row: (first segment, last segment, targets raw[:n_raw])
        row_atoms = 0
        n_met = 0
        n_charged = 0
        n_single = 0
        next_start = 0
        next_end = 0
        n_alist = 0
        piece = 0
        room = 0  # what is full (GROW_*), once something is
        while True:
            if swept:
                if piece >= n_points - 1:
                    break
                p = points[piece]
                while next_end < n_edges and r_last[order[next_end]] + 1 <= p:
                    active[r_target[order[next_end]]] -= 1
                    next_end += 1
                while next_start < n_edges and r_first[next_start] <= p:
                    t = r_target[next_start]
                    if not listed[t]:
                        listed[t] = True
                        alist[n_alist] = t
                        n_alist += 1
                    active[t] += 1
                    next_start += 1
                # the active targets, sorted; the others dropped from the list
                n_raw = 0
                for i in range(n_alist):
                    t = alist[i]
                    if active[t] > 0:
                        alist[n_raw] = t
                        raw[n_raw] = t
                        n_raw += 1
                    else:
                        listed[t] = False
                n_alist = n_raw
                piece_lo = p
                piece_hi = points[piece + 1] - 1
                piece += 1
                if n_raw == 0:
                    continue
                _sort(raw, 0, n_raw)
            else:
                if piece >= n_edges:
                    break
                raw[0] = r_target[piece]
                n_raw = 1
                piece_lo = r_first[piece]
                piece_hi = r_last[piece]
                piece += 1
            target = -1
            size = 0
            if n_raw == 1:  # a single state: searched and charged once in all
                q = raw[0]
                if not charged[q]:
                    if cl_off[q] < 0:
                        if regs[R_FILL] + n_nfa + 1 > cl_pool.size:
                            room = GROW_POOLS
                            break
                        regs[R_STICK] += 1
                        _search(q, eps_off, eps_to, important, sstamp, regs, todo, seen_pool,
                                seen_n, cl_pool, cl_off, cl_n)  # fmt: skip
                    if regs[R_USED] + seen_n[q] > limit:
                        return OVER_BUDGET_CLOSURE, seen_n[q]
                    regs[R_USED] += seen_n[q]
                    charged[q] = True
                    undo_charged[n_charged] = q
                    n_charged += 1
                target = single_state[q]
                if target < 0:
                    size = cl_n[q]
                    _copy(cand, 0, cl_pool, cl_off[q], size)
            else:  # a set: met before in this row, or its closure searched and charged
                h = _hash(raw, 0, n_raw)
                for i in range(n_met):
                    if (
                        met_hash[i] == h
                        and met_off[i + 1] - met_off[i] == n_raw
                        and _same(met_pool, met_off[i], n_raw, raw, 0)
                    ):
                        target = met_state[i]
                        break
                if target < 0:
                    regs[R_TICK] += 1
                    tick = regs[R_TICK]
                    visited = 0
                    for i in range(n_raw):
                        q = raw[i]
                        if cl_off[q] < 0:
                            if regs[R_FILL] + n_nfa + 1 > cl_pool.size:
                                room = GROW_POOLS
                                break
                            regs[R_STICK] += 1
                            _search(q, eps_off, eps_to, important, sstamp, regs, todo,
                                    seen_pool, seen_n, cl_pool, cl_off, cl_n)  # fmt: skip
                        for k in range(cl_off[q], cl_off[q] + seen_n[q]):
                            x = seen_pool[k]
                            if stamp[x] != tick:  # visited, and kept if important
                                stamp[x] = tick
                                visited += 1
                                if important[x]:
                                    cand[size] = x
                                    size += 1
                    if room:
                        break
                    if regs[R_USED] + visited > limit:
                        return OVER_BUDGET_CLOSURE, visited
                    regs[R_USED] += visited
                    _sort(cand, 0, size)
            if target < 0:  # the state of the closure cand[:size], or a new one
                h = _hash(cand, 0, size)
                slot = _find(table, hashes, sub_off, sub_pool, h, cand, 0, size)
                target = table[slot]
                if target < 0:
                    if counts[C_STATES] + 1 > counts[C_MAX_STATES]:
                        return OVER_STATES, counts[C_STATES] + 1
                    n_states = regs[R_N_STATES]
                    if n_states + 1 >= hashes.size:
                        room = GROW_STATES
                        break
                    if sub_off[n_states] + size > sub_pool.size:
                        room = GROW_SUB_POOL
                        break
                    counts[C_STATES] += 1
                    target = n_states
                    regs[R_N_STATES] += 1
                    _copy(sub_pool, sub_off[target], cand, 0, size)
                    sub_off[target + 1] = sub_off[target] + size
                    hashes[target] = h
                    table[slot] = target
                if n_raw == 1:
                    single_state[raw[0]] = target
                    undo_single[n_single] = raw[0]
                    n_single += 1
                else:
                    if n_met + 1 >= met_hash.size or met_off[n_met] + n_raw > met_pool.size:
                        room = GROW_MET
                        break
                    _copy(met_pool, met_off[n_met], raw, 0, n_raw)
                    met_off[n_met + 1] = met_off[n_met] + n_raw
                    met_hash[n_met] = _hash(raw, 0, n_raw)
                    met_state[n_met] = target
                    n_met += 1
            n_runs = regs[R_N_RUNS]
            if n_runs >= runs.shape[0]:
                room = GROW_RUNS
                break
            runs[n_runs, 0] = state
            runs[n_runs, 1] = piece_lo
            runs[n_runs, 2] = piece_hi - piece_lo + 1
            runs[n_runs, 3] = target
            regs[R_N_RUNS] += 1
            row_atoms += atoms_before[piece_hi + 1] - atoms_before[piece_lo]
        if swept:  # the row's counts back to zero
            for i in range(n_edges):
                active[r_target[i]] = 0
                listed[r_target[i]] = False
        if room:  # undo the row: it is made again once there is room
            for i in range(n_charged):
                charged[undo_charged[i]] = False
            for i in range(n_single):
                single_state[undo_single[i]] = -1
            regs[R_N_STATES], regs[R_N_RUNS], regs[R_USED] = row_states, row_runs, row_used
            counts[C_STATES] = row_counted
            return NEED_ROOM, room
        if counts[C_TRANSITIONS] + row_atoms > counts[C_MAX_TRANSITIONS]:
            return OVER_TRANSITIONS, counts[C_TRANSITIONS] + row_atoms
        counts[C_TRANSITIONS] += row_atoms
        regs[R_STATE] += 1
    return DONE, 0


def _segments(lo, hi, target, counts):
    """`dfa._segments` on the flat edges (`lo`, `hi`, `target`, `counts[q]` edges per state, in
    state order): the segments' first and last atoms, each edge's first and last segment with
    a state's edges sorted by (first, last, target), the states' edge offsets and widths, and
    whether two edges of a state share a segment."""
    m, n = lo.size, counts.size
    points = np.empty(2 * m, dtype=np.int64)
    points[:m] = lo
    points[m:] = hi + 1
    points.sort()
    size = 0
    for i in range(2 * m):
        if i == 0 or points[i] != points[size - 1]:
            points[size] = points[i]
            size += 1
    bounds = points[:size]
    at_lo = np.searchsorted(bounds, lo)
    past_hi = np.searchsorted(bounds, hi + 1)
    depth = np.zeros(size + 1, dtype=np.int64)
    for e in range(m):
        depth[at_lo[e]] += 1
        depth[past_hi[e]] -= 1
    segment_at = np.empty(size, dtype=np.int64)
    n_seg = 0
    running = 0
    for i in range(max(size - 1, 0)):  # elementary interval i: bounds[i] .. bounds[i + 1] - 1
        running += depth[i]
        segment_at[i] = n_seg if running > 0 else n_seg - 1
        if running > 0:
            n_seg += 1
    seg_lo = np.empty(n_seg, dtype=np.int64)
    seg_hi = np.empty(n_seg, dtype=np.int64)
    running = 0
    j = 0
    for i in range(max(size - 1, 0)):
        running += depth[i]
        if running > 0:
            seg_lo[j] = bounds[i]
            seg_hi[j] = bounds[i + 1] - 1
            j += 1
    offsets = np.zeros(n + 1, dtype=np.int64)
    for q in range(n):
        offsets[q + 1] = offsets[q] + counts[q]
    first = np.empty(m, dtype=np.int64)
    last = np.empty(m, dtype=np.int64)
    target_sorted = np.empty(m, dtype=np.int64)
    widths = np.zeros(n, dtype=np.int64)
    overlapping = np.zeros(n, dtype=np.bool_)
    keys = np.empty(m, dtype=np.int64)
    order = np.empty(m, dtype=np.int64)
    for q in range(n):
        a, b = offsets[q], offsets[q + 1]
        for e in range(a, b):
            keys[e - a] = (segment_at[at_lo[e]] * n_seg + segment_at[past_hi[e] - 1]) * (n + 1)
            keys[e - a] += target[e]
            widths[q] += hi[e] - lo[e] + 1
        _order(keys, b - a, order)
        for i in range(b - a):
            e = a + order[i]
            first[a + i] = segment_at[at_lo[e]]
            last[a + i] = segment_at[past_hi[e] - 1]
            target_sorted[a + i] = target[e]
            if i and first[a + i] <= last[a + i - 1]:
                overlapping[q] = True
    return seg_lo, seg_hi, first, last, target_sorted, offsets, widths, overlapping


def _filled(runs, n_runs, n_states, n_seg):
    """The dense table (int32[n_states, n_seg]) that `runs[:n_runs]` describe."""
    table = np.full((n_states, n_seg), -1, dtype=np.int32)
    for i in range(n_runs):
        state, lo, length, target = runs[i, 0], runs[i, 1], runs[i, 2], runs[i, 3]
        for j in range(lo, lo + length):
            table[state, j] = target
    return table


def _whole(lo, hi, target, counts, eps_counts, eps_to, start, final, totals, room):
    """From an NFA's flat edges to its DFA: the segments, the subset construction and the
    table. Returns (status, value, accepting, table, first atoms, last atoms of the segments)."""
    seg_lo, seg_hi, first, last, target_sorted, offsets, widths, overlapping = _segments(
        lo, hi, target, counts
    )
    n = counts.size
    eps_off = np.zeros(n + 1, dtype=np.int64)
    for q in range(n):
        eps_off[q + 1] = eps_off[q] + eps_counts[q]
    important = counts > 0
    important[final] = True
    atoms_before = np.zeros(seg_lo.size + 1, dtype=np.int64)
    for j in range(seg_lo.size):
        atoms_before[j + 1] = atoms_before[j] + seg_hi[j] - seg_lo[j] + 1
    nfa = (eps_off, eps_to, important, offsets, first, last, target_sorted, widths, overlapping,
           atoms_before)  # fmt: skip
    status, value, n_states, accepting, runs, n_runs = _determinize(nfa, start, final, totals, room)
    if status != DONE:
        return status, value, accepting[:0], np.empty((0, 0), dtype=np.int32), seg_lo, seg_hi
    table = _filled(runs, n_runs, n_states, seg_lo.size)
    return status, value, accepting[:n_states].copy(), table, seg_lo, seg_hi


@functools.cache
def _compiled():
    from numba import njit

    options = {"cache": True, "nogil": True}
    # called per piece: inlined, or every call would count references to every array passed
    for helper in (_copy, _sort, _hash, _same, _find, _permute, _order, _search):
        globals()[helper.__name__] = njit(inline="always", **options)(helper)
    for helper in (_grow, _rehash, _start, _rows, _determinize, _segments, _filled):
        globals()[helper.__name__] = njit(**options)(helper)
    return njit(**options)(_whole)


def determinize(nfa: Nfa, totals: np.ndarray) -> tuple:
    """`_whole` compiled on `nfa` (the first call compiles it or loads it from numba's cache):
    (status, value, accepting, table, segments' first atoms, last atoms), with `totals` (the
    running totals and the budget, `C_*`) updated in place."""
    counts, flat = nfa.edge_arrays()
    eps_counts, eps_to = nfa.eps_arrays()
    return _compiled()(
        np.ascontiguousarray(flat[:, 0]), np.ascontiguousarray(flat[:, 1]),
        np.ascontiguousarray(flat[:, 2]), counts, eps_counts, eps_to, nfa.start, nfa.final,
        totals, FIRST_ROOM,
    )  # fmt: skip
