"""Free text before a tool-call envelope: any Unicode text that never spells the open marker.

The open marker itself is matched as a special-token symbol, so the grammar's choice between
"more text" and "the envelope starts" is made by that symbol and never by bytes. The byte
spelling of the marker (the same characters produced by ordinary tokens, e.g. `<` `tool`
`_call` `>`) is kept out of the free text: a downstream parser that searches the decoded text
for the marker would otherwise find an envelope the constraint never checked.

Construction (regular, no recursion, unambiguous). Let the marker be `m = c0 c1 … c(n-1)`
with `c0` not occurring again in `m` (true of every family's marker; checked). Any
occurrence of `m` starts at a `c0` and, since `m[1:]` holds no `c0`, lies inside one segment
"`c0` followed by `c0`-free text". So the strings without `m` are

    N* ( c0 D )*        N = any character but c0
    D = ⋃ j=0..n-2  m[1:1+j] ( ε | [^ m[1+j] c0] N* )

where `D` is every `c0`-free string that does not start with `m[1:]`: a proper prefix of
`m[1:]`, or such a prefix followed by a character that leaves it.
"""

from __future__ import annotations

from trgc.errors import TrgcError
from trgc.grammar.charclass import MAX_SCALAR, subtract
from trgc.grammar.schema.nodes import Builder

ANY = ((0, MAX_SCALAR),)


def _except(b: Builder, *chars: str) -> int:
    """One character other than `chars`."""
    return b.cls(subtract(ANY, [(ord(c), ord(c)) for c in chars]))


def free_text(b: Builder, marker: str, *, not_first: str = "") -> int:
    """Text that never contains `marker`; with `not_first`, it also never starts with one of
    those characters (the empty text is always included)."""
    if len(marker) < 2 or marker[0] in marker[1:]:
        raise TrgcError(
            "E_INTERNAL", f"free text needs a marker whose first character is unique: {marker!r}"
        )
    c0, rest = marker[0], marker[1:]
    if c0 in not_first:
        raise TrgcError("E_INTERNAL", "the marker's first character cannot also be excluded")
    branches = []
    for j in range(len(rest)):
        leave = b.seq(_except(b, rest[j], c0), b.rep(_except(b, c0), 0, None))
        branches.append(b.seq(b.lit(rest[:j]), b.opt(leave)))
    segments = b.rep(b.seq(b.lit(c0), b.alt(*branches)), 0, None)
    if not_first:
        head = b.opt(b.seq(_except(b, c0, *not_first), b.rep(_except(b, c0), 0, None)))
    else:
        head = b.rep(_except(b, c0), 0, None)
    return b.seq(head, segments)
