"""Reference semantics of an artifact: configurations and one step on one symbol.

A configuration is a tuple of `(machine, state, left, needed)` frames, bottom first; the top
frame is last (`left`/`needed` are the counters of a repeat frame, 0 elsewhere). `step`
follows the action table exactly as `trgc.artifact.model` defines it (shift, call, return,
and the restart of a counted repetition) with the rule frames bounded by `artifact.max_depth`:
a call that would push rule frame number `max_depth + 1` rejects the symbol. Everything here is plain iterative Python, meant to be obviously correct; faster
engines are tested against it.
"""

from __future__ import annotations

from dataclasses import dataclass

from trgc.artifact.model import REPEAT, Artifact, entry_counters, restarted
from trgc.errors import TrgcError

Frame = tuple[int, int, int, int]  # (machine, state, left, needed)
Frames = tuple[Frame, ...]


@dataclass(frozen=True)
class _Tables:
    """The artifact's tables as Python lists (indexing numpy scalars one at a time is slow)."""

    next: tuple[list[list[int]], ...]
    accepting: tuple[list[bool], ...]
    calls: tuple[list[list[int]], ...]  # (callee, return state, rep_min, rep_max)
    cost: tuple[int, ...]  # per machine: 1 for rule machines, 0 otherwise
    repeat: tuple[bool, ...]
    max_depth: int


def _tables(artifact: Artifact) -> _Tables:
    tables = artifact._cache.get("stepper")
    if tables is None:
        ms = artifact.machines
        tables = _Tables(
            next=tuple(m.next.tolist() for m in ms),
            accepting=tuple([bool(x) for x in m.accepting.tolist()] for m in ms),
            calls=tuple(
                [[*c, *b] for c, b in zip(m.calls.tolist(), m.call_bounds.tolist(), strict=True)]
                for m in ms
            ),
            cost=tuple(m.depth_cost for m in ms),
            repeat=tuple(m.kind == REPEAT for m in ms),
            max_depth=artifact.max_depth,
        )
        artifact._cache["stepper"] = tables
    return tables


def initial(artifact: Artifact) -> Frames:
    """The start configuration: machine 0, state 0, no counters."""
    del artifact
    return ((0, 0, 0, 0),)


def depth(artifact: Artifact, frames: Frames) -> int:
    """The rule frames in `frames`: what `max_depth` bounds."""
    cost = _tables(artifact).cost
    return sum(cost[frame[0]] for frame in frames)


def step(artifact: Artifact, frames: Frames, symbol: int) -> Frames | None:
    """The configuration after consuming `symbol`, or None if it is rejected.

    Returns (pops), restarts and calls (pushes) do not consume; they repeat until a shift
    consumes the symbol. Each iteration changes the configuration, and a valid artifact never
    revisits one before shifting; a revisit would loop forever, so it is reported as
    `E_ARTIFACT_CORRUPT`.
    """
    t = _tables(artifact)
    machine, state, left, needed = frames[-1]
    action = t.next[machine][state][symbol]
    if action >= 0:  # the common case: a shift in the top frame
        return (*frames[:-1], (machine, action, left, needed))
    stack = list(frames)
    rule_frames = depth(artifact, frames)
    seen: set[Frames] = set()
    while True:
        machine, state, left, needed = stack[-1]
        action = t.next[machine][state][symbol]
        if action >= 0:
            stack[-1] = (machine, action, left, needed)
            return tuple(stack)
        if action == -1:
            if not t.accepting[machine][state]:
                return None
            if t.repeat[machine]:
                if left > 0 and t.next[machine][0][symbol] != -1:
                    stack[-1] = (machine, 0, *restarted(left, needed))
                    continue  # the next iteration starts with this symbol
                if needed:
                    return None
            if len(stack) == 1:
                return None
            stack.pop()
            rule_frames -= t.cost[machine]
        else:
            callee, return_state, rep_min, rep_max = t.calls[machine][-2 - action]
            if t.cost[callee] and rule_frames >= t.max_depth:
                return None
            stack[-1] = (machine, return_state, left, needed)
            stack.append((callee, 0, *entry_counters(rep_min, rep_max)))
            rule_frames += t.cost[callee]
        key = tuple(stack)
        if key in seen:
            raise TrgcError(
                "E_ARTIFACT_CORRUPT",
                f"symbol {symbol} makes the artifact call and return forever without consuming",
            )
        seen.add(key)


def frame_accepting(artifact: Artifact, frame: Frame) -> bool:
    """The frame may end here: an accepting state, and enough iterations for a repeat frame."""
    machine, state, _, needed = frame
    return _tables(artifact).accepting[machine][state] and not needed


def is_accepting(artifact: Artifact, frames: Frames) -> bool:
    """True when the input may end here: every frame is accepting."""
    return all(frame_accepting(artifact, f) for f in frames)


def allowed_symbols(artifact: Artifact, frames: Frames) -> list[int]:
    """Every symbol `step` accepts from `frames`, ascending."""
    return [sym for sym in range(artifact.n_symbols) if step(artifact, frames, sym) is not None]


def completion_depths(artifact: Artifact) -> tuple[list[float], ...]:
    """For each (machine, state): the fewest rule frames needed above it to reach an accepting
    state of that machine (0 if accepting, inf if impossible); for a repeat machine, the end of
    the current iteration. A fixed point over shifts and calls: a call to `c` returning to `r`
    needs max(cost(c) + need(c, 0), need(r)), where cost is 1 for rule machines, 0 otherwise."""
    cached = artifact._cache.get("completion")
    if cached is not None:
        return cached
    tables = _tables(artifact)
    inf = float("inf")
    need = tuple([0.0 if acc else inf for acc in accepting] for accepting in tables.accepting)
    actions = tuple([sorted(set(row) - {-1}) for row in rows] for rows in tables.next)
    changed = True
    while changed:  # values only decrease, and are integers or inf: this terminates
        changed = False
        for m, rows in enumerate(actions):
            # states are numbered breadth-first from the start, so sweeping them in reverse
            # lets acceptance flow back along chains within a single pass
            for s in range(len(rows) - 1, -1, -1):
                row = rows[s]
                best = need[m][s]
                for action in row:
                    if action >= 0:
                        candidate = need[m][action]
                    else:
                        callee, ret = tables.calls[m][-2 - action][:2]
                        candidate = max(tables.cost[callee] + need[callee][0], need[m][ret])
                    if candidate < best:
                        best = candidate
                if best < need[m][s]:
                    need[m][s] = best
                    changed = True
    artifact._cache["completion"] = need
    return need


def frame_need(artifact: Artifact, frame: Frame) -> float:
    """Rule frames needed above `frame` to complete it: to the end of the current iteration,
    and for a repeat frame short of its minimum also a whole iteration from state 0."""
    need = completion_depths(artifact)
    machine, state, _, needed = frame
    own = need[machine][state]
    return max(own, need[machine][0]) if needed else own


def is_viable(artifact: Artifact, frames: Frames) -> bool:
    """True when some continuation (bytes or special tokens) leads to acceptance without
    exceeding `max_depth`: a frame with `d` rule frames at or below it must be completable with
    at most `max_depth - d` rule frames above it."""
    t = _tables(artifact)
    d = 0
    for frame in frames:
        d += t.cost[frame[0]]
        if d + frame_need(artifact, frame) > artifact.max_depth:
            return False
    return True


def frame_capacity(artifact: Artifact) -> int:
    """The most frames a configuration can hold. Frames of shared and repeat machines do not
    count toward `max_depth`, but they form no call cycle (the codec checks it), so between two
    rule frames at most `K` of them stack up, `K` the longest chain of such machines. Without
    any call to a rule machine the only rule frame is the bottom one: `1 + K`; otherwise
    `max_depth * (1 + K)`."""
    cached = artifact._cache.get("capacity")
    if cached is not None:
        return cached
    machines = artifact.machines
    callees = [sorted({int(c) for c in m.calls[:, 0].tolist()}) for m in machines]
    free = [m.depth_cost == 0 for m in machines]
    chain = [0] * len(machines)  # longest chain of free machines starting at each free machine
    order = _free_postorder(callees, free)
    for m in order:
        chain[m] = 1 + max((chain[c] for c in callees[m] if free[c]), default=0)
    longest = max(chain, default=0)
    calls_rules = any(not free[c] for cs in callees for c in cs)
    capacity = artifact.max_depth * (1 + longest) if calls_rules else 1 + longest
    artifact._cache["capacity"] = capacity
    return capacity


def _free_postorder(callees: list[list[int]], free: list[bool]) -> list[int]:
    """Free machines, each after every free machine it calls (the free call graph is acyclic)."""
    done = [False] * len(callees)
    order: list[int] = []
    for root in range(len(callees)):
        if not free[root] or done[root]:
            continue
        path = [(root, iter(callees[root]))]
        done[root] = True
        while path:
            node, it = path[-1]
            nxt = next((c for c in it if free[c] and not done[c]), None)
            if nxt is None:
                order.append(node)
                path.pop()
            else:
                done[nxt] = True
                path.append((nxt, iter(callees[nxt])))
    return order
