"""The mask store: the masks a `Matcher` computed, kept per artifact and tokenizer in a `DiskCache`.

A mask is a function of the configuration's `mask_key` and the binding (artifact, token
table, compiler version, special-token policy), so the masks one process computed for an
artifact are valid in every later process bound the same way: with a store, a configuration
seen before is a dictionary lookup instead of frame entries read, combined and checked (about
2 us instead of 50 us and more). The entry's key is an `EntryKey` of kind `masks` whose
subject is the artifact's identity, with the tokenizer identity, compiler version and policy
as its own fields; the payload is one zstd frame of (little-endian):

    magic     8 bytes  b"TRGCMSK1"
    n_words   u32      words per mask (ceil(vocab_size / 32))
    n_configs u32      configurations, sorted by their mask key
    n_masks   u32      distinct masks, in order of first use by the sorted configurations
    n_frames  u32      frames of all configurations together
    lengths   u32[n_configs]        frames per configuration (>= 1)
    frames    int64[n_frames]       the mask keys' frames, bottom first
    index     u32[n_configs]        mask of each configuration
    masks     uint32[n_masks, n_words]

Same masks, same bytes. Nothing is trusted blindly: on top of the container's digest and key,
a payload that does not decompress, has another magic or sizes, configurations out of order,
frames naming no state of this artifact or counters past the token length they are clipped
to, a mask index out of range or a bit on a token no mask of the binding can allow (one
without bytes that is neither EOS nor a special token of the grammar, or past `vocab_size`)
is refused (`E_CACHE_ENTRY_PAYLOAD`),
removed, and the masks are computed again. A store holds at most `MAX_CONFIGS`
configurations; it is republished (replacing the entry) in a quiet moment whenever its
matcher computed new masks, so when several processes extend one store at once the last
writer's whole store wins (every version is a sound store; the others' new masks are computed
again later).
"""

from __future__ import annotations

import struct

import numpy as np

from trgc.engine.binding import Binding
from trgc.engine.bits import pack
from trgc.engine.cache import MaskCache
from trgc.engine.config import CLIP_MASK, STATE_MASK
from trgc.engine.diskcache import DiskCache, EntryKey
from trgc.errors import TrgcError

KIND = "masks"
FORMAT = 1
MAGIC = b"TRGCMSK1"
_HEAD = struct.Struct("<8sIIII")
MAX_CONFIGS = 4096  # configurations per store; beyond it new masks stay in memory only
ZSTD_LEVEL = 3

MaskKey = tuple[int, ...]


def store_key(binding: Binding) -> EntryKey:
    """The store's key for `binding`: every field of `Binding.key` takes part."""
    artifact, tokenizer, compiler, policy = binding.key
    return EntryKey(KIND, FORMAT, tokenizer, compiler, policy, f"artifact {artifact}")


def encode_store(n_words: int, masks: dict[MaskKey, np.ndarray]) -> bytes:
    """The payload of a store holding `masks` (mask key -> uint32 words)."""
    import zstandard

    keys = sorted(masks)
    slot: dict[bytes, int] = {}
    index = np.empty(len(keys), dtype="<u4")
    for i, key in enumerate(keys):
        index[i] = slot.setdefault(masks[key].tobytes(), len(slot))
    lengths = np.array([len(k) for k in keys], dtype="<u4")
    frames = np.array([f for k in keys for f in k], dtype="<i8")
    head = _HEAD.pack(MAGIC, n_words, len(keys), len(slot), frames.size)
    body = b"".join((head, lengths.tobytes(), frames.tobytes(), index.tobytes(), *slot))
    return zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(body)


def _bad(message: str) -> TrgcError:
    return TrgcError("E_CACHE_ENTRY_PAYLOAD", f"mask store: {message}")


def decode_store(binding: Binding, payload: bytes) -> dict[MaskKey, np.ndarray]:
    """The masks of a store payload for `binding`, each a read-only uint32 array; raise
    `E_CACHE_ENTRY_PAYLOAD` for anything that is not a sound store of this binding."""
    import zstandard

    n_words = binding.n_words
    limit = _HEAD.size + MAX_CONFIGS * (4 + 4 + 8 * (binding.tables.max_depth + 1))
    limit += MAX_CONFIGS * 4 * n_words
    try:
        body = zstandard.ZstdDecompressor().decompress(payload, max_output_size=limit)
    except zstandard.ZstdError as exc:
        raise _bad(f"does not decompress ({exc})") from None
    if len(body) < _HEAD.size:
        raise _bad("the header is cut short")
    magic, words, n_configs, n_masks, n_frames = _HEAD.unpack_from(body)
    if magic != MAGIC or words != n_words:
        raise _bad("another magic or mask width")
    if not 0 < n_configs <= MAX_CONFIGS or not 0 < n_masks <= n_configs:
        raise _bad(f"{n_configs} configurations and {n_masks} masks")
    sizes = (4 * n_configs, 8 * n_frames, 4 * n_configs, 4 * n_masks * n_words)
    if len(body) != _HEAD.size + sum(sizes):
        raise _bad("the sections do not add up to the payload")
    at = _HEAD.size
    parts = []
    for size, dtype in zip(sizes, ("<u4", "<i8", "<u4", "<u4"), strict=True):
        parts.append(np.frombuffer(body, dtype=dtype, count=size // np.dtype(dtype).itemsize,
                                   offset=at))  # fmt: skip
        at += size
    lengths, frames, index, flat = parts
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
    masks = flat.reshape(n_masks, n_words)  # read-only: a view of the decompressed bytes
    if (np.bitwise_or.reduce(masks, axis=0) & ~_possible_words(binding)).any():
        raise _bad("a mask allows a token this binding never allows (or one past the vocabulary)")
    out: dict[MaskKey, np.ndarray] = {}
    previous: MaskKey | None = None
    starts = [0, *np.cumsum(lengths, dtype=np.int64).tolist()]
    all_frames = frames.tolist()
    rows = [masks[i] for i in range(n_masks)]
    for i, mask in enumerate(index.tolist()):
        key = tuple(all_frames[starts[i] : starts[i + 1]])
        if previous is not None and key <= previous:
            raise _bad("configurations are not sorted and distinct")
        out[key] = rows[mask]
        previous = key
    return out


def _possible_words(binding: Binding) -> np.ndarray:
    """Packed: the tokens a mask of this binding may allow at all (byte tokens, the grammar's
    special tokens, EOS); computed once per binding."""
    found = binding._lazy.get("possible_words")
    if found is None:
        possible = binding.byte_token.copy()
        possible[binding.special_ids] = True
        possible[binding.eos_ids] = True
        found = binding._lazy["possible_words"] = pack(possible)
    return found


class MaskStore:
    """One matcher's view of the store of its binding: the masks loaded from the `DiskCache`
    and those computed since, republished together in the background when new ones came."""

    def __init__(self, binding: Binding, disk: DiskCache) -> None:
        self._disk = disk
        self._key = store_key(binding)
        self._n_words = binding.n_words
        self.masks: dict[MaskKey, np.ndarray] = {}
        self._pending = False
        payload = disk.get(self._key)
        if payload is not None:
            try:
                self.masks = decode_store(binding, payload)
            except TrgcError as error:
                disk.discard(
                    self._key,
                    TrgcError(
                        error.code,
                        f"cache entry refused: {error.message}",
                        source=str(disk.path_of(self._key)),
                        hint="the entry was removed; its masks are computed again",
                    ),
                )

    def add(self, key: MaskKey, words: np.ndarray) -> None:
        """Keep a mask computed now and schedule a republication (unless one is pending or
        the store is full)."""
        if len(self.masks) >= MAX_CONFIGS:
            return
        self.masks[key] = words
        if not self._pending:
            self._pending = True
            self._disk.put_later(self._key, self._payload, replace=True)

    def _payload(self) -> bytes:
        """Run by the publisher thread: a snapshot of the masks so far (a dict copy is atomic
        under the interpreter lock)."""
        self._pending = False
        return encode_store(self._n_words, dict(self.masks))


def shared_store(binding: Binding, disk: DiskCache, cache: MaskCache) -> MaskStore:
    """The `MaskStore` of `binding` over `disk`, kept in the in-memory `cache` so that matchers
    sharing that cache (a server's) share one store: it is loaded once, every matcher's new
    masks go into it, and one republication carries them all. Its charge in the cache is the
    bytes of its masks when it was loaded."""
    key = (*binding.key, KIND, str(disk.root))
    store = cache.get(key)
    if store is None:
        store = MaskStore(binding, disk)
        distinct = {id(words) for words in store.masks.values()}
        cache.put(key, store, len(distinct) * 4 * binding.n_words)
    return store
