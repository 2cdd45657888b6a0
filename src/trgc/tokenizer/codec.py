"""The `.trt` token-table file: canonical bytes, SHA-256 identity, zstd container, atomic write.

Canonical body (all integers little-endian; see docs/token-table-format.md):

    magic        8 bytes  b"TRGCTOK\\x00"
    version      u32      FORMAT_VERSION
    header_len   u64      length of the header JSON
    header       bytes    canonical JSON (sorted keys, no whitespace, UTF-8)
    vocab_size   u64
    data_len     u64
    kinds        u8[vocab_size]
    lengths      u32[vocab_size]   byte length of each token
    data         u8[data_len]      token bytes, id order, concatenated
    trailer      32 bytes          sha256 of everything above

The identity is `sha256:` + hex of the trailer (the hash of the body). On disk the body plus
trailer is one zstd frame with a content checksum; an uncompressed body is read as well. This
module knows only arrays and a JSON header; `table.py` gives them meaning.
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import numpy as np

from trgc.errors import TrgcError
from trgc.jsonread import read_json
from trgc.limits import file_cap, read_file
from trgc.tokenizer.sources import ZSTD_MAGIC, decompress_zstd

MAGIC = b"TRGCTOK\x00"
FORMAT_VERSION = 1
_DIGEST = 32
_MAX_TABLE_BYTES = file_cap("token table")
_ZSTD_LEVEL = 10
# deepest header value trgc writes: metadata.reports.duplicates[i] (4 levels); room for loaders
MAX_HEADER_DEPTH = 16


def canonical_json(document: object) -> bytes:
    """Sorted keys, no whitespace, UTF-8: the only JSON form that reaches an identity."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def encode_body(header: dict, kinds: np.ndarray, lengths: np.ndarray, data: np.ndarray) -> bytes:
    """Canonical bytes with the sha256 trailer appended."""
    meta = canonical_json(header)
    parts = [
        MAGIC,
        struct.pack("<IQ", FORMAT_VERSION, len(meta)),
        meta,
        struct.pack("<QQ", kinds.shape[0], data.shape[0]),
        np.ascontiguousarray(kinds, dtype="<u1").tobytes(),
        np.ascontiguousarray(lengths, dtype="<u4").tobytes(),
        np.ascontiguousarray(data, dtype="<u1").tobytes(),
    ]
    body = b"".join(parts)
    return body + hashlib.sha256(body).digest()


def identity_of(blob: bytes) -> str:
    """`sha256:<hex>` of canonical bytes produced by `encode_body` (the trailer holds it)."""
    return "sha256:" + blob[-_DIGEST:].hex()


def decode_body(
    blob: bytes, *, source: str | None = None
) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray, str]:
    """Parse canonical bytes into (header, kinds, lengths, data, identity), checking every section."""

    def fail(code: str, message: str) -> TrgcError:
        return TrgcError(code, message, source=source)

    if len(blob) < len(MAGIC) or blob[: len(MAGIC)] != MAGIC:
        raise fail("E_TOKENIZER_TABLE_MAGIC", "not a trgc token table (wrong magic)")
    pos = len(MAGIC)
    if len(blob) < pos + 12:
        raise fail("E_TOKENIZER_TABLE_TRUNCATED", "file ends inside the table header")
    version, meta_len = struct.unpack_from("<IQ", blob, pos)
    if version != FORMAT_VERSION:
        raise TrgcError(
            "E_TOKENIZER_TABLE_VERSION",
            f"token table format version {version}, this trgc reads version {FORMAT_VERSION}",
            source=source,
            hint="rebuild the table with `trgc tokenizer build`",
        )
    pos += 12
    need = pos + meta_len + 16
    if len(blob) < need + _DIGEST:
        raise fail(
            "E_TOKENIZER_TABLE_TRUNCATED",
            f"file has {len(blob):,} bytes, the header alone needs {need + _DIGEST:,}",
        )
    meta = blob[pos : pos + meta_len]
    pos += meta_len
    vocab_size, data_len = struct.unpack_from("<QQ", blob, pos)
    pos += 16
    expected = pos + vocab_size * 5 + data_len + _DIGEST
    if len(blob) < expected:
        raise fail(
            "E_TOKENIZER_TABLE_TRUNCATED",
            f"file has {len(blob):,} bytes, its sections need {expected:,}",
        )
    if len(blob) > expected:
        raise fail(
            "E_TOKENIZER_TABLE_CORRUPT",
            f"{len(blob) - expected:,} unexpected bytes after the table",
        )
    body = blob[:-_DIGEST]
    if hashlib.sha256(body).digest() != blob[-_DIGEST:]:
        raise fail("E_TOKENIZER_TABLE_CORRUPT", "checksum mismatch: the table bytes were changed")
    try:
        header = read_json(
            meta,
            code="E_TOKENIZER_TABLE_CORRUPT",
            what="the table header",
            max_bytes=len(meta),
            max_depth=MAX_HEADER_DEPTH,
            source=source,
        )
    except TrgcError as error:  # a header nested past what trgc writes is damage, not a limit
        raise fail("E_TOKENIZER_TABLE_CORRUPT", error.message) from None
    if not isinstance(header, dict) or canonical_json(header) != meta:
        raise fail("E_TOKENIZER_TABLE_CORRUPT", "header is not a canonical JSON object")
    kinds = np.frombuffer(blob, dtype="<u1", count=vocab_size, offset=pos)
    pos += vocab_size
    lengths = np.frombuffer(blob, dtype="<u4", count=vocab_size, offset=pos)
    pos += 4 * vocab_size
    data = np.frombuffer(blob, dtype="<u1", count=data_len, offset=pos)
    return header, kinds, lengths, data, identity_of(blob)


def compress(blob: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor(
        level=_ZSTD_LEVEL, write_checksum=True, write_content_size=True
    ).compress(blob)


def read_table_bytes(path: Path) -> bytes:
    """The canonical bytes stored in a `.trt` file (zstd frame or raw)."""
    raw = read_file(path, "token table", magic=(ZSTD_MAGIC, MAGIC))
    if raw.startswith(ZSTD_MAGIC):
        try:
            return decompress_zstd(raw, source=str(path), limit=_MAX_TABLE_BYTES)
        except TrgcError as exc:
            if exc.code != "E_TOKENIZER_ZSTD":
                raise
            code = (
                "E_TOKENIZER_TABLE_TRUNCATED"
                if "full frame" in exc.message
                else "E_TOKENIZER_TABLE_CORRUPT"
            )
            raise TrgcError(code, exc.message, source=str(path)) from None
    return raw
