"""Reading a schema document: bytes, text or a value to a checked value and its source hash.

Text goes through the strict shared reader (`trgc.jsonread`: size and nesting first, UTF-8,
no repeated keys, no NaN/Infinity); an already parsed value gets the same nesting check and
is hashed in canonical JSON.
"""

from __future__ import annotations

import hashlib
import json

from trgc.errors import TrgcError
from trgc.jsonread import read_json
from trgc.limits import Limits, check_limit


def value_nesting(value: object, limit: int) -> None:
    """Raise `E_LIMIT_NESTING` if a parsed value nests deeper than `limit`, without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            check_limit("nesting", depth, limit, "schema nesting depth")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def canonical_json(value: object) -> str:
    """`json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` without recursion."""
    out: list[str] = []
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Raw):
            out.append(item.text)
        elif isinstance(item, dict):
            parts: list[object] = [_Raw("{")]
            for i, key in enumerate(sorted(item)):
                if not isinstance(key, str):
                    raise TrgcError("E_SCHEMA_INVALID", f"object keys must be strings, got {key!r}")
                parts.append(_Raw(("," if i else "") + json.dumps(key, ensure_ascii=False) + ":"))
                parts.append(item[key])
            parts.append(_Raw("}"))
            stack.extend(reversed(parts))
        elif isinstance(item, list | tuple):
            parts = [_Raw("[")]
            for i, element in enumerate(item):
                if i:
                    parts.append(_Raw(","))
                parts.append(element)
            parts.append(_Raw("]"))
            stack.extend(reversed(parts))
        else:
            try:
                out.append(json.dumps(item, ensure_ascii=False, allow_nan=False))
            except (TypeError, ValueError) as exc:
                raise TrgcError("E_SCHEMA_INVALID", f"not a JSON value: {exc}") from None
    return "".join(out)


class _Raw:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def load_schema(schema: dict | bool | str | bytes, limits: Limits) -> tuple[object, str]:
    """The parsed schema and the SHA-256 of its source (canonical JSON when given a value)."""
    if isinstance(schema, dict | bool):
        value_nesting(schema, limits.nesting)
        try:
            text = canonical_json(schema).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise TrgcError(
                "E_SCHEMA_INVALID",
                f"the schema holds the lone surrogate \\u{ord(exc.object[exc.start]):04x}, which is "
                "not a Unicode scalar value",
            ) from None
        return schema, hashlib.sha256(text).hexdigest()
    if isinstance(schema, str):
        raw = schema.encode("utf-8", "surrogatepass")
    elif isinstance(schema, bytes | bytearray | memoryview):
        raw = bytes(schema)
    else:
        raise TrgcError(
            "E_SCHEMA_NOT_OBJECT",
            f"a schema is a JSON object, text or bytes, got {type(schema).__name__}",
        )
    value = read_json(
        raw,
        code="E_SCHEMA_JSON",
        what="the schema",
        max_bytes=limits.input_bytes,
        max_depth=limits.nesting,
        duplicate_code="E_SCHEMA_DUPLICATE_KEY",
    )
    if not isinstance(value, dict | bool):
        raise TrgcError(
            "E_SCHEMA_NOT_OBJECT",
            f"a schema is a JSON object or boolean, got {type(value).__name__}",
            pointer="",
        )
    return value, hashlib.sha256(raw).hexdigest()
