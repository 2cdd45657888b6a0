"""Token tables from live tokenizer objects: `tokenizers.Tokenizer`, transformers tokenizers,
`tiktoken.Encoding`.

A table's identity covers its provenance (`metadata.source_files`: the SHA-256 of every file it
was built from), so the same content reached from the same files must give the same bytes:

* **transformers** tokenizers remember the folder they were loaded from (`name_or_path`). When
  that folder holds a tokenizer, the table is built from its files, exactly as
  `trgc.load_tokenizer(folder)` does, and kept only if its content (every id's bytes and kind,
  special and added tokens, EOS ids) equals the table read from the live object; a tokenizer
  changed in memory (added tokens) gets the live table instead. Without a folder (a tokenizer
  converted from GGUF, for one), the live table is built from its `tokenizers` backend, with
  the configured `eos_token`.
* a **`tokenizers.Tokenizer`** is read from its own serialization (`to_str(pretty=True)`,
  recorded as `tokenizer.json`): the same identity as the file when the file is that
  serialization, as files written by `tokenizers` and `save_pretrained` are.
* a **`tiktoken.Encoding`** is read from its ranks and special tokens; the rank file is
  recorded under its canonical text (`BASE64 RANK` lines in rank order, which is what the
  published `.tiktoken` files are). The file loader also records the special-token sidecar:
  pass the same sidecar as `specials=` (its special tokens must be the encoding's) for the
  same identity as `trgc.load_tokenizer("<name>.tiktoken")`.

Objects are recognised by their types' modules, so none of these libraries is imported here.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import numpy as np

from trgc.errors import TrgcError
from trgc.limits import read_file
from trgc.tokenizer.sources import parse_json, sha256_hex
from trgc.tokenizer.table import TokenTable
from trgc.tokenizer.vocab import AddedToken, Vocab, table_from_vocab

TOKENIZER_JSON = "tokenizer.json"


def kind_of(obj: Any) -> str | None:
    """'tokenizers', 'transformers', 'tiktoken' or None, by the object's type."""
    mro = type(obj).__mro__
    roots = {c.__module__.split(".")[0] for c in mro}
    if "transformers" in roots and any(c.__name__ == "PreTrainedTokenizerBase" for c in mro):
        return "transformers"
    if "tokenizers" in roots and type(obj).__name__ == "Tokenizer":
        return "tokenizers"
    if "tiktoken" in roots and hasattr(obj, "_mergeable_ranks"):
        return "tiktoken"
    return None


def table_from_object(
    obj: Any,
    *,
    vocab_size: int | None = None,
    eos: list[int] | None = None,
    specials: str | Path | None = None,
) -> TokenTable:
    """The token table of a live tokenizer object (see the module docstring)."""
    kind = kind_of(obj)
    if kind is None:
        raise TrgcError(
            "E_ARGUMENT_TYPE",
            "expected a path, a TokenTable, a tokenizers.Tokenizer, a transformers tokenizer or "
            f"a tiktoken.Encoding, got {type(obj).__module__}.{type(obj).__name__}",
        )
    if specials is not None and kind != "tiktoken":
        raise TrgcError("E_USAGE", "specials= applies to tiktoken encodings only")
    if kind == "tiktoken":
        vocab = _tiktoken_vocab(obj, specials)
        return table_from_vocab(vocab, eos_override=eos, vocab_size=vocab_size, source=obj.name)
    if kind == "tokenizers":
        vocab = _backend_vocab(obj, "tokenizers.Tokenizer")
        return table_from_vocab(vocab, eos_override=eos, vocab_size=vocab_size, source="<live>")
    return _transformers_table(obj, vocab_size=vocab_size, eos=eos)


def _backend_vocab(backend: Any, what: str) -> Vocab:
    try:
        text = backend.to_str(pretty=True)
    except Exception as exc:  # the library's own error types
        raise TrgcError(
            "E_TOKENIZER_OBJECT", f"cannot serialise the {what}: {exc}", source="<live>"
        ) from None
    data = text.encode("utf-8")
    from trgc.tokenizer.hf_json import vocab_from_document

    doc = parse_json(data, source="<live>")
    return vocab_from_document(doc, sha256_hex(data), name=TOKENIZER_JSON, source="<live>")


def _transformers_table(tok: Any, *, vocab_size: int | None, eos: list[int] | None) -> TokenTable:
    backend = getattr(tok, "backend_tokenizer", None)
    folder = Path(str(getattr(tok, "name_or_path", "") or "")).expanduser()
    from_files = None
    if str(folder) and folder.is_dir():
        from trgc.tokenizer.load import build_table

        try:
            from_files = build_table(folder, eos=eos, vocab_size=vocab_size)
        except TrgcError:
            from_files = None  # not a folder trgc reads: fall back to the live object
    if backend is None:
        if from_files is not None:
            return from_files
        raise TrgcError(
            "E_TOKENIZER_OBJECT",
            f"the transformers tokenizer {type(tok).__name__} has neither a `tokenizers` backend "
            "nor a local folder of tokenizer files to read",
            hint="load it with use_fast=True, or pass the tokenizer's folder",
        )
    vocab = _backend_vocab(backend, f"transformers tokenizer {type(tok).__name__}")
    name = getattr(tok, "eos_token", None)
    if isinstance(name, str) and name:
        vocab.eos_names.append(name)
    live = table_from_vocab(vocab, eos_override=eos, vocab_size=vocab_size, source="<live>")
    if from_files is not None and same_content(from_files, live):
        return from_files
    return live


def same_content(a: TokenTable, b: TokenTable) -> bool:
    """Whether two tables give every id the same bytes and kind and agree on special tokens,
    added tokens and EOS ids (provenance aside)."""
    return (
        a.vocab_size == b.vocab_size
        and np.array_equal(a.kinds, b.kinds)
        and np.array_equal(a.offsets, b.offsets)
        and np.array_equal(a.data, b.data)
        and a.special_tokens == b.special_tokens
        and a.added_tokens == b.added_tokens
        and a.eos_ids == b.eos_ids
    )


def rank_file_text(ranks: dict[bytes, int]) -> bytes:
    """The canonical `.tiktoken` text of a rank table: `BASE64 RANK` lines in rank order."""
    ordered = sorted(ranks.items(), key=lambda kv: kv[1])
    return b"".join(base64.b64encode(piece) + b" %d\n" % rank for piece, rank in ordered)


def _tiktoken_vocab(enc: Any, specials: str | Path | None) -> Vocab:
    ranks: dict[bytes, int] = dict(enc._mergeable_ranks)
    live_specials: dict[str, int] = dict(enc._special_tokens)
    name = str(enc.name)
    files = {f"{name}.tiktoken": sha256_hex(rank_file_text(ranks))}
    extra: dict[str, Any] = {"string_style": "raw_bytes"}
    declared = None
    if specials is not None:
        from trgc.tokenizer.tiktoken_format import read_sidecar

        side = Path(specials)
        listed, fields = read_sidecar(side, name)
        if listed != live_specials:
            raise TrgcError(
                "E_TOKENIZER_OBJECT",
                f"the sidecar's special tokens for {name!r} are not the encoding's",
                source=str(side),
            )
        files[side.name] = sha256_hex(read_file(side, "tokenizer source"))
        if "pat_str" in fields:
            extra["pat_str"] = fields["pat_str"]
        declared = fields.get("n_words")
    else:
        extra["pat_str"] = enc._pat_str
    by_rank = {rank: piece for piece, rank in ranks.items()}
    if len(by_rank) != len(ranks):
        raise TrgcError("E_TOKENIZER_OBJECT", f"the encoding {name!r} repeats a rank")
    return Vocab(
        source_format="tiktoken",
        regular=by_rank,
        added=[
            AddedToken(i, n, True) for n, i in sorted(live_specials.items(), key=lambda kv: kv[1])
        ],
        files=files,
        declared_size=declared if type(declared) is int else None,
        extra=extra,
    )
