"""Machines carried across the retry after a predictive conflict (`reuse.Carried`).

A retry inlines shared rules and copies counted repetitions that were involved in a conflict;
every machine whose NFA met none of them is taken from the previous attempt instead of being
built again. That must be invisible: the same artifact bytes, the same operations charged and
the same running totals as building every machine in every attempt, and the same refusals
when a limit is reached. The reference is the driver with `Carried.take` switched off.
"""

from __future__ import annotations

import json

import pytest

import trgc
from schema_helpers import CORPORA
from trgc.automata import boolean, machines, reuse
from trgc.errors import TrgcError
from trgc.limits import DEFAULT_LIMITS

BENCH = CORPORA / "jsonschemabench"
# schemas of the sample whose first attempt conflicts (2 or 3 attempts, 05ee6c7f 4) and whose
# retry keeps some machines (the start rule's machine meets every changed construct, so a
# schema with few machines has none to keep)
RETRIED = [
    "JsonSchemaStore/4d6eb78187d53507",
    "Github_ultra/78553bfeebec3b89",
    "JsonSchemaStore/08b61333a18cdadc",
    "Github_medium/0bd89b4ab464f9fa",
    "Github_medium/0d4b8e17a0cb5e2e",
    "Github_easy/13e2c6a2eda3d591",
    "JsonSchemaStore/05ee6c7fb6b382fa",
    # a product in the first attempt, call-free, which the retry takes too
    "Github_ultra/15319ee74151ae2c",
]


def _compile(monkeypatch, raw: bytes, *, carry: bool, limits=DEFAULT_LIMITS):
    """(artifact bytes or refusal, stats of the tables, machines taken from a retry, products
    built)."""
    stats: list[dict] = []
    taken: list[str] = []
    products: list[str] = []
    real_build, real_take = machines.build_tables, reuse.Carried.take
    real_over, real_product = reuse.Carried.products_over, boolean.product

    def build(*args, **kwargs):
        tables = real_build(*args, **kwargs)
        stats.append(dict(tables.stats))
        return tables

    def take(self, name, *args):
        found = real_take(self, name, *args) if carry else None
        if found is not None:
            taken.append(name)
        return found

    def over(self, alphabet):
        return real_over(self, alphabet) if carry else {}

    def product(*args, **kwargs):
        products.append(kwargs["what"])
        return real_product(*args, **kwargs)

    monkeypatch.setattr(machines, "build_tables", build)
    monkeypatch.setattr(reuse.Carried, "take", take)
    monkeypatch.setattr(reuse.Carried, "products_over", over)
    monkeypatch.setattr(boolean, "product", product)
    try:
        out = trgc.compile_schema(raw, separators="compact", limits=limits).to_bytes()
    except TrgcError as error:
        out = (error.code, error.message)
    monkeypatch.undo()
    return out, stats, taken, products


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
@pytest.mark.parametrize("name", RETRIED)
def test_carried_machines_change_no_byte_and_no_charge(monkeypatch, name):
    raw = (BENCH / f"{name}.json").read_bytes()
    fast, fast_stats, taken, built = _compile(monkeypatch, raw, carry=True)
    plain, plain_stats, _, plain_built = _compile(monkeypatch, raw, carry=False)
    assert fast == plain
    assert fast_stats == plain_stats
    assert fast_stats[0]["attempts"] > 1
    assert taken  # the retry did keep machines of the first attempt
    assert len(built) <= len(plain_built)
    if name == RETRIED[-1]:
        assert len(built) < len(plain_built)  # and call-free products


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
def test_carried_machines_refuse_at_the_limits_where_rebuilt_ones_do(monkeypatch):
    raw = (BENCH / f"{RETRIED[-2]}.json").read_bytes()
    _, stats, _, _ = _compile(monkeypatch, raw, carry=True)
    operations = stats[0]["operations"]
    for fraction in (0.5, 0.8, 0.95, 0.99):
        limits = DEFAULT_LIMITS.with_overrides({"operations": int(operations * fraction)})
        fast = _compile(monkeypatch, raw, carry=True, limits=limits)[0]
        assert fast == _compile(monkeypatch, raw, carry=False, limits=limits)[0]
        assert fast[0] == "E_LIMIT_OPERATIONS"


@pytest.mark.parametrize("fmt", ["hostname", "email", "uri"])
def test_host_names_compile_in_one_attempt(monkeypatch, fmt):
    """A host name's two optional labels are nested options, not a repetition `{0,2}`: counted,
    it conflicted with the top-level domain (after a label, "." starts either), so every
    schema with a host name paid a whole failed attempt before the retry copied it."""
    value = {"type": "string", "format": fmt}
    schema = {
        "type": "object",
        "properties": {"a": value, "b": {"type": "array", "items": value}},
        "required": ["a"],
    }
    _, stats, _, _ = _compile(monkeypatch, json.dumps(schema).encode(), carry=True)
    assert stats[0]["attempts"] == 1
