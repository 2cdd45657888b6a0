"""tinycalc vs Python's `decimal` configured to the same semantics, on generated expressions.

The oracle shares nothing with trgc: Python's own parser (`ast`, with `^` spelled `**`) gives the
structure and precedence, and `decimal` does the arithmetic — exact products and 200-digit
quotients, quantized to 18 places with ROUND_HALF_EVEN after every * and /, range-checked
against the signed 128-bit interval after every step.
"""

from __future__ import annotations

import ast
import decimal
from decimal import ROUND_HALF_EVEN, Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trgc.errors import TrgcError
from trgc.tools.tinycalc import evaluate

CTX = decimal.Context(prec=200, rounding=ROUND_HALF_EVEN, Emax=10_000, Emin=-10_000, traps=[])
QUANTUM = Decimal("1e-18")
LOW, HIGH = -(2**127), 2**127 - 1


class Failure(Exception):
    def __init__(self, code: str) -> None:
        self.code = code


def checked(x: Decimal) -> Decimal:
    scaled = int(x.scaleb(18, context=CTX))
    if x != Decimal(scaled).scaleb(-18, context=CTX):
        raise AssertionError("unquantized value reached the range check")
    if not LOW <= scaled <= HIGH:
        raise Failure("E_CALC_OVERFLOW")
    return x


class Oracle:
    def __init__(self, text: str) -> None:
        self.text = text
        self.exact = True

    def rounded(self, x: Decimal) -> Decimal:
        result = x.quantize(QUANTUM, rounding=ROUND_HALF_EVEN, context=CTX)
        if result != x:
            self.exact = False
        return checked(result)

    def mul(self, a: Decimal, b: Decimal) -> Decimal:
        return self.rounded(CTX.multiply(a, b))

    def div(self, a: Decimal, b: Decimal) -> Decimal:
        if b == 0:
            raise Failure("E_CALC_DIVISION_BY_ZERO")
        return self.rounded(CTX.divide(a, b))

    def exponent(self, node: ast.expr) -> int:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.exponent(node.operand)
        assert isinstance(node, ast.Constant) and isinstance(node.value, int)
        return node.value

    def eval(self, node: ast.expr) -> Decimal:
        if isinstance(node, ast.Constant):
            return checked(
                Decimal(ast.get_source_segment(self.text, node)).quantize(QUANTUM, context=CTX)
            )
        if isinstance(node, ast.UnaryOp):
            assert isinstance(node.op, ast.USub)
            return checked(CTX.minus(self.eval(node.operand)))
        assert isinstance(node, ast.BinOp)
        if isinstance(node.op, ast.Pow):
            base = self.eval(node.left)
            n = self.exponent(node.right)
            result = Decimal(1)
            for _ in range(abs(n)):
                result = self.mul(result, base)
            return self.div(Decimal(1), result) if n < 0 else result
        left = self.eval(node.left)
        right = self.eval(node.right)
        if isinstance(node.op, ast.Add):
            return checked(CTX.add(left, right))
        if isinstance(node.op, ast.Sub):
            return checked(CTX.subtract(left, right))
        if isinstance(node.op, ast.Mult):
            return self.mul(left, right)
        assert isinstance(node.op, ast.Div)
        return self.div(left, right)


def render(x: Decimal) -> str:
    text = format(x.quantize(QUANTUM, context=CTX), "f")
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "") else text


def oracle(text: str) -> tuple:
    python_text = text.replace("^", "**")
    tree = ast.parse(python_text, mode="eval")
    machine = Oracle(python_text)
    try:
        value = machine.eval(tree.body)
    except Failure as failure:
        return ("error", failure.code)
    return ("ok", render(value), machine.exact)


def tinycalc(text: str) -> tuple:
    try:
        result = evaluate(text)
    except TrgcError as error:
        return ("error", error.code)
    return ("ok", result.value, result.exact)


# --- expression generator (texts valid in both tinycalc and Python, no leading zeros) ---

ws = st.sampled_from(["", "", " ", "  ", "\t"])
integer_part = st.one_of(
    st.integers(0, 20),
    st.integers(0, 10**6),
    st.integers(0, 10**22),
    st.sampled_from([170141183460469231731, 170141183460469231732, 10**20]),
).map(str)
fraction_part = st.one_of(
    st.just(""),
    st.integers(1, 18)
    .flatmap(lambda n: st.text("0123456789", min_size=n, max_size=n))
    .map(lambda d: "." + d),
    st.sampled_from(
        [
            ".5",
            ".000000000000000001",
            ".000000000000000005",
            ".687303715884105727",
            ".687303715884105728",
        ]
    ),
)
literal = st.tuples(integer_part, fraction_part).map(lambda t: ("lit", t[0] + t[1]))


def is_literal(item: tuple) -> bool:
    return item[0] == "lit"


def text_of(item: tuple) -> str:
    return item[1]


def combine(children: st.SearchStrategy) -> st.SearchStrategy:
    binary = st.tuples(children, st.sampled_from("+-*/"), children, ws, ws).map(
        lambda t: ("expr", f"{text_of(t[0])}{t[3]}{t[1]}{t[4]}{text_of(t[2])}")
    )
    negated = st.tuples(children, ws).map(lambda t: ("expr", f"-{t[1]}{text_of(t[0])}"))
    grouped = st.tuples(children, ws, ws).map(lambda t: ("expr", f"({t[1]}{text_of(t[0])}{t[2]})"))
    exponent = st.one_of(st.integers(-3, 4), st.integers(-64, 64))
    powered = st.tuples(children, exponent, ws).map(
        lambda t: (
            "expr",
            f"{text_of(t[0]) if is_literal(t[0]) else '(' + text_of(t[0]) + ')'}{t[2]}^{t[1]}",
        )
    )
    return st.one_of(binary, binary, negated, grouped, powered)


expressions = st.recursive(literal, combine, max_leaves=12).map(text_of)


@settings(
    max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(expressions)
def test_tinycalc_matches_decimal(text):
    assert tinycalc(text) == oracle(text), text


@settings(max_examples=400, deadline=None, derandomize=True)
@given(
    st.one_of(st.integers(LOW, HIGH), st.integers(-(10**21), 10**21), st.integers(-(10**6), 10**6)),
    st.one_of(st.integers(LOW, HIGH), st.integers(-(10**21), 10**21), st.integers(-(10**6), 10**6)),
    st.sampled_from("+-*/"),
)
def test_boundary_operands(a, b, op):
    # operands anywhere in the 128-bit range, written as literals (negatives via unary minus)
    def lit(v: int) -> str:
        text = render(Decimal(v).scaleb(-18, context=CTX))
        return f"({text})" if v < 0 else text

    if a == LOW or b == LOW:  # -2^127 has no literal; its magnitude overflows
        return
    text = f"{lit(a)} {op} {lit(b)}"
    assert tinycalc(text) == oracle(text), text


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.integers(-(10**15), 10**15), st.sampled_from(["2", "0.5", "20", "0.2"]))
def test_generated_ties(k, divisor):
    # (2k+1) ulp / 2 and * 0.5 lie exactly halfway between two representable values; 20 and
    # 0.2 give remainders on either side of half
    numerator = render(Decimal(2 * k + 1).scaleb(-18, context=CTX))
    numerator = f"({numerator})" if k < 0 else numerator
    for op in ("/", "*"):
        text = f"{numerator} {op} {divisor}"
        assert tinycalc(text) == oracle(text), text


def test_oracle_agrees_on_known_ties():
    for text in [
        "0.000000000000000005 * 0.1",
        "0.000000000000000015 * 0.1",
        "0.000000000000000003 / 2",
        "2 / 3",
    ]:
        assert tinycalc(text) == oracle(text)
