"""Unicode scalar-value range sets: the payload of `Kind.CLASS` nodes.

A class is a sorted tuple of disjoint, non-adjacent `(lo, hi)` ranges (inclusive) over the
Unicode scalar values: 0..0x10FFFF without the surrogates 0xD800..0xDFFF. The functions here
normalise what a source wrote (ranges in any order, overlapping, spanning the surrogate gap)
into that form and complement it; they never see surrogates in their output.
"""

from __future__ import annotations

MAX_SCALAR = 0x10FFFF
SURROGATE_LO = 0xD800
SURROGATE_HI = 0xDFFF

Ranges = tuple[tuple[int, int], ...]

# Every scalar value, as a normalised class.
ALL_SCALARS: Ranges = ((0, SURROGATE_LO - 1), (SURROGATE_HI + 1, MAX_SCALAR))


def is_surrogate(cp: int) -> bool:
    return SURROGATE_LO <= cp <= SURROGATE_HI


def normalize(ranges: list[tuple[int, int]]) -> Ranges:
    """Sort, merge overlapping or adjacent ranges and cut out the surrogate gap.

    Each input range must satisfy `0 <= lo <= hi <= MAX_SCALAR` (the caller checks it).
    """
    merged: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            if hi > merged[-1][1]:
                merged[-1][1] = hi
        else:
            merged.append([lo, hi])
    out: list[tuple[int, int]] = []
    for lo, hi in merged:
        if hi < SURROGATE_LO or lo > SURROGATE_HI:
            out.append((lo, hi))
            continue
        if lo < SURROGATE_LO:
            out.append((lo, SURROGATE_LO - 1))
        if hi > SURROGATE_HI:
            out.append((SURROGATE_HI + 1, hi))
    return tuple(out)


def complement(ranges: Ranges) -> Ranges:
    """The scalar values not in a normalised class (surrogates stay excluded)."""
    gaps: list[tuple[int, int]] = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            gaps.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_SCALAR:
        gaps.append((nxt, MAX_SCALAR))
    return normalize(gaps)


def contains(ranges: Ranges, cp: int) -> bool:
    """Membership test by binary search over a normalised class."""
    lo_i, hi_i = 0, len(ranges)
    while lo_i < hi_i:
        mid = (lo_i + hi_i) // 2
        lo, hi = ranges[mid]
        if cp < lo:
            hi_i = mid
        elif cp > hi:
            lo_i = mid + 1
        else:
            return True
    return False


def subtract(ranges, remove) -> Ranges:
    """`ranges` minus the scalars in `remove` (both lists of inclusive ranges)."""
    result = list(normalize(ranges))
    for rlo, rhi in normalize(remove):
        nxt = []
        for lo, hi in result:
            if rhi < lo or rlo > hi:
                nxt.append((lo, hi))
                continue
            if lo < rlo:
                nxt.append((lo, rlo - 1))
            if hi > rhi:
                nxt.append((rhi + 1, hi))
        result = nxt
    return tuple(result)
