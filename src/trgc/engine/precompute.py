"""Precomputed masks per top frame (`FrameMasks`) and building them for every state.

For each state `g` (any machine) the kernel walks the trie once from the single frame `(g)`
with its callers unknown (`frame_mode`). Every byte token then falls in one of three sets:
  * accepted without leaving the frame (context-independent, given enough stack room: the
    walk records the highest stack `height[g]` any accepted token reaches);
  * rejected without leaving the frame (context-independent: dead whatever lies below);
  * open: it needs to return out of the frame, so it is checked at run time against the live
    stack (`kernel.check_tokens`).
The mask at a live configuration `c` with top `g` and depth `D` is then
`accept[g] | check(open[g], c)` whenever `D - 1 + height[g] <= max_depth` (else the matcher
falls back to a full walk). A regular grammar (one machine, no calls) never has open tokens,
so `accept[g]` is its whole mask (the idea of XGrammar's adaptive token-mask cache).

Masks are stored content-addressed: `accept_id[g]`, `open_id[g]` index one table of distinct
bitsets (mask 0 is the empty set), so counted repetitions that unroll into many states with
the same behaviour store each distinct mask once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from trgc.artifact.model import Artifact
from trgc.engine.binding import Binding, bind
from trgc.engine.bits import unpack
from trgc.engine.config import Config
from trgc.engine.kernel import Scratch, check_tokens, walk_trie
from trgc.errors import TrgcError
from trgc.limits import DEFAULT_LIMITS, Limits, check_limit

Progress = Callable[[int, int], None]


@dataclass(frozen=True, eq=False)
class FrameEntry:
    """What one top state `g` decides on its own: accepted words, open tokens, stack height."""

    accept: np.ndarray  # uint32 words (read-only)
    open_tokens: np.ndarray  # int32 ids that need the live stack
    height: int  # highest relative stack any accepted token reaches (>= 1)

    @property
    def nbytes(self) -> int:
        return int(self.accept.nbytes + self.open_tokens.nbytes)


def compute_frame(binding: Binding, g: int, scratch: Scratch) -> tuple[np.ndarray, np.ndarray, int]:
    """(accept words, open words, height) of top state `g`: one frame-mode trie walk.

    A machine nobody calls is always the bottom frame, so returning out of it is rejection
    rather than an open question.
    """
    accept = np.zeros(binding.n_words, dtype=np.uint32)
    opened = np.zeros(binding.n_words, dtype=np.uint32)
    scratch.heights[:] = 0
    frame_mode = bool(binding.tables.has_caller[g])
    walk_trie(binding, (g,), accept, scratch, frame_mode=frame_mode, open_words=opened)
    return accept, opened, max(1, int(scratch.heights.max()))


def frame_entry(binding: Binding, g: int, scratch: Scratch) -> FrameEntry:
    """`compute_frame` as a `FrameEntry` (for the matcher's adaptive cache)."""
    accept, opened, height = compute_frame(binding, g, scratch)
    accept.flags.writeable = False
    tokens = np.flatnonzero(unpack(opened, binding.vocab_size)).astype(np.int32)
    return FrameEntry(accept, tokens, height)


def combine(
    binding: Binding, entry: FrameEntry, config: Config, scratch: Scratch
) -> np.ndarray | None:
    """Fresh uint32 words of the byte tokens allowed at `config` whose top state has `entry`,
    or None when the stack is too close to `max_depth` for the accept set to hold."""
    if len(config) - 1 + entry.height > binding.tables.max_depth:
        return None
    words = entry.accept.copy()
    if len(config) > 1 and entry.open_tokens.size:
        check_tokens(binding, config, entry.open_tokens, words, scratch)
    return words


@dataclass(frozen=True, eq=False)
class FrameMasks:
    """Per-state accept/open mask ids over a table of distinct bitsets (see module docstring)."""

    key: tuple[str, str, str, str]  # (artifact, tokenizer, compiler version, special policy)
    vocab_size: int
    max_depth: int
    accept_id: np.ndarray  # int32[G]
    open_id: np.ndarray  # int32[G]
    height: np.ndarray  # int32[G]
    masks: np.ndarray  # uint32[n_masks, n_words]
    _open_tokens: dict = field(default_factory=dict, repr=False)

    @property
    def n_states(self) -> int:
        return int(self.accept_id.shape[0])

    def require_key(self, key: tuple) -> None:
        """`E_CACHE_MISMATCH` unless these masks were built for `key`."""
        names = ("artifact", "tokenizer", "compiler version", "special-token policy")
        for name, mine, theirs in zip(names, self.key, key, strict=True):
            if mine != theirs:
                raise TrgcError(
                    "E_CACHE_MISMATCH",
                    f"mask cache was built for {name} {mine!r}, not {theirs!r}",
                    hint="rebuild it with `trgc masks precompute` for this artifact and tokenizer",
                )

    def entry(self, g: int) -> FrameEntry:
        """The `FrameEntry` of global state `g` (open-token lists decoded once per mask)."""
        open_id = int(self.open_id[g])
        tokens = self._open_tokens.get(open_id)
        if tokens is None:
            bits = unpack(self.masks[open_id], self.vocab_size)
            tokens = self._open_tokens[open_id] = np.flatnonzero(bits).astype(np.int32)
        return FrameEntry(self.masks[self.accept_id[g]], tokens, int(self.height[g]))

    def nbytes(self) -> int:
        return int(self.masks.nbytes + 3 * self.accept_id.nbytes)


def precompute(
    artifact: Artifact,
    tokenizer,
    *,
    limits: Limits = DEFAULT_LIMITS,
    progress: Progress | None = None,
) -> FrameMasks:
    """Build `FrameMasks` for every state of every machine of `artifact` over `tokenizer`.

    The distinct masks are bounded by `limits.cache_bytes` (`E_LIMIT_CACHE_BYTES`), checked
    before each new mask is kept.
    """
    binding = bind(artifact, tokenizer)
    scratch = Scratch(binding)
    n_states = int(binding.tables.accepting.shape[0])
    words_len = binding.n_words
    ids: dict[bytes, int] = {}
    table: list[np.ndarray] = []

    def intern(words: np.ndarray) -> int:
        raw = words.tobytes()
        found = ids.get(raw)
        if found is None:
            check_limit(
                "cache_bytes",
                (len(table) + 1) * words_len * 4 + 12 * n_states,
                limits.cache_bytes,
                "precomputed masks",
            )
            found = ids[raw] = len(table)
            table.append(words)
        return found

    intern(np.zeros(words_len, dtype=np.uint32))
    accept_id = np.zeros(n_states, dtype=np.int32)
    open_id = np.zeros(n_states, dtype=np.int32)
    height = np.ones(n_states, dtype=np.int32)
    for g in range(n_states):
        accept, opened, height[g] = compute_frame(binding, g, scratch)
        accept_id[g] = intern(accept)
        open_id[g] = intern(opened)
        if progress is not None:
            progress(g + 1, n_states)
    return FrameMasks(
        key=binding.key,
        vocab_size=binding.vocab_size,
        max_depth=binding.tables.max_depth,
        accept_id=accept_id,
        open_id=open_id,
        height=height,
        masks=np.stack(table),
    )
