"""The `.trm` mask-cache file: canonical bytes of a `FrameMasks`, hashed, in one zstd frame.

Canonical layout (all integers little-endian):

    magic      8 bytes  b"TRGCTRM\0"
    version    u32      2
    header_len u32      length of the header
    header     canonical JSON (sorted keys, no whitespace): format, artifact, tokenizer,
               compiler, policy, trie, vocab_size, max_depth, longest, n_states, n_entries,
               n_roots, n_masks, n_words
    padding    zero bytes up to a multiple of 8
    entry_key  int64[n_entries, 3]     (global state, restarts left, iterations needed):
                                       the frame key of the entry, states non-decreasing,
                                       keys distinct
    accept_id  int32[n_entries]        row of `masks` holding the entry's accept set
    height     int32[n_entries]        highest stack (rule frames) of an accepted token
    open_start int32[n_entries + 1]    CSR into open_roots (0, non-decreasing, ends n_roots)
    open_roots int32[n_roots]          trie nodes (of the trie named by `trie`)
    masks      uint32[n_masks, n_words]  distinct bitsets, row 0 the empty set
    digest     32 bytes: SHA-256 of everything above

The identity is `sha256:` + SHA-256 of these bytes (digest included); compression settings
never change it. Anything that does not decode exactly, or a file built for another artifact,
tokenizer, compiler version, special-token policy or trie layout, is refused with
`E_CACHE_MISMATCH`. Before any array is used the reader checks every invariant the precompute
guarantees: exactly one zstd frame, a flat header of exact types, `1 <= max_depth < 2**31`
(and, bound, the artifact's), `1 <= height <= max_depth`, row 0 empty, every row distinct and
without bits past `vocab_size`, every index inside its table.
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import numpy as np

from trgc.atomic import atomic_write
from trgc.engine.precompute import FrameMasks
from trgc.errors import TrgcError
from trgc.jsonread import read_json
from trgc.limits import DEFAULT_LIMITS, Limits, mask_cache_content, read_file

MAGIC = b"TRGCTRM\0"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # a .trm file is one zstd frame
VERSION = 2
FORMAT = "trgc-masks-2"
ZSTD_LEVEL = 10


def _canonical_json(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


HEADER_KEYS = (
    "format", "artifact", "tokenizer", "compiler", "policy", "trie", "vocab_size", "max_depth",
    "longest", "n_states", "n_entries", "n_roots", "n_masks", "n_words",
)  # fmt: skip


def to_bytes(masks: FrameMasks) -> bytes:
    """The canonical uncompressed bytes of `masks`."""
    artifact, tokenizer, compiler, policy, trie = masks.key
    header = _canonical_json(
        {
            "format": FORMAT,
            "artifact": artifact,
            "tokenizer": tokenizer,
            "compiler": compiler,
            "policy": policy,
            "trie": trie,
            "vocab_size": masks.vocab_size,
            "max_depth": masks.max_depth,
            "longest": masks.longest,
            "n_states": masks.n_states,
            "n_entries": masks.n_entries,
            "n_roots": int(masks.open_roots.shape[0]),
            "n_masks": int(masks.masks.shape[0]),
            "n_words": int(masks.masks.shape[1]),
        }
    )
    body = MAGIC + struct.pack("<II", VERSION, len(header)) + header
    body += b"\0" * (-len(body) % 8)
    for array, dtype in (
        (masks.entry_key, "<i8"),
        (masks.accept_id, "<i4"),
        (masks.height, "<i4"),
        (masks.open_start, "<i4"),
        (masks.open_roots, "<i4"),
        (masks.masks, "<u4"),
    ):
        body += np.ascontiguousarray(array, dtype=dtype).tobytes()
    return body + hashlib.sha256(body).digest()


def identity(masks: FrameMasks) -> str:
    return "sha256:" + hashlib.sha256(to_bytes(masks)).hexdigest()


def save_masks(masks: FrameMasks, path: Path | str) -> str:
    """Write `masks` atomically as a zstd frame; return the identity."""
    import zstandard

    data = to_bytes(masks)
    atomic_write(path, zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(data))
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _refuse(message: str, source: str | None) -> TrgcError:
    return TrgcError(
        "E_CACHE_MISMATCH",
        f"mask cache refused: {message}",
        source=source,
        hint="rebuild it with `trgc masks precompute`",
    )


def from_bytes(data: bytes, *, source: str | None = None) -> FrameMasks:
    """Decode canonical bytes, checking magic, version, digest, header and every size and
    index, before anything proportional to a declared size is allocated."""
    if len(data) < len(MAGIC) + 8 + 32 or data[: len(MAGIC)] != MAGIC:
        raise _refuse("not a trgc mask cache (bad magic)", source)
    body, digest = data[:-32], data[-32:]
    if hashlib.sha256(body).digest() != digest:
        raise _refuse("digest mismatch (corrupted file)", source)
    version, header_len = struct.unpack_from("<II", data, len(MAGIC))
    if version != VERSION:
        raise _refuse(f"format version {version}, this trgc reads {VERSION}", source)
    start = len(MAGIC) + 8
    raw_header = body[start : start + header_len]
    try:
        header = read_json(
            raw_header,
            code="E_CACHE_MISMATCH",
            what="the mask cache header",
            max_bytes=len(raw_header),
            max_depth=1,
        )
    except TrgcError as error:
        raise _refuse(error.message, source) from None
    if not isinstance(header, dict) or sorted(header) != sorted(HEADER_KEYS):
        raise _refuse(f"header fields are not those of {FORMAT}", source)
    if header["format"] != FORMAT or _canonical_json(header) != raw_header:
        raise _refuse(f"header is not the canonical {FORMAT} header", source)
    if not all(isinstance(header[k], str) for k in HEADER_KEYS[:6]):
        raise _refuse("header names (artifact, tokenizer, ...) are not strings", source)
    names = ("vocab_size", "max_depth", "longest", "n_states", "n_entries", "n_roots", "n_masks")
    counts = [header[k] for k in (*names, "n_words")]
    max_depth = header["max_depth"]
    if type(max_depth) is not int or not 1 <= max_depth < 1 << 31:
        raise _refuse(f"max_depth {_shown(max_depth)} is not an integer in [1, 2**31)", source)
    if not all(type(c) is int and 0 <= c < 1 << 31 for c in counts):
        raise _refuse("header sizes are not integers in [0, 2**31)", source)
    vocab_size, max_depth, longest, n_states, n_entries, n_roots, n_masks, n_words = counts
    offset = start + header_len
    offset += -offset % 8
    expected = offset + 24 * n_entries + 4 * (3 * n_entries + 1 + n_roots + n_masks * n_words)
    if (
        expected != len(body)
        or n_words != (vocab_size + 31) // 32
        or n_masks < 1
        or max_depth < 1
        or longest < 1
    ):
        raise _refuse("section sizes do not match the header", source)
    keys = np.frombuffer(body, dtype="<i8", count=3 * n_entries, offset=offset)
    keys = keys.astype(np.int64).reshape(n_entries, 3)
    offset += 24 * n_entries
    arrays = []
    for count in (n_entries, n_entries, n_entries + 1, n_roots):
        arrays.append(np.frombuffer(body, dtype="<i4", count=count, offset=offset).astype(np.int32))
        offset += 4 * count
    accept_id, height, open_start, open_roots = arrays
    table = np.frombuffer(body, dtype="<u4", count=n_masks * n_words, offset=offset)
    table = table.astype(np.uint32).reshape(n_masks, n_words)
    if (
        (
            n_entries
            and (
                accept_id.min() < 0
                or accept_id.max() >= n_masks
                or keys.min() < 0
                or keys[:, 0].max() >= n_states
                or keys[:, 1].max() > longest
                or keys[:, 2].max() > longest + 1
                or (np.diff(keys[:, 0]) < 0).any()
                or len({tuple(k) for k in keys.tolist()}) != n_entries
            )
        )
        or open_start[0] != 0
        or open_start[-1] != n_roots
        or (np.diff(open_start) < 0).any()
        or (n_roots and open_roots.min() < 1)
    ):
        raise _refuse("an index points outside its table", source)
    if n_entries and (height.min() < 0 or height.max() > max_depth):
        raise _refuse(f"a frame's stack height is outside 0..max_depth ({max_depth})", source)
    if table[0].any():
        raise _refuse("row 0 of the mask table is not the empty set", source)
    spare = n_words * 32 - vocab_size
    if spare and (table[:, -1] >> np.uint32(32 - spare)).any():
        raise _refuse("a mask sets bits for ids at or past vocab_size", source)
    if np.unique(table, axis=0).shape[0] != n_masks:
        raise _refuse("the mask table repeats a row (rows are distinct bitsets)", source)
    masks = FrameMasks(
        key=(
            header["artifact"],
            header["tokenizer"],
            header["compiler"],
            header["policy"],
            header["trie"],
        ),
        vocab_size=vocab_size,
        max_depth=max_depth,
        n_states=n_states,
        longest=longest,
        entry_key=keys,
        accept_id=accept_id,
        height=height,
        open_start=open_start,
        open_roots=open_roots,
        masks=table,
    )
    if to_bytes(masks) != data:
        raise _refuse("bytes are not canonical", source)
    return masks


def load_masks(path: Path | str, *, binding=None, limits: Limits = DEFAULT_LIMITS) -> FrameMasks:
    """Read a `.trm` file; with `binding` (a `trgc.engine.binding.Binding`) also refuse one
    built for another artifact, tokenizer, compiler version, policy or trie."""
    import zstandard

    raw = read_file(path, "mask cache", limits, magic=ZSTD_MAGIC)
    cap = mask_cache_content(limits)
    try:
        size = zstandard.get_frame_parameters(raw).content_size
    except zstandard.ZstdError as exc:
        raise _refuse(f"not a readable zstd frame ({exc})", str(path)) from None
    if size in (zstandard.CONTENTSIZE_UNKNOWN, zstandard.CONTENTSIZE_ERROR) or size > cap:
        raise _refuse(
            "the zstd frame does not declare a content size within the cache_bytes limit",
            str(path),
        )
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    try:
        data = decompressor.decompress(raw)
    except zstandard.ZstdError as exc:
        raise _refuse(f"not a readable zstd frame ({exc})", str(path)) from None
    if not decompressor.eof or decompressor.unused_data or len(data) != size:
        raise _refuse("the file is not exactly one complete zstd frame", str(path))
    masks = from_bytes(data, source=str(path))
    if masks.max_depth > limits.max_depth:
        raise _refuse(
            f"max_depth {masks.max_depth:,} exceeds the max_depth limit of {limits.max_depth:,}",
            str(path),
        )
    if binding is not None:
        masks.require(binding)
        if masks.max_depth != binding.tables.max_depth:
            raise _refuse(
                f"built for max_depth {masks.max_depth}, the artifact's is "
                f"{binding.tables.max_depth}",
                str(path),
            )
    return masks
