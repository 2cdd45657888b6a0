"""Unicode scalar ranges -> sequences of UTF-8 byte ranges.

A class `[...]` ranges over Unicode scalar values; the byte automaton must accept exactly the
shortest-form UTF-8 encodings of those values and nothing else (no surrogates D800-DFFF, no
overlong forms, nothing above U+10FFFF). We split each range until every piece `[lo, hi]`
has the same encoded length and differs only in a "rectangle" of byte positions: then the
piece is the product of per-byte ranges `enc(lo)[i]..enc(hi)[i]`. This is the classic
range-splitting technique (described by Russ Cox for RE2 and used by Rust's regex-syntax),
re-derived here: split at the encoded-length boundaries, then at multiples of 64**k until
the low `6k` bits of `lo` are all zeros and those of `hi` all ones.
"""

from __future__ import annotations

MAX_SCALAR = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)
# the last scalar value of each encoded length
_LENGTH_ENDS = (0x7F, 0x7FF, 0xFFFF, MAX_SCALAR)

ByteSeq = tuple[tuple[int, int], ...]


def encode(cp: int) -> bytes:
    """The UTF-8 encoding of one scalar value (surrogates allowed: used only for bounds)."""
    if cp <= 0x7F:
        return bytes((cp,))
    if cp <= 0x7FF:
        return bytes((0xC0 | cp >> 6, 0x80 | cp & 0x3F))
    if cp <= 0xFFFF:
        return bytes((0xE0 | cp >> 12, 0x80 | cp >> 6 & 0x3F, 0x80 | cp & 0x3F))
    return bytes((0xF0 | cp >> 18, 0x80 | cp >> 12 & 0x3F, 0x80 | cp >> 6 & 0x3F, 0x80 | cp & 0x3F))


def _clip(ranges: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    """Clip to 0..U+10FFFF, remove surrogates, split at encoded-length boundaries."""
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        lo, hi = max(lo, 0), min(hi, MAX_SCALAR)
        pieces = [(lo, hi)]
        if lo <= SURROGATES[1] and hi >= SURROGATES[0]:
            pieces = [(lo, SURROGATES[0] - 1), (SURROGATES[1] + 1, hi)]
        for plo, phi in pieces:
            start = plo
            for end in _LENGTH_ENDS:
                if start > phi:
                    break
                if start <= end:
                    out.append((start, min(phi, end)))
                    start = end + 1
    return [(lo, hi) for lo, hi in out if lo <= hi]


def utf8_sequences(ranges: tuple[tuple[int, int], ...]) -> list[ByteSeq]:
    """Byte-range sequences whose union accepts exactly the UTF-8 encodings of `ranges`.

    The sequences are disjoint and returned in ascending order of the values they encode.
    """
    result: list[ByteSeq] = []
    for lo, hi in _clip(ranges):
        n = len(encode(lo))
        stack = [(lo, hi)]
        while stack:
            a, b = stack.pop()
            for k in range(1, n):
                mask = (1 << (6 * k)) - 1
                if a & ~mask == b & ~mask:
                    continue
                if a & mask:
                    # a does not start a 64**k block: peel off the partial block first
                    stack.append(((a | mask) + 1, b))
                    stack.append((a, a | mask))
                    break
                if b & mask != mask:
                    stack.append((b & ~mask, b))
                    stack.append((a, (b & ~mask) - 1))
                    break
            else:
                ea, eb = encode(a), encode(b)
                result.append(tuple((ea[i], eb[i]) for i in range(n)))
    return result
