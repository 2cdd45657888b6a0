"""UTF-8 range compilation against Python's own encoder, at the splitter and in compiled tables."""

from __future__ import annotations

import itertools
import random

import pytest

from test_automata_support import compile_source, walk
from trgc.automata.utf8 import encode, utf8_sequences

BOUNDARIES = [
    0,
    0x7F,
    0x80,
    0x7FF,
    0x800,
    0xFFF,
    0x1000,
    0xD7FF,
    0xE000,
    0xFFFF,
    0x10000,
    0x3FFFF,
    0x40000,
    0xFFFFF,
    0x100000,
    0x10FFFF,
]


def _accepted(seqs) -> set[bytes]:
    out: set[bytes] = set()
    for seq in seqs:
        for combo in itertools.product(*(range(lo, hi + 1) for lo, hi in seq)):
            out.add(bytes(combo))
    return out


def _expected(ranges) -> set[bytes]:
    return {
        chr(c).encode() for lo, hi in ranges for c in range(lo, hi + 1) if not 0xD800 <= c <= 0xDFFF
    }


def _ranges_around_boundaries(seed: int) -> list[tuple[tuple[int, int], ...]]:
    rng = random.Random(seed)
    cases = []
    for b in BOUNDARIES:
        lo = max(0, b - rng.randrange(1, 300))
        hi = min(0x10FFFF, b + rng.randrange(1, 300))
        cases.append(((lo, hi),))
    for _ in range(30):
        lo = rng.randrange(0, 0x10FFFF)
        cases.append(((lo, min(0x10FFFF, lo + rng.randrange(0, 5000))),))
    cases.append(((0xD000, 0xE100),))  # spans the surrogate gap
    cases.append(((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7FF)))  # JSON string body, low part
    return cases


@pytest.mark.parametrize("ranges", _ranges_around_boundaries(7))
def test_sequences_accept_exactly_the_encodings(ranges):
    assert _accepted(utf8_sequences(ranges)) == _expected(ranges)


def test_sequences_are_disjoint_and_tight():
    seqs = utf8_sequences(((0, 0x10FFFF),))
    # the well-known table of well-formed UTF-8 byte sequences (Unicode Table 3-7)
    assert seqs == [
        ((0x00, 0x7F),),
        ((0xC2, 0xDF), (0x80, 0xBF)),
        ((0xE0, 0xE0), (0xA0, 0xBF), (0x80, 0xBF)),
        ((0xE1, 0xEC), (0x80, 0xBF), (0x80, 0xBF)),
        ((0xED, 0xED), (0x80, 0x9F), (0x80, 0xBF)),
        ((0xEE, 0xEF), (0x80, 0xBF), (0x80, 0xBF)),
        ((0xF0, 0xF0), (0x90, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
        ((0xF1, 0xF3), (0x80, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
        ((0xF4, 0xF4), (0x80, 0x8F), (0x80, 0xBF), (0x80, 0xBF)),
    ]


def test_encode_matches_python():
    for c in [0, 0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF]:
        assert encode(c) == chr(c).encode()


def test_any_scalar_class_rejects_ill_formed_bytes():
    tables = compile_source("s ::= [\\u{0}-\\u{10FFFF}] ;")
    for bad in [
        b"\xed\xa0\x80",
        b"\xed\xbf\xbf",
        b"\xc0\x80",
        b"\xc1\xbf",
        b"\xe0\x80\x80",
        b"\xf0\x80\x80\x80",
        b"\xf4\x90\x80\x80",
        b"\xf5\x80\x80\x80",
        b"\x80",
        b"\xff",
    ]:
        assert not walk(tables, bad), bad
    for c in [0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF]:
        assert walk(tables, chr(c).encode()), hex(c)


@pytest.mark.parametrize(
    "source, ranges",
    [
        ("[\\u{7E}-\\u{801}]", ((0x7E, 0x801),)),
        ("[\\u{D700}-\\u{E0FF}]", ((0xD700, 0xE0FF),)),
        ("[\\u{FFF0}-\\u{10100}]", ((0xFFF0, 0x10100),)),
        ("[\\u{10FF00}-\\u{10FFFF}]", ((0x10FF00, 0x10FFFF),)),
    ],
)
def test_compiled_class_accepts_exactly_its_scalars(source, ranges):
    tables = compile_source(f"s ::= {source} ;")
    inside = {c for lo, hi in ranges for c in range(lo, hi + 1) if not 0xD800 <= c <= 0xDFFF}
    lo = min(lo for lo, _ in ranges)
    hi = max(hi for _, hi in ranges)
    for c in range(max(0, lo - 64), min(0x10FFFF, hi + 64) + 1):
        if 0xD800 <= c <= 0xDFFF:
            continue
        assert walk(tables, chr(c).encode()) == (c in inside), hex(c)
    # surrogate encodings are never accepted, even when the class range spans them
    for c in (0xD800, 0xDBFF, 0xDC00, 0xDFFF):
        assert not walk(tables, bytes((0xE0 | c >> 12, 0x80 | c >> 6 & 0x3F, 0x80 | c & 0x3F)))


def test_negated_class_is_utf8_only():
    tables = compile_source('s ::= [^"\\\\\\x00-\\x1F]* ;')
    assert walk(tables, "héllo wörld ✓ 😀".encode())
    assert not walk(tables, b'"')
    assert not walk(tables, b"\n")
    assert not walk(tables, b"\xed\xa0\x80")
    assert not walk(tables, b"\xc3")
