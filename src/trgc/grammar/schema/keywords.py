"""THE trj-1 keyword matrix: every JSON Schema keyword trgc knows, as data.

`docs/trj-1.md` and `trgc keywords` are rendered from `KEYWORDS`. The lowering consults
`STATUS` only: a keyword absent from the matrix, or marked unsupported, is
`E_UNSUPPORTED_KEYWORD` naming it and its JSON pointer. Annotation keywords are accepted and
ignored by design (they never change which values are accepted).
"""

from __future__ import annotations

from dataclasses import dataclass

SUPPORTED = "supported"
NORMALISED = "normalised"  # an older draft's spelling, rewritten to its 2020-12 meaning
ANNOTATION = "ignored-by-design"
UNSUPPORTED = "unsupported"


@dataclass(frozen=True)
class Keyword:
    name: str
    status: str
    applies_to: str  # "any", "object", "array", "string", "number", "core"
    note: str


KEYWORDS: tuple[Keyword, ...] = (
    # core
    Keyword(
        "type",
        SUPPORTED,
        "any",
        "a name or a list of names; `integer` is a number without fraction or exponent",
    ),
    Keyword(
        "enum",
        SUPPORTED,
        "any",
        "any JSON values, written in canonical form; duplicates are invalid; empty is unsatisfiable",
    ),
    Keyword("const", SUPPORTED, "any", "any JSON value, written in canonical form"),
    Keyword(
        "$ref",
        SUPPORTED,
        "core",
        "local references (`#`, `#/json/pointer`, or the root `$id` followed by one); recursion is bounded by max_depth; in draft-04/06/07 sibling keywords are ignored as those drafts say",
    ),
    Keyword("$defs", SUPPORTED, "core", "a container of schemas reached through `$ref`"),
    Keyword("definitions", NORMALISED, "core", "draft-04..07 spelling of `$defs`"),
    Keyword(
        "anyOf",
        SUPPORTED,
        "any",
        "union of the branches; the branches must stay predictive where they reach a recursive reference",
    ),
    Keyword(
        "oneOf",
        SUPPORTED,
        "any",
        "union when the branches are provably disjoint (by type, const/enum values, a required discriminator property with disjoint values, or required members one branch never writes or forbids); otherwise exactly one branch: each branch minus the others, negated as for `not` (E_ONEOF_OVERLAP when a negation is outside what `not` computes)",
    ),
    Keyword(
        "allOf",
        SUPPORTED,
        "any",
        "the branches and the surrounding keywords merged into one schema (each keyword once, or a conjunction: `required` lists, bounds, member and item schemas); branches with different anyOf, oneOf, if/then/else or dependentSchemas (also through `$ref`s) are distributed, and two different `$ref`s met in one merge are both merged in, one term per combination of branches, the product's size projected against the operations limit before it is built; a negated product is unsupported",
    ),
    Keyword(
        "$id",
        ANNOTATION,
        "core",
        "accepted at the root (it becomes the base of absolute local references) and as a plain name fragment; an embedded resource with another base is unsupported where a `$ref` depends on it",
    ),
    Keyword("id", NORMALISED, "core", "draft-04 spelling of `$id`"),
    Keyword(
        "$schema",
        ANNOTATION,
        "core",
        "selects the draft whose spellings are normalised (draft-04, -06, -07, 2019-09, 2020-12; absent means 2020-12)",
    ),
    # objects
    Keyword(
        "properties",
        SUPPORTED,
        "object",
        "members appear in declared order; required ones present, optional ones may be skipped",
    ),
    Keyword(
        "required",
        SUPPORTED,
        "object",
        "names must be declared in `properties` unless additional members are allowed",
    ),
    Keyword(
        "additionalProperties",
        SUPPORTED,
        "object",
        "`false`, `true` or `{}` keep the object closed (unless --open-objects); a schema admits further canonical member names, after the declared ones, none equal to a declared name",
    ),
    # arrays
    Keyword(
        "items",
        SUPPORTED,
        "array",
        "schema for the elements after `prefixItems`; `false` forbids them; the draft-04..2019 array form is normalised to `prefixItems`",
    ),
    Keyword("prefixItems", SUPPORTED, "array", "schemas for the first elements, in order"),
    Keyword(
        "additionalItems",
        NORMALISED,
        "array",
        "draft-04..2019 spelling of `items` after an array-form `items`",
    ),
    Keyword("minItems", SUPPORTED, "array", "counted repetition, bounded by the repetition limit"),
    Keyword("maxItems", SUPPORTED, "array", "counted repetition, bounded by the repetition limit"),
    Keyword(
        "uniqueItems",
        SUPPORTED,
        "array",
        "`true` exactly when the element domain is finite and small (enum, const, boolean and null elements, at most 12 values): each value at most once, an automata product of up to 2^n states; otherwise E_UNIQUE_ITEMS",
    ),
    # strings
    Keyword(
        "minLength",
        SUPPORTED,
        "string",
        "in Unicode code points (a surrogate-pair escape counts once)",
    ),
    Keyword(
        "maxLength", SUPPORTED, "string", "in Unicode code points; bounded by the repetition limit"
    ),
    Keyword(
        "format",
        SUPPORTED,
        "string",
        "as shape only (a subset of what validators accept): `date`, `time`, `date-time` (RFC 3339, upper-case `T`/`Z`, no leap second), `duration` (RFC 3339 appendix A, integers of at most 9 digits), `uuid`, `email`/`idn-email` (dot-atom @ hostname, ASCII), `hostname`/`idn-hostname` (2 to 4 ASCII labels), `ipv4`, `ipv6` (RFC 4291 text forms, no zone), `uri`/`uri-reference`/`iri`/`iri-reference` (http(s) URLs), `json-pointer`, `relative-json-pointer` (no index manipulation), `uri-template` (RFC 6570, ASCII); with pattern or minLength/maxLength by intersection; `regex` (not a regular language) is unsupported; names no validator knows (OpenAPI int32, ...) are an error, or annotations with --unknown-keywords annotate",
    ),
    # numbers
    Keyword(
        "minimum",
        SUPPORTED,
        "number",
        "exact digit automata: any bound for integers; decimal bounds for numbers (then written without exponent; not two fractional bounds inside one integer interval; under an exclusive bound at most 15 significant digits, so binary64 rounding cannot reach the bound)",
    ),
    Keyword("maximum", SUPPORTED, "number", "as minimum"),
    Keyword(
        "exclusiveMinimum",
        SUPPORTED,
        "number",
        "as minimum; the draft-04 boolean form is normalised",
    ),
    Keyword(
        "exclusiveMaximum",
        SUPPORTED,
        "number",
        "as minimum; the draft-04 boolean form is normalised",
    ),
    # annotations
    Keyword("title", ANNOTATION, "any", "annotation"),
    Keyword("description", ANNOTATION, "any", "annotation"),
    Keyword("default", ANNOTATION, "any", "annotation"),
    Keyword("examples", ANNOTATION, "any", "annotation"),
    Keyword("$comment", ANNOTATION, "any", "annotation"),
    Keyword("deprecated", ANNOTATION, "any", "annotation"),
    Keyword("readOnly", ANNOTATION, "any", "annotation"),
    Keyword("writeOnly", ANNOTATION, "any", "annotation"),
    # extension annotations of named conventions (no validation meaning anywhere)
    Keyword(
        "x-*",
        ANNOTATION,
        "any",
        "vendor extensions (OpenAPI, Kubernetes): every keyword starting with `x-`",
    ),
    Keyword("example", ANNOTATION, "any", "OpenAPI annotation"),
    Keyword(
        "self",
        ANNOTATION,
        "core",
        "Snowplow self-describing schema metadata (vendor, name, format, version)",
    ),
    Keyword("markdownDescription", ANNOTATION, "any", "VS Code JSON language service annotation"),
    Keyword(
        "markdownEnumDescriptions", ANNOTATION, "any", "VS Code JSON language service annotation"
    ),
    Keyword("enumDescriptions", ANNOTATION, "any", "VS Code JSON language service annotation"),
    Keyword("deprecationMessage", ANNOTATION, "any", "VS Code JSON language service annotation"),
    # deferred (report, "Bounded JSON profile: trj-1")
    Keyword(
        "pattern",
        SUPPORTED,
        "string",
        "a safe subset of ECMA-262 (classes, groups, alternation, quantifiers, `^`/`$` at the ends; no backreferences, lookaround or \\b), read so that it is never wider than ECMA-262 or Python `re`; with minLength/maxLength: one repeated class takes the bounds into its counter, any other pattern is intersected with the strings of the allowed length (an automata product; a machine of its own above maxLength 64)",
    ),
    Keyword(
        "patternProperties",
        SUPPORTED,
        "object",
        "at most 4 patterns; a declared member also takes the schema of every pattern that may match its name; additional names (after the declared ones, canonical) form one region per set of patterns they surely match, their value the conjunction of those schemas (or additionalProperties' for none); names only one regex reading matches are never written",
    ),
    Keyword(
        "propertyNames",
        SUPPORTED,
        "object",
        "declared names are checked (enum, const, pattern, minLength, maxLength); additional names are intersected with the schema's string language",
    ),
    Keyword(
        "minProperties",
        SUPPORTED,
        "object",
        "exact: the member list intersected with the objects of enough members (an automata product); over a map (additional members only) a counter, bounded by the repetition limit; above one over additional members only E_UNSUPPORTED_KEYWORD (their names may repeat)",
    ),
    Keyword(
        "maxProperties",
        SUPPORTED,
        "object",
        "exact: over a map, or beside n declared members when minProperties is at most 1 or at most the required members, a counter beyond the n-th member, up to the repetition limit; otherwise as minProperties (a product, its size projected against the states limit)",
    ),
    Keyword(
        "dependentRequired",
        SUPPORTED,
        "object",
        "exact: the member list intersected with 'lacks the name, or has every dependent name'",
    ),
    Keyword(
        "dependentSchemas",
        SUPPORTED,
        "object",
        "exact: the object either lacks the name, or has it and satisfies the schema (two alternatives)",
    ),
    Keyword(
        "dependencies",
        NORMALISED,
        "object",
        "draft-04..07 form: an array value is dependentRequired, a schema value dependentSchemas",
    ),
    Keyword(
        "unevaluatedProperties",
        SUPPORTED,
        "object",
        "where the schema itself (with what allOf, $ref, if/then and the chosen anyOf/oneOf branch merge into it) has no additionalProperties: it stands for additionalProperties over the merged members; inside a branch that is merged with others it is unsupported",
    ),
    Keyword(
        "unevaluatedItems",
        SUPPORTED,
        "array",
        "where the merged schema has no `items`: the schema of the elements after prefixItems (with `contains`: elements valid under contains or under it); inside a merged branch unsupported",
    ),
    Keyword(
        "contains",
        SUPPORTED,
        "array",
        "exact: the array intersected with the arrays having at least minContains (default 1) elements valid under it",
    ),
    Keyword(
        "minContains", SUPPORTED, "array", "with contains; counted, bounded by the repetition limit"
    ),
    Keyword(
        "maxContains",
        SUPPORTED,
        "array",
        "with contains: the other elements must be outside `contains`, a negation computed as for `not` (scalars, member presence)",
    ),
    Keyword(
        "multipleOf",
        SUPPORTED,
        "number",
        "exact (by the decimal value, not binary64 division) for steps n·10^-k with n = 2^a·5^b (1, 2, 5, 10, 16, 0.01, 0.25, ...): the last digits decide divisibility; numbers then written without exponent; other steps (3, 12, 0.3) unsupported",
    ),
    Keyword(
        "not",
        SUPPORTED,
        "any",
        "exact complement, one JSON type at a time: scalars by an automata product in canonical spelling (strings as json.dumps writes them, plain decimals of at most 15 digits; the operand's patterns in their widest reading, formats refused); objects when the operand only names required members, member counts or member values (a member value is negated one level down); arrays refused",
    ),
    Keyword(
        "if",
        SUPPORTED,
        "any",
        "exact: (if ∧ then) ∨ (¬if ∧ else), with the negation computed as for `not`",
    ),
    Keyword("then", SUPPORTED, "any", "with `if`; alone it has no effect"),
    Keyword("else", SUPPORTED, "any", "with `if`; alone it has no effect"),
    Keyword("$anchor", UNSUPPORTED, "core", "deferred: references by anchor name"),
    Keyword("$dynamicRef", UNSUPPORTED, "core", "deferred: dynamic references"),
    Keyword("$dynamicAnchor", UNSUPPORTED, "core", "deferred: dynamic references"),
    Keyword("$recursiveRef", UNSUPPORTED, "core", "deferred: 2019-09 recursive references"),
    Keyword("$recursiveAnchor", UNSUPPORTED, "core", "deferred: 2019-09 recursive references"),
    Keyword("$vocabulary", UNSUPPORTED, "core", "deferred: meta-schemas"),
    Keyword(
        "contentEncoding",
        ANNOTATION,
        "string",
        "content vocabulary: an annotation in 2019-09 and later (validators do not assert it)",
    ),
    Keyword("contentMediaType", ANNOTATION, "string", "content vocabulary: as contentEncoding"),
    Keyword("contentSchema", ANNOTATION, "string", "content vocabulary: as contentEncoding"),
)

STATUS: dict[str, str] = {k.name: k.status for k in KEYWORDS if not k.name.endswith("*")}


def status_of(keyword: str) -> str | None:
    """The matrix status of a keyword (None when the matrix does not list it)."""
    if keyword.startswith("x-"):
        return ANNOTATION
    return STATUS.get(keyword)


SUPPORTED_FORMATS: tuple[str, ...] = (
    "date",
    "date-time",
    "duration",
    "email",
    "hostname",
    "idn-email",
    "idn-hostname",
    "iri",
    "iri-reference",
    "ipv4",
    "ipv6",
    "json-pointer",
    "relative-json-pointer",
    "time",
    "uri",
    "uri-reference",
    "uri-template",
    "uuid",
)
# formats some validator asserts: without a shape here they are unsupported; every other
# format name is unknown to validators (e.g. OpenAPI's int32) and is an annotation
KNOWN_FORMATS: frozenset[str] = frozenset(
    {
        "color",
        "date",
        "date-time",
        "duration",
        "email",
        "hostname",
        "idn-email",
        "idn-hostname",
        "ipv4",
        "ipv6",
        "iri",
        "iri-reference",
        "json-pointer",
        "regex",
        "relative-json-pointer",
        "time",
        "uri",
        "uri-reference",
        "uri-template",
        "uuid",
    }
)

# profile rules, rendered into docs/trj-1.md; conformance classifications cite them by id
PROFILE_RULES: dict[str, str] = {
    "closed-objects": "objects admit only their declared properties (plus required names missing from `properties`, after them) unless --open-objects is given or additionalProperties is a non-trivial schema; additional member names are written canonically",
    "declared-order": "members appear in the order of `properties`; additional members come after the declared ones",
    "unique-names": "a member name appears at most once (additional members of open objects are only checked against the declared names)",
    "integer-form": "integers are written without fraction or exponent (`1`, never `1.0` or `1e0`) and never as `-0`",
    "safe-integers": "integers lie within ±(2^53−1) unless the schema's own bounds say otherwise",
    "binary64-numbers": "numbers without bounds (under {} or a bare number type) are binary64-safe: an integer part of at most 15 digits (so a plain integer is below 10^15 < 2^53) and an exponent of at most 280, so no spelling overflows or silently rounds an integer",
    "unique-names-extra": "additional members (open objects, additionalProperties, patternProperties, values under {}) are only checked against the declared names: no finite automaton can rule out a repeated additional name; minProperties counts them once in all so that a repetition cannot break it",
    "number-form": "numbers have no leading zeros, no NaN/Infinity; under bounds they are written without exponent (and with at most 15 significant digits under an exclusive bound)",
    "string-form": "strings are valid UTF-8 with valid escapes; `\\u` surrogates only as valid pairs; control characters escaped",
    "separators": "no whitespace except the chosen separators: compact `,` `:` or pretty `, ` `: ` as json.dumps writes them",
    "canonical-constants": "enum/const values and declared member names are written in canonical form (json.dumps, ensure_ascii=False)",
    "type-inference": "a schema without `type` admits only the types its keywords constrain (e.g. `properties` implies an object)",
    "max-depth": "recursive references and values of unconstrained schemas nest at most max_depth deep",
    "format-unknown": "a format name no validator knows (e.g. OpenAPI int32) is an annotation, as validators treat it",
    "unsatisfiable": "a schema no value satisfies is refused (E_UNSATISFIABLE) instead of compiling an empty language",
    "format-shape": "supported formats are enforced as a conservative shape (upper-case T/Z, no leap second, http(s) URIs, dot-atom emails); stricter than annotation-only format",
}
