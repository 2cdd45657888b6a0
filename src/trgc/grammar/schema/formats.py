"""More 2020-12 formats as regular shapes (the string bodies, without quotes).

Each shape is a subset of what the format's RFC admits, so it is sound whether a validator
asserts formats or treats them as annotations:

* `duration`: RFC 3339 appendix A (`P1Y2M3DT4H5M6S`, `P2W`, `PT0.5S` is not admitted: no
  fractions), each number at most 9 digits;
* `ipv6`: RFC 4291 text forms: eight groups of 1 to 4 hex digits, or fewer around one `::`,
  optionally ending in a dotted IPv4 address (two groups); no zone index;
* `json-pointer`: RFC 6901 (`/a/b~0c~1d`), any canonical characters but `/` and `~` unescaped;
* `relative-json-pointer`: a non-negative integer followed by `#` or a JSON pointer (no index
  manipulation);
* `uri-template`: RFC 6570 literals (printable ASCII outside `"'%<>\\^`{|}`) and expressions
  `{` optional operator, variables of ASCII letters, digits, `_` and inner `.`, each with an
  optional `:1..9999` or `*` modifier, comma-separated `}`;
* `idn-hostname`, `idn-email`: the ASCII `hostname` and `email` shapes.
"""

from __future__ import annotations

from trgc.grammar.charclass import subtract
from trgc.grammar.schema.nodes import Builder
from trgc.grammar.schema.strings import HEX, RAW_RANGES, canonical_char, ipv4

MAX_DIGITS = 9


def _digits(b: Builder, lo: int = 1, hi: int | None = MAX_DIGITS) -> int:
    return b.rep(b.cls([(0x30, 0x39)]), lo, hi)


def duration(b: Builder) -> int:
    def part(letter: str) -> int:
        return b.seq(_digits(b), b.lit(letter))

    def time() -> int:  # "T" (hours [minutes [seconds]] | minutes [seconds] | seconds)
        minutes = b.seq(part("M"), b.opt(part("S")))
        return b.seq(
            b.lit("T"),
            b.alt(b.seq(part("H"), b.opt(b.seq(part("M"), b.opt(part("S"))))), minutes, part("S")),
        )

    day = part("D")
    month = b.seq(part("M"), b.opt(part("D")))
    year = b.seq(part("Y"), b.opt(b.seq(part("M"), b.opt(part("D")))))
    date = b.seq(b.alt(day, month, year), b.opt(time()))
    return b.seq(b.lit("P"), b.alt(date, time(), part("W")))


def ipv6(b: Builder) -> int:
    def h16() -> int:
        return b.rep(b.cls(HEX), 1, 4)

    def groups(n: int) -> int:
        """n groups joined by ':' (n >= 1)."""
        return b.seq(h16(), b.rep(b.seq(b.lit(":"), h16()), n - 1, n - 1))

    options = [groups(8), b.seq(groups(6), b.lit(":"), ipv4(b))]
    for tail_v4 in (False, True):
        width = 6 if tail_v4 else 8  # groups the address has besides an IPv4 tail
        for left in range(width):
            for right in range(width - left):  # at least one group compressed
                if left + right > width - 1:
                    continue
                parts: list[int] = []
                if left:
                    parts.append(groups(left))
                parts.append(b.lit("::"))
                tail: list[int] = []
                if right:
                    tail.append(groups(right))
                if tail_v4:
                    if right:
                        tail.append(b.lit(":"))
                    tail.append(ipv4(b))
                options.append(b.seq(*parts, *tail))
    return b.alt(*options)


def _units_except(b: Builder, excluded: str) -> int:
    """One canonical string unit whose character is not in `excluded`."""
    ranges = subtract(RAW_RANGES, [(ord(c), ord(c)) for c in excluded])
    options = [b.cls(ranges)]
    for code in list(range(0x20)) + [0x22, 0x5C]:
        if chr(code) not in excluded:
            options.append(b.lit(canonical_char(chr(code))))
    return b.alt(*options)


def json_pointer(b: Builder) -> int:
    token = b.rep(b.alt(_units_except(b, "/~"), b.seq(b.lit("~"), b.chars("01"))), 0, None)
    return b.rep(b.seq(b.lit("/"), token), 0, None)


def relative_json_pointer(b: Builder) -> int:
    number = b.alt(b.lit("0"), b.seq(b.cls([(0x31, 0x39)]), _digits(b, 0, None)))
    return b.seq(number, b.alt(b.lit("#"), json_pointer(b)))


def uri_template(b: Builder) -> int:
    def pct() -> int:
        return b.seq(b.lit("%"), b.rep(b.cls(HEX), 2, 2))

    def varchar() -> int:
        return b.alt(b.cls([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]), pct())

    def varspec() -> int:
        name = b.seq(varchar(), b.rep(b.seq(b.opt(b.lit(".")), varchar()), 0, None))
        length = b.seq(b.lit(":"), b.cls([(0x31, 0x39)]), _digits(b, 0, 3))
        return b.seq(name, b.opt(b.alt(length, b.lit("*"))))

    excluded = "\"'%<>\\^`{|} "
    literal_ranges = subtract(((0x21, 0x7E),), [(ord(c), ord(c)) for c in excluded])
    literal = b.alt(b.cls(literal_ranges), pct())
    expression = b.seq(
        b.lit("{"),
        b.opt(b.chars("+#./;?&=,!@|")),
        varspec(),
        b.rep(b.seq(b.lit(","), varspec()), 0, None),
        b.lit("}"),
    )
    return b.rep(b.alt(literal, expression), 0, None)


SHAPES = {
    "duration": duration,
    "ipv6": ipv6,
    "json-pointer": json_pointer,
    "relative-json-pointer": relative_json_pointer,
    "uri-template": uri_template,
}
LENGTHS: dict[str, tuple[int, int | None]] = {
    "duration": (3, None),
    "ipv6": (2, 45),
    "json-pointer": (0, None),
    "relative-json-pointer": (1, None),
    "uri-template": (0, None),
}
