"""trg-1 static analysis: name resolution, nullability, reference graph, cycles, error codes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trgc.errors import TrgcError
from trgc.grammar.analysis import Analysis, analyze, strongly_connected
from trgc.grammar.ast import Grammar, Kind, Rule
from trgc.grammar.parser import parse_grammar
from trgc.limits import Budget

HEAD = "%trg 1\n"


def run(src: str, *, strict: bool = False, budget: int = 10_000_000) -> Analysis:
    return analyze(parse_grammar(HEAD + src), strict=strict, budget=Budget(budget))


def fails(
    src: str, code: str, line: int | None = None, column: int | None = None, **kw
) -> TrgcError:
    with pytest.raises(TrgcError) as info:
        run(src, **kw)
    err = info.value
    assert err.code == code, (err.code, err.message)
    if line is not None:
        assert (err.span.line, err.span.column) == (line, column), err.span
    return err


JSON = """%start value
value   ::= object | array | string | number | "true" | "false" | "null" ;
object  ::= "{" ( member ( "," member )* )? "}" ;
member  ::= string ":" value ;
array   ::= "[" ( value ( "," value )* )? "]" ;
string  ::= "\\"" ( [^"\\\\\\x00-\\x1F] | "\\\\" ( ["\\\\/bfnrt] | "u" hex{4} ) )* "\\"" ;
hex     ::= [0-9a-fA-F] ;
number  ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ;
call    ::= special("<tool_call>") value special("</tool_call>") ;
"""


# -- results -----------------------------------------------------------------------------


def test_json_analysis():
    a = run(JSON)
    names = ["value", "object", "member", "array", "string", "hex", "number", "call"]
    assert a.rule_index == {n: i for i, n in enumerate(names)}
    assert a.start == 0
    assert a.nullable == [False] * 8
    assert a.refs == [(1, 3, 4, 6), (2,), (0, 4), (0,), (5,), (), (), (0,)]
    assert a.recursive == [True, True, True, True, False, False, False, False]
    assert a.reachable == [True] * 7 + [False]
    assert a.sccs == [(5,), (4,), (6,), (0, 1, 2, 3), (7,)]
    assert all(r in a.sccs[a.scc_of[r]] for r in range(8))


def test_nullable_fixed_point_through_chains():
    a = run(
        'a ::= b c ;\nb ::= c? ;\nc ::= d* ;\nd ::= "x" ;\ne ::= "y" | f ;\nf ::= "" ;\ng ::= "z"{0} ;'
    )
    assert a.nullable == [True, True, True, False, True, True, True]


def test_node_nullable_per_node():
    g = parse_grammar(HEAD + 'a ::= "x"? "y" ( "" | "z" ) ;')
    a = analyze(g, budget=Budget(10_000))
    by_kind = {(n.kind, n.column): a.node_nullable[i] for i, n in enumerate(g.nodes)}
    assert by_kind[(Kind.REPEAT, 7)] is True
    assert by_kind[(Kind.LITERAL, 12)] is False
    assert by_kind[(Kind.ALT, 18)] is True
    assert by_kind[(Kind.SEQ, 7)] is False


def test_direct_self_recursion_is_recursive_not_left():
    a = run('a ::= "(" a ")" | "x" ;')
    assert a.recursive == [True] and a.sccs == [(0,)]


def test_recursion_after_a_consuming_prefix_is_allowed():
    a = run('a ::= b a | "x" ;\nb ::= "y" "z"? ;')
    assert a.recursive == [True, False] and a.nullable == [False, False]


def test_sccs_are_deterministic_and_callees_first():
    src = 'm ::= a b ;\na ::= "(" b ")" | "1" ;\nb ::= "[" a "]" | "2" ;\nc ::= "c" m ;'
    a = run(src)
    assert a.sccs == [(1, 2), (0,), (3,)]
    assert a.recursive == [False, True, True, False]
    assert a == run(src)


def test_bounded_repetition_of_nullable_item_is_allowed():
    assert run('a ::= ("x"?){2,3} "y" ;').nullable == [False]


# -- phase 1: names ----------------------------------------------------------------------


def test_duplicate_rule():
    err = fails('a ::= "x" ;\nb ::= a ;\na ::= "y" ;', "E_DUPLICATE_RULE", 4, 1)
    assert "2:1" in err.message


def test_reserved_name():
    fails('special ::= "x" ;', "E_RESERVED_NAME", 2, 1)


def test_undefined_rules_are_all_collected():
    err = fails('a ::= vlue "," b ;\nvalue ::= "v" ;\nb ::= c ;', "E_UNDEFINED_RULE", 2, 7)
    assert err.hint == "did you mean 'value'?"
    listed = [(e["message"], e["line"], e["column"]) for e in err.details["errors"]]
    assert [(line, column) for _, line, column in listed] == [(2, 7), (4, 7)]


def test_undefined_start_in_source():
    fails('%start main\na ::= "x" ;', "E_UNDEFINED_START", 2, 8)


def test_undefined_start_in_ast():
    g = parse_grammar(HEAD + 'a ::= "x" ;')
    g.start = "nope"
    with pytest.raises(TrgcError) as info:
        analyze(g, budget=Budget(1000))
    assert info.value.code == "E_UNDEFINED_START"


def test_empty_grammar_in_ast():
    with pytest.raises(TrgcError) as info:
        analyze(Grammar(), budget=Budget(1000))
    assert info.value.code == "E_EMPTY_GRAMMAR"


def test_schema_rules_report_pointer_instead_of_line():
    g = Grammar(source_kind="trj")
    ref = g.add(Kind.REF, 0, 0, payload="missing")
    g.rules.append(Rule("root", ref, 0, 0, pointer="/properties/a"))
    g.start = "root"
    with pytest.raises(TrgcError) as info:
        analyze(g, budget=Budget(1000))
    assert info.value.code == "E_UNDEFINED_RULE"
    assert info.value.span is None and info.value.pointer == "/properties/a"


# -- phase 2: structure ------------------------------------------------------------------


def test_direct_left_recursion():
    err = fails('a ::= a "x" ;', "E_LEFT_RECURSION", 2, 7)
    assert err.details["cycle"] == ["a", "a"]
    assert "direct" in err.message


def test_indirect_left_recursion_reports_cycle_path():
    err = fails('a ::= b "x" ;\nb ::= a "y" | "z" ;', "E_LEFT_RECURSION", 2, 7)
    assert err.details["cycle"] == ["a", "b", "a"]
    assert "a -> b -> a" in err.message


def test_left_recursion_behind_nullable_prefix():
    err = fails('a ::= "p" b ;\nb ::= c? b "x" | "y" ;\nc ::= "c" ;', "E_LEFT_RECURSION", 3, 10)
    assert err.details["cycle"] == ["b", "b"]


def test_nullable_cycle():
    err = fails('a ::= "x" | b? a? ;\nb ::= "b" ;', "E_NULLABLE_CYCLE", 2, 16)
    assert err.details["cycle"] == ["a", "a"]


def test_indirect_nullable_cycle():
    err = fails('s ::= "s" a ;\na ::= b | "x" ;\nb ::= "y"? a "z"? ;', "E_NULLABLE_CYCLE", 3, 7)
    assert err.details["cycle"] == ["a", "b", "a"]


@pytest.mark.parametrize(
    "rep, column", [('("")*', 7), ("(b?)*", 7), ('"x" (b | "")+', 11), ("n{2,}", 7), ("n*", 7)]
)
def test_nullable_repetition(rep, column):
    fails(f'a ::= {rep} ;\nb ::= "b" ;\nn ::= "n"? ;', "E_NULLABLE_REPETITION", 2, column)


def test_unreachable_rule_only_in_strict_mode():
    src = 'a ::= "x" ;\nb ::= "y" ;\nc ::= b ;'
    a = run(src)
    assert a.reachable == [True, False, False]
    err = fails(src, "E_UNREACHABLE_RULE", 3, 1, strict=True)
    assert [e["line"] for e in err.details["errors"]] == [3, 4]


def test_structural_errors_are_collected_in_source_order():
    err = fails(
        'a ::= ("")* b ;\nb ::= b "x" | "y" ;\nc ::= "c" ;',
        "E_NULLABLE_REPETITION",
        2,
        7,
        strict=True,
    )
    assert [e["code"] for e in err.details["errors"]] == [
        "E_NULLABLE_REPETITION",
        "E_LEFT_RECURSION",
        "E_UNREACHABLE_RULE",
    ]


def test_budget_is_charged():
    src = "".join(f'r{i} ::= r{i + 1}? "x" ;\n' for i in range(200)) + 'r200 ::= "y" ;'
    with pytest.raises(TrgcError) as info:
        run(src, budget=500)
    assert info.value.code == "E_LIMIT_OPERATIONS"
    assert run(src).nullable == [False] * 201


def test_long_chains_need_no_recursion():
    n = 5_000
    src = "".join(f'r{i} ::= "(" r{i + 1} ")" | "x" ;\n' for i in range(n)) + f'r{n} ::= r0 | "y" ;'
    a = run(src, budget=50_000_000)
    assert len(a.sccs) == 1 and all(a.recursive)
    left = "".join(f'r{i} ::= r{i + 1} "x" | "z" ;\n' for i in range(n)) + f"r{n} ::= r0 ;"
    err = fails(left, "E_LEFT_RECURSION", 2, 8, budget=50_000_000)
    assert len(err.details["cycle"]) == n + 2


# -- Tarjan against a brute-force oracle -------------------------------------------------


def _reach(graph, v):
    seen, stack = {v}, [v]
    while stack:
        for w in graph[stack.pop()]:
            if w not in seen:
                seen.add(w)
                stack.append(w)
    return seen


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda n: st.lists(st.lists(st.integers(0, n - 1), max_size=4), min_size=n, max_size=n)
    )
)
def test_strongly_connected_matches_reachability(edges):
    graph = [tuple(sorted(set(e))) for e in edges]
    comps = strongly_connected(graph, Budget(10**6))
    assert sorted(v for c in comps for v in c) == list(range(len(graph)))
    reach = [_reach(graph, v) for v in range(len(graph))]
    position = {v: i for i, c in enumerate(comps) for v in c}
    for u in range(len(graph)):
        for w in range(len(graph)):
            same = w in reach[u] and u in reach[w]
            assert (position[u] == position[w]) == same
            if w in reach[u] and not same:
                assert position[w] < position[u]  # callees first


# -- random grammars against a plainly recursive oracle ----------------------------------

_ATOMS = ['"a"', '""', "[b-c]", 'special("s")']


def _expr(draw, n_rules: int, depth: int) -> str:
    choice = draw(st.integers(0, 5 if depth > 0 else 1))
    if choice == 0:
        return draw(st.sampled_from(_ATOMS))
    if choice == 1:
        return f"r{draw(st.integers(0, n_rules - 1))}"
    if choice == 2:
        return " ".join(_expr(draw, n_rules, depth - 1) for _ in range(draw(st.integers(2, 3))))
    if choice == 3:
        return (
            "( "
            + " | ".join(_expr(draw, n_rules, depth - 1) for _ in range(draw(st.integers(2, 3))))
            + " )"
        )
    op = draw(st.sampled_from(["?", "*", "+", "{2}", "{0,2}", "{1,}", "{0}"]))
    return f"( {_expr(draw, n_rules, depth - 1)} ){op}"


@st.composite
def _grammars(draw) -> str:
    n = draw(st.integers(1, 4))
    return "".join(f"r{i} ::= {_expr(draw, n, 3)} ;\n" for i in range(n))


class _Oracle:
    """Nullable, leftmost and sole references by naive recursion over the (small) AST."""

    def __init__(self, grammar: Grammar) -> None:
        self.g = grammar
        self.index = grammar.rule_index()
        self.nullable = [False] * len(grammar.rules)
        changed = True
        while changed:
            changed = False
            for r, rule in enumerate(grammar.rules):
                if not self.nullable[r] and self.null(rule.body):
                    self.nullable[r] = changed = True

    def null(self, i: int) -> bool:
        n = self.g.nodes[i]
        if n.kind == Kind.EMPTY:
            return True
        if n.kind == Kind.REF:
            return self.nullable[self.index[n.payload]]
        if n.kind == Kind.SEQ:
            return all(self.null(c) for c in n.children)
        if n.kind == Kind.ALT:
            return any(self.null(c) for c in n.children)
        if n.kind == Kind.REPEAT:
            return n.payload[0] == 0 or self.null(n.children[0])
        return False

    def lefts(self, i: int) -> set[int]:
        """Rules that can start a derivation of node i (after an empty prefix)."""
        n = self.g.nodes[i]
        if n.kind == Kind.REF:
            return {self.index[n.payload]}
        if n.kind == Kind.SEQ:
            out: set[int] = set()
            for c in n.children:
                out |= self.lefts(c)
                if not self.null(c):
                    break
            return out
        if n.kind == Kind.ALT:
            return set().union(*(self.lefts(c) for c in n.children))
        if n.kind == Kind.REPEAT:
            return set() if n.payload[1] == 0 else self.lefts(n.children[0])
        return set()

    def has_nullable_repeat(self) -> bool:
        return any(
            n.kind == Kind.REPEAT and n.payload[1] is None and self.null(n.children[0])
            for n in self.g.nodes
        )

    def left_recursive(self) -> bool:
        edges = [self.lefts(rule.body) for rule in self.g.rules]
        for r in range(len(edges)):
            if r in set().union(*(_reach(edges, s) for s in edges[r])):
                return True
        return False


@settings(max_examples=300, deadline=None)
@given(_grammars())
def test_random_grammars_against_oracle(src):
    grammar = parse_grammar(HEAD + src)
    oracle = _Oracle(grammar)
    try:
        result = analyze(grammar, budget=Budget(10**7))
    except TrgcError as err:
        codes = {e["code"] for e in err.details["errors"]}
        assert codes <= {"E_NULLABLE_REPETITION", "E_NULLABLE_CYCLE", "E_LEFT_RECURSION"}, err
        assert ("E_NULLABLE_REPETITION" in codes) == oracle.has_nullable_repeat()
        assert bool(codes & {"E_NULLABLE_CYCLE", "E_LEFT_RECURSION"}) == oracle.left_recursive()
        return
    assert not oracle.has_nullable_repeat() and not oracle.left_recursive()
    assert result.nullable == oracle.nullable
    for r, rule in enumerate(grammar.rules):
        refs = {
            grammar.rule_index()[grammar.nodes[i].payload]
            for i in _node_ids(grammar, rule.body)
            if grammar.nodes[i].kind == Kind.REF
        }
        assert result.refs[r] == tuple(sorted(refs))
        on_cycle = any(r in _reach([set(x) for x in result.refs], s) for s in result.refs[r])
        assert result.recursive[r] == on_cycle


def _node_ids(grammar: Grammar, root: int) -> list[int]:
    out, stack = [], [root]
    while stack:
        i = stack.pop()
        out.append(i)
        stack.extend(grammar.nodes[i].children)
    return out


def test_nodes_shared_between_rules():
    g = Grammar()
    x = g.add(Kind.LITERAL, 1, 1, payload=b"x")
    ref_n = g.add(Kind.REF, 1, 2, payload="n")
    shared = g.add(Kind.SEQ, 1, 3, children=(ref_n, ref_n))  # used by a and b, and twice inside
    g.rules.append(Rule("a", g.add(Kind.SEQ, 1, 4, children=(x, shared)), 1, 1))
    g.rules.append(Rule("b", g.add(Kind.ALT, 2, 1, children=(shared, x)), 2, 1))
    g.rules.append(Rule("n", g.add(Kind.REPEAT, 3, 1, children=(x,), payload=(0, 1)), 3, 1))
    g.start = "a"
    a = analyze(g, budget=Budget(10_000))
    assert a.nullable == [False, True, True]
    assert a.refs == [(2,), (2,), ()]
    assert a.node_nullable[shared] and a.node_nullable[ref_n] and not a.node_nullable[x]
    loop = g.add(Kind.REPEAT, 4, 1, children=(shared,), payload=(0, None))
    g.rules.append(Rule("c", g.add(Kind.SEQ, 4, 2, children=(loop, loop)), 4, 1))
    with pytest.raises(TrgcError) as info:
        analyze(g, budget=Budget(10_000))
    assert [e["code"] for e in info.value.details["errors"]] == ["E_NULLABLE_REPETITION"]
