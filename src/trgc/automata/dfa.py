"""Subset construction: NFA over atoms -> DFA over the machine's own segments of atoms.

A DFA state is the set of *important* NFA states (those with a labelled edge, or the final
state) in the epsilon closure; two closures with the same important states behave the same.
States are numbered in discovery order of a FIFO walk from the start, atoms ascending, so
the result is deterministic. Every new state and transition is checked against the limits
(a running total shared by all machines, in `Counter`) *before* it is created, and every
step is charged to the budget, so exponential blow-ups fail fast with `E_LIMIT_STATES`.

The construction works on *segments* instead of single atoms: the edge boundaries of one
NFA cut the atoms into maximal runs that no edge of that NFA splits, and every DFA state
treats the atoms of one segment alike. The DFA is a dense `Table` (numpy, states x segments),
so a character class that spans sixty atoms is one column, not sixty transitions. Counting
and charging stay per atom (a segment of width w is w transitions, an edge over w atoms costs
w operations), so limits, budgets and state numbering are those of the atom-level
construction. Where numba is already loaded, `subset_kernel.py` runs the same construction
compiled (same states, order, charges and refusals); this module's loop is its reference.
`Dfa` (dict rows over atoms) is the readable form the boolean product and the
tests use; `Table.to_dfa` and `Table.from_dfa` convert.
"""

from __future__ import annotations

from array import array
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from trgc.automata import jit, subset_kernel
from trgc.automata.grouping import distinct_sorted
from trgc.automata.nfa import Nfa
from trgc.limits import Budget, Limits, check_limit

NONE = -1  # no transition
_NO_STATES: frozenset[int] = frozenset()


@dataclass
class Dfa:
    """`delta[s]` maps atom -> target state; state 0 is the start."""

    delta: list[dict[int, int]]
    accepting: list[bool]

    @property
    def n_states(self) -> int:
        return len(self.delta)

    @property
    def n_transitions(self) -> int:
        return sum(len(d) for d in self.delta)


@dataclass
class Table:
    """A DFA as a dense table over segments: `next[s, j]` is the target of state `s` on every
    atom `seg_lo[j]..seg_hi[j]`, or `NONE`. Segments are disjoint and ascending; atoms in no
    segment have no transition anywhere. State 0 is the start."""

    next: np.ndarray  # int32[n_states, n_segments]
    accepting: np.ndarray  # bool[n_states]
    seg_lo: np.ndarray  # int64[n_segments]
    seg_hi: np.ndarray  # int64[n_segments]

    @property
    def n_states(self) -> int:
        return int(self.next.shape[0])

    @property
    def width(self) -> np.ndarray:
        """Atoms per segment."""
        return self.seg_hi - self.seg_lo + 1

    @cached_property
    def n_transitions(self) -> int:
        """Transitions counted per atom, as in the atom-level DFA (counted once: a table's
        arrays are never written after it is made; `with_next` makes a new one)."""
        return int((self.next >= 0).sum(axis=0) @ self.width) if self.next.size else 0

    def columns_at(self, atoms: np.ndarray) -> np.ndarray:
        """int64: the segment holding each of `atoms` (ascending), -1 where none does."""
        size = self.seg_lo.size
        if size == 0:
            return np.full(atoms.size, -1, dtype=np.int64)
        col = np.searchsorted(self.seg_hi, atoms)  # the first segment ending at or after it
        col_in = np.minimum(col, size - 1)
        return np.where((col < size) & (self.seg_lo[col_in] <= atoms), col_in, -1)

    def with_next(self, next_table: np.ndarray, accepting: np.ndarray | None = None) -> Table:
        """The same segments with another table (and acceptance)."""
        return Table(
            next_table, self.accepting if accepting is None else accepting, self.seg_lo, self.seg_hi
        )

    def rows(self) -> list[dict[int, int]]:
        """Atom-level rows (atom -> target), atoms ascending."""
        lo, hi = self.seg_lo.tolist(), self.seg_hi.tolist()
        out = []
        for row in self.next.tolist():
            out.append({a: t for j, t in enumerate(row) if t >= 0 for a in range(lo[j], hi[j] + 1)})
        return out

    def to_dfa(self) -> Dfa:
        return Dfa(self.rows(), [bool(a) for a in self.accepting.tolist()])

    @staticmethod
    def from_dfa(dfa: Dfa) -> Table:
        """One segment per atom that some row uses."""
        atoms = sorted({a for row in dfa.delta for a in row})
        column = {a: j for j, a in enumerate(atoms)}
        table = np.full((dfa.n_states, len(atoms)), NONE, dtype=np.int32)
        for s, row in enumerate(dfa.delta):
            for a, t in row.items():
                table[s, column[a]] = t
        seg = np.array(atoms, dtype=np.int64)
        return Table(table, np.array(dfa.accepting, dtype=bool), seg, seg.copy())


@dataclass
class Counter:
    """Running totals across machines, checked against `limits.states` / `limits.transitions`."""

    states: int = 0
    transitions: int = 0


class _Closures:
    """Epsilon closures, restricted to important states, charged as one search each.

    The closure of a set is the union of its members' closures, so each single state's is
    searched once and kept (with every state the search visited); a set's closure is the
    union. The budget is charged what a search from the set would visit, on every request of
    a set and on the first request of a single state, as a search per request would be.
    A state without epsilon edges is its own closure: it is never searched nor kept, so a
    set of thousands of plain states (the first bytes of a large enum) costs no memory."""

    def __init__(self, nfa: Nfa, important: list[bool], budget: Budget):
        self.nfa = nfa
        self.important = important
        self.budget = budget
        # q -> (closure, every state the search visited); equal closures are one object
        self.single: dict[int, tuple[frozenset[int], Collection[int]]] = {}
        self.interned: dict[frozenset[int], frozenset[int]] = {}
        self.charged: set[int] = set()

    def _search(self, q: int) -> tuple[frozenset[int], Collection[int]]:
        if not self.nfa.eps[q]:  # its own closure: cheaper to make than to keep
            return (frozenset((q,)), (q,)) if self.important[q] else (_NO_STATES, (q,))
        found = self.single.get(q)
        if found is None:
            seen = {q}
            todo = [q]
            eps = self.nfa.eps
            while todo:
                p = todo.pop()
                for d in eps[p]:  # steps (`Nfa`)
                    t = p + d
                    if t not in seen:
                        seen.add(t)
                        todo.append(t)
            important = self.important
            closed = frozenset(filter(important.__getitem__, seen))
            closed = self.interned.setdefault(closed, closed)
            # most searches visit important states only: keep one set, not two equal ones
            found = (closed, closed if len(closed) == len(seen) else tuple(seen))
            self.single[q] = found
        return found

    def single_charged(self, q: int) -> frozenset[int]:
        """The closure of {q}."""
        closed, seen = self._search(q)
        if q not in self.charged:
            self.charged.add(q)
            self.budget.charge(len(seen), "epsilon closure")
        return closed

    def of(self, raw: frozenset[int]) -> frozenset[int]:
        if len(raw) == 1:
            (q,) = raw
            return self.single_charged(q)
        eps, important, search = self.nfa.eps, self.important, self._search
        kept: list[int] = []  # important states without epsilon edges
        passed: list[int] = []  # the others without
        closures: list[frozenset[int]] = []
        visits: list[Collection[int]] = []  # searches that visited more than they kept
        for q in raw:
            if eps[q]:
                closed, seen = search(q)
                closures.append(closed)
                if seen is not closed:
                    visits.append(seen)
            elif important[q]:
                kept.append(q)
            else:
                passed.append(q)
        closed = frozenset(kept).union(*closures)
        # charged as one search from the set: every state it visits
        visited = closed.union(passed, *visits) if passed or visits else closed
        self.budget.charge(len(visited), "epsilon closure")
        return closed


def common_cuts(tables: list[Table]) -> tuple[np.ndarray, np.ndarray]:
    """(first atoms, last atoms) of the intervals every table's segment bounds cut the atoms
    into, ascending: each lies inside one segment of a table or outside all of its segments
    (`Table.columns_at` tells which)."""
    points = distinct_sorted(
        np.concatenate([t.seg_lo for t in tables] + [t.seg_hi + 1 for t in tables])
    )
    return points[:-1], points[1:] - 1


class _SegmentArrays(NamedTuple):
    """An NFA's segments and its states' edges over them, as flat int64 arrays (`_segments`)."""

    seg_lo: np.ndarray  # first atom of each segment
    seg_hi: np.ndarray  # last atom
    first: np.ndarray  # per edge: first segment, last segment, target
    last: np.ndarray
    target: np.ndarray
    offsets: np.ndarray  # state q's edges are offsets[q]..offsets[q + 1] - 1
    widths: np.ndarray  # atoms the edges of a state span
    overlapping: np.ndarray  # bool: two of the state's edges share a segment


def _segments(nfa: Nfa) -> _SegmentArrays:
    """The NFA's segments (first and last atom of each) and every state's edges over them.

    On whole arrays: the edge bounds, sorted and deduplicated, cut the atoms into elementary
    intervals; those some edge covers (a running sum of +1 at each edge's start, -1 past its
    end) are the segments, and each edge spans the segments from the one at its first atom
    to the one at its last. Edges are sorted by (state, first segment, last segment, target)."""
    counts, flat = nfa.edge_arrays()
    state = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    lo, hi, target = flat[:, 0], flat[:, 1], flat[:, 2]
    bounds = distinct_sorted(np.concatenate([lo, hi + 1]))
    at_lo = np.searchsorted(bounds, lo)
    past_hi = np.searchsorted(bounds, hi + 1)
    size = bounds.size
    depth = np.cumsum(np.bincount(at_lo, minlength=size) - np.bincount(past_hi, minlength=size))
    covered = depth[: max(size - 1, 0)] > 0
    segment_at = np.cumsum(covered) - 1
    first, last = segment_at[at_lo], segment_at[past_hi - 1]
    order = np.lexsort((target, last, first, state))
    first, last, target, state = first[order], last[order], target[order], state[order]
    # states two of whose edges share a segment (their rows need `_pieces`)
    shared = (first[1:] <= last[:-1]) & (state[1:] == state[:-1])
    overlapping = np.zeros(len(counts), dtype=bool)
    overlapping[state[1:][shared]] = True
    return _SegmentArrays(
        bounds[:-1][covered] if size else bounds,
        bounds[1:][covered] - 1 if size else bounds,
        first,
        last,
        target,
        np.concatenate(([0], np.cumsum(counts))),
        np.bincount(state, weights=hi - lo + 1, minlength=len(counts)).astype(np.int64),
        overlapping,
    )


class _SegmentEdges:
    """Every NFA state's edges over segments, (first segment, last segment, target) sorted,
    its edge width in atoms and whether two of its edges overlap, in flat arrays: three machine ints per edge instead of a tuple
    and a list per state (a 20,000-branch enum has 170,000 states)."""

    def __init__(
        self,
        firsts: np.ndarray,
        lasts: np.ndarray,
        targets: np.ndarray,
        offsets: np.ndarray,
        widths: np.ndarray,
        overlapping: list[bool],
    ) -> None:
        self.firsts = _machine_ints(firsts)
        self.lasts = _machine_ints(lasts)
        self.targets = _machine_ints(targets)
        self.offsets = _machine_ints(offsets)
        self.widths = _machine_ints(widths)
        self.overlapping = overlapping  # per state: two of its edges share a segment

    def of(self, q: int) -> Iterator[tuple[int, int, int]]:
        """State q's edges, as (first segment, last segment, target) in order."""
        a, b = self.offsets[q], self.offsets[q + 1]
        return zip(self.firsts[a:b], self.lasts[a:b], self.targets[a:b], strict=True)


def _machine_ints(values: np.ndarray) -> array:
    """An int64 numpy array as a compact `array('q')` (fast to index and slice from Python)."""
    out = array("q")
    out.frombytes(np.ascontiguousarray(values, dtype=np.int64).tobytes())
    return out


def _pieces(edges: list[tuple[int, int, int]]) -> list[tuple[int, int, frozenset[int]]]:
    """(first segment, last segment, targets) of the runs of segments that overlapping edges
    (sorted) cover, ascending, by an event sweep."""
    starts: dict[int, list[int]] = {}
    ends: dict[int, list[int]] = {}
    for lo, hi, t in edges:
        starts.setdefault(lo, []).append(t)
        ends.setdefault(hi + 1, []).append(t)
    points = sorted(starts.keys() | ends.keys())
    active: dict[int, int] = {}
    out = []
    for i, p in enumerate(points):
        for t in ends.get(p, ()):
            if active[t] == 1:
                del active[t]
            else:
                active[t] -= 1
        for t in starts.get(p, ()):
            active[t] = active.get(t, 0) + 1
        if active and i + 1 < len(points):
            out.append((p, points[i + 1] - 1, frozenset(active)))
    return out


def determinize_table(
    nfa: Nfa, *, rule: str, limits: Limits, budget: Budget, counter: Counter
) -> Table:
    """The DFA of `nfa` by subset construction (reachable states only), as a Table.

    Where numba is loaded, `subset_kernel` runs the same construction compiled."""
    if jit.enabled() and _fits_kernel(nfa):
        return _determinize_compiled(nfa, rule=rule, limits=limits, budget=budget, counter=counter)
    arrays = _segments(nfa)
    important = [bool(nfa.edges[q]) or q == nfa.final for q in range(nfa.n_states)]
    seg_lo, seg_hi = arrays.seg_lo.tolist(), arrays.seg_hi.tolist()
    edges_of = _SegmentEdges(*arrays[2:7], arrays.overlapping.tolist())
    widths = edges_of.widths
    overlapping = edges_of.overlapping
    n_seg = len(seg_lo)
    atoms_before = [0]  # atoms in segments 0..j-1
    for lo, hi in zip(seg_lo, seg_hi, strict=True):
        atoms_before.append(atoms_before[-1] + hi - lo + 1)
    closures = _Closures(nfa, important, budget)
    closure = closures.of
    single = closures.single_charged
    eps = nfa.eps
    # closures of single states with epsilon edges, once asked for (charged then, as
    # `single_charged` charges); a state without them is its own closure, made on the spot
    known: list[frozenset[int] | None] = [None] * nfa.n_states
    charged = closures.charged
    # closures of the sets of targets met in rows so far, with what a request is charged
    set_closures: dict[frozenset[int], tuple[frozenset[int], int]] = {}
    what = f"the automaton of rule {rule}"
    start = closure(frozenset((nfa.start,)))
    ids: dict[frozenset[int], int] = {start: 0}
    subsets = [start]
    accepting: list[bool] = []
    runs: list[tuple[int, int, int, int]] = []  # state, first segment, length, target
    check_limit("states", counter.states + 1, limits.states, what)
    counter.states += 1
    final = nfa.final
    max_states, max_transitions = limits.states, limits.transitions
    state = 0
    while state < len(subsets):
        subset = subsets[state]
        accepting.append(final in subset)
        if len(subset) == 1:
            (q,) = subset
            edges = list(edges_of.of(q))
            cost = widths[q]
        else:
            edges = []
            cost = 0
            for q in subset:
                if widths[q]:
                    edges.extend(edges_of.of(q))
                    cost += widths[q]
            edges.sort()
        if not edges:
            state += 1
            continue
        budget.charge(cost, "subset construction")
        # pieces of the row: (first segment, last segment, one target or a set of targets)
        pieces: list = edges
        if len(edges) > 1 and (len(subset) > 1 or overlapping[q]):
            for i in range(len(edges) - 1):
                if edges[i + 1][0] <= edges[i][1]:
                    pieces = _pieces(edges)
                    break
        memo: dict = {}  # a set of targets -> DFA state
        row_atoms = 0
        for lo, hi, raw in pieces:
            if type(raw) is int:
                if not eps[raw]:
                    closed = frozenset((raw,)) if important[raw] else _NO_STATES
                    if raw not in charged:  # charged once, as a one-state search
                        charged.add(raw)
                        budget.charge(1, "epsilon closure")
                else:
                    closed = known[raw]
                    if closed is None:
                        closed = known[raw] = single(raw)
                target = ids.get(closed)
            else:
                target = memo.get(raw)
                if target is None:
                    found = set_closures.get(raw)
                    if found is None:
                        before = budget.used
                        closed = closure(raw)
                        # a set is charged its search on every request, one state only once
                        cost = budget.used - before if len(raw) > 1 else 0
                        set_closures[raw] = (closed, cost)
                    else:  # the same set of targets in an earlier row: charged as searched
                        closed, cost = found
                        if cost:
                            budget.charge(cost, "epsilon closure")
                    target = memo[raw] = ids.get(closed)
            if target is None:
                if counter.states + 1 > max_states:
                    check_limit("states", counter.states + 1, max_states, what)
                counter.states += 1
                target = ids[closed] = len(subsets)
                subsets.append(closed)
                if type(raw) is not int:
                    memo[raw] = target
            runs.append((state, lo, hi - lo + 1, target))
            row_atoms += atoms_before[hi + 1] - atoms_before[lo]
        if counter.transitions + row_atoms > max_transitions:
            check_limit("transitions", counter.transitions + row_atoms, max_transitions, what)
        counter.transitions += row_atoms
        state += 1
    return Table(
        _filled(np.array(runs, dtype=np.int64).reshape(-1, 4), len(subsets), n_seg),
        np.array(accepting, dtype=bool),
        arrays.seg_lo,
        arrays.seg_hi,
    )


def _filled(runs: np.ndarray, n_states: int, n_seg: int) -> np.ndarray:
    """The dense next-state table (int32[n_states, n_seg]) that rows of (state, first
    segment, length, target) describe."""
    table = np.full(n_states * n_seg, NONE, dtype=np.int32)
    if runs.size:
        lengths = runs[:, 2]
        starts = runs[:, 0] * n_seg + runs[:, 1]
        offsets = np.cumsum(lengths) - lengths
        flat = np.repeat(starts - offsets, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)
        table[flat] = np.repeat(runs[:, 3].astype(np.int32), lengths)
    return table.reshape(n_states, n_seg)


def _fits_kernel(nfa: Nfa) -> bool:
    """Whether the kernel's int64 sort key of two segments and a state cannot overflow
    (segments are fewer than twice the edges). Counted only where the kernel may run."""
    edges = sum(map(len, nfa.edges))
    return (2 * edges + 1) ** 2 * (nfa.n_states + 1) < 2**62


def _determinize_compiled(
    nfa: Nfa, *, rule: str, limits: Limits, budget: Budget, counter: Counter
) -> Table:
    """`determinize_table` by `subset_kernel`, raising its refusals as the Python loop does."""
    totals = np.array(
        [counter.states, limits.states, counter.transitions, limits.transitions, budget.used,
         budget.limit], dtype=np.int64,
    )  # fmt: skip
    status, value, accepting, table, seg_lo, seg_hi = subset_kernel.determinize(nfa, totals)
    counter.states = int(totals[subset_kernel.C_STATES])
    counter.transitions = int(totals[subset_kernel.C_TRANSITIONS])
    budget.used = int(totals[subset_kernel.C_USED])
    what = f"the automaton of rule {rule}"
    if status == subset_kernel.OVER_STATES:
        check_limit("states", int(value), limits.states, what)
    elif status == subset_kernel.OVER_TRANSITIONS:
        check_limit("transitions", int(value), limits.transitions, what)
    elif status == subset_kernel.OVER_BUDGET_ROWS:
        budget.charge(int(value), "subset construction")
    elif status == subset_kernel.OVER_BUDGET_CLOSURE:
        budget.charge(int(value), "epsilon closure")
    return Table(table, accepting, seg_lo, seg_hi)


def adopt_table(table: Table, *, rule: str, limits: Limits, counter: Counter) -> Table:
    """A minimal DFA built elsewhere (the product of an AND node that is a machine's whole
    body) as the machine of `rule`, counted against the states and transitions limits as
    the subset construction of its spliced NFA counts them: it meets the same states in the
    same (breadth-first) order, allocating each in the row of its first incoming transition
    and checking the transitions after each row, so the same limit refuses with the same
    message."""
    what = f"the automaton of rule {rule}"
    n = table.n_states
    room = limits.states - counter.states  # states that still fit
    if room < 1:
        check_limit("states", counter.states + 1, limits.states, what)
    has = table.next >= 0
    running = counter.transitions + np.cumsum(has @ (table.seg_hi - table.seg_lo + 1))
    over = np.flatnonzero(running > limits.transitions)
    too_many = int(over[0]) if over.size else n  # the row whose transitions pass the limit
    if room < n:  # state `room` is one too many: the row that meets it first
        rows, columns = np.nonzero(has)  # row-major: the first match is the first row
        met_in = int(rows[np.argmax(table.next[rows, columns] == room)])
        if met_in <= too_many:
            check_limit("states", limits.states + 1, limits.states, what)
    if too_many < n:
        check_limit("transitions", int(running[too_many]), limits.transitions, what)
    counter.states += n
    counter.transitions = int(running[-1]) if n else counter.transitions
    return table


def determinize(nfa: Nfa, *, rule: str, limits: Limits, budget: Budget, counter: Counter) -> Dfa:
    """The DFA of `nfa` by subset construction (reachable states only), with atom rows."""
    return determinize_table(nfa, rule=rule, limits=limits, budget=budget, counter=counter).to_dfa()
