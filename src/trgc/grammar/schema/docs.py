"""The text of `docs/trj-1.md`, rendered from the keyword matrix and the profile rules.

`scripts/gen_docs.py` writes it and a test checks that the committed page is fresh, so the
documentation cannot drift from the matrix the compiler enforces.
"""

from __future__ import annotations

from trgc.errors import CODES
from trgc.grammar.schema.keywords import KEYWORDS, PROFILE_RULES, SUPPORTED_FORMATS

_CODES = (
    "E_SCHEMA_JSON",
    "E_SCHEMA_DUPLICATE_KEY",
    "E_SCHEMA_NOT_OBJECT",
    "E_SCHEMA_INVALID",
    "E_UNSUPPORTED_KEYWORD",
    "E_REMOTE_REF",
    "E_REF_UNRESOLVED",
    "E_REF_NO_PROGRESS",
    "E_ONEOF_OVERLAP",
    "E_UNSATISFIABLE",
    "E_LIMIT_REPETITION",
    "E_LIMIT_NESTING",
    "E_LIMIT_MAX_DEPTH",
    "E_LIMIT_INPUT_BYTES",
    "E_LIMIT_OPERATIONS",
)

_INTRO = """\
# trj-1: the JSON Schema profile

Generated from `src/trgc/grammar/schema/keywords.py` by `scripts/gen_docs.py`; do not edit by hand.

trj-1 is the subset of JSON Schema that trgc compiles into a byte-level constraint. A schema is
read (draft-04, -06, -07, 2019-09 or 2020-12; older spellings are rewritten to their 2020-12
meaning), lowered to the same AST as trg-1 grammars and compiled by the same back end. An
artifact accepts exactly the JSON texts that are valid under the schema *and* written the way
the profile writes them. The guarantee is membership: "JSON complete and profile-valid", never
"correct".

```
trgc compile schema.json -o schema.trga            # JSON Schema detected by extension/content
trgc compile schema.json --separators pretty        # ", " and ": " as json.dumps writes them
trgc compile schema.json --open-objects             # admit undeclared members after declared ones
trgc keywords [--json]                              # this matrix
trgc conformance jsts ../shared/corpora/json-schema-test-suite   # classified suite run (ratchet)
trgc coverage ../shared/corpora/jsonschemabench     # compile + MaskBench-style instance check
```
```python
art = trgc.compile_schema(schema, separators="compact", open_objects=False, max_depth=32)
art = trgc.compile_schema(schema, ignore_keywords=("_format",))  # explicit: keywords outside the matrix only
```

Nothing unknown is ignored: a keyword outside the matrix, or one marked unsupported, is
`E_UNSUPPORTED_KEYWORD` naming the keyword and its JSON pointer. Annotation keywords never
change which values are accepted and are ignored by design.
"""

_LOWERING = """\
## How a schema becomes a grammar

* Each schema object is read through its draft (`definitions`, draft-04 `id`, boolean
  `exclusiveMinimum`/`exclusiveMaximum`, array-form `items` + `additionalItems`); references
  keep pointing into the original document.
* `allOf` and `$ref` with sibling keywords (2019-09 and later) are merged into one schema when the
  merge is exact; otherwise the schema is unsupported (keyword `allOf`).
* Each `$ref` target becomes a rule named after its pointer. The compiler inlines the rules that
  are not on a cycle, so a schema without recursion is one DFA; recursive references stay calls,
  and the runtime stack (depth at most `max_depth`, default 32) bounds how deep they nest.
* A schema that admits any value (`true`, `{}`) becomes the recursive rule `json_value`.
* Object members: each member value appears at most twice in the AST (as first member and after a
  comma), so optional members stay linear in the number of members.
* `anyOf` is the union of its branches; `oneOf` is the same union once the branches are proven
  disjoint (by JSON type, by `const`/`enum` values, or by a property required in both branches
  with disjoint values); otherwise `E_ONEOF_OVERLAP`.
* The traversal is an explicit stack: schema nesting never becomes Python recursion, and the
  `nesting` limit bounds it (checked on the text before JSON parsing too).
"""


def trj1_page() -> str:
    lines = [_INTRO, "## Profile rules", "", "| rule | meaning |", "| --- | --- |"]
    for rule, meaning in PROFILE_RULES.items():
        lines.append(f"| `{rule}` | {meaning} |")
    lines += [
        "",
        "## Keyword matrix",
        "",
        "| keyword | status | applies to | how trj-1 reads it |",
        "| --- | --- | --- | --- |",
    ]
    for k in KEYWORDS:
        lines.append(f"| `{k.name}` | {k.status} | {k.applies_to} | {k.note} |")
    lines += [
        "",
        f"Formats enforced as shape: {', '.join(f'`{f}`' for f in SUPPORTED_FORMATS)}.",
        "",
        _LOWERING,
    ]
    lines += ["## Error codes", "", "| code | meaning |", "| --- | --- |"]
    for code in _CODES:
        lines.append(f"| `{code}` | {CODES[code]} |")
    lines += [
        "",
        "## Conformance and coverage",
        "",
        "`trgc conformance jsts` classifies every case of the official suite (draft 2020-12) as",
        "`required` (the artifact must accept the instance's canonical serialisation exactly when the",
        "suite says it is valid; 100% must pass), `outside-profile` (with the profile rule above that",
        "excludes it) or `unsupported` (with the keyword). The classification is committed in",
        "`tests/data/jsts-classification.json`; a case that gets worse fails the run, an improvement",
        "is reported and accepted with `--update`. An accepted invalid instance is always a failure.",
        "",
        "`trgc coverage` compiles every JSONSchemaBench schema (compiled / unsupported by keyword /",
        "failed by code) and checks the upstream valid and invalid instances, re-serialised in the",
        "profile's canonical form (members in declared order). Zero accepted invalid instances is a",
        "hard requirement. The canonical form of an instance is `json.dumps(ensure_ascii=False)` with",
        "the chosen separators and members ordered as the schema declares them.",
    ]
    return "\n".join(lines) + "\n"
