"""The token-byte table: every token id's exact bytes and kind, with a SHA-256 identity.

This is the tokenizer-side contract of trgc (DESIGN.md "Tokenizers"): a token *is* its byte
sequence. Normal and byte-fallback tokens have bytes; special tokens have none and are matched by
name; unused ids (gaps) have none. The arrays are flat so kernels and files can use them as they
are: the bytes of id `i` are `data[offsets[i]:offsets[i+1]]`.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from trgc.atomic import atomic_write
from trgc.errors import TrgcError
from trgc.tokenizer import codec

if TYPE_CHECKING:
    from trgc.tokenizer.trie import Trie

KIND_NORMAL, KIND_BYTE, KIND_SPECIAL, KIND_UNUSED = 0, 1, 2, 3
KIND_NAMES = ("normal", "byte", "special", "unused")

_REPORT_SAMPLE = 16  # ids listed per report in metadata (counts are always complete)


class TokenTable:
    """Token id -> (kind, exact bytes), special and added token names, EOS ids, identity.

    Build one with `make_table` (from loaders) or `TokenTable.from_bytes` / `load` (from a
    `.trt` file). Instances are treated as immutable; `trie` is built on first use and cached.
    """

    vocab_size: int
    kinds: np.ndarray  # uint8[vocab_size]
    offsets: np.ndarray  # int64[vocab_size + 1]
    data: np.ndarray  # uint8[offsets[-1]]
    special_tokens: dict[str, int]
    added_tokens: dict[str, int]
    eos_ids: tuple[int, ...]
    sha256: str
    metadata: dict

    def __init__(
        self,
        *,
        kinds: np.ndarray,
        lengths: np.ndarray,
        data: np.ndarray,
        special_tokens: dict[str, int],
        added_tokens: dict[str, int],
        eos_ids: tuple[int, ...],
        metadata: dict,
        blob: bytes | None = None,
        source: str | None = None,
    ) -> None:
        self.vocab_size = int(kinds.shape[0])
        self.kinds = np.ascontiguousarray(kinds, dtype=np.uint8)
        offsets = np.zeros(self.vocab_size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        self.offsets = offsets
        self.data = np.ascontiguousarray(data, dtype=np.uint8)
        self.special_tokens = dict(sorted(special_tokens.items(), key=lambda kv: (kv[1], kv[0])))
        self.added_tokens = dict(sorted(added_tokens.items(), key=lambda kv: (kv[1], kv[0])))
        self.eos_ids = tuple(sorted(set(eos_ids)))
        self.metadata = metadata
        _check_consistent(self, lengths, source)
        if blob is None:
            blob = codec.encode_body(self._header(), self.kinds, lengths, self.data)
        self._blob = blob
        self.sha256 = codec.identity_of(blob)
        for array in (self.kinds, self.offsets, self.data):
            array.flags.writeable = False

    # -- access ---------------------------------------------------------------------------
    def token_bytes(self, i: int) -> bytes:
        """The exact bytes of token `i` (empty for special and unused ids)."""
        if not 0 <= i < self.vocab_size:
            raise IndexError(f"token id {i} outside 0..{self.vocab_size - 1}")
        return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes()

    def kind_name(self, i: int) -> str:
        return KIND_NAMES[int(self.kinds[i])]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @cached_property
    def trie(self) -> Trie:
        """The byte trie of every token with bytes (built on first use, then cached)."""
        from trgc.tokenizer.trie import build_trie

        return build_trie(self)

    def counts(self) -> dict[str, int]:
        """Number of ids of each kind."""
        per_kind = np.bincount(self.kinds, minlength=len(KIND_NAMES))
        return {name: int(per_kind[k]) for k, name in enumerate(KIND_NAMES)}

    # -- serialisation --------------------------------------------------------------------
    def _header(self) -> dict:
        return {
            "added_tokens": self.added_tokens,
            "eos_ids": list(self.eos_ids),
            "metadata": self.metadata,
            "special_tokens": self.special_tokens,
        }

    def to_bytes(self) -> bytes:
        """The canonical (uncompressed) bytes whose sha256 is the identity."""
        return self._blob

    def save(self, path: str | Path) -> None:
        """Write the table as one zstd frame, atomically (temporary file, fsync, rename)."""
        atomic_write(Path(path), codec.compress(self._blob))

    @classmethod
    def from_bytes(cls, blob: bytes, *, source: str | None = None) -> TokenTable:
        """Decode canonical bytes (or a zstd frame of them), checking every section."""
        if blob.startswith(codec.ZSTD_MAGIC):
            blob = codec.decompress_zstd(blob, source=source or "<bytes>")
        header, kinds, lengths, data, _ = codec.decode_body(blob, source=source)
        _check_header(header, source)
        special = dict(header["special_tokens"])
        added = dict(header["added_tokens"])
        eos = tuple(header["eos_ids"])
        metadata = header["metadata"]
        return cls(
            kinds=kinds,
            lengths=lengths,
            data=data,
            special_tokens=special,
            added_tokens=added,
            eos_ids=eos,
            metadata=metadata,
            blob=blob,
            source=source,
        )

    @classmethod
    def load(cls, path: str | Path) -> TokenTable:
        path = Path(path)
        return cls.from_bytes(codec.read_table_bytes(path), source=str(path))

    def __repr__(self) -> str:
        return f"TokenTable(vocab_size={self.vocab_size}, family={self.metadata.get('family')!r}, {self.sha256[:19]}…)"


def _is_id(value: object) -> bool:
    return type(value) is int and 0 <= value < 1 << 63


# The header of a `.trt` file: each field and what its value must be (exact JSON types: `true`
# is not the id 1, "5" is not 5).
HEADER_FIELDS = {
    "added_tokens": lambda v: isinstance(v, dict) and all(_is_id(i) for i in v.values()),
    "eos_ids": lambda v: isinstance(v, list) and all(_is_id(i) for i in v) and v == sorted(set(v)),
    "metadata": lambda v: isinstance(v, dict),
    "special_tokens": lambda v: isinstance(v, dict) and all(_is_id(i) for i in v.values()),
}


def _check_header(header: dict, source: str | None) -> None:
    if sorted(header) != sorted(HEADER_FIELDS):
        raise TrgcError(
            "E_TOKENIZER_TABLE_CORRUPT",
            f"header fields are {sorted(header)[:8]}, expected {sorted(HEADER_FIELDS)}",
            source=source,
        )
    for name, valid in HEADER_FIELDS.items():
        if not valid(header[name]):
            raise TrgcError(
                "E_TOKENIZER_TABLE_CORRUPT",
                f"header field {name!r} is malformed (ids are integers, EOS ids sorted and unique)",
                source=source,
            )


def _check_consistent(table: TokenTable, lengths: np.ndarray, source: str | None) -> None:
    """Every invariant a reader relies on; a violation in a file is corruption."""

    def fail(message: str) -> TrgcError:
        return TrgcError("E_TOKENIZER_TABLE_CORRUPT", message, source=source)

    if table.offsets[-1] != table.data.shape[0]:
        raise fail(
            f"token lengths add up to {int(table.offsets[-1]):,} bytes, data has {table.data.shape[0]:,}"
        )
    if table.vocab_size and int(table.kinds.max()) > KIND_UNUSED:
        raise fail(f"unknown token kind {int(table.kinds.max())}")
    no_bytes = (table.kinds == KIND_SPECIAL) | (table.kinds == KIND_UNUSED)
    if np.any(lengths[no_bytes] != 0):
        raise fail("a special or unused id has bytes")
    byte_kind = table.kinds == KIND_BYTE
    if np.any(lengths[byte_kind] != 1):
        raise fail("a byte-fallback token is not exactly one byte")
    special_ids = np.flatnonzero(table.kinds == KIND_SPECIAL)
    if sorted(table.special_tokens.values()) != special_ids.tolist():
        raise fail("special_tokens does not name exactly the ids of kind special")
    for name, i in table.added_tokens.items():
        if not 0 <= i < table.vocab_size or table.kinds[i] == KIND_UNUSED:
            raise fail(f"added token {name!r} has id {i}, which is not a token")
        if table.kinds[i] == KIND_SPECIAL and table.special_tokens.get(name) != i:
            raise fail(f"added special token {name!r} is not in special_tokens")
    for i in table.eos_ids:
        if not 0 <= i < table.vocab_size or table.kinds[i] == KIND_UNUSED:
            raise fail(f"EOS id {i} is not a token")


def reports(token_bytes: list[bytes | None], kinds: np.ndarray) -> dict:
    """Duplicate byte sequences, tokens that are not valid UTF-8 alone, empty tokens."""
    ids = np.flatnonzero((kinds == KIND_NORMAL) | (kinds == KIND_BYTE)).tolist()
    pieces = [token_bytes[i] or b"" for i in ids]
    empty = [i for i, piece in zip(ids, pieces, strict=True) if not piece]
    duplicates: list[list[int]] = []
    if len(set(pieces)) + max(len(empty) - 1, 0) != len(pieces):
        by_bytes: dict[bytes, list[int]] = {}
        for i, piece in zip(ids, pieces, strict=True):
            if piece:
                by_bytes.setdefault(piece, []).append(i)
        duplicates = sorted(group for group in by_bytes.values() if len(group) > 1)
    non_utf8 = [
        i
        for i, piece in zip(ids, pieces, strict=True)
        if not piece.isascii() and not _is_utf8(piece)
    ]
    return {
        "duplicate_groups": len(duplicates),
        "duplicates": duplicates,
        "empty": empty,
        "empty_count": len(empty),
        "non_utf8_count": len(non_utf8),
        "non_utf8_sample": non_utf8[:_REPORT_SAMPLE],
    }


def _is_utf8(piece: bytes) -> bool:
    try:
        piece.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def make_table(
    token_bytes: list[bytes | None],
    kinds: np.ndarray,
    *,
    special_tokens: dict[str, int],
    added_tokens: dict[str, int],
    eos_ids: tuple[int, ...] | list[int],
    metadata: dict,
) -> TokenTable:
    """Assemble a table from per-id bytes (None for ids without bytes) and kinds; adds reports."""
    kinds = np.asarray(kinds, dtype=np.uint8)
    pieces = [b if b is not None else b"" for b in token_bytes]
    lengths = np.fromiter(map(len, pieces), dtype=np.uint32, count=len(pieces))
    data = np.frombuffer(b"".join(pieces), dtype=np.uint8)
    metadata = dict(metadata)
    metadata["reports"] = reports(token_bytes, kinds)
    return TokenTable(
        kinds=kinds,
        lengths=lengths,
        data=data,
        special_tokens=special_tokens,
        added_tokens=added_tokens,
        eos_ids=tuple(eos_ids),
        metadata=metadata,
    )
