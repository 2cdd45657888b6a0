"""trg-1 front end: every construct's AST, every parser error code with its position, limits."""

from __future__ import annotations

import contextlib
import hashlib
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trgc.errors import TrgcError
from trgc.grammar import charclass
from trgc.grammar.ast import Grammar, Kind
from trgc.grammar.parser import parse_grammar
from trgc.limits import Limits

HEAD = "%trg 1\n"


def body(src: str) -> tuple[Grammar, int]:
    """Parse `HEAD + src` and return the grammar and the first rule's body node."""
    g = parse_grammar(HEAD + src)
    return g, g.rules[0].body


def node(src: str):
    g, b = body(src)
    return g.nodes[b]


def fails(
    src: str | bytes, code: str, line: int | None = None, column: int | None = None, **kw
) -> TrgcError:
    with pytest.raises(TrgcError) as info:
        parse_grammar(src, **kw)
    err = info.value
    assert err.code == code, (err.code, err.message)
    if line is not None:
        assert (err.span.line, err.span.column) == (line, column), err.span
    return err


# -- constructs --------------------------------------------------------------------------


def test_literal_payload_is_utf8_bytes_and_positioned():
    n = node('a ::= "h\u00e9llo" ;')
    assert (n.kind, n.payload, n.line, n.column) == (Kind.LITERAL, "héllo".encode(), 2, 7)


@pytest.mark.parametrize(
    "escape, expected",
    [
        (r"\n", b"\n"),
        (r"\t", b"\t"),
        (r"\r", b"\r"),
        (r"\\", b"\\"),
        (r"\"", b'"'),
        (r"\x41", b"A"),
        (r"\x00", b"\x00"),
        (r"\x7F", b"\x7f"),
        (r"\u{E9}", "é".encode()),
        (r"\u{1F600}", "\U0001f600".encode()),
        (r"\u{10FFFF}", "\U0010ffff".encode()),
        (r"\u{0041}", b"A"),
    ],
)
def test_literal_escapes(escape, expected):
    assert node(f'a ::= "<{escape}>" ;').payload == b"<" + expected + b">"


def test_empty_literal_is_empty_node():
    n = node('a ::= "" ;')
    assert (n.kind, n.line, n.column) == (Kind.EMPTY, 2, 7)


def test_class_ranges_are_normalised():
    n = node("a ::= [z0-9a-fb] ;")
    assert n.kind == Kind.CLASS
    assert n.payload == ((0x30, 0x39), (0x61, 0x66), (0x7A, 0x7A))
    assert (n.line, n.column) == (2, 7)


def test_class_merges_adjacent_and_overlapping():
    assert node("a ::= [a-cb-ed] ;").payload == ((0x61, 0x65),)
    assert node("a ::= [a-cd-f] ;").payload == ((0x61, 0x66),)


def test_negated_class_excludes_surrogates():
    n = node('a ::= [^"\\\\\\x00-\\x1F] ;')
    assert n.payload == ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, 0x10FFFF))


def test_class_spanning_surrogates_cuts_them_out():
    assert node(r"a ::= [\u{0}-\u{10FFFF}] ;").payload == charclass.ALL_SCALARS
    assert node(r"a ::= [\u{D7FF}-\u{E000}] ;").payload == ((0xD7FF, 0xD7FF), (0xE000, 0xE000))


@pytest.mark.parametrize(
    "text, expected",
    [
        (r"[\]]", ((0x5D, 0x5D),)),
        (r"[\-]", ((0x2D, 0x2D),)),
        (r"[\^]", ((0x5E, 0x5E),)),
        (r"[\\]", ((0x5C, 0x5C),)),
        (r"[\[]", ((0x5B, 0x5B),)),
        (r"[\n\t\r]", ((0x09, 0x0A), (0x0D, 0x0D))),
        (r"[\"]", ((0x22, 0x22),)),
        ('["]', ((0x22, 0x22),)),
        (r"[-a]", ((0x2D, 0x2D), (0x61, 0x61))),
        (r"[a-]", ((0x2D, 0x2D), (0x61, 0x61))),
        (r"[a^]", ((0x5E, 0x5E), (0x61, 0x61))),
        (r"[\x41-\x43]", ((0x41, 0x43),)),
        (r"[\u{80}-\u{10FFFF}]", ((0x80, 0xD7FF), (0xE000, 0x10FFFF))),
        ("[α-ω]", ((0x3B1, 0x3C9),)),
    ],
)
def test_class_escapes_and_edge_dashes(text, expected):
    assert node(f"a ::= {text} ;").payload == expected


def test_special_ref_and_positions():
    g, b = body('call ::= special("<tool_call>") value ;\nvalue ::= "x" ;')
    seq = g.nodes[b]
    assert seq.kind == Kind.SEQ and (seq.line, seq.column) == (2, 10)
    sp, ref = (g.nodes[i] for i in seq.children)
    assert (sp.kind, sp.payload, sp.line, sp.column) == (Kind.SPECIAL, "<tool_call>", 2, 10)
    assert (ref.kind, ref.payload, ref.line, ref.column) == (Kind.REF, "value", 2, 33)


def test_special_name_with_escape():
    assert node(r'a ::= special("<\u{7C}end\u{7C}>") ;').payload == "<|end|>"


def test_alternation_and_sequence_structure():
    g, b = body('a ::= "x" "y" | "z" ;')
    alt = g.nodes[b]
    assert alt.kind == Kind.ALT and (alt.line, alt.column) == (2, 7)
    seq, z = (g.nodes[i] for i in alt.children)
    assert seq.kind == Kind.SEQ and [g.nodes[i].payload for i in seq.children] == [b"x", b"y"]
    assert (z.kind, z.payload, z.column) == (Kind.LITERAL, b"z", 17)


def test_group_positions_start_at_paren():
    g, b = body('a ::= "w" ( "x" | "y" )* ;')
    seq = g.nodes[b]
    rep = g.nodes[seq.children[1]]
    assert (rep.kind, rep.payload, rep.line, rep.column) == (Kind.REPEAT, (0, None), 2, 11)
    inner = g.nodes[rep.children[0]]
    assert inner.kind == Kind.ALT and inner.column == 13


@pytest.mark.parametrize(
    "op, bounds",
    [
        ("?", (0, 1)),
        ("*", (0, None)),
        ("+", (1, None)),
        ("{3}", (3, 3)),
        ("{2,5}", (2, 5)),
        ("{2,}", (2, None)),
        ("{0}", (0, 0)),
        ("{ 1 , 2 }", (1, 2)),
        ("{1000}", (1000, 1000)),
    ],
)
def test_repetitions(op, bounds):
    g, b = body(f'a ::= "x"{op} ;')
    rep = g.nodes[b]
    assert (rep.kind, rep.payload, rep.line, rep.column) == (Kind.REPEAT, bounds, 2, 7)
    assert g.nodes[rep.children[0]].payload == b"x"


def test_children_precede_parents_in_the_arena():
    g = parse_grammar(HEAD + 'a ::= ("x" | b)* "y"? ;\nb ::= ("z"{2,3} | special("s"))+ ;')
    for i, n in enumerate(g.nodes):
        assert all(c < i for c in n.children)


def test_directives_start_and_max_depth():
    g = parse_grammar(
        '# lead comment\n\n%trg 1\n%start b  # comment\n%max_depth 64\na ::= b ;\nb ::= "x" ;\n'
    )
    assert g.start == "b" and g.max_depth == 64
    assert [(r.name, r.line, r.column) for r in g.rules] == [("a", 6, 1), ("b", 7, 1)]


def test_defaults_start_first_rule_and_no_max_depth():
    g = parse_grammar(HEAD + 'x ::= "1" ;\ny ::= "2" ;')
    assert g.start == "x" and g.max_depth is None and g.source_kind == "trg"


def test_source_hash_str_and_bytes_agree():
    src = HEAD + 'a ::= "é" ;'
    assert parse_grammar(src).source_sha256 == hashlib.sha256(src.encode()).hexdigest()
    assert parse_grammar(src.encode()).source_sha256 == parse_grammar(src).source_sha256


def test_comments_crlf_and_multiline_rules():
    src = '%trg 1\r\n# c\r\na ::=\r\n   "x" # tail\r\n   | "y" ;\r\n'
    g = parse_grammar(src)
    alt = g.nodes[g.rules[0].body]
    assert [(g.nodes[i].line, g.nodes[i].column) for i in alt.children] == [(4, 4), (5, 6)]


def test_columns_count_characters_offsets_count_bytes():
    err = fails(HEAD + 'a ::= "é" "\\q" ;', "E_UNKNOWN_ESCAPE", 2, 12)
    assert err.span.offset == len((HEAD + 'a ::= "é" "').encode())


def test_deep_nesting_within_limit_parses_without_recursion():
    depth = 1000
    g = parse_grammar(HEAD + "a ::= " + "(" * depth + '"x"' + ")" * depth + " ;")
    assert g.nodes[g.rules[0].body].payload == b"x"


def test_shipped_design_example_parses():
    src = (
        "%trg 1\n%start value\n%max_depth 32\n"
        'value ::= object | array | string | number | "true" | "false" | "null" ;\n'
        'object ::= "{" ( member ( "," member )* )? "}" ;\nmember ::= string ":" value ;\n'
        'array ::= "[" ( value ( "," value )* )? "]" ;\n'
        'string ::= "\\"" ( [^"\\\\\\x00-\\x1F] | "\\\\" ( ["\\\\/bfnrt] | "u" hex{4} ) )* "\\"" ;\n'
        "hex ::= [0-9a-fA-F] ;\n"
        'number ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ;\n'
        'call ::= special("<tool_call>") value special("</tool_call>") ;\n'
    )
    g = parse_grammar(src)
    assert [r.name for r in g.rules] == [
        "value",
        "object",
        "member",
        "array",
        "string",
        "hex",
        "number",
        "call",
    ]


# -- input checks ------------------------------------------------------------------------


def test_invalid_utf8_reports_byte_offset():
    err = fails(HEAD.encode() + b'a ::= "\xff" ;', "E_INVALID_UTF8", 2, 8)
    assert err.span.offset == len(HEAD) + 7


def test_lone_surrogate_in_str_is_invalid_utf8():
    fails(HEAD + 'a ::= "\ud800" ;', "E_INVALID_UTF8", 2, 8)


def test_nul_byte():
    err = fails(HEAD + 'a ::= "\x00" ;', "E_NUL_BYTE", 2, 8)
    assert err.span.offset == len(HEAD) + 7


def test_input_over_size_limit_checked_first():
    limits = Limits(input_bytes=100)
    fails(b"\xff" * 101, "E_LIMIT_INPUT_BYTES", limits=limits)
    fails("x" * 101, "E_LIMIT_INPUT_BYTES", limits=limits)
    fails("é" * 60, "E_LIMIT_INPUT_BYTES", limits=limits)  # 60 characters, 120 bytes
    assert parse_grammar(HEAD + 'a ::= "x" ;', limits=limits).rules


def test_non_text_input_is_usage_error():
    fails(123, "E_USAGE")


# -- lexical errors ----------------------------------------------------------------------


def test_unterminated_literal():
    fails(HEAD + 'a ::= "abc ;\nb ::= "x" ;', "E_UNTERMINATED_LITERAL", 2, 7)
    fails(HEAD + 'a ::= "abc\\', "E_UNTERMINATED_LITERAL", 2, 7)


def test_unterminated_class():
    fails(HEAD + "a ::= [abc ;\n", "E_UNTERMINATED_CLASS", 2, 7)
    fails(HEAD + "a ::= [a-", "E_UNTERMINATED_CLASS", 2, 7)


@pytest.mark.parametrize(
    "src, column", [('"\\q"', 2), ('"ab\\a"', 4), ("[\\d]", 2), ('"\\]"', 2), ("[\\/]", 2)]
)
def test_unknown_escape(src, column):
    fails(HEAD + f"a ::= {src} ;", "E_UNKNOWN_ESCAPE", 2, 6 + column)


@pytest.mark.parametrize(
    "src",
    [
        '"\\x4"',
        '"\\x80"',
        '"\\xFF"',
        '"\\u41"',
        '"\\u{}"',
        '"\\u{1234567}"',
        '"\\u{110000}"',
        "[\\x9G]",
    ],
)
def test_invalid_escape(src):
    fails(HEAD + f"a ::= {src} ;", "E_INVALID_ESCAPE", 2, 8)


@pytest.mark.parametrize(
    "src, column", [('"\\u{D800}"', 8), ("[\\u{DFFF}]", 8), ("[a-\\u{DC00}]", 10)]
)
def test_surrogate_escape(src, column):
    fails(HEAD + f"a ::= {src} ;", "E_SURROGATE", 2, column)


def test_reversed_class_range():
    fails(HEAD + "a ::= [0-9z-a] ;", "E_CLASS_RANGE_REVERSED", 2, 11)


@pytest.mark.parametrize("src", ["[]", r"[^\u{0}-\u{10FFFF}]"])
def test_empty_class(src):
    fails(HEAD + f"a ::= {src} ;", "E_EMPTY_CLASS", 2, 7)


def test_unexpected_character():
    err = fails(HEAD + "a ::= 'x' ;", "E_SYNTAX", 2, 7)
    assert "double quotes" in err.hint


def test_slash_comment_is_rejected_with_a_hint():
    err = fails(HEAD + 'a ::= "x" ; // note', "E_SYNTAX", 2, 13)
    assert "#" in err.hint


def test_every_front_end_and_analysis_code_is_documented():
    root = Path(__file__).resolve().parents[1]
    raised: set[str] = set()
    for name in ("lexer.py", "parser.py", "analysis.py"):
        text = (root / "src/trgc/grammar" / name).read_text(encoding="utf-8")
        raised |= set(re.findall(r'"(E_[A-Z0-9_]+)"', text))
    raised -= {"E_LIMIT_"}  # the prefix test in the parser's error collection
    raised |= {"E_LIMIT_INPUT_BYTES", "E_LIMIT_NESTING", "E_LIMIT_REPETITION", "E_LIMIT_MAX_DEPTH"}
    doc = (root / "docs/trg-1.md").read_text(encoding="utf-8")
    assert len(raised) > 25
    assert sorted(code for code in raised if f"`{code}`" not in doc) == []


def test_byte_order_mark_is_rejected():
    err = fails("\ufeff" + HEAD, "E_SYNTAX", 1, 1)
    assert "byte order mark" in err.hint


# -- syntax errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "src, line, column",
    [
        ('a ::= "x"', 2, 10),  # missing ;
        ('a = "x" ;', 2, 3),
        ("a ::= ;", 2, 7),
        ('a ::= "x" | ;', 2, 13),
        ("a ::= ( ) ;", 2, 9),
        ('a ::= ( "x" ;', 2, 13),
        ('a ::= "x" ) ;', 2, 11),
        ('a ::= * "x" ;', 2, 7),
        ('a ::= "x"** ;', 2, 11),
        ('a ::= "x"*? ;', 2, 11),
        ('a ::= "x"{} ;', 2, 11),
        ('a ::= "x"{1,a} ;', 2, 13),
        ('a ::= "x"{1 ;', 2, 13),
        ('a ::= "x"{1,2 ;', 2, 15),
        ('"x" ;', 2, 1),
        ("a ::= special(x) ;", 2, 15),
        ('a ::= special("x" ;', 2, 19),
        ("% trg", 2, 1),
        ('a ::= "x" ;\n%start a b', 3, 10),
    ],
)
def test_syntax_errors(src, line, column):
    fails(HEAD + src, "E_SYNTAX", line, column)


def test_empty_special():
    fails(HEAD + 'a ::= special("") ;', "E_EMPTY_SPECIAL", 2, 15)


def test_special_without_parenthesis_is_reserved():
    fails(HEAD + "a ::= special ;", "E_RESERVED_NAME", 2, 7)


def test_repetition_reversed():
    fails(HEAD + 'a ::= "x"{5,2} ;', "E_REPETITION_REVERSED", 2, 10)


@pytest.mark.parametrize(
    "op, column",
    [
        ("{0,10000000}", 13),
        ("{1048577}", 11),
        ("{1048577,}", 11),
        ("{99999999999999999999999999}", 11),
    ],
)
def test_repetition_limit(op, column):
    err = fails(HEAD + f'a ::= "x"{op} ;', "E_LIMIT_REPETITION", 2, column)
    assert err.exit_status == 3


def test_repetition_limit_is_configurable():
    assert parse_grammar(HEAD + 'a ::= "x"{2000} ;', limits=Limits(repetition=2000)).nodes[
        -1
    ].payload == (2000, 2000)
    fails(HEAD + 'a ::= "x"{0,3} ;', "E_LIMIT_REPETITION", 2, 13, limits=Limits(repetition=2))


def test_nesting_100000_parentheses_is_a_clean_limit_error():
    depth = 100_000
    err = fails(
        HEAD + "a ::= " + "(" * depth + '"x"' + ")" * depth + " ;", "E_LIMIT_NESTING", 2, 1007
    )
    assert err.exit_status == 3


def test_nesting_limit_is_configurable():
    fails(HEAD + 'a ::= ((("x"))) ;', "E_LIMIT_NESTING", 2, 9, limits=Limits(nesting=2))
    parse_grammar(HEAD + 'a ::= (("x")) ;', limits=Limits(nesting=2))


# -- directives --------------------------------------------------------------------------


@pytest.mark.parametrize("src", ["", "# only a comment\n", 'a ::= "x" ;', "%start a\n%trg 1\n"])
def test_missing_or_misplaced_header(src):
    fails(src, "E_TRG_HEADER")


def test_header_after_comments_and_blank_lines():
    assert parse_grammar('\n# c\n   \n%trg 1\na ::= "x" ;').rules[0].line == 5


@pytest.mark.parametrize(
    "src, column", [("%trg 2\n", 6), ("%trg 10\n", 6), ("%trg\n", 1), ("%trg x\n", 6)]
)
def test_wrong_version(src, column):
    fails(src + 'a ::= "x" ;', "E_TRG_VERSION", 1, column)


def test_unknown_directive():
    err = fails(HEAD + '%include "x"\na ::= "x" ;', "E_UNKNOWN_DIRECTIVE", 2, 1)
    assert "%max_depth" in err.hint


@pytest.mark.parametrize(
    "src", ["%trg 1\n", "%start a\n%start a\n", "%max_depth 3\n%max_depth 3\n"]
)
def test_duplicate_directive(src):
    lines = src.count("\n")
    fails(HEAD + src + 'a ::= "x" ;', "E_DUPLICATE_DIRECTIVE", 1 + lines, 1)


@pytest.mark.parametrize(
    "src, column",
    [("%max_depth 0", 12), ("%max_depth x", 12), ("%start 3", 8), ("%start", 1), ("%max_depth", 1)],
)
def test_directive_argument(src, column):
    fails(HEAD + src + '\na ::= "x" ;', "E_DIRECTIVE_ARGUMENT", 2, column)


def test_max_depth_limit():
    err = fails(HEAD + '%max_depth 5000\na ::= "x" ;', "E_LIMIT_MAX_DEPTH", 2, 12)
    assert err.exit_status == 3
    assert (
        parse_grammar(
            HEAD + '%max_depth 5000\na ::= "x" ;', limits=Limits(max_depth=5000)
        ).max_depth
        == 5000
    )


def test_empty_grammar():
    fails(HEAD + "# nothing\n", "E_EMPTY_GRAMMAR", 3, 1)


# -- collecting errors -------------------------------------------------------------------


def test_errors_are_collected_and_the_first_is_raised():
    src = HEAD + 'a ::= "x" | ;\nb ::= [z-a];\nc ::= "\\q";\n%foo\nd ::= "x"{5,2};\ne ::= "ok" ;\n'
    err = fails(src, "E_SYNTAX", 2, 13)
    listed = [(e["code"], e["line"]) for e in err.details["errors"]]
    assert listed == [
        ("E_SYNTAX", 2),
        ("E_CLASS_RANGE_REVERSED", 3),
        ("E_UNKNOWN_ESCAPE", 4),
        ("E_UNKNOWN_DIRECTIVE", 5),
        ("E_REPETITION_REVERSED", 6),
    ]


def test_error_carries_source_name():
    err = fails(HEAD + "a ::= ;", "E_SYNTAX", source="g.trg")
    assert err.location() == "g.trg:2:7"


# -- robustness --------------------------------------------------------------------------

_PIECES = st.sampled_from(
    [
        "%trg 1\n",
        "%start",
        "%max_depth",
        " a",
        " b",
        " ::=",
        ";",
        "|",
        "(",
        ")",
        "?",
        "*",
        "+",
        "{",
        "}",
        ",",
        " 1",
        " 0",
        "99999999999999999999",
        '"x"',
        '""',
        '"\\',
        "\\u{",
        "D800}",
        "[",
        "]",
        "^",
        "-",
        "special",
        '("s")',
        "\n",
        "#",
        " ",
        "é",
        "\\x",
        "7F",
        "%",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.sampled_from("\n\té€𝄞")
    )
)
def test_random_printable_text_raises_only_trgc_errors(text):
    for src in (text, HEAD + text):
        with contextlib.suppress(TrgcError):
            parse_grammar(src)


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES, max_size=40))
def test_random_token_soup_raises_only_trgc_errors(pieces):
    src = "".join(pieces)
    for text in (src, HEAD + src):
        try:
            g = parse_grammar(text)
        except TrgcError as err:
            assert err.span is not None or err.code.startswith("E_LIMIT_")
        else:
            assert all(all(c < i for c in n.children) for i, n in enumerate(g.nodes))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_raise_only_trgc_errors(data):
    with contextlib.suppress(TrgcError):
        parse_grammar(data)
