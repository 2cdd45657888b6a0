"""What every loader produces (`Vocab`) and how it becomes a `TokenTable`.

Loaders only translate a file format into exact bytes per id; the rules shared by all formats
live here: added tokens override model entries at the same id, special tokens lose their bytes,
unassigned ids become unused gaps, one id or name may not be defined twice, and EOS/EOG ids are
resolved from config names, family rules, or the caller's explicit override.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trgc.errors import TrgcError
from trgc.tokenizer.sources import read_json
from trgc.tokenizer.table import (
    KIND_BYTE,
    KIND_NORMAL,
    KIND_SPECIAL,
    KIND_UNUSED,
    TokenTable,
    make_table,
)

MAX_VOCAB_IDS = 1 << 24

# (a special token that identifies a family, the family) — first match wins
_FAMILY_MARKERS = (
    ("<|im_start|>", "qwen"),
    ("<|begin_of_text|>", "llama3"),
    ("<｜begin▁of▁sentence｜>", "deepseek"),
    ("[INST]", "mistral"),
    ("<|endofprompt|>", "openai"),
    ("<|endoftext|>", "gpt2"),
)
# end-of-generation tokens a family stops on besides the configured eos_token; Llama 3.1+'s
# generation config lists <|end_of_text|>, <|eom_id|> and <|eot_id|>
_FAMILY_EOG = {"llama3": ("<|end_of_text|>", "<|eom_id|>", "<|eot_id|>")}


@dataclass(frozen=True)
class AddedToken:
    id: int
    content: str
    special: bool


@dataclass
class Vocab:
    """Exact bytes per id as read from one tokenizer source, before table assembly."""

    source_format: str
    regular: dict[int, bytes]  # normal tokens
    byte_fallback: dict[int, bytes] = field(default_factory=dict)  # single raw bytes
    model_specials: dict[str, int] = field(default_factory=dict)  # model pieces without bytes
    added: list[AddedToken] = field(default_factory=list)
    eos_names: list[str] = field(default_factory=list)  # from the tokenizer config
    eos_ids: list[int] = field(default_factory=list)  # from the model or generation config
    files: dict[str, str] = field(default_factory=dict)  # file name -> sha256 (uncompressed)
    family: str | None = None
    declared_size: int | None = None  # ids the format says it has (SentencePiece pieces, n_words)
    extra: dict[str, Any] = field(default_factory=dict)


def table_from_vocab(
    vocab: Vocab,
    *,
    eos_override: list[int] | None = None,
    vocab_size: int | None = None,
    source: str | None = None,
) -> TokenTable:
    """Assemble the token table; see the module docstring for the rules."""
    ids = [
        *vocab.regular,
        *vocab.byte_fallback,
        *vocab.model_specials.values(),
        *(a.id for a in vocab.added),
    ]
    needed = max(ids) + 1 if ids else 0
    if min(ids, default=0) < 0:
        raise TrgcError("E_TOKENIZER_FORMAT", f"negative token id {min(ids)}", source=source)
    size = vocab_size if vocab_size is not None else max(needed, vocab.declared_size or 0)
    if size < needed:
        raise TrgcError(
            "E_USAGE",
            f"--vocab-size {size} is smaller than the tokenizer's {needed} ids",
            source=source,
        )
    if size > MAX_VOCAB_IDS:
        raise TrgcError(
            "E_TOKENIZER_TOO_LARGE",
            f"{size:,} token ids exceeds the ceiling of {MAX_VOCAB_IDS:,}",
            source=source,
        )

    token_bytes: list[bytes | None] = [None] * size
    kinds = np.full(size, KIND_UNUSED, dtype=np.uint8)
    for i, piece in vocab.regular.items():
        token_bytes[i] = piece
    kinds[list(vocab.regular)] = KIND_NORMAL
    for i, piece in vocab.byte_fallback.items():
        if kinds[i] != KIND_UNUSED:
            raise _twice(i, source)
        token_bytes[i] = piece
        kinds[i] = KIND_BYTE
    special: dict[str, int] = {}
    for name, i in vocab.model_specials.items():
        if kinds[i] != KIND_UNUSED:
            raise _twice(i, source)
        kinds[i] = KIND_SPECIAL
        special[name] = i

    added: dict[str, int] = {}
    seen_added: dict[int, str] = {}
    overridden: list[int] = []
    for token in vocab.added:
        if token.id in seen_added:
            raise _twice(token.id, source, f"{seen_added[token.id]!r} and {token.content!r}")
        if token.content in added:
            raise TrgcError(
                "E_TOKENIZER_DUPLICATE_ID",
                f"added token {token.content!r} is given two ids, {added[token.content]} and {token.id}",
                source=source,
            )
        if special.get(token.content, token.id) != token.id:
            raise TrgcError(
                "E_TOKENIZER_DUPLICATE_ID",
                f"special token {token.content!r} is given two ids, {special[token.content]} and {token.id}",
                source=source,
            )
        seen_added[token.id] = token.content
        if kinds[token.id] in (KIND_NORMAL, KIND_BYTE):
            overridden.append(token.id)
        elif kinds[token.id] == KIND_SPECIAL:
            old = next(n for n, j in special.items() if j == token.id)
            if old != token.content or not token.special:
                raise _twice(token.id, source, f"{old!r} and {token.content!r}")
        added[token.content] = token.id
        if token.special:
            kinds[token.id] = KIND_SPECIAL
            token_bytes[token.id] = None
            special[token.content] = token.id
        else:
            kinds[token.id] = KIND_NORMAL
            token_bytes[token.id] = token.content.encode("utf-8")

    family = vocab.family or next(
        (fam for marker, fam in _FAMILY_MARKERS if marker in special), None
    )
    eos_ids, eos_source = _resolve_eos(vocab, family, special, added, kinds, eos_override, source)
    metadata = {
        "family": family or "unknown",
        "source_format": vocab.source_format,
        "source_files": dict(sorted(vocab.files.items())),
        "eos_source": eos_source,
        "overridden_model_ids": sorted(overridden),
        **vocab.extra,
    }
    return make_table(
        token_bytes,
        kinds,
        special_tokens=special,
        added_tokens=added,
        eos_ids=eos_ids,
        metadata=metadata,
    )


def _twice(i: int, source: str | None, what: str = "") -> TrgcError:
    return TrgcError(
        "E_TOKENIZER_DUPLICATE_ID",
        f"token id {i} is defined twice" + (f" ({what})" if what else ""),
        source=source,
    )


def _resolve_eos(
    vocab: Vocab,
    family: str | None,
    special: dict[str, int],
    added: dict[str, int],
    kinds: np.ndarray,
    override: list[int] | None,
    source: str | None,
) -> tuple[list[int], str]:
    if override is not None:
        ids, how = list(override), "override"
    else:
        ids = list(vocab.eos_ids)
        how = "config" if vocab.eos_ids or vocab.eos_names else "none"
        for name in vocab.eos_names:
            i = special.get(name, added.get(name))
            if i is None:
                raise TrgcError(
                    "E_TOKENIZER_EOS",
                    f"the config's eos_token {name!r} is not a token of this vocabulary",
                    source=source,
                    hint="pass the EOS id explicitly with --eos ID",
                )
            ids.append(i)
        extra = [special[n] for n in _FAMILY_EOG.get(family or "", ()) if n in special]
        if extra:
            ids += extra
            how = f"{family}-eog" if how == "none" else f"{how}+{family}-eog"
        if not ids and "<|endoftext|>" in special:
            ids, how = [special["<|endoftext|>"]], "endoftext"
    for i in ids:
        if not 0 <= i < kinds.shape[0] or kinds[i] == KIND_UNUSED:
            raise TrgcError(
                "E_TOKENIZER_EOS", f"EOS id {i} is not a token of this vocabulary", source=source
            )
    return sorted(set(ids)), how


def token_name(value: Any, *, field: str, source: str) -> str | None:
    """A config token field: null, a string, or an object with `content` (AddedToken form);
    anything else (`"eos_token": 5`) is `E_TOKENIZER_FORMAT`, never silently ignored."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    raise TrgcError(
        "E_TOKENIZER_FORMAT",
        f"{field} must be a token name (a string or an object with a string content), "
        f"got {str(value)[:60]!r}",
        source=source,
        hint="an id belongs in generation_config.json's eos_token_id or --eos ID",
    )


def read_config(folder: Path, vocab: Vocab) -> dict:
    """Read `tokenizer_config.json` and `generation_config.json` beside a tokenizer, if present.

    Records their hashes, the configured `eos_token` name and generation `eos_token_id`s; returns
    the tokenizer config (empty if absent) for format-specific fields.
    """
    config: dict = {}
    for name in ("tokenizer_config.json", "generation_config.json"):
        path = folder / name
        if not os.path.isfile(path):
            continue
        doc, digest = read_json(path)
        if not isinstance(doc, dict):
            raise TrgcError("E_TOKENIZER_FORMAT", "expected a JSON object", source=str(path))
        vocab.files[name] = digest
        if name == "tokenizer_config.json":
            config = doc
            eos = token_name(doc.get("eos_token"), field="eos_token", source=str(path))
            if eos is not None:
                vocab.eos_names.append(eos)
        else:
            value = doc.get("eos_token_id")
            values = value if isinstance(value, list) else [] if value is None else [value]
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                raise TrgcError(
                    "E_TOKENIZER_FORMAT",
                    f"eos_token_id must be integers, got {value!r}",
                    source=str(path),
                )
            vocab.eos_ids.extend(values)
    return config
