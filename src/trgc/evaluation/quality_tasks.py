"""The quality experiment's task file: one JSON object per line, every field checked.

    {"id": "extract-ada", "kind": "extraction", "prompt": "...", "schema": "schemas/person.json",
     "gold": {"name": "Ada Lovelace", "born": 1815}, "max_tokens": 48}

Kinds and what each needs (paths are relative to the task file):

* `extraction`, `toolargs`: `schema` (a JSON Schema file, compiled with trj-1) and `gold`, an
  object of expected member values (a subset of the schema's properties);
* `arithmetic`: `schema` (the answer's schema, an object with an `answer` number), `gold` (the
  exact decimal result as a string), `tool_prompt` (what the tool arm asks the model instead:
  an expression, not a result) and `tool_grammar` (trg-1 grammar of tinycalc-1 expressions);
* `plain`: `gold` = {"contains_any": [...]} (the answer must mention one of them,
  case-insensitively); no schema: a constraint should not engage.

Unknown fields, kinds, duplicate ids, a missing field or an unreadable schema are
`E_QUALITY_TASKS` naming the line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from trgc.errors import TrgcError
from trgc.limits import read_file

KINDS = ("extraction", "toolargs", "arithmetic", "plain")
_REQUIRED = {
    "extraction": {"schema", "gold"},
    "toolargs": {"schema", "gold"},
    "arithmetic": {"schema", "gold", "tool_prompt", "tool_grammar"},
    "plain": {"gold"},
}
_COMMON = {"id", "kind", "prompt", "max_tokens"}
MAX_TASK_TOKENS = 512


@dataclass(frozen=True)
class Task:
    """One sealed task; `schema` is the parsed JSON Schema (None for plain tasks)."""

    id: str
    kind: str
    prompt: str
    max_tokens: int
    gold: Any
    schema: dict | None = None
    schema_path: str | None = None
    tool_prompt: str | None = None
    tool_grammar: str | None = None  # trg-1 source text


def _fail(path: Path, line: int, message: str) -> TrgcError:
    return TrgcError("E_QUALITY_TASKS", f"line {line}: {message}", source=str(path))


def _parse_task(doc: Any, path: Path, line: int) -> Task:
    if not isinstance(doc, dict):
        raise _fail(path, line, "expected a JSON object")
    kind = doc.get("kind")
    if kind not in KINDS:
        raise _fail(path, line, f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    allowed = _COMMON | _REQUIRED[kind]
    unknown = sorted(set(doc) - allowed)
    if unknown:
        raise _fail(path, line, f"unknown field(s) {unknown} for kind {kind!r}")
    missing = sorted(allowed - set(doc))
    if missing:
        raise _fail(path, line, f"missing field(s) {missing}")
    for name in ("id", "prompt", *(["tool_prompt"] if kind == "arithmetic" else [])):
        if not isinstance(doc[name], str) or not doc[name]:
            raise _fail(path, line, f"{name} must be a non-empty string")
    max_tokens = doc["max_tokens"]
    if (
        not isinstance(max_tokens, int)
        or isinstance(max_tokens, bool)
        or not 1 <= max_tokens <= MAX_TASK_TOKENS
    ):
        raise _fail(path, line, f"max_tokens must be an integer in [1, {MAX_TASK_TOKENS}]")
    gold = doc["gold"]
    if kind in ("extraction", "toolargs") and (not isinstance(gold, dict) or not gold):
        raise _fail(path, line, "gold must be a non-empty object of expected member values")
    if kind == "arithmetic":
        try:
            Decimal(gold if isinstance(gold, str) else "x")
        except InvalidOperation:
            raise _fail(path, line, "gold must be a decimal number written as a string") from None
    if kind == "plain" and (
        not isinstance(gold, dict)
        or set(gold) != {"contains_any"}
        or not gold["contains_any"]
        or not all(isinstance(s, str) and s for s in gold["contains_any"])
    ):
        raise _fail(path, line, 'gold must be {"contains_any": [non-empty strings]}')
    schema = schema_path = grammar = None
    if "schema" in doc:
        schema_path = doc["schema"]
        schema = _read_json(path, line, schema_path)
        if kind in ("extraction", "toolargs"):
            props = schema.get("properties", {}) if isinstance(schema, dict) else {}
            absent = sorted(set(gold) - set(props))
            if absent:
                raise _fail(path, line, f"gold names members the schema lacks: {absent}")
    if kind == "arithmetic":
        grammar = _read_text(path, line, doc["tool_grammar"])
    return Task(
        id=doc["id"],
        kind=kind,
        prompt=doc["prompt"],
        max_tokens=max_tokens,
        gold=gold,
        schema=schema,
        schema_path=schema_path,
        tool_prompt=doc.get("tool_prompt"),
        tool_grammar=grammar,
    )


def _resolve(path: Path, line: int, rel: Any) -> Path:
    if not isinstance(rel, str) or not rel:
        raise _fail(path, line, "file references must be non-empty strings")
    return path.parent / rel


def _read_text(path: Path, line: int, rel: Any) -> str:
    target = _resolve(path, line, rel)
    try:
        return read_file(target, "benchmark").decode("utf-8")
    except (TrgcError, UnicodeDecodeError) as exc:
        raise _fail(path, line, f"cannot read {rel!r}: {exc}") from None


def _read_json(path: Path, line: int, rel: Any) -> dict:
    text = _read_text(path, line, rel)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(path, line, f"{rel!r} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise _fail(path, line, f"{rel!r} is not a JSON Schema object")
    return value


def load_tasks(path: Path | str) -> list[Task]:
    """Read and check every task in the JSONL file at `path` (blank lines are skipped)."""
    path = Path(path)
    try:
        text = read_file(path, "benchmark").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrgcError("E_QUALITY_TASKS", f"not UTF-8: {exc}", source=str(path)) from None
    tasks: list[Task] = []
    seen: set[str] = set()
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            doc = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise _fail(path, number, f"not JSON: {exc.msg}") from None
        task = _parse_task(doc, path, number)
        if task.id in seen:
            raise _fail(path, number, f"duplicate task id {task.id!r}")
        seen.add(task.id)
        tasks.append(task)
    if not tasks:
        raise TrgcError("E_QUALITY_TASKS", "the task file holds no task", source=str(path))
    return tasks
