"""Parser configurations over an artifact: flattened tables, the step function, identities.

A configuration is the stack of `(machine, state)` frames of `trgc.artifact.model` (bottom
first). The engine numbers every state of every machine globally (`state_offset[m] + s`), so a
frame is one int and a configuration is a tuple of ints; `Tables` holds the artifact's tables
rewritten over global numbers so that the reference, the kernel and the caches share one form.

`step` is the whole semantics (the model docstring, executed): shift, call, return. The UTF-8
state is part of the parser state: the compiler builds classes into UTF-8 byte automata, so a
DFA state in the middle of a multi-byte character is a state like any other and a token that
splits a character is allowed exactly when the automaton can continue.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from trgc.artifact.model import Artifact
from trgc.artifact.stepper import completion_depths

Config = tuple[int, ...]  # global state ids, bottom frame first
START: Config = (0,)  # machine 0, state 0 is global state 0


@dataclass(frozen=True, eq=False)
class Tables:
    """An artifact's tables over global state numbers (flat arrays for the kernel).

    `next[g, sym]`: `>= 0` shift to global state, `-1` no action, `<= -2` call edge
    `calls[-2 - v] = (callee start state, return state)`, both global.
    """

    next: np.ndarray  # int32[G, n_symbols]
    calls: np.ndarray  # int32[K, 2]
    accepting: np.ndarray  # bool[G]
    machine_of: np.ndarray  # int32[G]
    state_offset: np.ndarray  # int32[M + 1]
    byte_class: np.ndarray  # uint8[256]
    n_classes: int
    max_depth: int
    has_caller: np.ndarray  # bool[G]: the state's machine is the callee of some call edge
    need: np.ndarray  # int64[G]: frames needed above the state to complete it (NEVER if it cannot)

    @property
    def max_steps(self) -> int:
        """Bound on non-consuming actions while handling one symbol (see `step`)."""
        return 2 * self.max_depth + 2


def flatten(artifact: Artifact) -> Tables:
    """The global-state form of `artifact` (memoised on the artifact)."""
    cached = artifact._cache.get("engine.tables")
    if cached is not None:
        return cached
    sizes = [m.n_states for m in artifact.machines]
    state_offset = np.zeros(len(sizes) + 1, dtype=np.int32)
    state_offset[1:] = np.cumsum(sizes, dtype=np.int64)
    call_sizes = [int(m.calls.shape[0]) for m in artifact.machines]
    call_offset = np.zeros(len(call_sizes) + 1, dtype=np.int64)
    call_offset[1:] = np.cumsum(call_sizes, dtype=np.int64)
    n_symbols = artifact.n_symbols
    gnext = np.empty((int(state_offset[-1]), n_symbols), dtype=np.int32)
    gcalls = np.empty((int(call_offset[-1]), 2), dtype=np.int32)
    machine_of = np.empty(int(state_offset[-1]), dtype=np.int32)
    for m, machine in enumerate(artifact.machines):
        lo, hi = int(state_offset[m]), int(state_offset[m + 1])
        local = np.asarray(machine.next, dtype=np.int64)
        out = np.where(local >= 0, local + lo, local)
        out = np.where(local <= -2, local - int(call_offset[m]), out)
        gnext[lo:hi] = out
        machine_of[lo:hi] = m
        if machine.calls.shape[0]:
            calls = np.asarray(machine.calls, dtype=np.int64)
            k0 = int(call_offset[m])
            gcalls[k0 : k0 + calls.shape[0], 0] = state_offset[calls[:, 0]]
            gcalls[k0 : k0 + calls.shape[0], 1] = calls[:, 1] + lo
    tables = Tables(
        next=gnext,
        calls=gcalls,
        accepting=np.concatenate([np.asarray(m.accepting, dtype=bool) for m in artifact.machines]),
        machine_of=machine_of,
        state_offset=state_offset,
        byte_class=np.asarray(artifact.byte_class, dtype=np.uint8),
        n_classes=int(artifact.n_classes),
        max_depth=int(artifact.max_depth),
        has_caller=np.isin(machine_of, machine_of[gcalls[:, 0]]),
        need=_need(artifact),
    )
    artifact._cache["engine.tables"] = tables
    return tables


NEVER = 1 << 40  # `need` of a state that cannot complete


def _need(artifact: Artifact) -> np.ndarray:
    """`trgc.artifact.stepper.completion_depths` over global state numbers."""
    out = []
    for per_machine in completion_depths(artifact):
        out.extend(NEVER if v == float("inf") else int(v) for v in per_machine)
    return np.array(out, dtype=np.int64)


def is_viable(tables: Tables, config: Config) -> bool:
    """Can the configuration still complete within `max_depth`? Frame `d` (1-based from the
    bottom) must be completable with at most `max_depth - d` frames above it, the rule of
    `trgc.artifact.stepper.is_viable` (and of `trgc check --prefix`)."""
    return all(d + int(tables.need[g]) <= tables.max_depth for d, g in enumerate(config, start=1))


def step(tables: Tables, config: Config, sym: int) -> Config | None:
    """The configuration after consuming symbol `sym`, or None if it is rejected: no action
    applies, a push would exceed `max_depth`, or the result is not viable (`is_viable`), so
    that every allowed prefix can still be completed.

    Calls and returns do not consume: the same symbol is handled again by the new top frame.
    A run of non-consuming actions is pops followed by pushes (a callee never returns on a
    symbol of its FIRST set), so more than `max_steps` of them means a malformed artifact and
    the symbol is rejected rather than looping.
    """
    after = _raw_step(tables, config, sym)
    return after if after is not None and is_viable(tables, after) else None


def _raw_step(tables: Tables, config: Config, sym: int) -> Config | None:
    stack = list(config)
    for _ in range(tables.max_steps):
        top = stack[-1]
        action = int(tables.next[top, sym])
        if action >= 0:
            stack[-1] = action
            return tuple(stack)
        if action == -1:
            if tables.accepting[top] and len(stack) > 1:
                stack.pop()
                continue
            return None
        if len(stack) >= tables.max_depth:
            return None
        callee, ret = tables.calls[-2 - action]
        stack[-1] = int(ret)
        stack.append(int(callee))
    return None


def step_bytes(tables: Tables, config: Config, data: bytes) -> Config | None:
    """The configuration after consuming every byte of `data`, or None at the first dead prefix."""
    current: Config | None = config
    for byte in data:
        current = step(tables, current, int(tables.byte_class[byte]))
        if current is None:
            return None
    return current


def is_accepting(tables: Tables, config: Config) -> bool:
    """True when every frame's state is accepting (the input so far is a complete match)."""
    return all(bool(tables.accepting[g]) for g in config)


def frames(tables: Tables, config: Config) -> list[tuple[int, int]]:
    """The configuration as `(machine, local state)` pairs, bottom first."""
    out = []
    for g in config:
        m = int(tables.machine_of[g])
        out.append((m, g - int(tables.state_offset[m])))
    return out


def config_bytes(tables: Tables, config: Config | None) -> bytes:
    """Canonical bytes of a configuration: `TRGCCFG1`, then per frame little-endian int32
    machine and local state; a terminated matcher (None) is the tag alone followed by `END`."""
    if config is None:
        return b"TRGCCFG1END"
    pairs = np.asarray(frames(tables, config), dtype="<i4").reshape(-1)
    return b"TRGCCFG1" + pairs.tobytes()


def config_id(tables: Tables, config: Config | None) -> str:
    """A stable identity of a configuration (`sha256:<hex>` of `config_bytes`)."""
    return "sha256:" + hashlib.sha256(config_bytes(tables, config)).hexdigest()
