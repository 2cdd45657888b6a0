"""trj-1: the JSON Schema profile, lowered to the same AST as trg-1.

`lower_schema` turns a parsed schema into a `Grammar`; `load_schema` reads schema text with
positions, limits and duplicate-key detection; `KEYWORDS` is the keyword matrix.
"""

from __future__ import annotations

from trgc.grammar.schema.keywords import KEYWORDS, PROFILE_RULES
from trgc.grammar.schema.lower import DEFAULT_MAX_DEPTH, SEPARATORS, lower_schema
from trgc.grammar.schema.parse import load_schema

__all__ = [
    "KEYWORDS",
    "PROFILE_RULES",
    "DEFAULT_MAX_DEPTH",
    "SEPARATORS",
    "lower_schema",
    "load_schema",
]
