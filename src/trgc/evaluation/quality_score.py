"""Scoring one output of the quality experiment: syntax, schema, profile, semantic accuracy.

* syntactic validity: the output (surrounding whitespace ignored) is one JSON text, or for the
  tool arm one tinycalc-1 expression; plain tasks have no syntax to check (None);
* schema validity: the parsed value validates against the task's JSON Schema (`jsonschema`);
* profile validity: the exact output bytes are a member of the task's compiled target (the
  trj-1 artifact of its schema, or the tinycalc grammar) — `trgc.check`, stricter than the
  schema because trj-1 also fixes member order and number/string forms;
* semantic accuracy: every gold member equal (strings compared case-insensitively after
  trimming, numbers as exact decimals), the arithmetic answer (or the tinycalc result of the
  expression) equal to the gold decimal, or, for plain tasks, one gold phrase mentioned.

Nothing is repaired: an output that does not parse scores as invalid and wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from trgc.artifact.check import check
from trgc.artifact.model import Artifact
from trgc.errors import TrgcError
from trgc.evaluation.quality_tasks import Task
from trgc.integrations.deps import require
from trgc.tools import tinycalc


@dataclass(frozen=True)
class Score:
    syntax: bool | None
    schema: bool | None
    profile: bool | None
    correct: bool
    fields: float | None  # fraction of gold members matched (structured tasks)


def _parse_json(output: bytes) -> tuple[bool, Any]:
    try:
        text = output.decode("utf-8")
        return True, json.loads(text.strip(), parse_float=Decimal, parse_int=Decimal)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False, None


def same_value(got: Any, gold: Any) -> bool:
    """Gold comparison: trimmed case-insensitive strings, exact decimals, else equality."""
    if isinstance(gold, str):
        return isinstance(got, str) and got.strip().casefold() == gold.strip().casefold()
    if isinstance(gold, bool) or gold is None:
        return got is gold
    if isinstance(gold, int | float | Decimal):
        return (
            isinstance(got, Decimal | int | float)
            and not isinstance(got, bool)
            and (Decimal(str(got)) == Decimal(str(gold)))
        )
    return got == gold


def _plain_value(value: Any) -> Any:
    """Decimals back to int/float for jsonschema (which type-checks Python numbers)."""
    if isinstance(value, Decimal):
        return (
            int(value)
            if value == value.to_integral_value() and "." not in str(value)
            else float(value)
        )
    if isinstance(value, dict):
        return {k: _plain_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_value(v) for v in value]
    return value


def _schema_valid(schema: dict, value: Any) -> bool:
    jsonschema = require("jsonschema", "scoring schema validity")
    validator = jsonschema.validators.validator_for(schema)
    return bool(validator(schema).is_valid(_plain_value(value)))


def score(task: Task, tool: bool, output: bytes, target: Artifact | None) -> Score:
    """Score `output` of `task`; `tool` = the run asked for a tinycalc expression."""
    profile = None if target is None else check(target, output).accepted
    if task.kind == "plain":
        text = output.decode("utf-8", errors="replace").casefold()
        hit = any(p.casefold() in text for p in task.gold["contains_any"])
        return Score(None, None, None, hit, None)
    if tool:
        try:
            tinycalc.parse(output)
        except TrgcError:
            return Score(False, None, profile, False, None)
        try:
            value = Decimal(tinycalc.evaluate(output).value)
        except TrgcError:  # a well-formed expression can still divide by zero or overflow
            return Score(True, None, profile, False, None)
        return Score(True, None, profile, value == Decimal(task.gold), None)
    syntax, value = _parse_json(output)
    if not syntax:
        return Score(False, False, profile, False, 0.0 if task.kind != "arithmetic" else None)
    schema = _schema_valid(task.schema, value)
    if task.kind == "arithmetic":
        got = value.get("answer") if isinstance(value, dict) else None
        return Score(True, schema, profile, same_value(got, Decimal(task.gold)), None)
    members = value if isinstance(value, dict) else {}
    matched = sum(same_value(members.get(k), v) for k, v in task.gold.items())
    return Score(True, schema, profile, matched == len(task.gold), matched / len(task.gold))
