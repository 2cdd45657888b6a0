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
"""

from __future__ import annotations

from dataclasses import dataclass

from trgc.automata.alphabet import Alphabet
from trgc.automata.dfa import Dfa
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
    """One machine after call resolution: `rows[s]` maps input atom -> action."""

    rows: list[dict[int, Action]]
    accepting: list[bool]


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


def trim_unproductive(dfas: dict[str, Dfa], alphabet: Alphabet, budget: Budget) -> dict[str, Dfa]:
    """Drop states that cannot reach acceptance and calls to rules that derive no string.

    A machine is productive when its start state reaches an accepting state through shifts
    and calls of productive machines (least fixed point).
    """
    names = sorted(dfas)
    productive: set[str] = set()
    live: dict[str, set[int]] = {}
    changed = True
    while changed:
        changed = False
        for name in names:
            dfa = dfas[name]
            budget.charge(dfa.n_states + dfa.n_transitions, "productivity analysis")
            reverse: list[list[int]] = [[] for _ in range(dfa.n_states)]
            for s, row in enumerate(dfa.delta):
                for a, t in row.items():
                    if a < alphabet.n_input or alphabet.calls[a - alphabet.n_input] in productive:
                        reverse[t].append(s)
            seen = {s for s in range(dfa.n_states) if dfa.accepting[s]}
            todo = list(seen)
            while todo:
                t = todo.pop()
                for s in reverse[t]:
                    if s not in seen:
                        seen.add(s)
                        todo.append(s)
            live[name] = seen
            if 0 in seen and name not in productive:
                productive.add(name)
                changed = True
    out: dict[str, Dfa] = {}
    for name in names:
        if name not in productive:
            continue
        dfa, keep = dfas[name], live[name]
        delta = []
        for s, row in enumerate(dfa.delta):
            delta.append(
                {
                    a: t
                    for a, t in row.items()
                    if s in keep
                    and t in keep
                    and (a < alphabet.n_input or alphabet.calls[a - alphabet.n_input] in productive)
                }
            )
        out[name] = Dfa(delta, list(dfa.accepting))
    return out


def first_sets(dfas: dict[str, Dfa], alphabet: Alphabet, budget: Budget) -> dict[str, int]:
    """FIRST(machine) = input atoms its start state handles, by shift or by a call."""
    names = sorted(dfas)
    first = {name: _shift_mask(dfas[name].delta[0], alphabet) for name in names}
    start_calls = {
        name: [callee for callee, _ in _calls_of(dfas[name].delta[0], alphabet)] for name in names
    }
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
    dfas: dict[str, Dfa], first: dict[str, int], alphabet: Alphabet
) -> dict[str, Dfa]:
    """Remove call edges to rules whose FIRST is empty (they only match the empty string,
    which the nullable bypass already covers; such a call could never be taken)."""
    out = {}
    for name, dfa in dfas.items():
        delta = [
            {
                a: t
                for a, t in row.items()
                if a < alphabet.n_input or first[alphabet.calls[a - alphabet.n_input]]
            }
            for row in dfa.delta
        ]
        out[name] = Dfa(delta, list(dfa.accepting))
    return out


def _handled(
    dfa: Dfa,
    state: int,
    caller: str,
    first: dict[str, int],
    follow: dict[str, int],
    alphabet: Alphabet,
    counts: Counts,
) -> int:
    row = dfa.delta[state]
    mask = _shift_mask(row, alphabet)
    for callee, _ in _calls_of(row, alphabet):
        mask |= first[callee]
    if dfa.accepting[state]:
        mask |= follow[caller]
        if restarts(counts, caller):
            mask |= first[caller]
    return mask


def follow_sets(
    dfas: dict[str, Dfa],
    start: str,
    first: dict[str, int],
    alphabet: Alphabet,
    budget: Budget,
    counts: Counts,
) -> dict[str, int]:
    """FOLLOW(R) = union over call sites of R of what the return state handles (fixed point)."""
    names = sorted(dfas)
    follow = dict.fromkeys(names, 0)
    follow[start] = 1 << alphabet.n_input
    sites = []  # (caller, callee, return_state)
    for name in names:
        for row in dfas[name].delta:
            for callee, r in _calls_of(row, alphabet):
                sites.append((name, callee, r))
    changed = True
    while changed:
        changed = False
        budget.charge(len(sites) + 1, "FOLLOW sets")
        for caller, callee, r in sites:
            mask = follow[callee] | _handled(
                dfas[caller], r, caller, first, follow, alphabet, counts
            )
            if mask != follow[callee]:
                follow[callee] = mask
                changed = True
    return follow


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
    counted repetitions and shared rules that caused it."""

    def __init__(self, dfas: dict[str, Dfa], alphabet: Alphabet):
        self.dfas = dfas
        self.alphabet = alphabet
        self.items: list[dict] = []
        self.count = 0
        self.involved: set[str] = set()
        self._paths: dict[str, list] = {}

    def path(self, machine: str, state: int) -> str:
        if machine not in self._paths:
            self._paths[machine] = _bfs_parents(self.dfas[machine])
        path = _path_to(self._paths[machine], state)
        if len(path) > MAX_PATH_SHOWN:
            return "... " + render_path(path[-MAX_PATH_SHOWN:], self.alphabet)
        return render_path(path, self.alphabet)

    def wants_more(self) -> bool:
        return len(self.items) < MAX_REPORTED_CONFLICTS

    def add(
        self, machine: str, state: int, atom: int, first_action: str, second_action: str
    ) -> None:
        self.count += 1
        self.items.append(
            {
                "rule": machine,
                "after": self.path(machine, state),
                "symbol": self.alphabet.describe(atom),
                "actions": [first_action, second_action],
            }
        )

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


def resolve(
    dfas: dict[str, Dfa],
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
    check only makes sure nothing else claims those symbols there."""
    n_input = alphabet.n_input
    input_mask = (1 << n_input) - 1
    conflicts = Conflicts(dfas, alphabet)
    out: dict[str, Resolved] = {}
    for name in sorted(dfas):
        dfa = dfas[name]
        rep_min, rep_max = counts.get(name, (0, 0))
        rows: list[dict[int, Action]] = []
        for s, row in enumerate(dfa.delta):
            budget.charge(1 + len(row), "predictive check")
            options: list[tuple[str, int, Action | None]] = []
            shifts = _shift_mask(row, alphabet)
            if shifts:
                options.append((f"shift in rule {name}", shifts, None))
            for callee, r in _calls_of(row, alphabet):
                options.append((f"call {callee}", first[callee], (callee, r)))
            if s and dfa.accepting[s] and restarts(counts, name):
                # state 0 begins an iteration itself: restarting there would change nothing
                options.append((f"restart {name}", first[name], None))
            if dfa.accepting[s] and follow[name] & input_mask:
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
                        described = [
                            _return_reason(name, atom, dfas, first, follow, conflicts, counts)
                            if o[0] == "return"
                            else o[0]
                            for o in (options[i], options[j])
                        ]
                        conflicts.add(name, s, atom, described[0], described[1])
            resolved: dict[int, Action] = {a: t for a, t in row.items() if a < n_input}
            for _, mask, action in options:
                if action is not None:
                    budget.charge(mask.bit_count(), "predictive check")
                    for atom in _bits(mask):
                        resolved.setdefault(atom, action)
            rows.append(dict(sorted(resolved.items())))
        out[name] = Resolved(rows, list(dfa.accepting))
    if conflicts.count:
        return conflicts
    return out
