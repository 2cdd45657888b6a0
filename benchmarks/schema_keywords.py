"""Keyword census of JSONSchemaBench: how often each keyword occurs in real schemas.

Walks every schema of every subset through schema positions only (the values of
`properties`, `items`, `allOf`, ... are schemas; the values of `enum`, `const`, `default`,
`examples` are data and are not walked), and counts per keyword the number of schemas that
use it and the number of schema objects it appears in. The table orders trj-1's work: the
keywords most schemas use come first.

Run: .venv/bin/python benchmarks/schema_keywords.py [--top N] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trgc.grammar.schema.keywords import status_of

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"

SCHEMA_VALUED = frozenset(
    {
        "additionalProperties",
        "additionalItems",
        "items",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
        "contentSchema",
    }
)
SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)


def keywords_of(schema: object) -> dict[str, int]:
    """Keyword -> number of schema objects in `schema` that use it (no recursion)."""
    counts: dict[str, int] = {}
    stack = [schema]
    while stack:
        item = stack.pop()
        if not isinstance(item, dict):
            continue
        for key, value in item.items():
            counts[key] = counts.get(key, 0) + 1
            if key in SCHEMA_MAPS and isinstance(value, dict):
                stack.extend(v for v in value.values() if isinstance(v, dict))
            elif key in SCHEMA_LISTS and isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, dict))
            elif key in SCHEMA_VALUED and isinstance(value, dict):
                stack.append(value)
    return counts


def census(bench: Path) -> tuple[int, dict[str, list[int]]]:
    """(number of schemas, keyword -> [schemas using it, objects using it])."""
    table: dict[str, list[int]] = {}
    n = 0
    for subset in sorted(p for p in bench.iterdir() if p.is_dir()):
        for path in sorted(subset.glob("*.json")):
            n += 1
            for key, objects in keywords_of(json.loads(path.read_bytes())).items():
                row = table.setdefault(key, [0, 0])
                row[0] += 1
                row[1] += objects
    return n, table


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=60, help="rows to print (default 60)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    n, table = census(CORPORA / "jsonschemabench")
    rows = sorted(table.items(), key=lambda kv: (-kv[1][0], kv[0]))[: args.top]
    if args.json:
        doc = {
            "schemas": n,
            "keywords": [
                {"keyword": k, "schemas": s, "objects": o, "status": status_of(k) or "unknown"}
                for k, (s, o) in rows
            ],
        }
        print(json.dumps(doc, indent=1))
        return 0
    print(f"{n} schemas")
    print(f"{'keyword':<28}{'schemas':>8}{'%':>7}{'objects':>9}  trj-1 status")
    for k, (s, o) in rows:
        print(f"{k:<28}{s:>8}{100 * s / n:>7.1f}{o:>9}  {status_of(k) or 'unknown'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
