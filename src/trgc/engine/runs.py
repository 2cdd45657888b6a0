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
from trgc.engine.config import STATE_MASK, Tables
from trgc.engine.kernel import Scratch, run_walk, whole_trie
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


class _Runs:
    """The runs of one binding's states, each chain's answer kept for every state on it, from
    the states acting as a class does (`_facts`: their class and the state they shift to)."""

    def __init__(self, tables: Tables, longest: int, facts: tuple[np.ndarray, ...]) -> None:
        self.tables = tables
        self.longest = longest
        self.found: dict[int, Run | None] = {}
        _, self.kind, self.succ, inside = facts
        self.inside = inside  # class x symbol: the byte classes of each class

    def step(self, g: int) -> tuple[int, int] | None:
        """(class, next state) when state `g` acts on exactly the bytes of one class, all by
        one shift to the same state, and cannot end its frame; else None."""
        c = int(self.kind[g])
        return None if c < 0 else (c, int(self.succ[g]))

    def of(self, g: int) -> Run | None:
        """The `Run` of state `g`, or None; every state of its chain answered at once."""
        if g in self.found:
            return self.found[g]
        first = self.step(g)
        if first is None:
            self.found[g] = None
            return None
        c, end = first
        chain = [g]
        while len(chain) <= self.longest:
            nxt = self.step(end)
            if nxt is None or nxt[0] != c:
                break
            chain.append(end)
            end = nxt[1]
        tables = self.tables
        if len(chain) > self.longest:  # no token gets past the run: its end is not needed
            # (the other states of the chain are nearer its end than this one shows)
            self.found[g] = Run(
                c, len(chain), -1, int(tables.cost[g]) + int(tables.need_more[chain].max())
            )
            return self.found[g]
        if (tables.next[end][self.inside[c]] != -1).any() or (
            tables.accepting[end] and tables.has_caller[end]
        ):
            for state in chain:  # a token longer than the run may go on: walked
                self.found[state] = None
            return None
        need = tables.need_more
        top = int(need[end])
        for i in range(len(chain) - 1, -1, -1):
            top = max(top, int(need[chain[i]]))
            state = chain[i]
            self.found[state] = Run(c, len(chain) - i, end, int(tables.cost[state]) + top)
        return self.found[g]


def run_states(binding) -> np.ndarray:
    """bool[n_states]: the states in a run whose end is known (`run_of` finds them all; a state
    farther from its run's end than the longest token is only sometimes here), for every
    state at once in one compiled call (`_facts`). A matcher walks none of them inside
    `kernel.cold_mask` (`Matcher._cheap`): their walk bound is small by the trie's measure (62
    first bytes), their walk is not. Asked state by state (`run_of`), the states that look
    like one (a digit after a decimal point, thousands in a corpus) cost 300-600 us per
    artifact in its first mask, and in numpy, 100-400 us."""
    return _facts(binding)[0]


def _facts(binding) -> tuple[np.ndarray, ...]:
    """(`run_states`; per state, the class it acts as (-1: none) and the state it shifts to;
    bool[classes, symbols]: the byte classes of each catalogue class that is a union of
    them, none for the others), made once per binding in one compiled call."""

    def make(b) -> tuple[np.ndarray, ...]:
        t = b.tables
        n_states, n_symbols = t.next.shape
        found = np.zeros(n_states, dtype=np.bool_)
        inside = np.zeros((len(RUN_CLASSES), n_symbols), dtype=np.bool_)
        scratch = np.empty((4, n_states), dtype=np.int64)
        _facts_jitted()(t.next, t.byte_class.astype(np.int64), t.accepting, t.is_repeat,
                        t.has_caller, _ALLOWED, inside, scratch, found)  # fmt: skip
        out = (found, scratch[0].copy(), scratch[1].copy(), inside)
        for a in out:
            a.flags.writeable = False
        return out

    return binding.derived("runs.facts", make)


def _find_runs(next_, byte_class, accepting, is_repeat, has_caller, allowed, inside, scratch,
               found):  # fmt: skip
    """`_facts`, compiled: per catalogue class its byte classes (`inside`, left empty when a
    byte outside the class shares one); per state the first class whose byte classes are
    exactly those it acts on, all by one shift to one state (`_Runs.step`'s test), and that
    state (`scratch[0]`, `scratch[1]`); each chain's last state by pointer doubling
    (`scratch[2]`, `scratch[3]`); a run (`found`) where the state after the last takes no
    byte of the class and cannot return to a caller that might."""
    n_states, n_symbols = next_.shape
    n_classes = allowed.shape[0]
    outside = np.zeros((n_classes, n_symbols), dtype=np.bool_)
    for c in range(n_classes):
        for b in range(256):
            if allowed[c, b]:
                inside[c, byte_class[b]] = True
            else:
                outside[c, byte_class[b]] = True
        for s in range(n_symbols):
            if inside[c, s] and outside[c, s]:
                inside[c, :] = False
                break
    size = np.zeros(n_classes, dtype=np.int64)  # byte classes of each class
    for c in range(n_classes):
        for s in range(n_symbols):
            size[c] += inside[c, s]
    kind, succ, last, nxt = scratch[0], scratch[1], scratch[2], scratch[3]
    for g in range(n_states):
        kind[g] = -1
        succ[g] = g
        if accepting[g] or is_repeat[g]:
            continue
        n_acts = 0
        for s in range(n_symbols):
            n_acts += next_[g, s] != -1
        for c in range(n_classes):
            if size[c] != n_acts or n_acts == 0:
                continue
            target = -2
            for s in range(n_symbols):
                acts = next_[g, s] != -1
                if acts != inside[c, s]:
                    target = -2
                    break
                if acts:
                    if target == -2:
                        target = next_[g, s]
                    elif next_[g, s] != target:
                        target = -2
                        break
            if target >= 0:
                kind[g] = c
                succ[g] = target
                break
    for g in range(n_states):
        last[g] = succ[g] if kind[g] >= 0 and kind[succ[g]] == kind[g] else g
    steps = 1
    while steps < 2 * n_states:
        for g in range(n_states):
            nxt[g] = last[last[g]]
        for g in range(n_states):
            last[g] = nxt[g]
        steps *= 2
    for g in range(n_states):
        found[g] = False
        if kind[g] < 0 or last[last[g]] != last[g]:  # a chain that cycles ends nowhere
            continue
        end = succ[last[g]]
        if accepting[end] and has_caller[end]:
            continue
        ok = True
        for s in range(n_symbols):
            if inside[kind[g], s] and next_[end, s] != -1:
                ok = False
                break
        found[g] = ok


@functools.cache
def _facts_jitted():
    from numba import njit

    return njit(cache=True, nogil=True)(_find_runs)


def run_of(binding, key: int) -> Run | None:
    """The `Run` of frame key `key` in `binding` (None for a counted frame or a state outside
    a run)."""
    if key > STATE_MASK:
        return None
    return _runs(binding).of(key)


def _runs(binding) -> _Runs:
    """The binding's `_Runs`, made on first use."""
    return binding.derived("runs", lambda b: _Runs(b.tables, b.trie_depth, _facts(b)))


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
    kept = binding.vocab._lazy.setdefault("runs.words", {})
    found = kept.get(piece)
    if found is None:
        counts, _, heads = binding.slices().raw.of_dfa(RUN_CLASSES[piece].dfa)
        size = np.where((counts > 0) & (counts != NOT_MEMBER), counts, 0)
        lengths = np.arange(int(size.max()) + 1)[:, None]
        members = pack((size > 0) & (size <= lengths))
        headed = pack(heads == np.arange(int(heads.max()) + 2)[:, None])
        headed[0] = 0  # a head of no bytes is no head
        for a in (members, headed):
            a.flags.writeable = False
        found = kept.setdefault(piece, (members, headed))
    return found


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
