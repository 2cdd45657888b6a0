"""The example schemas in `schemas/` compile, accept typical instances and sample only valid ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import trgc
from test_schema_soundness import check_samples

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"

INSTANCES = {
    "person.json": (
        [
            {"name": "Ada", "age": 36},
            {
                "name": "Ada",
                "birth_date": "1815-12-10",
                "age": 36,
                "tags": ["staff"],
                "address": {"city": "London", "country": "GB"},
            },
        ],
        [
            {"age": 36},
            {"name": "", "age": 36},
            {"name": "Ada", "age": 151},
            {"name": "Ada", "age": 3, "x": 1},
        ],
    ),
    "tool_args.json": (
        [
            {"tool": "get_weather", "city": "Oslo", "unit": "celsius"},
            {"tool": "calc", "expression": "1/3", "precision": 4},
        ],
        [
            {"tool": "calc", "city": "Oslo"},
            {"tool": "other"},
            {"tool": "calc", "expression": "1", "precision": 19},
        ],
    ),
    "tree.json": (
        [
            {
                "label": "a",
                "children": [{"label": "b", "weight": 0.5}, {"label": "c", "children": []}],
            }
        ],
        [{"label": "a", "weight": 2}, {"children": []}],
    ),
}


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_example_schema(name):
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    for separators in ("compact", "pretty"):
        art = trgc.compile_schema(schema, separators=separators)
        item, key = (", ", ": ") if separators == "pretty" else (",", ":")
        good, bad = INSTANCES[name]
        for value in good:
            assert trgc.check(art, json.dumps(value, separators=(item, key)).encode()).accepted, (
                value
            )
        for value in bad:
            assert not trgc.check(
                art, json.dumps(value, separators=(item, key)).encode()
            ).accepted, value
        assert check_samples(schema, art, seed=11, count=25) > 0


def test_every_example_is_covered():
    assert sorted(p.name for p in SCHEMAS.glob("*.json")) == sorted(INSTANCES)


def test_identity_is_independent_of_the_hash_seed():
    import os
    import subprocess
    import sys

    code = (
        "import trgc, pathlib\n"
        "for p in sorted(pathlib.Path('schemas').glob('*.json')):\n"
        "    print(p.name, trgc.compile_schema(p.read_bytes()).sha256)\n"
    )
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        result = subprocess.run(
            [sys.executable, "-c", code],
            cwd=SCHEMAS.parent,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outputs.add(result.stdout)
    assert len(outputs) == 1 and outputs.pop().count("sha256:") == len(INSTANCES)
