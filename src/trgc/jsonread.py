"""Strict JSON reading, shared by every layer that parses JSON a user hands in.

`json.loads` alone accepts too much and fails too late: its C decoder recurses once per
nesting level, keeps the last of repeated object keys (RFC 8259 leaves them unpredictable),
reads NaN/Infinity, which are not JSON, turns `1e400` into an infinite float and `"\\ud800"`
into a string no UTF-8 encoder accepts. `read_json` checks the size and then the nesting depth
before parsing (the pre-scan does not recurse and runs in linear time on any input), requires
UTF-8, refuses repeated keys, those constants, numbers beyond the float range and lone
surrogates, and reports each failure as a `TrgcError` under the caller's own code, with line,
column and byte offset (or a JSON pointer) where they are known.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from decimal import Decimal
from typing import Literal

from trgc.errors import Span, TrgcError
from trgc.limits import check_limit

Floats = Literal["float", "decimal", "reject"]

# A string literal, or an unterminated one running to the end of the input. The possessive
# quantifiers (`*+`) and the end-of-input alternative make every match either end at its closing
# quote or consume the rest, so no starting position is ever rescanned: linear time even for
# `["\"\"\"...` without a closing quote (a backtracking pattern is quadratic there).
_STRING = rb'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z)'
_STRINGS = re.compile(_STRING, re.DOTALL)
_BRACKETS_OUTSIDE_STRINGS = re.compile(_STRING + rb"|[\[\]{}]", re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = tuple(1 if b in b"[{" else -1 for b in range(256))  # only brackets are looked up
# `\uD800`-`\uDFFF` escapes: only a document holding one can decode to a lone surrogate
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class _Refused(Exception):
    """Raised from inside the decoder hooks; turned into a `TrgcError` by `read_json`."""

    def __init__(self, code: str, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint


def span_at(raw: bytes, offset: int) -> Span:
    """The 1-based line and byte column of a 0-based byte offset in `raw`."""
    line = raw.count(b"\n", 0, offset) + 1
    column = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
    return Span(line, column, offset)


def nesting_depth(raw: bytes) -> int:
    """How deep `[`/`{` outside strings nest in `raw` (0 for a scalar); no recursion."""
    skeleton = _STRINGS.sub(b"", raw).translate(None, _NOT_BRACKETS)
    return max(itertools.accumulate(map(_STEP.__getitem__, skeleton), initial=0))


def _first_too_deep(raw: bytes, limit: int) -> int:
    """The byte offset of the first bracket that opens level `limit + 1`."""
    depth = 0
    for match in _BRACKETS_OUTSIDE_STRINGS.finditer(raw):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return match.start()
        elif token in (b"]", b"}"):
            depth -= 1
    raise AssertionError("nesting_depth and _first_too_deep disagree")


def _check_nesting(raw: bytes, max_depth: int, what: str, source: str | None) -> None:
    depth = nesting_depth(raw)
    try:
        check_limit("nesting", depth, max_depth, f"{what} nesting depth")
    except TrgcError as error:
        error.span = span_at(raw, _first_too_deep(raw, max_depth))
        error.source = source
        raise


def _hooks(code: str, what: str, duplicate_code: str, floats: Floats) -> dict:
    def pairs(items: list[tuple[str, object]]) -> dict:
        out = dict(items)
        if len(out) != len(items):
            seen: set[str] = set()
            for key, _ in items:
                if key in seen:
                    raise _Refused(
                        duplicate_code,
                        f"{what} repeats the key {key!r} in one object",
                        "a JSON object with repeated names has no agreed meaning (RFC 8259 §4)",
                    )
                seen.add(key)
        return out

    def constant(name: str) -> object:
        raise _Refused(code, f"{what} contains {name}, which is not JSON")

    def no_float(text: str) -> object:
        raise _Refused(
            code, f"{what} contains the non-integer number {text!r} (only integers are allowed)"
        )

    def finite(text: str) -> float:
        value = float(text)
        if math.isinf(value):
            raise _Refused(
                code, f"{what} contains the number {text[:40]!r}, beyond the range of a double"
            )
        return value

    hooks: dict = {"object_pairs_hook": pairs, "parse_constant": constant, "parse_float": finite}
    if floats == "decimal":
        hooks["parse_float"] = Decimal
    elif floats == "reject":
        hooks["parse_float"] = no_float
    return hooks


def read_json(
    raw: bytes | str,
    *,
    code: str,
    what: str,
    max_bytes: int,
    max_depth: int,
    duplicate_code: str | None = None,
    surrogate_code: str | None = None,
    floats: Floats = "float",
    source: str | None = None,
) -> object:
    """Parse one strict JSON document.

    `code` is the caller's error code for malformed input, `duplicate_code` (default `code`)
    the one for a repeated object key, `surrogate_code` (default `code`) the one for a string
    holding a lone surrogate escape, `what` names the document in messages ("the schema").
    Size and nesting are checked first (`E_LIMIT_INPUT_BYTES`, `E_LIMIT_NESTING`). Numbers with
    a fraction or exponent become `float`, `Decimal`, or are refused (`floats="reject"`). A
    `str` is encoded as UTF-8 first, so lone surrogates in it are refused as invalid UTF-8.
    """
    raw = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    try:
        check_limit("input_bytes", len(raw), max_bytes, f"{what} size")
    except TrgcError as error:
        error.source = source
        raise
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrgcError(
            code,
            f"{what} is not valid UTF-8 at byte {exc.start} ({exc.reason})",
            span=span_at(raw, exc.start),
            source=source,
        ) from None
    _check_nesting(raw, max_depth, what, source)
    try:
        value = json.loads(text, **_hooks(code, what, duplicate_code or code, floats))
    except _Refused as exc:
        raise TrgcError(exc.code, exc.message, hint=exc.hint, source=source) from None
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(text.rstrip())
        raise TrgcError(
            code,
            f"{what} is {'truncated' if truncated else 'not valid'} JSON: {exc.msg}",
            span=Span(exc.lineno, exc.colno, len(text[: exc.pos].encode("utf-8"))),
            source=source,
        ) from None
    except ValueError as exc:  # an integer beyond Python's digit limit
        raise TrgcError(code, f"{what} is not valid JSON: {exc}", source=source) from None
    except RecursionError:  # only with a max_depth above what the interpreter's stack holds
        raise TrgcError(
            "E_LIMIT_NESTING", f"{what} nests deeper than the JSON decoder can read", source=source
        ) from None
    if _SURROGATE_ESCAPE.search(raw):
        _refuse_lone_surrogates(value, surrogate_code or code, what, source)
    return value


def _refuse_lone_surrogates(value: object, code: str, what: str, source: str | None) -> None:
    """Raise `code` with the JSON pointer of a string (or member name) holding a lone surrogate.

    An escaped surrogate pair decodes to one scalar value and passes; a lone `\\uD800` escape is
    well-formed JSON text but names no Unicode scalar, so no UTF-8 consumer can represent it."""
    stack: list[tuple[object, str]] = [(value, "")]
    while stack:
        item, pointer = stack.pop()
        if isinstance(item, str):
            _require_scalars(item, pointer, "a string", code, what, source)
        elif isinstance(item, list):
            stack.extend((element, f"{pointer}/{i}") for i, element in enumerate(item))
        elif isinstance(item, dict):
            for key, element in item.items():
                _require_scalars(key, pointer, "a member name", code, what, source)
                token = key.replace("~", "~0").replace("/", "~1")
                stack.append((element, f"{pointer}/{token}"))


def _require_scalars(
    text: str, pointer: str, holder: str, code: str, what: str, source: str | None
) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise TrgcError(
            code,
            f"{what} holds the lone surrogate \\u{ord(text[exc.start]):04x} in {holder}, which is "
            "not a Unicode scalar value",
            pointer=pointer,
            source=source,
            hint="a character outside the BMP is written as an escaped surrogate pair",
        ) from None
