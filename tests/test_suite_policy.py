"""The suite's skip policy (tests/conftest.py): with TRGC_REQUIRE_ALL_TESTS set, as .ci/run
sets it when ../shared is present, a skipped test or module fails and names what was missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

SAMPLE = """
import pytest

def test_runs():
    assert True

def test_needs_a_corpus():
    pytest.skip("the corpus is missing: /nowhere/corpus")

@pytest.mark.xfail(reason="known", strict=True)
def test_expected_failure():
    assert False
"""
MODULE_SKIP = """
import pytest
pytest.importorskip("no_such_module_for_trgc", reason="no_such_module_for_trgc is not installed")

def test_never():
    assert True
"""


def _pytest(tmp_path: Path, require_all: bool, *files: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    (tmp_path / "test_module_skip.py").write_text(MODULE_SKIP)
    env = {k: v for k, v in os.environ.items() if k != "TRGC_REQUIRE_ALL_TESTS"}
    env["PYTHONPATH"] = str(TESTS)
    if require_all:
        env["TRGC_REQUIRE_ALL_TESTS"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q", "-rfs", *(files or ["."])],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip


def test_skips_are_allowed_and_named_in_a_local_run(tmp_path):
    result = _pytest(tmp_path, require_all=False)
    assert result.returncode == 0, result.stdout
    assert "1 passed, 2 skipped, 1 xfailed" in result.stdout
    assert "the corpus is missing: /nowhere/corpus" in result.stdout


def test_every_skip_fails_when_the_run_must_be_complete(tmp_path):
    result = _pytest(tmp_path, True, "test_sample.py")
    assert result.returncode == 1, result.stdout
    out = result.stdout
    assert "skipped although TRGC_REQUIRE_ALL_TESTS is set" in out
    assert "the corpus is missing: /nowhere/corpus" in out
    assert "1 failed, 1 passed, 1 xfailed" in out  # an expected failure is not a skip


def test_a_skipped_module_stops_a_run_that_must_be_complete(tmp_path):
    result = _pytest(tmp_path, True)
    assert result.returncode != 0, result.stdout
    assert "ERROR collecting test_module_skip.py" in result.stdout
    assert "no_such_module_for_trgc is not installed" in result.stdout


def test_ci_requires_every_test_when_shared_is_present():
    script = (TESTS.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "if [ -d ../shared ]; then\n    export TRGC_REQUIRE_ALL_TESTS=1\nfi\nmake test" in script
