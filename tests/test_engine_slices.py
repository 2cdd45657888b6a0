"""Token slices: membership, the safety check, and frame entries equal to plain walks."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import trgc
from engine_fixtures import ROOT, make_tokenizer
from trgc.engine.binding import bind
from trgc.engine.config import START, STATE_MASK, frame_key, step_bytes
from trgc.engine.kernel import Scratch, walk_trie
from trgc.engine.precompute import frame_entry, reachable_keys
from trgc.engine.slices import (
    FAIL,
    UNKNOWN,
    _first_call_jitted,
    _moves,
    _reach_need_jitted,
    _search_jitted,
    candidates,
    default_slices,
    is_safe,
)

PIECES = [
    b"abc", b'a"', b"a\\", b"\xc3", b"\xc3\xa9", b"\xed\xa0\x80", b"\xc0\x80", b"\xf4\x90\x80\x80",
    b"\xf0\x9f\x98\x80", b"x" * 30, b"x" * 31, b"tab\there", b"\x7f", b" ", b"\n\t ", b" \r\n",
    b"a\xe2\x80\xa8", b"\xe2\x80\xa9", b"\xe2\x80\xa6", b"\xe2\x80", b"x" * 10 + b"\xc3",
]  # fmt: skip
LINE_SEPARATORS = {b"a\xe2\x80\xa8", b"\xe2\x80\xa9"}  # U+2028, U+2029: no regex `.` matches


COUNTED_STRINGS = {
    "type": "object",
    "properties": {
        "a": {"type": "string", "minLength": 1},
        "b": {"type": "string", "maxLength": 20},
        "c": {"type": "string", "minLength": 3, "maxLength": 200},
        "d": {"type": "array", "items": {"type": "string", "minLength": 2}, "maxItems": 3},
    },
    "required": ["a", "b"],
}

DOT_STRINGS = {  # a regex `.` matches no U+2028 or U+2029: the string slice is not safe there
    "type": "object",
    "properties": {"id": {"type": "string", "pattern": "^.+$"}},
    "patternProperties": {"^.*$": {"type": "string"}},
    "required": ["id"],
}


@functools.cache
def json_artifact():
    return trgc.compile_grammar((ROOT / "grammars" / "json.trg").read_text(encoding="utf-8"))


def test_slice_membership():
    tok = make_tokenizer([*PIECES, None], specials={"<eos>": len(PIECES)}, eos=(len(PIECES),))
    b = bind(json_artifact(), tok)
    tables = b.slices()
    names = [s.name for s in tables.slices]
    parts = [tables.get(k) for k in range(len(names))]
    member = {
        name: {PIECES[t] for t in np.flatnonzero(m)}
        for name, m in zip(names, [p[0] for p in parts], strict=True)
    }
    assert member["string"] == {
        b"abc",
        b"\xc3",  # a cut character: a prefix of a slice string
        b"\xe2\x80",
        b"x" * 10 + b"\xc3",  # 11 characters, the last one cut
        b"\xc3\xa9",
        b"\xf0\x9f\x98\x80",
        b"x" * 30,
        b"x" * 31,
        b" ",
        *LINE_SEPARATORS,
        b"\xe2\x80\xa6",
    }
    assert member["string-dot"] == member["string"] - LINE_SEPARATORS
    assert member["string{1,30}"] == member["string"] - {b"x" * 31}
    assert member["string{1,10}"] == member["string"] - {b"x" * 31, b"x" * 30, b"x" * 10 + b"\xc3"}
    assert member["whitespace"] == {b" ", b"\n\t ", b" \r\n"}
    for m, words, _ in parts:
        assert int(np.unpackbits(words.view(np.uint8)).sum()) == int(m.sum())


def _plain_moves(byte_class: np.ndarray, dfa: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`slices.moves` one slice state and one allowed byte at a time."""
    out = np.zeros((dfa.shape[0], 256, 2), dtype=np.int64)
    counts = np.zeros(dfa.shape[0], dtype=np.int64)
    for state, row in enumerate(dfa.tolist()):
        pairs = sorted({(row[b], int(byte_class[b])) for b in range(256) if row[b] >= 0})
        for j, pair in enumerate(pairs):
            out[state, j] = pair
        counts[state] = len(pairs)
    return out, counts


def test_slice_moves_equal_a_plain_count():
    rng = np.random.default_rng(7)
    automata = [s.dfa for s in default_slices()]
    for _ in range(40):
        n = int(rng.integers(1, 12))
        dfa = rng.integers(0, n, (n, 256)).astype(np.int8)
        dfa[rng.random((n, 256)) < 0.8] = -1
        automata.append(dfa)
    for dfa in automata:
        for n_classes in (1, 7, 256):
            byte_class = rng.integers(0, n_classes, 256).astype(np.uint8)
            got = _moves(byte_class, dfa)
            expected = _plain_moves(byte_class, dfa)
            assert (got[1] == expected[1]).all()
            assert (got[0] == expected[0]).all()


def test_memoised_safety_equals_one_search_per_state():
    """`_reach_need` (answers kept per pair across calls) against `_search` (one search per
    call) on random machines and slice automata, every state asked in a random order, so
    that later calls meet pairs decided, failed and left undecided by earlier ones. The
    machines have calls (-2 - k), restarts (-1 at an accepting repeat state) and completion
    needs that differ inside a cycle."""
    rng = np.random.default_rng(11)
    search, reach = _search_jitted(), _reach_need_jitted()
    compared = failed = 0
    for _ in range(300):
        n, n_classes = int(rng.integers(1, 30)), int(rng.integers(1, 6))
        gnext = rng.integers(0, n, (n, n_classes)).astype(np.int32)
        holes = rng.random((n, n_classes))
        gnext[holes < 0.08] = -1
        gnext[(holes >= 0.08) & (holes < 0.1)] = -2
        accepting, is_repeat = rng.random(n) < 0.5, rng.random(n) < 0.3
        rep_start = rng.integers(0, n, n).astype(np.int32)
        need, cost = rng.integers(0, 6, n).astype(np.int32), rng.integers(0, 3, n).astype(np.int32)
        n_slice = int(rng.integers(1, 4))
        dfa = rng.integers(0, n_slice, (n_slice, 256)).astype(np.int8)
        dfa[rng.random((n_slice, 256)) < 0.9] = -1
        byte_class = rng.integers(0, n_classes, 256).astype(np.uint8)
        moves, n_moves = _moves(byte_class, dfa)
        pairs = n_slice * n
        value = np.full(pairs, UNKNOWN, dtype=np.int32)
        index = np.full(pairs + 5, -1, dtype=np.int32)  # scratch may be longer than needed
        scratch = [np.empty(pairs + 5, dtype=np.int32) for _ in range(5)]
        for g in rng.permutation(n):
            plain = search(gnext, moves, n_moves, accepting, is_repeat, rep_start, cost, need,
                           0, g, -1, 1000)  # fmt: skip
            got = reach(gnext, moves, n_moves, accepting, is_repeat, rep_start, need, g,
                        value, index, *scratch)  # fmt: skip
            assert (got == FAIL) == (plain == FAIL), g
            if got != FAIL:
                assert cost[g] + got == plain, g
            assert (index == -1).all()  # reset for the next call
            compared += 1
            failed += got == FAIL
    assert compared > 2000 and 0.1 < failed / compared < 0.9


def test_candidates_are_the_states_with_an_action_on_every_first_byte():
    """`candidates` (one product over all states) against its definition, state by state."""
    person = (ROOT / "schemas/person.json").read_bytes()
    artifacts = [json_artifact(), trgc.compile_schema(person), trgc.compile_schema(DOT_STRINGS),
                 trgc.compile_schema(COUNTED_STRINGS)]  # fmt: skip
    vocab = trgc.load_tokenizer(ROOT / "tokenizers/synthetic/json-bytelevel")
    for artifact in artifacts:
        tables = bind(artifact, vocab).tables
        got = candidates(tables)
        for k, piece in enumerate(default_slices()):
            firsts = {int(tables.byte_class[b]) for b in range(256) if piece.dfa[0, b] >= 0}
            for g in range(tables.next.shape[0]):
                acts = all(tables.next[g, c] != -1 for c in firsts)
                restarts = bool(tables.is_repeat[g] and tables.accepting[g])
                assert got[k, g] == (acts or restarts), (piece.name, g)
        assert got.any() and not got.all()


def test_safety_follows_the_grammar():
    art = json_artifact()
    tables = bind(art, trgc.load_tokenizer(ROOT / "tokenizers/synthetic/json-bytelevel")).tables
    by_name = {s.name: s for s in default_slices()}
    in_string = step_bytes(tables, START, b'{"a')[-1]
    after_brace = step_bytes(tables, START, b"{")[-1]
    assert is_safe(tables, in_string, by_name["string"], 8)
    assert not is_safe(tables, in_string, by_name["whitespace"], 8)  # \n is not in a string
    assert not is_safe(tables, START[-1], by_name["string"], 8)
    assert is_safe(tables, after_brace, by_name["whitespace"], 8)
    # a bounded string, copied (20 copies are cheaper than a counter): safe for up to 10
    # characters but not for 30 or unbounded
    short = trgc.compile_grammar('%trg 1\n%start s\ns ::= "\\"" [a-z ]{0,20} "\\"" ;\n')
    st = bind(short, trgc.load_tokenizer(ROOT / "tokenizers/synthetic/json-bytelevel")).tables
    body = step_bytes(st, START, b'"')[-1]
    text = _utf8_lower()
    assert is_safe(st, body, text(10), 8) and not is_safe(st, body, text(30), 8)


def test_safety_counts_the_restarts_a_counter_has_left():
    # [a-z ]{0,100} is counted: after k characters the frame may begin 100 - k more iterations
    art = trgc.compile_grammar('%trg 1\n%start s\ns ::= "\\"" [a-z ]{0,100} "\\"" ;\n')
    tables = bind(art, trgc.load_tokenizer(ROOT / "tokenizers/synthetic/json-bytelevel")).tables
    assert tables.is_repeat.any()
    text = _utf8_lower()
    for k, ten, thirty in ((1, True, True), (75, True, False), (95, False, False)):
        key = frame_key(step_bytes(tables, START, b'"' + b"a" * k)[-1], 128)
        assert (is_safe(tables, key, text(10), 128) is not None) == ten, k
        assert (is_safe(tables, key, text(30), 128) is not None) == thirty, k
        assert is_safe(tables, key, by_name_string(), 128) is None  # the counter can run out
    # with fewer iterations left than the longest token has bytes, only then is it a limit
    key = frame_key(step_bytes(tables, START, b'"' + b"a" * 95)[-1], 4)
    assert is_safe(tables, key, text(30), 4) == 0  # a repeat frame adds no rule frame


def by_name_string():
    return {s.name: s for s in default_slices()}["string"]


def _utf8_lower():
    from trgc.engine.slices import Slice

    dfa = np.full((8, 256), -1, dtype=np.int8)
    dfa[0, ord("a") : ord("z") + 1] = 0
    dfa[0, ord(" ")] = 0
    return lambda n: Slice(f"lower{{1,{n}}}", dfa, n)


@pytest.mark.parametrize(
    "vocab", ["tokenizers/llama3/tokenizer.json.zst", "tokenizers/synthetic/json-bytelevel"]
)
@pytest.mark.parametrize(
    "grammar", ["json", "csv", "sexpr", "toolcall", "counted", "schema", "dot"]
)
def test_frame_entries_with_slices_equal_plain_walks(vocab, grammar):
    if grammar == "counted":  # JSON strings of 2..24 characters, separated by ","
        source = (
            '%trg 1\n%start s\ns ::= str ("," str)* ;\n'
            'str ::= "\\"" ( [^"\\\\\\x00-\\x1F] | "\\\\" ["\\\\/bfnrt] ){2,24} "\\"" ;\n'
        )
        art = trgc.compile_grammar(source)
    elif grammar == "schema":  # string bodies compiled as repeat machines the frame calls
        art = trgc.compile_schema(COUNTED_STRINGS)
    elif grammar == "dot":
        art = trgc.compile_schema(DOT_STRINGS)
    else:
        art = trgc.compile_grammar(
            (ROOT / "grammars" / f"{grammar}.trg").read_text(encoding="utf-8")
        )
    tok = trgc.load_tokenizer(ROOT / vocab)
    try:
        b = bind(art, tok)
    except trgc.TrgcError as err:
        assert err.code == "E_SPECIAL_TOKEN_MISSING"
        return
    scratch = Scratch(b)
    used = through_call = dot_only = 0
    names = [s.name for s in default_slices()]
    dot = names.index("string-dot")
    letter = int(b.tables.byte_class[ord("a")])
    for key in reachable_keys(b.tables, b.trie_depth):
        g = key & STATE_MASK
        safe = [is_safe(b.tables, key, s, b.trie_depth) is not None for s in default_slices()]
        through_call += any(safe) and b.tables.next[g, letter] <= -2  # the frame calls the body
        entry = frame_entry(b, key, scratch)
        plain = np.zeros(b.n_words, dtype=np.uint32)
        mode = bool(b.tables.has_caller[g])
        roots, height = walk_trie(b, (key,), plain, scratch, frame_mode=mode)
        assert (entry.accept == plain).all(), key
        # a slice's height covers every string of the slice, so it may exceed the walk's
        assert (entry.open_roots == roots).all() and entry.height >= height, key
        used += any(safe)
        # string-dot the first that fits (word, after it, may fit too)
        dot_only += safe[: dot + 1] == [name == "string-dot" for name in names[: dot + 1]]
    assert used > 0
    assert through_call > 0 or grammar != "schema"
    assert dot_only > 0 or grammar != "dot"  # states only the `.` slice fits: it is used


def test_tokenizer_level_slice_tables_are_shared_per_tokenizer():
    """Which tokens spell a slice is computed once per token table: two artifacts over one
    tokenizer share it, and share the specialised tables too unless a grammar names a special
    token the table spells with bytes (toolcall's `<tool_call>` on this tokenizer)."""
    from trgc.engine.matcher import Matcher

    tok = trgc.load_tokenizer(ROOT / "tokenizers/synthetic/json-bytelevel")
    first, second = (
        json_artifact(),
        trgc.compile_grammar((ROOT / "grammars" / "toolcall.trg").read_text(encoding="utf-8")),
    )
    third = trgc.compile_grammar((ROOT / "grammars" / "csv.trg").read_text(encoding="utf-8"))
    for art in (first, second):
        m = Matcher(art, tok)
        m._history = [step_bytes(m._binding.tables, START, b'{"a' if art is first else b"")]
        if art is second:
            m.advance(tok.added_tokens["<tool_call>"])
            m._history = [
                step_bytes(m._binding.tables, m.config, b'{"name": "f", "arguments": {"k": "v')
            ]
        m.allowed_tokens()
    b1, b2, b3 = bind(first, tok), bind(second, tok), bind(third, tok)
    assert b1.slices().raw is b2.slices().raw is b3.slices().raw
    assert b1.slices() is b3.slices()  # neither names a special token: one specialisation
    assert b1.slices().get(0)[0] is not b2.slices().get(0)[0]
    # the named <tool_call> keeps its bytes in the table but is never a member for toolcall
    tool = tok.added_tokens["<tool_call>"]
    assert b1.slices().get(0)[0][tool] and not b2.slices().get(0)[0][tool]


@pytest.mark.parametrize(
    ("row", "classes", "expected"),
    [
        ([-2, -2, -2], [0, 1, 2], 0),  # every first class calls edge 0
        ([5, -4, -4], [1, 2], 2),  # the classes asked, not the whole row
        ([-2, -2, 3], [0, 1, 2], -1),  # one class shifts
        ([-3, -2, -3], [0, 1, 2], -1),  # two calls
        ([-1, -2], [0, 1], -1),  # no action first
        ([-2], [], -1),  # no first class
    ],
)
def test_first_call_is_one_call_on_every_first_class(row, classes, expected):
    """`_first_call` (compiled; `first_call` and the slice plan both read it): the call a state
    takes on every class a slice's members can start with, when it is one and the same."""
    gnext = np.array([[7, 7, 7], row + [0] * (3 - len(row))], dtype=np.int32)
    found = _first_call_jitted()(gnext, np.array(classes, dtype=np.int64), 1)
    assert found == expected
