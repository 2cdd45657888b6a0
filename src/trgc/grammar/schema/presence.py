"""Which members an object has: `minProperties`, `maxProperties`, `dependentRequired` (and
draft-07 array-form `dependencies`) as languages over an object's member forms.

The object's member list (`Lowering._member_list`) fixes the order and the values; a presence
condition is a second language over the *same* member forms (fresh copies of the same nodes)
that only looks at which members occur, and the object is their intersection (`Kind.AND`,
an automata product). Because both languages read each member with the same sub-automaton,
the product is exact: it keeps exactly the member lists that satisfy the condition.

* `count(lo, hi)`: `{` M (`,` M){lo-1,hi-1} `}` with M any member (declared or additional);
  when additional members are possible, the lower bound counts them once in all, since two
  of them may repeat a name (a finite automaton cannot tell) and a parser keeps only one;
* `has(name)`: `{` (M `,`)* M_name (`,` M)* `}`;
* `lacks(name)`: `{` (M' (`,` M')*)? `}` with M' any member but `name`;
* `dependentRequired {a: [b, c]}`: lacks(a) or (has(b) and has(c)).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from trgc.grammar.schema.nodes import Builder
from trgc.grammar.schema.whitespace import Layout

Pred = tuple  # ("count", lo, hi) | ("has", name) | ("lacks", name) | ("and"|"or", [Pred, ...])


@dataclass
class Members:
    """Fresh copies of an object's member forms, by name, and of its additional member."""

    names: list[str]  # declared (and required-but-undeclared) members, in order
    form: Callable[[int], int]  # index into names -> a fresh `"name":value` node
    extra: Callable[[list[str]], int] | None  # excluded names -> a fresh additional member
    extra_named: Callable[[str], int] | None  # an undeclared name -> that additional member

    def can_have(self, name: str) -> bool:
        return name in self.names or self.extra is not None


def _any(b: Builder, members: Members, excluded: tuple[str, ...] = ()) -> int | None:
    options = [members.form(i) for i, n in enumerate(members.names) if n not in excluded]
    if members.extra is not None:
        options.append(members.extra(list(members.names) + list(excluded)))
    return b.alt(*options) if options else None


def language(b: Builder, layout: Layout, members: Members, pred: Pred) -> int | None:
    """The objects (over `members`) whose member set satisfies `pred`; None: no object does."""
    kind = pred[0]
    if kind in ("and", "or"):
        parts = [language(b, layout, members, p) for p in pred[1]]
        if kind == "and":
            if any(p is None for p in parts):
                return None
            return b.and_(*parts, origin="member presence")  # type: ignore[arg-type]
        kept = [p for p in parts if p is not None]
        return b.alt(*kept) if kept else None
    if kind == "count":
        lo, hi = pred[1], pred[2]
        if members.extra is None or lo == 0:
            return _count(b, layout, members, lo, hi)
        lower = _at_least(b, layout, members, lo)
        if hi is None:
            return lower
        upper = _count(b, layout, members, 0, hi)
        return b.and_(lower, upper, origin="member count")
    name = pred[1]
    if kind == "has":
        if name in members.names:
            this = members.form(members.names.index(name))
        elif members.extra_named is not None:
            this = members.extra_named(name)
        else:
            return None
        before = _any(b, members)
        after = _any(b, members)
        assert before is not None and after is not None
        return b.seq(
            layout.token("{"),
            b.rep(b.seq(before, layout.comma()), 0, None),
            this,
            b.rep(b.seq(layout.comma(), after), 0, None),
            layout.token("}"),
        )
    # lacks
    first = _any(b, members, (name,))
    if first is None:
        return layout.empty("{}")
    later = _any(b, members, (name,))
    assert later is not None
    body = b.seq(first, b.rep(b.seq(layout.comma(), later), 0, None))
    return b.seq(layout.token("{"), b.opt(body), layout.token("}"))


def run(b: Builder, layout: Layout, members: Members, lo: int, hi: int) -> int | None:
    """`lo..hi` members (1 <= lo <= hi) with commas between them and no braces: M (`,` M){lo-1,hi-1}."""
    first = _any(b, members)
    if first is None:
        return None
    later = _any(b, members)
    assert later is not None
    return b.seq(first, b.rep(b.seq(layout.comma(), later), lo - 1, hi - 1))


def _count(b: Builder, layout: Layout, members: Members, lo: int, hi: int | None) -> int | None:
    """Objects of `lo..hi` members, every member counted."""
    if hi == 0:
        return layout.empty("{}")
    first = _any(b, members)
    if first is None:
        return layout.empty("{}") if lo == 0 else None
    later = _any(b, members)
    assert later is not None
    more = b.rep(b.seq(layout.comma(), later), max(0, lo - 1), None if hi is None else hi - 1)
    body = b.seq(first, more)
    return b.seq(layout.token("{"), b.opt(body) if lo == 0 else body, layout.token("}"))


def _at_least(b: Builder, layout: Layout, members: Members, lo: int) -> int | None:
    """Objects with at least `lo` distinct names even if additional members repeat a name:
    declared members count one each, additional members one in all (they come after the
    declared ones in the member list). Repeated additional names cannot be ruled out by a
    finite automaton, and a parser keeps only one of them."""

    def declared() -> int | None:
        options = [members.form(i) for i in range(len(members.names))]
        return b.alt(*options) if options else None

    def extras() -> int:
        assert members.extra is not None
        first = members.extra(list(members.names))
        later = members.extra(list(members.names))
        return b.seq(first, b.rep(b.seq(layout.comma(), later), 0, None))

    def run(count: int) -> int | None:  # `count` or more declared members
        first, later = declared(), declared()
        if first is None or later is None:
            return None if count else b.empty()
        return b.seq(first, b.rep(b.seq(layout.comma(), later), max(0, count - 1), None))

    options = []
    enough = run(lo)
    if enough is not None:
        options.append(b.seq(enough, b.opt(b.seq(layout.comma(), extras()))))
    if lo == 1:
        head = run(1)
        prefix = b.empty() if head is None else b.opt(b.seq(head, layout.comma()))
        options.append(b.seq(prefix, extras()))
    else:
        head = run(lo - 1)
        if head is not None:
            options.append(b.seq(head, layout.comma(), extras()))
    if not options:
        return None
    return b.seq(layout.token("{"), b.alt(*options), layout.token("}"))


def simplify(pred: Pred, required: set[str], members: Members) -> Pred | bool:
    """`pred` with what the member list already decides folded away: True (always holds),
    False (never) or a smaller predicate."""
    kind = pred[0]
    if kind == "has":
        if pred[1] in required:
            return True
        return pred if members.can_have(pred[1]) else False
    if kind == "lacks":
        if pred[1] in required:
            return False
        return pred if members.can_have(pred[1]) else True
    if kind == "count":
        lo, hi = pred[1], pred[2]
        most = None if members.extra is not None else len(members.names)
        if most is not None and lo > most:
            return False
        if lo <= len(required) and (hi is None or (most is not None and most <= hi)):
            return True
        return pred
    parts = [simplify(p, required, members) for p in pred[1]]
    if kind == "and":
        if any(p is False for p in parts):
            return False
        kept = [p for p in parts if p is not True]
        return True if not kept else kept[0] if len(kept) == 1 else ("and", kept)
    if any(p is True for p in parts):
        return True
    kept = [p for p in parts if p is not False]
    return False if not kept else kept[0] if len(kept) == 1 else ("or", kept)
