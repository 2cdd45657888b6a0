"""Checked fixed-point decimal arithmetic: scale 18 in signed 128-bit integers, half-even.

A value is a Python int `v` standing for `v / 10**18`. Every result is range-checked against
the signed 128-bit interval `-2**127 <= v <= 2**127 - 1` immediately after the operation that
produced it, exactly as Rust's `i128::checked_*` would; intermediate products are exact (a
native implementation widens to 256 bits). Rounding is round-half-to-even on the exact
quotient, computed with `divmod` on non-negative integers: no binary floating point and no
`/` on ints anywhere. Functions that can round return `(value, exact)`.
"""

from __future__ import annotations

from trgc.errors import TrgcError

SCALE = 18
ONE = 10**SCALE
MIN = -(2**127)
MAX = 2**127 - 1
# Digits of the largest integer part that can be in range: 170141183460469231731 has 21.
_MAX_INT_DIGITS = len(str(MAX // ONE))


def checked(value: int, what: str) -> int:
    """Return `value` if it lies in the signed 128-bit range, else raise `E_CALC_OVERFLOW`."""
    if value < MIN or value > MAX:
        raise TrgcError(
            "E_CALC_OVERFLOW",
            f"{what} leaves the signed 128-bit range at scale {SCALE}",
            hint="results must lie in [-170141183460469231731.687303715884105728, "
            "170141183460469231731.687303715884105727]",
        )
    return value


def div_half_even(numerator: int, denominator: int) -> tuple[int, bool]:
    """`numerator / denominator` rounded half-to-even; `exact` is True when nothing was lost."""
    negative = (numerator < 0) != (denominator < 0)
    quotient, remainder = divmod(abs(numerator), abs(denominator))
    twice = 2 * remainder
    if twice > abs(denominator) or (twice == abs(denominator) and quotient & 1):
        quotient += 1
    return (-quotient if negative else quotient), remainder == 0


def from_literal(integer_digits: str, fraction_digits: str) -> int:
    """The scaled value of the literal `integer_digits[.fraction_digits]` (≤ 18 fraction digits)."""
    if len(fraction_digits) > SCALE:
        raise ValueError("more fraction digits than the scale")  # the parser never passes this
    significant = integer_digits.lstrip("0")
    if len(significant) > _MAX_INT_DIGITS:
        checked(MAX + 1, "the literal")
    value = int(significant or "0") * ONE + int(fraction_digits.ljust(SCALE, "0"))
    return checked(value, "the literal")


def add(a: int, b: int) -> int:
    return checked(a + b, "the sum")


def sub(a: int, b: int) -> int:
    return checked(a - b, "the difference")


def neg(a: int) -> int:
    return checked(-a, "the negation")


def mul(a: int, b: int) -> tuple[int, bool]:
    value, exact = div_half_even(a * b, ONE)
    return checked(value, "the product"), exact


def div(a: int, b: int) -> tuple[int, bool]:
    if b == 0:
        raise TrgcError("E_CALC_DIVISION_BY_ZERO", "division by zero")
    value, exact = div_half_even(a * ONE, b)
    return checked(value, "the quotient"), exact


def power(base: int, exponent: int) -> tuple[int, bool]:
    """`base ** exponent` as |exponent| rounded multiplications starting from 1, then 1/x if < 0."""
    result, exact = ONE, True
    for _ in range(abs(exponent)):
        result, step_exact = mul(result, base)
        exact = exact and step_exact
    if exponent < 0:
        result, step_exact = div(ONE, result)
        exact = exact and step_exact
    return result, exact


def render(value: int) -> str:
    """Canonical text: `-?(0|[1-9][0-9]*)(\\.[0-9]*[1-9])?` (no trailing zeros, never `-0`)."""
    whole, fraction = divmod(abs(value), ONE)
    digits = str(fraction).rjust(SCALE, "0").rstrip("0")
    sign = "-" if value < 0 else ""
    return f"{sign}{whole}.{digits}" if digits else f"{sign}{whole}"
