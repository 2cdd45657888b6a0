"""The trg-1 parser: checked source bytes to the arena AST of `trgc.grammar.ast`.

Input is checked (size, UTF-8, NUL) before anything proportional to it is allocated. The
expression parser keeps an explicit stack of open parentheses, so nesting is bounded by the
`nesting` limit and never by Python's recursion limit. Errors inside a rule or directive are
collected (up to `MAX_ERRORS`) and the parser resumes after the next `;` (or line, for
directives); the first error is raised with every collected error in `details["errors"]`.
Limit errors are raised at once. The language is documented in docs/trg-1.md.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from trgc.errors import Span, TrgcError
from trgc.grammar.ast import Grammar, Kind, Rule
from trgc.grammar.lexer import CLASS, DIRECTIVE, EOF, IDENT, NUMBER, PUNCT, STRING, Lexer, Token
from trgc.limits import DEFAULT_LIMITS, Limits

MAX_ERRORS = 100
RESERVED_NAMES: frozenset[str] = frozenset({"special"})
DIRECTIVES = ("trg", "start", "max_depth")
_POSTFIX = ("?", "*", "+", "{")
# Longest digit string converted with int(); longer ones are over every limit anyway.
_MAX_DIGITS = 18


def parse_grammar(
    text: str | bytes, *, limits: Limits = DEFAULT_LIMITS, source: str | None = None
) -> Grammar:
    """Parse a trg-1 source into a `Grammar` (names are resolved later by `analyze`).

    `start` is the `%start` rule or else the first rule; `max_depth` is the `%max_depth`
    value or None (the compiler's default applies). Raises `TrgcError` on any problem.
    """
    data, decoded = _checked_source(text, limits, source)
    grammar = Grammar(source_kind="trg", source_sha256=hashlib.sha256(data).hexdigest())
    _Parser(decoded, len(data) == len(decoded), grammar, limits, source).run()
    return grammar


def _checked_source(text: str | bytes, limits: Limits, source: str | None) -> tuple[bytes, str]:
    """Size, UTF-8 and NUL checks in that order; returns (source bytes, decoded text)."""

    def too_big(size: int) -> TrgcError:
        return TrgcError(
            "E_LIMIT_INPUT_BYTES",
            f"grammar source: {size:,} bytes exceeds the input_bytes limit of {limits.input_bytes:,}",
            hint="raise it with --limit input_bytes=N if this is intended",
            source=source,
        )

    if isinstance(text, str):
        if len(text) > limits.input_bytes:  # a str never has fewer UTF-8 bytes than characters
            raise too_big(len(text))
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as exc:
            offset = len(text[: exc.start].encode("utf-8"))
            raise _position_error(
                "E_INVALID_UTF8",
                f"the source contains the lone surrogate U+{ord(text[exc.start]):04X}",
                text.encode("utf-8", "surrogatepass"),
                offset,
                source,
            ) from None
    elif isinstance(text, (bytes, bytearray, memoryview)):
        if len(text) > limits.input_bytes:
            raise too_big(len(text))
        data = bytes(text)
    else:
        raise TrgcError(
            "E_USAGE", f"a grammar source must be str or bytes, not {type(text).__name__}"
        )
    if len(data) > limits.input_bytes:
        raise too_big(len(data))
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _position_error(
            "E_INVALID_UTF8",
            f"invalid UTF-8 at byte {exc.start} (0x{data[exc.start]:02X}: {exc.reason})",
            data,
            exc.start,
            source,
            "save the grammar as UTF-8",
        ) from None
    nul = data.find(b"\0")
    if nul >= 0:
        raise _position_error(
            "E_NUL_BYTE",
            f"NUL byte at byte {nul}",
            data,
            nul,
            source,
            "write \\x00 inside a literal or class instead",
        )
    return data, decoded


def _position_error(
    code: str, message: str, data: bytes, offset: int, source: str | None, hint: str | None = None
) -> TrgcError:
    """An error at a byte offset, with line and column counted over the valid prefix."""
    line = data.count(b"\n", 0, offset) + 1
    line_start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", "replace")) + 1
    return TrgcError(code, message, span=Span(line, column, offset), hint=hint, source=source)


@dataclass
class _Frame:
    """An open parenthesis (or the rule body): finished alternatives and the current sequence."""

    open: Token | None
    alts: list[tuple[int, int, int]] = field(default_factory=list)  # (node, line, column)
    items: list[tuple[int, int, int]] = field(default_factory=list)


class _Parser:
    def __init__(
        self, text: str, ascii_only: bool, grammar: Grammar, limits: Limits, source: str | None
    ) -> None:
        self.lexer = Lexer(text, ascii_only=ascii_only, source=source)
        self.grammar = grammar
        self.limits = limits
        self.source = source
        self.tok: Token | None = None
        self.errors: list[TrgcError] = []
        self.seen: dict[str, Token] = {}
        self.start_arg: Token | None = None

    # -- helpers --------------------------------------------------------------------------

    def advance(self) -> None:
        self.tok = None  # stays None if the lexer raises: the failing token was never read
        self.tok = self.lexer.next()

    def error(self, code: str, message: str, tok: Token, hint: str | None = None) -> TrgcError:
        return TrgcError(
            code,
            message,
            span=Span(tok.line, tok.column, self.lexer.offset(tok.index)),
            hint=hint,
            source=self.source,
        )

    def is_punct(self, text: str) -> bool:
        return self.tok is not None and self.tok.kind == PUNCT and self.tok.text == text

    def expect_punct(self, text: str, context: str, hint: str | None = None) -> Token:
        tok = self.tok
        if not self.is_punct(text):
            raise self.error(
                "E_SYNTAX", f"expected '{text}' {context}, found {tok.describe()}", tok, hint
            )
        self.advance()
        return tok

    def number(self, tok: Token, limit_name: str, limit: int, what: str) -> int:
        """The value of a NUMBER token, raising `E_LIMIT_<limit_name>` above `limit`."""
        if len(tok.text) > _MAX_DIGITS or int(tok.text) > limit:
            shown = tok.text if len(tok.text) <= 24 else tok.text[:20] + "..."
            raise self.error(
                f"E_LIMIT_{limit_name.upper()}",
                f"{what} {shown} exceeds the {limit_name} limit of {limit:,}",
                tok,
                f"raise it with --limit {limit_name}=N if this is intended",
            )
        return int(tok.text)

    # -- top level ------------------------------------------------------------------------

    def run(self) -> None:
        self.advance()
        self.header()
        while True:
            directive_line = None
            try:
                if self.tok is None:
                    self.advance()
                tok = self.tok
                if tok.kind == EOF:
                    break
                if tok.kind == DIRECTIVE:
                    directive_line = tok.line
                    self.directive()
                elif tok.kind == IDENT:
                    self.rule()
                else:
                    raise self.error(
                        "E_SYNTAX",
                        f"expected a rule or a directive, found {tok.describe()}",
                        tok,
                        "rules are written name ::= expression ;",
                    )
            except TrgcError as err:
                if err.code.startswith("E_LIMIT_"):
                    raise
                self.errors.append(err)
                if len(self.errors) >= MAX_ERRORS:
                    break
                self.recover(directive_line)
        if self.errors:
            first = self.errors[0]
            raise TrgcError(
                first.code,
                first.message,
                span=first.span,
                hint=first.hint,
                source=self.source,
                details={"errors": [e.to_dict() for e in self.errors]},
            )
        if not self.grammar.rules:
            raise self.error(
                "E_EMPTY_GRAMMAR",
                "the grammar defines no rule",
                self.tok,
                "add a rule: name ::= ... ;",
            )
        if self.grammar.start is None:
            self.grammar.start = self.grammar.rules[0].name
        elif all(rule.name != self.grammar.start for rule in self.grammar.rules):
            raise self.error(
                "E_UNDEFINED_START",
                f"%start names {self.grammar.start!r}, which no rule defines",
                self.start_arg,
                "define the rule or correct the name",
            )

    def recover(self, directive_line: int | None) -> None:
        """Skip to where the next rule or directive probably starts, to collect more errors.

        After a directive error: the next line. After a rule error: past the next ';', or a
        name or directive at column 1 of a later line (where rules conventionally start).
        """
        error_line = self.lexer.line
        while True:
            if self.tok is None:
                try:
                    self.advance()
                except TrgcError:
                    self.lexer.skip_line()
                    continue
            tok = self.tok
            if tok.kind == EOF:
                return
            if directive_line is not None:
                if tok.line != directive_line:
                    return
                self.tok = None
                continue
            if tok.column == 1 and tok.line > error_line and tok.kind in (IDENT, DIRECTIVE):
                return
            if tok.kind == PUNCT and tok.text == ";":
                self.tok = None
                return
            self.tok = None

    def header(self) -> None:
        tok = self.tok
        if tok.kind != DIRECTIVE or tok.text != "trg":
            raise self.error(
                "E_TRG_HEADER",
                f"a trg-1 source must start with %trg 1, found {tok.describe()}",
                tok,
                "put %trg 1 on the first line (comments and blank lines may precede it)",
            )
        self.seen["trg"] = tok
        self.advance()
        version = self.tok
        if version.line != tok.line or version.kind == EOF:
            raise self.error(
                "E_TRG_VERSION", "%trg needs a language version on its line", tok, "write %trg 1"
            )
        if version.kind != NUMBER or version.text != "1":
            raise self.error(
                "E_TRG_VERSION",
                f"unsupported trg language version {version.text!r}",
                version,
                "this compiler reads %trg 1",
            )
        self.advance()
        self.end_of_directive(tok)

    def directive(self) -> None:
        tok = self.tok
        name = tok.text
        if name not in DIRECTIVES:
            raise self.error(
                "E_UNKNOWN_DIRECTIVE",
                f"unknown directive %{name}",
                tok,
                "trg-1 directives: " + ", ".join("%" + d for d in DIRECTIVES),
            )
        if name in self.seen:
            first = self.seen[name]
            raise self.error(
                "E_DUPLICATE_DIRECTIVE",
                f"%{name} appears twice (first at {first.line}:{first.column})",
                tok,
                "keep one of them",
            )
        self.seen[name] = tok
        self.advance()
        arg = self.tok
        if arg.line != tok.line or arg.kind == EOF:
            raise self.error(
                "E_DIRECTIVE_ARGUMENT", f"%{name} expects an argument on its line", tok
            )
        if name == "start":
            if arg.kind != IDENT:
                raise self.error(
                    "E_DIRECTIVE_ARGUMENT",
                    f"%start expects a rule name, found {arg.describe()}",
                    arg,
                )
            self.grammar.start = arg.text
            self.start_arg = arg
        elif name == "max_depth":
            if arg.kind != NUMBER:
                raise self.error(
                    "E_DIRECTIVE_ARGUMENT",
                    f"%max_depth expects a number, found {arg.describe()}",
                    arg,
                )
            value = self.number(arg, "max_depth", self.limits.max_depth, "%max_depth")
            if value < 1:
                raise self.error(
                    "E_DIRECTIVE_ARGUMENT",
                    "%max_depth must be at least 1",
                    arg,
                    "the start rule itself takes one frame",
                )
            self.grammar.max_depth = value
        else:  # %trg after the header
            raise self.error(
                "E_DUPLICATE_DIRECTIVE", "%trg appears twice", tok, "keep the first line only"
            )
        self.advance()
        self.end_of_directive(tok)

    def end_of_directive(self, directive: Token) -> None:
        """A directive and its argument fill their line (comments aside)."""
        tok = self.tok
        if tok.kind != EOF and tok.line == directive.line:
            raise self.error(
                "E_SYNTAX",
                f"unexpected {tok.describe()} after %{directive.text}",
                tok,
                "a directive takes one argument and ends its line",
            )

    # -- rules and expressions ------------------------------------------------------------

    def rule(self) -> None:
        name = self.tok
        self.advance()
        self.expect_punct(
            "::=", f"after rule name {name.text!r}", "rules are written name ::= expression ;"
        )
        body = self.expression()
        self.grammar.rules.append(Rule(name.text, body, name.line, name.column))

    def expression(self) -> int:
        """Parse up to and including the rule's ';' with an explicit stack of open groups."""
        grammar = self.grammar
        frames = [_Frame(None)]
        while True:
            tok = self.tok
            frame = frames[-1]
            kind = tok.kind
            if kind == STRING:
                self.advance()
                if tok.value == "":
                    node = grammar.add(Kind.EMPTY, tok.line, tok.column)
                else:
                    node = grammar.add(
                        Kind.LITERAL, tok.line, tok.column, payload=tok.value.encode("utf-8")
                    )
                frame.items.append(self.postfix(node, tok))
            elif kind == CLASS:
                self.advance()
                node = grammar.add(Kind.CLASS, tok.line, tok.column, payload=tok.value)
                frame.items.append(self.postfix(node, tok))
            elif kind == IDENT:
                self.advance()
                if tok.text == "special":
                    node = self.special(tok)
                else:
                    node = grammar.add(Kind.REF, tok.line, tok.column, payload=tok.text)
                frame.items.append(self.postfix(node, tok))
            elif kind == PUNCT and tok.text == "(":
                if len(frames) > self.limits.nesting:
                    raise self.error(
                        "E_LIMIT_NESTING",
                        f"parentheses nest deeper than the nesting limit of {self.limits.nesting:,}",
                        tok,
                        "flatten the expression or raise it with --limit nesting=N",
                    )
                frames.append(_Frame(tok))
                self.advance()
            elif kind == PUNCT and tok.text == "|":
                self.close_sequence(frame, tok)
                self.advance()
            elif kind == PUNCT and tok.text == ")":
                if frame.open is None:
                    raise self.error("E_SYNTAX", "')' without a matching '('", tok)
                node = self.close_group(frame, tok)
                frames.pop()
                self.advance()
                frames[-1].items.append(self.postfix(node, frame.open))
            elif kind == PUNCT and tok.text == ";":
                if frame.open is not None:
                    opened = frame.open
                    raise self.error(
                        "E_SYNTAX",
                        f"'(' at {opened.line}:{opened.column} is not closed before ';'",
                        tok,
                    )
                node = self.close_group(frame, tok)
                self.advance()
                return node
            else:
                hint = None
                if kind == PUNCT and tok.text in _POSTFIX:
                    hint = (
                        f"'{tok.text}' must follow an item; to repeat a repetition, parenthesize it"
                    )
                elif kind in (EOF, DIRECTIVE) or (kind == PUNCT and tok.text == "::="):
                    hint = "is a ';' missing at the end of the previous rule?"
                raise self.error(
                    "E_SYNTAX", f"unexpected {tok.describe()} in an expression", tok, hint
                )

    def close_sequence(self, frame: _Frame, tok: Token) -> None:
        """End the current alternative of `frame` at token `tok` ('|', ')' or ';')."""
        if not frame.items:
            raise self.error(
                "E_SYNTAX",
                f"empty alternative before {tok.text!r}",
                tok,
                'write "" for the empty string',
            )
        items = frame.items
        if len(items) == 1:
            frame.alts.append(items[0])
        else:
            _, line, column = items[0]
            node = self.grammar.add(Kind.SEQ, line, column, tuple(item[0] for item in items))
            frame.alts.append((node, line, column))
        frame.items = []

    def close_group(self, frame: _Frame, tok: Token) -> int:
        """The node of a finished group or rule body: one item, a SEQ or an ALT."""
        self.close_sequence(frame, tok)
        alts = frame.alts
        if len(alts) == 1:
            return alts[0][0]
        _, line, column = alts[0]
        return self.grammar.add(Kind.ALT, line, column, tuple(alt[0] for alt in alts))

    def special(self, keyword: Token) -> int:
        if not self.is_punct("("):
            raise self.error(
                "E_RESERVED_NAME",
                "'special' is reserved for special tokens and cannot name a rule",
                keyword,
                'write special("<name>") to match a special token',
            )
        self.advance()
        name = self.tok
        if name.kind != STRING:
            raise self.error(
                "E_SYNTAX", f"special( expects a string literal, found {name.describe()}", name
            )
        if name.value == "":
            raise self.error(
                "E_EMPTY_SPECIAL",
                'special("") names no special token',
                name,
                'name the token as the tokenizer spells it, e.g. special("<|im_end|>")',
            )
        self.advance()
        self.expect_punct(")", "after the special token's name")
        return self.grammar.add(Kind.SPECIAL, keyword.line, keyword.column, payload=name.value)

    def postfix(self, item: int, start: Token) -> tuple[int, int, int]:
        """Apply at most one repetition operator to `item`, which starts at token `start`.

        Returns (node, line, column) with the item's start position (a group starts at its
        '('); a REPEAT node is placed there too.
        """
        tok = self.tok
        if tok is None or tok.kind != PUNCT or tok.text not in _POSTFIX:
            return item, start.line, start.column
        self.advance()
        if tok.text == "?":
            bounds: tuple[int, int | None] = (0, 1)
        elif tok.text == "*":
            bounds = (0, None)
        elif tok.text == "+":
            bounds = (1, None)
        else:
            bounds = self.bounds(tok)
        node = self.grammar.add(Kind.REPEAT, start.line, start.column, (item,), bounds)
        after = self.tok
        if after.kind == PUNCT and after.text in _POSTFIX:
            raise self.error(
                "E_SYNTAX",
                f"'{after.text}' cannot follow the repetition '{tok.text}'",
                after,
                "parenthesize the repeated item: (x*)? - and note trg-1 has no lazy quantifiers",
            )
        return node, start.line, start.column

    def bounds(self, brace: Token) -> tuple[int, int | None]:
        """Parse `{n}`, `{m,n}` or `{m,}` after the '{' token."""
        what = "repetition bound"
        low_tok = self.tok
        if low_tok.kind != NUMBER:
            raise self.error(
                "E_SYNTAX", f"expected a number after '{{', found {low_tok.describe()}", low_tok
            )
        low = self.number(low_tok, "repetition", self.limits.repetition, what)
        self.advance()
        if self.is_punct("}"):
            self.advance()
            return low, low
        self.expect_punct(",", "or '}' in a repetition {m,n}")
        if self.is_punct("}"):
            self.advance()
            return low, None
        high_tok = self.tok
        if high_tok.kind != NUMBER:
            raise self.error(
                "E_SYNTAX",
                f"expected a number or '}}' after ',', found {high_tok.describe()}",
                high_tok,
            )
        high = self.number(high_tok, "repetition", self.limits.repetition, what)
        self.advance()
        self.expect_punct("}", "to close the repetition")
        if low > high:
            raise self.error(
                "E_REPETITION_REVERSED",
                f"repetition {{{low},{high}}} has its minimum above its maximum",
                brace,
                "write {min,max} with min <= max",
            )
        return low, high
