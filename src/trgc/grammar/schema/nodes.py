"""A small builder over the arena AST used by the trj-1 lowering.

Every call appends fresh nodes (the lowering never shares a node between two parents, so the
arena stays a tree and the compiler may walk it any way it likes). JSON Schema nodes carry
line 0 / column 0; the JSON pointer of their origin is kept on the rules instead.
"""

from __future__ import annotations

from trgc.grammar.ast import Grammar, Kind
from trgc.grammar.charclass import normalize


class Builder:
    """Append-only node constructors over one `Grammar` arena."""

    __slots__ = ("grammar",)

    def __init__(self, grammar: Grammar) -> None:
        self.grammar = grammar

    def empty(self) -> int:
        return self.grammar.add(Kind.EMPTY, 0, 0)

    def lit(self, data: bytes | str) -> int:
        raw = data.encode("utf-8") if isinstance(data, str) else data
        if not raw:
            return self.empty()
        return self.grammar.add(Kind.LITERAL, 0, 0, payload=raw)

    def cls(self, ranges: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> int:
        """A class over Unicode scalars; ranges are normalised (sorted, merged, surrogates cut)."""
        return self.grammar.add(Kind.CLASS, 0, 0, payload=normalize(ranges))

    def chars(self, text: str) -> int:
        """A class of the given characters."""
        return self.cls([(ord(c), ord(c)) for c in text])

    def seq(self, *items: int) -> int:
        parts = [i for i in items if self.grammar.nodes[i].kind != Kind.EMPTY]
        if not parts:
            return self.empty()
        if len(parts) == 1:
            return parts[0]
        return self.grammar.add(Kind.SEQ, 0, 0, children=tuple(parts))

    def alt(self, *items: int) -> int:
        if len(items) == 1:
            return items[0]
        return self.grammar.add(Kind.ALT, 0, 0, children=tuple(items))

    def rep(self, item: int, lo: int, hi: int | None) -> int:
        if hi is not None and hi == 0:
            return self.empty()
        if lo == 1 and hi == 1:
            return item
        return self.grammar.add(Kind.REPEAT, 0, 0, children=(item,), payload=(lo, hi))

    def opt(self, item: int) -> int:
        return self.rep(item, 0, 1)

    def and_(self, *items: int, origin: str = "") -> int:
        """The intersection of the items' languages (a `NOT` item is complemented within the
        others); compiled by an automata product, so the items must stay regular."""
        if len(items) == 1:
            return items[0]
        return self.grammar.add(Kind.AND, 0, 0, children=tuple(items), payload=origin)

    def not_(self, item: int) -> int:
        """Every byte string outside the item's language: only meaningful as an `and_` operand."""
        return self.grammar.add(Kind.NOT, 0, 0, children=(item,))

    def ref(self, name: str) -> int:
        return self.grammar.add(Kind.REF, 0, 0, payload=name)
