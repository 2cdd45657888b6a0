"""The shared strict JSON reader: codes, positions, limits and number modes."""

from __future__ import annotations

from decimal import Decimal

import pytest

from trgc.errors import TrgcError
from trgc.jsonread import nesting_depth, read_json

OPTIONS = {"code": "E_SCHEMA_JSON", "what": "the document", "max_bytes": 1 << 20, "max_depth": 64}


def error_of(raw: bytes | str, **options) -> TrgcError:
    with pytest.raises(TrgcError) as info:
        read_json(raw, **(OPTIONS | options))
    return info.value


def test_reads_nested_documents():
    text = '{"a": [1, {"b": "[{\\"}"}], "c": null}'
    assert read_json(text, **OPTIONS) == {"a": [1, {"b": '[{"}'}], "c": None}
    assert read_json(b"  7 ", **OPTIONS) == 7


def test_duplicate_key_uses_its_own_code_when_given():
    err = error_of('{"a": {"k": 1, "k": 2}}')
    assert err.code == "E_SCHEMA_JSON" and "'k'" in err.message
    err = error_of('{"k": 1, "k": 1}', duplicate_code="E_SCHEMA_DUPLICATE_KEY")
    assert err.code == "E_SCHEMA_DUPLICATE_KEY" and "RFC 8259" in err.hint


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_json_constants_are_refused(constant):
    err = error_of(f'{{"x": [{constant}]}}', source="doc.json")
    assert err.code == "E_SCHEMA_JSON" and constant in err.message
    assert err.source == "doc.json"


def test_invalid_utf8_reports_its_byte_offset():
    err = error_of(b'{"a":\n "\xc3\xa9\xff"}')
    assert err.code == "E_SCHEMA_JSON" and "UTF-8" in err.message
    assert (err.span.line, err.span.column, err.span.offset) == (2, 5, 10)
    assert error_of("\ud800").code == "E_SCHEMA_JSON"  # a lone surrogate in text


def test_syntax_error_line_column_and_byte_offset():
    err = error_of('{"é": 1,\n  "b": ]}')
    assert err.code == "E_SCHEMA_JSON" and "not valid JSON" in err.message
    # column counts characters, the offset counts bytes ("é" is two)
    assert (err.span.line, err.span.column, err.span.offset) == (2, 8, 17)
    assert "truncated" in error_of('{"a": [1, 2').message


def test_nesting_limit_without_recursion():
    deep = b"[" * 100_000 + b"]" * 100_000
    err = error_of(deep)
    assert err.code == "E_LIMIT_NESTING" and err.exit_status == 3
    assert (err.span.line, err.span.column, err.span.offset) == (1, 65, 64)
    unclosed = error_of(b"\n" + b'{"a":' * 100_000, max_depth=100)
    assert unclosed.code == "E_LIMIT_NESTING" and unclosed.span.offset == 1 + 5 * 100
    # at the limit is fine; brackets inside strings do not count
    assert read_json(b"[" * 64 + b"]" * 64, **OPTIONS) is not None
    assert read_json('["' + "[" * 1000 + '"]', **OPTIONS) == ["[" * 1000]
    assert nesting_depth(b'{"a": "\\"{[", "b": [[]]}') == 3


def test_size_limit_before_parsing():
    err = error_of(b" " * 101 + b"1", max_bytes=100, source="big.json")
    assert err.code == "E_LIMIT_INPUT_BYTES" and err.source == "big.json"
    assert read_json(b" " * 99 + b"1", **(OPTIONS | {"max_bytes": 100})) == 1


def test_float_modes():
    text = '{"a": 1.5, "b": 2e3, "c": 7}'
    assert read_json(text, **OPTIONS) == {"a": 1.5, "b": 2000.0, "c": 7}
    value = read_json(text, floats="decimal", **OPTIONS)
    assert value == {"a": Decimal("1.5"), "b": Decimal("2e3"), "c": 7}
    assert isinstance(value["a"], Decimal) and isinstance(value["c"], int)
    err = error_of(text, floats="reject")
    assert err.code == "E_SCHEMA_JSON" and "'1.5'" in err.message
    assert read_json('{"c": 7}', floats="reject", **OPTIONS) == {"c": 7}


def test_huge_integer_is_the_callers_code():
    assert error_of("1" + "0" * 5000).code == "E_SCHEMA_JSON"


def test_nesting_prescan_is_linear_on_unterminated_strings():
    """`["\\"\\"\\"...` without a closing quote made the old string-stripping pattern rescan to
    the end after every escaped quote (a 40 KB input took 12 s, 1 MiB about two hours). Under a
    CPU ceiling a thousand times what the linear scan needs, a 1 MiB one must finish."""
    from bounded import run_python

    code = (
        "from trgc.jsonread import nesting_depth\n"
        "for raw in (b'[\"' + b'\\\\\"' * 524288, b'[\"' + b'\\\\\"' * 524288 + b'\\\\',"
        " b'\"' * 1048576, b'[' + b'\"a\\\\\\\\\",' * 131072):\n"
        "    print(nesting_depth(raw))\n"
    )
    outcome = run_python(code, cpu_seconds=20)
    assert outcome.returncode == 0, outcome.stderr.decode()
    assert outcome.stdout.split() == [b"1", b"1", b"0", b"1"]


def test_unterminated_string_is_refused_after_the_prescan():
    err = error_of(b'["' + b'\\"' * 20_000)
    assert err.code == "E_SCHEMA_JSON" and "Unterminated string" in err.message
    assert nesting_depth(b'["\\"[[[') == 1  # brackets in an unterminated string do not count


@pytest.mark.parametrize("number", ["1e400", "-1e400", "123456789e999"])
def test_numbers_beyond_the_double_range_are_refused(number):
    err = error_of(f'{{"const": [{number}]}}')
    assert err.code == "E_SCHEMA_JSON" and "range of a double" in err.message
    assert read_json(f"[{number}]", floats="decimal", **OPTIONS) == [Decimal(number)]
    assert read_json("[1e308, 1e-400]", **OPTIONS) == [1e308, 0.0]


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        ('{"const": "\\ud800"}', "/const"),
        ('{"enum": ["a", "x\\udfff"]}', "/enum/1"),
        ('{"properties": {"\\udbff": {}}}', "/properties"),
        ('["\\ud83d"]', "/0"),
    ],
)
def test_lone_surrogate_escapes_are_refused_with_a_pointer(text, pointer):
    err = error_of(text)
    assert err.code == "E_SCHEMA_JSON" and "lone surrogate" in err.message
    assert err.pointer == pointer
    str(err).encode("utf-8")  # the message itself is printable


def test_surrogate_pairs_and_escaped_backslashes_pass():
    assert read_json('["\\ud83d\\ude00"]', **OPTIONS) == ["\U0001f600"]
    assert read_json('{"a": "\\\\ud800"}', **OPTIONS) == {"a": "\\ud800"}
