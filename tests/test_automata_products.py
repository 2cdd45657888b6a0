"""Automata products shared within a compilation attempt (`reuse.ProductMemo`).

An AND node whose subtree equals one built before in the same attempt takes that product
instead of determinising its operands and walking their product again. That must be invisible:
the same artifact bytes, the same operations charged and table stats, and the same refusal at
every operations limit, as building every product. The reference is the driver with
`ProductMemo.reuse` switched off.
"""

from __future__ import annotations

import pytest

import trgc
from schema_helpers import CORPORA
from trgc.automata import boolean, machines, reuse
from trgc.errors import TrgcError
from trgc.limits import DEFAULT_LIMITS

BENCH = CORPORA / "jsonschemabench"
# a 65 KB Rancher schema whose objects build the same product 9 times without the memo (34
# before equal shared rules were merged, 68 before joins)
RANCHER = BENCH / "JsonSchemaStore" / "00d2565563cda531.json"

# an object with declared members, a pattern for others and nothing else: member names are
# products ("matches ^x and is none of the declared names", "is none of those")
PATTERNED = {
    "type": "object",
    "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
    "patternProperties": {"^x": {"type": "integer"}},
    "additionalProperties": False,
}
# four copies with equal member names and different values (equal copies, or a `$ref`,
# would be one shared machine instead)
REPEATED = {
    "type": "object",
    "properties": {
        f"p{i}": PATTERNED | {"properties": {"a": {"type": "string"}, "b": {"type": kind}}}
        for i, kind in enumerate(("integer", "number", "boolean", "null"))
    },
}


def _compile(monkeypatch, schema, *, share: bool, limits=DEFAULT_LIMITS):
    """(artifact bytes or refusal, table stats, products built, reuses refused for budget)."""
    stats: list[dict] = []
    built: list[str] = []
    stepped_aside: list[bool] = []
    real_product, real_reuse = boolean.product, reuse.ProductMemo.reuse
    real_build = machines.build_tables

    def product(*args, **kwargs):
        built.append(kwargs["what"])
        return real_product(*args, **kwargs)

    def reuse_(self, node_id):
        if not share:
            return None
        found = real_reuse(self, node_id)
        if found is None and self.built.get(self.structure.loose(node_id)) is not None:
            stepped_aside.append(True)
        return found

    def build(*args, **kwargs):
        tables = real_build(*args, **kwargs)
        stats.append(dict(tables.stats))
        return tables

    monkeypatch.setattr(boolean, "product", product)
    monkeypatch.setattr(reuse.ProductMemo, "reuse", reuse_)
    monkeypatch.setattr(machines, "build_tables", build)
    try:
        out = trgc.compile_schema(schema, separators="compact", limits=limits).to_bytes()
    except TrgcError as error:
        out = (error.code, error.message)
    monkeypatch.undo()
    return out, stats, len(built), bool(stepped_aside)


def test_an_equal_product_is_built_once_and_charged_as_built(monkeypatch):
    shared, shared_stats, shared_built, _ = _compile(monkeypatch, REPEATED, share=True)
    plain, plain_stats, plain_built, _ = _compile(monkeypatch, REPEATED, share=False)
    assert isinstance(shared, bytes)
    assert shared == plain
    assert shared_stats == plain_stats  # operations charged, states, transitions, sizes
    single = _compile(monkeypatch, PATTERNED, share=True)[2]
    single_plain = _compile(monkeypatch, PATTERNED, share=False)[2]
    # one object already meets equal products in several places (its member names are
    # inlined once per position a member can take)
    assert 1 <= single < single_plain
    assert shared_built == single  # the three later copies took the first one's products
    # without the memo each of the four objects builds its own (their member-name regions
    # are one shared rule, `Lowering._shared_rule`, but a rule that is not a machine is
    # inlined where it is used)
    assert plain_built == 4 * single_plain


def test_products_refuse_at_every_operations_limit_as_rebuilt_ones_do(monkeypatch):
    _, stats, _, _ = _compile(monkeypatch, REPEATED, share=True)
    operations = stats[0]["operations"]
    stepped = False
    for percent in range(40, 100):
        limits = DEFAULT_LIMITS.with_overrides({"operations": operations * percent // 100})
        shared, _, _, aside = _compile(monkeypatch, REPEATED, share=True, limits=limits)
        assert shared == _compile(monkeypatch, REPEATED, share=False, limits=limits)[0]
        assert shared[0] == "E_LIMIT_OPERATIONS"
        stepped |= aside
    # some limit fell inside a reuse's charge, where the memo built the product again
    assert stepped


@pytest.mark.skipif(
    not RANCHER.is_file(), reason=f"the JSONSchemaBench corpus is missing: {RANCHER}"
)
def test_a_corpus_schema_that_repeats_one_product_builds_it_once(monkeypatch):
    raw = RANCHER.read_bytes()
    shared, shared_stats, shared_built, _ = _compile(monkeypatch, raw, share=True)
    plain, plain_stats, plain_built, _ = _compile(monkeypatch, raw, share=False)
    assert isinstance(shared, bytes)
    assert shared == plain
    assert shared_stats == plain_stats
    assert (shared_built, plain_built) == (1, 9)
