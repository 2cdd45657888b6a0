"""The grammars shipped in grammars/: they analyse cleanly, compile without predictive
conflicts, and accept and reject the inputs their comments promise."""

from __future__ import annotations

from pathlib import Path

import pytest

from trgc.artifact.check import check
from trgc.artifact.stepper import initial, is_accepting, step
from trgc.compiler.build import compile_grammar
from trgc.grammar.analysis import analyze
from trgc.grammar.parser import parse_grammar
from trgc.limits import Budget

GRAMMARS = Path(__file__).resolve().parents[1] / "grammars"
MINE = ("json", "arith", "toolcall", "sexpr", "logic", "csv")

_compiled: dict[str, object] = {}


def artifact(name: str):
    if name not in _compiled:
        _compiled[name] = compile_grammar(
            (GRAMMARS / f"{name}.trg").read_bytes(), source=f"{name}.trg"
        )
    return _compiled[name]


@pytest.mark.parametrize("path", sorted(GRAMMARS.glob("*.trg")), ids=lambda p: p.name)
def test_every_shipped_grammar_passes_strict_analysis(path):
    grammar = parse_grammar(path.read_bytes(), source=path.name)
    result = analyze(grammar, strict=True, budget=Budget(10_000_000))
    assert all(result.reachable)


@pytest.mark.parametrize("name", MINE)
def test_grammar_compiles(name):
    art = artifact(name)
    assert art.metadata["source_kind"] == "trg"


CASES = {
    "json": (
        [
            b'{"a":[1,2]}',
            b' { "a" : [ 1 , -2.5 , "x\\u00e9" , true , null , { } , [ ] ] } \n',
            '"é😀"'.encode(),
            b"0",
            b"[[[[]]]]",
            b'{"k":{"k":{"k":"v"}}}',
        ],
        [
            b'{"a":1,}',
            b"01",
            b"[1 2]",
            b'{"a" 1}',
            b'"\x01"',
            b"1e5",
            b'"\xed\xa0\x80"',
            b"[",
            b"tru",
            b"{'a':1}",
            b'"\\x"',
        ],
    ),
    "arith": (
        [b"1+2*3", b" -(1.5 - -2) % 4 / (3) ", b"((1))", b"7"],
        [b"1+", b"1 2", b"(1", b"1**2", b"", b"()", b"1.", b"+1"],
    ),
    "sexpr": (
        [
            b"(define (f x) (+ x 1))",
            '(λ (α β) \'名前 "s\\n" -5 - +a) ; c\n[1 2.5]'.encode(),
            b"",
            "(🙂 -)".encode(),
            b"  \n",
        ],
        [b"(a(b))", b"(a", b"+5a", b'"x', b")", b"(a]", b"; no newline"],
    ),
    "logic": (
        [
            "¬(p ∧ q) → ¬p ∨ ¬q".encode(),
            b"!a & b -> c <-> d",
            "⊤∧⊥".encode(),
            "α1∨β'".encode(),
            "Ж ↔ ж".encode(),
        ],
        [b"a b", b"(a", "a ∧".encode(), b"1a", b"a -", "p∧∧q".encode()],
    ),
    "csv": (
        [b'a,b,c\r\n1,"x, ""y""\n z",3\n', "é,ü\n".encode(), b"", b",,", b'""'],
        [b'"a"b', b'"a', b'a"b', b"a\rb"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_membership(name):
    art = artifact(name)
    good, bad = CASES[name]
    for data in good:
        assert check(art, data).accepted, data
    for data in bad:
        assert not check(art, data).accepted, data


def _run(art, items) -> bool:
    """Feed bytes and special-token names through the reference stepper; accepted at the end?"""
    frames = initial(art)
    for item in items:
        symbols = (
            [art.special_symbol(item)]
            if isinstance(item, str)
            else [int(art.byte_class[b]) for b in item]
        )
        for symbol in symbols:
            if symbol is None:
                return False
            frames = step(art, frames, symbol)
            if frames is None:
                return False
    return is_accepting(art, frames)


def test_toolcall_envelope():
    art = artifact("toolcall")
    assert set(art.specials) == {"<tool_call>", "</tool_call>"}
    body = b'\n{"name": "get_weather", "arguments": {"city": "Z\xc3\xbcrich", "days": [1, 2]}}\n'
    assert _run(art, ["<tool_call>", body, "</tool_call>"])
    assert _run(art, ["<tool_call>", b'{"name":"f","arguments":{}}', "</tool_call>"])
    assert not _run(art, [body, "</tool_call>"])  # the opening special token is required
    assert not _run(art, ["<tool_call>", body])  # so is the closing one
    assert not _run(art, ["<tool_call>", b'{"arguments":{},"name":"f"}', "</tool_call>"])
    assert not _run(art, ["<tool_call>", b'{"name":"9f","arguments":{}}', "</tool_call>"])
    assert not _run(art, ["<tool_call>", b'{"name":"f","arguments":[]}', "</tool_call>"])
    assert not check(art, body).accepted  # bytes alone never contain a special token


def test_json_nesting_is_bounded_by_max_depth():
    art = artifact("json")
    assert art.max_depth == 64
    assert check(art, b"[" * 31 + b"]" * 31).accepted
    assert check(art, b'{"a":' * 31 + b"1" + b"}" * 31).accepted
    assert not check(art, b"[" * 32 + b"]" * 32).accepted
    assert not check(art, b'{"a":' * 32 + b"1" + b"}" * 32).accepted


def test_arith_nesting_matches_its_comment():
    art = artifact("arith")
    assert check(art, b"(" * 41 + b"1" + b")" * 41).accepted
    assert not check(art, b"(" * 42 + b"1" + b")" * 42).accepted
