"""`$ref` targets used from several places are compiled once, as machines called from each use
(Lowering._share_repeated_refs), not inlined once per use: a definition used twice inside one
used twice, k levels deep, was 2^k copies in the start machine (most Kubernetes schemas with
open objects stopped at E_LIMIT_STATES). Exact against jsonschema on seeded walks and pools."""

from __future__ import annotations

import json

import pytest

import trgc
from schema_helpers import agree, compiled
from test_schema_soundness import check_samples

LEAF = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 8},
        "kind": {"enum": ["a", "b", "c"]},
        "size": {"type": "integer", "minimum": 0},
    },
    "required": ["name"],
}


def doubling(levels: int) -> dict:
    """`d{i+1}` holds two optional members that are both `d{i}`: 2^levels leaves inlined."""
    defs = {"d0": LEAF}
    for i in range(levels):
        ref = {"$ref": f"#/$defs/d{i}"}
        defs[f"d{i + 1}"] = {"type": "object", "properties": {"left": ref, "right": ref}}
    return {"$defs": defs, "$ref": f"#/$defs/d{levels}"}


def _stats(schema: dict) -> dict:
    return trgc.compile_schema(json.dumps(schema)).metadata["stats"]


def _rule_machines(schema: dict) -> list[str]:
    """The machines compiled from rules (counted repetitions, named `rule{}`, left out)."""
    return [m.name for m in trgc.compile_schema(json.dumps(schema)).machines if "{" not in m.name]


def test_a_doubling_chain_grows_linearly():
    states = [_stats(doubling(k))["states"] for k in (8, 9, 10, 16)]
    step = states[1] - states[0]
    assert states[2] - states[1] == step
    assert states[3] == states[0] + 8 * step  # one machine more per level, never a copy


def test_each_repeated_definition_is_one_machine():
    # root inlines d6 (used once); d0..d5 are each used twice
    assert _rule_machines(doubling(6)) == ["root"] + [f"s_d{i}" for i in range(5, -1, -1)]


def test_a_definition_used_once_or_small_is_inlined():
    small = {"type": "string", "maxLength": 3}
    schema = {
        "$defs": {"s": small, "big": LEAF},
        "type": "object",
        "properties": {
            "c": {"$ref": "#/$defs/big"},
            "a": {"$ref": "#/$defs/s"},
            "b": {"$ref": "#/$defs/s"},
        },
        "required": ["c"],  # first and required: written once (an optional one twice)
    }
    assert _rule_machines(schema) == ["root"]


@pytest.mark.parametrize("open_objects", [False, True])
def test_seeded_walks_are_valid(open_objects):
    schema = doubling(4)
    artifact = compiled(schema, open_objects=open_objects)
    assert check_samples(schema, artifact, seed=4, count=60) > 0


POOL = [
    "{}",
    '{"left":{}}',
    '{"left":{"left":{"left":{"left":{"name":"x"}}}}}',
    '{"left":{"left":{"left":{"left":{"name":"x","kind":"d"}}}}}',
    '{"left":{"left":{"left":{"left":{"kind":"a"}}}}}',
    '{"right":{"right":{"right":{"right":{"name":"abcdefghi"}}}}}',
    '{"left":{"right":{"left":{"right":{"name":"","size":3}}}},"right":{}}',
    '{"left":{"left":{"left":{"right":{"name":"q","kind":"b","size":-1}}}}}',
    '{"right":{"left":{"right":{"left":{"name":"q","kind":"c","size":0}}}}}',
    '{"left":{"left":{"left":{"left":{"left":{"name":"x"}}}}}}',
]


@pytest.mark.parametrize("text", POOL)
def test_every_pool_document_is_decided_as_jsonschema_decides(text):
    assert agree(doubling(4), text)


def test_a_conflicting_shared_use_is_inlined_again_and_stays_exact():
    """Two definitions that both start with `{` behind an anyOf cannot be called (the choice
    is decided inside them): the compiler inlines them again, as before."""
    a = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    b = {"type": "object", "properties": {"y": {"type": "string"}}, "required": ["y"]}
    schema = {
        "$defs": {"A": a, "B": b},
        "type": "object",
        "properties": {
            "p": {"anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]},
            "q": {"anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]},
        },
    }
    for text in ['{"p":{"x":1},"q":{"y":"s"}}', '{"p":{"y":1}}', '{"q":{"x":"s"}}', '{"p":{}}']:
        assert agree(schema, text), text
