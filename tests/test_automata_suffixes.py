"""Suffixes (`Grammar.suffixes`, `automata.nfa`): one node at the end of several branches is
built once where those ends meet, with the language and the artifact of building it twice.

The NFA builder shares a marked node between two places only within one *region*: the part
of the tree whose ends lead to one exit (the last item of a sequence, any alternative, an
inlined rule's body). Elsewhere (an item followed by more, a repetition's body) a second place
gets a copy of its own. The references are the same grammars with sharing switched off.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import trgc
from trgc.artifact.check import check
from trgc.automata import machines, nfa
from trgc.compiler.build import compile_ast
from trgc.grammar.ast import Grammar, Rule
from trgc.grammar.schema.nodes import Builder


def _grammar(body: Callable[[Builder], int]) -> Grammar:
    """A one-rule grammar whose root is `body(builder)`."""
    grammar = Grammar(source_kind="trj", start="root", max_depth=8)
    b = Builder(grammar)
    grammar.rules.append(Rule("root", body(b), 0, 0, pointer=""))
    return grammar


def _x(b: Builder) -> int:
    """`x y?`: the suffix of the grammars below."""
    return b.seq(b.lit("x"), b.opt(b.lit("y")))


def _ends(b: Builder) -> int:
    """Both ends of an alternation, and an alternative of its own: one region, shared."""
    x = b.suffix(_x(b))
    return b.alt(b.seq(b.lit("a"), x), b.seq(b.lit("b"), x), x)


def _followed(b: Builder) -> int:
    """The alternation is followed by "z": a region of its own, whose two ends still meet."""
    x = b.suffix(_x(b))
    return b.seq(b.alt(b.seq(b.lit("a"), x), x), b.lit("z"))


def _not_an_end(b: Builder) -> int:
    """Once an end, once followed by "q": two regions, two copies ("axq" is no string)."""
    x = b.suffix(_x(b))
    return b.alt(b.seq(x, b.lit("q")), b.seq(b.lit("a"), x))


def _repeated(b: Builder) -> int:
    """Once a repetition's body (it loops back), once an end."""
    x = b.suffix(_x(b))
    return b.alt(b.seq(b.lit("r"), b.rep(x, 0, None)), b.seq(b.lit("a"), x))


def _counted(b: Builder) -> int:
    """A counted repetition's body (a machine of its own) and an end."""
    x = b.suffix(_x(b))
    return b.alt(b.seq(b.lit("c"), b.rep(x, 2, 40, counted=True)), b.seq(b.lit("a"), x))


def _chain(b: Builder) -> int:
    """Chains, each the end of the next, as an integer's free digits are."""
    d = b.cls([(0x30, 0x39)])
    one = b.suffix(b.seq(d, b.lit("!")))
    two = b.suffix(b.seq(d, one))
    three = b.seq(d, two)
    return b.alt(b.seq(b.lit("a"), three), b.seq(b.lit("b"), two), b.seq(b.lit("c"), one))


SHAPES: dict[str, Callable[[Builder], int]] = {
    "ends": _ends,
    "followed": _followed,
    "not an end": _not_an_end,
    "repeated": _repeated,
    "counted": _counted,
    "chain": _chain,
}


def _no_suffixes(m: pytest.MonkeyPatch) -> None:
    m.setattr(nfa._Builder, "_suffix", lambda self, node_id, region: None)


def _compiled(
    monkeypatch, make: Callable[[], trgc.Artifact], *, shared: bool
) -> tuple[bytes, int, int]:
    """(artifact bytes, NFA states built, NFA states in place) of the artifact `make()`
    compiles, with suffixes shared or not."""
    sizes: list[tuple[int, int]] = []
    build = nfa.build_nfa

    def counting(*args, **kwargs):
        out = build(*args, **kwargs)
        sizes.append((out[0].n_states, out[0].in_place))
        return out

    with monkeypatch.context() as m:
        m.setattr(machines, "build_nfa", counting)
        if not shared:
            _no_suffixes(m)
        data = make().to_bytes()
    return data, sum(s for s, _ in sizes), sum(p for _, p in sizes)


def _shape(name: str) -> Callable[[], trgc.Artifact]:
    return lambda: compile_ast(_grammar(SHAPES[name]))


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_a_suffix_gives_the_bytes_of_two_copies(monkeypatch, name):
    shared, built, in_place = _compiled(monkeypatch, _shape(name), shared=True)
    plain, plain_built, plain_in_place = _compiled(monkeypatch, _shape(name), shared=False)
    assert shared == plain
    assert in_place == plain_in_place == plain_built  # the limits see the plain NFA
    if name in ("ends", "followed", "chain"):
        assert built < plain_built  # built once
    else:
        assert built == plain_built  # no two places in one region


def test_not_an_end_keeps_its_continuation(monkeypatch):
    """The language itself: sharing across regions would accept "axq"."""
    artifact = trgc.Artifact.from_bytes(
        _compiled(monkeypatch, _shape("not an end"), shared=True)[0]
    )
    accepted = {
        text: check(artifact, text.encode()).accepted
        for text in ("xq", "xyq", "ax", "axy", "axq", "x")
    }
    assert accepted == {"xq": True, "xyq": True, "ax": True, "axy": True, "axq": False, "x": False}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer"},
        {"type": "integer", "minimum": 0},
        {"type": "integer", "minimum": -7, "maximum": 123456789},
        {"type": "integer", "exclusiveMinimum": 5},
        {"type": "number", "minimum": 12.5, "maximum": 99999},
        {"type": "array", "items": {"type": "integer", "maximum": 10**12}, "maxItems": 3},
    ],
)
def test_integer_digits_are_built_once(monkeypatch, schema):
    """The free digits ending an integer range's branches are suffixes: the NFA is a fraction
    of the plain one, the artifact is the same."""

    def make() -> trgc.Artifact:
        return trgc.compile_schema(schema, whitespace="compact")

    shared, built, in_place = _compiled(monkeypatch, make, shared=True)
    plain, plain_built, plain_in_place = _compiled(monkeypatch, make, shared=False)
    assert shared == plain
    assert in_place == plain_in_place
    assert built < plain_built
