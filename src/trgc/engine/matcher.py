"""`Matcher`: the per-sequence token-mask API over one artifact and one token table.

A matcher holds a history of configurations (for `rollback`) and per-matcher scratch buffers;
the binding of artifact and tokenizer is immutable and shared, caches are passed in explicitly.
So matchers are thread-compatible: one thread per matcher, no hidden global state.

A configuration whose top frame decides the whole mask on its own (`DirectRows`: no open roots
to check, no EOS or special token possible, stack room enough) gets the frame entry's accept
set itself, precomputed or not: no copy, no cache entry; with one frame only, no key of the
configuration is made either (`_one_frame`), and a small walk (`WALKED_NODES`) is walked on
every visit, not kept. Otherwise masks come from the in-memory `MaskCache` (whole
configuration) or are assembled from the `FrameEntry` of the top frame (what that frame
decides on its own: from the `FrameMasks`, or keyed by the frame's residual in the
`MaskCache` and the optional `DiskCache`, shared with every artifact and process whose frames
have the same residual, or computed now and shared) plus a check of the context-dependent
remainder against the live stack; near `max_depth` a full trie walk.
With a `DiskCache`, the matcher's `MaskStore` (`trgc.engine.maskstore`) comes first: the
masks earlier processes computed for the same artifact and tokenizer, loaded when the matcher
is made, so a configuration seen before is a lookup; masks computed now are added to it and
republished in the background. `last_source` says where the last mask came from: "store",
"cache", "frame" (entry reused, precomputed row included), "disk" (entry read from the disk
cache) or "walk" (a trie walk ran).
"""

from __future__ import annotations

import functools
import itertools
from os import PathLike
from typing import Any

import numpy as np

from trgc.artifact.model import Artifact
from trgc.engine import counted
from trgc.engine.binding import bind
from trgc.engine.bits import unpack
from trgc.engine.cache import MaskCache
from trgc.engine.config import (
    START,
    STATE_MASK,
    Config,
    config_id,
    depth,
    frame_key,
    frames,
    is_accepting,
    mask_key,
    shift_bytes,
    step,
    step_bytes,
)
from trgc.engine.diskcache import DiskCache
from trgc.engine.framecache import DESCRIBE_ABOVE_NODES, entry_for, memory_key, walk_bound
from trgc.engine.inputs import as_artifact, as_token_table
from trgc.engine.kernel import (
    PH_FULL,
    Scratch,
    cold_mask,
    computed_entry,
    mask_words,
    phases_run,
    run_walk,
    walked_mask,
)
from trgc.engine.maskform import Dense, Form, Row
from trgc.engine.maskstore import MaskStore, shared_store
from trgc.engine.precompute import (
    FrameEntry,
    FrameMasks,
    plain_states,
    slice_candidates,
    slice_of,
    slice_plan,
)
from trgc.engine.runs import run_states
from trgc.errors import TrgcError

FORCED_BYTES_LIMIT = 4096
# how `Matcher._words` masks a one-frame configuration (`Matcher._one_frame_plan`), and the
# most trie nodes a walk of one may visit for it to be walked every time rather than kept
GENERAL, KEPT, WALKED, ENTRY = 0, 1, 2, 3
WALKED_NODES = 1 << 14
# frame entries a matcher keeps by top frame (`Matcher._frame`), cleared when full: the
# shared cache holds them too, by residual, at the cost of two keys to make per lookup
ENTRIES_KEPT = 4096
# frames walked by tails (string bodies, identifier loops) whose entries the first mask makes
# (`Matcher._tail_entries`); over bench_live's Llama-3 sample an artifact has 2 at the median
# and 27 at most, and a document meets nine in ten of them
FIRST_ENTRIES = 32
_INT32 = np.dtype(np.int32)


class Matcher:
    """Token masks for one decoding sequence constrained by `artifact` over `tokenizer`.

    `cache` is an optional shared `MaskCache` (a private one is made otherwise);
    `precomputed` an optional `FrameMasks` from `trgc masks precompute` (`trgc.load_masks`)
    for the same artifact, tokenizer and compiler version (`E_CACHE_MISMATCH` otherwise); a
    `FrameMasks` passed as `cache` is taken as `precomputed`; `disk_cache` an optional
    `trgc.engine.diskcache.DiskCache` (`open_cache()`) holding the mask store of this
    artifact and tokenizer (read first) and frame entries (read on a miss of `cache`); new
    masks and entries are published there in the background; `store_masks=False` shares frame
    entries only. A grammar naming a special
    token the tokenizer lacks raises `E_SPECIAL_TOKEN_MISSING`.

    `artifact` may also be the path of an artifact file, `tokenizer` a path or a live
    tokenizer object (see `trgc.load_tokenizer`); another type is `E_ARGUMENT_TYPE`.
    """

    def __init__(
        self,
        artifact: Artifact | str | PathLike,
        tokenizer: Any,
        *,
        cache: MaskCache | FrameMasks | None = None,
        precomputed: FrameMasks | None = None,
        disk_cache: DiskCache | None = None,
        store_masks: bool = True,
    ) -> None:
        self._binding = bind(as_artifact(artifact), as_token_table(tokenizer))
        if isinstance(cache, FrameMasks):
            cache, precomputed = None, cache
        self._cache = cache if cache is not None else MaskCache()
        if precomputed is not None:
            precomputed.require(self._binding)
        self._precomputed = precomputed
        if disk_cache is not None and not isinstance(disk_cache, DiskCache):
            raise TrgcError(
                "E_ARGUMENT_TYPE",
                f"disk_cache: expected a DiskCache or None, got {type(disk_cache).__name__}",
                hint="trgc.engine.diskcache.open_cache() opens the default cache directory",
            )
        self._disk = disk_cache
        # the masks earlier processes computed for this binding (`trgc.engine.maskstore`)
        self._store = (
            shared_store(self._binding, disk_cache, self._cache)
            if disk_cache is not None and store_masks
            else None
        )
        self._direct = None if precomputed is None else precomputed.direct(self._binding)
        self._n_words = self._binding.n_words
        self._form_of: np.ndarray | None = None  # the words `_form` is the `Dense` form of
        self._form: Dense | None = None
        self._filled: np.ndarray | None = None  # the numpy buffer last filled, and its row
        self._filled_index = -1
        self._filled_row: Row | None = None
        self._longest = self._binding.trie_depth  # counters are clipped with the longest token
        binding = self._binding
        # token id -> grammar symbol of the special tokens the grammar names (the first one
        # naming the id), and the EOS ids, for `_next`
        self._specials: dict[int, int] = {}
        for token, symbol in zip(binding.special_ids.tolist(), binding.special_syms.tolist(),
                                 strict=True):  # fmt: skip
            self._specials.setdefault(token, symbol)
        self._eos = frozenset(binding.eos_ids.tolist())
        self._vocab_size = binding.vocab_size
        self._byte_token = memoryview(binding.byte_token)  # items are bools, read per advance
        self._history: list[Config | None] = [START]
        self._entries: dict[int, FrameEntry] = {}  # top frame -> its entry (`_frame`)
        self.last_source = ""  # where the last mask came from: store, cache, frame, disk, walk

    # -- state ---------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return self._binding.vocab_size

    @property
    def tokenizer_sha256(self) -> str:
        """The identity of the token table this matcher is bound to."""
        return self._binding.key[1]

    @property
    def config(self) -> Config | None:
        """The current configuration (global state ids, bottom first); None once terminated."""
        return self._history[-1]

    def frames(self) -> list[tuple[int, int, int]]:
        """The current stack as `(machine, state, count)` triples, bottom first ([] once
        terminated)."""
        config = self.config
        return [] if config is None else frames(self._binding.tables, config)

    def config_id(self) -> str:
        """A stable identity of the current configuration (`sha256:...`), used by traces."""
        return config_id(self._binding.tables, self.config)

    def is_accepting(self) -> bool:
        """True when the output so far is a complete match (always true once terminated)."""
        config = self.config
        return config is None or is_accepting(self._binding.tables, config)

    def is_terminated(self) -> bool:
        """True after an EOS token was accepted; nothing is allowed any more."""
        return self.config is None

    @property
    def n_advanced(self) -> int:
        """Tokens advanced since the start (the most `rollback` can undo)."""
        return len(self._history) - 1

    # -- masks ---------------------------------------------------------------------------
    @functools.cached_property
    def _scratch(self) -> Scratch:
        """The kernel's work buffers, made when a mask is first computed (a mask read from the
        store needs none, nor the artifact's tables they are sized from)."""
        return Scratch(self._binding)

    @functools.cached_property
    def _plain(self) -> np.ndarray:
        return plain_states(self._binding)

    @functools.cached_property
    def _cheap(self) -> list[bool]:
        """Per state: whether its entry is walked inside `cold_mask`: its frame walk is
        `framecache.cheap` and no slice can fit it (`slices.candidates`). A state that may
        fit one is left to `_frame`, whose walk uses the slice: its walk bound counts the
        first bytes it acts on, not those it restarts or returns on (an accepting counted
        repetition of a string body acts on none, and its open roots span the trie).

        A state in a class run (`runs.run_states`) whose walk may visit more than
        `WALKED_NODES` nodes is left to `_frame` too: its entry is the run's members and a
        walk of its tails (15-25 us where the walk took 125-500 us); a smaller one (digits:
        Llama-3 spells at most three) is walked faster in `cold_mask`, as before.

        Made with the first mask computed, and the binding's `slice_plan` and the tables of
        counted entries (`counted.prepare`) with it, so that no string body's first mask pays
        for them; the first mask makes the first string bodies' entries too
        (`_tail_entries`)."""
        binding = self._binding
        maybe = slice_candidates(binding)
        slice_plan(binding)
        counted.prepare(binding)
        if not self.n_advanced:
            self._tail_entries()
        bound = walk_bound(binding)
        runs = run_states(binding) & (bound > WALKED_NODES)
        return ((bound <= DESCRIBE_ABOVE_NODES) & ~maybe.any(axis=0) & ~runs).tolist()

    def _tail_entries(self) -> None:
        """Make the entries of the first `FIRST_ENTRIES` frames the slice plan walks by tails
        (string bodies, identifier loops), as part of the first mask. Met in a document, each
        first entry cost 140-190 us (its walks run over memory the compile and the masks
        before it have evicted) and they made most of the slowest 1% of masks; made one after
        the other here, the first costs about as much and the next ones about 80 us, and the
        document then finds them made. Only while nothing is advanced: a matcher whose first
        masks came from its store makes its entries as it meets them."""
        tails = (key for key, (_, _, after) in slice_plan(self._binding).items() if after)
        for key in itertools.islice(tails, FIRST_ENTRIES):
            self._frame(key)

    @functools.cached_property
    def _frame_prefix(self) -> tuple:
        """`framecache.memory_key` of a cheap frame, without its frame key."""
        return memory_key(self._binding, 0, None)[:-1]

    def _frame(self, frame: int) -> FrameEntry:
        """The `FrameEntry` of top frame `frame`: precomputed, shared by residual (in memory
        or on disk), or walked now and shared; kept by the matcher too, so that a frame met
        again (a string body, token after token) is one lookup."""
        entry = self._entries.get(frame)
        if entry is not None:
            return entry
        entry = self._lookup(frame)
        if len(self._entries) >= ENTRIES_KEPT:
            self._entries.clear()
        self._entries[frame] = entry
        return entry

    def _lookup(self, frame: int) -> FrameEntry:
        """`_frame` without the matcher's own memo."""
        key = frame_key(frame, self._longest)
        if self._precomputed is not None:
            entry = self._precomputed.entry_of(key)
            if entry is not None:
                return entry
        entry, found = entry_for(self._binding, key, self._scratch, self._cache, self._disk)
        if found != "cache":
            self.last_source = found
        return entry

    def _mask(self) -> Form:
        """The mask at the current configuration, as a `maskform` form: from the store when
        it holds the configuration (the start one is checked and ready when the matcher is
        made, the others are decoded on the first lookup the start one does not answer),
        else the words of `_words` (`Dense`, made once per array)."""
        store = self._store
        if store is not None and self._direct is None:
            config = self._history[-1]
            if config is not None:
                # a configuration without counters is its own key; one with counters that is a
                # key is its own key too (keys are clipped: clipping it changes nothing), so
                # `mask_key` is made only on a miss with counters
                form = store.masks.get(config)
                if form is None:
                    form = self._stored(store, config)
                if form is not None:
                    self.last_source = "store"
                    return form
        words = self._words()
        if words is not self._form_of:  # consecutive masks are often the same array
            self._form_of, self._form = words, Dense.of(words)
        return self._form

    def _stored(self, store: MaskStore, config: tuple[int, ...]) -> Form | None:
        """The store's mask of a configuration that is not its own key: keyed by its
        `mask_key` when it has counters, and looked up again once the store's rest is loaded."""
        key = mask_key(config, self._longest) if max(config) > STATE_MASK else config
        form = store.masks.get(key) if key is not config else None
        if form is None and store.pending:
            store.load_rest()
            form = store.masks.get(key)
        return form

    def _words(self) -> np.ndarray:
        """The mask at the current configuration as uint32 words (read-only)."""
        config = self._history[-1]
        binding = self._binding
        direct = self._direct
        if direct is not None and config is not None:
            found = direct.rows.get(frame_key(config[-1], self._longest))
            if found is not None:
                row, height, closed = found
                below = 0 if len(config) == 1 else depth(binding.tables, config[:-1])
                if (closed or len(config) == 1) and below + height <= direct.max_depth:
                    self.last_source = "frame"
                    return row
        if config is None:
            key = (*binding.key, None)
            words = self._cache.get(key)
            self.last_source = "cache"
            if words is None:
                self.last_source = "walk"
                words = self._cache.put(key, mask_words(binding, config, self._scratch), 0)
            return words
        store = self._store
        if len(config) == 1:
            top = config[0]
            if top <= STATE_MASK and (plan := self._one_frame_plan[top]):
                words = self._one_frame(top, plan)
                if words is not None:
                    if store is not None:
                        self._keep(store, config, plan, words)
                    return words
        mkey = config if max(config) <= STATE_MASK else mask_key(config, self._longest)
        if store is not None:
            if store.pending:
                store.load_rest()
            form = store.masks.get(mkey)
            if form is not None:
                self.last_source = "store"
                return form.words()
        key = (*binding.key, mkey)
        words = self._cache.get(key)
        if words is not None:
            self.last_source = "cache"
        else:
            words = self._compute(config, key)
        if store is not None:
            store.add(mkey, words)
        return words

    def _keep(self, store: MaskStore, config: Config, plan: int, words: np.ndarray) -> None:
        """Give the store the mask of the one-frame configuration `config`, made by plan
        `plan`. A `WALKED` mask is in the scratch: keeping it would take a copy or a scan of
        its words now, and a store-bearing matcher paid 6-20 us a mask more than one without
        (paired, the same masks) for keeping them; the store's publisher walks it again
        instead, in a quiet moment (`MaskStore.add_walked`). The start mask is copied now: the
        start entry publishes it with the artifact."""
        if plan != WALKED:
            store.add(config, words)
        elif config == START:
            store.add(config, words.copy())
        else:
            store.add_walked(config)

    def _compute(self, config: Config, key: tuple) -> np.ndarray:
        """The mask at `config` (kept in the in-memory cache under `key`, whose last item is
        its `mask_key`, unless it is the top frame's accept set itself), in one compiled call
        (`kernel.cold_mask`): the top frame's entry combined with a walk of its open roots from
        the live stack (a full walk near `max_depth`), then special tokens and EOS. A cheap
        frame's entry (`_cheap`) is walked in the same call when the cache lacks it; any other
        comes from `_frame` (precomputed, shared by residual, or walked with the slices)."""
        binding = self._binding
        self.last_source = "frame"
        keys = key[-1]
        top = keys[-1]
        fresh = False  # the entry is walked with the mask, in the same compiled call
        if self._precomputed is None and self._cheap[top & STATE_MASK]:
            memory = (*self._frame_prefix, top)  # `framecache.memory_key` of a cheap frame
            entry = self._cache.get(memory)
            fresh = entry is None
        else:
            entry = self._frame(config[-1])
        if entry is not None:
            alone = len(config) == 1 or not entry.open_roots.size  # nothing below is walked
            if alone and self._plain[top & STATE_MASK]:
                below = 0 if len(config) == 1 else depth(binding.tables, config[:-1])
                if below + entry.height <= binding.tables.max_depth:
                    return entry.accept  # the whole mask, as a direct row is (`DirectRows`)
        scratch = self._scratch
        words = scratch.words  # copied when kept: most masks are an entry's accept set
        if fresh:
            entry, direct = self._walk_entry(keys, memory)
            if direct:
                return entry.accept
            words = words.copy()
            return self._cache.put(key, words, words.nbytes)
        open_tails = None if len(config) == 1 else entry.tails
        after = None if open_tails is None else self._after_member(open_tails.k, top)
        if after is None:
            known = entry
        else:  # the headless roots through `cold_mask`, the open tails walked below
            known = FrameEntry(entry.accept, open_tails.headless, entry.height)
        direct = cold_mask(scratch, keys, words, known)
        if after is not None and PH_FULL not in phases_run(scratch):
            if direct:
                words[:] = entry.accept
                direct = False
            trie = binding.slices().raw.tails(open_tails.k).trie
            run_walk(binding, (*keys[:-1], *after), words, scratch, open_tails.nodes, False, None,
                     trie)  # fmt: skip
        if direct:
            return entry.accept
        words = words.copy()
        return self._cache.put(key, words, words.nbytes)

    def _walk_entry(self, keys: tuple, memory: tuple) -> tuple[FrameEntry, bool]:
        """The entry of the cheap top frame of `keys`, walked now and kept in the cache under
        `memory` (its `framecache.memory_key`), with the mask at `keys` in the same compiled
        call (`kernel.cold_mask`): (the entry, whether its accept set is the whole mask; else
        the mask is in the scratch's words)."""
        self.last_source = "walk"
        fresh = np.empty(self._n_words, dtype=np.uint32)
        scratch = self._scratch
        direct = cold_mask(scratch, keys, scratch.words, None, fresh)
        roots, height = computed_entry(scratch)
        fresh.setflags(write=False)
        entry = FrameEntry(fresh, roots, height)
        self._cache.put(memory, entry, fresh.nbytes + roots.nbytes)
        return entry, direct

    @functools.cached_property
    def _one_frame_plan(self) -> list[int]:
        """Per state, how `_words` masks a one-frame configuration at it: `GENERAL` (the key
        of the configuration, then `_compute`), or, when its entry's accept set is its whole
        mask (`_plain`: no EOS, no special token), `_one_frame` with `WALKED` (an entry walked
        inside `cold_mask`, `_cheap`, whose walk can visit at most `WALKED_NODES` trie nodes:
        walked every time, into the scratch), `KEPT` (a larger one, kept in the cache) or
        `ENTRY` (any other: the entry of `_frame`, a string body's among them). Only `GENERAL`
        with precomputed masks (their rows come first)."""
        if self._precomputed is None:
            cheap = np.asarray(self._cheap)
            small = walk_bound(self._binding) <= WALKED_NODES
            kind = np.where(cheap, np.where(small, WALKED, KEPT), ENTRY)
            return np.where(self._plain, kind, GENERAL).tolist()
        return [GENERAL] * len(self._plain)  # `_cheap` (and the slice plan) never needed

    def _one_frame(self, top: int, plan: int) -> np.ndarray | None:
        """The mask of the one-frame configuration `(top,)` (`_one_frame_plan`): walked now
        into the scratch (`WALKED`), or its entry's accept set, read from the cache or walked
        now and kept (`KEPT`), or from `_frame` (`ENTRY`: a string body's, one lookup per
        character once made); None when that entry is too high for `max_depth` (`_compute`
        then walks the mask whole). No key of the configuration is made or looked up:
        `_compute` keeps a mask under one only when it is not an accept set.

        A small walk is not kept: in a document's first pass most configurations are new, and
        keeping their entries (a fresh 16-19 KB array written per mask, then found in the cache
        and copied out) cost more than walking them again. The scratch's words are returned
        as they are: the caller reads them before the next mask."""
        if plan == WALKED:
            self.last_source = "walk"
            return walked_mask(self._scratch, top)
        if plan == ENTRY:
            self.last_source = "frame"  # unless `_frame` computes it now
            entry = self._frame(top)
        else:
            memory = (*self._frame_prefix, top)
            entry = self._cache.get(memory)
            if entry is None:
                entry, direct = self._walk_entry((top,), memory)
                return entry.accept if direct else None
            self.last_source = "frame"
        return entry.accept if entry.height <= self._binding.tables.max_depth else None

    def _after_member(self, k: int, top: int) -> tuple | None:
        """The frames after a member of slice `k` for top frame key `top` in this binding
        (`precompute.slice_of`), so that an entry's open tails (`precompute.OpenTails`) are
        walked in the tail trie from the live stack instead of a trie node per token below
        them; None when this binding walks `top` otherwise."""
        found, _, after = slice_of(self._binding, top)
        return after if found == k else None

    def allowed_tokens(self) -> np.ndarray:
        """bool[vocab_size]: the tokens allowed next."""
        return unpack(self._mask().words(), self.vocab_size)

    def allowed_tokens_packed(self) -> np.ndarray:
        """int32[ceil(V/32)]: bit `t % 32` of word `t // 32` set = token `t` allowed."""
        return self._mask().words().view(np.int32).copy()

    def fill_bitmask(self, buffer: Any, index: int = 0) -> None:
        """Write the packed mask into row `index` of a caller's int32 `(batch, ceil(V/32))`
        buffer, without allocating. The buffer is a numpy array or a CPU torch tensor (written
        through a numpy view of its memory); a buffer wider than the mask (a model vocabulary
        padded past the tokenizer's) gets 0 words, so the extra ids are never allowed."""
        if buffer is self._filled and index == self._filled_index and buffer.flags.writeable:
            row = self._filled_row  # the numpy buffer of the last call, checked then
        else:
            row = self._checked_row(buffer, index)
        self._mask().fill(row)  # type: ignore[arg-type]
        if row.tail is not None:  # type: ignore[union-attr]
            row.clear_tail()  # type: ignore[union-attr]

    def _checked_row(self, buffer: Any, index: int) -> Row:
        """Row `index` of a bitmask buffer (`maskform.Row`: its first `n_words` words and the
        rest, None when there is none), after every check `fill_bitmask` documents. A numpy buffer is
        remembered with its row (its shape and dtype cannot change), so a decoder filling one
        buffer again and again is checked once; a torch tensor is checked every time (it may
        be resized in place)."""
        expected = self._n_words
        array = _numpy_view(buffer)
        if array.dtype != _INT32:
            raise TrgcError("E_BITMASK_BUFFER", f"expected dtype int32, got {array.dtype}")
        shape = array.shape
        if len(shape) != 2 or shape[1] < expected:
            raise TrgcError(
                "E_BITMASK_BUFFER", f"expected shape (batch, >= {expected}), got {shape}"
            )
        flags = array.flags
        if not flags.c_contiguous or not flags.writeable:
            raise TrgcError("E_BITMASK_BUFFER", "expected a writeable C-contiguous buffer")
        if not 0 <= index < shape[0]:
            raise TrgcError("E_BITMASK_BUFFER", f"expected index in [0, {shape[0]}), got {index}")
        row = Row.within(array, index, expected)
        if array is buffer:
            self._filled, self._filled_index, self._filled_row = buffer, index, row
        return row

    def is_allowed(self, token_id: int) -> bool:
        """Whether `token_id` may be advanced now (without computing the whole mask)."""
        return self._next(token_id) is not False

    # -- moves ---------------------------------------------------------------------------
    def _next(self, token_id: int) -> Config | None | bool:
        """The configuration after `token_id` (None = terminated by EOS), False if refused."""
        config = self._history[-1]
        b = self._binding
        if config is None or not 0 <= token_id < self._vocab_size:
            return False
        # a grammar symbol first (see the special-token policy in binding.py)
        special = self._specials.get(token_id)
        if special is not None:
            nxt = step(b.tables, config, special)
            if nxt is not None:
                return nxt
        if token_id in self._eos:
            return None if is_accepting(b.tables, config) else False
        if special is not None or not self._byte_token[token_id]:
            return False
        data = b.token_bytes(token_id)
        tables = b.tables
        nxt = shift_bytes(tables, config, data)
        if nxt is False:  # a call, return or restart on the way
            nxt = step_bytes(tables, config, data)
        return False if nxt is None else nxt

    def advance(self, token_id: int) -> None:
        """Consume `token_id`; `E_TOKEN_NOT_ALLOWED` (and no state change) if it is not allowed.
        An allowed EOS terminates the matcher."""
        token_id = int(token_id)
        nxt = self._next(token_id)
        if nxt is False:
            state = "terminated" if self.is_terminated() else f"configuration {self.config_id()}"
            raise TrgcError(
                "E_TOKEN_NOT_ALLOWED",
                f"token {token_id} is not allowed in the {state}",
                details={"token": token_id, "config_id": self.config_id()},
            )
        self._history.append(nxt)  # type: ignore[arg-type]
        store = self._store
        if store is not None and store.pending:  # the tables were just decoded: the rest too
            store.load_rest()

    def rollback(self, n: int) -> None:
        """Undo the last `n` advanced tokens (speculative decoding)."""
        if not 0 <= n <= self.n_advanced:
            raise TrgcError(
                "E_ROLLBACK_TOO_FAR",
                f"cannot roll back {n} tokens: {self.n_advanced} advanced since the start",
            )
        if n:
            del self._history[-n:]

    def reset(self) -> None:
        """Back to the start configuration (history cleared)."""
        self._history = [START]

    def forced_bytes(self, limit: int = FORCED_BYTES_LIMIT) -> bytes:
        """The longest byte string (up to `limit`) every continuation must start with.

        Empty when the configuration is accepting (EOS may come next), when a special token is
        admitted, or when two different bytes are viable.
        """
        config = self.config
        b = self._binding
        out = bytearray()
        if config is None:
            return b""
        tables = b.tables
        while len(out) < limit and not is_accepting(tables, config):
            if any(step(tables, config, int(s)) is not None for s in b.special_syms):
                break
            viable = [c for c in range(tables.n_classes) if step(tables, config, c) is not None]
            if len(viable) != 1:
                break
            members = np.flatnonzero(tables.byte_class == viable[0])
            if members.size != 1:
                break
            out.append(int(members[0]))
            config = step(tables, config, viable[0])  # type: ignore[assignment]
        return bytes(out)

    def cache_stats(self) -> dict[str, int]:
        """Counters of the in-memory cache this matcher uses."""
        return self._cache.stats()


def _numpy_view(buffer: Any) -> np.ndarray:
    """A numpy array, or the numpy view of a CPU torch tensor's memory (torch is never
    imported here: a tensor is recognised by its type's module)."""
    if isinstance(buffer, np.ndarray):
        return buffer
    if type(buffer).__module__.split(".")[0] == "torch" and hasattr(buffer, "numpy"):
        device = str(getattr(buffer, "device", "cpu"))
        if device != "cpu":
            raise TrgcError(
                "E_BITMASK_BUFFER",
                f"expected a CPU tensor, got one on {device}",
                hint="fill a CPU buffer and copy it over (trgc.torch.fill_next_token_bitmask does)",
            )
        if str(buffer.dtype) != "torch.int32":
            raise TrgcError("E_BITMASK_BUFFER", f"expected dtype torch.int32, got {buffer.dtype}")
        if not buffer.is_contiguous():
            raise TrgcError("E_BITMASK_BUFFER", "expected a writeable C-contiguous buffer")
        return buffer.numpy()
    raise TrgcError(
        "E_BITMASK_BUFFER",
        f"expected a numpy array or a CPU torch tensor, got {type(buffer).__name__}",
    )
