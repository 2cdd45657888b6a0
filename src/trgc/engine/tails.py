"""Slice tails: the tokens of a slice-safe state that are not members, walked from where their
member beginning leaves the frame.

Inside a JSON string the string slice (`trgc.engine.slices`) accepts ~95% of a vocabulary at
once, but its frame walk still visits every trie node above a token that is not a member:
`name":"` and `text\\n` are members up to a character boundary and something else after it.
On Llama-3 that is ~12,000 nodes, most of a string state's 0.2 ms entry.

Split a token that is not a member into its *head*, the longest beginning made of whole member
characters, and its *tail*, the rest. When every non-empty member string takes the frame to the
same frames (`after_members`: a fixed point such as `[^"\\\\]*`, up to counters that cannot
run out within one token), a token with a non-empty head is allowed exactly when its tail is
allowed from those frames. So the state's entry is

  * the members (the slice's words),
  * the tokens with a non-empty head: one walk of the *tail trie* (the distinct tails of the
    tokenizer, ~940 nodes on Llama-3), from the frames after a member, every tail node's
    tokens set at once,
  * the tokens without one (`"`, `\\`, a control character or a byte no character starts
    with first): a walk of the tokenizer's trie from the state that skips every subtree
    holding none of them.

An open tail node (the frame returns within the tail) stands for the trie node of each of its
tokens at the same place (`Tails.trie_nodes`), which is where the plain walk finds it open, so
the entry is the plain walk's (tests compare them). The tail tries depend on the tokenizer and
the slice alone: built once per tokenizer, on the first state that uses them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from trgc.engine.cache import MaskCache
from trgc.engine.config import Tables, unclip
from trgc.engine.kernel import records
from trgc.engine.slices import SEVERAL, boundary_jitted, first_call, moves

# bytes of `Tails.trie_nodes` answers kept per tail trie (one per tokenizer and slice with tails)
PLACED_BYTES = 4 << 20


@dataclass(frozen=True, eq=False)
class Tails:
    """The tail trie of one slice over one tokenizer (arrays laid out as `VocabTables`'s trie:
    preorder, children by byte; every node holding tokens has `node_tok` -2, so the walk checks
    each token against the binding's byte tokens) and, over the tokenizer's trie, `skip`: no
    token in the subtree is a non-member without a head."""

    node_byte: np.ndarray  # uint8[n]
    node_depth: np.ndarray  # int32[n]
    subtree_end: np.ndarray  # int32[n]
    parent: np.ndarray  # int32[n]
    node_tok: np.ndarray  # int32[n]: -2 where tokens end, else -1
    token_start: np.ndarray  # int32[n + 1]
    token_ids: np.ndarray  # int32: real token ids, grouped by the tail node they end at
    head: np.ndarray  # int32[V]: bytes of a token's head (0: none, or a member)
    skip: np.ndarray  # bool[trie nodes]: the subtree holds no token without a head
    # the first-level trie nodes whose subtree holds one: the roots of the headless walk
    headless_roots: np.ndarray  # int32, preorder
    placed: MaskCache = field(default_factory=lambda: MaskCache(PLACED_BYTES), repr=False)

    @functools.cached_property
    def trie(self) -> tuple[np.ndarray, ...]:
        """The arrays a walk reads in place of the tokenizer's trie (`kernel.run_walk`): the
        node records (`kernel.records`), parents, token starts and ids."""
        rec = records(self.node_byte, self.node_depth, self.subtree_end, self.node_tok)
        return (rec, self.parent, self.token_start, self.token_ids)

    def trie_nodes(self, tail_nodes: np.ndarray, vocab, head: int = -1) -> np.ndarray:
        """Sorted trie nodes standing for the open tail nodes `tail_nodes` (read-only): for
        each token below one (whose head has `head` bytes, when that is not -1: a class
        run's, `trgc.engine.runs`), its trie node at the tail node's place (head bytes + the
        tail node's depth).

        The answer depends on the tail nodes alone (both tries are the tokenizer's), and the
        string bodies of every artifact open the same few: the tails where the string ends
        (`"`, and the control characters after which the frame dies). Made, it took 120-300 us
        live for a few thousand tokens (their trie nodes are far apart in memory), inside a
        string body's first mask, which set the mask p99; so it is kept per set of tail nodes
        (`placed`, bounded by `PLACED_BYTES` per tail trie)."""
        if not tail_nodes.size:
            return tail_nodes.astype(np.int32)
        key = (tail_nodes.dtype.str, tail_nodes.tobytes(), head)
        found = self.placed.get(key)
        if found is None:
            found = self._trie_nodes(tail_nodes, vocab, head)
            self.placed.put(key, found, found.nbytes)
        return found

    def _trie_nodes(self, tail_nodes: np.ndarray, vocab, head: int = -1) -> np.ndarray:
        """`trie_nodes`, made (compiled: `_places`)."""
        below = self.token_start[self.subtree_end[tail_nodes]] - self.token_start[tail_nodes]
        out = np.empty(int(below.sum()), dtype=np.int32)
        n = _jitted()[1](tail_nodes, self.token_start, self.subtree_end, self.node_depth,
                         self.token_ids, self.head, vocab.node_of, vocab.node_depth, vocab.parent,
                         head, out)  # fmt: skip
        return out[:n].copy()  # kept: not a view of the larger buffer


def _places(tail_nodes, token_start, subtree_end, tail_depth, token_ids, head, node_of,
            node_depth, parent, only_head, out):  # fmt: skip
    """`Tails.trie_nodes` into `out`, sorted and distinct; how many: per token below each
    tail node (whose head has `only_head` bytes, unless that is -1), the ancestor of its trie
    node at depth `head + the tail node's depth`."""
    n = 0
    for u in tail_nodes:
        for j in range(token_start[u], token_start[subtree_end[u]]):
            t = token_ids[j]
            if only_head >= 0 and head[t] != only_head:
                continue
            node = node_of[t]
            place = head[t] + tail_depth[u]
            while node_depth[node] > place:
                node = parent[node]
            out[n] = node
            n += 1
    out[:n].sort()
    kept = 0
    for i in range(n):
        if kept == 0 or out[i] != out[kept - 1]:
            out[kept] = out[i]
            kept += 1
    return kept


def _without_headless(has_headless, parent, out):
    """`out[i]`: no token in node i's subtree is in `has_headless` (children follow parents
    in preorder, so one backward pass)."""
    n = out.shape[0]
    for i in range(n):
        out[i] = not has_headless[i]
    for i in range(n - 1, 0, -1):
        if not out[i]:
            out[parent[i]] = False


@functools.cache
def _jitted():
    from numba import njit

    return tuple(njit(cache=True, nogil=True)(f) for f in (_without_headless, _places))


def build_tails(vocab, member: np.ndarray, head: np.ndarray) -> Tails:
    """The `Tails` of a slice whose members over `vocab` are `member` and whose heads of
    non-members are `head` (`slices.RawSlices`)."""
    in_trie = vocab.node_of >= 0
    headless = in_trie & ~member & (head == 0)
    marked = np.zeros(vocab.node_byte.shape[0], dtype=np.bool_)
    marked[vocab.node_of[headless]] = True
    skip = np.empty(vocab.node_byte.shape[0], dtype=np.bool_)
    _jitted()[0](marked, vocab.parent, skip)
    tailed = np.flatnonzero(in_trie & ~member & (head > 0))
    data = vocab.data.tobytes()
    starts, ends = (
        (vocab.offsets[tailed] + head[tailed]).tolist(),
        vocab.offsets[tailed + 1].tolist(),
    )
    arrays = _tail_trie([data[a:b] for a, b in zip(starts, ends, strict=True)], tailed)
    head = head.copy()
    # walked from these alone, the headless walk reads no first-level node it would skip:
    # after a compile, each was a cache miss (a string body's first entry: 40-75 us of it)
    roots = np.flatnonzero((vocab.node_depth == 1) & ~skip).astype(np.int32)
    for a in (*arrays, head, skip, roots):
        a.flags.writeable = False
    return Tails(*arrays, head, skip, roots)


def _tail_trie(tails: list[bytes], tokens: np.ndarray) -> tuple[np.ndarray, ...]:
    """Trie arrays (preorder, children by byte) of the byte strings `tails`, the token
    `tokens[i]` ending at the node of `tails[i]`."""
    by_tail: dict[bytes, list[int]] = {}
    for tail, token in zip(tails, tokens.tolist(), strict=True):
        by_tail.setdefault(tail, []).append(token)
    node_byte, node_depth, parent = [0], [0], [-1]
    ends: list[list[int]] = [[]]
    path = [0]  # path[d]: the node at depth d of the previous tail (a prefix sorts first)
    previous = b""
    for tail in sorted(by_tail):
        common = 0
        while common < min(len(tail), len(previous)) and tail[common] == previous[common]:
            common += 1
        del path[common + 1 :]
        for d in range(common, len(tail)):
            path.append(len(node_byte))
            node_byte.append(tail[d])
            node_depth.append(d + 1)
            parent.append(path[d])
            ends.append([])
        ends[path[len(tail)]] = by_tail[tail]
        previous = tail
    n = len(node_byte)
    subtree_end = list(range(1, n + 1))
    for i in range(n - 1, 0, -1):
        subtree_end[parent[i]] = max(subtree_end[parent[i]], subtree_end[i])
    counts = np.array([len(e) for e in ends], dtype=np.int32)
    token_start = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=token_start[1:])
    return (
        np.array(node_byte, dtype=np.uint8),
        np.array(node_depth, dtype=np.int32),
        np.array(subtree_end, dtype=np.int32),
        np.array(parent, dtype=np.int32),
        np.where(counts > 0, -2, -1).astype(np.int32),
        token_start,
        np.array([t for e in ends for t in e], dtype=np.int32),
    )


def after_members(tables: Tables, key: int, dfa: np.ndarray, longest: int) -> tuple | None:
    """The frame keys (bottom first) that every non-empty member string of an unbounded slice
    takes the top frame `key` to, when the slice is safe there (`slices.is_safe`) and they are
    the same for every member; else None.

    Counters: restarts are counted up to the frame's `needed`; `left` must be unlimited within
    one token (at least `longest`), and the frames after a member get `longest` again: a tail
    has at most `longest - 1` bytes, so it cannot exhaust a counter left with at least that
    many, whichever member came before. As in `is_safe`, a frame that calls one repeat machine
    on every first byte of a member (a string body with `minLength`) is followed into it: the
    frames are then its return state and the repeat machine's."""
    g, left, needed = unclip(key)
    boundary = boundary_jitted()
    if not tables.is_repeat[g] or left >= longest:
        code = _boundary_of(boundary, tables, g, needed, dfa)
        if code is not None:
            return (member_end(tables, code, needed, longest),)
    k = first_call(tables, g, dfa)
    if k is None:
        return None
    callee, ret = (int(v) for v in tables.calls[k])
    inner_left, inner_needed = (int(v) for v in tables.call_entry[k])
    inner_needed = min(inner_needed, longest + 1)
    if tables.is_repeat[callee] and inner_left < longest:
        return None
    code = _boundary_of(boundary, tables, callee, inner_needed, dfa)
    if code is None:
        return None
    return (ret | (key - g), member_end(tables, code, inner_needed, longest))


def member_end(tables: Tables, code: int, needed: int, longest: int) -> int:
    """The frame key a member leaves, from `slices._boundary`'s `code` with `needed`: its
    state, and when that is a counted repetition, `longest` iterations left (unlimited within
    one token) and the restarts the member made counted off `needed`."""
    state, restarts = divmod(code, needed + 1)
    counters = (longest << 32 | (needed - restarts) << 48) if tables.is_repeat[state] else 0
    return state | counters


def _boundary_of(boundary, tables: Tables, g: int, needed: int, dfa: np.ndarray) -> int | None:
    """`slices._boundary` (compiled: `boundary`) over `tables` from state `g`; None for SEVERAL."""
    code = boundary(tables.next, *moves(tables, dfa), tables.accepting,
                    tables.is_repeat, tables.rep_start, g, needed)  # fmt: skip
    return None if code == SEVERAL else int(code)
