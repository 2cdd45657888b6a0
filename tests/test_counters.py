"""Counted repetition (docs/compilation.md, "Counters"): bounded repetitions compile to a
counter in the configuration, never to copies, and mean exactly what they say.

* Membership: generated grammars whose repetitions have large bounds (so that they become
  counters), with `m = 0`, `m = n`, `n = 1`, unbounded maxima, nesting and recursion, agree with
  Python's `re` and lark's Earley parser; the stepper's sampled members agree too.
* Size: the tables of `x{m,n}` and of every counted JSON Schema bound do not depend on the
  bound, and nested optional members or arrays grow linearly.
"""

from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Lark

from test_compile_oracle import (
    ORACLE_SETTINGS,
    REFUSALS,
    _HypothesisChooser,
    _RandomChooser,
    compiled_or_skip,
    earley_accepts,
    inputs,
    random_grammar,
    to_lark,
    to_regex,
    to_trg,
)
from trgc.artifact.check import check
from trgc.artifact.model import REPEAT
from trgc.compiler.build import compile_grammar
from trgc.compiler.schema import compile_schema
from trgc.errors import TrgcError
from trgc.evaluation.walk import sample
from trgc.limits import Limits

# just large enough that the copies of a one-symbol body would cost more than a counter
# (nfa.EXPAND_STATES), with m = 0, m = n, n = 1, an unbounded maximum and a large minimum
COUNTED_RE = [(0, 34), (34, 34), (3, 40), (0, 1), (1, 1), (2, 2), (34, None), (0, None), (1, 36)]
COUNTED_LARK = COUNTED_RE
# a conflicting counter is copied; small limits keep the copies of nested ones cheap to refuse
SMALL = Limits(states=3000, transitions=30_000, operations=3_000_000)


def _has_counter(artifact) -> bool:
    return any(m.kind == REPEAT for m in artifact.machines)


def counted_grammar(choose, recursive: bool, repeats):
    """A generated grammar whose start rule sits inside one more large repetition (so that
    counters are reached, often nested in the generated ones), half of the time followed by a
    literal, so the repetition's end is decided by what follows it."""
    rules = random_grammar(choose, recursive, repeats)
    lo, hi = choose.pick([b for b in repeats if b[1] is None or b[1] > 2])
    body: tuple = ("rep", rules[0], lo, hi)
    if choose.pick([False, True]):
        body = ("seq", (body, ("lit", choose.pick(["b", "c", "ab"]))))
    return (body, *rules[1:])


@st.composite
def counted_grammars(draw, recursive: bool, repeats):
    return counted_grammar(_HypothesisChooser(draw), recursive, repeats)


def matches(rules, text: str) -> bool:
    """An independent oracle for the non-recursive generated grammars: the set of positions
    where each expression can end, from each start position (memoised), iterating repetitions
    explicitly. Polynomial, unlike a backtracking matcher on nested counted repetitions (and
    unlike the `regex` package, which misses `(?:[^a]|a|[^b]){0,4}` on "ba")."""
    memo: dict[tuple[int, int], frozenset[int]] = {}

    def ends(node, i: int) -> frozenset[int]:
        key = (id(node), i)
        found = memo.get(key)
        if found is not None:
            return found
        kind = node[0]
        if kind == "lit":
            out = frozenset({i + len(node[1])}) if text.startswith(node[1], i) else frozenset()
        elif kind == "cls":
            ok = i < len(text) and (text[i] in node[1]) != node[2]
            out = frozenset({i + 1}) if ok else frozenset()
        elif kind == "ref":
            out = ends(rules[node[1]], i)
        elif kind == "seq":
            here = frozenset({i})
            for child in node[1]:
                here = frozenset(j for p in here for j in ends(child, p))
            out = here
        elif kind == "alt":
            out = frozenset(j for child in node[1] for j in ends(child, i))
        else:
            item, lo, hi = node[1], node[2], node[3]
            level, done = frozenset({i}), set()
            for k in range(1, (hi if hi is not None else lo) + 1):
                if k - 1 >= lo:
                    done |= level
                level = frozenset(j for p in level for j in ends(item, p))
            done |= level
            if hi is None:  # any number of further iterations
                todo = list(level)
                while todo:
                    for j in ends(item, todo.pop()):
                        if j not in done:
                            done.add(j)
                            todo.append(j)
            out = frozenset(done)
        memo[key] = out
        return out

    return len(text) in ends(rules[0], 0)


@ORACLE_SETTINGS
@given(rules=counted_grammars(recursive=False, repeats=COUNTED_RE), seed=st.integers(0, 2**16))
def test_counted_repetition_agrees_with_re(rules, seed):
    artifact = compiled_or_skip(rules, SMALL)
    texts = inputs(rules, seed, budget=400)
    rng = random.Random(seed)
    walked = {sample(artifact, rng, max_bytes=300) for _ in range(6)} - {None}
    for text in texts:
        expected = matches(rules, text)
        assert check(artifact, text.encode("utf-8")).accepted == expected, (
            f"{text!r}\n{to_trg(rules)}"
        )
    for data in walked:  # the stepper's own members are members for the oracle too
        assert matches(rules, data.decode("utf-8", "surrogateescape")), f"{data!r}\n{to_trg(rules)}"


def test_the_position_oracle_agrees_with_re_on_unambiguous_patterns():
    rules = (("seq", (("rep", ("cls", "ab", False), 2, 5), ("lit", "c"))),)
    pattern = re.compile(to_regex(rules))
    for n in range(8):
        for text in ("a" * n + "c", "ab" * n + "c", "b" * n):
            assert matches(rules, text) == (pattern.fullmatch(text) is not None), text


@settings(ORACLE_SETTINGS, max_examples=50)  # Earley on counted grammars: ~1 s per example
@given(rules=counted_grammars(recursive=True, repeats=COUNTED_LARK), seed=st.integers(0, 2**16))
def test_counted_repetition_inside_recursion_agrees_with_earley(rules, seed):
    artifact = compiled_or_skip(rules, SMALL)
    parser = Lark(to_lark(rules), parser="earley", lexer="dynamic")
    for text in inputs(rules, seed, budget=300):
        data = text.encode("utf-8")
        expected = earley_accepts(parser, text)
        assert check(artifact, data).accepted == expected, f"{text!r}\n{to_trg(rules)}"
        if expected:
            assert all(check(artifact, data[:k], prefix=True).accepted for k in range(len(data)))


@pytest.mark.parametrize(("recursive", "repeats"), [(False, COUNTED_RE), (True, COUNTED_LARK)])
def test_generated_counted_grammars_really_use_counters(recursive, repeats):
    """The oracle tests above are meaningful only if most grammars compile and many of them
    hold a counter (a repeat machine), including inside recursion."""
    choose = _RandomChooser(random.Random(99))
    compiled = counted = 0
    total = 60
    for _ in range(total):
        rules = counted_grammar(choose, recursive, repeats)
        try:
            artifact = compile_grammar(to_trg(rules), limits=SMALL)
        except TrgcError as error:
            assert error.code in REFUSALS | {"E_LIMIT_STATES", "E_LIMIT_OPERATIONS"}, str(error)
            continue
        compiled += 1
        counted += _has_counter(artifact)
    assert compiled / total >= 0.5, f"only {compiled} of {total} compile"
    assert counted / total >= 0.4, f"only {counted} of {total} use a counter"


@pytest.mark.parametrize(
    "source",
    [
        '%trg 1\ns ::= "(" ( [a-z] | "-" [0-9] ){2,77} ")" ;',  # m < n
        '%trg 1\ns ::= ( "ab" [xy] ){50} ";" ;',  # m = n
        '%trg 1\ns ::= ( ( "a" [bc] ){40} ";" ){3,5} "." ;',  # nested counters
        '%trg 1\ns ::= "[" ( s | "x" ){0,60} "]" ;',  # a counter inside recursion
    ],
)
def test_hand_written_counters_are_exact(source):
    artifact = compile_grammar(source)
    assert _has_counter(artifact)
    pattern_of = {
        '%trg 1\ns ::= "(" ( [a-z] | "-" [0-9] ){2,77} ")" ;': r"\((?:[a-z]|-[0-9]){2,77}\)",
        '%trg 1\ns ::= ( "ab" [xy] ){50} ";" ;': r"(?:ab[xy]){50};",
        '%trg 1\ns ::= ( ( "a" [bc] ){40} ";" ){3,5} "." ;': r"(?:(?:a[bc]){40};){3,5}\.",
    }
    rng = random.Random(7)
    members = {sample(artifact, rng, max_bytes=700) for _ in range(40)} - {None}
    assert members
    pattern = pattern_of.get(source)
    for data in sorted(members):
        text = data.decode()
        if pattern is not None:
            assert re.fullmatch(pattern, text), text
        for cut in range(1, min(len(data), 200), 7):  # near misses: a character dropped
            shorter = data[:cut] + data[cut + 1 :]
            if pattern is not None:
                expected = re.fullmatch(pattern, shorter.decode()) is not None
                assert check(artifact, shorter).accepted == expected, shorter
    if pattern is None:  # brackets: [x...x] with 0..60 items per level, nested
        assert check(artifact, b"[" + b"x" * 60 + b"]").accepted
        assert not check(artifact, b"[" + b"x" * 61 + b"]").accepted
        assert check(artifact, b"[[" + b"x" * 60 + b"]" + b"x" * 59 + b"]").accepted
        assert not check(artifact, b"[[" + b"x" * 60 + b"]" + b"x" * 60 + b"]").accepted


# ------------------------------------------------------------------ size does not depend on n


def _size(artifact) -> tuple[int, int]:
    return artifact.metadata["stats"]["states"], len(artifact.to_bytes())


@pytest.mark.parametrize(
    ("make", "smallest"),
    [
        (lambda n: {"type": "string", "maxLength": n}, 1),
        (lambda n: {"type": "string", "minLength": n}, 1),
        (lambda n: {"type": "string", "minLength": n, "maxLength": n}, 1),
        # one item at most needs no counter at all: "[" item? "]"
        (lambda n: {"type": "array", "items": {"type": "boolean"}, "maxItems": n}, 2),
        (lambda n: {"type": "array", "items": {"type": "integer"}, "minItems": n}, 2),
    ],
)
def test_schema_bounds_do_not_change_the_tables_size(make, smallest):
    sizes = {n: _size(compile_schema(make(n))) for n in (smallest, 10, 1000, 1_000_000)}
    assert len(set(sizes.values())) == 1, sizes


def test_grammar_bounds_do_not_change_the_tables_size():
    sizes = {
        n: _size(compile_grammar(f'%trg 1\ns ::= "<" [a-z]{{0,{n}}} ">" ;'))
        for n in (100, 1000, 1_000_000)
    }
    assert len(set(sizes.values())) == 1, sizes


def test_the_default_repetition_limit_is_2_to_the_20():
    assert Limits().repetition == 2**20
    compile_schema({"type": "string", "maxLength": 2**20})
    with pytest.raises(TrgcError) as err:
        compile_schema({"type": "string", "maxLength": 2**20 + 1})
    assert err.value.code == "E_LIMIT_REPETITION"


def test_long_strings_are_checked_exactly():
    artifact = compile_schema({"type": "string", "minLength": 3000, "maxLength": 5000})
    for n, ok in ((2999, False), (3000, True), (5000, True), (5001, False)):
        assert check(artifact, json.dumps("é" * n).encode()).accepted is ok, n


def _optional_objects(depth: int) -> dict:
    schema: dict = {"type": "integer"}
    for _ in range(depth):
        schema = {
            "type": "object",
            "properties": {"a": {"type": "boolean"}, "b": schema, "c": {"type": "null"}},
        }
    return schema


def _integer_arrays(depth: int) -> dict:
    schema: dict = {"type": "integer", "minimum": 0, "maximum": 9}
    for _ in range(depth):
        schema = {"type": "array", "items": schema, "maxItems": 4}
    return schema


@pytest.mark.parametrize(("make", "deep"), [(_optional_objects, 64), (_integer_arrays, 32)])
def test_nesting_grows_the_artifact_linearly(make, deep):
    half, full = (_size(compile_schema(make(d)))[1] for d in (deep // 2, deep))
    base = _size(compile_schema(make(1)))[1]
    assert full - half <= 1.2 * (half - base) + 4096, (base, half, full)


def test_deep_optional_objects_compile_within_the_nesting_limit_and_check():
    artifact = compile_schema(_optional_objects(64), whitespace="compact")
    inner: object = 7
    for _ in range(64):
        inner = {"a": True, "b": inner}
    assert check(artifact, json.dumps(inner, separators=(",", ":")).encode()).accepted
    assert not check(artifact, json.dumps({"b": {"c": None, "a": True}}).encode()).accepted
    with pytest.raises(TrgcError) as err:  # what stops deeper schemas is the nesting limit
        compile_schema(_optional_objects(64), limits=Limits(nesting=100))
    assert err.value.code == "E_LIMIT_NESTING"
