"""member_order="any": the declared members of small objects in any order, each at most once,
required ones present, additional members last; agreement with jsonschema on every order,
soundness on seeded walks, and the bound beyond which declared order stays."""

from __future__ import annotations

import itertools
import json

import pytest

import trgc
from schema_helpers import oracle
from test_schema_soundness import check_samples
from trgc.cli.app import app
from trgc.errors import TrgcError
from trgc.grammar.schema.memberorder import MAX_FREE_MEMBERS

VALUES = {"a": 1, "b": "x", "c": True, "d": None, "z": 7}
SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "integer"},
        "b": {"type": "string", "maxLength": 3},
        "c": {"type": "boolean"},
        "d": {"type": "null"},
    },
    "required": ["b", "c"],
}
SEPARATORS = {"compact": (",", ":"), "pretty": (", ", ": "), "flexible": (",", ":")}


def _orders(names: str):
    return itertools.chain.from_iterable(
        itertools.permutations(names, k) for k in range(len(names) + 1)
    )


@pytest.mark.parametrize("whitespace", ["compact", "pretty", "flexible"])
def test_every_order_agrees_with_jsonschema(whitespace):
    art = trgc.compile_schema(SCHEMA, whitespace=whitespace, member_order="any")
    seps = SEPARATORS[whitespace]
    for names in _orders("abcd"):
        text = json.dumps({n: VALUES[n] for n in names}, separators=seps)
        assert trgc.check(art, text.encode()).accepted == oracle(SCHEMA, text), text


def test_a_member_never_repeats_and_undeclared_ones_stay_out():
    art = trgc.compile_schema(SCHEMA, whitespace="compact", member_order="any")
    for text in (
        '{"b":"x","c":true,"b":"y"}',
        '{"c":true,"b":"x","c":false}',
        '{"c":true,"z":7,"b":"x"}',
        '{"c":true,"b":"xxxx"}',
    ):
        assert not trgc.check(art, text.encode()).accepted, text


def test_additional_members_come_after_the_declared_ones():
    art = trgc.compile_schema(SCHEMA, whitespace="compact", member_order="any", open_objects=True)
    assert trgc.check(art, b'{"c":true,"b":"x","z":7,"y":[]}').accepted
    assert not trgc.check(art, b'{"c":true,"z":7,"b":"x"}').accepted
    assert not trgc.check(art, b'{"c":true,"b":"x","b":"y"}').accepted


@pytest.mark.parametrize("open_objects", [False, True])
def test_walks_in_any_order_are_valid(open_objects):
    nested = {
        "type": "object",
        "properties": {"p": SCHEMA, "q": {"type": "array", "items": SCHEMA, "maxItems": 2}},
        "required": ["q"],
        "minProperties": 1,
    }
    art = trgc.compile_schema(nested, member_order="any", open_objects=open_objects)
    assert check_samples(nested, art, seed=41 + open_objects, count=80) > 0


def test_large_objects_keep_declared_order():
    names = [f"m{i}" for i in range(MAX_FREE_MEMBERS + 1)]
    big = {"type": "object", "properties": {n: {"type": "integer"} for n in names}}
    art = trgc.compile_schema(big, whitespace="compact", member_order="any")
    assert trgc.check(art, b'{"m0":1,"m1":2}').accepted
    assert not trgc.check(art, b'{"m1":2,"m0":1}').accepted
    small = {"type": "object", "properties": {n: {"type": "integer"} for n in names[:-1]}}
    art = trgc.compile_schema(small, whitespace="compact", member_order="any")
    assert trgc.check(art, b'{"m5":2,"m0":1,"m3":4}').accepted


def test_the_order_is_part_of_the_identity_and_declared_is_unchanged():
    declared = trgc.compile_schema(SCHEMA)
    assert "member_order" not in declared.metadata["options"]
    assert trgc.compile_schema(SCHEMA, member_order="declared").sha256 == declared.sha256
    free = trgc.compile_schema(SCHEMA, member_order="any")
    assert free.metadata["options"]["member_order"] == "any" and free.sha256 != declared.sha256
    assert trgc.compile_schema(SCHEMA, member_order="any").sha256 == free.sha256
    with pytest.raises(TrgcError) as info:
        trgc.compile_schema(SCHEMA, member_order="sorted")
    assert info.value.code == "E_USAGE"


def test_cli_member_order(tmp_path):
    from typer.testing import CliRunner

    src = tmp_path / "s.json"
    src.write_text(json.dumps(SCHEMA))
    out = tmp_path / "s.trga"
    runner = CliRunner()
    result = runner.invoke(
        app,
        ["compile", str(src), "-o", str(out), "--whitespace", "compact", "--member-order", "any"],
    )
    assert result.exit_code == 0, result.output
    doc = tmp_path / "d.json"
    doc.write_text('{"c":true,"b":"x"}')
    assert runner.invoke(app, ["check", str(out), str(doc)]).exit_code == 0
    result = runner.invoke(app, ["compile", str(src), "--member-order", "sorted"])
    assert result.exit_code == 2


def test_coverage_counts_order_only_refusals_and_any_order_removes_them(tmp_path):
    from trgc.evaluation.coverage import run_schema

    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCHEMA))
    instances = [(True, {"c": True, "b": "x"}), (True, {"b": "x", "c": False}), (False, {"c": 1})]
    declared = run_schema("t", path, instances, separators="compact", limits=None)
    free = run_schema("t", path, instances, separators="compact", limits=None, member_order="any")
    assert declared.order_only == 1 and free.order_only == 0
    for result in (declared, free):
        assert result.valid == (2, 2) and result.invalid == (1, 1) and result.passes
