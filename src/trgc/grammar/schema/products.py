"""`allOf` over branches that carry different combinators, by distribution.

A view holds one `anyOf`, one `oneOf`, one `if`/`then`/`else` and one `dependentSchemas`.
When `allOf` (or `$ref` with siblings) merges parts that each carry a different one of the
same kind, the merge cannot put both under one keyword. Conjunction distributes over them
instead: `allOf(A, anyOf(B, C))` is `anyOf(allOf(A, B), allOf(A, C))`, and likewise for
`oneOf` (each branch keeps its "exactly one" among its own siblings), `if`/`then`/`else`
(`(if ∧ then) ∨ (¬if ∧ else)`) and `dependentSchemas`; two different `$ref`s met in one merge
(an `if` and its `then` both references) are one reference kept and the other merged in after
it. So the merged view keeps the first
combinator of each kind and holds the others, unmerged, under `PENDING`; lowering the kept
one merges the view's other keywords (`PENDING` too) into each of its branches, and
`Lowering._expand` then moves a pending combinator into the branch as soon as the branch
has none of that kind. Each term of the product is lowered once, as its own alternative,
so the negations (`¬if`, the other oneOf branches) go through the same term machinery as a
single combinator.

The product has as many terms as the branch counts multiplied; `projected_cost` gives that
number times the schema text each term lowers, which the caller checks against the
operations limit before anything is built.
"""

from __future__ import annotations

import json

from trgc.grammar.schema.normalize import View

# the key of a view's pending combinators: (tuple of views, pointer); never a JSON Schema keyword
PENDING = "&pending"
KINDS: tuple[tuple[str, ...], ...] = (
    ("anyOf",),
    ("oneOf",),
    ("if", "then", "else"),
    ("dependentSchemas",),
    ("$ref",),
)


def _kind_of(group: View) -> tuple[str, ...]:
    return next(kind for kind in KINDS if any(k in group for k in kind))


def _values(group: View) -> list:
    """A group's keyword values without pointers, for equality."""
    out = []
    for key in sorted(group):
        value = group[key][0]
        if isinstance(value, list):  # an indexed branch list: [(schema, ptr)]
            value = [schema for schema, _ in value]
        out.append((key, value))
    return out


def split(part: View, merged: View, pending: list[View]) -> View:
    """`part` without the combinators that differ from the ones `merged` already holds; those
    are appended to `pending` (unless an equal one is already there). `then`/`else` without
    `if` have no effect and are dropped."""
    part = dict(part)
    if "if" not in part:
        part.pop("then", None)
        part.pop("else", None)
    held = part.pop(PENDING, None)
    for group in held[0] if held else ():
        _add(group, merged, pending)
    for kind in KINDS:
        mine = {k: part[k] for k in kind if k in part}
        if not mine or not any(k in merged for k in kind):
            continue
        for k in mine:
            del part[k]
        _add(mine, merged, pending)
    return part


def _add(group: View, merged: View, pending: list[View]) -> None:
    kind = _kind_of(group)
    values = _values(group)
    if _values({k: merged[k] for k in kind if k in merged}) == values:
        return
    if any(_kind_of(p) == kind and _values(p) == values for p in pending):
        return
    pending.append(group)


def take(v: View) -> View | None:
    """`v` with one pending combinator moved in where `v` has none of its kind (None when
    none can move: every pending one waits for a combinator of `v` to be distributed)."""
    if PENDING not in v:
        return None
    groups, ptr = v[PENDING]
    for index, group in enumerate(groups):
        if not any(k in v for k in _kind_of(group)):
            rest = groups[:index] + groups[index + 1 :]
            out = {k: e for k, e in v.items() if k != PENDING}
            out.update(group)
            if rest:
                out[PENDING] = (rest, ptr)
            return out
    return None


def _width(group: View) -> int:
    """How many terms a combinator splits a view into."""
    if "$ref" in group:  # one more schema to merge in, no alternatives
        return 1
    if "if" in group:
        return 2
    if "dependentSchemas" in group:
        deps = group["dependentSchemas"][0]
        return 2 ** len(deps) if isinstance(deps, dict) else 1
    key = "anyOf" if "anyOf" in group else "oneOf"
    branches = group[key][0]
    return len(branches) if isinstance(branches, list) else 1


def projected_cost(v: View) -> tuple[int, int]:
    """(terms, text bytes) of lowering `v`'s product: the branch counts of its combinators
    multiplied, and the schema text of those combinators, which every term lowers a part of."""
    groups = [{k: v[k] for k in kind if k in v} for kind in KINDS]
    groups = [g for g in groups if g] + list(v[PENDING][0])
    terms = 1
    size = 0
    for group in groups:
        terms *= _width(group)
        size += len(json.dumps(_values(group), default=repr))
    return terms, size
