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
    "E_SCHEMA_KEYWORD_TYPO",
    "E_UNSUPPORTED_KEYWORD",
    "E_UNIQUE_ITEMS",
    "E_BOOLEAN_OPERAND",
    "E_REMOTE_REF",
    "E_REF_UNRESOLVED",
    "E_REF_NO_PROGRESS",
    "E_ONEOF_OVERLAP",
    "E_UNSATISFIABLE",
    "E_LIMIT_REPETITION",
    "E_LIMIT_STATES",
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
trgc compile schema.json --whitespace compact       # "," ":" (default pretty: ", " ": " as json.dumps)
trgc compile schema.json --whitespace flexible --max-whitespace 4   # bounded JSON whitespace
trgc compile schema.json --unknown-keywords annotate  # names outside the matrix are annotations
trgc compile schema.json --open-objects             # admit undeclared members after declared ones
trgc compile schema.json --member-order any         # declared members of small objects in any order
trgc check schema.trga doc.json                     # says which --whitespace would accept doc.json
trgc keywords [--json]                              # this matrix
trgc conformance jsts ../shared/corpora/json-schema-test-suite   # classified suite run (ratchet)
trgc coverage ../shared/corpora/jsonschemabench --peer llguidance  # compile + MaskBench-style check
```
```python
art = trgc.compile_schema(schema, whitespace="pretty", open_objects=False, max_depth=32)
art = trgc.compile_schema(schema, unknown_keywords="annotate")  # art.metadata["options"]["annotations"]
art = trgc.compile_schema(schema, ignore_keywords=("_format",))  # explicit: keywords outside the matrix only
```

Nothing unknown is ignored by default: a keyword outside the matrix, or one marked unsupported,
is `E_UNSUPPORTED_KEYWORD` naming the keyword, its JSON pointer and the switch below.
Annotation keywords of the matrix never change which values are accepted and are ignored by
design.

## Unknown keywords: `--unknown-keywords error|annotate`

* `error` (default): a name outside the matrix is `E_UNSUPPORTED_KEYWORD`.
* `annotate`: such names are read as the specification reads them, as annotations; each is
  listed, sorted, in the artifact's `options.annotations` (so it changes the identity), in
  `trgc inspect` and in `trgc compile --json`, and `trgc compile` warns once per name.
* In both modes a name one or two edits away from an assertion keyword, ignoring case, is
  `E_SCHEMA_KEYWORD_TYPO` with a "did you mean" hint (`emum`, `maxLenght`, `requried`,
  `Required`, `type:`): reading it as an annotation would drop the constraint meant. Keywords
  of seven or more letters allow two edits, of four to six one, shorter ones only a different
  case; a name starting with `_` is a deliberate switch-off (`_format`), never a typo.
* Three constructs that would otherwise drop a constraint silently follow the same rule (an
  error by default, a recorded annotation in annotate mode): a vendor keyword `x-*` whose
  value is a schema (`x-NAME`), a `format` no validator knows (`format:NAME`), and in
  draft-04/06/07 an assertion beside `$ref` that the target does not repeat
  (`$ref-sibling:KEYWORD`): those drafts say it is ignored, and annotate mode ignores it, as
  they say.
* A keyword the matrix knows but marks unsupported stays `E_UNSUPPORTED_KEYWORD` in both modes.

## Whitespace: `--whitespace pretty|compact|flexible`

`pretty` (the default of `compile`, `toolcall` and `compile_schema`) writes `, ` and `: ` as
json.dumps and chat templates do; `compact` writes `,` and `:`; `flexible` admits JSON
whitespace (space, tab, line feed, carriage return) as users write it, at most
`--max-whitespace` characters (default 8) on each side of every structural character and
around the value, so a model cannot run away in whitespace. The mode (and the bound) is in the
artifact's options. `trgc check` on a document rejected only for its whitespace says which
option would accept it. (`--separators` is the option's older name.)

## Member order: `--member-order declared|any`

`declared` (the default) writes an object's members in declared order, the order a generator
should produce; a valid document written in another order is refused (on the visible
JSONSchemaBench instances, 251 of 5,298 valid instances, in 155 schemas, are not written in
declared order). `any` (`compile_schema(..., member_order="any")`) admits the declared members
of an object with at most 6 of them in any order, each at most once and the required ones
present; additional members (open objects, `additionalProperties` or `patternProperties`)
still come after the declared ones, and an object with more declared members keeps declared
order (a subset of the valid orders, so nothing invalid is admitted). The construction is one
shared machine per set of members already written (2^n machines of at most n + 1 branches),
each reading up to the object's `}`. The order is recorded in the artifact's options (only when
`any`, so declared-order artifacts keep their bytes).
"""

_LOWERING = """\
## How a schema becomes a grammar

* Each schema object is read through its draft (`definitions`, draft-04 `id`, boolean
  `exclusiveMinimum`/`exclusiveMaximum`, array-form `items` + `additionalItems`, `dependencies`);
  references keep pointing into the original document.
* `allOf` and `$ref` with sibling keywords (2019-09 and later) are merged into one schema; two
  constraints on one member (or on `items`, `contains`, `additionalProperties`) become a
  conjunction of both subschemas, lowered by merging in turn. Branches that carry different
  combinators of one kind (`anyOf`, `oneOf`, `if`/`then`/`else`, `dependentSchemas`, also
  through `$ref`s) are distributed: `allOf(A, anyOf(B, C))` is `anyOf(allOf(A, B),
  allOf(A, C))`; the merged schema keeps one combinator of each kind and holds the others
  back, and each is moved into the branches of the one before as they are lowered. A `oneOf`
  keeps its own rule (disjoint branches a union, else exactly one), an `if` is
  `(if ∧ then) ∨ (¬if ∧ else)`. The terms multiply (2 × 3 branches are 6 terms); their number
  times the schema text they lower is checked against the `operations` limit before anything
  is built (`E_LIMIT_OPERATIONS`), and equal combinators reached twice count once. The
  negation of such a product (a disjunction of negations) is `E_UNSUPPORTED_KEYWORD`. Two
  different `$ref`s met in one merge (an `if` and its `then` both references) are held back
  the same way: one is merged in, then the other.
* Each `$ref` target becomes a rule named after its pointer. A target used from one place, or
  small (at most 48 AST nodes) and without references of its own, is inlined by the compiler;
  a target used from two or more places (an optional member's value counts twice: it is written
  as the first member and after a comma) is marked `shared` and compiled once, as a machine
  called from every use, so a definition used twice inside one used twice, k levels deep, costs
  k machines rather than 2^k copies (Kubernetes' `ObjectMeta`, `Time`, ...). Where a call would
  hide the bytes that decide a choice (two referenced objects behind an `anyOf`), the predictive
  check fails and the compiler inlines that rule again, which is always exact. Recursive
  references stay calls, and the runtime stack (depth at most `max_depth`, default 32) bounds
  how deep they nest.
* A string with a `pattern` and a `maxLength` above 64 (unless the pattern is one repeated
  class, which takes the bounds into its counter) is the automata product of the pattern with
  the strings of the allowed length, about the pattern's states times the length: it is a
  shared rule of its own, a machine called where the string is, whose table is the product as
  built (no second subset construction in the caller); equal ones are one machine.
* A schema that admits any value (`true`, `{}`) becomes the recursive rule `json_value`.
* Object members: each member value appears at most twice in the AST (as first member and after a
  comma), so optional members stay linear in the number of members.
* `anyOf` is the union of its branches; `oneOf` is the same union once the branches are proven
  disjoint (by JSON type, by `const`/`enum` values, or by a property required in both branches
  with disjoint values), and otherwise the exact "exactly one" below.
* The traversal is an explicit stack: schema nesting never becomes Python recursion, and the
  `nesting` limit bounds it (checked on the text before JSON parsing too).

## Exact boolean combinators

The AST has two kinds for them: `AND` (the intersection of its operands' languages) and `NOT`
(every byte string outside its operand's language, only meaningful as an `AND` operand, whose
other operands are its universe). The compiler builds each operand as its own NFA over the
grammar's atoms, determinises and minimises it, and computes the product DFA breadth-first
over tuples of operand states (a complemented operand without a transition moves to an
implicit sink, where it accepts); states that cannot reach acceptance are trimmed and the
result is minimised and spliced into the surrounding NFA as one fragment. Every operand state
and product tuple is checked against the `states` limit before it is allocated, and every step
is charged to the operation budget. A complement is taken over bytes only: its operands (and,
beside a complement, every operand) may not call a recursive rule or hold a special token
(`E_BOOLEAN_OPERAND`); an intersection without complements keeps calls, which is sound (both
operands call the same rule at the same place, as the lowering builds them).

The lowering turns `not`, `if`/`then`/`else`, `dependentSchemas` and overlapping `oneOf` into a
disjunction of *terms* `P ∧ ¬N1 ∧ … ∧ ¬Nk`: `if I then T else E` is `(P ∧ I ∧ T) ∨ (P ∧ E ∧ ¬I)`,
`dependentSchemas {a: S}` is `(P ∧ S ∧ a present) ∨ (P ∧ ¬(a present))`, and "exactly one of
B1..Bn" is `∨i (P ∧ Bi ∧ ∧j≠i ¬Bj)` (at most 64 terms). Negations are then computed one JSON type
at a time (a keyword only constrains its own type):

* scalars: `AND(P_t, CANON_t, NOT(N_t))`. A complement is only sound if both sides agree on how
  values are spelt: if `N_t` admitted a value in one spelling only, another spelling of the
  same value would slip through (`{"type":"string","not":{"const":"a"}}` must reject
  `"\\u0061"`). `CANON_t` restricts the universe to one spelling per value (strings as
  json.dumps writes them; numbers as plain decimals without exponent, leading or trailing zeros,
  of at most 15 digits), and `N_t` is lowered *completely* for those spellings: every canonical
  spelling of every value valid under it (patterns in the widest reading of ECMA-262 and
  Python `re`; formats, whose shapes are narrower than validators, are refused). So the
  complement removes exactly the values `N` accepts, and the rest of the universe stays.
* objects: `N` may only name required members, member counts and member values
  (`required`, `minProperties`, `maxProperties`, `properties`); `¬N` is then a choice: a
  required name absent, a count out of bounds, or a member present whose value is not valid
  under its subschema (a negation one level down).
* arrays: a negated array constraint is unsupported (with overlapping `oneOf`:
  `E_ONEOF_OVERLAP`).

## Member presence, key regions and array conditions

* `minProperties`, `maxProperties` and `dependentRequired` are languages over the object's
  member forms (fresh copies of the same member automata) that only look at which members
  occur; the object is their intersection with its member list, which is exact. Additional
  members count once towards `minProperties`: two of them might repeat a name, which no finite
  automaton can rule out, so a lower bound the declared members cannot reach is
  `E_UNSUPPORTED_KEYWORD` (`minProperties`). An object of additional members only (a map:
  `additionalProperties` or `patternProperties` without `properties`) needs no product: its
  count is a counter, `{` E (`,` E){0,max-1} `}`, so `maxProperties` reaches the repetition
  limit (2^20). Beside n declared members, `maxProperties` m > n is a counter too when the
  lower bound is at most 1 or at most the required members: declared members come first, so
  an object of more than n members has all its declared ones among its first n; it is n
  members of the member list (a product with "exactly n members") followed by 1..m-n
  additional members, counted, and an object of at most n members is the member list
  intersected with "1..n members" (both alternatives read alike up to the n-th member, where
  `}` or `,` decides). A higher lower bound keeps the product, which counts in states: one
  over the `states` limit is refused before it is built (`E_LIMIT_STATES` at
  `maxProperties`, saying so).
* `patternProperties`: a declared member also takes the schema of every pattern that may match
  it; additional names form one region per set of patterns they surely match (narrow readings
  intersected with the complements of the wide readings of the others), their value the
  conjunction of those schemas or `additionalProperties` for none. `propertyNames` checks the
  declared names and intersects the additional names with its string language.
* `contains` with `minContains`/`maxContains`, and `uniqueItems` over a finite element domain,
  are languages over the array's element forms intersected with the array (`maxContains`
  needs a negation of `contains`, computed as above); `uniqueItems` tracks which values occurred,
  up to 2^12 states.
* `multipleOf` n·10^-k with n = 2^a·5^b: divisibility of x·10^k by n depends on its last
  max(a, b) digits, which are enumerated (at most 1,000 windows) and intersected with the
  number grammar.

## Numbers and duplicate names

Numbers under `{}` or a bare `"type": "number"` are binary64-safe: the integer part has at most
15 digits (a plain integer is below 10^15 < 2^53) and the exponent is at most 280, so no spelling
overflows to an infinity or silently rounds an integer (a long fraction only rounds, as every
decimal does); `"type": "integer"` follows the schema's own bounds where it has them, else
±(2^53−1). Member names are unique exactly where
they are declared (distinct literals, each at most once); additional members (open objects,
`additionalProperties`, `patternProperties`, values under `{}`) are only checked against the
declared names, since no finite automaton can remember an unbounded set of names.
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
        "the chosen separators and members ordered as the schema declares them. It also counts the",
        "valid instances refused only because their members were not in declared order, and with",
        "`--peer llguidance` runs llguidance on the same schemas and the same instance bytes.",
    ]
    return "\n".join(lines) + "\n"
