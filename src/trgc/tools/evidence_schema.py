"""Application schemas for evidence checks: the rules that define the validation flags.

An extraction result claims, per field, `enum_member`, `range_ok` and `cross_field_ok`. Those
are claims of the model, so `trgc evidence check --schema APP.json` recomputes them from the
application's own rules (`trgc-evidence-schema-1`, docs/evidence.md) and reports every
disagreement; the result is never changed. A schema is strict JSON:

    {"protocol": "trgc-evidence-schema-1",
     "fields": {"total": {"minimum": 0, "maximum": 10000}, "status": {"enum": ["paid", "open"]}},
     "cross_field": [{"left": "paid", "op": "<=", "right": "total"}]}

Every field of the result must be declared (an empty rule object is fine); a field rule may
have `enum` (a non-empty array of distinct scalars), `minimum` and `maximum` (inclusive
numbers); a cross-field rule compares two declared fields with `<`, `<=`, `==`, `!=`, `>=`
or `>`. Numbers are exact decimals; a string of the `parse_decimal` form counts as its number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from trgc.errors import TrgcError
from trgc.jsonread import read_json
from trgc.tools import strictjson
from trgc.tools.strictjson import ARRAY, OBJECT, STRING, pointer

PROTOCOL = "trgc-evidence-schema-1"
MAX_SCHEMA_BYTES = 1 << 20
MAX_SCHEMA_DEPTH = 16
FLAGS = ("enum_member", "range_ok", "cross_field_ok")
OPERATORS = ("<", "<=", "==", "!=", ">=", ">")
_CODES = strictjson.Codes(
    json="E_EVIDENCE_SCHEMA",
    unknown_field="E_EVIDENCE_SCHEMA",
    missing_field="E_EVIDENCE_SCHEMA",
    type="E_EVIDENCE_SCHEMA",
)
_TOP_SPEC = {"protocol": STRING, "fields": OBJECT, "cross_field": ARRAY}
_RULE_KEYS = ("enum", "minimum", "maximum")
_CROSS_SPEC = {"left": STRING, "op": STRING, "right": STRING}
_DECIMAL_RE = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?")
_MAX_NUMBER_DIGITS = 4000


def _error(message: str, at: str, source: str | None) -> TrgcError:
    return TrgcError("E_EVIDENCE_SCHEMA", message, pointer=at or "/", source=source)


def _is_number(value: object) -> bool:
    return isinstance(value, int | Decimal) and not isinstance(value, bool)


def as_number(value: object) -> int | Decimal | None:
    """`value` as an exact number: a JSON number, or a string of the parse_decimal form."""
    if _is_number(value):
        return value  # type: ignore[return-value]
    if (
        isinstance(value, str)
        and len(value) <= _MAX_NUMBER_DIGITS
        and _DECIMAL_RE.fullmatch(value) is not None
    ):
        return Decimal(value)
    return None


def json_equal(a: object, b: object) -> bool:
    """Equality of JSON scalars: numbers numerically (12.5 = 12.50), others by type and value."""
    if _is_number(a) or _is_number(b):
        return _is_number(a) and _is_number(b) and a == b
    return type(a) is type(b) and a == b


@dataclass(frozen=True)
class FieldRule:
    enum: tuple | None
    minimum: int | Decimal | None
    maximum: int | Decimal | None


@dataclass(frozen=True)
class CrossRule:
    left: str
    op: str
    right: str
    index: int

    def describe(self) -> str:
        return f"{self.left} {self.op} {self.right}"


@dataclass(frozen=True)
class AppSchema:
    sha256: str  # "sha256:<hex>" of the schema file's bytes
    fields: dict[str, FieldRule]
    cross_field: tuple[CrossRule, ...]


def _field_rule(name: str, rule: object, source: str | None) -> FieldRule:
    at = pointer("fields", name)
    if not isinstance(rule, dict):
        raise _error(f"the rule of field {name!r} must be an object", at, source)
    unknown = sorted(set(rule) - set(_RULE_KEYS))
    if unknown:
        raise _error(
            f"unknown rule {unknown[0]!r} (rules: {', '.join(_RULE_KEYS)})",
            at + pointer(unknown[0]),
            source,
        )
    enum = rule.get("enum")
    if "enum" in rule:
        if not isinstance(enum, list) or not enum:
            raise _error("enum must be a non-empty array", at + "/enum", source)
        for index, item in enumerate(enum):
            if isinstance(item, dict | list):
                raise _error("enum members are scalars", at + pointer("enum", index), source)
            if any(json_equal(item, other) for other in enum[:index]):
                raise _error(f"enum repeats {item!r}", at + pointer("enum", index), source)
    bounds = {}
    for key in ("minimum", "maximum"):
        if key in rule and not _is_number(rule[key]):
            raise _error(f"{key} must be a number", at + pointer(key), source)
        bounds[key] = rule.get(key)
    if None not in bounds.values() and bounds["minimum"] > bounds["maximum"]:
        raise _error("minimum is greater than maximum", at, source)
    return FieldRule(None if enum is None else tuple(enum), bounds["minimum"], bounds["maximum"])


def parse_app_schema(data: bytes, source: str | None = None) -> AppSchema:
    """Read a `trgc-evidence-schema-1` document strictly (`E_EVIDENCE_SCHEMA` on any fault)."""
    document = read_json(
        data,
        code="E_EVIDENCE_SCHEMA",
        what="the application schema",
        max_bytes=MAX_SCHEMA_BYTES,
        max_depth=MAX_SCHEMA_DEPTH,
        floats="decimal",
        source=source,
    )
    try:
        strictjson.check_object(document, _TOP_SPEC, _CODES, "")
    except TrgcError as error:
        error.source = source
        raise
    if document["protocol"] != PROTOCOL:
        raise _error(f"protocol must be {PROTOCOL!r}", "/protocol", source)
    fields = {
        name: _field_rule(name, rule, source) for name, rule in sorted(document["fields"].items())
    }
    cross = []
    for index, rule in enumerate(document["cross_field"]):
        at = pointer("cross_field", index)
        try:
            strictjson.check_object(rule, _CROSS_SPEC, _CODES, at)
        except TrgcError as error:
            error.source = source
            raise
        if rule["op"] not in OPERATORS:
            raise _error(
                f"op {rule['op'][:20]!r} is not one of {' '.join(OPERATORS)}", at + "/op", source
            )
        for side in ("left", "right"):
            if rule[side] not in fields:
                raise _error(f"{side} names the undeclared field {rule[side][:80]!r}", at, source)
        if rule["left"] == rule["right"]:
            raise _error("a cross-field rule compares two different fields", at, source)
        cross.append(CrossRule(rule["left"], rule["op"], rule["right"], index))
    return AppSchema(
        sha256="sha256:" + strictjson.sha256_hex(data), fields=fields, cross_field=tuple(cross)
    )


def _compare(left: object, op: str, right: object) -> bool | None:
    """`left op right` for two numbers or two strings (code-point order); None if incomparable."""
    a, b = as_number(left), as_number(right)
    if a is None or b is None:
        if not (isinstance(left, str) and isinstance(right, str)):
            return None
        a, b = left, right  # type: ignore[assignment]
    return {
        "<": a < b,
        "<=": a <= b,
        "==": a == b,
        "!=": a != b,
        ">=": a >= b,
        ">": a > b,
    }[op]


def recompute(
    schema: AppSchema, values: dict[str, object]
) -> dict[str, tuple[dict[str, bool | None], dict[str, str]]]:
    """The flags of every field in `values` (name -> value of a supported field, or None when the
    field has no value) and why each is what it is: name -> (flags, reasons)."""
    out = {}
    for name in sorted(values):
        value = values[name]
        rule = schema.fields.get(name, FieldRule(None, None, None))
        flags: dict[str, bool | None] = dict.fromkeys(FLAGS)
        why: dict[str, str] = {}
        if value is not None and rule.enum is not None:
            flags["enum_member"] = any(json_equal(value, m) for m in rule.enum)
            why["enum_member"] = f"{value!r} is {'' if flags['enum_member'] else 'not '}in the enum"
        if value is not None and (rule.minimum is not None or rule.maximum is not None):
            number = as_number(value)
            low, high = rule.minimum, rule.maximum
            flags["range_ok"] = number is not None and (
                (low is None or number >= low) and (high is None or number <= high)
            )
            bounds = f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"
            why["range_ok"] = (
                f"{value!r} is not a number"
                if number is None
                else f"{value} is {'' if flags['range_ok'] else 'not '}in {bounds}"
            )
        applicable = [
            r
            for r in schema.cross_field
            if name in (r.left, r.right)
            and values.get(r.left) is not None
            and values.get(r.right) is not None
        ]
        if value is not None and applicable:
            failed = [r for r in applicable if not _compare(values[r.left], r.op, values[r.right])]
            flags["cross_field_ok"] = not failed
            why["cross_field_ok"] = (
                "fails " + ", ".join(r.describe() for r in failed)
                if failed
                else "holds: " + ", ".join(r.describe() for r in applicable)
            )
        for flag in FLAGS:
            why.setdefault(
                flag,
                "not applicable: the field has no value"
                if value is None
                else "not applicable: no rule of the schema",
            )
        out[name] = (flags, why)
    return out
