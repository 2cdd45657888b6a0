"""The two forms of a finished mask, and how each is written into a caller's bitmask row.

A decoder asks for a mask right after it advanced, when little of the mask is still in the
CPU's caches, so a mask costs what it reads and writes: every row is written whole (16 KB on
Llama-3), and a dense mask is read whole as well. Half the masks of a JSON document allow at
most nine tokens (a structural character, a digit, a keyword's next letter), and those are
kept as their nonzero words: writing one zeroes the row (one copy of zero bytes shared by
every mask of that width) and sets a few words. A mask is `Sparse` exactly when that form is
the smaller (fewer than `n_words / 2` nonzero words), else `Dense`; `encode`/`decode` give the
bytes the mask store keeps (`trgc.engine.maskstore`), the same mask always the same bytes:

    tag    u32   0 dense, 1 sparse
    count  u32   dense: n_words; sparse: k, the nonzero words
    dense: uint32 words[n_words]
    sparse: u32 positions[k] (strictly increasing, < n_words), uint32 values[k] (nonzero)

Both forms are written through `Row`, the memory of one bitmask row seen as bytes (for one
`memcpy`) and as int32 items (for a few stores): a fill makes no numpy call.
"""

from __future__ import annotations

import functools
import struct

import numpy as np

DENSE, SPARSE = 0, 1
_WORD = np.dtype("<u4")  # the words' dtype: little-endian uint32
_HEAD = struct.Struct("<II")
LOOP_WORDS = 16  # a sparse mask of at most this many words is stored item by item


class Row:
    """One row of a caller's int32 bitmask buffer: its first `n_words` words as bytes
    (`raw`, for one `memcpy`) and as int32 items (`items`, for a few stores without numpy's
    dispatch), and the bytes past the mask (`tail`, None when there are none), which are
    always written 0 (`clear_tail`). A fill touches only these memoryviews: no numpy call,
    which right after an `advance` costs more than the copy itself."""

    __slots__ = ("raw", "items", "tail")

    def __init__(self, raw: memoryview, tail: memoryview | None) -> None:
        self.raw = raw
        self.items = raw.cast("i")
        self.tail = tail

    @classmethod
    def within(cls, array: np.ndarray, index: int, n_words: int) -> Row:
        """Row `index` of a checked buffer (2-D, C-contiguous, int32, at least `n_words`
        wide), cut from one byte view of the whole array (no numpy view per row)."""
        width = 4 * array.shape[1]
        start = width * int(index)
        end = start + 4 * n_words
        flat = memoryview(array).cast("B")
        return cls(flat[start:end], flat[end : start + width] if start + width > end else None)

    def clear_tail(self) -> None:
        self.tail[:] = zero_bytes(len(self.tail))  # type: ignore[arg-type, index]


class Dense:
    """A mask kept as all its words (a read-only uint32 array or bytes)."""

    __slots__ = ("raw",)

    def __init__(self, raw: memoryview) -> None:
        self.raw = raw  # bytes of uint32 words, little-endian

    @classmethod
    def of(cls, words: np.ndarray) -> Dense:
        if words.dtype is _WORD and words.flags.c_contiguous:  # the engine's own words
            return cls(memoryview(words).cast("B"))
        return cls(memoryview(np.ascontiguousarray(words, dtype=_WORD)).cast("B"))

    def fill(self, row: Row) -> None:
        row.raw[:] = self.raw

    def words(self) -> np.ndarray:
        return np.frombuffer(self.raw, dtype="<u4")


class Sparse:
    """A mask kept as its nonzero words: positions and values (uint32 arrays, often views of
    a store's bytes), with what a fill needs made when the form is: a mask is often written
    once, right after an `advance`, where any extra step runs cold. Up to `LOOP_WORDS` words
    a fill is a copy of shared zero bytes and that many stores (`items`, which a store may
    give: it makes the pairs of all its masks in two list conversions); past it, the words are
    also kept whole (`whole`) and a fill is one copy, as a dense mask's: a memset and a numpy
    scatter of a few hundred words measured 2-3x the copy in that position. A form made from
    `items` alone (`positions` and `values` None: a start mask read before its first mask)
    makes the two arrays when they are first read."""

    __slots__ = ("n_words", "_positions", "_values", "items", "whole", "zero")

    def __init__(
        self,
        n_words: int,
        positions: np.ndarray | None,
        values: np.ndarray | None,
        items: tuple | None = None,
    ) -> None:
        self.n_words = n_words
        self._positions = positions
        self._values = values
        self.whole: memoryview | None = None  # the words as bytes, past LOOP_WORDS
        if positions is not None and positions.size > LOOP_WORDS:
            words = np.zeros(n_words, dtype="<u4")
            words[positions] = values
            self.whole = memoryview(words).cast("B")
            items = ()
        elif items is None:  # else `items` alone may be given (at most LOOP_WORDS pairs)
            signed = values.astype("<u4").view(np.int32)  # type: ignore[union-attr]
            items = tuple(zip(positions.tolist(), signed.tolist(), strict=True))
        self.items = items  # (position, int32 value) pairs; () past LOOP_WORDS
        self.zero = zero_bytes(4 * n_words) if self.whole is None else None

    @property
    def positions(self) -> np.ndarray:
        found = self._positions
        if found is None:
            found = self._positions = np.array([p for p, _ in self.items], dtype="<u4")
        return found

    @property
    def values(self) -> np.ndarray:
        found = self._values
        if found is None:
            signed = np.array([v for _, v in self.items], dtype=np.int32)
            found = self._values = signed.view("<u4")
        return found

    def fill(self, row: Row) -> None:
        whole = self.whole
        if whole is not None:
            row.raw[:] = whole
            return
        row.raw[:] = self.zero  # zeroed by one copy of shared zero bytes (no numpy call)
        out = row.items
        for position, value in self.items:
            out[position] = value

    def words(self) -> np.ndarray:
        out = np.zeros(self.n_words, dtype="<u4")
        out[self.positions] = self.values
        out.flags.writeable = False
        return out


Form = Dense | Sparse


@functools.cache
def zero_bytes(size: int) -> bytes:
    """`size` zero bytes, one object per size: a row is zeroed by copying them (no numpy call),
    and every mask and buffer of one width shares them."""
    return bytes(size)


def nonzero_positions(words: np.ndarray) -> np.ndarray:
    """The positions of the nonzero words of `words`, found through a bool array: numpy 2.4
    scans 4,008 uint32 words for nonzero items in 7-8 us and their bools in 1.3-2.6 us."""
    return np.flatnonzero(words != 0)


def encode(words: np.ndarray) -> bytes:
    """The stored bytes of a mask (uint32 words): sparse when that is smaller."""
    words = np.ascontiguousarray(words, dtype="<u4")
    positions = nonzero_positions(words)
    if 2 * positions.size < words.shape[0]:
        return b"".join((_HEAD.pack(SPARSE, positions.size), positions.astype("<u4").tobytes(),
                         words[positions].tobytes()))  # fmt: skip
    return _HEAD.pack(DENSE, words.shape[0]) + words.tobytes()


class FormError(ValueError):
    """Stored mask bytes that are not a mask of this width in its canonical form."""


def decode(data: bytes | memoryview, at: int, n_words: int) -> tuple[Form, int]:
    """The mask stored at byte `at` of `data` and the offset after it; `FormError` for bytes
    that are cut short, of another width, out of order or not in the canonical form."""
    if at + _HEAD.size > len(data):
        raise FormError("a mask is cut short")
    tag, count = _HEAD.unpack_from(data, at)
    at += _HEAD.size
    if tag == DENSE:
        end = at + 4 * n_words
        if count != n_words or end > len(data):
            raise FormError("a dense mask of another width, or cut short")
        raw = memoryview(data)[at:end]
        if 2 * np.count_nonzero(np.frombuffer(raw, dtype="<u4")) < n_words:
            raise FormError("a dense mask that the sparse form would hold")
        return Dense(raw), end
    if tag != SPARSE or 2 * count >= n_words:
        raise FormError(f"mask tag {tag} with {count} words")
    end = at + 8 * count
    if end > len(data):
        raise FormError("a sparse mask is cut short")
    if count <= LOOP_WORDS:  # the usual start mask: checked in Python, no numpy call
        at_ = struct.unpack_from(f"<{count}I", data, at)
        words = struct.unpack_from(f"<{count}i", data, at + 4 * count)
        if (
            list(at_) != sorted(set(at_))  # not strictly increasing
            or not all(words)
            or (count and at_[-1] >= n_words)
        ):
            raise FormError("sparse positions out of order or range, or a zero word")
        return Sparse(n_words, None, None, tuple(zip(at_, words, strict=True))), end
    positions = np.frombuffer(data, dtype="<u4", count=count, offset=at)
    values = np.frombuffer(data, dtype="<u4", count=count, offset=at + 4 * count)
    if (
        int(positions[-1]) >= n_words
        or (np.diff(positions.astype(np.int64)) <= 0).any()
        or not values.all()
    ):
        raise FormError("sparse positions out of order or range, or a zero word")
    return Sparse(n_words, positions, values), end


def allows_only(form: Form, possible: np.ndarray) -> bool:
    """True when every token `form` allows is one of `possible` (packed uint32 words)."""
    if isinstance(form, Sparse):
        if form.items:  # a few words: item by item (a memoryview gives ints, no numpy scalars)
            words = memoryview(possible)
            return not any(value & ~words[at] & 0xFFFFFFFF for at, value in form.items)
        return not (form.values & ~possible[form.positions]).any()
    return not (form.words() & ~possible).any()
