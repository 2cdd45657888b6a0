"""JSON numbers as byte grammars, with exact decimal range automata for bounds.

Integers are written without leading zeros, without a fraction or exponent and without `-0`;
their range is always clipped to ±(2^53−1) (the profile's interoperable integers). A range
`[lo, hi]` becomes a union over digit counts of the classic same-length digit-range
expansion (the construction behind regex range generators), so bounds are exact.

Numbers with integer-valued bounds are written without exponent: a value `I.F` lies in an
interval decided by its integer part `I` and by whether the fraction `F` is zero, which keeps
the automaton exact. Unbounded numbers accept the full RFC 8259 syntax.
"""

from __future__ import annotations

from fractions import Fraction

from trgc.grammar.schema.nodes import Builder

MAX_SAFE_INTEGER = 2**53 - 1


def _digit(b: Builder, lo: str = "0", hi: str = "9") -> int:
    return b.cls([(ord(lo), ord(hi))])


def _same_length(b: Builder, lo: str, hi: str) -> int:
    """Digit strings of equal length between `lo` and `hi` inclusive (depth ≤ 16 digits)."""
    n = len(lo)
    if lo == hi:
        return b.lit(lo)
    if n == 1:
        return _digit(b, lo, hi)
    if lo[0] == hi[0]:
        return b.seq(b.lit(lo[0]), _same_length(b, lo[1:], hi[1:]))
    options: list[int] = []
    first_full = int(lo[0])
    last_full = int(hi[0])
    if lo[1:] != "0" * (n - 1):
        options.append(b.seq(b.lit(lo[0]), _same_length(b, lo[1:], "9" * (n - 1))))
        first_full += 1
    middle = None
    if hi[1:] != "9" * (n - 1):
        last_full -= 1
    if first_full <= last_full:
        middle = b.seq(_digit(b, str(first_full), str(last_full)), b.rep(_digit(b), n - 1, n - 1))
        options.append(middle)
    if hi[1:] != "9" * (n - 1):
        options.append(b.seq(b.lit(hi[0]), _same_length(b, "0" * (n - 1), hi[1:])))
    return b.alt(*options)


def natural_range(b: Builder, lo: int, hi: int | None) -> int | None:
    """Decimal spellings (no leading zeros) of the integers in `[lo, hi]`, `lo >= 0`; None if empty."""
    if hi is not None and lo > hi:
        return None
    options: list[int] = []
    length = len(str(lo))
    top = len(str(hi)) if hi is not None else length
    for digits in range(length, top + 1):
        first = 0 if digits == 1 else 10 ** (digits - 1)
        last = 10**digits - 1
        a = max(lo, first)
        z = last if hi is None else min(hi, last)
        if a <= z:
            options.append(_same_length(b, str(a), str(z)))
    if hi is None:  # every longer spelling
        options.append(b.seq(_digit(b, "1", "9"), b.rep(_digit(b), length, None)))
    return b.alt(*options) if options else None


def integer_range(b: Builder, lo: int, hi: int) -> int | None:
    """Integers in `[lo, hi]` (already clipped to the safe range); None if the range is empty."""
    if lo > hi:
        return None
    options: list[int] = []
    if lo < 0:
        magnitudes = natural_range(b, max(1, -hi), -lo)
        if magnitudes is not None:
            options.append(b.seq(b.lit("-"), magnitudes))
    if hi >= 0:
        naturals = natural_range(b, max(lo, 0), hi)
        if naturals is not None:
            options.append(naturals)
    return b.alt(*options) if options else None


def integer_bounds(
    minimum: Fraction | None,
    maximum: Fraction | None,
    exclusive_min: Fraction | None,
    exclusive_max: Fraction | None,
) -> tuple[int, int]:
    """The integer interval the bounds allow, clipped to ±(2^53−1)."""
    lo, hi = -MAX_SAFE_INTEGER, MAX_SAFE_INTEGER
    if minimum is not None:
        lo = max(lo, _ceil(minimum))
    if exclusive_min is not None:
        lo = max(lo, _floor(exclusive_min) + 1)
    if maximum is not None:
        hi = min(hi, _floor(maximum))
    if exclusive_max is not None:
        hi = min(hi, _ceil(exclusive_max) - 1)
    return lo, hi


def _floor(x: Fraction) -> int:
    return x.numerator // x.denominator


def _ceil(x: Fraction) -> int:
    return -((-x.numerator) // x.denominator)


def number(b: Builder) -> int:
    """Any RFC 8259 number: `-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?`."""
    integer = b.alt(b.lit("0"), b.seq(_digit(b, "1", "9"), b.rep(_digit(b), 0, None)))
    fraction = b.opt(b.seq(b.lit("."), b.rep(_digit(b), 1, None)))
    exponent = b.opt(b.seq(b.chars("eE"), b.opt(b.chars("+-")), b.rep(_digit(b), 1, None)))
    return b.seq(b.opt(b.lit("-")), integer, fraction, exponent)


def _fraction(b: Builder, kind: str) -> int:
    """`any`: optional fraction; `zero`: optional all-zero fraction; `nonzero`: a fraction with a non-zero digit."""
    if kind == "any":
        return b.opt(b.seq(b.lit("."), b.rep(_digit(b), 1, None)))
    if kind == "zero":
        return b.opt(b.seq(b.lit("."), b.rep(b.lit("0"), 1, None)))
    return b.seq(
        b.lit("."), b.rep(_digit(b), 0, None), _digit(b, "1", "9"), b.rep(_digit(b), 0, None)
    )


def _magnitudes(b: Builder, a: int, a_incl: bool, z: int | None, z_incl: bool) -> int | None:
    """Spellings `I[.F]` of the values v with a ≤ v (or a < v) and v ≤ z (or v < z); a ≥ 0 and integer."""
    options: list[int] = []
    if z is not None and a == z:
        if a_incl and z_incl:
            options.append(b.seq(b.lit(str(a)), _fraction(b, "zero")))
        return b.alt(*options) if options else None
    if z is not None and a > z:
        return None
    options.append(b.seq(b.lit(str(a)), _fraction(b, "any" if a_incl else "nonzero")))
    inner = natural_range(b, a + 1, None if z is None else z - 1)
    if inner is not None:
        options.append(b.seq(inner, _fraction(b, "any")))
    if z is not None and z_incl:
        options.append(b.seq(b.lit(str(z)), _fraction(b, "zero")))
    return b.alt(*options)


def bounded_number(
    b: Builder, lo: tuple[int, bool] | None, hi: tuple[int, bool] | None
) -> int | None:
    """Numbers without exponent inside integer bounds `(value, inclusive)`; None if none exist."""
    options: list[int] = []
    # non-negative spellings (no minus sign): v >= 0
    a, a_incl = (0, True) if lo is None or lo[0] < 0 else lo
    z, z_incl = (None, True) if hi is None else hi
    if z is None or z > 0 or (z == 0 and z_incl):
        if z is not None and z < a:
            pass
        else:
            non_negative = _magnitudes(b, a, a_incl, z, z_incl)
            if non_negative is not None:
                options.append(non_negative)
    # negative values v < 0 written as "-" m with m > 0: m in (max(0, -z), -lo)
    if lo is None or lo[0] < 0:
        m_lo, m_lo_incl = (0, False) if hi is None or hi[0] >= 0 else (-hi[0], hi[1])
        m_hi, m_hi_incl = (None, True) if lo is None else (-lo[0], lo[1])
        negative = _magnitudes(b, m_lo, m_lo_incl, m_hi, m_hi_incl)
        if negative is not None:
            options.append(b.seq(b.lit("-"), negative))
    return b.alt(*options) if options else None
