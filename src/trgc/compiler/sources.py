"""Which compiler a source goes to: trg-1 grammars, or JSON Schemas (trj-1) when the source is JSON.

One function serves `trgc compile`, `trgc lock` and `trgc verify`, so that a file compiles to
the same identity whichever command compiles it.
"""

from __future__ import annotations

from trgc.artifact.model import Artifact
from trgc.compiler.build import compile_grammar
from trgc.compiler.schema import compile_schema
from trgc.grammar.schema.whitespace import DEFAULT_MAX_WHITESPACE
from trgc.limits import DEFAULT_LIMITS, Limits


def is_schema_source(name: str, data: bytes) -> bool:
    """A `.json` file, or any source whose first non-blank byte is `{`, is a JSON Schema."""
    return name.endswith(".json") or data.lstrip()[:1] == b"{"


def compile_source(
    data: bytes,
    *,
    source: str,
    limits: Limits = DEFAULT_LIMITS,
    strict: bool = False,
    separators: str = "pretty",
    open_objects: bool = False,
    ignore_keywords: tuple[str, ...] = (),
    unknown_keywords: str = "error",
    max_whitespace: int = DEFAULT_MAX_WHITESPACE,
    member_order: str = "declared",
) -> Artifact:
    """Compile `data` (named `source` in errors) with the compiler its name or content selects.

    `strict` applies to grammars; `separators` (the whitespace mode), `max_whitespace`,
    `open_objects`, `ignore_keywords`, `unknown_keywords` and `member_order` to schemas.
    """
    if is_schema_source(source, data):
        return compile_schema(
            data,
            whitespace=separators,
            max_whitespace=max_whitespace,
            open_objects=open_objects,
            limits=limits,
            source=source,
            ignore_keywords=ignore_keywords,
            unknown_keywords=unknown_keywords,
            member_order=member_order,
        )
    return compile_grammar(data, limits=limits, strict=strict, source=source)
