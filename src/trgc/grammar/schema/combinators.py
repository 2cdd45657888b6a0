"""Exact boolean combinators of trj-1: `not`, `if`/`then`/`else`, `dependentSchemas` and
overlapping `oneOf`, lowered as disjunctions of *terms*.

A term is a positive view `P` (keywords merged as `allOf` merges them) and a list of negated
schemas `N`: it stands for `P ∧ ¬N1 ∧ … ∧ ¬Nk`. Every combinator rewrites the terms:

* `not S`: each term gets `S` negated;
* `if I then T else E`: each term splits into `P ∧ I ∧ T` and `P ∧ E ∧ ¬I`;
* `dependentSchemas {a: S}`: `P ∧ S ∧ (a present)` and `P ∧ ¬(a present)`;
* overlapping `oneOf [B1..Bn]` (exactly one): `P ∧ Bi ∧ ¬Bj (j ≠ i)` for every i.

Negations are pushed down to where the profile can compute them exactly, one JSON type at a
time (a schema's keywords only constrain their own type; the others are left alone):

* scalars (strings, numbers, booleans, null): `AND(P_t, CANON_t, NOT(S_t))`, an automata
  product. `CANON_t` keeps `P_t` to the canonical spelling of each value (strings as
  json.dumps writes them, numbers as the shortest plain decimal of at most 15 digits), and
  `S_t` is lowered *completely* for those spellings (patterns in their widest reading, no
  format shapes, which are narrower than validators): so a value is removed exactly when it is
  valid under `S`, whichever spelling the schema's other keywords would allow. This is the
  spelling-closure the complement needs: `{"type":"string","not":{"const":"a"}}` admits
  neither `"a"` nor `"\\u0061"`.
* objects: `S` may only say which members are present and what some member values are not
  (`required`, `properties`, `minProperties`, `maxProperties`); `¬S` is then a choice of
  views: a required name absent, a count outside the bounds, or a member present whose value
  is not valid under its subschema (a negation one level down).
* arrays: a negated array constraint is unsupported.

The number of terms is bounded by `MAX_TERMS`.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass
from decimal import Decimal

from trgc.errors import TrgcError
from trgc.grammar.schema import numbers, regex, strings
from trgc.grammar.schema.normalize import View, assertion_keys
from trgc.grammar.schema.products import PENDING

MAX_TERMS = 64
SCALARS = ("null", "boolean", "string", "number", "integer")
_COMBINATORS = ("not", "if", "then", "else", "dependentSchemas")
_STRING_KEYS = frozenset({"minLength", "maxLength", "pattern", "format"})
_NUMBER_KEYS = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)
_OBJECT_KEYS = frozenset({"required", "properties", "minProperties", "maxProperties"})
_FAMILY_OF = {
    "string": _STRING_KEYS,
    "number": _NUMBER_KEYS,
    "integer": _NUMBER_KEYS,
    "null": frozenset(),
    "boolean": frozenset(),
}
_ARRAY_KEYS = frozenset(
    {
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
    }
)
_ALL_OBJECT_KEYS = frozenset(
    {
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "dependentRequired",
        "dependentSchemas",
    }
)

Entry = tuple[object, str]
Gen = Generator[tuple, object, int | None]


@dataclass(frozen=True, eq=False)
class Conj:
    """A schema made of several schemas (each at its own pointer) that all apply, minus the
    negated ones: what merging two constraints on one member produces."""

    parts: tuple[Entry, ...]
    negated: tuple[Entry, ...] = ()


@dataclass(frozen=True)
class _All:
    """A negated schema that every value of the type satisfies: the type is dropped."""


@dataclass(frozen=True)
class _Scalar:
    """A negated schema's values of one scalar type, lowered completely."""

    node: int


@dataclass(frozen=True)
class _Object:
    """A negated object schema as the alternatives that violate it."""

    choices: tuple[tuple, ...]  # ("lacks", name) | ("min"/"max", n) | ("member", name, entry)


def conj_of(parts: list[Entry], negated: list[Entry] = ()) -> Conj:  # type: ignore[assignment]
    """The conjunction of `parts` minus `negated`, with nested conjunctions flattened."""
    flat: list[Entry] = []
    minus: list[Entry] = list(negated)
    for schema, ptr in parts:
        if isinstance(schema, Conj):
            flat.extend(schema.parts)
            minus.extend(schema.negated)
        else:
            flat.append((schema, ptr))
    return Conj(tuple(flat), tuple(minus))


def unsupported(keyword: str, pointer: str, message: str) -> TrgcError:
    return TrgcError(
        "E_UNSUPPORTED_KEYWORD", message, pointer=pointer, details={"keyword": keyword}
    )


def plain_decimal(value: float) -> str | None:
    """The plain decimal spelling (no exponent, no trailing zeros) of a float, if it differs
    from json.dumps's and has at most 40 characters."""
    text = format(Decimal(repr(value)).normalize(), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text in ("-0",):
        text = "0"
    return text if len(text) <= 24 and text != json.dumps(value) else None


class Combinators:
    """Mixin of `trgc.grammar.schema.lower.Lowering`: the term machinery described above."""

    # ---- entry points ---------------------------------------------------------------------

    @staticmethod
    def needs_terms(v: View) -> bool:
        return any(k in v for k in ("not", "if", "dependentSchemas"))

    def _combined(self, v: View, pointer: str) -> Gen:
        node = yield from self._term(v, [], pointer, 0)
        return node

    def _conj(self, conj: Conj, pointer: str) -> Gen:
        views: list[View] = []
        for schema, ptr in conj.parts:
            if schema is True:
                continue
            if schema is False:
                self._no(ptr, "the schema is false")
                return None
            views.append(self._target_view(schema, ptr))
        # the parts are peers (like allOf branches): none sees the others' evaluations
        merged = (
            self._merge(views, pointer, outer=None)
            if len(views) > 1
            else (views[0] if views else {})
        )
        if merged is None:
            return None
        if not conj.negated:
            node = yield ("view", merged, pointer)
            return node
        node = yield from self._term(merged, list(conj.negated), pointer, 0)
        return node

    # ---- terms ----------------------------------------------------------------------------

    def _term(self, p: View, negated: list[Entry], pointer: str, depth: int) -> Gen:
        """Lower `p ∧ ¬negated...`."""
        if depth > MAX_TERMS:
            raise unsupported(
                "not", pointer, f"the boolean combination needs more than {MAX_TERMS} terms"
            )
        p = self._expand(p, pointer)
        if p is None:
            return None
        alternatives = self._rewrite(p, negated, pointer)
        if alternatives is not None:
            return (yield from self._alternatives(alternatives, pointer, depth))
        if not negated:
            node = yield ("view", p, pointer)
            return node
        if "$ref" in p:  # the negations apply to the referenced schema: merge it in
            target_ptr, target = self._resolve(*p["$ref"])
            rest = {k: e for k, e in p.items() if k != "$ref"}
            if target is False:
                return None
            views = [rest] if target is True else [self._target_view(target, target_ptr), rest]
            merged = self._merge(views, pointer, outer=len(views) - 1)
            if merged is None:
                return None
            return (yield from self._term(merged, negated, pointer, depth + 1))
        return (yield from self._apply_negations(p, negated, pointer))

    def _rewrite(
        self, p: View, negated: list[Entry], pointer: str
    ) -> list[tuple[View, list[Entry]]] | None:
        """One combinator of `p` rewritten into alternatives, or None when `p` has none left."""
        if "not" in p:
            rest = {k: e for k, e in p.items() if k != "not"}
            return [(rest, negated + [p["not"]])]
        if "if" in p:
            cond = p["if"]
            then = p.get("then", (True, pointer))
            other = p.get("else", (True, pointer))
            rest = {k: e for k, e in p.items() if k not in ("if", "then", "else")}
            out = []
            yes = self._merged(rest, [cond, then], cond[1])
            if yes is not None:
                out.append((yes, negated))
            no = self._merged(rest, [other], cond[1])
            if no is not None:
                out.append((no, negated + [cond]))
            return out
        if "then" in p or "else" in p:  # without `if` they do nothing
            return [({k: e for k, e in p.items() if k not in ("then", "else")}, negated)]
        if "dependentSchemas" in p:
            deps, ptr = p["dependentSchemas"]
            if not isinstance(deps, dict):
                raise TrgcError(
                    "E_SCHEMA_INVALID", "dependentSchemas must be an object of schemas", pointer=ptr
                )
            rest = {k: e for k, e in p.items() if k != "dependentSchemas"}
            terms = [(rest, negated)]
            for name in deps:
                sub_ptr = ptr + "/" + name.replace("~", "~0").replace("/", "~1")
                present = ({"required": [name]}, sub_ptr)
                new = []
                for view, neg in terms:
                    with_it = self._merged(view, [(deps[name], sub_ptr), present], sub_ptr)
                    if with_it is not None:
                        new.append((with_it, neg))
                    new.append((view, neg + [present]))
                terms = new
                if len(terms) > MAX_TERMS:
                    raise unsupported(
                        "dependentSchemas", ptr, f"more than {MAX_TERMS} dependentSchemas terms"
                    )
            return terms
        for key in ("anyOf", "oneOf"):
            if key in p and (negated or key == "oneOf" and not self._provably_disjoint(p, key)):
                return self._distribute(p, negated, key)
        return None

    def _distribute(
        self, p: View, negated: list[Entry], key: str
    ) -> list[tuple[View, list[Entry]]]:
        branches, ptr = p[key]
        rest = {k: e for k, e in p.items() if k != key}
        exactly_one = key == "oneOf" and not self._provably_disjoint(p, key)
        out = []
        for i, (sub, sub_ptr) in enumerate(branches):
            merged = self._merged(rest, [(sub, sub_ptr)], sub_ptr)
            if merged is None:
                continue
            others = [b for j, b in enumerate(branches) if j != i] if exactly_one else []
            out.append((merged, negated + others))
        if len(out) > MAX_TERMS:
            raise unsupported(key, ptr, f"more than {MAX_TERMS} {key} terms")
        return out

    @staticmethod
    def _constrains(p: View, kind: str) -> bool:
        family = _ALL_OBJECT_KEYS if kind == "object" else _ARRAY_KEYS
        return "type" in p or any(k in family for k in p)

    def _provably_disjoint(self, p: View, key: str) -> bool:
        return self._overlapping_pair(self._branch_views(p, key), p[key][1]) is None

    def _alternatives(
        self, alternatives: list[tuple[View, list[Entry]]], pointer: str, depth: int
    ) -> Gen:
        options = []
        for view, neg in alternatives:
            node = yield from self._term(view, neg, pointer, depth + 1)
            if node is not None:
                options.append(node)
        if not options:
            self._no(pointer, "no alternative of the boolean combination admits a value")
            return None
        return self.b.alt(*options)

    def _merged(self, view: View, schemas: list[Entry], pointer: str) -> View | None:
        """`view` with the schemas merged in (None when one is false or the merge is empty)."""
        parts = [view]
        for schema, ptr in schemas:
            if schema is True:
                continue
            if schema is False:
                return None
            if isinstance(schema, Conj):
                raise unsupported("allOf", ptr, "a merged member schema inside a combinator")
            parts.append(self._target_view(schema, ptr))
        if len(parts) == 1:
            return view
        return self._merge(parts, pointer)

    # ---- negations, one type at a time ----------------------------------------------------

    def _apply_negations(self, p: View, negated: list[Entry], pointer: str) -> Gen:
        b = self.b
        if "enum" in p or "const" in p:
            return self._negated_constants(p, negated, pointer)
        options: list[int] = []
        types = self._types(p, pointer)
        for name in types:
            if name == "integer" and "number" in types:
                continue
            classes = self._negations(negated, name)
            if any(isinstance(c, _All) for c in classes):
                continue
            if not classes and name in ("object", "array") and not self._constrains(p, name):
                options.append(self._any_of_kind(name))  # `{}` minus scalars: any container
                continue
            if name in SCALARS:
                node = self._scalar(name, p, pointer)
                scalars = [c.node for c in classes if isinstance(c, _Scalar)]
                if node is not None and scalars:
                    node = b.and_(
                        node,
                        self._canonical(name),
                        *(b.not_(s) for s in scalars),
                        origin=f"{pointer} (not)",
                    )
            elif name == "object":
                node = yield from self._negated_objects(p, classes, pointer)
            else:  # arrays: a negation either excludes nothing here or raised above
                node = yield from self._array_with(p, pointer)
            if node is not None:
                options.append(node)
        if not options:
            self._no(pointer, "every value is excluded by a negation")
            return None
        return b.alt(*options)

    def _negated_constants(self, p: View, negated: list[Entry], pointer: str) -> int | None:
        """Constants minus the negated schemas, decided per constant's type."""
        b = self.b
        kept: list[int] = []
        groups: dict[str, list[object]] = {}
        for value in self._constants(p, pointer):
            kind = _json_kind(value)
            groups.setdefault(kind, []).append(value)
        for kind, values in groups.items():
            node = self._constant_node(values)
            classes = self._negations(negated, kind)
            if any(isinstance(c, _All) for c in classes):
                continue
            if any(isinstance(c, _Object) for c in classes) or (
                classes and kind in ("object", "array")
            ):
                raise unsupported(
                    "not", pointer, "a negation of object or array constants is not supported"
                )
            if classes:
                node = b.and_(
                    node,
                    self._canonical(kind),
                    *(b.not_(c.node) for c in classes if isinstance(c, _Scalar)),
                    origin=f"{pointer} (not)",
                )
            kept.append(node)
        if not kept:
            self._no(pointer, "every constant is excluded by a negation")
            return None
        return b.alt(*kept)

    def _canonical(self, kind: str) -> int:
        b = self.b
        if kind == "string":
            return strings.canonical_string_any(b)
        if kind in ("number", "integer"):
            return numbers.canonical_number(b)
        return b.alt(b.lit("true"), b.lit("false"), b.lit("null"))

    def _negations(self, negated: list[Entry], kind: str) -> list:
        """The classes of every negated schema for `kind`; a oneOf branch whose negation is
        outside what trj-1 computes makes the oneOf E_ONEOF_OVERLAP."""
        out: list = []
        for schema, ptr in negated:
            try:
                out.extend(self._negation(schema, ptr, kind))
            except TrgcError as error:
                parent, _, index = ptr.rpartition("/")
                if (
                    error.code != "E_UNSUPPORTED_KEYWORD"
                    or not (parent.endswith("/oneOf") or parent == "oneOf")
                    or not index.isdigit()
                ):
                    raise
                raise TrgcError(
                    "E_ONEOF_OVERLAP",
                    f"oneOf branch {ptr} may overlap the others, and 'exactly one' needs its "
                    f"negation, which trj-1 cannot compute here: {error.message}",
                    pointer=parent,
                    hint="make the branches disjoint by type, const/enum values or a required "
                    "discriminator property, or use anyOf",
                ) from None
        return out

    def _negation(self, schema: object, pointer: str, kind: str) -> list:
        """What `¬schema` means for values of JSON type `kind`: [] (nothing excluded),
        [_All()] (all excluded), or the partial exclusions to conjoin."""
        if schema is False:
            return []
        if schema is True:
            return [_All()]
        if isinstance(schema, Conj):
            raise unsupported("not", pointer, "a negation of a merged member schema")
        if not isinstance(schema, dict):
            raise TrgcError(
                "E_SCHEMA_NOT_OBJECT", "a schema is a JSON object or boolean", pointer=pointer
            )
        v = self._target_view(schema, pointer)
        for _ in range(16):
            v = self._expand(v, pointer)
            if v is None:
                return []  # an unsatisfiable schema excludes nothing
            if "$ref" not in v:
                break
            target_ptr, target = self._resolve(*v["$ref"])
            if not isinstance(target, dict):
                return [_All()] if target is True else []
            pointer = target_ptr
            v = self._target_view(target, target_ptr)
        else:
            raise unsupported("not", pointer, "a negation through a long $ref chain")
        if "$ref" in v:
            raise unsupported("not", pointer, "a negation through a long $ref chain")
        if PENDING in v:  # ¬(A ∧ B) would be a disjunction of negations
            raise unsupported(
                "allOf",
                v[PENDING][1],
                "a negation of an allOf whose branches carry different anyOf/oneOf/if "
                "combinators is not supported",
            )
        for key in ("not", "if", "dependentSchemas", "allOf"):
            if key in v:
                raise unsupported(key, v[key][1], f"{key} inside a negation is not supported")
        if "anyOf" in v or "oneOf" in v:
            key = "anyOf" if "anyOf" in v else "oneOf"
            if key == "oneOf" and not self._provably_disjoint(v, key):
                raise unsupported("oneOf", v[key][1], "an overlapping oneOf inside a negation")
            rest = {k: e for k, e in v.items() if k != key}
            out: list = []
            for sub, sub_ptr in v[key][0]:  # ¬(a ∨ b) = ¬a ∧ ¬b
                merged = self._merged(rest, [(sub, sub_ptr)], sub_ptr)
                if merged is not None:
                    out.extend(self._negation_of_view(merged, sub_ptr, kind))
            return out
        return self._negation_of_view(v, pointer, kind)

    def _negation_of_view(self, v: View, pointer: str, kind: str) -> list:
        keys = set(assertion_keys(v)) - {"$defs", "definitions"}
        if "type" in v:
            names = v["type"][0]
            names = {names} if isinstance(names, str) else set(names)
            covered = kind in names or (kind == "integer" and "number" in names)
            if not covered and not (kind == "number" and "integer" in names):
                return []
            integers_only = kind == "number" and "number" not in names
        else:
            integers_only = False
        if "enum" in v or "const" in v:
            values = [x for x in self._constants(v, pointer) if _json_kind(x) == _kind_of(kind)]
            if not values:
                return []
            if kind in ("object", "array"):
                raise unsupported("not", pointer, "a negation of object or array constants")
            return [_Scalar(self._constant_node(values))]
        if kind in SCALARS:
            relevant = keys & _FAMILY_OF[kind]
            if not relevant and not integers_only:
                return [_All()]
            node = self._complete_scalar(v, pointer, kind, integers_only)
            return [] if node is None else [_Scalar(node)]
        if kind == "array":
            if keys & _ARRAY_KEYS:
                raise unsupported("not", pointer, "a negated array constraint is not supported")
            return [_All()]
        relevant = keys & _ALL_OBJECT_KEYS
        if not relevant:
            return [_All()]
        if relevant - _OBJECT_KEYS:
            odd = sorted(relevant - _OBJECT_KEYS)[0]
            raise unsupported(odd, v[odd][1], f"{odd} inside a negation is not supported")
        choices: list[tuple] = []
        required = v.get("required", ([], pointer))[0]
        for name in required if isinstance(required, list) else []:
            choices.append(("lacks", name))
        if "minProperties" in v:
            n = self._count(v, "minProperties")
            if n:
                choices.append(("max", n - 1))
        if "maxProperties" in v:
            choices.append(("min", self._count(v, "maxProperties") + 1))
        for name, (sub, sub_ptr) in v.get("properties", ({}, pointer))[0].items():
            if sub is True or sub == {}:
                continue
            choices.append(("member", name, (sub, sub_ptr)))
        if not choices:
            return [_All()]
        return [_Object(tuple(choices))]

    def _complete_scalar(self, v: View, pointer: str, kind: str, integers_only: bool) -> int | None:
        """Every canonical spelling of a value of `kind` valid under `v` (never fewer); None
        when no value is."""
        b = self.b
        if kind in ("number", "integer"):
            return self._scalar("integer" if integers_only else kind, v, pointer)
        if "format" in v:
            raise unsupported(
                "format",
                v["format"][1],
                "format under not/if/oneOf is not supported: its shape is narrower than validators",
            )
        lo = self._count(v, "minLength", 0)
        hi = self._count(v, "maxLength")
        parts = []
        if "pattern" in v:
            pattern, ptr = v["pattern"]
            if not isinstance(pattern, str):
                raise TrgcError("E_SCHEMA_INVALID", "pattern must be a string", pointer=ptr)
            node = regex.pattern_string(b, pattern, ptr, self.limits.repetition, wide=True)
            if node is None:
                return None
            parts.append(node)
        if lo or hi is not None or not parts:
            parts.append(strings.string(b, lo, hi))
        return b.and_(*parts, origin=pointer) if len(parts) > 1 else parts[0]

    def _negated_objects(self, p: View, classes: list, pointer: str) -> Gen:
        """The object part of `p` minus negated object schemas: one view per choice."""
        object_view = dict(p)
        object_view["type"] = (["object"], pointer)
        combos: list[list[tuple]] = [[]]
        for c in classes:
            if isinstance(c, _Scalar):
                continue
            combos = [combo + [choice] for combo in combos for choice in c.choices]
            if len(combos) > MAX_TERMS:
                raise unsupported("not", pointer, f"more than {MAX_TERMS} negated object terms")
        options = []
        for combo in combos:
            view = self._with_choices(object_view, combo, pointer)
            if view is None:
                continue
            node = yield ("view", view, pointer)
            if node is not None:
                options.append(node)
        if not options:
            return None
        return self.b.alt(*options)

    def _with_choices(self, p: View, combo: list[tuple], pointer: str) -> View | None:
        view = dict(p)
        props = dict(view.get("properties", ({}, pointer))[0])
        required = list(view.get("required", ([], pointer))[0])
        lo = self._count(view, "minProperties", 0)
        hi = self._count(view, "maxProperties")
        addl = view.get("additionalProperties", view.get("unevaluatedProperties", (True, pointer)))
        for choice in combo:
            if choice[0] == "lacks":
                if choice[1] in required:
                    return None
                props[choice[1]] = (False, pointer)
            elif choice[0] == "max":
                hi = choice[1] if hi is None else min(hi, choice[1])
            elif choice[0] == "min":
                lo = max(lo, choice[1])
            else:
                name, entry = choice[1], choice[2]
                if name in props and props[name][0] is False:
                    return None
                if name not in props and addl[0] is False:
                    return None  # the name is not admitted at all
                props[name] = (conj_of([props.get(name, addl)], [entry]), entry[1])
                if name not in required:
                    required.append(name)
        if hi is not None and lo > hi:
            return None
        view["properties"] = (props, pointer)
        view["required"] = (required, pointer)
        if lo:
            view["minProperties"] = (lo, pointer)
        if hi is not None:
            view["maxProperties"] = (hi, pointer)
        return view

    # ---- constants ------------------------------------------------------------------------

    def _constants(self, v: View, pointer: str) -> list[object]:
        """The enum/const values of `v` that its other checked keywords allow."""
        values = self._enum_values(v)
        return [x for x in values if self._value_ok(x, v)]

    def _constant_node(self, values: list[object]) -> int:
        texts: list[str] = []
        for x in values:
            for text in self._spellings(x):
                if text not in texts:
                    texts.append(text)
        return self.b.alt(*(self.layout.constant(t) for t in texts))


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _kind_of(type_name: str) -> str:
    return "number" if type_name == "integer" else type_name
