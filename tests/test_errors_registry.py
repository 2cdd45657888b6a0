"""The error-code registry: documented, raised somewhere, and tested somewhere."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from trgc.errors import CODES, TrgcError, exit_status

ROOT = Path(__file__).resolve().parents[1]
CODE_RE = re.compile(r"\bE_[A-Z0-9_]+\b")


def _codes_in(paths) -> set[str]:
    found: set[str] = set()
    for path in paths:
        found |= set(CODE_RE.findall(path.read_text(encoding="utf-8")))
    return found


def test_docs_errors_page_is_fresh():
    result = subprocess.run(
        [sys.executable, "scripts/gen_docs.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_every_code_used_in_source_is_registered():
    used = _codes_in((ROOT / "src").rglob("*.py")) - {"E_LIMIT_"}
    assert sorted(used - set(CODES)) == []


def test_every_registered_code_is_raised_in_source():
    raised = _codes_in(p for p in (ROOT / "src").rglob("*.py") if p.name != "errors.py")
    # E_LIMIT_<NAME> codes are built from the limit name by trgc.limits.check_limit
    from trgc.limits import LIMIT_NAMES

    raised |= {f"E_LIMIT_{name.upper()}" for name in LIMIT_NAMES}
    assert sorted(set(CODES) - raised) == []


def test_every_registered_code_is_exercised_by_a_test():
    tested = _codes_in(
        p for p in (ROOT / "tests").rglob("*.py") if p.name != "test_errors_registry.py"
    )
    assert sorted(set(CODES) - tested) == []


def test_unregistered_code_is_refused():
    with pytest.raises(ValueError):
        TrgcError("E_NOT_A_CODE", "x")


def test_exit_status_mapping():
    assert exit_status("E_LIMIT_STATES") == 3
    assert exit_status("E_INTERNAL") == 70
    assert exit_status("E_USAGE") == 2
