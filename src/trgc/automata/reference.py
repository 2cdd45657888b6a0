"""Plain reference implementations of automata stages that have a faster path elsewhere.

`product` is the boolean product of `boolean.py` written the readable way: operands as atom
dicts (`dfa.Dfa`), one dict lookup per atom and operand. `boolean.product` computes the same
minimal DFA over the operands' segments with columns grouped; the differential tests
(tests/test_automata_fastpaths.py) compare the two on random and real operands. Nothing on the
compile path imports this module.
"""

from __future__ import annotations

from trgc.automata.alphabet import Alphabet
from trgc.automata.boolean import SINK
from trgc.automata.dfa import Counter, Dfa, determinize
from trgc.automata.minimize import minimize, renumber
from trgc.automata.nfa import Nfa
from trgc.errors import TrgcError
from trgc.limits import Budget, Limits, check_limit


def _operand_dfa(nfa: Nfa, what: str, limits: Limits, budget: Budget) -> Dfa:
    return minimize(
        determinize(nfa, rule=what, limits=limits, budget=budget, counter=Counter()), budget
    )


def _refuse_atoms(dfa: Dfa, alphabet: Alphabet, what: str, reason: str, allow_calls: bool) -> None:
    """Refuse specials (always) and calls (unless allowed) in an operand."""
    for row in dfa.delta:
        for atom in row:
            if atom < alphabet.n_byte_atoms:
                continue
            if atom < alphabet.n_input:
                raise TrgcError(
                    "E_BOOLEAN_OPERAND",
                    f"{what}: an exact boolean combination cannot contain a special token",
                )
            if not allow_calls:
                raise TrgcError(
                    "E_BOOLEAN_OPERAND",
                    f"{what}: {reason} reaches the recursive rule {alphabet.calls[atom - alphabet.n_input]!r}; "
                    "a complement is computed over bytes only, so its operands must not be recursive "
                    "or unconstrained values",
                    hint="constrain the values under the combinator (e.g. give them a type) or drop the combinator",
                )


def product(
    operands: list[tuple[Nfa, bool]],
    alphabet: Alphabet,
    *,
    what: str,
    limits: Limits,
    budget: Budget,
) -> Dfa:
    """The minimal partial DFA of the intersection of the operands; `(nfa, True)` is
    complemented (the semantics of `boolean.product`, documented there)."""
    if not any(not negated for _, negated in operands):
        raise TrgcError("E_INTERNAL", f"{what}: an AND without a positive operand")
    has_complement = any(negated for _, negated in operands)
    dfas: list[Dfa] = []
    negated: list[bool] = []
    for nfa, neg in operands:
        dfa = _operand_dfa(nfa, what, limits, budget)
        _refuse_atoms(
            dfa,
            alphabet,
            what,
            "a complemented operand" if neg else "an operand beside a complement",
            allow_calls=not has_complement,
        )
        dfas.append(dfa)
        negated.append(neg)
    positive = [i for i, neg in enumerate(negated) if not neg]
    start = tuple(0 for _ in dfas)
    ids: dict[tuple[int, ...], int] = {start: 0}
    tuples = [start]
    delta: list[dict[int, int]] = []
    accepting: list[bool] = []
    index = 0
    while index < len(tuples):
        current = tuples[index]
        index += 1
        accepting.append(
            all(
                (current[i] == SINK or not dfas[i].accepting[current[i]])
                if negated[i]
                else dfas[i].accepting[current[i]]
                for i in range(len(dfas))
            )
        )
        first = dfas[positive[0]].delta[current[positive[0]]]
        budget.charge(len(first) * len(dfas), "boolean product")
        row: dict[int, int] = {}
        for atom in sorted(first):
            target: list[int] = []
            for i, dfa in enumerate(dfas):
                state = current[i]
                nxt = SINK if state == SINK else dfa.delta[state].get(atom, SINK)
                if nxt == SINK and not negated[i]:
                    break
                target.append(nxt)
            else:
                key = tuple(target)
                t = ids.get(key)
                if t is None:
                    check_limit(
                        "states", len(tuples) + 1, limits.states, f"the product automaton of {what}"
                    )
                    t = ids[key] = len(tuples)
                    tuples.append(key)
                row[atom] = t
        delta.append(row)
    return minimize(_trim(Dfa(delta, accepting), budget), budget)


def _trim(dfa: Dfa, budget: Budget) -> Dfa:
    """Drop the states from which no accepting state is reachable (the start state stays)."""
    n = dfa.n_states
    inverse: list[list[int]] = [[] for _ in range(n)]
    for s, row in enumerate(dfa.delta):
        for t in row.values():
            inverse[t].append(s)
    budget.charge(n + dfa.n_transitions, "boolean product")
    live = [False] * n
    todo = [s for s in range(n) if dfa.accepting[s]]
    for s in todo:
        live[s] = True
    while todo:
        t = todo.pop()
        for s in inverse[t]:
            if not live[s]:
                live[s] = True
                todo.append(s)
    if not live[0]:
        return Dfa([{}], [False])
    delta = [
        {a: t for a, t in row.items() if live[t]} if live[s] else {}
        for s, row in enumerate(dfa.delta)
    ]
    return renumber(Dfa(delta, list(dfa.accepting)))
