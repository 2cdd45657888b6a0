"""DFA minimisation (Hopcroft's partition refinement) and breadth-first renumbering.

The DFAs here are partial (a missing transition rejects). Hopcroft's algorithm works on a
partial DFA without adding a sink if *both* initial blocks (accepting, non-accepting) start
in the worklist: the sink would only ever be needed as a splitter to separate "has a
transition" from "has none", and the two initial splitters already do that (Valmari and
Lehtinen, "Efficient minimization of DFAs with partial transition functions", 2008). When a
block that is not waiting is split, only the smaller half is queued, which gives the
O(m log n) bound. Call symbols are ordinary atoms, so states calling different rules stay
distinct. Blocks are sets (a split costs the size of the moved half, never of the block).
"""

from __future__ import annotations

from trgc.automata.dfa import Dfa
from trgc.limits import Budget


def minimize(dfa: Dfa, budget: Budget) -> Dfa:
    """The minimal DFA equivalent to `dfa` (all states assumed reachable), BFS-numbered."""
    n = dfa.n_states
    inverse: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for s, row in enumerate(dfa.delta):
        for a, t in row.items():
            inverse[t].append((a, s))
    budget.charge(n + dfa.n_transitions, "minimisation")
    accepting = {s for s in range(n) if dfa.accepting[s]}
    rejecting = set(range(n)) - accepting
    blocks: list[set[int]] = [b for b in (accepting, rejecting) if b]
    block_of = [0] * n
    for bi, block in enumerate(blocks):
        for s in block:
            block_of[s] = bi
    waiting = list(range(len(blocks)))
    in_waiting = [True] * len(blocks)
    while waiting:
        splitter = waiting.pop()
        in_waiting[splitter] = False
        pre: dict[int, list[int]] = {}
        for t in list(blocks[splitter]):
            for a, s in inverse[t]:
                sources = pre.get(a)
                if sources is None:
                    pre[a] = [s]
                else:
                    sources.append(s)
        for a in sorted(pre):
            sources = pre[a]
            budget.charge(len(sources), "minimisation")
            touched: dict[int, list[int]] = {}
            for s in sources:
                touched.setdefault(block_of[s], []).append(s)
            for y, members in touched.items():
                if len(members) == len(blocks[y]):
                    continue
                blocks[y].difference_update(members)
                z = len(blocks)
                blocks.append(set(members))
                for s in members:
                    block_of[s] = z
                if in_waiting[y] or len(members) <= len(blocks[y]):
                    waiting.append(z)
                    in_waiting.append(True)
                else:
                    in_waiting.append(False)
                    waiting.append(y)
                    in_waiting[y] = True
    quotient_delta: list[dict[int, int]] = [{} for _ in blocks]
    quotient_accepting = [False] * len(blocks)
    for s in range(n):
        b = block_of[s]
        quotient_accepting[b] = dfa.accepting[s]
        if not quotient_delta[b]:
            quotient_delta[b] = {a: block_of[t] for a, t in dfa.delta[s].items()}
    return renumber(Dfa(quotient_delta, quotient_accepting), block_of[0])


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
