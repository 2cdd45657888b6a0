"""JSON values as JSON Schema compares them: equality keys and type names."""

from __future__ import annotations

import json

from trgc.errors import TrgcError


def value_key(value: object) -> str:
    """JSON Schema equality as a string: 1 and 1.0 are equal, true and 1 are not."""
    try:
        return json.dumps(
            _canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
    except RecursionError:
        raise TrgcError("E_LIMIT_NESTING", "an enum or const value nests too deeply") from None


def _canonical(value: object) -> object:
    """`value` with integral floats as ints, at every depth.

    A module-level function rather than a recursive closure: a closure that calls itself is a
    reference cycle (function, cell, function) that only the cyclic collector frees, and
    compilations run with it paused (`compiler/collector.py`).
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _canonical(x) for k, x in value.items()}
    if isinstance(value, list):
        return [_canonical(x) for x in value]
    return value


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
