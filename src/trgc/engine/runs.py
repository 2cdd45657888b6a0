"""Class runs: the frames of a chain of copies of one ASCII class, masked by the run's
members and the tails of one head length instead of a walk.

A bounded repetition inside a pattern (`^[0-9A-Za-z]{8}-[0-9A-Za-z]{4}-...$`, a UUID) is
compiled as copies: one state per position, each taking the bytes of one class, all to the
next. Walked, such a state visits every trie node that spells up to r bytes of the class
(58-61k nodes on Llama-3, 125-500 us live): most of the slowest 1% of live masks. Yet its
entry is simple. Let the frame take r bytes of class C by such states (the *run*) and reach
`end`, a state that takes no byte of C and cannot return to a caller that might. Then

  * a token made of C bytes only (a member of C's slice, `trgc.engine.slices.RawSlices`) is
    allowed exactly when it has at most r of them: it ends inside the run or at `end`;
  * any other token is allowed exactly when its *head* (its longest beginning of C bytes,
    `trgc.engine.tails`) has r bytes and its tail is allowed from `end`: one walk of C's tail
    trie from `end`, its tokens kept when their head has r bytes. A shorter head meets a state
    of the run with a byte outside C, a longer one meets `end` with a byte of C: both die, as
    in the walk.

The members of C with at most r bytes and the tokens whose head has r bytes are kept per
tokenizer (`_words`); the classes are a fixed catalogue (`RUN_CLASSES`), their slices and tail
tries built once per tokenizer on the first run of each. The entry equals the plain walk's
(tests compare them, and the masks with the reference), so it is found in memory by its
artifact like a walked one (`framecache.cheap`): describing its residual cost more than this.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from trgc.engine.bits import pack
from trgc.engine.config import STATE_MASK
from trgc.engine.kernel import Scratch, read_only, run_walk, whole_trie
from trgc.engine.slices import NOT_MEMBER, WORD, Slice, ascii_dfa, default_slices

_DIGITS = b"0123456789"
_LOWER = b"abcdefghijklmnopqrstuvwxyz"
_UPPER = _LOWER.upper()

# The classes whose runs are masked so: those patterns repeat (identifiers, hashes, UUIDs,
# dates), each its own slice over the vocabulary.
RUN_CLASSES: tuple[Slice, ...] = tuple(
    Slice(name, ascii_dfa(allowed), 0, tails=True)
    for name, allowed in (
        ("digit", _DIGITS),
        ("hex-lower", _DIGITS + b"abcdef"),
        ("hex-upper", _DIGITS + b"ABCDEF"),
        ("hex", _DIGITS + b"abcdefABCDEF"),
        ("lower", _LOWER),
        ("upper", _UPPER),
        ("alpha", _LOWER + _UPPER),
        ("alnum-lower", _DIGITS + _LOWER),
        ("alnum-upper", _DIGITS + _UPPER),
        ("alnum", _DIGITS + _LOWER + _UPPER),
    )
) + (default_slices()[WORD],)  # one automaton: its vocabulary pass and tails are shared

_ALLOWED = np.stack([piece.dfa[0] >= 0 for piece in RUN_CLASSES])  # class x byte


@dataclass(frozen=True, slots=True)
class Run:
    """A frame inside a run: its class (`RUN_CLASSES` index), the class bytes the run still
    takes (`length`), the state after them (`end`; -1 when the run is longer than any token),
    and the height its members reach (`trgc.engine.slices.is_safe`'s)."""

    piece: int
    length: int
    end: int
    height: int


def run_states(binding) -> np.ndarray:
    """bool[n_states]: the states in a run (those `run_of` answers), for every state at once
    in one compiled call (`_facts`). A matcher walks none of them inside `kernel.cold_mask`
    (`Matcher._cheap`): their walk bound is small by the trie's measure (62 first bytes),
    their walk is not. Asked state by state in Python, the states that look like one (a digit
    after a decimal point, thousands in a corpus) cost 300-600 us per artifact in its first
    mask, and in numpy, 100-400 us."""
    return _facts(binding)[1] > 0


def run_of(binding, key: int) -> Run | None:
    """The `Run` of frame key `key` in `binding` (None for a counted frame or a state outside
    a run). A run longer than the longest token shows no more than `longest + 1` bytes and no
    end: no token gets past it."""
    if key > STATE_MASK:
        return None
    kind, length, end, top = _facts(binding)
    if length[key] <= 0:
        return None
    longest = binding.trie_depth
    far = length[key] > longest
    return Run(int(kind[key]), int(min(length[key], longest + 1)), -1 if far else int(end[key]),
               int(binding.tables.cost[key]) + int(top[key]))  # fmt: skip


def _facts(binding) -> tuple[np.ndarray, ...]:
    """Per state (read-only int64 arrays, made once per binding in one compiled call): the
    class it acts as (-1: none), the bytes of its run (0: not in one), the state after the
    run, and the largest completion need from the state to that one (`_find_runs`)."""

    def make(b) -> tuple[np.ndarray, ...]:
        t = b.tables
        out = np.zeros((4, t.next.shape[0]), dtype=np.int64)
        path = np.empty(t.next.shape[0], dtype=np.int64)
        _facts_jitted()(t.next, t.byte_class.astype(np.int64), t.accepting, t.is_repeat,
                        t.has_caller, t.need_more, _ALLOWED, path, out)  # fmt: skip
        out.flags.writeable = False
        return tuple(out)

    return binding.derived("runs.facts", make)


def _find_runs(next_, byte_class, accepting, is_repeat, has_caller, need, allowed, path, out):
    """`_facts`, compiled, into the rows of `out` (kind, length, end, top).

    A catalogue class counts when it is a union of the artifact's byte classes. A state acts
    as class c when it is not accepting, not counted, and acts on exactly c's byte classes,
    all by one shift to one state (its successor). Its chain goes on while successors act as
    c; the state after the last (`end`) closes a run when it takes no byte of c and cannot
    return to a caller that might. Each chain is followed once, from its first unknown state
    to a known one or its end (`path`), and its states answered backwards; a chain that
    cycles, or whose end fails, is no run (length -1)."""
    n_states, n_symbols = next_.shape
    n_classes = allowed.shape[0]
    inside = np.zeros((n_classes, n_symbols), dtype=np.bool_)
    outside = np.zeros((n_classes, n_symbols), dtype=np.bool_)
    size = np.zeros(n_classes, dtype=np.int64)  # byte classes of each counting class
    for c in range(n_classes):
        for b in range(256):
            if allowed[c, b]:
                inside[c, byte_class[b]] = True
            else:
                outside[c, byte_class[b]] = True
        for s in range(n_symbols):
            if inside[c, s] and outside[c, s]:
                inside[c, :] = False
                size[c] = 0
                break
            size[c] += inside[c, s]
    kind, length, end, top = out[0], out[1], out[2], out[3]
    succ = np.empty(n_states, dtype=np.int64)
    for g in range(n_states):
        kind[g] = -1
        if accepting[g] or is_repeat[g]:
            continue
        n_acts = 0
        for s in range(n_symbols):
            n_acts += next_[g, s] != -1
        for c in range(n_classes):
            if size[c] != n_acts or n_acts == 0:
                continue
            target = -1  # the one state every action shifts to (a call is none)
            for s in range(n_symbols):
                action = next_[g, s]
                if (
                    (action != -1) != inside[c, s]
                    or action < -1
                    or (action >= 0 and target >= 0 and action != target)
                ):
                    target = -1
                    break
                if action >= 0:
                    target = action
            if target >= 0:
                kind[g] = c
                succ[g] = target
                break
    for g in range(n_states):
        if kind[g] < 0 or length[g] != 0:
            continue
        n_path = 0
        x = g
        while True:
            length[x] = -2  # on the path
            path[n_path] = x
            n_path += 1
            y = succ[x]
            if kind[y] != kind[x]:  # x is the chain's last state, y its end
                ok = not (accepting[y] and has_caller[y])
                for s in range(n_symbols):
                    if inside[kind[x], s] and next_[y, s] != -1:
                        ok = False
                d, t, e = (0, need[y], y) if ok else (-1, 0, -1)
                break
            if length[y] == -2:  # a cycle
                d, t, e = -1, 0, -1
                break
            if length[y] != 0:  # answered before
                d, t, e = length[y], top[y], end[y]
                break
            x = y
        for i in range(n_path - 1, -1, -1):
            p = path[i]
            if d < 0:
                length[p] = -1
                continue
            d += 1
            t = max(t, need[p])
            length[p], top[p], end[p] = d, t, e


@functools.cache
def _facts_jitted():
    from numba import njit

    return njit(cache=True, nogil=True)(_find_runs)


def _words(binding, piece: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """(the members of class `piece` with at most `length` bytes, the other tokens whose head
    has `length` bytes) as words over every token with bytes (read-only)."""
    members, headed = _by_length(binding, piece)
    return members[min(length, members.shape[0] - 1)], headed[min(length, headed.shape[0] - 1)]


def _by_length(binding, piece: int) -> tuple[np.ndarray, np.ndarray]:
    """`_words` for every length at once, kept per tokenizer and class: row r of the first
    array holds the members with at most r bytes (up to the longest member), row r of the
    second the tokens whose head has r bytes (the last row empty: longer heads are none). Made
    for one length at a time, each new length of a run cost a pass over the vocabulary inside
    a mask (300-500 us), and a hex digest's run has forty."""
    return binding.vocab.derived(("runs.words", piece), lambda _: _rows(binding, piece))


def _rows(binding, piece: int) -> tuple[np.ndarray, np.ndarray]:
    """`_by_length`, made."""
    counts, _, heads = binding.slices().raw.of_dfa(RUN_CLASSES[piece].dfa)
    size = np.where((counts > 0) & (counts != NOT_MEMBER), counts, 0)
    members = pack((size > 0) & (size <= np.arange(int(size.max()) + 1)[:, None]))
    headed = pack(heads == np.arange(int(heads.max()) + 2)[:, None])
    headed[0] = 0  # a head of no bytes is no head
    return read_only(members), read_only(headed)


def run_entry(binding, key: int, run: Run, scratch: Scratch):
    """The `precompute.FrameEntry` of frame key `key` inside `run` (see the module docstring)."""
    from trgc.engine.framecache import byte_words
    from trgc.engine.precompute import FrameEntry

    members, headed = _words(binding, run.piece, run.length)
    allowed = byte_words(binding)
    accept = members & allowed
    height = run.height
    roots = np.zeros(0, dtype=np.int32)
    if run.end >= 0:
        tails = binding.slices().raw.class_tails(RUN_CLASSES[run.piece])
        tailed = np.zeros_like(accept)
        frame_mode = bool(binding.tables.has_caller[key & STATE_MASK])
        n_open, tail_height = run_walk(binding, (run.end,), tailed, scratch, whole_trie(),
                                       frame_mode, None, tails.trie)  # fmt: skip
        accept |= tailed & headed
        height = max(height, tail_height)
        if n_open:
            nodes = scratch.open_roots[:n_open].copy()
            roots = tails.trie_nodes(nodes, binding.vocab, run.length)
    accept.flags.writeable = False
    roots.flags.writeable = False
    return FrameEntry(accept, roots, height)


def prepare(binding) -> None:
    """Build the tables of every catalogue class over the binding's tokenizer now (a pass
    over the vocabulary, a tail trie and the words by length each: 10-40 ms per class on
    Llama-3, 150-250 ms for all), and those of every default slice (shared by every binding
    whose grammar names no special token spelled with bytes: 100-150 us each), as a server's
    warm-up may; otherwise the first entry that needs one pays for it."""
    tables = binding.slices()
    for c, piece in enumerate(RUN_CLASSES):
        tables.raw.class_tails(piece)
        _by_length(binding, c)
    for k, piece in enumerate(default_slices()):  # the slices' own, for every plain binding
        tables.get(k)
        if piece.tails:
            tables.raw.tails(k)
