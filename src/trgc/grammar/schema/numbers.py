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

import math
from decimal import Decimal
from fractions import Fraction

from trgc.grammar.schema.nodes import Builder

MAX_SAFE_INTEGER = 2**53 - 1


def _digit(b: Builder, lo: str = "0", hi: str = "9") -> int:
    return b.cls([(ord(lo), ord(hi))])


class _Free:
    """`[0-9]{k}` as shared suffixes: one node per `k` within one range, `k` digits of which
    the last `k - 1` are the node for `k - 1`, marked a suffix (`Grammar.suffixes`) once it
    is used twice. The expansion below ends many branches in free digits; the NFA builder
    builds each such chain once, so the integer of the default range walks a few dozen
    subset states, not hundreds."""

    def __init__(self, b: Builder) -> None:
        self.b = b
        self.chains: dict[int, int] = {}

    def __call__(self, k: int) -> int:
        found = self.chains.get(k)
        if found is not None:
            return self.b.suffix(found)
        b = self.b
        found = self.chains[k] = _digit(b) if k == 1 else b.seq(_digit(b), self(k - 1))
        return found


def _same_length(b: Builder, lo: str, hi: str, free: _Free) -> int:
    """Digit strings of equal length between `lo` and `hi` inclusive (depth ≤ 16 digits)."""
    n = len(lo)
    if lo == hi:
        return b.lit(lo)
    if n == 1:
        return _digit(b, lo, hi)
    if lo[0] == hi[0]:
        return b.seq(b.lit(lo[0]), _same_length(b, lo[1:], hi[1:], free))
    options: list[int] = []
    first_full = int(lo[0])
    last_full = int(hi[0])
    if lo[1:] != "0" * (n - 1):
        options.append(b.seq(b.lit(lo[0]), _same_length(b, lo[1:], "9" * (n - 1), free)))
        first_full += 1
    middle = None
    if hi[1:] != "9" * (n - 1):
        last_full -= 1
    if first_full <= last_full:
        middle = b.seq(_digit(b, str(first_full), str(last_full)), free(n - 1))
        options.append(middle)
    if hi[1:] != "9" * (n - 1):
        options.append(b.seq(b.lit(hi[0]), _same_length(b, "0" * (n - 1), hi[1:], free)))
    return b.alt(*options)


def natural_range(b: Builder, lo: int, hi: int | None) -> int | None:
    """Decimal spellings (no leading zeros) of the integers in `[lo, hi]`, `lo >= 0`; None if empty."""
    if hi is not None and lo > hi:
        return None
    options: list[int] = []
    length = len(str(lo))
    top = len(str(hi)) if hi is not None else length
    full: list[int] = []  # digit counts whose every spelling is in range (2 digits and more)
    free = _Free(b)
    for digits in range(length, top + 1):
        first = 0 if digits == 1 else 10 ** (digits - 1)
        last = 10**digits - 1
        a = max(lo, first)
        z = last if hi is None else min(hi, last)
        if digits > 1 and a == first and z == last:
            full.append(digits)
        elif a <= z:
            options.append(_same_length(b, str(a), str(z), free))
    if full:  # consecutive counts: one counted repetition instead of one chain per count
        options.append(b.seq(_digit(b, "1", "9"), b.rep(_digit(b), full[0] - 1, full[-1] - 1)))
    if hi is None:  # every longer spelling
        options.append(b.seq(_digit(b, "1", "9"), b.rep(_digit(b), length, None)))
    return b.alt(*options) if options else None


def integer_range(b: Builder, lo: int, hi: int) -> int | None:
    """Integers in `[lo, hi]` (already clipped to the safe range); None if the range is empty.
    Built once per lowering and then stamped (`Builder.stamp`): an integer of the default
    range is 107 nodes."""
    if lo > hi:
        return None
    return b.stamp(("integer", lo, hi), lambda b: _integer_range(b, lo, hi))


def _integer_range(b: Builder, lo: int, hi: int) -> int:
    """`integer_range` of a range that is not empty, built node by node."""
    if lo == -hi and hi > 0:  # symmetric (the default range): 0, or an optional sign first
        magnitudes = natural_range(b, 1, hi)
        assert magnitudes is not None
        return b.alt(b.lit("0"), b.seq(b.opt(b.lit("-")), magnitudes))
    options: list[int] = []
    if lo < 0:
        magnitudes = natural_range(b, max(1, -hi), -lo)
        if magnitudes is not None:
            options.append(b.seq(b.lit("-"), magnitudes))
    if hi >= 0:
        naturals = natural_range(b, max(lo, 0), hi)
        if naturals is not None:
            options.append(naturals)
    return b.alt(*options)


def integer_bounds(
    minimum: Fraction | None,
    maximum: Fraction | None,
    exclusive_min: Fraction | None,
    exclusive_max: Fraction | None,
) -> tuple[int, int]:
    """The integer interval the bounds allow; a side without a bound stops at ±(2^53−1)
    (the interoperable integers), a side with one is exactly the schema's."""
    lows = [_ceil(minimum)] if minimum is not None else []
    if exclusive_min is not None:
        lows.append(_floor(exclusive_min) + 1)
    highs = [_floor(maximum)] if maximum is not None else []
    if exclusive_max is not None:
        highs.append(_ceil(exclusive_max) - 1)
    lo = max(lows) if lows else -MAX_SAFE_INTEGER
    hi = min(highs) if highs else MAX_SAFE_INTEGER
    return lo, hi


def _floor(x: Fraction) -> int:
    return x.numerator // x.denominator


def _ceil(x: Fraction) -> int:
    return -((-x.numerator) // x.denominator)


MAX_INTEGER_DIGITS = 15  # 10^15 < 2^53: every integer part is exact in binary64
MAX_EXPONENT = 280  # 10^15 * 10^280 stays far below binary64's largest finite value


def number(b: Builder) -> int:
    """Any number (`_number`), built once per lowering and then stamped (`Builder.stamp`)."""
    return b.stamp("number", _number)


def _number(b: Builder) -> int:
    """Any number in a binary64-safe lexical form:
    `-?(0|[1-9][0-9]{0,14})(\\.[0-9]+)?([eE][+-]?0{0,2}E)?` with E at most 280: the integer part
    has at most 15 digits, so a plain integer is always safe (|n| < 10^15 < 2^53) and no
    spelling overflows to an infinity; a long fraction only rounds, as every decimal does."""
    head = b.alt(
        b.lit("0"), b.seq(_digit(b, "1", "9"), b.rep(_digit(b), 0, MAX_INTEGER_DIGITS - 1))
    )
    fraction = b.opt(b.seq(b.lit("."), b.rep(_digit(b), 1, None)))
    power = natural_range(b, 0, MAX_EXPONENT)
    assert power is not None
    exponent = b.opt(b.seq(b.chars("eE"), b.opt(b.chars("+-")), b.rep(b.lit("0"), 0, 2), power))
    return b.seq(b.opt(b.lit("-")), head, fraction, exponent)


SIGNIFICANT = 15  # decimals of at most 15 digits round-trip through binary64 (DBL_DIG)


def canonical_number(b: Builder) -> int:
    """Numbers in their one canonical plain spelling: no exponent, no leading zeros, no
    trailing zeros in the fraction, no `-0`, and at most `SIGNIFICANT` digits in all (the
    integer part's digits, `0` included, plus the fraction's). Every such value has exactly one
    spelling here, and every integer here is safe: the spelling discipline of a complement."""

    def fraction(room: int) -> int:  # "." then at most `room` digits, the last non-zero
        return b.seq(b.lit("."), b.rep(_digit(b), 0, room - 1), _digit(b, "1", "9"))

    def tail(room: int) -> int:
        return b.opt(fraction(room)) if room else b.empty()

    room = SIGNIFICANT - 1
    options = [b.seq(b.lit("0"), tail(room)), b.seq(b.lit("-0"), fraction(room))]
    for width in range(1, SIGNIFICANT + 1):
        room = SIGNIFICANT - width
        for sign in ("", "-"):
            head = b.seq(_digit(b, "1", "9"), b.rep(_digit(b), width - 1, width - 1))
            options.append(b.seq(b.lit(sign), head, tail(room)))
    return b.alt(*options)


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


def _digits_upto(b: Builder, r: int | None) -> int:
    return b.rep(_digit(b), 0, r)


def _fraction_vs(
    b: Builder, bound: str, op: str, cap: int | None, positive: bool = False
) -> int | None:
    """The optional fraction `[.F]` whose value 0.F compares with 0.<bound> by `op`
    (ge, gt, le, lt); `bound` has no trailing zeros and is not empty; `cap` bounds len(F).
    `positive` (le/lt only) also requires 0.F > 0."""

    def room(used: int) -> int | None:
        return None if cap is None else cap - used

    def fits(used: int) -> bool:
        return cap is None or used <= cap

    options: list[int] = []
    for j, digit in enumerate(bound):  # F and bound first differ at position j
        if not fits(j + 1):
            break
        d = int(digit)
        lo, hi = (d + 1, 9) if op in ("ge", "gt") else (0, d - 1)
        if lo > hi:
            continue
        rest = _digits_upto(b, room(j + 1))
        if positive and lo == 0 and not bound[:j].strip("0"):
            # the prefix is all zeros: a zero digit here needs a non-zero digit later
            if hi >= 1:
                options.append(b.seq(b.lit(bound[:j]), _digit(b, "1", str(hi)), rest))
            if fits(j + 2):
                zeros = b.rep(b.lit("0"), 0, None if cap is None else cap - j - 2)
                later = b.seq(zeros, _digit(b, "1", "9"), _digits_upto(b, room(j + 2)))
                options.append(b.seq(b.lit(bound[:j] + "0"), later))
        else:
            options.append(b.seq(b.lit(bound[:j]), _digit(b, str(lo), str(hi)), rest))
    n = len(bound)
    if op == "ge" and fits(n):  # F extends bound: equal or greater
        options.append(b.seq(b.lit(bound), _digits_upto(b, room(n))))
    if op == "gt" and fits(n + 1):  # F extends bound with a non-zero digit somewhere
        zeros = b.rep(b.lit("0"), 0, None if cap is None else cap - n - 1)
        options.append(
            b.seq(b.lit(bound), zeros, _digit(b, "1", "9"), _digits_upto(b, room(n + 1)))
        )
    if op in ("le", "lt"):  # a proper prefix of bound is smaller (bound ends in a non-zero digit)
        for m in range(1, n):
            if fits(m) and not (positive and not bound[:m].strip("0")):
                options.append(b.lit(bound[:m]))
        if op == "le" and fits(n):
            options.append(b.seq(b.lit(bound), b.rep(b.lit("0"), 0, room(n))))
        if positive:
            return b.seq(b.lit("."), b.alt(*options)) if options else None
        # no fraction at all is the value 0 < bound
        return b.opt(b.seq(b.lit("."), b.alt(*options))) if options else b.empty()
    return b.seq(b.lit("."), b.alt(*options)) if options else None


def _fraction_for(
    b: Builder, bound: tuple[str, bool] | None, side: str, cap: int | None
) -> int | None:
    """The fraction condition at a boundary integer part: `side` "lo" (v ≥ / > bound) or "hi"."""
    if bound is None:
        return _fraction(b, "any", cap)
    digits, inclusive = bound
    if not digits:
        if side == "lo":
            return _fraction(b, "any" if inclusive else "nonzero", cap)
        return _fraction(b, "zero", cap) if inclusive else None
    op = ("ge" if inclusive else "gt") if side == "lo" else ("le" if inclusive else "lt")
    return _fraction_vs(b, digits, op, cap)


def _with(b: Builder, integer: int | None, digits: int, fraction_of, cap: int | None) -> int | None:
    if integer is None or (cap is not None and digits > cap):
        return None
    fraction = fraction_of(None if cap is None else cap - digits)
    return None if fraction is None else b.seq(integer, fraction)


Bound = tuple[int, str, bool]  # integer part, fraction digits (no trailing zeros), inclusive


def _magnitudes(b: Builder, a: Bound, z: Bound | None, cap: int | None) -> int | None:
    """Spellings `I[.F]` of the values v ≥ 0 with a ≤ v (or a < v) and v ≤ z (or v < z).

    With `cap`, a spelling has at most `cap` digits in all, so that distinct spellings round to
    distinct binary64 values and an exclusive bound cannot be reached by rounding.
    """
    ai, af, a_incl = a
    options: list[int | None] = []
    if z is not None and ai == z[0]:
        zi, zf, z_incl = z
        if af and zf:
            raise ValueError("both bounds inside one integer")
        if af:  # ai.af <= v <= ai (zf empty): only possible if af is empty
            return None
        if zf:  # ai <= v <= ai.zf, or ai < v when the lower bound is exclusive
            op = "le" if z_incl else "lt"

            def inside(c: int | None) -> int | None:
                return _fraction_vs(b, zf, op, c, positive=not a_incl)

            options.append(_with(b, b.lit(str(ai)), len(str(ai)), inside, cap))
        elif a_incl and z_incl:
            options.append(
                _with(b, b.lit(str(ai)), len(str(ai)), lambda c: _fraction(b, "zero", c), cap)
            )
    elif z is None or ai < z[0]:
        options.append(
            _with(
                b,
                b.lit(str(ai)),
                len(str(ai)),
                lambda c: _fraction_for(b, (af, a_incl), "lo", c),
                cap,
            )
        )
        top = None if z is None else z[0] - 1
        if cap is None:
            inner = natural_range(b, ai + 1, top)
            if inner is not None:
                options.append(b.seq(inner, _fraction(b, "any")))
        else:
            for digits in range(len(str(ai + 1)), cap + 1):
                lo = max(ai + 1, 0 if digits == 1 else 10 ** (digits - 1))
                hi = 10**digits - 1 if top is None else min(top, 10**digits - 1)
                if lo <= hi:
                    options.append(
                        _with(
                            b,
                            natural_range(b, lo, hi),
                            digits,
                            lambda c: _fraction(b, "any", c),
                            cap,
                        )
                    )
        if z is not None:
            zi, zf, z_incl = z
            options.append(
                _with(
                    b,
                    b.lit(str(zi)),
                    len(str(zi)),
                    lambda c: _fraction_for(b, (zf, z_incl), "hi", c),
                    cap,
                )
            )
    kept = [o for o in options if o is not None]
    return b.alt(*kept) if kept else None


def _split(value: Decimal, inclusive: bool) -> Bound:
    """|value| as (integer part, fraction digits without trailing zeros, inclusive)."""
    text = format(abs(value), "f")
    integer, _, fraction = text.partition(".")
    return int(integer), fraction.rstrip("0"), inclusive


def bounded_number(
    b: Builder, lo: tuple[Decimal, bool] | None, hi: tuple[Decimal, bool] | None
) -> int | None:
    """Numbers without exponent inside decimal bounds `(value, inclusive)`; None if none exist.

    Raises ValueError when both bounds fall inside one integer interval with fractions on both
    sides (e.g. [0.25, 0.75]), which this construction does not express.
    """
    options: list[int] = []
    # an exclusive bound could be reached by rounding a long decimal to binary64: cap the digits
    exclusive = (lo is not None and not lo[1]) or (hi is not None and not hi[1])
    cap = SIGNIFICANT if exclusive else None
    if (
        lo is not None
        and hi is not None
        and (lo[0] > hi[0] or (lo[0] == hi[0] and not (lo[1] and hi[1])))
    ):
        return None
    # non-negative spellings (no minus sign): v >= 0
    if hi is None or hi[0] > 0 or (hi[0] == 0 and hi[1]):
        a = _split(lo[0], lo[1]) if lo is not None and lo[0] >= 0 else (0, "", True)
        z = None if hi is None else _split(hi[0], hi[1])
        non_negative = _magnitudes(b, a, z, cap)
        if non_negative is not None:
            options.append(non_negative)
    # negative values v < 0 written as "-" m with m > 0
    if lo is None or lo[0] < 0:
        m_lo = (0, "", False) if hi is None or hi[0] >= 0 else _split(hi[0], hi[1])
        m_hi = None if lo is None else _split(lo[0], lo[1])
        negative = _magnitudes(b, m_lo, m_hi, cap)
        if negative is not None:
            options.append(b.seq(b.lit("-"), negative))
    return b.alt(*options) if options else None


def _factor_2_5(n: int) -> tuple[int, int] | None:
    """(a, b) with n = 2^a 5^b, or None when n has another prime factor."""
    a = b = 0
    while n % 2 == 0:
        n //= 2
        a += 1
    while n % 5 == 0:
        n //= 5
        b += 1
    return (a, b) if n == 1 else None


MAX_WINDOWS = 1_000  # digit windows a multipleOf may enumerate


def multiple_of(b: Builder, step: Decimal) -> int | None:
    """Plain decimal spellings (no exponent) of the multiples of `step`, or None when `step` is
    not n·10^-k with n = 2^a·5^b, or needs more than `MAX_WINDOWS` digit windows.

    x is a multiple of n·10^-k exactly when N = x·10^k is an integer divisible by n; since n
    divides 10^t (t = max(a, b)), that depends only on N's last t digits (a *window*). A
    spelling `I.s` (trailing zeros of s irrelevant) with j = len(s) significant fraction digits
    has N = I s 0^(k-j): so j <= k, and the last t-(k-j) digits of the digit string `I s` must
    be a window that, followed by k-j zeros, is divisible by n. The result is meant to be
    intersected with the number grammar of the type (signs, bounds, `-0`)."""
    sign, digits, exponent = step.normalize().as_tuple()
    if sign or not digits or not isinstance(exponent, int):
        return None
    n = int("".join(map(str, digits)))
    k = max(0, -exponent)
    n *= 10 ** max(0, exponent)
    factors = _factor_2_5(n)
    if factors is None:
        return None
    t = max(factors)
    if 10**t // n > MAX_WINDOWS:
        return None
    options: list[int] = []
    for j in range(k + 1):
        r = t - (k - j)  # window length inside `I s`
        zeros = b.opt(b.seq(b.lit("."), b.rep(b.lit("0"), 1, None)))
        if r <= 0:  # every digit string with j significant fraction digits
            if j == 0:
                options.append(b.seq(_any_integer(b), zeros))
            else:
                body = b.seq(b.rep(_digit(b), j - 1, j - 1), _digit(b, "1", "9"))
                options.append(b.seq(_any_integer(b), _fraction_digits(b, body)))
            continue
        # w·10^(k-j) is divisible by n exactly when w is a multiple of n / gcd(n, 10^(k-j));
        # there are at most 10^t / n <= MAX_WINDOWS of them below 10^r (stepping, not
        # filtering range(10^r): multipleOf 1e20 has one window of twenty digits)
        step_w = n // math.gcd(n, 10 ** (k - j))
        windows = [str(w).zfill(r) for w in range(0, 10**r, step_w)]
        if j == 0:
            options.append(b.seq(_integer_ending(b, windows), zeros))
        elif r <= j:
            kept = [w for w in windows if w[-1] != "0"]
            if kept:
                body = b.seq(b.rep(_digit(b), j - r, j - r), _trie(b, kept))
                options.append(b.seq(_any_integer(b), _fraction_digits(b, body)))
        else:
            by_tail: dict[str, list[str]] = {}
            for w in windows:
                if w[-1] != "0":
                    by_tail.setdefault(w[r - j :], []).append(w[: r - j])
            for tail in sorted(by_tail):
                options.append(
                    b.seq(_integer_ending(b, by_tail[tail]), _fraction_digits(b, b.lit(tail)))
                )
    if not options:
        return None
    return b.seq(b.opt(b.lit("-")), b.alt(*options))


def _trie(b: Builder, words: list[str]) -> int:
    """The alternation of equal-length digit strings, sharing prefixes (a trie), so that a
    determinised `\\d* (w1 | w2 | ...)` stays small."""
    if len(words[0]) == 0:
        return b.empty()
    groups: dict[str, list[str]] = {}
    for w in words:
        groups.setdefault(w[0], []).append(w[1:])
    return b.alt(*(b.seq(b.lit(c), _trie(b, rest)) for c, rest in sorted(groups.items())))


def _any_integer(b: Builder) -> int:
    return b.alt(b.lit("0"), b.seq(_digit(b, "1", "9"), b.rep(_digit(b), 0, None)))


def _integer_ending(b: Builder, suffixes: list[str]) -> int:
    """Integer parts (no leading zeros) whose last digits, zero-padded, are one of `suffixes`
    (all of one length)."""
    shorts = sorted({w.lstrip("0") or "0" for w in suffixes})
    longer = b.seq(_digit(b, "1", "9"), b.rep(_digit(b), 0, None), _trie(b, sorted(suffixes)))
    return b.alt(*(b.lit(x) for x in shorts), longer)


def _fraction_digits(b: Builder, body: int) -> int:
    """`.` then the significant fraction digits `body` (ending in a non-zero digit), then any
    zeros."""
    return b.seq(b.lit("."), body, b.rep(b.lit("0"), 0, None))
