"""The trgc token table of a GGUF model, read from the file's tokenizer metadata.

GGUF stores the tokenizer as parallel arrays: `tokenizer.ggml.tokens` (strings),
`tokenizer.ggml.token_type` (llama.cpp's token types) and `tokenizer.ggml.eos_token_id`.
For `tokenizer.ggml.model == "gpt2"` (byte-level BPE: GPT-2, SmolLM2, Llama 3, Qwen) each
normal token's string is the GPT-2 byte-level image of its bytes, so its exact bytes come from
the same inverse alphabet the tokenizer.json loader uses; control tokens are special (no
bytes, matched by name); user-defined tokens are added tokens whose bytes are their UTF-8
text. Other tokenizer models and token types are refused, never guessed.
"""

from __future__ import annotations

from pathlib import Path

from trgc.errors import TrgcError
from trgc.integrations.deps import require
from trgc.integrations.weights import file_sha256
from trgc.tokenizer.bytelevel import decode_byte_level_many
from trgc.tokenizer.table import TokenTable
from trgc.tokenizer.vocab import AddedToken, Vocab, table_from_vocab

# llama.cpp `llama_token_type` values
TYPE_NORMAL, TYPE_UNKNOWN, TYPE_CONTROL, TYPE_USER_DEFINED, TYPE_UNUSED, TYPE_BYTE = (
    1,
    2,
    3,
    4,
    5,
    6,
)


def _field(reader, key: str, source: str):
    field = reader.fields.get(key)
    if field is None:
        raise TrgcError("E_TOKENIZER_FORMAT", f"the GGUF metadata has no {key!r}", source=source)
    return field


def _strings(reader, key: str, source: str) -> list[str]:
    field = _field(reader, key, source)
    return [bytes(field.parts[i]).decode("utf-8") for i in field.data]


def _ints(reader, key: str, source: str) -> list[int]:
    field = _field(reader, key, source)
    return [int(field.parts[i][0]) for i in field.data]


def _scalar_str(reader, key: str, source: str) -> str:
    return _strings(reader, key, source)[0]


def table_from_gguf(path: Path | str) -> TokenTable:
    """Build the token table of the GGUF file at `path` (see the module docstring)."""
    path = Path(path)
    source = str(path)
    gguf = require("gguf", "reading a GGUF tokenizer")
    try:
        reader = gguf.GGUFReader(source)
    except (OSError, ValueError) as exc:
        raise TrgcError(
            "E_TOKENIZER_FORMAT", f"not a readable GGUF file: {exc}", source=source
        ) from None
    model = _scalar_str(reader, "tokenizer.ggml.model", source)
    if model != "gpt2":
        raise TrgcError(
            "E_TOKENIZER_MODEL_TYPE",
            f"GGUF tokenizer model {model!r} is not byte-level BPE ('gpt2')",
            source=source,
        )
    tokens = _strings(reader, "tokenizer.ggml.tokens", source)
    types = _ints(reader, "tokenizer.ggml.token_type", source)
    if len(types) != len(tokens):
        raise TrgcError(
            "E_TOKENIZER_FORMAT",
            f"{len(tokens)} tokens but {len(types)} token types",
            source=source,
        )
    eos = _ints(reader, "tokenizer.ggml.eos_token_id", source)
    family = (
        _scalar_str(reader, "general.basename", source)
        if "general.basename" in reader.fields
        else None
    )
    normal = [i for i, t in enumerate(types) if t == TYPE_NORMAL]
    odd = sorted({t for t in types if t not in (TYPE_NORMAL, TYPE_CONTROL, TYPE_USER_DEFINED)})
    if odd:
        raise TrgcError(
            "E_TOKENIZER_MODEL_TYPE",
            f"GGUF token types {odd} have no byte-level meaning trgc can map to exact bytes",
            source=source,
        )
    pieces = decode_byte_level_many([tokens[i] for i in normal], source=source, ids=normal)
    vocab = Vocab(
        source_format="gguf",
        regular=dict(zip(normal, pieces, strict=True)),
        model_specials={tokens[i]: i for i, t in enumerate(types) if t == TYPE_CONTROL},
        added=[
            AddedToken(i, tokens[i], special=False)
            for i, t in enumerate(types)
            if t == TYPE_USER_DEFINED
        ],
        eos_ids=eos,
        files={path.name: file_sha256(path)},
        family=family,
        declared_size=len(tokens),
    )
    return table_from_vocab(vocab, source=source)
