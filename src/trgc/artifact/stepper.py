"""Reference semantics of an artifact: configurations and one step on one symbol.

A configuration is a tuple of `(machine, state)` frames, bottom first; the top frame is last.
`step` follows the action table exactly as `trgc.artifact.model` defines it (shift, call,
return) with the stack bounded by `artifact.max_depth`: a call that would push frame number
`max_depth + 1` rejects the symbol. Everything here is plain iterative Python, meant to be
obviously correct; faster engines are tested against it.
"""

from __future__ import annotations

from dataclasses import dataclass

from trgc.artifact.model import Artifact
from trgc.errors import TrgcError

Frames = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class _Tables:
    """The artifact's tables as Python lists (indexing numpy scalars one at a time is slow)."""

    next: tuple[list[list[int]], ...]
    accepting: tuple[list[bool], ...]
    calls: tuple[list[list[int]], ...]
    max_depth: int


def _tables(artifact: Artifact) -> _Tables:
    tables = artifact._cache.get("stepper")
    if tables is None:
        tables = _Tables(
            next=tuple(m.next.tolist() for m in artifact.machines),
            accepting=tuple([bool(x) for x in m.accepting.tolist()] for m in artifact.machines),
            calls=tuple(m.calls.reshape(-1, 2).tolist() for m in artifact.machines),
            max_depth=artifact.max_depth,
        )
        artifact._cache["stepper"] = tables
    return tables


def initial(artifact: Artifact) -> Frames:
    """The start configuration: machine 0, state 0."""
    del artifact
    return ((0, 0),)


def step(artifact: Artifact, frames: Frames, symbol: int) -> Frames | None:
    """The configuration after consuming `symbol`, or None if it is rejected.

    Returns (pops) and calls (pushes) do not consume; they repeat until a shift consumes the
    symbol. Each iteration changes the configuration, and a valid artifact never revisits one
    before shifting; a revisit would loop forever, so it is reported as `E_ARTIFACT_CORRUPT`.
    """
    tables = _tables(artifact)
    machine, state = frames[-1]
    action = tables.next[machine][state][symbol]
    if action >= 0:  # the common case: a shift in the top frame
        return (*frames[:-1], (machine, action))
    stack = list(frames)
    seen: set[Frames] = set()
    while True:
        machine, state = stack[-1]
        action = tables.next[machine][state][symbol]
        if action >= 0:
            stack[-1] = (machine, action)
            return tuple(stack)
        if action == -1:
            if len(stack) > 1 and tables.accepting[machine][state]:
                stack.pop()
            else:
                return None
        else:
            if len(stack) >= tables.max_depth:
                return None
            callee, return_state = tables.calls[machine][-2 - action]
            stack[-1] = (machine, return_state)
            stack.append((callee, 0))
        key = tuple(stack)
        if key in seen:
            raise TrgcError(
                "E_ARTIFACT_CORRUPT",
                f"symbol {symbol} makes the artifact call and return forever without consuming",
            )
        seen.add(key)


def is_accepting(artifact: Artifact, frames: Frames) -> bool:
    """True when the input may end here: every frame is in an accepting state."""
    accepting = _tables(artifact).accepting
    return all(accepting[machine][state] for machine, state in frames)


def allowed_symbols(artifact: Artifact, frames: Frames) -> list[int]:
    """Every symbol `step` accepts from `frames`, ascending."""
    return [sym for sym in range(artifact.n_symbols) if step(artifact, frames, sym) is not None]


def completion_depths(artifact: Artifact) -> tuple[list[float], ...]:
    """For each (machine, state): the fewest extra frames needed above it to reach an accepting
    state of that machine (0 if accepting, inf if impossible). A fixed point over shifts and calls:
    a call to `c` returning to `r` needs max(1 + need(c, 0), need(r))."""
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
                        callee, ret = tables.calls[m][-2 - action]
                        candidate = max(1 + need[callee][0], need[m][ret])
                    if candidate < best:
                        best = candidate
                if best < need[m][s]:
                    need[m][s] = best
                    changed = True
    artifact._cache["completion"] = need
    return need


def is_viable(artifact: Artifact, frames: Frames) -> bool:
    """True when some continuation (bytes or special tokens) leads to acceptance without
    exceeding `max_depth`: frame number `d` (1-based from the bottom) must be completable with
    at most `max_depth - d` frames above it."""
    need = completion_depths(artifact)
    return all(d + need[m][s] <= artifact.max_depth for d, (m, s) in enumerate(frames, start=1))
