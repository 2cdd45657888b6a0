"""Shared pieces of the toolcall tests: a synthetic tokenizer with merged JSON structure, the
envelopes written out literally from the chat templates (an oracle independent of
`trgc.grammar.toolcall.families`), walks through a `Matcher`, and each family's output parser.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from trgc.tokenizer.table import KIND_BYTE, KIND_NORMAL, KIND_SPECIAL, TokenTable, make_table

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
TOOLS_JSON = ROOT / "tests" / "data" / "toolcall" / "tools.json"

# merged structural pieces as real BPE vocabularies have them
MERGED = [
    b'{"', b'":', b"{}", b'"}}', b'",', b'": ', b'", "', b'"}', b"}}", b"}\n", b'"]', b"[]",
    b'["', b'":"', b'": "', b'": {"', b"city", b"unit", b"celsius", b"get", b"_weather", b"Paris",
    b'\\"', b"12", b"```", b"json", b"function", b"name", b"arguments", b"parameters",
    b'": {}', b'\n{"', b"\n{}",
]  # fmt: skip
QWEN_OPEN, QWEN_CLOSE = "<tool_call>", "</tool_call>"
PYTHON_TAG = "<|python_tag|>"
DS_CALLS_BEGIN, DS_CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
DS_CALL_BEGIN, DS_CALL_END, DS_SEP = (
    "<｜tool▁call▁begin｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁sep｜>",
)
# added tokens that keep their bytes (special=false in the real tokenizer.json files)
ADDED = [QWEN_OPEN, QWEN_CLOSE, DS_CALLS_BEGIN, DS_CALLS_END, DS_CALL_BEGIN, DS_CALL_END, DS_SEP]
SPECIALS = [PYTHON_TAG, "<|eot_id|>", "<eos>", "<pad>"]


def synthetic_table() -> TokenTable:
    """All 256 bytes (id = byte value), `MERGED`, the added markers, then the special tokens."""
    tokens: list[bytes | None] = [bytes([i]) for i in range(256)]
    kinds = [KIND_NORMAL if i < 0x80 else KIND_BYTE for i in range(256)]
    tokens += MERGED
    kinds += [KIND_NORMAL] * len(MERGED)
    added = {}
    for name in ADDED:
        added[name] = len(tokens)
        tokens.append(name.encode("utf-8"))
        kinds.append(KIND_NORMAL)
    specials = {}
    for name in SPECIALS:
        specials[name] = len(tokens)
        tokens.append(None)
        kinds.append(KIND_SPECIAL)
    return make_table(
        tokens,
        np.array(kinds, dtype=np.uint8),
        special_tokens=specials,
        added_tokens={**added, **specials},
        eos_ids=(specials["<eos>"], specials["<|eot_id|>"]),
        metadata={"family": "toolcall-fixture"},
    )


def token_id(table: TokenTable, piece: bytes) -> int:
    """The id of the normal token whose bytes are exactly `piece`."""
    for i in range(table.vocab_size):
        if table.kinds[i] in (KIND_NORMAL, KIND_BYTE) and table.token_bytes(i) == piece:
            return i
    raise KeyError(piece)


def marker_id(table: TokenTable, name: str) -> int:
    return table.special_tokens.get(name, table.added_tokens.get(name))


# ---- envelopes, written out from the templates ------------------------------------------


def qwen_call(name: str, args: str) -> list:
    return [
        ("s", QWEN_OPEN),
        '\n{"name": "' + name + '", "arguments": ' + args + "}\n",
        ("s", QWEN_CLOSE),
    ]


def llama_call(name: str, args: str, *, tag: bool = True) -> list:
    body = '{"name": "' + name + '", "parameters": ' + args + "}"
    return [("s", PYTHON_TAG), body] if tag else [body]


def deepseek_call(name: str, args: str) -> list:
    return [
        ("s", DS_CALL_BEGIN),
        "function",
        ("s", DS_SEP),
        name + "\n```json\n" + args + "\n```",
        ("s", DS_CALL_END),
    ]


def turn(family: str, calls: list[tuple[str, str]], text: str = "") -> list:
    """The pieces of one assistant turn: free text, then the calls as the template joins them."""
    out: list = [text] if text else []
    if family == "qwen":
        for i, (name, args) in enumerate(calls):
            out += (["\n"] if i else []) + qwen_call(name, args)
    elif family == "llama3":
        assert len(calls) <= 1
        for name, args in calls:
            out += llama_call(name, args)
    else:
        if calls:
            out.append(("s", DS_CALLS_BEGIN))
            for i, (name, args) in enumerate(calls):
                out += (["\n"] if i else []) + deepseek_call(name, args)
            out.append(("s", DS_CALLS_END))
    return out


def args_prefix(family: str, name: str) -> list:
    """The pieces of a turn up to (not including) the arguments object of tool `name`."""
    if family == "qwen":
        return [("s", QWEN_OPEN), '\n{"name": "' + name + '", "arguments": ']
    if family == "llama3":
        return [("s", PYTHON_TAG), '{"name": "' + name + '", "parameters": ']
    return [
        ("s", DS_CALLS_BEGIN),
        ("s", DS_CALL_BEGIN),
        "function",
        ("s", DS_SEP),
        name + "\n```json\n",
    ]


def feed(matcher, table: TokenTable, pieces: list) -> None:
    """Advance through `pieces`: `("s", name)` as its marker token, text byte by byte."""
    for piece in pieces:
        if isinstance(piece, tuple):
            matcher.advance(marker_id(table, piece[1]))
        else:
            for byte in piece.encode("utf-8"):
                matcher.advance(byte)


def accepts(matcher, table: TokenTable, pieces: list) -> bool:
    """Whether the whole turn is admitted token by token and ends accepting."""
    from trgc.errors import TrgcError

    matcher.reset()
    try:
        feed(matcher, table, pieces)
    except TrgcError as error:
        assert error.code == "E_TOKEN_NOT_ALLOWED"
        return False
    return matcher.is_accepting()


# ---- each family's own output format, parsed back (what serving stacks do) ----------------


def parse_output(family: str, text: str) -> list[tuple[str, object]]:
    """The calls in a decoded turn (special tokens rendered by name), as (name, arguments)."""
    if family == "qwen":
        bodies = re.findall(r"<tool_call>\n(.*?)\n</tool_call>", text, flags=re.S)
        calls = [json.loads(b) for b in bodies]
        assert all(list(c) == ["name", "arguments"] for c in calls), calls
        return [(c["name"], c["arguments"]) for c in calls]
    if family == "llama3":
        body = text.split(PYTHON_TAG, 1)[1] if PYTHON_TAG in text else text
        if not body.startswith("{"):
            return []
        call = json.loads(body)
        assert list(call) == ["name", "parameters"], call
        return [(call["name"], call["parameters"])]
    if DS_CALLS_BEGIN not in text:
        return []
    region = text.split(DS_CALLS_BEGIN, 1)[1]
    assert region.endswith(DS_CALLS_END)
    found = re.findall(
        DS_CALL_BEGIN + r"function" + DS_SEP + r"([^\n]*)\n```json\n(.*?)\n```" + DS_CALL_END,
        region,
        flags=re.S,
    )
    return [(name, json.loads(args)) for name, args in found]


def render(table: TokenTable, ids: list[int], specials: dict[int, str]) -> str:
    """Decode a token sequence: named markers by name, everything else by its bytes."""
    out = bytearray()
    for i in ids:
        if i in specials:
            out += specials[i].encode("utf-8")
        else:
            out += table.token_bytes(i)
    return out.decode("utf-8")


CLOSERS = (b'"', b"}", b"]")
OPENERS = (b"{", b"[")
_CLASSES: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def token_classes(table: TokenTable) -> tuple[np.ndarray, np.ndarray]:
    """bool[V] pair: tokens whose bytes hold a `"`, `}` or `]` (or that have no bytes: markers),
    and tokens whose bytes hold a `{` or `[`."""
    found = _CLASSES.get(table.sha256)
    if found is None:
        closing = np.zeros(table.vocab_size, dtype=bool)
        opening = np.zeros(table.vocab_size, dtype=bool)
        for i in range(table.vocab_size):
            piece = table.token_bytes(i)
            closing[i] = not piece or any(c in piece for c in CLOSERS)
            opening[i] = any(c in piece for c in OPENERS)
        found = _CLASSES[table.sha256] = (closing, opening)
    return found


def random_walk(
    matcher, table: TokenTable, rng: np.random.Generator, *, open_id: int, max_steps: int = 400
) -> list[int]:
    """A seeded walk over allowed tokens until EOS: start the region at once, then pick a random
    allowed token, half of the time among those that close something. After half the steps it
    finishes: EOS when allowed, else the shortest token that closes without opening (or at least
    does not open); a marker it has not emitted yet comes first and one it has emitted (which
    would start another call) never, so that even walks through unconstrained values end."""
    eos = np.zeros(table.vocab_size, dtype=bool)
    eos[list(table.eos_ids)] = True
    closing, opening = token_classes(table)
    lengths = np.diff(table.offsets)
    ids = [open_id]
    matcher.advance(open_id)
    is_marker = np.zeros(table.vocab_size, dtype=bool)
    is_marker[[*table.added_tokens.values(), *table.special_tokens.values()]] = True
    emitted_markers = np.zeros(table.vocab_size, dtype=bool)
    emitted_markers[open_id] = True
    for step in range(max_steps):
        allowed = matcher.allowed_tokens()
        assert allowed.any(), "the constraint allowed nothing"
        ends = np.flatnonzero(allowed & eos)
        pool = allowed & ~eos
        finishing = step >= max_steps // 2
        if ends.size and (finishing or rng.random() < 0.7 or not pool.any()):
            matcher.advance(int(ends[0]))
            return ids
        if finishing:
            fresh = pool & ~emitted_markers
            preferences = (
                fresh & is_marker,
                fresh & closing & ~opening,
                fresh & ~opening,
                fresh,
                pool,
            )
            pool = next(m for m in preferences if m.any())
            candidates = np.flatnonzero(pool)
            candidates = candidates[lengths[candidates] == lengths[candidates].min()]
        else:
            if rng.random() < 0.5 and (pool & closing).any():
                pool = pool & closing
            candidates = np.flatnonzero(pool)
        choice = int(candidates[rng.integers(candidates.size)])
        matcher.advance(choice)
        ids.append(choice)
        emitted_markers[choice] |= is_marker[choice]
    raise AssertionError("the walk did not end")
