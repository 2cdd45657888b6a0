"""Reading tokenizer source files: size ceilings, transparent zstd, strict JSON, content hashes.

Every loader reads through here so that compressed inputs (`*.zst`, or any file that starts with
the zstd frame magic) are handled the same way, JSON errors carry a line and column, duplicate
JSON keys are refused instead of silently keeping the last, and the sha256 recorded in a table's
metadata is the hash of the *uncompressed* file (so it matches PROVENANCE notes).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from trgc import jsonread
from trgc.atomic import read_bytes
from trgc.errors import TrgcError
from trgc.limits import DEFAULT_LIMITS, file_cap

MAX_SOURCE_BYTES = file_cap("tokenizer source")  # one tokenizer file, also uncompressed
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def logical_name(path: Path) -> str:
    """The file name without a `.zst` suffix (`tokenizer.json.zst` -> `tokenizer.json`)."""
    name = path.name
    return name[:-4] if name.endswith(".zst") else name


def read_source(path: Path, *, limit: int = MAX_SOURCE_BYTES) -> bytes:
    """The uncompressed bytes of a tokenizer file; zstd frames are decompressed transparently."""
    raw = read_bytes(
        path,
        limit,
        code="E_TOKENIZER_TOO_LARGE",
        what="the tokenizer file",
        hint="no real tokenizer file is that large",
    )
    if raw.startswith(ZSTD_MAGIC):
        return decompress_zstd(raw, source=str(path), limit=limit)
    if path.name.endswith(".zst"):
        raise TrgcError(
            "E_TOKENIZER_ZSTD", "file ends in .zst but is not a zstd frame", source=str(path)
        )
    return raw


def decompress_zstd(raw: bytes, *, source: str, limit: int = MAX_SOURCE_BYTES) -> bytes:
    """Decompress exactly one complete zstd frame, refusing corruption, truncation, oversized
    output and anything after the frame (a second frame or junk, which a one-shot decompress
    would silently drop).

    A failure is `E_TOKENIZER_ZSTD` with `details["truncated"]` telling a cut-off frame (the
    data decodes cleanly but ends early) from corrupted data.
    """
    import zstandard

    try:
        declared = zstandard.frame_content_size(raw)
    except zstandard.ZstdError as exc:
        raise TrgcError(
            "E_TOKENIZER_ZSTD", f"corrupted zstd header: {exc}", source=source
        ) from None
    if declared > limit:
        raise _too_large(Path(source), declared, limit)
    try:
        content = zstandard.ZstdDecompressor().decompress(raw, max_output_size=limit)
        # the same first frame again, now known to be at most `limit` bytes, to see what follows
        stream = zstandard.ZstdDecompressor().decompressobj()
        stream.decompress(raw)
    except zstandard.ZstdError as exc:
        truncated = declared >= 0 and _ends_early(raw)
        raise TrgcError(
            "E_TOKENIZER_ZSTD",
            ("truncated zstd frame: " if truncated else "corrupted zstd data: ") + str(exc),
            source=source,
            hint="re-download or re-compress the file (zstd -t FILE checks it)",
            details={"truncated": truncated},
        ) from None
    if stream.unused_data:
        raise TrgcError(
            "E_TOKENIZER_ZSTD",
            f"{len(stream.unused_data):,} bytes follow the zstd frame (a second frame or junk)",
            source=source,
            hint="a trgc input is exactly one zstd frame; re-compress the file",
            details={"truncated": False},
        )
    return content


def _ends_early(raw: bytes) -> bool:
    """True when the frame decodes without error but stops before its end (output is bounded
    by the declared content size, which the caller has checked)."""
    import zstandard

    stream = zstandard.ZstdDecompressor().decompressobj()
    try:
        stream.decompress(raw)
    except zstandard.ZstdError:
        return False
    return not stream.eof


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parse_json(data: bytes, *, source: str) -> Any:
    """Strict JSON (`trgc.jsonread`); malformed input is `E_TOKENIZER_JSON` with line and column."""
    return jsonread.read_json(
        data,
        code="E_TOKENIZER_JSON",
        what="the tokenizer file",
        max_bytes=MAX_SOURCE_BYTES,
        max_depth=DEFAULT_LIMITS.nesting,
        source=source,
    )


def read_json(path: Path) -> tuple[Any, str]:
    """Parse a (possibly compressed) JSON file; returns the document and its uncompressed sha256."""
    data = read_source(path)
    return parse_json(data, source=str(path)), sha256_hex(data)


def _too_large(path: Path, size: int, limit: int) -> TrgcError:
    return TrgcError(
        "E_TOKENIZER_TOO_LARGE",
        f"{size:,} bytes exceeds the tokenizer file ceiling of {limit:,} bytes",
        source=str(path),
    )
