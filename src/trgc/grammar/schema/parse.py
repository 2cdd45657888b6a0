"""Reading a schema document: bytes or text to a Python value, with positions and limits.

The size and the nesting depth are checked before `json` builds anything (the C decoder
recurses per level), duplicate keys are refused (RFC 8259 leaves them unpredictable) and
NaN/Infinity literals are not JSON.
"""

from __future__ import annotations

import hashlib
import json
import re

from trgc.errors import Span, TrgcError
from trgc.limits import Limits, check_limit

_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _pairs(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _line_col(raw: bytes, offset: int) -> Span:
    line = raw.count(b"\n", 0, offset) + 1
    column = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
    return Span(line, column, offset)


def text_nesting(raw: bytes, limit: int) -> None:
    """Raise `E_LIMIT_NESTING` if brackets outside strings nest deeper than `limit`."""
    depth = 0
    for match in _TOKENS.finditer(raw):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                raise TrgcError(
                    "E_LIMIT_NESTING",
                    f"the schema nests deeper than the nesting limit of {limit:,}",
                    span=_line_col(raw, match.start()),
                    hint="raise it with --limit nesting=N if this is intended",
                )
        elif token in (b"]", b"}"):
            depth -= 1


def value_nesting(value: object, limit: int) -> None:
    """The same check for an already parsed value, without recursion."""
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
        return schema, hashlib.sha256(canonical_json(schema).encode("utf-8")).hexdigest()
    if isinstance(schema, str):
        raw = schema.encode("utf-8", "surrogatepass")
    elif isinstance(schema, bytes | bytearray | memoryview):
        raw = bytes(schema)
    else:
        raise TrgcError(
            "E_SCHEMA_NOT_OBJECT",
            f"a schema is a JSON object, text or bytes, got {type(schema).__name__}",
        )
    check_limit("input_bytes", len(raw), limits.input_bytes, "schema size")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrgcError(
            "E_SCHEMA_JSON",
            f"the schema is not valid UTF-8 ({exc.reason})",
            span=_line_col(raw, exc.start),
        ) from None
    text_nesting(raw, limits.nesting)
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except _DuplicateKey as exc:
        raise TrgcError(
            "E_SCHEMA_DUPLICATE_KEY",
            f"the key {exc.key!r} appears twice in one object",
            hint="a JSON object with repeated names has no agreed meaning (RFC 8259 §4)",
        ) from None
    except json.JSONDecodeError as exc:
        offset = len(text[: exc.pos].encode("utf-8"))
        raise TrgcError(
            "E_SCHEMA_JSON", f"invalid JSON: {exc.msg}", span=Span(exc.lineno, exc.colno, offset)
        ) from None
    except ValueError as exc:
        raise TrgcError("E_SCHEMA_JSON", f"invalid JSON: {exc}") from None
    except RecursionError:  # only reachable with a nesting limit above the interpreter's stack
        raise TrgcError(
            "E_LIMIT_NESTING", "the schema nests deeper than the JSON decoder can read"
        ) from None
    if not isinstance(value, dict | bool):
        raise TrgcError(
            "E_SCHEMA_NOT_OBJECT",
            f"a schema is a JSON object or boolean, got {type(value).__name__}",
            pointer="",
        )
    return value, hashlib.sha256(raw).hexdigest()
