"""Member names beyond `properties`: `patternProperties`, `propertyNames`, and the additional
members `additionalProperties` describes beside them.

Names known in advance (declared and required members) are decided here: a declared member
also takes the schema of every pattern that may match its name (the wide reading, so no
validator can apply a pattern trj-1 skipped), and a name `propertyNames` may reject is left
out. Additional member names form *regions*, one per set T of patterns: the canonical names
that surely match every pattern of T (narrow reading) and surely match no other (the wide
reading complemented, an automata product), none of them declared; their value is the
conjunction of T's schemas, or the `additionalProperties` schema for the empty T. Names that
only some reading matches belong to no region and are never written. With `propertyNames`,
every additional name is also intersected with the language of that schema.

`presence_predicate` reads `minProperties`, `maxProperties` and `dependentRequired` into the
predicate `trgc.grammar.schema.presence` turns into a language.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from trgc.errors import TrgcError
from trgc.grammar.schema import regex, strings
from trgc.grammar.schema.combinators import Conj, conj_of, unsupported
from trgc.grammar.schema.normalize import View
from trgc.limits import check_limit

MAX_PATTERNS = 4  # 2^4 - 1 key regions


@dataclass
class ObjectKeys:
    lowering: object
    patterns: list[tuple[str, object, str]]  # (pattern, schema, pointer of the schema)
    names: View | None  # the propertyNames view (strings only), if any
    names_ptr: str
    names_raw: object

    @classmethod
    def of(cls, lowering, v: View, pointer: str) -> ObjectKeys:
        patterns: list[tuple[str, object, str]] = []
        if "patternProperties" in v:
            value, ptr = v["patternProperties"]
            if not isinstance(value, dict):
                raise TrgcError(
                    "E_SCHEMA_INVALID",
                    "patternProperties must be an object of schemas",
                    pointer=ptr,
                )
            if len(value) > MAX_PATTERNS:
                raise unsupported(
                    "patternProperties",
                    ptr,
                    f"more than {MAX_PATTERNS} patternProperties (each set of patterns is a key region)",
                )
            for pattern, sub in value.items():
                sub_ptr = ptr + "/" + pattern.replace("~", "~0").replace("/", "~1")
                regex.matches(pattern, "", lowering.limits.repetition, wide=True)  # validates
                patterns.append((pattern, sub, sub_ptr))
        names: View | None = None
        names_ptr = pointer
        raw: object = True
        if "propertyNames" in v:
            raw, names_ptr = v["propertyNames"]
            if isinstance(raw, dict):
                names = lowering._merge(
                    [lowering._target_view(raw, names_ptr), {"type": ("string", names_ptr)}],
                    names_ptr,
                )
            elif raw is False:
                names = None
            elif isinstance(raw, Conj):
                raise unsupported(
                    "propertyNames", names_ptr, "propertyNames from two merged branches"
                )
            elif raw is not True:
                raise TrgcError(
                    "E_SCHEMA_NOT_OBJECT", "propertyNames is a schema", pointer=names_ptr
                )
        return cls(lowering, patterns, names, names_ptr, raw)

    # ---- names known in advance -------------------------------------------------------------

    def _limit(self) -> int:
        return self.lowering.limits.repetition  # type: ignore[attr-defined]

    def schemas_for(self, name: str) -> list[tuple[object, str]]:
        """The schemas of the patterns that may match `name`."""
        return [
            (sub, ptr)
            for pattern, sub, ptr in self.patterns
            if regex.matches(pattern, name, self._limit(), wide=True)
        ]

    def with_patterns(self, name: str, sub: object, ptr: str) -> object:
        matched = self.schemas_for(name)
        return conj_of([(sub, ptr), *matched]) if matched else sub

    def name_allowed(self, name: str) -> bool:
        """Whether `propertyNames` surely accepts `name` (False also when it may not)."""
        raw = self.names_raw
        if raw is True:
            return True
        if raw is False:
            return False
        return _name_ok(self.lowering, self.names, name, self.names_ptr, self._limit())

    # ---- additional names -------------------------------------------------------------------

    def regions(
        self, extra_schema: object, extra_ptr: str
    ) -> list[tuple[tuple[int, ...], object, str]]:
        """(pattern indices, value schema, pointer) of every key region that may hold members."""
        if self.names_raw is False:
            return []
        out: list[tuple[tuple[int, ...], object, str]] = []
        k = len(self.patterns)
        for size in range(1, k + 1):
            for region in combinations(range(k), size):
                parts = [(self.patterns[i][1], self.patterns[i][2]) for i in region]
                out.append((region, conj_of(parts) if len(parts) > 1 else parts[0][0], parts[0][1]))
        if extra_schema not in (None, False):
            out.append(((), extra_schema, extra_ptr))
        return out

    def key_node(self, region: tuple[int, ...], excluded: list[str]) -> int:
        """The canonical quoted names of `region` that are none of `excluded`."""
        lowering = self.lowering
        b = lowering.b  # type: ignore[attr-defined]
        base = strings.key_other_than(b, excluded)
        if not self.patterns:
            return base
        operands = [base]
        for i, (pattern, _, ptr) in enumerate(self.patterns):
            if i in region:
                node = regex.pattern_string(b, pattern, ptr, self._limit())
                if node is None:  # nothing surely matches: an empty region
                    node = b.and_(b.lit('"'), b.lit("'"), origin=ptr)
                operands.append(node)
            else:
                node = regex.pattern_string(b, pattern, ptr, self._limit(), wide=True)
                if node is not None:
                    operands.append(b.not_(node))
        return b.and_(*operands, origin="patternProperties key region")


def _name_ok(lowering, view: View | None, name: str, pointer: str, limit: int) -> bool:
    if view is None:
        return False
    allowed = {"type", "enum", "const", "pattern", "minLength", "maxLength"}
    for key in view:
        if key not in allowed and not key.startswith("$") and key not in ("title", "description"):
            raise unsupported(
                "propertyNames", pointer, f"propertyNames with {key!r} is not supported"
            )
    if "enum" in view or "const" in view:
        values = lowering._enum_values(view)
        if name not in [x for x in values if isinstance(x, str)]:
            return False
    if "minLength" in view and len(name) < lowering._count(view, "minLength"):
        return False
    if "maxLength" in view and len(name) > lowering._count(view, "maxLength"):
        return False
    if "pattern" in view:
        pattern = view["pattern"][0]
        if not isinstance(pattern, str):
            raise TrgcError("E_SCHEMA_INVALID", "pattern must be a string", pointer=pointer)
        return regex.matches(pattern, name, limit, wide=False)
    return True


def presence_predicate(lowering, v: View, pointer: str) -> tuple | None:
    """The member-presence condition of `v` (minProperties, maxProperties, dependentRequired)."""
    parts: list[tuple] = []
    lo = lowering._count(v, "minProperties", 0)
    hi = lowering._count(v, "maxProperties")
    if lo or hi is not None:
        check_limit("repetition", lo, lowering.limits.repetition, "minProperties")
        if hi is not None:
            check_limit("repetition", hi, lowering.limits.repetition, "maxProperties")
        parts.append(("count", lo, hi))
    if "dependentRequired" in v:
        deps, ptr = v["dependentRequired"]
        if not isinstance(deps, dict) or not all(
            isinstance(d, list) and all(isinstance(n, str) for n in d) for d in deps.values()
        ):
            raise TrgcError(
                "E_SCHEMA_INVALID",
                "dependentRequired must map names to arrays of names",
                pointer=ptr,
            )
        for name, needed in deps.items():
            if needed:
                parts.append(("or", [("lacks", name), ("and", [("has", n) for n in needed])]))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else ("and", parts)
