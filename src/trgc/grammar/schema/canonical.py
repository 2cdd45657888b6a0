"""The canonical trj-1 serialisation of an instance for a given schema.

Conformance and coverage ask whether an artifact accepts "the instance": that is the instance
written the way the profile writes it: members in the order the schema declares them
(gathered through `$ref`, `allOf`, `anyOf` and `oneOf`), undeclared members after them in
their original order, strings and numbers as `json.dumps(ensure_ascii=False)` writes them,
and the chosen separators. No recursion: the instance is rebuilt with an explicit stack.
"""

from __future__ import annotations

import json

from trgc.errors import TrgcError
from trgc.grammar.schema.lower import SEPARATORS
from trgc.grammar.schema.normalize import detect_draft, view
from trgc.grammar.schema.refs import resolve, root_base

_MAX_GATHER = 256


class _Orderer:
    def __init__(self, root: object) -> None:
        self.root = root
        try:
            self.draft = detect_draft(root)
        except TrgcError:
            self.draft = 2020
        self.base = root_base(root)

    def _views(self, schema: object, pointer: str) -> list[dict]:
        """The views reachable from `schema` without consuming input (refs and combinators)."""
        out: list[dict] = []
        todo = [(schema, pointer)]
        seen: set[str] = set()
        while todo and len(out) < _MAX_GATHER:
            sub, ptr = todo.pop(0)
            if not isinstance(sub, dict) or ptr in seen:
                continue
            seen.add(ptr)
            try:
                v = view(sub, ptr, self.draft)
            except TrgcError:
                continue
            out.append(v)
            if "$ref" in v:
                try:
                    target_ptr, target = resolve(v["$ref"][0], self.root, self.base, ptr)
                    todo.append((target, target_ptr))
                except TrgcError:
                    pass
            for key in ("allOf", "anyOf", "oneOf"):
                if key in v:
                    todo.extend(v[key][0])
        return out

    def members(
        self, schema: object, pointer: str
    ) -> tuple[list[tuple[str, object, str]], tuple[object, str] | None]:
        names: list[tuple[str, object, str]] = []
        known: set[str] = set()
        extra = None
        for v in self._views(schema, pointer):
            for name, (sub, ptr) in v.get("properties", ({}, ""))[0].items():
                if name not in known:
                    known.add(name)
                    names.append((name, sub, ptr))
            if extra is None and "additionalProperties" in v:
                extra = v["additionalProperties"]
        return names, extra

    def elements(
        self, schema: object, pointer: str
    ) -> tuple[list[tuple[object, str]], tuple[object, str] | None]:
        for v in self._views(schema, pointer):
            if "prefixItems" in v or "items" in v:
                return list(v.get("prefixItems", ([], ""))[0]), v.get("items")
        return [], None


def reorder(schema: object, instance: object) -> object:
    """A copy of `instance` whose objects list members in the schema's declared order."""
    orderer = _Orderer(schema)
    result: list[object] = [None]
    # frames: (value, schema, pointer, container, key)
    stack: list[tuple[object, object, str, object, object]] = [(instance, schema, "", result, 0)]
    while stack:
        value, sub, ptr, container, key = stack.pop()
        if isinstance(value, dict):
            declared, extra = orderer.members(sub, ptr)
            out: dict = {}
            for name, child_schema, child_ptr in declared:
                if name in value:
                    out[name] = None
                    stack.append((value[name], child_schema, child_ptr, out, name))
            for name, item in value.items():
                if name not in out:
                    out[name] = None
                    child_schema, child_ptr = extra if extra is not None else (True, ptr)
                    stack.append((item, child_schema, child_ptr, out, name))
            container[key] = out  # type: ignore[index]
        elif isinstance(value, list):
            prefix, items = orderer.elements(sub, ptr)
            arr: list = [None] * len(value)
            for i, item in enumerate(value):
                if i < len(prefix):
                    child_schema, child_ptr = prefix[i]
                elif items is not None:
                    child_schema, child_ptr = items
                else:
                    child_schema, child_ptr = True, ptr
                stack.append((item, child_schema, child_ptr, arr, i))
            container[key] = arr  # type: ignore[index]
        else:
            container[key] = value  # type: ignore[index]
    return result[0]


def canonical_instance(schema: object, instance: object, separators: str = "compact") -> bytes:
    """The bytes a trj-1 artifact for `schema` is expected to accept for `instance`
    (`separators` is the whitespace mode; flexible artifacts accept the compact form)."""
    item_sep, key_sep = SEPARATORS.get(separators, SEPARATORS["compact"])
    ordered = reorder(schema, instance)
    return json.dumps(
        ordered, ensure_ascii=False, separators=(item_sep, key_sep), allow_nan=False
    ).encode("utf-8")
