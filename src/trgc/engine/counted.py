"""Entries of counted frames with few iterations left, derived from the same frame unclipped.

A frame key clips a counted repetition's `left` at `L`, the longest token's bytes
(`config.frame_key`), so a frame with at least `L` iterations left has one entry; below `L`
every count is an entry of its own. A counted string with a pattern no slice fits
(`"pattern": "^[0-9a-z-]*$", "maxLength": 63` on Llama-3, whose `L` is 128) walked a new entry
at every character, each a walk of most of the trie (about 0.5 ms).

Each iteration consumes at least one byte, so a token of at most `left` bytes cannot use up
`left` iterations: it is taken exactly as with `L` left, and returns out of the frame where it
would then. Only the tokens longer than `left` can differ, and they lie below depth `left` of
the trie. So the entry of `(g, left, needed)` is the entry of `(g, L, needed)` restricted to the
tokens of at most `left` bytes and to its open roots at depth at most `left`, plus a walk from
the frame of the trie nodes at depth `left + 1` (each with its ancestors stepped; those that
die or return above it are skipped), which adds the longer tokens and their open roots. The
height is the larger of the two (a bound, as every entry's height is). Worth it where the trie
below `left` is small (`DERIVE_NODES`): on Llama-3 5,834 nodes lie below depth 16, 213,771
below depth 4.
"""

from __future__ import annotations

import numpy as np

from trgc.engine.binding import Binding
from trgc.engine.bits import pack
from trgc.engine.config import STATE_MASK, unclip
from trgc.engine.kernel import Scratch, read_only, run_walk
from trgc.engine.precompute import FrameEntry

# trie nodes below depth `left` above which an entry is walked whole rather than derived
DERIVE_NODES = 1 << 14


def derivable(binding: Binding, key: int) -> bool:
    """Whether the entry of frame key `key` is derived rather than walked: a counted frame with
    fewer iterations left than the longest token has bytes, and at most `DERIVE_NODES` trie
    nodes below that depth."""
    if key <= STATE_MASK:
        return False
    left = unclip(key)[1]
    return 0 < left < binding.trie_depth and int(_deep_counts(binding)[left]) <= DERIVE_NODES


def base_key(binding: Binding, key: int) -> int:
    """The frame key `key` with its `left` unclipped (the longest token's bytes)."""
    g, _, needed = unclip(key)
    return g | (binding.trie_depth << 32) | (needed << 48)


def derive(binding: Binding, base: FrameEntry, key: int, scratch: Scratch) -> FrameEntry:
    """The entry of frame key `key` (`derivable`) from `base`, the entry of `base_key(key)`
    (module docstring)."""
    g, left, _ = unclip(key)
    words = base.accept & _short_words(binding, left)
    kept = base.open_roots[binding.vocab.node_depth[base.open_roots] <= left]
    frame_mode = bool(binding.tables.has_caller[g])
    n_open, height = run_walk(binding, (key,), words, scratch, _roots_at(binding, left + 1),
                              frame_mode, None)  # fmt: skip
    # disjoint: `kept` lie at depth `left` or above, the walk's below (both in preorder)
    roots = np.sort(np.concatenate((kept, scratch.open_roots[:n_open]))) if n_open else kept
    words.flags.writeable = False
    roots.flags.writeable = False
    return FrameEntry(words, roots, max(base.height, height))


def prepare(binding: Binding) -> None:
    """Make the tokenizer's tables `derivable` and `derive` read (nodes per depth, token
    lengths: about 0.4 ms on Llama-3, once per tokenizer) for an artifact with counted
    repetitions, so that a matcher's first mask pays for them rather than a mask inside a
    counted string."""
    if binding.tables.is_repeat.any():
        _deep_counts(binding)
        _lengths(binding)


def _deep_counts(binding: Binding) -> np.ndarray:
    """int64[L + 1]: trie nodes deeper than each depth (per tokenizer, made once)."""
    return binding.vocab.derived("counted.deep", _nodes_below)


def _nodes_below(vocab) -> np.ndarray:
    """`_deep_counts`, made."""
    per_depth = np.bincount(vocab.node_depth, minlength=vocab.longest + 1)
    return per_depth.sum() - np.cumsum(per_depth)


def _lengths(binding: Binding) -> np.ndarray:
    """int64[V]: each token's bytes (per tokenizer, made once)."""
    return binding.vocab.derived("counted.lengths", lambda vocab: np.diff(vocab.offsets))


def _short_words(binding: Binding, left: int) -> np.ndarray:
    """uint32 words of the tokens of at most `left` bytes (per tokenizer and `left`)."""
    return binding.vocab.derived(("counted.short", left),
                                 lambda _: read_only(pack(_lengths(binding) <= left)))  # fmt: skip


def _roots_at(binding: Binding, depth: int) -> np.ndarray:
    """int32 trie nodes at `depth`, in preorder (per tokenizer and depth)."""
    return binding.vocab.derived(
        ("counted.roots", depth),
        lambda vocab: read_only(np.flatnonzero(vocab.node_depth == depth).astype(np.int32)),
    )
