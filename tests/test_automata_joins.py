"""Joins (`automata.nfa`): less work, the same artifact.

A join builds an optional member once where the lowering puts one node in two places (first,
or after a comma). It changes the NFA the subset construction walks, never the language, so
the minimal canonical tables, the artifact bytes and every refusal must be those of the plain
build. The reference here is the same compiler with joins switched off (the member node built
twice, as two copies would be).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import trgc
from schema_helpers import CORPORA
from trgc.automata import machines, nfa
from trgc.errors import TrgcError
from trgc.limits import DEFAULT_LIMITS

ROOT = Path(__file__).resolve().parents[1]
BENCH = CORPORA / "jsonschemabench"

INTEGERS = {"type": "object", "properties": {f"n{i}": {"type": "integer"} for i in range(4)}}
SCHEMAS = [
    # optional members first: every one a join
    INTEGERS,
    INTEGERS | {"required": ["n2"]},
    # counted strings inside joined members (their repeat machines are called from one place)
    {
        "type": "object",
        "properties": {
            "a": {"type": "string", "maxLength": 9},
            "b": {"type": "string", "minLength": 2, "maxLength": 40},
            "c": {"type": "integer", "minimum": 0},
            "d": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
        },
    },
    # arrays: `x ("," x)*` with one item node (list joins); bounded ones are counted
    {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "v": {"type": "array", "items": {"type": "number"}},
                "w": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
                "t": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
            },
            "required": ["v"],
        },
    },
    # additional members: alone (a list join), after required or optional members, counted
    {"type": "object", "additionalProperties": {"type": "number"}},
    {"type": "object", "additionalProperties": {"type": "number"}, "minProperties": 1},
    {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 3},
    {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "string", "maxLength": 5}},
        "required": ["a"],
        "additionalProperties": {"type": "array", "items": {"type": "number"}},
    },
    # nested optional objects, a large value (a shared machine) and dates
    {
        "type": "object",
        "properties": {
            "o": {
                "type": "object",
                "properties": {
                    "x": {"type": "string", "format": "date"},
                    "y": {"type": "string", "format": "date"},
                    "z": {"type": "number"},
                },
            },
            "p": {"type": "string", "format": "date-time"},
            "q": {"type": "string", "format": "date-time"},
        },
        "additionalProperties": {"type": "integer"},
    },
]


def _variants() -> list[tuple[str, dict | bytes]]:
    out: list[tuple[str, dict | bytes]] = [(f"inline{i}", s) for i, s in enumerate(SCHEMAS)]
    out += [(p.name, p.read_bytes()) for p in sorted((ROOT / "schemas").glob("*.json"))]
    return out


def _no_joins(m) -> None:
    """Build every join's shared node twice, as two copies would be, and every suffix
    (`tests/test_automata_suffixes.py`) once per place."""
    m.setattr(nfa._Builder, "_join_parts", lambda self, node: None)
    m.setattr(nfa._Builder, "_list_parts", lambda self, node: None)
    m.setattr(nfa._Builder, "_suffix", lambda self, node_id, region: None)


def _compile(schema, **options) -> bytes | tuple[str, str]:
    try:
        return trgc.compile_schema(schema, **options).to_bytes()
    except TrgcError as error:
        return error.code, error.message


def _plain(monkeypatch, schema, **options):
    """The artifact (or refusal) with joins switched off."""
    with monkeypatch.context() as m:
        _no_joins(m)
        return _compile(schema, **options)


@pytest.mark.parametrize(("name", "schema"), _variants())
@pytest.mark.parametrize("whitespace", ["compact", "flexible"])
def test_joins_give_the_bytes_of_the_plain_build(monkeypatch, name, schema, whitespace):
    fast = _compile(schema, whitespace=whitespace)
    assert isinstance(fast, bytes), fast
    assert fast == _plain(monkeypatch, schema, whitespace=whitespace)


def _nfa_states(monkeypatch, compile_, *, joins: bool = True) -> int:
    """`nfa_states` of the tables `compile_()` builds: every machine's NFA counted in place."""
    stats: list[dict] = []
    build = machines.build_tables

    def recording(*args, **kwargs):
        tables = build(*args, **kwargs)
        stats.append(tables.stats)
        return tables

    with monkeypatch.context() as m:
        m.setattr(machines, "build_tables", recording)
        if not joins:
            _no_joins(m)
        compile_()
    return stats[-1]["nfa_states"]


def test_the_states_saved_are_counted_as_built_in_place(monkeypatch):
    """`Nfa.in_place` (its states plus those its joins and suffixes saved, through copies of
    repetitions and minus dropped counted bodies) is the plain NFA's size, machine by
    machine: what the state limit and the count-or-copy choice see."""
    for _, schema in _variants():

        def compile_(schema=schema):
            return trgc.compile_schema(schema, whitespace="compact")

        fast = _nfa_states(monkeypatch, compile_)
        assert fast == _nfa_states(monkeypatch, compile_, joins=False)


def _built(monkeypatch, schema) -> list[int]:
    """NFA states of each machine built, for one compile."""
    sizes: list[int] = []
    build = nfa.build_nfa

    def counting_build(*args, **kwargs):
        out = build(*args, **kwargs)
        sizes.append(out[0].n_states)
        return out

    with monkeypatch.context() as m:
        m.setattr("trgc.automata.machines.build_nfa", counting_build)
        trgc.compile_schema(schema, whitespace="compact")
    return sizes


def test_a_join_builds_the_member_once(monkeypatch):
    numbers = {"type": "object", "properties": {f"x{i}": {"type": "number"} for i in range(4)}}
    joined = _built(monkeypatch, numbers)
    with monkeypatch.context() as m:
        _no_joins(m)
        plain = _built(monkeypatch, numbers)
    # the three later members first, or after a comma: seven numbers in the plain NFA
    assert 6 * plain[0] > 10 * joined[0]


def test_a_list_join_builds_the_item_once(monkeypatch):
    numbers = {"type": "array", "items": {"type": "number"}}
    joined = _built(monkeypatch, numbers)
    with monkeypatch.context() as m:
        _no_joins(m)
        plain = _built(monkeypatch, numbers)
    assert 10 * plain[0] > 18 * joined[0]  # two numbers in the plain NFA, one joined


def _outcome(result: bytes | tuple[str, str]) -> bytes | tuple[str, bool]:
    """The artifact, or the refusal's code and whether the NFA limit refused."""
    return result if isinstance(result, bytes) else (result[0], "NFA states" in result[1])


def test_refusals_at_the_nfa_state_limit_see_the_states_a_join_saved(monkeypatch):
    numbers = {"type": "object", "properties": {f"x{i}": {"type": "number"} for i in range(6)}}
    refused = 0
    for states in range(100, 400, 10):
        limits = DEFAULT_LIMITS.with_overrides({"states": states})
        plain = _plain(monkeypatch, numbers, whitespace="compact", limits=limits)
        fast = _compile(numbers, whitespace="compact", limits=limits)
        by_nfa = ("E_LIMIT_STATES", True)
        # refused by the NFA limit in both or neither; the DFA limit counts the subset
        # states, which a join makes fewer, so only the joined build may pass that one
        assert (_outcome(fast) == by_nfa) == (_outcome(plain) == by_nfa)
        refused += _outcome(plain) == by_nfa
    assert refused >= 3


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
def test_corpus_schemas_give_the_bytes_of_the_plain_build(monkeypatch):
    """The first 12 schemas of every JSONSchemaBench subset, compact and pretty."""
    compared = 0
    for subset in sorted(p for p in BENCH.iterdir() if p.is_dir()):
        for path in sorted(subset.glob("*.json"))[:12]:
            raw = path.read_bytes()
            for whitespace in ("compact", "pretty"):
                fast = _compile(raw, whitespace=whitespace)
                plain = _plain(monkeypatch, raw, whitespace=whitespace)
                if isinstance(plain, tuple) and plain[0] == "E_LIMIT_STATES":
                    continue  # the DFA limit counts subset states, which joins make fewer
                assert fast == plain, (path.name, whitespace, json.loads(raw).get("title"))
                compared += isinstance(fast, bytes)
    assert compared > 120
