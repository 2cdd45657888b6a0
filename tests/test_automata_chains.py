"""Product operands tiled from their parts' tables (`automata/chains.py`).

A bounded string operand, `"` unit{lo,hi} `"` beside a `pattern`, is a DFA tiled from the
unit's minimal table instead of an NFA of `hi` copies. Three things must hold: a tiled table
accepts exactly the repetition or sequence (brute force over every short string of random
small DFAs, including the bodies tiling must refuse), compiling with tiling gives the same
artifact bytes as determinising the copies, and the state limit is checked before a tiled
table is allocated.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trgc
from trgc.automata import chains, nfa
from trgc.automata.dfa import NONE, Table
from trgc.errors import TrgcError
from trgc.limits import Budget

ATOMS = 3
LONGEST = 6  # every string over 3 atoms up to this length is tried


def _table(next_rows: list[list[int]], accepting: list[bool]) -> Table:
    """A DFA over atoms 0..2, one segment each."""
    seg = np.arange(ATOMS, dtype=np.int64)
    return Table(np.array(next_rows, dtype=np.int32), np.array(accepting), seg, seg)


def _accepts(table: Table, word: tuple[int, ...]) -> bool:
    state = 0
    for atom in word:
        column = np.flatnonzero((table.seg_lo <= atom) & (atom <= table.seg_hi))
        if column.size == 0 or (state := int(table.next[state, column[0]])) < 0:
            return False
    return bool(table.accepting[state])


def _words():
    for length in range(LONGEST + 1):
        yield from itertools.product(range(ATOMS), repeat=length)


def _in_power(body: Table, word: tuple[int, ...], lo: int, hi: int) -> bool:
    """Whether `word` splits into lo..hi words of `body` (dynamic programming over cuts)."""
    reach = {0: {0}}  # cut position -> numbers of pieces that end there
    for end in range(1, len(word) + 1):
        counts = {
            k + 1
            for start in range(end)
            if _accepts(body, word[start:end])
            for k in reach.get(start, ())
            if k < hi
        }
        if counts:
            reach[end] = counts
    return any(lo <= k <= hi for k in reach.get(len(word), ()))


def _exact(body: Table) -> bool:
    """What `repeat` requires: a non-nullable body that nothing re-enters at its start and
    whose accepting states move on no atom its start moves on."""
    ends = body.next[body.accepting] >= 0
    return not (body.accepting[0] or np.any(body.next == 0) or np.any(ends & (body.next[0] >= 0)))


@st.composite
def dfas(draw, max_states: int = 4) -> Table:
    n = draw(st.integers(1, max_states))
    rows = [[draw(st.integers(NONE, n - 1)) for _ in range(ATOMS)] for _ in range(n)]
    accepting = [draw(st.booleans()) for _ in range(n)]
    return _table(rows, accepting)


@settings(max_examples=150, deadline=None)
@given(dfas(), st.integers(0, 3), st.integers(1, 4))
def test_a_tiled_repetition_accepts_exactly_the_repetition(body, lo, extra):
    hi = max(lo, 1) + extra - 1
    tiled = chains.repeat(body, lo, hi, Budget(10**9))
    assert (tiled is not None) == _exact(body)
    if tiled is None:
        return
    assert tiled.n_states == chains.tiled_states(body, hi)
    assert tiled.n_transitions == chains.tiled_transitions(body, hi)
    for word in _words():
        assert _accepts(tiled, word) == _in_power(body, word, lo, hi), word


@settings(max_examples=150, deadline=None)
@given(st.lists(dfas(max_states=3), min_size=2, max_size=3))
def test_a_tiled_sequence_accepts_exactly_the_concatenation(parts):
    joined = chains.concat(parts, Budget(10**9))
    if joined is None:
        return
    for word in _words():
        expected = _concatenates(parts, word)
        assert _accepts(joined, word) == expected, word


def _concatenates(parts: list[Table], word: tuple[int, ...]) -> bool:
    if not parts:
        return not word
    return any(
        _accepts(parts[0], word[:cut]) and _concatenates(parts[1:], word[cut:])
        for cut in range(len(word) + 1)
    )


def test_tiling_refuses_what_it_cannot_do_exactly():
    # a|aa: the accepting state after one `a` moves on `a`, as the start does
    a_or_aa = _table([[1, NONE, NONE], [2, NONE, NONE], [NONE, NONE, NONE]], [False, True, True])
    # (ab)*c: the start is entered again after `b`
    loop = _table([[1, NONE, 2], [NONE, 0, NONE], [NONE, NONE, NONE]], [False, False, True])
    # a?: nullable
    optional = _table([[1, NONE, NONE], [NONE, NONE, NONE]], [True, True])
    for body in (a_or_aa, loop, optional):
        assert chains.repeat(body, 0, 3, Budget(10**9)) is None
    assert chains.concat([a_or_aa, a_or_aa], Budget(10**9)) is None
    assert chains.concat([a_or_aa, loop], Budget(10**9)) is None


def test_parts_on_different_segments_are_joined_on_common_ones():
    seg = np.array([0], dtype=np.int64)
    wide = Table(np.array([[1], [NONE]], dtype=np.int32), np.array([False, True]), seg, seg + 9)
    narrow = Table(
        np.array([[1], [NONE]], dtype=np.int32), np.array([False, True]), seg + 4, seg + 4
    )
    joined = chains.concat([wide, narrow], Budget(10**9))
    assert joined is not None
    assert joined.seg_lo.tolist() == [0, 4, 5] and joined.seg_hi.tolist() == [3, 4, 9]
    for first, second in itertools.product(range(10), repeat=2):
        assert _accepts(joined, (first, second)) == (second == 4)
    assert not _accepts(joined, (4,))


# strings whose pattern is not one repeated class, so the lowering intersects the pattern
# with the strings of the allowed length (an AND whose operand is `"` unit{lo,hi} `"`)
LENGTHS = [(0, 2), (0, 5), (3, 3), (1, 64), (2, 300), (0, 1024)]
PATTERNS = ["^https?://.+$", "^[a-z]+-[0-9]+$", "^(ab|c)*$", "^\\w+@\\w+\\.com$", "^x"]


@pytest.mark.parametrize("lo,hi", LENGTHS)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_tiled_operands_give_the_bytes_of_determinised_copies(monkeypatch, pattern, lo, hi):
    schema = {"type": "string", "pattern": pattern, "minLength": lo, "maxLength": hi}
    tiled: list[int] = []
    real = chains.repeat

    def counting(*args):
        table = real(*args)
        tiled.append(table is not None)
        return table

    monkeypatch.setattr(chains, "repeat", counting)
    with_tiles = _outcome(schema)
    monkeypatch.setattr(nfa._Builder, "_tiled", lambda self, node_id, subs, what: None)
    assert _outcome(schema) == with_tiles
    assert any(tiled)


def test_a_format_with_lengths_is_tiled_to_the_same_bytes(monkeypatch):
    schema = {"type": "string", "format": "email", "minLength": 6, "maxLength": 200}
    with_tiles = _outcome(schema)
    monkeypatch.setattr(nfa._Builder, "_tiled", lambda self, node_id, subs, what: None)
    assert _outcome(schema) == with_tiles


def _outcome(schema) -> bytes | tuple[str, str]:
    try:
        return trgc.compile_schema(schema, separators="compact").to_bytes()
    except TrgcError as error:
        return error.code, error.message


def test_the_state_limit_is_checked_before_tiling(monkeypatch):
    allocated: list[int] = []
    monkeypatch.setattr(chains, "repeat", lambda *args: allocated.append(1))
    schema = {"type": "string", "pattern": "^a.*b$", "maxLength": 100_000}
    with pytest.raises(TrgcError) as caught:
        trgc.compile_schema(schema)
    assert caught.value.code == "E_LIMIT_STATES"
    assert "exceeds the states limit" in caught.value.message
    assert not allocated
