"""The trj-1 lowering on its own: the AST it produces, the rules, options and pointers it records."""

from __future__ import annotations

import json
import random

from trgc.grammar.ast import Kind
from trgc.grammar.schema import lower_schema
from trgc.grammar.schema.canonical import canonical_instance
from trgc.grammar.schema.parse import canonical_json
from trgc.limits import DEFAULT_LIMITS

TREE = {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        }
    },
    "$ref": "#/$defs/node",
}


def lower(schema, **options):
    return lower_schema(schema, limits=DEFAULT_LIMITS, **options)


def test_grammar_header_and_options():
    g = lower({"type": "integer"}, separators="pretty", open_objects=True, max_depth=7)
    assert g.source_kind == "trj" and g.start == "root" and g.max_depth == 7
    assert g.options == {
        "draft": 2020,
        "ignore_keywords": [],
        "max_depth": 7,
        "open_objects": True,
        "profile": "trj-1",
        "annotations": [],
        "unknown_keywords": "error",
        "whitespace": "pretty",
    }
    assert [r.name for r in g.rules] == ["root"] and g.rules[0].pointer == ""


def test_refs_become_rules_named_after_their_pointer():
    g = lower(TREE)
    names = {r.name: r.pointer for r in g.rules}
    assert names == {"root": "", "s_node": "/$defs/node"}
    refs = [n.payload for n in g.nodes if n.kind == Kind.REF]
    assert refs.count("s_node") == 3  # the root's $ref, then the first and the later array elements


def test_any_value_rule_only_when_needed():
    assert [r.name for r in lower({"type": "string"}).rules] == ["root"]
    g = lower({"type": "array"})
    assert [r.name for r in g.rules] == ["root", "json_value"]


def test_every_node_is_well_formed_and_the_arena_is_a_tree():
    g = lower(
        json.loads(json.dumps(TREE))
        | {"properties": {"a": {"enum": ["x", "é"]}, "b": {"type": "string", "format": "date"}}}
    )
    parents = [0] * len(g.nodes)
    for node in g.nodes:
        for child in node.children:
            parents[child] += 1
        if node.kind == Kind.LITERAL:
            assert isinstance(node.payload, bytes) and node.payload
            node.payload.decode("utf-8")
        if node.kind == Kind.CLASS:
            ranges = node.payload
            assert list(ranges) == sorted(ranges)
            assert all(not (lo <= 0xDFFF and hi >= 0xD800) for lo, hi in ranges)
    assert max(parents) <= 1  # no node is shared between parents


def test_canonical_json_matches_json_dumps():
    rng = random.Random(5)
    for _ in range(200):
        value = {
            "k" + str(rng.randrange(9)): [
                rng.random(),
                rng.randrange(-5, 5),
                'é\n"',
                None,
                True,
                {"z": {}, "a": []},
            ]
            for _ in range(3)
        }
        assert canonical_json(value) == json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )


def test_canonical_instance_orders_members_like_the_schema():
    schema = {
        "properties": {"b": {"type": "object", "properties": {"y": {}, "x": {}}}, "a": {}},
        "allOf": [{"properties": {"c": {}}}],
    }
    instance = {"c": 3, "a": 1, "zz": 0, "b": {"x": 1, "y": 2}}
    assert canonical_instance(schema, instance) == b'{"b":{"y":2,"x":1},"a":1,"c":3,"zz":0}'
    assert (
        canonical_instance(schema, instance, "pretty")
        == b'{"b": {"y": 2, "x": 1}, "a": 1, "c": 3, "zz": 0}'
    )
