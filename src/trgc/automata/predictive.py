"""Calls -> input actions: productivity, FIRST, FOLLOW and the predictive check.

Each machine is a DFA whose call atoms (one per machine) lead to return states. At run time a
call is taken on an input symbol `x` iff `x` is in FIRST of the callee, a frame returns on `x`
iff its state is accepting, nothing else handles `x` there, and a caller can continue with `x`
(FOLLOW). A counted repetition's machine also *restarts*: at the end of an iteration (an
accepting state), a symbol of its own FIRST begins the next iteration while the counter allows
one. *Predictive rule*: at every state each input symbol selects at most one of {shift, one
call, restart, return}; any overlap is `E_PREDICTIVE_CONFLICT`, except restart against return
in a repetition with `min == max`, where the counter decides (restart below the bound, return
at it). All sets are Python ints used as bitsets over input atoms (bit `n_input` is end of
input in FOLLOW). Fixed points iterate machines in sorted order and charge every pass to the
budget.

Machines arrive as dense `Table`s over their own segments (`dfa.py`); segments at or above
`alphabet.n_input` are call atoms, one each. The charges are those of the atom-level
algorithm (one per state and atom-level transition), so budgets do not depend on the layout.
The resolved tables are dense over the grammar's input atoms (`Resolved`). The conflict path
alone, which explains an overlap with a path and a call site, reads atom rows (`Dfa`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trgc.automata.alphabet import Alphabet
from trgc.automata.dfa import NONE, Dfa, Table
from trgc.automata.graph import coreachable
from trgc.errors import TrgcError
from trgc.limits import Budget

MAX_REPORTED_CONFLICTS = 10
MAX_PATH_SHOWN = 40  # symbols of a conflict's path shown (the last ones)

# A resolved action: an int >= 0 is a shift target; (callee, return_state) is a call.
Action = int | tuple[str, int]
# machine name -> (rep_min, rep_max) of a counted repetition, (0, 0) for other machines
Counts = dict[str, tuple[int, int]]


def restarts(counts: Counts, name: str) -> bool:
    """Can machine `name` begin another iteration at the end of one (a counted repetition
    with a maximum other than 1)?"""
    low, high = counts.get(name, (0, 0))
    return low >= 1 and high != 1


@dataclass
class Resolved:
    """One machine after call resolution, dense over the grammar's input atoms: `next[s, a]`
    is a shift target (>= 0), `NONE`, or a call `-2 - i` of `calls[i]` = (callee, return
    state); each (callee, return state) pair has one index."""

    next: np.ndarray  # int32[n_states, n_input]
    calls: list[tuple[str, int]]
    accepting: np.ndarray  # bool[n_states]

    @property
    def n_states(self) -> int:
        return int(self.next.shape[0])


@dataclass
class Columns:
    """How one machine's segments read: the first `n_in` are input atoms (`bits[j]` their
    bitset), the rest one call atom each (`callees[j - n_in]`)."""

    n_in: int
    bits: list[int]
    callees: list[str]

    def shifts(self, row: list[int]) -> int:
        """The bitset of input atoms a table row shifts on."""
        mask = 0
        for j in range(self.n_in):
            if row[j] >= 0:
                mask |= self.bits[j]
        return mask

    def calls(self, row: list[int]) -> list[tuple[str, int]]:
        """(callee, return state) of a table row's call edges, atoms ascending."""
        n_in = self.n_in
        return [(c, row[n_in + i]) for i, c in enumerate(self.callees) if row[n_in + i] >= 0]


def columns(table: Table, alphabet: Alphabet) -> Columns:
    n_input = alphabet.n_input
    lo, hi = table.seg_lo.tolist(), table.seg_hi.tolist()
    n_in = int(np.searchsorted(table.seg_lo, n_input))
    bits = [((1 << (hi[j] - lo[j] + 1)) - 1) << lo[j] for j in range(n_in)]
    return Columns(n_in, bits, [alphabet.calls[a - n_input] for a in lo[n_in:]])


def _bits(mask: int):
    """Indices of the set bits of `mask`, ascending."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _calls_of(row: dict[int, int], alphabet: Alphabet) -> list[tuple[str, int]]:
    n_input = alphabet.n_input
    return [(alphabet.calls[a - n_input], t) for a, t in sorted(row.items()) if a >= n_input]


def _shift_mask(row: dict[int, int], alphabet: Alphabet) -> int:
    mask = 0
    for a in row:
        if a < alphabet.n_input:
            mask |= 1 << a
    return mask


def trim_unproductive(
    tables: dict[str, Table], cols: dict[str, Columns], budget: Budget
) -> dict[str, Table]:
    """Drop states that cannot reach acceptance and calls to rules that derive no string.

    A machine is productive when its start state reaches an accepting state through shifts
    and calls of productive machines (least fixed point).
    """
    names = sorted(tables)
    productive: set[str] = set()
    live: dict[str, np.ndarray] = {}
    seen_with: dict[str, frozenset[str]] = {}  # the productive callees `live` was computed with
    cost = {name: tables[name].n_states + tables[name].n_transitions for name in names}
    changed = True
    while changed:
        changed = False
        for name in names:
            table, col = tables[name], cols[name]
            budget.charge(cost[name], "productivity analysis")
            usable = frozenset(c for c in col.callees if c in productive)
            if name not in live or seen_with[name] != usable:
                allowed = _allowed(col, usable)
                live[name] = coreachable(table.next[:, allowed], table.accepting)
                seen_with[name] = usable
            if live[name][0] and name not in productive:
                productive.add(name)
                changed = True
    out: dict[str, Table] = {}
    for name in names:
        if name not in productive:
            continue
        table, keep = tables[name], live[name]
        callees = cols[name].callees
        if all(c in productive for c in callees) and keep.all():
            out[name] = table  # every state live, every call kept: nothing to drop
            continue
        n = table.n_states
        allowed = _allowed(cols[name], frozenset(c for c in callees if c in productive))
        target_live = np.append(keep, False)[np.where(table.next < 0, n, table.next)]
        mask = target_live & keep[:, None] & allowed[None, :]
        out[name] = table.with_next(np.where(mask, table.next, NONE).astype(np.int32))
    return out


def _allowed(col: Columns, usable: frozenset[str]) -> np.ndarray:
    """bool[n_segments]: input segments and calls of the `usable` machines."""
    return np.array([True] * col.n_in + [c in usable for c in col.callees], dtype=bool)


def first_sets(
    tables: dict[str, Table], cols: dict[str, Columns], budget: Budget
) -> dict[str, int]:
    """FIRST(machine) = input atoms its start state handles, by shift or by a call."""
    names = sorted(tables)
    start_rows = {name: tables[name].next[0].tolist() for name in names}
    first = {name: cols[name].shifts(start_rows[name]) for name in names}
    start_calls = {name: [c for c, _ in cols[name].calls(start_rows[name])] for name in names}
    changed = True
    while changed:
        changed = False
        budget.charge(len(names) + sum(len(c) for c in start_calls.values()), "FIRST sets")
        for name in names:
            mask = first[name]
            for callee in start_calls[name]:
                mask |= first.get(callee, 0)
            if mask != first[name]:
                first[name] = mask
                changed = True
    return first


def drop_empty_calls(
    tables: dict[str, Table], cols: dict[str, Columns], first: dict[str, int]
) -> dict[str, Table]:
    """Remove call edges to rules whose FIRST is empty (they only match the empty string,
    which the nullable bypass already covers; such a call could never be taken)."""
    out = {}
    for name, table in tables.items():
        col = cols[name]
        empty = [col.n_in + i for i, c in enumerate(col.callees) if not first.get(c, 0)]
        if empty:
            next_table = table.next.copy()
            next_table[:, empty] = NONE
            table = table.with_next(next_table)
        out[name] = table
    return out


def _call_sites(table: Table, col: Columns) -> list[tuple[str, int]]:
    """(callee, return state) of every call edge, row-major (states, then atoms, ascending)."""
    if not col.callees:
        return []
    part = table.next[:, col.n_in :]
    states, which = np.nonzero(part >= 0)
    returns = part[states, which].tolist()
    return [(col.callees[i], r) for i, r in zip(which.tolist(), returns, strict=True)]


def follow_sets(
    tables: dict[str, Table],
    cols: dict[str, Columns],
    start: str,
    first: dict[str, int],
    n_input: int,
    budget: Budget,
    counts: Counts,
) -> dict[str, int]:
    """FOLLOW(R) = union over call sites of R of what the return state handles (fixed point)."""
    names = sorted(tables)
    follow = dict.fromkeys(names, 0)
    follow[start] = 1 << n_input
    sites = []  # (caller, callee, what the return state handles itself, accepting, restarts)
    for name in names:
        table, col = tables[name], cols[name]
        handled: dict[int, int] = {}
        for callee, r in _call_sites(table, col):
            own = handled.get(r)
            if own is None:
                row = table.next[r].tolist()
                own = col.shifts(row)
                for c, _ in col.calls(row):
                    own |= first[c]
                handled[r] = own
            sites.append((name, callee, own, bool(table.accepting[r]), restarts(counts, name)))
    changed = True
    while changed:
        changed = False
        budget.charge(len(sites) + 1, "FOLLOW sets")
        for caller, callee, own, accepting, restart in sites:
            mask = follow[callee] | own
            if accepting:
                mask |= follow[caller]
                if restart:
                    mask |= first[caller]
            if mask != follow[callee]:
                follow[callee] = mask
                changed = True
    return follow


def _handled(
    dfa: Dfa,
    state: int,
    caller: str,
    first: dict[str, int],
    follow: dict[str, int],
    alphabet: Alphabet,
    counts: Counts,
) -> int:
    """What atom row `state` of `caller` handles: shifts, callees' FIRST, and on acceptance
    FOLLOW (and FIRST again when it restarts)."""
    row = dfa.delta[state]
    mask = _shift_mask(row, alphabet)
    for callee, _ in _calls_of(row, alphabet):
        mask |= first[callee]
    if dfa.accepting[state]:
        mask |= follow[caller]
        if restarts(counts, caller):
            mask |= first[caller]
    return mask


def _bfs_parents(dfa: Dfa) -> list[tuple[int, int] | None]:
    """For each state, (parent state, atom) on a shortest path from state 0 (atoms ascending)."""
    parents: list[tuple[int, int] | None] = [None] * dfa.n_states
    seen = [False] * dfa.n_states
    seen[0] = True
    queue = [0]
    for s in queue:
        for a, t in sorted(dfa.delta[s].items()):
            if not seen[t]:
                seen[t] = True
                parents[t] = (s, a)
                queue.append(t)
    return parents


def _path_to(parents: list[tuple[int, int] | None], state: int) -> tuple[int, ...]:
    atoms: list[int] = []
    step = parents[state]
    while step is not None:
        state, atom = step
        atoms.append(atom)
        step = parents[state]
    return tuple(reversed(atoms))


def render_path(path: tuple[int, ...], alphabet: Alphabet) -> str:
    """`"{" member ","` style: bytes as a quoted string, calls by rule name, specials by name."""
    parts: list[str] = []
    pending = bytearray()

    def flush() -> None:
        if pending:
            text = "".join(
                chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\x{b:02x}"
                for b in pending
            )
            text = text.replace("\\x22", '\\"').replace("\\x5c", "\\\\")
            parts.append(f'"{text}"')
            pending.clear()

    for a in path:
        if a < alphabet.n_byte_atoms:
            pending.append(alphabet.atom_lo[a])
        else:
            flush()
            if a < alphabet.n_input:
                parts.append(f'special("{alphabet.specials[a - alphabet.n_byte_atoms]}")')
            else:
                parts.append(alphabet.calls[a - alphabet.n_input])
    flush()
    return " ".join(parts) if parts else "the start"


class Conflicts:
    """Every overlap the predictive check found: the first `MAX_REPORTED_CONFLICTS` in detail,
    the total, and the machines involved (the machine where an overlap is, when it returns or
    restarts there, and every callee of a competing call), which lets the driver expand
    counted repetitions and shared rules that caused it.

    The details (the path to each overlap, the call site a return goes back to) are written
    only when they are reported (`items`): most conflicts are met by a compilation attempt
    that the driver retries with the constructs involved expanded, and nobody reads them."""

    def __init__(self, tables: dict[str, Table], alphabet: Alphabet):
        self.tables = tables
        self.alphabet = alphabet
        self.found: list[tuple[str, int, int, str, str]] = []  # machine, state, atom, actions
        self.count = 0
        self.involved: set[str] = set()
        self._paths: dict[str, list] = {}
        self._dfas: dict[str, Dfa] | None = None
        self._items: list[dict] | None = None
        self._sets: tuple[dict[str, int], dict[str, int], Counts] | None = None

    @property
    def items(self) -> list[dict]:
        """The conflicts reported in detail: rule, the path to the state, symbol, actions."""
        if self._items is None:
            self._items = [
                {
                    "rule": machine,
                    "after": self.path(machine, state),
                    "symbol": self.alphabet.describe(atom),
                    "actions": [self._describe(machine, atom, a), self._describe(machine, atom, b)],
                }
                for machine, state, atom, a, b in self.found
            ]
        return self._items

    def _describe(self, machine: str, atom: int, action: str) -> str:
        if action != "return" or self._sets is None:
            return action
        first, follow, counts = self._sets
        return _return_reason(machine, atom, self.dfas, first, follow, self, counts)

    @property
    def dfas(self) -> dict[str, Dfa]:
        """The machines as atom rows (made on the first conflict reported in detail)."""
        if self._dfas is None:
            self._dfas = {name: table.to_dfa() for name, table in self.tables.items()}
        return self._dfas

    def path(self, machine: str, state: int) -> str:
        if machine not in self._paths:
            self._paths[machine] = _bfs_parents(self.dfas[machine])
        path = _path_to(self._paths[machine], state)
        if len(path) > MAX_PATH_SHOWN:
            return "... " + render_path(path[-MAX_PATH_SHOWN:], self.alphabet)
        return render_path(path, self.alphabet)

    def wants_more(self) -> bool:
        return len(self.found) < MAX_REPORTED_CONFLICTS

    def add(
        self, machine: str, state: int, atom: int, first_action: str, second_action: str
    ) -> None:
        """One overlap; an action "return" is described, when reported, with the FIRST and
        FOLLOW sets and counts given to `describe_returns_with`."""
        self.count += 1
        self.found.append((machine, state, atom, first_action, second_action))

    def describe_returns_with(
        self, first: dict[str, int], follow: dict[str, int], counts: Counts
    ) -> None:
        self._sets = (first, follow, counts)

    def error(self, places: dict[str, dict]) -> TrgcError:
        """The one `E_PREDICTIVE_CONFLICT` that reports them all."""
        first_conflict = self.items[0]
        more = f" (and {self.count - 1} more)" if self.count > 1 else ""
        return TrgcError(
            "E_PREDICTIVE_CONFLICT",
            f"rule {first_conflict['rule']}: after {first_conflict['after']}, input {first_conflict['symbol']} "
            f"could {first_conflict['actions'][0]} or {first_conflict['actions'][1]}{more}",
            **places.get(first_conflict["rule"], {}),
            hint="trg-1 grammars must be predictive: rewrite the rules so one symbol selects one action",
            details={"conflicts": self.items, "count": self.count},
        )


def _return_reason(
    machine: str,
    atom: int,
    dfas: dict[str, Dfa],
    first: dict[str, int],
    follow: dict[str, int],
    conflicts: Conflicts,
    counts: Counts,
) -> str:
    """`return from R (rule C continues with it after ...)`, naming a call site whose return
    state consumes the symbol itself if there is one, else one that returns further."""
    alphabet = conflicts.alphabet
    bit = 1 << atom
    no_follow = dict.fromkeys(follow, 0)
    for direct in (True, False):
        for caller in sorted(dfas):
            dfa = dfas[caller]
            for row in dfa.delta:
                for callee, r in _calls_of(row, alphabet):
                    handled = _handled(
                        dfa, r, caller, first, no_follow if direct else follow, alphabet, counts
                    )
                    if callee == machine and handled & bit:
                        how = "continues with it" if direct else "can return with it"
                        return f"return from {machine} (rule {caller} {how} after {conflicts.path(caller, r)})"
    return f"return from {machine}"


def _first_masks(first: dict[str, int], n_input: int) -> dict[str, np.ndarray]:
    """Each FIRST set as bool[n_input]."""
    size = (n_input + 7) // 8
    out = {}
    for name, mask in first.items():
        raw = np.frombuffer((mask & ((1 << n_input) - 1)).to_bytes(size, "little"), dtype=np.uint8)
        out[name] = np.unpackbits(raw, bitorder="little")[:n_input].astype(bool)
    return out


def _input_columns(table: Table, col: Columns, n_input: int) -> np.ndarray:
    """int32[n_states, n_input]: the table's shifts per input atom (calls left out)."""
    n = table.n_states
    lo = table.seg_lo[: col.n_in]
    width = table.width[: col.n_in]
    segment = np.full(n_input, col.n_in, dtype=np.int64)  # col.n_in: the NONE column
    atoms = np.repeat(lo - (np.cumsum(width) - width), width) + np.arange(int(width.sum()))
    segment[atoms] = np.repeat(np.arange(col.n_in, dtype=np.int64), width)
    shifts = np.full((n, col.n_in + 1), NONE, dtype=np.int32)
    shifts[:, : col.n_in] = table.next[:, : col.n_in]
    return shifts[:, segment]


def resolve(
    tables: dict[str, Table],
    cols: dict[str, Columns],
    start: str,
    first: dict[str, int],
    follow: dict[str, int],
    alphabet: Alphabet,
    budget: Budget,
    counts: Counts,
) -> dict[str, Resolved] | Conflicts:
    """Replace call atoms by input actions, or return every overlap found (`Conflicts`).

    A restart needs no table entry: at an accepting state of a counted repetition the run-time
    step restarts on a symbol that state 0 handles (docs/compilation.md, "Counters"), so the
    check only makes sure nothing else claims those symbols there. Only states with a call
    or an accepting state can have two options; the others are checked by construction."""
    n_input = alphabet.n_input
    input_mask = (1 << n_input) - 1
    conflicts = Conflicts(tables, alphabet)
    conflicts.describe_returns_with(first, follow, counts)
    first_masks: dict[str, np.ndarray] | None = None
    out: dict[str, Resolved] = {}
    for name in sorted(tables):
        table, col = tables[name], cols[name]
        rep_min, rep_max = counts.get(name, (0, 0))
        sites = _call_sites(table, col)
        budget.charge(
            table.n_states + table.n_transitions + sum(first[c].bit_count() for c, _ in sites),
            "predictive check",
        )
        candidates = table.accepting.copy()
        if col.callees:
            candidates |= (table.next[:, col.n_in :] >= 0).any(axis=1)
        for s in np.flatnonzero(candidates).tolist():
            row = table.next[s].tolist()
            accepting = bool(table.accepting[s])
            options: list[tuple[str, int, Action | None]] = []
            shifts = col.shifts(row)
            if shifts:
                options.append((f"shift in rule {name}", shifts, None))
            for callee, r in col.calls(row):
                options.append((f"call {callee}", first[callee], (callee, r)))
            if s and accepting and restarts(counts, name):
                # state 0 begins an iteration itself: restarting there would change nothing
                options.append((f"restart {name}", first[name], None))
            if accepting and follow[name] & input_mask:
                options.append(("return", follow[name] & input_mask, None))
            for i in range(len(options)):
                for j in range(i + 1, len(options)):
                    kinds = {options[i][0].split()[0], options[j][0].split()[0]}
                    if kinds == {"restart", "return"} and rep_min == rep_max:
                        continue  # the counter decides: restart below the bound, return at it
                    overlap = options[i][1] & options[j][1]
                    if not overlap:
                        continue
                    for option in (options[i], options[j]):
                        if option[2] is not None:
                            conflicts.involved.add(option[2][0])
                        elif not option[0].startswith("shift"):
                            conflicts.involved.add(name)
                    for atom in _bits(overlap):
                        if not conflicts.wants_more():
                            conflicts.count += 1
                            continue
                        conflicts.add(name, s, atom, options[i][0], options[j][0])
        if conflicts.count:
            continue
        resolved = _input_columns(table, col, n_input)
        calls: dict[tuple[str, int], int] = {}
        if sites:
            if first_masks is None:
                first_masks = _first_masks(first, n_input)
            states = np.nonzero(table.next[:, col.n_in :] >= 0)[0].tolist()
            for s, site in zip(states, sites, strict=True):
                index = calls.setdefault(site, len(calls))
                free = first_masks[site[0]] & (resolved[s] == NONE)
                resolved[s, free] = -2 - index
        out[name] = Resolved(resolved, list(calls), table.accepting)
    if conflicts.count:
        return conflicts
    return out
