"""Membership oracle: `check` on compiled random grammars agrees with lark's Earley parser
(any grammar) and with Python's `re` (grammars without recursion).

Grammars are random expression trees over a tiny alphabet, rendered three ways (trg-1, lark,
regex). Those trgc rejects as non-predictive (or otherwise not compilable by design) are
skipped with `assume`; `test_many_generated_grammars_compile` keeps that share honest. Inputs
are random short strings plus members sampled from the grammar, so both answers are exercised.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from lark import Lark
from lark.exceptions import LarkError

from trgc.artifact.check import check
from trgc.compiler.build import compile_grammar
from trgc.errors import TrgcError

# Codes trgc uses to refuse a grammar by design (not bugs): the oracle skips those grammars.
REFUSALS = {
    "E_PREDICTIVE_CONFLICT",
    "E_NULLABLE_CYCLE",
    "E_NULLABLE_REPETITION",
    "E_LEFT_RECURSION",
    "E_EMPTY_LANGUAGE",
}
LETTERS = "abc"
INPUT_ALPHABET = "abc()é"

# ------------------------------------------------------------------ random grammar trees
# ("lit", text) | ("cls", chars, negated) | ("ref", j) | ("wrap", j)  ["(" rule j ")"]
# | ("seq", items) | ("alt", items) | ("rep", item, lo, hi-or-None)


class _HypothesisChooser:
    def __init__(self, draw) -> None:
        self.draw = draw

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))


class _RandomChooser:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick(self, options):
        return self.rng.choice(options)

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


REPEATS = [(0, None), (1, None), (0, 1), (2, 2), (1, 3), (0, 2), (2, None)]


def expr(choose, rule: int, n_rules: int, recursive: bool, depth: int, repeats=REPEATS):
    choices = ["lit", "lit", "cls"]
    if rule + 1 < n_rules:
        choices.append("ref")
    if recursive:
        choices += ["wrap", "wrap"]
    if depth > 0:
        choices += ["seq", "alt", "rep"]
    kind = choose.pick(choices)
    if kind == "lit":
        return ("lit", "".join(choose.pick(LETTERS) for _ in range(choose.integer(1, 2))))
    if kind == "cls":
        chars = "".join(sorted({choose.pick(LETTERS) for _ in range(choose.integer(1, 2))}))
        return ("cls", chars, choose.pick([False, True]))
    if kind == "ref":
        return ("ref", choose.integer(rule + 1, n_rules - 1))
    if kind == "wrap":  # mostly back edges, which make the rule recursive
        return (
            "wrap",
            choose.integer(0, rule)
            if choose.pick([True, True, False])
            else choose.integer(0, n_rules - 1),
        )
    if kind in ("seq", "alt"):
        n = choose.integer(2, 3)
        return (
            kind,
            tuple(expr(choose, rule, n_rules, recursive, depth - 1, repeats) for _ in range(n)),
        )
    lo, hi = choose.pick(repeats)
    return ("rep", expr(choose, rule, n_rules, recursive, depth - 1, repeats), lo, hi)


def random_grammar(choose, recursive: bool, repeats=REPEATS):
    """Rules r0..rN; rule i references later rules plainly and any rule inside "(" ")"
    (`wrap`), so no rule is left-recursive. With `recursive`, every rule also gets a
    wrap-free alternative, so that recursion has a base case."""
    n_rules = choose.integer(1, 3)
    rules = []
    for i in range(n_rules):
        body = expr(choose, i, n_rules, recursive, 2, repeats)
        if recursive:
            body = ("alt", (expr(choose, i, n_rules, False, 1, repeats), body))
        rules.append(body)
    return tuple(rules)


@st.composite
def grammars(draw, recursive: bool, repeats=REPEATS):
    return random_grammar(_HypothesisChooser(draw), recursive, repeats)


def to_trg(rules) -> str:
    def render(node) -> str:
        kind = node[0]
        if kind == "lit":
            return f'"{node[1]}"'
        if kind == "cls":
            return f"[{'^' if node[2] else ''}{node[1]}]"
        if kind == "ref":
            return f"r{node[1]}"
        if kind == "wrap":
            return f'"(" r{node[1]} ")"'
        if kind == "seq":
            return " ".join(f"( {render(c)} )" for c in node[1])
        if kind == "alt":
            return "( " + " | ".join(render(c) for c in node[1]) + " )"
        item, lo, hi = node[1], node[2], node[3]
        suffix = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((lo, hi))
        if suffix is None:
            suffix = f"{{{lo},}}" if hi is None else f"{{{lo},{hi}}}"
        return f"( {render(item)} ){suffix}"

    lines = ["%trg 1", "%start r0"] + [f"r{i} ::= {render(body)} ;" for i, body in enumerate(rules)]
    return "\n".join(lines) + "\n"


def to_lark(rules) -> str:
    """The grammar in lark's syntax. A counted repetition names its item as a rule of its own
    and spells the bounded part as nested optionals, so the grammar stays linear in the bounds
    (lark's `~ lo..hi` expands into one alternative per count, which nesting multiplies)."""
    extra: list[str] = []

    def counted(item: str, lo: int, hi: int | None) -> str:
        name = f"c{len(extra)}"
        extra.append(f"{name}: {item}")
        required = " ".join([name] * lo)
        if hi is None:
            return f"{required} {name}*"
        optional = ""
        for _ in range(hi - lo):
            optional = f"({name} {optional})?"
        return f"{required} {optional}"

    def render(node) -> str:
        kind = node[0]
        if kind == "lit":
            return " ".join(f'"{ch}"' for ch in node[1])
        if kind == "cls":
            return f"/[{'^' if node[2] else ''}{node[1]}]/s"
        if kind == "ref":
            return f"r{node[1]}"
        if kind == "wrap":
            return f'"(" r{node[1]} ")"'
        if kind == "seq":
            return " ".join(f"({render(c)})" for c in node[1])
        if kind == "alt":
            return "(" + " | ".join(render(c) for c in node[1]) + ")"
        item, lo, hi = f"({render(node[1])})", node[2], node[3]
        if hi is None and lo == 0:
            return f"{item}*"
        return f"({counted(item, lo, hi)})"

    lines = ["start: r0"] + [f"r{i}: {render(body)}" for i, body in enumerate(rules)]
    return "\n".join(lines + extra) + "\n"


def to_regex(rules) -> str:
    def render(node) -> str:
        kind = node[0]
        if kind == "lit":
            return re.escape(node[1])
        if kind == "cls":
            return f"[{'^' if node[2] else ''}{node[1]}]"
        if kind == "ref":
            return f"(?:{render(rules[node[1]])})"
        if kind in ("seq", "alt"):
            return ("|" if kind == "alt" else "").join(f"(?:{render(c)})" for c in node[1])
        hi = "" if node[3] is None else str(node[3])
        return f"(?:{render(node[1])}){{{node[2]},{hi}}}"

    return render(rules[0])


def sample(rules, rng: random.Random, budget: int = 40) -> str | None:
    """A random member of the language (None if the expansion ran too deep)."""
    out: list[str] = []
    work: list = [rules[0]]
    while work:
        budget -= 1
        if budget < 0:
            return None
        node = work.pop()
        if isinstance(node, str):
            out.append(node)
            continue
        kind = node[0]
        if kind == "lit":
            out.append(node[1])
        elif kind == "cls":
            pool = [c for c in INPUT_ALPHABET if (c in node[1]) != node[2]]
            out.append(rng.choice(pool))
        elif kind == "ref":
            work.append(rules[node[1]])
        elif kind == "wrap":
            work.extend([")", rules[node[1]], "("])
        elif kind == "seq":
            work.extend(reversed(node[1]))
        elif kind == "alt":
            work.append(rng.choice(node[1]))
        else:
            hi = node[3] if node[3] is not None else node[2] + 2
            work.extend([node[1]] * rng.randint(node[2], hi))
    return "".join(out)


def compiled_or_skip(rules, limits=None):
    try:
        return compile_grammar(to_trg(rules), limits=limits)
    except TrgcError as error:
        assert error.code in REFUSALS | {"E_LIMIT_STATES", "E_LIMIT_OPERATIONS"}, (
            f"{error}\n{to_trg(rules)}"
        )
        assume(False)


def inputs(rules, seed: int, budget: int = 40) -> list[str]:
    rng = random.Random(seed)
    found = {"", *(sample(rules, rng, budget) for _ in range(12))} - {None}
    found |= {
        "".join(rng.choice(INPUT_ALPHABET) for _ in range(rng.randint(1, 6))) for _ in range(12)
    }
    # near-misses: members with one character changed or dropped
    for text in sorted(t for t in found if t):
        i = rng.randrange(len(text))
        found.add(text[:i] + text[i + 1 :])
        found.add(text[:i] + rng.choice(INPUT_ALPHABET) + text[i + 1 :])
    return sorted(found)


def earley_accepts(parser: Lark, text: str) -> bool:
    try:
        parser.parse(text)
    except LarkError:
        return False
    return True


ORACLE_SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)


@ORACLE_SETTINGS
@given(rules=grammars(recursive=True), seed=st.integers(0, 2**16))
def test_check_agrees_with_earley(rules, seed):
    artifact = compiled_or_skip(rules)
    parser = Lark(to_lark(rules), parser="earley", lexer="dynamic")
    for text in inputs(rules, seed):
        data = text.encode("utf-8")
        expected = earley_accepts(parser, text)
        result = check(artifact, data)
        assert result.accepted == expected, f"{text!r}\n{to_trg(rules)}"
        # every proper prefix of a member is a viable prefix
        if expected:
            assert all(check(artifact, data[:k], prefix=True).accepted for k in range(len(data)))


@ORACLE_SETTINGS
@given(rules=grammars(recursive=False), seed=st.integers(0, 2**16))
def test_check_agrees_with_re_without_recursion(rules, seed):
    artifact = compiled_or_skip(rules)
    assert len(artifact.machines) == 1  # no recursion: one DFA
    pattern = re.compile(to_regex(rules), re.DOTALL)
    for text in inputs(rules, seed):
        expected = pattern.fullmatch(text) is not None
        assert check(artifact, text.encode("utf-8")).accepted == expected, (
            f"{text!r}\n{to_trg(rules)}"
        )


@pytest.mark.parametrize("recursive", [False, True])
def test_many_generated_grammars_compile(recursive):
    """The oracle tests are only meaningful if a good share of generated grammars compile."""
    choose = _RandomChooser(random.Random(1234))
    compiled = with_calls = 0
    total = 150
    for _ in range(total):
        rules = random_grammar(choose, recursive)
        try:
            artifact = compile_grammar(to_trg(rules))
        except TrgcError as error:
            assert error.code in REFUSALS | {"E_LIMIT_STATES", "E_LIMIT_OPERATIONS"}, str(error)
            continue
        compiled += 1
        with_calls += any(m.calls.shape[0] for m in artifact.machines)
    assert compiled / total >= 0.5, f"only {compiled} of {total} generated grammars compile"
    if recursive:  # recursion must really reach the pushdown part (call edges), not only DFAs
        assert with_calls / total >= 0.2, (
            f"only {with_calls} of {total} compiled grammars use calls"
        )
