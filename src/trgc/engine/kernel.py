"""The numba mask kernel: one depth-first walk of the token trie per configuration.

`docs/mask-engine.md` derives it from the reference masker step by step. The public functions
validate their arrays and call private kernels that assume valid input; numba is imported on
the first call only (`import trgc` never loads it) and compiled code is cached on disk.

Invariant of `_walk`: nodes are in depth-first preorder, so when node `i` at depth `d` is
visited, level `d - 1` of the scratch holds the configuration after the bytes of `i`'s parent.
A level's stack is `orig[:keep] + own[level, :ext]`: the untouched bottom of the caller's
configuration plus the frames this token prefix rewrote or pushed, so a level copies only
`ext` ints (pushes since the start of the token, usually 0-2), never the whole stack. Frames are
int64 frame keys (`global state | left << 32 | needed << 48` with the counters clipped to the
longest token, `trgc.engine.config.frame_key`: within one token nothing beyond the clip can
matter), and `dep_l` holds the rule frames of each level's stack for the `max_depth` check of
calls.
"""

from __future__ import annotations

import functools

import numpy as np

from trgc.engine.binding import Binding
from trgc.engine.bits import unpack
from trgc.engine.config import Config, is_accepting, mask_key, step

OK, DEAD, OPEN = 0, 1, 2  # outcome of stepping one byte (OPEN: needs the unknown caller frame)


def _walk(
    orig, n_orig, frame_mode, starts, ends, gnext, gcalls, accepting, byte_class, max_depth,
    max_steps, node_byte, node_depth, subtree_end, parent, token_start, token_ids, byte_token,
    own, keep_l, ext_l, h_l, dep_l, path, out_words, open_roots, use_skip, skip, need,
    need_more, cost, is_repeat, rep_start, call_entry, longest, ok_below, dep_below,
):  # fmt: skip
    n_open = 0
    # the untouched bottom of the stack: rule frames below position p, and whether frames
    # orig[:p] are all viable (in frame mode the unknown callers are)
    ok_below[0] = True
    dep_below[0] = 0
    for p in range(n_orig):
        g = orig[p] & 0xFFFFFFFF
        d = dep_below[p] + cost[g]
        dep_below[p + 1] = d
        nd = need_more[g] if orig[p] >> 48 else need[g]
        ok_below[p + 1] = ok_below[p] and d + nd <= max_depth
    max_h = dep_below[n_orig]
    keep_l[0] = n_orig
    ext_l[0] = 0
    h_l[0] = max_h
    dep_l[0] = max_h
    cap = own.shape[1]
    for r in range(starts.shape[0]):
        # the ancestors of the range's first node are stepped first (levels 1 .. depth - 1)
        n_path = node_depth[starts[r]] - 1
        a = parent[starts[r]]
        for k in range(n_path - 1, -1, -1):
            path[k] = a
            a = parent[a]
        j = 0
        i = starts[r]
        while i < ends[r]:
            if j >= n_path and use_skip and skip[i]:  # every token below is already decided
                i = subtree_end[i]
                continue
            node = path[j] if j < n_path else i
            d = node_depth[node]
            sym = byte_class[node_byte[node]]
            keep = keep_l[d - 1]
            ext = ext_l[d - 1]
            for k in range(ext):
                own[d, k] = own[d - 1, k]
            h = h_l[d - 1]
            dep = dep_l[d - 1]
            status = DEAD
            for _ in range(max_steps):
                top = own[d, ext - 1] if ext > 0 else orig[keep - 1]
                g = top & 0xFFFFFFFF
                counters = top - g  # left << 32 | needed << 48, carried along by shifts
                action = gnext[g, sym]
                if action >= 0:
                    if ext == 0:
                        keep -= 1
                        ext = 1
                    own[d, ext - 1] = action + counters
                    status = OK
                    break
                if action == -1:
                    if not accepting[g]:
                        break
                    if is_repeat[g]:
                        left = (top >> 32) & 0xFFFF
                        needed = top >> 48
                        if left > 0 and gnext[rep_start[g], sym] != -1:
                            if ext == 0:
                                keep -= 1
                                ext = 1
                            if needed > 0:
                                needed -= 1
                            own[d, ext - 1] = rep_start[g] | ((left - 1) << 32) | (needed << 48)
                            continue  # the next iteration starts with this byte
                        if needed > 0:
                            break
                    if keep + ext > 1:
                        if ext > 0:
                            ext -= 1
                        else:
                            keep -= 1
                        dep -= cost[g]
                        continue
                    if frame_mode:
                        status = OPEN
                    break
                call = -2 - action
                callee = np.int64(gcalls[call, 0])
                if cost[callee] and dep >= max_depth:
                    break
                if keep + ext >= cap:  # beyond the artifact's frame capacity: malformed
                    break
                if ext == 0:
                    keep -= 1
                    ext = 1
                own[d, ext - 1] = gcalls[call, 1] + counters
                left = call_entry[call, 0] if call_entry[call, 0] < longest else longest
                needed = call_entry[call, 1] if call_entry[call, 1] <= longest else longest + 1
                own[d, ext] = callee | (left << 32) | (needed << 48)
                ext += 1
                dep += cost[callee]
            if status == OK:  # viable: every frame can still complete within max_depth
                if not ok_below[keep]:
                    status = DEAD
                dd = dep_below[keep]
                for k in range(ext):
                    g = own[d, k] & 0xFFFFFFFF
                    dd += cost[g]
                    nd = need_more[g] if own[d, k] >> 48 else need[g]
                    v = dd + nd
                    if v > max_depth:
                        status = DEAD
                    if v > h:
                        h = v
            if j < n_path:  # an ancestor: its own tokens are outside the range
                if status != OK:
                    break
                keep_l[d] = keep
                ext_l[d] = ext
                h_l[d] = h
                dep_l[d] = dep
                j += 1
            elif status == OK:
                for t_at in range(token_start[i], token_start[i + 1]):
                    t = token_ids[t_at]
                    if byte_token[t]:
                        out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
                        if h > max_h:
                            max_h = h
                keep_l[d] = keep
                ext_l[d] = ext
                h_l[d] = h
                dep_l[d] = dep
                i += 1
            else:
                if status == OPEN:
                    open_roots[n_open] = i
                    n_open += 1
                i = subtree_end[i]
    return n_open, max_h


@functools.cache
def _jitted():
    from numba import njit

    return njit(cache=True, nogil=True)(_walk)


class Scratch:
    """Per-matcher work buffers for the kernel (never shared between threads). A level holds
    at most the artifact's frame capacity, plus one for a push beyond it (rejected)."""

    def __init__(self, binding: Binding) -> None:
        levels = binding.trie_depth + 1
        cap = binding.tables.max_frames + 1
        self.own = np.empty((levels, cap), dtype=np.int64)
        self.keep = np.empty(levels, dtype=np.int64)
        self.ext = np.empty(levels, dtype=np.int64)
        self.height = np.empty(levels, dtype=np.int64)
        self.dep = np.empty(levels, dtype=np.int64)
        self.path = np.empty(levels, dtype=np.int32)
        self.orig = np.empty(cap, dtype=np.int64)
        self.ok_below = np.empty(cap + 1, dtype=np.bool_)
        self.dep_below = np.empty(cap + 1, dtype=np.int64)
        self.open_roots = np.empty(binding.node_byte.shape[0], dtype=np.int32)


def _require(name: str, array: np.ndarray, dtype, ndim: int) -> None:
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{name}: expected a numpy array, got {type(array).__name__}")
    if array.dtype != np.dtype(dtype):
        raise TypeError(f"{name}: expected dtype {np.dtype(dtype)}, got {array.dtype}")
    if array.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got {array.ndim}")
    if not array.flags.c_contiguous:
        raise ValueError(f"{name}: expected a C-contiguous array")


def walk_trie(
    binding: Binding,
    keys: Config,
    out_words: np.ndarray,
    scratch: Scratch,
    *,
    roots: np.ndarray | None = None,
    frame_mode: bool = False,
    skip: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """OR into `out_words` the byte tokens viable from the configuration whose frame keys are
    `keys` (`trgc.engine.config.mask_key` with the binding's longest token); return the open
    roots and the
    height an allowed token needs: the largest `rule frames up to it + need` of a frame it
    rewrites or pushes (at least the rule frames of `config`), so that it stays viable on a
    stack with `B` more rule frames below when `B + height <= max_depth`.

    With `roots` (int32 trie nodes, preorder, disjoint subtrees) only the tokens in those
    subtrees are decided. With `frame_mode`, `keys` is one frame whose callers are unknown:
    a subtree whose first byte needs to return out of it is not walked but returned as an
    open root. With `skip` (bool per trie node), subtrees whose node is flagged are not walked
    (the caller has decided their tokens, see `trgc.engine.slices`).
    """
    n_words = binding.n_words
    _require("out_words", out_words, np.uint32, 1)
    if out_words.shape[0] != n_words:
        raise ValueError(f"out_words: expected {n_words} words, got {out_words.shape[0]}")
    if roots is None:
        starts = np.ones(1 if binding.node_byte.shape[0] > 1 else 0, dtype=np.int32)
        ends = np.full(starts.shape[0], binding.node_byte.shape[0], dtype=np.int32)
    else:
        _require("roots", roots, np.int32, 1)
        starts, ends = roots, binding.subtree_end[roots]
    if skip is not None:
        _require("skip", skip, np.bool_, 1)
        if skip.shape[0] != binding.node_byte.shape[0]:
            raise ValueError(
                f"skip: expected {binding.node_byte.shape[0]} flags, got {skip.shape[0]}"
            )
    if not keys or len(keys) > binding.tables.max_frames:
        raise ValueError(f"keys: expected 1..{binding.tables.max_frames} frames, got {len(keys)}")
    scratch.orig[: len(keys)] = keys
    t = binding.tables
    n_open, max_height = _jitted()(
        scratch.orig, len(keys), frame_mode, starts, ends, t.next, t.calls, t.accepting,
        t.byte_class, t.max_depth, t.max_steps, binding.node_byte, binding.node_depth,
        binding.subtree_end, binding.parent, binding.token_start, binding.token_ids,
        binding.byte_token, scratch.own, scratch.keep, scratch.ext, scratch.height, scratch.dep,
        scratch.path, out_words, scratch.open_roots, skip is not None,
        binding.byte_token if skip is None else skip, t.need, t.need_more, t.cost, t.is_repeat,
        t.rep_start, t.call_entry, binding.trie_depth, scratch.ok_below, scratch.dep_below,
    )  # fmt: skip
    return scratch.open_roots[:n_open].copy(), int(max_height)


def add_symbol_tokens(binding: Binding, config: Config, words: np.ndarray) -> None:
    """Set the bits of the special tokens the grammar admits at `config`, and of EOS when the
    configuration is accepting (a handful of `step` calls; not worth a kernel)."""
    tables = binding.tables
    for token, sym in zip(binding.special_ids.tolist(), binding.special_syms.tolist(), strict=True):
        if step(tables, config, sym) is not None:
            words[token >> 5] |= np.uint32(1 << (token & 31))
    if is_accepting(tables, config):
        for token in binding.eos_ids.tolist():
            words[token >> 5] |= np.uint32(1 << (token & 31))


def mask_words(binding: Binding, config: Config | None, scratch: Scratch) -> np.ndarray:
    """uint32 words of the tokens allowed at `config` (None = terminated: nothing allowed)."""
    words = np.zeros(binding.n_words, dtype=np.uint32)
    if config is None:
        return words
    walk_trie(binding, mask_key(config, binding.trie_depth), words, scratch)
    add_symbol_tokens(binding, config, words)
    return words


def allowed_mask(binding: Binding, config: Config | None, token_ids=None) -> np.ndarray:
    """bool[V], same contract as `trgc.engine.reference.allowed_mask` (the oracle)."""
    allowed = unpack(mask_words(binding, config, Scratch(binding)), binding.vocab_size)
    if token_ids is not None:
        keep = np.zeros(binding.vocab_size, dtype=bool)
        keep[np.fromiter(token_ids, dtype=np.int64)] = True
        allowed &= keep | ~binding.byte_token
    return allowed
