"""The in-memory mask cache: an LRU of packed masks bounded by a byte budget.

Keys are `(artifact id, tokenizer sha256, compiler version, special-token policy, configuration)`
(`Binding.key + (config,)`), so one cache can be shared by matchers over different artifacts or
tokenizers without ever returning one's mask for another. The configuration includes the UTF-8
state (it is part of the parser state). Lookups and insertions take a lock, so one cache may be
shared by matchers that fill masks on different threads (`trgc.torch.fill_next_token_bitmask`);
the masks themselves are computed outside it, so two threads that miss the same key both compute
it and the second insertion is ignored.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from trgc.limits import DEFAULT_LIMITS

ENTRY_OVERHEAD = 128  # bytes charged per entry for the key, the dict slot and the array header


class MaskCache:
    """LRU of read-only mask words (and per-state `FrameEntry` values), evicting the least
    recently used entries once `bytes_used` exceeds `budget_bytes`."""

    def __init__(self, budget_bytes: int = DEFAULT_LIMITS.cache_bytes) -> None:
        if budget_bytes < 0:
            raise ValueError(f"budget_bytes: expected >= 0, got {budget_bytes}")
        self.budget_bytes = int(budget_bytes)
        self.bytes_used = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple, tuple[object, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: tuple):
        """The cached value for `key` (marked most recently used), or None."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return found[0]

    def put(self, key: tuple, value, nbytes: int):
        """Store `value` (charged `nbytes` plus a per-entry overhead) unless it alone exceeds
        the budget; return it. Arrays are made read-only first."""
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
        size = int(nbytes) + 8 * len(key) + ENTRY_OVERHEAD
        with self._lock:
            if size > self.budget_bytes or key in self._entries:
                return value
            self._entries[key] = (value, size)
            self.bytes_used += size
            while self.bytes_used > self.budget_bytes:
                _, (_, old_size) = self._entries.popitem(last=False)
                self.bytes_used -= old_size
        return value

    def clear(self) -> None:
        with self._lock:
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
