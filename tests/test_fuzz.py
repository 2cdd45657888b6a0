"""The fuzzing campaign's CI share: a fixed, bounded number of structure-aware examples of every
input kind (tests/fuzz_targets.py), each ending in acceptance or a stable code within its CPU and
memory bounds. `make fuzz` runs the same targets for hours (scripts/fuzz.py).

Examples are derandomized, so the suite sees the same inputs on every run; the long campaign
draws fresh ones.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from fuzz_targets import KINDS

# a falsifying binary example can be large; Hypothesis warns before printing it
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

CI_EXAMPLES = {
    "trg": 100,
    "schema": 100,
    "tokenizer": 60,
    "artifact": 100,
    "token-table": 60,
    "mask-cache": 60,
    "trace": 40,
    "lock": 40,
}
CI = settings(
    max_examples=1,  # replaced per kind below
    deadline=None,  # no timing assertions: the CPU guard in each target bounds an example
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


def test_every_kind_has_a_ci_share():
    assert set(CI_EXAMPLES) == set(KINDS)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_fuzz(kind):
    strategy, target = KINDS[kind]

    @settings(CI, max_examples=CI_EXAMPLES[kind])
    @given(strategy)
    def run(case):
        target(case)

    run()
