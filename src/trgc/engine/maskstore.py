"""The mask store: the masks a `Matcher` computed, kept per artifact and tokenizer in a `DiskCache`.

A mask is a function of the configuration's `mask_key` and the binding (artifact, token
table, compiler version, special-token policy), so the masks one process computed for an
artifact are valid in every later process bound the same way: with a store, a configuration
seen before is a dictionary lookup instead of frame entries read, combined and checked (about
2 us instead of 50 us and more). The entry's key is an `EntryKey` of kind `masks` (format 2)
whose subject is the artifact's identity, with the tokenizer identity, compiler version and
policy as its own fields. The payload (little-endian) puts the start configuration's mask on
its own, so that a warm matcher's first mask is read and checked without the others:

    magic      8 bytes  b"TRGCMSK2"
    n_words    u32      words per mask (ceil(vocab_size / 32))
    n_configs  u32      configurations in all, the start one included
    body_size  u32      bytes of the decompressed body below
    start_size u32      bytes of the start mask (0: the store lacks the start configuration)
    start      one mask in the bytes of `trgc.engine.maskform` (sparse or dense)
    body       one zstd frame of:
      n_masks, n_frames, n_sparse, n_dense   u32 each
      lengths   u32[n_rest]        frames per configuration (>= 1), n_rest = the others
      frames    int64[n_frames]    their mask keys' frames, bottom first, keys sorted
      index     u32[n_rest]        the mask of each configuration
      counts    u32[n_masks]       nonzero words of a sparse mask (< n_words / 2), or n_words
      positions u32[n_sparse]      the sparse masks' nonzero words, mask after mask
      values    u32[n_sparse]
      dense     uint32[n_dense, n_words]   the dense masks, in mask order

Distinct masks are numbered in order of first use by the sorted configurations; a mask is
sparse exactly when that form is the smaller. Same masks, same bytes. Nothing is trusted
blindly: on top of the container's digest and key, loading checks the header (magic, width,
sizes) and the start mask (its form, and no bit on a token no mask of the binding can allow:
one without bytes that is neither EOS nor a special token of the grammar, or past
`vocab_size`); the body is decompressed and checked at the matcher's first `advance`, or
when a configuration other than the start one is looked up before it (sizes, configurations sorted and distinct, frames naming states
of this artifact with counters clipped, indices in range, sparse words in order and nonzero,
the bits of every mask). A payload that fails is refused (`E_CACHE_ENTRY_PAYLOAD`), removed,
and the masks are computed again (a start mask already answered was checked on its own).

The start mask is also kept in the artifact cache's start entry (`trgc.compiler.cache`, kind
`artifact-start`: the artifact and its start mask for one binding, keyed by the artifact key's
subject and the binding's tokenizer, compiler and policy), published here in the background
when the artifact came through the artifact cache without one. A matcher whose artifact was
read from a start entry takes its start mask from there (the same checks as the store's) and
reads the store entry at its first `advance`: a warm first mask is one cache read. A
store holds at most `MAX_CONFIGS` configurations; it is republished (replacing the entry) in
a quiet moment whenever its matcher computed new masks, so when several processes extend one
store at once the last writer's whole store wins (every version is a sound store; the
others' new masks are computed again later).

A mask the matcher walked into its scratch (a one-frame configuration whose walk is small:
`Matcher._one_frame_plan`'s `WALKED`) is not copied into the store as it is made: the store
holds its configuration (`add_walked`) and the publisher walks it again when it writes the
store (`kernel.one_frame_masks`, a scratch of its own, the kernel without the interpreter
lock), so a matcher with a disk cache costs a new schema what one without costs it. Keeping
a copy of each (16 KB of new memory on Llama-3) or scanning it for a sparse form made every
such mask 6-20 us slower than the same mask without a store.
"""

from __future__ import annotations

import functools
import struct

import numpy as np

from trgc.engine import maskform
from trgc.engine.binding import Binding
from trgc.engine.bits import pack
from trgc.engine.cache import MaskCache
from trgc.engine.config import CLIP_MASK, START, STATE_MASK
from trgc.engine.diskcache import DiskCache, EntryKey
from trgc.engine.kernel import one_frame_masks
from trgc.errors import TrgcError

KIND = "masks"
FORMAT = 2
MAGIC = b"TRGCMSK2"
_HEAD = struct.Struct("<8sIIII")  # magic, n_words, n_configs, body_size, start_size
_BODY = struct.Struct("<IIII")  # n_masks, n_frames, n_sparse (words), n_dense (masks)
MAX_CONFIGS = 4096  # configurations per store; beyond it new masks stay in memory only
HEAD_FRAMES = 1 << 12  # frames per configuration the header's size check allows at most
ZSTD_LEVEL = 3
START_LINK = "cache.start"  # the memo key `trgc.compiler.cache` keeps an artifact's StartLink under

MaskKey = tuple[int, ...]


def store_key(binding: Binding) -> EntryKey:
    """The store's key for `binding`: every field of `Binding.key` takes part."""
    artifact, tokenizer, compiler, policy = binding.key
    return EntryKey(KIND, FORMAT, tokenizer, compiler, policy, f"artifact {artifact}")


def _words(mask) -> np.ndarray:
    return mask if isinstance(mask, np.ndarray) else mask.words()


def encode_store(n_words: int, masks: dict) -> bytes:
    """The payload of a store holding `masks` (mask key -> uint32 words or a `maskform`
    form): the start configuration's mask on its own, then one zstd frame of the others."""
    import zstandard

    start = masks.get(START)
    start_bytes = b"" if start is None else maskform.encode(_words(start))
    keys = sorted(k for k in masks if k != START)
    slot: dict[bytes, int] = {}
    distinct: list[np.ndarray] = []
    index = np.empty(len(keys), dtype="<u4")
    for i, key in enumerate(keys):
        words = np.ascontiguousarray(_words(masks[key]), dtype="<u4")
        found = slot.setdefault(words.tobytes(), len(slot))
        if found == len(distinct):
            distinct.append(words)
        index[i] = found
    counts = np.empty(len(distinct), dtype="<u4")
    positions, values, dense = [], [], []
    for m, words in enumerate(distinct):
        nonzero = maskform.nonzero_positions(words)
        if 2 * nonzero.size < n_words:
            counts[m] = nonzero.size
            positions.append(nonzero.astype("<u4"))
            values.append(words[nonzero])
        else:
            counts[m] = n_words
            dense.append(words)
    lengths = np.array([len(k) for k in keys], dtype="<u4")
    frames = np.array([f for k in keys for f in k], dtype="<i8")
    n_sparse = int(sum(p.size for p in positions))
    body = b"".join((_BODY.pack(len(distinct), frames.size, n_sparse, len(dense)),
                     lengths.tobytes(), frames.tobytes(), index.tobytes(), counts.tobytes(),
                     *(p.tobytes() for p in positions), *(v.tobytes() for v in values),
                     *(d.tobytes() for d in dense)))  # fmt: skip
    n_configs = len(keys) + (start is not None)
    head = _HEAD.pack(MAGIC, n_words, n_configs, len(body), len(start_bytes))
    return head + start_bytes + zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(body)


def _bad(message: str) -> TrgcError:
    return TrgcError("E_CACHE_ENTRY_PAYLOAD", f"mask store: {message}")


def _body_bound(binding: Binding, frames_per_config: int) -> int:
    """The most bytes a sound store's compressed part can hold for `binding` when no
    configuration has more than `frames_per_config` frames."""
    per_config = 4 + 8 * frames_per_config + 4 + 8 + 4 * binding.n_words
    return _BODY.size + MAX_CONFIGS * per_config


def _form(binding: Binding, data, at: int) -> tuple[maskform.Form, int]:
    try:
        form, end = maskform.decode(data, at, binding.n_words)
    except maskform.FormError as error:
        raise _bad(str(error)) from None
    if not maskform.allows_only(form, _possible_words(binding)):
        raise _bad("a mask allows a token this binding never allows (or one past the vocabulary)")
    return form, end


def _forms(binding: Binding, counts, positions, values, dense) -> list[maskform.Form]:
    """The masks of a store's compressed part, checked all at once: `counts[m]` is the
    nonzero words of sparse mask `m` (fewer than half the words) or `n_words` for a dense
    one; sparse positions strictly increasing within a mask and inside the mask, values
    nonzero, and no bit on a token the binding never allows."""
    n_words = binding.n_words
    is_dense = counts == n_words
    sparse_counts = np.where(is_dense, 0, counts).astype(np.int64)
    if (
        int(is_dense.sum()) != dense.shape[0]
        or (2 * sparse_counts[~is_dense] >= n_words).any()
        or int(sparse_counts.sum()) != positions.size
    ):
        raise _bad("mask sizes do not add up")
    ends = np.cumsum(sparse_counts)
    if positions.size:
        step = np.diff(positions.astype(np.int64))
        last = ends[:-1] - 1  # each mask's last word: the step after it starts the next mask
        step[last[(last >= 0) & (last < step.size)]] = 1
        if int(positions.max()) >= n_words or (step <= 0).any() or not values.all():
            raise _bad("sparse positions out of order or range, or a zero word")
    possible = _possible_words(binding)
    if (values & ~possible[positions]).any() or (dense & ~possible).any():
        raise _bad("a mask allows a token this binding never allows (or one past the vocabulary)")
    forms: list[maskform.Form] = []
    starts, stops = (ends - sparse_counts).tolist(), ends.tolist()
    at, signed = positions.tolist(), values.view(np.int32).tolist()  # every mask's pairs at once
    row = 0
    for m, dense_mask in enumerate(is_dense.tolist()):
        if dense_mask:
            forms.append(maskform.Dense(memoryview(dense[row]).cast("B")))
            row += 1
            continue
        a, b = starts[m], stops[m]
        small = b - a <= maskform.LOOP_WORDS
        items = tuple(zip(at[a:b], signed[a:b], strict=True)) if small else None
        forms.append(maskform.Sparse(n_words, positions[a:b], values[a:b], items))
    return forms


def decode_head(binding: Binding, payload: bytes) -> tuple[maskform.Form | None, tuple]:
    """(the start configuration's mask or None, the arguments of `decode_rest`) of a
    store payload for `binding`: every check of the part read now (magic, width, sizes, the
    start mask's form and bits); `decode_rest` checks the rest when it is first needed."""
    if len(payload) < _HEAD.size:
        raise _bad("the header is cut short")
    magic, words, n_configs, body_size, start_size = _HEAD.unpack_from(payload)
    if magic != MAGIC or words != binding.n_words:
        raise _bad("another magic or mask width")
    if not 0 < n_configs <= MAX_CONFIGS or body_size > _body_bound(binding, HEAD_FRAMES):
        raise _bad(f"{n_configs} configurations in {body_size:,} bytes")
    start = None
    rest_at = _HEAD.size + start_size
    if start_size:
        start, end = _form(binding, payload, _HEAD.size)
        if end != rest_at:
            raise _bad("the start configuration's mask does not fill its section")
    return start, (n_configs, body_size, payload[rest_at:], start is not None)


def decode_rest(
    binding: Binding, n_configs: int, body_size: int, rest: bytes, with_start: bool
) -> dict[MaskKey, maskform.Form]:
    """The masks of every configuration but the start one, from the compressed part of a
    store payload; raise `E_CACHE_ENTRY_PAYLOAD` for anything that is not a sound store of
    this binding (sizes, order, frames naming states of the artifact with clipped counters,
    mask forms and bits)."""
    import zstandard

    bound = min(body_size, _body_bound(binding, binding.tables.max_frames))
    try:
        body = zstandard.ZstdDecompressor().decompress(rest, max_output_size=bound)
    except zstandard.ZstdError as exc:
        raise _bad(f"does not decompress ({exc})") from None
    if len(body) != body_size or len(body) < _BODY.size:
        raise _bad("the body is not the size its header declares")
    n_rest = n_configs - with_start
    n_masks, n_frames, n_sparse, n_dense = _BODY.unpack_from(body)
    if n_masks > n_rest or (n_rest and not n_masks) or n_dense > n_masks:
        raise _bad(f"{n_rest} configurations and {n_masks} masks")
    n_words = binding.n_words
    sizes = (4 * n_rest, 8 * n_frames, 4 * n_rest, 4 * n_masks, 4 * n_sparse, 4 * n_sparse,
             4 * n_dense * n_words)  # fmt: skip
    if len(body) != _BODY.size + sum(sizes):
        raise _bad("the sections do not add up to the payload")
    at = _BODY.size
    parts = []
    for size, dtype in zip(sizes, ("<u4", "<i8", "<u4", "<u4", "<u4", "<u4", "<u4"), strict=True):
        parts.append(np.frombuffer(body, dtype=dtype, count=size // np.dtype(dtype).itemsize,
                                   offset=at))  # fmt: skip
        at += size
    lengths, frames, index, counts, positions, values, dense = parts
    forms = _forms(binding, counts, positions, values, dense.reshape(n_dense, n_words))
    if not n_rest:
        return {}
    if lengths.min() < 1 or int(lengths.sum()) != n_frames:
        raise _bad("configuration lengths do not add up to the frames")
    states = frames & STATE_MASK
    longest = binding.trie_depth
    if (
        frames.min() < 0
        or states.max() >= binding.tables.next.shape[0]
        or ((frames >> 32) & CLIP_MASK).max() > longest
        or (frames >> 48).max() > longest + 1
    ):
        raise _bad("a frame names no state of this artifact or an unclipped counter")
    if index.max() >= n_masks:
        raise _bad("a mask index is out of range")
    out: dict[MaskKey, maskform.Form] = {}
    previous: MaskKey = START
    starts = [0, *np.cumsum(lengths, dtype=np.int64).tolist()]
    all_frames = frames.tolist()
    for i, mask in enumerate(index.tolist()):
        key = tuple(all_frames[starts[i] : starts[i + 1]])
        if key <= previous:
            raise _bad("configurations are not sorted and distinct (or the start one repeated)")
        out[key] = forms[mask]
        previous = key
    return out


def decode_store(binding: Binding, payload: bytes) -> dict[MaskKey, maskform.Form]:
    """Every mask of a store payload for `binding` (both parts, checked)."""
    start, rest = decode_head(binding, payload)
    out = {} if start is None else {START: start}
    out.update(decode_rest(binding, *rest))
    return out


def _possible_words(binding: Binding) -> np.ndarray:
    """Packed: the tokens a mask of this binding may allow at all (byte tokens, the grammar's
    special tokens, EOS); computed once per binding, and once per token table for the
    bindings whose grammar names no special token (most schemas: a warm first mask is then
    checked without a pass over the vocabulary)."""
    found = binding._lazy.get("possible_words")
    if found is None:
        shared = binding.vocab._lazy
        base = shared.get("possible_words")
        if base is None:
            possible = binding.vocab.byte_base.copy()
            possible[binding.eos_ids] = True
            base = shared.setdefault("possible_words", pack(possible))
        found = base
        if binding.special_ids.size or binding.byte_token is not binding.vocab.byte_base:
            possible = binding.byte_token.copy()
            possible[binding.special_ids] = True
            possible[binding.eos_ids] = True
            found = pack(possible)
        binding._lazy["possible_words"] = found
    return found


class MaskStore:
    """One matcher's view of the store of its binding: the masks loaded from the `DiskCache`
    and those computed since (`maskform` forms), republished together in the background when
    new ones came.

    The start configuration's mask comes first, with nothing else: from the start entry the
    artifact was read from (`trgc.compiler.cache.StartLink`: artifact and start mask in one
    read), else from the store entry, read when the store is made (its header and start mask
    checked, the rest kept compressed). Everything else (the store entry when the start entry
    answered, the rest) is `pending` until `load_rest`, which the matcher calls at its first
    `advance` (that call decodes the artifact's tables too) or at the first lookup the start
    mask does not answer: a warm matcher's first mask costs one read, its second a lookup."""

    def __init__(self, binding: Binding, disk: DiskCache) -> None:
        self._disk = disk
        self._binding = binding
        self.masks: dict[MaskKey, maskform.Form] = {}
        self.pending = False
        self.declared_bytes = 0  # decompressed size of the part not loaded yet
        self._rest: tuple | None = None  # the arguments of `decode_rest` while pending
        self._unread = False  # the store entry is still to be read (the start entry answered)
        self._publishing = False
        # one-frame configurations whose masks the publisher walks (`add_walked`), and the
        # masks it walked (touched by the publisher's thread only)
        self._walked: dict[MaskKey, None] = {}
        self._walked_masks: dict[MaskKey, np.ndarray] = {}
        self._link = binding.artifact._cache.get(START_LINK)
        self._start_published = False
        if self._link is not None:
            disk.last_binding = binding.key[1:]
            if self._start_from_link():
                self._unread = self.pending = True
                return
        self._read_store()

    @functools.cached_property
    def _key(self) -> EntryKey:
        """The store entry's key (made when first needed: a start entry answers without)."""
        return store_key(self._binding)

    def _start_from_link(self) -> bool:
        """Take the start mask of the start entry the artifact came from, when it is this
        binding's and passes every check of a store's start mask; a head that fails is
        refused (its entry removed) and the store entry answers instead."""
        head = self._link.head
        if head is None or tuple(head[:3]) != self._binding.key[1:]:
            return False
        try:
            start, end = _form(self._binding, head[3], 0)
            if end != len(head[3]):
                raise _bad("the start mask does not fill its section")
        except TrgcError as error:
            self._refuse(error, self._start_key())
            return False
        self.masks[START] = start
        self._start_published = True
        return True

    def _start_key(self) -> EntryKey:
        _, tokenizer, compiler, policy = self._binding.key
        link = self._link
        return EntryKey(link.kind, link.format, tokenizer, compiler, policy, link.subject)

    def _read_store(self) -> None:
        """Read the store entry: its header and start mask checked now, the rest pending."""
        payload = self._disk.get(self._key)
        if payload is None:
            return
        try:
            start, self._rest = decode_head(self._binding, payload)
        except TrgcError as error:
            self._refuse(error, self._key)
            return
        if start is not None:
            self.masks.setdefault(START, start)
            self._publish_start(start)
        self.pending = True
        self.declared_bytes = self._rest[1]

    def _refuse(self, error: TrgcError, key: EntryKey) -> None:
        self._disk.discard(
            key,
            TrgcError(
                error.code,
                f"cache entry refused: {error.message}",
                source=str(self._disk.path_of(key)),
                hint="the entry was removed; its masks are computed again",
            ),
        )

    def _publish_start(self, start: maskform.Form) -> None:
        """Publish the start entry of this binding (the artifact and `start`) in the
        background, once, when the artifact came through the artifact cache without one."""
        if self._link is None or self._start_published:
            return
        self._start_published = True
        artifact, link = self._binding.artifact, self._link
        self._disk.put_later(
            self._start_key(),
            lambda: link.payload(artifact.to_bytes(), maskform.encode(start.words())),
        )

    def load_rest(self) -> None:
        """Read the store entry if the start entry answered so far, then decode and check the
        configurations not loaded yet; a store that fails is refused (removed) and only the
        masks computed since are kept, the start one too (it was checked on its own)."""
        if self._unread:
            self._unread = False
            self._read_store()
        rest, self._rest, self.pending = self._rest, None, False
        if rest is None:
            return
        try:
            loaded = decode_rest(self._binding, *rest)
        except TrgcError as error:
            self._refuse(error, self._key)
            return
        loaded.update(self.masks)
        self.masks = loaded

    @property
    def size(self) -> int:
        """Configurations held: the masks kept and the configurations to walk."""
        return len(self.masks) + len(self._walked)

    def __contains__(self, key: MaskKey) -> bool:
        return key in self.masks or key in self._walked

    def add(self, key: MaskKey, words: np.ndarray) -> None:
        """Keep a mask computed now and schedule a republication (unless one is pending or
        the store is full). It is kept as a view of `words` (read-only, and held by the
        matcher's cache as well), not in its stored form: choosing and making that (a scan and,
        for a sparse mask, its position and value arrays) cost 5-9 us on every mask computed
        with a disk cache, twice what the mask often cost; `encode_store` chooses it when the
        store is written, in the publisher's thread."""
        if self.pending:
            self.load_rest()
        if self.size >= MAX_CONFIGS:
            return
        form = self.masks[key] = maskform.Dense.of(words)
        if key == START:
            self._publish_start(form)
        self._republish()

    def add_walked(self, key: MaskKey) -> None:
        """Keep the one-frame configuration `key` (not the start one), whose mask the matcher
        walked into its scratch, to be walked again (`kernel.one_frame_masks`) in the
        publisher's thread when the store is written: a copy kept now (new memory) or a scan
        for a sparse form cost more than the walk itself. Until then this process walks it
        again when it comes back, as a matcher without a store does."""
        if self.pending:
            self.load_rest()
        if key in self._walked or self.size >= MAX_CONFIGS:
            return
        self._walked[key] = None
        self._republish()

    def _republish(self) -> None:
        if not self._publishing:
            self._publishing = True
            self._disk.put_later(self._key, self._payload, replace=True)

    def _payload(self) -> bytes:
        """Run by the publisher thread: a snapshot of the masks so far (a dict copy is atomic
        under the interpreter lock), with the walked configurations' masks walked now."""
        self._publishing = False
        masks: dict[MaskKey, object] = dict(self.masks)
        todo = [key for key in list(self._walked) if key not in self._walked_masks]
        if todo:
            walked = one_frame_masks(self._binding, [key[0] for key in todo])
            self._walked_masks.update(zip(todo, walked, strict=True))
        masks.update(self._walked_masks)
        return encode_store(self._binding.n_words, masks)


def shared_store(binding: Binding, disk: DiskCache, cache: MaskCache) -> MaskStore:
    """The `MaskStore` of `binding` over `disk`, kept in the in-memory `cache` so that matchers
    sharing that cache (a server's) share one store: it is loaded once, every matcher's new
    masks go into it, and one republication carries them all. Its charge in the cache is the
    bytes its entry declares when it was loaded."""
    key = (*binding.key, KIND, str(disk.root))
    store = cache.get(key)
    if store is None:
        store = MaskStore(binding, disk)
        cache.put(key, store, store.declared_bytes)
    return store
