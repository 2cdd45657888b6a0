"""tinycalc-1: a bounded decimal expression language and its result record.

`parse` turns an expression into a postfix program with an explicit operator stack (no Python
recursion, so nesting depth is limited by a counter, never by the interpreter); `evaluate`
runs the program over `decimal128` values. Syntax, semantics, limits and the record format
are specified in docs/tinycalc.md; grammars/tinycalc.trg is the same syntax in trg-1.
Both phases call an optional `checkpoint()` once per charged operation and once per executed
step, so a caller can stop a long evaluation (the tool envelope's wall-clock limit does).

Syntax (whitespace = space, tab, CR, LF, allowed before and after every token):

    expr     = sum
    sum      = product (("+" | "-") product)*          left-associative
    product  = unary (("*" | "/") unary)*              left-associative
    unary    = "-" unary | power                       binds looser than ^, tighter than * /
    power    = primary ("^" exponent)?                 non-associative: 2^3^2 is an error
    primary  = number | "(" sum ")"
    number   = [0-9]+ ("." [0-9]{1,18})?
    exponent = "-"? (0..64 written without leading zeros)
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from trgc.errors import Span, TrgcError
from trgc.tools import decimal128 as d128

Checkpoint = Callable[[], None]

PROTOCOL = "tinycalc-1"
IMPLEMENTATION = "trgc-tinycalc-1.0.0"
ROUNDING = "half_even"
MAX_EXPONENT = 64


@dataclass(frozen=True)
class CalcLimits:
    """The tinycalc-1 ceilings: UTF-8 input bytes, executed operations, parenthesis depth."""

    input_bytes: int = 4096
    operations: int = 10_000
    nesting: int = 256


DEFAULT_CALC_LIMITS = CalcLimits()

# Instruction opcodes of the postfix program.
LIT, NEG, ADD, SUB, MUL, DIV, POW = range(7)
_OPEN = -1  # a "(" on the operator stack
_BINARY = {ord("+"): ADD, ord("-"): SUB, ord("*"): MUL, ord("/"): DIV}
_PRECEDENCE = {ADD: 1, SUB: 1, MUL: 2, DIV: 2}
_WHITESPACE = frozenset(b" \t\r\n")
_DIGITS = frozenset(b"0123456789")
_OPERAND, _AFTER_PRIMARY, _OPERATOR = range(3)


@dataclass(frozen=True)
class Program:
    """A parsed expression: postfix instructions `(opcode, argument, byte offset)`.

    The argument is `(integer digits, fraction digits)` for LIT, the exponent for POW and
    None otherwise. `operations` is the exact number of arithmetic steps evaluation runs.
    """

    source: bytes
    code: tuple[tuple[int, object, int], ...]
    operations: int


@dataclass(frozen=True)
class CalcResult:
    """A successful evaluation: the scaled value, whether no step rounded, and the step count."""

    expression_sha256: str
    scaled: int
    exact: bool
    operations: int

    @property
    def value(self) -> str:
        return d128.render(self.scaled)

    def to_record(self) -> dict:
        return {
            "protocol": PROTOCOL,
            "status": "ok",
            "expression_sha256": self.expression_sha256,
            "value": self.value,
            "scale": d128.SCALE,
            "rounding": ROUNDING,
            "exact": self.exact,
            "operations": self.operations,
            "implementation": IMPLEMENTATION,
        }


def _span(source: bytes, offset: int) -> Span:
    line = source.count(b"\n", 0, offset) + 1
    column = offset - (source.rfind(b"\n", 0, offset) + 1) + 1
    return Span(line, column, offset)


def _describe(source: bytes, pos: int) -> str:
    if pos >= len(source):
        return "the end of the expression"
    byte = source[pos]
    if 0x20 <= byte <= 0x7E or byte in (0x09, 0x0A, 0x0D):
        return repr(chr(byte))
    return f"byte 0x{byte:02X}"


def _syntax(source: bytes, pos: int, expected: str) -> TrgcError:
    return TrgcError(
        "E_CALC_SYNTAX",
        f"expected {expected}, found {_describe(source, pos)}",
        span=_span(source, pos),
    )


def _encode(expression: str | bytes, limits: CalcLimits) -> bytes:
    # A str has at least as many UTF-8 bytes as characters: refuse an over-long one before
    # encoding it, so that a 1 MB expression is never copied.
    size = len(expression)
    if size <= limits.input_bytes and isinstance(expression, str):
        expression = expression.encode("utf-8", "surrogatepass")
        size = len(expression)
    if size > limits.input_bytes:
        raise TrgcError(
            "E_LIMIT_INPUT_BYTES",
            f"the expression has at least {size:,} bytes, over the tinycalc-1 limit of "
            f"{limits.input_bytes:,}",
            hint="tinycalc-1 limits are part of the protocol",
        )
    return expression  # type: ignore[return-value]


def _skip_ws(source: bytes, pos: int) -> int:
    n = len(source)
    while pos < n and source[pos] in _WHITESPACE:
        pos += 1
    return pos


def _digits_end(source: bytes, pos: int) -> int:
    n = len(source)
    while pos < n and source[pos] in _DIGITS:
        pos += 1
    return pos


class _Parser:
    """Shunting-yard over bytes with the three states operand / after-primary / operator."""

    def __init__(
        self, source: bytes, limits: CalcLimits, checkpoint: Checkpoint | None = None
    ) -> None:
        self.source = source
        self.limits = limits
        self.checkpoint = checkpoint
        self.code: list[tuple[int, object, int]] = []
        self.stack: list[tuple[int, int]] = []  # (opcode or _OPEN, byte offset)
        self.depth = 0
        self.operations = 0

    def charge(self, count: int, pos: int) -> None:
        if self.checkpoint is not None:
            self.checkpoint()
        self.operations += count
        if self.operations > self.limits.operations:
            raise TrgcError(
                "E_LIMIT_OPERATIONS",
                f"the expression needs more than {self.limits.operations:,} operations",
                span=_span(self.source, pos),
                hint="each + - * / and unary minus is one operation, x^n is |n| (+1 if n < 0)",
            )

    def number(self, pos: int) -> int:
        source = self.source
        start = pos
        pos = _digits_end(source, pos)
        integer = source[start:pos].decode("ascii")
        fraction = ""
        if pos < len(source) and source[pos] == ord("."):
            frac_start = pos + 1
            pos = _digits_end(source, frac_start)
            if pos == frac_start:
                raise _syntax(source, pos, "a digit after '.'")
            if pos - frac_start > d128.SCALE:
                raise TrgcError(
                    "E_CALC_PRECISION",
                    f"a literal has {pos - frac_start} fraction digits; tinycalc-1 allows at most {d128.SCALE}",
                    span=_span(source, frac_start + d128.SCALE),
                    hint="literals are never rounded; shorten the fraction",
                )
            fraction = source[frac_start:pos].decode("ascii")
        self.code.append((LIT, (integer, fraction), start))
        return pos

    def exponent(self, caret: int, pos: int) -> int:
        source = self.source
        start = pos
        negative = pos < len(source) and source[pos] == ord("-")
        if negative:
            pos += 1
        end = _digits_end(source, pos)
        if end == pos:
            raise _syntax(source, pos, "an integer exponent")
        digits = source[pos:end]
        if (
            (len(digits) > 1 and digits[0] == ord("0"))
            or len(digits) > 2
            or int(digits) > MAX_EXPONENT
        ):
            raise TrgcError(
                "E_CALC_EXPONENT",
                f"exponent {source[start:end].decode('ascii')!r} is not an integer from "
                f"-{MAX_EXPONENT} to {MAX_EXPONENT} written without leading zeros",
                span=_span(source, start),
            )
        value = -int(digits) if negative else int(digits)
        self.charge(abs(value) + (1 if value < 0 else 0), caret)
        self.code.append((POW, value, caret))
        return end

    def pop_until_open(self) -> bool:
        while self.stack:
            op, offset = self.stack.pop()
            if op == _OPEN:
                return True
            self.code.append((op, None, offset))
        return False

    def run(self) -> Program:
        source = self.source
        n = len(source)
        pos = _skip_ws(source, 0)
        state = _OPERAND
        while True:
            byte = source[pos] if pos < n else None
            if state == _OPERAND:
                if byte == ord("-"):
                    self.charge(1, pos)
                    self.stack.append((NEG, pos))
                    pos = _skip_ws(source, pos + 1)
                elif byte == ord("("):
                    self.depth += 1
                    if self.depth > self.limits.nesting:
                        raise TrgcError(
                            "E_LIMIT_NESTING",
                            f"parentheses nest deeper than the tinycalc-1 limit of {self.limits.nesting}",
                            span=_span(source, pos),
                        )
                    self.stack.append((_OPEN, pos))
                    pos = _skip_ws(source, pos + 1)
                elif byte is not None and byte in _DIGITS:
                    pos = _skip_ws(source, self.number(pos))
                    state = _AFTER_PRIMARY
                else:
                    raise _syntax(source, pos, "a number, '(' or '-'")
                continue
            if state == _AFTER_PRIMARY:
                state = _OPERATOR
                if byte == ord("^"):
                    pos = _skip_ws(source, self.exponent(pos, _skip_ws(source, pos + 1)))
                    continue
            if byte is None:
                if self.pop_until_open():
                    raise _syntax(source, pos, "')'")
                return Program(source, tuple(self.code), self.operations)
            op = _BINARY.get(byte)
            if op is not None:
                self.charge(1, pos)
                precedence = _PRECEDENCE[op]
                while self.stack:
                    top, offset = self.stack[-1]
                    if top == _OPEN or (top != NEG and _PRECEDENCE[top] < precedence):
                        break
                    self.stack.pop()
                    self.code.append((top, None, offset))
                self.stack.append((op, pos))
                pos = _skip_ws(source, pos + 1)
                state = _OPERAND
            elif byte == ord(")"):
                if not self.pop_until_open():
                    raise _syntax(source, pos, "an operator or the end (unmatched ')')")
                self.depth -= 1
                pos = _skip_ws(source, pos + 1)
                state = _AFTER_PRIMARY
            else:
                expected = "an operator, ')' or the end" if self.depth else "an operator or the end"
                raise _syntax(source, pos, expected)


def parse(
    expression: str | bytes,
    limits: CalcLimits = DEFAULT_CALC_LIMITS,
    checkpoint: Checkpoint | None = None,
) -> Program:
    """Parse a tinycalc-1 expression (syntax and limits only; values are checked by `run`)."""
    return _Parser(_encode(expression, limits), limits, checkpoint).run()


def run(program: Program, checkpoint: Checkpoint | None = None) -> tuple[int, bool]:
    """Evaluate a parsed program: the scaled value and whether no step rounded."""
    values: list[int] = []
    exact = True
    for op, arg, offset in program.code:
        if checkpoint is not None:
            checkpoint()
        try:
            if op == LIT:
                values.append(d128.from_literal(*arg))  # type: ignore[misc]
            elif op == NEG:
                values[-1] = d128.neg(values[-1])
            elif op == POW:
                values[-1], step_exact = d128.power(values[-1], arg)  # type: ignore[arg-type]
                exact = exact and step_exact
            else:
                right = values.pop()
                left = values[-1]
                if op == ADD:
                    values[-1] = d128.add(left, right)
                elif op == SUB:
                    values[-1] = d128.sub(left, right)
                else:
                    values[-1], step_exact = (d128.mul if op == MUL else d128.div)(left, right)
                    exact = exact and step_exact
        except TrgcError as error:
            error.span = _span(program.source, offset)
            raise
    if len(values) != 1:
        raise TrgcError("E_INTERNAL", f"tinycalc left {len(values)} values on the stack")
    return values[0], exact


def expression_sha256(expression: str | bytes) -> str:
    data = (
        expression if isinstance(expression, bytes) else expression.encode("utf-8", "surrogatepass")
    )
    return hashlib.sha256(data).hexdigest()


def evaluate(
    expression: str | bytes,
    limits: CalcLimits = DEFAULT_CALC_LIMITS,
    checkpoint: Checkpoint | None = None,
) -> CalcResult:
    """Parse and evaluate; raises `TrgcError` (a tinycalc or limit code) on failure, and
    whatever `checkpoint` raises."""
    program = parse(expression, limits, checkpoint)
    scaled, exact = run(program, checkpoint)
    return CalcResult(expression_sha256(expression), scaled, exact, program.operations)


def error_record(expression: str | bytes, error: TrgcError) -> dict:
    """The tinycalc-1 record of a failed evaluation."""
    detail: dict = {"code": error.code, "message": error.message}
    if error.span is not None and error.span.offset is not None:
        detail["offset"] = error.span.offset
    return {
        "protocol": PROTOCOL,
        "status": "error",
        "expression_sha256": expression_sha256(expression),
        "error": detail,
        "implementation": IMPLEMENTATION,
    }


def calc_record(expression: str | bytes, limits: CalcLimits = DEFAULT_CALC_LIMITS) -> dict:
    """The tinycalc-1 record for `expression`: status "ok" or "error", never raises for bad input."""
    try:
        return evaluate(expression, limits).to_record()
    except TrgcError as error:
        if error.code == "E_INTERNAL":
            raise
        return error_record(expression, error)
