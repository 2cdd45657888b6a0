"""Hugging Face `tokenizer.json`: byte-level BPE and SentencePiece-style (`▁`, `<0xNN>`) models.

How a vocabulary string maps to bytes is decided by the tokenizer's own pipeline, never guessed:
a `ByteLevel` decoder or pre-tokenizer means GPT-2 byte-level strings; a `Metaspace` decoder or a
`Replace("▁", " ")` decoder means SentencePiece-style strings, with `<0xNN>` pieces as single
bytes when the model has `byte_fallback`. Added tokens are literal UTF-8 strings and override the
model entry with the same id (DeepSeek-V3 keeps its special strings at ids 0..2 of the model).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from trgc.errors import TrgcError
from trgc.tokenizer.bytelevel import decode_byte_level_many
from trgc.tokenizer.sources import logical_name, read_json
from trgc.tokenizer.vocab import AddedToken, Vocab, read_config

BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
SP_SPACE = "▁"


def pipeline_types(node: Any) -> list[tuple[str, dict]]:
    """Every (type, component) in a decoder / pre-tokenizer / normalizer tree, iteratively."""
    found: list[tuple[str, dict]] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("type"), str):
                found.append((item["type"], item))
            stack.extend(v for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend(item)
    return found


def string_style(doc: dict, source: str) -> tuple[str, str]:
    """('byte_level', '') or ('sentencepiece', replacement character) for a tokenizer.json."""
    decoder = pipeline_types(doc.get("decoder"))
    pre = pipeline_types(doc.get("pre_tokenizer"))
    byte_level = any(t == "ByteLevel" for t, _ in decoder + pre)
    space: str | None = None
    for kind, comp in decoder + pre:
        if kind == "Metaspace":
            space = comp.get("replacement", SP_SPACE)
        elif (
            kind == "Replace"
            and isinstance(comp.get("pattern"), dict)
            and comp.get("content") == " "
        ):
            pattern = comp["pattern"].get("String")
            if isinstance(pattern, str) and len(pattern) == 1:
                space = pattern
    if byte_level and space is not None:
        raise TrgcError(
            "E_TOKENIZER_MODEL_TYPE",
            "the pipeline has both ByteLevel and a Metaspace/Replace space marker; cannot tell how strings map to bytes",
            source=source,
        )
    if byte_level:
        return "byte_level", ""
    if space is not None:
        return "sentencepiece", space
    raise TrgcError(
        "E_TOKENIZER_MODEL_TYPE",
        "cannot tell how vocabulary strings map to bytes: the decoder and pre-tokenizer have neither "
        "ByteLevel nor a Metaspace / Replace(▁ -> space) step",
        source=source,
        hint="trgc reads byte-level BPE and SentencePiece-style models with byte fallback",
    )


def _check_merges(merges: object, source: str) -> None:
    """BPE merges are `"A B"` strings or `["A", "B"]` pairs (both layouts the tokenizers library
    writes); an integer, a triple or a string without exactly one separating space is damage."""
    if not isinstance(merges, list):
        raise TrgcError("E_TOKENIZER_FORMAT", "model.merges must be a list", source=source)
    for index, merge in enumerate(merges):
        if isinstance(merge, str):
            parts = merge.split(" ")
        elif isinstance(merge, list) and all(isinstance(p, str) for p in merge):
            parts = merge
        else:
            parts = []
        if len(parts) != 2 or not all(parts):
            raise TrgcError(
                "E_TOKENIZER_FORMAT",
                f'model.merges[{index}] is {str(merge)[:60]!r}, expected "A B" or ["A", "B"]',
                source=source,
            )


def model_vocab(model: dict, source: str) -> tuple[str, dict[str, int]]:
    """The model type and its vocabulary string -> id, refusing types that lack exact bytes."""
    kind = model.get("type")
    if kind is None and isinstance(model.get("vocab"), dict) and "merges" in model:
        kind = "BPE"  # older files omit the tag; the tokenizers library reads them as BPE
    if kind == "BPE":
        vocab = model.get("vocab")
        if not isinstance(vocab, dict):
            raise TrgcError(
                "E_TOKENIZER_FORMAT", "model.vocab must be an object of string -> id", source=source
            )
        _check_merges(model.get("merges", []), source)
        return kind, vocab
    if kind == "Unigram":
        if not model.get("byte_fallback"):
            raise TrgcError(
                "E_TOKENIZER_MODEL_TYPE",
                "Unigram model without byte_fallback: text outside its pieces has no exact bytes",
                source=source,
                hint="only Unigram models with byte_fallback: true can be mapped to exact token bytes",
            )
        pieces = model.get("vocab")
        if not isinstance(pieces, list) or not all(
            isinstance(p, list)
            and len(p) == 2
            and isinstance(p[0], str)
            and isinstance(p[1], int | float)
            and not isinstance(p[1], bool)
            for p in pieces
        ):
            raise TrgcError(
                "E_TOKENIZER_FORMAT",
                "Unigram model.vocab must be a list of [piece, score]",
                source=source,
            )
        return kind, {p[0]: i for i, p in enumerate(pieces)}
    raise TrgcError(
        "E_TOKENIZER_MODEL_TYPE",
        f"model type {kind!r} is not supported: trgc needs BPE (byte-level or SentencePiece-style with "
        "byte fallback) or Unigram with byte fallback to know every token's exact bytes",
        source=source,
    )


def load_tokenizer_json(path: Path) -> Vocab:
    """Read one `tokenizer.json` (and `tokenizer_config.json` / `generation_config.json` beside it)."""
    doc, digest = read_json(path)
    result = vocab_from_document(doc, digest, name=logical_name(path), source=str(path))
    read_config(path.parent, result)
    return result


def vocab_from_document(doc: Any, digest: str, *, name: str, source: str) -> Vocab:
    """The `Vocab` of a parsed tokenizer.json document whose text has sha256 `digest`
    (recorded as `source_files[name]`); companion config files are the caller's."""
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        raise TrgcError(
            "E_TOKENIZER_FORMAT", "not a tokenizer.json: no `model` object", source=source
        )
    model = doc["model"]
    kind, vocab = model_vocab(model, source)
    style, space = string_style(doc, source)
    added = parse_added(doc.get("added_tokens", []), source)
    _check_ids(vocab, source)
    added_ids = {a.id for a in added}

    regular: dict[int, bytes] = {}
    byte_fallback: dict[int, bytes] = {}
    model_specials: dict[str, int] = {}
    if style == "byte_level":
        items = [(text, i) for text, i in vocab.items() if i not in added_ids]
        texts = [text for text, _ in items]
        keys = [i for _, i in items]
        regular = dict(
            zip(keys, decode_byte_level_many(texts, source=source, ids=keys), strict=True)
        )
    else:
        unk = model.get("unk_token")
        if kind == "Unigram" and isinstance(model.get("unk_id"), int):
            unk = next((text for text, i in vocab.items() if i == model["unk_id"]), None)
        fallback = bool(model.get("byte_fallback"))
        for text, i in vocab.items():
            if i in added_ids:
                continue
            match = BYTE_PIECE.fullmatch(text) if fallback else None
            if match:
                byte_fallback[i] = bytes([int(match.group(1), 16)])
            elif text == unk:
                model_specials[text] = i
            else:
                regular[i] = text.replace(space, " ").encode("utf-8")
        if not fallback:
            raise TrgcError(
                "E_TOKENIZER_MODEL_TYPE",
                "SentencePiece-style model without byte_fallback: text outside its pieces has no exact bytes",
                source=source,
            )
    result = Vocab(
        source_format=f"hf-tokenizer-json/{kind.lower()}-{style.replace('_', '-')}",
        regular=regular,
        byte_fallback=byte_fallback,
        model_specials=model_specials,
        added=added,
        files={name: digest},
        extra={"string_style": style},
    )
    return result


def parse_added(entries: Any, source: str) -> list[AddedToken]:
    """`added_tokens` of tokenizer.json: a list of {id, content, special}."""
    if not isinstance(entries, list):
        raise TrgcError("E_TOKENIZER_FORMAT", "added_tokens must be a list", source=source)
    out = []
    for k, entry in enumerate(entries):
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("id"), int)
            and not isinstance(entry.get("id"), bool)
            and isinstance(entry.get("content"), str)
        ):
            raise TrgcError(
                "E_TOKENIZER_FORMAT",
                f"added_tokens[{k}] needs an integer id and a string content",
                source=source,
                pointer=f"/added_tokens/{k}",
            )
        out.append(AddedToken(entry["id"], entry["content"], bool(entry.get("special", False))))
    return out


def _check_ids(vocab: dict[str, int], source: str) -> None:
    values = list(vocab.values())
    if not all(type(v) is int and v >= 0 for v in values):
        bad = next(v for v in values if type(v) is not int or v < 0)
        raise TrgcError(
            "E_TOKENIZER_FORMAT",
            f"vocabulary id {bad!r} is not a non-negative integer",
            source=source,
        )
    if len(set(values)) != len(values):
        seen: dict[int, str] = {}
        for text, i in vocab.items():
            if i in seen:
                raise TrgcError(
                    "E_TOKENIZER_DUPLICATE_ID",
                    f"vocabulary id {i} is given to both {seen[i]!r} and {text!r}",
                    source=source,
                )
            seen[i] = text
