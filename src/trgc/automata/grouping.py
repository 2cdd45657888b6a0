"""Equal rows of an integer matrix, found in O(size): partition refinement and byte classes.

`group_rows` labels every row of a 2-D integer array so that two rows get the same label iff
they are equal. It hashes each row to one 64-bit word (a dot product with fixed odd
multipliers, wrapping), groups the words with a 1-D sort, and then *verifies* that every row
equals the first row of its group; only if two different rows ever share a word (never seen,
but an input could be built for it) does it fall back to the exact, slower row sort
(`np.unique(axis=0)`). The labels never depend on the hash: they are numbered in order of
each group's first row, so the result is the same on every machine and for every input.

`sort_groups` is `np.unique(values, return_index=True, return_inverse=True)` for a 1-D array
without the wrapper's fixed cost (tens of microseconds a call, and the compile path makes
hundreds of such calls on small arrays): a stable sort and a cumulative sum.
"""

from __future__ import annotations

import numpy as np

# 2^64 / the golden ratio, odd: the step of the multipliers below, and the factor of the kernels'
# Fibonacci hashing (a word times it, its top bits a slot of an open-addressing table)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MASK64 = (1 << 64) - 1


def _multipliers(width: int) -> np.ndarray:
    """`width` fixed odd 64-bit multipliers (a splitmix64 sequence from a constant seed),
    computed on whole arrays (uint64 arithmetic wraps modulo 2^64, as the sequence does)."""
    steps = np.arange(1, width + 1, dtype=np.uint64)
    z = np.uint64(0x2545F4914F6CDD1D) + steps * GOLDEN
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return (z ^ (z >> np.uint64(31))) | np.uint64(1)


_CACHE: dict[int, np.ndarray] = {}


def multipliers(width: int) -> np.ndarray:
    found = _CACHE.get(width)
    if found is None:
        found = _CACHE[width] = _multipliers(width)
    return found


def sort_groups(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of the first occurrence of each distinct value, values ascending; the group of
    every element, numbered in that order) of a 1-D array: what `np.unique(values,
    return_index=True, return_inverse=True)` returns besides the values themselves."""
    size = values.shape[0]
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    new = np.empty(size, dtype=bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    inverse = np.empty(size, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return order[new], inverse


def distinct_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-D array, ascending (a bare `np.unique` imports numpy.ma,
    ~20 ms of every process)."""
    ordered = np.sort(values)
    if ordered.size < 2:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def _first_order(first: np.ndarray, inverse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Relabel groups (given each group's first row and each row's group) by first row."""
    order = np.argsort(first, kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size, dtype=np.int64)
    return rank[inverse], first[order]


def group_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(label of each row, index of the first row of each label) for a 2-D integer array;
    labels are 0, 1, ... in order of first occurrence."""
    rows = matrix.shape[0]
    if rows == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if matrix.shape[1] == 0:
        return np.zeros(rows, dtype=np.int64), np.zeros(1, dtype=np.int64)
    words = matrix.astype(np.uint64, copy=False) @ multipliers(matrix.shape[1])
    first, inverse = sort_groups(words)
    if bool((matrix == matrix[first[inverse]]).all()):
        return _first_order(first, inverse)
    _, first, inverse = np.unique(matrix, axis=0, return_index=True, return_inverse=True)
    return _first_order(first, inverse.reshape(-1))
