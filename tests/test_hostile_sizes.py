"""Memory before limits: the schema shapes of issue 17, item 3 end with their limit error (or
compile) in memory and CPU time within fixed multiples of their size.

On the old main, 6,000 integer properties reached 2.5 GB before E_LIMIT_OPERATIONS, 20,000 passed
3 GB, `{"enum": list(range(100000))}` ran 154 s and a 2,000-branch oneOf 26 s (pairwise). Each run
here is a child process under kernel ceilings (`bounded.py`) set to `BASE + k * input`; a correct
trgc stays far below them, a regression is killed or fails the assertions.
"""

from __future__ import annotations

import json

import pytest

from bounded import MiB, run_trgc

BASE_RSS = 96 * MiB  # the interpreter, numpy, zstandard and an empty compile
RSS_PER_INPUT_BYTE = 100
CPU_BASE = 20  # seconds
CPU_PER_INPUT_BYTE = 40e-6


def integer_properties(n: int, required: bool = False) -> dict:
    schema: dict = {
        "type": "object",
        "properties": {f"p{i}": {"type": "integer"} for i in range(n)},
    }
    if required:
        schema["required"] = list(schema["properties"])
    return schema


SHAPES = {
    "6000 integer properties": (integer_properties(6000), 3, "E_LIMIT_STATES"),
    "20000 integer properties": (integer_properties(20000), 3, "E_LIMIT_STATES"),
    "6000 required integer properties": (integer_properties(6000, True), 3, "E_LIMIT_STATES"),
    "enum of 100000 integers": ({"enum": list(range(100_000))}, 3, "E_LIMIT_STATES"),
    "enum of 100000 strings": ({"enum": [f"v{i}" for i in range(100_000)]}, 3, "E_LIMIT_STATES"),
    "oneOf of 20000 consts": ({"oneOf": [{"const": f"x{i}"} for i in range(20_000)]}, 0, None),
    "oneOf of 5000 objects": (
        {
            "oneOf": [
                {"type": "object", "properties": {"k": {"const": i}}, "required": ["k"]}
                for i in range(5000)
            ]
        },
        3,
        "E_LIMIT_OPERATIONS",
    ),
    "anyOf of 50000 integers": (
        {"anyOf": [{"const": i} for i in range(50_000)]},
        3,
        "E_LIMIT_STATES",
    ),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_worst_shapes_stay_within_multiples_of_their_size(tmp_path, name):
    schema, status, code = SHAPES[name]
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    size = path.stat().st_size
    cpu_ceiling = int(CPU_BASE + CPU_PER_INPUT_BYTE * size)
    memory_ceiling = BASE_RSS + RSS_PER_INPUT_BYTE * size
    outcome = run_trgc(
        ["compile", str(path), "--json"],
        cpu_seconds=cpu_ceiling,
        memory=memory_ceiling,
    )
    assert not outcome.killed, (
        f"killed by signal {-outcome.returncode} (CPU ceiling {cpu_ceiling} s)"
    )
    assert b"Traceback" not in outcome.stderr, outcome.stderr.decode()[-2000:]
    assert outcome.returncode == status, outcome.stderr.decode()[-2000:]
    if code is not None:
        assert json.loads(outcome.stderr)["error"]["code"] == code
    assert outcome.max_rss is not None and outcome.max_rss <= memory_ceiling, (
        f"{outcome.max_rss / MiB:.0f} MiB for a {size / 1024:.0f} KiB schema"
    )
    assert outcome.cpu_seconds is not None and outcome.cpu_seconds <= cpu_ceiling


def test_the_builder_bound_matches_the_nfa_factor():
    """The lowering projects the NFA ceiling the automata builder enforces; they must agree."""
    from trgc.automata.nfa import EXPAND_STATES, NFA_STATE_FACTOR
    from trgc.grammar.schema import nodes

    assert nodes.NFA_STATE_FACTOR == NFA_STATE_FACTOR
    assert nodes.EXPAND_STATES == EXPAND_STATES


def test_projected_bound_follows_the_states_limit(tmp_path):
    """The same schema compiles once the states limit leaves room: the bound is a projection of
    that limit, not a ceiling of its own."""
    path = tmp_path / "enum.json"
    path.write_text(json.dumps({"enum": list(range(3000))}), encoding="utf-8")
    small = run_trgc(["compile", str(path), "--limit", "states=2000", "--json"])
    assert small.returncode == 3
    error = json.loads(small.stderr)["error"]
    assert error["code"] == "E_LIMIT_STATES" and "3,000 enum/const members" in error["message"]
    assert run_trgc(["compile", str(path), "--json"]).returncode == 0
