"""Machines with calls: JSON, the predictive check, limits, budget and output determinism."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from test_automata_support import compile_source, walk
from trgc.errors import TrgcError
from trgc.limits import Budget, Limits

ROOT = Path(__file__).resolve().parents[1]

JSON_GRAMMAR = r"""
%start value
value   ::= object | array | string | number | "true" | "false" | "null" ;
object  ::= "{" ( member ( "," member )* )? "}" ;
member  ::= string ":" value ;
array   ::= "[" ( value ( "," value )* )? "]" ;
string  ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" hex{4} ) )* "\"" ;
hex     ::= [0-9a-fA-F] ;
number  ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ;
"""


def test_json_grammar_compiles_to_four_machines():
    tables = compile_source(JSON_GRAMMAR)
    # start rule first, then breadth-first by first call with symbols ascending ('[' < '{')
    assert tables.machine_rules == ("value", "array", "object", "member")
    assert [m.name for m in tables.machines] == list(tables.machine_rules)
    assert tables.specials == ()
    assert tables.stats["states"] == sum(m.n_states for m in tables.machines)
    for machine in tables.machines:
        assert machine.next.shape == (machine.n_states, tables.n_symbols)
        assert machine.calls.shape[1] == 2
        # call edges are numbered in order of first use
        uses = [-2 - v for v in machine.next.ravel().tolist() if v <= -2]
        firsts = []
        for k in uses:
            if k not in firsts:
                firsts.append(k)
        assert firsts == list(range(len(machine.calls)))


@pytest.mark.parametrize(
    "text",
    [
        '{"a":[1,2.5,-0.1,{"b":null}],"c":"\\u00e9x"}',
        "[]",
        "{}",
        "[[[true]]]",
        '"h\u00e9\u2713"',
        "-0.25",
        '[{},[],""]',
    ],
)
def test_json_accepts(text):
    tables = compile_source(JSON_GRAMMAR)
    assert walk(tables, text.encode())
    assert json.loads(text) is not None or text == "null"


@pytest.mark.parametrize(
    "data", [b"[1,]", b"01", b'{"a" :1}', b'"\xed\xa0\x80"', b"{", b'"\\x"', b"[1 ]", b"tru"]
)
def test_json_rejects(data):
    assert not walk(compile_source(JSON_GRAMMAR), data)


def test_json_compiles_in_little_work():
    """Work, not seconds (speed is benchmarks/bench_compile.py's): the JSON grammar is charged
    about 14,000 operations; a construction that went quadratic would be far above this."""
    budget = Budget(Limits().operations)
    compile_source(JSON_GRAMMAR, budget=budget)
    assert budget.used < 100_000


def test_specials_are_symbols_after_the_classes():
    tables = compile_source(
        'call ::= special("<tool_call>") v special("</tool_call>") ;\nv ::= "[" v? "]" ;'
    )
    assert tables.specials == ("</tool_call>", "<tool_call>")
    assert tables.n_symbols == tables.n_classes + 2
    assert walk(tables, "<tool_call>", b"[[]]", "</tool_call>")
    assert not walk(tables, "<tool_call>", b"[[]", "</tool_call>")
    assert not walk(tables, b"[]")


def test_nullable_recursive_call_has_a_bypass():
    tables = compile_source('s ::= "<" p ">" ;\np ::= ( "(" p ")" p )? ;')
    for text, ok in [
        (b"<>", True),
        (b"<()>", True),
        (b"<(())()>", True),
        (b"<(>", False),
        (b"<)(>", False),
    ]:
        assert walk(tables, text) == ok, text


def test_start_rule_is_machine_zero_even_when_not_recursive():
    tables = compile_source('top ::= "#" v ;\nv ::= "a" | "(" v ")" ;')
    assert tables.machine_rules == ("top", "v")
    assert walk(tables, b"#((a))") and not walk(tables, b"#((a)")


# --- predictive conflicts ---------------------------------------------------------------------


def _conflict(source: str) -> TrgcError:
    with pytest.raises(TrgcError) as info:
        compile_source(source)
    assert info.value.code == "E_PREDICTIVE_CONFLICT"
    return info.value


def test_conflicting_alternatives_across_a_recursive_call():
    err = _conflict('a ::= "x" a | "x" "x" ;')
    (item,) = err.details["conflicts"]
    assert item["rule"] == "a"
    assert item["after"] == '"x"'
    assert item["symbol"] == "0x78 'x'"
    assert item["actions"] == ["shift in rule a", "call a"]
    assert "0x78 'x'" in err.message and err.span.line == 2


def test_common_prefixes_across_calls_are_factored_not_conflicts():
    # "x" a | "x" "y" is LL(2) but the DFA factors the common prefix: deterministic
    tables = compile_source('a ::= "x" a | "x" "y" ;')
    assert walk(tables, b"xxxy") and not walk(tables, b"xx")


def test_return_shift_conflict_names_the_caller():
    err = _conflict('s ::= a "x" ;\na ::= "(" a ")" "x"? | "y" ;')
    (item,) = err.details["conflicts"]
    assert item["rule"] == "a"
    assert item["after"] == '"(" a ")"'
    assert item["symbol"] == "0x78 'x'"
    assert item["actions"][0] == "shift in rule a"
    assert item["actions"][1].startswith("return from a (rule s continues with it after a")


def test_long_conflict_paths_show_their_end():
    err = _conflict('a ::= "' + "q" * 100 + '" ( "x" a | "x" "q" ) ;')
    after = err.details["conflicts"][0]["after"]
    assert after == '... "' + "q" * 39 + 'x"'


def test_two_calls_with_overlapping_first_conflict():
    err = _conflict('s ::= a | b ;\na ::= "x" a | "y" ;\nb ::= "x" b | "z" ;')
    actions = [item["actions"] for item in err.details["conflicts"]]
    assert ["call a", "call b"] in actions


def test_all_conflicts_are_collected_then_raised_once():
    letters = " | ".join(f'"{c}"' for c in "abcdefghijkl")
    err = _conflict(f's ::= a | b ;\na ::= ({letters}) a | "0" ;\nb ::= ({letters}) b | "1" ;')
    assert err.details["count"] == 12
    assert len(err.details["conflicts"]) == 10
    assert "(and 11 more)" in err.message
    # a byte range with one behaviour is reported once, as a range
    err = _conflict('s ::= a | b ;\na ::= [a-z] a | "0" ;\nb ::= [a-z] b | "1" ;')
    assert err.details["conflicts"][0]["symbol"] == "0x61 'a'..0x7a 'z'"


def test_special_token_conflict_is_named():
    err = _conflict('s ::= a special("<e>")? ;\na ::= "(" a ")" special("<e>")? | "y" ;')
    assert err.details["conflicts"][0]["symbol"] == 'special("<e>")'


def test_unproductive_start_is_an_empty_language():
    with pytest.raises(TrgcError) as info:
        compile_source('a ::= "x" a ;')
    assert info.value.code == "E_EMPTY_LANGUAGE"


def test_unproductive_alternative_is_trimmed():
    tables = compile_source('s ::= "a" | "b" t ;\nt ::= "c" t ;')
    assert tables.machine_rules == ("s",)
    assert walk(tables, b"a") and not walk(tables, b"b")
    assert int(tables.machines[0].next[0, tables.byte_class[ord("b")]]) == -1


# --- limits and budget ------------------------------------------------------------------------


def test_state_explosion_fails_fast():
    """The subset construction stops at the states limit after work bounded by that limit
    (measured in charged operations, not in seconds): an eighth of the operations limit."""
    budget = Budget(Limits().operations)
    with pytest.raises(TrgcError) as info:
        compile_source('s ::= ("a"|"b")* "a" ("a"|"b"){40} ;', budget=budget)
    assert info.value.code == "E_LIMIT_STATES"
    assert budget.used < Limits().operations // 8


def test_nested_repetition_is_counted_not_copied():
    # a^(10^9) in three counters: tables of a handful of states, the language exact
    budget = Budget(Limits().operations)
    tables = compile_source('s ::= (("a"{1000}){1000}){1000} ;', budget=budget)
    assert tables.stats["states"] < 20
    assert budget.used < 10_000  # no work proportional to the bounds
    small = compile_source('s ::= (("a"{70}){34}){34} ";" ;')
    assert [m.kind for m in small.machines].count(2) == 3
    for n in (0, 70, 80919, 80920, 80921):
        assert walk(small, b"a" * n + b";") == (n == 80920), n


def test_repetition_machines_are_named_after_their_rule_in_arena_order():
    """`value{}`, then `value{}#2`, ... per rule (the rule whose body holds the repetition,
    not the rule it is inlined into); a rule name cannot hold braces, so the names never meet
    another rule's."""
    tables = compile_source('s ::= t "a"{70} ";" "b"{71} ";" "c"{72} ;\nt ::= "d"{73} "e"{74} ;')
    names = sorted(m.name for m in tables.machines if m.kind == 2)
    assert names == ["s{}", "s{}#2", "s{}#3", "t{}", "t{}#2"]


def test_copying_is_refused_before_it_allocates():
    # after a conflict the repetition is copied; the copy is checked against the limit first
    budget = Budget(Limits().operations)
    with pytest.raises(TrgcError) as info:
        # both counters conflict (2 <= iterations < 1000 can restart or return on "a"), so
        # both are copied: 999 copies of a 1000-copy body
        compile_source('s ::= ("a"{2,1000}){1000} ;', budget=budget)
    assert info.value.code == "E_LIMIT_STATES"
    assert budget.used < 1_000_000  # refused before the million copied states are built


def test_long_optional_chain_is_one_counter():
    # ("a"?){1000} is a{0,1000}: the body is nullable, so its machine's minimum is one iteration
    tables = compile_source('s ::= ("a"?){1000} ;')
    assert tables.machines[1].kind == 2
    assert tables.machines[0].call_bounds.tolist() == [[1, 1000]]
    assert tables.stats["states"] < 10
    assert walk(tables, b"a" * 1000) and walk(tables, b"") and not walk(tables, b"a" * 1001)


def test_transitions_limit():
    with pytest.raises(TrgcError) as info:
        compile_source('s ::= "' + "abcdefghij" * 10 + '" ;', limits=Limits(transitions=50))
    assert info.value.code == "E_LIMIT_TRANSITIONS"


def test_transitions_limit_also_covers_resolved_calls():
    # few DFA edges, but every call becomes one entry per symbol of the callee's FIRST
    alts = " | ".join(f'"{c}" "{i}"' for i, c in enumerate("abcdefghij"))
    source = f's ::= "<" a* ">" ;\na ::= {alts} | "[" a* "]" ;'
    assert compile_source(source).stats["transitions"] == 46
    with pytest.raises(TrgcError) as info:
        compile_source(source, limits=Limits(transitions=45))
    assert info.value.code == "E_LIMIT_TRANSITIONS"
    assert "compiled tables" in info.value.message


def test_operations_budget():
    with pytest.raises(TrgcError) as info:
        compile_source(JSON_GRAMMAR, budget=Budget(2_000))
    assert info.value.code == "E_LIMIT_OPERATIONS"


def test_operations_are_counted():
    tables = compile_source(JSON_GRAMMAR)
    assert 0 < tables.stats["operations"] < 1_000_000


# --- determinism ------------------------------------------------------------------------------

_DIGEST_SCRIPT = """
import hashlib, sys
sys.path.insert(0, sys.argv[1])
from test_automata_support import compile_source
h = hashlib.sha256()
for source in sys.argv[2:]:
    t = compile_source(source)
    h.update(t.byte_class.tobytes())
    h.update(repr((t.n_classes, t.specials, t.machine_rules)).encode())
    for m in t.machines:
        h.update(m.accepting.tobytes() + m.next.tobytes() + m.calls.tobytes())
print(h.hexdigest())
"""

DETERMINISM_SOURCES = [
    JSON_GRAMMAR,
    'call ::= special("<b>") v special("<a>") ;\nv ::= "[" ( v | w )* "]" | [\\u{80}-\\u{10FFFF}] ;\nw ::= "{" v? "}" ;',
]


def test_tables_identical_under_different_hash_seeds():
    digests = set()
    for seed in ("0", "1", "4242"):
        result = subprocess.run(
            [sys.executable, "-c", _DIGEST_SCRIPT, str(ROOT / "tests"), *DETERMINISM_SOURCES],
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(result.stdout.strip())
    assert len(digests) == 1
    assert len(hashlib.sha256(b"").hexdigest()) == len(digests.pop())


# --- with the real analysis stage and lowered-schema locations ---------------------------------


def test_real_analysis_gives_the_same_tables():
    from test_automata_support import mini_analysis
    from trgc.automata.machines import build_tables
    from trgc.grammar.analysis import analyze
    from trgc.grammar.parser import parse_grammar

    grammar = parse_grammar("%trg 1\n" + JSON_GRAMMAR)
    real = build_tables(
        grammar, analyze(grammar, budget=Budget(10**7)), limits=Limits(), budget=Budget(10**7)
    )
    mini = build_tables(grammar, mini_analysis(grammar), limits=Limits(), budget=Budget(10**7))
    assert real.machine_rules == mini.machine_rules
    assert real.byte_class.tolist() == mini.byte_class.tolist()
    for a, b in zip(real.machines, mini.machines, strict=True):
        assert a.next.tolist() == b.next.tolist() and a.calls.tolist() == b.calls.tolist()


def test_conflict_in_a_lowered_schema_carries_its_pointer():
    from test_automata_support import mini_analysis
    from trgc.automata.machines import build_tables
    from trgc.grammar.ast import Grammar, Kind, Rule

    g = Grammar(source_kind="trj")
    x = g.add(Kind.LITERAL, 0, 0, payload=b"x")
    ref = g.add(Kind.REF, 0, 0, payload="a")
    body = g.add(Kind.ALT, 0, 0, (g.add(Kind.SEQ, 0, 0, (x, ref)), g.add(Kind.SEQ, 0, 0, (x, x))))
    g.rules.append(Rule("a", body, 0, 0, pointer="/properties/a"))
    g.start = "a"
    with pytest.raises(TrgcError) as info:
        build_tables(g, mini_analysis(g), limits=Limits(), budget=Budget(10**6))
    assert info.value.code == "E_PREDICTIVE_CONFLICT"
    assert info.value.pointer == "/properties/a" and info.value.span is None
