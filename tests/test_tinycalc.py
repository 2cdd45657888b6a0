"""tinycalc-1: values, rounding ties, 128-bit boundaries, errors, limits and the `calc` command."""

from __future__ import annotations

import hashlib
import json

import pytest
from typer.testing import CliRunner

from trgc.cli.app import app
from trgc.errors import TrgcError
from trgc.tools import decimal128 as d128
from trgc.tools.tinycalc import CalcLimits, calc_record, evaluate, parse

MAX_TEXT = "170141183460469231731.687303715884105727"  # (2**127 - 1) / 10**18
ULP = "0.000000000000000001"


def value(expression: str) -> str:
    return evaluate(expression).value


def error_code(expression: str | bytes, limits: CalcLimits | None = None) -> str:
    with pytest.raises(TrgcError) as info:
        evaluate(expression, limits or CalcLimits())
    return info.value.code


def test_report_example_record():
    record = calc_record("1 / 3")
    assert record == {
        "protocol": "tinycalc-1",
        "status": "ok",
        "expression_sha256": hashlib.sha256(b"1 / 3").hexdigest(),
        "value": "0.333333333333333333",
        "scale": 18,
        "rounding": "half_even",
        "exact": False,
        "operations": 1,
        "implementation": "trgc-tinycalc-1.0.0",
    }


@pytest.mark.parametrize(
    ("expression", "expected", "exact", "operations"),
    [
        ("(2 + 3) * -4.5", "-22.5", True, 3),
        ("2 / 3", "0.666666666666666667", False, 1),
        ("-2 / 3", "-0.666666666666666667", False, 2),
        ("1 - 2 - 3", "-4", True, 2),
        ("8 / 4 / 2", "1", True, 2),
        ("2 + 3 * 4", "14", True, 2),
        ("-2^2", "-4", True, 3),
        ("(-2)^2", "4", True, 3),
        ("2^0", "1", True, 0),
        ("0^0", "1", True, 0),
        ("2^-1", "0.5", True, 2),
        ("3^-1", "0.333333333333333333", False, 2),
        ("2^64", "18446744073709551616", True, 64),
        ("(1 + 2)^2 * 2", "18", True, 4),
        ("1.50", "1.5", True, 0),
        ("007.000", "7", True, 0),
        ("-0", "0", True, 1),
        ("0.1^19", "0", False, 19),
        (" \t\r\n1\n+\t2 ", "3", True, 1),
        ("1 - -1", "2", True, 2),
        ("--1", "1", True, 2),
    ],
)
def test_values(expression, expected, exact, operations):
    result = evaluate(expression)
    assert (result.value, result.exact, result.operations) == (expected, exact, operations)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # quotient ties at the 18th digit go to the even neighbour, symmetric in sign
        ("0.000000000000000001 / 2", "0"),
        ("0.000000000000000003 / 2", "0.000000000000000002"),
        ("0.000000000000000005 / 2", "0.000000000000000002"),
        ("0.000000000000000007 / 2", "0.000000000000000004"),
        ("-0.000000000000000001 / 2", "0"),
        ("-0.000000000000000003 / 2", "-0.000000000000000002"),
        # product ties
        ("0.000000000000000001 * 0.5", "0"),
        ("0.000000000000000005 * 0.1", "0"),
        ("0.000000000000000015 * 0.1", "0.000000000000000002"),
        ("0.000000000000000025 * 0.1", "0.000000000000000002"),
        ("-0.000000000000000025 * 0.1", "-0.000000000000000002"),
        # not a tie: more than half rounds away, less rounds toward zero
        ("0.000000000000000026 * 0.1", "0.000000000000000003"),
        ("0.000000000000000024 * 0.1", "0.000000000000000002"),
        ("2 / 3", "0.666666666666666667"),
    ],
)
def test_half_even_ties(expression, expected):
    result = evaluate(expression)
    assert result.value == expected
    assert result.exact is False


def test_rounding_happens_after_each_step():
    # (1/3)*3 rounds the quotient first: 0.999999999999999999, not 1
    assert value("1 / 3 * 3") == "0.999999999999999999"
    assert value("3 * (1 / 3)") == "0.999999999999999999"
    assert evaluate("1 / 4 * 4").exact is True


def test_128_bit_boundaries():
    assert d128.MAX == 2**127 - 1 and d128.MIN == -(2**127)
    assert value(MAX_TEXT) == MAX_TEXT
    assert evaluate(MAX_TEXT).scaled == d128.MAX
    assert evaluate(f"-{MAX_TEXT} - {ULP}").scaled == d128.MIN
    assert value(f"-{MAX_TEXT} - {ULP}") == "-170141183460469231731.687303715884105728"
    assert error_code(f"{MAX_TEXT} + {ULP}") == "E_CALC_OVERFLOW"
    assert error_code(f"-{MAX_TEXT} - {ULP} - {ULP}") == "E_CALC_OVERFLOW"
    assert error_code(f"-(-{MAX_TEXT} - {ULP})") == "E_CALC_OVERFLOW"  # -(-2^127)
    assert error_code("170141183460469231731.687303715884105728") == "E_CALC_OVERFLOW"
    assert error_code("1" + "0" * 60) == "E_CALC_OVERFLOW"
    assert value("0" * 60 + "1") == "1"
    assert error_code(f"{MAX_TEXT} * 1.000000000000000001") == "E_CALC_OVERFLOW"
    assert error_code(f"{MAX_TEXT} / 0.5") == "E_CALC_OVERFLOW"
    assert error_code(f"1 / {ULP} / {ULP} / {ULP}") == "E_CALC_OVERFLOW"
    assert error_code("4^34") == "E_CALC_OVERFLOW"  # 2^68 > 1.7e20
    assert value("2^64 * 8") == "147573952589676412928"  # 2^67 fits
    assert error_code("10^-30") == "E_CALC_OVERFLOW"  # 10^30 is computed first


def test_overflow_is_checked_after_every_operation():
    # the final value would fit, but the intermediate sum does not
    assert error_code(f"{MAX_TEXT} + 1 - 1") == "E_CALC_OVERFLOW"
    assert value(f"{MAX_TEXT} - 1 + 1") == MAX_TEXT


def test_error_records_have_codes_and_positions():
    cases = {
        "1 +": ("E_CALC_SYNTAX", 3),
        "1 + * 2": ("E_CALC_SYNTAX", 4),
        "(1": ("E_CALC_SYNTAX", 2),
        "1)": ("E_CALC_SYNTAX", 1),
        "()": ("E_CALC_SYNTAX", 1),
        "2^3^2": ("E_CALC_SYNTAX", 3),
        "1 2": ("E_CALC_SYNTAX", 2),
        ".5": ("E_CALC_SYNTAX", 0),
        "5.": ("E_CALC_SYNTAX", 2),
        "1e5": ("E_CALC_SYNTAX", 1),
        "+1": ("E_CALC_SYNTAX", 0),
        "": ("E_CALC_SYNTAX", 0),
        "1 / (2 - 2)": ("E_CALC_DIVISION_BY_ZERO", 2),
        "0^-1": ("E_CALC_DIVISION_BY_ZERO", 1),
        "2^65": ("E_CALC_EXPONENT", 2),
        "2^-65": ("E_CALC_EXPONENT", 2),
        "2^05": ("E_CALC_EXPONENT", 2),
        "2^100": ("E_CALC_EXPONENT", 2),
        "0.1234567890123456789": ("E_CALC_PRECISION", 20),
    }
    for expression, (code, offset) in cases.items():
        record = calc_record(expression)
        assert record["status"] == "error", expression
        assert record["error"]["code"] == code, expression
        if offset is not None:
            assert record["error"]["offset"] == offset, expression
        assert set(record) == {"protocol", "status", "expression_sha256", "error", "implementation"}


def test_whitespace_around_but_not_inside_an_exponent():
    assert value("2 ^ 3") == "8"
    assert value("2 ^-3 ") == "0.125"
    assert error_code("2 ^ - 3") == "E_CALC_SYNTAX"


def test_syntax_error_reports_line_and_column():
    with pytest.raises(TrgcError) as info:
        evaluate("1 +\n  * 2")
    assert (info.value.span.line, info.value.span.column, info.value.span.offset) == (2, 3, 6)


def test_non_ascii_and_invalid_utf8_are_syntax_errors():
    assert error_code("1 + é") == "E_CALC_SYNTAX"
    assert error_code(b"1 + \xff") == "E_CALC_SYNTAX"
    assert error_code("1\x00") == "E_CALC_SYNTAX"


def test_input_limit_on_one_megabyte_expression():
    expression = "1+" * 500_000 + "1"
    assert error_code(expression) == "E_LIMIT_INPUT_BYTES"
    assert error_code(expression.encode()) == "E_LIMIT_INPUT_BYTES"
    record = calc_record(expression)
    assert record["error"]["code"] == "E_LIMIT_INPUT_BYTES"
    assert record["expression_sha256"] == hashlib.sha256(expression.encode()).hexdigest()
    # exactly at the limit is fine; multibyte characters count as bytes
    assert evaluate(" " * 4095 + "1").value == "1"
    assert error_code(" " * 4096 + "1") == "E_LIMIT_INPUT_BYTES"
    assert error_code("é" * 2049) == "E_LIMIT_INPUT_BYTES"


def test_ten_thousand_nested_parentheses_is_a_limit_error_not_recursion():
    deep = "(" * 10_000 + "1" + ")" * 10_000
    assert error_code(deep) == "E_LIMIT_INPUT_BYTES"  # 20,001 bytes
    roomy = CalcLimits(input_bytes=1 << 20)
    assert error_code(deep, roomy) == "E_LIMIT_NESTING"
    # with the nesting limit raised as well, the iterative parser and evaluator cope
    unbounded = CalcLimits(input_bytes=1 << 20, nesting=100_000)
    assert evaluate("-(" * 10_000 + "1" + ")" * 10_000, unbounded).value == "1"
    assert evaluate("(" * 256 + "1" + ")" * 256).value == "1"
    assert error_code("(" * 257 + "1" + ")" * 257) == "E_LIMIT_NESTING"


def test_operation_limit():
    # 150 * 64 (powers) + 149 (+ between them) + 249 (+1 tail) = 9,998 operations
    under = "+".join(["1^64"] * 150) + "+1" * 249
    assert evaluate(under).operations == 9_998
    assert evaluate(under + "+1+1").operations == 10_000
    assert error_code(under + "+1+1+1") == "E_LIMIT_OPERATIONS"
    assert error_code("+".join(["1^-64"] * 200)) == "E_LIMIT_OPERATIONS"  # 65 each
    assert error_code("1+1+1", CalcLimits(operations=1)) == "E_LIMIT_OPERATIONS"


def test_parse_is_syntax_only():
    program = parse("99999999999999999999999999 / 0")
    assert program.operations == 1
    assert error_code("99999999999999999999999999 / 0") == "E_CALC_OVERFLOW"


runner = CliRunner()


def test_cli_prints_the_value():
    result = runner.invoke(app, ["calc", "1 / 3"])
    assert result.exit_code == 0
    assert result.stdout == "0.333333333333333333\n"


def test_cli_json_record_and_error_record():
    result = runner.invoke(app, ["calc", "--json", "(2 + 3) * -4.5"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["value"] == "-22.5"
    result = runner.invoke(app, ["calc", "--json", "1 / 0"])
    assert result.exit_code == 2
    record = json.loads(result.stdout)
    assert record["status"] == "error"
    assert record["error"] == {
        "code": "E_CALC_DIVISION_BY_ZERO",
        "message": "division by zero",
        "offset": 2,
    }
    result = runner.invoke(app, ["calc", "--json", "(" * 300 + "1" + ")" * 300])
    assert result.exit_code == 3
    assert json.loads(result.stdout)["error"]["code"] == "E_LIMIT_NESTING"


def test_cli_human_error_goes_to_stderr():
    result = runner.invoke(app, ["calc", "1 +"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "E_CALC_SYNTAX" in result.stderr


def test_cli_reads_stdin_and_bounds_it():
    result = runner.invoke(app, ["calc", "-"], input="2^10\n")
    assert (result.exit_code, result.stdout) == (0, "1024\n")
    result = runner.invoke(app, ["calc", "--json", "-"], input="1+" * 500_000 + "1")
    assert result.exit_code == 3
    assert json.loads(result.stdout)["error"]["code"] == "E_LIMIT_INPUT_BYTES"
    result = runner.invoke(app, ["calc", "--", "-5 + 1"])
    assert (result.exit_code, result.stdout) == (0, "-4\n")


def test_cli_hashes_the_argument_bytes():
    result = runner.invoke(app, ["calc", "--json", "1 + é"])
    assert result.exit_code == 2
    record = json.loads(result.stdout)
    assert record["expression_sha256"] == hashlib.sha256("1 + é".encode()).hexdigest()
    assert record["error"]["offset"] == 4


def test_no_binary_floating_point_in_the_tools_layer():
    import ast
    from pathlib import Path

    for path in sorted(
        (Path(__file__).resolve().parents[1] / "src" / "trgc" / "tools").glob("*.py")
    ):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            assert not (isinstance(node, ast.Name) and node.id == "float"), path
            assert not isinstance(node, ast.Div), f"true division in {path.name}"
            assert not (isinstance(node, ast.Constant) and isinstance(node.value, float)), path
