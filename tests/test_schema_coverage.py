"""JSONSchemaBench coverage and the MaskBench-style instance check on a fixed sample (slow).

Every tenth schema of every subset (by file name) is compiled; for each compiled schema the
upstream valid instances, re-serialised canonically, must be accepted or explained by the
profile, and no invalid instance may ever be accepted (hard requirement).
"""

from __future__ import annotations

import pytest

from schema_helpers import CORPORA
from trgc.evaluation.coverage import read_instances, report, run_schema, subsets_of

BENCH = CORPORA / "jsonschemabench"
INSTANCES = CORPORA / "jsonschemabench-instances"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}"
    ),
]


@pytest.fixture(scope="module")
def sample_report() -> dict:
    results = []
    for subset in subsets_of(BENCH):
        instances = (
            read_instances(INSTANCES / f"{subset}.jsonl.gz")
            if (INSTANCES / f"{subset}.jsonl.gz").is_file()
            else {}
        )
        for path in sorted((BENCH / subset).glob("*.json"))[::10]:
            results.append(
                run_schema(
                    subset, path, instances.get(path.name, []), separators="compact", limits=None
                )
            )
    return report(results)


def test_no_invalid_instance_is_accepted(sample_report):
    assert sample_report["total"]["wrongly_accepted"] == 0
    for name, s in sample_report["subsets"].items():
        assert s["wrongly_accepted"] == [], name


def test_every_schema_has_an_outcome(sample_report):
    for name, s in sample_report["subsets"].items():
        assert (
            s["compiled"] + s["unsupported"] + sum(s["failed_by_code"].values()) == s["schemas"]
        ), name
        assert not any(code == "E_INTERNAL" for code in s["failed_by_code"]), name


def test_coverage_floor(sample_report):
    """A floor, not a target: catches a lowering change that silently refuses many schemas."""
    subsets = sample_report["subsets"]
    assert subsets["Glaiveai2K"]["compiled_pct"] >= 85
    assert sample_report["total"]["compiled"] >= 0.35 * sample_report["total"]["schemas"]
    assert sample_report["total"]["passing"] > 0
