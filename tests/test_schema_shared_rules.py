"""Equal shared bodies are one rule (`Lowering._shared_rule`, `Builder.shape`).

The lowering makes a shared rule (a machine called from every use) for a large value it uses
more than once, and it can lower the same subschema again in another place. Two equal shared
rules were two machines whose calls competed for the same bytes wherever both could come
next: a conflict that had both inlined after a failed attempt. A body equal node for node to
an earlier one now gets the earlier rule. The reference is the lowering with every body a
shape of its own (the previous behaviour): the languages must be equal.
"""

from __future__ import annotations

import itertools
import random

import pytest

import trgc
from schema_helpers import CORPORA
from trgc.artifact.check import check
from trgc.artifact.diff import compare_languages
from trgc.automata import machines
from trgc.evaluation.walk import sample
from trgc.grammar.ast import Grammar
from trgc.grammar.schema import lower_schema, strings
from trgc.grammar.schema.nodes import Builder
from trgc.limits import DEFAULT_LIMITS

BENCH = CORPORA / "jsonschemabench"
# the same array of feed attachments lowered twice; the two equal rules conflicted
ATTACHMENTS = "Github_hard/1757315b312dfd89"


def test_shape_is_equality_node_for_node():
    b = Builder(Grammar())
    one, two = strings.string(b, 0, 30), strings.string(b, 0, 30)
    other = strings.string(b, 0, 31)
    assert one != two
    assert b.shape(one) == b.shape(two)
    assert b.shape(other) != b.shape(one)
    # a suffix mark changes how the NFA is built: not the same shape
    marked = strings.string(b, 0, 30)
    b.grammar.suffixes.add(marked)
    assert b.shape(marked) != b.shape(one)
    # order matters in a sequence
    x, y = b.lit("x"), b.lit("y")
    assert b.shape(b.seq(x, y)) != b.shape(b.seq(y, x))
    assert b.shape(b.seq(x, y)) == b.shape(b.seq(b.lit("x"), b.lit("y")))


def _compile(monkeypatch, raw: bytes, *, merge: bool):
    """(artifact, attempts): with `merge` off, every shared body is a shape of its own."""
    attempts: list[int] = []
    real_build = machines.build_tables

    def build(*args, **kwargs):
        tables = real_build(*args, **kwargs)
        attempts.append(tables.stats["attempts"])
        return tables

    monkeypatch.setattr(machines, "build_tables", build)
    if not merge:
        fresh = itertools.count()
        monkeypatch.setattr(Builder, "shape", lambda self, root: next(fresh))
    artifact = trgc.compile_schema(raw, separators="compact")
    monkeypatch.undo()
    return artifact, attempts


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
def test_equal_shared_rules_are_one_machine_with_the_same_language(monkeypatch):
    raw = (BENCH / f"{ATTACHMENTS}.json").read_bytes()
    merged, merged_attempts = _compile(monkeypatch, raw, merge=True)
    apart, apart_attempts = _compile(monkeypatch, raw, merge=False)
    assert merged_attempts == [1]
    assert apart_attempts == [2]
    # the same language: no distinguishing input within the bound, and every seeded walk of
    # either artifact accepted by the other
    assert compare_languages(merged, apart, max_nodes=50_000).status != "different"
    rng = random.Random(1757315)
    walked = 0
    for a, b in ((merged, apart), (apart, merged)):
        for _ in range(40):
            data = sample(a, rng)
            if data is not None:
                walked += 1
                assert check(b, data).accepted, data[:200]
    assert walked > 60


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
def test_definitions_used_from_merged_copies_stay_shared(monkeypatch):
    """The two equal rules of this schema reference five definitions, shared because they
    are used from both. Merged, the references of the dropped copy still count: inlined into
    the one rule instead, they grew it from 254 to 6,133 states."""
    raw = (BENCH / "JsonSchemaStore/0d45b106a26a4d85.json").read_bytes()
    merged, _ = _compile(monkeypatch, raw, merge=True)
    apart, _ = _compile(monkeypatch, raw, merge=False)
    names = {m.name for m in merged.machines}
    assert {"s_env", "s_rules", "s_globals", "s_plugins", "s_parserOptions"} <= names
    assert sum(m.n_states for m in merged.machines) < sum(m.n_states for m in apart.machines)
    assert compare_languages(merged, apart, max_nodes=50_000).status != "different"


# a definition too large to copy (more than the lowering's 48 nodes)
BIG = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(8)},
       "required": ["p0"]}  # fmt: skip


@pytest.mark.parametrize(
    "elsewhere, alone",
    [
        ({"anyOf": [{"$ref": "#/$defs/big"}, {"type": "null"}]}, False),
        ({"type": "object", "properties": {"x": {"$ref": "#/$defs/big"}}}, False),
        # the first item and the items after it are two uses already
        ({"type": "array", "items": {"$ref": "#/$defs/big"}, "maxItems": 5}, True),
    ],
    ids=["alternative", "optional-member", "array-items"],
)
def test_a_definition_used_twice_is_shared_wherever_the_uses_are(elsewhere, alone):
    """A large definition used from two places is one shared rule, whatever node the uses sit
    under (`_share_repeated_refs` counts every path to a reference); used once, it is not."""

    def shared(properties: dict) -> bool:
        schema = {"$defs": {"big": BIG}, "type": "object", "properties": properties}
        grammar = lower_schema(schema, separators="compact", limits=DEFAULT_LIMITS)
        (rule,) = [r for r in grammar.rules if r.pointer == "/$defs/big"]
        return rule.shared

    assert shared({"a": elsewhere, "b": {"$ref": "#/$defs/big"}})
    assert shared({"a": elsewhere}) == alone
