"""Masks per top frame (`FrameEntry`, `FrameMasks`) and precomputing them for every frame.

For each top frame `f` (a state of any machine, with its counter clipped as
`trgc.engine.config.frame_key` says) the kernel walks the trie once from the single frame `f`
with its callers unknown (`frame_mode`). Every byte token then falls in one of three sets:
  * accepted without leaving the frame (context-independent, given enough stack room: the
    walk records the highest stack `height` any accepted token reaches);
  * rejected without leaving the frame (context-independent: dead whatever lies below);
  * open: its path reaches a byte that returns out of the frame. Such tokens form whole trie
    subtrees; their roots are kept and walked at run time from the live stack.
The mask at a live configuration `c` with top `f` and `B` rule frames below it is then
`accept[f] | walk(open_roots[f], c)` whenever `B + height[f] <= max_depth` (else the matcher
falls back to a full walk). A machine nobody calls is always the bottom frame, so its states
have no open roots: for a regular grammar `accept[f]` is the whole mask. This is the idea of
XGrammar's adaptive token-mask cache (context-independent tokens precomputed per state,
context-dependent ones checked against the stack), over trie subtrees.

States that no string of at most `L` bytes can tell apart (`L` = the longest token) have the
same `FrameEntry` for the same clipped counter, so `precompute` walks the trie once per class
of `suffix_classes` (bounded Moore refinement) and clipped counter.

`FrameMasks` stores accept sets content-addressed (`accept_id[e]` into one table of distinct
bitsets); entries are ordered by state, then by counter, and open roots are a CSR list of
trie nodes per entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from trgc.artifact.model import UNLIMITED, Artifact
from trgc.engine.binding import Binding, bind
from trgc.engine.cache import MaskCache
from trgc.engine.cancel import cancellation_checkpoint
from trgc.engine.config import (
    STATE_MASK,
    Config,
    Tables,
    depth,
    is_viable,
    mask_key,
    unclip,
)
from trgc.engine.kernel import Scratch, run_walk, walk_trie, whole_trie
from trgc.engine.runs import run_entry, run_of
from trgc.engine.slices import (
    FAIL,
    SEVERAL,
    STRING,
    STRING_DOT,
    WORD,
    candidates,
    default_slices,
    is_safe,
    plain_frames,
)
from trgc.engine.tails import after_members, member_end
from trgc.errors import TrgcError
from trgc.limits import DEFAULT_LIMITS, Limits, check_limit

Progress = Callable[[int, int], None]


@dataclass(eq=False, slots=True)
class FrameEntry:
    """What one top frame decides on its own: accepted words, open subtree roots, height.

    Made for every frame a matcher walks (thousands per document), so a plain slotted class:
    a frozen dataclass's `__init__` (one `object.__setattr__` per field) cost four times as
    much. Nothing changes an entry once made; its arrays are read-only."""

    accept: np.ndarray  # uint32 words (read-only)
    open_roots: np.ndarray  # int32 trie nodes whose subtrees need the live stack
    height: int  # highest stack, in rule frames, that any accepted token reaches
    tails: OpenTails | None = None  # the same roots by their tails (in memory only)

    @property
    def nbytes(self) -> int:
        extra = 0 if self.tails is None else self.tails.nbytes
        return int(self.accept.nbytes + self.open_roots.nbytes + extra)


@dataclass(frozen=True, eq=False)
class OpenTails:
    """An entry walked by its tails whose tail walk found open tail nodes: its open roots are
    `headless` plus, for each of `nodes`, one trie node per token below it (often a thousand
    nodes for a few tails: every token with `"` inside a string body that returns at `"`). A
    live stack walks `nodes` in the tail trie of slice `k` from the frames after a member
    instead (`Matcher._compute`), taken from the binding at hand (`slice_of`), not stored:
    an entry may be shared by residual across artifacts, and its tails with it."""

    k: int  # the slice
    nodes: np.ndarray  # int32 open tail nodes, preorder
    headless: np.ndarray  # int32 open trie nodes of the tokens without a head

    @property
    def nbytes(self) -> int:
        return int(self.nodes.nbytes + self.headless.nbytes)


def frame_entry(binding: Binding, key: int, scratch: Scratch) -> FrameEntry:
    """The `FrameEntry` of a top frame with frame key `key` (`trgc.engine.config.frame_key`
    with the binding's longest token): one frame-mode trie walk, skipping the subtrees of the
    first slice the frame accepts wholesale (`trgc.engine.slices`; their tables are built once
    per tokenizer), or, when a slice with tails fits and every member leads to the same
    frames, its members plus the walks by tails (`_walk_tails`)."""
    run = run_of(binding, key)
    if run is not None:
        return run_entry(binding, key, run, scratch)
    g = key & STATE_MASK
    frame_mode = bool(binding.tables.has_caller[g])
    k, slice_height, after = slice_of(binding, key)
    if k is None:
        accept = np.zeros(binding.n_words, dtype=np.uint32)
        skip = None
        slice_height = int(binding.tables.cost[g])
    else:
        _, words, skip = binding.slices().get(k)  # built on the first safe state only
        accept = words.copy()
    open_tails = None
    if after is None:
        n_open, height = run_walk(binding, (key,), accept, scratch, whole_trie(), frame_mode, skip)
        roots = scratch.open_roots[:n_open].copy()
    else:
        roots, height, open_tails = _walk_tails(binding, key, after, k, accept, scratch,
                                                frame_mode)  # fmt: skip
    height = max(height, slice_height)
    accept.flags.writeable = False
    return FrameEntry(accept, roots, height, open_tails)


def slice_of(binding: Binding, key: int) -> tuple[int | None, int, tuple | None]:
    """`_slice_of`, memoised per binding and frame key (`framecache.cheap` asks it too)."""
    memo = binding._lazy.setdefault("slice_of", {})
    found = memo.get(key)
    if found is None:
        found = memo[key] = _slice_of(binding, key)
    return found


def _slice_of(binding: Binding, key: int) -> tuple[int | None, int, tuple | None]:
    """(the slice the frame `key` uses, its height, the frames after a member when its tails
    are walked): the first slice `is_safe` accepts, unless string-dot is safe too and its
    members all lead to the same frames (`after_members`) while the first's do not
    (under the unanchored `pattern: ".+"`, a string with one character other than U+2028
    and U+2029: those two leave the frame where it was, any other moves it on, so the string
    slice's members end in two states; the string-dot slice leaves those two to the tails).
    Most frames without counters, and counted ones with iterations enough and nothing
    needed, are answered by the binding's `slice_plan`, the others searched now
    (`_searched_slice`)."""
    found = slice_plan(binding).get(key)
    return found if found is not None else _searched_slice(binding, key)


def slice_candidates(binding: Binding) -> np.ndarray:
    """`slices.candidates` of the binding's tables, made once."""
    return binding.derived("slice_candidates", lambda b: candidates(b.tables))


def slice_plan(binding: Binding) -> dict[int, tuple[int, int, tuple | None]]:
    """`_slice_of`'s answer, by frame key, for every frame that `slices.plain_frames`
    decides (a string body, a member name that other names share a prefix with, the start of
    a string body under `minLength`; a counted one with at least the longest token's
    iterations left and none needed: a string body after its first character), all made in
    one compiled call; the rest are searched a frame at a time. A matcher makes it with its
    first mask: made with a string body's first mask instead, it (or the searches it
    replaces, with the slice products and pair answers they build) cost 100-600 us there,
    once per artifact, which set the mask p99."""
    return binding.derived("slice_plan", _plan)


def _plan(binding: Binding) -> dict[int, tuple[int, int, tuple | None]]:
    """`slice_plan`, made: the string slice's frames (`_string_plan`), then the word slice's
    (`_word_plan`)."""
    maybe = slice_candidates(binding)
    return {**_string_plan(binding, maybe), **_word_plan(binding, maybe)}


def _string_plan(binding: Binding, maybe: np.ndarray) -> dict[int, tuple[int, int, tuple | None]]:
    """The string slice decides a frame when it is safe there by shifts and its members end
    in one state (walked by tails), or end in several while the string-dot slice's do too or
    cannot fit (the string slice then, without tails); or when it is safe by a call into a
    string body's repeat machine whose counter cannot run out within a token, its members
    ending in one state there (walked by tails from the return state and that state)."""
    tables, longest = binding.tables, binding.trie_depth
    states = np.flatnonzero(maybe[STRING])
    if not states.size:
        return {}
    pieces = default_slices()
    decided = plain_frames(tables, pieces[STRING], pieces[STRING_DOT], states, longest)
    if decided is None:
        return {}
    plan: dict[int, tuple[int, int, tuple | None]] = {}
    unlimited = longest << 32  # a counted frame's key: `longest` iterations left, none needed
    for g, height, after, dot_after, call in zip(states.tolist(), *(a.tolist() for a in decided),
                                                 strict=True):  # fmt: skip
        if height == FAIL:
            continue
        key = g | unlimited if tables.is_repeat[g] else g
        if call >= 0:  # into the repeat machine of a string body under `minLength`
            needed = min(int(tables.call_entry[call, 1]), longest + 1)
            end = member_end(tables, after, needed, longest)
            plan[key] = (STRING, height, (int(tables.calls[call, 1]) | (key - g), end))
        elif after != SEVERAL:
            plan[key] = (STRING, height, (member_end(tables, after, 0, longest),))
        elif dot_after == SEVERAL or not maybe[STRING_DOT, g]:
            plan[key] = (STRING, height, None)
    return plan


def _word_plan(binding: Binding, maybe: np.ndarray) -> dict[int, tuple[int, int, tuple | None]]:
    """The frames the word slice decides where no slice before it may fit (an identifier's
    loop, `^[a-zA-Z0-9_]+$`), in one more compiled call: safe by shifts, with tails when its
    members end in one state. Searched a frame at a time, each cost 60-100 us in its first
    mask."""
    tables, longest = binding.tables, binding.trie_depth
    states = np.flatnonzero(maybe[WORD] & ~maybe[:WORD].any(axis=0))
    word = default_slices()[WORD]
    decided = plain_frames(tables, word, word, states, longest) if states.size else None
    if decided is None:
        return {}
    plan: dict[int, tuple[int, int, tuple | None]] = {}
    unlimited = longest << 32
    for g, height, after, _, call in zip(states.tolist(), *(a.tolist() for a in decided),
                                         strict=True):  # fmt: skip
        if height == FAIL or call >= 0:
            continue  # not safe, or safe by a call: searched
        key = g | unlimited if tables.is_repeat[g] else g
        ends = None if after == SEVERAL else (member_end(tables, after, 0, longest),)
        plan[key] = (WORD, height, ends)
    return plan


def _searched_slice(binding: Binding, key: int) -> tuple[int | None, int, tuple | None]:
    """`_slice_of` by the searches of `is_safe` and `after_members` for this frame alone (the
    reference `slice_plan` is tested against)."""
    tables, longest = binding.tables, binding.trie_depth
    maybe = slice_candidates(binding)
    g = key & STATE_MASK
    first = None
    for k, piece in enumerate(default_slices()):
        if not maybe[k, g] or (first is not None and k != STRING_DOT):
            continue
        if first is None:
            safe = is_safe(tables, key, piece, longest)
            if safe is None:
                continue
            after = after_members(tables, key, piece.dfa, longest) if piece.tails else None
            if after is not None:
                return k, safe, after
            first = (k, safe, None)
            continue
        # a later slice with tails: its members' frames first (the search stops at the
        # first two that differ, cheap where the safety search is not: member names)
        after = after_members(tables, key, piece.dfa, longest)
        safe = None if after is None else is_safe(tables, key, piece, longest)
        if safe is not None:
            return k, safe, after
    return first if first is not None else (None, 0, None)


def _walk_tails(binding: Binding, key: int, after: tuple, k: int, accept: np.ndarray,
                scratch: Scratch, frame_mode: bool) -> tuple[np.ndarray, int, OpenTails | None]:  # fmt: skip
    """The rest of a slice-safe frame's entry by the tails of slice `k` (`trgc.engine.tails`):
    the tokens without a head walked from the frame (every subtree without one skipped), those
    with one by their tails from the frames `after` a member; (open roots, height, the open
    tails when there are any)."""
    tails = binding.slices().raw.tails(k)
    n_open, height = run_walk(binding, (key,), accept, scratch, tails.headless_roots,
                              frame_mode, tails.skip)  # fmt: skip
    headless = scratch.open_roots[:n_open].copy()
    n_open, tail_height = run_walk(binding, after, accept, scratch, whole_trie(), frame_mode,
                                   None, tails.trie)  # fmt: skip
    height = max(height, tail_height)
    if not n_open:
        return headless, height, None
    nodes = scratch.open_roots[:n_open].copy()
    tailed = tails.trie_nodes(nodes, binding.vocab)
    # disjoint: a headless root starts with `"` or `\\`, a tailed one with a member character
    roots = np.sort(np.concatenate((headless, tailed)))
    for a in (nodes, headless, roots):
        a.flags.writeable = False
    return roots, height, OpenTails(k, nodes, headless)


def combine(
    binding: Binding, entry: FrameEntry, config: Config, scratch: Scratch
) -> np.ndarray | None:
    """Fresh uint32 words of the byte tokens allowed at `config` whose top frame has `entry`,
    or None when the stack is too close to `max_depth` for the accept set to hold (or the
    frames below the top are not viable, which a matcher never reaches)."""
    tables = binding.tables
    if depth(tables, config[:-1]) + entry.height > tables.max_depth:
        return None
    if not is_viable(tables, config[:-1]):  # entries assume viable callers
        return None
    words = entry.accept.copy()
    if len(config) > 1 and entry.open_roots.size:
        keys = mask_key(config, binding.trie_depth)
        walk_trie(binding, keys, words, scratch, roots=entry.open_roots)
    return words


def suffix_classes(tables: Tables, rounds: int) -> np.ndarray:
    """int32[G]: states in one class have the same outcome (dead, open, accepted, stack height)
    on every byte string of at most `rounds` bytes, for every counter value, hence the same
    `FrameEntry` for the same clipped counter when `rounds` is the longest token.

    Moore's partition refinement stopped after `rounds` rounds: start from (machine,
    accepting, completion needs); each round splits states whose actions differ in kind,
    callee or the class of the shift target or return state. A call's return state is only
    reached after the callee consumed at least one byte, so comparing it one round earlier is
    sound. Restarts and counters are the machine's (all its accepting states restart the same
    way), and the machine is part of the first partition.
    """
    acts = tables.next.astype(np.int64)
    is_call = acts <= -2
    call_at = np.where(is_call, -2 - acts, 0)
    callee = np.where(is_call, tables.calls[call_at, 0] if tables.calls.size else 0, -1)
    kind = np.where(acts >= 0, 0, np.where(is_call, 1, 2))
    target = np.where(
        acts >= 0, acts, np.where(is_call, tables.calls[call_at, 1] if tables.calls.size else 0, 0)
    )
    static = np.concatenate([kind, callee], axis=1)
    base = np.stack(
        [tables.machine_of, tables.accepting.astype(np.int64), tables.need, tables.need_more],
        axis=1,
    )
    _, classes = np.unique(base, axis=0, return_inverse=True)
    classes = classes.reshape(-1)
    for _ in range(rounds):
        cancellation_checkpoint()
        moved = np.where(kind == 2, -1, classes[target])
        signature = np.concatenate([classes[:, None], static, moved], axis=1)
        _, refined = np.unique(signature, axis=0, return_inverse=True)
        refined = refined.reshape(-1)
        if refined.max() == classes.max():
            break
        classes = refined
    return classes.astype(np.int32)


def reachable_keys(tables: Tables, longest: int, *, near: bool = True) -> list[int]:
    """Every frame key a configuration can hold, ascending: one per state of a machine without
    counters; for a repeat machine's states, the clipped counters that the calls of the machine
    can lead to (a call pushes `(left, needed)`, each restart takes one off both). Clipping
    makes all but about `3 * longest` counter values per call alike, whatever the bound. With
    `near=False` only the counters at least `longest` iterations away from running out are kept
    (`left` clipped to `longest`): one or two keys per state instead of hundreds."""
    n_states = int(tables.accepting.shape[0])
    starts: dict[int, set[tuple[int, int]]] = {}
    for (callee, _), (left, needed) in zip(
        tables.calls.tolist(), tables.call_entry.tolist(), strict=True
    ):
        if tables.is_repeat[callee]:
            starts.setdefault(int(tables.machine_of[callee]), set()).add((left, needed))
    keys = []
    for g in range(n_states):
        if not tables.is_repeat[g]:
            keys.append(g)
            continue
        pairs: set[tuple[int, int]] = set()
        for left, needed in starts.get(int(tables.machine_of[g]), ()):
            last = left if left != UNLIMITED else needed + longest + 2
            marks = {0, needed, last}
            for j in sorted({j for m in marks for j in range(m - longest - 2, m + longest + 3)}):
                if 0 <= j <= last:
                    rest = left if left == UNLIMITED else left - j
                    if near or rest >= longest:
                        pairs.add((min(rest, longest), min(max(needed - j, 0), longest + 1)))
        keys.extend(g | (a << 32) | (b << 48) for a, b in sorted(pairs))
    return keys


@dataclass(frozen=True, eq=False)
class FrameMasks:
    """Every top frame's `FrameEntry` (one per state and clipped counter), content-addressed
    (see the module docstring)."""

    key: tuple[
        str, str, str, str, str
    ]  # Binding.file_key: artifact, tokenizer, compiler, policy, trie
    vocab_size: int
    max_depth: int
    n_states: int  # global states of the artifact
    longest: int  # the longest token in bytes: counters are clipped with it
    entry_key: np.ndarray  # int64[E, 3]: (state, restarts left, iterations needed), by state
    accept_id: np.ndarray  # int32[E]: row of `masks`
    height: np.ndarray  # int32[E]
    open_start: np.ndarray  # int32[E + 1]: CSR into open_roots
    open_roots: np.ndarray  # int32: trie nodes
    masks: np.ndarray  # uint32[n_masks, n_words]; row 0 is the empty set
    _index: dict = field(default_factory=dict, repr=False)

    @property
    def n_entries(self) -> int:
        return int(self.accept_id.shape[0])

    def require_key(self, key: tuple) -> None:
        """`E_CACHE_MISMATCH` unless these masks were built for `key` (a `Binding.file_key`)."""
        names = ("artifact", "tokenizer", "compiler version", "special-token policy", "trie")
        for name, mine, theirs in zip(names, self.key, key, strict=True):
            if mine != theirs:
                raise TrgcError(
                    "E_CACHE_MISMATCH",
                    f"mask cache was built for {name} {mine!r}, not {theirs!r}",
                    hint="rebuild it with `trgc masks precompute` for this artifact and tokenizer",
                )

    def require(self, binding: Binding) -> None:
        """`require_key`, then check that every index fits `binding` (the kernel trusts them)."""
        self.require_key(binding.file_key)
        n_nodes = binding.node_byte.shape[0]
        n = self.n_entries
        if self.max_depth != binding.tables.max_depth:
            raise TrgcError(
                "E_CACHE_MISMATCH",
                f"mask cache was built for max_depth {self.max_depth:,}, the artifact's is "
                f"{binding.tables.max_depth:,}",
                hint="rebuild it with `trgc masks precompute` for this artifact and tokenizer",
            )
        if (
            self.entry_key.shape != (n, 3)
            or self.height.shape != (n,)
            or self.open_start.shape != (n + 1,)
            or self.n_states != binding.tables.accepting.shape[0]
            or self.longest != binding.trie_depth
            or self.max_depth != binding.tables.max_depth
            or self.masks.shape[1] != binding.n_words
            or (self.n_entries and int(self.entry_key[:, 0].max()) >= self.n_states)
            or (
                self.open_roots.size
                and not 0 < int(self.open_roots.min()) <= int(self.open_roots.max()) < n_nodes
            )
        ):
            raise TrgcError(
                "E_CACHE_MISMATCH", "mask cache sizes do not match the artifact and trie"
            )

    def index(self) -> dict[int, int]:
        """Frame key (`trgc.engine.config.frame_key`) -> entry number (built on first use)."""
        if not self._index:
            for e, (g, left, needed) in enumerate(self.entry_key.tolist()):
                self._index[g | (left << 32) | (needed << 48)] = e
        return self._index

    def entry_of(self, key: int) -> FrameEntry | None:
        """The `FrameEntry` of a frame key (views, no copies), or None if it has none."""
        e = self.index().get(key)
        if e is None:
            return None
        roots = self.open_roots[self.open_start[e] : self.open_start[e + 1]]
        return FrameEntry(self.masks[self.accept_id[e]], roots, int(self.height[e]))

    def direct(self, binding: Binding) -> DirectRows:
        """The `DirectRows` of these masks over `binding` (after `require`)."""
        tables = binding.tables
        plain = plain_states(binding)
        rows = []
        for i in range(self.masks.shape[0]):
            row = self.masks[i]  # a view: the file's table is never copied
            row.flags.writeable = False
            rows.append(row)
        state = self.entry_key[:, 0].tolist()
        closed = (self.open_start[1:] == self.open_start[:-1]).tolist()
        found: dict[int, tuple[np.ndarray, int, bool]] = {}
        for key, e in self.index().items():
            if plain[state[e]]:
                found[key] = (rows[int(self.accept_id[e])], int(self.height[e]), closed[e])
        return DirectRows(found, tables.max_depth, self.longest)


def plain_states(binding: Binding) -> np.ndarray:
    """bool[n_states]: states that add nothing to a mask beyond their frame entry's accept set
    (`add_symbol_tokens` adds nothing: not accepting, so no EOS, and no action on a special
    symbol, so no special token). Built once per binding."""
    found = binding._lazy.get("plain")
    if found is None:
        tables = binding.tables
        specials = binding.special_syms.tolist()
        acts = tables.next[:, specials] if specials else np.full((tables.next.shape[0], 0), -1)
        found = binding._lazy["plain"] = ~tables.accepting & (acts == -1).all(axis=1)
    return found


@dataclass(frozen=True, eq=False)
class DirectRows:
    """When an entry's precomputed accept set alone is the whole mask (a dict by frame key, for
    the matcher's hot path).

    At a configuration `c` with top frame key `k` and `B` rule frames below that a matcher
    reached (so `c[:-1]` is viable: `step` only returns viable configurations), `combine`
    yields `accept[k]` unchanged when `B + height[k] <= max_depth` and no open root is walked
    (`k` has none, or the top is the only frame: nothing lies below to return into);
    `add_symbol_tokens` adds nothing when the state is not accepting (then neither is `c`, so
    no EOS) and no special symbol has an action there (a non-accepting top without an action
    rejects the symbol; it cannot pop). `rows` holds `(accept row, height, closed)` for the
    entries whose state meets the last two conditions."""

    rows: dict[int, tuple[np.ndarray, int, bool]]
    max_depth: int
    longest: int


def precompute(
    artifact: Artifact,
    tokenizer,
    *,
    limits: Limits = DEFAULT_LIMITS,
    progress: Progress | None = None,
    disk_cache=None,
) -> FrameMasks:
    """Build `FrameMasks` for every state of every machine of `artifact` over `tokenizer`.
    States of counted repetitions get the entries of their counters away from the maximum
    (`reachable_keys(near=False)`); the few hundred clipped values within one token of it are
    computed on first use by the matcher, which falls back to that for any key not stored.

    The stored size is bounded by `limits.cache_bytes` (`E_LIMIT_CACHE_BYTES`), checked before
    each new distinct mask or open-root list is kept. With a `disk_cache`
    (`trgc.engine.diskcache.DiskCache`) each walked entry is first looked up there by its
    residual and published there when new, so artifacts that share pieces share the work.
    A cancel request (`trgc.engine.cancel`) stops the precompute between two walks or inside
    one, and nothing is returned.
    """
    binding = bind(artifact, tokenizer)
    tables = binding.tables
    scratch = Scratch(binding)
    longest = binding.trie_depth
    n_states = int(tables.accepting.shape[0])
    keys = reachable_keys(tables, longest, near=False)
    row_bytes = binding.n_words * 4
    ids: dict[bytes, int] = {}
    table: list[np.ndarray] = [np.zeros(binding.n_words, dtype=np.uint32)]
    ids[table[0].tobytes()] = 0
    n = len(keys)
    entry_key = np.zeros((n, 3), dtype=np.int64)
    accept_id = np.zeros(n, dtype=np.int32)
    height = np.ones(n, dtype=np.int32)
    open_start = np.zeros(n + 1, dtype=np.int32)
    roots: list[np.ndarray] = []
    n_roots = 0
    classes = suffix_classes(tables, longest)
    walked: dict[tuple[int, int], FrameEntry] = {}
    shared = MaskCache()  # the disk cache's in-memory side, for this precompute only
    if disk_cache is not None:
        from trgc.engine.framecache import entry_for  # framecache imports this module
    for e, key in enumerate(keys):
        g, left, needed = unclip(key)
        entry_key[e] = (g, left, needed)
        walk_key = (int(classes[g]), left, needed)
        entry = walked.get(walk_key)
        if entry is None:
            cancellation_checkpoint()
            if disk_cache is None:
                entry = frame_entry(binding, key, scratch)
            else:
                entry = entry_for(binding, key, scratch, shared, disk_cache)[0]
            walked[walk_key] = entry
        words = entry.accept.tobytes()
        found = ids.get(words)
        size = len(table) * row_bytes + 4 * (n_roots + entry.open_roots.size) + 24 * n
        if found is None or entry.open_roots.size:
            check_limit("cache_bytes", size + row_bytes, limits.cache_bytes, "precomputed masks")
        if found is None:
            found = ids[words] = len(table)
            table.append(entry.accept)
        accept_id[e] = found
        height[e] = entry.height
        roots.append(entry.open_roots)
        n_roots += entry.open_roots.size
        open_start[e + 1] = n_roots
        if progress is not None:
            progress(e + 1, n)
    return FrameMasks(
        key=binding.file_key,
        vocab_size=binding.vocab_size,
        max_depth=tables.max_depth,
        n_states=n_states,
        longest=longest,
        entry_key=entry_key,
        accept_id=accept_id,
        height=height,
        open_start=open_start,
        open_roots=np.concatenate([np.zeros(0, dtype=np.int32), *roots]).astype(np.int32),
        masks=np.stack(table),
    )
