"""DFAs of sequences and bounded repetitions built from their parts' tables, without copies.

An operand of an `AND` node is determinised on its own (`boolean.product`). The common one is
a JSON string of bounded length, `"` unit{lo,hi} `"` (a `pattern` beside a `maxLength`): its
NFA copies the unit `hi` times, and subset construction and minimisation then walk
`hi` times the unit's states in Python (`maxLength: 1024`: 78,854 NFA states, 20,483 DFA
states, a second). Its DFA follows from the parts' minimal DFAs directly:

* **Concatenation** `A B`: A's states, then B's; every accepting state of A also takes B's
  start row (the moves B can begin with) and accepts only if B's start accepts. That is
  deterministic, and exact, when no accepting state of A moves on an atom B's start moves on
  (else a byte could end A or go on in it) and nothing returns to B's start (its row would be
  taken again after A ended). Otherwise there is no tiled table (`None`) and the operand is
  determinised as before.
* **Repetition** `x{lo,hi}`: `hi` copies of x's table, concatenated as above, where copy `c`'s
  accepting states accept when `c + 1 >= lo`; the start accepts when `lo = 0`. A nullable x
  has no tiled table (its copies could be skipped).

The tables are deterministic but not always minimal; the product that uses them is minimised
(`boolean.product`), so its table is the one the determinised operand gave. The state and
transition limits are checked before a tiled table is allocated (`tiled_states`,
`tiled_transitions`), as an operand's subset construction checks them on its own, and building
it charges the budget a state and a transition per state and transition tiled.
"""

from __future__ import annotations

import numpy as np

from trgc.automata.dfa import NONE, Table, common_cuts
from trgc.limits import Budget


def tiled_states(body: Table, hi: int) -> int:
    """States of `repeat(body, lo, hi)` (check the state limit with it first)."""
    return body.n_states * hi


def tiled_transitions(body: Table, hi: int) -> int:
    """Transitions of `repeat(body, lo, hi)`, per atom as `Table.n_transitions` counts them:
    the copies', and the start row taken by each accepting state of all copies but the last
    (check the transition limit with it first)."""
    starts = int((body.next[0] >= 0) @ body.width)
    return hi * body.n_transitions + (hi - 1) * int(np.count_nonzero(body.accepting)) * starts


def repeat(body: Table, lo: int, hi: int, budget: Budget) -> Table | None:
    """The DFA of `body{lo,hi}`, or None where tiling is not exact."""
    n, copies = body.n_states, hi
    if body.accepting[0] or not _closable(body, body):
        return None
    budget.charge(copies * (n + int(np.count_nonzero(body.next >= 0))), "NFA construction")
    offsets = (np.arange(copies, dtype=np.int64) * n)[:, None, None]
    cells = np.where(body.next[None] >= 0, body.next[None] + offsets, NONE)
    moves = np.flatnonzero(body.next[0] >= 0)
    ends = np.flatnonzero(body.accepting)
    # copy c's accepting states take copy c + 1's start row
    cells[np.ix_(np.arange(copies - 1), ends, moves)] = body.next[0, moves] + offsets[1:]
    accepting = np.zeros((copies, n), dtype=bool)
    done = np.arange(1, copies + 1)  # copies complete at copy c's accepting states
    accepting[:, ends] = (done >= lo)[:, None]
    next_table = cells.reshape(copies * n, -1).astype(np.int32)
    flat_accepting = accepting.reshape(-1)
    flat_accepting[0] = lo == 0
    return Table(next_table, flat_accepting, body.seg_lo, body.seg_hi)


def concat(parts: list[Table], budget: Budget) -> Table | None:
    """The DFA of the parts one after another, or None where merging is not exact."""
    lo, hi = _common_segments(parts)
    tables = [_on_segments(part, lo, hi) for part in parts]
    result = tables[0]
    for table in tables[1:]:
        if not _closable(result, table):
            return None
        budget.charge(result.n_states + table.n_states, "NFA construction")
        base = result.n_states
        shifted = np.where(table.next >= 0, table.next + base, NONE).astype(np.int32)
        next_table = np.concatenate([result.next, shifted])
        ends = np.flatnonzero(result.accepting)
        moves = np.flatnonzero(table.next[0] >= 0)
        next_table[np.ix_(ends, moves)] = shifted[0, moves]
        accepting = np.concatenate([result.accepting & bool(table.accepting[0]), table.accepting])
        result = Table(next_table, accepting, lo, hi)
    return result


def _closable(first: Table, then: Table) -> bool:
    """Whether `first`'s accepting states can take `then`'s start row exactly: no atom both
    move on, and nothing enters `then`'s start (both on one segmentation)."""
    if np.any(then.next == 0):
        return False
    ends = first.next[first.accepting] >= 0
    return not np.any(ends & (then.next[0] >= 0)[None, :])


def _common_segments(parts: list[Table]) -> tuple[np.ndarray, np.ndarray]:
    """The coarsest segments that refine every part's: the common cuts some part covers."""
    lo, hi = common_cuts(parts)
    covered = np.zeros(lo.size, dtype=bool)
    for part in parts:
        covered |= part.columns_at(lo) >= 0
    return lo[covered], hi[covered]


def _on_segments(part: Table, lo: np.ndarray, hi: np.ndarray) -> Table:
    """`part` over finer segments `lo..hi` (each inside one of its segments or outside all)."""
    column = part.columns_at(lo)
    next_table = np.full((part.n_states, lo.size), NONE, dtype=np.int32)
    inside = column >= 0
    next_table[:, inside] = part.next[:, column[inside]]
    return Table(next_table, part.accepting, lo, hi)
