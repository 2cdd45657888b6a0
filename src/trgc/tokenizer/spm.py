"""SentencePiece `.model` files (Llama 2, Mistral): pieces to exact bytes.

Piece types decide the kind: NORMAL and USER_DEFINED pieces are UTF-8 text with `▁` standing for
a space; BYTE pieces `<0xNN>` are one raw byte (byte fallback); CONTROL and UNKNOWN pieces have no
bytes and are special tokens matched by name; UNUSED pieces are unused ids. Only BPE models, and
Unigram models with byte fallback, give every text exact bytes; anything else is refused.
"""

from __future__ import annotations

import re
from pathlib import Path

from trgc.errors import TrgcError
from trgc.tokenizer.protowire import LEN, VARINT, as_int32, fields
from trgc.tokenizer.sources import logical_name, read_source, sha256_hex
from trgc.tokenizer.vocab import AddedToken, Vocab

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
SP_SPACE = "▁"


def looks_like_sentencepiece(head: bytes) -> bool:
    """A ModelProto starts with field 1 (pieces), length-delimited: tag byte 0x0A."""
    return head[:1] == b"\x0a"


def parse_model(buf: bytes, source: str) -> tuple[list[tuple[str, int]], dict, dict]:
    """(pieces as (text, type), trainer spec fields, normalizer spec fields) of a ModelProto."""
    pieces: list[tuple[str, int]] = []
    trainer = {
        "model_type": 1,
        "byte_fallback": False,
        "unk_id": 0,
        "bos_id": 1,
        "eos_id": 2,
        "pad_id": -1,
    }
    normalizer = {
        "name": "",
        "add_dummy_prefix": True,
        "remove_extra_whitespaces": True,
        "escape_whitespaces": True,
    }
    for number, wire, value in fields(buf, source=source):
        if number == 1 and wire == LEN:
            text, kind = None, NORMAL
            lo, hi = value  # type: ignore[misc]
            for n, w, v in fields(buf, lo, hi, source):
                if n == 1 and w == LEN:
                    try:
                        text = buf[v[0] : v[1]].decode("utf-8")  # type: ignore[index]
                    except UnicodeDecodeError:
                        raise TrgcError(
                            "E_TOKENIZER_PROTOBUF",
                            f"piece {len(pieces)} is not UTF-8",
                            source=source,
                        ) from None
                elif n == 3 and w == VARINT:
                    kind = int(v)  # type: ignore[arg-type]
            if text is None:
                raise TrgcError(
                    "E_TOKENIZER_PROTOBUF", f"piece {len(pieces)} has no text", source=source
                )
            pieces.append((text, kind))
        elif number == 2 and wire == LEN:
            lo, hi = value  # type: ignore[misc]
            names = {
                3: "model_type",
                35: "byte_fallback",
                40: "unk_id",
                41: "bos_id",
                42: "eos_id",
                43: "pad_id",
            }
            for n, w, v in fields(buf, lo, hi, source):
                if n in names and w == VARINT:
                    trainer[names[n]] = bool(v) if n == 35 else as_int32(int(v))  # type: ignore[arg-type]
        elif number == 3 and wire == LEN:
            lo, hi = value  # type: ignore[misc]
            for n, w, v in fields(buf, lo, hi, source):
                if n == 1 and w == LEN:
                    normalizer["name"] = buf[v[0] : v[1]].decode("utf-8", "replace")  # type: ignore[index]
                elif n in (3, 4, 5) and w == VARINT:
                    key = {
                        3: "add_dummy_prefix",
                        4: "remove_extra_whitespaces",
                        5: "escape_whitespaces",
                    }[n]
                    normalizer[key] = bool(v)
    if not pieces:
        raise TrgcError(
            "E_TOKENIZER_PROTOBUF", "no pieces: not a SentencePiece model", source=source
        )
    return pieces, trainer, normalizer


def load_sentencepiece(path: Path) -> Vocab:
    source = str(path)
    buf = read_source(path)
    if not looks_like_sentencepiece(buf):
        raise TrgcError(
            "E_TOKENIZER_PROTOBUF", "does not start like a SentencePiece ModelProto", source=source
        )
    pieces, trainer, normalizer = parse_model(buf, source)
    model_type = MODEL_TYPES.get(trainer["model_type"], f"type {trainer['model_type']}")
    if model_type not in ("bpe", "unigram") or (
        model_type == "unigram" and not trainer["byte_fallback"]
    ):
        raise TrgcError(
            "E_TOKENIZER_MODEL_TYPE",
            f"SentencePiece {model_type} model"
            + ("" if trainer["byte_fallback"] else " without byte_fallback")
            + ": text outside its pieces has no exact bytes",
            source=source,
            hint="trgc reads SentencePiece BPE models and Unigram models with byte_fallback",
        )
    regular: dict[int, bytes] = {}
    byte_fallback: dict[int, bytes] = {}
    specials: dict[str, int] = {}
    added: list[AddedToken] = []
    for i, (text, kind) in enumerate(pieces):
        if kind in (CONTROL, UNKNOWN):
            if text in specials:
                raise TrgcError(
                    "E_TOKENIZER_DUPLICATE_ID",
                    f"control piece {text!r} appears twice",
                    source=source,
                )
            specials[text] = i
        elif kind == BYTE:
            match = _BYTE_PIECE.fullmatch(text)
            if not match:
                raise TrgcError(
                    "E_TOKENIZER_PROTOBUF", f"BYTE piece {i} is {text!r}, not <0xNN>", source=source
                )
            byte_fallback[i] = bytes([int(match.group(1), 16)])
        elif kind == USER_DEFINED:
            added.append(AddedToken(i, text.replace(SP_SPACE, " "), False))
        elif kind == NORMAL:
            regular[i] = text.replace(SP_SPACE, " ").encode("utf-8")
        elif kind != UNUSED:
            raise TrgcError(
                "E_TOKENIZER_PROTOBUF", f"piece {i} has unknown type {kind}", source=source
            )
    eos = trainer["eos_id"]
    eos_ids = [eos] if 0 <= eos < len(pieces) and pieces[eos][1] == CONTROL else []
    return Vocab(
        source_format=f"sentencepiece/{model_type}",
        regular=regular,
        byte_fallback=byte_fallback,
        model_specials=specials,
        added=added,
        eos_ids=eos_ids,
        files={logical_name(path): sha256_hex(buf)},
        declared_size=len(pieces),
        extra={
            "string_style": "sentencepiece",
            "sentencepiece": {
                "add_dummy_prefix": normalizer["add_dummy_prefix"],
                "byte_fallback": trainer["byte_fallback"],
                "normalizer": normalizer["name"],
                "remove_extra_whitespaces": normalizer["remove_extra_whitespaces"],
            },
        },
    )
