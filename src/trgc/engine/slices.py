"""Token slices: fixed sets of tokens a state can accept wholesale, so the walk skips them.

A slice is a small byte automaton over complete UTF-8 characters (llguidance's idea of
"slices", e.g. JSON string bodies `[^"\\\\\\x00-\\x1F\\x7F]+`) with an optional bound on the
number of characters. For a binding we know, per slice, which tokens spell a member and, per
trie node, whether *every* token in its subtree is a member (`whole[node]`).

If every member of a slice is a string the top frame consumes by shifts (and restarts of its
own counted repetition) alone (`is_safe`, a product of the slice automaton with the frame's
machine), all member tokens are allowed from it whatever the stack, and a frame walk can skip
every subtree whose tokens are all members: inside a JSON string the walk visits ~12k of
Llama-3's 275k nodes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from trgc.engine.config import Tables, unclip


@dataclass(frozen=True, eq=False)
class Slice:
    name: str
    dfa: np.ndarray  # int8[8, 256]: slice state x byte -> slice state, -1 none; 0 = char boundary
    max_chars: int  # 0 = unbounded

    @functools.cached_property
    def rows(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """Per slice state: the bytes it allows and the slice states they lead to."""
        out = []
        for row in self.dfa:
            byte_values = np.flatnonzero(row >= 0)
            out.append((byte_values, row[byte_values].astype(np.int64)))
        return tuple(out)


def _utf8_dfa(excluded: bytes) -> np.ndarray:
    """UTF-8 scalar values (no surrogates, no overlongs) minus the ASCII bytes `excluded`."""
    dfa = np.full((8, 256), -1, dtype=np.int8)
    for b in range(0x80):
        if b not in excluded:
            dfa[0, b] = 0
    dfa[0, 0xC2:0xE0] = 1
    dfa[0, 0xE0] = 3
    dfa[0, 0xE1:0xED] = 2
    dfa[0, 0xED] = 4
    dfa[0, 0xEE:0xF0] = 2
    dfa[0, 0xF0] = 6
    dfa[0, 0xF1:0xF4] = 5
    dfa[0, 0xF4] = 7
    dfa[1, 0x80:0xC0] = 0
    dfa[2, 0x80:0xC0] = 1
    dfa[3, 0xA0:0xC0] = 1
    dfa[4, 0x80:0xA0] = 1
    dfa[5, 0x80:0xC0] = 2
    dfa[6, 0x90:0xC0] = 2
    dfa[7, 0x80:0x90] = 2
    return dfa


def _whitespace_dfa() -> np.ndarray:
    dfa = np.full((8, 256), -1, dtype=np.int8)
    dfa[0, [0x20, 0x0A, 0x0D, 0x09]] = 0
    return dfa


@functools.cache
def default_slices() -> tuple[Slice, ...]:
    """String bodies (unbounded, then at most 30 and 10 characters) and JSON whitespace, in
    the order they are tried."""
    text = _utf8_dfa(b'"\\' + bytes(range(0x20)) + b"\x7f")
    return (
        Slice("string", text, 0),
        Slice("string{1,30}", text, 30),
        Slice("string{1,10}", text, 10),
        Slice("whitespace", _whitespace_dfa(), 0),
    )


NOT_MEMBER = np.iinfo(np.int32).max


def _counts(offsets, data, dfa, has_bytes, out):
    """Characters of each token that spells slice characters only; NOT_MEMBER otherwise, 0 for
    tokens without bytes (neutral: they are not in the trie)."""
    for t in range(offsets.shape[0] - 1):
        if not has_bytes[t]:
            out[t] = 0
            continue
        state = 0
        chars = 0
        for p in range(offsets[t], offsets[t + 1]):
            state = dfa[state, data[p]]
            if state < 0:
                break
            if state == 0:
                chars += 1
        out[t] = chars if state == 0 and chars > 0 else NOT_MEMBER


def _subtree_max(counts, token_start, token_ids, parent, out):
    """Per trie node, the largest count of a token in its subtree."""
    n = out.shape[0]
    for i in range(n):
        best = 0
        for j in range(token_start[i], token_start[i + 1]):
            best = max(best, counts[token_ids[j]])
        out[i] = best
    for i in range(n - 1, 0, -1):
        if out[i] > out[parent[i]]:
            out[parent[i]] = out[i]


@functools.cache
def _jitted():
    from numba import njit

    return njit(cache=True, nogil=True)(_counts), njit(cache=True, nogil=True)(_subtree_max)


@dataclass(frozen=True, eq=False)
class RawSlices:
    """The tokenizer-level part, valid for every artifact bound to the tokenizer: per distinct
    slice automaton, each token's character count (`NOT_MEMBER` if it is not a member) and
    per trie node the largest count in its subtree."""

    counts: tuple[np.ndarray, ...]  # int32[V], one per slice (shared arrays for one automaton)
    submax: tuple[np.ndarray, ...]  # int32[n_nodes]

    @property
    def nbytes(self) -> int:
        unique = {id(a): a for a in (*self.counts, *self.submax)}
        return int(sum(a.nbytes for a in unique.values()))


@dataclass(frozen=True, eq=False)
class SliceTables:
    """The slice tables of one binding, each slice specialised on first use.

    Tokens the binding does not match by bytes (a named special, EOS) are never members; a
    subtree flagged whole may still hold such a token, which is right: skipping it leaves it
    unset, exactly as the walk would.
    """

    raw: RawSlices
    byte_token: np.ndarray
    _done: dict = field(default_factory=dict, repr=False)

    @property
    def slices(self) -> tuple[Slice, ...]:
        return default_slices()

    def get(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(member bool[V], member words uint32[n_words], whole bool[n_nodes]) of slice `k`."""
        from trgc.engine.bits import pack

        found = self._done.get(k)
        if found is None:
            limit = self.slices[k].max_chars or NOT_MEMBER - 1
            member = self.byte_token & (self.raw.counts[k] <= limit)
            found = self._done[k] = (member, pack(member), self.raw.submax[k] <= limit)
        return found


def build_raw(binding) -> RawSlices:
    """One pass over token bytes and one over trie nodes per distinct slice automaton (the
    bounded string slices share the unbounded one's counts). Every token of the trie counts
    (`has_bytes`), so the result does not depend on the artifact."""
    counts_fn, subtree_fn = _jitted()
    by_dfa: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    counts_out, submax_out = [], []
    for s in default_slices():
        if id(s.dfa) not in by_dfa:
            counts = np.empty(binding.vocab_size, dtype=np.int32)
            counts_fn(binding.offsets, binding.data, s.dfa, binding.has_bytes, counts)
            submax = np.empty(binding.node_byte.shape[0], dtype=np.int32)
            subtree_fn(counts, binding.token_start, binding.token_ids, binding.parent, submax)
            by_dfa[id(s.dfa)] = (counts, submax)
        counts_out.append(by_dfa[id(s.dfa)][0])
        submax_out.append(by_dfa[id(s.dfa)][1])
    return RawSlices(tuple(counts_out), tuple(submax_out))


def specialise(raw: RawSlices, byte_token: np.ndarray) -> SliceTables:
    """The slice tables of one binding (see `SliceTables`)."""
    return SliceTables(raw, byte_token)


def is_safe(tables: Tables, key: int, s: Slice, longest: int) -> int | None:
    """Does the top frame with frame key `key` consume every member of `s` within itself, by
    shifts and restarts of its own counted repetition alone (no call, return or death)? Then
    the height its members need (the frame's rule cost plus the largest completion need of the
    states they pass through, as the kernel counts heights), else None.

    Search over (slice state, machine state, restarts used) of the product automaton, a
    restart being allowed while the frame has iterations left: unbounded slices need every
    reachable pair to move on every byte the slice allows (and, for a counter that can run
    out, no restart at all); bounded ones expand the pairs at character boundaries `max_chars`
    times (or until a boundary set repeats). Members are tokens, at most `longest` bytes, and a
    restart consumes a byte, so `longest` iterations left is as good as unlimited.
    """
    g, left, _ = unclip(key)
    n_states = tables.next.shape[0]
    width = 8 * n_states  # one restart count's block of (slice state, machine state) pairs
    if not tables.is_repeat[g] or left >= longest:
        left = None  # unlimited within one token
    need = np.maximum(tables.need, tables.need_more)
    height = int(tables.cost[g]) + int(need[g])

    def expand(pair: int) -> np.ndarray | None:
        nonlocal height
        used, rest = divmod(pair, width)
        slice_state, state = divmod(rest, n_states)
        byte_values, targets = s.rows[slice_state]
        symbols = tables.byte_class[byte_values]
        actions = tables.next[state, symbols].astype(np.int64)
        restarted = np.zeros(actions.shape, dtype=bool)
        if (actions < 0).any():
            if not (tables.is_repeat[state] and tables.accepting[state]):
                return None
            restarted = actions == -1
            actions = np.where(restarted, tables.next[int(tables.rep_start[state]), symbols], actions)
            if (actions < 0).any():
                return None
            if left is not None and used + 1 > left:
                return None
        height = max(height, int(tables.cost[g]) + int(need[actions].max(initial=0)))
        more = used + restarted if left is not None else np.zeros_like(actions)
        return np.unique(more * width + targets * n_states + actions)

    if s.max_chars == 0:
        seen = {g}  # encoded (restarts, slice state, machine state); slice state 0 included
        work = [g]
        while work:
            found = expand(work.pop())
            if found is None:
                return None
            for nxt in found.tolist():
                if nxt >= width:  # a restart of a bounded counter inside an unbounded slice
                    return None
                if nxt not in seen:
                    seen.add(nxt)
                    work.append(nxt)
        return height if height <= tables.max_depth else None
    boundary = {g}
    seen_boundaries: set[frozenset[int]] = set()
    for _ in range(s.max_chars):
        key = frozenset(boundary)
        if key in seen_boundaries:
            break
        seen_boundaries.add(key)
        after: set[int] = set()
        work = sorted(boundary)
        seen = set(work)
        while work:
            found = expand(work.pop())
            if found is None:
                return None
            for nxt in found.tolist():
                if nxt % width < n_states:  # slice state 0: a character boundary
                    after.add(nxt)
                elif nxt not in seen:
                    seen.add(nxt)
                    work.append(nxt)
        boundary = after
    return height if height <= tables.max_depth else None
