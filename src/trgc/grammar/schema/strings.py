"""JSON strings as byte grammars: the general string, counted bodies, key sets and formats.

A string body is a sequence of *units*, one per Unicode code point: a raw scalar (anything but
`"`, `\\` and the C0 controls, encoded as UTF-8 by the class), a short escape, a `\\u` escape
of four hex digits naming a non-surrogate, or a `\\uD8xx\\uDCxx` surrogate pair (one code
point). Lone surrogates are not expressible, so every accepted string decodes to valid
Unicode. `minLength`/`maxLength` count code points, which is exactly a repetition count over
units.

Canonical strings (what `json.dumps(..., ensure_ascii=False)` writes) escape only `"`, `\\` and
the controls; member names of open objects use that canonical spelling so that a declared name
cannot reappear under another spelling.
"""

from __future__ import annotations

import json

from trgc.grammar.charclass import MAX_SCALAR, subtract
from trgc.grammar.schema.nodes import Builder

RAW_RANGES: tuple[tuple[int, int], ...] = ((0x20, 0x21), (0x23, 0x5B), (0x5D, MAX_SCALAR))
HEX = ((ord("0"), ord("9")), (ord("A"), ord("F")), (ord("a"), ord("f")))
SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def canonical_char(c: str) -> str:
    """How `json.dumps(ensure_ascii=False)` writes one character inside a string."""
    if c in SHORT_ESCAPES:
        return SHORT_ESCAPES[c]
    if ord(c) < 0x20:
        return f"\\u{ord(c):04x}"
    return c


def canonical_string(text: str) -> str:
    """The canonical JSON spelling of a string, quotes included: `json.dumps` itself (its C
    encoder, the spelling `canonical_char` gives each character), one call per member name
    instead of one per character."""
    return json.dumps(text, ensure_ascii=False)


def _hex(b: Builder, n: int = 1) -> int:
    return b.rep(b.cls(HEX), n, n)


def unit(b: Builder) -> int:
    """One code point of a JSON string body, in any valid spelling."""
    non_surrogate = b.alt(
        b.seq(
            b.cls([(0x30, 0x39), (0x41, 0x43), (0x61, 0x63), (0x45, 0x46), (0x65, 0x66)]),
            _hex(b, 3),
        ),
        b.seq(b.chars("Dd"), b.cls([(0x30, 0x37)]), _hex(b, 2)),
    )
    pair = b.seq(
        b.chars("Dd"),
        b.chars("89ABab"),
        _hex(b, 2),
        b.lit("\\u"),
        b.chars("Dd"),
        b.cls([(ord("C"), ord("F")), (ord("c"), ord("f"))]),
        _hex(b, 2),
    )
    escape = b.seq(
        b.lit("\\"), b.alt(b.chars('"\\/bfnrt'), b.seq(b.lit("u"), b.alt(non_surrogate, pair)))
    )
    return b.alt(b.cls(RAW_RANGES), escape)


def string(b: Builder, min_length: int = 0, max_length: int | None = None) -> int:
    """A quoted JSON string of `min_length..max_length` code points (a counter when bounded).
    Any string is stamped whole, as its unit is (the NFA builder builds one per attempt)."""
    if min_length == 0 and max_length is None:
        return b.stamp("any string", _string)
    return _string(b, min_length, max_length)


def _string(b: Builder, min_length: int = 0, max_length: int | None = None) -> int:
    bounded = min_length > 0 or max_length is not None
    body = b.stamp("string unit", unit)
    return b.seq(b.lit('"'), b.rep(body, min_length, max_length, counted=bounded), b.lit('"'))


def _canonical_units_except(b: Builder, excluded: set[str]) -> int | None:
    """One canonical unit whose character is not in `excluded` (None if nothing is left)."""
    raw_excluded = [(ord(c), ord(c)) for c in excluded if canonical_char(c) == c]
    ranges = subtract(RAW_RANGES, raw_excluded)
    options = [b.cls(ranges)] if ranges else []
    for code in range(0x20):
        c = chr(code)
        if c not in excluded:
            options.append(b.lit(canonical_char(c)))
    for c in ('"', "\\"):
        if c not in excluded:
            options.append(b.lit(canonical_char(c)))
    if not options:
        return None
    return b.alt(*options)


def _canonical_unit(b: Builder) -> int:
    node = _canonical_units_except(b, set())
    assert node is not None
    return node


def canonical_string_any(b: Builder) -> int:
    """Every quoted string in its canonical spelling (json.dumps, ensure_ascii=False): the
    spelling discipline of a complement (`trgc.grammar.schema.combinators`)."""
    return b.seq(b.lit('"'), b.rep(_canonical_unit(b), 0, None), b.lit('"'))


def key_other_than(b: Builder, names: list[str]) -> int:
    """A canonical quoted member name that is none of `names`: the intersection of every
    canonically written string (the shortest escapes, as `canonical_char` writes) with the complement of the names, which the compiler builds as one
    product of two small automata (a string automaton and the names' trie), so its size is
    the trie's, not the trie's times a copy of the string body per trie node."""
    canonical = b.seq(b.lit('"'), b.rep(_canonical_unit(b), 0, None), b.lit('"'))
    if not names:
        return canonical
    listed = b.alt(*(b.lit(canonical_string(name)) for name in sorted(set(names))))
    return b.and_(canonical, b.not_(listed), origin="member name")


# ---- formats: shape only (RFC 3339 dates and times, RFC 4122 UUID text) --------------------

FORMAT_LENGTHS: dict[str, tuple[int, int | None]] = {
    "date": (10, 10),
    "time": (9, None),
    "date-time": (20, None),
    "uuid": (36, 36),
    "email": (6, 209),
    "hostname": (4, 146),
    "ipv4": (7, 15),
    "uri": (11, None),
    "uri-reference": (11, None),
    "iri": (11, None),
    "iri-reference": (11, None),
    "idn-email": (6, 209),
    "idn-hostname": (4, 146),
    "duration": (3, None),
    "ipv6": (2, 45),
    "json-pointer": (0, None),
    "relative-json-pointer": (1, None),
    "uri-template": (0, None),
}


def _digits(b: Builder, lo: str, hi: str) -> int:
    return b.cls([(ord(lo), ord(hi))])


def _two(
    b: Builder, first_lo: str, first_hi: str, second_lo: str = "0", second_hi: str = "9"
) -> int:
    return b.seq(_digits(b, first_lo, first_hi), _digits(b, second_lo, second_hi))


def _year(b: Builder) -> int:
    return b.rep(_digits(b, "0", "9"), 4, 4)


def _leap_year(b: Builder) -> int:
    """Four-digit years divisible by 4, except centuries not divisible by 400."""
    div4 = b.alt(b.seq(b.chars("02468"), b.chars("048")), b.seq(b.chars("13579"), b.chars("26")))
    nonzero_div4 = b.alt(
        b.seq(b.chars("02468"), b.chars("48")),
        b.seq(b.chars("2468"), b.lit("0")),
        b.seq(b.chars("13579"), b.chars("26")),
    )
    return b.alt(b.seq(_two(b, "0", "9"), nonzero_div4), b.seq(div4, b.lit("00")))


def date(b: Builder) -> int:
    """YYYY-MM-DD with the real number of days per month (29 February only in leap years)."""
    day_1_28 = b.alt(
        b.seq(b.lit("0"), _digits(b, "1", "9")),
        b.seq(b.lit("1"), _digits(b, "0", "9")),
        b.seq(b.lit("2"), _digits(b, "0", "8")),
    )
    any_month = b.alt(
        b.seq(b.lit("0"), _digits(b, "1", "9")), b.seq(b.lit("1"), _digits(b, "0", "2"))
    )
    thirty = b.alt(
        b.lit("01"),
        b.seq(b.lit("0"), _digits(b, "3", "9")),
        b.seq(b.lit("1"), _digits(b, "0", "2")),
    )
    thirty_one = b.alt(
        b.lit("01"), b.lit("03"), b.lit("05"), b.lit("07"), b.lit("08"), b.lit("10"), b.lit("12")
    )
    common = b.seq(
        _year(b),
        b.lit("-"),
        b.alt(
            b.seq(any_month, b.lit("-"), day_1_28),
            b.seq(thirty, b.lit("-"), b.alt(b.lit("29"), b.lit("30"))),
            b.seq(thirty_one, b.lit("-31")),
        ),
    )
    return b.alt(common, b.seq(_leap_year(b), b.lit("-02-29")))


def time(b: Builder) -> int:
    """HH:MM:SS[.fraction](Z|+HH:MM|-HH:MM); no leap second."""
    hour = b.alt(_two(b, "0", "1"), _two(b, "2", "2", "0", "3"))
    minute = _two(b, "0", "5")
    second = _two(b, "0", "5")
    fraction = b.opt(b.seq(b.lit("."), b.rep(_digits(b, "0", "9"), 1, None)))
    offset_hour = b.alt(_two(b, "0", "1"), _two(b, "2", "2", "0", "3"))
    offset = b.alt(b.lit("Z"), b.seq(b.chars("+-"), offset_hour, b.lit(":"), _two(b, "0", "5")))
    return b.seq(hour, b.lit(":"), minute, b.lit(":"), second, fraction, offset)


def uuid(b: Builder) -> int:
    groups = [_hex(b, n) for n in (8, 4, 4, 4, 12)]
    items: list[int] = []
    for i, g in enumerate(groups):
        if i:
            items.append(b.lit("-"))
        items.append(g)
    return b.seq(*items)


def _alnum(b: Builder) -> int:
    return b.cls([(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)])


def _label(b: Builder) -> int:
    """A DNS label: letters and digits, inner hyphens, at most 41 characters."""
    return b.seq(b.rep(_alnum(b), 1, 20), b.opt(b.seq(b.lit("-"), b.rep(_alnum(b), 1, 20))))


def hostname(b: Builder) -> int:
    """Two to four labels, the last alphabetic (RFC 1123 shape, well under the length limits)."""
    tld = b.rep(b.cls([(0x41, 0x5A), (0x61, 0x7A)]), 2, 20)
    more = b.seq(b.lit("."), _label(b))
    # `more{0,2}` as nested options: counted, that repetition conflicts with the top-level
    # domain (after a label, "." starts either), and every schema with a hostname paid a
    # failed attempt before the retry copied it
    return b.seq(_label(b), b.opt(b.seq(more, b.opt(more))), b.lit("."), tld)


def email(b: Builder) -> int:
    """A dot-atom local part of at most 62 characters, `@`, a hostname (RFC 5321 subset)."""
    local = [
        (0x30, 0x39),
        (0x41, 0x5A),
        (0x61, 0x7A),
        (0x5F, 0x5F),
        (0x25, 0x25),
        (0x2B, 0x2B),
        (0x2D, 0x2D),
    ]

    def atom() -> int:
        return b.rep(b.cls(local), 1, 20)

    return b.seq(atom(), b.rep(b.seq(b.lit("."), atom()), 0, 2), b.lit("@"), hostname(b))


def ipv4(b: Builder) -> int:
    """Dotted quad without leading zeros."""

    def octet() -> int:
        return b.alt(
            b.seq(b.lit("25"), _digits(b, "0", "5")),
            b.seq(b.lit("2"), _digits(b, "0", "4"), _digits(b, "0", "9")),
            b.seq(b.lit("1"), _digits(b, "0", "9"), _digits(b, "0", "9")),
            b.seq(_digits(b, "1", "9"), _digits(b, "0", "9")),
            _digits(b, "0", "9"),
        )

    return b.seq(octet(), b.lit("."), octet(), b.lit("."), octet(), b.lit("."), octet())


def uri(b: Builder) -> int:
    """`http(s)://host[:port][/path][?query][#fragment]` with unreserved, sub-delim and
    percent-encoded characters only (RFC 3986 subset, also a WHATWG URL)."""
    pchar_ranges = [(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)] + [
        (ord(c), ord(c)) for c in "-._~!$&'()*+,;=:@"
    ]

    def chars(extra: str) -> int:
        return b.rep(
            b.alt(
                b.cls(pchar_ranges + [(ord(c), ord(c)) for c in extra]),
                b.seq(b.lit("%"), _hex(b, 2)),
            ),
            0,
            None,
        )

    host = b.alt(hostname(b), b.lit("localhost"), ipv4(b))
    port = b.opt(b.seq(b.lit(":"), _digits(b, "1", "9"), b.rep(_digits(b, "0", "9"), 0, 3)))
    path = b.rep(b.seq(b.lit("/"), chars("")), 0, None)
    query = b.opt(b.seq(b.lit("?"), chars("/?")))
    fragment = b.opt(b.seq(b.lit("#"), chars("/?")))
    return b.seq(b.lit("http"), b.opt(b.lit("s")), b.lit("://"), host, port, path, query, fragment)


def formatted_string(b: Builder, fmt: str) -> int:
    """A quoted string of the given format's shape (`trgc.grammar.schema.formats` holds the
    shapes added for the other 2020-12 formats). The body is built once per process and then
    stamped (`Builder.stamp`): a date is about 180 nodes."""
    body = b.stamp(fmt, lambda b: _format_body(b, fmt))
    return b.seq(b.lit('"'), body, b.lit('"'))


def _format_body(b: Builder, fmt: str) -> int:
    """The unquoted shape of format `fmt`, built node by node."""
    from trgc.grammar.schema import formats

    if fmt in formats.SHAPES:
        return formats.SHAPES[fmt](b)
    if fmt in ("email", "hostname", "ipv4", "idn-email", "idn-hostname"):
        return {"email": email, "hostname": hostname, "ipv4": ipv4}[fmt.removeprefix("idn-")](b)
    if fmt in ("uri", "uri-reference", "iri", "iri-reference"):
        return uri(b)
    if fmt == "date":
        return date(b)
    if fmt == "time":
        return time(b)
    if fmt == "date-time":
        return b.seq(date(b), b.lit("T"), time(b))
    if fmt == "uuid":
        return uuid(b)
    raise ValueError(fmt)
