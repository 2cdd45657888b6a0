"""grammars/tinycalc.trg and the tinycalc parser accept exactly the same byte strings.

Three directions: random valid expressions are accepted by the compiled grammar; random walks
of the compiled grammar parse; and random byte strings over the tinycalc alphabet (plus
mutations of valid expressions) get the same verdict — and for syntax errors the same
rejection offset — from both.
"""

from __future__ import annotations

import random
from functools import cache
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import trgc
from trgc.errors import TrgcError
from trgc.tools.tinycalc import parse

GRAMMAR = Path(__file__).resolve().parents[1] / "grammars" / "tinycalc.trg"
ALPHABET = b"0123456789.+-*/^() \t\r\n"


@cache
def artifact():
    return trgc.compile_grammar(GRAMMAR.read_text(encoding="utf-8"))


def parser_verdict(data: bytes) -> tuple[bool, str | None, int | None]:
    try:
        parse(data)
    except TrgcError as error:
        return False, error.code, error.span.offset if error.span else None
    return True, None, None


def assert_agree(data: bytes) -> None:
    grammar = trgc.check(artifact(), data)
    accepted, code, offset = parser_verdict(data)
    assert grammar.accepted == accepted, (data, grammar.reason, code)
    if code in ("E_CALC_SYNTAX", "E_CALC_PRECISION"):
        assert grammar.offset == offset, (data, code)


def test_grammar_compiles_to_one_machine():
    art = artifact()
    assert [m.name for m in art.machines] == ["expr"]
    assert art.max_depth == 257


def test_known_strings():
    for text in [
        "1",
        " 1 / 3 ",
        "(2 + 3) * -4.5",
        "-2^-64",
        "(1)^64",
        "0.000000000000000001",
        "--1\n*\t(\r2)",
        "007.5",
        "1 - -1",
        "2 ^ 3",
        "",
        " ",
        "2^3^2",
        "2^65",
        "2^05",
        "2^-65",
        "2^ -3",
        "2^- 3",
        "1.",
        ".5",
        "1.1234567890123456789",
        "()",
        "(1))",
        "((1)",
        "1 2",
        "+1",
        "1e5",
        "1,5",
        "é",
        "(" * 256 + "1" + ")" * 256,
        "(" * 257 + "1" + ")" * 257,
    ]:
        assert_agree(text.encode())


@cache
def walk_step(prefix: bytes) -> tuple[tuple[int, ...], bool]:
    result = trgc.check(artifact(), prefix, prefix=True)
    assert result.accepted
    return result.allowed_bytes, result.end_allowed


def random_walk(rng: random.Random, max_len: int) -> bytes:
    """A member of the grammar's language, built byte by byte from the allowed sets."""
    data = b""
    while True:
        allowed, end = walk_step(data)
        if end and (len(data) >= max_len or rng.random() < 0.08 or not allowed):
            return data
        if not allowed:
            raise AssertionError(f"dead end after {data!r}")
        # prefer closing parentheses once long, so that walks terminate
        if len(data) >= max_len and ord(")") in allowed:
            data += b")"
        else:
            data += bytes([rng.choice(allowed)])


def test_grammar_walks_parse():
    rng = random.Random(7)
    for _ in range(300):
        data = random_walk(rng, 40)
        assert parser_verdict(data)[0], data
        assert trgc.check(artifact(), data).accepted


@settings(max_examples=1000, deadline=None, derandomize=True)
@given(st.binary(max_size=24).map(lambda b: bytes(ALPHABET[x % len(ALPHABET)] for x in b)))
def test_random_strings_get_the_same_verdict(data):
    assert_agree(data)


def test_mutated_valid_expressions_get_the_same_verdict():
    rng = random.Random(11)
    for _ in range(400):
        data = bytearray(random_walk(rng, 30))
        for _ in range(rng.randint(1, 3)):
            where = rng.randint(0, len(data))
            action = rng.random()
            if action < 0.4 or not data:
                data[where:where] = bytes([rng.choice(ALPHABET)])
            elif action < 0.7:
                del data[min(where, len(data) - 1)]
            else:
                data[min(where, len(data) - 1)] = rng.choice(ALPHABET)
        assert_agree(bytes(data))


_ws = st.sampled_from(["", " ", "\t", "\n", "\r\n", "  "])
_number = st.tuples(
    st.from_regex(r"[0-9]{1,25}", fullmatch=True),
    st.from_regex(r"(\.[0-9]{1,18})?", fullmatch=True),
).map("".join)
_exponent = st.integers(-64, 64).map(str)


def _operand(children):
    primary = st.one_of(_number, st.tuples(_ws, children).map(lambda t: f"({t[0]}{t[1]})"))
    powered = st.tuples(
        primary,
        _ws,
        st.one_of(
            st.just(""), st.tuples(_ws, _exponent, _ws).map(lambda t: f"^{t[0]}{t[1]}{t[2]}")
        ),
    )
    return st.tuples(st.lists(_ws.map(lambda w: "-" + w), max_size=2).map("".join), powered).map(
        lambda t: t[0] + t[1][0] + t[1][1] + t[1][2]
    )


_expressions = st.recursive(
    _number,
    lambda children: st.tuples(
        _operand(children),
        st.lists(st.tuples(st.sampled_from("+-*/"), _ws, _operand(children)), max_size=3),
    ).map(lambda t: t[0] + "".join(op + w + rest for op, w, rest in t[1])),
    max_leaves=10,
)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_ws, _expressions, _ws)
def test_generated_expressions_are_accepted_by_both(lead, text, trail):
    data = (lead + text + trail).encode()
    assert trgc.check(artifact(), data).accepted, data
    assert parser_verdict(data)[0], data
