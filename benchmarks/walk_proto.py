"""A prototype of a faster trie walk, measured against `trgc.engine.kernel` by bench_walk.py.

Benchmark-only: the same contract as `kernel.walk_trie` (ranges, frame mode, skip flags, open
roots, the height accepted tokens need), the same masks, three changes:

1. **A persistent stack instead of per-level copies.** A level is one *cell*: (state, the cell
   below, position). Stepping writes new cells for the frames it rewrites or pushes and links
   them to the cell below, so a shift costs one cell and no copy of the frames above the
   untouched bottom; a return follows the link. Only the cells a step created are checked for
   viability (the others were checked when they were made), so a shift checks one frame.
2. **One token per node in one load:** `node_tok[i]`, the one byte-matched token ending at
   node `i` (-1 for none, -2 for "several: read the CSR lists"), so the common node costs no
   inner loop and no `byte_token` look-up. It is built once per tokenizer; a binding patches in
   only the ids it does not match by bytes (named specials, EOS). (A per-node class table
   `byte_class[node_byte]` was measured too and gained nothing: `byte_class` stays in L1.)
3. **A shift fast path:** the first action tried is a shift in the vast majority of nodes; it
   is handled before the general call/return loop.

Invariant (as in the kernel): nodes are in preorder, so when node `i` at depth `d` is visited,
level `d - 1` holds the configuration after the bytes of `i`'s parent. Cells of level `d` live at
`[base(d), base(d) + 2 * max_steps + 2)`, overwritten only when level `d` is stepped again, which
happens after the subtree that used them is done.
"""

from __future__ import annotations

import functools

import numpy as np

OK, DEAD, OPEN = 0, 1, 2


def _step(d, sym, top_l, rest_l, pos_l, keep_l, h_l, gnext, gcalls, accepting, need, ok_below,
          max_depth, max_steps, frame_mode, cell_state, cell_next, base):  # fmt: skip
    """The general step of level `d - 1` by `sym` into level `d` (calls, returns, shifts);
    the status. A level is its top state, the cell below it (`rest`), the stack size, the
    number of untouched original frames and the height so far."""
    st = top_l[d - 1]
    rest = rest_l[d - 1]
    pos = pos_l[d - 1]
    keep = keep_l[d - 1]
    h = h_l[d - 1]
    n_new = 0
    status = DEAD
    for _ in range(max_steps):
        action = gnext[st, sym]
        if action >= 0:
            st = action
            keep = min(keep, pos - 1)
            status = OK
            break
        if action == -1:
            if accepting[st] and pos > 1:  # return: the frame below becomes the top
                keep = min(keep, pos - 1)
                st = cell_state[rest]
                rest = cell_next[rest]
                pos -= 1
                continue
            if accepting[st] and frame_mode:
                status = OPEN
            break
        if pos >= max_depth:
            break
        call = -2 - action
        c = base + n_new  # the top frame becomes the return state, below the callee
        n_new += 1
        cell_state[c] = gcalls[call, 1]
        cell_next[c] = rest
        keep = min(keep, pos - 1)
        rest = c
        st = gcalls[call, 0]
        pos += 1
    if status == OK:  # viability of the frames this step wrote (the others were checked)
        if not ok_below[keep]:
            status = DEAD
        v = pos + need[st]
        if v > max_depth:
            status = DEAD
        h = max(h, v)
        cc = rest
        p = pos - 1
        while cc >= base:
            v = p + need[cell_state[cc]]
            if v > max_depth:
                status = DEAD
            h = max(h, v)
            cc = cell_next[cc]
            p -= 1
    top_l[d] = st
    rest_l[d] = rest
    pos_l[d] = pos
    keep_l[d] = keep
    h_l[d] = h
    return status


def _walk(
    orig, n_orig, frame_mode, starts, ends, gnext, gcalls, accepting, max_depth, max_steps,
    byte_class, node_byte, node_depth, subtree_end, parent, node_tok, token_start, token_ids, byte_token,
    cell_state, cell_next, top_l, rest_l, pos_l, keep_l, h_l, path, out_words, open_roots,
    use_skip, skip, need, ok_below, stats, count, step,
):  # fmt: skip
    n_open = 0
    max_h = n_orig
    ok_below[0] = True
    for p in range(n_orig):
        ok_below[p + 1] = ok_below[p] and p + 1 + need[orig[p]] <= max_depth
        cell_state[p] = orig[p]
        cell_next[p] = p - 1
    stride = 2 * max_steps + 2  # cells a step can make, with room to spare
    top_l[0] = orig[n_orig - 1]
    rest_l[0] = n_orig - 2
    pos_l[0] = n_orig
    keep_l[0] = n_orig
    h_l[0] = n_orig
    for r in range(starts.shape[0]):
        n_path = node_depth[starts[r]] - 1  # the range's ancestors, stepped first
        a = parent[starts[r]]
        for k in range(n_path - 1, -1, -1):
            path[k] = a
            a = parent[a]
        alive = True
        for k in range(n_path):
            node = path[k]
            d = node_depth[node]
            status = step(d, byte_class[node_byte[node]], top_l, rest_l, pos_l, keep_l, h_l, gnext, gcalls,
                          accepting, need, ok_below, max_depth, max_steps, frame_mode,
                          cell_state, cell_next, n_orig + d * stride)  # fmt: skip
            if status != OK:
                alive = False
                break
        if not alive:
            continue
        i = starts[r]
        end = ends[r]
        while i < end:
            if use_skip and skip[i]:
                i = subtree_end[i]
                continue
            d = node_depth[i]
            action = gnext[top_l[d - 1], byte_class[node_byte[i]]]
            if count:
                stats[0] += 1
            if action >= 0:  # the hot path: a shift of the top frame
                pos = pos_l[d - 1]
                v = pos + need[action]
                keep = min(keep_l[d - 1], pos - 1)
                if v > max_depth or not ok_below[keep]:
                    if count:
                        stats[2] += subtree_end[i] - i - 1
                    i = subtree_end[i]
                    continue
                h = max(h_l[d - 1], v)
                top_l[d] = action
                rest_l[d] = rest_l[d - 1]
                pos_l[d] = pos
                keep_l[d] = keep
                h_l[d] = h
                status = OK
            elif action == -1 and not (
                accepting[top_l[d - 1]] and (frame_mode or pos_l[d - 1] > 1)
            ):
                status = DEAD  # no action and nothing to return into: the common rejection
            else:
                if count:
                    stats[1] += 1
                status = step(d, byte_class[node_byte[i]], top_l, rest_l, pos_l, keep_l, h_l, gnext,
                              gcalls, accepting, need, ok_below, max_depth, max_steps,
                              frame_mode, cell_state, cell_next, n_orig + d * stride)  # fmt: skip
                h = h_l[d]
            if status == OK:
                t = node_tok[i]
                if t >= 0:
                    out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
                    max_h = max(max_h, h)
                elif t == -2:
                    for t_at in range(token_start[i], token_start[i + 1]):
                        t2 = token_ids[t_at]
                        if byte_token[t2]:
                            out_words[t2 >> 5] |= np.uint32(1) << np.uint32(t2 & 31)
                            max_h = max(max_h, h)
                i += 1
            else:
                if status == OPEN:
                    open_roots[n_open] = i
                    n_open += 1
                if count:
                    stats[2] += subtree_end[i] - i - 1  # nodes never visited below
                i = subtree_end[i]
    return n_open, max_h


@functools.cache
def jitted():
    from numba import njit

    step = njit(cache=True, nogil=True)(_step)
    return njit(cache=True, nogil=True)(_walk), step


def tokenizer_node_tok(binding) -> tuple[np.ndarray, np.ndarray]:
    """(node_tok over every token with bytes, node of each token): the tokenizer-level part,
    the same for every artifact bound to the tokenizer."""
    counts = np.diff(binding.token_start)
    tok = np.full(binding.node_byte.shape[0], -1, dtype=np.int32)
    one = np.flatnonzero(counts == 1)
    first = binding.token_ids[binding.token_start[one]]
    tok[one] = np.where(binding.has_bytes[first], first, -1)
    tok[counts > 1] = -2
    node_of = np.full(binding.vocab_size, -1, dtype=np.int32)
    node_of[binding.token_ids] = np.repeat(np.arange(counts.shape[0], dtype=np.int32), counts)
    return tok, node_of


def node_tables(binding, raw=None) -> np.ndarray:
    """node_tok int32[n_nodes] of a binding: the one byte-matched token ending at each node,
    -1 for none, -2 for several (read the CSR lists). Per binding only the few ids it does not
    match by bytes (named specials, EOS) are patched into the tokenizer-level table."""
    tok, node_of = tokenizer_node_tok(binding) if raw is None else raw
    tok = tok.copy()
    for t in np.concatenate([binding.special_ids, binding.eos_ids]).tolist():
        node = node_of[t]
        if node >= 0 and tok[node] == t:
            tok[node] = -1
    return tok


class FastScratch:
    def __init__(self, binding) -> None:
        levels = binding.trie_depth + 1
        cap = binding.tables.max_depth + 1
        stride = 2 * binding.tables.max_steps + 2
        self.cell_state = np.empty(cap + (levels + 1) * stride, dtype=np.int32)
        self.cell_next = np.empty(cap + (levels + 1) * stride, dtype=np.int32)
        self.top = np.empty(levels, dtype=np.int32)
        self.rest = np.empty(levels, dtype=np.int32)
        self.pos = np.empty(levels, dtype=np.int64)
        self.keep = np.empty(levels, dtype=np.int64)
        self.height = np.empty(levels, dtype=np.int64)
        self.path = np.empty(levels, dtype=np.int32)
        self.orig = np.empty(cap, dtype=np.int32)
        self.ok_below = np.empty(cap + 1, dtype=np.bool_)
        self.open_roots = np.empty(binding.node_byte.shape[0], dtype=np.int32)
        self.stats = np.zeros(4, dtype=np.int64)
        self.node_tok = node_tables(binding)


def walk_trie_fast(binding, config, out_words, scratch: FastScratch, *, roots=None,
                   frame_mode=False, skip=None, count=False):  # fmt: skip
    """`kernel.walk_trie` with the prototype kernel (inputs trusted: benchmark use only)."""
    if roots is None:
        starts = np.ones(1 if binding.node_byte.shape[0] > 1 else 0, dtype=np.int32)
        ends = np.full(starts.shape[0], binding.node_byte.shape[0], dtype=np.int32)
    else:
        starts, ends = roots, binding.subtree_end[roots]
    scratch.orig[: len(config)] = config
    t = binding.tables
    walk, step = jitted()
    n_open, max_height = walk(
        scratch.orig, len(config), frame_mode, starts, ends, t.next, t.calls, t.accepting,
        t.max_depth, t.max_steps, t.byte_class, binding.node_byte, binding.node_depth, binding.subtree_end,
        binding.parent, scratch.node_tok, binding.token_start, binding.token_ids,
        binding.byte_token, scratch.cell_state, scratch.cell_next, scratch.top, scratch.rest,
        scratch.pos, scratch.keep, scratch.height, scratch.path, out_words, scratch.open_roots,
        skip is not None, binding.byte_token if skip is None else skip, t.need,
        scratch.ok_below, scratch.stats, count, step,
    )  # fmt: skip
    return scratch.open_roots[:n_open].copy(), int(max_height)
