"""DFA minimisation (partition refinement on dense tables) and breadth-first renumbering.

The DFAs here are partial (a missing transition rejects, and is not the same as a transition
to a dead state), so two states are equivalent when they agree on acceptance and, segment by
segment, either both lack a transition or move to equivalent states: the coarsest stable
refinement of {accepting, rejecting}. The result does not depend on how it is found (that
partition is unique), and it is renumbered breadth-first, segments ascending.

`minimize_table` first classifies the *finite* states, from which no cycle is reachable,
exactly in one pass in reverse topological order (`_finite_levels`, `_finite_classes`); the
others start from their acceptance. Moore's rounds (Moore 1956) then refine the partition
over the whole table at once (numpy): a state's signature is its own block and the blocks of
its successors, per segment; each round hashes every signature to one 64-bit word
(`grouping.multipliers`), makes the states of equal words one block, numbered as its first
state, until the number of blocks stops growing. Numbering a block by its first state (not,
say, by the rank of its word) makes the numbers a function of the partition alone, so the
compiled rounds, which find equal words without sorting them, number every block alike.
Equivalent states always get equal words, so the partition is never finer than the
coarsest one; a hash collision could only merge too much, so the final partition is checked
exactly: acceptance and successor blocks agree within every block. Stable and never too fine,
it is the coarsest one. The rounds needed are about as many as the longest stretch two
states' futures agree on, which for finite states is their longest path: a long acyclic chain
(a bounded string intersected with a pattern, a machine of a schema with bounded whitespace)
would need one round per state, and classified first it needs one round in all. When 48 rounds
(`MOORE_ROUNDS`) do not settle or the check fails, Hopcroft's algorithm (Hopcroft 1971),
O(m log n) in Python, refines from the partition reached. It works without a sink if every
initial block starts in the worklist (Valmari and Lehtinen, "Efficient minimization of DFAs
with partial transition functions", 2008); when a block that is not waiting is split, only
the smaller half is queued.

The finite levels charge one operation per state and per distinct successor pair. The rounds
charge the budget one operation per state and transition, once (the whole-array
work of at most `MOORE_ROUNDS` rounds costs less than one Python step per element), plus one
per round; Hopcroft's algorithm charges per state and transition it examines (at least every
transition once, so the rounds charge less than it would whenever they settle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from trgc.automata import jit, minimize_kernel
from trgc.automata.dfa import NONE, Counter, Dfa, Table, determinize_table
from trgc.automata.graph import bfs_order, csr, edge_pairs
from trgc.automata.grouping import group_rows, multipliers, sort_groups
from trgc.limits import Budget, Limits

if TYPE_CHECKING:
    from trgc.automata.nfa import Nfa


def renumber_table(table: Table, start: int = 0) -> Table:
    """Keep the states reachable from `start`, numbered breadth-first with segments ascending."""
    order = bfs_order(table.next, start)
    n = table.n_states
    new_id = np.full(n + 1, NONE, dtype=np.int32)
    new_id[order] = np.arange(order.size, dtype=np.int32)
    rows = table.next[order]
    return table.with_next(new_id[np.where(rows < 0, n, rows)], table.accepting[order])


MOORE_ROUNDS = 48


def _moore(table: Table, block: np.ndarray, budget: Budget) -> bool:
    """Moore rounds from `block` (int64[n + 1], block[n] = -1 for "no transition"), in place;
    True when they reached the coarsest stable partition. Compiled where the kernels run
    (`minimize_kernel.rounds`: the same rounds, blocks and charges)."""
    next_table = table.next
    n, k = next_table.shape
    if jit.enabled() and n > 0:
        status, rounds, entries = minimize_kernel.rounds(
            next_table, table.accepting, multipliers(k + 1), MOORE_ROUNDS, block
        )
        _charge_rounds(budget, entries, rounds)
        return status == minimize_kernel.SETTLED
    states, cols = np.nonzero(next_table >= 0)
    # one entry per state (its own block) followed by one per transition, grouped by state
    per_state = np.bincount(states, minlength=n) + 1
    starts = np.cumsum(per_state) - per_state
    owner = np.repeat(np.arange(n, dtype=np.int64), per_state)
    slot = np.arange(owner.size, dtype=np.int64) - starts[owner]
    own = slot == 0
    source = np.empty(owner.size, dtype=np.int64)
    source[own] = np.arange(n, dtype=np.int64)
    source[~own] = next_table[states, cols]
    weights = multipliers(k + 1)
    factor = np.empty(owner.size, dtype=np.uint64)
    factor[own] = weights[k]
    factor[~own] = weights[cols]
    # one pass over the table's states and transitions, then one per round: a round is a
    # handful of whole-array numpy operations, and the rounds are at most MOORE_ROUNDS
    budget.charge(int(owner.size), "minimisation")
    # distinct blocks by counting (a bare np.unique would import numpy.ma, ~20 ms a process)
    count = int(np.count_nonzero(np.bincount(block[:n])))
    new = np.empty(n, dtype=bool)
    new[:1] = True
    positions = np.arange(n, dtype=np.int64)
    for _ in range(MOORE_ROUNDS):
        budget.charge(1, "minimisation")
        words = np.add.reduceat((block[source] + 2).view(np.uint64) * factor, starts)
        # the states of equal words, one run each after a stable sort, a run's first state
        # its smallest; a block is numbered as that state, which does not depend on the words
        # (the kernel finds the same blocks without sorting, so both number them alike)
        order = np.argsort(words, kind="stable")
        ordered = words[order]
        np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
        blocks = int(np.count_nonzero(new))
        if blocks == count:
            break
        block[order] = order[np.maximum.accumulate(np.where(new, positions, 0))]
        count = blocks
    else:
        return False
    signature = block[np.where(next_table < 0, n, next_table)]
    first, inverse = sort_groups(block[:n])
    leader = first[inverse]
    accepting = table.accepting
    return bool((accepting == accepting[leader]).all() and (signature == signature[leader]).all())


# a level of the reverse topological order with at least this many states is classified on
# whole arrays (its keys compared as bytes); a narrower one (a chain) state by state, where
# numpy's call overhead would cost more than the loop
WIDE_LEVEL = 8
# tables below this many states are minimised in one compiled call where numba is loaded
# (`minimize_kernel`); larger ones run the steps below, each compiled there
CHAIN_CHECK_STATES = 512


def _finite_levels(table: Table, budget: Budget) -> list[list[int]] | minimize_kernel.Levels:
    """The *finite* states, those from which no cycle is reachable, in levels of reverse
    topological order (Kahn's algorithm on successor counts): a level is the states whose
    successors are all in earlier levels, so a level is the states of one longest-path
    length (to a state without transitions)."""
    if jit.enabled():
        levels, entries = minimize_kernel.levels(table.next)
        budget.charge(entries, "minimisation")
        return levels
    n = table.n_states
    sources, targets = edge_pairs(table.next)
    budget.charge(n + int(sources.size), "minimisation")
    offsets, preds = csr(targets, sources, n)
    off, pre = offsets.tolist(), preds.tolist()
    remaining = np.bincount(sources, minlength=n).tolist()
    level = [s for s in range(n) if remaining[s] == 0]
    levels = []
    while level:
        levels.append(level)
        below: list[int] = []
        for t in level:
            for s in pre[off[t] : off[t + 1]]:
                remaining[s] -= 1
                if remaining[s] == 0:
                    below.append(s)
        level = below
    return levels


def _finite_classes(
    table: Table,
    block: np.ndarray,
    budget: Budget,
    levels: list[list[int]] | minimize_kernel.Levels | None = None,
) -> None:
    """The partition the rounds refine from (`block`, int64[n + 1], in place): the exact
    classes of the finite states (`_finite_levels`, computed unless given), and the others
    by acceptance.

    Two equivalent states have the same paths (as column sequences), so a finite state is
    never equivalent to one that reaches a cycle, nor to one whose longest path is longer.
    Taken level by level, a finite state's successors are all classified before it, and its
    class is its acceptance and its successors' classes per column: equal exactly when the
    states are equivalent, by induction on the longest path. Long chains (a bounded string
    intersected with a pattern) need one round each, and here one step each. The partition
    is never finer than the coarsest one and coarser only among the states that reach
    cycles, which the rounds then split."""
    n = table.n_states
    if levels is None:
        levels = _finite_levels(table, budget)
    if isinstance(levels, minimize_kernel.Levels):
        weights = multipliers(table.next.shape[1] + 1)
        minimize_kernel.classes(table.next, table.accepting, levels, weights, block)
        return
    accepting = table.accepting.tolist()
    targets = np.where(table.next < 0, n, table.next)
    rows = targets.tolist()  # for the state-by-state levels
    label = np.full(n + 1, -1, dtype=np.int64)  # label[n]: no transition
    labels = [-1] * (n + 1)  # the same as a list, ahead of `label` by the states in `unsynced`
    unsynced: list[int] = []
    count = 0
    for level in levels:
        classes: dict[object, int] = {}
        if len(level) >= WIDE_LEVEL:
            if unsynced:  # the array catches up once per wide level, not once per level
                label[unsynced] = [labels[s] for s in unsynced]
                unsynced = []
            states = np.array(level, dtype=np.int64)
            keys = label[targets[states]]
            keys[:, 0] = keys[:, 0] * 2 + table.accepting[states]  # labels are >= -1
            width = keys.shape[1] * keys.itemsize
            raw = keys.tobytes()
            for i, s in enumerate(level):
                labels[s] = classes.setdefault(
                    raw[i * width : (i + 1) * width], count + len(classes)
                )
        else:  # states of one level with equal keys are equivalent; other levels never are
            for s in level:
                key = (accepting[s], *[labels[t] for t in rows[s]])
                labels[s] = classes.setdefault(key, count + len(classes))
        unsynced.extend(level)
        count += len(classes)
    finite = np.array(labels[:n], dtype=np.int64)
    block[:n] = np.where(finite >= 0, finite + 2, table.accepting)


def _hopcroft(table: Table, block: np.ndarray, budget: Budget) -> None:
    """Hopcroft's refinement from the partition `block` (int64[n + 1]), in place. Compiled
    where the kernels run (`minimize_kernel.hopcroft`: the same steps, blocks and charges).

    Every step is in an order fixed by the table alone, so the compiled version can take the
    same steps and charge the same amounts: the states sit in one array where each block is
    a range (initially the blocks in ascending order of their values, states ascending within
    each); a splitter's predecessors are gathered by column, columns ascending, each column's
    sources in the order of the splitter's states and of their predecessors (ascending state,
    then column); each source is moved to the front of its block's range, blocks taken in the
    order first touched; a split block keeps its unmarked rest and its marked front becomes a
    new block, numbered next. The waiting stack follows Valmari and Lehtinen (module
    docstring): the new block is queued when the split one is waiting or the new one is not
    larger, else the split one is."""
    n = table.n_states
    rows = table.next.tolist()
    inverse: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    m = 0
    for s, row in enumerate(rows):
        for j, t in enumerate(row):
            if t >= 0:
                inverse[t].append((j, s))
                m += 1
    budget.charge(n + m, "minimisation")
    initial = block[:n].tolist()
    elems = sorted(range(n), key=initial.__getitem__)  # stable: states ascending in a block
    where = [0] * n
    block_of = [0] * n
    first: list[int] = []
    end: list[int] = []
    for pos, s in enumerate(elems):
        if pos == 0 or initial[s] != initial[elems[pos - 1]]:
            first.append(pos)
            end.append(pos)
        end[-1] = pos + 1
        block_of[s] = len(first) - 1
        where[s] = pos
    marked = [0] * len(first)
    waiting = list(range(len(first)))
    in_waiting = [True] * len(first)
    while waiting:
        splitter = waiting.pop()
        in_waiting[splitter] = False
        pre: dict[int, list[int]] = {}
        for t in elems[first[splitter] : end[splitter]]:
            for j, s in inverse[t]:
                sources = pre.get(j)
                if sources is None:
                    pre[j] = [s]
                else:
                    sources.append(s)
        for j in sorted(pre):
            sources = pre[j]
            budget.charge(len(sources), "minimisation")
            touched = []
            for s in sources:  # a state has one transition per column: no source twice
                b = block_of[s]
                if not marked[b]:
                    touched.append(b)
                at = first[b] + marked[b]
                other, p = elems[at], where[s]
                elems[at], elems[p] = s, other
                where[s], where[other] = at, p
                marked[b] += 1
            for y in touched:
                count = marked[y]
                marked[y] = 0
                if count == end[y] - first[y]:
                    continue
                z = len(first)
                first.append(first[y])
                end.append(first[y] + count)
                first[y] += count
                marked.append(0)
                for s in elems[first[z] : end[z]]:
                    block_of[s] = z
                if in_waiting[y] or count <= end[y] - first[y]:
                    waiting.append(z)
                    in_waiting.append(True)
                else:
                    in_waiting.append(False)
                    waiting.append(y)
                    in_waiting[y] = True
    block[:n] = block_of


def distinct_columns(next_table: np.ndarray) -> np.ndarray:
    """Indices of one column per distinct column of `next_table` that has a transition,
    ascending. Two states agree on every column iff they agree on these: a repeated column
    (segments every state treats alike, common in products and wide classes) or an empty one
    adds nothing to a signature, so refinement over these finds the same partition."""
    if jit.enabled():
        return minimize_kernel.distinct_columns(next_table, multipliers(1)[0])
    used = np.nonzero((next_table >= 0).any(axis=0))[0]
    if used.size < 2:
        return used
    _, first = group_rows(np.ascontiguousarray(next_table[:, used].T))
    return used[first]  # first columns of their groups, ascending


def minimize_table(table: Table, budget: Budget) -> Table:
    """The minimal DFA equivalent to `table` (all states assumed reachable), BFS-numbered.

    Refinement runs over the distinct columns only (`distinct_columns`); the budget is
    charged as for the whole table. Where the compiler's kernels run (`jit.enabled()`) a
    table below `CHAIN_CHECK_STATES` states whose rounds settle is minimised by
    `minimize_kernel` in one call, and the steps of this path are its compiled steps
    otherwise; the same table and charges."""
    n = table.n_states
    kept = distinct_columns(table.next)
    has = table.next >= 0
    saved = int(np.count_nonzero(has)) - int(np.count_nonzero(has[:, kept]))
    narrow = table.with_next(np.ascontiguousarray(table.next[:, kept]))
    if 0 < n < CHAIN_CHECK_STATES and jit.enabled():
        found = _minimize_compiled(table, narrow, saved, budget)
        if found is not None:
            return found
    block = np.empty(n + 1, dtype=np.int64)
    block[:n] = table.accepting
    block[n] = -1
    budget.charge(saved, "minimisation")
    # the states with finitely many paths classified exactly in one pass, the others by
    # acceptance: the rounds then refine only what reaches a cycle
    _finite_classes(narrow, block, budget)
    settled = _moore(narrow, block, budget)
    if not settled:
        # the rounds reached a partition never finer than the coarsest one; split it by
        # acceptance (a collision may have merged across) and refine it exactly
        block[:n] = block[:n] * 2 + table.accepting
        if jit.enabled():
            spent = minimize_kernel.hopcroft(narrow.next, block, budget.limit - budget.used)
            budget.charge(spent, "minimisation")  # past the limit exactly where `_hopcroft` is
        else:
            _hopcroft(narrow, block, budget)
    if jit.enabled():
        next_table, accepting = minimize_kernel.quotient(table.next, table.accepting, block)
        return table.with_next(next_table, accepting)
    representative, quotient = sort_groups(block[:n])
    quotient = np.append(quotient.astype(np.int32), np.int32(NONE))
    rows = table.next[representative]
    merged = table.with_next(quotient[np.where(rows < 0, n, rows)], table.accepting[representative])
    return renumber_table(merged, int(quotient[0]))


def _minimize_compiled(table: Table, narrow: Table, saved: int, budget: Budget) -> Table | None:
    """`minimize_table` by `minimize_kernel`, charging what the Python path charges in the
    same order (the distinct columns' saving, the states and transitions, one per round);
    None, with nothing charged, when its rounds do not settle or fail the check."""
    status, rounds, leveled, entries, next_table, accepting = minimize_kernel.minimize(
        narrow.next, np.ascontiguousarray(table.next), table.accepting,
        multipliers(narrow.next.shape[1] + 1), MOORE_ROUNDS,
    )  # fmt: skip
    if status != minimize_kernel.SETTLED:
        return None
    budget.charge(saved, "minimisation")
    budget.charge(int(leveled), "minimisation")
    _charge_rounds(budget, int(entries), rounds)
    return table.with_next(next_table, accepting)


def _charge_rounds(budget: Budget, entries: int, rounds: int) -> None:
    """What `_moore` charges, replayed after compiled rounds: its states and transitions,
    then one per round (so a refusal comes at the same charge)."""
    budget.charge(entries, "minimisation")
    for _ in range(rounds):
        budget.charge(1, "minimisation")


def minimize(dfa: Dfa, budget: Budget) -> Dfa:
    """The minimal DFA equivalent to `dfa` (atom rows), BFS-numbered."""
    return minimize_table(Table.from_dfa(dfa), budget).to_dfa()


def renumber(dfa: Dfa, start: int = 0) -> Dfa:
    """Keep the states reachable from `start`, numbered breadth-first with atoms ascending."""
    order = {start: 0}
    queue = [start]
    index = 0
    while index < len(queue):
        s = queue[index]
        index += 1
        row = dfa.delta[s]
        for a in sorted(row):
            t = row[a]
            if t not in order:
                order[t] = len(queue)
                queue.append(t)
    delta = [{a: order[t] for a, t in sorted(dfa.delta[s].items())} for s in queue]
    return Dfa(delta, [dfa.accepting[s] for s in queue])


def minimal_table(nfa: Nfa, *, what: str, limits: Limits, budget: Budget) -> Table:
    """The minimal DFA of an NFA built apart (an operand of a product): its subset
    construction is checked against `limits.states` on its own, not toward the running
    totals of the machines."""
    table = determinize_table(nfa, rule=what, limits=limits, budget=budget, counter=Counter())
    return minimize_table(table, budget)
