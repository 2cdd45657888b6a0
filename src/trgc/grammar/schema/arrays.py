"""Array keywords beyond items and counts: `contains` / `minContains` / `maxContains` and
`uniqueItems`, each as a language the array is intersected with (`Kind.AND`).

The array itself (`Lowering._array`) fixes positions, item schemas and lengths; these
languages only look at which elements occur, over fresh lowerings of the same item schemas:

* `contains` with `minContains` k (default 1): `[` (X `,`)* C (`,` (X `,`)* C){k-1} (`,` X)* `]`
  with X any element and C an element valid under `contains`;
* `maxContains` m: every element is either C or N, an element *not* valid under `contains`
  (a negation, computed as `not` computes it), with at most m C;
* `uniqueItems: true` over a finite element domain (enum, const, boolean and null elements, at
  most `MAX_UNIQUE_DOMAIN` values): for every value v, v occurs at most once:
  `[` (O (`,` O)*)? | (O `,`)* V (`,` O)* `]` with V the spellings of v and O those of the
  others. The product tracks which values were used, so it has up to 2^n states; an infinite
  or larger domain is E_UNIQUE_ITEMS.
"""

from __future__ import annotations

from collections.abc import Generator

from trgc.errors import TrgcError
from trgc.grammar.schema.combinators import Conj, conj_of, unsupported
from trgc.grammar.schema.normalize import View
from trgc.grammar.schema.values import value_key
from trgc.limits import check_limit

MAX_UNIQUE_DOMAIN = 12
Gen = Generator[tuple, object, int | None]


class ArrayKeywords:
    """Mixin of `trgc.grammar.schema.lower.Lowering`."""

    def _array_with(self, v: View, pointer: str) -> Gen:
        if "unevaluatedItems" in v and "items" not in v:
            # elements after prefixItems that `contains` does not evaluate are unevaluated
            rest = v["unevaluatedItems"]
            if "contains" in v and rest[0] is not True:
                if isinstance(v["contains"][0], Conj):
                    raise unsupported(
                        "unevaluatedItems", rest[1], "unevaluatedItems beside a merged contains"
                    )
                rest = ({"anyOf": [v["contains"][0], rest[0]]}, rest[1])
            v = {**v, "items": rest}
        node = yield from self._array(v, pointer)
        if node is None:
            return None
        conditions: list[int] = []
        if "contains" in v:
            for condition in (yield from self._contains(v, pointer)):
                if condition is None:
                    self._no(pointer, "no array has the elements contains asks for")
                    return None
                conditions.append(condition)
        unique, unique_ptr = v.get("uniqueItems", (False, pointer))
        if not isinstance(unique, bool):
            raise TrgcError("E_SCHEMA_INVALID", "uniqueItems must be a boolean", pointer=unique_ptr)
        max_items = self._count(v, "maxItems")
        if unique and not (max_items is not None and max_items <= 1):
            conditions.append(self._unique(v, unique_ptr))
        if not conditions:
            return node
        return self.b.and_(node, *conditions, origin=f"{pointer} (array elements)")

    def _element_schemas(self, v: View, pointer: str) -> list[tuple[object, str]]:
        """Every schema an element may be lowered under (prefix items, then items)."""
        out = [(sub, ptr) for sub, ptr in v.get("prefixItems", ([], pointer))[0]]  # type: ignore[union-attr]
        items = v.get("items", (True, pointer))
        if items[0] is not False:
            out.append(items)
        return out

    def _elements(self, schemas: list[tuple[object, str]]) -> Gen:
        """One fresh node for "any element" (None when no element has a value)."""
        options = []
        for sub, ptr in schemas:
            node = yield ("schema", sub, ptr)
            if node is not None:
                options.append(node)
        return self.b.alt(*options) if options else None

    def _contains(self, v: View, pointer: str) -> Generator[tuple, object, list]:
        """The languages of `contains` with `minContains` and `maxContains` (None: empty)."""
        b = self.b
        layout = self.layout
        contains, c_ptr = v["contains"]
        lo = self._count(v, "minContains", 1)
        hi = self._count(v, "maxContains")
        check_limit("repetition", lo, self.limits.repetition, "minContains")
        schemas = self._element_schemas(v, pointer)
        out: list[int | None] = []
        if lo > 0:
            hits = []
            for _ in range(lo):
                hits.append((yield ("schema", contains, c_ptr)))
            runs = []
            for _ in range(lo + 1):
                runs.append((yield from self._elements(schemas)))
            if any(x is None for x in hits) or any(x is None for x in runs):
                return [None]
            parts = [b.rep(b.seq(runs[0], layout.comma()), 0, None), hits[0]]
            for i in range(1, lo):
                parts += [layout.comma(), b.rep(b.seq(runs[i], layout.comma()), 0, None), hits[i]]
            parts.append(b.rep(b.seq(layout.comma(), runs[lo]), 0, None))
            out.append(b.seq(layout.token("["), *parts, layout.token("]")))
        if hi is not None:
            check_limit("repetition", hi, self.limits.repetition, "maxContains")
            out.append((yield from self._at_most(schemas, contains, c_ptr, hi)))
        return out

    def _at_most(self, schemas: list, contains: object, c_ptr: str, hi: int) -> Gen:
        """Arrays with at most `hi` elements valid under `contains`: the others are elements
        valid under their item schema and not under `contains` (a negation)."""
        b = self.b
        layout = self.layout
        misses = [(conj_of([(sub, ptr)], [(contains, c_ptr)]), ptr) for sub, ptr in schemas]

        def run(leading: bool) -> Gen:  # (M ",")* before a hit, or ("," M)* after one
            miss = yield from self._elements(misses)
            if miss is None:
                return b.empty()
            pair = b.seq(miss, layout.comma()) if leading else b.seq(layout.comma(), miss)
            return b.rep(pair, 0, None)

        options = [layout.empty("[]")]
        first = yield from self._elements(misses)
        if first is not None:
            options.append(
                b.seq(layout.token("["), first, (yield from run(False)), layout.token("]"))
            )
        if hi > 0:
            hit = yield ("schema", contains, c_ptr)
            again = yield ("schema", contains, c_ptr)
            if hit is not None and again is not None:
                step = b.seq(layout.comma(), (yield from run(True)), again)
                options.append(
                    b.seq(
                        layout.token("["),
                        (yield from run(True)),
                        hit,
                        b.rep(step, 0, hi - 1),
                        (yield from run(False)),
                        layout.token("]"),
                    )
                )
        return b.alt(*options)

    # ---- uniqueItems ------------------------------------------------------------------------

    def _unique(self, v: View, pointer: str) -> int:
        b = self.b
        layout = self.layout
        domain: list[object] = []
        keys: list[str] = []
        for sub, ptr in self._element_schemas(v, pointer):
            values = self._finite_values(sub, ptr, 0)
            if values is None:
                raise TrgcError(
                    "E_UNIQUE_ITEMS",
                    "uniqueItems: true needs a finite element domain (enum, const, boolean or "
                    "null items); this array's elements can take unboundedly many values",
                    pointer=pointer,
                    hint="give the items an enum, or drop uniqueItems",
                    details={"keyword": "uniqueItems"},
                )
            for value in values:
                key = value_key(value)
                if key not in keys:
                    keys.append(key)
                    domain.append(value)
        if len(domain) > MAX_UNIQUE_DOMAIN:
            raise TrgcError(
                "E_UNIQUE_ITEMS",
                f"uniqueItems: true over {len(domain)} element values needs up to 2^{len(domain)} "
                f"states; at most {MAX_UNIQUE_DOMAIN} values are supported",
                pointer=pointer,
                details={"keyword": "uniqueItems"},
            )

        def spellings(values: list[object]) -> int | None:
            texts: list[str] = []
            for value in values:
                for text in self._spellings(value):
                    if text not in texts:
                        texts.append(text)
            return b.alt(*(layout.constant(t) for t in texts)) if texts else None

        conditions = []
        for i, value in enumerate(domain):
            others = domain[:i] + domain[i + 1 :]
            options = [layout.empty("[]")]
            if others:
                options.append(
                    b.seq(
                        layout.token("["),
                        spellings(others),
                        b.rep(b.seq(layout.comma(), spellings(others)), 0, None),
                        layout.token("]"),
                    )
                )
            this = spellings([value])
            lead = b.rep(b.seq(spellings(others), layout.comma()), 0, None) if others else b.empty()
            tail = b.rep(b.seq(layout.comma(), spellings(others)), 0, None) if others else b.empty()
            options.append(b.seq(layout.token("["), lead, this, tail, layout.token("]")))
            conditions.append(b.alt(*options))
        return b.and_(*conditions, origin=f"{pointer} (uniqueItems)")

    def _finite_values(self, schema: object, pointer: str, depth: int) -> list | None:
        """The values `schema` admits when they are finitely many and easy to list, else None."""
        if depth > 16 or schema is True:
            return None
        if schema is False:
            return []
        if not isinstance(schema, dict):
            return None
        view = self._expand(self._target_view(schema, pointer), pointer)
        if view is None:
            return []
        if "$ref" in view and len(view) == 1:
            target_ptr, target = self._resolve(*view["$ref"])
            return self._finite_values(target, target_ptr, depth + 1)
        if "enum" in view or "const" in view:
            return [x for x in self._enum_values(view) if self._value_ok(x, view)]
        if "anyOf" in view or "oneOf" in view:
            key = "anyOf" if "anyOf" in view else "oneOf"
            out: list = []
            for sub, sub_ptr in view[key][0]:
                values = self._finite_values(sub, sub_ptr, depth + 1)
                if values is None:
                    return None
                out.extend(values)
            return out
        if "type" in view and set(view) <= {"type", "$defs", "definitions"}:
            names = view["type"][0]
            names = [names] if isinstance(names, str) else names
            if set(names) <= {"boolean", "null"}:
                return ([True, False] if "boolean" in names else []) + (
                    [None] if "null" in names else []
                )
        return None
