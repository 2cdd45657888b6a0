"""Joins and pieces (`automata.nfa`, `automata.pieces`): less work, the same artifact.

A join builds an optional member once where the lowering puts one node in two places (first,
or after a comma); a piece builds a repeated subtree once, as a minimal DFA spliced wherever an
equal subtree occurs. Both change the NFA the subset construction walks, never the language,
so the minimal canonical tables, the artifact bytes and every refusal must be those of the
plain build. The references here are the same compiler with joins switched off (the member
node built twice, as two copies would be) and with no piece planned.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import trgc
from schema_helpers import CORPORA
from trgc.automata import machines, nfa, pieces
from trgc.errors import TrgcError
from trgc.limits import DEFAULT_LIMITS

ROOT = Path(__file__).resolve().parents[1]
BENCH = CORPORA / "jsonschemabench"

INTEGERS = {"type": "object", "properties": {f"n{i}": {"type": "integer"} for i in range(4)}}
SCHEMAS = [
    # optional members first: every one a join; integers repeated: a piece
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
    # nested optional objects, a large value (a shared machine) and a date piece
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


@pytest.fixture(autouse=True)
def _plan_small_grammars(monkeypatch):
    """Pieces are planned in these small grammars too (by default only from
    `MIN_PLAN_NODES` AST nodes on), so that every test here meets them."""
    monkeypatch.setattr(pieces, "MIN_PLAN_NODES", 0)


def test_small_grammars_plan_no_piece_by_default(monkeypatch):
    """Below `MIN_PLAN_NODES` nodes nothing is planned (numbering subtrees would cost more than
    pieces save); the same four integers in a grammar past it are one piece again."""
    monkeypatch.undo()
    required = INTEGERS | {"required": list(INTEGERS["properties"])}
    assert _built(monkeypatch, required)[1] == 0
    monkeypatch.setattr(pieces, "MIN_PLAN_NODES", 200)
    assert _built(monkeypatch, required)[1] == 1


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


def _plain(monkeypatch, schema, *, joins: bool, planned: bool, **options):
    """The artifact (or refusal) with joins and pieces switched on or off."""
    with monkeypatch.context() as m:
        if not joins:
            _no_joins(m)
        if not planned:
            m.setattr(pieces.PieceMemo, "plan", lambda self, root: frozenset())
        return _compile(schema, **options)


@pytest.mark.parametrize(("name", "schema"), _variants())
@pytest.mark.parametrize("whitespace", ["compact", "flexible"])
def test_joins_and_pieces_give_the_bytes_of_the_plain_build(monkeypatch, name, schema, whitespace):
    fast = _compile(schema, whitespace=whitespace)
    assert isinstance(fast, bytes), fast
    assert fast == _plain(monkeypatch, schema, joins=False, planned=True, whitespace=whitespace)
    assert fast == _plain(monkeypatch, schema, joins=True, planned=False, whitespace=whitespace)
    assert fast == _plain(monkeypatch, schema, joins=False, planned=False, whitespace=whitespace)


def test_small_pieces_too(monkeypatch):
    """With every repeated subtree of 8 nodes or more a piece (strings, numbers, counted
    bodies inside them), the bytes are still those of the plain build."""
    monkeypatch.setattr(pieces, "MIN_PIECE_NODES", 8)
    for _, schema in _variants():
        fast = _compile(schema, whitespace="compact")
        assert fast == _plain(monkeypatch, schema, joins=True, planned=False, whitespace="compact")


def _nfa_states(monkeypatch, compile_, *, joins: bool = True, planned: bool = True) -> int:
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
        if not planned:
            m.setattr(pieces.PieceMemo, "plan", lambda self, root: frozenset())
        compile_()
    return stats[-1]["nfa_states"]


def test_the_states_saved_are_counted_as_built_in_place(monkeypatch):
    """`Nfa.in_place` (its states plus those its joins and pieces saved, through copies of
    repetitions and minus dropped counted bodies) is the plain NFA's size, machine by
    machine: what the state limit and the count-or-copy choice see."""
    monkeypatch.setattr(pieces, "MIN_PIECE_NODES", 8)
    for name in GRAMMARS:

        def compile_(text="%trg 1\n" + GRAMMARS[name] + NUM):
            return trgc.compile_grammar(text)

        fast = _nfa_states(monkeypatch, compile_)
        assert fast == _nfa_states(monkeypatch, compile_, planned=False)
    for _, schema in _variants():

        def compile_(schema=schema):
            return trgc.compile_schema(schema, whitespace="compact")

        fast = _nfa_states(monkeypatch, compile_)
        assert fast == _nfa_states(monkeypatch, compile_, joins=False, planned=False)


def _built(monkeypatch, schema) -> tuple[list[int], int]:
    """(NFA states of each machine built, pieces built) for one compile."""
    sizes: list[int] = []
    kept: list[int] = []
    build = nfa.build_nfa
    keep = pieces.PieceMemo.keep

    def counting_build(*args, **kwargs):
        out = build(*args, **kwargs)
        sizes.append(out[0].n_states)
        return out

    def counting_keep(self, node_id, piece):
        kept.append(node_id)
        return keep(self, node_id, piece)

    with monkeypatch.context() as m:
        m.setattr("trgc.automata.machines.build_nfa", counting_build)
        m.setattr(pieces.PieceMemo, "keep", counting_keep)
        trgc.compile_schema(schema, whitespace="compact")
    return sizes, len(kept)


def test_a_join_builds_the_member_once(monkeypatch):
    numbers = {"type": "object", "properties": {f"x{i}": {"type": "number"} for i in range(4)}}
    joined, _ = _built(monkeypatch, numbers)
    with monkeypatch.context() as m:
        _no_joins(m)
        plain, _ = _built(monkeypatch, numbers)
    # the three later members first, or after a comma: seven numbers in the plain NFA
    assert 6 * plain[0] > 10 * joined[0]


def test_a_list_join_builds_the_item_once(monkeypatch):
    numbers = {"type": "array", "items": {"type": "number"}}
    joined, _ = _built(monkeypatch, numbers)
    with monkeypatch.context() as m:
        _no_joins(m)
        plain, _ = _built(monkeypatch, numbers)
    assert 10 * plain[0] > 18 * joined[0]  # two numbers in the plain NFA, one joined


def test_equal_subtrees_are_one_piece(monkeypatch):
    required = INTEGERS | {"required": list(INTEGERS["properties"])}
    fast, built = _built(monkeypatch, required)
    assert built == 1  # four equal integers (members in order: no join, no shared machine)
    with monkeypatch.context() as m:
        m.setattr(pieces.PieceMemo, "plan", lambda self, root: frozenset())
        plain, none = _built(monkeypatch, required)
    assert none == 0
    # four integer automata of 150 NFA states, or four copies of one minimal DFA of 33
    assert 3 * fast[0] < plain[0]


# `num` is inlined where it is written: a piece when pieces start at 8 nodes (it has 16 NFA
# states in place, a minimal DFA of 7 spliced). Repetitions around them (`{0,2}`: one copy
# more) are counted when their body has over `EXPAND_STATES` (64) NFA states in place:
NUM = 'num ::= "-"? ("0" | [1-9] [0-9]{0,2}) ("." [0-9]+)? ;\n'
GRAMMARS = {
    # 32 states spliced, 80 in place: counted
    "pieces": 'root ::= "[" (num "," num "," num ";"){0,2} "]" ;\n',
    # the inner `{2}` is copied, and so are the pieces in it: 80 in place again, counted
    "copied": 'root ::= "[" ((num ","){2} num ";"){0,2} "]" ;\n',
    # the inner repetition is counted (one call), so the outer body is 17 states, not the
    # 65 it would be if the pieces of the dropped body still counted: copied
    "counted": 'root ::= "[" ((num "," num "," num ";"){0,2} "||||||"){0,2} "]" ;\n',
}


def _grammar(
    monkeypatch, name: str, *, planned: bool, limits=DEFAULT_LIMITS
) -> bytes | tuple[str, str]:
    with monkeypatch.context() as m:
        m.setattr(pieces, "MIN_PIECE_NODES", 8)
        if not planned:
            m.setattr(pieces.PieceMemo, "plan", lambda self, root: frozenset())
        try:
            text = "%trg 1\n" + GRAMMARS[name] + NUM
            return trgc.compile_grammar(text, limits=limits).to_bytes()
        except TrgcError as error:
            return error.code, error.message


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_a_count_or_copy_decision_sees_the_states_a_piece_saved(monkeypatch, name):
    """Each repetition is counted or copied as when its body is built in place."""
    kept: list[int] = []
    keep = pieces.PieceMemo.keep
    monkeypatch.setattr(
        pieces.PieceMemo, "keep", lambda self, n, p: (kept.append(n), keep(self, n, p))[1]
    )
    fast = _grammar(monkeypatch, name, planned=True)
    assert kept  # the `num`s were a piece
    assert isinstance(fast, bytes)
    assert fast == _grammar(monkeypatch, name, planned=False)
    assert len(trgc.Artifact.from_bytes(fast).metadata["machines"]) == 2  # one is counted


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_refusals_at_the_nfa_state_limit_are_those_of_the_plain_build(monkeypatch, name):
    """The NFA limit counts the states a piece saved (`_Builder.hidden`): the same limits
    refuse as when every subtree is built in place."""
    refused = 0
    for states in range(6, 40, 2):
        limits = DEFAULT_LIMITS.with_overrides({"states": states})
        plain = _grammar(monkeypatch, name, planned=False, limits=limits)
        fast = _grammar(monkeypatch, name, planned=True, limits=limits)
        # refused alike, though the state count that passed a limit first may be a piece's
        # own subset construction instead of the NFA's
        assert (fast if isinstance(fast, bytes) else fast[0]) == (
            plain if isinstance(plain, bytes) else plain[0]
        )
        refused += _outcome(plain) == ("E_LIMIT_STATES", True)
    assert refused >= 3


def _outcome(result: bytes | tuple[str, str]) -> bytes | tuple[str, bool]:
    """The artifact, or the refusal's code and whether the NFA limit refused."""
    return result if isinstance(result, bytes) else (result[0], "NFA states" in result[1])


def test_refusals_at_the_nfa_state_limit_see_the_states_a_join_saved(monkeypatch):
    numbers = {"type": "object", "properties": {f"x{i}": {"type": "number"} for i in range(6)}}
    refused = 0
    for states in range(100, 400, 10):
        limits = DEFAULT_LIMITS.with_overrides({"states": states})
        plain = _plain(
            monkeypatch, numbers, joins=False, planned=True, whitespace="compact", limits=limits
        )
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
                plain = _plain(monkeypatch, raw, joins=False, planned=False, whitespace=whitespace)
                if isinstance(plain, tuple) and plain[0] == "E_LIMIT_STATES":
                    continue  # the DFA limit counts subset states, which joins make fewer
                assert fast == plain, (path.name, whitespace, json.loads(raw).get("title"))
                compared += isinstance(fast, bytes)
    assert compared > 120
