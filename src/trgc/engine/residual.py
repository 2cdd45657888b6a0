"""The residual of a top frame: everything its `FrameEntry` depends on, canonically, and its hash.

A frame entry (`trgc.engine.precompute.frame_entry`) is one frame-mode trie walk from a single
frame key `k = (state g, left', needed')`. What that walk reads is:

* the actions of the states it can reach from `g` while consuming the bytes of one token: by
  shifts, by calls (the callee's start state and the return state below it), by restarts of a
  counted repetition (its machine's state 0), transitively into callees; per such state whether
  it accepts, whether its machine is a repeat, its rule cost and its completion needs
  (`Tables.need`, `need_more`), and per call edge the counters it pushes, clipped with the
  longest token `L` as the kernel pushes them;
* the root frame's clipped counters, whether it has callers (a return out of it is then an
  open root, else a rejection), the artifact's `max_depth`;
* the tokenizer's trie and which of its tokens are matched by bytes (the ids a grammar names
  as special symbols are not);

and nothing else: not the artifact's state numbers, byte-class numbering, other states or
names. Since a token has at most `L` bytes, a state first reached after `d` bytes matters only
if `d <= L`, and its actions only if `d < L` (after the `L`-th byte only its completion need is
read): the residual is cut there. States are numbered breadth-first from `g` (byte classes in
the order of their smallest byte, a call's callee before its return state, a restart last), and
the artifact's byte classes are merged into the coarsest classes the reached states do not tell
apart, numbered by their smallest byte, so two artifacts that split bytes differently elsewhere
still give one description. Two frames with equal descriptions make the kernel read equal
values at every step, hence have equal frame entries over one tokenizer: the description's
SHA-256 (`residual_id`) keys frame entries in the in-memory cache and on disk, so they are
computed once per tokenizer and shared by states, artifacts, matchers and processes.

The description, hashed as little-endian bytes: `TRGCRES1`; int64 `max_depth, L, frame mode,
left', needed', n_states, n_classes, n_actions, n_calls, n_excluded`; uint8[256] class of each
byte; per state int64 `(has actions, accepting, repeat, cost, need, need_more, restart target
or -1)` (a state reached only after `L` bytes: `(0, 0, 0, 0, need, need_more, -1)`); int64
actions `[n_actions, 3]`, every `(state, class, action)` with an action, by state then class
(action: the target state, or `-2 - c` for call `c`); int64 calls `[n_calls, 4]` (callee,
return state, left', needed'); int64 excluded token ids.
"""

from __future__ import annotations

import functools
import hashlib
import struct
import threading

import numpy as np

from trgc.engine.binding import Binding
from trgc.engine.config import STATE_MASK, unclip
from trgc.engine.kernel import ACCEPTING, COST, IS_REPEAT, NEED, NEED_MORE, REP_START, KernelTables

MAGIC = b"TRGCRES1"
FAR = 1 << 40  # distance of a state not reached
# Residuals of more states are not described: the description costs about n_states x
# n_classes steps, and over 80 JSONSchemaBench schemas (Llama-3) 99% of the frames whose
# residual another artifact shares have at most 128 states (benchmarks/bench_residuals.py);
# larger frames are keyed by their artifact instead (engine/framecache.py)
RESIDUAL_STATES = 128


def _describe(g, longest, n_classes, gnext, calls, info, class_order, byte_position, dist,
              canon, order, rows, call_of, group, col_hash, desc, byte_map, budget):  # fmt: skip
    """Write the description of the residual of state `g` (module docstring) after the
    header slots of `desc` (int64) and into `byte_map`; return its length in `desc`, or -1 when
    it has more than `budget` states. The scratch arrays (`dist`, `canon`, `call_of`: FAR, -1,
    -1 everywhere) are restored before returning."""
    # 1. distances in bytes: layers of shifts, each closed under calls and restarts (no byte)
    dist[g] = 0
    order[0] = g
    n = 1
    lo = 0
    for d in range(longest + 1):
        if n > budget:
            break
        q = lo
        while q < n:  # close layer d: entries appended here belong to it
            s = order[q]
            q += 1
            for c in range(n_classes):
                a = gnext[s, c]
                if a <= -2:
                    k = -2 - a
                    for t in (calls[k, 0], calls[k, 1]):
                        if dist[t] > d:
                            dist[t] = d
                            order[n] = t
                            n += 1
            if info[IS_REPEAT, s] and info[ACCEPTING, s]:
                t = info[REP_START, s]
                if dist[t] > d:
                    dist[t] = d
                    order[n] = t
                    n += 1
        hi = n
        if d == longest:
            break
        for q in range(lo, hi):  # shifts out of layer d start layer d + 1
            if n > budget:
                break
            s = order[q]
            for c in range(n_classes):
                a = gnext[s, c]
                if a >= 0 and dist[a] > d + 1:
                    dist[a] = d + 1
                    order[n] = a
                    n += 1
        lo = hi
        if lo == n:
            break
    if n > budget:
        for q in range(n):
            dist[order[q]] = FAR
        return -1
    reached = order[:n].copy()
    # 2. canonical numbers: breadth-first from g over the reached states
    canon[g] = 0
    order[0] = g
    m = 1
    q = 0
    while q < m:
        s = order[q]
        q += 1
        if dist[s] >= longest:  # reached after L bytes: only its completion need is read
            continue
        for j in range(n_classes):
            a = gnext[s, class_order[j]]
            if a >= 0:
                if canon[a] < 0:
                    canon[a] = m
                    order[m] = a
                    m += 1
            elif a <= -2:
                k = -2 - a
                for t in (calls[k, 0], calls[k, 1]):
                    if canon[t] < 0:
                        canon[t] = m
                        order[m] = t
                        m += 1
        if info[IS_REPEAT, s] and info[ACCEPTING, s]:
            t = info[REP_START, s]
            if canon[t] < 0:
                canon[t] = m
                order[m] = t
                m += 1
    # 3. per-state facts, rows in canonical numbers (calls numbered by first use)
    at = HEADER
    n_calls = 0
    for q in range(m):
        s = order[q]
        full = dist[s] < longest
        desc[at] = 1 if full else 0
        desc[at + 1] = info[ACCEPTING, s] if full else 0
        desc[at + 2] = info[IS_REPEAT, s] if full else 0
        desc[at + 3] = info[COST, s] if full else 0
        desc[at + 4] = info[NEED, s]
        desc[at + 5] = info[NEED_MORE, s]
        desc[at + 6] = -1
        if full and info[IS_REPEAT, s] and info[ACCEPTING, s]:
            desc[at + 6] = canon[info[REP_START, s]]
        at += 7
        for j in range(n_classes):
            a = gnext[s, class_order[j]] if full else -1
            if a >= 0:
                rows[q, j] = canon[a]
            elif a == -1:
                rows[q, j] = -1
            else:
                k = -2 - a
                if call_of[k] < 0:
                    call_of[k] = n_calls
                    n_calls += 1
                rows[q, j] = -2 - call_of[k]
    # 4. merge classes whose columns agree on every state (hash, then compare)
    for j in range(n_classes):
        group[j] = -1
        h = 0  # a polynomial hash kept below 2**31: no overflow, compiled or not
        for q in range(m):
            h = (h * 31 + rows[q, j] + 3) % 2147483647
        col_hash[j] = h
    n_groups = 0
    for j in range(n_classes):
        if group[j] >= 0:
            continue
        group[j] = n_groups
        for j2 in range(j + 1, n_classes):
            if group[j2] >= 0 or col_hash[j2] != col_hash[j]:
                continue
            same = True
            for q in range(m):
                if rows[q, j] != rows[q, j2]:
                    same = False
                    break
            if same:
                group[j2] = n_groups
        n_groups += 1
    for b in range(256):
        byte_map[b] = group[byte_position[b]]
    # 5. the actions, by state then merged class: (state, class, action)
    n_actions = 0
    for q in range(m):
        r = 0
        for j in range(n_classes):
            if group[j] != r:  # not the first class of its group
                continue
            if rows[q, j] != -1:
                desc[at] = q
                desc[at + 1] = r
                desc[at + 2] = rows[q, j]
                at += 3
                n_actions += 1
            r += 1
    # 6. the calls, by number: callee, return state, left', needed'
    for k in range(calls.shape[0]):
        if call_of[k] >= 0:
            c = at + 4 * call_of[k]
            desc[c] = canon[calls[k, 0]]
            desc[c + 1] = canon[calls[k, 1]]
            desc[c + 2] = calls[k, 2]
            desc[c + 3] = calls[k, 3]
            call_of[k] = -1
    at += 4 * n_calls
    desc[0] = m
    desc[1] = n_groups
    desc[2] = n_actions
    desc[3] = n_calls
    for q in range(n):
        dist[reached[q]] = FAR
    for q in range(m):
        canon[order[q]] = -1
    return at


@functools.cache
def _jitted():
    from numba import njit

    return njit(cache=True, nogil=True)(_describe)


class ResidualTables:
    """Per-binding inputs and scratch of `describe` (built on first use; a lock makes one
    binding's descriptions safe from several threads)."""

    def __init__(self, binding: Binding) -> None:
        t = binding.tables
        kt = KernelTables.of(binding)
        n_classes = int(t.n_classes)
        n_global = int(t.accepting.shape[0])
        byte_class = np.asarray(t.byte_class, dtype=np.int64)
        _, first = np.unique(byte_class, return_index=True)  # each class's smallest byte
        self.class_order = np.argsort(first, kind="stable").astype(np.int64)
        position = np.empty(n_classes, dtype=np.int64)  # class -> position in class_order
        position[self.class_order] = np.arange(n_classes)
        self.byte_position = position[byte_class]
        self.n_classes = n_classes
        excluded = np.zeros(0, dtype=np.int64)
        if binding.byte_token is not binding.vocab.byte_base:  # named specials spelled by bytes
            excluded = np.flatnonzero(binding.vocab.byte_base & ~binding.byte_token)
        self.excluded = excluded.astype("<i8").tobytes()
        self.n_excluded = int(excluded.size)
        n_calls = int(kt.calls.shape[0])
        self.dist = np.full(n_global, FAR, dtype=np.int64)
        self.canon = np.full(n_global, -1, dtype=np.int64)
        self.order = np.empty(n_global, dtype=np.int64)
        self.rows = np.empty((n_global, max(n_classes, 1)), dtype=np.int64)
        self.call_of = np.full(max(n_calls, 1), -1, dtype=np.int64)
        self.group = np.empty(max(n_classes, 1), dtype=np.int64)
        self.col_hash = np.empty(max(n_classes, 1), dtype=np.int64)
        self.desc = np.empty(HEADER + 7 * n_global + 3 * n_global * n_classes + 4 * n_calls,
                             dtype=np.int64)  # fmt: skip
        self.byte_map = np.empty(256, dtype=np.uint8)
        self.lock = threading.Lock()
        self.memo: dict[int, str] = {}

    @staticmethod
    def of(binding: Binding) -> ResidualTables:
        found = binding._lazy.get("residual")
        if found is None:
            found = binding._lazy.setdefault("residual", ResidualTables(binding))
        return found


HEADER = 4  # slots of `desc` that `_describe` fills last: n_states, n_classes, n_actions, n_calls


def describe(binding: Binding, key: int, budget: int = RESIDUAL_STATES) -> bytes | None:
    """The canonical description of the residual of frame key `key` (module docstring), or
    None when it has more than `budget` states."""
    rt = ResidualTables.of(binding)
    kt = KernelTables.of(binding)
    t = binding.tables
    g = key & STATE_MASK
    _, left, needed = unclip(key)
    with rt.lock:
        end = _jitted()(
            g, binding.trie_depth, rt.n_classes, t.next, kt.calls, kt.info, rt.class_order,
            rt.byte_position, rt.dist, rt.canon, rt.order, rt.rows, rt.call_of, rt.group,
            rt.col_hash, rt.desc, rt.byte_map, budget,
        )  # fmt: skip
        if end < 0:
            return None
        m, n_groups, n_actions, n_calls = (int(v) for v in rt.desc[:HEADER])
        header = struct.pack(
            "<10q", t.max_depth, binding.trie_depth, int(bool(t.has_caller[g])), left, needed,
            m, n_groups, n_actions, n_calls, rt.n_excluded,
        )  # fmt: skip
        body = rt.desc[HEADER:end].astype("<i8").tobytes()
        return b"".join((MAGIC, header, rt.byte_map.tobytes(), body, rt.excluded))


def residual_id(binding: Binding, key: int) -> str | None:
    """`sha256:` of `describe(binding, key)`, or None when the residual has more than
    `RESIDUAL_STATES` states; memoised per binding and frame key."""
    rt = ResidualTables.of(binding)
    if key in rt.memo:
        return rt.memo[key]
    described = describe(binding, key)
    found = None if described is None else "sha256:" + hashlib.sha256(described).hexdigest()
    rt.memo[key] = found
    return found
