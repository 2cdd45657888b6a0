"""Class runs (`trgc.engine.runs`): the entry of a frame inside a chain of copies of one ASCII
class, made from the run's members and the tails of one head length, equals the plain walk's
on real vocabularies and a crafted one, and live masks through such patterns equal the
reference masker's at every byte of valid instances; so do loops on word characters, walked
by the word slice's tails."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import trgc
from engine_fixtures import entry_matches_walk, make_tokenizer, matches_reference
from test_engine_scale import tokenizer
from trgc.engine import precompute, runs
from trgc.engine.binding import bind
from trgc.engine.cache import MaskCache
from trgc.engine.config import STATE_MASK
from trgc.engine.kernel import Scratch
from trgc.engine.matcher import Matcher
from trgc.engine.precompute import reachable_keys
from trgc.engine.slices import WORD

UUID = "^[0-9A-Za-z]{8}-[0-9A-Za-z]{4}-[0-9A-Za-z]{4}-[0-9A-Za-z]{4}-[0-9A-Za-z]{12}$"
# each pattern a string member of an object (a run ends at `-`, at `"`, or where the
# pattern goes on with another class), and an instance of it
PATTERNS = {
    "uuid": (UUID, "3fa85f64-5717-4562-b3fc-2c963f66afa6"),
    "commit": ("^[0-9a-f]{12}$", "da39a3ee5e6b"),
    "digest": ("^[0-9a-f]{20}$", "0123456789abcdef0123"),  # longer than the crafted tokens
    "currency": ("^[A-Z]{3}$", "EUR"),
    "date": ("^[0-9]{4}-[0-9]{2}-[0-9]{2}$", "2026-12-07"),
    "code": ("^[a-z]{2}_[A-Z]{2}[0-9]{3}x$", "en_US123x"),
    "word": ("^[A-Za-z0-9_]{6}$", "a_b_c9"),
}
SCHEMA = {
    "type": "object",
    "properties": {name: {"type": "string", "pattern": p} for name, (p, _) in PATTERNS.items()},
    "required": sorted(PATTERNS),
}
INSTANCE = "{" + ",".join(f'"{n}":"{v}"' for n, (_, v) in PATTERNS.items()) + "}"
# identifiers: a state looping on word characters, no run, walked by the word slice's tails
WORDS = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[a-z_A-Z0-9]+$"},
        "ref": {"type": "string", "pattern": "^[\\w]+:[A-Z][\\w]+$"},
    },
    "required": ["id", "ref"],
}
WORDS_INSTANCE = '{"id":"user_42","ref":"pkg:Name_1"}'
# tokens that end a run at `-`, `"`, `_` or a class change, run over it, or start with a head
CRAFTED = [
    b"3fa85f64", b"3fa8", b"5f64-", b"-5717", b"-", b"f64-57", b"afa6", b'afa6"', b'a6",',
    b'"', b'",', b'"}', b"2c963f66afa6", b"2026", b"-12", b"-07", b'07"', b"EUR", b'UR"', b"en",
    b"_", b"_US", b"US12", b"123x", b'3x"', b"a_b", b"_c9", b'c9"}', b"da39a3ee", b"5e6b",
    b'6b",', b"abcdefgh1", b"E", b"U", b"R",
]  # fmt: skip


@functools.cache
def crafted_table():
    pieces = [bytes([b]) for b in range(256)]
    pieces += [t for t in CRAFTED if t not in pieces]
    return make_tokenizer([*pieces, None], specials={"<eos>": len(pieces)}, eos=(len(pieces),))


def _table(vocab: str):
    return crafted_table() if vocab == "crafted" else tokenizer(vocab)


# a trg-1 grammar with runs of its own, in a machine two places call (so its masks are
# assembled from entries): an id of eight letters or digits, a dash, a code of three
# capitals (the id's run ends at `-`, inside the machine)
TAGS = """%trg 1
%start tags
tags ::= tag+ ;
tag ::= "#" id ";" | "@" id "!" ;
id ::= [0-9A-Za-z] [0-9A-Za-z] [0-9A-Za-z] [0-9A-Za-z] [0-9A-Za-z] [0-9A-Za-z] [0-9A-Za-z]
       [0-9A-Za-z] "-" [A-Z] [A-Z] [A-Z] ;
"""
INSTANCES = {
    "patterns": INSTANCE,
    "words": WORDS_INSTANCE,
    "grammar": "#3fa85f64-EUR;@a1B2c3D4-USD!",
}


@functools.cache
def artifact(schema: str = "patterns"):
    if schema == "grammar":
        return trgc.compile_grammar(TAGS)
    return trgc.compile_schema(SCHEMA if schema == "patterns" else WORDS, separators="compact")


@pytest.mark.parametrize("vocab", ["crafted", "gpt2", "llama3", "qwen3"])
def test_run_entries_equal_plain_walks(vocab, monkeypatch):
    """Every frame inside a run: its entry (members, tails of one head length) equals a walk
    of the whole trie: accepted tokens, open roots, and a height at least the walk's."""
    b = bind(artifact(), _table(vocab))
    scratch = Scratch(b)
    made = []
    entry_of_run = runs.run_entry
    monkeypatch.setattr(precompute, "run_entry",
                        lambda *a: made.append(a[2]) or entry_of_run(*a))  # fmt: skip
    seen = set()
    for key in reachable_keys(b.tables, b.trie_depth):
        entry_matches_walk(b, key, scratch)
        run = runs.run_of(b, key)
        if run is not None:
            seen.add(runs.RUN_CLASSES[run.piece].name)
    # the matcher's view of every state at once agrees with `run_of` state by state
    found = runs.run_states(b)
    for g in range(b.tables.next.shape[0]):
        assert found[g] == (runs.run_of(b, g) is not None), g
    # every class the patterns repeat was met as a run, and entries were made by runs
    assert {"alnum", "hex-lower", "upper", "digit", "lower", "word"} <= seen, seen
    assert len(made) >= 40
    assert any(r.end >= 0 and r.length > 1 for r in made)


def test_a_run_ends_where_its_class_goes_on_or_a_caller_may_take_it():
    """A state is in a run only when the run's end takes no byte of its class: in
    `^[a-z]{3}[a-z0-9]$` only the last state is (its end takes `"`); in `^[a-z]{2,4}$` none
    (their end may take more letters). A run longer than any token has no end."""

    def found(pattern: str, table) -> list:
        art = trgc.compile_schema({"type": "string", "pattern": pattern}, separators="compact")
        b = bind(art, table)
        return [r for key in reachable_keys(b.tables, b.trie_depth)
                if (r := runs.run_of(b, key)) is not None]  # fmt: skip

    def names(pattern: str) -> list[tuple[str, int]]:
        return [(runs.RUN_CLASSES[r.piece].name, r.length) for r in found(pattern, table)]

    table = tokenizer("gpt2")
    assert names("^[a-z]{3}[a-z0-9]$") == [("alnum-lower", 1)]
    assert names("^[a-z]{2,4}$") == []
    longest = max(len(t) for t in CRAFTED)
    long = found("^[0-9a-f]{20}$", crafted_table())
    # lengths past the longest token are capped: no token sees the difference
    assert sorted({r.length for r in long}) == list(range(1, longest + 2))
    assert all((r.end == -1) == (r.length > longest) for r in long)


# `id` is a machine (recursive) its caller calls twice in a row: after three hex digits it
# returns, and the caller's next `id` takes more of them
RETURNING = """%trg 1
%start s
s ::= id id "." ;
id ::= "<" id ">" | [0-9a-f] [0-9a-f] [0-9a-f] ;
"""


@pytest.mark.parametrize("vocab", ["crafted", "gpt2"])
def test_a_run_is_not_ended_by_a_return_to_a_caller_that_may_take_its_class(vocab):
    """A run whose end may return to a caller is none: a token longer than the run is an open
    root there (its caller decides), which an entry made from the run would reject."""
    b = bind(trgc.compile_grammar(RETURNING), _table(vocab))
    scratch = Scratch(b)
    for key in reachable_keys(b.tables, b.trie_depth):
        assert runs.run_of(b, key) is None, key
        assert not runs.run_states(b)[key & STATE_MASK], key
        entry_matches_walk(b, key, scratch)


@pytest.mark.parametrize("vocab", ["crafted", "llama3"])
def test_word_loops_are_walked_by_the_word_slices_tails(vocab):
    """A state looping on word characters (`^[a-z_A-Z0-9]+$`, `^[\\w]+:...`) is no run (its
    end takes word characters); the word slice fits it, its tails walked from the loop: the
    entry equals the plain walk's."""
    b = bind(artifact("words"), _table(vocab))
    scratch = Scratch(b)
    by_word = 0
    for key in reachable_keys(b.tables, b.trie_depth):
        entry_matches_walk(b, key, scratch)
        k, _, after = precompute.slice_of(b, key)
        by_word += k == WORD and after is not None
        if k == WORD:  # decided with the first mask, as the search decides it
            assert precompute.slice_plan(b)[key] == precompute._searched_slice(b, key), key
    assert by_word >= 4  # both patterns' first characters and their loops


@pytest.mark.parametrize("vocab", ["crafted", "llama3", "qwen3"])
@pytest.mark.parametrize("schema", ["patterns", "words", "grammar"])
def test_live_masks_through_runs_equal_the_reference(vocab, schema, monkeypatch):
    """A matcher teacher-forced byte by byte through an instance that crosses every run (or
    word loop), of a schema and of a trg-1 grammar: each mask equals the reference masker's (on the whole crafted vocabulary,
    else a sample). On the real vocabularies the runs whose walk is large are masked by their
    entries (the crafted one's walks are all small: walked, as before)."""
    made = []
    entry_of_run = runs.run_entry
    monkeypatch.setattr(precompute, "run_entry",
                        lambda *a: made.append(a[2]) or entry_of_run(*a))  # fmt: skip
    table = _table(vocab)
    art = artifact(schema)
    b = bind(art, table)
    m = Matcher(art, table, cache=MaskCache())
    rng = np.random.default_rng(7)
    data = INSTANCES[schema].encode()
    assert trgc.check(art, data).accepted
    spelled: dict[bytes, list[int]] = {}
    for t in np.flatnonzero(b.byte_token).tolist():
        spelled.setdefault(table.token_bytes(t), []).append(t)
    longest = max(map(len, spelled))
    for i, byte in enumerate(data):
        mask = m.allowed_tokens()
        matches_reference(b, m.config, mask, rng, whole=vocab == "crafted")
        # every token spelling a beginning of the rest of the instance is allowed (a sample
        # of the reference's would seldom draw `5f64-`, which a run allows by its tail)
        for j in range(i + 1, min(len(data), i + longest) + 1):
            assert mask[spelled.get(data[i:j], [])].all(), (i, data[i:j])
        m.advance(spelled[bytes([byte])][0])
    assert m.is_accepting
    if schema != "words" and vocab != "crafted":
        assert "alnum" in {runs.RUN_CLASSES[r.piece].name for r in made}
