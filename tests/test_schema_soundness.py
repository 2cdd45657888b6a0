"""Soundness by sampling: seeded random walks over trj-1 artifacts, every sample validated by jsonschema.

A sample is in the artifact's language by construction; it must be valid JSON without
duplicate member names, and valid under the schema for an independent validator (with the
formats trj-1 shapes asserted). Any failure is a soundness bug.
"""

from __future__ import annotations

import datetime
import json
import random
import re

import jsonschema
import pytest

import trgc
from schema_helpers import CORPORA, compiled
from test_schema_keywords import CASES
from trgc.evaluation.walk import sample

FORMATS = jsonschema.FormatChecker(["uuid", "email", "ipv4"])
_TIME = re.compile(r"^(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|z|[+-](\d\d):(\d\d))$")


@FORMATS.checks("date")
def _date(text: object) -> bool:
    if not isinstance(text, str):
        return True
    return re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) is not None and bool(
        datetime.date.fromisoformat(text)
    )


@FORMATS.checks("time")
def _time(text: object) -> bool:
    if not isinstance(text, str):
        return True
    m = _TIME.match(text)
    if m is None:
        return False
    hour, minute, second = int(m[1]), int(m[2]), int(m[3])
    offset_ok = m[6] is None or (int(m[6]) < 24 and int(m[7]) < 60)
    return hour < 24 and minute < 60 and second < 60 and offset_ok


@FORMATS.checks("date-time")
def _date_time(text: object) -> bool:
    if not isinstance(text, str):
        return True
    day, sep, clock = text.partition("T")
    return bool(sep) and _date(day) and _time(clock)


def _declared_names(schema) -> set[str]:
    names: set[str] = set()
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("properties"), dict):
                names |= set(item["properties"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return names


def _pairs_checker(declared: set[str]):
    """Declared member names never repeat; additional members of open objects are only checked
    against the declared names (profile rule unique-names), so they may repeat among themselves."""

    def pairs(items):
        names = [k for k, _ in items]
        repeated = {n for n in names if names.count(n) > 1}
        assert not (repeated & declared), f"duplicate declared member names {names}"
        return dict(items)

    return pairs


def check_samples(schema, artifact, seed: int, count: int) -> int:
    validator_class = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )
    validator = validator_class(schema, format_checker=FORMATS)
    rng = random.Random(seed)
    pairs = _pairs_checker(_declared_names(schema))
    seen = 0
    for _ in range(count):
        data = sample(artifact, rng)
        if data is None:
            continue
        seen += 1
        value = json.loads(data.decode("utf-8"), object_pairs_hook=pairs)
        errors = list(validator.iter_errors(value))
        assert not errors, f"artifact admits an invalid instance {data!r}: {errors[0].message}"
    return seen


@pytest.mark.parametrize("index", range(len(CASES)))
def test_samples_of_keyword_schemas_are_valid(index):
    schema = CASES[index][0]
    assert check_samples(schema, compiled(schema), seed=index, count=40) > 0


@pytest.mark.parametrize("options", [{"separators": "pretty"}, {"open_objects": True}])
def test_samples_with_options_are_valid(options):
    schema = {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "minimum": -3, "maximum": 70000},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3},
            "when": {"type": "string", "format": "date-time"},
            "x": {"type": "number", "exclusiveMinimum": -1, "maximum": 1},
        },
        "required": ["id"],
    }
    art = trgc.compile_schema(schema, **options)
    assert check_samples(schema, art, seed=7, count=60) > 0


def test_samples_of_a_recursive_schema_are_valid():
    schema = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 4},
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
                "required": ["name"],
            }
        },
        "$ref": "#/$defs/node",
    }
    assert check_samples(schema, trgc.compile_schema(schema, max_depth=5), seed=3, count=60) > 0


BENCH = CORPORA / "jsonschemabench"


@pytest.mark.slow
@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the JSONSchemaBench corpus is missing: {BENCH}")
@pytest.mark.parametrize(
    "subset", ["Glaiveai2K", "Github_trivial", "Github_easy", "MCPspec", "Kubernetes"]
)
def test_samples_of_real_schemas_are_valid(subset):
    files = sorted((BENCH / subset).glob("*.json"))[:60]
    compiled_count = 0
    for i, path in enumerate(files):
        raw = path.read_bytes()
        try:
            art = trgc.compile_schema(raw)
        except trgc.TrgcError:
            continue
        compiled_count += 1
        check_samples(json.loads(raw), art, seed=i, count=8)
    assert compiled_count > 0
