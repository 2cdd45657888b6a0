"""Mask-engine benchmark: teacher-force real JSON documents and time every mask.

For each vocabulary (Llama-3 and Qwen3 by default) the documents of a JSONSchemaBench instance
subset are serialised with `json.dumps` (", " and ": " separators), tokenised with the
`tokenizers` library, and replayed token by token through `trgc.Matcher` over
`grammars/json.trg`; before each token the mask is written into a caller's int32 bitmask
buffer (`fill_bitmask`), which is what is timed. Reported per vocabulary:

  * time to first mask: compile + tokenizer binding + first mask (cold, numba cache warm);
  * per-token mask time (mean, p50, p99, max) without a precomputed cache (the adaptive
    per-state cache warms up over the run) and with one from `precompute`;
  * per-token time of the bare kernel (a full trie walk for every mask, first 20 documents);
  * the time of `advance` (the rest of the time between two masks);
  * cache hit rate (masks served from the in-memory cache or a reused per-state entry);
  * precompute time, distinct masks and `.trm` file size;
  * precompute of a counted repetition (`"\"" [a-z ]{0,500} "\""`, a maxLength-style string
    that unrolls into hundreds of states): time, states, distinct masks, file size;
  * one artifact per JSON Schema (`compile_schema`) with its instance teacher-forced once, the
    cold case where almost every configuration is new: time to first mask (compile + bind +
    first mask), per-token mask time without and with a precomputed cache, precompute time;
  * the peers on the same tokens in the same run, each skipped with a printed note when it is
    not importable (`pip install .[bench]`, torch==2.13.0 first: xgrammar pulls torch):
    llguidance (`LLTokenizer` from the same tokenizer.json) and xgrammar (a `TokenizerInfo` built from the token bytes of trgc's
    `TokenTable`, `VocabType.RAW`, special tokens empty). For `json.trg` they run generic JSON
    (llguidance: JSON Schema `{}`; xgrammar: its builtin JSON grammar), for the per-schema runs
    the same schemas (llguidance: `grammar_from_json_schema`; xgrammar: `compile_json_schema`,
    both with flexible whitespace, xgrammar with `strict_mode=False` so that undeclared
    properties stay allowed as JSON Schema says). Masks go into the same int32 numpy buffer;
    the p50 and p99 ratios trgc/peer are printed beside each other.

Long-lived inputs (token tables, documents) are moved out of Python's cyclic GC with
`gc.freeze()` after loading, as a server would; `--no-gc-freeze` shows the difference (full
collections of a large heap appear as multi-millisecond maxima).

Run: .venv/bin/python benchmarks/bench_masks.py [--docs 200] [--vocab llama3 qwen3] [--json]
"""

from __future__ import annotations

import argparse
import functools
import gc
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
VOCABS = {
    "llama3": ROOT / "tokenizers/llama3/tokenizer.json.zst",
    "qwen3": ROOT / "tokenizers/qwen3/tokenizer.json.zst",
}
CORPUS = SHARED / "corpora/jsonschemabench-instances"
KERNEL_ONLY_DOCS = 20
COUNTED = '%trg 1\n%start s\ns ::= "\\"" [a-z ]{0,500} "\\"" ;\n'


def load_documents(subset: str, limit: int) -> list[bytes]:
    docs = []
    with gzip.open(CORPUS / f"{subset}.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record["valid"]:
                docs.append(json.dumps(record["data"], ensure_ascii=False).encode())
            if len(docs) >= limit:
                break
    return docs


def stats(times: list[float]) -> dict:
    a = np.asarray(times) * 1e3
    return {
        "n": int(a.size),
        "mean_ms": round(float(a.mean()), 4),
        "p50_ms": round(float(np.percentile(a, 50)), 4),
        "p99_ms": round(float(np.percentile(a, 99)), 4),
        "max_ms": round(float(a.max()), 4),
    }


def tokenize(raw_json: bytes, docs: list[bytes], table) -> list[list[int]]:
    import tokenizers

    hf = tokenizers.Tokenizer.from_str(raw_json.decode())
    out = []
    for doc in docs:
        ids = hf.encode(doc.decode(), add_special_tokens=False).ids
        if b"".join(table.token_bytes(i) for i in ids) == doc:
            out.append(ids)
    return out


def run_trgc(art, table, sequences, *, precomputed=None) -> dict:
    import trgc

    cache = trgc.MaskCache()
    buffer = np.zeros((1, (table.vocab_size + 31) // 32), dtype=np.int32)
    times, advances, sources = [], [], {"cache": 0, "frame": 0, "walk": 0}
    for ids in sequences:
        m = trgc.Matcher(art, table, cache=cache, precomputed=precomputed)
        for token in ids:
            start = time.perf_counter()
            m.fill_bitmask(buffer, 0)
            middle = time.perf_counter()
            sources[m.last_source] += 1
            m.advance(token)
            times.append(middle - start)
            advances.append(time.perf_counter() - middle)
        if not m.is_accepting():
            raise SystemExit("a corpus document was not accepted: benchmark input is wrong")
    total = sum(sources.values())
    return {
        **stats(times),
        "hit_rate": round((sources["cache"] + sources["frame"]) / total, 4),
        "sources": sources,
        "advance": stats(advances),
    }


def run_kernel_only(art, table, sequences) -> dict:
    """Every mask from a full trie walk (no cache of any kind): the kernel's own speed."""
    import trgc
    from trgc.engine.binding import bind
    from trgc.engine.kernel import Scratch, mask_words

    binding = bind(art, table)
    scratch = Scratch(binding)
    times = []
    for ids in sequences:
        m = trgc.Matcher(art, table)
        for token in ids:
            start = time.perf_counter()
            mask_words(binding, m.config, scratch)
            times.append(time.perf_counter() - start)
            m.advance(token)
    return stats(times)


def run_llguidance(raw_json: bytes, sequences) -> dict | None:
    try:
        import llguidance
        import llguidance.numpy as lnp
    except ImportError:
        return None
    with tempfile.NamedTemporaryFile(suffix=".json") as handle:
        handle.write(raw_json)
        handle.flush()
        started = time.perf_counter()
        tok = llguidance.LLTokenizer(handle.name)
        tokenizer_seconds = time.perf_counter() - started
    grammar = llguidance.LLMatcher.grammar_from_json_schema(
        {}, defaults={"whitespace_flexible": True}
    )
    bitmask = lnp.allocate_token_bitmask(1, tok.vocab_size)
    times = []
    first = None
    for ids in sequences:
        started = time.perf_counter()
        matcher = llguidance.LLMatcher(tok, grammar)
        if first is None:
            lnp.fill_next_token_bitmask(matcher, bitmask, 0)
            first = time.perf_counter() - started
        for token in ids:
            start = time.perf_counter()
            lnp.fill_next_token_bitmask(matcher, bitmask, 0)
            times.append(time.perf_counter() - start)
            if not matcher.consume_token(token):
                raise SystemExit(f"llguidance refused a token: {matcher.get_error()}")
    return {
        **stats(times),
        "tokenizer_seconds": round(tokenizer_seconds, 3),
        "first_mask_seconds": round(first, 4),
    }


def xgrammar_tokenizer(table):
    """(TokenizerInfo over trgc's exact token bytes, seconds), or None if xgrammar is absent."""
    try:
        import xgrammar
    except ImportError:
        return None
    started = time.perf_counter()
    vocab = [table.token_bytes(i) for i in range(table.vocab_size)]
    info = xgrammar.TokenizerInfo(
        vocab,
        xgrammar.VocabType.RAW,
        vocab_size=table.vocab_size,
        stop_token_ids=list(table.eos_ids),
    )
    return info, time.perf_counter() - started


def run_xgrammar(peer, table, sequences) -> dict | None:
    """xgrammar's builtin JSON grammar, teacher-forced on the same token sequences."""
    if peer is None:
        return None
    import xgrammar

    info, tokenizer_seconds = peer
    buffer = np.zeros((1, (table.vocab_size + 31) // 32), dtype=np.int32)
    started = time.perf_counter()
    compiled = xgrammar.GrammarCompiler(info, cache_enabled=False).compile_builtin_json_grammar()
    xgrammar.GrammarMatcher(compiled).fill_next_token_bitmask(buffer, 0)
    first = time.perf_counter() - started
    times = []
    for ids in sequences:
        matcher = xgrammar.GrammarMatcher(compiled)
        for token in ids:
            start = time.perf_counter()
            matcher.fill_next_token_bitmask(buffer, 0)
            times.append(time.perf_counter() - start)
            if not matcher.accept_token(token):
                raise SystemExit("xgrammar refused a token of a corpus document")
    return {
        **stats(times),
        "tokenizer_seconds": round(tokenizer_seconds, 3),
        "first_mask_seconds": round(first, 4),
    }


def ratios(trgc_runs: dict, peer: dict) -> dict:
    """trgc/peer for p50 and p99 of each trgc run (below 1: trgc is faster)."""
    return {
        label: {q: round(run[f"{q}_ms"] / max(peer[f"{q}_ms"], 1e-9), 3) for q in ("p50", "p99")}
        for label, run in trgc_runs.items()
    }


def force_schemas(start, forced) -> dict:
    """Teacher-force each (schema, ids) through a peer. `start(schema)` compiles and returns
    the peer's own callables `(fill(buffer, index), accept(token) -> bool, reset())`, called
    directly as trgc's `fill_bitmask` is. Schemas the peer refuses to compile, or documents it
    refuses a token of, are counted and left out of the times."""
    first_masks, times, refused = [], [], {"compile": 0, "token": 0}
    buffer = None
    for schema, ids, vocab_size in forced:
        if buffer is None:
            buffer = np.zeros((1, (vocab_size + 31) // 32), dtype=np.int32)
        started = time.perf_counter()
        try:
            fill, accept, reset = start(schema)
            fill(buffer, 0)
        except Exception:  # a peer's own unsupported-schema errors, whatever their type
            refused["compile"] += 1
            continue
        first_masks.append(time.perf_counter() - started)
        reset()
        doc_times = []
        for token in ids:
            begin = time.perf_counter()
            fill(buffer, 0)
            doc_times.append(time.perf_counter() - begin)
            if not accept(token):
                refused["token"] += 1
                break
        else:
            times.extend(doc_times)
    return {
        "schemas": len(first_masks) - refused["token"],
        "refused": refused,
        "tokens": len(times),
        "time_to_first_mask": stats(first_masks) if first_masks else None,
        "masks": stats(times) if times else None,
    }


def _xgrammar_schema(compiler, schema):
    import xgrammar

    compiled = compiler.compile_json_schema(schema, any_whitespace=True, strict_mode=False)
    matcher = xgrammar.GrammarMatcher(compiled)
    return matcher.fill_next_token_bitmask, matcher.accept_token, matcher.reset


def _llguidance_schema(tok, schema):
    import llguidance
    import llguidance.numpy as lnp

    grammar = llguidance.LLMatcher.grammar_from_json_schema(
        schema, defaults={"whitespace_flexible": True}
    )
    matcher = llguidance.LLMatcher(tok, grammar)
    if matcher.is_error():
        raise ValueError(matcher.get_error())
    fill = functools.partial(lnp.fill_next_token_bitmask, matcher)
    return fill, matcher.consume_token, matcher.reset


def schema_peers(raw_json: bytes, xgr_peer, forced) -> dict:
    """llguidance and xgrammar on the per-schema runs, where importable."""
    out: dict = {}
    try:
        import llguidance
    except ImportError:
        out["llguidance"] = "not installed (pip install .[bench])"
    else:
        with tempfile.NamedTemporaryFile(suffix=".json") as handle:
            handle.write(raw_json)
            handle.flush()
            tok = llguidance.LLTokenizer(handle.name)
        out["llguidance"] = force_schemas(lambda s: _llguidance_schema(tok, s), forced)
    if xgr_peer is None:
        out["xgrammar"] = "not installed (pip install .[bench])"
    else:
        import xgrammar

        compiler = xgrammar.GrammarCompiler(xgr_peer[0], cache_enabled=False)
        out["xgrammar"] = force_schemas(lambda s: _xgrammar_schema(compiler, s), forced)
    return out


def load_schema_documents(subset: str, limit: int) -> list[tuple[dict, bytes]]:
    """(schema, instance serialised with json.dumps) for valid instances, one per schema."""
    pairs, seen = [], set()
    with gzip.open(CORPUS / f"{subset}.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if not record["valid"] or record["file"] in seen:
                continue
            seen.add(record["file"])
            schema_path = SHARED / "corpora/jsonschemabench" / subset / record["file"]
            schema = json.loads(schema_path.read_text(encoding="utf-8"))
            pairs.append((schema, json.dumps(record["data"], ensure_ascii=False).encode()))
            if len(pairs) >= limit:
                break
    return pairs


def bench_schemas(pairs, raw_json: bytes, table) -> tuple[dict, list]:
    """One artifact per schema (`compile_schema`, json.dumps separators), each instance
    teacher-forced once: almost every configuration is new, the cold case. Also returns the
    (schema, token ids, vocab size) triples used, for the peers."""
    import trgc
    from trgc.engine.precompute import precompute

    compiled, first_masks, cold, warm, pre = [], [], [], [], []
    cache = trgc.MaskCache()  # one cache for the server, shared by every schema's matchers
    refused: dict[str, int] = {}
    forced = []
    for schema, doc in pairs:
        try:
            started = time.perf_counter()
            art = trgc.compile_schema(schema, separators="pretty")
            m = trgc.Matcher(art, table, cache=cache)
            m.allowed_tokens_packed()
            first_masks.append(time.perf_counter() - started)
        except trgc.TrgcError as error:
            refused[error.code] = refused.get(error.code, 0) + 1
            continue
        if not trgc.check(art, doc).accepted:
            refused["instance_rejected"] = refused.get("instance_rejected", 0) + 1
            continue
        ids = tokenize(raw_json, [doc], table)
        if not ids:
            continue
        compiled.append(art)
        forced.append((schema, ids[0], table.vocab_size))
        buffer = np.zeros((1, (table.vocab_size + 31) // 32), dtype=np.int32)
        m.reset()
        for token in ids[0]:
            start = time.perf_counter()
            m.fill_bitmask(buffer, 0)
            cold.append(time.perf_counter() - start)
            m.advance(token)
        started = time.perf_counter()
        masks = precompute(art, table)
        pre.append(time.perf_counter() - started)
        m = trgc.Matcher(art, table, cache=cache, precomputed=masks)
        for token in ids[0]:
            start = time.perf_counter()
            m.fill_bitmask(buffer, 0)
            warm.append(time.perf_counter() - start)
            m.advance(token)
    result = {
        "schemas": len(compiled),
        "not_used": refused,
        "tokens": len(cold),
        "time_to_first_mask": stats(first_masks),
        "no_precompute": stats(cold),
        "precompute_seconds": stats(pre),
        "with_precompute": stats(warm),
    }
    return result, forced


def bench_vocab(name: str, docs: list[bytes], peers: bool, schema_pairs=(), gc_freeze=True) -> dict:
    import zstandard

    import trgc
    from trgc.engine import trm
    from trgc.engine.precompute import precompute

    raw_json = zstandard.ZstdDecompressor().decompress(
        VOCABS[name].read_bytes(), max_output_size=1 << 30
    )
    table = trgc.load_tokenizer(VOCABS[name])
    _ = table.trie  # the table's own trie build is the tokenizer layer's cost, reported apart
    sequences = tokenize(raw_json, docs, table)
    if gc_freeze:  # as a server would after loading: long-lived data leaves the cyclic GC
        gc.collect()
        gc.freeze()
    source = (ROOT / "grammars/json.trg").read_text(encoding="utf-8")

    warm = trgc.compile_grammar(source)  # warms numba's on-disk cache for the cold timing
    trgc.Matcher(warm, table).allowed_tokens()
    started = time.perf_counter()
    art = trgc.compile_grammar(source)
    compiled = time.perf_counter()
    first = trgc.Matcher(art, table)
    first.allowed_tokens_packed()
    done = time.perf_counter()

    adaptive = run_trgc(art, table, sequences)
    kernel_only = run_kernel_only(art, table, sequences[:KERNEL_ONLY_DOCS])
    started_pre = time.perf_counter()
    masks = precompute(art, table)
    pre_seconds = time.perf_counter() - started_pre
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "json.trm"
        trm.save_masks(masks, path)
        file_bytes = path.stat().st_size
    with_cache = run_trgc(trgc.compile_grammar(source), table, sequences, precomputed=masks)
    result = {
        "vocab": name,
        "vocab_size": table.vocab_size,
        "documents": len(sequences),
        "tokens": sum(map(len, sequences)),
        "time_to_first_mask_s": round(done - started, 4),
        "compile_s": round(compiled - started, 4),
        "bind_and_first_mask_s": round(done - compiled, 4),
        "no_precompute": adaptive,
        "kernel_only": kernel_only,
        "precompute": {
            "seconds": round(pre_seconds, 3),
            "states": masks.n_states,
            "distinct_masks": int(masks.masks.shape[0]),
            "mask_bytes": int(masks.masks.nbytes),
            "file_bytes": file_bytes,
        },
        "with_precompute": with_cache,
    }
    xgr_peer = xgrammar_tokenizer(table) if peers else None
    if peers:
        trgc_runs = {"no_precompute": adaptive, "with_precompute": with_cache}
        for peer_name, peer in (
            ("llguidance", run_llguidance(raw_json, sequences)),
            ("xgrammar", run_xgrammar(xgr_peer, table, sequences)),
        ):
            result[peer_name] = peer or "not installed (pip install .[bench])"
            if peer:
                result[f"ratio_vs_{peer_name}"] = ratios(trgc_runs, peer)
    counted = trgc.compile_grammar(COUNTED)
    started_pre = time.perf_counter()
    counted_masks = precompute(counted, table)
    counted_seconds = time.perf_counter() - started_pre
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "counted.trm"
        trm.save_masks(counted_masks, path)
        result["counted_precompute"] = {
            "seconds": round(counted_seconds, 3),
            "states": counted_masks.n_states,
            "distinct_masks": int(counted_masks.masks.shape[0]),
            "mask_bytes": int(counted_masks.masks.nbytes),
            "file_bytes": path.stat().st_size,
        }
    if schema_pairs:
        result["schemas"], forced = bench_schemas(schema_pairs, raw_json, table)
        if peers:
            sch = result["schemas"]
            sch["peers"] = schema_peers(raw_json, xgr_peer, forced)
            trgc_runs = {
                "no_precompute": sch["no_precompute"],
                "with_precompute": sch["with_precompute"],
            }
            for peer_name, peer in sch["peers"].items():
                if isinstance(peer, dict) and peer["masks"]:
                    sch[f"ratio_vs_{peer_name}"] = ratios(trgc_runs, peer["masks"])
    return result


def print_ratios(by_run: dict) -> str:
    return "  ".join(
        f"{label} p50 {r['p50']:.3f} p99 {r['p99']:.3f}" for label, r in by_run.items()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=200, help="documents per vocabulary")
    parser.add_argument("--subset", default="Glaiveai2K", help="JSONSchemaBench instance subset")
    parser.add_argument("--vocab", nargs="+", default=list(VOCABS), choices=list(VOCABS))
    parser.add_argument("--no-peers", action="store_true", help="skip llguidance and xgrammar")
    parser.add_argument(
        "--schemas", type=int, default=50, help="per-schema artifacts to run (0: none)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "--no-gc-freeze",
        dest="gc_freeze",
        action="store_false",
        help="leave the inputs in Python's cyclic GC (its full collections then show as multi-ms maxima)",
    )
    args = parser.parse_args()
    docs = load_documents(args.subset, args.docs)
    pairs = load_schema_documents(args.subset, args.schemas) if args.schemas else []
    if args.gc_freeze:
        gc.collect()
        gc.freeze()
    results = [bench_vocab(v, docs, not args.no_peers, pairs, args.gc_freeze) for v in args.vocab]
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
        return
    for r in results:
        print(
            f"== {r['vocab']} (V={r['vocab_size']}): {r['documents']} documents, {r['tokens']} tokens"
        )
        print(
            f"  time to first mask {r['time_to_first_mask_s'] * 1e3:.1f} ms (compile {r['compile_s'] * 1e3:.1f} ms)"
        )
        for label in ("no_precompute", "with_precompute", "kernel_only"):
            s = r[label]
            print(
                f"  {label:16} mean {s['mean_ms']:.4f}  p50 {s['p50_ms']:.4f}  p99 {s['p99_ms']:.4f}  max {s['max_ms']:.3f} ms"
                + (
                    f"  hit rate {s['hit_rate']:.3f}"
                    if "hit_rate" in s
                    else f"  ({s['n']} masks, every one a full trie walk)"
                )
            )
        a = r["no_precompute"]["advance"]
        print(
            f"  advance()        mean {a['mean_ms']:.4f}  p50 {a['p50_ms']:.4f}  p99 {a['p99_ms']:.4f}  max {a['max_ms']:.3f} ms"
        )
        p = r["precompute"]
        print(
            f"  precompute {p['seconds']:.2f} s, {p['states']} states, {p['distinct_masks']} distinct masks, {p['mask_bytes']:,} bytes, file {p['file_bytes']:,} bytes"
        )
        c = r["counted_precompute"]
        print(
            f"  counted repetition: precompute {c['seconds']:.2f} s, {c['states']} states, {c['distinct_masks']} distinct masks, {c['mask_bytes']:,} bytes, file {c['file_bytes']:,} bytes"
        )
        for peer_name in ("llguidance", "xgrammar"):
            peer = r.get(peer_name)
            if isinstance(peer, dict):
                print(
                    f"  {peer_name:16} mean {peer['mean_ms']:.4f}  p50 {peer['p50_ms']:.4f}  p99 {peer['p99_ms']:.4f}  max {peer['max_ms']:.3f} ms  (first mask {peer['first_mask_seconds'] * 1e3:.1f} ms after a {peer['tokenizer_seconds']:.2f} s tokenizer load)"
                )
                print(f"    ratio trgc/{peer_name}: {print_ratios(r[f'ratio_vs_{peer_name}'])}")
            elif peer:
                print(f"  {peer_name}: {peer}")
        sch = r.get("schemas")
        if sch:
            print(
                f"  per-schema artifacts: {sch['schemas']} schemas, {sch['tokens']} tokens, not used {sch['not_used']}"
            )
            for label in (
                "time_to_first_mask",
                "no_precompute",
                "precompute_seconds",
                "with_precompute",
            ):
                x = sch[label]
                unit = "s" if label == "precompute_seconds" else "ms"
                scale = 1e-3 if unit == "s" else 1
                print(
                    f"    {label:20} mean {x['mean_ms'] * scale:.4f}  p50 {x['p50_ms'] * scale:.4f}  p99 {x['p99_ms'] * scale:.4f}  max {x['max_ms'] * scale:.3f} {unit}"
                )
            for peer_name, peer in sch.get("peers", {}).items():
                if not isinstance(peer, dict):
                    print(f"    {peer_name}: {peer}")
                    continue
                print(
                    f"    {peer_name}: {peer['schemas']} schemas, {peer['tokens']} tokens, refused {peer['refused']}"
                )
                for label in ("time_to_first_mask", "masks"):
                    x = peer[label]
                    if x:
                        print(
                            f"      {label:18} mean {x['mean_ms']:.4f}  p50 {x['p50_ms']:.4f}  p99 {x['p99_ms']:.4f}  max {x['max_ms']:.3f} ms"
                        )
                if f"ratio_vs_{peer_name}" in sch:
                    print(
                        f"      ratio trgc/{peer_name}: {print_ratios(sch[f'ratio_vs_{peer_name}'])}"
                    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
