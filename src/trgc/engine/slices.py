"""Token slices: fixed sets of tokens a state can accept wholesale, so the walk skips them.

A slice is a small byte automaton over complete UTF-8 characters (llguidance's idea of
"slices", e.g. JSON string bodies `[^"\\\\\\x00-\\x1F\\x7F]+`) with an optional bound on the
number of characters. For a binding we know, per slice, which tokens are members and, per
trie node, whether *every* token in its subtree is a member (`whole[node]`). A member token
spells a prefix of a slice string: whole characters, the last one possibly cut (byte-level
vocabularies hold thousands of tokens ending inside a character), which counts as one.

If every slice string is consumed by the top frame by shifts (and restarts of its own
counted repetition) alone (`is_safe`, a product of the slice automaton with the frame's
machine, which visits the states inside characters too), so is every prefix of one, and all
member tokens are allowed from it whatever the stack: a frame walk can skip every subtree
whose tokens are all members. Inside a JSON string the walk visits ~12k of Llama-3's 275k
nodes; the tokens that are not members are walked by their tails (`trgc.engine.tails`).
"""

from __future__ import annotations

import functools
import threading
import weakref
from dataclasses import dataclass, field

import numpy as np

from trgc.engine.cancel import cancellation_checkpoint
from trgc.engine.config import Tables, unclip


@dataclass(frozen=True, eq=False)
class Slice:
    name: str
    dfa: np.ndarray  # int8[n, 256]: slice state x byte -> slice state, -1 none; 0 = char boundary
    max_chars: int  # 0 = unbounded
    tails: bool = False  # walk its non-members by their tails (`trgc.engine.tails`)

    @functools.cached_property
    def rows(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """Per slice state: the bytes it allows and the slice states they lead to."""
        out = []
        for row in self.dfa:
            byte_values = np.flatnonzero(row >= 0)
            out.append((byte_values, row[byte_values].astype(np.int64)))
        return tuple(out)


def _utf8_dfa(excluded: bytes) -> np.ndarray:
    """UTF-8 scalar values (no surrogates, no overlongs) minus the ASCII bytes `excluded`."""
    dfa = np.full((8, 256), -1, dtype=np.int8)
    for b in range(0x80):
        if b not in excluded:
            dfa[0, b] = 0
    dfa[0, 0xC2:0xE0] = 1
    dfa[0, 0xE0] = 3
    dfa[0, 0xE1:0xED] = 2
    dfa[0, 0xED] = 4
    dfa[0, 0xEE:0xF0] = 2
    dfa[0, 0xF0] = 6
    dfa[0, 0xF1:0xF4] = 5
    dfa[0, 0xF4] = 7
    dfa[1, 0x80:0xC0] = 0
    dfa[2, 0x80:0xC0] = 1
    dfa[3, 0xA0:0xC0] = 1
    dfa[4, 0x80:0xA0] = 1
    dfa[5, 0x80:0xC0] = 2
    dfa[6, 0x90:0xC0] = 2
    dfa[7, 0x80:0x90] = 2
    return dfa


def _without_line_separators(dfa: np.ndarray) -> np.ndarray:
    """`dfa` (from `_utf8_dfa`) without U+2028 and U+2029 (E2 80 A8, E2 80 A9), the two
    non-ASCII characters a regex `.` does not match (ECMA-262 line terminators): E2 gets a
    state of its own (8), whose 80 leads to a last byte that is not A8 or A9 (9)."""
    out = np.full((10, 256), -1, dtype=np.int8)
    out[:8] = dfa
    out[0, 0xE2] = 8
    out[8, 0x80:0xC0] = 1
    out[8, 0x80] = 9
    out[9, 0x80:0xC0] = 0
    out[9, 0xA8:0xAA] = -1
    return out


def _whitespace_dfa() -> np.ndarray:
    dfa = np.full((8, 256), -1, dtype=np.int8)
    dfa[0, [0x20, 0x0A, 0x0D, 0x09]] = 0
    return dfa


def ascii_dfa(allowed: bytes) -> np.ndarray:
    """A one-state slice automaton over the ASCII bytes `allowed` (each a character)."""
    dfa = np.full((1, 256), -1, dtype=np.int8)
    dfa[0, list(allowed)] = 0
    dfa.flags.writeable = False
    return dfa


_WORD_BYTES = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"


@functools.cache
def default_slices() -> tuple[Slice, ...]:
    """String bodies (unbounded, then at most 30 and 10 characters), JSON whitespace,
    string bodies without U+2028 and U+2029, and regex words (`\\w`), in the order they are
    tried. String-dot is for strings constrained by a regex `.` (`pattern: "^.+$"`,
    `patternProperties: {"^.*$": ...}`), which matches neither: the string slice is not safe
    there, and without a slice the walk of such a state spans the trie (1.5-2 ms on Llama-3
    instead of 0.2 ms). Word is for identifiers (`^[a-zA-Z0-9_]+$`, `^[\\w]+:[\\w]+$`): a
    state looping on word characters walked every trie node spelling them (500-1000 us on
    Llama-3, the slowest live masks after class runs, `trgc.engine.runs`)."""
    text = _utf8_dfa(b'"\\' + bytes(range(0x20)) + b"\x7f")
    return (
        Slice("string", text, 0, tails=True),
        Slice("string{1,30}", text, 30),
        Slice("string{1,10}", text, 10),
        Slice("whitespace", _whitespace_dfa(), 0),
        Slice("string-dot", _without_line_separators(text), 0, tails=True),
        Slice("word", ascii_dfa(_WORD_BYTES), 0, tails=True),
    )


STRING, STRING_DOT, WORD = 0, 4, 5  # `default_slices()` indices of the slices walked by tails
NOT_MEMBER = np.iinfo(np.int32).max


def _counts(offsets, data, dfa, has_bytes, out, heads):
    """Characters of each token that spells a prefix of a string of slice characters (the
    last one may be cut: a byte-level token often ends inside a character), a cut one
    counting as one; NOT_MEMBER otherwise, 0 for tokens without bytes (neutral: they are not
    in the trie). `heads`: for a token that is not a member, the bytes of its longest
    beginning made of whole slice characters (its *head*, `trgc.engine.tails`), else 0."""
    for t in range(offsets.shape[0] - 1):
        out[t] = 0
        heads[t] = 0
        if not has_bytes[t]:
            continue
        state = 0
        chars = 0
        for p in range(offsets[t], offsets[t + 1]):
            state = dfa[state, data[p]]
            if state < 0:
                break
            if state == 0:
                chars += 1
                heads[t] = p + 1 - offsets[t]
        if state >= 0:
            out[t] = chars + (state != 0)
            heads[t] = 0
        else:
            out[t] = NOT_MEMBER


def _subtree_max(counts, token_start, token_ids, parent, out):
    """Per trie node, the largest count of a token in its subtree."""
    n = out.shape[0]
    for i in range(n):
        best = 0
        for j in range(token_start[i], token_start[i + 1]):
            best = max(best, counts[token_ids[j]])
        out[i] = best
    for i in range(n - 1, 0, -1):
        if out[i] > out[parent[i]]:
            out[parent[i]] = out[i]


@functools.cache
def _jitted():
    from numba import njit

    return njit(cache=True, nogil=True)(_counts), njit(cache=True, nogil=True)(_subtree_max)


@dataclass(frozen=True, eq=False)
class RawSlices:
    """The tokenizer-level part, valid for every artifact bound to the tokenizer, each slice
    automaton's built on first use (one pass over token bytes and one over trie nodes; the
    bounded string slices share the unbounded one's): each token's character count
    (`NOT_MEMBER` if it is not a member), per trie node the largest count in its subtree, and
    an unbounded slice's tails (`trgc.engine.tails`). Every token of the trie counts
    (`has_bytes`), so nothing here depends on the artifact."""

    vocab: object  # the tokenizer's `VocabTables`
    _by_dfa: dict = field(default_factory=dict, repr=False)
    _tails: dict = field(default_factory=dict, repr=False)

    def counts(self, k: int) -> np.ndarray:
        """int32[V]: characters of each token if it spells slice `k`'s characters only."""
        return self.of_dfa(default_slices()[k].dfa)[0]

    def submax(self, k: int) -> np.ndarray:
        """int32[n_nodes]: the largest `counts(k)` in each trie node's subtree."""
        return self.of_dfa(default_slices()[k].dfa)[1]

    def of_dfa(self, dfa: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(counts, submax, heads) of a slice automaton (one of `default_slices` or of
        `trgc.engine.runs`: module-level, so its identity is stable)."""
        found = self._by_dfa.get(id(dfa))
        if found is None:
            cancellation_checkpoint()
            vocab = self.vocab
            counts_fn, subtree_fn = _jitted()
            counts = np.empty(vocab.vocab_size, dtype=np.int32)
            heads = np.empty(vocab.vocab_size, dtype=np.int32)
            counts_fn(vocab.offsets, vocab.data, dfa, vocab.has_bytes, counts, heads)
            submax = np.empty(vocab.node_byte.shape[0], dtype=np.int32)
            subtree_fn(counts, vocab.token_start, vocab.token_ids, vocab.parent, submax)
            found = self._by_dfa.setdefault(id(dfa), (counts, submax, heads))
        return found

    def tails(self, k: int):
        """The `trgc.engine.tails.Tails` of slice `k`, an unbounded one."""
        return self.class_tails(default_slices()[k])

    def class_tails(self, piece: Slice):
        """The `trgc.engine.tails.Tails` of an unbounded slice (one of `default_slices` or a
        class of `trgc.engine.runs`), by name."""
        found = self._tails.get(piece.name)
        if found is None:
            from trgc.engine.tails import build_tails

            counts, _, heads = self.of_dfa(piece.dfa)
            found = self._tails.setdefault(
                piece.name, build_tails(self.vocab, counts != NOT_MEMBER, heads)
            )
        return found


@dataclass(frozen=True, eq=False)
class SliceTables:
    """The slice tables of one binding, each slice specialised on first use.

    Tokens the binding does not match by bytes (a named special, EOS) are never members; a
    subtree flagged whole may still hold such a token, which is right: skipping it leaves it
    unset, exactly as the walk would.
    """

    raw: RawSlices
    byte_token: np.ndarray
    _done: dict = field(default_factory=dict, repr=False)

    @property
    def slices(self) -> tuple[Slice, ...]:
        return default_slices()

    def get(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(member bool[V], member words uint32[n_words], whole bool[n_nodes]) of slice `k`."""
        from trgc.engine.bits import pack

        found = self._done.get(k)
        if found is None:
            limit = self.slices[k].max_chars or NOT_MEMBER - 1
            member = self.byte_token & (self.raw.counts(k) <= limit)
            found = self._done[k] = (member, pack(member), self.raw.submax(k) <= limit)
        return found


def build_raw(vocab) -> RawSlices:
    """The `RawSlices` of a tokenizer's `VocabTables` (its tables built as slices are used)."""
    return RawSlices(vocab)


def specialise(raw: RawSlices, byte_token: np.ndarray) -> SliceTables:
    """The slice tables of one binding (see `SliceTables`)."""
    return SliceTables(raw, byte_token)


FAIL = -1  # `_search`: not safe


# per artifact tables: id(slice automaton) -> its `_Product` with them
_MOVES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Product:
    """A slice automaton with one artifact's tables: its `moves` over their byte classes, the
    classes its members' first bytes fall in (`first_call` reads a state's actions on them),
    and `_reach_need`'s answers (`_Pairs`) once the unbounded search is first asked for."""

    __slots__ = ("dfa", "moves", "first_classes", "pairs")

    def __init__(self, dfa: np.ndarray, moves: tuple[np.ndarray, np.ndarray],
                 first_classes: np.ndarray) -> None:  # fmt: skip
        self.dfa = dfa
        self.moves = moves
        self.first_classes = first_classes
        self.pairs: _Pairs | None = None


def moves(tables: Tables, dfa: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int64[slice states, 256, 2], int64[slice states]): per slice state, its distinct
    (next slice state, byte class) pairs over the bytes it allows, and how many. The product
    searches step those instead of 256 bytes (a member-name automaton with a few dozen names
    took 0.25 ms per search byte by byte); built once per byte classes and automaton, and
    found again by the tables and the automaton's identity (the searches of one state ask
    for them several times: hashing the automaton's bytes for the shared cache each time
    cost more than a search)."""
    return _product(tables, dfa).moves


def _product(tables: Tables, dfa: np.ndarray) -> _Product:
    """The `_Product` of `dfa` with one artifact's tables, made on first use."""
    per_tables = _MOVES.get(tables)
    if per_tables is None:
        per_tables = _MOVES.setdefault(tables, {})
    found = per_tables.get(id(dfa))
    if found is None or found.dfa is not dfa:
        first_classes = tables.byte_class[np.flatnonzero(dfa[0] >= 0)].astype(np.int64)
        found = per_tables[id(dfa)] = _Product(dfa, _moves(tables.byte_class, dfa),
                                               first_classes)  # fmt: skip
    return found


def _moves(byte_class: np.ndarray, dfa: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`moves` of one automaton over one artifact's byte classes (compiled: `_fill_moves`)."""
    n_states = dfa.shape[0]
    out = np.zeros((n_states, 256, 2), dtype=np.int64)
    counts = np.zeros(n_states, dtype=np.int64)
    seen = np.zeros(n_states * 256, dtype=np.bool_)
    # int64 both: uncompiled (`NUMBA_DISABLE_JIT`), int8 and uint8 items would overflow
    _moves_jitted()(dfa.astype(np.int64), byte_class.astype(np.int64), seen, out, counts)
    out.flags.writeable = False
    counts.flags.writeable = False
    return out, counts


def _fill_moves(dfa, byte_class, seen, out, counts):
    """Per slice state, its distinct (next slice state, byte class) pairs in ascending order:
    every allowed pair marked in `seen` (slice state x class, cleared per state), then read
    back in order. A new artifact's byte classes are new: in numpy (a `np.unique` per slice
    state, or a presence array over all of them) this cost 30-130 us per slice and artifact,
    inside the first string state's mask."""
    n_states = dfa.shape[0]
    for ss in range(n_states):
        for b in range(256):
            t = dfa[ss, b]
            if t >= 0:
                seen[t * 256 + byte_class[b]] = True
        k = 0
        for cell in range(n_states * 256):
            if seen[cell]:
                seen[cell] = False
                out[ss, k, 0] = cell // 256
                out[ss, k, 1] = cell % 256
                k += 1
        counts[ss] = k


@functools.cache
def _moves_jitted():
    from numba import njit

    return njit(cache=True, nogil=True)(_fill_moves)


def _unpair(pair, width, n_states):
    """(restarts used, slice state, machine state) of a product pair of `_search` and
    `_boundary`: `(restarts used * slice states + slice state) * n_states + machine state`,
    `width` being `slice states * n_states`."""
    rest = pair % width
    return pair // width, rest // n_states, rest % n_states


@functools.cache
def _helpers() -> None:
    """`_unpair` compiled, inlined where `_search` and `_boundary` call it (a module global,
    as `subset_kernel` does with its helpers): made before either is compiled."""
    from numba import njit

    globals()["_unpair"] = njit(inline="always", cache=True, nogil=True)(_unpair)


def _search(gnext, moves, n_moves, accepting, is_repeat, rep_start, cost, need, max_chars,
            g, left, max_depth):  # fmt: skip
    """`is_safe` over the product automaton (see there); the height, or FAIL. `left < 0`: the
    counter cannot run out within one token. A pair is `(restarts used * slice states + slice
    state) * n_states + machine state`; `moves`, `n_moves`: the slice's (`moves`)."""
    n_states = gnext.shape[0]
    width = n_moves.shape[0] * n_states
    bounded = left >= 0
    height = cost[g] + need[g]
    work = [g]
    if max_chars == 0:
        seen = {g}
        while len(work):
            used, ss, state = _unpair(work.pop(), width, n_states)
            any_restart = False
            for j in range(n_moves[ss]):
                nss = moves[ss, j, 0]
                sym = moves[ss, j, 1]
                a = np.int64(gnext[state, sym])
                restarted = 0
                if a < 0:
                    if not (is_repeat[state] and accepting[state]):
                        return FAIL
                    if a == -1:
                        restarted = 1
                        any_restart = True
                        a = np.int64(gnext[rep_start[state], sym])
                    if a < 0:
                        return FAIL
                height = max(height, cost[g] + need[a])
                more = used + restarted if bounded else 0
                if more > 0:  # a restart of a bounded counter inside an unbounded slice
                    return FAIL
                nxt = more * width + nss * n_states + a
                if nxt not in seen:
                    seen.add(nxt)
                    work.append(nxt)
            if any_restart and bounded and used + 1 > left:
                return FAIL
        return height if height <= max_depth else FAIL
    boundary = {g}
    previous = {g}
    for rnd in range(max_chars):
        if rnd > 0 and boundary == previous:  # a fixed point: further rounds change nothing
            break
        previous = boundary
        after = {g}  # typed from an element (numba), then emptied
        after.clear()
        work.clear()
        for pair in boundary:
            work.append(pair)
        seen = set(boundary)
        while len(work):
            used, ss, state = _unpair(work.pop(), width, n_states)
            any_restart = False
            for j in range(n_moves[ss]):
                nss = moves[ss, j, 0]
                sym = moves[ss, j, 1]
                a = np.int64(gnext[state, sym])
                restarted = 0
                if a < 0:
                    if not (is_repeat[state] and accepting[state]):
                        return FAIL
                    if a == -1:
                        restarted = 1
                        any_restart = True
                        a = np.int64(gnext[rep_start[state], sym])
                    if a < 0:
                        return FAIL
                height = max(height, cost[g] + need[a])
                more = used + restarted if bounded else 0
                nxt = more * width + nss * n_states + a
                if nss == 0:  # a character boundary
                    after.add(nxt)
                elif nxt not in seen:
                    seen.add(nxt)
                    work.append(nxt)
            if any_restart and bounded and used + 1 > left:
                return FAIL
        boundary = after
    return height if height <= max_depth else FAIL


UNKNOWN = -2  # `_reach_need`: a pair not decided yet


def _reach_need(gnext, moves, n_moves, accepting, is_repeat, rep_start, need, g,
                value, index, low, acc, tarjan, path, path_j):  # fmt: skip
    """The unbounded case of `_search` (no character bound, no counter that can run out
    within a token) for the pair (slice state 0, machine state `g`), memoised over the
    pairs: the largest `need` of a machine state reachable in the product, or FAIL when a
    reachable pair meets a byte it has no move for. Every pair whose answer is found is
    kept in `value` (UNKNOWN until then), so the searches of the states along a string
    body, each reaching most of the pairs the one before reached, cost one search between
    them. A pair's answer is its strongly connected component's (Tarjan's algorithm,
    iterative: `path` is the depth-first path, `tarjan` the component stack); a failure
    fails every pair on the component stack (each reaches the path, which reaches it).
    `index`: -1 between calls; `low`, `acc`: scratch."""
    n_states = gnext.shape[0]
    if value[g] != UNKNOWN:
        return value[g]
    counter = 0
    top = 0  # pairs on `tarjan`
    depth = 0  # pairs on `path`
    pending, pending_need = g, need[g]  # the pair to enter next (-1: none), its state's need
    failed = False
    while True:
        if pending >= 0:
            index[pending] = counter
            low[pending] = counter
            counter += 1
            acc[pending] = pending_need
            tarjan[top] = pending
            top += 1
            path[depth] = pending
            path_j[depth] = 0
            depth += 1
            pending = -1
        if depth == 0:
            break
        pair = path[depth - 1]
        j = path_j[depth - 1]
        ss = pair // n_states
        state = pair % n_states
        if j < n_moves[ss]:
            path_j[depth - 1] = j + 1
            sym = moves[ss, j, 1]
            a = np.int64(gnext[state, sym])
            if a < 0:
                if is_repeat[state] and accepting[state] and a == -1:
                    a = np.int64(gnext[rep_start[state], sym])
                if a < 0:
                    failed = True
                    break
            nxt = moves[ss, j, 0] * n_states + a
            known = value[nxt]
            if known == FAIL:
                failed = True
                break
            if known != UNKNOWN:
                acc[pair] = max(acc[pair], known)
            elif index[nxt] < 0:
                pending, pending_need = nxt, need[a]
            else:  # on the component stack: a pair whose answer is not known yet
                low[pair] = min(low[pair], index[nxt])
            continue
        depth -= 1
        if low[pair] == index[pair]:  # the root of a component: every pair above it
            # the root's `acc` has every pair below it in the search tree, so the whole
            # component and every component it reaches
            member = -1
            while member != pair:
                top -= 1
                member = tarjan[top]
                value[member] = acc[pair]
                index[member] = -1
        if depth > 0:
            parent = path[depth - 1]
            low[parent] = min(low[parent], low[pair])
            acc[parent] = max(acc[parent], acc[pair])
    if failed:  # every pair on the component stack reaches a pair on the path, which fails
        for i in range(top):
            value[tarjan[i]] = FAIL
            index[tarjan[i]] = -1
    return value[g]


@functools.cache
def _search_jitted():
    from numba import njit

    _helpers()
    return njit(cache=True, nogil=True)(_search)


@functools.cache
def _reach_need_jitted():
    from numba import njit

    return njit(cache=True, nogil=True)(_reach_need)


class _Pairs:
    """`_reach_need`'s answers for one artifact's tables and one slice automaton (int32 per
    product pair). Matchers of one artifact share them, also from the threads of a batch
    fill: one search at a time."""

    def __init__(self, n_pairs: int) -> None:
        self.lock = threading.Lock()
        self.value = np.full(n_pairs, UNKNOWN, dtype=np.int32)


_search_scratch = threading.local()


def _pair_scratch(n_pairs: int) -> tuple[np.ndarray, ...]:
    """The search's scratch (index, low, acc, component stack, path, path moves: int32 per
    pair, `index` -1 between searches), one per thread, grown as needed: kept per artifact,
    six arrays of a few hundred kilobytes were touched for the first time in the first string
    state's mask, which cost more than the searches they saved."""
    found = getattr(_search_scratch, "arrays", None)
    if found is None or found[0].shape[0] < n_pairs:
        size = max(n_pairs, 1024)
        found = (np.full(size, -1, dtype=np.int32),
                 *(np.empty(size, dtype=np.int32) for _ in range(5)))  # fmt: skip
        _search_scratch.arrays = found
    return found


SEVERAL = -1  # `_boundary`: member strings end in different places (or leave the machine)


def _boundary(gnext, moves, n_moves, accepting, is_repeat, rep_start, g, needed):
    """Where every non-empty member string of a slice (its `slices.moves`) takes a frame at
    state `g` by shifts and restarts of its own counted repetition: `state * (needed + 1) +
    restarts` (restarts counted up to `needed`, all that the frame's counters show of them
    when it has iterations enough), or SEVERAL, as soon as two differ. A pair is `(restarts
    * slice states + slice state) * n_states + state`."""
    n_states = gnext.shape[0]
    width = n_moves.shape[0] * n_states
    found = SEVERAL
    seen = {g}
    work = [g]
    while len(work):
        used, ss, state = _unpair(work.pop(), width, n_states)
        for j in range(n_moves[ss]):
            nss = moves[ss, j, 0]
            sym = moves[ss, j, 1]
            a = np.int64(gnext[state, sym])
            more = used
            if a == -1 and is_repeat[state] and accepting[state]:
                a = np.int64(gnext[rep_start[state], sym])
                more = min(used + 1, needed)
            if a < 0:
                return SEVERAL
            if nss == 0:
                code = a * (needed + 1) + more
                if found == SEVERAL:
                    found = code
                elif found != code:
                    return SEVERAL
            nxt = (more * n_moves.shape[0] + nss) * n_states + a
            if nxt not in seen:
                seen.add(nxt)
                work.append(nxt)
    return found


@functools.cache
def boundary_jitted():
    """`_boundary` compiled (`tails.after_members` asks it frame by frame)."""
    from numba import njit

    _helpers()
    return njit(cache=True, nogil=True)(_boundary)


def _first_call(gnext, first_classes, g):
    """`first_call`, compiled: the call state `g` takes on every class in `first_classes`,
    when it is one and the same; else -1."""
    if first_classes.shape[0] == 0:
        return -1
    action = gnext[g, first_classes[0]]
    if action > -2:
        return -1
    for c in first_classes:
        if gnext[g, c] != action:
            return -1
    return -2 - action


@functools.cache
def _first_call_jitted():
    from numba import njit

    return njit(cache=True, nogil=True)(_first_call)


# what `_plain_frames` calls: these searches, compiled by `_plain_frames_jitted`
_reach_need_c, _boundary_c, _first_call_c = _reach_need, _boundary, _first_call


# product pairs above which `_reach_need`'s answers are not kept
PAIRS_KEPT = 1 << 22


def _plain_frames(gnext, moves, n_moves, other_moves, other_n_moves, first_classes, calls,
                  call_entry, longest, accepting, is_repeat, rep_start, need, cost, max_depth,
                  states, value, index, low, acc, tarjan, path, path_j, height, after,
                  other_after, called):  # fmt: skip
    """`plain_frames` compiled: per state of `states`, `is_safe`'s height from `_reach_need`
    (or FAIL); when safe, `_boundary`'s state with nothing needed (or SEVERAL), and when that
    is SEVERAL, the same over the other slice's moves (or SEVERAL). A state that is not safe
    by shifts may be by a call (`is_safe`'s call case: every first byte of a member calls one
    machine, a string body's repeat machine under `minLength`): when that machine's counter
    cannot run out within a token and its members end in one state, the call (`called`),
    the height of both frames and `_boundary`'s code in the callee (`after`); FAIL otherwise
    (left to the frame's own search). `_reach_need_c`, `_boundary_c` and `_first_call_c` are
    the compiled functions (`_plain_frames_jitted`)."""
    for i in range(states.shape[0]):
        g = states[i]
        called[i] = -1
        reach = _reach_need_c(gnext, moves, n_moves, accepting, is_repeat, rep_start, need, g,
                              value, index, low, acc, tarjan, path, path_j)  # fmt: skip
        if reach != FAIL and cost[g] + reach <= max_depth:
            height[i] = cost[g] + reach
            after[i] = _boundary_c(gnext, moves, n_moves, accepting, is_repeat, rep_start, g, 0)
            if after[i] == SEVERAL:
                other_after[i] = _boundary_c(gnext, other_moves, other_n_moves, accepting,
                                             is_repeat, rep_start, g, 0)  # fmt: skip
            continue
        height[i] = FAIL
        k = _first_call_c(gnext, first_classes, g)
        if k < 0:
            continue
        callee = calls[k, 0]
        if is_repeat[callee] and call_entry[k, 0] < longest:  # `_search`, bounded
            continue
        inner = _reach_need_c(gnext, moves, n_moves, accepting, is_repeat, rep_start, need,
                              callee, value, index, low, acc, tarjan, path, path_j)  # fmt: skip
        if inner == FAIL or cost[callee] + inner > max_depth:
            continue
        top = max(cost[g] + need[calls[k, 1]], cost[g] + cost[callee] + inner)
        needed = min(call_entry[k, 1], longest + 1)
        code = _boundary_c(gnext, moves, n_moves, accepting, is_repeat, rep_start, callee, needed)
        if top <= max_depth and code != SEVERAL:
            height[i] = top
            after[i] = code
            called[i] = k


@functools.cache
def _plain_frames_jitted():
    from numba import njit

    # module globals the compiled function calls (as `subset_kernel` does with its helpers)
    globals()["_reach_need_c"] = _reach_need_jitted()
    globals()["_boundary_c"] = boundary_jitted()
    globals()["_first_call_c"] = _first_call_jitted()
    return njit(cache=True, nogil=True)(_plain_frames)


def plain_frames(
    tables: Tables, s: Slice, other: Slice, states: np.ndarray, longest: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """For many frames at once (`states`; a counted repetition's taken with at least `longest`
    iterations left and none needed), in one compiled call, four int64 arrays: `is_safe`'s
    height for the unbounded slice `s` when its members are consumed by shifts alone, or by
    one call into a machine whose counter cannot run out within a token (`longest` bytes),
    with one state after every member (FAIL otherwise: not safe, or left to the frame's own
    search); where safe by shifts, the state
    every non-empty member of `s` leads to (`tails.after_members`'s frame; SEVERAL if they
    differ) and, where they differ, the same for the unbounded slice `other` (SEVERAL if they
    differ too, or where not asked); where safe by a call, the call (else -1) and, in place of
    the state, `_boundary`'s code of the member's end in the callee. None when the product is
    too large for `_reach_need` to keep its answers (`PAIRS_KEPT`).

    `precompute.slice_plan` asks this for every such state of a binding with its first mask:
    a state at a time, the same searches cost two to four compiled calls and some thirty
    Python calls, 20-40 us per string body's first mask (100-140 us for the call case) and
    100-600 us for an artifact's first (its slice products, pair answers and scratch made
    then), which set the mask p99."""
    product = _product(tables, s.dfa)
    n_pairs = product.moves[1].shape[0] * tables.next.shape[0]
    if s.max_chars or other.max_chars or n_pairs > PAIRS_KEPT:
        return None
    if product.pairs is None:
        product.pairs = _Pairs(n_pairs)
    pairs = product.pairs
    n = states.shape[0]
    height = np.empty(n, dtype=np.int64)
    after = np.full(n, -1, dtype=np.int64)
    other_after = np.full(n, -1, dtype=np.int64)
    called = np.empty(n, dtype=np.int64)
    with pairs.lock:
        _plain_frames_jitted()(
            tables.next, *product.moves, *_product(tables, other.dfa).moves,
            product.first_classes, tables.calls.astype(np.int64),
            tables.call_entry, longest, tables.accepting, tables.is_repeat, tables.rep_start,
            tables.need_more, tables.cost, tables.max_depth, states.astype(np.int64),
            pairs.value, *_pair_scratch(n_pairs), height, after, other_after, called,
        )  # fmt: skip
    return height, after, other_after, called


def candidates(tables: Tables) -> np.ndarray:
    """bool[n_slices, n_states]: states `is_safe` may accept for each default slice. A member's
    first byte must never find no action at the state (unless it restarts a counted
    repetition there), a necessary condition of both of `is_safe`'s cases, checked for every
    state at once so that most states skip the search."""
    may_restart = tables.is_repeat & tables.accepting
    firsts = np.zeros((tables.n_classes, len(default_slices())), dtype=np.float32)
    for k, s in enumerate(default_slices()):
        firsts[tables.byte_class[s.dfa[0] >= 0], k] = 1
    # per state and slice: the first bytes' classes the state has no action on, in one float
    # product (BLAS; counts of at most 256 are exact): a fancy index per slice cost 0.2-1.5 ms
    # per artifact, on the way to its first mask
    missing = (tables.next[:, : tables.n_classes] == -1).astype(np.float32) @ firsts
    return (missing == 0).T | may_restart


def is_safe(tables: Tables, key: int, s: Slice, longest: int) -> int | None:
    """Does the top frame with frame key `key` consume every member of `s`, by shifts and
    restarts of its own counted repetition alone, or by one call into a machine that consumes
    them so (no other call, no return, no death)? Then the height its members need (as the
    kernel counts heights: the largest `rule frames up to a frame + its completion need` over
    the frames a member rewrites or pushes), else None.

    Search over (slice state, machine state, restarts used) of the product automaton, a
    restart being allowed while the frame has iterations left: unbounded slices need every
    reachable pair to move on every byte the slice allows (and, for a counter that can run
    out, no restart at all); bounded ones expand the pairs at character boundaries `max_chars`
    times (or until the boundary set stops changing). Members are tokens, at most `longest`
    bytes, and a restart consumes a byte, so `longest` iterations left is as good as
    unlimited. The call case is a string body compiled as a counted repetition
    (`minLength: 1`): every byte a member can start with makes the frame call one repeat
    machine, which then consumes the member; the frame below becomes the call's return state.
    The search is compiled (`_search`): it runs for every state whose frame entry is computed,
    and in Python it cost as much as the trie walk. The unbounded case with no counter that
    can run out is `_reach_need`, which keeps every pair's answer per artifact and slice: the
    states along a string body each searched most of the pairs the one before had (60-70 us
    each in a member-name automaton), now one search between them.
    """
    g, left, _ = unclip(key)
    found = _search_from(tables, g, left if tables.is_repeat[g] else longest, s, longest)
    if found is not None:
        return found
    k = first_call(tables, g, s.dfa)
    if k is None:
        return None
    callee, ret = (int(v) for v in tables.calls[k])
    inner_left = int(min(tables.call_entry[k, 0], longest)) if tables.is_repeat[callee] else longest
    inner = _search_from(tables, callee, inner_left, s, longest)
    if inner is None:
        return None
    below = int(tables.cost[g])  # the return state's frame: rule frames up to it
    height = max(below + int(tables.need_more[ret]), below + inner)
    return height if height <= tables.max_depth else None


def first_call(tables: Tables, g: int, dfa: np.ndarray) -> int | None:
    """The call edge state `g` takes on every byte a member of the slice automaton `dfa` can
    start with, when it is one and the same (a string body with `minLength`: the frame calls
    its repeat machine); else None."""
    k = _first_call_jitted()(tables.next, _product(tables, dfa).first_classes, g)
    return None if k < 0 else int(k)


def _search_from(tables: Tables, g: int, left: int, s: Slice, longest: int) -> int | None:
    """`_search` from a frame at state `g` with `left` iterations left (`>= longest`:
    unlimited within one token); None when not safe. A frame's completion need is read as
    `need_more`, the larger of its two needs (a repeat frame may still need iterations)."""
    product = _product(tables, s.dfa)
    n_pairs = product.moves[1].shape[0] * tables.next.shape[0]
    if s.max_chars or left < longest or n_pairs > PAIRS_KEPT:
        found = _search_jitted()(
            tables.next, *product.moves, tables.accepting, tables.is_repeat,
            tables.rep_start, tables.cost, tables.need_more, s.max_chars, g,
            -1 if left >= longest else left, tables.max_depth,
        )  # fmt: skip
        return None if found == FAIL else int(found)
    if product.pairs is None:
        product.pairs = _Pairs(n_pairs)
    pairs = product.pairs
    with pairs.lock:
        reach = _reach_need_jitted()(
            tables.next, *product.moves, tables.accepting, tables.is_repeat, tables.rep_start,
            tables.need_more, g, pairs.value, *_pair_scratch(n_pairs),
        )  # fmt: skip
    height = int(tables.cost[g]) + int(reach)
    return None if reach == FAIL or height > tables.max_depth else height
