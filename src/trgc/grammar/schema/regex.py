"""`pattern` as a byte grammar: a safe subset of ECMA-262 regular expressions.

JSON Schema patterns are ECMA-262 regexes that *search* the string (unanchored unless `^`/`$`
say otherwise). The subset: literals and escapes (`\\t \\n \\r \\f \\v \\0 \\xHH \\uHHHH \\/ \\.` ...),
`.`, classes with ranges and negation, `\\d \\w \\s` and their complements, groups `( )` and
`(?: )`, alternation, `* + ? {n} {n,} {n,m}` (lazy forms have the same language), and `^`/`$`
at the ends of a top-level alternative. Backreferences, lookaround, word boundaries, named
groups and property escapes are unsupported.

Soundness against both ECMA-262 and Python's `re` (which validators use): every class is the
*smaller* of the two readings: `\\d` is `[0-9]`, `\\w` is `[A-Za-z0-9_]`, `\\s` the ASCII
whitespace, `.` excludes all line terminators, `$` only matches at the very end; complements
(`\\D`, `[^\\s]`, ...) remove the *larger* (Unicode) reading. The string is written in canonical
form (only `"`, `\\` and control characters escaped, as json.dumps writes them).

The parser and the emitter recurse over the regex's group nesting, which is capped at
`MAX_GROUP_DEPTH` (a constant, so the recursion depth never depends on the input size).
"""

from __future__ import annotations

import re
from functools import lru_cache

from trgc.errors import TrgcError
from trgc.grammar.charclass import MAX_SCALAR, normalize, subtract
from trgc.grammar.schema.nodes import Builder
from trgc.grammar.schema.strings import canonical_char, string
from trgc.limits import check_limit

MAX_GROUP_DEPTH = 32
ALL = ((0, MAX_SCALAR),)
DIGIT = ((0x30, 0x39),)
WORD = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
SPACE = ((0x09, 0x0D), (0x20, 0x20))
# everything Python's `re` or ECMA-262 may count as whitespace
SPACE_ANY = (
    (0x09, 0x0D), (0x1C, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF),
)  # fmt: skip
LINE_TERMINATORS = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))


class _Unsupported(Exception):
    pass


@lru_cache(maxsize=2)
def _unicode_ranges(kind: str) -> tuple[tuple[int, int], ...]:
    """Scalars Python's `re` counts as digits (`d`) or word characters (`w`): the runs `re`
    itself finds in one string of every scalar (surrogates as NUL, neither a digit nor a word
    character), in 30 ms where a test per scalar took 400."""
    import numpy as np

    scalars = np.arange(MAX_SCALAR + 1, dtype="<u4")
    scalars[0xD800:0xE000] = 0
    text = scalars.tobytes().decode("utf-32-le")
    return tuple((m.start(), m.end() - 1) for m in re.finditer("\\" + kind + "+", text))


def _positive(kind: str, wide: bool) -> tuple[tuple[int, int], ...]:
    """`\\d`, `\\w` or `\\s`: the ASCII reading both engines share, or (wide) every
    character either engine may count."""
    if not wide:
        return {"d": DIGIT, "w": WORD, "s": SPACE}[kind]
    if kind == "s":
        return SPACE_ANY
    return normalize(list({"d": DIGIT, "w": WORD}[kind] + _unicode_ranges(kind)))


# regex AST: ("chars", ranges) | ("seq", [items]) | ("alt", [items]) | ("rep", item, lo, hi)
#            | ("any_string",)  (only from unanchored ends)


class _Parser:
    def __init__(self, text: str, repetition_limit: int, wide: bool = False) -> None:
        self.text = text
        self.i = 0
        self.repetition_limit = repetition_limit
        self.wide = wide

    def peek(self) -> str | None:
        return self.text[self.i] if self.i < len(self.text) else None

    def take(self) -> str:
        c = self.text[self.i]
        self.i += 1
        return c

    def alternatives(self, depth: int) -> list[tuple]:
        """Top level or group body: alternatives, each a list of (atom-with-quantifier) items."""
        if depth > MAX_GROUP_DEPTH:
            raise _Unsupported("groups nest too deeply")
        alts: list[list] = [[]]
        while True:
            c = self.peek()
            if c is None or c == ")":
                return [("seq", items) for items in alts]
            if c == "|":
                self.take()
                alts.append([])
                continue
            atom = self.atom(depth)
            alts[-1].append(self.quantified(atom))

    def quantified(self, atom: tuple) -> tuple:
        c = self.peek()
        lo: int
        hi: int | None
        if c == "*":
            self.take()
            lo, hi = 0, None
        elif c == "+":
            self.take()
            lo, hi = 1, None
        elif c == "?":
            self.take()
            lo, hi = 0, 1
        elif c == "{" and self._brace_quantifier() is not None:
            lo, hi = self._brace_quantifier()  # type: ignore[misc]
            self.i = self.text.index("}", self.i) + 1
        else:
            return atom
        if atom[0] in ("bol", "eol"):
            raise _Unsupported("a quantified anchor")
        if self.peek() == "?":  # lazy: same language
            self.take()
        if self.peek() in ("*", "+", "?") or (
            self.peek() == "{" and self._brace_quantifier() is not None
        ):
            raise _Unsupported("a repeated quantifier")
        for bound in (lo, hi):
            if bound is not None:
                check_limit("repetition", bound, self.repetition_limit, "pattern repetition bound")
        if hi is not None and lo > hi:
            raise _Unsupported(f"quantifier {{{lo},{hi}}} is out of order")
        if hi is None and length_range(atom)[0] == 0:
            # (x{0,h})* is x*; any other unbounded repetition of a nullable group is ambiguous
            inner = atom
            while inner[0] == "alt" and len(inner[1]) == 1 and len(inner[1][0][1]) == 1:
                inner = inner[1][0][1][0]
            if inner[0] == "rep" and inner[2] == 0 and length_range(inner[1])[0] > 0:
                return ("rep", inner[1], 0, None)
            raise _Unsupported("an unbounded repetition of a group that can match the empty string")
        return ("rep", atom, lo, hi)

    def _brace_quantifier(self) -> tuple[int, int | None] | None:
        end = self.text.find("}", self.i)
        if end < 0:
            return None
        body = self.text[self.i + 1 : end]
        lo_text, comma, hi_text = body.partition(",")
        if not lo_text.isdigit() or (hi_text and not hi_text.isdigit()):
            return None
        return int(lo_text), (int(hi_text) if hi_text else None) if comma else int(lo_text)

    def atom(self, depth: int) -> tuple:
        c = self.take()
        if c == "(":
            if self.peek() == "?":
                if self.text.startswith("?:", self.i):
                    self.i += 2
                else:
                    raise _Unsupported("lookaround or named groups")
            inner = self.alternatives(depth + 1)
            if self.peek() != ")":
                raise _Unsupported("an unclosed group")
            self.take()
            return ("alt", inner)
        if c == "[":
            return ("chars", self.char_class())
        if c == ".":  # wide: Python's `.` only excludes the line feed
            return ("chars", subtract(ALL, ((10, 10),) if self.wide else LINE_TERMINATORS))
        if c == "^":
            return ("bol",)
        if c == "$":
            return ("eol",)
        if c == "\\":
            return ("chars", self.escape(in_class=False))
        if c in "*+?":
            raise _Unsupported(f"nothing to repeat before {c!r}")
        if c in "{}])":
            if c == "{" and self._brace_quantifier() is not None:
                raise _Unsupported("nothing to repeat")
            if c == ")":
                raise _Unsupported("an unmatched ')'")
        return ("chars", ((ord(c), ord(c)),))

    def escape(self, *, in_class: bool, negated: bool = False) -> tuple[tuple[int, int], ...]:
        """One escape's characters; inside a negated class the reading flips, since the class
        removes them (narrow removes the widest reading, wide the narrowest)."""
        if self.peek() is None:
            raise _Unsupported("a trailing backslash")
        c = self.take()
        simple = {"t": 9, "n": 10, "r": 13, "f": 12, "v": 11, "0": 0}
        if c in simple and not (c == "0" and (self.peek() or "").isdigit()):
            return ((simple[c], simple[c]),)
        wide = self.wide != negated
        if c in "dws":
            return _positive(c, wide)
        if c in "DWS":
            return subtract(ALL, _positive(c.lower(), not wide))
        if c == "x":
            digits = self.text[self.i : self.i + 2]
            if len(digits) == 2 and all(ch in "0123456789abcdefABCDEF" for ch in digits):
                self.i += 2
                return ((int(digits, 16), int(digits, 16)),)
            raise _Unsupported("a malformed \\x escape")
        if c == "u":
            digits = self.text[self.i : self.i + 4]
            if len(digits) == 4 and all(ch in "0123456789abcdefABCDEF" for ch in digits):
                self.i += 4
                cp = int(digits, 16)
                if 0xD800 <= cp <= 0xDFFF:
                    raise _Unsupported("a surrogate escape")
                return ((cp, cp),)
            raise _Unsupported("a malformed or braced \\u escape")
        if c == "b" and in_class:
            return ((8, 8),)
        if c.isalnum():
            raise _Unsupported(f"the escape \\{c}")
        return ((ord(c), ord(c)),)

    def char_class(self) -> tuple[tuple[int, int], ...]:
        negated = self.peek() == "^"
        if negated:
            self.take()
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            c = self.peek()
            if c is None:
                raise _Unsupported("an unclosed character class")
            if c == "]" and not first:
                self.take()
                break
            first = False
            lo_set = self._class_atom(negated)
            if self.peek() == "-" and self.text[self.i + 1 : self.i + 2] not in ("]", ""):
                self.take()
                hi_set = self._class_atom(negated)
                if (
                    len(lo_set) != 1
                    or len(hi_set) != 1
                    or lo_set[0][0] != lo_set[0][1]
                    or hi_set[0][0] != hi_set[0][1]
                ):
                    raise _Unsupported("a class range between character sets")
                if lo_set[0][0] > hi_set[0][0]:
                    raise _Unsupported("a class range out of order")
                ranges.append((lo_set[0][0], hi_set[0][0]))
            else:
                ranges.extend(lo_set)
        if negated:
            return subtract(ALL, ranges)
        return normalize(ranges)

    def _class_atom(self, negated: bool) -> tuple[tuple[int, int], ...]:
        c = self.take()
        if c == "\\":
            return self.escape(in_class=True, negated=negated)
        if c == "[" and self.peek() in (":", "=", "."):
            raise _Unsupported("POSIX class syntax")
        return ((ord(c), ord(c)),)


def parse_pattern(pattern: str, repetition_limit: int, wide: bool = False) -> tuple:
    """The regex AST of a whole pattern, with its top-level anchors resolved (see module doc).

    `wide` reads the pattern as the *union* of the ECMA-262 and Python readings instead of their
    intersection: what a complement (`not`, a key matching no pattern) must remove."""
    parser = _Parser(pattern, repetition_limit, wide)
    alts = parser.alternatives(0)
    if parser.i != len(pattern):
        raise _Unsupported("an unmatched ')'")
    anchored: list[tuple] = []
    for _, items in alts:
        items = list(items)
        bol = bool(items) and items[0] == ("bol",)
        if bol:
            items = items[1:]
        eol = bool(items) and items[-1] == ("eol",)
        if eol:
            items = items[:-1]
        if any(_has_anchor(item) for item in items):
            raise _Unsupported("an anchor inside the pattern")
        if not bol:
            items.insert(0, ("any_string",))
        if not eol:
            items.append(("any_string",))
        elif wide:  # Python's `$` also matches before a final line feed
            items.append(("rep", ("chars", ((10, 10),)), 0, 1))
        anchored.append(("seq", items))
    return ("alt", anchored)


def _has_anchor(node: tuple) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if n[0] in ("bol", "eol"):
            return True
        if n[0] in ("seq", "alt"):
            stack.extend(n[1])
        elif n[0] == "rep":
            stack.append(n[1])
    return False


def length_range(node: tuple) -> tuple[int, int | None]:
    """Fewest and most characters a regex AST matches (None: unbounded)."""
    kind = node[0]
    if kind == "chars":
        return (1, 1) if node[1] else (0, 0)
    if kind == "any_string":
        return (0, None)
    if kind in ("bol", "eol"):  # an anchor matches no character
        return (0, 0)
    if kind == "rep":
        lo, hi = length_range(node[1])
        return lo * node[2], (None if hi is None or node[3] is None else hi * node[3])
    parts = [length_range(n) for n in node[1]]
    if kind == "seq":
        his = [h for _, h in parts]
        return sum(lo for lo, _ in parts), (None if None in his else sum(his))  # type: ignore[arg-type]
    if not parts:
        return 0, 0
    his = [h for _, h in parts]
    return min(lo for lo, _ in parts), (None if None in his else max(his))  # type: ignore[type-var]


def _unit_of(b: Builder, ranges: tuple[tuple[int, int], ...]) -> int | None:
    """One character of `ranges`, written canonically; None if the set is empty."""
    if not ranges:
        return None
    raw = subtract(ranges, ((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C)))
    options = [b.cls(raw)] if raw else []
    for special in list(range(0x20)) + [0x22, 0x5C]:
        if any(lo <= special <= hi for lo, hi in ranges):
            options.append(b.lit(canonical_char(chr(special))))
    return b.alt(*options) if options else None


def emit(b: Builder, node: tuple, depth: int = 0) -> int | None:
    """Builder nodes for a regex AST (None: the empty language)."""
    kind = node[0]
    if kind == "chars":
        return _unit_of(b, node[1])
    if kind == "any_string":
        unit = _unit_of(b, ALL)
        assert unit is not None
        return b.rep(unit, 0, None)
    if kind == "rep":
        inner = emit(b, node[1], depth + 1)
        if inner is None:
            return b.empty() if node[2] == 0 else None
        return b.rep(inner, node[2], node[3])
    parts = [emit(b, n, depth + 1) for n in node[1]]
    if kind == "seq":
        if any(p is None for p in parts):
            return None
        return b.seq(*parts) if parts else b.empty()  # type: ignore[arg-type]
    kept = [p for p in parts if p is not None]
    return b.alt(*kept) if kept else None


def pattern_string(
    b: Builder,
    pattern: str,
    pointer: str,
    repetition_limit: int,
    min_length: int = 0,
    max_length: int | None = None,
    *,
    wide: bool = False,
) -> int | None:
    """A quoted canonical string matching `pattern` and the length bounds.

    A pattern that is one repeated class takes the bounds into its repetition; any other is
    intersected with the strings of the allowed length (an automata product). `wide` reads the
    pattern as the union of the engines' readings (`parse_pattern`)."""
    try:
        tree = parse_pattern(pattern, repetition_limit, wide)
    except _Unsupported as exc:
        raise TrgcError(
            "E_UNSUPPORTED_KEYWORD",
            f"pattern {pattern!r} uses {exc} (outside the trj-1 regex subset)",
            pointer=pointer,
            details={"keyword": "pattern"},
        ) from None
    lo, hi = length_range(tree)
    if min_length > 0 or max_length is not None:
        single = _single_class_repeat(tree)
        if single is not None:
            ranges, r_lo, r_hi = single
            new_lo = max(r_lo, min_length)
            new_hi = (
                max_length
                if r_hi is None
                else (r_hi if max_length is None else min(r_hi, max_length))
            )
            if new_hi is not None and new_lo > new_hi:
                return None
            check_limit("repetition", new_lo, repetition_limit, "minLength")
            if new_hi is not None:
                check_limit("repetition", new_hi, repetition_limit, "maxLength")
            unit = _unit_of(b, ranges)
            if unit is None:
                return b.lit('""') if new_lo == 0 else None
            bounded = new_lo > 0 or new_hi is not None
            return b.seq(b.lit('"'), b.rep(unit, new_lo, new_hi, counted=bounded), b.lit('"'))
        if lo < min_length or (max_length is not None and (hi is None or hi > max_length)):
            body = emit(b, tree)
            if body is None:
                return None
            check_limit("repetition", min_length, repetition_limit, "minLength")
            if max_length is not None:
                check_limit("repetition", max_length, repetition_limit, "maxLength")
            return b.and_(
                b.seq(b.lit('"'), body, b.lit('"')),
                string(b, min_length, max_length),
                origin=f"{pointer} (pattern with minLength/maxLength)",
            )
    body = emit(b, tree)
    if body is None:
        return None
    return b.seq(b.lit('"'), body, b.lit('"'))


def _single_class_repeat(tree: tuple) -> tuple[tuple[tuple[int, int], ...], int, int | None] | None:
    """`^C{lo,hi}$` (also `^C*$`, `^C+$`, `^C$`): the class and the bounds."""
    if tree[0] != "alt" or len(tree[1]) != 1:
        return None
    items = tree[1][0][1]
    if len(items) != 1:
        return None
    item = items[0]
    if item[0] == "chars":
        return item[1], 1, 1
    if item[0] == "rep" and item[1][0] == "chars":
        return item[1][1], item[2], item[3]
    if item[0] == "rep" and item[1][0] == "alt" and len(item[1][1]) == 1:
        inner = item[1][1][0]
        if inner[0] == "seq" and len(inner[1]) == 1 and inner[1][0][0] == "chars":
            return inner[1][0][1], item[2], item[3]
    return None


def matches(pattern: str, text: str, repetition_limit: int, *, wide: bool) -> bool:
    """Whether `text` matches `pattern` in its narrow (both engines agree it matches) or wide
    (some engine may say it matches) reading; used for member names known in advance."""
    try:
        tree = parse_pattern(pattern, repetition_limit, wide)
    except _Unsupported as exc:
        raise TrgcError(
            "E_UNSUPPORTED_KEYWORD",
            f"pattern {pattern!r} uses {exc} (outside the trj-1 regex subset)",
            details={"keyword": "pattern"},
        ) from None
    return len(text) in _ends(tree, {0}, text)


def _ends(node: tuple, starts: set[int], text: str) -> set[int]:
    """The positions a match of `node` can end at, from any of `starts` (a set simulation)."""
    kind = node[0]
    n = len(text)
    if kind == "chars":
        ranges = node[1]
        return {
            i + 1 for i in starts if i < n and any(lo <= ord(text[i]) <= hi for lo, hi in ranges)
        }
    if kind == "any_string":
        return set(range(min(starts), n + 1)) if starts else set()
    if kind == "seq":
        current = starts
        for item in node[1]:
            current = _ends(item, current, text)
            if not current:
                break
        return current
    if kind == "alt":
        out: set[int] = set()
        for item in node[1]:
            out |= _ends(item, starts, text)
        return out
    item, lo, hi = node[1], node[2], node[3]
    result = set(starts) if lo == 0 else set()
    current = set(starts)
    seen: set[int] = set(current)
    k = 0
    while current and (hi is None or k < hi):
        k += 1
        current = _ends(item, current, text)
        if k >= lo:
            result |= current
        if hi is None:
            current = current - seen if k >= lo else current
            seen |= current
        if k > n + lo:
            break
    return result
