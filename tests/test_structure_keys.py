"""Structural keys of AST subtrees (`reuse.StructureKeys`), which decide what a compilation
attempt builds once and shares (machines, automata products).

Two nodes must get the same key exactly when their subtrees are the same structure (kinds,
payloads, children in order, and for a repetition its machine plan); the reference here is that
structure written out as nested tuples. The keys are computed in one pass in ascending arena
order, which relies on children preceding their parent in the arena: that is checked too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trgc.automata.reuse import StructureKeys
from trgc.grammar.ast import Grammar, Kind
from trgc.grammar.parser import parse_grammar
from trgc.grammar.schema import load_schema, lower_schema
from trgc.grammar.schema.nodes import Builder
from trgc.limits import DEFAULT_LIMITS

ROOT = Path(__file__).resolve().parents[1]
GRAMMARS = sorted((ROOT / "grammars").glob("*.trg"))
SCHEMAS = sorted((ROOT / "schemas").glob("*.json"))
# repeated pieces at several depths, so that equal subtrees occur under different parents
NESTED = {
    "type": "object",
    "properties": {
        "a": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4},
        "b": {"type": "string", "maxLength": 12},
        "c": {"type": "object", "properties": {"b": {"type": "string", "maxLength": 12}}},
        "d": {"enum": ["x", "y", 3]},
        "e": {"type": "array", "items": {"enum": ["x", "y", 3]}, "minItems": 2, "maxItems": 9},
    },
    "required": ["a"],
}


def _grammars() -> list[tuple[str, Grammar]]:
    out = [(p.name, parse_grammar(p.read_bytes(), source=p.name)) for p in GRAMMARS]
    for name, raw in [(p.name, p.read_bytes()) for p in SCHEMAS] + [
        ("nested", json.dumps(NESTED).encode())
    ]:
        value, digest = load_schema(raw, DEFAULT_LIMITS)
        out.append((name, lower_schema(value, limits=DEFAULT_LIMITS, source_sha256=digest)))
    return out


GRAMMAR_CASES = _grammars()


def _plan(grammar: Grammar) -> tuple[dict[int, str], frozenset[int]]:
    """A machine plan touching every kind of repetition: every third counted, as one of two
    machines (so equal repetitions share a name or not), every fifth copied."""
    repeats = [i for i, node in enumerate(grammar.nodes) if node.kind == Kind.REPEAT]
    counted = {i: f"rep{(i // 3) % 2}" for i in repeats[::3]}
    return counted, frozenset(repeats[1::5])


def _reference(grammar: Grammar, repeats: dict[int, str], expand: frozenset[int]):
    """Per node (loose, named) structure as nested tuples, by plain recursion on demand."""
    loose: dict[int, tuple] = {}
    named: dict[int, tuple] = {}

    def of(node_id: int) -> None:
        if node_id in loose:
            return
        node = grammar.nodes[node_id]
        for child in node.children:
            of(child)
        lc = tuple(loose[c] for c in node.children)
        nc = tuple(named[c] for c in node.children)
        if node.kind == Kind.REPEAT:
            machine = repeats.get(node_id)
            loose[node_id] = (node.kind, node.payload, lc, machine is not None, node_id in expand)
            named[node_id] = (node.kind, node.payload, nc, machine, node_id in expand)
        else:
            loose[node_id] = (node.kind, node.payload, lc)
            named[node_id] = (node.kind, node.payload, nc)

    for node_id in range(len(grammar.nodes)):
        of(node_id)
    return loose, named


@pytest.mark.parametrize("name, grammar", GRAMMAR_CASES, ids=[n for n, _ in GRAMMAR_CASES])
def test_children_precede_their_parent_in_the_arena(name, grammar):
    assert all(c < i for i, node in enumerate(grammar.nodes) for c in node.children)


@pytest.mark.parametrize("name, grammar", GRAMMAR_CASES, ids=[n for n, _ in GRAMMAR_CASES])
def test_equal_keys_exactly_for_equal_structures(name, grammar):
    repeats, expand = _plan(grammar)
    loose, named = _reference(grammar, repeats, expand)
    # ask from the top down (roots first, as the driver does) and from the leaves up; then
    # every stamped copy first, one at a time, so that copies take their template's number
    # (the plan counts and copies some repetitions of one copy and not of another)
    order = list(range(len(grammar.nodes) - 1, -1, -1))
    stamped = sorted(grammar.stamped)
    for asked in (order[::2] + order[1::2], stamped + order):
        keys = StructureKeys(grammar, repeats, expand)
        got = {i: (keys.loose(i), keys.named(i)) for i in asked}
        for which, reference in ((0, loose), (1, named)):
            by_key: dict[int, tuple] = {}
            by_structure: dict[tuple, int] = {}
            for node_id, pair in got.items():
                structure = reference[node_id]
                assert by_key.setdefault(pair[which], structure) == structure
                assert by_structure.setdefault(structure, pair[which]) == pair[which]
    # the cases share structure, or the test would show nothing
    assert len({pair[0] for pair in got.values()}) < len(got)


def test_stamped_copies_are_keyed_by_their_own_plan():
    """Copies of one stamped template whose repetitions the plan counts or copies differently
    are keyed apart, loose and named; copies planned alike share their number."""
    b = Builder(Grammar())

    def template(b: Builder) -> int:
        return b.seq(b.lit("<"), b.rep(b.cls([(97, 122)]), 0, 9), b.rep(b.lit("-"), 1, 5))

    roots = [b.stamp("planned", template) for _ in range(6)]
    spans = [b.grammar.stamped[r][1:] for r in roots]
    reps = [[i for i in range(first, first + size) if b.grammar.nodes[i].kind == Kind.REPEAT]
            for first, size in spans]  # fmt: skip
    assert all(len(found) == 2 for found in reps)
    # copies 0 and 1 alike (nothing counted), 2 counts its first, 3 counts its second,
    # 4 copies its first, 5 counts its first as another machine (loosely alike 2)
    repeats = {reps[2][0]: "m", reps[3][1]: "m", reps[5][0]: "n"}
    expand = frozenset({reps[4][0]})
    loose, named = _reference(b.grammar, repeats, expand)
    keys = StructureKeys(b.grammar, repeats, expand)
    parents = [b.node(Kind.SEQ, (b.lit("("), r)) for r in roots]

    def under_parent(i: int) -> tuple[int, int]:
        """Copy `i`'s keys as met under its parent (the walk takes a copy whole there)."""
        keys.loose(parents[i])
        keys.named(parents[i])
        return keys.numbers[0][roots[i]], keys.numbers[1][roots[i]]

    # the first two asked for themselves (a machine's body), the others met under a parent
    got = [(keys.loose(r), keys.named(r)) for r in roots[:2]]
    got += [under_parent(i) for i in range(2, 6)]
    for i, j in [(i, j) for i in range(6) for j in range(6)]:
        assert (got[i][0] == got[j][0]) == (loose[roots[i]] == loose[roots[j]])
        assert (got[i][1] == got[j][1]) == (named[roots[i]] == named[roots[j]])
    assert got[0] == got[1] and got[2][0] == got[5][0] and got[2][1] != got[5][1]
    assert len({pair[0] for pair in got}) == 4 and len({pair[1] for pair in got}) == 5
