"""Trie-walk cost: the numba kernel per trie node, against llguidance's ~13 cycles per node.

llguidance reports about 1.5 ms for a full walk of a 128k-token trie (13 cycles per node). This
measures `trgc.engine.kernel.walk_trie` on a real vocabulary's trie from permissive states of
`grammars/json.trg`, with slices disabled (every node is stepped):

  * `string`: inside a JSON string (after `"`), the most permissive state: almost every
    token is allowed, so almost every node is visited;
  * `string-frame`: the same state as a frame-mode walk (callers unknown: what `frame_entry`
    computes for a state, minus slices);
  * `value`: json.trg's start (a JSON value may begin): a narrow state, most subtrees pruned
    at their first byte.

For each it reports nodes visited (stepped), tokens allowed, time (min and median of
`--repeat` walks), ns per visited node, and cycles per node at the CPU frequency of
/proc/cpuinfo (this VM has no hardware counters: `perf stat -e cycles` is "not supported").
Before timing, the kernel's masks are checked against the reference masker
(`engine/reference.py`) on a sample of the states of json.trg and of the configurations met
while forcing JSON documents. Floors measured the same way: a loop that only reads the per-node
arrays, setting the allowed tokens' bits alone, and a one-frame shift-only walk.

Run: .venv/bin/python benchmarks/bench_walk.py [--tokenizer llama3] [--repeat 30] [--json]
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
TOKENIZERS = {
    "llama3": SHARED / "tokenizers/llama3/tokenizer.json.zst",
    "qwen3": SHARED / "tokenizers/qwen3/tokenizer.json.zst",
    "gpt2": SHARED / "tokenizers/gpt2/tokenizer.json.zst",
    "mistral": SHARED / "tokenizers/mistral/tokenizer.model.v1",
}
LLGUIDANCE_NS_PER_NODE = 1.5e6 / 128_000  # "about 1.5 ms for a full 128k walk"
LLGUIDANCE_CYCLES_PER_NODE = 13
DOCS = SHARED / "corpora/jsonschemabench-instances/Glaiveai2K.jsonl.gz"


def cpu_mhz() -> float | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("cpu MHz"):
                return float(line.split(":")[1])
    except OSError:
        pass
    return None


def timed(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times), float(np.median(times))


def _scan(node_byte, node_depth, node_tok):
    total = 0
    for i in range(node_byte.shape[0]):
        total += node_byte[i] + node_depth[i] + node_tok[i]
    return total


def _set_bits(tokens, out_words):
    for k in range(tokens.shape[0]):
        t = tokens[k]
        out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)


def _shift_only(start, gnext, need, max_depth, byte_class, node_byte, node_depth,
                subtree_end, node_tok, state_l, out_words):  # fmt: skip
    """The bound of the design: one frame, shifts only (what a lexer-level DFA walk does, as in
    llguidance's toktrie); valid only where no token calls or returns (checked by the caller)."""
    state_l[0] = start
    i = 1
    while i < node_byte.shape[0]:
        d = node_depth[i]
        a = gnext[state_l[d - 1], byte_class[node_byte[i]]]
        if a >= 0 and 1 + need[a] <= max_depth:
            t = node_tok[i]
            if t >= 0:
                out_words[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
            state_l[d] = a
            i += 1
        else:
            i = subtree_end[i]


def class_trie_nodes(binding) -> int:
    """Nodes of the trie of the tokens' byte-class strings (tokens equal under the artifact's
    byte classes merged): what a walk sharing their work would step."""
    cls = binding.tables.byte_class.astype(np.int64)[binding.node_byte]
    ids = np.zeros(binding.node_byte.shape[0], dtype=np.int64)
    depth = binding.node_depth
    total = 0
    for d in range(1, int(depth.max()) + 1):
        at = np.flatnonzero(depth == d)
        pairs = ids[binding.parent[at]] * 256 + cls[at]
        uniq, inverse = np.unique(pairs, return_inverse=True)
        ids[at] = inverse + 1
        total += uniq.shape[0]
    return total


@functools.cache
def floors():
    from numba import njit

    return njit(cache=True)(_scan), njit(cache=True)(_set_bits), njit(cache=True)(_shift_only)


def forced_configs(art, table, n_docs: int) -> list[tuple[int, ...]]:
    """Distinct configurations met while teacher-forcing JSON documents through json.trg."""
    import tokenizers
    import zstandard

    import trgc

    raw = zstandard.ZstdDecompressor().decompress(
        TOKENIZERS["llama3"].read_bytes(), max_output_size=1 << 30
    )
    hf = tokenizers.Tokenizer.from_str(raw.decode()) if table.vocab_size == 128256 else None
    seen: dict[tuple[int, ...], None] = {}
    with gzip.open(DOCS, "rt", encoding="utf-8") as handle:
        for k, line in enumerate(handle):
            if k >= n_docs:
                break
            doc = json.dumps(json.loads(line)["data"]).encode()
            m = trgc.Matcher(art, table)
            if hf is not None:
                ids = hf.encode(doc.decode(), add_special_tokens=False).ids
                for token in ids:
                    seen[m.config] = None
                    m.advance(token)
            else:  # byte by byte through the step function: every prefix configuration
                from trgc.engine.config import step_bytes

                config = m.config
                for b in doc:
                    seen[config] = None
                    config = step_bytes(m._binding.tables, config, bytes([b]))
    return list(seen)


def node_tokens(binding) -> np.ndarray:
    """The one byte-matched token per trie node (-1 none, -2 several), for the floors."""
    counts = np.diff(binding.token_start)
    tok = np.full(binding.node_byte.shape[0], -1, dtype=np.int32)
    one = np.flatnonzero(counts == 1)
    first = binding.token_ids[binding.token_start[one]]
    tok[one] = np.where(binding.byte_token[first], first, -1)
    tok[counts > 1] = -2
    return tok


def verify(binding, art, table, n_docs: int, n_reference: int) -> dict:
    """The kernel against the reference on a sample of json.trg's states and of the
    configurations met while forcing documents."""
    from trgc.engine import kernel, reference

    n_states = binding.tables.next.shape[0]
    cases = [(g,) for g in range(n_states)]
    cases += [c for c in forced_configs(art, table, n_docs) if c is not None]
    step = max(1, len(cases) // max(1, n_reference))
    checked = 0
    for config in cases[::step][:n_reference]:
        if not np.array_equal(kernel.allowed_mask(binding, config),
                              reference.allowed_mask(binding, config)):  # fmt: skip
            raise SystemExit(f"kernel differs from the reference at {config}")
        checked += 1
    return {"reference_equal": checked}


def _count(binding, config, frame_mode):
    """(visited, allowed) of a walk, from its mask and the trie: tokens allowed, and nodes
    visited counted as the nodes whose parent is a prefix of an allowed token (a lower bound:
    a prefix that is viable but leads to no allowed token is not counted; for the permissive
    states measured here that is a handful of nodes)."""
    from trgc.engine import kernel

    words = np.zeros(binding.n_words, dtype=np.uint32)
    kernel.walk_trie(binding, config, words, kernel.Scratch(binding), frame_mode=frame_mode)
    allowed = np.unpackbits(words.view(np.uint8), bitorder="little")[: binding.vocab_size]
    alive = np.zeros(binding.node_byte.shape[0], dtype=bool)
    alive[0] = True
    counts = np.diff(binding.token_start)
    owner = np.repeat(np.arange(counts.shape[0]), counts)
    alive[owner[allowed[binding.token_ids].astype(bool)]] = True
    # a node is alive if a token at or below it is allowed (ancestors of allowed nodes)
    for i in range(binding.node_byte.shape[0] - 1, 0, -1):
        if alive[i]:
            alive[binding.parent[i]] = True
    visited = int(alive[binding.parent[1:]].sum())
    return visited, np.flatnonzero(allowed).astype(np.int32)


def measure(binding, name, config, frame_mode, repeat, mhz) -> dict:
    from trgc.engine import kernel

    scratch = kernel.Scratch(binding)
    words = np.zeros(binding.n_words, dtype=np.uint32)
    visited, allowed = _count(binding, config, frame_mode)
    node_tok = node_tokens(binding)

    def current():
        words[:] = 0
        kernel.walk_trie(binding, config, words, scratch, frame_mode=frame_mode)

    scan, set_bits, shift_only = floors()
    state_l = np.empty(binding.trie_depth + 1, dtype=np.int32)
    t = binding.tables

    def lower_bound():
        words[:] = 0
        shift_only(config[-1], t.next, t.need, t.max_depth, t.byte_class, binding.node_byte,
                   binding.node_depth, binding.subtree_end, node_tok, state_l, words)  # fmt: skip

    def floor_scan():
        scan(binding.node_byte, binding.node_depth, node_tok)

    def floor_bits():
        words[:] = 0
        set_bits(allowed, words)

    out = {"state": name, "config": list(config), "frame_mode": frame_mode,
           "trie_nodes": int(binding.node_byte.shape[0] - 1), "visited": visited,
           "allowed_tokens": int(allowed.size)}  # fmt: skip
    labels = [("kernel", current), ("floor_read_nodes", floor_scan),
              ("floor_set_bits", floor_bits)]  # fmt: skip
    if name.startswith("string"):  # approximate: a token needing a call or return is cut
        labels.insert(1, ("shift_only_bound", lower_bound))
    for label, fn in labels:
        fn()
        best, median = timed(fn, repeat)
        per = out["trie_nodes"] if label == "floor_read_nodes" else max(visited, 1)
        row = {"min_ms": best * 1e3, "median_ms": median * 1e3, "ns_per_node": best * 1e9 / per}
        if mhz:
            row["cycles_per_node"] = row["ns_per_node"] * mhz / 1e3
        out[label] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", choices=sorted(TOKENIZERS), default="llama3")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--docs", type=int, default=20, help="forced documents for the check")
    parser.add_argument("--reference", type=int, default=12, help="configurations checked "
                        "against the reference masker (slow: it simulates every token)")  # fmt: skip
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import trgc
    from trgc.engine.binding import bind
    from trgc.engine.config import START, step_bytes

    table = trgc.load_tokenizer(TOKENIZERS[args.tokenizer])
    art = trgc.compile_grammar((ROOT / "grammars/json.trg").read_text(encoding="utf-8"))
    binding = bind(art, table)
    sys.stderr.write("checking the kernel against the reference...\n")
    checked = verify(binding, art, table, args.docs, args.reference)
    string = step_bytes(binding.tables, START, b'"')
    mhz = cpu_mhz()
    rows = []
    for name, config, frame_mode in (("string", string, False),
                                     ("string-frame", (string[-1],), True),
                                     ("value", START, False)):  # fmt: skip
        sys.stderr.write(f"measuring {name}...\n")
        rows.append(measure(binding, name, config, frame_mode, args.repeat, mhz))
    sharing = {"json.trg": (binding.tables.n_classes, class_trie_nodes(binding))}
    for path in sorted((SHARED / "corpora/jsonschemabench/Glaiveai2K").glob("*.json"))[:40]:
        try:
            schema_art = trgc.compile_schema(path.read_bytes())
        except trgc.TrgcError:
            continue
        schema_binding = bind(schema_art, table)
        sharing[f"Glaiveai2K/{path.name}"] = (schema_binding.tables.n_classes,
                                              class_trie_nodes(schema_binding))  # fmt: skip
        if len(sharing) == 6:
            break
    result = {"tokenizer": args.tokenizer, "class_trie_nodes": sharing, "vocab_size": table.vocab_size, "cpu_mhz": mhz,
              "checked": checked, "walks": rows,
              "llguidance": {"ns_per_node": LLGUIDANCE_NS_PER_NODE,
                             "cycles_per_node": LLGUIDANCE_CYCLES_PER_NODE}}  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"== {args.tokenizer} (V={table.vocab_size}, {rows[0]['trie_nodes']:,} trie nodes), "
          f"CPU {mhz} MHz; kernel equal to the reference on {checked['reference_equal']} "
          f"configurations")  # fmt: skip
    print(
        f"llguidance: {LLGUIDANCE_NS_PER_NODE:.1f} ns/node, "
        f"{LLGUIDANCE_CYCLES_PER_NODE} cycles/node (its reported figure)"
    )
    print(
        "work sharing: trie nodes after merging tokens equal under the byte classes "
        f"(of {rows[0]['trie_nodes']:,}): "
        + ", ".join(f"{k} ({c} classes) {n:,}" for k, (c, n) in sharing.items())
    )
    for r in rows:
        print(f"-- {r['state']} {tuple(r['config'])}{' frame mode' if r['frame_mode'] else ''}: "
              f"visited {r['visited']:,} nodes, {r['allowed_tokens']:,} tokens allowed")  # fmt: skip
        for label in ("kernel", "shift_only_bound", "floor_read_nodes",
                      "floor_set_bits"):  # fmt: skip
            if label not in r:
                continue
            x = r[label]
            cyc = f", {x['cycles_per_node']:.0f} cycles/node" if "cycles_per_node" in x else ""
            print(
                f"   {label:17} min {x['min_ms']:.3f} ms, median {x['median_ms']:.3f} ms, "
                f"{x['ns_per_node']:.1f} ns/node{cyc}"
            )


if __name__ == "__main__":
    main()
