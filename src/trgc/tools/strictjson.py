"""Strict JSON in and canonical JSON out for tool requests and extraction results.

Reading is stricter than `json.loads`: the size and nesting depth are checked before the
document is parsed (no recursion on hostile input), the text must be UTF-8, duplicate object
keys, NaN/Infinity and (unless allowed, then as `Decimal`) non-integer numbers are refused.
Objects are then checked against a field specification that rejects unknown fields with
their JSON pointer. Writing produces canonical JSON (sorted keys, no whitespace, UTF-8).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from trgc.errors import TrgcError

_STRING_RE = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_DEPTH_DELTA = bytes.maketrans(b"[{]}", b"\x01\x01\x02\x02")


@dataclass(frozen=True)
class Codes:
    """The error codes one document kind uses (envelopes and evidence have their own)."""

    json: str
    unknown_field: str
    missing_field: str
    type: str


def canonical_bytes(value: object) -> bytes:
    """Canonical JSON: sorted keys, no whitespace, UTF-8 (DESIGN.md "Determinism")."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pointer(*parts: str | int) -> str:
    """An RFC 6901 JSON pointer from path parts."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _depth(data: bytes) -> int:
    skeleton = _STRING_RE.sub(b"", data).translate(_DEPTH_DELTA)
    steps = (1 if b == 1 else -1 for b in skeleton if b in (1, 2))
    return max(itertools.accumulate(steps, initial=0))


def loads(
    data: bytes,
    codes: Codes,
    *,
    max_bytes: int,
    max_depth: int,
    decimals: bool,
    source: str | None = None,
) -> object:
    """Parse `data` strictly; raise `E_LIMIT_INPUT_BYTES`, `E_LIMIT_NESTING` or `codes.json`."""
    if len(data) > max_bytes:
        raise TrgcError(
            "E_LIMIT_INPUT_BYTES",
            f"the document has {len(data):,} bytes, over the limit of {max_bytes:,}",
            source=source,
        )
    depth = _depth(data)
    if depth > max_depth:
        raise TrgcError(
            "E_LIMIT_NESTING",
            f"the document nests {depth} levels deep, over the limit of {max_depth}",
            source=source,
        )

    def fail(message: str) -> TrgcError:
        return TrgcError(codes.json, message, source=source)

    def pairs(items: list[tuple[str, object]]) -> dict:
        out: dict = {}
        for key, value in items:
            if key in out:
                raise fail(f"duplicate object key {key!r}")
            out[key] = value
        return out

    def no_float(text: str) -> object:
        if decimals:
            return Decimal(text)
        raise fail(f"non-integer number {text!r} (only integers are allowed here)")

    def no_constant(text: str) -> object:
        raise fail(f"{text} is not JSON")

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(f"not UTF-8 at byte {exc.start}") from None
    try:
        return json.loads(
            text, object_pairs_hook=pairs, parse_float=no_float, parse_constant=no_constant
        )
    except json.JSONDecodeError as exc:
        raise fail(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:  # integers beyond Python's digit limit
        raise fail(str(exc)) from None


# Field kinds of a specification.
STRING, INTEGER, BOOLEAN, NULLABLE_STRING, NULLABLE_BOOLEAN, OBJECT, ARRAY, ANY = (
    "string",
    "integer",
    "boolean",
    "string or null",
    "boolean or null",
    "object",
    "array",
    "any",
)
_KIND_CHECKS = {
    STRING: lambda v: isinstance(v, str),
    INTEGER: lambda v: isinstance(v, int) and not isinstance(v, bool),
    BOOLEAN: lambda v: isinstance(v, bool),
    NULLABLE_STRING: lambda v: v is None or isinstance(v, str),
    NULLABLE_BOOLEAN: lambda v: v is None or isinstance(v, bool),
    OBJECT: lambda v: isinstance(v, dict),
    ARRAY: lambda v: isinstance(v, list),
    ANY: lambda v: True,
}


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, Decimal):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(value)]


def check_object(value: object, spec: Mapping[str, str | Mapping], codes: Codes, at: str) -> dict:
    """Check `value` against `spec` (field -> kind, or a nested spec for an object field).

    Every field is required; unknown fields are reported first (sorted), then missing ones
    in specification order, then each field's kind, depth first. Returns `value`.
    """
    if not isinstance(value, dict):
        raise TrgcError(
            codes.type, f"expected an object, got {json_type(value)}", pointer=at or "/"
        )
    unknown = sorted(set(value) - set(spec))
    if unknown:
        raise TrgcError(
            codes.unknown_field,
            f"unknown field {unknown[0]!r}"
            + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""),
            pointer=at + pointer(unknown[0]),
            hint="allowed fields here: " + ", ".join(spec),
        )
    for name in spec:
        if name not in value:
            raise TrgcError(
                codes.missing_field, f"missing field {name!r}", pointer=at + pointer(name)
            )
    for name, kind in spec.items():
        where = at + pointer(name)
        if isinstance(kind, Mapping):
            check_object(value[name], kind, codes, where)
        elif not _KIND_CHECKS[kind](value[name]):
            raise TrgcError(
                codes.type, f"{name!r} must be {kind}, got {json_type(value[name])}", pointer=where
            )
    return value
