"""JSON values as JSON Schema compares them: equality keys and type names."""

from __future__ import annotations

import json

from trgc.errors import TrgcError


def value_key(value: object) -> str:
    """JSON Schema equality as a string: 1 and 1.0 are equal, true and 1 are not."""

    def canon(v: object) -> object:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {k: canon(x) for k, x in v.items()}
        if isinstance(v, list):
            return [canon(x) for x in v]
        return v

    try:
        return json.dumps(canon(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except RecursionError:
        raise TrgcError("E_LIMIT_NESTING", "an enum or const value nests too deeply") from None


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
