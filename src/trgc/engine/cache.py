"""The in-memory mask cache: an LRU of packed masks bounded by a byte budget.

Keys are `(artifact id, tokenizer sha256, compiler version, special-token policy, configuration)`
(`Binding.key + (config,)`), so one cache can be shared by matchers over different artifacts or
tokenizers without ever returning one's mask for another. The configuration includes the UTF-8
state (it is part of the parser state). Not locked: share one between threads only behind a lock.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from trgc.limits import DEFAULT_LIMITS

ENTRY_OVERHEAD = 128  # bytes charged per entry for the key, the dict slot and the array header


class MaskCache:
    """LRU of read-only uint32 mask words, evicting least recently used entries over budget."""

    def __init__(self, budget_bytes: int = DEFAULT_LIMITS.cache_bytes) -> None:
        if budget_bytes < 0:
            raise ValueError(f"budget_bytes: expected >= 0, got {budget_bytes}")
        self.budget_bytes = int(budget_bytes)
        self.bytes_used = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple, np.ndarray] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def entry_bytes(key: tuple, words: np.ndarray) -> int:
        config = key[-1] or ()
        return int(words.nbytes) + 8 * len(config) + ENTRY_OVERHEAD

    def get(self, key: tuple) -> np.ndarray | None:
        """The cached words for `key` (marked most recently used), or None."""
        words = self._entries.get(key)
        if words is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return words

    def put(self, key: tuple, words: np.ndarray) -> np.ndarray:
        """Store `words` (made read-only) unless it alone exceeds the budget; return it."""
        words.flags.writeable = False
        size = self.entry_bytes(key, words)
        if size > self.budget_bytes or key in self._entries:
            return words
        self._entries[key] = words
        self.bytes_used += size
        while self.bytes_used > self.budget_bytes:
            old_key, old = self._entries.popitem(last=False)
            self.bytes_used -= self.entry_bytes(old_key, old)
        return words

    def clear(self) -> None:
        self._entries.clear()
        self.bytes_used = 0

    def stats(self) -> dict[str, int]:
        return {
            "entries": len(self._entries),
            "bytes": self.bytes_used,
            "budget_bytes": self.budget_bytes,
            "hits": self.hits,
            "misses": self.misses,
        }
