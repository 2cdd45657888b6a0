"""Finding and loading a tokenizer: a `.trt` table, one tokenizer file, or a folder.

A folder is recognised by its contents. Each recognised layout is one candidate; none is an
`E_TOKENIZER_FORMAT` error naming what was looked for, several is `E_TOKENIZER_AMBIGUOUS`
naming them all (the caller then passes the file it means). Files named `tokenizer.model` are
told apart by content: a tiktoken rank file is text lines, a SentencePiece model is protobuf.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from trgc.errors import TrgcError
from trgc.tokenizer.sources import logical_name, read_source
from trgc.tokenizer.table import TokenTable

TABLE_SUFFIX = ".trt"


@dataclass(frozen=True)
class Source:
    """One recognised tokenizer input: its main file and its format, one of
    `tokenizer.json`, `vocab-merges`, `tiktoken`, `sentencepiece`."""

    format: str
    path: Path


def _sniff_model(path: Path) -> str:
    head = read_source(path)[:256]
    from trgc.tokenizer.spm import looks_like_sentencepiece
    from trgc.tokenizer.tiktoken_format import looks_like_tiktoken

    if looks_like_tiktoken(head):
        return "tiktoken"
    if looks_like_sentencepiece(head):
        return "sentencepiece"
    raise TrgcError(
        "E_TOKENIZER_FORMAT",
        "neither a tiktoken rank file (`BASE64 RANK` lines) nor a SentencePiece ModelProto",
        source=str(path),
    )


def classify_file(path: Path) -> Source:
    """The format of one tokenizer file, by name and (for `.model` files) by content."""
    name = logical_name(path)
    if name.endswith(".json"):
        if name in ("vocab.json", "encoder.json"):
            return Source("vocab-merges", path)
        if name in (
            "tokenizer_config.json",
            "special_tokens.json",
            "added_tokens.json",
            "generation_config.json",
        ):
            raise TrgcError(
                "E_TOKENIZER_FORMAT",
                f"{name} is a companion file, not a vocabulary",
                source=str(path),
                hint="pass the folder or the vocabulary file",
            )
        return Source("tokenizer.json", path)
    if name.endswith(TABLE_SUFFIX):
        raise TrgcError(
            "E_TOKENIZER_FORMAT",
            "this is a built token table, not a tokenizer source",
            source=str(path),
            hint="inspect it with `trgc tokenizer inspect`; build from the tokenizer's files",
        )
    if name.endswith(".tiktoken"):
        return Source("tiktoken", path)
    if ".model" in name:
        return Source(_sniff_model(path), path)
    raise TrgcError(
        "E_TOKENIZER_FORMAT",
        f"cannot tell the tokenizer format of {name!r}",
        source=str(path),
        hint="expected tokenizer.json, vocab.json/encoder.json, *.tiktoken, *.model or a .trt table",
    )


def detect_folder(folder: Path) -> Source:
    """The one tokenizer layout in `folder`; see the module docstring."""
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        raise TrgcError(
            "E_IO", f"cannot list the folder: {exc.strerror}", source=str(folder)
        ) from None
    names = {logical_name(p): p for p in entries if os.path.isfile(p)}
    found: list[Source] = []
    if "tokenizer.json" in names:
        found.append(Source("tokenizer.json", names["tokenizer.json"]))
    for vocab_name, merges_name in (("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe")):
        if vocab_name in names:
            if merges_name not in names:
                raise TrgcError(
                    "E_TOKENIZER_MISSING_FILE",
                    f"{vocab_name} is here but {merges_name} is not",
                    source=str(folder),
                )
            found.append(Source("vocab-merges", names[vocab_name]))
    for name in sorted(names):
        if name.endswith(".tiktoken") or ".model" in name:
            found.append(classify_file(names[name]))
    if not found:
        raise TrgcError(
            "E_TOKENIZER_FORMAT",
            "no tokenizer found: expected tokenizer.json, vocab.json + merges.txt, encoder.json + vocab.bpe, "
            "*.tiktoken (+ special_tokens.json) or a *.model file",
            source=str(folder),
        )
    if len(found) > 1:
        listed = ", ".join(f"{s.path.name} ({s.format})" for s in found)
        raise TrgcError(
            "E_TOKENIZER_AMBIGUOUS",
            f"the folder holds {len(found)} tokenizers: {listed}",
            source=str(folder),
            hint="pass the file you mean instead of the folder",
        )
    return found[0]


def resolve_source(path: Path) -> Source:
    path = Path(path)
    if os.path.isdir(path):
        return detect_folder(path)
    if not os.path.isfile(path):
        raise TrgcError("E_IO", "no such file or folder", source=str(path))
    return classify_file(path)


def build_table(
    path: str | Path,
    *,
    eos: list[int] | None = None,
    vocab_size: int | None = None,
    specials: str | Path | None = None,
) -> TokenTable:
    """Build a token table from a tokenizer file or folder (never from a `.trt`)."""
    src = resolve_source(Path(path))
    if src.format == "tokenizer.json":
        from trgc.tokenizer.hf_json import load_tokenizer_json

        vocab = load_tokenizer_json(src.path)
    elif src.format == "vocab-merges":
        from trgc.tokenizer.vocab_merges import load_vocab_merges

        vocab = load_vocab_merges(src.path)
    elif src.format == "tiktoken":
        from trgc.tokenizer.tiktoken_format import load_tiktoken

        vocab = load_tiktoken(src.path, Path(specials) if specials is not None else None)
    else:
        from trgc.tokenizer.spm import load_sentencepiece

        vocab = load_sentencepiece(src.path)
    if specials is not None and src.format != "tiktoken":
        raise TrgcError(
            "E_USAGE", "--specials applies to tiktoken rank files only", source=str(path)
        )
    from trgc.tokenizer.vocab import table_from_vocab

    return table_from_vocab(vocab, eos_override=eos, vocab_size=vocab_size, source=str(src.path))


def load_tokenizer(path: Any, **options) -> TokenTable:
    """A `.trt` token table, or a tokenizer file/folder built in memory (`build_table` options:
    `eos`, `vocab_size` (the model's, padding with unused ids), `specials`).

    `path` may also be a live tokenizer object: a `tokenizers.Tokenizer`, a transformers
    tokenizer or a `tiktoken.Encoding` (`trgc.tokenizer.live`), with the same options; a
    `TokenTable` is returned as it is. Any other type is `E_ARGUMENT_TYPE`."""
    if isinstance(path, TokenTable) and not options:
        return path
    if not isinstance(path, str | PathLike):
        from trgc.tokenizer.live import table_from_object

        return table_from_object(path, **options)
    path = Path(path)
    if path.suffix == TABLE_SUFFIX or (os.path.isfile(path) and _starts_like_table(path)):
        if options:
            raise TrgcError(
                "E_USAGE",
                f"build options {sorted(options)} do not apply to a built table",
                source=str(path),
            )
        return TokenTable.load(path)
    return build_table(path, **options)


def _starts_like_table(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(8) == b"TRGCTOK\x00"
    except OSError as exc:
        raise TrgcError("E_IO", f"cannot read: {exc.strerror}", source=str(path)) from None
