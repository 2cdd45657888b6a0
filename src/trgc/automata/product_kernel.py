"""The breadth-first walk of a product automaton (`boolean._walk`), compiled with numba.

`boolean._walk` walks one level of the product at a time on whole arrays, about a dozen
numpy calls per level; a pattern intersected with a counted length is a chain of hundreds of
levels, so the calls, not the work, were most of its time. Here the walk goes tuple by
tuple: a tuple (one state per operand) is interned in an open-addressing table keyed by a
hash of its states and compared in full, and numbered when first met, tuples ascending and
classes ascending, which is the numbering the level-at-a-time walk gives.

Same accounting: the budget is charged each level's lead-operand atoms before the level is
read, and a level that meets more states than the limit allows is refused. The kernel
cannot raise, so it stops at the first charge or check that fails and reports it (`status`,
`value`, with the budget used as it was before that charge) for `boolean._walk` to raise
as its Python walk would. It runs only where numba is already loaded (`jit.enabled()`);
the tests compare it with the Python walk on random operands and on every product of the
shipped schemas and corpus schemas.

Data: the operands' class rows stacked (`rows`, operand `i`'s state `s` at row
`offsets[i] + s`, its sink row included), their acceptance stacked alike, and the tuples met
so far as rows of `parts`.
"""

from __future__ import annotations

import functools

import numpy as np

from trgc.automata.dfa import NONE
from trgc.automata.grouping import GOLDEN

DONE, OVER_STATES, OVER_BUDGET = range(3)
# `totals` in and out: the budget used and its limit, and the states limit
T_USED, T_LIMIT, T_MAX_STATES = range(3)
# tuples the arrays hold before they first grow; tests make it 1
FIRST_ROOM = 256

# the odd multiplier that mixes a tuple's states into one hash (wrapping arithmetic)
_MIX = np.uint64(0xC2B2AE3D27D4EB4F)


def _hash(states, shift):
    """The slot of the tuple `states` in a table of 2^(64 - shift) slots."""
    h = np.uint64(0)
    for i in range(states.size):
        h = (h + np.uint64(states[i] + 1)) * _MIX
    return np.int64((h * GOLDEN) >> shift)


def _walk(rows, offsets, accepts, lead, lead_atoms, totals, room):
    """(status, value, table int32[n, n_classes], accepting bool[n]) of the product of the
    operands' class rows (`boolean._class_rows`, stacked at `offsets`); a tuple charges
    `lead_atoms[s]` when operand `lead` is in state `s`. `totals` (`T_*`) is updated in
    place."""
    n_ops = offsets.size
    n_classes = rows.shape[1]
    parts = np.zeros((room, n_ops), dtype=np.int64)
    out = np.empty((room, n_classes), dtype=np.int32)
    slots, shift, mask = _empty_slots(max(16, 2 * room))  # tuple numbers, -1: free
    target = np.empty(n_ops, dtype=np.int64)
    slots[_hash(parts[0], shift)] = 0
    count = 1
    begin = 0
    while begin < count:
        end = count
        charge = 0
        for t in range(begin, end):
            charge += lead_atoms[parts[t, lead]]
        if totals[T_USED] + charge > totals[T_LIMIT]:
            return OVER_BUDGET, charge, _no_rows(n_classes), np.empty(0, dtype=np.bool_)
        totals[T_USED] += charge
        for t in range(begin, end):
            for c in range(n_classes):
                alive = True
                for i in range(n_ops):
                    s = rows[offsets[i] + parts[t, i], c]
                    if s < 0:
                        alive = False
                        break
                    target[i] = s
                if not alive:
                    out[t, c] = NONE
                    continue
                j = _hash(target, shift)
                while slots[j] >= 0 and not _same(parts, slots[j], target):
                    j = (j + 1) & mask
                if slots[j] < 0:
                    if count + 1 > totals[T_MAX_STATES]:
                        refused = _no_rows(n_classes)
                        return OVER_STATES, count + 1, refused, np.empty(0, dtype=np.bool_)
                    if count == parts.shape[0]:
                        parts = _grown(parts)
                        out = _grown(out)
                    if 2 * (count + 1) > slots.size:
                        slots, shift, mask = _rehash(slots, parts)
                        j = _hash(target, shift)
                        while slots[j] >= 0:
                            j = (j + 1) & mask
                    slots[j] = count
                    parts[count] = target
                    count += 1
                out[t, c] = slots[j]
        begin = end
    accepting = np.ones(count, dtype=np.bool_)
    for t in range(count):
        for i in range(n_ops):
            if not accepts[offsets[i] + parts[t, i]]:
                accepting[t] = False
                break
    return DONE, 0, out[:count].copy(), accepting


def _same(parts, number, states):
    """Is tuple `number` the tuple `states`? (A loop: numba compiles no generator.)"""
    for i in range(states.size):  # noqa: SIM110
        if parts[number, i] != states[i]:
            return False
    return True


def _no_rows(n_classes):
    return np.empty((0, n_classes), dtype=np.int32)


def _grown(arr):
    """`arr` with twice as many rows."""
    out = np.zeros((2 * arr.shape[0], arr.shape[1]), dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out


def _empty_slots(size):
    """(an empty table of at least `size` slots, a power of two; its hash shift; its mask)."""
    bits = 0
    while (1 << bits) < size:
        bits += 1
    return np.full(1 << bits, -1, dtype=np.int64), np.uint64(64 - bits), (1 << bits) - 1


def _rehash(slots, parts):
    """The table twice as large, every tuple moved."""
    moved, shift, mask = _empty_slots(2 * slots.size)
    for k in range(slots.size):
        number = slots[k]
        if number >= 0:
            j = _hash(parts[number], shift)
            while moved[j] >= 0:
                j = (j + 1) & mask
            moved[j] = number
    return moved, shift, mask


@functools.cache
def _compiled():
    from numba import njit

    options = {"cache": True, "nogil": True}
    for helper in (_hash, _same):
        globals()[helper.__name__] = njit(inline="always", **options)(helper)
    for helper in (_no_rows, _grown, _empty_slots, _rehash):
        globals()[helper.__name__] = njit(**options)(helper)
    return njit(**options)(_walk)


def walk(
    rows: list[np.ndarray],
    accepts: list[np.ndarray],
    lead: int,
    lead_atoms: np.ndarray,
    totals: np.ndarray,
) -> tuple[int, int, np.ndarray, np.ndarray]:
    """`_walk` compiled on the operands' class rows and acceptance (the first call compiles
    it or loads it from numba's cache)."""
    offsets = np.cumsum([0] + [r.shape[0] for r in rows[:-1]]).astype(np.int64)
    status, value, table, accepting = _compiled()(
        np.concatenate(rows), offsets, np.concatenate(accepts), lead,
        np.ascontiguousarray(lead_atoms, dtype=np.int64), totals, FIRST_ROOM,
    )  # fmt: skip
    return int(status), int(value), table, accepting
