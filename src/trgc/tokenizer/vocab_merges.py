"""`vocab.json` + `merges.txt` (Hugging Face) and `encoder.json` + `vocab.bpe` (OpenAI GPT-2).

Both are byte-level BPE: every vocabulary string is the GPT-2 byte-alphabet image of its bytes.
Added tokens come from `tokenizer_config.json` (`added_tokens_decoder`) and `added_tokens.json`.
A vocabulary entry that BPE can never produce — neither one alphabet character nor the result
of any merge — is a token added to the file by hand (GPT-2 keeps `<|endoftext|>` this way); it is
marked special and listed in the table's metadata, so nothing is silently treated as text.
"""

from __future__ import annotations

import os
from pathlib import Path

from trgc.errors import TrgcError
from trgc.tokenizer.bytelevel import byte_to_char, decode_byte_level_many
from trgc.tokenizer.hf_json import _check_ids
from trgc.tokenizer.sources import logical_name, read_json, read_source, sha256_hex
from trgc.tokenizer.vocab import AddedToken, Vocab, read_config, token_name

PAIRS = (("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe"))


def merges_file_for(vocab_path: Path) -> Path:
    name = logical_name(vocab_path)
    partner = dict(PAIRS).get(name, "merges.txt")
    for candidate in (vocab_path.parent / partner, vocab_path.parent / f"{partner}.zst"):
        if os.path.isfile(candidate):
            return candidate
    raise TrgcError(
        "E_TOKENIZER_MISSING_FILE",
        f"{name} needs its merges file {partner} beside it",
        source=str(vocab_path),
    )


def merge_results(data: bytes, source: str) -> set[str]:
    """The strings produced by the merges (`a b` per line, after an optional `#version` line)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrgcError(
            "E_TOKENIZER_FORMAT", f"merges file is not UTF-8 at byte {exc.start}", source=source
        ) from None
    out: set[str] = set()
    for number, line in enumerate(text.split("\n"), start=1):
        if not line or (number == 1 and line.startswith("#version")):
            continue
        left, sep, right = line.partition(" ")
        if not sep or not left or not right or " " in right:
            raise TrgcError(
                "E_TOKENIZER_FORMAT",
                f"merges line {number} is {line[:60]!r}, expected `A B`",
                source=source,
            )
        out.add(left + right)
    return out


def load_vocab_merges(vocab_path: Path) -> Vocab:
    source = str(vocab_path)
    merges_path = merges_file_for(vocab_path)
    vocab, vocab_digest = read_json(vocab_path)
    if not isinstance(vocab, dict):
        raise TrgcError(
            "E_TOKENIZER_FORMAT", "vocabulary must be a JSON object of string -> id", source=source
        )
    _check_ids(vocab, source)
    merges_data = read_source(merges_path)
    produced = merge_results(merges_data, str(merges_path))
    result = Vocab(
        source_format="vocab-merges/byte-level-bpe",
        regular={},
        files={
            logical_name(vocab_path): vocab_digest,
            logical_name(merges_path): sha256_hex(merges_data),
        },
        extra={"string_style": "byte_level"},
    )
    config = read_config(vocab_path.parent, result)
    result.added = _added_tokens(vocab_path.parent, config, result)
    added_ids = {a.id for a in result.added}
    alphabet = set(byte_to_char())
    unreachable: list[AddedToken] = []
    texts: list[str] = []
    keys: list[int] = []
    for text, i in vocab.items():
        if i in added_ids:
            continue
        if text not in alphabet and text not in produced:
            unreachable.append(AddedToken(i, text, True))
            continue
        texts.append(text)
        keys.append(i)
    result.regular = dict(
        zip(keys, decode_byte_level_many(texts, source=source, ids=keys), strict=True)
    )
    result.added += unreachable
    result.extra["unreachable_entries_as_special"] = sorted(a.content for a in unreachable)
    return result


def _added_tokens(folder: Path, config: dict, vocab: Vocab) -> list[AddedToken]:
    """Added tokens from `added_tokens_decoder` and `added_tokens.json`, which must agree."""
    by_id: dict[int, AddedToken] = {}
    decoder = config.get("added_tokens_decoder", {})
    if not isinstance(decoder, dict):
        raise TrgcError(
            "E_TOKENIZER_FORMAT",
            "added_tokens_decoder must be an object",
            source=str(folder / "tokenizer_config.json"),
        )
    for key, entry in decoder.items():
        if (
            not key.isdigit()
            or not isinstance(entry, dict)
            or not isinstance(entry.get("content"), str)
        ):
            raise TrgcError(
                "E_TOKENIZER_FORMAT",
                f"added_tokens_decoder entry {key!r} is malformed",
                source=str(folder / "tokenizer_config.json"),
            )
        by_id[int(key)] = AddedToken(int(key), entry["content"], bool(entry.get("special", False)))
    config_path = str(folder / "tokenizer_config.json")
    named = {
        token_name(config.get(k), field=k, source=config_path)
        for k in ("bos_token", "eos_token", "unk_token", "pad_token")
    }
    extra = config.get("additional_special_tokens", [])
    if not isinstance(extra, list):
        raise TrgcError(
            "E_TOKENIZER_FORMAT", "additional_special_tokens must be a list", source=config_path
        )
    named |= {token_name(t, field="additional_special_tokens", source=config_path) for t in extra}
    path = folder / "added_tokens.json"
    if os.path.isfile(path):
        doc, digest = read_json(path)
        vocab.files["added_tokens.json"] = digest
        if not isinstance(doc, dict):
            raise TrgcError(
                "E_TOKENIZER_FORMAT",
                "added_tokens.json must be an object of name -> id",
                source=str(path),
            )
        for name, i in doc.items():
            if type(i) is not int or i < 0:
                raise TrgcError(
                    "E_TOKENIZER_FORMAT", f"added token {name!r} has id {i!r}", source=str(path)
                )
            known = by_id.get(i)
            if known is not None and known.content != name:
                raise TrgcError(
                    "E_TOKENIZER_DUPLICATE_ID",
                    f"id {i} is {known.content!r} in tokenizer_config.json but {name!r} in added_tokens.json",
                    source=str(path),
                )
            if known is None:
                by_id[i] = AddedToken(i, name, name in named)
    return [by_id[i] for i in sorted(by_id)]
