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
The same walks run with the prototype kernel of `benchmarks/walk_proto.py`, after checking on
every state of json.trg (frame mode and full walks) and on the configurations of forced JSON
documents that it gives exactly the kernel's masks, open roots and heights, and on a sample
of them the reference masker's (`engine/reference.py`) masks. Floors measured the same way:
a loop that only reads the per-node arrays, and setting the allowed tokens' bits alone.

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

sys.path.insert(0, str(Path(__file__).resolve().parent))

import walk_proto  # noqa: E402  (the benchmark-only prototype beside this file)

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


def verify(binding, art, table, n_docs: int, n_reference: int) -> dict:
    """The prototype against the kernel on every state (frame mode and full) and on forced
    configurations; both against the reference on a sample of them."""
    from trgc.engine import kernel, reference
    from trgc.engine.bits import unpack

    scratch = kernel.Scratch(binding)
    fast = walk_proto.FastScratch(binding)
    n_states = binding.tables.next.shape[0]
    cases = [((g,), True) for g in range(n_states) if binding.tables.has_caller[g]]
    cases += [((g,), False) for g in range(n_states)]
    cases += [(c, False) for c in forced_configs(art, table, n_docs) if c is not None]
    for config, frame_mode in cases:
        a = np.zeros(binding.n_words, dtype=np.uint32)
        b = np.zeros(binding.n_words, dtype=np.uint32)
        ra = kernel.walk_trie(binding, config, a, scratch, frame_mode=frame_mode)
        rb = walk_proto.walk_trie_fast(binding, config, b, fast, frame_mode=frame_mode)
        if not (np.array_equal(a, b) and np.array_equal(ra[0], rb[0]) and ra[1] == rb[1]):
            raise SystemExit(f"prototype differs from the kernel at {config} frame={frame_mode}")
    full = [c for c, f in cases if not f]
    step = max(1, len(full) // max(1, n_reference))
    checked = 0
    for config in full[::step][:n_reference]:
        want = reference.allowed_mask(binding, config)
        words = np.zeros(binding.n_words, dtype=np.uint32)
        walk_proto.walk_trie_fast(binding, config, words, fast)
        kernel.add_symbol_tokens(binding, config, words)
        if not np.array_equal(unpack(words, binding.vocab_size), want):
            raise SystemExit(f"prototype differs from the reference at {config}")
        if not np.array_equal(kernel.allowed_mask(binding, config), want):
            raise SystemExit(f"kernel differs from the reference at {config}")
        checked += 1
    return {"kernel_equal": len(cases), "reference_equal": checked}


def measure(binding, name, config, frame_mode, repeat, mhz) -> dict:
    from trgc.engine import kernel

    scratch = kernel.Scratch(binding)
    fast = walk_proto.FastScratch(binding)
    words = np.zeros(binding.n_words, dtype=np.uint32)
    fast.stats[:] = 0
    walk_proto.walk_trie_fast(binding, config, words, fast, frame_mode=frame_mode, count=True)
    visited, slow, pruned, _ = (int(x) for x in fast.stats)
    allowed = np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))
    allowed = allowed.astype(np.int32)

    def current():
        words[:] = 0
        kernel.walk_trie(binding, config, words, scratch, frame_mode=frame_mode)

    def proto():
        words[:] = 0
        walk_proto.walk_trie_fast(binding, config, words, fast, frame_mode=frame_mode)

    scan, set_bits, shift_only = floors()
    state_l = np.empty(binding.trie_depth + 1, dtype=np.int32)
    t = binding.tables

    def lower_bound():
        words[:] = 0
        shift_only(config[-1], t.next, t.need, t.max_depth, t.byte_class, binding.node_byte,
                   binding.node_depth, binding.subtree_end, fast.node_tok, state_l, words)  # fmt: skip

    def floor_scan():
        scan(binding.node_byte, binding.node_depth, fast.node_tok)

    def floor_bits():
        words[:] = 0
        set_bits(allowed, words)

    out = {"state": name, "config": list(config), "frame_mode": frame_mode,
           "trie_nodes": int(binding.node_byte.shape[0] - 1), "visited": visited,
           "slow_path_steps": slow, "pruned_nodes": pruned, "allowed_tokens": int(allowed.size)}  # fmt: skip
    labels = [("kernel", current), ("prototype", proto), ("floor_read_nodes", floor_scan),
              ("floor_set_bits", floor_bits)]  # fmt: skip
    if name.startswith("string"):  # approximate: a token needing a call or return is cut
        labels.insert(2, ("shift_only_bound", lower_bound))
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
    started = time.perf_counter()
    raw = walk_proto.tokenizer_node_tok(binding)
    middle = time.perf_counter()
    walk_proto.node_tables(binding, raw)
    tables_ms = {"per_tokenizer": (middle - started) * 1e3,
                 "per_binding": (time.perf_counter() - middle) * 1e3}  # fmt: skip
    sys.stderr.write("checking the prototype against the kernel and the reference...\n")
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
              "node_tables_ms": tables_ms, "checked": checked, "walks": rows,
              "llguidance": {"ns_per_node": LLGUIDANCE_NS_PER_NODE,
                             "cycles_per_node": LLGUIDANCE_CYCLES_PER_NODE}}  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"== {args.tokenizer} (V={table.vocab_size}, {rows[0]['trie_nodes']:,} trie nodes), "
          f"CPU {mhz} MHz; prototype equal to the kernel on {checked['kernel_equal']} walks, "
          f"to the reference on {checked['reference_equal']}; its node_tok table "
          f"{tables_ms['per_tokenizer']:.2f} ms per tokenizer + "
          f"{tables_ms['per_binding']:.2f} ms per binding")  # fmt: skip
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
              f"visited {r['visited']:,} nodes, {r['allowed_tokens']:,} tokens allowed, "
              f"{r['slow_path_steps']:,} non-shift steps, {r['pruned_nodes']:,} nodes pruned")  # fmt: skip
        for label in ("kernel", "prototype", "shift_only_bound", "floor_read_nodes",
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
