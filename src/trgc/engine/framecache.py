"""Frame entries shared by their residual: the cache keys, the disk payload, lookup, publication.

A `FrameEntry` depends only on its frame's residual (`trgc.engine.residual`) and the tokenizer,
so it is keyed by the residual's id and the cache-identity fields of the research report
(tokenizer identity, compiler version, special-token policy), not by the artifact: states of
one artifact, of other artifacts, other matchers and (through a `DiskCache`) other processes
that share a residual share one entry. In memory the key is `(tokenizer sha256, compiler
version, policy, "frame", residual id)`; on disk an `EntryKey` of kind `frame` whose subject is
`residual <id> trie <trie identity>` (the open roots are trie nodes). A frame whose walk can
visit at most `DESCRIBE_ABOVE_NODES` trie nodes (`walk_bound`, `cheap`) is keyed by its artifact
and frame key and kept in memory only: describing its residual, or a disk lookup that misses,
would cost about as much as the walk. A frame whose residual has more than
`residual.RESIDUAL_STATES` states gets no residual id either (describing it would cost about as
much as the walk, and such residuals are almost never shared): it is keyed by its artifact on
disk too (`artifact <sha256> frame <key> trie <trie identity>`), which still shares it across
matchers and processes over the same artifact.

The disk payload is one zstd frame of (little-endian):

    magic    8 bytes  b"TRGCFRM1"
    n_words  u32      words of the accept set (ceil(vocab_size / 32))
    n_roots  u32      open roots
    height   u32      highest stack an accepted token reaches (<= max_depth)
    reserved u32      0
    accept   uint32[n_words]
    roots    int32[n_roots]   strictly increasing trie nodes, each in [1, n_nodes)

and is never trusted blindly: a payload that does not decompress, has another magic or sizes,
a height above `max_depth`, roots out of order or range, or accept bits on tokens the binding
does not match by bytes is refused (`E_CACHE_ENTRY_PAYLOAD`), removed and recomputed.
"""

from __future__ import annotations

import struct

import numpy as np

from trgc.engine.binding import Binding
from trgc.engine.bits import pack
from trgc.engine.cache import MaskCache
from trgc.engine.config import STATE_MASK
from trgc.engine.counted import base_key, derivable, derive
from trgc.engine.diskcache import DiskCache, EntryKey
from trgc.engine.precompute import FrameEntry, slice_of
from trgc.engine.residual import residual_id
from trgc.engine.runs import run_of
from trgc.errors import TrgcError

KIND = "frame"
FORMAT = 1
# Frames whose walk is bounded by this many trie nodes are keyed by their artifact and kept in
# memory. Over 25 JSONSchemaBench schemas on Llama-3 the frames bounded by 32,768 nodes walked
# in 18-31 us at the median (p90 35-123 us), those above 65,536 in 380-820 us, while a disk hit
# costs 150-200 us (open, read, digest, decompress, checks) and a description 20-50 us
DESCRIBE_ABOVE_NODES = 65536
MAGIC = b"TRGCFRM1"
_HEAD = struct.Struct("<8sIIII")
ZSTD_LEVEL = 3


def memory_key(binding: Binding, key: int, rid: str | None) -> tuple:
    """The in-memory cache key of the frame entry of frame key `key` whose residual id is
    `rid` (one process builds one trie per token table, so the tokenizer identity names the
    trie); a frame without a residual id (`RESIDUAL_STATES`) is keyed by its artifact."""
    artifact, tokenizer, compiler, policy = binding.key
    if rid is None:
        return (tokenizer, compiler, policy, KIND, artifact, key)
    return (tokenizer, compiler, policy, KIND, rid)


def disk_key(binding: Binding, key: int, rid: str | None) -> EntryKey:
    """The `DiskCache` key of that entry: the trie identity is part of the subject."""
    artifact, tokenizer, compiler, policy = binding.key
    if rid is None:
        subject = f"artifact {artifact} frame {key} trie {binding.trie_id()}"
    else:
        subject = f"residual {rid} trie {binding.trie_id()}"
    return EntryKey(KIND, FORMAT, tokenizer, compiler, policy, subject)


def encode(entry: FrameEntry) -> bytes:
    """The disk payload of `entry` (module docstring)."""
    import zstandard

    accept = np.ascontiguousarray(entry.accept, dtype="<u4")
    roots = np.ascontiguousarray(entry.open_roots, dtype="<i4")
    raw = b"".join(
        (
            _HEAD.pack(MAGIC, accept.shape[0], roots.shape[0], entry.height, 0),
            accept.tobytes(),
            roots.tobytes(),
        )
    )
    return zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(raw)


def _payload_error(message: str) -> TrgcError:
    return TrgcError(
        "E_CACHE_ENTRY_PAYLOAD",
        f"frame entry refused: {message}",
        hint="the entry was removed; it is recomputed on the next use",
    )


def decode(payload: bytes, binding: Binding) -> FrameEntry:
    """The `FrameEntry` of a disk payload, checked against `binding`; `E_CACHE_ENTRY_PAYLOAD`
    otherwise."""
    import zstandard

    n_words = binding.n_words
    n_nodes = int(binding.node_byte.shape[0])
    bound = _HEAD.size + 4 * n_words + 4 * n_nodes
    try:
        raw = zstandard.ZstdDecompressor().decompress(payload, max_output_size=bound)
    except zstandard.ZstdError as exc:
        raise _payload_error(f"not one zstd frame within {bound:,} bytes ({exc})") from None
    if len(raw) < _HEAD.size:
        raise _payload_error(f"{len(raw)} bytes, shorter than its header")
    magic, words, n_roots, height, reserved = _HEAD.unpack_from(raw)
    if magic != MAGIC or reserved != 0:
        raise _payload_error("not a frame entry (magic)")
    if words != n_words or len(raw) != _HEAD.size + 4 * (words + n_roots):
        raise _payload_error(f"{words} words and {n_roots} roots in {len(raw)} bytes, the binding "
                             f"has {n_words} words")  # fmt: skip
    if height > binding.tables.max_depth:
        raise _payload_error(f"height {height} above max_depth {binding.tables.max_depth}")
    accept = np.frombuffer(raw, dtype="<u4", count=words, offset=_HEAD.size).astype(np.uint32)
    roots = np.frombuffer(raw, dtype="<i4", offset=_HEAD.size + 4 * words).astype(np.int32)
    if roots.size and (int(roots[0]) < 1 or int(roots[-1]) >= n_nodes
                       or (roots.size > 1 and not (np.diff(roots) > 0).all())):  # fmt: skip
        raise _payload_error("open roots out of order or outside the trie")
    if (accept & ~byte_words(binding)).any():
        raise _payload_error("accepts a token the binding does not match by bytes")
    accept.flags.writeable = False
    roots.flags.writeable = False
    return FrameEntry(accept, roots, int(height))


def byte_words(binding: Binding) -> np.ndarray:
    """`binding.byte_token` as words (built on first use)."""
    found = binding._lazy.get("byte_words")
    if found is None:
        found = binding._lazy["byte_words"] = pack(binding.byte_token)
    return found


def walk_bound(binding: Binding) -> np.ndarray:
    """int64[n_states]: trie nodes a frame walk from each state can visit at most (the nodes
    under every first byte the state has an action on; built once per binding)."""
    found = binding._lazy.get("walk_bound")
    if found is None:
        t = binding.tables
        per_class = np.zeros(t.n_classes, dtype=np.int64)
        np.add.at(per_class, t.byte_class, binding.vocab.root_weight)
        found = (t.next[:, : t.n_classes] != -1).astype(np.int64) @ per_class
        binding._lazy["walk_bound"] = found
    return found


def cheap(binding: Binding, key: int) -> bool:
    """Whether the walk of frame key `key` can visit at most `DESCRIBE_ABOVE_NODES` trie nodes,
    or its entry is walked by tails (`precompute.slice_of`: a string body, a few hundred
    nodes in two walks of about 5 us each) or made from a class run (`runs.run_of`, 15-25
    us): then describing its residual (20-150 us), or asking the disk for it (a hit 150-200
    us, a miss a failed open), costs more than the walk, so it is keyed by its artifact and
    kept in memory only."""
    if walk_bound(binding)[key & STATE_MASK] <= DESCRIBE_ABOVE_NODES:
        return True
    return run_of(binding, key) is not None or slice_of(binding, key)[2] is not None


def shared_id(binding: Binding, key: int) -> str | None:
    """The residual id that keys the entry of frame key `key`, or None when it is keyed by its
    artifact: when its walk is `cheap`, or its residual too large to describe."""
    return None if cheap(binding, key) else residual_id(binding, key)


def entry_for(
    binding: Binding, key: int, scratch, cache: MaskCache, disk: DiskCache | None
) -> tuple[FrameEntry, str]:
    """(the `FrameEntry` of frame key `key`, where it came from: "cache", "disk" or "walk"):
    looked up in `cache`, then (unless `cheap`) on `disk`, else made now, kept in `cache` and
    published to `disk` in the background: walked (`precompute.frame_entry`), or for a counted
    frame with few iterations left derived from the same frame unclipped, itself an entry
    found or made here (`counted.derive`). A disk hit is added to `cache`; a refused payload is
    removed from the disk."""
    from trgc.engine.precompute import frame_entry

    rid = shared_id(binding, key)
    mkey = memory_key(binding, key, rid)
    entry = cache.get(mkey)
    if entry is not None:
        return entry, "cache"
    dkey = None if disk is None or cheap(binding, key) else disk_key(binding, key, rid)
    if dkey is not None:
        payload = disk.get(dkey)
        if payload is not None:
            try:
                entry = decode(payload, binding)
            except TrgcError as refused:
                disk.discard(dkey, refused)
            else:
                cache.put(mkey, entry, entry.nbytes)
                return entry, "disk"
    if derivable(binding, key):
        base, _ = entry_for(binding, base_key(binding, key), scratch, cache, disk)
        entry = derive(binding, base, key, scratch)
    else:
        entry = frame_entry(binding, key, scratch)
    cache.put(mkey, entry, entry.nbytes)
    if dkey is not None:
        disk.put_later(dkey, lambda: encode(entry))
    return entry, "walk"
