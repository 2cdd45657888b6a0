"""tiktoken rank files (`BASE64 RANK` per line) plus a special-token sidecar.

The rank file holds the regular tokens (id = rank, bytes = the decoded base64). Special tokens
are not in it; they come from `special_tokens.json` beside the file (or a path given by the
caller), in one of two shapes found in real distributions:
  * flat (Llama 3): `{"special_tokens": {name: id}, "pat_str": ..., "n_words": N}`;
  * per encoding (OpenAI): `{"o200k_base": {"special_tokens": {...}, "pat_str": ...}, ...}`,
    where the entry is chosen by the rank file's name.
"""

from __future__ import annotations

import binascii
import os
from pathlib import Path

from trgc.errors import Span, TrgcError
from trgc.tokenizer.sources import logical_name, read_json, read_source, sha256_hex
from trgc.tokenizer.vocab import AddedToken, Vocab

SIDECAR = "special_tokens.json"


def looks_like_tiktoken(head: bytes) -> bool:
    """The first line is `BASE64 DIGITS`."""
    line = head.split(b"\n", 1)[0]
    token, _, rank = line.partition(b" ")
    return bool(token) and rank.isdigit() and all(c in _B64 for c in token)


_B64 = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")


def parse_ranks(data: bytes, source: str) -> dict[int, bytes]:
    ranks: dict[int, bytes] = {}
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        token, sep, rank_text = line.partition(b" ")
        if not sep or not token or not rank_text.isdigit() or len(rank_text) > 9:
            raise TrgcError(
                "E_TOKENIZER_TIKTOKEN",
                f"line {number} is {line[:60]!r}, expected `BASE64 RANK`",
                source=source,
                span=Span(number, 1),
            )
        try:
            piece = binascii.a2b_base64(token, strict_mode=True)
        except binascii.Error as exc:
            raise TrgcError(
                "E_TOKENIZER_BASE64",
                f"line {number}: {token[:40]!r} is not valid base64 ({exc})",
                source=source,
                span=Span(number, 1),
            ) from None
        rank = int(rank_text)
        if rank in ranks:
            raise TrgcError(
                "E_TOKENIZER_DUPLICATE_ID",
                f"line {number}: rank {rank} appears twice",
                source=source,
                span=Span(number, 1),
            )
        ranks[rank] = piece
    return ranks


def find_sidecar(path: Path, sidecar: Path | None) -> Path:
    candidate = sidecar if sidecar is not None else path.parent / SIDECAR
    if not os.path.isfile(candidate):
        raise TrgcError(
            "E_TOKENIZER_MISSING_FILE",
            f"a tiktoken rank file has no special tokens of its own; {candidate} does not exist",
            source=str(path),
            hint="put special_tokens.json beside the rank file or pass it with --specials FILE",
        )
    return candidate


def read_sidecar(sidecar: Path, encoding: str) -> tuple[dict[str, int], dict]:
    """(special name -> id, extra fields such as pat_str and n_words) for one rank file."""
    doc, _ = read_json(sidecar)
    if not isinstance(doc, dict):
        raise TrgcError(
            "E_TOKENIZER_FORMAT", "special-token sidecar must be a JSON object", source=str(sidecar)
        )
    entry = doc if "special_tokens" in doc else doc.get(encoding)
    if not isinstance(entry, dict) or not isinstance(entry.get("special_tokens"), dict):
        raise TrgcError(
            "E_TOKENIZER_FORMAT",
            f"sidecar has no special_tokens for {encoding!r} (it has: {', '.join(sorted(doc)) or 'nothing'})",
            source=str(sidecar),
        )
    specials = entry["special_tokens"]
    by_id: dict[int, str] = {}
    for name, i in specials.items():
        if type(i) is not int or i < 0:
            raise TrgcError(
                "E_TOKENIZER_FORMAT", f"special token {name!r} has id {i!r}", source=str(sidecar)
            )
        if i in by_id:
            raise TrgcError(
                "E_TOKENIZER_DUPLICATE_ID",
                f"special-token sidecar names id {i} twice: {by_id[i]!r} and {name!r}",
                source=str(sidecar),
            )
        by_id[i] = name
    extra = {k: entry[k] for k in ("pat_str", "n_words") if k in entry}
    return dict(specials), extra


def load_tiktoken(path: Path, sidecar: Path | None = None) -> Vocab:
    source = str(path)
    data = read_source(path)
    ranks = parse_ranks(data, source)
    if not ranks:
        raise TrgcError(
            "E_TOKENIZER_TIKTOKEN",
            "the rank file holds no tokens",
            source=source,
            hint="a tiktoken rank file has one `BASE64 RANK` line per token",
        )
    side = find_sidecar(path, sidecar)
    encoding = logical_name(path).removesuffix(".tiktoken")
    specials, extra = read_sidecar(side, encoding)
    for name, i in specials.items():
        if i in ranks:
            raise TrgcError(
                "E_TOKENIZER_DUPLICATE_ID",
                f"special token {name!r} has id {i}, which is already the rank of a regular token",
                source=str(side),
            )
    declared = extra.get("n_words")
    return Vocab(
        source_format="tiktoken",
        regular=ranks,
        added=[
            AddedToken(i, name, True) for name, i in sorted(specials.items(), key=lambda kv: kv[1])
        ],
        files={logical_name(path): sha256_hex(data), side.name: sha256_hex(read_source(side))},
        declared_size=declared if type(declared) is int else None,
        extra={
            "string_style": "raw_bytes",
            **({"pat_str": extra["pat_str"]} if "pat_str" in extra else {}),
        },
    )
