"""The trg-1 lexer: source text to tokens, with escapes and character classes decoded.

The lexer is pull-based (`Lexer.next`) so that the parser can recover after an error and
keep collecting problems. Literals and classes never span lines, which keeps every position
computable from the current line. Columns count Unicode scalar values from 1; offsets are
byte offsets into the UTF-8 source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trgc.errors import Span, TrgcError
from trgc.grammar import charclass

# Token kinds.
IDENT = "ident"
DIRECTIVE = "directive"
NUMBER = "number"
STRING = "string"
CLASS = "class"
PUNCT = "punct"
EOF = "eof"

_SKIP_RE = re.compile(r"(?:[ \t\r\n]+|#[^\n]*)+")
# identifiers, numbers, directives and punctuation; the group name is the token kind
_TOKEN_RE = re.compile(
    r"(?P<ident>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>[0-9]+)"
    r"|%(?P<directive>[A-Za-z_][A-Za-z0-9_]*)|(?P<punct>::=|[;|()?*+{},])"
)
_PLAIN_STRING_RE = re.compile(r'[^"\\\n]+')
_HEX2_RE = re.compile(r"[0-9a-fA-F]{2}")
_UNICODE_RE = re.compile(r"\{([0-9a-fA-F]{1,6})\}")

_SIMPLE_ESCAPES = {"n": 0x0A, "t": 0x09, "r": 0x0D, "\\": 0x5C, '"': 0x22}
_CLASS_ESCAPES = {**_SIMPLE_ESCAPES, "]": 0x5D, "[": 0x5B, "-": 0x2D, "^": 0x5E}


@dataclass(frozen=True, slots=True)
class Token:
    """One token. `value` is the decoded str of a STRING and the normalised ranges of a CLASS."""

    kind: str
    text: str
    line: int
    column: int
    index: int  # character index into the source text
    value: object = None

    def describe(self) -> str:
        if self.kind == EOF:
            return "end of input"
        if self.kind == STRING:
            return "a string literal"
        if self.kind == CLASS:
            return "a character class"
        if self.kind == DIRECTIVE:
            return f"directive %{self.text}"
        return repr(self.text)


class Lexer:
    """Tokenises a decoded trg-1 source; errors are `TrgcError` with a span."""

    def __init__(self, text: str, *, ascii_only: bool, source: str | None = None) -> None:
        self.text = text
        self.source = source
        self.pos = 0
        self.line = 1
        self.line_start = 0
        self._ascii = ascii_only

    # -- positions and errors -------------------------------------------------------------

    def offset(self, index: int) -> int:
        """Byte offset of a character index (cheap for ASCII sources; only used on errors)."""
        if self._ascii:
            return index
        return len(self.text[:index].encode("utf-8"))

    def span(self, index: int) -> Span:
        """The span of a character index on the current line."""
        return Span(self.line, index - self.line_start + 1, self.offset(index))

    def error(self, code: str, message: str, index: int, hint: str | None = None) -> TrgcError:
        return TrgcError(code, message, span=self.span(index), hint=hint, source=self.source)

    def skip_line(self) -> None:
        """Error recovery: continue at the end of the current line."""
        end = self.text.find("\n", self.pos)
        self.pos = len(self.text) if end < 0 else end

    # -- tokens ---------------------------------------------------------------------------

    def next(self) -> Token:
        text = self.text
        m = _SKIP_RE.match(text, self.pos)
        if m:
            start, end = m.span()
            newlines = text.count("\n", start, end)
            if newlines:
                self.line += newlines
                self.line_start = text.rfind("\n", start, end) + 1
            self.pos = end
        i = self.pos
        line, column = self.line, i - self.line_start + 1
        if i >= len(text):
            return Token(EOF, "", line, column, i)
        c = text[i]
        if c == '"':
            value, end = self._string(i)
            self.pos = end
            return Token(STRING, text[i:end], line, column, i, value)
        if c == "[":
            value, end = self._class(i)
            self.pos = end
            return Token(CLASS, text[i:end], line, column, i, value)
        m = _TOKEN_RE.match(text, i)
        if m:
            self.pos = m.end()
            kind = m.lastgroup
            if kind == DIRECTIVE:
                return Token(DIRECTIVE, m.group(DIRECTIVE), line, column, i)
            return Token(kind, m.group(), line, column, i)
        if c == "%":
            raise self.error(
                "E_SYNTAX",
                "expected a directive name after '%'",
                i,
                "directives: %trg, %start, %max_depth",
            )
        hint = None
        if c == "\ufeff":
            hint = "remove the byte order mark; trg-1 sources are plain UTF-8"
        elif c == ":" or c == "=":
            hint = "rules are written name ::= expression ;"
        elif c == "/":
            hint = "comments start with # and run to the end of the line"
        elif c == "'":
            hint = 'string literals use double quotes: "..."'
        raise self.error("E_SYNTAX", f"unexpected character {c!r} (U+{ord(c):04X})", i, hint)

    # -- literals -------------------------------------------------------------------------

    def _string(self, start: int) -> tuple[str, int]:
        """Decode a "..." literal starting at `start`; returns (value, end index)."""
        text, n = self.text, len(self.text)
        parts: list[str] = []
        i = start + 1
        while True:
            m = _PLAIN_STRING_RE.match(text, i)
            if m:
                parts.append(m.group())
                i = m.end()
            if i >= n or text[i] == "\n":
                raise self.error(
                    "E_UNTERMINATED_LITERAL",
                    "string literal is not closed before the end of the line",
                    start,
                    'close it with "; write a line break inside a literal as \\n',
                )
            if text[i] == '"':
                return "".join(parts), i + 1
            cp, i = self._escape(i, _SIMPLE_ESCAPES, start, "E_UNTERMINATED_LITERAL")
            parts.append(chr(cp))

    def _escape(
        self, i: int, table: dict[str, int], start: int, unterminated: str
    ) -> tuple[int, int]:
        """Decode the escape whose backslash is at `i`; returns (scalar value, next index)."""
        text = self.text
        e = text[i + 1] if i + 1 < len(text) else "\n"
        if e == "\n":
            what = (
                "string literal" if unterminated == "E_UNTERMINATED_LITERAL" else "character class"
            )
            raise self.error(
                unterminated, f"{what} is not closed before the end of the line", start
            )
        if e in table:
            return table[e], i + 2
        if e == "x":
            m = _HEX2_RE.match(text, i + 2)
            if not m:
                raise self.error(
                    "E_INVALID_ESCAPE",
                    "\\x must be followed by two hex digits",
                    i,
                    "write \\x41 or \\u{41}",
                )
            value = int(m.group(), 16)
            if value > 0x7F:
                raise self.error(
                    "E_INVALID_ESCAPE",
                    f"\\x{m.group()} is not ASCII; \\xHH escapes stop at \\x7F",
                    i,
                    f"write the character or \\u{{{value:X}}} for U+{value:04X}",
                )
            return value, m.end()
        if e == "u":
            m = _UNICODE_RE.match(text, i + 2)
            if not m:
                raise self.error(
                    "E_INVALID_ESCAPE",
                    "\\u must be followed by {1 to 6 hex digits}",
                    i,
                    "write \\u{E9} for U+00E9",
                )
            value = int(m.group(1), 16)
            if value > charclass.MAX_SCALAR:
                raise self.error("E_INVALID_ESCAPE", f"\\u{{{m.group(1)}}} is above U+10FFFF", i)
            if charclass.is_surrogate(value):
                raise self.error(
                    "E_SURROGATE",
                    f"\\u{{{m.group(1)}}} is a surrogate code point, not a Unicode scalar value",
                    i,
                    "UTF-8 cannot encode surrogates; name the character itself (above U+FFFF)",
                )
            return value, m.end()
        known = " ".join("\\" + k for k in table) + " \\xHH \\u{H...}"
        raise self.error(
            "E_UNKNOWN_ESCAPE", f"unknown escape \\{e}", i, f"known escapes here: {known}"
        )

    def _class(self, start: int) -> tuple[tuple[tuple[int, int], ...], int]:
        """Decode a [...] or [^...] class at `start`; returns (normalised ranges, end index)."""
        text, n = self.text, len(self.text)
        i = start + 1
        negated = i < n and text[i] == "^"
        if negated:
            i += 1
        ranges: list[tuple[int, int]] = []
        while True:
            if i >= n or text[i] == "\n":
                raise self.error(
                    "E_UNTERMINATED_CLASS",
                    "character class is not closed before the end of the line",
                    start,
                    "close it with ]; write a literal ] inside a class as \\]",
                )
            if text[i] == "]":
                break
            item = i
            lo, i = self._class_atom(i, start)
            hi = lo
            if i + 1 < n and text[i] == "-" and text[i + 1] not in "]\n":
                hi, i = self._class_atom(i + 1, start)
                if lo > hi:
                    raise self.error(
                        "E_CLASS_RANGE_REVERSED",
                        f"class range U+{lo:04X}-U+{hi:04X} is reversed",
                        item,
                        "write the smaller end first",
                    )
            ranges.append((lo, hi))
        end = i + 1
        value = charclass.normalize(ranges)
        if negated:
            value = charclass.complement(value)
        if not value:
            raise self.error(
                "E_EMPTY_CLASS",
                f"character class {text[start:end]} matches no character",
                start,
                "a class must match at least one Unicode scalar value",
            )
        return value, end

    def _class_atom(self, i: int, start: int) -> tuple[int, int]:
        text = self.text
        if i >= len(text) or text[i] == "\n":
            raise self.error(
                "E_UNTERMINATED_CLASS",
                "character class is not closed before the end of the line",
                start,
            )
        if text[i] == "\\":
            return self._escape(i, _CLASS_ESCAPES, start, "E_UNTERMINATED_CLASS")
        return ord(text[i]), i + 1
