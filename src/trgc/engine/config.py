"""Parser configurations over an artifact: flattened tables, the step function, identities.

A configuration is the stack of `(machine, state, left, needed)` frames of
`trgc.artifact.model` (bottom first). The engine numbers every state of every machine globally
(`state_offset[m] + s`) and packs a frame into one int, `global_state | left << 32 |
needed << 64`, so a configuration is a tuple of ints (a frame without counters is its global
state).
`Tables` holds the artifact's tables rewritten over global numbers so that the reference, the
kernel and the caches share one form.

`step` is the whole semantics (the model docstring, executed): shift, call, return, and the
restart of a counted repetition. The UTF-8 state is part of the parser state: the compiler
builds classes into UTF-8 byte automata, so a DFA state in the middle of a multi-byte
character is a state like any other and a token that splits a character is allowed exactly
when the automaton can continue.

Masks and counters (docs/mask-engine.md, "Counters"): a token consumes at most `L` bytes (the
longest token) and each restart consumes at least one, so the mask at a configuration depends
on a frame's counters only through `min(left, L)` and `min(needed, L + 1)`. `mask_key` packs
each frame with its counters clipped so (`g | left' << 32 | needed' << 48`, the int64 form
the kernel walks): configurations with equal keys have equal masks, and the key holds nothing
else.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from trgc.artifact.model import REPEAT, Artifact, entry_counters, restarted
from trgc.artifact.stepper import frame_capacity
from trgc.errors import TrgcError

Config = tuple[int, ...]  # packed frames, bottom frame first
START: Config = (0,)  # machine 0, state 0 is global state 0
STATE_MASK = (1 << 32) - 1
CLIP_MASK = (1 << 16) - 1
LONGEST_CLIPPED = (1 << 15) - 2  # the longest token a clipped key can describe


def pack(g: int, left: int = 0, needed: int = 0) -> int:
    """One frame as an int: global state `g` and its counters."""
    return g | (left << 32) | (needed << 64)


def unpack(frame: int) -> tuple[int, int, int]:
    """(global state, left, needed) of a packed frame."""
    return frame & STATE_MASK, (frame >> 32) & STATE_MASK, frame >> 64


@dataclass(frozen=True, eq=False)
class Tables:
    """An artifact's tables over global state numbers (flat arrays for the kernel).

    `next[g, sym]`: `>= 0` shift to global state, `-1` no action, `<= -2` call edge
    `calls[-2 - v] = (callee start state, return state)`, both global, and `call_entry[k] =
    (left, needed)` the counters of the frame the call pushes. Per global state, the facts of
    its machine: `cost` (1 if a frame counts toward `max_depth`), `is_repeat`, and `rep_start`
    (its machine's state 0).
    """

    next: np.ndarray  # int32[G, n_symbols]
    calls: np.ndarray  # int32[K, 2]
    call_entry: np.ndarray  # int64[K, 2]
    accepting: np.ndarray  # bool[G]
    machine_of: np.ndarray  # int32[G]
    state_offset: np.ndarray  # int32[M + 1]
    byte_class: np.ndarray  # uint8[256]
    n_classes: int
    max_depth: int
    max_frames: int  # the most frames a configuration can hold (`frame_capacity`)
    has_caller: np.ndarray  # bool[G]: the state's machine is the callee of some call edge
    need: np.ndarray  # int64[G]: rule frames needed above the state to complete it (NEVER: cannot)
    need_more: np.ndarray  # int64[G]: the same when a repeat frame still needs iterations
    cost: np.ndarray  # int64[G]
    is_repeat: np.ndarray  # bool[G]
    rep_start: np.ndarray  # int64[G]

    @property
    def max_steps(self) -> int:
        """Bound on non-consuming actions while handling one symbol (see `step`)."""
        return 2 * self.max_frames + 3

    @functools.cached_property
    def class_of_byte(self) -> list[int]:
        """`byte_class` as a list (indexing a list costs a third of a numpy item)."""
        return self.byte_class.tolist()

    @functools.cached_property
    def views(self) -> ShiftViews:
        """The tables `shift_bytes` reads per byte, as memoryviews (made once per artifact)."""
        return ShiftViews(
            memoryview(np.ascontiguousarray(self.next)),
            memoryview(np.ascontiguousarray(self.accepting)),
            memoryview(np.ascontiguousarray(self.cost)),
            memoryview(np.ascontiguousarray(self.need)),
            memoryview(np.ascontiguousarray(self.need_more)),
        )


class ShiftViews(NamedTuple):
    """`Tables` arrays seen through memoryviews: an item is a Python int or bool, read in a
    third of the time of a numpy item and never a numpy scalar to convert. `shift_bytes`
    reads three per byte of every advanced token."""

    next: memoryview  # [G, n_symbols]
    accepting: memoryview
    cost: memoryview
    need: memoryview
    need_more: memoryview


def flatten(artifact: Artifact) -> Tables:
    """The global-state form of `artifact` (memoised on the artifact).

    Every machine's rows are renumbered in one compiled pass (`_globalize`, numba is loaded
    here anyway for `_need`): the numpy form, a where per action kind over int64 copies of the
    whole table, took a sixth of `flatten`, which a new artifact pays on the way to its first
    mask."""
    cached = artifact._cache.get("engine.tables")
    if cached is not None:
        return cached
    machines = artifact.machines
    sizes = np.array([m.n_states for m in machines], dtype=np.int64)
    state_offset = np.zeros(len(machines) + 1, dtype=np.int32)
    state_offset[1:] = np.cumsum(sizes)
    call_sizes = np.array([m.calls.shape[0] for m in machines], dtype=np.int64)
    call_offset = np.zeros(len(machines) + 1, dtype=np.int64)
    call_offset[1:] = np.cumsum(call_sizes)
    machine_of = np.repeat(np.arange(len(machines), dtype=np.int32), sizes)
    n_global = int(state_offset[-1])
    local = np.concatenate([m.next for m in machines]).astype(np.int32, copy=False)
    local = local.reshape(n_global, artifact.n_symbols)
    gnext = np.empty(local.shape, dtype=np.int32)
    _globalize_jitted()(local, machine_of, state_offset, call_offset, gnext)
    gcalls, entry = _global_calls(machines, state_offset, call_sizes)
    accepting = np.concatenate([m.accepting for m in machines]).astype(bool, copy=False)
    cost = np.array([m.depth_cost for m in machines], dtype=np.int64)[machine_of]
    need = _need(gnext, gcalls, accepting, cost)
    rep_start = state_offset[:-1].astype(np.int64)[machine_of]
    is_repeat = np.array([m.kind == REPEAT for m in machines], dtype=bool)[machine_of]
    tables = Tables(
        next=gnext,
        calls=gcalls,
        call_entry=entry,
        accepting=accepting,
        machine_of=machine_of,
        state_offset=state_offset,
        byte_class=np.asarray(artifact.byte_class, dtype=np.uint8),
        n_classes=int(artifact.n_classes),
        max_depth=int(artifact.max_depth),
        max_frames=frame_capacity(artifact),
        has_caller=_called(len(machines), machine_of, gcalls)[machine_of],
        need=need,
        need_more=np.where(is_repeat, np.maximum(need, need[rep_start]), need),
        cost=cost,
        is_repeat=is_repeat,
        rep_start=rep_start,
    )
    artifact._cache["engine.tables"] = tables
    return tables


def _globalize(local, machine_of, state_offset, call_offset, out):
    """`out[g, sym]`: machine-local action `local[g, sym]` over global numbers: a shift moves
    by the machine's first state, a call edge `-2 - k` by its first call, `-1` stays."""
    for g in range(local.shape[0]):
        m = machine_of[g]
        first_state = state_offset[m]
        first_call = call_offset[m]
        for c in range(local.shape[1]):
            a = local[g, c]
            if a >= 0:
                out[g, c] = a + first_state
            elif a <= -2:
                out[g, c] = a - first_call
            else:
                out[g, c] = a


@functools.cache
def _globalize_jitted():
    from numba import njit

    return njit(cache=True, nogil=True)(_globalize)


def _global_calls(
    machines, state_offset: np.ndarray, call_sizes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(int32[K, 2] call edges as (callee start state, return state), both global;
    int64[K, 2] the (left, needed) counters of the frame each pushes, `entry_counters`)."""
    calls = np.concatenate([m.calls for m in machines]).astype(np.int64, copy=False)
    bounds = np.concatenate([m.call_bounds for m in machines]).tolist()
    caller_first = np.repeat(state_offset[:-1].astype(np.int64), call_sizes)
    gcalls = np.empty((len(bounds), 2), dtype=np.int32)
    gcalls[:, 0] = state_offset[calls[:, 0]]
    gcalls[:, 1] = calls[:, 1] + caller_first
    entry = np.array([entry_counters(low, high) for low, high in bounds], dtype=np.int64)
    return gcalls, entry.reshape(len(bounds), 2)


def _called(n_machines: int, machine_of: np.ndarray, calls: np.ndarray) -> np.ndarray:
    """bool[n_machines]: the machines some call edge enters."""
    out = np.zeros(n_machines, dtype=bool)
    out[machine_of[calls[:, 0]]] = True
    return out


NEVER = 1 << 40  # `need` of a state that cannot complete


def _completion(gnext, calls, accepting, cost, out):
    """`trgc.artifact.stepper.completion_depths` over global states, in place: the fixed point
    `need(g) = 0` if accepting, else the least over g's actions of `need(target)` (shift) or
    `max(cost(callee) + need(callee start), need(return))` (call), NEVER when unreachable.
    Values only decrease, so any sweep order reaches the same fixed point; states are numbered
    breadth-first, so a reverse sweep converges in few rounds."""
    n = out.shape[0]
    for g in range(n):
        out[g] = 0 if accepting[g] else NEVER
    changed = True
    while changed:
        changed = False
        for g in range(n - 1, -1, -1):
            best = out[g]
            for c in range(gnext.shape[1]):
                a = gnext[g, c]
                if a >= 0:
                    candidate = out[a]
                elif a <= -2:
                    callee = calls[-2 - a, 0]
                    candidate = max(cost[callee] + out[callee], out[calls[-2 - a, 1]])
                    candidate = min(candidate, NEVER)
                else:
                    continue
                if candidate < best:
                    best = candidate
            if best < out[g]:
                out[g] = best
                changed = True


@functools.cache
def _completion_jitted():
    from numba import njit

    return njit(cache=True, nogil=True)(_completion)


def _need(gnext, calls, accepting, cost) -> np.ndarray:
    """Rule frames needed above each global state to complete it (NEVER: cannot)."""
    out = np.empty(accepting.shape[0], dtype=np.int64)
    _completion_jitted()(gnext, calls, accepting, cost, out)
    return out


def frame_need(tables: Tables, frame: int) -> int:
    """Rule frames needed above `frame` to complete it (`need_more` while a repeat frame still
    needs iterations)."""
    g, _, needed = unpack(frame)
    return int(tables.need_more[g] if needed else tables.need[g])


def depth(tables: Tables, config: Config) -> int:
    """The rule frames of `config` (what `max_depth` bounds)."""
    cost = tables.views.cost
    return sum(cost[f & STATE_MASK] for f in config)


def is_viable(tables: Tables, config: Config) -> bool:
    """Can the configuration still complete within `max_depth`? A frame with `d` rule frames
    at or below it must be completable with at most `max_depth - d` rule frames above it, the
    rule of `trgc.artifact.stepper.is_viable` (and of `trgc check --prefix`)."""
    d = 0
    for frame in config:
        d += int(tables.cost[frame & STATE_MASK])
        if d + frame_need(tables, frame) > tables.max_depth:
            return False
    return True


def step(tables: Tables, config: Config, sym: int) -> Config | None:
    """The configuration after consuming symbol `sym`, or None if it is rejected: no action
    applies, a push would exceed `max_depth`, or the result is not viable (`is_viable`), so
    that every allowed prefix can still be completed.

    Calls, returns and restarts do not consume: the same symbol is handled again by the new top
    frame. A run of them is pops, at most one restart, then pushes (a restart always lands on a
    state that acts on the symbol, and a callee never returns on a symbol of its FIRST set), so
    more than `max_steps` of them means a malformed artifact and the symbol is rejected rather
    than looping.
    """
    after = _raw_step(tables, config, sym)
    return after if after is not None and is_viable(tables, after) else None


def _raw_step(tables: Tables, config: Config, sym: int) -> Config | None:
    stack = list(config)
    rule_frames = depth(tables, config)
    for _ in range(tables.max_steps):
        g, left, needed = unpack(stack[-1])
        action = int(tables.next[g, sym])
        if action >= 0:
            stack[-1] = pack(action, left, needed)
            return tuple(stack)
        if action == -1:
            if not tables.accepting[g]:
                return None
            if tables.is_repeat[g]:
                start = int(tables.rep_start[g])
                if left > 0 and tables.next[start, sym] != -1:
                    stack[-1] = pack(start, *restarted(left, needed))
                    continue
                if needed:
                    return None
            if len(stack) == 1:
                return None
            stack.pop()
            rule_frames -= int(tables.cost[g])
            continue
        k = -2 - action
        callee, ret = (int(v) for v in tables.calls[k])
        if tables.cost[callee] and rule_frames >= tables.max_depth:
            return None
        stack[-1] = pack(ret, left, needed)
        stack.append(pack(callee, *(int(v) for v in tables.call_entry[k])))
        rule_frames += int(tables.cost[callee])
    return None


def step_bytes(tables: Tables, config: Config, data: bytes) -> Config | None:
    """The configuration after consuming every byte of `data`, or None at the first dead prefix."""
    current: Config | None = config
    for byte in data:
        current = step(tables, current, int(tables.byte_class[byte]))
        if current is None:
            return None
    return current


def shift_bytes(tables: Tables, config: Config, data: bytes) -> Config | None | bool:
    """`step_bytes` of a viable configuration (every one a matcher holds) when each byte of
    `data` is a shift of the top frame, the common case, or one is refused at a state that does
    not accept (a call, return or restart: False, and `step_bytes` decides). The frames below do not change, so viability is the top frame's
    check after each byte: the rule frames at or below it plus its completion need within
    `max_depth`. The counters ride along, as in `step`."""
    top = config[-1]
    g = top & STATE_MASK
    counters = top - g
    views = tables.views
    need = views.need_more if top >> 64 else views.need
    nxt, classes, cost = views.next, tables.class_of_byte, views.cost
    room = tables.max_depth - (depth(tables, config[:-1]) if len(config) > 1 else 0)
    for byte in data:
        action = nxt[g, classes[byte]]
        if action < 0:  # no action and nothing to return into is the reference's refusal too
            return None if action == -1 and not views.accepting[g] else False
        if cost[action] + need[action] > room:
            return None
        g = action
    return (*config[:-1], g + counters)


def frame_accepting(tables: Tables, frame: int) -> bool:
    """The frame may end here: an accepting state, and no iteration still needed."""
    g, _, needed = unpack(frame)
    return bool(tables.accepting[g]) and not needed


def is_accepting(tables: Tables, config: Config) -> bool:
    """True when every frame may end here (the input so far is a complete match)."""
    return all(frame_accepting(tables, f) for f in config)


def frames(tables: Tables, config: Config) -> list[tuple[int, int, int, int]]:
    """The configuration as `(machine, local state, left, needed)`, bottom first."""
    out = []
    for frame in config:
        g, left, needed = unpack(frame)
        m = int(tables.machine_of[g])
        out.append((m, g - int(tables.state_offset[m]), left, needed))
    return out


def check_longest(longest: int) -> None:
    """Counters are clipped with the longest token; refuse one too long for the clipped key."""
    if longest > LONGEST_CLIPPED:
        raise TrgcError(
            "E_TOKEN_TOO_LONG",
            f"the vocabulary's longest token has {longest:,} bytes; trgc's masks support tokens "
            f"of at most {LONGEST_CLIPPED:,} bytes",
        )


def frame_key(frame: int, longest: int) -> int:
    """A frame with its counters clipped (`min(left, longest)`, `min(needed, longest + 1)`):
    equal keys, equal masks. This is also the int64 form the kernel walks."""
    g, left, needed = unpack(frame)
    return g | (min(left, longest) << 32) | (min(needed, longest + 1) << 48)


def unclip(key: int) -> tuple[int, int, int]:
    """(global state, left, needed) of a clipped frame key."""
    return key & STATE_MASK, (key >> 32) & CLIP_MASK, key >> 48


def mask_key(config: Config, longest: int) -> Config:
    """`frame_key` of every frame: what the mask at `config` depends on, and nothing more."""
    return tuple(frame_key(f, longest) for f in config)


def config_bytes(tables: Tables, config: Config | None) -> bytes:
    """Canonical bytes of a configuration: `TRGCCFG2`, then per frame little-endian uint32
    machine, local state, left and needed; a terminated matcher (None) is the tag alone
    followed by `END`."""
    if config is None:
        return b"TRGCCFG2END"
    fields = np.asarray(frames(tables, config), dtype="<u4").reshape(-1)
    return b"TRGCCFG2" + fields.tobytes()


def config_id(tables: Tables, config: Config | None) -> str:
    """A stable identity of a configuration (`sha256:<hex>` of `config_bytes`)."""
    return "sha256:" + hashlib.sha256(config_bytes(tables, config)).hexdigest()
