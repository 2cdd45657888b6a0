"""What the public API accepts where it takes an artifact or a token table.

An artifact is an `Artifact` or the path of a `.trga` file; a token table is a `TokenTable`,
a path (`.trt` table, tokenizer file or folder) or a live tokenizer object
(`trgc.load_tokenizer` reads `tokenizers.Tokenizer`, transformers tokenizers and
`tiktoken.Encoding`). Anything else is `E_ARGUMENT_TYPE` naming the type received, so a
wrong argument never surfaces later as an `AttributeError` deep inside the engine.
"""

from __future__ import annotations

from os import PathLike
from typing import Any

from trgc.artifact.model import Artifact
from trgc.errors import TrgcError
from trgc.tokenizer.table import TokenTable


def as_artifact(value: Any, *, what: str = "artifact") -> Artifact:
    """`value` as an `Artifact`: the object itself, or the artifact file it names."""
    if isinstance(value, Artifact):
        return value
    if isinstance(value, str | PathLike):
        from trgc.artifact.codec import load_artifact

        return load_artifact(value)
    raise TrgcError(
        "E_ARGUMENT_TYPE",
        f"{what}: expected a trgc Artifact or the path of an artifact file, got {type(value).__name__}",
        hint="compile one with trgc.compile_grammar / trgc.compile_schema, or pass a .trga path",
    )


def as_token_table(value: Any, *, what: str = "tokenizer") -> TokenTable:
    """`value` as a `TokenTable`: the table itself, or what `trgc.load_tokenizer` makes of a
    path or a live tokenizer object."""
    if isinstance(value, TokenTable):
        return value
    from trgc.tokenizer.load import load_tokenizer

    try:
        return load_tokenizer(value)
    except TrgcError as error:
        if error.code == "E_ARGUMENT_TYPE":
            error.message = f"{what}: {error.message}"
        raise
