"""Exact boolean combinators: the intersection of operand automata, some of them complemented.

An `AND` node of the AST (`trgc.grammar.ast.Kind.AND`) has operands that are languages over the
grammar's atoms; a `NOT` operand stands for every byte string outside its language. `product`
turns the operands' NFAs into one minimal DFA by the classic product construction (Rabin and
Scott 1959): each operand is determinised and minimised on its own, then the product walks
tuples of operand states breadth-first from the tuple of start states, atoms ascending. A
positive operand without a transition on an atom kills the tuple; a complemented operand
without one moves to its implicit sink, which it never leaves and where it counts as
"accepting" (the complement accepts everything the operand rejects). A tuple accepts when
every positive operand accepts and no complemented operand does. States that cannot reach
acceptance are trimmed, so the result is again a partial DFA, then minimised.

Complements are taken over byte atoms only, so a complemented operand may not contain a call
or a special token: a call stands for a whole sub-language the product cannot see into, and a
complement of "[" call "]" would wrongly admit "[1]". For the same reason, when any operand is
complemented, the positive operands must be free of calls too. Without complements, calls are
ordinary atoms: the intersection over the extended alphabet is contained in the intersection
of the expanded languages (it is sound), and it is exact where both operands call the same
rule at the same place, which is how the trj-1 lowering builds them. At least one operand
must be positive: the complement of a language alone has no universe to live in.

Every operand state and every product tuple is checked against the states limit before it is
allocated, and every transition examined is charged to the operation budget (per atom, as an
atom-by-atom product would be charged).

The walk works on the operands' dense tables (`dfa.Table`). The operands' segment bounds cut
the atoms into common segments, and common segments that every operand maps to equal columns
are one *column class*: the product treats all atoms of a class alike, so a tuple's row is
computed once per class, not once per atom (an operand over sixty atoms of a character class
often has a handful of classes). Classes are visited in order of their first atom, so tuples
are discovered in the order an atom-by-atom walk discovers them. `reference.product` is the
atom-by-atom version, kept for the differential tests.
"""

from __future__ import annotations

import numpy as np

from trgc.automata import jit, product_kernel
from trgc.automata.alphabet import Alphabet
from trgc.automata.dfa import NONE, Table, common_cuts
from trgc.automata.graph import coreachable
from trgc.automata.grouping import group_rows, sort_groups
from trgc.automata.minimize import minimal_table, minimize_table, renumber_table
from trgc.automata.nfa import Nfa
from trgc.errors import TrgcError
from trgc.limits import Budget, Limits, check_limit

SINK = -1  # a complemented operand that has left its automaton (it rejects from here on)


def _refuse_atoms(
    table: Table, alphabet: Alphabet, what: str, reason: str, allow_calls: bool
) -> None:
    """Refuse specials (always) and calls (unless allowed) in an operand: the first such atom
    in row-major order, atoms ascending, decides the message."""
    n_byte, n_input = alphabet.n_byte_atoms, alphabet.n_input
    limit = n_input if allow_calls else None
    first_bad: dict[int, int] = {}  # column -> its first refused atom
    for j, (lo, hi) in enumerate(zip(table.seg_lo.tolist(), table.seg_hi.tolist(), strict=True)):
        atom = max(lo, n_byte)
        if atom <= hi and (limit is None or atom < limit):
            first_bad[j] = atom
    if not first_bad:
        return
    bad = list(first_bad)
    hits = table.next[:, bad] >= 0
    rows = np.nonzero(hits.any(axis=1))[0]
    if rows.size == 0:
        return
    atom = first_bad[bad[int(np.argmax(hits[int(rows[0])]))]]
    if atom < n_input:
        raise TrgcError(
            "E_BOOLEAN_OPERAND",
            f"{what}: an exact boolean combination cannot contain a special token",
        )
    raise TrgcError(
        "E_BOOLEAN_OPERAND",
        f"{what}: {reason} reaches the recursive rule {alphabet.calls[atom - n_input]!r}; "
        "a complement is computed over bytes only, so its operands must not be recursive "
        "or unconstrained values",
        hint="constrain the values under the combinator (e.g. give them a type) or drop the combinator",
    )


def _same_columns(table: Table) -> np.ndarray:
    """int64[n_segments]: for each column the first column equal to it, -1 for a column
    without transitions (it reads like an atom outside every segment)."""
    label, first = group_rows(np.ascontiguousarray(table.next.T))
    same = first[label]
    same[~(table.next >= 0).any(axis=0)] = -1
    return same


def _column_classes(
    tables: list[Table], lead: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[list[int]]]:
    """The common segments of the operands inside the segments of operand `lead` (first and
    last atom of each), the column class of each, and per operand the column (or -1) each
    class reads. Classes are numbered in order of their first segment."""
    lo, hi = common_cuts(tables)
    keys = np.empty((lo.size, len(tables)), dtype=np.int64)
    for i, table in enumerate(tables):
        column = table.columns_at(lo)
        keys[:, i] = -1
        keys[column >= 0, i] = _same_columns(table)[column[column >= 0]]
    keep = keys[:, lead] >= 0
    lo, hi, keys = lo[keep], hi[keep], keys[keep]
    classes: dict[tuple[int, ...], int] = {}
    class_of = np.empty(lo.size, dtype=np.int64)
    reads: list[list[int]] = [[] for _ in tables]
    for c, key in enumerate(map(tuple, keys.tolist())):
        k = classes.get(key)
        if k is None:
            k = classes[key] = len(classes)
            for i, column in enumerate(key):
                reads[i].append(column)
        class_of[c] = k
    return lo, hi, class_of, reads


def product(
    operands: list[tuple[Nfa | Table, bool]],
    alphabet: Alphabet,
    *,
    what: str,
    limits: Limits,
    budget: Budget,
) -> Table:
    """The minimal partial DFA of the intersection of the operands; `(nfa, True)` is
    complemented. An operand is an NFA or a DFA already built (`chains.py`: deterministic, not
    necessarily minimal). BFS-numbered, over segments of atoms."""
    if not any(not negated for _, negated in operands):
        raise TrgcError("E_INTERNAL", f"{what}: an AND without a positive operand")
    has_complement = any(negated for _, negated in operands)
    tables: list[Table] = []
    negated: list[bool] = []
    for operand, neg in operands:
        table = (
            operand
            if isinstance(operand, Table)
            else minimal_table(operand, what=what, limits=limits, budget=budget)
        )
        _refuse_atoms(
            table,
            alphabet,
            what,
            "a complemented operand" if neg else "an operand beside a complement",
            allow_calls=not has_complement,
        )
        tables.append(table)
        negated.append(neg)
    positive = [i for i, neg in enumerate(negated) if not neg]
    lead = positive[0]
    seg_lo, seg_hi, class_of, reads = _column_classes(tables, lead)
    # what an atom-by-atom walk charges per tuple: the lead operand's atoms, times operands
    lead_atoms = ((tables[lead].next >= 0) @ tables[lead].width) * len(tables)
    by_class, out_accepting = _walk(
        [_class_rows(t, read, neg) for t, read, neg in zip(tables, reads, negated, strict=True)],
        [_accepts(t, neg) for t, neg in zip(tables, negated, strict=True)],
        lead,
        lead_atoms,
        limits=limits,
        budget=budget,
        what=f"the product automaton of {what}",
    )
    walked = Table(by_class[:, class_of], out_accepting, seg_lo, seg_hi)
    return minimize_table(_trim(walked, budget), budget)


def _class_rows(table: Table, read: list[int], negated: bool) -> np.ndarray:
    """int64[n_states + 1, n_classes]: an operand's next state on each column class, with
    one more row for its sink (`n_states`). A positive operand without a transition reads
    NONE (the tuple dies); a complemented one moves to its sink, and stays there."""
    n = table.n_states
    columns = np.array(read, dtype=np.int64)
    rows = np.full((n + 1, columns.size), NONE, dtype=np.int64)
    has = columns >= 0
    rows[:n, has] = table.next[:, columns[has]]
    if negated:
        rows[rows < 0] = n
    return rows


def _accepts(table: Table, negated: bool) -> np.ndarray:
    """bool[n_states + 1]: where an operand lets a tuple accept, its sink row last (only a
    complemented operand reaches it: it accepts where the operand rejects)."""
    accepting = np.append(table.accepting, False)
    return ~accepting if negated else accepting


def _walk(
    rows: list[np.ndarray],
    accepts: list[np.ndarray],
    lead: int,
    lead_atoms: np.ndarray,
    *,
    limits: Limits,
    budget: Budget,
    what: str,
) -> tuple[np.ndarray, np.ndarray]:
    """The product of the operands' class rows, breadth first from the tuple of start states
    (int32[n, n_classes] with NONE, and bool[n] accepting).

    One level of the breadth-first walk at a time, on whole arrays: every tuple of the level
    reads every class at once, and the tuples met for the first time are numbered in the
    order a tuple-by-tuple walk (tuples ascending, classes ascending) meets them, so the
    numbering is that walk's. A tuple is one integer: the operands' states in mixed radix,
    interned to a dense number after each operand but the last, so keys stay small whatever
    the operands' sizes. Where the compiler's kernels run (`jit.enabled()`) the walk is
    `product_kernel`'s: the same table, charges and refusals."""
    if jit.enabled():
        return _walk_compiled(rows, accepts, lead, lead_atoms, limits, budget, what)
    n_classes = rows[0].shape[1]
    interns: list[dict[int, int]] = [{} for _ in rows[1:-1]]
    state_of: dict[int, int] = {}
    parts = [np.zeros(1, dtype=np.int64) for _ in rows]  # the operands' states of each tuple
    frontier = [np.zeros(1, dtype=np.int64) for _ in rows]  # those of the current level
    state_of[int(_keys(frontier, rows, interns)[0])] = 0
    out: list[np.ndarray] = []
    count = 1
    while frontier[0].size:
        budget.charge(int(lead_atoms[frontier[lead]].sum()), "boolean product")
        targets = [r[f] for r, f in zip(rows, frontier, strict=True)]  # [m, n_classes] each
        alive = np.logical_and.reduce([t >= 0 for t in targets])
        keys = _keys([t[alive] for t in targets], rows, interns)
        level = np.full(alive.shape, NONE, dtype=np.int32)
        if keys.size:
            first, inverse = sort_groups(keys)
            distinct = keys[first].tolist()
            ids = np.fromiter((state_of.get(k, NONE) for k in distinct), np.int64, len(distinct))
            new = np.flatnonzero(ids < 0)
            new = new[np.argsort(first[new], kind="stable")]  # in order of first meeting
            if count + new.size > limits.states:
                check_limit("states", limits.states + 1, limits.states, what)
            ids[new] = np.arange(count, count + new.size)
            state_of.update(
                zip(keys[first[new]].tolist(), range(count, count + new.size), strict=True)
            )
            count += new.size
            level[alive] = ids[inverse]
            met = first[new]
            frontier = [t[alive][met] for t in targets]
            parts = [np.concatenate([p, f]) for p, f in zip(parts, frontier, strict=True)]
        else:
            frontier = [f[:0] for f in frontier]
        out.append(level)
    accepting = np.logical_and.reduce([a[p] for a, p in zip(accepts, parts, strict=True)])
    table = np.concatenate(out) if out else np.zeros((0, n_classes), dtype=np.int32)
    return table, accepting


def _walk_compiled(
    rows: list[np.ndarray],
    accepts: list[np.ndarray],
    lead: int,
    lead_atoms: np.ndarray,
    limits: Limits,
    budget: Budget,
    what: str,
) -> tuple[np.ndarray, np.ndarray]:
    """`_walk` by `product_kernel`, raising its refusals as `_walk` does."""
    totals = np.array([budget.used, budget.limit, limits.states], dtype=np.int64)
    status, value, table, accepting = product_kernel.walk(rows, accepts, lead, lead_atoms, totals)
    budget.used = int(totals[product_kernel.T_USED])
    if status == product_kernel.OVER_BUDGET:
        budget.charge(value, "boolean product")
    elif status == product_kernel.OVER_STATES:
        check_limit("states", limits.states + 1, limits.states, what)
    return table, accepting


def _keys(states: list[np.ndarray], rows: list[np.ndarray], interns: list[dict]) -> np.ndarray:
    """One integer per tuple of operand states (`_walk`)."""
    key = states[0]
    for i in range(1, len(states)):
        key = key * rows[i].shape[0] + states[i]
        if i < len(states) - 1:
            seen = interns[i - 1]
            first, inverse = sort_groups(key)
            dense = [seen.setdefault(k, len(seen)) for k in key[first].tolist()]
            key = np.array(dense, dtype=np.int64)[inverse] if dense else key
    return key


def _trim(table: Table, budget: Budget) -> Table:
    """Drop the states from which no accepting state is reachable (the start state stays),
    keeping those reachable from the start."""
    n = table.n_states
    budget.charge(n + table.n_transitions, "boolean product")
    live = coreachable(table.next, table.accepting)
    if not live[0]:
        return Table(
            np.full((1, table.seg_lo.size), NONE, dtype=np.int32),
            np.zeros(1, dtype=bool),
            table.seg_lo,
            table.seg_hi,
        )
    target_live = np.append(live, False)[np.where(table.next < 0, n, table.next)]
    kept = np.where(target_live & live[:, None], table.next, NONE).astype(np.int32)
    return renumber_table(table.with_next(kept))
