"""Limits: defaults from the report, overrides from options and TOML, the operation budget."""

from __future__ import annotations

import pytest

from trgc.errors import TrgcError
from trgc.limits import DEFAULT_LIMITS, Budget, check_limit, parse_limit_option, resolve_limits


def test_report_defaults():
    assert DEFAULT_LIMITS.states == 65_536
    assert DEFAULT_LIMITS.transitions == 1_048_576
    assert DEFAULT_LIMITS.compiled_bytes == 32 * 1024 * 1024
    assert DEFAULT_LIMITS.operations == 50_000_000
    assert DEFAULT_LIMITS.input_bytes == 1024 * 1024
    assert DEFAULT_LIMITS.cache_bytes == 64 * 1024 * 1024


def test_option_and_file_overrides(tmp_path):
    path = tmp_path / "limits.toml"
    path.write_text("[limits]\nstates = 10\noperations = 99\n")
    limits = resolve_limits(["operations=1_000"], path)
    assert limits.states == 10
    assert limits.operations == 1000  # the option wins over the file


def test_unknown_limit_name():
    with pytest.raises(TrgcError) as info:
        resolve_limits(["stats=3"])
    assert info.value.code == "E_LIMIT_UNKNOWN"
    assert "states" in info.value.hint


@pytest.mark.parametrize("text", ["states", "=3", "states=x", "states=-1"])
def test_bad_limit_option(text):
    with pytest.raises(TrgcError) as info:
        resolve_limits([text])
    assert info.value.code == "E_USAGE"


def test_limits_file_with_unknown_table(tmp_path):
    path = tmp_path / "limits.toml"
    path.write_text("[limit]\nstates = 10\n")
    with pytest.raises(TrgcError) as info:
        resolve_limits(None, path)
    assert info.value.code == "E_USAGE"


def test_missing_limits_file(tmp_path):
    with pytest.raises(TrgcError) as info:
        resolve_limits(None, tmp_path / "absent.toml")
    assert info.value.code == "E_IO"


def test_budget_runs_out():
    budget = Budget(5)
    budget.charge(5)
    with pytest.raises(TrgcError) as info:
        budget.charge()
    assert info.value.code == "E_LIMIT_OPERATIONS"
    assert info.value.exit_status == 3


def test_check_limit_code_follows_name():
    check_limit("states", 10, 10, "x")
    with pytest.raises(TrgcError) as info:
        check_limit("states", 11, 10, "x")
    assert info.value.code == "E_LIMIT_STATES"
    assert parse_limit_option(" states = 7 ") == ("states", 7)
