"""How a lowered schema writes the whitespace between JSON tokens: `--whitespace MODE`.

* `compact`: `,` and `:` with no whitespace anywhere (json.dumps with separators=(",", ":"));
* `pretty`: `, ` and `: ` as json.dumps writes them by default;
* `flexible`: JSON whitespace (space, tab, line feed, carriage return) as users write it, but
  bounded: at most `max_whitespace` characters on each side of every structural character
  (`{ } [ ] , :`) and before and after the whole value, so that a model cannot run away in
  whitespace. `{ }` may thus hold up to twice the bound, one run after `{` and one before `}`.

`Layout` builds the separator and bracket nodes for one lowering; constants (enum and const
values) are rendered through it too, so that they follow the same discipline as the values
the schema constrains.
"""

from __future__ import annotations

import json

from trgc.errors import TrgcError
from trgc.grammar.schema.nodes import Builder

MODES = ("compact", "pretty", "flexible")
JSON_WHITESPACE = " \t\n\r"
DEFAULT_MAX_WHITESPACE = 8
SEPARATORS: dict[str, tuple[str, str]] = {"compact": (",", ":"), "pretty": (", ", ": ")}
_STRUCTURAL = frozenset("{}[],:")


def check_mode(mode: object, max_whitespace: int) -> None:
    if mode not in MODES:
        raise TrgcError(
            "E_USAGE", f"whitespace must be 'compact', 'pretty' or 'flexible', got {mode!r}"
        )
    if (
        not isinstance(max_whitespace, int)
        or isinstance(max_whitespace, bool)
        or max_whitespace < 0
    ):
        raise TrgcError(
            "E_USAGE", f"max_whitespace must be a non-negative integer, got {max_whitespace!r}"
        )


def whitespace_mode(whitespace: str | None, separators: str | None) -> str:
    """The mode from the `whitespace` option or its older name `separators` (compact or
    pretty); pretty (as json.dumps and every chat template write JSON) when neither is given,
    E_USAGE when both disagree."""
    if separators is not None and separators not in SEPARATORS:
        raise TrgcError("E_USAGE", f"separators must be 'compact' or 'pretty', got {separators!r}")
    if whitespace is not None and separators is not None and whitespace != separators:
        raise TrgcError(
            "E_USAGE",
            f"whitespace {whitespace!r} and separators {separators!r} disagree",
            hint="separators is the older name of whitespace: give one of them",
        )
    return whitespace or separators or "pretty"


class Layout:
    """Separator, bracket and constant nodes of one whitespace mode."""

    __slots__ = ("b", "mode", "max_whitespace", "item_sep", "key_sep")

    def __init__(self, b: Builder, mode: str, max_whitespace: int = DEFAULT_MAX_WHITESPACE) -> None:
        check_mode(mode, max_whitespace)
        self.b = b
        self.mode = mode
        self.max_whitespace = max_whitespace
        # the text form, for the fixed modes (flexible writes none in its canonical text)
        self.item_sep, self.key_sep = SEPARATORS.get(mode, (",", ":"))

    @property
    def flexible(self) -> bool:
        return self.mode == "flexible"

    def ws(self) -> int:
        """A run of at most `max_whitespace` JSON whitespace characters (flexible mode only)."""
        b = self.b
        return b.rep(b.chars(JSON_WHITESPACE), 0, self.max_whitespace)

    def token(self, text: str) -> int:
        """One structural character with the whitespace this mode admits around it."""
        b = self.b
        if not self.flexible:
            if text == ",":
                return b.lit(self.item_sep)
            if text == ":":
                return b.lit(self.key_sep)
            return b.lit(text)
        if text in "{[":
            return b.seq(b.lit(text), self.ws())
        if text in "}]":
            return b.seq(self.ws(), b.lit(text))
        return b.seq(self.ws(), b.lit(text), self.ws())

    def comma(self) -> int:
        return self.token(",")

    def colon(self) -> int:
        return self.token(":")

    def empty(self, pair: str) -> int:
        """`{}` or `[]`: an empty container (flexible: one run of whitespace inside)."""
        b = self.b
        if not self.flexible:
            return b.lit(pair)
        return b.seq(b.lit(pair[0]), self.ws(), b.lit(pair[1]))

    def key(self, quoted: str) -> int:
        """A canonical quoted member name followed by the name separator."""
        if not self.flexible:
            return self.b.lit(quoted + self.key_sep)
        return self.b.seq(self.b.lit(quoted), self.colon())

    def constant(self, compact: str) -> int:
        """A JSON text given in compact form (json.dumps with separators (",", ":")), written in
        this mode: the fixed modes re-space it, flexible admits whitespace around its
        structural characters."""
        b = self.b
        pieces = _tokens(compact)
        if not self.flexible:
            out = []
            for piece in pieces:
                out.append(
                    self.item_sep if piece == "," else self.key_sep if piece == ":" else piece
                )
            return b.lit("".join(out))
        nodes: list[int] = []
        text = ""
        for i, piece in enumerate(pieces):
            if piece not in _STRUCTURAL:
                text += piece
                continue
            if text:
                nodes.append(b.lit(text))
                text = ""
            nxt = pieces[i + 1] if i + 1 < len(pieces) else ""
            if piece in "{[" and nxt == {"{": "}", "[": "]"}[piece]:
                nodes.append(b.lit(piece))  # the close bracket supplies the one run inside
                nodes.append(self.ws())
                continue
            if piece in "}]" and i > 0 and pieces[i - 1] == {"}": "{", "]": "["}[piece]:
                nodes.append(b.lit(piece))
                continue
            nodes.append(self.token(piece))
        if text:
            nodes.append(b.lit(text))
        return b.seq(*nodes)

    def document(self, body: int) -> int:
        """The whole value, with the whitespace this mode admits before and after it."""
        if not self.flexible:
            return body
        return self.b.seq(self.ws(), body, self.ws())


def _tokens(compact: str) -> list[str]:
    """Split a compact JSON text into structural characters and the texts between them
    (strings are kept whole, so a `,` inside a string is not structural)."""
    out: list[str] = []
    text: list[str] = []
    i = 0
    n = len(compact)
    while i < n:
        c = compact[i]
        if c == '"':
            j = i + 1
            while compact[j] != '"':
                j += 2 if compact[j] == "\\" else 1
            text.append(compact[i : j + 1])
            i = j + 1
            continue
        if c in _STRUCTURAL:
            if text:
                out.append("".join(text))
                text = []
            out.append(c)
        else:
            text.append(c)
        i += 1
    if text:
        out.append("".join(text))
    return out


def compact_text(value: object) -> str:
    """The compact canonical JSON text of a constant (json.dumps, ensure_ascii=False)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except RecursionError:
        raise TrgcError("E_LIMIT_NESTING", "an enum or const value nests too deeply") from None


def respace(data: bytes, mode: str) -> bytes | None:
    """`data` with the whitespace between JSON tokens rewritten as `mode` writes it (compact or
    pretty); None when `data` has an unterminated string. Strings are copied byte for byte."""
    item_sep, key_sep = SEPARATORS[mode]
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        c = data[i]
        if c == 0x22:  # a string: up to the closing quote, escapes skipped
            j = i + 1
            while j < n and data[j] != 0x22:
                j += 2 if data[j] == 0x5C else 1
            if j >= n:
                return None
            out += data[i : j + 1]
            i = j + 1
            continue
        if chr(c) in JSON_WHITESPACE:
            i += 1
            continue
        out += item_sep.encode() if c == 0x2C else key_sep.encode() if c == 0x3A else bytes((c,))
        i += 1
    return bytes(out)


def written_mode(data: bytes) -> tuple[str, int]:
    """Which mode `data`'s whitespace follows (compact, pretty or flexible) and its longest
    whitespace run outside strings."""
    longest = run = 0
    in_string = escaped = False
    for c in data:
        if in_string:
            in_string = escaped or c != 0x22
            escaped = not escaped and c == 0x5C
            continue
        if c == 0x22:
            in_string = True
        if chr(c) in JSON_WHITESPACE:
            run += 1
            longest = max(longest, run)
        else:
            run = 0
    for mode in ("compact", "pretty"):
        if respace(data, mode) == data:
            return mode, longest
    return "flexible", longest
