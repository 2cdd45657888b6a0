"""The JSON Schema Test Suite ratchet: every case classified, required cases all pass, nothing worse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schema_helpers import CORPORA
from trgc.evaluation.conformance import (
    CaseResult,
    baseline_document,
    compare,
    load_baseline,
    run_suite,
    summary,
)

SUITE = CORPORA / "json-schema-test-suite"
BASELINE = Path(__file__).resolve().parent / "data" / "jsts-classification.json"

pytestmark = pytest.mark.skipif(
    not SUITE.is_dir(), reason=f"the JSON Schema Test Suite corpus is missing: {SUITE}"
)


@pytest.fixture(scope="module")
def results() -> list[CaseResult]:
    return run_suite(SUITE)


def test_every_case_is_classified_and_nothing_got_worse(results):
    ratchet = compare(results, load_baseline(BASELINE))
    assert ratchet.missing == []
    assert ratchet.regressions == []
    assert ratchet.stale == []
    assert ratchet.failures == []


def test_required_cases_all_pass_and_no_invalid_instance_is_accepted(results):
    info = summary(results)
    assert info["required"] > 350
    assert info["required_passed"] == info["required"]
    assert info["invalid_accepted"] == 0


def test_outside_profile_cases_name_a_profile_rule(results):
    from trgc.grammar.schema.keywords import PROFILE_RULES

    reasons = {r.reason for r in results if r.category == "outside-profile"}
    assert reasons and reasons <= set(PROFILE_RULES)
    # only valid instances can be outside the profile: rejecting an invalid one is agreement
    assert all(
        r.valid or r.reason == "unsatisfiable" for r in results if r.category == "outside-profile"
    )


def test_unsupported_cases_name_a_keyword(results):
    from trgc.grammar.schema.keywords import STATUS

    for r in results:
        if r.category == "unsupported":
            head = r.reason.split(" ")[0]
            assert head in STATUS or head.startswith("E_"), r


def test_the_committed_classification_matches_a_fresh_document(results):
    committed = load_baseline(BASELINE)
    fresh = baseline_document(results, committed.get("revision"))
    assert fresh["cases"] == committed["cases"]


def test_ratchet_detects_regressions_and_improvements():
    def case(category: str, passed: bool = True, valid: bool = True) -> CaseResult:
        return CaseResult("f.json#0/0", "d", valid, category, "x", passed)

    base = {
        "cases": {"f.json#0/0": {"category": "outside-profile", "reason": "x", "description": "d"}}
    }
    assert compare([case("unsupported")], base).regressions == ["f.json#0/0"]
    assert compare([case("required")], base).improvements == ["f.json#0/0"]
    assert compare([case("required", passed=False, valid=False)], base).failures == ["f.json#0/0"]
    assert not compare([case("required", passed=False)], base).ok
    assert compare([case("outside-profile")], {"cases": {}}).missing == ["f.json#0/0"]
    assert compare([], base).stale == ["f.json#0/0"]


def test_baseline_file_is_canonical_json():
    text = BASELINE.read_text(encoding="utf-8")
    doc = json.loads(text)
    assert text == json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    assert set(doc) == {"suite", "revision", "cases"}
