"""Masks per top state (`FrameEntry`, `FrameMasks`) and precomputing them for every state.

For each state `g` (any machine) the kernel walks the trie once from the single frame `(g)`
with its callers unknown (`frame_mode`). Every byte token then falls in one of three sets:
  * accepted without leaving the frame (context-independent, given enough stack room: the
    walk records the highest stack `height[g]` any accepted token reaches);
  * rejected without leaving the frame (context-independent: dead whatever lies below);
  * open: its path reaches a byte that returns out of the frame. Such tokens form whole trie
    subtrees; their roots are kept and walked at run time from the live stack.
The mask at a live configuration `c` with top `g` and depth `D` is then
`accept[g] | walk(open_roots[g], c)` whenever `D - 1 + height[g] <= max_depth` (else the
matcher falls back to a full walk). A machine nobody calls is always the bottom frame, so its
states have no open roots: for a regular grammar `accept[g]` is the whole mask. This is the
idea of XGrammar's adaptive token-mask cache (context-independent tokens precomputed per
state, context-dependent ones checked against the stack), over trie subtrees.

States that no string of at most `L` bytes can tell apart (`L` = the longest token) have the
same `FrameEntry`, so `precompute` walks the trie once per class of `suffix_classes` (bounded
Moore refinement): the hundreds of states a counted repetition such as `[a-z]{0,500}`
unrolls into collapse to the few within `L` bytes of either end.

`FrameMasks` stores accept sets content-addressed (`accept_id[g]` into one table of distinct
bitsets), so counted repetitions that unroll into many states with the same behaviour store
each distinct mask once; open roots are a CSR list of trie nodes per state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from trgc.artifact.model import Artifact
from trgc.engine.binding import Binding, bind
from trgc.engine.config import Config, Tables, is_viable
from trgc.engine.kernel import Scratch, walk_trie
from trgc.engine.slices import default_slices, is_safe
from trgc.errors import TrgcError
from trgc.limits import DEFAULT_LIMITS, Limits, check_limit

Progress = Callable[[int, int], None]


@dataclass(frozen=True, eq=False)
class FrameEntry:
    """What one top state decides on its own: accepted words, open subtree roots, height."""

    accept: np.ndarray  # uint32 words (read-only)
    open_roots: np.ndarray  # int32 trie nodes whose subtrees need the live stack
    height: int  # highest relative stack any accepted token reaches (>= 1)

    @property
    def nbytes(self) -> int:
        return int(self.accept.nbytes + self.open_roots.nbytes)


def frame_entry(binding: Binding, g: int, scratch: Scratch, cache=None) -> FrameEntry:
    """The `FrameEntry` of global state `g`: one frame-mode trie walk, skipping the subtrees
    of the first slice `g` accepts wholesale (`trgc.engine.slices`; their tokenizer-level
    tables are shared through `cache`, a `MaskCache`, when given)."""
    frame_mode = bool(binding.tables.has_caller[g])
    slice_height = 1
    for k, piece in enumerate(default_slices()):
        safe = is_safe(binding.tables, g, piece)
        if safe is not None:
            tables = binding.slices(cache)  # built on the first safe state only
            _, words, skip = tables.get(k)
            accept = words.copy()
            slice_height = safe
            break
    else:
        accept = np.zeros(binding.n_words, dtype=np.uint32)
        skip = None
    roots, height = walk_trie(binding, (g,), accept, scratch, frame_mode=frame_mode, skip=skip)
    height = max(height, slice_height)
    accept.flags.writeable = False
    return FrameEntry(accept, roots, height)


def combine(
    binding: Binding, entry: FrameEntry, config: Config, scratch: Scratch
) -> np.ndarray | None:
    """Fresh uint32 words of the byte tokens allowed at `config` whose top state has `entry`,
    or None when the stack is too close to `max_depth` for the accept set to hold (or the
    frames below the top are not viable, which a matcher never reaches)."""
    if len(config) - 1 + entry.height > binding.tables.max_depth:
        return None
    if not is_viable(binding.tables, config[:-1]):  # entries assume viable callers
        return None
    words = entry.accept.copy()
    if len(config) > 1 and entry.open_roots.size:
        walk_trie(binding, config, words, scratch, roots=entry.open_roots)
    return words


def suffix_classes(tables: Tables, rounds: int) -> np.ndarray:
    """int32[G]: states in one class have the same outcome (dead, open, accepted, stack height)
    on every byte string of at most `rounds` bytes, hence the same `FrameEntry` when `rounds`
    is the longest token.

    Moore's partition refinement stopped after `rounds` rounds: start from (machine,
    accepting, completion need); each round splits states whose actions differ in kind, callee or the class of
    the shift target or return state. A call's return state is only reached after the callee
    consumed at least one byte, so comparing it one round earlier is sound.
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
    base = np.stack([tables.machine_of, tables.accepting.astype(np.int64), tables.need], axis=1)
    _, classes = np.unique(base, axis=0, return_inverse=True)
    classes = classes.reshape(-1)
    for _ in range(rounds):
        moved = np.where(kind == 2, -1, classes[target])
        signature = np.concatenate([classes[:, None], static, moved], axis=1)
        _, refined = np.unique(signature, axis=0, return_inverse=True)
        refined = refined.reshape(-1)
        if refined.max() == classes.max():
            break
        classes = refined
    return classes.astype(np.int32)


@dataclass(frozen=True, eq=False)
class FrameMasks:
    """Every state's `FrameEntry`, content-addressed (see the module docstring)."""

    key: tuple[
        str, str, str, str, str
    ]  # Binding.file_key: artifact, tokenizer, compiler, policy, trie
    vocab_size: int
    max_depth: int
    accept_id: np.ndarray  # int32[G]: row of `masks`
    height: np.ndarray  # int32[G]
    open_start: np.ndarray  # int32[G + 1]: CSR into open_roots
    open_roots: np.ndarray  # int32: trie nodes
    masks: np.ndarray  # uint32[n_masks, n_words]; row 0 is the empty set

    @property
    def n_states(self) -> int:
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
        if (
            self.n_states != binding.tables.accepting.shape[0]
            or self.masks.shape[1] != binding.n_words
            or (
                self.open_roots.size
                and not 0 < int(self.open_roots.min()) <= int(self.open_roots.max()) < n_nodes
            )
        ):
            raise TrgcError(
                "E_CACHE_MISMATCH", "mask cache sizes do not match the artifact and trie"
            )

    def entry(self, g: int) -> FrameEntry:
        """The `FrameEntry` of global state `g` (views, no copies)."""
        roots = self.open_roots[self.open_start[g] : self.open_start[g + 1]]
        return FrameEntry(self.masks[self.accept_id[g]], roots, int(self.height[g]))

    def direct(self, binding: Binding) -> DirectRows:
        """The `DirectRows` of these masks over `binding` (after `require`)."""
        tables = binding.tables
        specials = binding.special_syms.tolist()
        acts = tables.next[:, specials] if specials else np.full((self.n_states, 0), -1)
        plain = ~tables.accepting & (acts == -1).all(axis=1)
        rows = []
        for i in range(self.masks.shape[0]):
            row = self.masks[i]  # a view: the file's table is never copied
            row.flags.writeable = False
            rows.append(row)
        ids = self.accept_id.tolist()
        return DirectRows(
            row=[rows[i] if ok else None for i, ok in zip(ids, plain.tolist(), strict=True)],
            height=self.height.tolist(),
            closed=(self.open_start[1:] == self.open_start[:-1]).tolist(),
            max_depth=tables.max_depth,
        )


@dataclass(frozen=True, eq=False)
class DirectRows:
    """When a state's precomputed accept set alone is the whole mask (Python lists, indexed
    by global state, for the matcher's hot path).

    At a configuration `c` with top `g` and depth `D` that a matcher reached (so `c[:-1]` is
    viable: `step` only returns viable configurations), `combine` yields `accept[g]`
    unchanged when `D - 1 + height[g] <= max_depth` and no open root is walked (`g` has none,
    or `D == 1`: nothing lies below to return into); `add_symbol_tokens` adds nothing when
    `g` is not accepting (then neither is `c`, so no EOS) and no special symbol has an action
    at `g` (a non-accepting top without an action rejects the symbol; it cannot pop). `row[g]`
    is that accept set (a read-only view of `FrameMasks.masks`) when the last two hold, else
    None."""

    row: list[np.ndarray | None]
    height: list[int]
    closed: list[bool]  # no open roots
    max_depth: int


def precompute(
    artifact: Artifact,
    tokenizer,
    *,
    limits: Limits = DEFAULT_LIMITS,
    progress: Progress | None = None,
) -> FrameMasks:
    """Build `FrameMasks` for every state of every machine of `artifact` over `tokenizer`.

    The stored size is bounded by `limits.cache_bytes` (`E_LIMIT_CACHE_BYTES`), checked before
    each new distinct mask or open-root list is kept.
    """
    binding = bind(artifact, tokenizer)
    scratch = Scratch(binding)
    n_states = int(binding.tables.accepting.shape[0])
    row_bytes = binding.n_words * 4
    ids: dict[bytes, int] = {}
    table: list[np.ndarray] = [np.zeros(binding.n_words, dtype=np.uint32)]
    ids[table[0].tobytes()] = 0
    accept_id = np.zeros(n_states, dtype=np.int32)
    height = np.ones(n_states, dtype=np.int32)
    open_start = np.zeros(n_states + 1, dtype=np.int32)
    roots: list[np.ndarray] = []
    n_roots = 0
    classes = suffix_classes(binding.tables, binding.trie_depth)
    walked: dict[int, FrameEntry] = {}
    for g in range(n_states):
        entry = walked.get(int(classes[g]))
        if entry is None:
            entry = walked[int(classes[g])] = frame_entry(binding, g, scratch)
        key = entry.accept.tobytes()
        found = ids.get(key)
        size = len(table) * row_bytes + 4 * (n_roots + entry.open_roots.size) + 16 * n_states
        if found is None or entry.open_roots.size:
            check_limit("cache_bytes", size + row_bytes, limits.cache_bytes, "precomputed masks")
        if found is None:
            found = ids[key] = len(table)
            table.append(entry.accept)
        accept_id[g] = found
        height[g] = entry.height
        roots.append(entry.open_roots)
        n_roots += entry.open_roots.size
        open_start[g + 1] = n_roots
        if progress is not None:
            progress(g + 1, n_states)
    return FrameMasks(
        key=binding.file_key,
        vocab_size=binding.vocab_size,
        max_depth=binding.tables.max_depth,
        accept_id=accept_id,
        height=height,
        open_start=open_start,
        open_roots=np.concatenate([np.zeros(0, dtype=np.int32), *roots]).astype(np.int32),
        masks=np.stack(table),
    )
