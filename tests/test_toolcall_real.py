"""Tool-call constraints over the real Qwen3 and Llama-3 vocabularies (committed `.trt` tables),
and DeepSeek-V3's (read from its tokenizer.json; slow): the constraint engages at the open
marker, admits the merged `{"`, rejects the merged `{}` where arguments are required, restricts
enums, and seeded walks through the real masks parse back to valid calls."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

import trgc
from toolcall_helpers import ROOT, TOOLS_JSON, parse_output, random_walk, render

TOOLS = TOOLS_JSON.read_bytes()
PARAMS = {
    t.get("function", t)["name"]: t.get("function", t).get("parameters", {"type": "object"})
    for t in json.loads(TOOLS)
}
REAL = {
    "qwen": (ROOT / "tokenizers" / "qwen3.trt", "<tool_call>"),
    "llama3": (ROOT / "tokenizers" / "llama3.trt", "<|python_tag|>"),
}
PREFIX = {
    "qwen": lambda name: '\n{"name": "' + name + '", "arguments": ',
    "llama3": lambda name: '{"name": "' + name + '", "parameters": ',
}


class Vocab:
    """A real table with a byte -> single-byte-token map and exact-bytes lookups."""

    def __init__(self, path):
        self.table = trgc.load_tokenizer(path)
        data = self.table
        self.by_bytes: dict[bytes, int] = {}
        for i in range(data.vocab_size):
            if data.kinds[i] in (0, 1):
                self.by_bytes.setdefault(data.token_bytes(i), i)

    def marker(self, name: str) -> int:
        return self.table.special_tokens.get(name, self.table.added_tokens.get(name))

    def feed_bytes(self, matcher, text: str) -> None:
        for byte in text.encode("utf-8"):
            matcher.advance(self.by_bytes[bytes([byte])])


@pytest.fixture(scope="module", params=sorted(REAL))
def real(request):
    family = request.param
    path, open_marker = REAL[family]
    vocab = Vocab(path)
    artifact = trgc.compile_toolcall(TOOLS, family=family)
    return family, vocab, trgc.Matcher(artifact, vocab.table), open_marker


def at_args(real, name: str, after: str = ""):
    family, vocab, matcher, open_marker = real
    matcher.reset()
    matcher.advance(vocab.marker(open_marker))
    vocab.feed_bytes(matcher, PREFIX[family](name) + after)
    return matcher.allowed_tokens()


def test_engages_at_the_open_marker(real):
    family, vocab, matcher, open_marker = real
    eos = list(vocab.table.eos_ids)
    matcher.reset()
    start = matcher.allowed_tokens()
    assert start[vocab.marker(open_marker)] and start[eos].all()
    assert start.sum() > vocab.table.vocab_size // 2  # free text: nearly every token
    matcher.advance(vocab.marker(open_marker))
    region = matcher.allowed_tokens()
    assert not region[eos].any()
    assert 0 < region.sum() < 10
    forced = matcher.forced_bytes()
    assert forced == ('\n{"name": "' if family == "qwen" else '{"name": "').encode()


def test_merged_open_brace_quote_admitted_empty_object_rejected(real):
    family, vocab, _, _ = real
    brace_quote, empty = vocab.by_bytes[b'{"'], vocab.by_bytes[b"{}"]
    allowed = at_args(real, "get_weather")
    assert allowed[brace_quote] and not allowed[empty]
    assert not allowed[list(vocab.table.eos_ids)].any()
    assert {vocab.table.token_bytes(int(i))[:1] for i in np.flatnonzero(allowed)} == {b"{"}
    allowed = at_args(real, "now")
    assert allowed[empty] and not allowed[brace_quote]


def test_merged_close_cannot_drop_a_required_member(real):
    family, vocab, _, _ = real
    allowed = at_args(real, "get_weather", '{"city": "Paris')
    closers = [t for t in (b'"}', b'"}}', b'"})') if t in vocab.by_bytes]
    assert closers and not any(allowed[vocab.by_bytes[t]] for t in closers)
    assert allowed[vocab.by_bytes[b'",']]


def test_enum_is_restricted(real):
    family, vocab, _, _ = real
    allowed = at_args(real, "get_weather", '{"city": "Paris", "unit": "')
    spellings = (b'celsius"', b'fahrenheit"')
    for i in np.flatnonzero(allowed):
        piece = vocab.table.token_bytes(int(i))
        assert any(s.startswith(piece) or piece.startswith(s) for s in spellings), piece
    assert 2 <= allowed.sum() < 40
    for word in (b"c", b"f"):
        assert allowed[vocab.by_bytes[word]]
    assert not allowed[vocab.by_bytes[b"k"]]


def test_seeded_walks_over_the_real_vocabulary_parse_back(real):
    family, vocab, matcher, open_marker = real
    names = ("<tool_call>", "</tool_call>", "<|python_tag|>")
    specials = {vocab.marker(n): n for n in names if vocab.marker(n) is not None}
    for seed in range(3):
        matcher.reset()
        rng = np.random.default_rng(seed)
        ids = random_walk(matcher, vocab.table, rng, open_id=vocab.marker(open_marker))
        calls = parse_output(family, render(vocab.table, ids, specials))
        assert len(calls) == 1
        name, arguments = calls[0]
        jsonschema.Draft202012Validator(PARAMS[name]).validate(arguments)


@pytest.mark.slow
def test_deepseek_vocabulary():
    table = trgc.load_tokenizer(ROOT / "tokenizers" / "deepseek-v3")
    matcher = trgc.Matcher(trgc.compile_toolcall(TOOLS, family="deepseek"), table)
    name = {
        n: table.added_tokens[n]
        for n in ("<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>")
    }
    single = {}
    for i in range(table.vocab_size):
        if table.kinds[i] in (0, 1) and len(table.token_bytes(i)) == 1:
            single.setdefault(table.token_bytes(i), i)
    start = matcher.allowed_tokens()
    assert start[name["<｜tool▁calls▁begin｜>"]] and not start[name["<｜tool▁call▁begin｜>"]]
    matcher.advance(name["<｜tool▁calls▁begin｜>"])
    assert np.flatnonzero(matcher.allowed_tokens()).tolist() == [name["<｜tool▁call▁begin｜>"]]
    matcher.advance(name["<｜tool▁call▁begin｜>"])
    for byte in b"function":
        matcher.advance(single[bytes([byte])])
    matcher.advance(name["<｜tool▁sep｜>"])
    for byte in b"get_weather\n```json\n":
        matcher.advance(single[bytes([byte])])
    allowed = matcher.allowed_tokens()
    pieces = {table.token_bytes(int(i)) for i in np.flatnonzero(allowed)}
    assert pieces and all(p.startswith(b"{") for p in pieces)
    assert b"{}" not in pieces and b'{"' in pieces
    assert not allowed[list(table.eos_ids)].any()
