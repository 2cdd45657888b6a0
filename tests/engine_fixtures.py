"""Hand-built artifacts and token tables for the mask-engine tests.

They follow the contracts of `trgc.artifact.model` and the tokenizer's `TokenTable`/`Trie`
(depth-first preorder, children sorted by byte, node 0 the root) without depending on the
compiler or the tokenizer loaders, so the engine is testable on its own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from trgc.artifact.model import Artifact, Machine, call_action
from trgc.tokenizer.table import KIND_BYTE, KIND_SPECIAL, KIND_UNUSED, TokenTable, make_table

ROOT = Path(__file__).resolve().parents[1]


def make_tokenizer(
    tokens: list[bytes | None],
    *,
    specials: dict[str, int],
    added: dict[str, int] | None = None,
    eos: tuple[int, ...] = (),
    unused: tuple[int, ...] = (),
) -> TokenTable:
    """A real `TokenTable`: single bytes >= 0x80 are byte-fallback tokens, `specials` have no
    bytes, `added` are added tokens that keep their bytes, `unused` ids have no bytes."""
    kinds = np.zeros(len(tokens), dtype=np.uint8)
    for i, t in enumerate(tokens):
        if t is not None and len(t) == 1 and t[0] >= 0x80:
            kinds[i] = KIND_BYTE
    kinds[list(specials.values())] = KIND_SPECIAL
    kinds[list(unused)] = KIND_UNUSED
    return make_table(
        tokens,
        kinds,
        special_tokens=dict(specials),
        added_tokens={**(added or {}), **specials},
        eos_ids=eos,
        metadata={"family": "fixture"},
    )


def make_artifact(
    machines: list[dict], specials: tuple[str, ...] = (), max_depth: int = 8
) -> Artifact:
    """An artifact from readable machines.

    Each machine is `{"name", "accepting": [states], "n": n_states, "edges": {state: {key: act}}}`
    where key is a byte value, a range `(lo, hi)` of bytes or a special name, and act is a target
    state or `("call", callee, return_state)`. Byte classes are the distinct byte columns.
    """
    specials = tuple(sorted(specials))
    cols = []  # per machine: dense [n, 256 + k] action tables over raw bytes
    for m in machines:
        table = np.full((m["n"], 256 + len(specials)), -1, dtype=np.int64)
        calls: list[tuple[int, int]] = []
        for s, edges in m["edges"].items():
            for key, act in edges.items():
                if isinstance(key, str):
                    idx = [256 + specials.index(key)]
                elif isinstance(key, tuple):
                    idx = list(range(key[0], key[1] + 1))
                else:
                    idx = [key]
                if isinstance(act, tuple):
                    if (act[1], act[2]) not in calls:
                        calls.append((act[1], act[2]))
                    value = call_action(calls.index((act[1], act[2])))
                else:
                    value = act
                table[s, idx] = value
        cols.append((table, calls))
    signature = np.concatenate([t[:, :256] for t, _ in cols], axis=0)
    _, first, inverse = np.unique(signature.T, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)  # classes numbered by first byte
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    byte_class = rank[inverse.reshape(-1)].astype(np.uint8)
    n_classes = int(order.size)
    out = []
    for m, (table, calls) in zip(machines, cols, strict=True):
        nxt = np.empty((m["n"], n_classes + len(specials)), dtype=np.int32)
        for b in range(256):
            nxt[:, byte_class[b]] = table[:, b]
        nxt[:, n_classes:] = table[:, 256:]
        accepting = np.zeros(m["n"], dtype=bool)
        accepting[list(m["accepting"])] = True
        out.append(
            Machine(m["name"], accepting, nxt, np.array(calls, dtype=np.int32).reshape(-1, 2))
        )
    return Artifact({"fixture": True}, byte_class, n_classes, specials, tuple(out), max_depth)


Q = ord('"')
FIRST_VALUE = {ord("x"): None, ord("["): None, Q: None, ord("{"): None}


def _value_machine(me: int) -> dict:
    """value ::= "x" | "[" (value ("," value)*)? "]" | "{" ("\"" chars "\"" ":" value)? "}"
    | "\"" ([a-z] | "é")* "\""  (one machine calling itself; é spelled as C3 A9)."""

    def call(ret: int) -> dict:
        return {b: ("call", me, ret) for b in FIRST_VALUE}

    return {
        "name": "value",
        "n": 12,
        "accepting": [1],
        "edges": {
            0: {ord("x"): 1, ord("["): 2, Q: 5, ord("{"): 7},
            2: {ord("]"): 1, **call(3)},
            3: {ord("]"): 1, ord(","): 4},
            4: call(3),
            5: {(ord("a"), ord("z")): 5, 0xC3: 6, Q: 1},
            6: {0xA9: 5},
            7: {ord("}"): 1, Q: 8},
            8: {(ord("a"), ord("z")): 8, Q: 9},
            9: {ord(":"): 10},
            10: call(11),
            11: {ord("}"): 1},
        },
    }


def json_like(max_depth: int = 6) -> Artifact:
    """A recursive JSON-like grammar: one machine that calls itself."""
    return make_artifact([_value_machine(0)], max_depth=max_depth)


def tool_call(max_depth: int = 6) -> Artifact:
    """call ::= special("<tool_call>") value special("</tool_call>"); two machines."""
    wrapper = {
        "name": "call",
        "n": 4,
        "accepting": [3],
        "edges": {
            0: {"<tool_call>": 1},
            1: {b: ("call", 1, 2) for b in FIRST_VALUE},
            2: {"</tool_call>": 3},
        },
    }
    return make_artifact(
        [wrapper, _value_machine(1)], specials=("<tool_call>", "</tool_call>"), max_depth=max_depth
    )


def regular() -> Artifact:
    """A regular grammar: "a" [bc]* "d" ("é" | "e")? with UTF-8 é."""
    return make_artifact(
        [
            {
                "name": "start",
                "n": 5,
                "accepting": [2, 4],
                "edges": {
                    0: {ord("a"): 1},
                    1: {ord("b"): 1, ord("c"): 1, ord("d"): 2},
                    2: {0xC3: 3, ord("e"): 4},
                    3: {0xA9: 4},
                },
            }
        ]
    )


STRUCTURAL = [
    b"{", b"}", b"[", b"]", b",", b":", b'"', b"x", b"a", b"b", b"ab", b"c", b"d", b"e",
    b'{"', b'":', b"{}", b'"}', b'"]', b"},", b"[]", b"[[", b"]]", b"],", b"x,", b"x]",
    b'":x', b'":{', b'":[', b'"a', b"\xc3", b"\xa9", b"\xc3\xa9", b'\xa9"', b"abc", b"zz",
    b'""', b'"x', b"<tool_call>", b"\xff", b"[x", b"[x]", b",[", b"]}", b"}}", b"}]",
]  # fmt: skip


def structural_table() -> TokenTable:
    """Merged structural tokens plus specials, an added non-special `<tool_call>`, EOS and an
    unused id (ids after `STRUCTURAL`: </tool_call>, <eos>, <tool_call>, <pad>, unused)."""
    base = len(STRUCTURAL)
    return make_tokenizer(
        [*STRUCTURAL, None, None, b"<tool_call>", None, None],
        specials={"</tool_call>": base, "<eos>": base + 1, "<pad>": base + 3},
        added={"<tool_call>": base + 2},
        eos=(base + 1,),
        unused=(base + 4,),
    )


UNUSED_ID = len(STRUCTURAL) + 4


REFERENCE_SAMPLE = 300  # allowed and other byte tokens `matches_reference` draws, each


def matches_reference(b, config, mask: np.ndarray, rng, whole: bool) -> None:
    """`mask` is the reference masker's at `config`: on the whole vocabulary when `whole`,
    else on up to `REFERENCE_SAMPLE` allowed and as many other byte tokens drawn by `rng`,
    every special token and every EOS id (the reference walks only the sampled tokens)."""
    from trgc.engine import reference

    if whole:
        assert (reference.allowed_mask(b, config) == mask).all(), config
        return
    allowed = np.flatnonzero(mask & b.byte_token)
    others = np.flatnonzero(b.byte_token)
    n = REFERENCE_SAMPLE
    sample = np.unique(np.concatenate([
        rng.choice(allowed, min(n, allowed.size), replace=False) if allowed.size else allowed,
        rng.choice(others, min(n, others.size), replace=False), b.eos_ids.astype(np.int64),
    ]))  # fmt: skip
    checked = np.concatenate([sample, b.special_ids, b.eos_ids]).astype(np.int64)
    expected = reference.allowed_mask(b, config, sample.tolist())
    assert (expected[checked] == mask[checked]).all(), config


def entry_matches_walk(b, key: int, scratch) -> None:
    """The `FrameEntry` of frame key `key` (`precompute.frame_entry`, by whatever shortcut it
    takes) equals a plain walk of the whole trie from that frame: the same accepted tokens
    and open roots, and a height at least the walk's (a slice's covers every slice string)."""
    from trgc.engine.config import STATE_MASK
    from trgc.engine.kernel import walk_trie
    from trgc.engine.precompute import frame_entry

    entry = frame_entry(b, key, scratch)
    plain = np.zeros(b.n_words, dtype=np.uint32)
    mode = bool(b.tables.has_caller[key & STATE_MASK])
    roots, height = walk_trie(b, (key,), plain, scratch, frame_mode=mode)
    assert (entry.accept == plain).all(), key
    assert entry.open_roots.tolist() == roots.tolist() and entry.height >= height, key
