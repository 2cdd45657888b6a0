"""trj-1 lowering: a JSON Schema document to the arena AST shared with trg-1.

The traversal is an explicit stack of generators: lowering one schema object yields requests
for its subschemas and receives their nodes, so nesting depth never becomes Python recursion.
A generator returns `None` when its schema admits no value inside the profile; the parent
decides (an optional property disappears, an anyOf branch is dropped, the root is
`E_UNSATISFIABLE`).

Shapes are chosen so that the compiler's predictive check passes: everything that is not a
`$ref` cycle stays in the start rule (the compiler inlines non-recursive rules), each `$ref`
target is one rule named after its pointer, and every choice between members, elements or
branches is decided by the bytes that follow (member names are distinct literals, a comma or
a closing bracket ends a list).
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

from trgc.errors import TrgcError
from trgc.grammar.ast import Grammar, Kind, Rule
from trgc.grammar.schema import numbers, regex, strings
from trgc.grammar.schema.annotations import MODES, holds_schema, misspelt
from trgc.grammar.schema.arrays import ArrayKeywords
from trgc.grammar.schema.combinators import Combinators, Conj, conj_of, plain_decimal
from trgc.grammar.schema.keywords import (
    ANNOTATION,
    KNOWN_FORMATS,
    NORMALISED,
    SUPPORTED,
    SUPPORTED_FORMATS,
    status_of,
)
from trgc.grammar.schema.memberorder import MAX_FREE_MEMBERS, MemberOrder, check_order
from trgc.grammar.schema.nodes import Builder
from trgc.grammar.schema.normalize import (
    CONTAINERS,
    DRAFT_07,
    SCHEMA_LISTS,
    View,
    assertion_keys,
    child,
    detect_draft,
    escape_token,
    is_annotation,
    view,
)
from trgc.grammar.schema.objectkeys import ObjectKeys, presence_predicate
from trgc.grammar.schema.presence import Members, language, simplify
from trgc.grammar.schema.presence import run as presence_run
from trgc.grammar.schema.products import PENDING, projected_cost, split, take
from trgc.grammar.schema.refs import resolve, root_base
from trgc.grammar.schema.values import json_type, value_key
from trgc.grammar.schema.whitespace import (
    DEFAULT_MAX_WHITESPACE,
    SEPARATORS,
    Layout,
    check_mode,
    compact_text,
    whitespace_mode,
)
from trgc.limits import Limits, check_limit

ANY_RULE = "json_value"
DOCUMENT_RULE = "document"
DEFAULT_MAX_DEPTH = 32
TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")
FAMILY_KEYWORDS: dict[str, str] = {
    "properties": "object",
    "required": "object",
    "additionalProperties": "object",
    "patternProperties": "object",
    "unevaluatedProperties": "object",
    "unevaluatedItems": "array",
    "propertyNames": "object",
    "minProperties": "object",
    "maxProperties": "object",
    "dependentRequired": "object",
    "dependentSchemas": "object",
    "contains": "array",
    "minContains": "array",
    "maxContains": "array",
    "multipleOf": "number",
    "items": "array",
    "prefixItems": "array",
    "minItems": "array",
    "maxItems": "array",
    "uniqueItems": "array",
    "minLength": "string",
    "maxLength": "string",
    "format": "string",
    "pattern": "string",
    "minimum": "number",
    "maximum": "number",
    "exclusiveMinimum": "number",
    "exclusiveMaximum": "number",
}
# keywords whose meaning a concrete enum/const value can be checked against here
_VALUE_CHECKED = frozenset(
    {
        "type",
        "enum",
        "const",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "uniqueItems",
        "format",
        "multipleOf",
    }
)
_SHARE_ABOVE = 48  # subtrees larger than this are shared through a helper rule instead of copied
# A pattern under a `maxLength` above this is an automata product of about the pattern's
# states times the length: a machine of its own, whose table is the product as built
# (`machines._attempt`), instead of states the caller's subset construction and
# minimisation would walk again.
_OWN_MACHINE_ABOVE = 64
# what proving one pair of oneOf branches disjoint is charged against the operations limit
# (projected before the pairwise check: n branches cost n(n-1)/2 pairs)
_OPERATIONS_PER_PAIR = 256
_MAPS_OF_SCHEMAS = frozenset(
    {"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"}
)

Gen = Generator[tuple, object, int | None]


def unsupported(keyword: str, pointer: str, message: str, hint: str | None = None) -> TrgcError:
    return TrgcError(
        "E_UNSUPPORTED_KEYWORD", message, pointer=pointer, hint=hint, details={"keyword": keyword}
    )


def _decimal_fraction(value: object) -> Fraction:
    """A JSON number as the decimal it was written as (a float by its shortest repr)."""
    return Fraction(Decimal(repr(value)) if isinstance(value, float) else value)  # type: ignore[arg-type]


def _type_matches(value: object, name: str) -> bool:
    actual = json_type(value)
    return actual == name or (name == "number" and actual == "integer")


class Lowering(Combinators, ArrayKeywords, MemberOrder):
    """One lowering run; `run()` returns the finished grammar."""

    def __init__(
        self,
        root: object,
        *,
        whitespace: str,
        open_objects: bool,
        max_depth: int,
        limits: Limits,
        ignore_keywords: tuple[str, ...] = (),
        unknown_keywords: str = "error",
        max_whitespace: int = DEFAULT_MAX_WHITESPACE,
        member_order: str = "declared",
    ) -> None:
        if unknown_keywords not in MODES:
            raise TrgcError(
                "E_USAGE",
                f"unknown_keywords must be 'error' or 'annotate', got {unknown_keywords!r}",
            )
        check_mode(whitespace, max_whitespace)
        check_order(member_order)
        check_limit("max_depth", max_depth, limits.max_depth, "max_depth")
        self.root = root
        self.draft = detect_draft(root)
        self.base = root_base(root)
        self.limits = limits
        self.open_objects = open_objects
        self.grammar = Grammar(source_kind="trj", start="root", max_depth=max_depth)
        known = sorted(k for k in ignore_keywords if status_of(k) is not None)
        if known:
            raise TrgcError(
                "E_USAGE",
                f"ignore_keywords may only name keywords outside the matrix, not {known[0]!r}",
                hint="ignoring an assertion the matrix knows would admit values the schema forbids",
            )
        self.ignored = frozenset(ignore_keywords)
        self.annotate = unknown_keywords == "annotate"
        self.annotations: set[str] = set()
        self.siblings_checked: set[str] = set()
        self.grammar.options = {
            "draft": self.draft,
            "ignore_keywords": sorted(self.ignored),
            "max_depth": max_depth,
            "open_objects": open_objects,
            "profile": "trj-1",
            "unknown_keywords": unknown_keywords,
            "whitespace": whitespace,
        }
        if whitespace == "flexible":
            self.grammar.options["max_whitespace"] = max_whitespace
        self.member_order = member_order
        if member_order != "declared":  # recorded only when set: declared-order bytes unchanged
            self.grammar.options["member_order"] = member_order
        self.b = Builder(self.grammar, limits.states)
        self.layout = Layout(self.b, whitespace, max_whitespace)
        self.rule_of: dict[str, str] = {}
        self.names: set[str] = set()
        self.pending: list[tuple[str, str, object]] = []
        self.any_used = False
        self.unsat: tuple[str, str] | None = None
        self.helpers = 0
        self.shared_by_shape: dict[int, str] = {}  # `_shared_rule`
        self.merged: list[int] = []  # bodies `_shared_rule` found equal to an earlier one's

    # ---- driver ---------------------------------------------------------------------------

    def run(self) -> Grammar:
        if not isinstance(self.root, dict | bool):
            raise TrgcError(
                "E_SCHEMA_NOT_OBJECT", "a schema is a JSON object or boolean", pointer=""
            )
        self._rule_for("", self.root, name="root")
        while self.pending:
            name, pointer, schema = self.pending.pop(0)
            self.b.begin_rule(name)
            body = self._drive(("schema", schema, pointer))
            if body is None:
                where, why = self.unsat or (pointer, "no value satisfies this schema")
                raise TrgcError(
                    "E_UNSATISFIABLE", f"no JSON value satisfies the schema: {why}", pointer=where
                )
            self.grammar.rules.append(Rule(name, body, 0, 0, pointer=pointer))
        self._share_repeated_refs()
        if self.any_used:
            self.b.begin_rule(ANY_RULE)
            self.grammar.rules.append(Rule(ANY_RULE, self._any_value_body(), 0, 0, pointer=None))
        if self.layout.flexible:  # whitespace around the whole value, outside any recursion
            self.grammar.rules.insert(
                0, Rule(DOCUMENT_RULE, self.layout.document(self.b.ref("root")), 0, 0, pointer="")
            )
            self.grammar.start = DOCUMENT_RULE
        self.grammar.options["annotations"] = sorted(self.annotations)
        return self.grammar

    def _drive(self, request: tuple) -> int | None:
        stack: list[Gen] = [self._start(request)]
        value: object = None
        while stack:
            try:
                request = stack[-1].send(value)
            except StopIteration as stop:
                stack.pop()
                value = stop.value
                continue
            check_limit("nesting", len(stack) + 1, self.limits.nesting, "schema nesting depth")
            check_limit(
                "operations",
                len(self.grammar.nodes),
                self.limits.operations,
                "grammar nodes built from the schema",
            )
            stack.append(self._start(request))
            value = None
        return value  # type: ignore[return-value]

    def _start(self, request: tuple) -> Gen:
        if request[0] == "schema":
            return self._schema(request[1], request[2])
        return self._view(request[1], request[2])

    def _no(self, pointer: str, why: str) -> None:
        if self.unsat is None:
            self.unsat = (pointer, why)

    # ---- schemas and views ----------------------------------------------------------------

    def _schema(self, schema: object, pointer: str) -> Gen:
        if schema is True:
            return self._any()
        if schema is False:
            self._no(pointer, "the schema is false")
            return None
        if isinstance(schema, Conj):
            node = yield from self._conj(schema, pointer)
            return node
        if not isinstance(schema, dict):
            raise TrgcError(
                "E_SCHEMA_NOT_OBJECT",
                f"a schema is a JSON object or boolean, got {type(schema).__name__}",
                pointer=pointer,
            )
        node = yield ("view", self._read(schema, pointer), pointer)
        return node

    def _read(self, schema: dict, pointer: str) -> View:
        """The normalised view of one schema object, without the keywords the caller chose to ignore."""
        v = view(schema, pointer, self.draft)
        if "$ref" in schema and self.draft <= DRAFT_07:
            self._ref_siblings(schema, pointer)
        if self.ignored:
            v = {k: e for k, e in v.items() if k not in self.ignored}
        return v

    def _annotation(self, name: str, error: TrgcError) -> None:
        """Record `name` as an annotation in annotate mode; raise `error` in the default mode."""
        if not self.annotate:
            try:
                raise error
            finally:  # the traceback holds this frame: error -> frame -> error is a cycle
                del error
        self.annotations.add(name)

    def _ref_siblings(self, schema: dict, pointer: str) -> None:
        """Draft-04..07 ignore every keyword beside `$ref`: an assertion there that the target
        does not repeat would be dropped, so it is an error (annotate: recorded as ignored)."""
        if pointer in self.siblings_checked:
            return
        self.siblings_checked.add(pointer)
        target: object = None
        target_ptr = pointer
        try:
            target_ptr, target = self._resolve(schema["$ref"], child(pointer, "$ref"))
            for _ in range(16):  # a pure $ref chain: its end is what the target asserts
                if not (isinstance(target, dict) and "$ref" in target):
                    break
                target_ptr, target = self._resolve(target["$ref"], child(target_ptr, "$ref"))
        except TrgcError:
            target = None  # the $ref itself is reported where it is lowered
        for key in schema:
            if key == "$ref" or key in CONTAINERS or is_annotation(key) or key in self.ignored:
                continue
            if status_of(key) is None:
                self._unknown(key, child(pointer, key))
                continue
            if isinstance(target, dict) and key in target and target[key] == schema[key]:
                continue  # repeated by the target: nothing is dropped
            self._annotation(
                f"$ref-sibling:{key}",
                unsupported(
                    "$ref",
                    child(pointer, key),
                    f"{key!r} beside $ref is ignored: draft-07 and earlier ignore every keyword "
                    "beside $ref, so this constraint would not be enforced",
                    hint='wrap the reference as "allOf": [{"$ref": ...}] to apply both, or compile with '
                    "--unknown-keywords annotate to ignore it as the draft says",
                ),
            )

    def _unknown(self, key: str, ptr: str) -> None:
        """A name outside the matrix: a misspelt assertion is always an error; any other name
        is an error by default and an annotation in annotate mode."""
        guess = misspelt(key)
        if guess is not None:
            raise TrgcError(
                "E_SCHEMA_KEYWORD_TYPO",
                f"unknown keyword {key!r} is spelt like the keyword {guess!r}",
                pointer=ptr,
                hint=f"did you mean {guess!r}? (a misspelt assertion is never read as an annotation)",
                details={"keyword": key, "suggestion": guess},
            )
        self._annotation(
            key,
            unsupported(
                key,
                ptr,
                f"unknown keyword {key!r}",
                hint="compile with --unknown-keywords annotate to read names outside the "
                "matrix as annotations; trgc keywords lists the trj-1 keyword matrix",
            ),
        )

    def _check_keywords(self, v: View, pointer: str) -> None:
        for key, (value, ptr) in v.items():
            if key == PENDING:  # combinators an allOf merge holds back (their keys were checked)
                continue
            status = status_of(key)
            if status is None:
                self._unknown(key, ptr)
                continue
            if key.startswith("x-") and holds_schema(value):
                self._annotation(
                    key,
                    unsupported(
                        key,
                        ptr,
                        f"vendor keyword {key!r} holds a schema, which JSON Schema does not apply; "
                        "none of its constraints would be enforced",
                        hint="move the schema under a keyword of the matrix, or compile with "
                        "--unknown-keywords annotate to read it as an annotation",
                    ),
                )
                continue
            if status not in (SUPPORTED, NORMALISED, ANNOTATION):
                raise unsupported(
                    key,
                    ptr,
                    f"keyword {key!r} is outside the trj-1 profile",
                    hint="trgc keywords lists the trj-1 keyword matrix",
                )
        if "format" in v:
            value, ptr = v["format"]
            if not isinstance(value, str):
                raise TrgcError("E_SCHEMA_INVALID", "format must be a string", pointer=ptr)
            if value not in SUPPORTED_FORMATS and value in KNOWN_FORMATS:
                raise unsupported(
                    "format",
                    ptr,
                    f"format {value!r} is not supported (only {', '.join(SUPPORTED_FORMATS)})",
                )
            if value not in KNOWN_FORMATS:
                self._annotation(
                    f"format:{value}",
                    unsupported(
                        "format",
                        ptr,
                        f"format {value!r} is not a format trj-1 knows; validators treat it as an "
                        "annotation, so it would constrain nothing",
                        hint="drop it, or compile with --unknown-keywords annotate to read it as an annotation",
                    ),
                )
        if "$id" in v and pointer:
            value, ptr = v["$id"]
            if not isinstance(value, str):
                raise TrgcError("E_SCHEMA_INVALID", "$id must be a string", pointer=ptr)

    def _view(self, v: View, pointer: str) -> Gen:
        self._check_keywords(v, pointer)
        v = self._expand(v, pointer)
        if v is None:
            return None
        if self.needs_terms(v) or ("oneOf" in v and not self._provably_disjoint(v, "oneOf")):
            node = yield from self._combined(v, pointer)
            return node
        if "$ref" in v:
            return self._ref(v["$ref"][0], v["$ref"][1])
        if "enum" in v or "const" in v:
            return self._enum(v, pointer)
        for key in ("oneOf", "anyOf"):
            if key in v:
                node = yield from self._union(v, key, pointer)
                return node
        types = self._types(v, pointer)
        if not types:
            self._no(pointer, "no type remains")
            return None
        if set(types) >= {"null", "boolean", "object", "array", "number", "string"} and not any(
            k in v for k in FAMILY_KEYWORDS
        ):
            return self._any()
        options: list[int] = []
        for name in types:
            if name == "integer" and "number" in types:
                continue
            if name == "object":
                node = yield from self._object(v, pointer)
            elif name == "array":
                node = yield from self._array_with(v, pointer)
            else:
                node = self._scalar(name, v, pointer)
            if node is not None:
                options.append(node)
        if not options:
            return None
        return self.b.alt(*options)

    def _types(self, v: View, pointer: str) -> list[str]:
        if "type" in v:
            value, ptr = v["type"]
            names = [value] if isinstance(value, str) else value
            if (
                not isinstance(names, list)
                or not names
                or not all(isinstance(n, str) and n in TYPES for n in names)
            ):
                raise TrgcError(
                    "E_SCHEMA_INVALID",
                    f"type must be one of {', '.join(TYPES)} or a non-empty list of them",
                    pointer=ptr,
                )
            if len(set(names)) != len(names):
                raise TrgcError("E_SCHEMA_INVALID", "type lists a name twice", pointer=ptr)
            return [n for n in TYPES if n in names]
        families = {FAMILY_KEYWORDS[k] for k in v if k in FAMILY_KEYWORDS}
        if not families:
            return ["null", "boolean", "object", "array", "number", "string"]
        return [n for n in TYPES if n in families]

    # ---- allOf and $ref with siblings: merge into one view -------------------------------

    def _expand(self, v: View, pointer: str) -> View | None:
        seen: set[str] = set()
        while True:
            if "$ref" in v and len(assertion_keys(v)) > 1:
                ref, ref_ptr = v["$ref"]
                target_ptr, target = self._resolve(ref, ref_ptr)
                if target_ptr in seen:
                    raise TrgcError(
                        "E_REF_NO_PROGRESS",
                        f"$ref {ref!r} reaches itself while merging without consuming input",
                        pointer=ref_ptr,
                    )
                seen.add(target_ptr)
                rest = {k: e for k, e in v.items() if k != "$ref"}
                if target is False:
                    self._no(ref_ptr, "the referenced schema is false")
                    return None
                parts = [rest] if target is True else [self._target_view(target, target_ptr), rest]
                merged = self._merge(parts, ref_ptr, outer=len(parts) - 1)
                if merged is None:
                    return None
                v = merged
                continue
            if "allOf" in v:
                branches, all_ptr = v["allOf"]
                parts = [{k: e for k, e in v.items() if k != "allOf"}]
                for sub, sub_ptr in branches:
                    if sub is True:
                        continue
                    if sub is False:
                        self._no(sub_ptr, "an allOf branch is false")
                        return None
                    if not isinstance(sub, dict):
                        raise TrgcError(
                            "E_SCHEMA_NOT_OBJECT",
                            "an allOf branch is not a schema",
                            pointer=sub_ptr,
                        )
                    if sub_ptr in seen:
                        raise TrgcError(
                            "E_REF_NO_PROGRESS",
                            "allOf reaches itself without consuming input",
                            pointer=sub_ptr,
                        )
                    seen.add(sub_ptr)
                    branch = self._inline_ref(self._target_view(sub, sub_ptr), seen)
                    if branch is None:
                        return None
                    parts.append(branch)
                if sum("$ref" in p for p in parts) > 1:  # the outer $ref too, then merge all
                    outer = self._inline_ref(parts[0], seen)
                    if outer is None:
                        return None
                    parts[0] = outer
                merged = self._merge(parts, all_ptr)
                if merged is None:
                    return None
                v = merged
                continue
            moved = take(v)
            if moved is not None:
                v = moved
                continue
            return v

    def _inline_ref(self, v: View, seen: set[str]) -> View | None:
        """`v` with its `$ref` replaced by the referenced schema merged in (None: unsatisfiable),
        so that allOf branches with different references can be merged; a reference cycle that
        consumes nothing is E_REF_NO_PROGRESS (the chain of one branch is tracked on its own,
        so two branches that reach one schema are no cycle)."""
        seen = set(seen)
        while "$ref" in v:
            ref, ref_ptr = v["$ref"]
            target_ptr, target = self._resolve(ref, ref_ptr)
            if target_ptr in seen:
                raise TrgcError(
                    "E_REF_NO_PROGRESS",
                    f"$ref {ref!r} reaches itself while merging without consuming input",
                    pointer=ref_ptr,
                )
            seen.add(target_ptr)
            rest = {k: e for k, e in v.items() if k != "$ref"}
            if target is False:
                self._no(ref_ptr, "the referenced schema is false")
                return None
            if target is True:
                v = rest
                continue
            merged = self._merge([self._target_view(target, target_ptr), rest], ref_ptr, outer=1)
            if merged is None:
                return None
            v = merged
        return v

    def _target_view(self, schema: object, pointer: str) -> View:
        if not isinstance(schema, dict):
            raise TrgcError(
                "E_SCHEMA_NOT_OBJECT", "a schema is a JSON object or boolean", pointer=pointer
            )
        v = self._read(schema, pointer)
        self._check_keywords(v, pointer)
        return v

    def _merge(self, parts: list[View], pointer: str, outer: int | None = 0) -> View | None:
        """The conjunction of several views as one view, when that is exact; else unsupported.

        `parts[outer]` is the schema the others are applied in (its unevaluated* keywords see
        all of them); every other part is a branch whose unevaluated* would only see itself."""
        out: View = {}
        closers = [
            p
            for p in parts
            if "additionalProperties" in p and p["additionalProperties"][0] not in (True, {})
        ]
        for index, part in enumerate(parts):
            if index == outer:
                continue
            for key in ("unevaluatedProperties", "unevaluatedItems"):
                if key in part:
                    raise unsupported(
                        key,
                        part[key][1],
                        f"{key} inside a branch merged with others (allOf, $ref, if/then, anyOf, "
                        "oneOf, dependentSchemas) only sees that branch's keywords; not supported",
                    )
        pending: list[View] = []
        for part in parts:
            for key, entry in split(part, out, pending).items():
                if is_annotation(key) or key in CONTAINERS:
                    continue
                if key == "const":
                    key, entry = "enum", ([entry[0]], entry[1])
                if key not in out:
                    out[key] = entry
                    continue
                merged = self._merge_one(key, out[key], entry, pointer)
                if merged is None:
                    self._no(entry[1], f"the conjunction of {key} is empty")
                    return None
                out[key] = merged
        if closers:
            names = set(out.get("properties", ({}, ""))[0]) | set(out.get("required", ([], ""))[0])
            for closer in closers:
                own = set(closer.get("properties", ({}, ""))[0])
                if (
                    not names <= own
                    or len(closers) > 1
                    and any(
                        c["additionalProperties"][0] != closer["additionalProperties"][0]
                        for c in closers
                    )
                ):
                    raise unsupported(
                        "allOf",
                        pointer,
                        "allOf combines additionalProperties with properties declared elsewhere; the merge would not be exact",
                    )
        prefixed = [p for p in parts if "prefixItems" in p]
        if prefixed and (
            len(prefixed) > 1 or any("items" in p for p in parts if p is not prefixed[0])
        ):
            raise unsupported(
                "allOf", pointer, "allOf combines prefixItems with item schemas from another branch"
            )
        if pending:
            out[PENDING] = (tuple(pending), pointer)
            self._check_product(out, pointer)
        return out

    def _check_product(self, v: View, pointer: str) -> None:
        """Refuse, before building, a product of combinators (`trgc.grammar.schema.products`)
        whose terms times the schema text they lower exceed what is left of the operations
        limit."""
        terms, size = projected_cost(v)
        check_limit(
            "operations",
            terms * max(1, size) + len(self.grammar.nodes),
            self.limits.operations,
            f"allOf over {len(v[PENDING][0]) + 1} or more anyOf/oneOf/if combinators distributes "
            f"into {terms:,} terms of about {size:,} schema bytes each (projected operations)",
        )

    def _merge_one(self, key: str, a: tuple, b: tuple, pointer: str) -> tuple | None:
        (x, xp), (y, yp) = a, b
        if key == "required":
            if not isinstance(x, list) or not isinstance(y, list):
                raise TrgcError(
                    "E_SCHEMA_INVALID", "required must be an array of strings", pointer=yp
                )
            return (x + [n for n in y if n not in x], xp)
        if key == "type":
            xs = {x} if isinstance(x, str) else set(x)
            ys = {y} if isinstance(y, str) else set(y)
            both = (xs & ys) | (
                {"integer"}
                if ("integer" in xs and "number" in ys) or ("number" in xs and "integer" in ys)
                else set()
            )
            return ([n for n in TYPES if n in both], xp) if both else None
        if key in ("minimum", "exclusiveMinimum", "minLength", "minItems"):
            return a if self._num(x, xp) >= self._num(y, yp) else b
        if key in ("maximum", "exclusiveMaximum", "maxLength", "maxItems"):
            return a if self._num(x, xp) <= self._num(y, yp) else b
        if key == "enum":
            if not isinstance(x, list) or not isinstance(y, list):
                raise TrgcError("E_SCHEMA_INVALID", "enum must be an array", pointer=yp)
            keys = {value_key(v) for v in y}
            kept = [v for v in x if value_key(v) in keys]
            return (kept, xp) if kept else None
        if key == "properties":
            props = dict(x)
            for name, (sub, sub_ptr) in y.items():
                if name in props and props[name][0] != sub:
                    if props[name][0] is True or props[name][0] == {}:
                        props[name] = (sub, sub_ptr)
                    elif not (sub is True or sub == {}):  # both apply to the member
                        props[name] = (conj_of([props[name], (sub, sub_ptr)]), props[name][1])
                elif name not in props:
                    props[name] = (sub, sub_ptr)
            return (props, xp)
        if key in ("items", "additionalProperties", "propertyNames", "contains"):
            if x is True or x == {}:
                return b
            if y is True or y == {}:
                return a
            if x is False or y is False:
                return (False, xp if x is False else yp)
            return (conj_of([a, b]), xp)
        if key == "not":  # ¬x ∧ ¬y = ¬(x ∨ y)
            return ({"anyOf": [x, y]}, xp)
        if key in SCHEMA_LISTS:
            if [s for s, _ in x] == [s for s, _ in y]:
                return a
            raise unsupported("allOf", yp, f"{key} appears in two allOf branches")
        if x == y and type(x) is type(y):
            return a
        raise unsupported("allOf", yp, f"{key} has different values in two allOf branches")

    @staticmethod
    def _num(value: object, pointer: str) -> Fraction:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TrgcError(
                "E_SCHEMA_INVALID", f"expected a number, got {json.dumps(value)}", pointer=pointer
            )
        try:
            return Fraction(value)
        except (OverflowError, ValueError):
            raise TrgcError(
                "E_SCHEMA_INVALID", f"{value} is not a finite number", pointer=pointer
            ) from None

    # ---- references -----------------------------------------------------------------------

    def _resolve(self, ref: object, pointer: str) -> tuple[str, object]:
        self._check_base(pointer)
        return resolve(ref, self.root, self.base, pointer)

    def _check_base(self, pointer: str) -> None:
        """A `$ref` under an embedded resource (a non-root `$id`) would resolve against another base."""
        node = self.root
        prev = ""
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
        for token in tokens[:-1]:
            if isinstance(node, dict):
                node = node.get(token)
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return
            if (
                isinstance(node, dict)
                and prev not in _MAPS_OF_SCHEMAS
                and token not in _MAPS_OF_SCHEMAS
            ):
                for key in ("$id", "id"):
                    ident = node.get(key)
                    if (
                        isinstance(ident, str)
                        and not ident.startswith("#")
                        and (key == "$id" or self.draft == 4)
                    ):
                        raise unsupported(
                            "$id",
                            pointer,
                            "a $ref inside an embedded resource (a non-root $id) is not supported",
                        )
            prev = token

    def _ref(self, ref: object, pointer: str) -> int | None:
        target_ptr, target = self._resolve(ref, pointer)
        seen = {target_ptr}
        probe = target
        while (
            isinstance(probe, dict)
            and "$ref" in probe
            and not (set(assertion_keys(self._read(probe, target_ptr))) - {"$ref"})
        ):
            next_ptr, probe = self._resolve(probe["$ref"], target_ptr + "/$ref")
            if next_ptr in seen:
                raise TrgcError(
                    "E_REF_NO_PROGRESS",
                    f"$ref {ref!r} leads back to itself without consuming input",
                    pointer=pointer,
                )
            seen.add(next_ptr)
            target_ptr, target = next_ptr, probe
        if target is True:
            return self._any()
        if target is False:
            self._no(pointer, "the referenced schema is false")
            return None
        return self.b.ref(self._rule_for(target_ptr, target))

    def _rule_for(self, pointer: str, schema: object, name: str | None = None) -> str:
        existing = self.rule_of.get(pointer)
        if existing is not None:
            return existing
        if name is None:
            last = pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
            stem = "s_" + (re.sub(r"[^A-Za-z0-9_]", "_", last) or "x")
            name, n = stem, 1
            while name in self.names or name in (ANY_RULE, "root"):
                n += 1
                name = f"{stem}_{n}"
        self.names.add(name)
        self.rule_of[pointer] = name
        self.pending.append((name, pointer, schema))
        return name

    # ---- any JSON value -------------------------------------------------------------------

    def _any(self) -> int:
        self.any_used = True
        return self.b.ref(ANY_RULE)

    def _any_of_kind(self, kind: str) -> int:
        """Any object or any array (members and elements are any values)."""
        b = self.b
        layout = self.layout
        self.any_used = True
        if kind == "object":
            member = lambda: b.seq(strings.string(b), layout.colon(), b.ref(ANY_RULE))  # noqa: E731
            return b.seq(
                layout.token("{"),
                b.opt(b.seq(member(), b.rep(b.seq(layout.comma(), member()), 0, None))),
                layout.token("}"),
            )
        return b.seq(
            layout.token("["),
            b.opt(b.seq(b.ref(ANY_RULE), b.rep(b.seq(layout.comma(), b.ref(ANY_RULE)), 0, None))),
            layout.token("]"),
        )

    def _any_value_body(self) -> int:
        b = self.b
        return b.alt(
            self._any_of_kind("object"),
            self._any_of_kind("array"),
            strings.string(b),
            numbers.number(b),
            b.lit("true"),
            b.lit("false"),
            b.lit("null"),
        )

    # ---- enum / const ---------------------------------------------------------------------

    def _enum(self, v: View, pointer: str) -> int | None:
        values = self._enum_values(v)
        for key in assertion_keys(v):
            # `v` passed _check_keywords: a name outside the matrix is an annotate-mode annotation
            if key not in _VALUE_CHECKED and status_of(key) is not None:
                raise unsupported(
                    key, v[key][1], f"{key} together with enum/const is not supported"
                )
        kept = [x for x in values if self._value_ok(x, v)]
        if not kept:
            self._no(
                pointer,
                "no enum/const value satisfies the other keywords" if values else "enum is empty",
            )
            return None
        spellings = list(dict.fromkeys(text for x in kept for text in self._spellings(x)))
        # projected before any node is built: a literal of n bytes needs n + 1 NFA states
        needed = 2 + sum(len(text.encode("utf-8")) + 1 for text in spellings)
        self.b.check_room(needed, f"the {len(spellings):,} enum/const members at #{pointer}")
        return self.b.alt(*(self.layout.constant(text) for text in spellings))

    def _enum_values(self, v: View) -> list:
        """The values `enum` and `const` together allow (checked: enum is a list without
        duplicates)."""
        values: list | None = None
        if "enum" in v:
            raw, ptr = v["enum"]
            if not isinstance(raw, list):
                raise TrgcError("E_SCHEMA_INVALID", "enum must be an array", pointer=ptr)
            seen: set[str] = set()
            for x in raw:
                key = value_key(x)
                if key in seen:
                    raise TrgcError(
                        "E_SCHEMA_INVALID", f"enum lists {json.dumps(x)[:80]} twice", pointer=ptr
                    )
                seen.add(key)
            values = list(raw)
        if "const" in v:
            const = v["const"][0]
            values = (
                [const]
                if values is None
                else [x for x in values if value_key(x) == value_key(const)]
            )
        assert values is not None
        return values

    def _spellings(self, value: object) -> list[str]:
        """The compact texts a constant is written as: its canonical form, and an integral
        float also in integer form."""
        out = [compact_text(value)]
        if isinstance(value, float):  # 1e-05 is also 0.00001: a spelling of the same value
            plain = plain_decimal(value)
            if plain is not None and plain not in out:
                out.append(plain)
        # an integral float also in integer form (equal under JSON Schema, and an integer in
        # every draft); never the other way round: draft-04 does not count 1.0 as an integer
        if (
            isinstance(value, float)
            and value.is_integer()
            and abs(value) <= numbers.MAX_SAFE_INTEGER
        ):
            out.append(str(int(value)))
        return out

    def _value_ok(self, value: object, v: View) -> bool:
        if "type" in v:
            names = v["type"][0]
            names = [names] if isinstance(names, str) else names
            if not any(_type_matches(value, n) for n in names):
                return False
        if json_type(value) in ("integer", "number"):
            x = Fraction(value)  # type: ignore[arg-type]
            for key, ok in (
                ("minimum", lambda b: x >= b),
                ("maximum", lambda b: x <= b),
                ("exclusiveMinimum", lambda b: x > b),
                ("exclusiveMaximum", lambda b: x < b),
            ):
                if key in v and not ok(self._num(*v[key])):
                    return False
            if "multipleOf" in v:  # by decimal value, as the lowering decides it
                self._num(*v["multipleOf"])
                step = _decimal_fraction(v["multipleOf"][0])
                if (_decimal_fraction(value) / step).denominator != 1:
                    return False
        if isinstance(value, str):
            if "minLength" in v and len(value) < self._count(v, "minLength"):
                return False
            if "maxLength" in v and len(value) > self._count(v, "maxLength"):
                return False
        if isinstance(value, list):
            if "minItems" in v and len(value) < self._count(v, "minItems"):
                return False
            if "maxItems" in v and len(value) > self._count(v, "maxItems"):
                return False
            if v.get("uniqueItems", (False, ""))[0] and len({value_key(x) for x in value}) != len(
                value
            ):
                return False
        return True

    def _count(self, v: View, key: str, default: int | None = None) -> int | None:
        if key not in v:
            return default
        value, ptr = v[key]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise TrgcError(
                "E_SCHEMA_INVALID",
                f"{key} must be a non-negative integer, got {json.dumps(value)}",
                pointer=ptr,
            )
        return value

    # ---- anyOf / oneOf ----------------------------------------------------------------------

    def _union(self, v: View, key: str, pointer: str) -> Gen:
        ptr = v[key][1]
        views = self._branch_views(v, key)
        if key == "oneOf":
            self._check_disjoint(views, ptr)
        options: list[int] = []
        for branch, sub_ptr in views:
            if not assertion_keys(branch):
                return self._any()
            node = yield ("view", branch, sub_ptr)
            if node is not None:
                options.append(node)
        if not options:
            self._no(ptr, f"no {key} branch admits a value")
            return None
        return self.b.alt(*options)

    def _branch_views(self, v: View, key: str) -> list[tuple[View, str]]:
        """The branches of `v[key]`, each merged with the sibling keywords (false ones dropped)."""
        branches = v[key][0]
        siblings = {k: e for k, e in v.items() if k != key}
        views: list[tuple[View, str]] = []
        for sub, sub_ptr in branches:
            if sub is False:
                continue
            if sub is True:
                branch: View = {}
            elif isinstance(sub, dict):
                branch = self._target_view(sub, sub_ptr)
            else:
                raise TrgcError(
                    "E_SCHEMA_NOT_OBJECT", f"a {key} branch is not a schema", pointer=sub_ptr
                )
            merged = (
                self._merge([siblings, branch], sub_ptr) if assertion_keys(siblings) else branch
            )
            if merged is not None:
                views.append((merged, sub_ptr))
        return views

    def _semantic(self, v: View, depth: int = 0) -> View:
        """Follow a pure `$ref` chain (bounded) to the view that actually constrains."""
        while "$ref" in v and depth < 16:
            ptr, target = self._resolve(*v["$ref"])
            if not isinstance(target, dict):
                return {}
            v = self._read(target, ptr)
            depth += 1
        return v

    def _semantic_types(self, v: View) -> set[str] | None:
        """The JSON types every value valid under `v` must have (None: unknown / all)."""
        v = self._semantic(v)
        found: set[str] | None = None
        if "type" in v:
            names = v["type"][0]
            found = set([names] if isinstance(names, str) else names)
            if "number" in found:
                found.add("integer")
        for key in ("enum", "const"):
            if key in v:
                values = v[key][0] if key == "enum" else [v[key][0]]
                if isinstance(values, list):
                    kinds = {json_type(x) for x in values}
                    found = (
                        kinds
                        if found is None
                        else found & (kinds | ({"integer"} if "number" in kinds else set()))
                    )
        return found

    def _grammar_types(self, v: View) -> set[str]:
        v = self._semantic(v)
        known = self._semantic_types(v)
        if known is not None:
            return known
        return set(self._types(v, "")) if v else set(TYPES)

    def _values(self, v: View) -> set[str] | None:
        v = self._semantic(v)
        keys: set[str] | None = None
        if "enum" in v and isinstance(v["enum"][0], list):
            keys = {value_key(x) for x in v["enum"][0]}
        if "const" in v:
            one = {value_key(v["const"][0])}
            keys = one if keys is None else keys & one
        return keys

    def _disjoint_values(self, a: View, b: View) -> bool:
        va, vb = self._values(a), self._values(b)
        if va is not None and vb is not None and not (va & vb):
            return True
        ta, tb = self._semantic_types(a), self._semantic_types(b)
        return ta is not None and tb is not None and not (ta & tb)

    def _disjoint(self, a: View, b: View) -> bool:
        """No value is valid under both branches, as far as `oneOf` needs: every value the
        grammar of one branch produces is invalid under the other, in both directions."""
        if self._disjoint_values(a, b):
            return True
        a, b = self._semantic(a), self._semantic(b)
        if not (self._plain_object(a) and self._plain_object(b)):
            return False
        req_a, req_b = self._required(a), self._required(b)
        props_a = a.get("properties", ({}, ""))[0]
        props_b = b.get("properties", ({}, ""))[0]
        for name in sorted(req_a & req_b):
            if name in props_a and name in props_b:
                sa, pa = props_a[name]
                sb, pb = props_b[name]
                if (
                    isinstance(sa, dict)
                    and isinstance(sb, dict)
                    and self._disjoint_values(self._read(sa, pa), self._read(sb, pb))
                ):
                    return True
        return self._excludes(a, b) and self._excludes(b, a)

    def _plain_object(self, v: View) -> bool:
        """The branch's grammar produces only objects with its own declared members."""
        combined = {"$ref", "anyOf", "oneOf", "allOf", "enum", "const"}
        return not (combined & v.keys()) and self._grammar_types(v) == {"object"}

    @staticmethod
    def _required(v: View) -> set[str]:
        value = v.get("required", ([], ""))[0]
        return {n for n in value if isinstance(n, str)} if isinstance(value, list) else set()

    def _extras(self, v: View) -> bool:
        """Whether the branch's grammar admits members beyond its declared and required names."""
        addl = v.get("additionalProperties", (None, ""))[0]
        if addl is False:
            return False
        if addl is None or addl is True or addl == {}:
            return self.open_objects
        return True

    def _excludes(self, a: View, b: View) -> bool:
        """Every object branch `a`'s grammar produces is invalid under `b`."""
        names_a = set(a.get("properties", ({}, ""))[0]) | self._required(a)
        if not self._extras(a) and self._required(b) - names_a:
            return True  # b requires a member a never writes
        if b.get("additionalProperties", (None, ""))[0] is False and "patternProperties" not in b:
            return bool(self._required(a) - set(b.get("properties", ({}, ""))[0]))
        return False

    def _check_disjoint(self, views: list[tuple[View, str]], pointer: str) -> None:
        pair = self._overlapping_pair(views, pointer)
        if pair is not None:
            raise self._overlap(views[pair[0]][1], views[pair[1]][1], pointer)

    def _overlapping_pair(
        self, views: list[tuple[View, str]], pointer: str
    ) -> tuple[int, int] | None:
        """The first two oneOf branches not proved disjoint, or None when all are. Finite value
        sets are decided in one pass; otherwise the n(n-1)/2 pairwise proofs are charged to
        the operations limit before any is tried."""
        values = [self._values(v) for v, _ in views]
        if all(found is not None for found in values):
            # every branch is a finite set of values: disjoint exactly when no value repeats
            owner: dict[str, int] = {}
            for i, found in enumerate(values):
                for key in sorted(found):
                    j = owner.setdefault(key, i)
                    if j != i:
                        return j, i
            return None
        pairs = len(views) * (len(views) - 1) // 2
        check_limit(
            "operations",
            pairs * _OPERATIONS_PER_PAIR,
            self.limits.operations,
            f"proving the {len(views):,} oneOf branches at #{pointer} pairwise disjoint",
        )
        for i in range(len(views)):
            for j in range(i + 1, len(views)):
                if not self._disjoint(views[i][0], views[j][0]):
                    return i, j
        return None

    @staticmethod
    def _overlap(first: str, second: str, pointer: str) -> TrgcError:
        return TrgcError(
            "E_ONEOF_OVERLAP",
            f"oneOf branches {first} and {second} may both accept a value",
            pointer=pointer,
            hint="make the branches disjoint by type, const/enum values or a required discriminator property, or use anyOf",
        )

    # ---- scalars ------------------------------------------------------------------------------

    def _scalar(self, name: str, v: View, pointer: str) -> int | None:
        node = self._plain_scalar(name, v, pointer)
        if node is None or name not in ("integer", "number") or "multipleOf" not in v:
            return node
        raw, ptr = v["multipleOf"]
        step = self._num(raw, ptr)
        if step <= 0:
            raise TrgcError("E_SCHEMA_INVALID", "multipleOf must be greater than 0", pointer=ptr)
        exact = Decimal(raw) if isinstance(raw, int) else Decimal(repr(raw))
        multiples = numbers.multiple_of(self.b, exact)
        if multiples is None:
            raise unsupported(
                "multipleOf",
                ptr,
                f"multipleOf {json.dumps(raw)} is supported for steps n·10^-k with n = 2^a·5^b "
                "(1, 2, 5, 10, 0.01, 0.25, ...) whose last digits decide divisibility",
            )
        return self.b.and_(node, multiples, origin=f"{ptr} (multipleOf)")

    def _plain_scalar(self, name: str, v: View, pointer: str) -> int | None:
        b = self.b
        if name == "null":
            return b.lit("null")
        if name == "boolean":
            return b.alt(b.lit("true"), b.lit("false"))
        if name == "string":
            return self._string(v, pointer)
        bounds = {
            k: self._num(*v[k])
            for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
            if k in v
        }
        if name == "integer":
            lo, hi = numbers.integer_bounds(
                bounds.get("minimum"),
                bounds.get("maximum"),
                bounds.get("exclusiveMinimum"),
                bounds.get("exclusiveMaximum"),
            )
            node = numbers.integer_range(b, lo, hi)
            if node is None:
                self._no(pointer, f"no integer lies in [{lo}, {hi}] within ±(2^53−1)")
            return node
        if not bounds:
            return numbers.number(b)
        decimals: dict[str, Decimal] = {}
        for key in bounds:
            raw, ptr = v[key]
            exact = Decimal(raw) if isinstance(raw, int) else Decimal(repr(raw))
            digits = len(exact.normalize().as_tuple().digits)
            if key.startswith("exclusive") and digits > numbers.SIGNIFICANT:
                raise unsupported(
                    key,
                    ptr,
                    f"{key} {json.dumps(raw)} on a number has more than {numbers.SIGNIFICANT} significant digits",
                )
            decimals[key] = exact
        lo = self._tighter(decimals, "minimum", "exclusiveMinimum", lower=True)
        hi = self._tighter(decimals, "maximum", "exclusiveMaximum", lower=False)
        try:
            node = numbers.bounded_number(b, lo, hi)
        except ValueError:
            key = next(k for k in ("minimum", "exclusiveMinimum") if k in v)
            raise unsupported(
                key,
                v[key][1],
                "number bounds with fractions inside one integer interval are not supported",
            ) from None
        if node is None:
            self._no(pointer, "no number lies within the bounds")
        return node

    @staticmethod
    def _tighter(
        bounds: dict[str, Decimal], inclusive: str, exclusive: str, *, lower: bool
    ) -> tuple[Decimal, bool] | None:
        a, e = bounds.get(inclusive), bounds.get(exclusive)
        if a is None and e is None:
            return None
        if e is None or (a is not None and (a > e if lower else a < e)):
            return a, True  # type: ignore[return-value]
        return e, False

    def _string(self, v: View, pointer: str) -> int | None:
        lo = self._count(v, "minLength", 0)
        hi = self._count(v, "maxLength")
        assert lo is not None
        if hi is not None and lo > hi:
            self._no(pointer, f"minLength {lo} > maxLength {hi}")
            return None
        if "pattern" in v:
            pattern, ptr = v["pattern"]
            if not isinstance(pattern, str):
                raise TrgcError("E_SCHEMA_INVALID", "pattern must be a string", pointer=ptr)
            node = regex.pattern_string(self.b, pattern, ptr, self.limits.repetition, lo, hi)
            if node is None:
                self._no(ptr, f"no string matches pattern {pattern!r} within the length bounds")
            elif "format" in v and v["format"][0] in SUPPORTED_FORMATS:
                shape = strings.formatted_string(self.b, v["format"][0])  # type: ignore[arg-type]
                node = self.b.and_(node, shape, origin=f"{ptr} (pattern with format)")
            if (
                node is not None
                and hi is not None
                and hi > _OWN_MACHINE_ABOVE
                and self.grammar.nodes[node].kind == Kind.AND
            ):
                node = self.b.ref(self._shared_rule(node))
            return node
        if "format" in v and v["format"][0] in SUPPORTED_FORMATS:
            fmt = v["format"][0]
            f_lo, f_hi = strings.FORMAT_LENGTHS[fmt]  # type: ignore[index]
            if (hi is not None and hi < f_lo) or (f_hi is not None and lo > f_hi):
                self._no(pointer, f"format {fmt} strings never have the allowed length")
                return None
            shape = strings.formatted_string(self.b, fmt)  # type: ignore[arg-type]
            if lo > f_lo or (hi is not None and (f_hi is None or hi < f_hi)):
                check_limit("repetition", lo, self.limits.repetition, "minLength")
                if hi is not None:
                    check_limit("repetition", hi, self.limits.repetition, "maxLength")
                lengths = strings.string(self.b, lo, hi)
                return self.b.and_(shape, lengths, origin=f"{pointer} (format with lengths)")
            return shape
        check_limit("repetition", lo, self.limits.repetition, "minLength")
        if hi is not None:
            check_limit("repetition", hi, self.limits.repetition, "maxLength")
        return strings.string(self.b, lo, hi)

    # ---- objects ------------------------------------------------------------------------------

    def _object(self, v: View, pointer: str) -> Gen:
        b = self.b
        props: dict = v.get("properties", ({}, ""))[0]  # type: ignore[assignment]
        required_raw, req_ptr = v.get("required", ([], pointer))
        if not isinstance(required_raw, list) or not all(isinstance(n, str) for n in required_raw):
            raise TrgcError(
                "E_SCHEMA_INVALID", "required must be an array of strings", pointer=req_ptr
            )
        if len(set(required_raw)) != len(required_raw):
            raise TrgcError("E_SCHEMA_INVALID", "required lists a name twice", pointer=req_ptr)
        required = set(required_raw)
        extra_schema: object = None  # None: no additional members
        extra_ptr = pointer
        # without additionalProperties, the members nothing evaluates are unevaluatedProperties'
        addl_key = (
            "additionalProperties" if "additionalProperties" in v else "unevaluatedProperties"
        )
        if addl_key in v:
            addl, extra_ptr = v[addl_key]
            if addl is False:
                extra_schema = False
            elif addl is True or addl == {}:
                extra_schema = True if self.open_objects else None
            else:
                extra_schema = addl
        elif self.open_objects:
            extra_schema = True
        keys = ObjectKeys.of(self, v, pointer)
        # required names that are not declared: declared here with the schema of their key
        declared: list[tuple[str, object, str]] = [
            (name, sub, ptr) for name, (sub, ptr) in props.items()
        ]
        for name in required_raw:
            if name not in props:
                matched = keys.schemas_for(name)
                if matched:
                    declared.append((name, conj_of(matched), matched[0][1]))
                    continue
                if extra_schema is False:
                    self._no(
                        req_ptr,
                        f"required member {name!r} is forbidden by additionalProperties: false",
                    )
                    return None
                schema = True if extra_schema in (None, True) else extra_schema
                declared.append(
                    (name, schema, extra_ptr if extra_schema not in (None, True) else req_ptr)
                )
        names = [name for name, _, _ in declared]
        members: list[tuple[tuple[int, int], bool]] = []  # ((key with colon, value), required)
        kept: list[str] = []
        for name, sub, ptr in declared:
            if not keys.name_allowed(name):
                sub = False
            elif name in props:
                sub = keys.with_patterns(name, sub, ptr)
            value = None if sub is False else (yield ("schema", sub, ptr))
            if value is None:
                if name in required:
                    self._no(ptr, f"required member {name!r} admits no value")
                    return None
                continue
            kept.append(name)
            members.append(
                ((self.layout.key(strings.canonical_string(name)), value), name in required)
            )
        regions: list[tuple[tuple[int, ...], int]] = []  # (pattern indices, value node)
        for region, schema, ptr in keys.regions(extra_schema, extra_ptr):
            value = yield ("schema", schema, ptr)
            if value is not None:
                regions.append((region, value))
        names_node = None
        if regions and keys.names is not None:
            names_node = yield ("view", keys.names, keys.names_ptr)
            if names_node is None:
                regions = []
        extra = self._extra_members(keys, regions, names, names_node, names)
        pred = presence_predicate(self, v, pointer)
        if not members and extra and pred is not None and pred[0] == "count":
            return self._counted_map(
                extra, pred[1], pred[2], v.get("minProperties", (0, pointer))[1]
            )
        free = self.member_order == "any" and 2 <= len(members) <= MAX_FREE_MEMBERS
        if pred is None:
            return (
                self._free_member_list(members, extra or None)
                if free
                else self._member_list(members, extra or None)
            )
        forms = [pair for pair, _ in members]
        member_set = Members(
            kept,
            lambda i: b.seq(self._copy(forms[i][0]), self._copy(forms[i][1])),
            None
            if not extra
            else lambda excluded: self._one_member(
                self._extra_members(keys, regions, names + excluded, names_node, names, copy=True)
            ),
            None
            if not extra
            else lambda name: self._one_member(
                self._extra_members(keys, regions, names, names_node, names, copy=True, only=name)
            ),
        )
        folded = simplify(pred, required & set(kept), member_set)
        if (
            not free
            and extra
            and isinstance(folded, tuple)
            and folded[0] == "count"
            and folded[2] is not None
            and folded[2] > len(kept)
        ):
            lo, hi = folded[1], folded[2]
            if lo <= max(1, len(required & set(kept))):
                return self._capped_members(members, extra, member_set, hi, empty=lo == 0)
            self._project_count(hi, len(kept), v.get("maxProperties", (0, pointer))[1])
        body = (
            self._free_member_list(members, extra or None)
            if free
            else self._member_list(members, extra or None)
        )
        if folded is True:
            return body
        if folded is False:
            self._no(
                pointer,
                "no object has the members minProperties/maxProperties/dependentRequired ask for",
            )
            return None
        condition = language(b, self.layout, member_set, folded)
        if condition is None and extra:
            raise unsupported(
                "minProperties",
                v.get("minProperties", (0, pointer))[1],
                "minProperties beyond the declared members would count additional members, "
                "whose names a finite automaton cannot keep distinct",
                hint="declare the members the object must have (properties and required)",
            )
        if condition is None:
            self._no(pointer, "no object has the members the presence keywords ask for")
            return None
        return b.and_(body, condition, origin=f"{pointer} (member presence)")

    def _capped_members(
        self,
        members: list[tuple[tuple[int, int], bool]],
        extra: list[tuple[int, int]],
        member_set: Members,
        hi: int,
        *,
        empty: bool,
    ) -> int:
        """An object of n declared members (n >= 1) and additional ones, at most `hi` > n
        members in all, with the bound beyond n a counter instead of a product (so
        maxProperties may reach the repetition limit beside declared members).

        The declared members come first, so an object with more than n members has all its
        declared ones among its first n: it is n members of the member list (an automata
        product with "exactly n members", small since n is) followed by 1..hi-n additional
        members, counted. Objects of at most n members are the member list intersected with
        "1..n members". The two alternatives agree up to the n-th member, where `}` ends the
        first and `,` starts the counted tail of the second, so the choice stays predictive.
        Both alternatives have a member, so a minProperties of 1 holds in them (`empty`: the
        object may also be `{}`, when its members are all optional and there is no lower bound)."""
        b = self.b
        layout = self.layout
        n = len(members)
        inner, leading = self._member_body(members, extra)
        assert inner is not None
        upto = presence_run(b, layout, member_set, 1, n)
        exactly = presence_run(b, layout, member_set, n, n)
        assert upto is not None and exactly is not None
        more = member_set.extra(list(member_set.names)) if member_set.extra else None
        assert more is not None
        tail = b.rep(b.seq(layout.comma(), more), 1, hi - n, counted=True)
        some = b.alt(
            b.and_(inner, upto, origin="member count"),
            b.seq(b.and_(self._copy(inner), exactly, origin="member count"), tail),
        )
        body = b.opt(some) if leading and empty else some
        return b.seq(layout.token("{"), body, layout.token("}"))

    def _project_count(self, hi: int, declared: int, pointer: str) -> None:
        """Refuse, before building, a member count product (minProperties above one and
        above the required members, beside declared and additional members) whose counter
        states alone would exceed the states limit: one state per count for each member form."""
        projected = (hi + 1) * (declared + 1)
        if projected > self.limits.states:
            raise TrgcError(
                "E_LIMIT_STATES",
                f"maxProperties {hi:,} beside {declared} declared members and additional ones, "
                f"with a minProperties above one that the required members do not meet, is a "
                f"product of about {projected:,} states, more than the states limit of "
                f"{self.limits.states:,}",
                pointer=pointer,
                hint="with minProperties at most 1 (or at most the number of required members) "
                "maxProperties is a counter up to the repetition limit; or raise --limit states",
            )

    def _counted_map(
        self, extra: list[tuple[int, int]], lo: int, hi: int | None, lo_ptr: str
    ) -> int:
        """An object of additional members only, `lo..hi` of them, without a product: `{` E
        (`,` E){0,hi-1} `}` with the bound a counter (so maxProperties may reach the repetition
        limit). At least one member is all a lower bound can ask: two additional members may
        repeat a name, which a finite automaton cannot rule out."""
        b = self.b
        if hi == 0:
            return self.layout.empty("{}")
        if lo > 1:
            raise unsupported(
                "minProperties",
                lo_ptr,
                f"minProperties {lo} over additional members only would count members whose "
                "names a finite automaton cannot keep distinct",
                hint="declare the members the object must have (properties and required)",
            )
        # unbounded: a list join (one node in both places); a counter's body needs its own
        first, later = (
            self._extra_uses(extra, 2) if hi is not None else self._extra_uses(extra, 1) * 2
        )
        more = b.rep(
            b.seq(self.layout.comma(), later),
            0,
            None if hi is None else hi - 1,
            counted=hi is not None,
        )
        body = b.seq(first, more)
        return b.seq(
            self.layout.token("{"), b.opt(body) if lo == 0 else body, self.layout.token("}")
        )

    def _extra_members(
        self,
        keys: ObjectKeys,
        regions: list[tuple[tuple[int, ...], int]],
        excluded: list[str],
        names_node: int | None,
        declared: list[str],
        *,
        copy: bool = False,
        only: str | None = None,
    ) -> list[tuple[int, int]]:
        """The additional members: one `(key with colon, value)` form per key region, its name
        none of `excluded` (and exactly `only` when given), its value the region's schema."""
        b = self.b
        options = []
        for region, value in regions:
            key = keys.key_node(region, excluded)
            if only is not None:
                key = b.and_(key, b.lit(strings.canonical_string(only)), origin="member name")
            if names_node is not None:
                key = b.and_(key, self._copy(names_node), origin="propertyNames")
            options.append((b.seq(key, self.layout.colon()), self._copy(value) if copy else value))
        return options

    def _one_member(self, forms: list[tuple[int, int]]) -> int | None:
        """One member of any of the `(key, value)` forms."""
        return self.b.alt(*(self.b.seq(k, v) for k, v in forms)) if forms else None

    def _member_joined(self, member: tuple[int, int]) -> int:
        """A member `(key, value)` that may come first or after a comma, as one node for both
        places (`_member_body`). A large value is a shared machine (`_uses`), as it was when
        each place had a copy of the member, so the artifact is the same."""
        key, value = member
        return self.b.seq(key, self._uses(value, 1)[0])

    def _member_uses(self, member: tuple[int, int], n: int) -> list[int]:
        """`n` uses of a member `(key, value)`: the key (a literal or a small name automaton)
        copied, the value shared (`_uses`), so that each use is decided by its key's bytes
        before any value machine is called."""
        key, value = member
        keys = [key] + [self._copy(key) for _ in range(n - 1)]
        return [self.b.seq(k, v) for k, v in zip(keys, self._uses(value, n), strict=True)]

    def _extra_uses(self, extra: list[tuple[int, int]], n: int) -> list[int]:
        """`n` uses of "one additional member": each form's key copied, its value shared."""
        per_form = [self._member_uses(form, n) for form in extra]
        return [self.b.alt(*(uses[i] for uses in per_form)) for i in range(n)]

    def _member_list(
        self, members: list[tuple[tuple[int, int], bool]], extra: list[tuple[int, int]] | None
    ) -> int:
        """`{` members in order, commas between the present ones, optional ones skippable, extras last `}`."""
        b = self.b
        body, leading = self._member_body(members, extra)
        if body is None:
            return self.layout.empty("{}")
        return b.seq(
            self.layout.token("{"), b.opt(body) if leading else body, self.layout.token("}")
        )

    def _member_body(
        self, members: list[tuple[tuple[int, int], bool]], extra: list[tuple[int, int]] | None
    ) -> tuple[int | None, bool]:
        """The members between the braces of `_member_list` (None: no member at all), and
        whether every member is optional (then the object may also be empty).

        `chain` is the language of member lists ending at the current member (None before the
        first); `leading` says whether every member so far was optional, so the current one may
        also come first: `(chain ("," m)?) | m`, where both places hold the same node `m`,
        which the NFA builder builds once (`automata.nfa`, "Joins"); a large value in it is a
        shared machine (`_member_joined`)."""
        b = self.b
        chain: int | None = None
        leading = True
        for member, is_required in members:
            if chain is None:
                chain = self.b.seq(*member)
            elif leading:
                # first, or after a comma: one node in both places (`automata.nfa` joins them)
                joined = self._member_joined(member)
                tail = b.seq(self.layout.comma(), joined)
                chain = b.alt(b.seq(chain, tail if is_required else b.opt(tail)), joined)
            else:
                tail = b.seq(self.layout.comma(), self.b.seq(*member))
                chain = b.seq(chain, tail if is_required else b.opt(tail))
            if is_required:
                leading = False
        body = chain
        if extra is not None:
            body = self._with_extras(chain, leading, extra)
        return body, leading

    def _with_extras(self, chain: int | None, leading: bool, extra: list[tuple[int, int]]) -> int:
        """The member list `chain` followed by any number of additional members, which may
        also come alone when every declared member is optional. Alone they are a list join
        `x ("," x)*` (one node `x`, `automata.nfa`); after the declared members, a node of
        their own."""
        b = self.b
        uses = self._extra_uses(extra, 2 if chain is not None and leading else 1)

        def more(first: int, each: int) -> int:  # `first ("," each)*`
            return b.seq(first, b.rep(b.seq(self.layout.comma(), each), 0, None))

        if chain is None:
            return more(uses[0], uses[0])
        after = more(chain, uses[-1])
        return b.alt(after, more(uses[0], uses[0])) if leading else after

    # ---- arrays -------------------------------------------------------------------------------

    def _array(self, v: View, pointer: str) -> Gen:
        b = self.b
        lo = self._count(v, "minItems", 0)
        hi = self._count(v, "maxItems")
        assert lo is not None
        check_limit("repetition", lo, self.limits.repetition, "minItems")
        prefix_entries = v.get("prefixItems", ([], ""))[0]
        prefix: list[int] = []
        for sub, ptr in prefix_entries:  # type: ignore[union-attr]
            if hi is not None and len(prefix) >= hi:
                break
            node = yield ("schema", sub, ptr)
            if node is None:
                hi = len(prefix) if hi is None else min(hi, len(prefix))
                break
            prefix.append(node)
        rest: int | None = None
        if hi is None or hi > len(prefix):
            items, items_ptr = v.get("items", (True, pointer))
            if len(prefix) < len(prefix_entries):  # a prefix item admits no value: nothing after it
                items = False
            if items is not False:
                rest = yield ("schema", items, items_ptr)
            if rest is None:
                hi = len(prefix) if hi is None else min(hi, len(prefix))
        if hi is not None and lo > hi:
            self._no(pointer, f"minItems {lo} cannot be met (at most {hi} items)")
            return None
        if hi is not None:
            check_limit("repetition", hi, self.limits.repetition, "maxItems")
        k = len(prefix)
        if hi == 0:
            return self.layout.empty("[]")
        if k == 0:
            assert rest is not None
            counted = lo > 1 or hi is not None
            # unbounded: `x ("," x)*` with one node `x` in both places (`automata.nfa` joins
            # them); a counter's body is a machine of its own, so it needs its own copy
            first, later = self._twice(rest) if counted else [self._uses(rest, 1)[0]] * 2
            more = b.rep(
                b.seq(self.layout.comma(), later),
                max(0, lo - 1),
                None if hi is None else hi - 1,
                counted=counted,
            )
            body = b.seq(first, more)
        else:
            tail = b.empty()
            if rest is not None:
                tail = b.rep(
                    b.seq(self.layout.comma(), rest),
                    max(0, lo - k),
                    None if hi is None else hi - k,
                    counted=lo > k or hi is not None,
                )
            for i in range(k - 1, 0, -1):  # element i (0-based) is the (i+1)-th
                step = b.seq(self.layout.comma(), prefix[i], tail)
                tail = step if i + 1 <= lo else b.opt(step)
            body = b.seq(prefix[0], tail)
        return b.seq(
            self.layout.token("["), body if lo > 0 else b.opt(body), self.layout.token("]")
        )

    # ---- sharing ------------------------------------------------------------------------------

    def _share_repeated_refs(self) -> None:
        """Mark every `$ref` target used from two or more places as a shared rule: the compiler
        then builds it once, as a machine called from each use, instead of inlining a copy per
        use. Without this a definition used twice inside one used twice, and so on (Kubernetes
        `ObjectMeta`, `Time`, ...), multiplies the start machine past the state limit. A small
        target without references of its own stays inlined (a call costs more than its copy);
        the compiler inlines a shared rule again when that is needed for the predictive check."""
        uses: dict[str, int] = {}
        nodes, stamped = self.grammar.nodes, self.grammar.stamped
        # a body merged into an equal rule still counts its references: a definition used
        # from both copies stays shared (inlined into the one rule, it would be a second
        # copy of a machine that other shared rules already hold). Every path counts (a node
        # under two parents is met twice); a stamped subtree holds no reference
        # (`Builder.stamp`) and is most of the nodes, so the walk does not enter one.
        for body in [rule.body for rule in self.grammar.rules] + self.merged:
            stack = [body]
            while stack:
                node_id = stack.pop()
                if node_id in stamped:
                    continue
                node = nodes[node_id]
                if node.kind == Kind.REF:
                    uses[node.payload] = uses.get(node.payload, 0) + 1
                stack.extend(node.children)
        self.grammar.rules = [
            replace(rule, shared=True)
            if rule.name != "root"
            and rule.pointer is not None
            and uses.get(rule.name, 0) >= 2
            and not self._inlinable(rule.body)
            else rule
            for rule in self.grammar.rules
        ]

    def _inlinable(self, root: int) -> bool:
        """Small and without references: copying it costs less than calling it."""
        nodes = self.grammar.nodes
        stack, count = [root], 0
        while stack:
            node = nodes[stack.pop()]
            count += 1
            if count > _SHARE_ABOVE or node.kind == Kind.REF:
                return False
            stack.extend(node.children)
        return True

    def _size(self, root: int) -> int:
        count, stack = 0, [root]
        nodes = self.grammar.nodes
        while stack and count <= _SHARE_ABOVE:
            count += 1
            stack.extend(nodes[stack.pop()].children)
        return count

    def _copy(self, root: int) -> int:
        """A fresh copy of the subtree at `root`, each node once (a join's member stays one
        node under its two parents). Nodes name only nodes made before them, so ascending
        index order copies children first."""
        nodes = self.grammar.nodes
        seen = {root}
        stack = [root]
        while stack:
            for below in nodes[stack.pop()].children:
                if below not in seen:
                    seen.add(below)
                    stack.append(below)
        new: dict[int, int] = {}
        suffixes = self.grammar.suffixes
        for i in sorted(seen):
            node = nodes[i]
            new[i] = self.b.node(node.kind, tuple(new[c] for c in node.children), node.payload)
            if i in suffixes:
                suffixes.add(new[i])
        return new[root]

    def _twice(self, node: int) -> tuple[int, int]:
        first, second = self._uses(node, 2)
        return first, second

    def _uses(self, node: int, n: int) -> list[int]:
        """`n` uses of one lowered value: copies when small, else a shared rule that the
        compiler keeps as one machine called from every use (never inlined twice), so an
        artifact grows linearly with the schema however deep optional members nest."""
        if self._size(node) <= _SHARE_ABOVE or self.grammar.nodes[node].kind == Kind.REF:
            return [node] + [self._copy(node) for _ in range(n - 1)]
        name = self._shared_rule(node)
        # a shared rule is one machine called from every use: its body is counted once
        return [self.b.ref(name) for _ in range(n)]

    def _shared_rule(self, node: int) -> str:
        """The shared rule whose body is `node`: a machine of its own, called where used.
        A body equal node for node to one made before (the same subschema lowered again in
        another place) gets that rule: one machine instead of two equal ones, whose calls
        would compete for the same bytes wherever both may come next (a conflict that had
        both inlined after a failed attempt)."""
        shape = self.b.shape(node)
        name = self.shared_by_shape.get(shape)
        if name is None:
            self.helpers += 1
            name = self.shared_by_shape[shape] = f"shared_{self.helpers}"
            self.grammar.rules.append(Rule(name, node, 0, 0, pointer=None, shared=True))
        else:
            self.merged.append(node)
        return name


def lower_schema(
    schema: object,
    *,
    whitespace: str | None = None,
    separators: str | None = None,
    max_whitespace: int = DEFAULT_MAX_WHITESPACE,
    open_objects: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    limits: Limits,
    source_sha256: str = "",
    ignore_keywords: tuple[str, ...] = (),
    unknown_keywords: str = "error",
    member_order: str = "declared",
) -> Grammar:
    """Lower a parsed schema (object or boolean) to a grammar whose start rule is `root`.

    `ignore_keywords` names keywords the caller explicitly wants treated as annotations (for
    example a benchmark's neutralised `_format`); they are recorded in the grammar options.
    `whitespace` is "pretty" (the default), "compact" or "flexible" (`whitespace.py`);
    `separators` is its older name (compact or pretty), accepted when `whitespace` is not given.
    `unknown_keywords="annotate"` reads every name outside the matrix as an annotation
    (`trgc.grammar.schema.annotations`); the names are recorded in the options too.
    `member_order="any"` admits the declared members of small objects in any order
    (`trgc.grammar.schema.memberorder`), recorded in the options.
    """
    grammar = Lowering(
        schema,
        whitespace=whitespace_mode(whitespace, separators),
        max_whitespace=max_whitespace,
        open_objects=open_objects,
        max_depth=max_depth,
        limits=limits,
        ignore_keywords=ignore_keywords,
        unknown_keywords=unknown_keywords,
        member_order=member_order,
    ).run()
    grammar.source_sha256 = source_sha256
    return grammar


__all__ = [
    "lower_schema",
    "Lowering",
    "SEPARATORS",
    "ANY_RULE",
    "DEFAULT_MAX_DEPTH",
    "escape_token",
]
