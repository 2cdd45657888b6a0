"""Token bitsets as packed 32-bit words: bit `t % 32` of word `t // 32` set = token `t` allowed.

The layout XGrammar and llguidance use for their int32 bitmask buffers `(batch, ceil(V/32))`.
"""

from __future__ import annotations

import numpy as np


def n_words(vocab_size: int) -> int:
    """Number of 32-bit words holding one bit per token."""
    return (vocab_size + 31) // 32


def pack(mask: np.ndarray) -> np.ndarray:
    """uint32[..., ceil(V/32)] from bool[..., V] (each row of a 2-D mask packed on its own)."""
    size = n_words(mask.shape[-1]) * 32
    padded = np.zeros((*mask.shape[:-1], size), dtype=bool)
    padded[..., : mask.shape[-1]] = mask
    return np.packbits(padded, axis=-1, bitorder="little").view("<u4").astype(np.uint32)


def unpack(words: np.ndarray, vocab_size: int) -> np.ndarray:
    """bool[V] from uint32 words."""
    raw = np.ascontiguousarray(words, dtype="<u4").view(np.uint8)
    return np.unpackbits(raw, bitorder="little")[:vocab_size].astype(bool)
