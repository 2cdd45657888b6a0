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


SIGNIFICANT = 15  # decimals of at most 15 digits round-trip through binary64 (DBL_DIG)


def _fraction(b: Builder, kind: str, cap: int | None = None) -> int | None:
    """`any`: optional fraction; `zero`: optional all-zero fraction; `nonzero`: a fraction with a
    non-zero digit. `cap` bounds the fraction digits (None: unbounded; the result is None when
    a required fraction cannot fit)."""
    if cap is None:
        if kind == "any":
            return b.opt(b.seq(b.lit("."), b.rep(_digit(b), 1, None)))
        if kind == "zero":
            return b.opt(b.seq(b.lit("."), b.rep(b.lit("0"), 1, None)))
        return b.seq(
            b.lit("."), b.rep(_digit(b), 0, None), _digit(b, "1", "9"), b.rep(_digit(b), 0, None)
        )
    if kind == "any":
        return b.opt(b.seq(b.lit("."), b.rep(_digit(b), 1, cap))) if cap > 0 else b.empty()
    if kind == "zero":
        return b.opt(b.seq(b.lit("."), b.rep(b.lit("0"), 1, cap))) if cap > 0 else b.empty()
    if cap <= 0:
        return None
    options = [
        b.seq(b.rep(b.lit("0"), k, k), _digit(b, "1", "9"), b.rep(_digit(b), 0, cap - k - 1))
        for k in range(cap)
    ]
    return b.seq(b.lit("."), b.alt(*options))


def _with_fraction(
    b: Builder, integer: int | None, digits: int, kind: str, cap: int | None
) -> int | None:
    if integer is None:
        return None
    fraction = _fraction(b, kind, None if cap is None else cap - digits)
    if fraction is None or (cap is not None and digits > cap):
        return None
    return b.seq(integer, fraction)


def _magnitudes(
    b: Builder, a: int, a_incl: bool, z: int | None, z_incl: bool, cap: int | None
) -> int | None:
    """Spellings `I[.F]` of the values v with a ≤ v (or a < v) and v ≤ z (or v < z); a ≥ 0 and integer.

    With `cap`, a spelling has at most `cap` digits in all, so that distinct spellings round to
    distinct binary64 values and an exclusive bound cannot be reached by rounding.
    """
    options: list[int | None] = []
    if z is not None and a == z:
        if a_incl and z_incl:
            options.append(_with_fraction(b, b.lit(str(a)), len(str(a)), "zero", cap))
    elif z is None or a < z:
        options.append(
            _with_fraction(b, b.lit(str(a)), len(str(a)), "any" if a_incl else "nonzero", cap)
        )
        top = None if z is None else z - 1
        if cap is None:
            inner = natural_range(b, a + 1, top)
            if inner is not None:
                options.append(b.seq(inner, _fraction(b, "any")))
        else:
            for digits in range(len(str(a + 1)), cap + 1):
                lo = max(a + 1, 0 if digits == 1 else 10 ** (digits - 1))
                hi = 10**digits - 1 if top is None else min(top, 10**digits - 1)
                if lo <= hi:
                    options.append(_with_fraction(b, natural_range(b, lo, hi), digits, "any", cap))
        if z is not None and z_incl:
            options.append(_with_fraction(b, b.lit(str(z)), len(str(z)), "zero", cap))
    kept = [o for o in options if o is not None]
    return b.alt(*kept) if kept else None


def bounded_number(
    b: Builder, lo: tuple[int, bool] | None, hi: tuple[int, bool] | None
) -> int | None:
    """Numbers without exponent inside integer bounds `(value, inclusive)`; None if none exist."""
    options: list[int] = []
    # an exclusive bound could be reached by rounding a long decimal to binary64: cap the digits
    exclusive = (lo is not None and not lo[1]) or (hi is not None and not hi[1])
    cap = SIGNIFICANT if exclusive else None
    # non-negative spellings (no minus sign): v >= 0
    a, a_incl = (0, True) if lo is None or lo[0] < 0 else lo
    z, z_incl = (None, True) if hi is None else hi
    if z is None or z > 0 or (z == 0 and z_incl):
        if z is not None and z < a:
            pass
        else:
            non_negative = _magnitudes(b, a, a_incl, z, z_incl, cap)
            if non_negative is not None:
                options.append(non_negative)
    # negative values v < 0 written as "-" m with m > 0: m in (max(0, -z), -lo)
    if lo is None or lo[0] < 0:
        m_lo, m_lo_incl = (0, False) if hi is None or hi[0] >= 0 else (-hi[0], hi[1])
        m_hi, m_hi_incl = (None, True) if lo is None else (-lo[0], lo[1])
        negative = _magnitudes(b, m_lo, m_lo_incl, m_hi, m_hi_incl, cap)
        if negative is not None:
            options.append(b.seq(b.lit("-"), negative))
    return b.alt(*options) if options else None
