"""User input never ends in an internal error: every hostile case of issue 17 gets a stable code,
exit status 2 or 3, and no traceback (each case here exited 70 with a traceback before)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import trgc
from trgc.cli.app import app
from trgc.errors import TrgcError

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def invoke(args: list[str], stdin: bytes | None = None):
    return runner.invoke(app, args, input=stdin, catch_exceptions=False)


def expect_error(args: list[str], code: str, status: int = 2, stdin: bytes | None = None) -> dict:
    """Run with --json; require one JSON error document with `code`, the exit status, and no
    traceback anywhere."""
    result = invoke([*args, "--json"], stdin)
    assert "Traceback" not in result.output + result.stderr
    assert result.exit_code == status, result.output + result.stderr
    assert result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["code"] == code, error
    return error


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        ('{"const": 1e400}', None),
        ('{"enum": [1e400, 2]}', None),
        ('{"const": "\\ud800"}', "/const"),
        ('{"enum": ["a", "\\udc00"]}', "/enum/1"),
        ('{"type": "object", "properties": {"\\ud800": {"type": "integer"}}}', "/properties"),
    ],
)
def test_schema_numbers_and_surrogates(tmp_path, text, pointer):
    path = tmp_path / "s.json"
    path.write_text(text, encoding="utf-8")
    error = expect_error(["compile", str(path)], "E_SCHEMA_JSON")
    assert error.get("pointer") == pointer


@pytest.mark.parametrize(
    "schema", [{"const": "\ud800"}, {"properties": {"\udfff": {}}}, {"enum": [float("inf")]}]
)
def test_schema_values_from_python(schema):
    with pytest.raises(TrgcError) as info:
        trgc.compile_schema(schema)
    assert info.value.code == "E_SCHEMA_INVALID"
