"""Field specifications and canonical JSON out for tool requests and extraction results.

Documents are read with the strict shared reader (`trgc.jsonread`); their objects are then
checked against a field specification that rejects unknown fields with their JSON pointer.
Writing produces canonical JSON (sorted keys, no whitespace, UTF-8).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from trgc.errors import TrgcError


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
