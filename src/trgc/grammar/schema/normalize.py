"""Older-draft spellings rewritten to their 2020-12 meaning, one schema object at a time.

A *view* maps each keyword of one schema object to `(value, pointer)`, where `pointer` is the
JSON pointer of the value in the original document. References keep pointing into the
original document, so a view never moves anything: `definitions` stays where it is and is
reached through `$ref` like `$defs`, array-form `items` becomes `prefixItems` whose entries
still carry their `/items/N` pointers.
"""

from __future__ import annotations

import re

from trgc.errors import TrgcError
from trgc.grammar.schema.keywords import ANNOTATION, KEYWORDS

Entry = tuple[object, str]
View = dict[str, Entry]

# drafts by the year-ish number trgc uses internally
DRAFT_04, DRAFT_06, DRAFT_07, DRAFT_2019, DRAFT_2020 = 4, 6, 7, 2019, 2020

_DRAFT_URI = re.compile(
    r"^(?:https?://)?json-schema\.org/(draft-0[467]/schema|draft/2019-09/schema|draft/2020-12/schema)#?$"
)
_DRAFTS = {
    "draft-04/schema": DRAFT_04,
    "draft-06/schema": DRAFT_06,
    "draft-07/schema": DRAFT_07,
    "draft/2019-09/schema": DRAFT_2019,
    "draft/2020-12/schema": DRAFT_2020,
}

# annotations of the matrix, plus draft-04 `id` (read as `$id`)
ANNOTATIONS = frozenset(
    {k.name for k in KEYWORDS if k.status == ANNOTATION and not k.name.endswith("*")} | {"id"}
)
CONTAINERS = frozenset({"$defs", "definitions"})


def escape_token(token: str) -> str:
    """One JSON pointer reference token (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def child(pointer: str, *tokens: object) -> str:
    return pointer + "".join("/" + escape_token(str(t)) for t in tokens)


def detect_draft(root: object) -> int:
    """The draft named by the root `$schema` (2020-12 when absent)."""
    if not isinstance(root, dict) or "$schema" not in root:
        return DRAFT_2020
    uri = root["$schema"]
    if not isinstance(uri, str):
        raise TrgcError(
            "E_SCHEMA_INVALID",
            f"$schema must be a string, got {type(uri).__name__}",
            pointer="/$schema",
        )
    match = _DRAFT_URI.match(uri.strip())
    if match:
        return _DRAFTS[match.group(1)]
    raise TrgcError(
        "E_UNSUPPORTED_KEYWORD",
        f"$schema {uri!r} is not a meta-schema trj-1 reads",
        pointer="/$schema",
        hint="trj-1 reads the official draft-04, draft-06, draft-07, 2019-09 and 2020-12 meta-schemas",
        details={"keyword": "$schema"},
    )


def view(schema: dict, pointer: str, draft: int) -> View:
    """The 2020-12 reading of one schema object."""
    out: View = {}
    if "$ref" in schema and draft <= DRAFT_07:
        # draft-04..07: "All other properties in a "$ref" object MUST be ignored."
        for key in ("$ref", *sorted(CONTAINERS & schema.keys())):
            out[key] = (schema[key], child(pointer, key))
        return out
    for key, value in schema.items():
        out[key] = (value, child(pointer, key))
    if "id" in out:
        if "$id" not in out:
            out["$id"] = out["id"]
        del out["id"]
    for keyword, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = schema.get(keyword)
        if isinstance(flag, bool) and draft == DRAFT_04:  # a modifier of minimum/maximum
            if bound not in out:  # the draft-04 meta-schema: exclusiveM* depends on its bound
                raise TrgcError(
                    "E_SCHEMA_INVALID",
                    f"draft-04 {keyword} modifies {bound}, which this schema lacks",
                    pointer=child(pointer, keyword),
                )
            del out[keyword]
            if flag:
                out[keyword] = out.pop(bound)
        elif isinstance(flag, bool):  # draft-06 and later: a number, never a modifier
            raise TrgcError(
                "E_SCHEMA_INVALID",
                f"{keyword} must be a number in this draft, got {str(flag).lower()} (the boolean "
                "form is draft-04's)",
                pointer=child(pointer, keyword),
                hint='declare "$schema": "http://json-schema.org/draft-04/schema#" for it',
            )
    items = schema.get("items")
    if isinstance(items, list):  # draft-04..2019 tuple validation
        if "prefixItems" in schema:
            raise TrgcError(
                "E_SCHEMA_INVALID",
                "array-form items together with prefixItems",
                pointer=child(pointer, "items"),
            )
        out["prefixItems"] = out.pop("items")
        if "additionalItems" in out:
            out["items"] = out.pop("additionalItems")
    elif "additionalItems" in out:
        # additionalItems has no effect unless items is an array
        del out["additionalItems"]
    if (
        "dependencies" in out
    ):  # draft-04..07: arrays are dependentRequired, schemas dependentSchemas
        deps, ptr = out.pop("dependencies")
        if not isinstance(deps, dict):
            raise TrgcError("E_SCHEMA_INVALID", "dependencies must be an object", pointer=ptr)
        for key, wanted in (("dependentRequired", True), ("dependentSchemas", False)):
            part = {k: d for k, d in deps.items() if isinstance(d, list) == wanted}
            if not part:
                continue
            if key in out:
                raise TrgcError(
                    "E_SCHEMA_INVALID", f"dependencies together with {key}", pointer=ptr
                )
            out[key] = (part, ptr)
    _index_children(out)
    return out


SCHEMA_MAPS = ("properties",)
SCHEMA_LISTS = ("prefixItems", "anyOf", "oneOf", "allOf")


def _index_children(out: View) -> None:
    """Replace container values by their members paired with pointers: {name: (schema, ptr)} / [(schema, ptr)]."""
    for key in SCHEMA_MAPS:
        if key in out:
            value, ptr = out[key]
            if not isinstance(value, dict):
                raise TrgcError(
                    "E_SCHEMA_INVALID", f"{key} must be an object of schemas", pointer=ptr
                )
            out[key] = ({name: (sub, child(ptr, name)) for name, sub in value.items()}, ptr)
    for key in SCHEMA_LISTS:
        if key in out:
            value, ptr = out[key]
            if not isinstance(value, list) or not value:
                raise TrgcError(
                    "E_SCHEMA_INVALID", f"{key} must be a non-empty array of schemas", pointer=ptr
                )
            out[key] = ([(sub, child(ptr, i)) for i, sub in enumerate(value)], ptr)


def is_annotation(key: str) -> bool:
    return key in ANNOTATIONS or key.startswith("x-")


def assertion_keys(v: View) -> list[str]:
    """The keywords of a view that constrain values (not annotations, not containers)."""
    return [k for k in v if not is_annotation(k) and k not in CONTAINERS]
