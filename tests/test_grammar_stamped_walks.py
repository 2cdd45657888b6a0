"""Walks of a lowered grammar that take a stamped subtree (`Grammar.stamped`: a string, a date,
a number) whole: the analysis's postorder shifts the walk of the template's first copy,
`Builder.shape` numbers a copy by its template, and the lowering's count of rule references
does not enter one. Each gives what the plain walk gives, which enters every copy: the same
orders, the same shapes, the same artifact bytes and the same refusals."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from schema_helpers import BENCH_SUBSETS, CORPORA
from trgc import compile_schema
from trgc.artifact.codec import encode
from trgc.automata import machines, reuse
from trgc.errors import TrgcError
from trgc.grammar import analysis
from trgc.grammar.ast import Grammar
from trgc.grammar.schema import lower_schema, strings
from trgc.grammar.schema.nodes import Builder
from trgc.limits import DEFAULT_LIMITS, Budget

BENCH = CORPORA / "jsonschemabench"
SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"

# copies of every kind of template (an IPv6 address holds a counted repetition: keyed by its
# machine, not alike), some in a nested object, beside a `$ref` used twice (a shared rule:
# the count the lowering makes)
PATTERNED = {
    "type": "object",
    "properties": {
        **{f"s{i}": {"type": "string"} for i in range(5)},
        **{f"d{i}": {"type": "string", "format": "date-time"} for i in range(3)},
        **{f"n{i}": {"type": "number"} for i in range(3)},
        **{f"i{i}": {"type": "integer", "minimum": 0, "maximum": 150} for i in range(2)},
        **{f"a{i}": {"type": "string", "format": "ipv6"} for i in range(2)},
        "one": {"$ref": "#/$defs/point"},
        "two": {"$ref": "#/$defs/point"},
        "nested": {
            "type": "object",
            "properties": {"at": {"type": "string", "format": "date"}, "n": {"type": "number"}},
        },
    },
    "required": ["s0"],
    "$defs": {
        "point": {
            "type": "object",
            "properties": {
                **{f"c{i}": {"type": "number"} for i in range(4)},
                "label": {"type": "string"},
                "when": {"type": "string", "format": "date"},
            },
            "required": ["c0", "c1"],
        }
    },
}


def _schemas() -> list[tuple[str, object]]:
    """The patterned schema, the shipped ones and the first 12 of every corpus subset."""
    found = [("patterned", PATTERNED)]
    found += [(p.name, json.loads(p.read_text())) for p in sorted(SCHEMAS.glob("*.json"))]
    if BENCH.is_dir():
        for subset in BENCH_SUBSETS:
            for path in sorted((BENCH / subset).glob("*.json"))[:12]:
                found.append((f"{subset}/{path.name}", json.loads(path.read_text())))
    return found


def _lowered(schema) -> Grammar | None:
    try:
        return lower_schema(json.loads(json.dumps(schema)), separators="compact",
                            limits=DEFAULT_LIMITS)  # fmt: skip
    except TrgcError:
        return None


def _orders(grammar: Grammar, stamped: dict) -> list[list[int]]:
    walked: dict = {}
    budget = Budget(DEFAULT_LIMITS.operations)
    return [
        analysis._postorder(grammar.nodes, rule.body, budget, stamped, walked)
        for rule in grammar.rules
    ]


def test_orders_are_the_plain_walks(monkeypatch):
    shifted = []
    real = analysis._keep_walk

    def counting(root, part, stamped, walked):
        shifted.append(len(part))
        real(root, part, stamped, walked)

    monkeypatch.setattr(analysis, "_keep_walk", counting)
    copies = 0
    for name, schema in _schemas():
        grammar = _lowered(schema)
        if grammar is None:
            continue
        assert _orders(grammar, grammar.stamped) == _orders(grammar, {}), name
        copies += len(grammar.stamped) - len({key for key, _, _ in grammar.stamped.values()})
    # the fast path ran: templates were walked once and kept, and most stamps were copies
    assert len(shifted) >= 5 and sum(shifted) >= 200
    assert copies >= 20


def test_shapes_are_the_plain_shapes():
    numbered = 0
    for name, schema in _schemas():
        grammar = _lowered(schema)
        if grammar is None:
            continue
        fast, plain = Builder(grammar), Builder(replace(grammar, stamped={}))
        for order in _orders(grammar, {}):
            for node in reversed(order):  # roots first: copies numbered by their template
                assert fast.shape(node) == plain.shape(node), name
                numbered += 1
        by_template: dict = {}
        for root, (key, _, _) in grammar.stamped.items():
            assert by_template.setdefault(key, fast.shape(root)) == fast.shape(root), name
    assert numbered >= 1000


def _hide_stamps(monkeypatch) -> None:
    """Lower with no subtree recorded as stamped: every walk enters every copy."""
    real = Builder.stamp

    def hidden(self, key, build):
        root = real(self, key, build)
        self.grammar.stamped.clear()
        return root

    monkeypatch.setattr(Builder, "stamp", hidden)


def _outcome(schema) -> tuple:
    try:
        artifact = compile_schema(json.dumps(schema).encode(), separators="compact")
    except TrgcError as error:
        return ("refused", error.code, str(error))
    return ("built", encode(artifact))


def test_artifacts_are_the_plain_build(monkeypatch):
    """With every stamp hidden (no walk, no shape, no NFA builder takes a copy whole) the
    artifacts are byte for byte, and the refusals word for word, the same."""
    fast = [_outcome(schema) for _, schema in _schemas()]
    _hide_stamps(monkeypatch)
    for (name, schema), outcome in zip(_schemas(), fast, strict=True):
        assert _outcome(schema) == outcome, name
    assert fast[0][0] == "built"  # the patterned schema
    assert sum(o[0] == "built" for o in fast) >= 1 + len(list(SCHEMAS.glob("*.json")))


def test_a_stamp_may_not_reference_a_rule():
    """The count of rule references skips stamped subtrees: a template holding one is refused."""
    b = Builder(Grammar())
    with pytest.raises(TrgcError) as caught:
        b.stamp("reference", lambda b: b.seq(b.lit("a"), b.ref("other")))
    assert caught.value.code == "E_INTERNAL"


def test_planning_refuses_where_the_plain_walk_does(monkeypatch):
    """Operations limits across the walk that finds each repetition's rule (`_owners`, which
    charges a stamped copy whole): every outcome, refusal or artifact, is the plain walk's."""
    raw = json.dumps(PATTERNED).encode()
    span = []
    real = machines._owners

    def measured(grammar, rule_index, budget):
        before = budget.used
        found = real(grammar, rule_index, budget)
        span.append((before, budget.used))
        return found

    monkeypatch.setattr(machines, "_owners", measured)
    compile_schema(raw, separators="compact")
    before, after = span[0]
    assert after - before >= 500  # the stamped copies are most of it

    def outcome(operations: int) -> tuple:
        """The tables or the refusal, and the operations charged when either came."""
        limits = replace(DEFAULT_LIMITS, operations=operations)
        budget = Budget(operations)
        try:
            grammar = lower_schema(json.loads(raw), separators="compact", limits=limits)
            tables = machines.build_tables(
                grammar, analysis.analyze(grammar, budget=budget), limits=limits, budget=budget
            )
        except TrgcError as error:
            return ("refused", error.code, str(error), budget.used)
        return ("built", [m.next.tolist() for m in tables.machines], budget.used)

    limits = sorted({*range(before, before + 150), *range(before, after + 2, 13), after, after + 1})
    fast = [outcome(n) for n in limits]
    _hide_stamps(monkeypatch)
    assert [outcome(n) for n in limits] == fast
    assert sum("machine planning" in o[2] for o in fast if o[0] == "refused") >= 100


def test_structure_keys_are_the_plain_keys(monkeypatch):
    """Machines are reused by structural keys (`reuse.StructureKeys`), which give a stamped
    copy its template's number when the plan treats both alike: every key asked for, loose
    or named, is the one the plain numbering gives."""
    asked: list = []
    real = reuse.StructureKeys._number

    def recording(self, root, named):
        found = real(self, root, named)
        asked.append((root, named, found))
        return found

    monkeypatch.setattr(reuse.StructureKeys, "_number", recording)
    for _, schema in _schemas():
        _outcome(schema)
    fast, asked[:] = list(asked), []
    _hide_stamps(monkeypatch)
    for _, schema in _schemas():
        _outcome(schema)
    assert asked == fast
    assert len(fast) >= 20 and any(named for _, named, _ in fast)


def test_a_copy_marked_after_stamping_has_its_own_shape():
    """A suffix mark added to one copy after stamping makes its subtree another shape: the
    copy does not take its template's number."""
    b = Builder(Grammar())
    one, two = strings.string(b), strings.string(b)
    b.suffix(two)
    assert b.grammar.stamped[one][0] == b.grammar.stamped[two][0]
    plain = Builder(replace(b.grammar, stamped={}))
    parents = [b.seq(b.lit("["), copy) for copy in (one, two)]
    assert [b.shape(p) for p in parents] == [plain.shape(p) for p in parents]
    assert b.shape(parents[0]) != b.shape(parents[1])
