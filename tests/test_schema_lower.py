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
    # the root's $ref, then the array element (one node, first and after a comma: a join)
    assert refs.count("s_node") == 2


def test_any_value_rule_only_when_needed():
    assert [r.name for r in lower({"type": "string"}).rules] == ["root"]
    g = lower({"type": "array"})
    assert [r.name for r in g.rules] == ["root", "json_value"]


def _join_member(g, at: int) -> int | None:
    """The member of a join `(chain (sep m)?) | m` or `(chain sep m) | m`, or the item of a
    list join `x (sep x)*`, at node `at`."""
    node = g.nodes[at]
    if node.kind == Kind.SEQ and len(node.children) == 2:
        item, more = node.children[0], g.nodes[node.children[1]]
        if more.kind == Kind.REPEAT and more.payload == (0, None):
            step = g.nodes[more.children[0]]
            if step.kind == Kind.SEQ and step.children[-1] == item:
                return item
        return None
    if node.kind != Kind.ALT or len(node.children) != 2:
        return None
    head, member = (g.nodes[c] for c in node.children)
    if head.kind != Kind.SEQ or len(head.children) != 2:
        return None
    tail = g.nodes[head.children[1]]
    if tail.kind == Kind.REPEAT and tail.payload == (0, 1):
        tail = g.nodes[tail.children[0]]
    if tail.kind == Kind.SEQ and tail.children[-1] == node.children[1]:
        return node.children[1]
    return None


def test_every_node_is_well_formed_and_the_arena_is_a_tree_but_for_joins_and_suffixes():
    g = lower(
        json.loads(json.dumps(TREE))
        | {
            "properties": {
                "a": {"enum": ["x", "é"]},
                "b": {"type": "string", "format": "date"},
                "c": {"type": "integer", "minimum": 7},
            }
        }
    )
    parents = [0] * len(g.nodes)
    joined = {_join_member(g, i) for i in range(len(g.nodes))} - {None}
    assert joined  # the optional members of TREE come first or after a comma
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
    # a node has one parent, but a join's member or item, which has two, and a suffix (the
    # free digits ending an integer's branches), which the NFA builder builds once
    assert g.suffixes and all(parents[i] >= 2 for i in g.suffixes)
    assert all(
        count <= 1 or (i in joined and count == 2) or i in g.suffixes
        for i, count in enumerate(parents)
    )


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
