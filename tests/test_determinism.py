"""Every shipped grammar and schema compiles to byte-identical artifacts under different
PYTHONHASHSEEDs.

Each run happens in a fresh interpreter (the hash seed is fixed at start-up), compiles every
`grammars/*.trg` (and every `schemas/*.json` plus schemas built to exercise counters and shared
machines), and reports the identity and a hash of the exact file bytes it would write.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRAMMARS = sorted((ROOT / "grammars").glob("*.trg"))
SCHEMAS = sorted((ROOT / "schemas").glob("*.json"))


def _nested(depth: int, leaf: dict, wrap) -> dict:
    schema = leaf
    for _ in range(depth):
        schema = wrap(schema)
    return schema


# counters (long maxLength, maxItems, minItems), shared member values and deep nesting: the
# parts of the compiler whose order of work could depend on hashing
COUNTED_SCHEMAS = {
    "long-strings": {
        "type": "object",
        "properties": {
            "a": {"type": "string", "maxLength": 1_000_000},
            "b": {"type": "string", "minLength": 3, "maxLength": 70},
            "c": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 40},
        },
        "required": ["b"],
    },
    "optional-objects": _nested(
        12,
        {"type": "integer"},
        lambda inner: {"type": "object", "properties": {"x": inner, "y": {"type": "boolean"}}},
    ),
    "integer-arrays": _nested(
        8, {"type": "integer"}, lambda inner: {"type": "array", "items": inner, "maxItems": 5}
    ),
}

SCRIPT = """
import hashlib, json, sys
from pathlib import Path
from trgc.compiler.build import compile_grammar
from trgc.artifact.codec import to_file_bytes
out = {}
for path in sys.argv[1:]:
    artifact = compile_grammar(Path(path).read_bytes(), source=Path(path).name)
    out[Path(path).name] = {
        "sha256": artifact.sha256,
        "canonical": hashlib.sha256(artifact.to_bytes()).hexdigest(),
        "file": hashlib.sha256(to_file_bytes(artifact)).hexdigest(),
    }
print(json.dumps(out, sort_keys=True))
"""


SCHEMA_SCRIPT = """
import hashlib, json, sys
from trgc.compiler.schema import compile_schema
from trgc.artifact.codec import to_file_bytes
out = {}
for name, text in json.load(sys.stdin).items():
    artifact = compile_schema(text, source=name)
    out[name] = {"sha256": artifact.sha256, "file": hashlib.sha256(to_file_bytes(artifact)).hexdigest()}
print(json.dumps(out, sort_keys=True))
"""


def _schema_texts() -> dict[str, str]:
    texts = {path.name: path.read_text(encoding="utf-8") for path in SCHEMAS}
    texts.update({name: json.dumps(schema) for name, schema in COUNTED_SCHEMAS.items()})
    return texts


def _compile_schemas(seed: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", SCHEMA_SCRIPT],
        input=json.dumps(_schema_texts()),
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONHASHSEED=seed),
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _compile_all(seed: str) -> dict:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, *map(str, GRAMMARS)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_grammars_are_shipped():
    names = {path.name for path in GRAMMARS}
    assert "json.trg" in names and len(names) >= 5


def test_compilation_is_independent_of_hash_seed():
    first = _compile_all("0")
    second = _compile_all("4242")
    assert set(first) == {path.name for path in GRAMMARS}
    assert first == second
    for entry in first.values():
        assert entry["sha256"] == "sha256:" + entry["canonical"]


def test_in_process_compilation_matches_subprocess():
    from trgc.compiler.build import compile_grammar

    expected = _compile_all("1")
    for path in GRAMMARS:
        assert (
            compile_grammar(path.read_bytes(), source=path.name).sha256
            == expected[path.name]["sha256"]
        )


def test_schemas_with_counters_are_independent_of_hash_seed():
    from trgc.artifact.model import REPEAT, SHARED

    first = _compile_schemas("0")
    assert first == _compile_schemas("977")
    assert set(first) == set(_schema_texts())
    # the built schemas really exercise counters and shared machines
    from trgc.compiler.schema import compile_schema

    kinds = {
        kind
        for schema in COUNTED_SCHEMAS.values()
        for kind in (m.kind for m in compile_schema(json.dumps(schema)).machines)
    }
    assert {REPEAT, SHARED} <= kinds
