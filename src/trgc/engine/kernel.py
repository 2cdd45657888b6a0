"""The numba mask kernel: one depth-first walk of the token trie per configuration.

`docs/mask-engine.md` derives it from the reference masker step by step. The public functions
validate their arrays and call private kernels that assume valid input; numba is imported on
the first call only (`import trgc` never loads it) and compiled code is cached on disk.

Invariant of `_walk`: nodes are in depth-first preorder, so when node `i` at depth `d` is
visited, level `d - 1` of the scratch holds the configuration after the bytes of `i`'s parent.
A level's stack is `orig[:keep] + own[level, :ext]`: the untouched bottom of the caller's
configuration plus the frames this token prefix rewrote or pushed, so a level copies only
`ext` ints (pushes since the start of the token, usually 0-2), never the whole stack.
"""

from __future__ import annotations

import functools

import numpy as np

from trgc.engine.binding import Binding
from trgc.engine.bits import unpack
from trgc.engine.config import Config, is_accepting, step

OK, DEAD, OPEN = 0, 1, 2  # outcome of stepping one byte (OPEN: needs the unknown caller frame)


def _walk(
    orig, n_orig, frame_mode, gnext, gcalls, accepting, byte_class, max_depth, max_steps,
    node_byte, node_depth, subtree_end, token_start, token_ids, byte_token,
    own, keep_l, ext_l, h_l, out_words, open_words, heights,
):  # fmt: skip
    keep_l[0] = n_orig
    ext_l[0] = 0
    h_l[0] = n_orig
    n_nodes = node_byte.shape[0]
    i = 1
    while i < n_nodes:
        d = node_depth[i]
        sym = byte_class[node_byte[i]]
        keep = keep_l[d - 1]
        ext = ext_l[d - 1]
        for k in range(ext):
            own[d, k] = own[d - 1, k]
        h = h_l[d - 1]
        status = DEAD
        for _ in range(max_steps):
            top = own[d, ext - 1] if ext > 0 else orig[keep - 1]
            action = gnext[top, sym]
            if action >= 0:
                if ext == 0:
                    keep -= 1
                    ext = 1
                own[d, ext - 1] = action
                status = OK
                break
            if action == -1:
                if accepting[top] and keep + ext > 1:
                    if ext > 0:
                        ext -= 1
                    else:
                        keep -= 1
                    continue
                if accepting[top] and frame_mode:
                    status = OPEN
                break
            if keep + ext >= max_depth:
                break
            call = -2 - action
            if ext == 0:
                keep -= 1
                ext = 1
            own[d, ext - 1] = gcalls[call, 1]
            own[d, ext] = gcalls[call, 0]
            ext += 1
            if keep + ext > h:
                h = keep + ext
        if status == OK:
            for j in range(token_start[i], token_start[i + 1]):
                t = token_ids[j]
                if byte_token[t]:
                    out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
                    if frame_mode:
                        heights[t] = h
            keep_l[d] = keep
            ext_l[d] = ext
            h_l[d] = h
            i += 1
        else:
            end = subtree_end[i]
            if status == OPEN:
                for j in range(token_start[i], token_start[end]):
                    t = token_ids[j]
                    if byte_token[t]:
                        open_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
            i = end


def _check(
    orig, n_orig, tokens, offsets, data, gnext, gcalls, accepting, byte_class, max_depth,
    max_steps, own, out_words,
):  # fmt: skip
    for t in tokens:
        keep = n_orig
        ext = 0
        alive = True
        for p in range(offsets[t], offsets[t + 1]):
            sym = byte_class[data[p]]
            alive = False
            for _ in range(max_steps):
                top = own[ext - 1] if ext > 0 else orig[keep - 1]
                action = gnext[top, sym]
                if action >= 0:
                    if ext == 0:
                        keep -= 1
                        ext = 1
                    own[ext - 1] = action
                    alive = True
                    break
                if action == -1:
                    if accepting[top] and keep + ext > 1:
                        if ext > 0:
                            ext -= 1
                        else:
                            keep -= 1
                        continue
                    break
                if keep + ext >= max_depth:
                    break
                call = -2 - action
                if ext == 0:
                    keep -= 1
                    ext = 1
                own[ext - 1] = gcalls[call, 1]
                own[ext] = gcalls[call, 0]
                ext += 1
            if not alive:
                break
        if alive:
            out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)


@functools.cache
def _jitted():
    from numba import njit

    return njit(cache=True, nogil=True)(_walk), njit(cache=True, nogil=True)(_check)


class Scratch:
    """Per-matcher work buffers for the kernels (never shared between threads)."""

    def __init__(self, binding: Binding) -> None:
        levels = binding.trie_depth + 1
        cap = binding.tables.max_depth + 1
        self.own = np.empty((levels, cap), dtype=np.int32)
        self.row = np.empty(cap, dtype=np.int32)
        self.keep = np.empty(levels, dtype=np.int64)
        self.ext = np.empty(levels, dtype=np.int64)
        self.height = np.empty(levels, dtype=np.int64)
        self.heights = np.zeros(binding.vocab_size, dtype=np.int32)
        self.orig = np.empty(cap, dtype=np.int32)


def _require(name: str, array: np.ndarray, dtype, ndim: int) -> None:
    if not isinstance(array, np.ndarray):
        raise TypeError(f"{name}: expected a numpy array, got {type(array).__name__}")
    if array.dtype != np.dtype(dtype):
        raise TypeError(f"{name}: expected dtype {np.dtype(dtype)}, got {array.dtype}")
    if array.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got {array.ndim}")
    if not array.flags.c_contiguous:
        raise ValueError(f"{name}: expected a C-contiguous array")


def _load_config(binding: Binding, config: Config, scratch: Scratch) -> int:
    if not config or len(config) > binding.tables.max_depth:
        raise ValueError(
            f"config: expected 1..{binding.tables.max_depth} frames, got {len(config)}"
        )
    scratch.orig[: len(config)] = config
    return len(config)


def walk_trie(
    binding: Binding,
    config: Config,
    out_words: np.ndarray,
    scratch: Scratch,
    *,
    frame_mode: bool = False,
    open_words: np.ndarray | None = None,
) -> None:
    """OR into `out_words` the byte tokens viable from `config` (trie walk).

    With `frame_mode`, `config` is one frame whose callers are unknown: tokens that need to
    return out of it go to `open_words` instead, and `scratch.heights[t]` receives the highest
    stack each accepted token reaches.
    """
    n_words = binding.n_words
    _require("out_words", out_words, np.uint32, 1)
    if out_words.shape[0] != n_words:
        raise ValueError(f"out_words: expected {n_words} words, got {out_words.shape[0]}")
    if open_words is None:
        open_words = np.zeros(n_words, dtype=np.uint32)
    _require("open_words", open_words, np.uint32, 1)
    n_orig = _load_config(binding, config, scratch)
    t = binding.tables
    walk, _ = _jitted()
    walk(
        scratch.orig, n_orig, frame_mode, t.next, t.calls, t.accepting, t.byte_class,
        t.max_depth, t.max_steps, binding.node_byte, binding.node_depth, binding.subtree_end,
        binding.token_start, binding.token_ids, binding.byte_token, scratch.own, scratch.keep,
        scratch.ext, scratch.height, out_words, open_words, scratch.heights,
    )  # fmt: skip


def check_tokens(
    binding: Binding, config: Config, tokens: np.ndarray, out_words: np.ndarray, scratch: Scratch
) -> None:
    """OR into `out_words` the tokens of `tokens` (int32 ids of byte tokens) viable from `config`."""
    _require("tokens", tokens, np.int32, 1)
    _require("out_words", out_words, np.uint32, 1)
    n_orig = _load_config(binding, config, scratch)
    t = binding.tables
    _, check = _jitted()
    check(
        scratch.orig, n_orig, tokens, binding.offsets, binding.data, t.next, t.calls,
        t.accepting, t.byte_class, t.max_depth, t.max_steps, scratch.row, out_words,
    )  # fmt: skip


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
    walk_trie(binding, config, words, scratch)
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
