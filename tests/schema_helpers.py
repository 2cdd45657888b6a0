"""Shared helpers for the trj-1 tests: compile once per schema, check bytes, use jsonschema as oracle."""

from __future__ import annotations

import contextlib
import json
from functools import lru_cache
from pathlib import Path

import jsonschema

import trgc

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
# the ten JSONSchemaBench subsets of the visible corpus (its directory names)
BENCH_SUBSETS = ("Github_trivial", "Github_easy", "Github_medium", "Github_hard", "Glaiveai2K",
                 "JsonSchemaStore", "Kubernetes", "MCPspec", "Snowplow", "WashingtonPost")  # fmt: skip


def compile_ignoring_refusals(raw: bytes, compile_source=None) -> None:
    """Compile `raw` as a schema (compact separators), or with `compile_source`, for what a
    differential test observes on the way; a refusal ends it quietly (the test compares
    refusals itself)."""
    with contextlib.suppress(trgc.TrgcError):
        if compile_source is None:
            trgc.compile_schema(raw, separators="compact")
        else:
            compile_source(raw)


@lru_cache(maxsize=256)
def _compiled(text: str, separators: str, open_objects: bool, max_depth: int):
    return trgc.compile_schema(
        text, separators=separators, open_objects=open_objects, max_depth=max_depth
    )


def compiled(
    schema, *, separators: str = "compact", open_objects: bool = False, max_depth: int = 32
):
    return _compiled(json.dumps(schema), separators, open_objects, max_depth)


def accepts(schema, data: str | bytes, **options) -> bool:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return trgc.check(compiled(schema, **options), raw).accepted


def oracle(schema, text: str) -> bool:
    """jsonschema's verdict on the parsed text (format not asserted)."""
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(
        schema
    ).is_valid(json.loads(text))


def agree(schema, text: str, **options) -> bool:
    """The artifact accepts `text` exactly when jsonschema validates it."""
    return accepts(schema, text, **options) == oracle(schema, text)
